//! `gfxkit extract`: bundle entries (code objects) to files with stable names.

use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_bundle::EntryId;
use gfxkit_host::Severity;
use gfxkit_inventory::extract::requested_id;
use gfxkit_io::extract;
use gfxkit_io::extract_inputs::{self, InputsError, Named};
use gfxkit_io::format::Formats;
use gfxkit_io::input::Failed;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit extract`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs: standalone bundles (one, or several back to back), ELF executables, shared objects and
relocatable objects (the bundles of .hip_fatbin, __CLANG_OFFLOAD_BUNDLE__* sections,
.llvm.offloading images), ar archives (each member) and code objects; directories with -r.

Files are named <file stem>.<bundle index>.<entry id>.co, the entry ID with every character
other than letters, digits, '.', '_', '+' and '-' replaced by '_' (':' becomes '_'):
  app.0.hipv4-amdgcn-amd-amdhsa--gfx90a_xnack+.co
Bundle indexes count the bundles of the file in file order (then object bundles, code objects
and offload images). Files found under a directory with -r are named by their path below it
('/' becomes '_'). Bitcode images get .bc, SPIR-V entries (hip-spirv64-amd-amdhsa--amdgcnspirv,
also spelled with -unknown-) get .spv. Empty host entries are skipped. Binaries split by
kpack (HIPK wrappers) give the code objects of their archives, named with the wrapper's index
as the bundle index (the same names as for the fat binary); .kpack files give every kernel.
Kernel databases give one file per MIOpen .kdb record (decoded, checked against its
uncompressed_size and MD5) or AOTriton .aks2 kernel, named <stem>.<record index>.<entry id>.co
(the record index counts records by id, or kernels in directory order).

With --target, only the entries each target selects are written: an entry is selected when
its kind and triple fit (a bare target ID means a HIP entry) and its target ID can describe
the same configuration: gfx90a selects gfx90a:xnack+ and gfx90a:xnack-; gfx90a:xnack+
selects gfx90a:xnack+ and a plain gfx90a, not gfx90a:xnack-. (`gfxkit unbundle` and
`gfxkit offload-bundler` keep clang's rule: one entry per target, which must run on it.)
--target amdgcnspirv selects the SPIR-V entries. Entry IDs may use the legacy amdgcn triple
or LLVM main's amdgpu one (hip-amdgpu9.0a-amd-amdhsa--gfx90a); either selects both.

Examples:
  gfxkit extract app.hipfb -o out/
  gfxkit extract /opt/rocm/lib/librocsparse.so --target gfx90a:xnack- -o co/
  gfxkit extract app.hipfb --target gfx90a:xnack+ --target gfx1100
  gfxkit extract -r build/ --json -o co/

A compressed bundle is decompressed and its hash checked; with --target, it is decoded only up
to the end of the last selected entry, and the output notes that its hash was not checked
(`gfxkit verify` always checks it).

Exit codes: 0 written; 1 a --target matched no entry (nothing written); 2 an error.")]
pub struct Args {
    /// Bundle files, host binaries, archives or code objects (directories with -r).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Extract only entries compatible with this target ID or entry ID (repeatable).
    #[arg(long = "target", short = 't', value_name = "ID")]
    targets: Vec<String>,
    /// Output directory (created when missing).
    #[arg(
        short = 'o',
        long = "output-dir",
        value_name = "DIR",
        default_value = "."
    )]
    out_dir: PathBuf,
    /// Print what was written as JSON: {"written":[{"file", "bundle", "entry", "id", "path", "size", "hash_checked"}]}
    /// (hash_checked only for compressed bundles).
    #[arg(long)]
    json: bool,
    /// Extract even when a compressed bundle's hash does not match (warns).
    #[arg(long)]
    ignore_hash: bool,
    /// Search directories recursively (files that cannot hold device code are skipped).
    #[arg(short = 'r', long)]
    recursive: bool,
}

/// JSON: one written file.
#[derive(Serialize)]
struct Written {
    file: String,
    bundle: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    member: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    section: Option<String>,
    entry: usize,
    id: String,
    path: String,
    size: u64,
    /// For an entry of a compressed bundle: whether the bundle's hash was checked (false when
    /// only the part up to the last wanted entry was decoded).
    #[serde(skip_serializing_if = "Option::is_none")]
    hash_checked: Option<bool>,
}

/// Runs `gfxkit extract`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let ids: Vec<EntryId> = args
        .targets
        .iter()
        .map(|t| requested_id(t))
        .collect::<gfxkit_inventory::Result<_>>()?;
    let hash = if args.ignore_hash {
        HashCheck::Warn
    } else {
        HashCheck::Error
    };
    let progress = crate::output::Reading::new(false);
    let sources = extract_inputs::inputs(&args.files, args.recursive, &progress, settings);
    progress.finish();
    let sources = sources.map_err(|e| match e {
        InputsError::Directory(d) => {
            anyhow::anyhow!("{} is a directory (use -r to search it)", d.display())
        }
        InputsError::Io(e) => anyhow::Error::new(e),
        InputsError::Member(p, f) => crate::input::failed(
            &p,
            match f {
                Failed::Visit(never) => match never {},
                Failed::Package(e) => Failed::Package(e),
                Failed::NoDeviceCode => Failed::NoDeviceCode,
            },
        ),
    })?;
    distinct_stems(&sources, &args.out_dir)?;
    // Plan from the headers alone (no payload decompressed), so that nothing is written when
    // a target matches nothing; then write bundle by bundle.
    let mut wanted = extract::Wanted::new(ids);
    let formats = Formats::standard().with_settings(settings.clone());
    let (plans, mut damaged) = plan_sources(&sources, &formats, &mut wanted)?;
    if let Some(wi) = wanted.unmatched() {
        let what = match sources.as_slice() {
            [one] => one.path.display().to_string(),
            _ => "the files".to_owned(),
        };
        eprintln!(
            "gfxkit: no entry of {what} is selected by {}",
            args.targets[wi]
        );
        return Ok(ExitCode::from(1));
    }
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    let (written, unchecked, refused) = write_plans(&plans, &args.out_dir, hash)?;
    damaged |= refused;
    if args.json {
        crate::output::print_json(&serde_json::json!({ "written": written }))?;
    } else {
        print_written(&written, &unchecked)?;
    }
    Ok(if damaged {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Refuses inputs that share a stem: output names start with the stem, so they would
/// overwrite each other in `out_dir`.
fn distinct_stems(sources: &[Named], out_dir: &std::path::Path) -> Result<()> {
    let mut stems = std::collections::HashMap::new();
    for src in sources {
        if let Some(other) = stems.insert(src.stem.as_str(), &src.path) {
            bail!(
                "{} and {} would both write {}.*; extract them to different directories",
                other.display(),
                src.path.display(),
                out_dir.join(&src.stem).display()
            );
        }
    }
    Ok(())
}

/// The plan of each input that holds device code (each planned by its format among
/// `formats`; its problems printed), and whether damage hid some of it; a package none of
/// whose members holds device code is an error.
fn plan_sources<'s>(
    sources: &'s [Named],
    formats: &Formats,
    wanted: &mut extract::Wanted,
) -> Result<(Vec<(&'s Named, extract::Plan<'s>)>, bool)> {
    let mut damaged = false;
    let mut plans = Vec::with_capacity(sources.len());
    // Packages named, and whether some member of each holds device code.
    let mut packages: Vec<(&PathBuf, bool)> = Vec::new();
    for src in sources {
        if let Some(p) = &src.package {
            if !packages.iter().any(|(q, _)| *q == p) {
                packages.push((p, false));
            }
        }
        let file = formats.file(&src.path, &src.data);
        let Some(plan) = formats.of(&file).extract(&file, src.explicit, wanted)? else {
            continue;
        };
        if let Some(p) = &src.package {
            if let Some(found) = packages.iter_mut().find(|(q, _)| *q == p) {
                found.1 = true;
            }
        }
        for p in &plan.problems {
            eprintln!("gfxkit: {}: {}: {p}", p.severity, src.path.display());
            // Device code that damage hid (an archive member that does not read): what can
            // be read is written, and the command exits 2.
            damaged |= p.severity == Severity::Error;
        }
        plans.push((src, plan));
    }
    if let Some((p, _)) = packages.iter().find(|(_, found)| !found) {
        return Err(crate::input::failed(p, Failed::NoDeviceCode));
    }
    Ok((plans, damaged))
}

/// What [`write_plans`] wrote: each entry written; per input, the bundles decoded only in
/// part (their hash not checked); and whether a bundle was refused.
type Outcome = (Vec<Written>, Vec<(String, Vec<String>)>, bool);

/// Writes the planned entries into `out_dir`, bundle by bundle, with a progress bar.
fn write_plans(
    plans: &[(&Named, extract::Plan<'_>)],
    out_dir: &std::path::Path,
    hash: HashCheck,
) -> Result<Outcome> {
    let mut damaged = false;
    let total: u64 = plans.iter().map(|(_, p)| p.len() as u64).sum();
    let bar = crate::output::progress(total, "extracting", false);
    let mut written = Vec::new();
    // Per input, the bundles decoded only in part (their hash not checked).
    let mut unchecked: Vec<(String, Vec<String>)> = Vec::new();
    for (src, plan) in plans {
        let file = src.path.display().to_string();
        let write =
            |item: &extract::Item, bytes: &[u8], range: Option<gfxkit_io::FileRange<'_>>| {
                let path = out_dir.join(item.file_name(&src.stem));
                gfxkit_io::write::write_atomic_copy(&path, bytes, range)?;
                bar.inc(1);
                Ok(path)
            };
        let done = plan.produce(Some(&src.data), hash, &write)?;
        for r in &done.refused {
            eprintln!("gfxkit: error: {r}");
        }
        damaged |= done.refused_count > 0;
        for (item, path, hash_checked) in done.items {
            written.push(Written {
                file: file.clone(),
                bundle: item.unit,
                member: item.member,
                section: item.section,
                entry: item.entry,
                id: item.id,
                path: path.display().to_string(),
                size: item.size,
                hash_checked,
            });
        }
        if !done.unchecked.is_empty() {
            unchecked.push((file, done.unchecked));
        }
    }
    bar.finish_and_clear();
    Ok((written, unchecked, damaged))
}

/// Prints each entry written, then one note per input whose bundles were decoded only in
/// part.
fn print_written(written: &[Written], unchecked: &[(String, Vec<String>)]) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for w in written {
        writeln!(out, "{}  {} bytes  ({})", w.path, w.size, w.id)?;
    }
    // One note per input, however many of its bundles it concerns.
    for (file, bundles) in unchecked {
        let (what, verb) = match bundles.as_slice() {
            [one] => (
                one.clone(),
                "its hash was not checked (gfxkit verify checks it)",
            ),
            many => (
                format!(
                    "{} compressed bundles ({})",
                    many.len(),
                    crate::output::shortened(many, 2)
                ),
                "their hashes were not checked (gfxkit verify checks them)",
            ),
        };
        writeln!(
            out,
            "note: {file}: {what} decoded only up to the last wanted entry; {verb}"
        )?;
    }
    Ok(())
}
