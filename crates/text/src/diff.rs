//! `gfxkit diff`'s text: what changed between two builds, file by file. Targets are the
//! devices served (folded into target IDs); the target-ID strings that changed are named
//! beside them.

use gfxkit_inventory::diff::{Change, DiffReport, FileDiff, Status};
use gfxkit_inventory::units::human_bytes as human;
use std::io::{Result, Write};

fn signed(old: u64, new: u64, fmt: fn(u64) -> String) -> String {
    if new >= old {
        format!("+{}", fmt(new - old))
    } else {
        format!("-{}", fmt(old - new))
    }
}

fn change(what: &str, c: Change, fmt: fn(u64) -> String) -> Option<String> {
    match (c.old, c.new) {
        (Some(o), Some(n)) if o != n => Some(format!(
            "{what} {} -> {} ({})",
            fmt(o),
            fmt(n),
            signed(o, n, fmt)
        )),
        (Some(_), Some(_)) => None,
        (Some(o), None) => Some(format!("{what} {}", fmt(o))),
        (None, Some(n)) => Some(format!("{what} {}", fmt(n))),
        (None, None) => None,
    }
}

fn count(n: u64) -> String {
    n.to_string()
}

fn file_line(f: &FileDiff) -> String {
    let mut parts = Vec::new();
    match f.status {
        Status::Added => parts.push(f.added.join(" ")),
        Status::Removed => parts.push(f.removed.join(" ")),
        _ => {
            let mut t: Vec<String> = f.added.iter().map(|a| format!("+{a}")).collect();
            t.extend(f.removed.iter().map(|r| format!("-{r}")));
            if !t.is_empty() {
                parts.push(format!("targets {}", t.join(" ")));
            }
            // The target-ID strings beside: they may change while the devices served do not.
            let mut ids: Vec<String> = f.added_ids.iter().map(|a| format!("+{a}")).collect();
            ids.extend(f.removed_ids.iter().map(|r| format!("-{r}")));
            if !ids.is_empty() {
                parts.push(format!("target IDs {}", ids.join(" ")));
            }
            if !f.changed.is_empty() {
                let n: usize = f.changed.iter().map(|c| c.differ).sum();
                let per: Vec<String> = f
                    .changed
                    .iter()
                    .map(|c| format!("{} {}", c.target, c.differ))
                    .collect();
                parts.push(format!(
                    "{n} code object{} changed ({})",
                    if n == 1 { "" } else { "s" },
                    per.join(", ")
                ));
            }
        }
    }
    parts.extend(change("device bytes", f.device_bytes, human));
    parts.extend(change("kernels", f.kernels, count));
    format!("{}  {}  {}", f.status.letter(), f.path, parts.join("; "))
}

/// Prints a line per file that changed, then the totals, on `out`.
pub fn report(r: &DiffReport, out: &mut dyn Write) -> Result<()> {
    for f in r.files.iter().filter(|f| f.status != Status::Same) {
        writeln!(out, "{}", file_line(f))?;
    }
    let n = |s: Status| r.files.iter().filter(|f| f.status == s).count();
    let (o, w) = (&r.old_totals, &r.new_totals);
    if r.equal {
        writeln!(
            out,
            "device code is the same: {}, {}, {}",
            crate::plural(w.files, "file", "files"),
            crate::plural(w.code_objects, "code object", "code objects"),
            crate::plural(w.kernels, "kernel", "kernels"),
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{} changed: {} modified, {} added, {} removed ({} unchanged)",
        crate::plural(
            (n(Status::Modified) + n(Status::Added) + n(Status::Removed)) as u64,
            "file",
            "files"
        ),
        n(Status::Modified),
        n(Status::Added),
        n(Status::Removed),
        n(Status::Same)
    )?;
    writeln!(
        out,
        "device bytes {} -> {}; code objects {} -> {}; kernels {} -> {}",
        human(o.device_bytes),
        human(w.device_bytes),
        o.code_objects,
        w.code_objects,
        o.kernels,
        w.kernels
    )?;
    if !r.targets_added.is_empty() {
        writeln!(out, "targets added: {}", r.targets_added.join(" "))?;
    }
    if !r.targets_removed.is_empty() {
        writeln!(out, "targets removed: {}", r.targets_removed.join(" "))?;
    }
    if !r.ids_added.is_empty() {
        writeln!(out, "target IDs added: {}", r.ids_added.join(" "))?;
    }
    if !r.ids_removed.is_empty() {
        writeln!(out, "target IDs removed: {}", r.ids_removed.join(" "))?;
    }
    Ok(())
}
