//! `.llvm.offloading` sections: LLVM OffloadBinary images (new offload driver).
//!
//! Layout (LLVM `OffloadBinary.h`, version 1 as written by LLVM 19): a 32-byte header
//! `{magic 0x10FF10AD, u32 version, u64 size, u64 entry_offset, u64 entry_size}`, one 40-byte
//! entry `{u16 image_kind, u16 offload_kind, u32 flags, u64 string_offset, u64 num_strings,
//! u64 image_offset, u64 image_size}`, `num_strings` pairs `{u64 key_offset, u64 value_offset}`
//! into a NUL-terminated string table, then the image. All offsets are from the start of the
//! binary. Several binaries may follow each other in one section, each starting 8-aligned.

use crate::limits;
use gfxkit_bundle::le::{bytes_at, u16_at, u32_at, u64_at};
use serde::Serialize;
use std::fmt;

/// Magic bytes at the start of an OffloadBinary (`0x10FF10AD` stored little-endian).
pub const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];

/// Size of the OffloadBinary header.
const HEADER_SIZE: u64 = 32;
/// Size of one entry.
const ENTRY_SIZE: u64 = 40;
/// Alignment of binaries that follow each other in one section.
const ALIGN: u64 = 8;

/// The kind of image an OffloadBinary carries (`IMG_*`). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageKind(pub u16);

impl ImageKind {
    /// A relocatable or executable object (for AMD GPUs an ELF code object).
    pub const OBJECT: ImageKind = ImageKind(1);
    /// LLVM bitcode (`-fgpu-rdc` / LTO).
    pub const BITCODE: ImageKind = ImageKind(2);

    /// Name as LLVM spells it (`o`, `bc`, `cubin`, `fatbin`, `s`), or `unknown(N)`.
    pub fn name(self) -> String {
        match self.0 {
            0 => "none".into(),
            1 => "o".into(),
            2 => "bc".into(),
            3 => "cubin".into(),
            4 => "fatbin".into(),
            5 => "s".into(),
            n => format!("unknown({n})"),
        }
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for ImageKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// The offload programming model of an image (`OFK_*`). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffloadKind(pub u16);

impl OffloadKind {
    /// Whether this is HIP: 3 up to LLVM 20, 4 from LLVM 21.
    pub fn is_hip(self) -> bool {
        self.0 == 3 || self.0 == 4
    }

    /// Name: `openmp`, `cuda`, `hip`, or `unknown(N)`. LLVM 21 renumbered the kinds; gfxkit
    /// reads both 3 and 4 as HIP because AMD GPU images of either era are HIP.
    pub fn name(self) -> String {
        match self.0 {
            0 => "none".into(),
            1 => "openmp".into(),
            2 => "cuda".into(),
            3 | 4 => "hip".into(),
            n => format!("unknown({n})"),
        }
    }
}

impl fmt::Display for OffloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for OffloadKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// One image of an OffloadBinary, borrowing from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadEntry<'data> {
    /// Offset of the OffloadBinary header in the parsed bytes.
    pub binary_offset: u64,
    /// Total size of the OffloadBinary (header `size`).
    pub binary_size: u64,
    /// Header version.
    pub version: u32,
    /// Image kind.
    pub image_kind: ImageKind,
    /// Offload kind.
    pub offload_kind: OffloadKind,
    /// Entry flags.
    pub flags: u32,
    /// Key/value strings (`triple`, `arch`, ...), in stored order.
    pub strings: Vec<(&'data str, &'data str)>,
    /// Offset of the image in the parsed bytes.
    pub image_offset: u64,
    /// The image bytes.
    pub image: &'data [u8],
}

impl<'data> OffloadEntry<'data> {
    /// The value stored for `key`, if any.
    pub fn string(&self, key: &str) -> Option<&'data str> {
        self.strings
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// The `triple` string (`amdgcn-amd-amdhsa`).
    pub fn triple(&self) -> Option<&'data str> {
        self.string("triple")
    }

    /// The `arch` string: a target ID such as `gfx90a:xnack+`.
    pub fn arch(&self) -> Option<&'data str> {
        self.string("arch")
    }
}

