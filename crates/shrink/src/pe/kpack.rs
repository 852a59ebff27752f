//! The PE32+ layout of ROCm's kpack split (TheRock's Windows transform), both ways.
//!
//! [`split_image`] turns a fat DLL or EXE into the host-only image TheRock's Windows splitter
//! makes: a new last section [`MARKER_SECTION`] (`.kpackrf`, read-only initialized data)
//! holds the MessagePack marker; every `.hipFatB` wrapper gets magic `HIPK`, its index N in the
//! u64 at +16 and its pointer set to the marker's virtual address (the `IMAGE_REL_BASED_DIR64`
//! entry that fixes the pointer stays: only the value it adjusts changes). `.hip_fat` keeps its
//! `VirtualAddress`, `VirtualSize` and `PointerToRawData` but its `SizeOfRawData` becomes 0
//! (the loader zero-fills it), and its bytes leave the file:
//!
//! ```text
//! before:  [ headers | .text | .rdata | .hip_fat ...... | .hipFatB | .reloc ]
//! after:   [ headers+1 | .text | .rdata | .hipFatB | .reloc | .kpackrf ]
//! ```
//!
//! The raw data of every section after `.hip_fat` moves down by its old `SizeOfRawData` (a
//! multiple of `FileAlignment`); the marker's raw data goes after the last section's (before
//! anything the file holds outside its sections, which moves with it). `NumberOfSections`,
//! `SizeOfImage` (the marker's pages), `SizeOfInitializedData`, the file offsets of the debug
//! directory and the COFF symbol table follow, and `CheckSum` is recomputed when it was set.
//! The new section header takes zero bytes after the section table, inside `SizeOfHeaders`
//! (lld-link and link.exe leave room for many more). A signed image is refused
//! ([`super::without_signature`] drops the signature first).
//!
//! [`inline_image`] goes back: the bundles are laid out from the start of `.hip_fat` (which
//! must hold them in its `VirtualSize`: addresses after it are fixed), its raw data is put back
//! at its place in the file, the wrappers get `HIPF`, 0 at +16 and the address of their
//! bundle; a `.kpackrf` section that is last in the table and in the file is removed again.
//! An image [`split_image`] made from one [`inline_image`] made comes back byte for byte.

use super::{bad, checksum, offset_of, refuse_signed, unsupported};
use crate::error::{fail, ErrorKind, Result};
use crate::kpack::Split;
use crate::patch::align_up;
use gfxkit_bytes::Cursor;
use gfxkit_host::fatbin::is_fatbin_section;
use gfxkit_host::{WrapperMagic, WrapperTarget};
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
use object::LittleEndian as LE;
use std::collections::HashSet;

/// Name of the kpack marker section in PE images (the 8-byte spelling of ELF's
/// `.rocm_kpack_ref`).
pub const MARKER_SECTION: &str = ".kpackrf";

/// Size of a section header.
const SECTION_HEADER: u64 = 40;
/// The marker section's characteristics (TheRock's): readable initialized data.
const MARKER_CHARACTERISTICS: u32 = pe::IMAGE_SCN_MEM_READ | pe::IMAGE_SCN_CNT_INITIALIZED_DATA;

/// A section header's fields, with the file offset of the header.
#[derive(Debug, Clone)]
struct Sec {
    name: String,
    header: u64,
    va: u64,
    vsize: u64,
    ptr: u64,
    raw: u64,
    characteristics: u32,
}

impl Sec {
    /// Where its addresses end (`VirtualSize`, or `SizeOfRawData` when that is 0).
    fn va_end(&self) -> u64 {
        self.va
            + if self.vsize == 0 {
                self.raw
            } else {
                self.vsize
            }
    }

    fn initialized(&self) -> bool {
        self.characteristics & pe::IMAGE_SCN_CNT_INITIALIZED_DATA != 0
    }
}

/// The parts of an image the kpack layout reads and writes.
struct Image<'a> {
    file: PeFile64<'a>,
    secs: Vec<Sec>,
    /// File offset of the COFF file header.
    file_header: u64,
    /// File offset of the optional header.
    opt: u64,
    /// File offset of the section table.
    table: u64,
    image_base: u64,
    file_align: u64,
    section_align: u64,
    size_of_headers: u64,
    /// The one `.hip_fat` (`.hip_fatbin`) section.
    fat: usize,
}

