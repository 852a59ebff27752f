//! `gfxkit list`: the device code in files: offload bundles and their entries, in standalone
//! bundle files and inside host binaries (executables, shared objects, objects, archives).

use crate::bundles::{self, Form, Located};
use anyhow::{bail, Result};
use gfxkit_bundle::{EntryId, EntryTarget};
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `gfxkit list`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs: standalone bundles (one, or several back to back like a dumped .hip_fatbin), ELF
executables, shared objects and relocatable objects (every bundle of .hip_fatbin, the
__CLANG_OFFLOAD_BUNDLE__* sections, .llvm.offloading images), ar archives (each member), and
AMDGPU code objects. With -r, directories are searched and files without device code skipped.

Compressed (CCOB) bundles are listed from their header alone: only as much is decompressed as
the bundle header needs, so listing stays fast and `hash_ok` is null. With --check every
compressed bundle is decompressed in full and its hash verified.

For each entry, `cov` is the code-object version and `e_flags` whether the code object's
e_flags fit the target ID its entry ID names, both read from the code object's ELF header:
always for uncompressed bundles, for compressed ones only with --check ('-' when unknown).

Entry offsets are relative to the start of the (uncompressed) bundle; bundle offsets are
relative to the file.

Examples:
  gfxkit list app.hipfb
  gfxkit list /opt/rocm/lib/librocsparse.so
  gfxkit list --json librocsparse.so.hip_fatbin
  gfxkit list -r /opt/rocm/lib
  gfxkit list --check *.hipfb

Exit codes: 0 listed; 1 a --check hash mismatch; 2 an unreadable or damaged file.")]
pub struct Args {
    /// Files (bundles, host binaries, archives, code objects); directories with -r.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path", "bundles":[{"offset", "section", "format", "ccob",
    /// "entries":[{"id", ..., "code_object_version", "eflags_agree"}]}]}]}.
    #[arg(long)]
    json: bool,
    /// Decompress compressed bundles in full, verify their hash and read their code objects'
    /// headers.
    #[arg(long)]
    check: bool,
    /// Search directories recursively (files that cannot hold device code are skipped).
    #[arg(short = 'r', long)]
    recursive: bool,
}

/// JSON: the whole listing.
#[derive(Serialize)]
pub struct Listing {
    /// One per file, in the order given (by path within a directory).
    pub files: Vec<FileListing>,
    /// Totals over every file (with -r).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// JSON: totals over a tree.
#[derive(Serialize, Default)]
pub struct Summary {
    /// Files holding device code.
    pub files_with_device_code: usize,
    /// Bundles (and other units of device code).
    pub bundles: usize,
    /// Entries.
    pub entries: usize,
    /// Bytes of device code as stored.
    pub device_bytes: u64,
    /// Processors named by entries, sorted.
    pub architectures: Vec<String>,
}

/// JSON: one file.
#[derive(Serialize)]
pub struct FileListing {
    /// The path as given.
    pub path: String,
    /// Bundles in file order (empty when the file holds none).
    pub bundles: Vec<BundleListing>,
    /// Why the file could not be listed (then `bundles` holds what was read before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Damage or oddities found in a host binary, with where.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<gfxkit_host::Problem>,
}

impl FileListing {
    fn device_bytes(&self) -> u64 {
        self.bundles.iter().map(|b| b.size).sum()
    }

    fn architectures(&self) -> BTreeSet<String> {
        self.bundles
            .iter()
            .flat_map(|b| &b.entries)
            .filter_map(|e| e.processor.clone())
            .collect()
    }