/// An error reading an OffloadBinary, with the offset (in the parsed bytes) where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} (at offset {offset:#x})")]
pub struct OffloadError {
    /// Offset in the parsed bytes.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

fn err(offset: u64, what: impl Into<String>) -> OffloadError {
    OffloadError {
        offset,
        what: what.into(),
    }
}

/// Reads every OffloadBinary in `data` (the contents of a `.llvm.offloading` section): each
/// starts at an 8-aligned offset after the previous one. Zero padding between them is skipped.
/// Returns the images read and, if reading stopped early, why.
pub fn parse_offloading(data: &[u8]) -> (Vec<OffloadEntry<'_>>, Option<OffloadError>) {
    let mut out = Vec::new();
    let mut pos: u64 = 0;
    let len = data.len() as u64;
    while pos < len {
        // Skip zero padding, 8 bytes at a time (binaries start 8-aligned).
        if bytes_at(data, pos, ALIGN.min(len - pos)).is_some_and(|b| b.iter().all(|&x| x == 0)) {
            pos = pos.saturating_add(ALIGN);
            continue;
        }
        if out.len() >= limits::MAX_OFFLOAD_IMAGES {
            return (
                out,
                Some(err(
                    pos,
                    format!("more than {} images", limits::MAX_OFFLOAD_IMAGES),
                )),
            );
        }
        match parse_binary(data, pos) {
            Ok(entry) => {
                let size = entry.binary_size;
                out.push(entry);
                let next = pos
                    .checked_add(size)
                    .and_then(|n| n.checked_add(ALIGN - 1))
                    .map(|n| n / ALIGN * ALIGN);
                match next {
                    Some(n) => pos = n,
                    None => break,
                }
            }
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// Reads one OffloadBinary starting at `at` in `data`.
pub fn parse_binary(data: &[u8], at: u64) -> Result<OffloadEntry<'_>, OffloadError> {
    let magic = bytes_at(data, at, 4).ok_or_else(|| err(at, "truncated header"))?;
    if magic != OFFLOAD_BINARY_MAGIC {
        return Err(err(at, format!("magic {magic:02x?}, expected 10 ff 10 ad")));
    }
    if bytes_at(data, at, HEADER_SIZE).is_none() {
        return Err(err(at, "truncated header (32 bytes needed)"));
    }
    let rd64 = |o: u64| at.checked_add(o).and_then(|p| u64_at(data, p));
    let version = u32_at(data, at + 4).unwrap_or(0);
    let size = rd64(8).unwrap_or(0);
    let entry_offset = rd64(16).unwrap_or(0);
    if version != 1 {
        return Err(err(
            at + 4,
            format!("OffloadBinary version {version}; gfxkit reads version 1"),
        ));
    }
    let avail = data.len() as u64 - at;
    if size < HEADER_SIZE || size > avail {
        return Err(err(
            at + 8,
            format!("size {size} outside 32..={avail} (bytes left in the section)"),
        ));
    }
    let bin = bytes_at(data, at, size).ok_or_else(|| err(at + 8, "size runs past the end"))?;
    let entry_end = entry_offset.checked_add(ENTRY_SIZE);
    if entry_end.map_or(true, |e| e > size) {
        return Err(err(
            at + 16,
            format!("entry at {entry_offset:#x} runs past the binary's {size} bytes"),
        ));
    }
    let e = entry_offset;
    let image_kind = ImageKind(u16_at(bin, e).unwrap_or(0));
    let offload_kind = OffloadKind(u16_at(bin, e + 2).unwrap_or(0));
    let flags = u32_at(bin, e + 4).unwrap_or(0);
    let string_offset = u64_at(bin, e + 8).unwrap_or(0);
    let num_strings = u64_at(bin, e + 16).unwrap_or(0);
    let image_offset = u64_at(bin, e + 24).unwrap_or(0);
    let image_size = u64_at(bin, e + 32).unwrap_or(0);
    let image = bytes_at(bin, image_offset, image_size).ok_or_else(|| {
        err(
            at + e + 24,
            format!(
                "image at {image_offset:#x} of {image_size} bytes runs past the binary's {size} bytes"
            ),
        )
    })?;
    if num_strings > limits::MAX_OFFLOAD_STRINGS {
        return Err(err(
            at + e + 16,
            format!(
                "{num_strings} strings (limit {})",
                limits::MAX_OFFLOAD_STRINGS
            ),
        ));
    }
    let mut strings = Vec::with_capacity(num_strings as usize);
    for i in 0..num_strings {
        let Some(so) = i.checked_mul(16).and_then(|d| string_offset.checked_add(d)) else {
            return Err(err(
                at + e + 8,
                format!("string table offset {string_offset:#x} overflows"),
            ));
        };
        let key_off = u64_at(bin, so);
        let val_off = so.checked_add(8).and_then(|p| u64_at(bin, p));
        let (Some(k), Some(v)) = (key_off, val_off) else {
            return Err(err(
                at.saturating_add(so),
                format!("string entry {i} runs past the binary"),
            ));
        };
        let key = c_str(bin, k).ok_or_else(|| {
            err(
                at.saturating_add(so),
                format!("string {i}: key at {k:#x} is not a terminated UTF-8 string"),
            )
        })?;
        let value = c_str(bin, v).ok_or_else(|| {
            err(
                at.saturating_add(so).saturating_add(8),
                format!("string {i}: value at {v:#x} is not a terminated UTF-8 string"),
            )
        })?;
        strings.push((key, value));
    }
    Ok(OffloadEntry {
        binary_offset: at,
        binary_size: size,
        version,
        image_kind,
        offload_kind,
        flags,
        strings,
        image_offset: at + image_offset,
        image,
    })
}

/// The NUL-terminated UTF-8 string at `offset` in `data`.
fn c_str(data: &[u8], offset: u64) -> Option<&str> {
    let start = usize::try_from(offset).ok()?;
    let rest = data.get(start..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..end]).ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a version-1 OffloadBinary the way LLVM 19 lays it out.
    pub(crate) fn make_binary(offload_kind: u16, arch: &str, image: &[u8]) -> Vec<u8> {
        let strtab_off = HEADER_SIZE + ENTRY_SIZE + 2 * 16;
        let mut strtab = Vec::new();
        strtab.push(0u8);
        let k_triple = strtab.len() as u64;
        strtab.extend_from_slice(b"triple\0");
        let v_triple = strtab.len() as u64;
        strtab.extend_from_slice(b"amdgcn-amd-amdhsa\0");
        let k_arch = strtab.len() as u64;
        strtab.extend_from_slice(b"arch\0");
        let v_arch = strtab.len() as u64;
        strtab.extend_from_slice(arch.as_bytes());
        strtab.push(0);
        let image_off = (strtab_off + strtab.len() as u64).div_ceil(8) * 8;
        let size = (image_off + image.len() as u64).div_ceil(8) * 8;
        let mut b = Vec::new();
        b.extend_from_slice(&OFFLOAD_BINARY_MAGIC);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&HEADER_SIZE.to_le_bytes());
        b.extend_from_slice(&ENTRY_SIZE.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&offload_kind.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(HEADER_SIZE + ENTRY_SIZE).to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes());
        b.extend_from_slice(&image_off.to_le_bytes());
        b.extend_from_slice(&(image.len() as u64).to_le_bytes());
        for (k, v) in [(k_triple, v_triple), (k_arch, v_arch)] {
            b.extend_from_slice(&(strtab_off + k).to_le_bytes());
            b.extend_from_slice(&(strtab_off + v).to_le_bytes());
        }
        b.extend_from_slice(&strtab);
        b.resize(image_off as usize, 0);
        b.extend_from_slice(image);
        b.resize(size as usize, 0);
        b
    }

    #[test]
    fn reads_back_to_back_binaries_of_both_hip_kinds() {
        let mut sec = make_binary(3, "gfx90a:xnack+", b"\x7fELF-one");
        sec.extend(make_binary(4, "gfx1030", b"\x7fELF-second-image"));
        let (entries, e) = parse_offloading(&sec);
        assert_eq!(e, None);
        assert_eq!(entries.len(), 2);
        assert!(entries.iter().all(|e| e.offload_kind.is_hip()));
        assert_eq!(entries[0].arch(), Some("gfx90a:xnack+"));
        assert_eq!(entries[0].triple(), Some("amdgcn-amd-amdhsa"));
        assert_eq!(entries[1].image, b"\x7fELF-second-image");
        assert_eq!(entries[1].binary_offset, entries[0].binary_size);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = make_binary(3, "gfx906", b"\x7fELF-image-bytes");
        for n in 0..b.len() {
            let (entries, _) = parse_offloading(&b[..n]);
            assert!(entries.is_empty(), "truncated at {n} still parsed");
        }
        for i in 0..b.len() {
            for bit in [0x01u8, 0x80] {
                let mut c = b.clone();
                c[i] ^= bit;
                let _ = parse_offloading(&c);
            }
        }
    }

    #[test]
    fn offsets_near_the_top_of_the_range_are_errors() {
        let b = make_binary(3, "gfx906", b"img");
        // string_offset (entry + 8) and image_offset (entry + 24) at u64::MAX - 4.
        for field in [32 + 8, 32 + 24] {
            let mut c = b.clone();
            c[field..field + 8].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
            let (entries, e) = parse_offloading(&c);
            assert!(entries.is_empty());
            assert!(e.is_some());
        }
    }

    #[test]
    fn bad_version_is_named() {
        let mut b = make_binary(3, "gfx906", b"x");
        b[4] = 9;
        let (_, e) = parse_offloading(&b);
        let e = e.expect("error");
        assert_eq!(e.offset, 4);
        assert!(e.what.contains("version 9"), "{e}");
    }
}
