//! `gfxkit list`: the offload bundles and entries in files.

use crate::bundles::{self, Located};
use anyhow::Result;
use gfxkit_bundle::{EntryId, EntryTarget};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit list`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Compressed (CCOB) bundles are listed from their header alone: only as much is decompressed as
the bundle header needs, so listing stays fast and `hash_ok` is null. With --check every
compressed bundle is decompressed in full and its hash verified.

Entry offsets are relative to the start of the (uncompressed) bundle; bundle offsets are
relative to the file.

Examples:
  gfxkit list app.hipfb
  gfxkit list --json librocsparse.so.hip_fatbin
  gfxkit list --check *.hipfb

Exit codes: 0 listed; 1 a --check hash mismatch; 2 an unreadable or damaged file.")]
pub struct Args {
    /// Bundle files (standalone bundles, or several back to back like a dumped `.hip_fatbin`).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path", "bundles":[{"offset", "format", "ccob", "entries"}]}]}.
    #[arg(long)]
    json: bool,
    /// Decompress compressed bundles in full and verify their hash.
    #[arg(long)]
    check: bool,
}

/// JSON: the whole listing.
#[derive(Serialize)]
pub struct Listing {
    /// One per file, in the order given.
    pub files: Vec<FileListing>,
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
}

/// JSON: one bundle.
#[derive(Serialize)]
pub struct BundleListing {
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes the bundle occupies in the file.
    pub size: u64,
    /// `uncompressed` or `ccob`.
    pub format: &'static str,
    /// The CCOB header, or null.
    pub ccob: Option<CcobListing>,
    /// Length of the uncompressed bundle header.
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
}

fn entry_listing(e: bundles::ListedEntry) -> EntryListing {
    match EntryId::parse(&e.id) {
        Ok(id) => EntryListing {
            kind: Some(id.kind().to_string()),
            triple: Some(id.triple().to_string()),
            target_id: match id.target() {
                EntryTarget::None => None,
                t => Some(t.to_string()),
            },
            canonical_id: Some(id.canonical()),
            id_error: None,
            id: e.id,
            offset: e.offset,
            size: e.size,
        },
        Err(err) => EntryListing {
            kind: None,
            triple: None,
            target_id: None,
            canonical_id: None,
            id_error: Some(err.to_string()),
            id: e.id,
            offset: e.offset,
            size: e.size,
        },
    }
}

fn bundle_listing(b: &Located<'_>, check: bool) -> Result<BundleListing> {
    let (entries, header_size, hash_ok) = bundles::read_header(b, check)?;
    Ok(BundleListing {
        offset: b.offset,
        size: b.bytes.len() as u64,
        format: if b.ccob.is_some() {
            "ccob"
        } else {
            "uncompressed"
        },
        ccob: b.ccob.map(|h| CcobListing {
            version: h.version,
            method: h.method.name(),
            uncompressed_size: h.uncompressed_size,
            hash_ok,
        }),
        header_size,
        entries: entries.into_iter().map(entry_listing).collect(),
    })
}

/// Lists one file's bundles; errors are kept in the listing.
pub fn list_file(path: &std::path::Path, check: bool) -> FileListing {
    let mut out = FileListing {
        path: path.display().to_string(),
        bundles: Vec::new(),
        error: None,
    };
    let data = match crate::input::Input::open(path) {
        Ok(d) => d,
        Err(e) => {
            out.error = Some(format!("{e:#}"));
            return out;
        }
    };
    let name = out.path.clone();
    let found = match bundles::find_bundles(&data) {
        Ok(f) => f,
        Err(e) => {
            out.error = Some(format!("{name}: {e:#}"));
            return out;
        }
    };
    for b in &found {
        match bundle_listing(b, check) {
            Ok(l) => out.bundles.push(l),
            Err(e) => {
                out.error = Some(format!(
                    "bundle {} at offset {:#x}: {e:#}",
                    b.index, b.offset
                ));
                break;
            }
        }
    }
    out
}

/// Runs `gfxkit list`.
pub fn run(args: Args) -> Result<ExitCode> {
    let listing = Listing {
        files: args
            .files
            .iter()
            .map(|p| list_file(p, args.check))
            .collect(),
    };
    let failed = listing.files.iter().any(|f| f.error.is_some());
    let bad_hash = listing
        .files
        .iter()
        .flat_map(|f| &f.bundles)
        .any(|b| b.ccob.as_ref().and_then(|c| c.hash_ok) == Some(false));
    if args.json {
        crate::bundles::print_json(&listing)?;
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

fn print_text(listing: &Listing) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (fi, f) in listing.files.iter().enumerate() {
        if fi > 0 {
            writeln!(out)?;
        }
        let entries: usize = f.bundles.iter().map(|b| b.entries.len()).sum();
        let bytes: u64 = f.bundles.iter().map(|b| b.size).sum();
        let nb = f.bundles.len();
        if let (Some(e), true) = (&f.error, f.bundles.is_empty()) {
            out.flush()?;
            eprintln!("gfxkit: error: {e}");
            continue;
        }
        writeln!(
            out,
            "{}: {} bundle{}, {} entr{}, {}",
            f.path,
            nb,
            if nb == 1 { "" } else { "s" },
            entries,
            if entries == 1 { "y" } else { "ies" },
            human(bytes)
        )?;
        for (bi, b) in f.bundles.iter().enumerate() {
            let form = match &b.ccob {
                Some(c) => format!(
                    "ccob v{} {}, {} -> {}{}",
                    c.version,
                    c.method,
                    human(b.size),
                    human(c.uncompressed_size),
                    match c.hash_ok {
                        Some(true) => ", hash ok",
                        Some(false) => ", HASH MISMATCH",
                        None => "",
                    }
                ),
                None => format!("uncompressed, {}", human(b.size)),
            };
            writeln!(
                out,
                "  bundle {bi} at {:#x}: {form}, header {} bytes",
                b.offset, b.header_size
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
                "    {:>3}  {:<off_w$}  {:>size_w$}  id",
                "#", "offset", "size"
            )?;
            for (i, e) in b.entries.iter().enumerate() {
                let note = match (&e.canonical_id, &e.id_error) {
                    (_, Some(err)) => format!("  ({err})"),
                    (Some(c), None) if *c != e.id => format!("  (= {c})"),
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "    {i:>3}  {:<off_w$}  {:>size_w$}  {}{note}",
                    format!("{:#x}", e.offset),
                    e.size,
                    e.id
                )?;
            }
        }
        if f.bundles.is_empty() && f.error.is_none() {
            writeln!(out, "  (no offload bundle)")?;
        }
        if let Some(e) = &f.error {
            out.flush()?;
            eprintln!("gfxkit: error: {e}");
        }
    }
    Ok(())
}