    fn entries(&self) -> usize {
        self.bundles.iter().map(|b| b.entries.len()).sum()
    }
}

/// JSON: one bundle (or other unit of device code).
#[derive(Serialize)]
pub struct BundleListing {
    /// Archive member holding it, for archives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// ELF section holding it, or null (standalone files).
    pub section: Option<String>,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes the bundle occupies in the file.
    pub size: u64,
    /// `uncompressed` or `ccob`; `object-bundle`, `code-object` or `offload-image` for the
    /// other units of device code.
    pub format: &'static str,
    /// The CCOB header, or null.
    pub ccob: Option<CcobListing>,
    /// Length of the uncompressed bundle header (0 for units that are not bundles).
    pub header_size: u64,
    /// Entries in header order.
    pub entries: Vec<EntryListing>,
}

/// JSON: a CCOB header.
#[derive(Serialize)]
pub struct CcobListing {
    /// 1, 2 or 3.
    pub version: u16,
    /// `zlib` or `zstd`.
    pub method: &'static str,
    /// Declared size of the uncompressed bundle.
    pub uncompressed_size: u64,
    /// Uncompressed size over stored size.
    pub ratio: f64,
    /// Whether the stored hash matches; null unless the bundle was decompressed (--check).
    pub hash_ok: Option<bool>,
}

/// JSON: one entry.
#[derive(Serialize)]
pub struct EntryListing {
    /// The ID exactly as stored.
    pub id: String,
    /// Offload kind, or null when the ID does not parse.
    pub kind: Option<String>,
    /// Canonical triple (`amdgcn-amd-amdhsa-`), or null.
    pub triple: Option<String>,
    /// Canonical target ID (`gfx90a:xnack+`), null for host entries or unparsable IDs.
    pub target_id: Option<String>,
    /// Canonical entry ID, or null.
    pub canonical_id: Option<String>,
    /// Why the ID does not parse, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_error: Option<String>,
    /// Payload offset from the start of the uncompressed bundle.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
    /// The code-object version from the payload's ELF header; null when not read.
    pub code_object_version: Option<u8>,
    /// Whether the payload's `e_flags` fit the target ID of the entry ID; null when unknown
    /// (not read, not a code object, or no target ID).
    pub eflags_agree: Option<bool>,
    /// Why they do not fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eflags_mismatch: Option<String>,
    #[serde(skip)]
    processor: Option<String>,
}

fn entry_listing(e: bundles::ListedEntry) -> EntryListing {
    let (code_object_version, eflags_agree, eflags_mismatch) = match &e.check {
        Some(c) => (
            c.version(),
            c.agrees(),
            match c {
                bundles::PayloadCheck::Checked { mismatch, .. } => mismatch.clone(),
                _ => None,
            },
        ),
        None => (None, None, None),
    };
    match EntryId::parse(&e.id) {
        Ok(id) => EntryListing {
            kind: Some(id.kind().to_string()),
            triple: Some(id.triple().to_string()),
            target_id: match id.target() {
                EntryTarget::None => None,
                t => Some(t.to_string()),
            },
            // The summary line names SPIR-V (amdgcnspirv) beside the processors.
            processor: id
                .target_id()
                .map(|t| t.processor().name.to_owned())
                .or_else(|| {
                    gfxkit_host::select::is_spirv_entry(&id).then(|| "amdgcnspirv".to_owned())
                }),
            canonical_id: Some(id.canonical()),
            id_error: None,
            id: e.id,
            offset: e.offset,
            size: e.size,
            code_object_version,
            eflags_agree,
            eflags_mismatch,
        },
        Err(err) => EntryListing {
            kind: None,
            triple: None,
            target_id: None,
            processor: None,
            canonical_id: None,
            id_error: Some(err.to_string()),
            id: e.id,
            offset: e.offset,
            size: e.size,
            code_object_version,
            eflags_agree,
            eflags_mismatch,
        },
    }
}

fn bundle_listing(b: &Located<'_>, check: bool) -> Result<BundleListing> {
    let (entries, header_size, hash_ok) = bundles::read_header(b, check)?;
    let entries: Vec<EntryListing> = entries.into_iter().map(entry_listing).collect();
    let size = match b.form {
        Form::ObjectBundle => b.loose.iter().map(|e| e.payload.len() as u64).sum(),
        _ => b.bytes.len() as u64,
    };
    Ok(BundleListing {
        member: b.member.clone(),
        section: b.section.clone(),
        offset: b.offset,
        size,
        format: match b.form {
            Form::Bundle if b.ccob.is_some() => "ccob",
            Form::Bundle => "uncompressed",
            Form::ObjectBundle => "object-bundle",
            Form::CodeObject => "code-object",
            Form::OffloadImage => "offload-image",
        },
        ccob: b.ccob.map(|h| CcobListing {
            version: h.version,
            method: h.method.name(),
            uncompressed_size: h.uncompressed_size,
            ratio: ratio(h.uncompressed_size, size),
            hash_ok,
        }),
        header_size,
        entries,
    })
}

fn ratio(uncompressed: u64, stored: u64) -> f64 {
    let r = uncompressed as f64 / stored.max(1) as f64;
    (r * 100.0).round() / 100.0
}

/// Lists the device code in one file's bytes; errors are kept in the listing.
pub fn list_bytes(name: &str, data: &[u8], check: bool) -> FileListing {
    let mut out = FileListing {
        path: name.to_owned(),
        bundles: Vec::new(),
        error: None,
        problems: Vec::new(),
    };
    let found = match bundles::locate(data) {
        Ok(f) => f,
        Err(e) => {
            out.error = Some(format!("{name}: {e:#}"));
            return out;
        }
    };
    out.problems = found.problems;
    for b in &found.units {
        match bundle_listing(b, check) {
            Ok(l) => out.bundles.push(l),
            Err(e) => {
                out.error = Some(match b.form {
                    Form::Bundle if b.section.is_none() && b.member.is_none() => {
                        format!("bundle {} at offset {:#x}: {e:#}", b.index, b.offset)
                    }
                    _ => format!("{name}: {}: {e:#}", b.describe()),
                });
                break;
            }
        }
    }
    out
}

/// Lists one file; errors are kept in the listing.
pub fn list_file(path: &Path, check: bool) -> FileListing {
    let name = path.display().to_string();
    match crate::input::Input::open(path) {
        Ok(data) => list_bytes(&name, &data, check),
        Err(e) => FileListing {
            path: name,
            bundles: Vec::new(),
            error: Some(format!("{e:#}")),
            problems: Vec::new(),
        },
    }
}

/// Runs `gfxkit list`.
pub fn run(args: Args) -> Result<ExitCode> {
    let files = if args.recursive {
        let check = args.check;
        crate::scan::scan(
            &args.files,
            &crate::scan::Options::default(),
            |path, data| Ok(list_bytes(&path.display().to_string(), data, check)),
        )?
        .into_iter()
        .filter_map(|s| match s.result {
            Ok(l) if s.explicit || !l.bundles.is_empty() || l.error.is_some() => Some(l),
            Ok(_) => None,
            Err(e) => Some(FileListing {
                path: s.path.display().to_string(),
                bundles: Vec::new(),
                error: Some(format!("{e:#}")),
                problems: Vec::new(),
            }),
        })
        .collect()
    } else {
        if let Some(d) = args.files.iter().find(|p| p.is_dir()) {
            bail!("{} is a directory (use -r to search it)", d.display());
        }
        args.files
            .iter()
            .map(|p| list_file(p, args.check))
            .collect::<Vec<_>>()
    };
    let summary = args.recursive.then(|| summarize(&files));
    let listing = Listing { files, summary };
    let failed = listing.files.iter().any(|f| {
        f.error.is_some()
            || f.problems
                .iter()
                .any(|p| p.severity == gfxkit_host::Severity::Error)
    });
    let bad_hash = listing
        .files
        .iter()
        .flat_map(|f| &f.bundles)
        .any(|b| b.ccob.as_ref().and_then(|c| c.hash_ok) == Some(false));
    if args.json {
        crate::output::print_json(&listing)?;
    } else {
        print_text(&listing)?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else if bad_hash {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn summarize(files: &[FileListing]) -> Summary {
    let mut s = Summary::default();
    let mut archs = BTreeSet::new();
    for f in files.iter().filter(|f| !f.bundles.is_empty()) {
        s.files_with_device_code += 1;
        s.bundles += f.bundles.len();
        s.entries += f.entries();
        s.device_bytes += f.device_bytes();
        archs.extend(f.architectures());
    }
    s.architectures = archs.into_iter().collect();
    s
}

/// `1.6 MiB`-style sizes.
pub fn human(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn print_text(listing: &Listing) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (fi, f) in listing.files.iter().enumerate() {
        if fi > 0 {
            writeln!(out)?;
        }
        if let (Some(e), true) = (&f.error, f.bundles.is_empty()) {
            out.flush()?;
            eprintln!("gfxkit: error: {e}");
            continue;
        }
        let archs = f.architectures();
        let arch_note = if archs.is_empty() {
            String::new()
        } else {
            format!("; {}", archs.into_iter().collect::<Vec<_>>().join(" "))
        };
        writeln!(
            out,
            "{}: {}, {}, {}{arch_note}",
            f.path,
            plural(f.bundles.len(), "bundle", "bundles"),
            plural(f.entries(), "entry", "entries"),
            human(f.device_bytes())
        )?;
        for (bi, b) in f.bundles.iter().enumerate() {
            print_bundle(&mut out, bi, b)?;
        }
        if f.bundles.is_empty() && f.error.is_none() {
            writeln!(out, "  (no offload bundle)")?;
        }
        if !f.problems.is_empty() || f.error.is_some() {
            out.flush()?;
        }
        for p in &f.problems {
            eprintln!("gfxkit: {}: {}: {p}", p.severity, f.path);
        }
        if let Some(e) = &f.error {
            eprintln!("gfxkit: error: {e}");
        }
    }
    if let Some(s) = &listing.summary {
        writeln!(
            out,
            "{}total: {} with device code, {}, {}, {}{}",
            if listing.files.is_empty() { "" } else { "\n" },
            plural(s.files_with_device_code, "file", "files"),
            plural(s.bundles, "bundle", "bundles"),
            plural(s.entries, "entry", "entries"),
            human(s.device_bytes),
            if s.architectures.is_empty() {
                String::new()
            } else {
                format!("; {}", s.architectures.join(" "))
            }
        )?;
    }
    Ok(())
}

fn print_bundle(out: &mut impl Write, bi: usize, b: &BundleListing) -> Result<()> {
    let form = match (&b.ccob, b.format) {
        (Some(c), _) => format!(
            "ccob v{} {}, {} -> {} ({:.2}x){}",
            c.version,
            c.method,
            human(b.size),
            human(c.uncompressed_size),
            c.ratio,
            match c.hash_ok {
                Some(true) => ", hash ok",
                Some(false) => ", HASH MISMATCH",
                None => "",
            }
        ),
        (None, "uncompressed") => format!("uncompressed, {}", human(b.size)),
        (None, _) => human(b.size),
    };
    let what = match b.format {
        "object-bundle" => "object bundle",
        "code-object" => "code object",
        "offload-image" => "offload image",
        _ => "bundle",
    };
    let mut place = String::new();
    if let Some(m) = &b.member {
        place.push_str(&format!(" in {m}"));
    }
    if let Some(s) = &b.section {
        place.push_str(if b.member.is_some() { ", " } else { " in " });
        place.push_str(s);
    }
    let header = if b.header_size > 0 {
        format!(", header {} bytes", b.header_size)
    } else {
        String::new()
    };
    writeln!(
        out,
        "  {what} {bi}{place} at {:#x}: {form}{header}",
        b.offset
    )?;
    let off_w = b
        .entries
        .iter()
        .map(|e| format!("{:#x}", e.offset).len())
        .max()
        .unwrap_or(0)
        .max(6);
    let size_w = b
        .entries
        .iter()
        .map(|e| e.size.to_string().len())
        .max()
        .unwrap_or(0)
        .max(4);
    writeln!(
        out,
        "    {:>3}  {:<off_w$}  {:>size_w$}  cov  e_flags  id",
        "#", "offset", "size"
    )?;
    for (i, e) in b.entries.iter().enumerate() {
        let mut note = match (&e.canonical_id, &e.id_error) {
            (_, Some(err)) => format!("  ({err})"),
            (Some(c), None) if *c != e.id => format!("  (= {c})"),
            _ => String::new(),
        };
        if let Some(m) = &e.eflags_mismatch {
            note.push_str(&format!("  ({m})"));
        }
        let cov = e
            .code_object_version
            .map_or_else(|| "-".to_owned(), |v| format!("v{v}"));
        let agree = match e.eflags_agree {
            Some(true) => "ok",
            Some(false) => "DIFFER",
            None => "-",
        };
        writeln!(
            out,
            "    {i:>3}  {:<off_w$}  {:>size_w$}  {cov:>3}  {agree:<7}  {}{note}",
            format!("{:#x}", e.offset),
            e.size,
            e.id
        )?;
    }
    Ok(())
}
