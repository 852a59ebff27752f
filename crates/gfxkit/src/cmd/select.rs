//! `gfxkit select`: which code object the HIP runtime would load on a device, per bundle.

use crate::output;
use crate::scan;
use anyhow::{Context, Result};
use gfxkit_host::entries::{units, UnitKind};
use gfxkit_host::select::{select_unit, Via};
use gfxkit_host::Severity;
use gfxkit_target_id::TargetId;
use serde::Serialize;
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
the runtime reads cannot be loaded.\n\nExamples:\n  gfxkit select --device gfx90a:sramecc+:xnack- /opt/rocm/lib/librocsparse.so\n  \
gfxkit select --device gfx1100 --json build/\n\n\
Exit codes: 0 every bundle has a selection; 1 some bundle has none; 2 an error (unreadable file or bundle, damaged file: the problems are listed)."
)]
pub struct Args {
    /// Device target ID, such as `gfx90a:sramecc+:xnack-` or `gfx1100`, or its ISA name
    /// (`amdgcn-amd-amdhsa--gfx90a:xnack-`, `amdgpu9.0a-amd-amdhsa--gfx90a`).
    #[arg(long, value_name = "TARGET_ID", value_parser = gfxkit_target_id::triple::parse_device)]
    pub device: TargetId,
    /// Files or directories to examine.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print JSON: `{"device", "files": [{"path", "bundles": [{"index", "selected", "via", "reason", ...}]}]}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report {
    device: String,
    files: Vec<FileReport>,
}

#[derive(Serialize)]
struct FileReport {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    bundles: Vec<BundleReport>,
    /// Damage or oddities found while looking for device code.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<gfxkit_host::Problem>,
    /// Device code moved out to kpack archives (`HIPK` wrappers): not examined.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    kpack: Vec<gfxkit_host::KpackRef>,
}

#[derive(Serialize)]
struct BundleReport {
    index: usize,
    kind: UnitKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    member: Option<String>,
    section: Option<String>,
    offset: u64,
    selected: Option<String>,
    via: Option<Via>,
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    needs: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    nearest: Vec<String>,
    #[serde(skip)]
    unreadable: bool,
}

type FileFindings = (
    Vec<BundleReport>,
    Vec<gfxkit_host::Problem>,
    Vec<gfxkit_host::KpackRef>,
);

fn report_file(device: &TargetId, bytes: &[u8]) -> FileFindings {
    let found = gfxkit_host::discover(bytes);
    let bundles = units(&found)
        .into_iter()
        .enumerate()
        .map(|(index, u)| {
            let base = BundleReport {
                index,
                kind: u.kind,
                member: u.location.member.clone(),
                section: u.location.section.clone(),
                offset: u.location.offset,
                selected: None,
                via: None,
                reason: String::new(),
                needs: None,
                nearest: Vec::new(),
                unreadable: false,
            };
            let s = select_unit(device, &u);
            let selected = match (&u.entries, s.index) {
                (Ok(e), Some(i)) => e.get(i).map(|e| e.id.raw().to_owned()),
                _ => None,
            };
            BundleReport {
                selected,
                via: s.via,
                needs: (!s.needs.is_empty()).then(|| s.needs_text()),
                reason: s.reason.clone(),
                nearest: s.nearest.clone(),
                unreadable: u.entries.is_err(),
                ..base
            }
        })
        .collect();
    let kpack = found
        .wrappers
        .iter()
        .filter_map(|w| w.kpack.clone())
        .collect();
    (bundles, found.problems, kpack)
}

/// Runs `gfxkit select`.
pub fn run(args: Args) -> Result<ExitCode> {
    let device = args.device;
    let scanned = scan::scan(&args.files, &scan::Options::default(), |_, bytes| {
        Ok(report_file(&device, bytes))
    })
    .context("cannot list the inputs")?;
    let mut report = Report {
        device: device.to_string(),
        files: Vec::new(),
    };
    let mut code = 0u8;
    for s in scanned {
        let path = s.path.display().to_string();
        match s.result {
            Ok((bundles, problems, kpack)) => {
                if !s.explicit && bundles.is_empty() && problems.is_empty() && kpack.is_empty() {
                    continue; // Found in a directory and holds no device code.
                }
                let damaged = problems.iter().any(|p| p.severity == Severity::Error);
                if bundles.iter().any(|b| b.unreadable) || damaged {
                    code = 2;
                } else if bundles.iter().any(|b| b.selected.is_none()) {
                    code = code.max(1);
                }
                report.files.push(FileReport {
                    path,
                    error: None,
                    bundles,
                    problems,
                    kpack,
                });
            }
            Err(e) => {
                code = 2;
                report.files.push(FileReport {
                    path,
                    error: Some(format!("{e:#}")),
                    bundles: Vec::new(),
                    problems: Vec::new(),
                    kpack: Vec::new(),
                });
            }
        }
    }
    if args.json {
        output::print_json(&report)?;
    } else {
        print_text(&report)?;
    }
    Ok(ExitCode::from(code))
}

fn print_text(r: &Report) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "device {}", r.device)?;
    for f in &r.files {
        if let Some(e) = &f.error {
            writeln!(out, "{}: error: {e}", f.path)?;
            continue;
        }
        for p in &f.problems {
            eprintln!("gfxkit: {}: {}: {p}", p.severity, f.path);
        }
        for k in &f.kpack {
            writeln!(
                out,
                "{}: device code moved to kpack archives, not examined: {}",
                f.path,
                k.search_paths.join(" ")
            )?;
        }
        if f.bundles.is_empty() {
            if f.kpack.is_empty() {
                writeln!(out, "{}: no device code", f.path)?;
            }
            continue;
        }
        let chosen = f.bundles.iter().filter(|b| b.selected.is_some()).count();
        writeln!(
            out,
            "{}: {chosen} of {} bundles have a code object for the device",
            f.path,
            f.bundles.len()
        )?;
        for b in &f.bundles {
            let place = match (&b.member, &b.section) {
                (Some(m), Some(s)) => format!("{m} {s} @{:#x}", b.offset),
                (Some(m), None) => format!("{m} @{:#x}", b.offset),
                (None, Some(s)) => format!("{s} @{:#x}", b.offset),
                (None, None) => format!("@{:#x}", b.offset),
            };
            match (&b.selected, b.via) {
                (Some(id), Some(via)) => {
                    write!(out, "  [{:>3}] {place:<28} {id} ({via})", b.index)?;
                    if let Some(n) = &b.needs {
                        write!(out, ", needs {n}")?;
                    }
                    writeln!(out)?;
                }
                _ => writeln!(out, "  [{:>3}] {place:<28} none: {}", b.index, b.reason)?,
            }
        }
    }
    Ok(())
}
