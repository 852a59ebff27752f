//! Splitting a section that holds bundles back to back (`.hip_fatbin`) into its bundles.
//!
//! Each bundle starts where the previous one ends, after zero padding to the section's input
//! alignment (4096 with the classic HIP driver, 16 with the new one; any alignment is accepted).
//! An uncompressed bundle ends at `max(offset + size)` over its entries (and at least at the end
//! of its header); a CCOB v2/v3 bundle at its declared total size; a CCOB v1 bundle, which
//! declares no size, where its zstd frame or zlib stream ends. Nothing inside a compressed
//! payload is ever searched for a magic.

use crate::limits;
use crate::read::{u16_at, u32_at, u64_at};
use serde::Serialize;
use std::fmt;

/// Magic of an uncompressed offload bundle (the bundle crate's).
pub const BUNDLE_MAGIC: &[u8; 24] = gfxkit_bundle::read::MAGIC;
/// Magic of a compressed offload bundle (the bundle crate's).
pub const CCOB_MAGIC: &[u8; 4] = gfxkit_bundle::compressed::MAGIC;

/// Compression method of a CCOB bundle. Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompressionMethod(pub u16);

impl CompressionMethod {
    /// zlib.
    pub const ZLIB: CompressionMethod = CompressionMethod(0);
    /// zstd.
    pub const ZSTD: CompressionMethod = CompressionMethod(1);

    /// `zlib`, `zstd` or `unknown(N)`.
    pub fn name(self) -> String {
        match self.0 {
            0 => "zlib".into(),
            1 => "zstd".into(),
            n => format!("unknown({n})"),
        }
    }
}

impl fmt::Display for CompressionMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for CompressionMethod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// How a found bundle is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "format", rename_all = "lowercase")]
pub enum BundleFormat {
    /// `__CLANG_OFFLOAD_BUNDLE__` binary bundle.
    Uncompressed,
    /// `CCOB` compressed bundle.
    Compressed {
        /// CCOB version (1, 2 or 3).
        version: u16,
        /// Compression method.
        method: CompressionMethod,
    },
}

impl fmt::Display for BundleFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleFormat::Uncompressed => f.write_str("uncompressed"),
            BundleFormat::Compressed { version, method } => write!(f, "CCOB v{version} {method}"),
        }
    }
}

/// Why a bundle's extent could not be found. Offsets are from the start of the bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} (at bundle offset {offset:#x})")]
pub struct ExtentError {
    /// Offset from the start of the bundle.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
    /// When the bundle is well formed but runs past the available bytes: its full size.
    pub needs: Option<u64>,
}

fn extent_err(offset: u64, what: impl Into<String>) -> ExtentError {
    ExtentError {
        offset,
        what: what.into(),
        needs: None,
    }
}

/// Whether `data` starts with a bundle magic (uncompressed or CCOB).
pub fn starts_with_bundle(data: &[u8]) -> bool {
    gfxkit_bundle::detect(data).is_some()
}

/// Finds the format and length of the bundle at the start of `data`, reading only headers
/// (and, for CCOB v1 only, walking the compressed stream to find where it ends).
pub fn bundle_extent(data: &[u8]) -> Result<(BundleFormat, u64), ExtentError> {
    let avail = data.len() as u64;
    let check = |len: u64| -> Result<u64, ExtentError> {
        if len > avail {
            Err(ExtentError {
                offset: 0,
                what: format!("bundle of {len} bytes runs past the {avail} bytes available"),
                needs: Some(len),
            })
        } else {
            Ok(len)
        }
    };
    if data.starts_with(BUNDLE_MAGIC) {
        let len = uncompressed_extent(data)?;
        return Ok((BundleFormat::Uncompressed, check(len)?));
    }
    if !data.starts_with(CCOB_MAGIC) {
        return Err(extent_err(0, "no bundle magic"));
    }
    let version = u16_at(data, 4).ok_or_else(|| extent_err(4, "truncated CCOB header"))?;
    let method =
        CompressionMethod(u16_at(data, 6).ok_or_else(|| extent_err(6, "truncated CCOB header"))?);
    let format = BundleFormat::Compressed { version, method };
    let (header, total) = match version {
        2 => (
            24u64,
            u32_at(data, 8)
                .map(u64::from)
                .ok_or_else(|| extent_err(8, "truncated CCOB v2 header"))?,
        ),
        3 => (
            32u64,
            u64_at(data, 8).ok_or_else(|| extent_err(8, "truncated CCOB v3 header"))?,
        ),
        1 => {
            let len = ccob_v1_extent(data, method)?;
            return Ok((format, len));
        }
        v => return Err(extent_err(4, format!("unknown CCOB version {v}"))),
    };
    if total < header {
        return Err(extent_err(
            8,
            format!("CCOB total size {total} is smaller than its {header}-byte header"),
        ));
    }
    Ok((format, check(total)?))
}

