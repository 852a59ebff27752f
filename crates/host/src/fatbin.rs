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

/// Names of the sections holding bundles back to back: `.hip_fatbin` (ELF files, COFF
/// objects) and `.hip_fat`, its spelling in PE images, whose section names hold 8 bytes.
pub const FATBIN_SECTIONS: [&str; 2] = [".hip_fatbin", ".hip_fat"];

/// Names of the sections holding the 24-byte wrapper records: `.hipFatBinSegment` (ELF files,
/// COFF objects) and `.hipFatB`, its 8-byte spelling in PE images.
pub const WRAPPER_SECTIONS: [&str; 2] = [".hipFatBinSegment", ".hipFatB"];

/// Whether `name` is a section holding bundles back to back, under either spelling
/// ([`FATBIN_SECTIONS`]).
pub fn is_fatbin_section(name: &str) -> bool {
    FATBIN_SECTIONS.contains(&name)
}

/// Whether `name` is a section holding wrapper records, under either spelling
/// ([`WRAPPER_SECTIONS`]).
pub fn is_wrapper_section(name: &str) -> bool {
    WRAPPER_SECTIONS.contains(&name)
}
