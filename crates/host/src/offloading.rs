//! `.llvm.offloading` sections: LLVM OffloadBinary images (new offload driver).
//!
//! Layout (LLVM `OffloadBinary.h` / `OffloadBinary.cpp`). All integers little-endian, all
//! offsets from the start of the binary:
//! - header, 32 bytes: `{magic 0x10FF10AD, u32 version, u64 size, u64 entries_offset, u64 n}`;
//!   in version 1 (LLVM 14-21) `n` is the size of the one entry (40), in version 2 (LLVM 22,
//!   llvm-project#169425) it is the number of entries; version 3 (LLVM main) adds
//!   `u64 inflated_size` (40 bytes), 0 for a plain binary laid out as version 2;
//! - entries, 40 bytes each: `{u16 image_kind, u16 offload_kind, u32 flags, u64 string_offset,
//!   u64 num_strings, u64 image_offset, u64 image_size}`;
//! - per entry, `num_strings` string entries: version 1 `{u64 key_offset, u64 value_offset}`
//!   (16 bytes, both NUL-terminated), version 2 `{u64 key_offset, u64 value_offset,
//!   u64 value_size}` (24 bytes, the value sized rather than terminated);
//! - the string table and the images.
//!
//! A version-3 binary whose `inflated_size` is not 0 is compressed: the header is kept, and the
//! bytes from `entries_offset` to `size` are one zstd frame (recognised by its magic) or zlib
//! stream of everything after the header of the plain binary; `size` is the compressed size
//! and `inflated_size` the plain one. [`inflate`] restores the plain binary as LLVM does (the
//! header with `size = inflated_size` and `inflated_size = 0`), which [`parse_binary`] reads;
//! [`parse_offloading`] reports a compressed binary ([`OffloadError::compressed`]) and goes on
//! with the next one.
//!
//! Several binaries may follow each other in one section, each starting 8-aligned. Offload
//! kinds: OpenMP 1, CUDA 2, HIP 3 up to LLVM 20 and 4 from LLVM 21 (the kinds became bit flags,
//! SYCL is 8), with the format version unchanged. Image kinds: object 1, bitcode 2, cubin 3,
//! fatbinary 4, PTX 5, SPIR-V 6. Flag bit 0 (`OIF_NoImage`) marks a metadata-only entry.

use crate::limits;
use gfxkit_bytes::{Cursor, OutOfBounds};
use serde::Serialize;
use std::fmt;

/// Magic bytes at the start of an OffloadBinary (`0x10FF10AD` stored little-endian).
pub const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];

/// Size of the OffloadBinary header in versions 1 and 2.
const HEADER_SIZE: u64 = 32;
/// Size of the version-3 header (`inflated_size` added).
const HEADER_SIZE_V3: u64 = 40;
/// The newest version gfxkit reads (LLVM main, `OffloadBinary::Version`).
pub const LATEST_VERSION: u32 = 3;
/// Size of one entry.
const ENTRY_SIZE: u64 = 40;
/// Size of a version-1 string entry `{key, value}`.
const STRING_ENTRY_V1: u64 = 16;
/// Size of a version-2 string entry `{key, value, value_size}`.
const STRING_ENTRY_V2: u64 = 24;
/// Alignment of binaries that follow each other in one section.
const ALIGN: u64 = 8;
/// Entry flag: the entry holds metadata only, no image (`OIF_NoImage`).
pub const OIF_NO_IMAGE: u32 = 1;

/// The kind of image an OffloadBinary carries (`IMG_*`). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageKind(pub u16);

impl ImageKind {
    /// A relocatable or executable object (for AMD GPUs an ELF code object).
    pub const OBJECT: ImageKind = ImageKind(1);
    /// LLVM bitcode (`-fgpu-rdc` / LTO).
    pub const BITCODE: ImageKind = ImageKind(2);
    /// SPIR-V (`IMG_SPIRV`; for AMD GPUs the `amdgcnspirv` target).
    pub const SPIRV: ImageKind = ImageKind(6);

