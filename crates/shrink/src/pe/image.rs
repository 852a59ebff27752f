//! The model of a PE32+ image that every rewrite of one reads: its section headers, the one
//! `.hip_fat` section, the layout rules a rewrite requires and keeps ([`Image::check`]), how
//! the file offsets its headers hold follow a [`Splice`] ([`file_offsets`]), and the
//! `CheckSum` of what it writes ([`finish`]); and the one edit of an image that keeps its
//! sections, [`without_signature`].

use super::edit::{bad, offset_of, unsupported, Patches, Splice};
use crate::error::{Error, ErrorKind, Result};
use crate::output::Output;
use gfxkit_bytes::Cursor;
use gfxkit_host::fatbin::is_fatbin_section;
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
use object::LittleEndian as LE;
use std::collections::HashSet;

/// Size of a section header.
pub(crate) const SECTION_HEADER: u64 = 40;

/// A section header's fields, with the file offset of the header.
#[derive(Debug, Clone)]
pub(crate) struct Sec {
    pub(crate) name: String,
    /// File offset of its header.
    pub(crate) header: u64,
    /// `VirtualAddress`, `VirtualSize`, `PointerToRawData`, `SizeOfRawData`.
    pub(crate) va: u64,
    pub(crate) vsize: u64,
    pub(crate) ptr: u64,
    pub(crate) raw: u64,
    pub(crate) characteristics: u32,
}

impl Sec {
    /// Where its addresses end (`VirtualSize`, or `SizeOfRawData` when that is 0).
    pub(crate) fn va_end(&self) -> u64 {
        self.va
            + if self.vsize == 0 {
                self.raw
            } else {
                self.vsize
            }
    }

    /// Whether it counts in `SizeOfInitializedData`.
    pub(crate) fn initialized(&self) -> bool {
        self.characteristics & pe::IMAGE_SCN_CNT_INITIALIZED_DATA != 0
    }

    /// The bytes of its contents the file holds: `SizeOfRawData`, or `VirtualSize` when that is
    /// smaller (the rest of the raw data is padding).
    pub(crate) fn contents_len(&self) -> u64 {
        self.raw.min(self.vsize)
    }
}

/// The parts of an image a rewrite reads and writes.
pub(crate) struct Image<'a> {
    pub(crate) file: PeFile64<'a>,
    pub(crate) secs: Vec<Sec>,
    /// File offset of the COFF file header.
    pub(crate) file_header: u64,
    /// File offset of the optional header.
    pub(crate) opt: u64,
    /// File offset of the section table.
    pub(crate) table: u64,
    pub(crate) image_base: u64,
    pub(crate) file_align: u64,
    pub(crate) section_align: u64,
    pub(crate) size_of_headers: u64,
    /// The one `.hip_fat` (`.hip_fatbin`) section, when there is one.
    pub(crate) fat: Option<usize>,
}

