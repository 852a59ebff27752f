//! Compressed offload bundles ("CCOB", written by clang 18 and later with `--offload-compress`).
//!
//! | field | v1 | v2 | v3 |
//! |---|---|---|---|
//! | magic `CCOB` | 0 | 0 | 0 |
//! | u16 version | 4 | 4 | 4 |
//! | u16 method (0 zlib, 1 zstd) | 6 | 6 | 6 |
//! | total size incl. header | none | u32 @8 | u64 @8 |
//! | uncompressed size | u32 @8 | u32 @12 | u64 @16 |
//! | hash: first 8 bytes of MD5(uncompressed), LE | @12 | @16 | @24 |
//! | payload starts | 20 | 24 | 32 |
//!
//! The payload is one zstd frame or zlib stream holding a whole uncompressed bundle. A v2/v3
//! bundle is bounded by its total size (never by scanning for the next magic: compressed data
//! may contain the bytes `CCOB`); a v1 bundle ends where its frame or stream ends.

use crate::codec::{self, Method};
use crate::error::{Error, ErrorKind, Result};
use crate::limits::MAX_UNCOMPRESSED_SIZE;
use gfxkit_bytes::{Cursor, OutOfBounds};
use std::borrow::Cow;

/// Magic at the start of a compressed bundle.
pub const MAGIC: &[u8; 4] = b"CCOB";

/// Version clang 19 writes, and the default here.
pub const DEFAULT_VERSION: u16 = 2;

/// Whether `data` starts with the CCOB magic.
pub fn is_ccob(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// A parsed CCOB header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Format version (1, 2 or 3).
    pub version: u16,
    /// Compression method.
    pub method: Method,
    /// Total size including the header (v2, v3).
    pub total_size: Option<u64>,
    /// Size of the uncompressed bundle.
    pub uncompressed_size: u64,
    /// Stored hash (first 8 bytes of the MD5 of the uncompressed bundle, little-endian).
    pub hash: u64,
}

/// Header length of a version (20, 24 or 32 bytes).
pub fn header_len(version: u16) -> Option<u64> {
    match version {
        1 => Some(20),
        2 => Some(24),
        3 => Some(32),
        _ => None,
    }
}

impl Header {
    /// Parses the header at the start of `data` without decompressing. Checks the magic,
    /// version, method, and for v2/v3 that the total size covers the header and fits in `data`.
    pub fn parse(data: &[u8]) -> Result<Header> {
        Self::parse_at(Cursor::new(data))
    }

    /// [`parse`](Self::parse) of the bytes of `c`, with error offsets absolute (from
    /// `c.base()`, where the bundle starts in its file).
    pub fn parse_at(c: Cursor<'_>) -> Result<Header> {
        let data = c.bytes();
        if !is_ccob(data) {
            if data.len() < 4 && MAGIC.starts_with(data) {
                return Err(Error::truncated(
                    "compressed bundle magic",
                    4,
                    data.len() as u64,
                    c.inside(0),
                ));
            }
            return Err(Error::at(
                ErrorKind::BadMagic { expected: "CCOB" },
                c.inside(0),
            ));
        }
        if data.len() < 8 {
            return Err(Error::truncated(
                "compressed bundle header",
                8,
                data.len() as u64,
                c.inside(0),
            ));
        }
        let short = |e: OutOfBounds| {
            Error::truncated("compressed bundle header", 8, data.len() as u64, e.offset())
        };
        let version = c.u16(4).map_err(short)?;
        let hlen = header_len(version)
            .ok_or_else(|| Error::at(ErrorKind::UnsupportedCcobVersion(version), c.abs(4)))?;
        let method_raw = c.u16(6).map_err(short)?;
        let method = Method::from_u16(method_raw)
            .ok_or_else(|| Error::at(ErrorKind::UnknownMethod(method_raw), c.abs(6)))?;
        if (data.len() as u64) < hlen {
            return Err(Error::truncated(
                "compressed bundle header",
                hlen,
                data.len() as u64,
                c.inside(0),
            ));
        }
        let cut = |e: OutOfBounds| {
            Error::truncated(
                "compressed bundle header",
                hlen,
                data.len() as u64,
                e.offset(),
            )
        };
        let u32_at = |p| c.u32(p).map(u64::from).map_err(cut);
        let u64_at = |p| c.u64(p).map_err(cut);
        let (total_size, uncompressed_size, hash) = match version {
            1 => (None, u32_at(8)?, u64_at(12)?),
            2 => (Some(u32_at(8)?), u32_at(12)?, u64_at(16)?),
            _ => (Some(u64_at(8)?), u64_at(16)?, u64_at(24)?),
        };
        if let Some(total) = total_size {
            if total < hlen || total > data.len() as u64 {
                return Err(Error::at(
                    ErrorKind::BadTotalSize {
                        total,
                        header_len: hlen,
                        available: data.len() as u64,
                    },
                    c.abs(8),
                ));
            }
        }
        Ok(Header {
            version,
            method,
            total_size,
            uncompressed_size,
            hash,
        })
    }

