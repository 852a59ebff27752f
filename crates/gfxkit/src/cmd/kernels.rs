//! `gfxkit kernels`: every kernel of every code object in files (bundles, host binaries,
//! archives, packages, binaries split by kpack and `.kpack` files, code objects): registers,
//! LDS, scratch, spills and occupancy.

use anyhow::{Context, Result};
use gfxkit_code_object::KernelSummary;
use gfxkit_inventory::kernels::{KernelListing, KernelRow, SolutionRow};
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

A Tensile index (rocBLAS's or hipBLASLt's TensileLibrary.dat) lists its solutions instead: one
row per solution of each processor row (--target keeps one processor's rows), with the code
object beside the index that holds its kernel (by the library's own rule: the processor's files,
-xnack variants, fallback files) and that kernel's resources; a solution whose kernel is in none
of them is listed as absent (`gfxkit verify` reports it). JSON: {solutions: [{index, row,
processor, cu_count, solution, name, code_object, present, ...the kernel's fields}]}.

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
    let progress = crate::output::Reading::new(args.json);
    let listing = gfxkit_io::whole::kernels(&args.paths, wanted.as_ref(), args.demangle, &progress);
    progress.finish();
    let KernelListing {
        kernels: mut rows,
        mut solutions,
        errors,
    } = listing?;
    if let Some(key) = args.sort {
        sort(&mut rows, |r| Some(&r.kernel), key);
        sort(&mut solutions, |r| r.kernel.as_ref(), key);
    }
    let found = !rows.is_empty() || !solutions.is_empty();
    if args.json {
        crate::output::print_json(&KernelListing {
            kernels: rows,
            solutions,
            errors: errors.clone(),
        })?;
    } else {
        if !rows.is_empty() || solutions.is_empty() {
            write_table(&rows, args.paths.len() > 1 || rows_span_files(&rows))?;
        }
        if !solutions.is_empty() {
            if !rows.is_empty() {
                println!();
            }
            write_solutions(&solutions)?;
            let absent = solutions.iter().filter(|s| !s.present).count();
            println!(
                "{} solutions{}",
                solutions.len(),
                if absent > 0 {
                    format!(
                        ", {absent} without their kernel in the files loaded for their processor"
                    )
                } else {
                    String::new()
                }
            );
        }
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

fn sort<T>(rows: &mut [T], kernel: impl Fn(&T) -> Option<&KernelSummary>, key: SortBy) {
    let vgprs = |k: &KernelSummary| k.vgpr_count.unwrap_or(0) + k.agpr_count.unwrap_or(0);
    match key {
        SortBy::Occupancy => {
            rows.sort_by_key(|r| kernel(r).and_then(|k| k.occupancy).unwrap_or(u32::MAX))
        }
        SortBy::Vgpr => rows.sort_by_key(|r| std::cmp::Reverse(kernel(r).map_or(0, vgprs))),
        SortBy::Lds => rows
            .sort_by_key(|r| std::cmp::Reverse(kernel(r).and_then(|k| k.lds_bytes).unwrap_or(0))),
        SortBy::Scratch => rows.sort_by_key(|r| {
            std::cmp::Reverse(kernel(r).and_then(|k| k.scratch_bytes).unwrap_or(0))
        }),
    }
}

/// The cells of a kernel's resources: OCC, LIMIT, VGPR, AGPR, SGPR, LDS, SCRATCH, SPILLS, WAVE.
fn resource_cells(k: &KernelSummary) -> Vec<String> {
    let num = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let spills = match (k.sgpr_spill_count, k.vgpr_spill_count) {
        (None, None) => "-".to_owned(),
        (s, v) => format!("{}s/{}v", s.unwrap_or(0), v.unwrap_or(0)),
    };
    vec![
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
    ]
}

const RESOURCES: [&str; 9] = [
    "OCC", "LIMIT", "VGPR", "AGPR", "SGPR", "LDS", "SCRATCH", "SPILLS", "WAVE",
];

fn write_table(rows: &[KernelRow], with_file: bool) -> std::io::Result<()> {
    let mut header = vec!["TARGET"];
    header.extend(RESOURCES);
    header.push("NAME");
    let mut left = vec![true];
    left.extend([false; RESOURCES.len()]);
    left.push(true);
    if with_file {
        header.insert(0, "FILE");
        left.insert(0, true);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let k = &r.kernel;
            let mut cells = vec![r.target_id.clone().unwrap_or_else(|| r.entry.clone())];
            cells.extend(resource_cells(k));
            cells.push(k.demangled.clone().unwrap_or_else(|| k.name.clone()));
            if with_file {
                cells.insert(0, r.file.clone());
            }
            cells
        })
        .collect();
    print_table(&header, &left, &table)
}

/// The solutions of a Tensile index: per row and solution, the code object holding its
/// kernel and the kernel's resources.
fn write_solutions(rows: &[SolutionRow]) -> std::io::Result<()> {
    let mut header = vec!["PROCESSOR", "ROW"];
    header.extend(RESOURCES);
    header.extend(["CODE OBJECT", "NAME"]);
    let mut left = vec![true, false];
    left.extend([false; RESOURCES.len()]);
    left.extend([true, true]);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                match r.cu_count {
                    Some(n) => format!("{} ({n} CUs)", r.processor),
                    None => r.processor.clone(),
                },
                r.row.to_string(),
            ];
            match &r.kernel {
                Some(k) => cells.extend(resource_cells(k)),
                None => cells.extend(vec!["-".to_owned(); RESOURCES.len()]),
            }
            cells.push(
                r.code_object
                    .clone()
                    .unwrap_or_else(|| "(absent)".to_owned()),
            );
            cells.push(
                r.kernel
                    .as_ref()
                    .and_then(|k| k.demangled.clone())
                    .unwrap_or_else(|| r.name.clone()),
            );
            cells
        })
        .collect();
    print_table(&header, &left, &table)
}

/// Prints `table` under `header`, columns padded to their widest cell: left-aligned where
/// `left` says so (the last column is not padded), else right-aligned.
fn print_table(header: &[&str], left: &[bool], table: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in table {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let last = header.len() - 1;
    let line = |out: &mut dyn Write, cells: &[&str]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == last {
                s.push_str(c);
            } else if left[i] {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(&mut out, header)?;
    for r in table {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&mut out, &cells)?;
    }
    out.flush()
}