    /// Name as LLVM spells it (`o`, `bc`, `cubin`, `fatbin`, `s`, `spv`), or `unknown(N)`.
    pub fn name(self) -> String {
        match self.0 {
            0 => "none".into(),
            1 => "o".into(),
            2 => "bc".into(),
            3 => "cubin".into(),
            4 => "fatbin".into(),
            5 => "s".into(),
            6 => "spv".into(),
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
    /// HIP as LLVM 14 to 20 write it.
    pub const HIP_LLVM20: OffloadKind = OffloadKind(3);
    /// HIP as LLVM 21 and later write it (`OFK_HIP = 1 << 2`).
    pub const HIP: OffloadKind = OffloadKind(4);

    /// Whether this is HIP: 3 up to LLVM 20, 4 from LLVM 21.
    pub fn is_hip(self) -> bool {
        self == Self::HIP_LLVM20 || self == Self::HIP
    }

    /// Name: `openmp`, `cuda`, `hip`, `sycl`, or `unknown(N)`. LLVM 21 renumbered the kinds
    /// as bit flags without changing the format version; 3 (an old HIP) is no combination a
    /// compiler writes, so both 3 and 4 read as HIP.
    pub fn name(self) -> String {
        match self.0 {
            0 => "none".into(),
            1 => "openmp".into(),
            2 => "cuda".into(),
            3 | 4 => "hip".into(),
            8 => "sycl".into(),
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

/// One entry (image) of an OffloadBinary, borrowing from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadEntry<'data> {
    /// Offset of the OffloadBinary header in the parsed bytes.
    pub binary_offset: u64,
    /// Total size of the OffloadBinary (header `size`).
    pub binary_size: u64,
    /// Header version (1 or 2).
    pub version: u32,
    /// Index of this entry in its binary (always 0 in version 1).
    pub index: u64,
    /// Image kind.
    pub image_kind: ImageKind,
    /// Offload kind.
    pub offload_kind: OffloadKind,
    /// Entry flags ([`OIF_NO_IMAGE`]).
    pub flags: u32,
    /// Key/value strings (`triple`, `arch`, ...), in stored order; values that are not UTF-8
    /// (version 2 allows any bytes) are in `binary_strings`.
    pub strings: Vec<(&'data str, &'data str)>,
    /// Key/value pairs whose value is not UTF-8 text.
    pub binary_strings: Vec<(&'data str, &'data [u8])>,
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

    /// Whether the entry holds metadata only ([`OIF_NO_IMAGE`]).
    pub fn has_no_image(&self) -> bool {
        self.flags & OIF_NO_IMAGE != 0
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
    /// For a compressed version-3 binary, which is well formed but must be inflated
    /// ([`inflate`]) before its entries can be read: what it holds.
    pub compressed: Option<Compressed>,
}

/// A compressed (version 3) OffloadBinary's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressed {
    /// The codec of the body (zstd when it starts with the zstd magic, else zlib).
    pub method: gfxkit_bundle::Method,
    /// Bytes stored (header and compressed body).
    pub size: u64,
    /// Bytes of the plain binary.
    pub inflated_size: u64,
    /// Entries of the plain binary.
    pub entries: u64,
}

fn err(offset: u64, what: impl Into<String>) -> OffloadError {
    OffloadError {
        offset,
        what: what.into(),
        compressed: None,
    }
}

/// The zstd frame magic (`28 b5 2f fd`), which tells a zstd body from a zlib one.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Reads every OffloadBinary in `data` (the contents of a `.llvm.offloading` section): each
/// starts at an 8-aligned offset after the previous one. Zero padding between them is skipped.
/// Returns the entries read (every entry of every binary, in order) and, if reading stopped
/// early, why. A compressed (version 3) binary is passed over, its entries unread, and
/// reported as the error (the first such one; [`OffloadError::compressed`] is set) when
/// nothing worse stopped the reading.
pub fn parse_offloading(data: &[u8]) -> (Vec<OffloadEntry<'_>>, Option<OffloadError>) {
    let mut first_compressed: Option<OffloadError> = None;
    let mut out = Vec::new();
    let mut pos: u64 = 0;
    let len = data.len() as u64;
    while pos < len {
        // Skip zero padding, 8 bytes at a time (binaries start 8-aligned).
        let c = Cursor::new(data);
        if c.slice(pos, ALIGN.min(len - pos))
            .is_ok_and(|b| b.iter().all(|&x| x == 0))
        {
            pos = pos.saturating_add(ALIGN);
            continue;
        }
        match parse_binary(data, pos) {
            Ok(entries) => {
                let size = entries.first().map_or(HEADER_SIZE, |e| e.binary_size);
                if out.len() + entries.len() > limits::MAX_OFFLOAD_IMAGES {
                    return (
                        out,
                        Some(err(
                            pos,
                            format!("more than {} images", limits::MAX_OFFLOAD_IMAGES),
                        )),
                    );
                }
                out.extend(entries);
                let next = pos
                    .checked_add(size)
                    .and_then(|n| n.checked_add(ALIGN - 1))
                    .map(|n| n / ALIGN * ALIGN);
                match next {
                    Some(n) => pos = n,
                    None => break,
                }
            }
            // A compressed binary is sized by its header: the next one may follow it.
            Err(e) if e.compressed.is_some() => {
                let size = e.compressed.map_or(0, |c| c.size);
                first_compressed.get_or_insert(e);
                match pos
                    .checked_add(size)
                    .and_then(|n| n.checked_add(ALIGN - 1))
                    .map(|n| n / ALIGN * ALIGN)
                {
                    Some(n) => pos = n,
                    None => break,
                }
            }
            Err(e) => return (out, Some(e)),
        }
    }
    (out, first_compressed)
}

/// Reads the OffloadBinary starting at `at` in `data`: its entries, in order (one for a
/// version-1 binary; none for a version-2 binary that declares none). Every error names an
/// offset inside `data` ([`Cursor`]).
pub fn parse_binary(data: &[u8], at: u64) -> Result<Vec<OffloadEntry<'_>>, OffloadError> {
    let c = Cursor::new(data);
    let truncated = |what: String| move |e: OutOfBounds| err(e.offset(), what.clone());
    let magic = c
        .slice(at, 4)
        .map_err(truncated("truncated header".into()))?;
    if magic != OFFLOAD_BINARY_MAGIC {
        return Err(err(at, format!("magic {magic:02x?}, expected 10 ff 10 ad")));
    }
    let h = c
        .sub(at, HEADER_SIZE)
        .map_err(|_| err(at, "truncated header (32 bytes needed)"))?;
    let header = truncated("truncated header".into());
    let version = h.u32(4).map_err(&header)?;
    let size = h.u64(8).map_err(&header)?;
    let entries_offset = h.u64(16).map_err(&header)?;
    let last = h.u64(24).map_err(&header)?;
    let (string_entry, header_size) = match version {
        1 => (STRING_ENTRY_V1, HEADER_SIZE),
        2 => (STRING_ENTRY_V2, HEADER_SIZE),
        3 => (STRING_ENTRY_V2, HEADER_SIZE_V3),
        _ => {
            return Err(err(
                at + 4,
                format!("OffloadBinary version {version}; gfxkit reads versions 1 to 3"),
            ))
        }
    };
    let h = c.sub(at, header_size).map_err(|_| {
        err(
            at,
            format!("truncated version-{version} header ({header_size} bytes needed)"),
        )
    })?;
    let avail = c.len() - at;
    if size < header_size || size > avail {
        return Err(err(
            at + 8,
            format!("size {size} outside {header_size}..={avail} (bytes left in the section)"),
        ));
    }
    if version >= 3 && h.u64(32).map_err(&header)? != 0 {
        let c = compressed_header(data, at)?;
        return Err(OffloadError {
            offset: at,
            what: format!(
                "compressed OffloadBinary ({} bytes of {}, {} bytes and {} entries inflated); \
                 its entries are not read",
                c.size,
                c.method.name(),
                c.inflated_size,
                c.entries
            ),
            compressed: Some(c),
        });
    }
    let bin = c
        .sub(at, size)
        .map_err(|_| err(at + 8, "size runs past the end"))?;
    // Version 1: the last header field is the entry's size; versions 2 and 3: the entry count.
    // (LLVM writes 40 there and never reads it back; neither does gfxkit.)
    let count = if version == 1 { 1 } else { last };
    if count > limits::MAX_OFFLOAD_IMAGES as u64 {
        return Err(err(
            at + 24,
            format!("{count} entries (limit {})", limits::MAX_OFFLOAD_IMAGES),
        ));
    }
    let table_end = count
        .checked_mul(ENTRY_SIZE)
        .and_then(|n| n.checked_add(entries_offset));
    if table_end.map_or(true, |e| e > size) || (count > 0 && entries_offset < header_size) {
        return Err(err(
            at + 16,
            format!(
                "{count} entries of {ENTRY_SIZE} bytes at {entries_offset:#x} do not fit the binary's {size} bytes"
            ),
        ));
    }
    let mut out = Vec::with_capacity(count as usize);
    for index in 0..count {
        let e = entries_offset + index * ENTRY_SIZE;
        out.push(parse_entry(bin, e, version, index, string_entry)?);
    }
    Ok(out)
}

/// Reads the entry at offset `e` of the binary `bin` (a cursor over it, at its offset in the
/// parsed bytes).
fn parse_entry<'data>(
    bin: Cursor<'data>,
    e: u64,
    version: u32,
    index: u64,
    string_entry: u64,
) -> Result<OffloadEntry<'data>, OffloadError> {
    let size = bin.len();
    let what = |s: String| {
        if version == 1 {
            s
        } else {
            format!("entry {index}: {s}")
        }
    };
    let f = bin
        .sub(e, ENTRY_SIZE)
        .map_err(|x| err(x.offset(), what("entry runs past the binary".into())))?;
    let field = |x: OutOfBounds| err(x.offset(), what("entry runs past the binary".into()));
    let image_kind = ImageKind(f.u16(0).map_err(field)?);
    let offload_kind = OffloadKind(f.u16(2).map_err(field)?);
    let flags = f.u32(4).map_err(field)?;
    let string_offset = f.u64(8).map_err(field)?;
    let num_strings = f.u64(16).map_err(field)?;
    let image_offset = f.u64(24).map_err(field)?;
    let image_size = f.u64(32).map_err(field)?;
    let image = bin.slice(image_offset, image_size).map_err(|_| {
        err(
            f.abs(24),
            what(format!(
                "image at {image_offset:#x} of {image_size} bytes runs past the binary's {size} bytes"
            )),
        )
    })?;
    if num_strings > limits::MAX_OFFLOAD_STRINGS {
        return Err(err(
            f.abs(16),
            what(format!(
                "{num_strings} strings (limit {})",
                limits::MAX_OFFLOAD_STRINGS
            )),
        ));
    }
    let mut strings = Vec::with_capacity(num_strings as usize);
    let mut binary_strings = Vec::new();
    for i in 0..num_strings {
        let Some(so) = i
            .checked_mul(string_entry)
            .and_then(|d| string_offset.checked_add(d))
        else {
            return Err(err(
                f.abs(8),
                what(format!("string table offset {string_offset:#x} overflows")),
            ));
        };
        // A string entry outside the binary: the field that leads there is what is wrong.
        let s = bin.sub(so, string_entry).map_err(|_| {
            err(
                if so < size { bin.abs(so) } else { f.abs(8) },
                what(format!(
                    "string entry {i} at {so:#x} runs past the binary's {size} bytes"
                )),
            )
        })?;
        let entry = |x: OutOfBounds| err(x.offset(), what(format!("string entry {i} is cut")));
        let k = s.u64(0).map_err(entry)?;
        let v = s.u64(8).map_err(entry)?;
        let key = c_str(bin.bytes(), k).ok_or_else(|| {
            err(
                s.abs(0),
                what(format!(
                    "string {i}: key at {k:#x} is not a terminated UTF-8 string"
                )),
            )
        })?;
        if version == 1 {
            let value = c_str(bin.bytes(), v).ok_or_else(|| {
                err(
                    s.abs(8),
                    what(format!(
                        "string {i}: value at {v:#x} is not a terminated UTF-8 string"
                    )),
                )
            })?;
            strings.push((key, value));
            continue;
        }
        let value_size = s.u64(16).map_err(entry)?;
        let value = bin.slice(v, value_size).map_err(|_| {
            err(
                s.abs(8),
                what(format!(
                    "string {i} ({key}): value at {v:#x} of {value_size} bytes runs past the binary"
                )),
            )
        })?;
        match std::str::from_utf8(value) {
            Ok(text) => strings.push((key, text)),
            Err(_) => binary_strings.push((key, value)),
        }
    }
    Ok(OffloadEntry {
        binary_offset: bin.base(),
        binary_size: size,
        version,
        index,
        image_kind,
        offload_kind,
        flags,
        strings,
        binary_strings,
        image_offset: bin.abs(image_offset),
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

/// The header of the compressed version-3 binary at `at` (checked: the body lies within
/// `size`, `inflated_size` leaves room for the header).
fn compressed_header(data: &[u8], at: u64) -> Result<Compressed, OffloadError> {
    let h = Cursor::new(data)
        .sub(at, HEADER_SIZE_V3)
        .map_err(|e| err(e.offset(), "truncated version-3 header"))?;
    let header = |e: OutOfBounds| err(e.offset(), "truncated version-3 header");
    let size = h.u64(8).map_err(header)?;
    let entries_offset = h.u64(16).map_err(header)?;
    let entries = h.u64(24).map_err(header)?;
    let inflated_size = h.u64(32).map_err(header)?;
    if entries_offset < HEADER_SIZE_V3 || entries_offset > size || inflated_size < entries_offset {
        return Err(err(
            at + 16,
            format!(
                "compressed OffloadBinary: entries offset {entries_offset:#x} outside the header \
                 and the {size} stored bytes, or past the {inflated_size} inflated bytes"
            ),
        ));
    }
    if inflated_size > gfxkit_bundle::limits::MAX_UNCOMPRESSED_SIZE {
        return Err(err(
            at + 32,
            format!(
                "compressed OffloadBinary inflating to {inflated_size} bytes (limit {})",
                gfxkit_bundle::limits::MAX_UNCOMPRESSED_SIZE
            ),
        ));
    }
    let body = Cursor::new(data).slice(at.saturating_add(entries_offset), 4);
    let method = if body == Ok(&ZSTD_MAGIC[..]) {
        gfxkit_bundle::Method::Zstd
    } else {
        gfxkit_bundle::Method::Zlib
    };
    Ok(Compressed {
        method,
        size,
        inflated_size,
        entries,
    })
}

/// Inflates the compressed version-3 OffloadBinary at `at` in `data` into the plain binary
/// LLVM restores (`OffloadBinary.cpp`, `decompressOffloadBinary`): its header with `size` set
/// to `inflated_size` and `inflated_size` to 0, then the decompressed body, which must be
/// exactly `inflated_size - entries_offset` bytes. Offsets in the result are those of the plain
/// binary; [`parse_binary`]`(&result, 0)` reads its entries.
pub fn inflate(data: &[u8], at: u64) -> Result<Vec<u8>, OffloadError> {
    let c = Cursor::new(data);
    let magic = c
        .slice(at, 4)
        .map_err(|e| err(e.offset(), "truncated header"))?;
    if magic != OFFLOAD_BINARY_MAGIC {
        return Err(err(at, format!("magic {magic:02x?}, expected 10 ff 10 ad")));
    }
    let version = c
        .u32(at.saturating_add(4))
        .map_err(|e| err(e.offset(), "truncated header"))?;
    let h = c.sub(at, HEADER_SIZE_V3);
    let header = |e: OutOfBounds| err(e.offset(), "truncated version-3 header");
    if version < 3 || h.map_err(header)?.u64(32).map_err(header)? == 0 {
        return Err(err(
            at + 4,
            format!("OffloadBinary version {version} is not compressed"),
        ));
    }
    let entries_offset = h.map_err(header)?.u64(16).map_err(header)?;
    let c = compressed_header(data, at)?;
    let stored = Cursor::new(data).slice(at, c.size).map_err(|_| {
        err(
            at + 8,
            format!("compressed size {} runs past the section", c.size),
        )
    })?;
    let body = &stored[entries_offset as usize..];
    let want = c.inflated_size - entries_offset;
    let (plain, _) = gfxkit_bundle::codec::decompress(c.method, body, want, None).map_err(|e| {
        err(
            at + entries_offset,
            format!("compressed OffloadBinary body ({}): {e}", c.method.name()),
        )
    })?;
    // Sized from what was decoded (within the codec's bounds), never from the header alone.
    let mut out = Vec::with_capacity(entries_offset as usize + plain.len());
    out.extend_from_slice(&stored[..entries_offset as usize]);
    out[8..16].copy_from_slice(&c.inflated_size.to_le_bytes());
    out[32..40].copy_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&plain);
    Ok(out)
}

/// One image for [`write_v2`].
#[derive(Debug, Clone)]
pub struct Image<'a> {
    /// `IMG_*` ([`ImageKind`]).
    pub image_kind: u16,
    /// `OFK_*` ([`OffloadKind`]).
    pub offload_kind: u16,
    /// Entry flags.
    pub flags: u32,
    /// Key/value strings, in order.
    pub strings: Vec<(&'a str, &'a [u8])>,
    /// The image.
    pub image: &'a [u8],
}

/// Writes a version-2 OffloadBinary laid out as `OffloadBinary.cpp` describes it: header, the
/// entries, every entry's string entries (24 bytes), the string table (keys and values
/// NUL-terminated, values also sized), then the images, each 8-aligned, the whole padded to 8.
///
/// gfxkit packages nothing into OffloadBinaries; this exists so that tests can make the
/// version-2 inputs LLVM 22 writes and LLVM 19 cannot, and read them back.
pub fn write_v2(images: &[Image<'_>]) -> Vec<u8> {
    write_plain(images, 2)
}

/// Writes a plain version-3 OffloadBinary (LLVM main): the version-2 layout with the 40-byte
/// header, `inflated_size` 0.
pub fn write_v3(images: &[Image<'_>]) -> Vec<u8> {
    write_plain(images, 3)
}

/// Writes a compressed version-3 OffloadBinary as LLVM main's
/// `OffloadBinary::write(images, compression::Params)` does: the plain binary's header with
/// `inflated_size` set to the plain size and `size` to the header plus the compressed body,
/// then the body after the header compressed as one zstd frame or zlib stream (`level`), padded
/// to 8 bytes. [`inflate`] gives back [`write_v3`]'s bytes.
pub fn write_v3_compressed(
    images: &[Image<'_>],
    method: gfxkit_bundle::Method,
    level: i32,
) -> Result<Vec<u8>, gfxkit_bundle::Error> {
    let plain = write_plain(images, 3);
    let body = gfxkit_bundle::codec::compress(method, level, 0, &plain[HEADER_SIZE_V3 as usize..])?;
    let size = HEADER_SIZE_V3 + body.len() as u64;
    let mut b = plain[..HEADER_SIZE_V3 as usize].to_vec();
    b[8..16].copy_from_slice(&size.to_le_bytes());
    b[32..40].copy_from_slice(&(plain.len() as u64).to_le_bytes());
    b.extend_from_slice(&body);
    b.resize(size.div_ceil(ALIGN) as usize * ALIGN as usize, 0);
    Ok(b)
}

fn write_plain(images: &[Image<'_>], version: u32) -> Vec<u8> {
    let header = if version >= 3 {
        HEADER_SIZE_V3
    } else {
        HEADER_SIZE
    };
    let entries_size = images.len() as u64 * ENTRY_SIZE;
    let nstrings: u64 = images.iter().map(|i| i.strings.len() as u64).sum();
    let strtab_off = header + entries_size + nstrings * STRING_ENTRY_V2;
    let mut strtab = Vec::new();
    let mut string_entries = Vec::new();
    let mut string_offsets = Vec::new();
    for img in images {
        string_offsets.push(header + entries_size + string_entries.len() as u64);
        for (k, v) in &img.strings {
            let ko = strtab_off + strtab.len() as u64;
            strtab.extend_from_slice(k.as_bytes());
            strtab.push(0);
            let vo = strtab_off + strtab.len() as u64;
            strtab.extend_from_slice(v);
            strtab.push(0);
            for x in [ko, vo, v.len() as u64] {
                string_entries.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    let mut pos = (strtab_off + strtab.len() as u64).div_ceil(8) * 8;
    let mut image_offsets = Vec::new();
    for img in images {
        image_offsets.push(pos);
        pos = (pos + img.image.len() as u64).div_ceil(8) * 8;
    }
    let size = pos;
    let mut b = Vec::new();
    b.extend_from_slice(&OFFLOAD_BINARY_MAGIC);
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&header.to_le_bytes());
    b.extend_from_slice(&(images.len() as u64).to_le_bytes());
    if version >= 3 {
        b.extend_from_slice(&0u64.to_le_bytes());
    }
    for (i, img) in images.iter().enumerate() {
        b.extend_from_slice(&img.image_kind.to_le_bytes());
        b.extend_from_slice(&img.offload_kind.to_le_bytes());
        b.extend_from_slice(&img.flags.to_le_bytes());
        b.extend_from_slice(&string_offsets[i].to_le_bytes());
        b.extend_from_slice(&(img.strings.len() as u64).to_le_bytes());
        b.extend_from_slice(&image_offsets[i].to_le_bytes());
        b.extend_from_slice(&(img.image.len() as u64).to_le_bytes());
    }
    b.extend_from_slice(&string_entries);
    b.extend_from_slice(&strtab);
    for (i, img) in images.iter().enumerate() {
        b.resize(image_offsets[i] as usize, 0);
        b.extend_from_slice(img.image);
    }
    b.resize(size as usize, 0);
    b
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn u32_at(d: &[u8], at: u64) -> Option<u32> {
        Cursor::new(d).u32(at).ok()
    }

    fn u64_at(d: &[u8], at: u64) -> Option<u64> {
        Cursor::new(d).u64(at).ok()
    }

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

    /// A HIP image for `arch` with LLVM 22's kind (4) and triple.
    pub(crate) fn hip_image<'a>(triple: &'a str, arch: &'a str, image: &'a [u8]) -> Image<'a> {
        Image {
            image_kind: 1,
            offload_kind: 4,
            flags: 0,
            strings: vec![("triple", triple.as_bytes()), ("arch", arch.as_bytes())],
            image,
        }
    }

    /// A plain version-3 binary written byte by byte from LLVM main's `OffloadBinary.h`: the
    /// 40-byte header (`inflated_size` 0), one entry, two 24-byte string entries, the string
    /// table, the image.
    fn hand_made_v3() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&OFFLOAD_BINARY_MAGIC);
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes()); // size, patched below
        b.extend_from_slice(&40u64.to_le_bytes()); // entries offset
        b.extend_from_slice(&1u64.to_le_bytes()); // entry count
        b.extend_from_slice(&0u64.to_le_bytes()); // inflated size: plain
                                                  // Entry at 40: object, HIP (4), no flags, strings at 80 (2), image at 168 (8 bytes).
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&4u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for v in [80u64, 2, 168, 8] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        // String entries at 80: {key, value, value size}; the table at 128.
        for v in [128u64, 135, 17, 153, 158, 6] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(b.len(), 128);
        b.extend_from_slice(b"triple\0amdgcn-amd-amdhsa\0arch\0gfx950\0");
        // The table ends at 165; the image starts 8-aligned.
        b.resize(168, 0);
        b.extend_from_slice(b"\x7fELF-950");
        let size = b.len() as u64;
        b[8..16].copy_from_slice(&size.to_le_bytes());
        b
    }

    #[test]
    fn version_3_plain_binaries_read_as_version_2() {
        let bin = hand_made_v3();
        let (entries, stop) = parse_offloading(&bin);
        assert_eq!(stop, None);
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!(e.version, 3);
        assert_eq!(
            (e.triple(), e.arch()),
            (Some("amdgcn-amd-amdhsa"), Some("gfx950"))
        );
        assert_eq!(e.image, b"\x7fELF-950");
        assert_eq!(e.image_offset, 168);
        assert!(e.offload_kind.is_hip());
        // gfxkit's writer lays it out the same way.
        let img = hip_image("amdgcn-amd-amdhsa", "gfx950", b"\x7fELF-950");
        assert_eq!(write_v3(&[img]), bin);
        // A 32-byte header claiming version 3 is too short for it.
        let e = parse_binary(&bin[..36], 0).unwrap_err();
        assert!(e.what.contains("40 bytes needed"), "{e}");
        // Entries inside the 40-byte header are refused.
        let mut c = bin.clone();
        c[16..24].copy_from_slice(&32u64.to_le_bytes());
        assert!(parse_binary(&c, 0).is_err());
    }

    #[test]
    fn version_3_compressed_binaries_inflate_to_the_plain_binary() {
        let images = [
            hip_image(
                "amdgcn-amd-amdhsa",
                "gfx90a:xnack-",
                b"\x7fELF-90a-code-code-code",
            ),
            hip_image("amdgcn-amd-amdhsa", "gfx1250", b"\x7fELF-1250-code-code"),
        ];
        let plain = write_v3(&images);
        for method in [gfxkit_bundle::Method::Zstd, gfxkit_bundle::Method::Zlib] {
            let packed = write_v3_compressed(&images, method, 3).unwrap();
            // The header as the format says: size is the stored size, inflated_size the plain.
            assert_eq!(u32_at(&packed, 4), Some(3));
            let size = u64_at(&packed, 8).unwrap();
            assert_eq!(u64_at(&packed, 16), Some(40));
            assert_eq!(u64_at(&packed, 24), Some(2));
            assert_eq!(u64_at(&packed, 32), Some(plain.len() as u64));
            assert_eq!(packed.len() as u64, size.div_ceil(8) * 8);
            assert_eq!(
                packed[40..44] == ZSTD_MAGIC,
                method == gfxkit_bundle::Method::Zstd
            );
            assert_eq!(inflate(&packed, 0).unwrap(), plain, "{method:?}");
            let e = parse_binary(&packed, 0).unwrap_err();
            let c = e.compressed.unwrap();
            assert_eq!((c.method, c.entries), (method, 2));
            assert_eq!(c.inflated_size, plain.len() as u64);
        }
        // A body compressed by hand (zstd, from the format description) inflates too.
        let body = zstd::encode_all(&plain[40..], 1).unwrap();
        let mut b = plain[..40].to_vec();
        b[8..16].copy_from_slice(&(40 + body.len() as u64).to_le_bytes());
        b[32..40].copy_from_slice(&(plain.len() as u64).to_le_bytes());
        b.extend_from_slice(&body);
        assert_eq!(inflate(&b, 0).unwrap(), plain);
        // In a section: the compressed binary is passed over (reported), the ones around it read.
        let mut section = write_v2(&[hip_image("amdgcn-amd-amdhsa", "gfx906", b"\x7fELF-906")]);
        section.extend_from_slice(
            &write_v3_compressed(&images, gfxkit_bundle::Method::Zstd, 3).unwrap(),
        );
        section.extend_from_slice(&hand_made_v3());
        let (entries, stop) = parse_offloading(&section);
        let archs: Vec<_> = entries.iter().map(|e| e.arch().unwrap()).collect();
        assert_eq!(archs, ["gfx906", "gfx950"]);
        let stop = stop.unwrap();
        assert!(stop.compressed.is_some());
        assert!(stop.what.contains("compressed OffloadBinary"), "{stop}");
    }

    #[test]
    fn damaged_compressed_binaries_are_errors() {
        let images = [hip_image("amdgcn-amd-amdhsa", "gfx942", b"\x7fELF-942")];
        let packed = write_v3_compressed(&images, gfxkit_bundle::Method::Zstd, 3).unwrap();
        // Inflated size one byte off: the body does not decode to it.
        let mut c = packed.clone();
        let n = u64_at(&c, 32).unwrap();
        c[32..40].copy_from_slice(&(n + 1).to_le_bytes());
        assert!(inflate(&c, 0).is_err());
        // An absurd inflated size is refused before anything is allocated.
        c[32..40].copy_from_slice(&(1u64 << 60).to_le_bytes());
        let e = inflate(&c, 0).unwrap_err();
        assert!(e.what.contains("limit"), "{e}");
        // Inflated size smaller than the header.
        c[32..40].copy_from_slice(&8u64.to_le_bytes());
        assert!(inflate(&c, 0).is_err());
        // A cut body, every cut, never panics.
        let size = u64_at(&packed, 8).unwrap() as usize;
        for cut in 0..size {
            let _ = inflate(&packed[..cut], 0);
            let _ = parse_offloading(&packed[..cut]);
        }
        // Bit flips never panic.
        for i in 0..packed.len() {
            let mut c = packed.clone();
            c[i] ^= 0x41;
            let _ = inflate(&c, 0);
            let _ = parse_offloading(&c);
        }
        // A plain binary is not inflated.
        assert!(inflate(&write_v3(&images), 0).is_err());
        assert!(inflate(&write_v2(&images), 0).is_err());
    }

    #[test]
    fn version_2_holds_many_entries() {
        let images = [
            hip_image("amdgcn-amd-amdhsa", "gfx90a:xnack+", b"\x7fELF-90a"),
            hip_image("amdgpu9.42-amd-amdhsa", "gfx942", b"\x7fELF-942-longer"),
            Image {
                image_kind: 6,
                offload_kind: 4,
                flags: 0,
                strings: vec![("triple", b"spirv64-amd-amdhsa"), ("arch", b"amdgcnspirv")],
                image: b"\x03\x02\x23\x07spirv",
            },
        ];
        let bin = write_v2(&images);
        // The header's last field counts the entries.
        assert_eq!(u32_at(&bin, 4), Some(2));
        assert_eq!(u64_at(&bin, 24), Some(3));
        assert_eq!(u64_at(&bin, 8), Some(bin.len() as u64));
        let (entries, stop) = parse_offloading(&bin);
        assert_eq!(stop, None);
        assert_eq!(entries.len(), 3);
        for (i, (e, want)) in entries.iter().zip(&images).enumerate() {
            assert_eq!(e.index, i as u64);
            assert_eq!(e.version, 2);
            assert_eq!(e.binary_offset, 0);
            assert_eq!(e.binary_size, bin.len() as u64);
            assert_eq!(e.image, want.image);
            assert_eq!(e.image_kind, ImageKind(want.image_kind));
            assert!(e.offload_kind.is_hip());
            assert_eq!(
                &bin[e.image_offset as usize..][..e.image.len()],
                want.image,
                "image_offset is an offset in the parsed bytes"
            );
        }
        assert_eq!(entries[1].triple(), Some("amdgpu9.42-amd-amdhsa"));
        assert_eq!(entries[1].arch(), Some("gfx942"));
        assert_eq!(entries[2].image_kind, ImageKind::SPIRV);
        assert_eq!(entries[2].image_kind.name(), "spv");
        assert_eq!(entries[2].arch(), Some("amdgcnspirv"));
    }

    #[test]
    fn round_trip_through_the_writer() {
        // write(read(b)) == b for binaries laid out canonically, several back to back, one V1.
        let images_a = [
            hip_image("amdgcn-amd-amdhsa", "gfx1100", b"\x7fELF-a"),
            hip_image("amdgcn-amd-amdhsa", "gfx1201", b"\x7fELF-bb"),
        ];
        let images_b = [hip_image("amdgcn-amd-amdhsa", "gfx906:xnack-", &[9u8; 100])];
        let a = write_v2(&images_a);
        let b = write_v2(&images_b);
        let mut sec = a.clone();
        sec.extend(make_binary(3, "gfx803", b"\x7fELF-v1"));
        sec.extend(&b);
        let (entries, stop) = parse_offloading(&sec);
        assert_eq!(stop, None);
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[2].version, 1);
        assert_eq!(entries[2].offload_kind, OffloadKind::HIP_LLVM20);
        let rewrite = |es: &[OffloadEntry<'_>]| {
            let imgs: Vec<Image<'_>> = es
                .iter()
                .map(|e| Image {
                    image_kind: e.image_kind.0,
                    offload_kind: e.offload_kind.0,
                    flags: e.flags,
                    strings: e.strings.iter().map(|(k, v)| (*k, v.as_bytes())).collect(),
                    image: e.image,
                })
                .collect();
            write_v2(&imgs)
        };
        assert_eq!(rewrite(&entries[..2]), a);
        assert_eq!(rewrite(&entries[3..]), b);
        assert_eq!(
            entries[3].binary_offset,
            (a.len() + make_binary(3, "gfx803", b"\x7fELF-v1").len()) as u64
        );
    }

    #[test]
    fn version_2_values_are_sized_not_terminated() {
        let mut img = hip_image("amdgcn-amd-amdhsa", "gfx90a", b"code");
        img.strings.push(("blob", &[0xff, 0x00, 0xfe]));
        let bin = write_v2(&[img]);
        let (entries, stop) = parse_offloading(&bin);
        assert_eq!(stop, None);
        assert_eq!(entries[0].arch(), Some("gfx90a"));
        assert_eq!(
            entries[0].binary_strings,
            [("blob", &[0xff, 0x00, 0xfe][..])]
        );
        // A value size past the binary is an error naming the string.
        let mut bad = bin.clone();
        let size_field = (HEADER_SIZE + ENTRY_SIZE + 16) as usize;
        bad[size_field..size_field + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let (entries, stop) = parse_offloading(&bad);
        assert!(entries.is_empty());
        let e = stop.unwrap();
        assert!(e.what.contains("entry 0: string 0 (triple)"), "{e}");
        assert_eq!(e.offset, HEADER_SIZE + ENTRY_SIZE + 8);
    }

    #[test]
    fn version_2_damage_is_named() {
        let bin = write_v2(&[
            hip_image("amdgcn-amd-amdhsa", "gfx90a", b"one"),
            hip_image("amdgcn-amd-amdhsa", "gfx942", b"two"),
        ]);
        // More entries than fit.
        let mut c = bin.clone();
        c[24..32].copy_from_slice(&1000u64.to_le_bytes());
        let (_, e) = parse_offloading(&c);
        assert!(e.unwrap().what.contains("1000 entries"));
        // A huge count is refused before anything is allocated.
        c[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        let (_, e) = parse_offloading(&c);
        assert_eq!(e.unwrap().offset, 24);
        // The second entry's image past the end names entry 1.
        let mut c = bin.clone();
        let f = (HEADER_SIZE + ENTRY_SIZE + 24) as usize;
        c[f..f + 8].copy_from_slice(&(bin.len() as u64).to_le_bytes());
        let (entries, e) = parse_offloading(&c);
        assert!(entries.is_empty());
        let e = e.unwrap();
        assert!(e.what.starts_with("entry 1: image at"), "{e}");
        assert_eq!(e.offset, f as u64);
        // Every truncation and bit flip gives an error or a result, never a panic.
        for n in 0..bin.len() {
            let (entries, _) = parse_offloading(&bin[..n]);
            assert!(entries.is_empty(), "truncated at {n}");
        }
        for i in 0..bin.len() {
            for bit in [0x01u8, 0x40, 0x80] {
                let mut c = bin.clone();
                c[i] ^= bit;
                let _ = parse_offloading(&c);
            }
        }
        // An unknown version is named, not misread.
        let mut c = bin.clone();
        c[4] = 4;
        let (_, e) = parse_offloading(&c);
        assert!(e
            .unwrap()
            .what
            .contains("version 4; gfxkit reads versions 1 to 3"));
    }

    #[test]
    fn metadata_only_entries_and_kinds() {
        let mut meta = hip_image("amdgcn-amd-amdhsa", "gfx90a", b"");
        meta.flags = OIF_NO_IMAGE;
        let bin = write_v2(&[meta, hip_image("amdgcn-amd-amdhsa", "gfx90a", b"code")]);
        let (entries, _) = parse_offloading(&bin);
        assert!(entries[0].has_no_image() && !entries[1].has_no_image());
        for (k, name, hip) in [
            (1, "openmp", false),
            (2, "cuda", false),
            (3, "hip", true),
            (4, "hip", true),
            (8, "sycl", false),
            (16, "unknown(16)", false),
        ] {
            assert_eq!(OffloadKind(k).name(), name);
            assert_eq!(OffloadKind(k).is_hip(), hip);
        }
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
