//! Telling a kernel database from other files by its name and first bytes, fast enough for a
//! directory walk (the walk skips files that cannot hold device code).
//!
//! - MIOpen `.kdb` (and the user cache's `.ukdb`): the SQLite magic and the name; a SQLite
//!   file under another name is not taken for a kernel database.
//! - AOTriton `.aks2`: the magic `AKS2`, whatever the name.
//! - aiter kernel maps: a `.csv` name under `hsa/` and a header naming `knl_name` and
//!   `knl_file` (or `co_name`) ([`crate::aiter::is_kernel_map`]).
//! - Tensile/TensileLite indexes: a name `TensileLibrary*.dat`, `TensileLiteLibrary*.dat` or
//!   `*_Mapping.dat` (each also with `.zlib`), or `TensileLibrary*.yaml` (Tensile's YAML
//!   indexes), and content that starts as the format says: a MessagePack map, for `.zlib` a
//!   zlib stream header, for `.yaml` a YAML document ([`crate::tensile_yaml::looks_like_index`]).
//!   Names alone would take unrelated `.dat` and `.yaml` files; content alone cannot tell
//!   MessagePack from noise.
//!
//! ```
//! use gfxkit_kernel_db::sniff::{sniff, DbKind};
//! assert_eq!(sniff("TensileLibrary.dat", b"\x82\xa9solutions"), Some(DbKind::TensileIndex));
//! assert_eq!(sniff("notes.dat", b"\x82\xa9solutions"), None);
//! assert_eq!(sniff("x.aks2", b"AKS2\0\0\0\0"), Some(DbKind::Aks2));
//! ```

use crate::kdb::SQLITE_MAGIC;

/// A kind of kernel database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DbKind {
    /// A MIOpen kernel database (`.kdb`, `.ukdb`).
    MiopenKdb,
    /// An AOTriton kernel storage image (`.aks2`).
    Aks2,
    /// A Tensile/TensileLite solution index (`TensileLibrary*.dat`, `.dat.zlib`): a master
    /// index, a lazy per-architecture master or a shard.
    TensileIndex,
    /// A TensileLite `*_Mapping.dat` (index -> kernel-library name).
    TensileMapping,
    /// An aiter kernel map (`hsa/<arch>/**.csv`: kernel name -> code-object file).
    AiterMap,
}

impl DbKind {
    /// The name used in listings: `miopen-kdb`, `aks2`, `tensile`, `tensile-mapping`,
    /// `aiter-map`.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::MiopenKdb => "miopen-kdb",
            DbKind::Aks2 => "aks2",
            DbKind::TensileIndex => "tensile",
            DbKind::TensileMapping => "tensile-mapping",
            DbKind::AiterMap => "aiter-map",
        }
    }
}

/// How many first bytes [`sniff`] looks at (fewer are enough when the file is shorter): the
/// magic numbers need 16, an aiter kernel map's CSV header line more
/// ([`crate::aiter::HEADER_PREFIX_LEN`]).
pub const PREFIX_LEN: usize = crate::aiter::HEADER_PREFIX_LEN;

/// How a Tensile index's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// MessagePack (`.dat`).
    MessagePack,
    /// MessagePack in a zlib stream (`.dat.zlib`).
    Zlib,
    /// YAML (`.yaml`), read through [`crate::tensile_yaml`].
    Yaml,
}

/// Whether `name` (a file name or a path; only the last component counts) is a Tensile
/// index's name, and how it is stored.
pub fn tensile_name(name: &str) -> Option<(DbKind, Encoding)> {
    let base = name.rsplit(['/', '\\', '!']).next().unwrap_or(name);
    if let Some(stem) = base.strip_suffix(".yaml") {
        let index = stem.starts_with("TensileLibrary") || stem.starts_with("TensileLiteLibrary");
        return index.then_some((DbKind::TensileIndex, Encoding::Yaml));
    }
    let (stem, encoding) = match base.strip_suffix(".zlib") {
        Some(s) => (s, Encoding::Zlib),
        None => (base, Encoding::MessagePack),
    };
    let stem = stem.strip_suffix(".dat")?;
    if stem.ends_with("_Mapping") {
        Some((DbKind::TensileMapping, encoding))
    } else if stem.starts_with("TensileLibrary") || stem.starts_with("TensileLiteLibrary") {
        Some((DbKind::TensileIndex, encoding))
    } else {
        None
    }
}