impl<'a> Image<'a> {
    fn parse(data: &'a [u8]) -> Result<Image<'a>> {
        let file = PeFile64::parse(data).map_err(|e| bad(0, format!("PE image: {e}")))?;
        refuse_signed(data, &file)?;
        let nt = file.nt_headers();
        let opt = nt.optional_header();
        let file_header = offset_of(data, object::pod::bytes_of(nt.file_header()));
        let opt_at = offset_of(data, object::pod::bytes_of(opt));
        let table = file_header + 20 + u64::from(nt.file_header().size_of_optional_header.get(LE));
        let file_align = u64::from(opt.file_alignment());
        let section_align = u64::from(opt.section_alignment());
        if !file_align.is_power_of_two() || !(512..=65536).contains(&file_align) {
            return Err(bad(
                opt_at + 36,
                format!("FileAlignment {file_align} is not a power of two from 512 to 64 KiB"),
            ));
        }
        if !section_align.is_power_of_two() || section_align < file_align {
            return Err(bad(
                opt_at + 32,
                format!(
                    "SectionAlignment {section_align} is not a power of two at least \
                     FileAlignment ({file_align})"
                ),
            ));
        }
        let strings = nt.symbols(data).map(|s| s.strings()).unwrap_or_default();
        let len = data.len() as u64;
        let mut secs = Vec::new();
        for sh in file.section_table().iter() {
            let name = sh.name(strings).unwrap_or_else(|_| sh.raw_name());
            let s = Sec {
                name: String::from_utf8_lossy(name).into_owned(),
                header: offset_of(data, object::pod::bytes_of(sh)),
                va: u64::from(sh.virtual_address.get(LE)),
                vsize: u64::from(sh.virtual_size.get(LE)),
                ptr: u64::from(sh.pointer_to_raw_data.get(LE)),
                raw: u64::from(sh.size_of_raw_data.get(LE)),
                characteristics: sh.characteristics.get(LE),
            };
            if s.raw > 0 && s.ptr + s.raw > len {
                return Err(bad(
                    s.header,
                    format!(
                        "section {}'s raw data ({:#x} bytes at file offset {:#x}) runs past the \
                         end of the file ({len} bytes): truncated",
                        s.name, s.raw, s.ptr
                    ),
                ));
            }
            if s.raw > 0 && (s.ptr % file_align != 0 || s.raw % file_align != 0) {
                return Err(unsupported(
                    s.header,
                    format!(
                        "section {}: PointerToRawData {:#x} or SizeOfRawData {:#x} is not a \
                         multiple of FileAlignment {file_align:#x}",
                        s.name, s.ptr, s.raw
                    ),
                ));
            }
            secs.push(s);
        }
        let mut fats = secs
            .iter()
            .enumerate()
            .filter(|(_, s)| is_fatbin_section(&s.name));
        let Some((fat, _)) = fats.next() else {
            return Err(unsupported(0, "no .hip_fat section"));
        };
        if let Some((_, second)) = fats.next() {
            return Err(unsupported(second.header, "more than one .hip_fat section"));
        }
        // Sections in the table follow each other in memory (the loader requires it).
        for w in secs.windows(2) {
            if w[1].va < w[0].va_end() {
                return Err(unsupported(
                    w[1].header,
                    format!(
                        "section {} (at RVA {:#x}) overlaps or precedes section {}",
                        w[1].name, w[1].va, w[0].name
                    ),
                ));
            }
        }
        super::check_image_base(opt.image_base(), opt_at)?;
        Ok(Image {
            image_base: opt.image_base(),
            size_of_headers: u64::from(opt.size_of_headers()),
            file,
            secs,
            file_header,
            opt: opt_at,
            table,
            file_align,
            section_align,
            fat,
        })
    }

    /// Where the sections' raw data ends in the file.
    fn raw_end(&self) -> u64 {
        self.secs
            .iter()
            .filter(|s| s.raw > 0)
            .map(|s| s.ptr + s.raw)
            .max()
            .unwrap_or(self.size_of_headers)
    }

    /// The file offsets and values of the pointers the base relocation table fixes
    /// (`IMAGE_REL_BASED_DIR64`).
    fn dir64(&self, data: &[u8]) -> Result<Vec<(u64, u64)>> {
        let sections = self.file.section_table();
        let blocks = match self
            .file
            .data_directories()
            .relocation_blocks(data, &sections)
        {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(Vec::new()),
            Err(e) => return Err(bad(0, format!("base relocation table: {e}"))),
        };
        let mut out = Vec::new();
        for block in blocks {
            let block = block.map_err(|e| bad(0, format!("base relocation table: {e}")))?;
            for r in block {
                if r.typ != pe::IMAGE_REL_BASED_DIR64 {
                    continue;
                }
                if let Some((at, _)) = sections.pe_file_range_at(r.virtual_address) {
                    let at = u64::from(at);
                    out.push((at, Cursor::new(data).u64(at)?));
                }
            }
        }
        Ok(out)
    }

    /// The section whose addresses hold virtual address `va`.
    fn section_at(&self, va: u64) -> Option<usize> {
        let rva = va.checked_sub(self.image_base)?;
        self.secs
            .iter()
            .position(|s| rva >= s.va && rva < s.va_end())
    }
}

/// Byte ranges of the input replaced by other bytes: `(start, end, bytes)`, sorted by start,
/// disjoint (an insertion has `start == end`).
struct Splice {
    edits: Vec<(u64, u64, Vec<u8>)>,
}

impl Splice {
    /// Where input offset `x` lands in the output; `None` inside a replaced range.
    fn map(&self, x: u64) -> Option<u64> {
        let mut y = x as i128;
        for (s, e, b) in &self.edits {
            if s == e {
                if x >= *s {
                    y += b.len() as i128;
                }
            } else if x >= *e {
                y += b.len() as i128 - (e - s) as i128;
            } else if x >= *s {
                return None;
            }
        }
        u64::try_from(y).ok()
    }