    /// This header's length.
    pub fn header_len(&self) -> u64 {
        header_len(self.version).unwrap_or(32)
    }

    /// The compressed payload: up to the total size for v2/v3, the rest of `data` for v1.
    pub fn payload<'d>(&self, data: &'d [u8]) -> &'d [u8] {
        let start = (self.header_len() as usize).min(data.len());
        let end = self
            .total_size
            .map_or(data.len(), |t| (t as usize).min(data.len()))
            .max(start);
        &data[start..end]
    }

    /// Bytes this compressed bundle occupies in `data`: the total size for v2/v3; for v1 the
    /// header plus the zstd frame (read from block headers) or zlib stream (decoded, bounded by
    /// the declared size, which may not pass `max_uncompressed`; see
    /// [`Limits`](crate::limits::Limits)).
    pub fn extent(&self, data: &[u8], max_uncompressed: u64) -> Result<u64> {
        self.extent_at(Cursor::new(data), max_uncompressed)
    }

    /// [`extent`](Self::extent) of the bundle whose bytes `c` holds, with error offsets
    /// absolute (from `c.base()`).
    pub fn extent_at(&self, c: Cursor<'_>, max_uncompressed: u64) -> Result<u64> {
        if let Some(t) = self.total_size {
            return Ok(t);
        }
        let payload = self.payload(c.bytes());
        let n = match self.method {
            Method::Zstd => codec::zstd_frame_len(payload),
            Method::Zlib => {
                // Decoded without keeping the output: a small scratch buffer, whatever the
                // header declares.
                self.check_limit(max_uncompressed, c.base())?;
                codec::decoded_extent(self.method, payload, self.uncompressed_size)
            }
        }?;
        Ok(self.header_len() + n)
    }

    /// Refuses a declared size above `limit`, naming the field of the header at `base`.
    fn check_limit(&self, limit: u64, base: u64) -> Result<()> {
        if self.uncompressed_size > limit {
            return Err(Error::at(
                ErrorKind::TooLarge {
                    declared: self.uncompressed_size,
                    limit,
                },
                base.saturating_add(if self.version == 3 { 16 } else { 12 }),
            ));
        }
        Ok(())
    }
}

/// What to do when the stored hash does not match the decompressed data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashCheck {
    /// A mismatch is an error (default).
    #[default]
    Error,
    /// A mismatch is reported in [`Decompressed::hash_ok`] only.
    Warn,
}

/// Options for decompression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecompressOptions {
    /// Hash mismatch handling.
    pub hash: HashCheck,
    /// Largest declared uncompressed size accepted; by default
    /// [`MAX_UNCOMPRESSED_SIZE`] (a caller's
    /// [`Limits`](crate::limits::Limits) gives its own through
    /// [`Limits::decompress_options`](crate::limits::Limits::decompress_options)).
    pub max_uncompressed: u64,
}

impl Default for DecompressOptions {
    fn default() -> Self {
        DecompressOptions {
            hash: HashCheck::Error,
            max_uncompressed: MAX_UNCOMPRESSED_SIZE,
        }
    }
}

/// A decompressed CCOB bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decompressed {
    /// The header.
    pub header: Header,
    /// The uncompressed bundle.
    pub data: Vec<u8>,
    /// Bytes the compressed bundle occupies in the input (header and payload).
    pub extent: u64,
    /// Hash of `data` computed the same way as the stored one.
    pub computed_hash: u64,
}

impl Decompressed {
    /// Whether the stored hash matches the data.
    pub fn hash_ok(&self) -> bool {
        self.computed_hash == self.header.hash
    }
}

/// Decompresses the CCOB bundle at the start of `data`. The output is bounded by the declared
/// size, whose exactness is checked; the hash is verified (see [`HashCheck`]).
pub fn decompress_ccob(data: &[u8], opts: &DecompressOptions) -> Result<Decompressed> {
    decompress_ccob_at(Cursor::new(data), opts)
}