/// Whether `name` (a file name or a path; only the last component counts) is a file a Tensile
/// directory holds beside its indexes and code that its library opens by name without it
/// being device code or an index: hipBLASLt's extension-op library
/// (`hipblasltExtOpLibrary.dat`, naming `extop_<P>.co` per processor).
pub fn tensile_companion(name: &str) -> bool {
    let base = name.rsplit(['/', '\\', '!']).next().unwrap_or(name);
    base == "hipblasltExtOpLibrary.dat"
}

/// Whether `prefix` starts a MessagePack map (fixmap, map 16, map 32).
fn msgpack_map(prefix: &[u8]) -> bool {
    matches!(prefix.first(), Some(0x80..=0x8f | 0xde | 0xdf))
}

/// Whether `prefix` starts a zlib stream: deflate with a window of at most 32 KiB and a
/// header check that holds (RFC 1950).
pub fn zlib_header(prefix: &[u8]) -> bool {
    match prefix {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

/// The kind of kernel database `name` with first bytes `prefix` is, if it is one (see the
/// module documentation for the rules).
pub fn sniff(name: &str, prefix: &[u8]) -> Option<DbKind> {
    if prefix.starts_with(crate::aks2::MAGIC) {
        return Some(DbKind::Aks2);
    }
    if prefix.starts_with(SQLITE_MAGIC) {
        let lower = name.to_ascii_lowercase();
        return (lower.ends_with(".kdb") || lower.ends_with(".ukdb")).then_some(DbKind::MiopenKdb);
    }
    if crate::aiter::is_kernel_map(name, prefix) {
        return Some(DbKind::AiterMap);
    }
    let (kind, encoding) = tensile_name(name)?;
    let ok = match encoding {
        Encoding::Zlib => zlib_header(prefix),
        Encoding::MessagePack => msgpack_map(prefix),
        Encoding::Yaml => crate::tensile_yaml::looks_like_index(prefix),
    };
    ok.then_some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_content_decide_together() {
        assert_eq!(sniff("gfx90a68.kdb", SQLITE_MAGIC), Some(DbKind::MiopenKdb));
        assert_eq!(sniff("places.sqlite", SQLITE_MAGIC), None);
        assert_eq!(sniff("gfx90a68.kdb", b"not sqlite"), None);
        assert_eq!(
            sniff("lib/TensileLibrary_lazy_gfx942.dat.zlib", &[0x78, 0x9c, 0]),
            Some(DbKind::TensileIndex)
        );
        assert_eq!(sniff("TensileLibrary.dat.zlib", &[0x82, 0xa9]), None);
        assert_eq!(
            sniff("TensileLiteLibrary_lazy_gfx942_Mapping.dat", &[0xde, 0, 3]),
            Some(DbKind::TensileMapping)
        );
        // A YAML index under its own name; YAML under a `.dat` name, or a `.yaml` file that
        // is no index (Tensile's logic files are sequences), is not one.
        assert_eq!(
            sniff("TensileLibrary.dat", b"- {MinimumRequiredVersion"),
            None
        );
        assert_eq!(sniff("TensileLibrary.yaml", &[0x82]), None);
        assert_eq!(
            sniff("TensileLibrary.yaml", b"---\nlibrary:\n  rows:"),
            Some(DbKind::TensileIndex)
        );
        assert_eq!(
            sniff("TensileLibrary_gfx90a.yaml", b"- {MinimumRequiredVersion"),
            None
        );
        assert_eq!(sniff("notes.yaml", b"---\nlibrary:"), None);
        assert_eq!(sniff("anything", b"AKS2"), Some(DbKind::Aks2));
    }

    #[test]
    fn zlib_headers_of_every_level() {
        for level in 0..=9 {
            let mut e =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
            std::io::Write::write_all(&mut e, b"\x80").unwrap();
            assert!(zlib_header(&e.finish().unwrap()), "level {level}");
        }
        assert!(!zlib_header(&[0x78, 0x00]));
    }
}
