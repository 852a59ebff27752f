//! `gfxkit select`: which code object the HIP runtime would load on a device, per bundle.

use crate::output;
use anyhow::Result;
use gfxkit_inventory::select::SelectReport;
use gfxkit_target_id::TargetId;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Show, for each bundle in the files, the entry the HIP runtime would load on a device.
///
/// The runtime's order: the first compatible native entry in header order; then the family's
/// generic target (gfx9-generic, gfx10-3-generic, ...); then SPIR-V (amdgcnspirv). A device
/// feature left out of the target ID (`gfx90a` rather than `gfx90a:sramecc+:xnack-`) is
/// treated as unknown: entries that set it still fit, and the report says which setting they
/// need. Directories are searched recursively.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The HIP runtime's order: the first compatible native entry in header order, then the \
family's generic target (gfx9-generic, gfx10-3-generic, ...), then SPIR-V (amdgcnspirv). A feature left \
out of the device ID (gfx90a rather than gfx90a:sramecc+:xnack-) is unknown: entries that set it still fit, \
and the report says which setting they need. An uncompressed bundle whose header exceeds the 4096 bytes \
the runtime reads cannot be loaded.\n\nBinaries split by kpack (HIPK wrappers) are resolved as the kpack loader \
does: the device's target ID, each feature subset most specific first, then its generic target, expanded into \
the marker's @GFXARCH@ paths (ROCM_KPACK_PATH, ROCM_KPACK_PATH_PREFIX, ROCM_KPACK_DISABLE honoured); with \
--kpack-loader old, the first archive listing a matching architecture decides. A wrapper that loads nothing \
names the kpack error, the missing file or key, and the package providing a missing archive.\n\nExamples:\n  gfxkit select --device gfx90a:sramecc+:xnack- /opt/rocm/lib/librocsparse.so\n  \
gfxkit select --device gfx1100 --json build/\n  \
gfxkit select --device gfx90a:sramecc+:xnack- --kpack-loader old lib/libtorch_hip.so\n\n\
Exit codes: 0 every bundle has a selection; 1 some bundle has none; 2 an error (unreadable file or bundle, damaged file, a kpack archive tried that is damaged: the problems are listed)."
)]
pub struct Args {
    /// Device target ID, such as `gfx90a:sramecc+:xnack-` or `gfx1100`, or its ISA name
    /// (`amdgcn-amd-amdhsa--gfx90a:xnack-`, `amdgpu9.0a-amd-amdhsa--gfx90a`).
    #[arg(long, value_name = "TARGET_ID", value_parser = gfxkit_target_id::triple::parse_device)]
    pub device: TargetId,
    /// Files or directories to examine.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print JSON: `{"device", "files": [{"path", "bundles": [{"index", "kind", "format", "offset", "selected", "via", "reason", ...}]}]}`;
    /// a split binary's `HIPK` wrappers are units of `format` `kpack` with the loader's look-up
    /// (`wrapper`, `kpack_key`, `archive`, `arch`, `error_code`, `missing`, `package`, ...).
    #[arg(long)]
    pub json: bool,
    /// Which kpack loader to model for split binaries: `current` tries every candidate
    /// archive; `old` (earlier ROCm 7) stops at the first archive listing a matching
    /// architecture, so a variant archive without the kernel shadows the plain one.
    #[arg(long, value_enum, default_value = "current")]
    pub kpack_loader: crate::kpack_files::LoaderArg,
}

/// Runs `gfxkit select`.
pub fn run(args: Args) -> Result<ExitCode> {
    let device = args.device;
    let loader = args.kpack_loader.into();
    let progress = output::Reading::new(false);
    let report = gfxkit_io::whole::select(&args.files, &device, loader, &progress);
    progress.finish();
    let report = report?;
    let code = report.files.iter().map(|f| f.status()).max().unwrap_or(0);
    if args.json {
        output::print_json(&report)?;
    } else {
        print_text(&report, &mut std::io::stdout().lock())?;
    }
    Ok(ExitCode::from(code))
}

