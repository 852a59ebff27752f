//! `gfxkit prune` and `recompress` reports: a file's regions and bundles, a package's
//! members, a tree's files, and the targets of a selection that matched nothing.

use crate::group::{group_by_text, ranges, GROUP_ABOVE};
use gfxkit_inventory::prune::{TreeAction, TreeFile};
use gfxkit_inventory::units::human_bytes as human;
use gfxkit_shrink::{BundleOutcome, Report};
use std::io::{Result, Write};
use std::path::Path;
use std::time::Duration;

/// A size change: `1.2 GiB -> 350.0 MiB (900.0 MiB saved, 71.8% smaller)`.
fn change(before: u64, after: u64) -> String {
    let saved = before as i64 - after as i64;
    let pct = if before > 0 {
        saved as f64 * 100.0 / before as f64
    } else {
        0.0
    };
    format!(
        "{} -> {} ({} {}, {:.1}% {})",
        human(before),
        human(after),
        human(saved.unsigned_abs()),
        if saved >= 0 { "saved" } else { "added" },
        pct.abs(),
        if saved >= 0 { "smaller" } else { "larger" },
    )
}

/// One file's report: sizes before and after, where it was written (or that nothing was, in
/// a dry run), each region's layout and bundles, and the time taken.
pub fn file(
    name: &str,
    written: Option<&Path>,
    dry_run: bool,
    r: &Report,
    elapsed: Duration,
    out: &mut dyn Write,
) -> Result<()> {
    let verb = if dry_run { "would be" } else { "is" };
    writeln!(
        out,
        "{name}: {}, {}{}",
        r.kind.words(),
        change(r.size_before, r.size_after),
        match written {
            Some(p) => format!(", written to {}", p.display()),
            None => format!(
                " [dry run: nothing written; the file {verb} {} bytes]",
                r.size_after
            ),
        }
    )?;
    if !r.changed() {
        writeln!(out, "  no bundle changes")?;
    }
    for g in &r.regions {
        let place = match (&g.member, &g.section) {
            (Some(m), Some(s)) => format!("{m}({s})"),
            (Some(m), None) => m.clone(),
            (None, Some(s)) => s.clone(),
            (None, None) => "bundles".to_owned(),
        };
        writeln!(
            out,
            "  {place}: {}, {}, {} and {} fixed; layout: {}",
            crate::plural(g.bundles.len() as u64, "bundle", "bundles"),
            crate::plural(g.wrappers as u64, "wrapper", "wrappers"),
            crate::plural(g.relocations as u64, "relocation", "relocations"),
            crate::plural(g.symbols as u64, "symbol", "symbols"),
            match &g.layout {
                gfxkit_shrink::Layout::Unchanged => "unchanged".to_owned(),
                gfxkit_shrink::Layout::Rebuilt => "rebuilt".to_owned(),
                gfxkit_shrink::Layout::SegmentShortened { shift } => format!(
                    "segment shortened, later bytes moved down {}",
                    human(*shift)
                ),
                gfxkit_shrink::Layout::SectionShortened { shift } => format!(
                    "section's raw data shortened (virtual size kept), later bytes moved down {}",
                    human(*shift)
                ),
                gfxkit_shrink::Layout::SegmentSplit { shift, phdr_slot } => format!(
                    "segment split ({phdr_slot}), later bytes moved down {}",
                    human(*shift)
                ),
                gfxkit_shrink::Layout::Relocated {
                    offset,
                    address,
                    phdr_slot,
                } => format!(
                    "section grew: moved to a new segment at address {address:#x}, file offset \
                     {offset:#x} ({phdr_slot}); its old bytes are zeroed"
                ),
                gfxkit_shrink::Layout::ZeroFilled { unit } => format!(
                    "rewritten in place and zero-filled (freed bytes under one {} unit)",
                    human(*unit)
                ),
            }
        )?;
        bundles(out, &g.bundles)?;
    }
    writeln!(out, "  took {:.2} s", elapsed.as_secs_f64())?;
    Ok(())
}

