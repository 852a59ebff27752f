//! `gfxkit extract`: bundle entries (code objects) to files with stable names.

use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_bundle::EntryId;
use gfxkit_host::Severity;
use gfxkit_inventory::extract::{pick, requested_id, sanitize};
use gfxkit_inventory::locate::{self, Form, Located};
use gfxkit_inventory::Inventory;
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
        if !root.is_dir() || gfxkit_io::input::is_image_dir(root) {
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
    let mut sources = Vec::new();
    for (path, stem, explicit) in out {
        let items = crate::input::for_each(&path, Ok)?;
        let package = items.len() > 1 || items.first().is_some_and(|(p, _)| *p != path);
        for (member, r) in items {
            let data = match r {
                Ok(d) => d,
                Err(e) if e.downcast_ref::<crate::input::NoDeviceCode>().is_some() && !explicit => {
                    continue
                }
                // The error names the file or `package!member` itself.
                Err(e) => return Err(e),
            };
            // Members of a package are named after the package and the member's path.
            let stem = if package {
                let inner = member
                    .to_string_lossy()
                    .split_once('!')
                    .map(|(_, m)| m.to_owned())
                    .unwrap_or_default();
                sanitize(&format!("{stem}_{}", inner.replace(['/', '!'], "_")))
            } else {
                stem.clone()
            };
            sources.push(Source {
                path: member,
                explicit,
                stem,
                data,
            });
        }
    }
    Ok(sources)
}

/// One entry to write.
struct Pick {
    entry: usize,
    id: String,
    size: u64,
    /// Offset of the payload in the (uncompressed) bundle.
    offset: u64,
    /// End of the payload in the uncompressed bundle.
    end: u64,
}