/// Prints one line per unit (index, place, outcome) or, for more than
/// [`output::GROUP_ABOVE`] units, one line per distinct outcome with the indices that have it.
fn print_units<P: std::fmt::Display>(
    out: &mut dyn Write,
    what: &str,
    units: impl Iterator<Item = (usize, P, String)>,
) -> Result<()> {
    let units: Vec<(usize, P, String)> = units.collect();
    if units.len() <= output::GROUP_ABOVE {
        for (i, place, outcome) in &units {
            writeln!(out, "  [{i:>3}] {:<28} {outcome}", place.to_string())?;
        }
        return Ok(());
    }
    for (indices, outcome) in output::group_by_text(units.into_iter().map(|(i, _, o)| (i, o))) {
        let n = indices.len();
        let what = if n == 1 {
            what.trim_end_matches('s')
        } else {
            what
        };
        writeln!(
            out,
            "  [{}] {n} {what}: {outcome}",
            output::ranges(&indices)
        )?;
    }
    Ok(())
}

/// Prints the report as text on `out` (problems go to stderr).
pub fn print_text(r: &SelectReport, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "device {}", r.device)?;
    for f in &r.files {
        if let Some(e) = &f.error {
            writeln!(out, "error: {}", crate::output::naming(&f.path, e))?;
            continue;
        }
        for p in &f.problems {
            eprintln!("gfxkit: {}: {}: {p}", p.severity, f.path);
        }
        let kpack: Vec<_> = f.kpack_units().collect();
        if !kpack.is_empty() {
            let chosen = kpack.iter().filter(|(b, _)| b.selected.is_some()).count();
            // A split binary's units are its HIPK wrappers; a `.kpack` file's, its TOC keys.
            let what = if f.kpack.is_empty() {
                "kernels of the archive"
            } else {
                "kpack wrappers"
            };
            writeln!(
                out,
                "{}: {chosen} of {} {what} have a code object for the device",
                f.path,
                kpack.len()
            )?;
            let lines = kpack.iter().map(|(b, u)| {
                let key = u.lookup.key.as_deref().unwrap_or("?");
                let outcome = match &b.selected {
                    Some(id) => {
                        let mut o = format!(
                            "{id} (kpack: {})",
                            u.lookup.archive.as_deref().unwrap_or("")
                        );
                        for d in &u.lookup.skipped {
                            o.push_str(&format!("; skipped, as the runtime does: damaged {d}"));
                        }
                        o
                    }
                    None => format!("none: {}", u.failure_text()),
                };
                (u.index as usize, key, outcome)
            });
            print_units(out, what, lines)?;
        }
        // A kernel database the library loads: after its bundles.
        let databases: Vec<String> = f
            .database_units()
            .map(|(b, d)| {
                let outcome = match &b.selected {
                    Some(_) => format!("loads {}", d.files.join(", ")),
                    None => format!(
                        "none: {}",
                        b.reason
                            .strip_prefix(&format!("{} ", d.database))
                            .unwrap_or(&b.reason)
                    ),
                };
                if f.path == d.database {
                    format!("{}: kernel database: {outcome}", f.path)
                } else {
                    format!("{}: kernel database {}: {outcome}", f.path, d.database)
                }
            })
            .collect();
        let units: Vec<_> = f
            .bundles
            .iter()
            .filter(|b| b.kpack.is_none() && b.database.is_none())
            .collect();
        if units.is_empty() {
            // Damage that hides the device code was said above (on stderr): not "none here".
            let damaged = f
                .problems
                .iter()
                .any(|p| p.severity == gfxkit_host::Severity::Error);
            if kpack.is_empty() && !damaged && databases.is_empty() {
                writeln!(out, "{}: no device code", f.path)?;
            }
            for line in &databases {
                writeln!(out, "{line}")?;
            }
            continue;
        }
        let chosen = units.iter().filter(|b| b.selected.is_some()).count();
        writeln!(
            out,
            "{}: {chosen} of {} bundles have a code object for the device",
            f.path,
            units.len()
        )?;
        let lines = units.iter().map(|b| {
            let place = match (&b.member, &b.section) {
                (Some(m), Some(s)) => format!("{m} {s} @{:#x}", b.offset),
                (Some(m), None) => format!("{m} @{:#x}", b.offset),
                (None, Some(s)) => format!("{s} @{:#x}", b.offset),
                (None, None) => format!("@{:#x}", b.offset),
            };
            let outcome = match (&b.selected, b.via) {
                (Some(id), Some(via)) => match &b.needs {
                    Some(n) => format!("{id} ({via}), needs {n}"),
                    None => format!("{id} ({via})"),
                },
                // A bundle that cannot be read makes the command exit 2: said as an error.
                _ if b.unreadable => format!("error: {}", b.reason),
                _ => format!("none: {}", b.reason),
            };
            (b.index, place, outcome)
        });
        print_units(out, "bundles", lines)?;
        for line in &databases {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
