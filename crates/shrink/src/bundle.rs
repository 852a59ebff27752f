//! Offload bundles as the rewrite needs them: find the bundles in a region of bytes, read their
//! entries (decompressing CCOB bundles), and write a bundle back with chosen entries in a chosen
//! encoding.
//!
//! Formats (formats.md sections 4 and 7): the uncompressed bundle is
//! `"__CLANG_OFFLOAD_BUNDLE__"`, `u64 count`, then per entry `u64 offset, u64 size, u64 id_len,
//! id`, then the payloads at their offsets. A compressed bundle is `"CCOB"`, `u16 version`,
//! `u16 method` (0 zlib, 1 zstd), then v1 `u32 uncompressed, u64 hash`; v2 `u32 total,
//! u32 uncompressed, u64 hash`; v3 `u64 total, u64 uncompressed, u64 hash`; then one zlib stream
//! or zstd frame holding a whole uncompressed bundle. The hash is the first 8 bytes of the MD5
//! of the uncompressed bundle read as a little-endian `u64`.

use crate::error::{fail, Error, ErrorKind, Result};
use crate::limits;
use md5::{Digest, Md5};
use std::borrow::Cow;
use std::io::Read;

/// Magic of an uncompressed bundle.
pub const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// Magic of a compressed bundle.
pub const CCOB_MAGIC: &[u8; 4] = b"CCOB";

/// Compression method of a CCOB bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// zlib stream (method 0).
    Zlib,
    /// zstd frame (method 1).
    Zstd,
}

impl Method {
    fn from_u16(v: u16) -> Option<Method> {
        match v {
            0 => Some(Method::Zlib),
            1 => Some(Method::Zstd),
            _ => None,
        }
    }

    fn to_u16(self) -> u16 {
        match self {
            Method::Zlib => 0,
            Method::Zstd => 1,
        }
    }

    /// The default level gfxkit compresses with: 3 for zstd (LLVM's bundler default), 6 for zlib.
    pub fn default_level(self) -> i32 {
        match self {
            Method::Zlib => 6,
            Method::Zstd => 3,
        }
    }
}

/// How a bundle is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// An uncompressed bundle.
    Uncompressed,
    /// A CCOB bundle.
    Compressed {
        /// CCOB format version (1, 2 or 3).
        version: u16,
        /// Compression method.
        method: Method,
    },
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Encoding::Uncompressed => f.write_str("uncompressed"),
            Encoding::Compressed { version, method } => {
                let m = match method {
                    Method::Zlib => "zlib",
                    Method::Zstd => "zstd",
                };
                write!(f, "ccob-v{version}-{m}")
            }
        }
    }
}

pub(crate) fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    let b = d.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    let b = d.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(crate) fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    let b = d.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

fn usize_of(v: u64, at: usize, what: &'static str) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::at(at as u64, ErrorKind::Truncated { what }))
}

/// A bundle found in a region of bytes.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// Offset of the bundle in the region.
    pub offset: usize,
    /// The bundle's bytes, exactly.
    pub bytes: &'a [u8],
    /// How it is stored.
    pub encoding: Encoding,
}

/// The fixed header of a CCOB bundle.
#[derive(Debug, Clone, Copy)]
struct CcobHeader {
    version: u16,
    method: Method,
    total: Option<u64>,
    uncompressed: u64,
    hash: u64,
    payload: usize,
}