/// [`decompress_ccob`] of the bytes of `c`, with the header's error offsets absolute (from
/// `c.base()`); errors about the payload have no offset (the caller places them at the bundle).
pub fn decompress_ccob_at(c: Cursor<'_>, opts: &DecompressOptions) -> Result<Decompressed> {
    let data = c.bytes();
    let header = Header::parse_at(c)?;
    header.check_limit(opts.max_uncompressed, c.base())?;
    let payload = header.payload(data);
    let (out, used, computed_hash) =
        codec::decompress_hashed(header.method, payload, header.uncompressed_size)?;
    let extent = header.checked_end(used, computed_hash, opts)?;
    Ok(Decompressed {
        header,
        data: out,
        extent,
        computed_hash,
    })
}

/// Decompresses the CCOB bundle at the start of `data` with every check of [`decompress_ccob`]
/// (declared size exact, payload ending at the total size) but the hash, which is not
/// computed: for a caller that compares the output byte for byte with data it already trusts,
/// such as a rewrite reading back the bundles it wrote and comparing each entry with the input
/// it came from. There the hash would repeat that comparison at the cost of an MD5 pass over
/// the bundle. Returns the header, the uncompressed bundle and the bytes the compressed bundle
/// occupies in `data`. Anything read from an untrusted source goes through
/// [`decompress_ccob`].
pub fn decompress_ccob_unhashed(
    data: &[u8],
    opts: &DecompressOptions,
) -> Result<(Header, Vec<u8>, u64)> {
    let mut out = Vec::new();
    let (header, extent) = decompress_ccob_unhashed_into(Cursor::new(data), opts, &mut out)?;
    Ok((header, out, extent))
}

/// [`decompress_ccob_unhashed`] of the bytes of `c` into `out` (cleared first; its allocation
/// is reused when it is large enough: see [`codec::decompress_into`]). The header's error
/// offsets are absolute (from `c.base()`). Returns the header and the extent.
pub fn decompress_ccob_unhashed_into(
    c: Cursor<'_>,
    opts: &DecompressOptions,
    out: &mut Vec<u8>,
) -> Result<(Header, u64)> {
    let data = c.bytes();
    let header = Header::parse_at(c)?;
    header.check_limit(opts.max_uncompressed, c.base())?;
    let payload = header.payload(data);
    let used = codec::decompress_into(header.method, payload, header.uncompressed_size, out)?;
    // The stored hash stands for the computed one: only the size and extent are checked.
    let extent = header.checked_end(used, header.hash, opts)?;
    Ok((header, extent))
}

impl Header {
    /// After decoding: the payload must end at the total size (v2, v3) and, unless `opts`
    /// says warn, the hash must match. Returns the extent.
    fn checked_end(&self, used: u64, computed_hash: u64, opts: &DecompressOptions) -> Result<u64> {
        let end = self.header_len() + used;
        if let Some(total) = self.total_size {
            if end != total {
                return Err(Error::at(
                    ErrorKind::Decompress {
                        method: self.method.name(),
                        message: format!(
                            "payload ends at {end:#x} but the header's total size is {total:#x}"
                        ),
                    },
                    end,
                ));
            }
        }
        if computed_hash != self.hash && opts.hash == HashCheck::Error {
            return Err(Error::at(
                ErrorKind::HashMismatch {
                    stored: self.hash,
                    computed: computed_hash,
                },
                match self.version {
                    3 => 24,
                    2 => 16,
                    _ => 12,
                },
            ));
        }
        Ok(end)
    }
}

/// What [`decompress_ccob_to`] found: everything of [`Decompressed`] but the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    /// The header.
    pub header: Header,
    /// Bytes the compressed bundle occupies in the input (header and payload).
    pub extent: u64,
    /// Hash of the output computed the same way as the stored one.
    pub computed_hash: u64,
}

impl Streamed {
    /// Whether the stored hash matches the data.
    pub fn hash_ok(&self) -> bool {
        self.computed_hash == self.header.hash
    }
}

/// Decompresses the CCOB bundle at the start of `data` into `sink`, chunk by chunk, with the
/// checks of [`decompress_ccob`] (declared size exact, total size, hash as `opts` says).
///
/// The output is not kept: memory is the codec's window plus a few chunks, so a bundle is
/// written out with about its own size in memory, not twice that. The checks that need the
/// whole output (size, hash) can only fail after `sink` got bytes: write to a temporary file
/// and keep it only when this returns `Ok`. See [`codec::decompress_to`].
pub fn decompress_ccob_to(
    data: &[u8],
    opts: &DecompressOptions,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<Streamed> {
    let header = Header::parse(data)?;
    header.check_limit(opts.max_uncompressed, 0)?;
    let payload = header.payload(data);
    let (used, computed_hash) =
        codec::decompress_to(header.method, payload, header.uncompressed_size, sink)?;
    let extent = header.checked_end(used, computed_hash, opts)?;
    Ok(Streamed {
        header,
        extent,
        computed_hash,
    })
}

/// Returns `data` decompressed if it is a CCOB bundle, or `data` itself otherwise (as clang does
/// with any input).
pub fn decompress<'d>(data: &'d [u8], opts: &DecompressOptions) -> Result<Cow<'d, [u8]>> {
    if is_ccob(data) {
        Ok(Cow::Owned(decompress_ccob(data, opts)?.data))
    } else {
        Ok(Cow::Borrowed(data))
    }
}