/// Runs `gfxkit extract`.
pub fn run(args: Args) -> Result<ExitCode> {
    let wanted: Vec<EntryId> = args
        .targets
        .iter()
        .map(|t| requested_id(t))
        .collect::<gfxkit_inventory::Result<_>>()?;
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
    let mut damaged = false;
    let mut plans = Vec::with_capacity(sources.len());
    let mut kpack_plans = Vec::new();
    let mut db_plans = Vec::new();
    for src in &sources {
        let name = src.path.display();
        // Split binaries (HIPK wrappers) and .kpack archives: code objects from the archives.
        let mut select = |id: &str| {
            let Ok(id) = EntryId::parse(id) else {
                return false;
            };
            if wanted.is_empty() {
                return true;
            }
            let mut any = false;
            for (wi, w) in wanted.iter().enumerate() {
                if gfxkit_inventory::extract::selects(w, &id) {
                    matched[wi] = true;
                    any = true;
                }
            }
            any
        };
        // Kernel databases: every `.kdb` record or `.aks2` kernel is a code object.
        if let Some(kind) = gfxkit_io::database::kind(&src.path, &src.data) {
            match gfxkit_inventory::database::open(&name.to_string(), &src.data, kind) {
                Some(opened) => {
                    let o = opened.with_context(|| format!("cannot read {name}"))?;
                    let picks: Vec<usize> = (0..o.entries.len())
                        .filter(|&i| o.entries[i].size > 0 && select(&o.entries[i].id))
                        .collect();
                    db_plans.push((src, o, picks));
                }
                None if src.explicit => bail!(
                    "{name}: a Tensile index names kernels but holds no code object (extract \
                     the code-object files beside it)"
                ),
                None => {}
            }
            continue;
        }
        if let Some(x) = crate::cmd::kpack::extract_picks(&src.path, &src.data, &mut select)? {
            kpack_plans.push((src, x));
            continue;
        }
        let found = Inventory::of(&src.data);
        if let Some(e) = &found.error {
            return Err(anyhow::Error::new(e.clone()).context(format!("cannot read {name}")));
        }
        // Nothing readable because of damage: the damage is the error, not a missing bundle.
        let fatal = found
            .units
            .is_empty()
            .then(|| {
                found
                    .problems
                    .iter()
                    .position(|p| p.severity == Severity::Error)
            })
            .flatten();
        for (i, p) in found.problems.iter().enumerate() {
            if Some(i) != fatal {
                eprintln!("gfxkit: {}: {name}: {p}", p.severity);
                // Device code that damage hid (an archive member that does not read): what
                // can be read is written, and the command exits 2.
                damaged |= p.severity == Severity::Error;
            }
        }
        if let Some(i) = fatal {
            bail!("{name}: {}", found.problems[i]);
        }
        if found.units.is_empty() {
            if src.explicit {
                bail!("{name}: no offload bundle in this file");
            }
            continue;
        }
        let mut plan: Vec<Vec<Pick>> = Vec::with_capacity(found.units.len());
        for b in &found.units {
            let ctx = || format!("{name}: {}", describe(b));
            let (entries, _, _) = locate::read_header(b, false).with_context(ctx)?;
            let picked = pick(&entries, &wanted, &mut matched);
            plan.push(
                picked
                    .into_iter()
                    .map(|i| Pick {
                        entry: i,
                        id: entries[i].id.clone(),
                        size: entries[i].size,
                        offset: entries[i].offset,
                        end: entries[i].offset.saturating_add(entries[i].size),
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
        .sum::<u64>()
        + db_plans.iter().map(|(_, _, p)| p.len() as u64).sum::<u64>();
    let bar = crate::output::progress(total, "extracting", false);
    let mut written = Vec::new();
    // Per input, the bundles decoded only in part (their hash not checked).
    let mut unchecked: Vec<(String, Vec<String>)> = Vec::new();
    for (src, o, picks) in &db_plans {
        for &i in picks {
            let e = &o.entries[i];
            let bytes = o
                .code_object(i)
                .with_context(|| format!("{}: {}", src.path.display(), e.place))?;
            let path = args
                .out_dir
                .join(format!("{}.{i}.{}.co", src.stem, sanitize(&e.id)));
            crate::output::write_atomic(&path, &bytes)?;
            bar.inc(1);
            written.push(Written {
                file: src.path.display().to_string(),
                bundle: 0,
                member: None,
                section: None,
                entry: i,
                id: e.id.clone(),
                path: path.display().to_string(),
                size: bytes.len() as u64,
                hash_checked: None,
            });
        }
    }
    for (src, x) in &kpack_plans {
        let dest = |p: &gfxkit_inventory::kpack::Pick| {
            args.out_dir
                .join(format!("{}.{}.{}.co", src.stem, p.bundle, sanitize(&p.id)))
        };
        crate::cmd::kpack::extract_write(x, &dest)?;
        for p in &x.picks {
            written.push(Written {
                file: src.path.display().to_string(),
                bundle: p.bundle,
                member: None,
                section: Some(x.archives[p.archive].display().to_string()),
                entry: p.entry,
                id: p.id.clone(),
                path: dest(p).display().to_string(),
                size: p.size,
                hash_checked: None,
            });
        }
    }
    for (src, found, plan) in &plans {
        for (b, picks) in found.units.iter().zip(plan) {
            if picks.is_empty() {
                continue;
            }
            let ctx = || format!("{}: {}", src.path.display(), describe(b));
            // Decoded only up to the end of the last wanted entry (a compressed bundle's hash
            // is then not checked, and the output says so).
            let upto = picks.iter().map(|p| p.end).max().unwrap_or(0);
            let (results, hash_checked) = locate::with_payloads_upto(b, hash, upto, |entries| {
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
                    jobs.push((path, e, p));
                }
                // Distinct files, in parallel: each checked as far as it can be before it is
                // written (the code object reads as `inspect` reads it and is built for the
                // target its ID names), then written atomically; results in entry order.
                use rayon::prelude::*;
                let outcomes: Vec<std::result::Result<Result<()>, String>> = jobs
                    .par_iter()
                    .map(|(path, e, p)| {
                        if let Some(why) =
                            gfxkit_inventory::extract::unwritable(e.id, e.payload, e.ext)
                        {
                            let unit = if b.ccob.is_some() {
                                "decompressed bundle"
                            } else {
                                "unit"
                            };
                            return Err(format!(
                                "entry {} ({}, payload at offset {:#x} of the {unit}): {why}; \
                                 not written",
                                p.entry, p.id, p.offset
                            ));
                        }
                        // Stored uncompressed: copied from the input inside the kernel.
                        let source = src.data.file_range(e.payload);
                        let r = crate::output::write_atomic_copy(path, e.payload, source);
                        bar.inc(1);
                        Ok(r)
                    })
                    .collect();
                let mut results = Vec::new();
                let mut refused = Vec::new();
                for ((path, _, p), outcome) in jobs.into_iter().zip(outcomes) {
                    match outcome {
                        Ok(r) => results.push(((path, p), r)),
                        Err(why) => refused.push((p.entry, why)),
                    }
                }
                Ok::<_, anyhow::Error>((results, refused))
            })
            .with_context(ctx)?;
            let (results, refused) = results.with_context(ctx)?;
            // An entry refused for a contradiction already reported above is not named twice.
            let said = |entry: usize| {
                found.problems.iter().any(|p| {
                    let inside = p.location.offset >= b.offset
                        && p.location.offset - b.offset <= b.bytes.len() as u64;
                    inside
                        && match &p.kind {
                            gfxkit_host::ProblemKind::EntryContradiction { index, .. } => {
                                *index == entry
                            }
                            gfxkit_host::ProblemKind::BadCodeObject(_) => true,
                            _ => false,
                        }
                })
            };
            for (entry, r) in &refused {
                if !said(*entry) {
                    eprintln!("gfxkit: error: {}: {r}", ctx());
                }
                damaged = true;
            }
            for ((path, p), r) in results {
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
                    hash_checked,
                });
            }
            if hash_checked == Some(false) {
                let file = src.path.display().to_string();
                match unchecked.iter_mut().find(|(f, _)| *f == file) {
                    Some((_, v)) => v.push(describe(b)),
                    None => unchecked.push((file, vec![describe(b)])),
                }
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
        // One note per input, however many of its bundles it concerns.
        for (file, bundles) in &unchecked {
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
    }
    Ok(if damaged {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// How a unit is named in messages: `bundle 0 at offset 0x0` for standalone bundles (as
/// before), with member and section for host binaries.
fn describe(b: &Located<'_>) -> String {
    if b.form == Form::Bundle && b.member.is_none() && b.section.is_none() {
        format!("bundle {} at offset {:#x}", b.index, b.offset)
    } else {
        b.describe()
    }
}