    fn apply(&self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len());
        let mut at = 0usize;
        for (s, e, b) in &self.edits {
            out.extend_from_slice(&data[at..*s as usize]);
            out.extend_from_slice(b);
            at = *e as usize;
        }
        out.extend_from_slice(&data[at..]);
        out
    }
}

/// Field writes at input offsets, mapped through a [`Splice`] when applied.
struct Patches(Vec<(u64, Vec<u8>)>);

impl Patches {
    fn u32(&mut self, at: u64, v: u64) -> Result<()> {
        let v = u32::try_from(v).map_err(|_| {
            crate::error::Error::at(
                at,
                ErrorKind::TooLarge(format!("{v:#x} does not fit a 32-bit field")),
            )
        })?;
        self.0.push((at, v.to_le_bytes().to_vec()));
        Ok(())
    }

    /// `NumberOfSections` (checked below 0xffff by the callers).
    fn u16(&mut self, at: u64, v: u16) {
        self.0.push((at, v.to_le_bytes().to_vec()));
    }

    fn bytes(&mut self, at: u64, b: &[u8]) {
        self.0.push((at, b.to_vec()));
    }

    fn apply(&self, splice: &Splice, out: &mut [u8]) -> Result<()> {
        for (at, b) in &self.0 {
            let Some(to) = splice.map(*at) else {
                return Err(unsupported(*at, "a field to rewrite lies in removed bytes"));
            };
            let to = to as usize;
            let Some(dst) = out.get_mut(to..to + b.len()) else {
                return Err(unsupported(*at, "a field to rewrite lies past the end"));
            };
            dst.copy_from_slice(b);
        }
        Ok(())
    }
}

/// Moves the file offsets the headers hold (sections' raw data, relocations and line
/// numbers, the COFF symbol table, debug directory entries) through `splice`; sections in
/// `skip` are left alone.
fn file_offsets(
    data: &[u8],
    img: &Image<'_>,
    splice: &Splice,
    skip: &[usize],
    patches: &mut Patches,
) -> Result<()> {
    let moved = |at: u64, v: u64, what: &str| {
        splice
            .map(v)
            .ok_or_else(|| unsupported(at, format!("{what} ({v:#x}) lies in bytes removed")))
    };
    for (i, s) in img.secs.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        if s.raw > 0 {
            let what = format!("section {}'s raw data", s.name);
            patches.u32(s.header + 20, moved(s.header + 20, s.ptr, &what)?)?;
        }
        for (field, what) in [
            (24u64, "PointerToRelocations"),
            (28, "PointerToLinenumbers"),
        ] {
            let v = u64::from(Cursor::new(data).u32(s.header + field)?);
            if v != 0 {
                patches.u32(s.header + field, moved(s.header + field, v, what)?)?;
            }
        }
    }
    let symtab = u64::from(Cursor::new(data).u32(img.file_header + 8)?);
    if symtab != 0 {
        let at = img.file_header + 8;
        patches.u32(at, moved(at, symtab, "the COFF symbol table")?)?;
    }
    if let Some(dir) = img.file.data_directory(pe::IMAGE_DIRECTORY_ENTRY_DEBUG) {
        if dir.size.get(LE) != 0 {
            let dir_at = offset_of(data, object::pod::bytes_of(dir));
            let entries = dir
                .data(data, &img.file.section_table())
                .map_err(|e| bad(dir_at, format!("debug directory: {e}")))?;
            let base = offset_of(data, entries);
            for i in 0..entries.len() / 28 {
                let field = base + (i * 28 + 24) as u64;
                let v = u64::from(Cursor::new(data).u32(field)?);
                if v != 0 {
                    patches.u32(field, moved(field, v, "debug data")?)?;
                }
            }
        }
    }
    Ok(())
}