/// Decompresses only the first `len` bytes (or fewer, if the bundle is smaller) of the CCOB
/// bundle at the start of `data`: enough to read an uncompressed bundle header without
/// decompressing the payloads. The hash cannot be checked.
pub fn decompress_prefix(
    data: &[u8],
    len: usize,
    opts: &DecompressOptions,
) -> Result<(Header, Vec<u8>)> {
    decompress_prefix_at(Cursor::new(data), len, opts)
}

/// [`decompress_prefix`] of the bytes of `c`, with the header's error offsets absolute (from
/// `c.base()`).
pub fn decompress_prefix_at(
    c: Cursor<'_>,
    len: usize,
    opts: &DecompressOptions,
) -> Result<(Header, Vec<u8>)> {
    let data = c.bytes();
    let header = Header::parse_at(c)?;
    header.check_limit(opts.max_uncompressed, c.base())?;
    let payload = header.payload(data);
    let (out, _) = codec::decompress(header.method, payload, header.uncompressed_size, Some(len))?;
    Ok((header, out))
}

/// Options for compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressOptions {
    /// Method (default zstd).
    pub method: Method,
    /// Level; `None` = the method's default (3 for zstd, 6 for zlib).
    pub level: Option<i32>,
    /// CCOB version, 2 (default) or 3. A v2 request is written as v3 when a size does not fit
    /// v2's 32-bit fields. 1 (no total size; for very old readers) is written on request only,
    /// and refused when the bundle does not fit its 32-bit size field.
    pub version: u16,
    /// zstd worker threads; 0 (default) compresses on the calling thread, which reproduces
    /// clang's bytes exactly. Ignored for zlib.
    pub threads: u32,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            method: Method::Zstd,
            level: None,
            version: DEFAULT_VERSION,
            threads: 0,
        }
    }
}

/// The CCOB version `COMPRESSED_BUNDLE_FORMAT_VERSION` asks for, as clang reads it: `2` or
/// `3`; anything else is `None` (clang warns and keeps its default, v2).
pub fn version_from_env_value(value: &str) -> Option<u16> {
    match value.parse::<u16>() {
        Ok(v @ (2 | 3)) => Some(v),
        _ => None,
    }
}

/// The version actually written for a request: v2 becomes v3 when the uncompressed size or the
/// total size (24-byte header plus `compressed_len`) does not fit v2's 32-bit fields.
pub fn effective_version(requested: u16, uncompressed_len: u64, compressed_len: u64) -> u16 {
    let total_v2 = compressed_len.saturating_add(24);
    if requested == 2 && (uncompressed_len > u32::MAX as u64 || total_v2 > u32::MAX as u64) {
        3
    } else {
        requested
    }
}

/// Bundles at least this large are hashed on a second thread while they are compressed.
const PARALLEL_HASH_MIN: usize = 1 << 20;

/// Compresses an uncompressed bundle (or any bytes) into a CCOB bundle.
pub fn compress(bundle: &[u8], opts: &CompressOptions) -> Result<Vec<u8>> {
    compress_maybe_hashed(bundle, None, opts)
}

/// Like [`compress`], with the CCOB hash of `bundle` already known: [`crate::hash::truncated`]
/// of many bundles at once, or the hash of a CCOB bundle `bundle` was decompressed from and
/// checked against. It is written as given, not computed again.
pub fn compress_hashed(bundle: &[u8], hash: u64, opts: &CompressOptions) -> Result<Vec<u8>> {
    compress_maybe_hashed(bundle, Some(hash), opts)
}

