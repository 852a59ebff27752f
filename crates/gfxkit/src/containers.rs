//! What the bundle commands (`bundle`, `unbundle`, `compress`, the drop-in `offload-bundler`)
//! share beyond the containers themselves ([`gfxkit_bundle::container`]): clang's `-list`,
//! its `-verbose` statistics and error wording, and the CCOB settings of their options.

use anyhow::{anyhow, Result};
use gfxkit_bundle::compressed as ccob;
use gfxkit_bundle::container::{self, Container};
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::read::MAGIC;
use gfxkit_inventory::units::thousands;
use std::borrow::Cow;

/// The text of an I/O error without Rust's ` (os error N)` suffix, as C's `strerror` says it.
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Decompresses `data` when it is a CCOB bundle (hash checked), as clang does with any input
/// before unbundling; otherwise returns it as is.
pub fn open_for_unbundling<'a>(
    data: &'a [u8],
    verbose: bool,
    limits: &Limits,
) -> Result<Cow<'a, [u8]>> {
    if !ccob::is_ccob(data) {
        return Ok(Cow::Borrowed(data));
    }
    let d = ccob::decompress_ccob(data, &limits.decompress_options())
        .map_err(|e| anyhow!("Failed to decompress input: {e}"))?;
    if verbose {
        print_decompression_stats(&d);
    }
    Ok(Cow::Owned(d.data))
}

/// The entry IDs `-list` prints, in file order: every bundle of a binary input (back to
/// back ones included), the markers of a text input, the sections of a host object.
/// Bundles are read under `limits`.
pub fn list_ids(
    data: &[u8],
    container: Container,
    verbose: bool,
    limits: &Limits,
) -> Result<Vec<String>> {
    match container {
        Container::Binary => {
            let mut ids = Vec::new();
            for b in gfxkit_inventory::locate::find_bundles_with(data, limits)? {
                let contents = match &b.ccob {
                    Some(_) => {
                        let d = ccob::decompress_ccob_at(b.cursor(), &limits.decompress_options())
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
                let bundle = gfxkit_inventory::locate::parse_contents(&b, &contents)
                    .map_err(|e| anyhow!("bundle {} at offset {:#x}: {e}", b.index, b.offset))?;
                ids.extend(bundle.entries().iter().map(|e| e.id.to_owned()));
            }
            Ok(ids)
        }
        other => Ok(container::entries(data, other)?
            .into_iter()
            .map(|e| e.id.to_owned())
            .collect()),
    }
}

/// The CCOB settings of a compressing command: `version` (CCOB v2 by default), zlib or zstd,
/// the method's default level unless given, and zstd's worker threads (0: clang's exact bytes).
pub fn compress_options(
    version: Option<u16>,
    zlib: bool,
    level: Option<i32>,
    threads: u32,
) -> ccob::CompressOptions {
    ccob::CompressOptions {
        method: if zlib {
            gfxkit_bundle::codec::Method::Zlib
        } else {
            gfxkit_bundle::codec::Method::Zstd
        },
        level,
        version: version.unwrap_or(ccob::DEFAULT_VERSION),
        threads,
    }
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
        thousands(after.len() as u64),
        h.method.name(),
        thousands(before.len() as u64),
        thousands(body),
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
            thousands(t)
        ));
    }
    s.push_str(&format!(
        "Decompression method: {}\nSize before decompression: {} bytes\nSize after decompression: {} bytes\n\
         Compression rate: {:.2}\nCompression ratio: {:.2}%\nStored hash: {:#018x}\nRecalculated hash: {:#018x}\nHashes match: {}",
        h.method.name(),
        thousands(body),
        thousands(h.uncompressed_size),
        rate,
        100.0 / rate,
        h.hash,
        d.computed_hash,
        if d.hash_ok() { "Yes" } else { "No" }
    ));
    eprintln!("{s}");
}
