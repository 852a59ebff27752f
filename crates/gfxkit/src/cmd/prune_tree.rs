//! `prune` of a directory tree: the pruning, its checks and the write are
//! `gfxkit_io::tree`'s; this module prints the report.

use crate::cmd::prune::IoArgs;
use anyhow::{bail, Result};
use gfxkit_inventory::prune::{Done, PruneOutcome};
use gfxkit_io::tree::TreeOutput;
use gfxkit_shrink::{Selection, Transform};
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
    gfxkit_text::prune::tree(
        &name,
        target.as_deref(),
        io.dry_run,
        &done,
        elapsed,
        &mut std::io::stdout().lock(),
    )?;
    Ok(ExitCode::SUCCESS)
}