fn ccob_header(b: &[u8]) -> Result<CcobHeader> {
    let trunc = |what| Error::at(0, ErrorKind::Truncated { what });
    if b.get(..4) != Some(&CCOB_MAGIC[..]) {
        return fail(0, ErrorKind::BadCompressed("no CCOB magic".into()));
    }
    let version = u16_at(b, 4).ok_or_else(|| trunc("CCOB header"))?;
    let m = u16_at(b, 6).ok_or_else(|| trunc("CCOB header"))?;
    let method = Method::from_u16(m).ok_or_else(|| {
        Error::at(
            6,
            ErrorKind::BadCompressed(format!("unknown method {m}, expected 0 (zlib) or 1 (zstd)")),
        )
    })?;
    let h = |v: Option<u64>| v.ok_or_else(|| trunc("CCOB header"));
    let (total, uncompressed, hash, payload) = match version {
        1 => (None, h(u32_at(b, 8).map(u64::from))?, h(u64_at(b, 12))?, 20),
        2 => (
            Some(h(u32_at(b, 8).map(u64::from))?),
            h(u32_at(b, 12).map(u64::from))?,
            h(u64_at(b, 16))?,
            24,
        ),
        3 => (
            Some(h(u64_at(b, 8))?),
            h(u64_at(b, 16))?,
            h(u64_at(b, 24))?,
            32,
        ),
        v => {
            return fail(
                4,
                ErrorKind::BadCompressed(format!("unknown version {v}, expected 1, 2 or 3")),
            )
        }
    };
    if let Some(t) = total {
        if t < payload as u64 {
            return fail(
                8,
                ErrorKind::BadCompressed(format!(
                    "total size {t} is smaller than the {payload}-byte header"
                )),
            );
        }
    }
    if uncompressed > limits::MAX_UNCOMPRESSED {
        return fail(
            8,
            ErrorKind::BadCompressed(format!(
                "declared uncompressed size {uncompressed} exceeds the limit {}",
                limits::MAX_UNCOMPRESSED
            )),
        );
    }
    Ok(CcobHeader {
        version,
        method,
        total,
        uncompressed,
        hash,
        payload,
    })
}

/// The length of the uncompressed bundle at the start of `b` (end of its furthest entry).
fn uncompressed_extent(b: &[u8]) -> Result<usize> {
    let (entries, header_end) = parse_header(b)?;
    let mut end = header_end;
    for e in &entries {
        end = end.max(e.offset + e.data.len());
    }
    Ok(end)
}

/// Length of the v1 CCOB bundle at the start of `b` (v1 records no total size: the stream
/// itself says where it ends).
fn v1_extent(b: &[u8], hdr: &CcobHeader) -> Result<usize> {
    let payload = &b[hdr.payload..];
    match hdr.method {
        Method::Zstd => match zstd::zstd_safe::find_frame_compressed_size(payload) {
            Ok(n) => Ok(hdr.payload + n),
            Err(code) => fail(
                hdr.payload as u64,
                ErrorKind::BadCompressed(format!(
                    "zstd frame cannot be measured: {}",
                    zstd::zstd_safe::get_error_name(code)
                )),
            ),
        },
        Method::Zlib => {
            let mut dec = flate2::read::ZlibDecoder::new(payload);
            let mut sink = std::io::sink();
            let cap = hdr.uncompressed.saturating_add(1);
            let n = std::io::copy(&mut (&mut dec).take(cap), &mut sink).map_err(|e| {
                Error::at(
                    hdr.payload as u64,
                    ErrorKind::BadCompressed(format!("zlib stream: {e}")),
                )
            })?;
            if n != hdr.uncompressed {
                return fail(
                    hdr.payload as u64,
                    ErrorKind::BadCompressed(format!(
                        "zlib stream holds {n} bytes, header says {}",
                        hdr.uncompressed
                    )),
                );
            }
            let used = usize::try_from(dec.total_in()).unwrap_or(usize::MAX);
            Ok(hdr.payload.saturating_add(used).min(b.len()))
        }
    }
}

