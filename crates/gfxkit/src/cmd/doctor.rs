//! `gfxkit doctor`: which libraries can run on this machine's (or a named) GPU.

use crate::output;
use anyhow::{Context, Result};
use gfxkit_inventory::database::CuCounts;
use gfxkit_target_id::TargetId;
use std::path::PathBuf;
use std::process::ExitCode;

/// For every library under the paths, whether it carries code that can run on the GPUs.
///
/// With `--device auto` (the default) the GPUs are read from the KFD topology
/// (`/sys/class/kfd/kfd/topology/nodes/*/properties`: `gfx_target_version`, and the SRAM ECC
/// capability bit), honouring `HSA_OVERRIDE_GFX_VERSION` (every GPU reports that version) and
/// `HSA_XNACK` (1 = xnack on, 0 = off; unset = unknown). Where a device's xnack or sramecc
/// setting cannot be known, a library runs if every one of its bundles has code that fits
/// under some common setting, and the report names the setting it needs. Files without device
/// code are not listed, nor are relocatable objects and archives (build inputs, never loaded).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "With --device auto the GPUs come from the KFD topology (gfx_target_version, and the \
SRAM ECC capability bit), honouring HSA_OVERRIDE_GFX_VERSION and HSA_XNACK (1 on, 0 off, unset unknown). \
Where a device's xnack or sramecc setting is unknown, a library runs if all its bundles fit under one \
setting, and the report names that setting. Relocatable objects and archives are not checked; libraries \
split by kpack (HIPK wrappers) are resolved as the kpack loader does: archives found through their \
marker, @GFXARCH@ expanded for the device (ROCM_KPACK_PATH, ROCM_KPACK_PATH_PREFIX, ROCM_KPACK_DISABLE \
honoured; --kpack-loader old for the first-match search of earlier ROCm 7); a missing archive names the \
file and the package that provides it.\n\nWhere a library does not run, remedies follow, each with its standing: \
HSA_OVERRIDE_GFX_VERSION (unsupported by AMD) only where the library has code for a processor of the \
device's own instruction set (gfx1030 code on a gfx1031: 10.3.0; never gfx1100 code on a gfx1102, whose \
register file differs); HSA_XNACK where the library has code for the device's other xnack mode; the \
generic target to rebuild with (gfx11-generic for gfx1101, code-object \
version 6), or the device itself where the runtime has none; for a split binary missing its archive, \
the package that provides it.\n\nWith --device auto the installed ROCm release is read too (--rocm auto: \
$ROCM_PATH or /opt/rocm/.info/version, /opt/rocm-*, libamdhip64's file name, Debian's packages, \
$VIRTUAL_ENV's rocm-sdk-core or torch) and named in the report; what that release's runtime cannot \
load (a code-object version, a generic target, a CCOB version, a kpack split) is named where a \
library fails, with the rebuild it loads or the release to upgrade to. --rocm VERSION names a \
release.\n\nKernel databases: a library is judged with the database it \
loads (librocblas.so with rocblas/<version>/library/, or the directory ROCBLAS_TENSILE_LIBPATH \
names, HIPBLASLT_TENSILE_LIBPATH for hipBLASLt, by rocBLAS's file rule: a missing \
TensileLibrary_<arch>.co is named); database files (raw code objects, .kdb, .aks2, Tensile indexes) are \
not libraries: those no library loads are judged per library/ directory, package (aiter, AOTriton \
wheels) or directory, and JSON names the databases judged with a file in \"database\".\n\nExamples:\n  gfxkit doctor /opt/rocm/lib\n  \
gfxkit doctor --device gfx90a:sramecc+:xnack- --json ./build\n  \
HSA_OVERRIDE_GFX_VERSION=10.3.0 gfxkit doctor /usr/lib/x86_64-linux-gnu\n\n\
Exit codes: 0 every library can run on every device; 1 some library cannot run on some device; \
2 an error (no GPU found, unreadable input, a damaged kpack archive or code object)."
)]
pub struct Args {
    /// Device target ID (`gfx90a:sramecc+:xnack-`), or `auto` to read the machine's GPUs.
    /// Repeat for several devices.
    #[arg(long, value_name = "TARGET_ID|auto", default_value = "auto")]
    pub device: Vec<String>,
    /// The devices' number of compute units (`rocminfo`'s "Compute Unit", HIP's
    /// `multiProcessorCount`), for kernel databases with rows per count (rocBLAS): each device
    /// is judged by the shards its own count selects. With `--device auto` it is read from the
    /// KFD topology (`simd_count / simd_per_cu`); otherwise, without it, every count's shards
    /// are needed.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub cu_count: Option<u64>,
    /// Read the KFD topology under `DIR/sys/class/kfd/...` instead of `/sys/...` (and, for
    /// `--rocm auto`, the installed release under `DIR/opt/rocm/...`).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    #[command(flatten)]
    pub searched: super::AlwaysRecursive,
    /// Libraries or directories to check (default: `$ROCM_PATH/lib` or `/opt/rocm/lib`).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print JSON: `{"devices": [...], "files": [{"path", "runs_on": {"<device>": bool},
    /// "targets": [...], "needs", "missing", "spirv": [devices served only through SPIR-V],
    /// "remedies": [{"device", "kind", "text", "standing"}]}], "other_gpus_only": [{"path",
    /// "reason"}]}`: the last for files named whose only device code is for other GPUs.
    #[arg(long)]
    pub json: bool,
    /// Which kpack loader to model for split binaries (`current` or `old`; see `gfxkit select`).
    #[arg(long, value_enum, default_value = "current")]
    pub kpack_loader: crate::kpack_files::LoaderArg,
    /// The ROCm release to answer for (`--rocm 6.2`; default with `--device auto`: `auto`,
    /// the installed release, read under `--sysfs-root` unless `--rocm-root` is given).
    #[command(flatten)]
    pub rocm: crate::rocm_release::RocmArgs,
}

