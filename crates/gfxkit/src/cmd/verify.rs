//! `gfxkit verify`: check bundles, standalone or inside host binaries, for damage and for
//! what keeps the HIP runtime from loading them.

use crate::bundles::{self, Form, Located, PayloadCheck};
use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::{self, DecompressOptions, HashCheck};
use gfxkit_bundle::{Bundle, EntryId, EntryTarget};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Checks, for every bundle in each file: the structure (entry table, payload ranges, overlaps,
duplicate IDs), the compressed bundle's declared sizes and MD5 hash (decompressing it), the
syntax of every entry ID (device entries must use the 5-part form comgr reads), target IDs
the bundler would refuse together (gfx90a with gfx90a:xnack+), a header larger than the 4096
bytes the HIP runtime reads, and that each device payload is an AMDGPU code object built for
the target its ID names (its e_flags read with the rules of its own code-object version).

In host binaries it also checks what host discovery finds: .hipFatBinSegment wrappers that
point nowhere, outside the file or not at a bundle, bundles no wrapper registers, bundles that
run past their section or leave unreadable bytes, damaged archives and .llvm.offloading images.

Examples:
  gfxkit verify app.hipfb
  gfxkit verify --json build/*.hipfb
  gfxkit verify /opt/rocm/lib/librocsparse.so
  gfxkit verify -r /opt/rocm/lib

Exit codes: 0 no problem; 1 a problem found; 2 a file that cannot be read or holds no bundle.")]
pub struct Args {
    /// Bundle files, host binaries (executables, shared objects, objects), archives, code
    /// objects; directories with -r.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path", "ok", "bundles", "entries", "problems":[...]}]}.
    #[arg(long)]
    json: bool,
    /// Search directories recursively (files without device code are skipped).
    #[arg(short = 'r', long)]
    recursive: bool,
}

/// JSON: one problem.
#[derive(Serialize, Debug)]
pub struct Problem {
    /// Bundle index in the file.
    pub bundle: Option<usize>,
    /// Bundle offset in the file (for problems outside a bundle, where the problem is).
    pub bundle_offset: Option<u64>,
    /// Archive member, for archives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// ELF section, for host binaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Entry index in header order.
    pub entry: Option<usize>,
    /// Entry ID as stored.
    pub id: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// JSON: one file.
#[derive(Serialize, Debug)]
pub struct FileReport {
    /// The path as given.
    pub path: String,
    /// No problem found.
    pub ok: bool,
    /// Bundles found.
    pub bundles: usize,
    /// Entries found.
    pub entries: usize,
    /// Problems found.
    pub problems: Vec<Problem>,
}

struct Ctx<'p> {
    problems: &'p mut Vec<Problem>,
    bundle: usize,
    offset: u64,
    member: Option<String>,
    section: Option<String>,
}

impl Ctx<'_> {
    fn add(&mut self, entry: Option<usize>, id: Option<&str>, message: impl Into<String>) {
        self.problems.push(Problem {
            bundle: Some(self.bundle),
            bundle_offset: Some(self.offset),
            member: self.member.clone(),
            section: self.section.clone(),
            entry,
            id: id.map(str::to_owned),
            message: message.into(),
        });
    }
}

fn check_bundle(b: &Located<'_>, problems: &mut Vec<Problem>) -> usize {
    let mut cx = Ctx {
        problems,
        bundle: b.index,
        offset: b.offset,
        member: b.member.clone(),
        section: b.section.clone(),
    };
    if b.form != Form::Bundle {
        let entries: Vec<(usize, &str, Option<&[u8]>)> = b
            .loose
            .iter()
            .enumerate()
            // Bitcode and SPIR-V images are not code objects: nothing to check in their payload.
            .map(|(i, e)| (i, e.id.as_str(), (e.ext == "co").then_some(e.payload)))
            .collect();
        check_entries(&mut cx, &entries);
        return entries.len();
    }
    let contents: std::borrow::Cow<'_, [u8]> = match &b.ccob {
        None => std::borrow::Cow::Borrowed(b.bytes),
        Some(_) => {
            let opts = DecompressOptions {
                hash: HashCheck::Warn,
                ..DecompressOptions::default()
            };
            match ccob::decompress_ccob(b.bytes, &opts) {
                Ok(d) => {
                    if !d.hash_ok() {
                        cx.add(
                            None,
                            None,
                            format!(
                                "compressed bundle hash mismatch: stored {:#018x}, computed {:#018x}",
                                d.header.hash, d.computed_hash
                            ),
                        );
                    }
                    std::borrow::Cow::Owned(d.data)
                }
                Err(e) => {
                    cx.add(None, None, format!("cannot decompress: {e}"));
                    return 0;
                }
            }
        }
    };
    let (bundle, damage) = match Bundle::parse_lenient(&contents) {
        Ok(x) => x,
        Err(e) => {
            cx.add(None, None, e.to_string());
            return 0;
        }
    };
    for d in damage {
        let msg = match d.offset {
            Some(o) => format!("{} (at offset {o:#x})", d.kind),
            None => d.kind.to_string(),
        };
        cx.add(d.entry, None, msg);
    }
    if bundle.header_exceeds_hip_limit() {
        cx.add(
            None,
            None,
            format!(
                "header is {} bytes; the HIP runtime reads only the first {} bytes of a bundle and cannot load it",
                bundle.header_len(),
                gfxkit_bundle::limits::HIP_HEADER_READ_LIMIT
            ),
        );
    }
    let entries: Vec<(usize, &str, Option<&[u8]>)> = bundle
        .entries()
        .iter()
        .map(|e| (e.index, e.id, Some(e.payload)))
        .collect();
    check_entries(&mut cx, &entries);
    bundle.entries().len()
}

/// Checks entry IDs (syntax, the 5-part form, the bundler's conflict rule) and that each
/// device payload's `e_flags` fit the target ID its entry names.
/// A payload of `None` is not checked (bitcode images).
fn check_entries(cx: &mut Ctx<'_>, entries: &[(usize, &str, Option<&[u8]>)]) {
    let mut known: Vec<(usize, EntryId)> = Vec::new();
    for &(index, raw, payload) in entries {
        let id = match EntryId::parse(raw) {
            Ok(id) => id,
            Err(err) => {
                cx.add(Some(index), Some(raw), err.to_string());
                continue;
            }
        };
        if !id.is_host() && !id.is_canonical() && id.triple().is_amdhsa() {
            cx.add(
                Some(index),
                Some(raw),
                format!(
                    "not in the 5-part form the HIP runtime (comgr) matches; canonical: {}",
                    id.canonical()
                ),
            );
        }
        let check = payload.map_or(PayloadCheck::NotApplicable, |p| {
            bundles::check_payload(raw, p)
        });
        match check {
            PayloadCheck::NotApplicable | PayloadCheck::Checked { mismatch: None, .. } => {}
            PayloadCheck::NotCodeObject(err) => cx.add(
                Some(index),
                Some(raw),
                format!("payload is not an AMDGPU code object: {err}"),
            ),
            PayloadCheck::Checked {
                mismatch: Some(m), ..
            } => cx.add(Some(index), Some(raw), m),
        }
        known.push((index, id));
    }
    // The bundler's conflict rule, per kind family and triple.
    for (i, (ia, a)) in known.iter().enumerate() {
        for (ib, b) in &known[..i] {
            let family = |k: gfxkit_bundle::OffloadKind| {
                k.is_compatible(gfxkit_bundle::OffloadKind::Hip, false)
            };
            let same_kind = a.kind() == b.kind() || (family(a.kind()) && family(b.kind()));
            if !same_kind || a.triple() != b.triple() {
                continue;
            }
            if let (EntryTarget::Known(x), EntryTarget::Known(y)) = (a.target(), b.target()) {
                if let Err(c) = gfxkit_target_id::check_conflicts([y, x]) {
                    cx.add(
                        Some(*ia),
                        Some(a.raw()),
                        format!("conflicts with entry {ib} ({}): {c}", b.raw()),
                    );
                } else if x == y && a.kind() != b.kind() {
                    cx.add(
                        Some(*ia),
                        Some(a.raw()),
                        format!(
                            "same target as entry {ib} ({}); only one can be picked",
                            b.raw()
                        ),
                    );
                }
            }
        }
    }
}

/// Verifies one file's bytes. Errors are for files without device code.
pub fn verify_bytes(name: &str, data: &[u8]) -> Result<FileReport> {
    let name = name.to_owned();
    let mut problems = Vec::new();
    let found = match bundles::locate(data) {
        Ok(f) => f,
        Err(e) => {
            problems.push(Problem {
                bundle: None,
                bundle_offset: None,
                member: None,
                section: None,
                entry: None,
                id: None,
                message: format!("{e:#}"),
            });
            return Ok(FileReport {
                path: name,
                ok: false,
                bundles: 0,
                entries: 0,
                problems,
            });
        }
    };
    if found.units.is_empty() && found.problems.is_empty() {
        bail!("{name}: no offload bundle in this file");
    }
    // What host discovery found: wrappers pointing nowhere or outside the file, bundles
    // running past their section, bundles no wrapper registers, unreadable sections.
    for p in &found.problems {
        problems.push(Problem {
            bundle: None,
            bundle_offset: Some(p.location.offset),
            member: p.location.member.clone(),
            section: p.location.section.clone(),
            entry: None,
            id: None,
            message: format!("{}: {}", p.severity, p.kind),
        });
    }
    let mut entries = 0;
    for b in &found.units {
        entries += check_bundle(b, &mut problems);
    }
    Ok(FileReport {
        path: name,
        ok: problems.is_empty(),
        bundles: found.units.len(),
        entries,
        problems,
    })
}

/// Verifies one file. Errors are for unreadable files and files without device code.
pub fn verify_file(path: &std::path::Path) -> Result<FileReport> {
    let data = crate::input::Input::open(path)?;
    verify_bytes(&data.path().display().to_string(), &data)
}

fn counts(r: &FileReport) -> String {
    format!(
        "{} bundle{}, {} entr{}",
        r.bundles,
        if r.bundles == 1 { "" } else { "s" },
        r.entries,
        if r.entries == 1 { "y" } else { "ies" }
    )
}

/// Runs `gfxkit verify`.
pub fn run(args: Args) -> Result<ExitCode> {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    if args.recursive {
        for s in crate::scan::scan(&args.files, &crate::scan::Options::default(), |p, d| {
            // The only error is a file without device code: skipped when found in a directory.
            Ok(verify_bytes(&p.display().to_string(), d).ok())
        })? {
            match s.result {
                Ok(Some(r)) => reports.push(r),
                Ok(None) if s.explicit => errors.push(anyhow::anyhow!(
                    "cannot verify {}: no offload bundle in this file",
                    s.path.display()
                )),
                Ok(None) => {}
                Err(e) => errors.push(e.context(format!("cannot verify {}", s.path.display()))),
            }
        }
    } else {
        for f in &args.files {
            if f.is_dir() {
                bail!("{} is a directory (use -r to search it)", f.display());
            }
            match verify_file(f).with_context(|| format!("cannot verify {}", f.display())) {
                Ok(r) => reports.push(r),
                Err(e) => errors.push(e),
            }
        }
    }
    if args.json {
        crate::output::print_json(&serde_json::json!({ "files": reports }))?;
    } else {
        let mut out = std::io::stdout().lock();
        for r in &reports {
            if r.ok {
                writeln!(out, "{}: ok ({})", r.path, counts(r))?;
                continue;
            }
            writeln!(
                out,
                "{}: {} problem{} ({})",
                r.path,
                r.problems.len(),
                if r.problems.len() == 1 { "" } else { "s" },
                counts(r)
            )?;
            for p in &r.problems {
                let mut at = String::new();
                let mut place = String::new();
                if let Some(m) = &p.member {
                    place.push_str(&format!(" in {m}"));
                }
                if let Some(s) = &p.section {
                    let sep = if p.member.is_some() { "," } else { " in" };
                    place.push_str(&format!("{sep} {s}"));
                }
                match (p.bundle, p.bundle_offset) {
                    (Some(b), Some(o)) => at.push_str(&format!("bundle {b}{place} at {o:#x}: ")),
                    (None, Some(o)) => {
                        at.push_str(format!("{} at {o:#x}: ", place.trim_start()).trim_start())
                    }
                    _ => {}
                }
                if let Some(e) = p.entry {
                    at.push_str(&format!("entry {e}"));
                    if let Some(id) = &p.id {
                        at.push_str(&format!(" ({id})"));
                    }
                    at.push_str(": ");
                }
                writeln!(out, "  {at}{}", p.message)?;
            }
        }
    }
    for e in &errors {
        eprintln!("gfxkit: error: {e:#}");
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if reports.iter().any(|r| !r.ok) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
