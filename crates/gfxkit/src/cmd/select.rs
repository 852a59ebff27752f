//! `gfxkit select`: which code object the HIP runtime would load on a device, per bundle.

use crate::output;
use anyhow::Result;
use gfxkit_target_id::TargetId;
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
gfxkit select --device gfx90a:sramecc+:xnack- --kpack-loader old lib/libtorch_hip.so\n  \
gfxkit select --device gfx1100 --rocm 6.2 dist/libfoo.so\n\n\
With --rocm VERSION the answer is that release's runtime's: a code object of a version its loader \
refuses (\"code object V6: ROCm 6.2 loads up to V5\"), a generic target it does not know, a CCOB version \
its HIP runtime cannot unpack or a kpack-split binary before its kpack loader is passed over with the \
reason, and the next candidate is tried; --rocm auto reads the installed release (gfxkit rocm list \
shows the table).\n\n\
Exit codes: 0 every bundle has a selection; 1 some bundle has none; 2 an error (unreadable file or bundle, damaged file, a kpack archive tried that is damaged: the problems are listed)."
)]
pub struct Args {
    /// Device target ID, such as `gfx90a:sramecc+:xnack-` or `gfx1100`, or its ISA name
    /// (`amdgcn-amd-amdhsa--gfx90a:xnack-`, `amdgpu9.0a-amd-amdhsa--gfx90a`).
    #[arg(long, value_name = "TARGET_ID", value_parser = gfxkit_target_id::triple::parse_device)]
    pub device: TargetId,
    /// The device's number of compute units (`rocminfo`'s "Compute Unit", HIP's
    /// `multiProcessorCount`): kernel databases with rows per count (rocBLAS) are answered for
    /// it; without it, for every count (all the shards of every count's rows are named).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub cu_count: Option<u64>,
    #[command(flatten)]
    pub searched: super::AlwaysRecursive,
    /// Files or directories to examine.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print JSON: `{"device", "files": [{"path", "bundles": [{"index", "kind", "format", "offset", "selected", "via", "reason", "kernels", ...}], "other_gpus", "nvidia"}]}`;
    /// `kernels` counts the loaded code object's kernels (0: it loads but a launch from it
    /// fails), `other_gpus` names the file's entries for other vendors' GPUs and `nvidia` where
    /// its CUDA fat binaries lie (`[{"member", "section", "offset", "size"}]`), which no AMD
    /// GPU runs.
    /// a split binary's `HIPK` wrappers are units of `format` `kpack` with the loader's look-up
    /// (`wrapper`, `kpack_key`, `archive`, `arch`, `error_code`, `missing`, `package`, ...).
    /// With `--rocm`: `"rocm": {"version", "from"}`, and per unit `passed_over`: `[{"entry",
    /// "reason", "rebuild", "upgrade"}]`, what the release cannot load.
    #[arg(long)]
    pub json: bool,
    /// Which kpack loader to model for split binaries: `current` tries every candidate
    /// archive; `old` (earlier ROCm 7) stops at the first archive listing a matching
    /// architecture, so a variant archive without the kernel shadows the plain one.
    #[arg(long, value_enum, default_value = "current")]
    pub kpack_loader: crate::kpack_files::LoaderArg,
    /// The ROCm release to answer for (`--rocm 6.2`, `--rocm auto`).
    #[command(flatten)]
    pub rocm: crate::rocm_release::RocmArgs,
}

/// Runs `gfxkit select`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let device = args.device;
    let loader = args.kpack_loader.into();
    let rocm = args.rocm.resolve(false, None)?;
    let progress = output::Reading::new(false);
    let report = gfxkit_io::whole::select_on(
        &args.files,
        &device,
        args.cu_count,
        loader,
        rocm.as_ref(),
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let report = report?;
    let code = report.files.iter().map(|f| f.status()).max().unwrap_or(0);
    if args.json {
        output::print_json(&report)?;
    } else {
        gfxkit_text::select::report(
            &report,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
        )?;
    }
    Ok(ExitCode::from(code))
}
