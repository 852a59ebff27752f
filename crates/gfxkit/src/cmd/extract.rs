//! `gfxkit extract`: bundle entries (code objects) to files with stable names.

use crate::bundles;
use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_bundle::EntryId;
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
also spelled with -unknown-) get .spv. Empty host entries are skipped.

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
    /// Print what was written as JSON: {"written":[{"file", "bundle", "entry", "id", "path", "size"}]}.
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
}

/// The entry ID a user wrote: a full entry ID, or a bare target ID meaning a HIP entry.
pub fn requested_id(s: &str) -> Result<EntryId> {
    // SPIR-V for AMD GPUs, named by its target as --offload-arch names it.
    if s == "amdgcnspirv" {
        return Ok(EntryId::parse("hipv4-spirv64-amd-amdhsa--amdgcnspirv")?);
    }
    match EntryId::parse(s) {
        Ok(id) => return Ok(id),
        // Something that starts like an entry ID is reported as one.
        Err(e)
            if gfxkit_bundle::OffloadKind::by_name(s.split('-').next().unwrap_or("")).is_some() =>
        {
            return Err(e.into())
        }
        Err(_) => {}
    }
    let tid = gfxkit_target_id::TargetId::parse(s)
        .with_context(|| format!("'{s}' is neither an entry ID nor a target ID"))?;
    Ok(EntryId::hip(tid))
}

/// Whether the ID a user asked for selects an entry: compatible kinds and triples, and target
/// IDs that can describe the same configuration ([`gfxkit_target_id::TargetId::overlaps`]).
/// Entries whose target gfxkit does not know match only the same text.
fn selects(wanted: &EntryId, entry: &EntryId) -> bool {
    use gfxkit_bundle::EntryTarget;
    if !entry.kind().is_compatible(wanted.kind(), false)
        || !entry.triple().is_compatible(wanted.triple())
    {
        return false;
    }
    match (entry.target(), wanted.target()) {
        (EntryTarget::Known(a), EntryTarget::Known(b)) => a.overlaps(b),
        (a, b) => a == b,
    }
}

/// A file-name-safe form of an entry ID.
pub fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// An input file and the name its outputs start with.
struct Source {
    path: PathBuf,
    explicit: bool,
    stem: String,
    data: crate::input::Input,
}

/// The files to read: those named, and with -r those below named directories that may hold
/// device code, each with the stem its outputs are named by.
fn sources(args: &Args) -> Result<Vec<Source>> {
    let mut out = Vec::new();
    for root in &args.files {
        if !root.is_dir() {
            let stem = root
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "bundle".to_owned());
            out.push((root.clone(), stem, true));
            continue;
        }
        if !args.recursive {
            bail!("{} is a directory (use -r to search it)", root.display());
        }
        for c in crate::scan::collect(std::slice::from_ref(root))? {
            if !crate::scan::worth_reading(&c.path) {
                continue;
            }
            let rel = c.path.strip_prefix(root).unwrap_or(&c.path);
            let stem = sanitize(&rel.with_extension("").to_string_lossy().replace('/', "_"));
            out.push((c.path, stem, false));
        }
    }
    out.into_iter()
        .map(|(path, stem, explicit)| {
            let data = crate::input::Input::open(&path)?;
            Ok(Source {
                path,
                explicit,
                stem,
                data,
            })
        })
        .collect()
}

/// One entry to write.
struct Pick {
    entry: usize,
    id: String,
    size: u64,
}