fn resolve_devices(args: &Args) -> Result<(Vec<TargetId>, CuCounts)> {
    let mut out: Vec<TargetId> = Vec::new();
    let mut counts = CuCounts::none();
    for d in &args.device {
        if d == "auto" {
            let root = args
                .sysfs_root
                .clone()
                .unwrap_or_else(|| PathBuf::from("/"));
            let (found, found_counts) = gfxkit_io::kfd::machine(&root)?;
            for id in found {
                if let Some(n) = found_counts.of(&id) {
                    counts.set(&id, n);
                }
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        } else {
            let id = gfxkit_target_id::triple::parse_device(d)
                .with_context(|| format!("--device {d}"))?;
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    if let Some(n) = args.cu_count {
        counts = CuCounts::all(&out, n);
    }
    Ok((out, counts))
}

fn default_paths() -> Vec<PathBuf> {
    let rocm = std::env::var_os("ROCM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/rocm"));
    vec![rocm.join("lib")]
}

/// Runs `gfxkit doctor`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let (devices, cu_counts) = resolve_devices(&args)?;
    let paths = if args.paths.is_empty() {
        default_paths()
    } else {
        args.paths.clone()
    };
    let loader: gfxkit_kpack::search::Loader = args.kpack_loader.into();
    let machine = args.device.iter().any(|d| d == "auto");
    let rocm = args.rocm.resolve(machine, args.sysfs_root.as_deref())?;
    let progress = output::Reading::new(false);
    let report = gfxkit_io::whole::doctor_on(
        &paths,
        &devices,
        &cu_counts,
        loader,
        rocm.as_ref(),
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let report = report?;
    let mut code = 0u8;
    for f in &report.files {
        if !f.errors.is_empty() {
            code = 2;
        } else if f.fails() {
            code = code.max(1);
        }
    }
    if args.json {
        output::print_json(&report)?;
    } else {
        gfxkit_text::doctor::report(&report, &devices, &mut std::io::stdout().lock())?;
    }
    Ok(ExitCode::from(code))
}