/// The bytes with the patches applied and `CheckSum` recomputed when the input had one.
fn finish(data: &[u8], img: &Image<'_>, splice: &Splice, patches: &Patches) -> Result<Vec<u8>> {
    let mut out = splice.apply(data);
    patches.apply(splice, &mut out)?;
    if img.file.nt_headers().optional_header().check_sum() != 0 {
        let at = (img.opt + 64) as usize;
        let sum = checksum(&out, at);
        out[at..at + 4].copy_from_slice(&sum.to_le_bytes());
    }
    Ok(out)
}

/// Splits the fat PE32+ image `data`: see the [module documentation](self). `marker` is the
/// MessagePack marker every wrapper will point to. [`Split::wrapper_bundles`] gives, per
/// wrapper, the input file offset of its bundle; [`Split::shift`] the bytes the file shrank by.
/// Bundles are delimited under `limits`.
pub fn split_image(
    data: &[u8],
    marker: &[u8],
    limits: &gfxkit_bundle::limits::Limits,
) -> Result<Split> {
    let img = Image::parse(data)?;
    img.rules(data)?;
    let found = gfxkit_host::discover_with(data, limits);
    // A split image says so first (its .hip_fat has no bytes because it is split).
    if let Some(i) = found
        .wrappers
        .iter()
        .position(|w| w.magic == WrapperMagic::Hipk)
    {
        return fail(
            found.wrappers[i].location.offset,
            ErrorKind::AlreadySplit { wrapper: i },
        );
    }
    let fat = img.secs[img.fat].clone();
    if let Some(m) = img.secs.iter().find(|s| s.name == MARKER_SECTION) {
        return Err(unsupported(
            m.header,
            format!("the image already has a {MARKER_SECTION} section"),
        ));
    }
    if fat.raw == 0 || fat.vsize == 0 {
        return Err(unsupported(
            fat.header,
            format!("{} holds no bytes in the file", fat.name),
        ));
    }
    let (fo, old_end) = (fat.ptr, fat.ptr + fat.raw);
    for s in &img.secs {
        if s.raw > 0 && s.header != fat.header && s.ptr < old_end && s.ptr + s.raw > fo {
            return Err(unsupported(
                s.header,
                format!("section {} overlaps {} in the file", s.name, fat.name),
            ));
        }
    }
    if found.wrappers.is_empty() {
        return Err(unsupported(
            0,
            "no HIP wrappers (.hipFatB): nothing leads to the bundles of .hip_fat",
        ));
    }
    let dir64 = img.dir64(data)?;
    let slots: HashSet<u64> = found
        .wrappers
        .iter()
        .map(|w| w.location.offset + 8)
        .collect();
    let wrapper_bundles = wrapper_bundles(data, &img, &found, &fat, &dir64, &slots)?;
    let MarkerPlace {
        header,
        n,
        m_rva,
        m_len,
        m_raw,
        size_of_image,
    } = marker_place(data, &img, marker, &dir64, &slots)?;
    let p = img.raw_end();
    let mut padded = marker.to_vec();
    padded.resize(m_raw as usize, 0);
    let splice = Splice {
        edits: vec![(fo, old_end, Vec::new()), (p, p, padded)],
    };
    let m_off = splice.map(p).unwrap_or(0) - m_raw;

    let mut patches = Patches(Vec::new());
    file_offsets(data, &img, &splice, &[img.fat], &mut patches)?;
    patches.u32(fat.header + 16, 0)?;
    let mut rec = [0u8; SECTION_HEADER as usize];
    rec[..8].copy_from_slice(MARKER_SECTION.as_bytes());
    rec[8..12].copy_from_slice(&(m_len as u32).to_le_bytes());
    rec[12..16].copy_from_slice(&(m_rva as u32).to_le_bytes());
    rec[16..20].copy_from_slice(&(m_raw as u32).to_le_bytes());
    rec[20..24].copy_from_slice(&(m_off as u32).to_le_bytes());
    rec[36..40].copy_from_slice(&MARKER_CHARACTERISTICS.to_le_bytes());
    patches.bytes(header, &rec);
    patches.u16(img.file_header + 2, (n + 1) as u16);
    let opt = img.file.nt_headers().optional_header();
    patches.u32(
        img.opt + 56,
        size_of_image.max(u64::from(opt.size_of_image())),
    )?;
    let mut init = u64::from(opt.size_of_initialized_data());
    if fat.initialized() {
        init = init.saturating_sub(fat.raw);
    }
    patches.u32(img.opt + 8, (init + m_raw).min(u64::from(u32::MAX)))?;
    let m_va = img.image_base + m_rva;
    for (k, w) in found.wrappers.iter().enumerate() {
        let at = w.location.offset;
        patches.bytes(at, &WrapperMagic::HIPK.to_le_bytes());
        patches.bytes(at + 8, &m_va.to_le_bytes());
        patches.bytes(at + 16, &(k as u64).to_le_bytes());
    }
    let bytes = finish(data, &img, &splice, &patches)?;
    Ok(Split {
        bytes,
        wrapper_bundles,
        marker_offset: m_off,
        marker_address: m_va,
        shift: fat.raw.saturating_sub(m_raw),
    })
}

