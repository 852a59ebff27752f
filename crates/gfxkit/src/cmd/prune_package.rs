//! `prune` and `recompress` of packages: the rewrite, its verification and the checked write
//! are `gfxkit_io::package`'s; this module prints the report.

use crate::cmd::prune::IoArgs;
use crate::input::Input;
use crate::output::Durability;
use anyhow::Result;
use gfxkit_shrink::Transform;
use std::path::Path;
use std::process::ExitCode;

/// Rewrites the package `input` (named by `io.input`) with `t` (`gfxkit_io::package`).
pub fn execute(io: &IoArgs, t: &Transform, input: &Input, allow_empty: bool) -> Result<ExitCode> {
    let name = io.input.display().to_string();
    let target = io.target();
    // Only the replacement of an input must reach the disk before the rename.
    let durability = if io.in_place {
        Durability::Synced
    } else {
        Durability::Rename
    };
    let started = std::time::Instant::now();
    let done = gfxkit_io::package::rewrite_package(
        &name,
        input,
        t,
        target.as_deref(),
        Some(&io.input),
        durability,
        allow_empty,
    )?;
    crate::cmd::prune::note_unmatched(
        &t.selection,
        done.reports.iter().map(|(m, r)| (m.as_str(), r)),
    );
    print_report(&name, target.as_deref(), io, &done, started.elapsed())?;
    Ok(ExitCode::SUCCESS)
}

fn print_report(
    name: &str,
    written: Option<&Path>,
    io: &IoArgs,
    done: &gfxkit_io::package::Rewritten,
    elapsed: std::time::Duration,
) -> Result<()> {
    let changed = &done.changed;
    if io.json {
        return crate::output::print_json(&gfxkit_inventory::prune::PruneOutcome {
            input: name,
            output: written.map(|p| p.display().to_string()),
            dry_run: io.dry_run,
            seconds: elapsed.as_secs_f64(),
            done: gfxkit_inventory::prune::Done::Package {
                members: done.members(),
            },
        });
    }
    gfxkit_text::prune::package(name, written, changed, &mut std::io::stdout().lock())?;
    Ok(())
}