/// The bundle lines of a region: one per bundle or, past [`GROUP_ABOVE`]
/// bundles, one per distinct outcome (encodings, kept and dropped targets) with the sizes
/// added up.
fn bundles(out: &mut dyn Write, bundles: &[BundleOutcome]) -> Result<()> {
    let outcome = |b: &BundleOutcome| {
        let kept: Vec<&str> = b.kept.iter().map(|e| e.target.as_str()).collect();
        let dropped: Vec<&str> = b.dropped.iter().map(|e| e.target.as_str()).collect();
        let mut s = format!("kept {}", kept.join(", "));
        if !dropped.is_empty() {
            s.push_str(&format!("; dropped {}", dropped.join(", ")));
        }
        let only_host = !b.kept.iter().any(|e| e.target != "host");
        (
            b.encoding_before.clone(),
            b.encoding_after.clone(),
            s,
            only_host,
        )
    };
    const ONLY_HOST: &str =
        "only the host entry is left; this bundle's kernels cannot run on any GPU";
    if bundles.len() <= GROUP_ABOVE {
        for (i, b) in bundles.iter().enumerate() {
            let (before, after, what, only_host) = outcome(b);
            writeln!(
                out,
                "    bundle {i} at {:#x}: {before} {} -> {after} {}; {what}",
                b.offset,
                human(b.size_before),
                human(b.size_after),
            )?;
            if only_host {
                writeln!(out, "      note: {ONLY_HOST}")?;
            }
        }
        return Ok(());
    }
    let groups = group_by_text(bundles.iter().map(outcome).enumerate());
    for (indices, (before, after, what, only_host)) in groups {
        let (b, a) = indices.iter().fold((0, 0), |(b, a), &i| {
            (b + bundles[i].size_before, a + bundles[i].size_after)
        });
        writeln!(
            out,
            "    bundles {} ({}): {before} {} -> {after} {}; {what}",
            ranges(&indices),
            indices.len(),
            human(b),
            human(a),
        )?;
        if only_host {
            writeln!(out, "      note: {ONLY_HOST}")?;
        }
    }
    Ok(())
}

/// The notes for each target of `selection` that matches no entry of the files (`name`,
/// report), with the files it is missing from and the targets they hold; one line per target.
pub fn unmatched<'r>(
    selection: &gfxkit_shrink::EntryFilter,
    reports: impl IntoIterator<Item = (&'r str, &'r Report)>,
) -> Vec<String> {
    let flag = match selection {
        gfxkit_shrink::EntryFilter::Keep(_) => "--keep",
        gfxkit_shrink::EntryFilter::Drop(_) => "--drop",
        gfxkit_shrink::EntryFilter::All => return Vec::new(),
    };
    let mut lines = Vec::new();
    let mut missing: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
    for (name, r) in reports {
        for u in &r.unmatched {
            match missing.iter_mut().find(|(t, _, _)| t == u) {
                Some((_, files, present)) => {
                    files.push(name);
                    present.extend(r.targets_before());
                }
                None => missing.push((u, vec![name], r.targets_before())),
            }
        }
    }
    for (target, files, mut present) in missing {
        present.sort_unstable();
        present.dedup();
        let files = crate::group::shortened(&files, 3);
        lines.push(format!(
            "gfxkit: note: {flag} {target} matches no entry of {files} (present: {})",
            if present.is_empty() {
                "none".to_owned()
            } else {
                present.join(", ")
            }
        ));
    }
    lines
}