/// Finds the bundles in `region`: bundles back to back, separated by zero padding. Offsets in
/// errors are relative to `region`.
pub fn scan(region: &[u8]) -> Result<Vec<Found<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < region.len() {
        if region[pos] == 0 {
            pos += 1;
            continue;
        }
        if out.len() >= limits::MAX_BUNDLES {
            return fail(
                pos as u64,
                ErrorKind::BadBundle(format!("more than {} bundles", limits::MAX_BUNDLES)),
            );
        }
        let rest = &region[pos..];
        let (len, encoding) = if rest.starts_with(BUNDLE_MAGIC) {
            (
                uncompressed_extent(rest).map_err(|e| e.shifted(pos as u64))?,
                Encoding::Uncompressed,
            )
        } else if rest.starts_with(CCOB_MAGIC) {
            let hdr = ccob_header(rest).map_err(|e| e.shifted(pos as u64))?;
            let len = match hdr.total {
                Some(t) => {
                    let t = usize_of(t, pos, "compressed bundle")?;
                    if t > rest.len() {
                        return fail(
                            pos as u64,
                            ErrorKind::Truncated {
                                what: "compressed bundle",
                            },
                        );
                    }
                    t
                }
                None => v1_extent(rest, &hdr).map_err(|e| e.shifted(pos as u64))?,
            };
            (
                len,
                Encoding::Compressed {
                    version: hdr.version,
                    method: hdr.method,
                },
            )
        } else {
            let found = rest[..rest.len().min(8)].to_vec();
            return fail(pos as u64, ErrorKind::UnknownBytes { found });
        };
        out.push(Found {
            offset: pos,
            bytes: &rest[..len],
            encoding,
        });
        pos += len.max(1);
    }
    Ok(out)
}

/// One entry of an uncompressed bundle.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Entry ID, such as `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`.
    pub id: &'a str,
    /// Offset of the payload in the bundle.
    pub offset: usize,
    /// The payload (a code object, or nothing for the host entry).
    pub data: &'a [u8],
}

/// Reads the header of the uncompressed bundle at the start of `b`: its entries, and where
/// the header ends.
pub fn parse_header(b: &[u8]) -> Result<(Vec<Entry<'_>>, usize)> {
    let trunc = |at: usize, what| Error::at(at as u64, ErrorKind::Truncated { what });
    if !b.starts_with(BUNDLE_MAGIC) {
        return fail(0, ErrorKind::BadBundle("no bundle magic".into()));
    }
    let count = u64_at(b, 24).ok_or_else(|| trunc(24, "bundle header"))?;
    // Each entry record needs at least 24 bytes.
    if count > limits::MAX_ENTRIES || count.saturating_mul(24) > b.len() as u64 {
        return fail(
            24,
            ErrorKind::BadBundle(format!(
                "entry count {count} is larger than the data allows (limit {})",
                limits::MAX_ENTRIES
            )),
        );
    }
    let mut entries = Vec::with_capacity(count as usize);
    let mut pos = 32usize;
    for i in 0..count as usize {
        let rec = pos;
        let off = u64_at(b, pos).ok_or_else(|| trunc(rec, "entry record"))?;
        let size = u64_at(b, pos + 8).ok_or_else(|| trunc(rec, "entry record"))?;
        let id_len = u64_at(b, pos + 16).ok_or_else(|| trunc(rec, "entry record"))?;
        if id_len > limits::MAX_ID_LEN {
            return fail(
                (rec + 16) as u64,
                ErrorKind::BadBundle(format!(
                    "entry {i}: ID length {id_len} exceeds {}",
                    limits::MAX_ID_LEN
                )),
            );
        }
        let id_start = pos + 24;
        let id_end = id_start + id_len as usize;
        let id = b
            .get(id_start..id_end)
            .ok_or_else(|| trunc(id_start, "entry ID"))?;
        let id = std::str::from_utf8(id).map_err(|_| {
            Error::at(
                id_start as u64,
                ErrorKind::BadBundle(format!("entry {i}: ID is not UTF-8")),
            )
        })?;
        let end = off.checked_add(size).filter(|&e| e <= b.len() as u64);
        let Some(end) = end else {
            return fail(
                rec as u64,
                ErrorKind::BadBundle(format!(
                    "entry {i} ({id}): payload at offset {off} size {size} runs past the end of the data ({} bytes)",
                    b.len()
                )),
            );
        };
        entries.push(Entry {
            id,
            offset: off as usize,
            data: &b[off as usize..end as usize],
        });
        pos = id_end;
    }
    Ok((entries, pos))
}

