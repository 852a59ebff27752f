//! `gfxkit check`: a gate for CI of wheel and distribution builds: every file with device code
//! carries code for every required target (and, with `--exactly`, nothing else).

use crate::output;
use anyhow::{Context, Result};
use gfxkit_inventory::check::{CheckFile, CheckReport};
use gfxkit_target_id::TargetId;
use std::io::Write;
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
extra, errors, database}], summary: {files, passed, failed, errors}}; database names the kernel \
databases judged with the file.\n\n\
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
    /// Files, packages or directories to check.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs `gfxkit check`.
pub fn run(args: Args) -> Result<ExitCode> {
    let mut required: Vec<TargetId> = Vec::new();
    for r in &args.require {
        let id = gfxkit_target_id::triple::parse_device(r.trim())
            .with_context(|| format!("--require {r}"))?;
        if !required.contains(&id) {
            required.push(id);
        }
    }
    let progress = crate::output::Reading::new(args.json);
    let report = gfxkit_io::whole::check(
        &args.paths,
        &required,
        args.exactly,
        args.kpack_loader.into(),
        &progress,
    );
    progress.finish();
    let report = report?;
    if args.json {
        output::print_json(&report)?;
    } else {
        print_text(&report, &mut std::io::stdout().lock())?;
    }
    if report.files.is_empty() {
        eprintln!("gfxkit: error: no file with device code under the paths given");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::from(report.status()))
}

fn file_line(f: &CheckFile, out: &mut dyn Write) -> Result<()> {
    for e in &f.errors {
        writeln!(out, "ERROR {}", output::naming(&f.path, e))?;
    }
    if !f.errors.is_empty() {
        return Ok(());
    }
    if f.ok {
        let mut notes: Vec<String> = f
            .needs
            .iter()
            .map(|(t, n)| format!("{t} needs {n}"))
            .collect();
        notes.extend(
            f.database
                .iter()
                .filter(|d| **d != f.path)
                .map(|d| format!("with {d}")),
        );
        if notes.is_empty() {
            writeln!(out, "ok    {}", f.path)?;
        } else {
            writeln!(out, "ok    {} ({})", f.path, notes.join(", "))?;
        }
        return Ok(());
    }
    for m in &f.missing {
        let why = f.why.get(m).map(String::as_str).unwrap_or("no code for it");
        writeln!(out, "FAIL  {}: lacks {m}: {why}", f.path)?;
    }
    if !f.extra.is_empty() {
        writeln!(
            out,
            "FAIL  {}: beyond the list: {}",
            f.path,
            f.extra.join(" ")
        )?;
    }
    if f.missing.is_empty() && f.extra.is_empty() {
        writeln!(out, "FAIL  {}: its device code could not be judged", f.path)?;
    }
    Ok(())
}

/// Prints a line per file and the summary line on `out`.
pub fn print_text(r: &CheckReport, out: &mut dyn Write) -> Result<()> {
    for f in &r.files {
        file_line(f, out)?;
    }
    let s = &r.summary;
    write!(
        out,
        "check {}{}: {} files with device code, {} pass, {} fail",
        r.required.join(","),
        if r.exactly { " (exactly)" } else { "" },
        s.files,
        s.passed,
        s.failed
    )?;
    if s.errors > 0 {
        write!(out, ", {} with errors", s.errors)?;
    }
    writeln!(out)?;
    Ok(())
}