impl<'a> Image<'a> {
    /// Reads the headers of `data` and finds its `.hip_fat` section; more than one is refused.
    /// Nothing else is checked: [`Image::check`] does, before a rewrite.
    pub(crate) fn parse(data: &'a [u8]) -> Result<Image<'a>> {
        let file = PeFile64::parse(data).map_err(|e| bad(0, format!("PE image: {e}")))?;
        let nt = file.nt_headers();
        let opt = nt.optional_header();
        let file_header = offset_of(data, object::pod::bytes_of(nt.file_header()));
        let table = file_header + 20 + u64::from(nt.file_header().size_of_optional_header.get(LE));
        let strings = nt.symbols(data).map(|s| s.strings()).unwrap_or_default();
        let secs: Vec<Sec> = file
            .section_table()
            .iter()
            .map(|sh| Sec {
                name: String::from_utf8_lossy(sh.name(strings).unwrap_or_else(|_| sh.raw_name()))
                    .into_owned(),
                header: offset_of(data, object::pod::bytes_of(sh)),
                va: u64::from(sh.virtual_address.get(LE)),
                vsize: u64::from(sh.virtual_size.get(LE)),
                ptr: u64::from(sh.pointer_to_raw_data.get(LE)),
                raw: u64::from(sh.size_of_raw_data.get(LE)),
                characteristics: sh.characteristics.get(LE),
            })
            .collect();
        let mut fats = secs
            .iter()
            .enumerate()
            .filter(|(_, s)| is_fatbin_section(&s.name));
        let fat = fats.next().map(|(i, _)| i);
        if let Some((_, second)) = fats.next() {
            return Err(unsupported(second.header, "more than one .hip_fat section"));
        }
        Ok(Image {
            opt: offset_of(data, object::pod::bytes_of(opt)),
            image_base: opt.image_base(),
            file_align: u64::from(opt.file_alignment()),
            section_align: u64::from(opt.section_alignment()),
            size_of_headers: u64::from(opt.size_of_headers()),
            file,
            secs,
            file_header,
            table,
            fat,
        })
    }

    /// The `.hip_fat` section; an image without one is refused.
    pub(crate) fn fat(&self) -> Result<&Sec> {
        match self.fat {
            Some(i) => Ok(&self.secs[i]),
            None => Err(unsupported(0, "no .hip_fat section")),
        }
    }

    /// The layout rules every rewrite requires of the image it reads and keeps in the image
    /// it writes: no Authenticode signature (a rewrite would invalidate it); `FileAlignment` a
    /// power of two from 512 to 64 KiB and `SectionAlignment` a power of two at least that;
    /// every section's raw data in the file, after the headers and the section table,
    /// overlapping no other, and `.hip_fat`'s at multiples of `FileAlignment` (what follows
    /// it moves by whole units of it, so other sections keep their alignment, whatever it
    /// is); sections following each other in
    /// memory within `SizeOfImage`, below 2^64 from `ImageBase`; a readable base relocation
    /// table.
    pub(crate) fn check(&self, data: &[u8]) -> Result<()> {
        refuse_signed(data, &self.file)?;
        let (file_align, section_align) = (self.file_align, self.section_align);
        if !file_align.is_power_of_two() || !(512..=65536).contains(&file_align) {
            return Err(bad(
                self.opt + 36,
                format!("FileAlignment {file_align} is not a power of two from 512 to 64 KiB"),
            ));
        }
        if !section_align.is_power_of_two() || section_align < file_align {
            return Err(bad(
                self.opt + 32,
                format!(
                    "SectionAlignment {section_align} is not a power of two at least \
                     FileAlignment ({file_align})"
                ),
            ));
        }
        let len = data.len() as u64;
        for s in self.secs.iter().filter(|s| s.raw > 0) {
            if s.ptr + s.raw > len {
                return Err(bad(
                    s.header,
                    format!(
                        "section {}'s raw data ({:#x} bytes at file offset {:#x}) runs past the \
                         end of the file ({len} bytes): truncated",
                        s.name, s.raw, s.ptr
                    ),
                ));
            }
        }
        if let Some(fat) = self.fat {
            self.aligned(&self.secs[fat])?;
        }
        // Sections in the table follow each other in memory (the loader requires it).
        for w in self.secs.windows(2) {
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
        check_image_base(self.image_base, self.opt)?;
        // What a data directory names inside `.hip_fat` would not survive a rewrite, which
        // replaces the section's bytes (the certificate table's address is a file offset).
        if let Some(fat) = self.fat.map(|i| &self.secs[i]) {
            let end = fat.va + fat.vsize.max(fat.raw);
            let dirs = self.file.data_directories();
            for (i, dir) in dirs.iter().enumerate() {
                let rva = u64::from(dir.virtual_address.get(LE));
                if i != pe::IMAGE_DIRECTORY_ENTRY_SECURITY
                    && rva != 0
                    && (fat.va..end).contains(&rva)
                {
                    return Err(unsupported(
                        offset_of(data, object::pod::bytes_of(dir)),
                        format!(
                            "data directory {i} (RVA {rva:#x}) lies in {}, whose bytes a \
                             rewrite replaces",
                            fat.name
                        ),
                    ));
                }
            }
        }
        let mut raw: Vec<&Sec> = self.secs.iter().filter(|s| s.raw > 0).collect();
        raw.sort_by_key(|s| s.ptr);
        // The headers, the section table included, lie before every section's raw data: a
        // table that ran into raw data would change as that data moves.
        let table_end = self.table + self.secs.len() as u64 * SECTION_HEADER;
        if let Some(s) = raw
            .first()
            .filter(|s| s.ptr < self.size_of_headers || s.ptr < table_end)
        {
            return Err(bad(
                s.header,
                format!(
                    "section {}'s raw data (at {:#x}) lies in the headers (SizeOfHeaders {:#x}, \
                     the section table ends at {table_end:#x}): damaged headers",
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

    /// Refuses a section whose raw data does not start and end at multiples of
    /// `FileAlignment`: the rewritten `.hip_fat` is laid out in whole units of it, and so is
    /// what a kpack split adds after the last section ([`Image::all_aligned`]).
    pub(crate) fn aligned(&self, s: &Sec) -> Result<()> {
        let file_align = self.file_align;
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
        Ok(())
    }

    /// [`Image::aligned`] of every section.
    pub(crate) fn all_aligned(&self) -> Result<()> {
        self.secs.iter().try_for_each(|s| self.aligned(s))
    }

    /// Where the sections' raw data ends in the file.
    pub(crate) fn raw_end(&self) -> u64 {
        self.secs
            .iter()
            .filter(|s| s.raw > 0)
            .map(|s| s.ptr + s.raw)
            .max()
            .unwrap_or(self.size_of_headers)
    }

    /// The file offsets and values of the pointers the base relocation table fixes
    /// (`IMAGE_REL_BASED_DIR64`).
    pub(crate) fn dir64(&self, data: &[u8]) -> Result<Vec<(u64, u64)>> {
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
    pub(crate) fn section_at(&self, va: u64) -> Option<usize> {
        let rva = va.checked_sub(self.image_base)?;
        self.secs
            .iter()
            .position(|s| rva >= s.va && rva < s.va_end())
    }

    /// Whether `value` leads into `len` bytes of address space from RVA `rva` (at least one).
    fn leads_into(&self, value: u64, rva: u64, len: u64) -> bool {
        let start = self.image_base.saturating_add(rva);
        value >= start && value - start < len.max(1)
    }
}

/// Refuses an image where a pointer the base relocation table fixes (`dir64`), other than a
/// wrapper's (the slots `wrappers`), leads into `len` bytes from RVA `rva` (`what`): it would
/// not follow what the rewrite moves there.
pub(crate) fn only_wrappers_lead_into(
    img: &Image<'_>,
    dir64: &[(u64, u64)],
    wrappers: &HashSet<u64>,
    (rva, len): (u64, u64),
    what: &str,
) -> Result<()> {
    match dir64
        .iter()
        .find(|&&(at, v)| !wrappers.contains(&at) && img.leads_into(v, rva, len))
    {
        Some(&(at, value)) => Err(unsupported(
            at,
            format!(
                "a base-relocated pointer other than a wrapper's, at file offset {at:#x}, leads \
                 into {what} ({value:#x})"
            ),
        )),
        None => Ok(()),
    }
}

/// Moves the file offsets the headers hold through `splice`: the raw data of every section
/// (of one without raw data, only when its pointer lies outside the bytes replaced),
/// relocations and line numbers, the COFF symbol table, debug directory entries;
/// sections in `skip` are left alone. A pointer into bytes the splice replaces is refused.
pub(crate) fn file_offsets(
    data: &[u8],
    img: &Image<'_>,
    splice: &Splice<'_>,
    skip: &[usize],
    patches: &mut Patches,
) -> Result<()> {
    let moved = |at: u64, v: u64, what: &str| {
        splice.map(v).ok_or_else(|| {
            unsupported(
                at,
                format!("{what} ({v:#x}) lies in bytes the rewrite replaces"),
            )
        })
    };
    for (i, s) in img.secs.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        if s.raw > 0 {
            let what = format!("section {}'s raw data", s.name);
            patches.u32(s.header + 20, moved(s.header + 20, s.ptr, &what)?)?;
        } else if let Some(to) = splice.map(s.ptr).filter(|_| s.ptr != 0) {
            // A section without raw data points nowhere, but its pointer still follows the
            // bytes it named, so that it never names a place past the end of the file.
            patches.u32(s.header + 20, to)?;
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
            moved(dir_at, base, "the debug directory")?;
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

/// The output of an image's edit, its `CheckSum` recomputed over the final bytes when the
/// input had one.
pub(crate) fn finish<'a>(
    data: &'a [u8],
    img: &Image<'_>,
    splice: Splice<'a>,
    patches: &Patches,
) -> Result<Output<'a>> {
    let mut out = splice.finish(data, patches)?;
    if img.file.nt_headers().optional_header().check_sum() != 0 {
        let field = img.opt + 64;
        let mut sum = Checksum::new(field);
        out.write_to(&mut sum)
            .map_err(|e| Error::at(field, ErrorKind::Compress(e.to_string())))?;
        out.put(field, &sum.value().to_le_bytes())?;
    }
    Ok(out)
}

/// The PE checksum of `bytes` (the optional header's `CheckSum` field, at `field`, counted as
/// zero): the 16-bit one's-complement style sum of the file's little-endian words, folded to
/// 16 bits, plus the file length.
pub fn checksum(bytes: &[u8], field: usize) -> u32 {
    let mut sum = Checksum::new(field as u64);
    sum.add(bytes);
    sum.value()
}

/// The PE checksum of bytes written to it in order ([`checksum`]), for an output made in
/// pieces.
struct Checksum {
    /// Where the next byte goes in the file.
    at: u64,
    /// The `CheckSum` field's offset: the words that start in its four bytes count as zero.
    field: u64,
    /// The sum of the words so far, folded before it can overflow.
    sum: u64,
}

impl Checksum {
    fn new(field: u64) -> Checksum {
        Checksum {
            at: 0,
            field,
            sum: 0,
        }
    }

    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let word = self.at & !1;
            if !(self.field..self.field + 4).contains(&word) {
                self.sum += u64::from(b) << (8 * (self.at & 1));
            }
            self.at += 1;
        }
        if self.sum >> 48 != 0 {
            self.sum = fold(self.sum);
        }
    }

    fn value(&self) -> u32 {
        (fold(self.sum) as u32).wrapping_add(self.at as u32)
    }
}

/// `sum` folded to 16 bits, the carries added back in.
fn fold(mut sum: u64) -> u64 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

impl std::io::Write for Checksum {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.add(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The PE32+ image `data` without its Authenticode signature: the certificate table (which
/// lies outside the image, at the end of the file) cut off, its data directory entry zeroed and
/// `CheckSum` recomputed when it was set. `None` when `data` is no PE image or carries no
/// signature. A table that is not at the end of the file (only zero padding may follow it) is
/// refused.
pub fn without_signature(data: &[u8]) -> Result<Option<Vec<u8>>> {
    let Ok(file) = PeFile64::parse(data) else {
        return Ok(None);
    };
    let Some(dir) = file.data_directory(pe::IMAGE_DIRECTORY_ENTRY_SECURITY) else {
        return Ok(None);
    };
    let (at, size) = (dir.virtual_address.get(LE), dir.size.get(LE));
    if size == 0 {
        return Ok(None);
    }
    let dir_at = offset_of(data, object::pod::bytes_of(dir));
    let end = u64::from(at) + u64::from(size);
    let tail = data
        .get(end as usize..)
        .filter(|_| end <= data.len() as u64);
    if !tail.is_some_and(|t| t.iter().all(|&b| b == 0)) {
        return Err(unsupported(
            dir_at,
            format!(
                "the certificate table ({size} bytes at file offset {at:#x}) is not at the end of \
                 the file"
            ),
        ));
    }
    let sections_end = file
        .section_table()
        .iter()
        .map(|s| u64::from(s.pointer_to_raw_data.get(LE)) + u64::from(s.size_of_raw_data.get(LE)))
        .max()
        .unwrap_or(0);
    // The headers end past `SizeOfHeaders` where the section table does (a damaged image may
    // say less), and past the directory entry cleared below.
    let table_end = file
        .section_table()
        .iter()
        .last()
        .map_or(0, |h| offset_of(data, object::pod::bytes_of(h)) + 40);
    let headers_end = u64::from(file.nt_headers().optional_header().size_of_headers())
        .max(dir_at + 8)
        .max(table_end);
    if u64::from(at) < headers_end {
        return Err(bad(
            dir_at,
            format!(
                "the certificate table at file offset {at:#x} lies in the headers (which end at \
                 {headers_end:#x})"
            ),
        ));
    }
    if u64::from(at) < sections_end {
        return Err(bad(
            dir_at,
            format!("the certificate table at file offset {at:#x} overlaps a section's raw data"),
        ));
    }
    let mut out = data[..at as usize].to_vec();
    let d = dir_at as usize;
    out[d..d + 8].fill(0);
    let opt_at = offset_of(
        data,
        object::pod::bytes_of(file.nt_headers().optional_header()),
    );
    let checksum_at = (opt_at + 64) as usize;
    if file.nt_headers().optional_header().check_sum() != 0 {
        let sum = checksum(&out, checksum_at);
        out[checksum_at..checksum_at + 4].copy_from_slice(&sum.to_le_bytes());
    }
    Ok(Some(out))
}

/// Refuses an image whose `ImageBase` (in the optional header at file offset `opt_at`) lies so
/// near the top of the address space that an address in the image (a 32-bit RVA, or a section
/// placed after the last one) would not fit 64 bits: no loader maps such an image.
fn check_image_base(image_base: u64, opt_at: u64) -> Result<()> {
    if image_base.checked_add(1 << 34).is_none() {
        return Err(bad(
            opt_at + 24,
            format!(
                "ImageBase {image_base:#x} leaves no room for the image's addresses below 2^64: \
                 damaged"
            ),
        ));
    }
    Ok(())
}

/// Refuses a signed image (one with an Authenticode certificate table): a rewrite
/// invalidates the signature.
fn refuse_signed(data: &[u8], file: &PeFile64<'_>) -> Result<()> {
    if let Some(dir) = file.data_directory(pe::IMAGE_DIRECTORY_ENTRY_SECURITY) {
        if dir.size.get(LE) != 0 {
            return Err(unsupported(
                offset_of(data, object::pod::bytes_of(dir)),
                format!(
                    "the image is signed (an Authenticode certificate table of {} bytes at file \
                     offset {:#x}): a rewrite invalidates the signature; --drop-signature \
                     rewrites it unsigned (sign the result again)",
                    dir.size.get(LE),
                    dir.virtual_address.get(LE)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A DLL whose (empty) base relocation directory names an address inside `.hip_fat` (found
    /// by the `kpack_split` fuzz target): refused by the image check every PE rewrite shares,
    /// where the split took the bytes the directory named out of the file.
    #[test]
    fn relocation_directory_in_hip_fat() {
        let data = include_bytes!(
            "../../../../fuzz/regressions/kpack_split/relocation-directory-in-hip-fat.bin"
        );
        let e = crate::pe::kpack::check_image(data).expect_err("refused");
        assert!(
            e.to_string()
                .contains("data directory 5 (RVA 0x8800) lies in .hip_fat"),
            "{e}"
        );
    }

    use super::{checksum, Checksum};

    /// The checksum skips its own field and adds the length: a file of words 1, 2 (the field
    /// at 4 holding anything) sums to 3 + 8.
    #[test]
    fn checksum_skips_its_field_and_adds_the_length() {
        let bytes = [1, 0, 2, 0, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(checksum(&bytes, 4), 3 + 8);
        // Carries fold back into 16 bits.
        let bytes = [0xff, 0xff, 0x02, 0x00];
        assert_eq!(checksum(&bytes, 100), 0x0002 + 4);
    }

    /// The sum of an output written in pieces, cut anywhere (odd offsets, inside the field),
    /// is the sum of its bytes at once, which is the word-by-word sum with a fold per word.
    #[test]
    fn checksum_of_pieces_is_the_checksum_of_the_whole() {
        let bytes: Vec<u8> = (0..5001u32).map(|i| (i * 7919 % 251) as u8).collect();
        let field = 216;
        let mut reference: u64 = 0;
        for (i, w) in bytes.chunks(2).enumerate() {
            if !(field..field + 4).contains(&(i * 2)) {
                reference += u64::from(w[0]) | w.get(1).map_or(0, |&b| u64::from(b) << 8);
                reference = (reference & 0xffff) + (reference >> 16);
            }
        }
        let reference = (reference as u32) + bytes.len() as u32;
        assert_eq!(checksum(&bytes, field), reference);
        for cut in [1, 3, 217, 218, 4999] {
            let mut sum = Checksum::new(field as u64);
            sum.add(&bytes[..cut]);
            sum.add(&bytes[cut..]);
            assert_eq!(sum.value(), reference, "cut at {cut}");
        }
    }
}
