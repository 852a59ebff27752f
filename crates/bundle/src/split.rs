//! Splitting bytes that hold bundles back to back (a `.hip_fatbin` section, a dumped fatbin)
//! for discovery and listing: lenient where [`scan_concatenated`](crate::scan_concatenated) is
//! strict, and never decompressing more than a CCOB v1 stream to find its end.
//!
//! Each bundle starts where the previous one ends, after zero padding (any alignment). An
//! uncompressed bundle ends at `max(offset + size)` over its entry records (at least at the end
//! of its header; entries are not checked further, so a bundle with damaged entries is still
//! stepped over); a CCOB v2/v3 bundle at its declared total size, whatever its compression
//! method (an unknown method is kept, to be reported by whoever decompresses); a CCOB v1
//! bundle, which declares no size, where its zstd frame or zlib stream ends. Nothing inside a
//! compressed payload is searched for a magic. The split keeps every bundle before a damaged
//! one and says why and where it stopped ([`Stop`]).

use crate::any::{BundleFormat, CompressionMethod};
use crate::compressed::{self, Header};
use crate::error::{Error, ErrorKind, Result};
use crate::limits::MAX_CONCATENATED;
use crate::read;
use gfxkit_bytes::{Cursor, OutOfBounds};

/// Where the bundle at the start of `data` ends, from its headers alone: its storage and its
/// length. The length may exceed `data.len()` (a well-formed bundle cut short); the caller
/// compares. Errors are at offsets from the start of `data`. A zlib CCOB v1 bundle, whose
/// end is found by decoding it, may not declare more than `limits` allow.
pub fn stored_extent(data: &[u8], limits: &crate::limits::Limits) -> Result<(BundleFormat, u64)> {
    stored_extent_at(Cursor::new(data), limits)
}

/// [`stored_extent`] of the bytes of `c`, with error offsets absolute (from `c.base()`).
pub fn stored_extent_at(
    c: Cursor<'_>,
    limits: &crate::limits::Limits,
) -> Result<(BundleFormat, u64)> {
    let data = c.bytes();
    if read::is_bundle(data) {
        return Ok((BundleFormat::Uncompressed, read::header_extent_at(c)?));
    }
    if !compressed::is_ccob(data) {
        return Err(Error::at(
            ErrorKind::BadMagic {
                expected: "__CLANG_OFFLOAD_BUNDLE__ or CCOB",
            },
            c.inside(0),
        ));
    }
    let short = |need: u64, e: OutOfBounds| {
        Error::truncated("compressed bundle header", need, c.len(), e.offset())
    };
    let version = c.u16(4).map_err(|e| short(8, e))?;
    let method = c.u16(6).map_err(|e| short(8, e))?;
    let stored = BundleFormat::Compressed {
        version,
        method: CompressionMethod(method),
    };
    let header_len = compressed::header_len(version)
        .ok_or_else(|| Error::at(ErrorKind::UnsupportedCcobVersion(version), c.abs(4)))?;
    let total = match version {
        1 => {
            // No total size: the end of the stream, which needs a known method.
            let h = Header::parse_at(c)?;
            return Ok((stored, h.extent_at(c, limits.max_uncompressed)?));
        }
        2 => c.u32(8).map(u64::from),
        _ => c.u64(8),
    }
    .map_err(|e| short(header_len, e))?;
    if total < header_len {
        return Err(Error::at(
            ErrorKind::BadTotalSize {
                total,
                header_len,
                available: c.len(),
            },
            c.abs(8),
        ));
    }
    Ok((stored, total))
}

/// One bundle found by [`split`]: where it is in the split bytes and how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Offset in the split bytes.
    pub offset: u64,
    /// Length in bytes (within the split bytes).
    pub len: u64,
    /// Storage.
    pub stored: BundleFormat,
}

/// Why [`split`] stopped before the end.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// The bundle at `offset` cannot be delimited; `error`'s offset is in the split bytes.
    Damaged {
        /// Offset of the bundle in the split bytes.
        offset: u64,
        /// Why.
        error: Error,
    },
    /// A well-formed bundle at `offset` runs past the end of the bytes.
    PastEnd {
        /// Offset of the bundle.
        offset: u64,
        /// Its declared size.
        size: u64,
        /// The bytes left from `offset`.
        available: u64,
    },
    /// Bytes at `offset` are neither zero padding nor a bundle magic.
    Garbage {
        /// Offset of the first such byte.
        offset: u64,
        /// Up to 8 bytes found there.
        found: Vec<u8>,
    },
    /// More than `limit` bundles; the rest were not read.
    TooMany {
        /// [`MAX_CONCATENATED`].
        limit: usize,
    },
}

