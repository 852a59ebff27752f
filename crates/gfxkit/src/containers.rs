//! The pieces of `clang-offload-bundler -type` handling that the bundle commands (`bundle`,
//! `unbundle`, `compress`, the drop-in `offload-bundler`) share: the container a file type
//! selects, reading entries out of it, writing it, and clang's `-verbose` statistics.
//! The format rules themselves are [`gfxkit_bundle`]'s; this module only picks between them
//! and formats what clang prints.

use anyhow::{anyhow, Result};
use gfxkit_bundle::compressed::{self as ccob, DecompressOptions};
use gfxkit_bundle::read::{Bundle, MAGIC};
use std::borrow::Cow;

/// The text of an I/O error without Rust's ` (os error N)` suffix, as C's `strerror` says it.
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Whether `data` is read (and written) as an object bundle: any ELF file, as clang's bundler
/// treats every object file. Writing sections needs a relocatable host object; the library
/// says so clearly when given another kind of ELF file.
pub fn is_object(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// A container format of `clang-offload-bundler -type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Text with entries between comment markers (`//`, `#` or `;`).
    Text(&'static str),
    /// The binary bundle format (CCOB-compressed or not).
    Binary,
    /// Sections `__CLANG_OFFLOAD_BUNDLE__<id>` of a host object.
    Object,
}

/// An entry found by [`entries`], in file order.
#[derive(Debug, Clone)]
pub struct FoundEntry<'a> {
    /// The ID exactly as stored.
    pub id: String,
    /// The payload as stored.
    pub payload: &'a [u8],
    /// The host placeholder of an object bundle (one zero byte standing for the host
    /// object itself).
    pub host_placeholder: bool,
}

/// Decompresses `data` when it is a CCOB bundle (hash checked), as clang does with any input
/// before unbundling; otherwise returns it as is.
pub fn open_for_unbundling(data: &[u8], verbose: bool) -> Result<Cow<'_, [u8]>> {
    if !ccob::is_ccob(data) {
        return Ok(Cow::Borrowed(data));
    }
    let d = ccob::decompress_ccob(data, &DecompressOptions::default())
        .map_err(|e| anyhow!("Failed to decompress input: {e}"))?;
    if verbose {
        print_decompression_stats(&d);
    }
    Ok(Cow::Owned(d.data))
}

/// The entries of `data` read as `container`, in file order. A binary input that is not a
/// bundle has no entries (clang then treats it as the host file).
pub fn entries(data: &[u8], container: Container) -> Result<Vec<FoundEntry<'_>>> {
    match container {
        Container::Binary => {
            if !data.starts_with(MAGIC) {
                return Ok(Vec::new());
            }
            let b = Bundle::parse(data)?;
            Ok(b.entries()
                .iter()
                .map(|e| FoundEntry {
                    id: e.id.to_owned(),
                    payload: e.payload,
                    host_placeholder: false,
                })
                .collect())
        }
        Container::Text(comment) => Ok(gfxkit_bundle::text::read_text(data, comment)?
            .into_iter()
            .map(|e| FoundEntry {
                id: e.id.to_owned(),
                payload: e.payload,
                host_placeholder: false,
            })
            .collect()),
        Container::Object => Ok(gfxkit_bundle::object::read_object(data)?
            .into_iter()
            .map(|e| FoundEntry {
                id: e.id.to_owned(),
                payload: e.payload,
                host_placeholder: e.is_host_placeholder(),
            })
            .collect()),
    }
}

/// The payload of an entry found by [`entries`]: for the host placeholder of an object
/// bundle, the host object without its bundle sections.
pub fn entry_payload<'a>(data: &'a [u8], e: &FoundEntry<'a>) -> Result<Cow<'a, [u8]>> {
    if e.host_placeholder {
        return Ok(Cow::Owned(gfxkit_bundle::object::strip_bundle_sections(
            data,
        )?));
    }
    Ok(Cow::Borrowed(e.payload))
}

/// The entry IDs `-list` prints, in file order: every bundle of a binary input (back to
/// back ones included), the markers of a text input, the sections of a host object.
pub fn list_ids(data: &[u8], container: Container, verbose: bool) -> Result<Vec<String>> {
    match container {
        Container::Binary => {
            let mut ids = Vec::new();
            for b in gfxkit_inventory::locate::find_bundles(data)? {
                let contents = match &b.ccob {
                    Some(_) => {
                        let d = ccob::decompress_ccob(b.bytes, &DecompressOptions::default())
                            .map_err(|e| {
                                anyhow!(
                                    "Failed to decompress input: bundle {} at offset {:#x}: {e}",
                                    b.index,
                                    b.offset
                                )
                            })?;
                        if verbose {
                            print_decompression_stats(&d);
                        }
                        Cow::Owned(d.data)
                    }
                    None => Cow::Borrowed(b.bytes),
                };
                if !contents.starts_with(MAGIC) {
                    continue;
                }
                let bundle = Bundle::parse(&contents)
                    .map_err(|e| anyhow!("bundle {} at offset {:#x}: {e}", b.index, b.offset))?;
                ids.extend(bundle.entries().iter().map(|e| e.id.to_owned()));
            }
            Ok(ids)
        }
        other => Ok(entries(data, other)?.into_iter().map(|e| e.id).collect()),
    }
}