/// The file offset of the bundle each wrapper of `found` leads to, checked: every wrapper a
/// `HIPF` record outside `.hip_fat` (`fat`) that leads to a bundle inside it, with no base
/// relocation at its +16 (which gets the index N); and no base-relocated pointer (`dir64`)
/// but a wrapper's (`slots`) leads into the section.
fn wrapper_bundles(
    data: &[u8],
    img: &Image<'_>,
    found: &gfxkit_host::Discovery<'_>,
    fat: &Sec,
    dir64: &[(u64, u64)],
    slots: &HashSet<u64>,
) -> Result<Vec<u64>> {
    let (fo, old_end) = (fat.ptr, fat.ptr + fat.raw);
    let fat_va = img.image_base + fat.va;
    let relocated: HashSet<u64> = dir64.iter().map(|&(at, _)| at).collect();
    let mut wrapper_bundles = Vec::with_capacity(found.wrappers.len());
    for (i, w) in found.wrappers.iter().enumerate() {
        let at = w.location.offset;
        super::fat_wrapper(i, w)?;
        let WrapperTarget::Bundle { index } = w.target else {
            return Err(bad(
                at,
                format!("wrapper {i} does not lead to a bundle of {}", fat.name),
            ));
        };
        let Some(bundle) = found.bundles.get(index) else {
            return Err(bad(at, format!("wrapper {i} leads to no bundle")));
        };
        let b = offset_of(data, bundle.bytes);
        if !(fo..old_end).contains(&b) {
            return Err(unsupported(
                at,
                format!("wrapper {i} leads to a bundle outside {}", fat.name),
            ));
        }
        if (fo..old_end).contains(&at) {
            return Err(unsupported(at, format!("a wrapper lies in {}", fat.name)));
        }
        // The index goes to +16: a pointer the loader adjusts there would change it.
        if relocated.contains(&(at + 16)) {
            return Err(unsupported(
                at + 16,
                format!("wrapper {i}'s field at +16 is base-relocated (it gets the index N)"),
            ));
        }
        wrapper_bundles.push(b);
    }
    // No pointer other than a wrapper's may lead into the bytes removed.
    for &(at, value) in dir64 {
        if !slots.contains(&at) && value >= fat_va && value - fat_va < fat.vsize {
            return Err(unsupported(
                at,
                format!(
                    "a base-relocated pointer other than a wrapper's leads into {} ({value:#x})",
                    fat.name
                ),
            ));
        }
    }
    Ok(wrapper_bundles)
}

/// Where the marker section goes: its header after the last one, its addresses after the last
/// section's, its raw data after the last section's.
struct MarkerPlace {
    /// File offset of its section header.
    header: u64,
    /// The number of sections before it.
    n: u64,
    /// Its RVA, length, and size of raw data.
    m_rva: u64,
    m_len: u64,
    m_raw: u64,
    /// `SizeOfImage` with it.
    size_of_image: u64,
}