/// The uncompressed bundle inside `found`: borrowed when it is stored uncompressed, else
/// decompressed (checked against the declared size and the MD5 hash).
pub fn uncompressed<'a>(found: &Found<'a>) -> Result<Cow<'a, [u8]>> {
    match found.encoding {
        Encoding::Uncompressed => Ok(Cow::Borrowed(found.bytes)),
        Encoding::Compressed { .. } => decompress(found.bytes).map(Cow::Owned),
    }
}

/// Decompresses the CCOB bundle `b` (exactly its bytes).
pub fn decompress(b: &[u8]) -> Result<Vec<u8>> {
    let hdr = ccob_header(b)?;
    let payload = b.get(hdr.payload..).unwrap_or_default();
    let declared = hdr.uncompressed;
    // Grow with the data actually produced; never allocate from the declared size alone.
    let mut out = Vec::with_capacity((declared.min(1 << 26)) as usize);
    let bad = |msg: String| Error::at(hdr.payload as u64, ErrorKind::BadCompressed(msg));
    match hdr.method {
        Method::Zstd => {
            let mut dec = zstd::stream::read::Decoder::new(payload)
                .map_err(|e| bad(format!("zstd: {e}")))?
                .single_frame();
            dec.window_log_max(31)
                .map_err(|e| bad(format!("zstd: {e}")))?;
            dec.take(declared.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| bad(format!("zstd: {e}")))?;
        }
        Method::Zlib => {
            flate2::read::ZlibDecoder::new(payload)
                .take(declared.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| bad(format!("zlib: {e}")))?;
        }
    }
    if out.len() as u64 != declared {
        return Err(bad(format!(
            "decompressed to {} bytes, header declares {declared}",
            out.len()
        )));
    }
    let h = hash(&out);
    if h != hdr.hash {
        return Err(bad(format!(
            "hash of the decompressed data is {h:#018x}, header says {:#018x}",
            hdr.hash
        )));
    }
    Ok(out)
}

/// The CCOB hash of `data`: the first 8 bytes of its MD5, little-endian.
pub fn hash(data: &[u8]) -> u64 {
    let d = Md5::digest(data);
    let mut a = [0u8; 8];
    a.copy_from_slice(&d[..8]);
    u64::from_le_bytes(a)
}