/// Splits `data` into the bundles it holds back to back, zero bytes between them being
/// padding, each delimited under `limits` ([`stored_extent`]). Returns the bundles read and,
/// when the walk stopped early, why.
pub fn split(data: &[u8], limits: &crate::limits::Limits) -> (Vec<Piece>, Option<Stop>) {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Some(skip) = data.get(pos..).and_then(|r| r.iter().position(|&b| b != 0)) {
        pos += skip;
        let rest = &data[pos..];
        let offset = pos as u64;
        if crate::detect(rest).is_none() {
            let found = rest[..rest.len().min(8)].to_vec();
            return (out, Some(Stop::Garbage { offset, found }));
        }
        if out.len() >= MAX_CONCATENATED {
            let limit = MAX_CONCATENATED;
            return (out, Some(Stop::TooMany { limit }));
        }
        match stored_extent_at(Cursor::at(rest, offset), limits) {
            Ok((_, len)) if len > rest.len() as u64 => {
                let available = rest.len() as u64;
                let stop = Stop::PastEnd {
                    offset,
                    size: len,
                    available,
                };
                return (out, Some(stop));
            }
            Ok((stored, len)) => {
                out.push(Piece {
                    offset,
                    len,
                    stored,
                });
                // len >= 1 (at least the magic) and <= rest.len(): progress is guaranteed.
                pos += usize::try_from(len).unwrap_or(rest.len()).max(1);
            }
            Err(error) => return (out, Some(Stop::Damaged { offset, error })),
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn make_bundle(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
        crate::write_bundle(entries, align).unwrap()
    }

    /// A CCOB v2 or v3 bundle with zstd-compressed `inner` and method `method` as stored.
    fn make_ccob_method(version: u16, method: u16, inner: &[u8]) -> Vec<u8> {
        let z = zstd::encode_all(inner, 3).unwrap();
        let header = if version == 3 { 32 } else { 24 };
        let total = header + z.len();
        let mut b = Vec::new();
        b.extend_from_slice(compressed::MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&method.to_le_bytes());
        if version == 3 {
            b.extend_from_slice(&(total as u64).to_le_bytes());
            b.extend_from_slice(&(inner.len() as u64).to_le_bytes());
        } else {
            b.extend_from_slice(&(total as u32).to_le_bytes());
            b.extend_from_slice(&(inner.len() as u32).to_le_bytes());
        }
        b.extend_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        b.extend_from_slice(&z);
        b
    }

    fn make_ccob(version: u16, inner: &[u8]) -> Vec<u8> {
        make_ccob_method(version, 1, inner)
    }

    /// A CCOB v2 bundle whose method gfxkit does not know is still delimited (by its total
    /// size) and kept, with the bundle after it.
    #[test]
    fn unknown_method_is_delimited_and_kept() {
        let a = make_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", b"\x7fELFaaaa")], 1);
        let mut sec = make_ccob_method(2, 7, &a);
        let n = sec.len() as u64;
        sec.extend_from_slice(&a);
        let (found, stop) = split(&sec, &Limits::default());
        assert_eq!(stop, None);
        assert_eq!(
            found[0].stored,
            BundleFormat::Compressed {
                version: 2,
                method: CompressionMethod(7)
            }
        );
        assert_eq!((found[0].len, found[1].offset), (n, n));
        // The strict scan refuses it, naming the method.
        assert!(crate::scan_concatenated(&sec, &Limits::default()).is_err());
    }

    fn pad_to(v: &mut Vec<u8>, align: usize) {
        let n = v.len().div_ceil(align) * align;
        v.resize(n, 0);
    }

    #[test]
    fn splits_mixed_bundles_at_any_alignment() {
        let a = make_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", b"\x7fELFaaaa"),
            ],
            1,
        );
        let b = make_ccob(2, &a);
        let c = make_ccob(3, &a);
        for align in [1usize, 8, 16, 4096] {
            let mut sec = a.clone();
            pad_to(&mut sec, align);
            let ob = sec.len() as u64;
            sec.extend_from_slice(&b);
            pad_to(&mut sec, align);
            let oc = sec.len() as u64;
            sec.extend_from_slice(&c);
            pad_to(&mut sec, align);
            let (found, stop) = split(&sec, &Limits::default());
            assert_eq!(stop, None, "align {align}");
            assert_eq!(found.len(), 3);
            assert_eq!(found[0].len, a.len() as u64);
            assert_eq!(found[1].offset, ob);
            assert_eq!(
                found[1].stored,
                BundleFormat::Compressed {
                    version: 2,
                    method: CompressionMethod(1)
                }
            );
            assert_eq!(found[2].offset, oc);
            assert_eq!(found[2].len, c.len() as u64);
        }
    }

    #[test]
    fn fake_magic_inside_a_zstd_payload_is_not_a_bundle() {
        // A payload full of "CCOB" and bundle magics: the CCOB is bounded by its own size.
        let mut inner = Vec::new();
        for _ in 0..200 {
            inner.extend_from_slice(b"CCOB\x02\x00\x01\x00__CLANG_OFFLOAD_BUNDLE__");
        }
        let c = make_ccob(2, &inner);
        let (found, stop) = split(&c, &Limits::default());
        assert_eq!(stop, None);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len, c.len() as u64);
    }

    #[test]
    fn ccob_v1_is_delimited_by_its_stream() {
        let inner = make_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &[7u8; 3000])], 4096);
        for method in [0u16, 1] {
            let z = if method == 1 {
                zstd::encode_all(&inner[..], 3).unwrap()
            } else {
                use std::io::Write;
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&inner).unwrap();
                e.finish().unwrap()
            };
            let mut b = Vec::new();
            b.extend_from_slice(compressed::MAGIC);
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&method.to_le_bytes());
            b.extend_from_slice(&(inner.len() as u32).to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&z);
            let len = b.len() as u64;
            b.resize(b.len().div_ceil(16) * 16, 0);
            b.extend_from_slice(&inner);
            let (found, stop) = split(&b, &Limits::default());
            assert_eq!(stop, None, "method {method}");
            assert_eq!(found.len(), 2);
            assert_eq!(found[0].len, len);
            assert_eq!(found[1].stored, BundleFormat::Uncompressed);
        }
    }

    #[test]
    fn damaged_sections_stop_with_a_reason() {
        let a = make_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", b"\x7fELFaaaa")], 1);
        // Truncated: runs past the end.
        let (f, stop) = split(&a[..a.len() - 1], &Limits::default());
        assert!(f.is_empty());
        assert!(
            matches!(stop, Some(Stop::PastEnd { offset: 0, .. })),
            "{stop:?}"
        );
        // Garbage after a bundle.
        let mut g = a.clone();
        g.extend_from_slice(b"\0\0\0junk");
        let (f, stop) = split(&g, &Limits::default());
        assert_eq!(f.len(), 1);
        assert_eq!(
            stop,
            Some(Stop::Garbage {
                offset: a.len() as u64 + 3,
                found: b"junk".to_vec()
            })
        );
        // CCOB whose total size is below its header.
        let mut c = make_ccob(2, &a);
        c[8..12].copy_from_slice(&3u32.to_le_bytes());
        let (_, stop) = split(&c, &Limits::default());
        assert!(matches!(stop, Some(Stop::Damaged { .. })), "{stop:?}");
        // Huge entry count.
        let mut h = a.clone();
        h[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        let (_, stop) = split(&h, &Limits::default());
        assert!(matches!(stop, Some(Stop::Damaged { .. })), "{stop:?}");
    }

    #[test]
    fn every_truncation_and_bit_flip_is_handled() {
        let a = make_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", b"\x7fELFaaaa"),
            ],
            8,
        );
        let mut sec = a.clone();
        sec.resize(sec.len().div_ceil(16) * 16, 0);
        sec.extend(make_ccob(2, &a));
        for n in 0..sec.len() {
            let _ = split(&sec[..n], &Limits::default());
        }
        for i in 0..sec.len() {
            let mut c = sec.clone();
            c[i] ^= 0xff;
            let _ = split(&c, &Limits::default());
        }
    }
}