/// Places the marker section of `marker`'s bytes in `img`: refused when its header has no
/// room, its addresses run past 4 GiB, or a base-relocated pointer (`dir64`) but a wrapper's
/// (`slots`) leads to where it goes.
fn marker_place(
    data: &[u8],
    img: &Image<'_>,
    marker: &[u8],
    dir64: &[(u64, u64)],
    slots: &HashSet<u64>,
) -> Result<MarkerPlace> {
    let n = img.secs.len() as u64;
    let header = img.table + n * SECTION_HEADER;
    let first_raw = img
        .secs
        .iter()
        .filter(|s| s.raw > 0)
        .map(|s| s.ptr)
        .min()
        .unwrap_or(img.size_of_headers);
    let room = img.size_of_headers.min(first_raw);
    let free = data
        .get(header as usize..(header + SECTION_HEADER) as usize)
        .is_some_and(|b| b.iter().all(|&x| x == 0));
    if header + SECTION_HEADER > room || !free {
        return Err(unsupported(
            header,
            format!(
                "no room for another section header after the {n} there are (the headers end \
                 at {room:#x})"
            ),
        ));
    }
    if n + 1 > 0xffff {
        return Err(unsupported(img.file_header + 2, "too many sections"));
    }
    let va_end = img.secs.iter().map(Sec::va_end).max().unwrap_or(0);
    let m_rva = align_up(va_end, img.section_align).unwrap_or(u64::MAX);
    let m_len = marker.len() as u64;
    let m_raw = align_up(m_len.max(1), img.file_align).unwrap_or(u64::MAX);
    let size_of_image =
        align_up(m_rva.saturating_add(m_len), img.section_align).unwrap_or(u64::MAX);
    if size_of_image > u64::from(u32::MAX) {
        return Err(unsupported(
            img.opt + 56,
            "the marker section's addresses run past 4 GiB",
        ));
    }
    // Nor to where the marker goes (a pointer to the end of the image): an inline, which
    // removes the marker only when nothing but wrappers leads into it, could not undo the split.
    let m_start = img.image_base.saturating_add(m_rva);
    if let Some(&(at, value)) = dir64.iter().find(|&&(at, value)| {
        !slots.contains(&at) && value >= m_start && value - m_start < m_len.max(1)
    }) {
        return Err(unsupported(
            at,
            format!(
                "a base-relocated pointer other than a wrapper's leads to where {MARKER_SECTION} goes \
                 ({value:#x}, the end of the image)"
            ),
        ));
    }
    Ok(MarkerPlace {
        header,
        n,
        m_rva,
        m_len,
        m_raw,
        size_of_image,
    })
}

/// The `HIPK` wrappers of a split image, in `.hipFatB` order: (file offset of the record, its
/// u32 index at +16, the file offset its pointer leads to when it lands in the file).
pub fn hipk_image_wrappers(data: &[u8]) -> Result<Vec<(u64, u32, Option<u64>)>> {
    Image::parse(data)?;
    let found = gfxkit_host::discover(data);
    let mut out = Vec::with_capacity(found.wrappers.len());
    for w in &found.wrappers {
        if w.magic != WrapperMagic::Hipk {
            return Err(unsupported(
                w.location.offset,
                format!(
                    "wrapper magic {:#010x}, expected HIPK (not a split image)",
                    w.magic.value()
                ),
            ));
        }
        let fo = match w.target {
            WrapperTarget::Address { file_offset, .. } => file_offset,
            _ => None,
        };
        out.push((w.location.offset, w.reserved as u32, fo));
    }
    Ok(out)
}

/// The bytes of address space `.hip_fat` offers the bundles [`inline_image`] puts back (its
/// `VirtualSize`: the addresses after it are fixed).
pub fn inline_room(data: &[u8]) -> Result<u64> {
    let img = Image::parse(data)?;
    Ok(img.secs[img.fat].vsize)
}

/// Where bundles of these sizes go from the start of `.hip_fat`, each at a multiple of
/// `align`; and where the last ends.
pub fn bundle_offsets(sizes: impl IntoIterator<Item = u64>, align: u64) -> (Vec<u64>, u64) {
    let align = align.clamp(1, 1 << 16);
    let mut offsets = Vec::new();
    let mut end = 0u64;
    for s in sizes {
        let at = end.next_multiple_of(align);
        offsets.push(at);
        end = at.saturating_add(s);
    }
    (offsets, end)
}