/// Compresses the uncompressed bundle `data` into a CCOB bundle.
pub fn compress(data: &[u8], version: u16, method: Method, level: i32) -> Result<Vec<u8>> {
    // The payload comes from gfxkit-bundle's codec, with the parameters clang's bundler uses
    // (zstd with long-distance matching).
    // A large bundle is compressed by zstd's worker threads; zstd's output does not depend on
    // how many workers there are (any number from one up), so it is the same on every machine.
    let threads = if data.len() >= 16 << 20 {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    } else {
        0
    };
    let m = match method {
        Method::Zstd => gfxkit_bundle::Method::Zstd,
        Method::Zlib => gfxkit_bundle::Method::Zlib,
    };
    let payload = gfxkit_bundle::codec::compress(m, level, threads, data)
        .map_err(|e| Error::at(0, ErrorKind::Compress(e.to_string())))?;
    let too_large = |what: &str| {
        Error::at(
            0,
            ErrorKind::TooLarge(format!(
                "{what} does not fit a CCOB v{version} header; use --ccob-version 3"
            )),
        )
    };
    let ulen = data.len() as u64;
    let h = hash(data);
    let mut out = Vec::with_capacity(payload.len() + 32);
    out.extend_from_slice(CCOB_MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&method.to_u16().to_le_bytes());
    match version {
        1 => {
            let u = u32::try_from(ulen).map_err(|_| too_large("uncompressed size"))?;
            out.extend_from_slice(&u.to_le_bytes());
        }
        2 => {
            let total = u32::try_from(payload.len() as u64 + 24)
                .map_err(|_| too_large("compressed size"))?;
            let u = u32::try_from(ulen).map_err(|_| too_large("uncompressed size"))?;
            out.extend_from_slice(&total.to_le_bytes());
            out.extend_from_slice(&u.to_le_bytes());
        }
        3 => {
            out.extend_from_slice(&(payload.len() as u64 + 32).to_le_bytes());
            out.extend_from_slice(&ulen.to_le_bytes());
        }
        v => {
            return fail(
                0,
                ErrorKind::Unsupported(format!("CCOB version {v} (1, 2 or 3 are known)")),
            )
        }
    }
    out.extend_from_slice(&h.to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Writes an uncompressed bundle holding `entries` (ID, payload) in that order, each payload at
/// an offset aligned to `align`, the way clang's bundler lays it out.
pub fn write_uncompressed(entries: &[(&str, &[u8])], align: usize) -> Vec<u8> {
    let align = align.max(1);
    let mut h = 32usize;
    for (id, _) in entries {
        h += 24 + id.len();
    }
    let mut offsets = Vec::with_capacity(entries.len());
    let mut pos = h;
    for (_, data) in entries {
        pos = pos.div_ceil(align) * align;
        offsets.push(pos);
        pos += data.len();
    }
    let mut out = vec![0u8; pos];
    out[..24].copy_from_slice(BUNDLE_MAGIC);
    out[24..32].copy_from_slice(&(entries.len() as u64).to_le_bytes());
    let mut p = 32;
    for ((id, data), off) in entries.iter().zip(&offsets) {
        out[p..p + 8].copy_from_slice(&(*off as u64).to_le_bytes());
        out[p + 8..p + 16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        out[p + 16..p + 24].copy_from_slice(&(id.len() as u64).to_le_bytes());
        out[p + 24..p + 24 + id.len()].copy_from_slice(id.as_bytes());
        p += 24 + id.len();
        out[*off..*off + data.len()].copy_from_slice(data);
    }
    out
}

/// The payload alignment a bundle was written with: the largest power of two up to 4096 that
/// divides every entry offset.
pub fn infer_alignment(entries: &[Entry<'_>]) -> usize {
    let mut align = 4096usize;
    for e in entries {
        while align > 1 && e.offset % align != 0 {
            align /= 2;
        }
    }
    align
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let a = vec![7u8; 100];
        let entries: Vec<(&str, &[u8])> = vec![
            ("host-x86_64-unknown-linux--", &[]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &a),
        ];
        let b = write_uncompressed(&entries, 4096);
        assert_eq!(b.len(), 4096 + 100);
        let (parsed, _) = parse_header(&b).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].offset, 4096);
        assert_eq!(parsed[1].data, &a[..]);
        assert_eq!(infer_alignment(&parsed), 4096);
        assert_eq!(write_uncompressed(&entries, infer_alignment(&parsed)), b);
        for (version, method) in [(1, Method::Zstd), (2, Method::Zlib), (3, Method::Zstd)] {
            let c = compress(&b, version, method, 3).unwrap();
            let mut region = c.clone();
            region.extend_from_slice(&[0; 13]);
            region.extend_from_slice(&b);
            let found = scan(&region).unwrap();
            assert_eq!(found.len(), 2);
            assert_eq!(found[0].bytes.len(), c.len());
            assert_eq!(found[1].offset, c.len() + 13);
            assert_eq!(uncompressed(&found[0]).unwrap().as_ref(), &b[..]);
        }
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let a = vec![1u8; 10];
        let b = write_uncompressed(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &a)], 8);
        for cut in 0..b.len() {
            let _ = scan(&b[..cut]);
        }
        let c = compress(&b, 2, Method::Zstd, 3).unwrap();
        for cut in 0..c.len() {
            if let Ok(f) = scan(&c[..cut]) {
                for x in f {
                    let _ = uncompressed(&x);
                }
            }
        }
        let mut huge = b.clone();
        huge[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(scan(&huge).is_err());
        let mut bad_hash = c.clone();
        bad_hash[16] ^= 1;
        let e = decompress(&bad_hash).unwrap_err();
        assert!(e.to_string().contains("hash"), "{e}");
        let e = scan(b"\0\0\0xyz").unwrap_err();
        assert_eq!(e.offset, 3);
    }
}
