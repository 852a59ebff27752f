//! `prune` of a directory tree: the pruning, its checks and the write are
//! `gfxkit_io::tree`'s; this module prints the report.

use crate::cmd::prune::IoArgs;
use anyhow::{bail, Result};
use gfxkit_inventory::prune::{Done, PruneOutcome, TreeAction, TreeFile};
use gfxkit_inventory::units::human_bytes as human;
use gfxkit_io::tree::TreeOutput;
use gfxkit_shrink::{Selection, Transform};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Prunes the tree `io.input` into `-o OUTDIR`, or in place (or only reports, with
/// `--dry-run`).
pub fn execute(io: &IoArgs, t: &Transform, allow_empty: bool) -> Result<ExitCode> {
    if io.drop_signature {
        bail!("--drop-signature is for one Windows image, not a tree");
    }
    let name = io.input.display().to_string();
    let target = io.target();
    let started = std::time::Instant::now();
    let progress = crate::output::spinner(format!("pruning {name}"));
    let to = match (&target, io.in_place) {
        (None, _) => TreeOutput::DryRun,
        (Some(_), true) => TreeOutput::InPlace,
        (Some(out), false) => TreeOutput::Dir(out),
    };
    let done = gfxkit_io::tree::prune_tree(&io.input, t, to, allow_empty)?;
    progress.finish_and_clear();
    let flag = match &t.selection {
        Selection::Keep(_) => "--keep",
        _ => "--drop",
    };
    for u in &done.unmatched {
        eprintln!("gfxkit: note: {flag} {u} matches no device code of {name}");
    }
    let elapsed = started.elapsed();
    if io.json {
        return crate::output::print_json(&PruneOutcome {
            input: &name,
            output: target.as_ref().map(|p| p.display().to_string()),
            dry_run: io.dry_run,
            seconds: elapsed.as_secs_f64(),
            done: Done::Tree {
                size_before: done.size_before,
                size_after: done.size_after,
                unmatched: &done.unmatched,
                files: &done.files,
            },
        })
        .map(|_| ExitCode::SUCCESS);
    }
    print_text(&name, target.as_deref(), io.dry_run, &done, elapsed)?;
    Ok(ExitCode::SUCCESS)
}

fn action(a: TreeAction) -> &'static str {
    match a {
        TreeAction::Kept => "kept",
        TreeAction::Dropped => "dropped",
        TreeAction::Rewritten => "rewritten",
        TreeAction::Copied => "copied",
    }
}

fn print_text<'a>(
    name: &str,
    written: Option<&Path>,
    dry_run: bool,
    done: &'a gfxkit_io::tree::PrunedTree,
    elapsed: std::time::Duration,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let saved = done.size_before as i64 - done.size_after as i64;
    let pct = if done.size_before > 0 {
        saved as f64 * 100.0 / done.size_before as f64
    } else {
        0.0
    };
    writeln!(
        out,
        "{name}: tree, {} -> {} ({} {}, {:.1}% {}){}",
        human(done.size_before),
        human(done.size_after),
        human(saved.unsigned_abs()),
        if saved >= 0 { "saved" } else { "added" },
        pct.abs(),
        if saved >= 0 { "smaller" } else { "larger" },
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
        .filter(|(_, v)| v.len() <= crate::output::GROUP_ABOVE)
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|f| f.kind != "directory")
        .collect();
    let lifted = group(&small, &|f| match parent(&parent(&f.path)) {
        d if d.is_empty() => d,
        d => format!("{d}/*"),
    });
    let lifted: Vec<_> = lifted
        .into_iter()
        .filter(|(k, v)| v.len() > crate::output::GROUP_ABOVE && !k.0.is_empty())
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
        if files.len() > crate::output::GROUP_ABOVE {
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
            line(&mut out, f)?;
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