/// Inlines the split PE32+ image `data`: `bundles[k]` is the bundle wrapper `k` (in `.hipFatB`
/// order) will point to, placed at `align`-aligned offsets from the start of `.hip_fat`; see
/// the [module documentation](self). Bundles that do not fit `.hip_fat`'s `VirtualSize`
/// ([`inline_room`]) are refused.
pub fn inline_image(data: &[u8], bundles: &[Vec<u8>], align: u64) -> Result<Vec<u8>> {
    let img = Image::parse(data)?;
    img.rules(data)?;
    let fat = img.secs[img.fat].clone();
    let found = gfxkit_host::discover(data);
    if found.wrappers.len() != bundles.len() {
        return Err(unsupported(
            0,
            format!(
                "{} wrappers but {} bundles",
                found.wrappers.len(),
                bundles.len()
            ),
        ));
    }
    if found.wrappers.is_empty() {
        return Err(unsupported(0, "no HIP wrappers (.hipFatB)"));
    }
    let (offsets, ns) = bundle_offsets(bundles.iter().map(|b| b.len() as u64), align);
    if ns > fat.vsize {
        return Err(unsupported(
            fat.header,
            format!(
                "the bundles ({ns} bytes) do not fit {}'s {} bytes of address space (the \
                 addresses after it are fixed)",
                fat.name, fat.vsize
            ),
        ));
    }
    let new_raw = align_up(ns, img.file_align).unwrap_or(u64::MAX);
    // Where .hip_fat's raw data goes: where it is, or (none left) before the raw data of the
    // first section after it in memory.
    let p = if fat.raw > 0 {
        fat.ptr
    } else {
        img.secs
            .iter()
            .filter(|s| s.raw > 0 && s.va > fat.va)
            .map(|s| s.ptr)
            .min()
            .unwrap_or_else(|| img.raw_end())
    };
    if p % img.file_align != 0 {
        return Err(unsupported(
            fat.header,
            "no aligned place for .hip_fat's raw data",
        ));
    }
    for s in &img.secs {
        if s.raw > 0 && s.header != fat.header && s.ptr < p + fat.raw && s.ptr + s.raw > p {
            return Err(unsupported(
                s.header,
                format!("section {} overlaps {} in the file", s.name, fat.name),
            ));
        }
    }
    let dir64 = img.dir64(data)?;
    let slots: HashSet<u64> = found
        .wrappers
        .iter()
        .map(|w| w.location.offset + 8)
        .collect();
    // The marker section: where the wrappers lead.
    let mut marker = None;
    for (i, w) in found.wrappers.iter().enumerate() {
        let at = w.location.offset;
        if w.magic != WrapperMagic::Hipk {
            return Err(unsupported(
                at,
                format!(
                    "wrapper {i} has magic {:#010x}, expected HIPK (not a split image)",
                    w.magic.value()
                ),
            ));
        }
        if (p..p + fat.raw).contains(&at) {
            return Err(unsupported(at, format!("a wrapper lies in {}", fat.name)));
        }
        let pointer = w.pointer;
        let s = img.section_at(pointer);
        if s == Some(img.fat) {
            return Err(unsupported(
                at,
                format!("wrapper {i} of a split image leads into {}", fat.name),
            ));
        }
        marker = marker.or(s);
    }
    // It goes when it is last in the table and in the file and only wrappers lead to it.
    let n = img.secs.len();
    let removed = marker.filter(|&m| {
        let s = &img.secs[m];
        let into = |v: u64| {
            v.checked_sub(img.image_base)
                .is_some_and(|r| r >= s.va && r < s.va_end())
        };
        m + 1 == n
            && s.name == MARKER_SECTION
            && s.raw > 0
            && s.ptr + s.raw == img.raw_end()
            && s.ptr >= p + fat.raw
            && !dir64.iter().any(|&(at, v)| !slots.contains(&at) && into(v))
    });
    let mut content = vec![0u8; new_raw as usize];
    for (b, &at) in bundles.iter().zip(&offsets) {
        content[at as usize..at as usize + b.len()].copy_from_slice(b);
    }
    let mut edits = vec![(p, p + fat.raw, content)];
    if let Some(m) = removed {
        let s = &img.secs[m];
        edits.push((s.ptr, s.ptr + s.raw, Vec::new()));
    }
    let splice = Splice { edits };

    let mut patches = Patches(Vec::new());
    let mut skip = vec![img.fat];
    skip.extend(removed);
    file_offsets(data, &img, &splice, &skip, &mut patches)?;
    patches.u32(fat.header + 16, new_raw)?;
    patches.u32(fat.header + 20, p)?;
    let opt = img.file.nt_headers().optional_header();
    let mut init = u64::from(opt.size_of_initialized_data());
    if fat.initialized() {
        init = (init + new_raw).saturating_sub(fat.raw);
    }
    if let Some(m) = removed {
        let s = &img.secs[m];
        patches.bytes(s.header, &[0; SECTION_HEADER as usize]);
        patches.u16(img.file_header + 2, (n - 1) as u16);
        let end = img.secs[..m].iter().map(Sec::va_end).max().unwrap_or(0);
        let size = align_up(end, img.section_align).unwrap_or(u64::MAX);
        patches.u32(img.opt + 56, size.max(img.size_of_headers))?;
        if s.initialized() {
            init = init.saturating_sub(s.raw);
        }
    }
    patches.u32(img.opt + 8, init.min(u64::from(u32::MAX)))?;
    let fat_va = img.image_base + fat.va;
    for (w, &off) in found.wrappers.iter().zip(&offsets) {
        let at = w.location.offset;
        patches.bytes(at, &WrapperMagic::HIPF.to_le_bytes());
        patches.bytes(at + 8, &(fat_va + off).to_le_bytes());
        patches.bytes(at + 16, &0u64.to_le_bytes());
    }
    finish(data, &img, &splice, &patches)
}

