//! `gfxkit kernels`: every kernel of every code object in files (bundles, host binaries,
//! archives, packages, binaries split by kpack and `.kpack` files, code objects): registers,
//! LDS, scratch, spills and occupancy.

use anyhow::{Context, Result};
use gfxkit_inventory::kernels::{self, KernelListing};
use gfxkit_target_id::TargetId;
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
of them is listed as absent (`gfxkit verify` reports it). An index in a package is resolved
against the members beside it (a solution is present when one of them holds a kernel of its
name). A shard of a lazy library (rocBLAS's and hipBLASLt's per-problem files) lists its
solutions for each processor whose lazy master lies beside it, in the code the library has
loaded for them. JSON: {solutions: [{index, row, processor, cu_count, solution, name,
kernel_name, code_object, present, ...the kernel's fields}]}; `kernel_name` is the function
symbol the solution runs (hipBLASLt's kernelName, which solutions differing in launch
settings share; else its name).

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
    #[command(flatten)]
    pub searched: super::AlwaysRecursive,
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
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let wanted = match &args.target {
        Some(t) => Some(TargetId::parse(t).with_context(|| format!("bad --target {t}"))?),
        None => None,
    };
    let progress = crate::output::Reading::new(args.json);
    let listing = gfxkit_io::whole::kernels(
        &args.paths,
        wanted.as_ref(),
        args.demangle,
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let KernelListing {
        kernels: mut rows,
        mut solutions,
        errors,
    } = listing?;
    if let Some(key) = args.sort {
        let key = match key {
            SortBy::Occupancy => kernels::SortBy::Occupancy,
            SortBy::Vgpr => kernels::SortBy::Vgpr,
            SortBy::Lds => kernels::SortBy::Lds,
            SortBy::Scratch => kernels::SortBy::Scratch,
        };
        kernels::sort(&mut rows, |r| Some(&r.kernel), key);
        kernels::sort(&mut solutions, |r| r.kernel.as_ref(), key);
    }
    let found = !rows.is_empty() || !solutions.is_empty();
    if args.json {
        crate::output::print_json(&KernelListing {
            kernels: rows,
            solutions,
            errors: errors.clone(),
        })?;
    } else {
        let streams = crate::output::Streams::new();
        gfxkit_text::kernels::listing(&rows, &solutions, args.paths.len() > 1, &mut streams.out())?;
        streams.finish()?;
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
