//! `gfxkit diff OLD NEW`: what changed in device code between two builds.

use crate::output;
use anyhow::Result;
use gfxkit_inventory::diff::{Change, DiffReport, FileDiff, Status};
use gfxkit_inventory::units::human_bytes as human;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Compare the device code of two builds: files, directory trees or packages.
///
/// Files are matched by their path below each side (a directory's relative path, a package's
/// member path; two single files are compared with each other). For each file: the targets
/// added and removed, the targets whose code objects changed (by SHA-256 of the uncompressed
/// code object), and device bytes, code objects and kernels before and after; files with
/// device code on one side only are added or removed.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  gfxkit diff build-6.4/lib build-7.0/lib\n  \
gfxkit diff torch-2.5-rocm6.2.whl torch-2.6-rocm6.3.whl --json\n  \
gfxkit diff old/librocblas.so new/librocblas.so\n\n\
Text: one line per changed file, M (modified), A (added), D (removed), then the totals. --json \
prints {old, new, equal, files: [{path, status (same, modified, added, removed), added, removed, \
changed: [{target, old, new, differ}], device_bytes: {old, new}, code_objects: {old, new}, \
kernels: {old, new}}], old_totals, new_totals: {files, device_bytes, code_objects, kernels}, \
targets_added, targets_removed, errors}; every file with device code on either side is listed, \
unchanged ones with status same, in path order.\n\n\
Exit codes: 0 the device code is the same; 1 it differs; 2 an error (an unreadable input or \
file, damaged device code)."
)]
pub struct Args {
    /// The old build: a file, a directory or a package.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The new build.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Print JSON (see below).
    #[arg(long)]
    pub json: bool,
}

/// Runs `gfxkit diff`.
pub fn run(args: Args) -> Result<ExitCode> {
    let progress = crate::output::Reading::new(args.json);
    let report = gfxkit_io::whole::diff(&args.old, &args.new, &progress);
    progress.finish();
    let report = report?;
    if args.json {
        output::print_json(&report)?;
    } else {
        print_text(&report, &mut std::io::stdout().lock())?;
    }
    for e in &report.errors {
        eprintln!("gfxkit: error: {e}");
    }
    Ok(ExitCode::from(report.status()))
}

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
pub fn print_text(r: &DiffReport, out: &mut dyn Write) -> Result<()> {
    for f in r.files.iter().filter(|f| f.status != Status::Same) {
        writeln!(out, "{}", file_line(f))?;
    }
    let n = |s: Status| r.files.iter().filter(|f| f.status == s).count();
    let (o, w) = (&r.old_totals, &r.new_totals);
    if r.equal {
        writeln!(
            out,
            "device code is the same: {} files, {} code objects, {} kernels",
            w.files, w.code_objects, w.kernels
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{} files changed: {} modified, {} added, {} removed ({} unchanged)",
        n(Status::Modified) + n(Status::Added) + n(Status::Removed),
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
    Ok(())
}