/// End of an uncompressed bundle: the bundle crate's header-only reader
/// ([`gfxkit_bundle::read::header_extent`]). Entry ranges are not checked against `data`
/// here (the caller compares the extent).
fn uncompressed_extent(data: &[u8]) -> Result<u64, ExtentError> {
    gfxkit_bundle::read::header_extent(data).map_err(bundle_err)
}

/// An [`ExtentError`] from the bundle crate's error (its offset kept apart from the words).
fn bundle_err(e: gfxkit_bundle::Error) -> ExtentError {
    let what = match e.entry {
        Some(i) => format!("entry {i}: {}", e.kind),
        None => e.kind.to_string(),
    };
    extent_err(e.offset.unwrap_or(0), what)
}

/// End of a CCOB v1 bundle (20-byte header, no total size): where its compressed stream ends,
/// as the bundle crate finds it ([`gfxkit_bundle::ccob::Header::extent`]).
fn ccob_v1_extent(data: &[u8], method: CompressionMethod) -> Result<u64, ExtentError> {
    if method != CompressionMethod::ZLIB && method != CompressionMethod::ZSTD {
        return Err(extent_err(
            6,
            format!("unknown compression method {}", method.0),
        ));
    }
    let h = gfxkit_bundle::ccob::Header::parse(data).map_err(bundle_err)?;
    h.extent(data).map_err(bundle_err)
}

/// One bundle found in a section, by offset from the start of the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionBundle {
    /// Offset from the start of the section.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Storage format.
    pub format: BundleFormat,
}

/// Why splitting a section stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitStop {
    /// The bundle at `offset` could not be delimited.
    BadBundle {
        /// Offset from the start of the section.
        offset: u64,
        /// Why.
        error: ExtentError,
    },
    /// A well-formed bundle at `offset` runs past the end of the section.
    PastEnd {
        /// Offset from the start of the section.
        offset: u64,
        /// The bundle's declared size.
        size: u64,
        /// The bytes left in the section from `offset`.
        available: u64,
    },
    /// Bytes at `offset` are neither zero padding nor a bundle magic.
    UnknownBytes {
        /// Offset from the start of the section.
        offset: u64,
        /// Up to 8 bytes found there.
        found: Vec<u8>,
    },
    /// Too many bundles.
    TooMany,
}

