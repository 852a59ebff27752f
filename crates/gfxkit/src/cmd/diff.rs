//! `gfxkit diff OLD NEW`: what changed in device code between two builds.

use crate::output;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Compare the device code of two builds: files, directory trees or packages.
///
/// Files are matched by their path below each side (a directory's relative path, a package's
/// member path; two single files are compared with each other), then a file left unmatched
/// with the one left on the other side whose path ends the same (a `.deb` member
/// `usr/lib/x.so` and `x.so` unpacked). For each file: the targets added and removed, counted
/// by the devices they serve under the HIP runtime's rule (`gfx90a` code serves
/// `gfx90a:xnack+` and `gfx90a:xnack-` devices: replacing the two by it removes no target),
/// the target-ID strings added and removed beside them, the targets whose code objects changed
/// (by SHA-256 of the uncompressed code object), and device bytes, code objects and kernels
/// before and after; files with device code on one side only are added or removed.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  gfxkit diff build-6.4/lib build-7.0/lib\n  \
gfxkit diff torch-2.5-rocm6.2.whl torch-2.6-rocm6.3.whl --json\n  \
gfxkit diff old/librocblas.so new/librocblas.so\n\n\
Text: one line per changed file, M (modified), A (added), D (removed), then the totals. --json \
prints {old, new, equal, files: [{path, status (same, modified, added, removed), added, removed, \
added_ids, removed_ids, changed: [{target, old, new, differ}], device_bytes: {old, new}, \
code_objects: {old, new}, kernels: {old, new}}], old_totals, new_totals: {files, device_bytes, \
code_objects, kernels}, targets_added, targets_removed, ids_added, ids_removed, errors}; every \
file with device code on either side is listed, unchanged ones with status same, in path order. \
added/removed and targets_* are devices served on one side only, folded into target IDs \
(gfx906:xnack+ for both sramecc settings of an xnack-on gfx906); *_ids are the target-ID \
strings present on one side only.\n\n\
Exit codes: 0 the device code is the same; 1 it differs; 2 an error (an unreadable input or \
file, damaged device code: each is named on stderr and no diff is printed)."
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
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let progress = crate::output::Reading::new(args.json);
    let report = gfxkit_io::whole::diff(
        &args.old,
        &args.new,
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let report = report?;
    // Code objects are compared by digest: a side whose device code does not decode has no
    // digests to compare, so no diff is printed, only what could not be read.
    if !report.errors.is_empty() {
        for e in &report.errors {
            eprintln!("gfxkit: error: {e}");
        }
        return Ok(ExitCode::from(2));
    }
    if args.json {
        output::print_json(&report)?;
    } else {
        gfxkit_text::diff::report(&report, &mut std::io::stdout().lock())?;
    }
    Ok(ExitCode::from(report.status()))
}