/// Checks the layout rules a kpack split or inline keeps in an image it wrote (and requires
/// of the image it reads): it parses as a PE32+ image, every section's raw data lies in the
/// file at multiples of `FileAlignment` after the headers and overlaps no other, sections
/// follow each other in memory within `SizeOfImage`, and the base relocation table reads.
pub fn check_image(data: &[u8]) -> Result<()> {
    Image::parse(data)?.rules(data)
}

impl Image<'_> {
    /// The rules of [`check_image`] (parsing checked the rest).
    fn rules(&self, data: &[u8]) -> Result<()> {
        let mut raw: Vec<&Sec> = self.secs.iter().filter(|s| s.raw > 0).collect();
        raw.sort_by_key(|s| s.ptr);
        if let Some(s) = raw.iter().find(|s| s.ptr < self.size_of_headers) {
            return Err(bad(
                s.header,
                format!(
                    "section {}'s raw data (at {:#x}) lies in the headers (SizeOfHeaders {:#x})",
                    s.name, s.ptr, self.size_of_headers
                ),
            ));
        }
        for w in raw.windows(2) {
            if w[0].ptr + w[0].raw > w[1].ptr {
                return Err(bad(
                    w[1].header,
                    format!(
                        "sections {} and {} overlap in the file",
                        w[0].name, w[1].name
                    ),
                ));
            }
        }
        let size_of_image = u64::from(self.file.nt_headers().optional_header().size_of_image());
        if let Some(s) = self.secs.iter().find(|s| s.va_end() > size_of_image) {
            return Err(bad(
                s.header,
                format!(
                    "section {} ends at RVA {:#x}, past SizeOfImage {size_of_image:#x}",
                    s.name,
                    s.va_end()
                ),
            ));
        }
        self.dir64(data)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_maps_offsets_around_its_edits() {
        let s = Splice {
            edits: vec![(10, 20, vec![]), (30, 30, vec![7; 5])],
        };
        assert_eq!(s.map(5), Some(5));
        assert_eq!(s.map(10), None);
        assert_eq!(s.map(19), None);
        assert_eq!(s.map(20), Some(10));
        assert_eq!(s.map(30), Some(25));
        assert_eq!(s.map(31), Some(26));
        let data: Vec<u8> = (0..40).collect();
        let out = s.apply(&data);
        assert_eq!(out.len(), 35);
        assert_eq!(out[10], 20);
        assert_eq!(&out[20..25], &[7; 5]);
        assert_eq!(out[25], 30);
    }

    #[test]
    fn bundles_are_placed_at_aligned_offsets() {
        assert_eq!(
            bundle_offsets([10, 4096, 1], 4096),
            (vec![0, 4096, 8192], 8193)
        );
    }
}