/// A package's report: the members rewritten or dropped with their sizes, where the package
/// was written.
pub fn package(
    name: &str,
    written: Option<&Path>,
    changed: &[gfxkit_package::rewrite::Changed],
    out: &mut dyn Write,
) -> Result<()> {
    // A package among the members is followed by its own members changed: only they count.
    let counted: Vec<&gfxkit_package::rewrite::Changed> = changed
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            !changed.get(i + 1).is_some_and(|next| {
                next.path
                    .strip_prefix(c.path.as_str())
                    .is_some_and(|rest| rest.starts_with('!'))
            })
        })
        .map(|(_, c)| c)
        .collect();
    let before: u64 = counted.iter().map(|c| c.size_before).sum();
    let after: u64 = counted.iter().map(|c| c.size_after).sum();
    let removed = counted.iter().filter(|c| c.removed).count();
    let rewritten = counted.len() - removed;
    writeln!(
        out,
        "{name}: {} rewritten{}, {} -> {} uncompressed{}",
        if rewritten == 1 {
            "1 member".to_owned()
        } else {
            format!("{rewritten} members")
        },
        if removed > 0 {
            format!(", {removed} dropped")
        } else {
            String::new()
        },
        human(before),
        human(after),
        match written {
            Some(p) => format!(", written to {}", p.display()),
            None => " [dry run: nothing written]".to_owned(),
        }
    )?;
    for c in changed {
        let after = if c.removed {
            "dropped".to_owned()
        } else {
            human(c.size_after)
        };
        writeln!(out, "  {}: {} -> {after}", c.path, human(c.size_before))?;
    }
    if changed.is_empty() {
        writeln!(out, "  no member changed")?;
    }
    Ok(())
}

fn action(a: TreeAction) -> &'static str {
    match a {
        TreeAction::Kept => "kept",
        TreeAction::Dropped => "dropped",
        TreeAction::Rewritten => "rewritten",
        TreeAction::Copied => "copied",
    }
}

/// A tree's report: sizes, each device file (or group of files alike past [`GROUP_ABOVE`]
/// in one directory) with what was done to it, the other paths copied, the time taken.
pub fn tree<'a>(
    name: &str,
    written: Option<&Path>,
    dry_run: bool,
    done: &'a gfxkit_io::tree::PrunedTree,
    elapsed: Duration,
    out: &mut dyn Write,
) -> Result<()> {
    writeln!(
        out,
        "{name}: tree, {}{}",
        change(done.size_before, done.size_after),
        match written {
            Some(p) => format!(", written to {}", p.display()),
            None if dry_run => " [dry run: nothing written]".to_owned(),
            None => String::new(),
        }
    )?;
    // Device files one line each; past GROUP_ABOVE in one directory with the same kind and
    // action, one line for the group. Files inside a dropped directory are named by it.
    let device: Vec<&'a TreeFile> = done
        .files
        .iter()
        .filter(|f| {
            (!f.targets.is_empty() || f.kind == "directory")
                && !(f.action == TreeAction::Dropped
                    && f.note.as_deref().is_some_and(|n| n.starts_with("in ")))
        })
        .collect();
    // Grouped by directory; files of small groups whose directories share a parent (one
    // file per directory, as Triton's AOT caches are laid out) grouped by that parent.
    let parent = |p: &str| p.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
    type Groups<'f> = Vec<((String, &'static str, TreeAction), Vec<&'f TreeFile>)>;
    let group = |files: &[&'a TreeFile], key: &dyn Fn(&TreeFile) -> String| {
        let mut groups: Groups<'a> = Vec::new();
        for f in files {
            let k = (key(f), f.kind, f.action);
            match groups.iter_mut().find(|(g, _)| *g == k) {
                Some((_, v)) => v.push(f),
                None => groups.push((k, vec![*f])),
            }
        }
        groups
    };
    let mut groups = group(&device, &|f| parent(&f.path));
    let small: Vec<&TreeFile> = groups
        .iter()
        .filter(|(_, v)| v.len() <= GROUP_ABOVE)
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|f| f.kind != "directory")
        .collect();
    let lifted = group(&small, &|f| match parent(&parent(&f.path)) {
        d if d.is_empty() => d,
        d => format!("{d}/*"),
    });
    let lifted: Vec<_> = lifted
        .into_iter()
        .filter(|(k, v)| v.len() > GROUP_ABOVE && !k.0.is_empty())
        .collect();
    for (_, v) in groups.iter_mut() {
        v.retain(|f| {
            !lifted
                .iter()
                .any(|(_, l)| l.iter().any(|g| std::ptr::eq(*g, *f)))
        });
    }
    groups.retain(|(_, v)| !v.is_empty());
    groups.extend(lifted);
    for ((dir, kind, act), files) in &groups {
        if files.len() > GROUP_ABOVE {
            let mut targets: Vec<&str> = files
                .iter()
                .flat_map(|f| f.targets.iter().map(String::as_str))
                .collect();
            targets.sort_unstable();
            targets.dedup();
            let (b, a) = files
                .iter()
                .fold((0, 0), |(b, a), f| (b + f.size_before, a + f.size_after));
            writeln!(
                out,
                "  {:<9} {dir}/: {} {kind} files ({}), {} -> {}",
                action(*act),
                files.len(),
                targets.join(", "),
                human(b),
                human(a)
            )?;
            continue;
        }
        for f in files {
            if f.kind == "directory" {
                let prefix = format!("{}/", f.path);
                let (n, bytes) = done
                    .files
                    .iter()
                    .filter(|g| g.path.starts_with(&prefix))
                    .fold((0, 0), |(n, b), g| (n + 1, b + g.size_before));
                writeln!(
                    out,
                    "  {:<9} {}/ (directory: {n} files, {}); {}",
                    action(f.action),
                    f.path,
                    human(bytes),
                    f.note.as_deref().unwrap_or_default()
                )?;
                continue;
            }
            line(out, f)?;
        }
    }
    let others: Vec<&TreeFile> = done
        .files
        .iter()
        .filter(|f| f.targets.is_empty() && f.kind != "directory")
        .collect();
    let copied = others
        .iter()
        .filter(|f| f.action != TreeAction::Dropped)
        .count();
    let links = others.iter().filter(|f| f.kind == "symlink").count();
    writeln!(
        out,
        "  {copied} other paths copied unchanged ({} symbolic links), {}",
        links,
        human(
            others
                .iter()
                .filter(|f| f.action != TreeAction::Dropped)
                .map(|f| f.size_after)
                .sum()
        )
    )?;
    writeln!(out, "  took {:.2} s", elapsed.as_secs_f64())?;
    Ok(())
}