/// Splits `section` into the bundles it holds back to back. Zero bytes between bundles are
/// padding. Returns the bundles read and, if the walk stopped early, why.
pub fn split_bundles(section: &[u8]) -> (Vec<SectionBundle>, Option<SplitStop>) {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < section.len() {
        let rest = &section[pos..];
        let Some(skip) = rest.iter().position(|&b| b != 0) else {
            break;
        };
        pos += skip;
        let rest = &section[pos..];
        let offset = pos as u64;
        if !starts_with_bundle(rest) {
            let found = rest[..rest.len().min(8)].to_vec();
            return (out, Some(SplitStop::UnknownBytes { offset, found }));
        }
        if out.len() >= limits::MAX_BUNDLES_PER_SECTION {
            return (out, Some(SplitStop::TooMany));
        }
        match bundle_extent(rest) {
            Ok((format, len)) => {
                out.push(SectionBundle {
                    offset,
                    len,
                    format,
                });
                // len >= 1 (at least the magic) and <= rest.len(): progress is guaranteed.
                pos += usize::try_from(len).unwrap_or(rest.len()).max(1);
            }
            Err(e) => {
                let stop = match e.needs {
                    Some(size) => SplitStop::PastEnd {
                        offset,
                        size,
                        available: rest.len() as u64,
                    },
                    None => SplitStop::BadBundle { offset, error: e },
                };
                return (out, Some(stop));
            }
        }
    }
    (out, None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small uncompressed bundle with the given IDs and payloads, aligned like clang does.
    pub(crate) fn make_bundle(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
        let mut h = 32u64;
        for (id, _) in entries {
            h += 24 + id.len() as u64;
        }
        let mut offsets = Vec::new();
        for (_, p) in entries {
            h = h.div_ceil(align) * align;
            offsets.push(h);
            h += p.len() as u64;
        }
        let mut b = Vec::new();
        b.extend_from_slice(BUNDLE_MAGIC);
        b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for ((id, p), off) in entries.iter().zip(&offsets) {
            b.extend_from_slice(&off.to_le_bytes());
            b.extend_from_slice(&(p.len() as u64).to_le_bytes());
            b.extend_from_slice(&(id.len() as u64).to_le_bytes());
            b.extend_from_slice(id.as_bytes());
        }
        for ((_, p), off) in entries.iter().zip(&offsets) {
            b.resize(*off as usize, 0);
            b.extend_from_slice(p);
        }
        b
    }

    /// A CCOB v2 or v3 bundle with zstd-compressed `inner`.
    pub(crate) fn make_ccob(version: u16, inner: &[u8]) -> Vec<u8> {
        let z = zstd::encode_all(inner, 3).unwrap();
        let header = if version == 3 { 32 } else { 24 };
        let total = header + z.len();
        let mut b = Vec::new();
        b.extend_from_slice(CCOB_MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
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
            let (found, stop) = split_bundles(&sec);
            assert_eq!(stop, None, "align {align}");
            assert_eq!(found.len(), 3);
            assert_eq!(found[0].len, a.len() as u64);
            assert_eq!(found[1].offset, ob);
            assert_eq!(
                found[1].format,
                BundleFormat::Compressed {
                    version: 2,
                    method: CompressionMethod::ZSTD
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
        let (found, stop) = split_bundles(&c);
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
            b.extend_from_slice(CCOB_MAGIC);
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&method.to_le_bytes());
            b.extend_from_slice(&(inner.len() as u32).to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&z);
            let len = b.len() as u64;
            b.resize(b.len().div_ceil(16) * 16, 0);
            b.extend_from_slice(&inner);
            let (found, stop) = split_bundles(&b);
            assert_eq!(stop, None, "method {method}");
            assert_eq!(found.len(), 2);
            assert_eq!(found[0].len, len);
            assert_eq!(found[1].format, BundleFormat::Uncompressed);
        }
    }

    #[test]
    fn damaged_sections_stop_with_a_reason() {
        let a = make_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", b"\x7fELFaaaa")], 1);
        // Truncated: runs past the end.
        let (f, stop) = split_bundles(&a[..a.len() - 1]);
        assert!(f.is_empty());
        assert!(
            matches!(stop, Some(SplitStop::PastEnd { offset: 0, .. })),
            "{stop:?}"
        );
        // Garbage after a bundle.
        let mut g = a.clone();
        g.extend_from_slice(b"\0\0\0junk");
        let (f, stop) = split_bundles(&g);
        assert_eq!(f.len(), 1);
        assert_eq!(
            stop,
            Some(SplitStop::UnknownBytes {
                offset: a.len() as u64 + 3,
                found: b"junk".to_vec()
            })
        );
        // CCOB whose total size is below its header.
        let mut c = make_ccob(2, &a);
        c[8..12].copy_from_slice(&3u32.to_le_bytes());
        let (_, stop) = split_bundles(&c);
        assert!(
            matches!(stop, Some(SplitStop::BadBundle { .. })),
            "{stop:?}"
        );
        // Huge entry count.
        let mut h = a.clone();
        h[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        let (_, stop) = split_bundles(&h);
        assert!(
            matches!(stop, Some(SplitStop::BadBundle { .. })),
            "{stop:?}"
        );
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
            let _ = split_bundles(&sec[..n]);
        }
        for i in 0..sec.len() {
            let mut c = sec.clone();
            c[i] ^= 0xff;
            let _ = split_bundles(&c);
        }
    }
}