fn compress_maybe_hashed(
    bundle: &[u8],
    hash: Option<u64>,
    opts: &CompressOptions,
) -> Result<Vec<u8>> {
    if !matches!(opts.version, 1..=3) {
        return Err(Error::new(ErrorKind::UnwritableVersion(opts.version)));
    }
    let size = bundle.len() as u64;
    // v1 has no larger form to move to: its one 32-bit size field must hold the bundle.
    if opts.version == 1 && size > u32::MAX as u64 {
        return Err(Error::new(ErrorKind::SizeExceedsVersion {
            what: "uncompressed size",
            size,
            version: 1,
        }));
    }
    let level = opts.level.unwrap_or(opts.method.default_level());
    // The hash on a second thread while the bundle is compressed: one read of the input each,
    // at the same time.
    let (hash, body) = match hash {
        Some(h) => (h, codec::compress(opts.method, level, opts.threads, bundle)),
        None if bundle.len() < PARALLEL_HASH_MIN => (
            codec::truncated_md5(bundle),
            codec::compress(opts.method, level, opts.threads, bundle),
        ),
        None => std::thread::scope(|s| {
            let hasher = s.spawn(|| codec::truncated_md5(bundle));
            let body = codec::compress(opts.method, level, opts.threads, bundle);
            let hash = hasher
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (hash, body)
        }),
    };
    let body = body?;
    let version = effective_version(opts.version, size, body.len() as u64);
    let hlen = header_len(version).unwrap_or(32);
    let total = hlen
        .checked_add(body.len() as u64)
        .ok_or(Error::new(ErrorKind::Overflow))?;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&opts.method.as_u16().to_le_bytes());
    if version == 1 {
        out.extend_from_slice(&(size as u32).to_le_bytes());
    } else if version == 2 {
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(size as u32).to_le_bytes());
    } else {
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
    }
    out.extend_from_slice(&hash.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Compresses several bundles at once, one per core (rayon), each as [`compress`] would: for
/// the many bundles of a `.hip_fatbin`, where per-bundle threads would not keep every core busy.
/// Their hashes are computed first, side by side ([`crate::hash::truncated`]). Results are in
/// input order.
pub fn compress_all(bundles: &[&[u8]], opts: &CompressOptions) -> Vec<Result<Vec<u8>>> {
    use rayon::prelude::*;
    let hashes = crate::hash::truncated(bundles);
    bundles
        .par_iter()
        .zip(hashes)
        .map(|(b, h)| compress_hashed(b, h, opts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_becomes_v3_when_a_size_does_not_fit_32_bits() {
        assert_eq!(effective_version(2, 1000, 100), 2);
        assert_eq!(effective_version(2, u32::MAX as u64, 100), 2);
        assert_eq!(effective_version(2, u32::MAX as u64 + 1, 100), 3);
        assert_eq!(effective_version(2, 100, u32::MAX as u64 - 24), 2);
        assert_eq!(effective_version(2, 100, u32::MAX as u64 - 23), 3);
        assert_eq!(effective_version(3, 1, 1), 3);
    }

    #[test]
    fn many_at_once_in_order() {
        let inputs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 1000 + i as usize]).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let z = compress_all(&refs, &CompressOptions::default());
        let zs: Vec<Vec<u8>> = z.into_iter().map(|r| r.unwrap()).collect();
        for (a, b) in zs.iter().zip(&refs) {
            assert_eq!(a, &compress(b, &CompressOptions::default()).unwrap());
        }
        for (z, want) in zs.iter().zip(&inputs) {
            let d = decompress_ccob(z, &DecompressOptions::default()).unwrap();
            assert_eq!(&d.data, want);
        }
    }

    #[test]
    fn v1_is_written_on_request_and_reads_back() {
        let data = crate::write_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &[7u8; 5000])], 4096)
            .unwrap();
        for method in [Method::Zstd, Method::Zlib] {
            let opts = CompressOptions {
                method,
                version: 1,
                ..CompressOptions::default()
            };
            let z = compress(&data, &opts).unwrap();
            let h = Header::parse(&z).unwrap();
            assert_eq!((h.version, h.total_size), (1, None));
            assert_eq!(h.extent(&z, MAX_UNCOMPRESSED_SIZE).unwrap(), z.len() as u64);
            let d = decompress_ccob(&z, &DecompressOptions::default()).unwrap();
            assert_eq!(d.data, data);
        }
        let four = CompressOptions {
            version: 4,
            ..CompressOptions::default()
        };
        assert_eq!(
            compress(&data, &four).unwrap_err().kind,
            ErrorKind::UnwritableVersion(4)
        );
    }

    #[test]
    fn env_value_like_clang() {
        assert_eq!(version_from_env_value("2"), Some(2));
        assert_eq!(version_from_env_value("3"), Some(3));
        assert!(version_from_env_value("1").is_none());
        assert!(version_from_env_value("x").is_none());
    }
}
