//! `gfxkit kernels`: every kernel of every code object in files (bundles, host binaries,
//! archives, packages, binaries split by kpack and `.kpack` files, code objects): registers,
//! LDS, scratch, spills and occupancy.

use crate::scan;
use anyhow::{Context, Result};
use gfxkit_inventory::kernels::{KernelListing, KernelRow};
use gfxkit_target_id::TargetId;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// List every kernel of every code object found in files and directory trees: its registers
/// (VGPR, AGPR, SGPR), LDS, scratch, spills and occupancy (waves per SIMD, as llc computes it)
/// on the code object's processor.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Code objects are read from bundles, host binaries, archives, packages (wheel, conda, deb, rpm,
tar: members named PACKAGE!MEMBER), binaries split by kpack (through the archives their HIPK
markers name; `unit` is then the TOC key and the archive) and .kpack files.

Occupancy is computed from the kernel's metadata and descriptor with the processor's hardware
limits (`gfxkit target show`); an `amdgpu-waves-per-eu` attribute the kernel was compiled with
is not recorded in code objects and so not taken into account.

Examples:
  gfxkit kernels /usr/lib/x86_64-linux-gnu/librocsparse.so --target gfx942 --sort occupancy
  gfxkit kernels build/ --json | jq '.kernels[] | select(.spills)'

--json prints {kernels: [{file, unit, entry, target_id, name, demangled, symbol, source,
descriptor, descriptor_error, vgpr_count, agpr_count, sgpr_count, lds_bytes, scratch_bytes,
kernarg_size, sgpr_spill_count, vgpr_spill_count, spills, uses_dynamic_stack, wavefront_size,
max_flat_workgroup_size, wgp_mode, occupancy, occupancy_limited_by, args}], errors: [string]};
`descriptor` has llvm-objdump's directive names (see `gfxkit inspect --help`).

Exit codes: 0 listed; 1 no kernel found; 2 an error.")]
pub struct Args {
    /// Files or directories (searched recursively; files without device code are skipped).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Only code objects whose target ID overlaps this one (`gfx942`, `gfx90a:xnack+`).
    #[arg(long, value_name = "ID")]
    pub target: Option<String>,
    /// Order kernels: by occupancy (lowest first), or by VGPRs, LDS or scratch (largest first).
    #[arg(long, value_enum)]
    pub sort: Option<SortBy>,
    /// Demangle C++ kernel names.
    #[arg(long)]
    pub demangle: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Sort keys of `--sort`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// Lowest occupancy first.
    Occupancy,
    /// Most VGPRs (arch + AGPR) first.
    Vgpr,
    /// Most LDS first.
    Lds,
    /// Most scratch first.
    Scratch,
}

/// Runs `gfxkit kernels`.
pub fn run(args: Args) -> Result<ExitCode> {
    let wanted = match &args.target {
        Some(t) => Some(TargetId::parse(t).with_context(|| format!("bad --target {t}"))?),
        None => None,
    };
    let scanned = scan::scan(
        &args.paths,
        &scan::Options { quiet: args.json },
        |path, data| {
            Ok(gfxkit_io::kpack::kernels(
                path,
                data,
                wanted.as_ref(),
                args.demangle,
            )?)
        },
    )?;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for s in scanned {
        match s.result {
            Ok(l) => {
                rows.extend(l.kernels);
                errors.extend(l.errors);
            }
            // Errors of reading a file name it (or `package!member`) themselves.
            // A damaged file found in a directory is reported too; one without device code
            // (a package with none) only when named.
            Err(e) if s.explicit || e.downcast_ref::<crate::input::NoDeviceCode>().is_none() => {
                errors.push(format!("{e:#}"))
            }
            Err(_) => {}
        }
    }
    if let Some(key) = args.sort {
        sort(&mut rows, key);
    }
    let found = !rows.is_empty();
    if args.json {
        crate::output::print_json(&KernelListing {
            kernels: rows,
            errors: errors.clone(),
        })?;
    } else {
        write_table(&rows, args.paths.len() > 1 || rows_span_files(&rows))?;
        for e in &errors {
            eprintln!("gfxkit: error: {e}");
        }
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if found {
        ExitCode::SUCCESS
    } else {
        eprintln!("gfxkit: no kernel found");
        ExitCode::from(1)
    })
}

fn rows_span_files(rows: &[KernelRow]) -> bool {
    rows.windows(2).any(|w| w[0].file != w[1].file)
}

fn sort(rows: &mut [KernelRow], key: SortBy) {
    let vgprs = |r: &KernelRow| r.kernel.vgpr_count.unwrap_or(0) + r.kernel.agpr_count.unwrap_or(0);
    match key {
        SortBy::Occupancy => rows.sort_by_key(|r| r.kernel.occupancy.unwrap_or(u32::MAX)),
        SortBy::Vgpr => rows.sort_by_key(|r| std::cmp::Reverse(vgprs(r))),
        SortBy::Lds => rows.sort_by_key(|r| std::cmp::Reverse(r.kernel.lds_bytes.unwrap_or(0))),
        SortBy::Scratch => {
            rows.sort_by_key(|r| std::cmp::Reverse(r.kernel.scratch_bytes.unwrap_or(0)))
        }
    }
}

fn write_table(rows: &[KernelRow], with_file: bool) -> std::io::Result<()> {
    let num = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let mut header = vec![
        "TARGET", "OCC", "LIMIT", "VGPR", "AGPR", "SGPR", "LDS", "SCRATCH", "SPILLS", "WAVE",
        "NAME",
    ];
    if with_file {
        header.insert(0, "FILE");
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let k = &r.kernel;
            let spills = match (k.sgpr_spill_count, k.vgpr_spill_count) {
                (None, None) => "-".to_owned(),
                (s, v) => format!("{}s/{}v", s.unwrap_or(0), v.unwrap_or(0)),
            };
            let mut cells = vec![
                r.target_id.clone().unwrap_or_else(|| r.entry.clone()),
                k.occupancy
                    .map_or_else(|| "-".to_owned(), |o| o.to_string()),
                k.occupancy_limited_by
                    .map_or("-", |l| l.as_str())
                    .to_owned(),
                num(k.vgpr_count),
                num(k.agpr_count),
                num(k.sgpr_count),
                num(k.lds_bytes),
                num(k.scratch_bytes),
                spills,
                num(k.wavefront_size),
                k.demangled.clone().unwrap_or_else(|| k.name.clone()),
            ];
            if with_file {
                cells.insert(0, r.file.clone());
            }
            cells
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &table {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let last = header.len() - 1;
    let text_cols = if with_file { 2 } else { 1 };
    let line = |out: &mut dyn Write, cells: &[&str]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == last {
                s.push_str(c);
            } else if i < text_cols {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        writeln!(out, "{s}")
    };
    line(&mut out, &header)?;
    for r in &table {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&mut out, &cells)?;
    }
    out.flush()
}