/// Settings for compressing a bundle.
#[derive(Debug, Clone, Copy)]
pub struct CompressSettings {
    /// CCOB version (default 2).
    pub version: Option<u16>,
    /// zlib instead of zstd.
    pub zlib: bool,
    /// Level (the method's default when absent).
    pub level: Option<i32>,
    /// zstd worker threads (0 = on the calling thread, clang's exact bytes).
    pub threads: u32,
}

/// Compresses an uncompressed bundle into CCOB.
pub fn compress(bytes: &[u8], s: &CompressSettings) -> Result<Vec<u8>> {
    let opts = ccob::CompressOptions {
        method: if s.zlib {
            gfxkit_bundle::codec::Method::Zlib
        } else {
            gfxkit_bundle::codec::Method::Zstd
        },
        level: s.level,
        version: s.version.unwrap_or(ccob::DEFAULT_VERSION),
        threads: s.threads,
    };
    Ok(ccob::compress(bytes, &opts)?)
}

fn with_commas(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `-verbose` statistics after compressing, in clang's words (without its timer report).
pub fn print_compression_stats(before: &[u8], after: &[u8], level: i32) {
    let Ok(h) = ccob::Header::parse(after) else {
        return;
    };
    let body = after.len() as u64 - h.header_len();
    let rate = before.len() as f64 / body.max(1) as f64;
    eprintln!(
        "Compressed bundle format version: {}\nTotal file size (including headers): {} bytes\n\
         Compression method used: {}\nCompression level: {level}\nBinary size before compression: {} bytes\n\
         Binary size after compression: {} bytes\nCompression rate: {:.2}\nCompression ratio: {:.2}%\n\
         Truncated MD5 hash: {:#018x}",
        h.version,
        with_commas(after.len() as u64),
        h.method.name(),
        with_commas(before.len() as u64),
        with_commas(body),
        rate,
        100.0 / rate,
        h.hash
    );
}

fn print_decompression_stats(d: &ccob::Decompressed) {
    let h = &d.header;
    let body = d.extent - h.header_len();
    let rate = h.uncompressed_size as f64 / body.max(1) as f64;
    let mut s = format!("Compressed bundle format version: {}\n", h.version);
    if let Some(t) = h.total_size {
        s.push_str(&format!(
            "Total file size (from header): {} bytes\n",
            with_commas(t)
        ));
    }
    s.push_str(&format!(
        "Decompression method: {}\nSize before decompression: {} bytes\nSize after decompression: {} bytes\n\
         Compression rate: {:.2}\nCompression ratio: {:.2}%\nStored hash: {:#018x}\nRecalculated hash: {:#018x}\nHashes match: {}",
        h.method.name(),
        with_commas(body),
        with_commas(h.uncompressed_size),
        rate,
        100.0 / rate,
        h.hash,
        d.computed_hash,
        if d.hash_ok() { "Yes" } else { "No" }
    ));
    eprintln!("{s}");
}

/// Writes a bundle of `entries` in `container` form; `host` is the index of the host entry
/// (whose input is the host object for [`Container::Object`]).
pub fn write(
    container: Container,
    entries: &[(&str, &[u8])],
    host: Option<usize>,
    align: u64,
) -> Result<Vec<u8>> {
    match container {
        Container::Binary => Ok(gfxkit_bundle::write_bundle(entries, align)?),
        Container::Text(c) => Ok(gfxkit_bundle::text::write_text(entries, c)),
        Container::Object => {
            let h = host.ok_or_else(|| anyhow!("an object bundle needs a host input"))?;
            Ok(gfxkit_bundle::object::write_object(
                entries[h].1,
                entries,
                h,
            )?)
        }
    }
}

/// Unbundles an archive (`-type=a`): one GNU archive per requested target.
pub fn unbundle_archive(
    data: &[u8],
    name: &str,
    requests: &[gfxkit_bundle::EntryId],
    hip_openmp: bool,
    allow_missing: bool,
    check: bool,
) -> Result<Vec<Vec<u8>>> {
    let opts = gfxkit_bundle::archive::ArchiveOptions {
        allow_missing,
        hip_openmp_compatible: hip_openmp,
        check_input: check,
        decompress: DecompressOptions::default(),
    };
    Ok(gfxkit_bundle::archive::unbundle_archive(
        data, requests, name, &opts,
    )?)
}
