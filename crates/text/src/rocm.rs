//! `gfxkit rocm list` and `gfxkit rocm show`'s text: what each ROCm release's runtime loads,
//! and the line naming the release in `select`, `doctor` and `check` with `--rocm`.

use gfxkit_inventory::release::{ReleaseShow, RocmRelease};
use gfxkit_spec::rocm::{first_text, Capability, Pin, Rules, FACTS};
use std::io::{Result, Write};

/// The line naming the release answers are given for: `runtime ROCm 6.4.3 from
/// /opt/rocm/.info/version`.
pub fn runtime_line(r: &RocmRelease, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "runtime {}", r.said())?;
    for n in &r.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

/// `V6`, `gfx9-generic, gfx11-generic` or `none`, `v1, v2` or `none`, `yes`/`no`.
fn cells(r: &Rules) -> [String; 4] {
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(", ")
        }
    };
    [
        format!("up to V{}", r.code_object_max),
        list(r.generics.iter().map(|g| g.to_string()).collect()),
        list(r.ccob.iter().map(|v| format!("v{v}")).collect()),
        if r.kpack { "yes" } else { "no" }.to_owned(),
    ]
}

/// What a release is taken to have only on a bracketed row: `generic targets (6.4, first
/// tag not pinned)`.
fn bracketed(s: &ReleaseShow) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in FACTS.iter().filter(|f| f.pin != Pin::Pinned) {
        let has = match f.capability {
            Capability::CodeObjectVersion(n) => n <= s.rules.code_object_max,
            Capability::Generic(g) => s.rules.loads_generic(g),
            Capability::Ccob(n) => s.rules.unpacks_ccob(n),
            Capability::Kpack => s.rules.kpack,
        };
        if !has {
            continue;
        }
        let what = match f.capability {
            Capability::Generic(_) => "generic targets".to_owned(),
            c => c.to_string(),
        };
        let line = format!("{what} ({})", first_text(f));
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// What a release's ISA registry changed: `processors +gfx1150 +gfx1151 (read at the tag)`,
/// `processors not read`.
fn processor_changes(s: &ReleaseShow) -> String {
    let Some(l) = gfxkit_spec::rocm::PROCESSOR_LISTS
        .iter()
        .find(|l| l.release == s.rules.version.release())
    else {
        return "processors: ISA registry not read".to_owned();
    };
    let mut changes: Vec<String> = l.added.iter().map(|p| format!("+{p}")).collect();
    changes.extend(l.removed.iter().map(|p| format!("-{p}")));
    if changes.is_empty() {
        changes.push("unchanged".to_owned());
    }
    format!("processors: {} (read {})", changes.join(" "), l.read_at())
}

/// `rocm list`: one line per release, what it loads; bracketed capabilities named.
pub fn list(releases: &[ReleaseShow], out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{:<8} {:<13} {:<10} {:<5} generic targets",
        "release", "code objects", "CCOB", "kpack"
    )?;
    for s in releases {
        let [cov, generics, ccob, kpack] = cells(&s.rules);
        writeln!(
            out,
            "{:<8} {cov:<13} {ccob:<10} {kpack:<5} {generics}",
            s.rules.version.to_string()
        )?;
        let mut notes = bracketed(s);
        if !s.note.is_empty() {
            notes.insert(0, s.note.to_owned());
        }
        notes.push(processor_changes(s));
        for n in notes {
            writeln!(out, "{:<8}   {n}", "")?;
        }
    }
    writeln!(
        out,
        "\nA release after {} is taken to be the newest runtime (gfxkit's answers without --rocm). \
         Sources: gfxkit rocm show VERSION.",
        gfxkit_spec::rocm::newest_release()
    )
}

/// `rocm show VERSION`: what it loads, then every row with its first release and source.
pub fn show(s: &ReleaseShow, out: &mut dyn Write) -> Result<()> {
    let [cov, generics, ccob, kpack] = cells(&s.rules);
    write!(out, "ROCm {}", s.rules.version)?;
    if !s.note.is_empty() {
        write!(out, " ({})", s.note)?;
    } else if s.rules.beyond_known {
        write!(
            out,
            " (after every release gfxkit lists: the newest runtime)"
        )?;
    } else if !s.listed {
        write!(out, " (not a release gfxkit lists: judged by the rows)")?;
    }
    writeln!(out)?;
    writeln!(out, "  code objects     {cov}")?;
    writeln!(out, "  generic targets  {generics}")?;
    writeln!(out, "  CCOB             {ccob}")?;
    writeln!(out, "  kpack            {kpack}")?;
    let p = &s.processors;
    match &p.list {
        Some(list) => {
            writeln!(out, "  processors       {}", list.join(" "))?;
            writeln!(out, "      {}", p.source)?;
        }
        None => writeln!(out, "  processors       {}", p.source)?,
    }
    writeln!(out, "rows:")?;
    for f in &s.facts {
        writeln!(
            out,
            "  {} {} (from {})",
            if f.has { "yes" } else { "no " },
            f.fact.capability,
            first_text(&f.fact)
        )?;
        writeln!(out, "      {}", f.fact.source)?;
    }
    Ok(())
}