fn line(out: &mut dyn Write, f: &TreeFile) -> Result<()> {
    let sizes = if f.action == TreeAction::Rewritten {
        format!("{} -> {}", human(f.size_before), human(f.size_after))
    } else {
        human(f.size_before)
    };
    write!(
        out,
        "  {:<9} {} ({}{}{}), {sizes}",
        action(f.action),
        f.path,
        f.kind,
        if f.targets.is_empty() { "" } else { ": " },
        f.targets.join(", ")
    )?;
    if let Some(n) = &f.note {
        write!(out, "; {n}")?;
    }
    writeln!(out)?;
    if let Some(ix) = &f.index {
        let rows = |rows: &[gfxkit_inventory::prune::IndexRow]| {
            rows.iter()
                .map(|r| match (&r.processor, r.cu_count) {
                    (Some(p), Some(n)) => format!("{p} ({n} CUs)"),
                    (Some(p), None) => p.clone(),
                    (None, _) => r.predicate.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            out,
            "            rows kept: {}; dropped: {}; solutions {} -> {}",
            rows(&ix.kept_rows),
            rows(&ix.dropped_rows),
            ix.solutions_before,
            ix.solutions_after
        )?;
    }
    if let Some(r) = &f.report {
        let mut kept: Vec<&str> = Vec::new();
        let mut dropped: Vec<&str> = Vec::new();
        for b in r.regions.iter().flat_map(|g| g.bundles.iter()) {
            kept.extend(
                b.kept
                    .iter()
                    .map(|e| e.target.as_str())
                    .filter(|t| *t != "host"),
            );
            dropped.extend(b.dropped.iter().map(|e| e.target.as_str()));
        }
        for v in [&mut kept, &mut dropped] {
            v.sort_unstable();
            v.dedup();
        }
        writeln!(
            out,
            "            bundle entries kept: {}; dropped: {}",
            if kept.is_empty() {
                "none".to_owned()
            } else {
                kept.join(", ")
            },
            if dropped.is_empty() {
                "none".to_owned()
            } else {
                dropped.join(", ")
            }
        )?;
    }
    Ok(())
}