/// Runs `gfxkit extract`.
pub fn run(args: Args) -> Result<ExitCode> {
    let wanted: Vec<EntryId> = args
        .targets
        .iter()
        .map(|t| requested_id(t))
        .collect::<Result<_>>()?;
    let hash = if args.ignore_hash {
        HashCheck::Warn
    } else {
        HashCheck::Error
    };
    let sources = sources(&args)?;
    // Output names start with the stem: two inputs with one stem would overwrite each other.
    let mut stems = std::collections::HashMap::new();
    for src in &sources {
        if let Some(other) = stems.insert(src.stem.as_str(), &src.path) {
            bail!(
                "{} and {} would both write {}.*; extract them to different directories",
                other.display(),
                src.path.display(),
                args.out_dir.join(&src.stem).display()
            );
        }
    }
    // Plan from the headers alone (no payload decompressed), so that nothing is written when
    // a target matches nothing; then write bundle by bundle.
    let mut matched = vec![false; wanted.len()];
    let mut plans = Vec::with_capacity(sources.len());
    for src in &sources {
        let name = src.path.display();
        let found = bundles::locate(&src.data).with_context(|| format!("cannot read {name}"))?;
        for p in &found.problems {
            eprintln!("gfxkit: {}: {name}: {p}", p.severity);
        }
        if found.units.is_empty() {
            if src.explicit || found.has_errors() {
                bail!("{name}: no offload bundle in this file");
            }
            continue;
        }
        let mut plan: Vec<Vec<Pick>> = Vec::with_capacity(found.units.len());
        for b in &found.units {
            let ctx = || format!("{name}: {}", describe(b));
            let (entries, _, _) = bundles::read_header(b, false).with_context(ctx)?;
            let mut picked: Vec<usize> = Vec::new();
            if wanted.is_empty() {
                picked = (0..entries.len())
                    .filter(|&i| !(entries[i].size == 0 && entries[i].id.starts_with("host-")))
                    .collect();
            } else {
                let ids: Vec<Option<EntryId>> =
                    entries.iter().map(|e| EntryId::parse(&e.id).ok()).collect();
                for (i, id) in ids.iter().enumerate() {
                    let Some(id) = id else { continue };
                    for (wi, w) in wanted.iter().enumerate() {
                        if selects(w, id) {
                            matched[wi] = true;
                            if !picked.contains(&i) {
                                picked.push(i);
                            }
                        }
                    }
                }
            }
            plan.push(
                picked
                    .into_iter()
                    .map(|i| Pick {
                        entry: i,
                        id: entries[i].id.clone(),
                        size: entries[i].size,
                    })
                    .collect(),
            );
        }
        plans.push((src, found, plan));
    }
    if let Some(wi) = matched.iter().position(|m| !m) {
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
    let total: u64 = plans
        .iter()
        .flat_map(|(_, _, p)| p)
        .map(|p| p.len() as u64)
        .sum();
    let bar = crate::output::progress(total, "extracting", false);
    let mut written = Vec::new();
    for (src, found, plan) in &plans {
        for (b, picks) in found.units.iter().zip(plan) {
            if picks.is_empty() {
                continue;
            }
            let ctx = || format!("{}: {}", src.path.display(), describe(b));
            let results = bundles::with_payloads(b, hash, |entries| {
                let mut jobs = Vec::with_capacity(picks.len());
                for p in picks {
                    let e = entries
                        .get(p.entry)
                        .filter(|e| e.id == p.id)
                        .with_context(|| format!("entry {} changed while reading", p.entry))?;
                    let path = args.out_dir.join(format!(
                        "{}.{}.{}.{}",
                        src.stem,
                        b.index,
                        sanitize(&p.id),
                        e.ext
                    ));
                    jobs.push((path, e.payload));
                }
                // Distinct files: written in parallel, each atomically; errors in entry order.
                use rayon::prelude::*;
                let results: Vec<Result<()>> = jobs
                    .par_iter()
                    .map(|(path, payload)| {
                        let r = crate::output::write_atomic(path, payload);
                        bar.inc(1);
                        r
                    })
                    .collect();
                Ok::<_, anyhow::Error>(
                    jobs.into_iter()
                        .map(|(path, _)| path)
                        .zip(results)
                        .collect::<Vec<_>>(),
                )
            })
            .with_context(ctx)?
            .with_context(ctx)?;
            for (p, (path, r)) in picks.iter().zip(results) {
                r?;
                written.push(Written {
                    file: src.path.display().to_string(),
                    bundle: b.index,
                    member: b.member.clone(),
                    section: b.section.clone(),
                    entry: p.entry,
                    id: p.id.clone(),
                    path: path.display().to_string(),
                    size: p.size,
                });
            }
        }
    }
    bar.finish_and_clear();
    if args.json {
        crate::output::print_json(&serde_json::json!({ "written": written }))?;
    } else {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for w in &written {
            writeln!(out, "{}  {} bytes  ({})", w.path, w.size, w.id)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How a unit is named in messages: `bundle 0 at offset 0x0` for standalone bundles (as
/// before), with member and section for host binaries.
fn describe(b: &bundles::Located<'_>) -> String {
    if b.form == bundles::Form::Bundle && b.member.is_none() && b.section.is_none() {
        format!("bundle {} at offset {:#x}", b.index, b.offset)
    } else {
        b.describe()
    }
}
