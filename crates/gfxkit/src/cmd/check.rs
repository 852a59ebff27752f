//! `gfxkit check`: a gate for CI of wheel and distribution builds: every file with device code
//! carries code for every required target (and, with `--exactly`, nothing else).

use crate::output;
use anyhow::{Context, Result};
use gfxkit_target_id::TargetId;
use std::path::PathBuf;
use std::process::ExitCode;

/// Fail unless every library under the paths carries code that runs on every required target.
///
/// A file passes when, for each required target, every unit the HIP runtime loads has a code
/// object it would load there: native, the family's generic target, or SPIR-V (the runtime's
/// choice, as `gfxkit select` and `gfxkit doctor` make it). Directories are searched
/// recursively; packages are read by member; binaries split by kpack are judged through their
/// archives. A library is judged together with the kernel database it loads (rocBLAS's
/// `rocblas/<version>/library`), a database no library loads on its own. Relocatable objects
/// and archives (build inputs, never loaded) are not checked.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "A required ID without a feature setting (gfx90a) is met by code for one \
setting, as doctor judges a device whose setting is unknown (the JSON's needs names the setting: \
xnack-); name the setting to require it (gfx90a:xnack+), or both settings to require both. With \
--exactly, targets that no required target would load fail too, by name (gfx1100 with --require \
gfx90a; gfx90a:xnack+ with --require gfx90a:xnack-; SPIR-V, amdgcnspirv, always): the generic \
target of a required processor's family is within the list.\n\nExamples:\n  \
gfxkit check --require gfx90a,gfx942,gfx1100 dist/*.whl\n  \
gfxkit check --require gfx90a:xnack-,gfx942 --exactly --json /opt/rocm/lib\n\n\
--json prints {required, exactly, ok, files: [{path, ok, targets, missing, why, needs, spirv, \
extra, errors, database}], summary: {files, passed, failed, errors}, other_gpus_only: [{path, \
reason}]}; database names the kernel databases judged with the file; other_gpus_only the files \
named whose only device code is for other GPUs (a CUDA build, SYCL images), which are not judged.\n\n\
Exit codes: 0 every file passes; 1 some file lacks a required target (or, with --exactly, carries \
one beyond the list); 2 an error (unreadable or damaged input, no file with device code, a bad ID)."
)]
pub struct Args {
    /// Targets every file must run on (repeatable, or comma-separated): target IDs such as
    /// `gfx90a:xnack-` or `gfx1100`.
    #[arg(
        long,
        required = true,
        value_name = "ID[,ID...]",
        value_delimiter = ','
    )]
    pub require: Vec<String>,
    /// Also fail on targets beyond the list, naming them.
    #[arg(long)]
    pub exactly: bool,
    /// Print JSON (see below).
    #[arg(long)]
    pub json: bool,
    /// Which kpack loader to model for split binaries (`current` or `old`; see `gfxkit select`).
    #[arg(long, value_enum, default_value = "current")]
    pub kpack_loader: crate::kpack_files::LoaderArg,
    #[command(flatten)]
    pub searched: super::AlwaysRecursive,
    /// Files, packages or directories to check.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The ROCm release to answer for (`--rocm 6.2`: a required target passes only with code
    /// that release's runtime loads; `--rocm auto`).
    #[command(flatten)]
    pub rocm: crate::rocm_release::RocmArgs,
}

/// Runs `gfxkit check`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let mut required: Vec<TargetId> = Vec::new();
    for r in &args.require {
        let id = gfxkit_target_id::triple::parse_device(r.trim())
            .with_context(|| format!("--require {r}"))?;
        if !required.contains(&id) {
            required.push(id);
        }
    }
    let rocm = args.rocm.resolve(false, None)?;
    let progress = crate::output::Reading::new(args.json);
    let report = gfxkit_io::whole::check_on(
        &args.paths,
        &required,
        args.exactly,
        args.kpack_loader.into(),
        rocm.as_ref(),
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let report = report?;
    if args.json {
        output::print_json(&report)?;
    } else {
        gfxkit_text::check::report(&report, &mut std::io::stdout().lock())?;
    }
    if report.files.is_empty() {
        let amd = if report.other_gpus_only.is_empty() {
            ""
        } else {
            " for an AMD GPU"
        };
        eprintln!("gfxkit: error: no file with device code{amd} under the paths given");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::from(report.status()))
}
