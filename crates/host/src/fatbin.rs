//! How a found bundle is stored ([`BundleFormat`]). Sections holding bundles back to back
//! (`.hip_fatbin`) are split by the bundle crate ([`gfxkit_bundle::split`]): each bundle
//! starts where the previous one ends, after zero padding to the section's input alignment
//! (4096 with the classic HIP driver, 16 with the new one; any alignment is accepted).

use gfxkit_bundle::split::Stored;
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

/// Whether `data` starts with a bundle magic (uncompressed or CCOB).
pub fn starts_with_bundle(data: &[u8]) -> bool {
    gfxkit_bundle::detect(data).is_some()
}

impl From<Stored> for BundleFormat {
    fn from(s: Stored) -> BundleFormat {
        match s {
            Stored::Uncompressed => BundleFormat::Uncompressed,
            Stored::Ccob { version, method } => BundleFormat::Compressed {
                version,
                method: CompressionMethod(method),
            },
        }
    }
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
}
