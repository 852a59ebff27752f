//! The rewrite of a PE32+ image (a Windows DLL or EXE): a new `.hip_fat`, the wrapper pointers
//! that lead into it fixed, and the file made smaller by moving what follows the section's raw
//! data down by whole `FileAlignment` units.
//!
//! The plan keeps every address: the section's `VirtualAddress` and `VirtualSize` stay (the
//! loader zero-fills what its shorter raw data no longer holds), so `SizeOfImage`, the other
//! sections' addresses and the base relocation table are unchanged; each `IMAGE_REL_BASED_DIR64`
//! entry still fixes the wrapper slot it fixed, whose value now leads to its bundle's new
//! place. What changes: the section's `SizeOfRawData` (the new bundles rounded up to
//! `FileAlignment`), the `PointerToRawData` of every section after it, file offsets in the
//! debug directory and the COFF header, `SizeOfInitializedData`, and `CheckSum` (recomputed when
//! it was set, kept zero otherwise). A file with an Authenticode signature (a certificate
//! table) is refused: the rewrite would invalidate it; [`without_signature`] gives the file
//! without it (`--drop-signature`).
//!
//! The bundles are read and rewritten by the same planner as ELF files
//! (`plan::transform_region`), and the result is checked by the same verification
//! ([`verify`](mod@crate::verify)), which reads it back through host discovery.
//!
//! [`kpack`] lays an image out as ROCm's kpack split does on Windows (`.kpackrf`, `HIPK`
//! wrappers, `.hip_fat` without file bytes) and back, on the same headers.

use crate::error::{fail, Error, ErrorKind, Result};
use crate::output::Output;
use crate::patch::align_up;
use crate::plan::{self, NewRegion, Transform};
use crate::report::{FileKind, Layout, RegionReport};
use gfxkit_bytes::Cursor;
use gfxkit_host::fatbin::is_fatbin_section;
use gfxkit_host::{WrapperMagic, WrapperTarget};
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
use object::LittleEndian as LE;

pub mod coff;
pub mod kpack;

/// Whether `data` is a PE image or COFF object for x86-64.
pub(crate) fn is_pe_or_coff(data: &[u8]) -> bool {
    matches!(
        gfxkit_host::InputKind::sniff(data),
        gfxkit_host::InputKind::PeImage | gfxkit_host::InputKind::CoffObject
    )
}

/// Bundles in `.hip_fat` are laid out at this alignment (what clang asks for `.hip_fatbin`).
const BUNDLE_ALIGN: u64 = 4096;

fn unsupported(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Unsupported(msg.into()))
}

/// The raw data of `fat_name` (`raw` bytes at file offset `fo`, its section header at
/// `header`) lies in the file `data`: everything after it is copied from its end.
fn raw_data_in_file(header: u64, fat_name: &str, fo: u64, raw: u64, data: &[u8]) -> Result<()> {
    if fo.saturating_add(raw) > data.len() as u64 {
        return Err(bad(
            header,
            format!(
                "{fat_name}'s raw data ({raw:#x} bytes at file offset {fo:#x}) runs past the end \
                 of the file ({} bytes): truncated",
                data.len()
            ),
        ));
    }
    Ok(())
}

fn bad(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Damaged(msg.into()))
}

/// File offset of bytes borrowed from `data`.
fn offset_of(data: &[u8], inner: &[u8]) -> u64 {
    gfxkit_bytes::offset_within(data, inner).unwrap_or(0)
}

/// The PE checksum of `bytes` (the optional header's `CheckSum` field, at `field`, counted as
/// zero): the 16-bit one's-complement style sum of the file's little-endian words, folded to
/// 16 bits, plus the file length.
pub fn checksum(bytes: &[u8], field: usize) -> u32 {
    let mut sum: u64 = 0;
    for (i, chunk) in bytes.chunks(2).enumerate() {
        let at = i * 2;
        if at >= field && at < field + 4 {
            continue;
        }
        let word = u64::from(chunk[0]) | chunk.get(1).map_or(0, |&b| u64::from(b) << 8);
        sum += word;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    (sum as u32).wrapping_add(bytes.len() as u32)
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

/// Refuses wrapper `i` of an image unless it is a `HIPF` one: a `HIPK` wrapper means the image
/// is already split by kpack, any other magic is damage.
pub(crate) fn fat_wrapper(i: usize, w: &gfxkit_host::Wrapper) -> Result<()> {
    let at = w.location.offset;
    match w.magic {
        WrapperMagic::Hipf => Ok(()),
        WrapperMagic::Hipk => fail(at, ErrorKind::AlreadySplit { wrapper: i }),
        WrapperMagic::Other(m) => Err(bad(
            at,
            format!("wrapper {i} has magic {m:#010x}, not HIPF"),
        )),
    }
}

/// Refuses an image whose `ImageBase` (in the optional header at file offset `opt_at`) lies so
/// near the top of the address space that an address in the image (a 32-bit RVA, or a section
/// placed after the last one) would not fit 64 bits: no loader maps such an image.
pub(crate) fn check_image_base(image_base: u64, opt_at: u64) -> Result<()> {
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

/// Rewrites the PE32+ image `data` with `t` applied to every bundle of its `.hip_fat`.
pub(crate) fn rewrite_image<'a>(
    data: &'a [u8],
    t: &Transform,
    found: &gfxkit_host::Discovery<'_>,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    let file = PeFile64::parse(data).map_err(|e| bad(0, format!("PE image: {e}")))?;
    let nt = file.nt_headers();
    let opt = nt.optional_header();
    let characteristics = nt.file_header().characteristics.get(LE);
    let kind = if characteristics & pe::IMAGE_FILE_DLL != 0 {
        FileKind::SharedObject
    } else {
        FileKind::Executable
    };
    refuse_signed(data, &file)?;
    let sections = file.section_table();
    let strings = nt.symbols(data).map(|s| s.strings()).unwrap_or_default();
    let named: Vec<(&[u8], &pe::ImageSectionHeader)> = sections
        .iter()
        .map(|sh| (sh.name(strings).unwrap_or_else(|_| sh.raw_name()), sh))
        .collect();
    let header_at = |sh: &pe::ImageSectionHeader| offset_of(data, object::pod::bytes_of(sh));
    let Some((fat_index, fat_name, fsh)) = fatbin_section(data, &file, &named)? else {
        return Ok((Output::of(data), FileKind::NoDeviceCode, None));
    };
    let fat_name = String::from_utf8_lossy(fat_name).into_owned();
    let file_align = u64::from(opt.file_alignment());
    if !file_align.is_power_of_two() || !(512..=65536).contains(&file_align) {
        return Err(bad(
            header_at(fsh),
            format!("FileAlignment {file_align} is not a power of two from 512 to 64 KiB"),
        ));
    }
    let fo = u64::from(fsh.pointer_to_raw_data.get(LE));
    let raw = u64::from(fsh.size_of_raw_data.get(LE));
    let vsize = u64::from(fsh.virtual_size.get(LE));
    if raw % file_align != 0 || fo % file_align != 0 {
        return Err(unsupported(
            header_at(fsh),
            format!(
                "{fat_name}: PointerToRawData {fo:#x} or SizeOfRawData {raw:#x} is not a \
                 multiple of FileAlignment {file_align:#x}"
            ),
        ));
    }
    // The raw data must be in the file: what follows it is copied from its end.
    raw_data_in_file(header_at(fsh), &fat_name, fo, raw, data)?;
    let region_bytes = fsh.pe_data(data).map_err(|_| {
        bad(
            header_at(fsh),
            format!("{fat_name} runs past the end of the file"),
        )
    })?;
    let fs = region_bytes.len() as u64;
    if fs == 0 {
        return Ok((Output::of(data), kind, None));
    }
    let region = plan::transform_region(Cursor::at(region_bytes, fo), BUNDLE_ALIGN, t)?;
    let ns = region.out.len();
    if ns > vsize {
        return Err(unsupported(
            header_at(fsh),
            format!(
                "the rewritten bundles ({ns} bytes) do not fit {fat_name}'s {vsize} bytes of \
                 address space: an image's device code can shrink, not grow"
            ),
        ));
    }
    let new_raw = align_up(ns, file_align).unwrap_or(u64::MAX);
    if new_raw > raw {
        return Err(unsupported(
            header_at(fsh),
            format!("the rewritten bundles ({ns} bytes) need more file space than {fat_name} has"),
        ));
    }
    let shift = raw - new_raw;
    let old_end = fo + raw;

    let fat = ShrunkSection {
        index: fat_index,
        header: fsh,
        name: &fat_name,
        fo,
        old_end,
        shift,
    };
    let mut patches = moved_pointers(data, &file, &named, &fat, new_raw)?;
    let n_wrappers = wrapper_patches(data, &file, &fat, vsize, &region, found, &mut patches)?;

    // The new file: what precedes `.hip_fat`, the new bundles padded to FileAlignment, the rest.
    let (mut out, outcomes) = splice(data, fo, old_end, region, new_raw, &patches)?;
    // CheckSum: recomputed over the final bytes when the input had one.
    let opt_at = offset_of(data, object::pod::bytes_of(opt));
    let checksum_at = opt_at + 64;
    if opt.check_sum() != 0 {
        let bytes = out.to_vec();
        let sum = checksum(&bytes, checksum_at as usize);
        out.put(checksum_at, &sum.to_le_bytes())?;
    }
    let layout = if out.equals(data) {
        Layout::Unchanged
    } else {
        Layout::SectionShortened { shift }
    };
    Ok((
        out,
        kind,
        Some(RegionReport {
            member: None,
            section: Some(fat_name),
            layout,
            wrappers: n_wrappers,
            relocations: 0,
            symbols: 0,
            bundles: outcomes,
        }),
    ))
}

/// The one `.hip_fat` section of the image (index, name, header) among its sections
/// (`named`), checked to lie after the headers; `None` when it has none.
fn fatbin_section<'s>(
    data: &[u8],
    file: &PeFile64<'_>,
    named: &[(&'s [u8], &'s pe::ImageSectionHeader)],
) -> Result<Option<(usize, &'s [u8], &'s pe::ImageSectionHeader)>> {
    let sections = file.section_table();
    let header_at = |sh: &pe::ImageSectionHeader| offset_of(data, object::pod::bytes_of(sh));
    let mut fat = named
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| std::str::from_utf8(n).is_ok_and(is_fatbin_section));
    let Some((fat_index, &(fat_name, fsh))) = fat.next() else {
        return Ok(None);
    };
    if let Some((_, (_, second))) = fat.next() {
        return Err(unsupported(
            header_at(second),
            "more than one .hip_fat section",
        ));
    }
    // The headers, the section table included, lie before every section's raw data: a table
    // that runs into raw data would change as that data moves.
    let table_end = sections.iter().last().map_or(0, |sh| {
        header_at(sh) + std::mem::size_of::<pe::ImageSectionHeader>() as u64
    });
    let first_raw = sections
        .iter()
        .filter(|sh| sh.size_of_raw_data.get(LE) != 0 && sh.pointer_to_raw_data.get(LE) != 0)
        .map(|sh| u64::from(sh.pointer_to_raw_data.get(LE)))
        .min();
    if let Some(first_raw) = first_raw.filter(|&f| table_end > f) {
        return Err(bad(
            header_at(fsh),
            format!(
                "the section table ends at file offset {table_end:#x}, inside the raw data of a \
                 section (from {first_raw:#x}): damaged headers"
            ),
        ));
    }
    Ok(Some((fat_index, fat_name, fsh)))
}

/// The `.hip_fat` section being shortened.
struct ShrunkSection<'s> {
    /// Its index in the section table.
    index: usize,
    /// Its header.
    header: &'s pe::ImageSectionHeader,
    /// Its name.
    name: &'s str,
    /// The file offset of its raw data, and the end of that data.
    fo: u64,
    old_end: u64,
    /// How far what follows its raw data moves down.
    shift: u64,
}

/// Patches for every file offset that points past `.hip_fat`'s raw data (other sections' raw
/// data, relocations and line numbers, the COFF symbol table, debug directory entries) and for
/// the sizes that shrink with it (its `SizeOfRawData`, now `new_raw`; `SizeOfInitializedData`);
/// a piece that overlaps the section is refused.
fn moved_pointers(
    data: &[u8],
    file: &PeFile64<'_>,
    named: &[(&[u8], &pe::ImageSectionHeader)],
    fat: &ShrunkSection<'_>,
    new_raw: u64,
) -> Result<Vec<(u64, Vec<u8>)>> {
    let header_at = |sh: &pe::ImageSectionHeader| offset_of(data, object::pod::bytes_of(sh));
    let nt = file.nt_headers();
    let opt = nt.optional_header();
    let (fat_index, fsh, fat_name) = (fat.index, fat.header, fat.name);
    let (fo, old_end, shift) = (fat.fo, fat.old_end, fat.shift);
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    for (i, &(name, sh)) in named.iter().enumerate() {
        if i == fat_index || sh.pointer_to_raw_data.get(LE) == 0 {
            continue;
        }
        let p = u64::from(sh.pointer_to_raw_data.get(LE));
        let end = p + u64::from(sh.size_of_raw_data.get(LE));
        if p >= old_end {
            patches.push((
                header_at(sh) + 20,
                ((p - shift) as u32).to_le_bytes().to_vec(),
            ));
        } else if end > fo && end > p {
            return Err(unsupported(
                header_at(sh),
                format!(
                    "section {} overlaps {fat_name} in the file",
                    String::from_utf8_lossy(name)
                ),
            ));
        }
        for (field, what) in [
            (24u64, "PointerToRelocations"),
            (28, "PointerToLinenumbers"),
        ] {
            let v = u64::from(Cursor::new(data).u32(header_at(sh) + field)?);
            if v >= old_end {
                patches.push((
                    header_at(sh) + field,
                    ((v - shift) as u32).to_le_bytes().to_vec(),
                ));
            } else if v > fo {
                return Err(unsupported(
                    header_at(sh) + field,
                    format!("{what} lies in {fat_name}"),
                ));
            }
        }
    }
    // `.hip_fat` itself: its new raw size (its offset and virtual size stay).
    patches.push((header_at(fsh) + 16, (new_raw as u32).to_le_bytes().to_vec()));
    // The COFF symbol table, when there is one.
    let file_header_at = offset_of(data, object::pod::bytes_of(nt.file_header()));
    let symtab = u64::from(nt.file_header().pointer_to_symbol_table.get(LE));
    if symtab >= old_end {
        patches.push((
            file_header_at + 8,
            ((symtab - shift) as u32).to_le_bytes().to_vec(),
        ));
    } else if symtab > fo {
        return Err(unsupported(
            file_header_at + 8,
            format!("the symbol table lies in {fat_name}"),
        ));
    }
    // Debug directory entries hold file offsets of their data.
    debug_entries(data, file, fo, old_end, shift, fat_name, &mut patches)?;
    // SizeOfInitializedData counts the raw bytes of initialized-data sections.
    let opt_at = offset_of(data, object::pod::bytes_of(opt));
    if fsh.characteristics.get(LE) & pe::IMAGE_SCN_CNT_INITIALIZED_DATA != 0 {
        let v = opt.size_of_initialized_data();
        let n = v.saturating_sub(shift as u32);
        patches.push((opt_at + 8, n.to_le_bytes().to_vec()));
    }

    Ok(patches)
}

/// Patches for the wrappers: each `HIPF` pointer leads to a bundle of `.hip_fat`, and now to
/// its new place in `region`; every bundle must be led to, and nothing else may point into
/// the section's `vsize` bytes. Returns the number of wrappers.
fn wrapper_patches(
    data: &[u8],
    file: &PeFile64<'_>,
    fat: &ShrunkSection<'_>,
    vsize: u64,
    region: &NewRegion<'_>,
    found: &gfxkit_host::Discovery<'_>,
    patches: &mut Vec<(u64, Vec<u8>)>,
) -> Result<usize> {
    let opt = file.nt_headers().optional_header();
    let opt_at = offset_of(data, object::pod::bytes_of(opt));
    let (fsh, fat_name, fo, old_end) = (fat.header, fat.name, fat.fo, fat.old_end);
    let image_base = opt.image_base();
    check_image_base(image_base, opt_at)?;
    let fat_va = image_base + u64::from(fsh.virtual_address.get(LE));
    let mut pointed = vec![false; region.moves.len()];
    let mut n_wrappers = 0;
    for (i, w) in found.wrappers.iter().enumerate() {
        let at = w.location.offset;
        fat_wrapper(i, w)?;
        let WrapperTarget::Bundle { .. } = w.target else {
            return Err(bad(
                at,
                format!("wrapper {i} does not lead to a bundle of {fat_name}"),
            ));
        };
        let pointer = w.pointer;
        let rel = pointer.wrapping_sub(fat_va);
        let k = region
            .moves
            .binary_search_by_key(&rel, |m| m.0)
            .map_err(|_| {
                bad(
                    at,
                    format!("wrapper {i} does not lead to a bundle of {fat_name}"),
                )
            })?;
        pointed[k] = true;
        n_wrappers += 1;
        let new = fat_va + region.moves[k].1;
        if new != pointer {
            if (fo..old_end).contains(&at) {
                return Err(unsupported(at, format!("a wrapper lies in {fat_name}")));
            }
            patches.push((at + 8, new.to_le_bytes().to_vec()));
        }
    }
    crate::check::every_bundle_pointed(&pointed, |k| fo + region.moves[k].0)?;
    other_pointers(data, file, fat_va, vsize, found, fat_name)?;

    Ok(n_wrappers)
}

/// `data` with its bytes `fo..old_end` replaced by the rewritten `region` padded with zeros to
/// `new_len` bytes, and each patch (at an offset of `data`) applied where its bytes went; the
/// region's bundle outcomes rebased to file offsets.
pub(crate) fn splice<'a>(
    data: &'a [u8],
    fo: u64,
    old_end: u64,
    region: NewRegion<'a>,
    new_len: u64,
    patches: &[(u64, Vec<u8>)],
) -> Result<(Output<'a>, Vec<crate::plan::BundleOutcome>)> {
    let NewRegion {
        out: region_out,
        outcomes,
        ..
    } = region;
    // A field to update inside the section's old bytes is part of no header: damaged.
    if let Some((at, _)) = patches.iter().find(|(at, _)| (fo..old_end).contains(at)) {
        return Err(bad(
            *at,
            format!(
                "a header field the rewrite updates, at file offset {at:#x}, lies inside the \
                 device code's section ({fo:#x}..{old_end:#x}): damaged headers"
            ),
        ));
    }
    let mut out = Output::new();
    out.push(&data[..fo as usize]);
    out.append(region_out);
    out.pad_to(fo + new_len)?;
    out.push(&data[old_end as usize..]);
    for (at, bytes) in patches {
        let at = if *at >= old_end {
            at - old_end + fo + new_len
        } else {
            *at
        };
        out.put(at, bytes)?;
    }
    let outcomes = outcomes
        .into_iter()
        .map(|mut o| {
            o.offset += fo;
            o.new_offset += fo;
            o
        })
        .collect();
    Ok((out, outcomes))
}

/// Refuses an image where a pointer the base relocation table fixes, other than a wrapper's,
/// leads into `.hip_fat` (`fat_va`, `vsize` bytes): it would not follow its bundle.
fn other_pointers(
    data: &[u8],
    file: &PeFile64<'_>,
    fat_va: u64,
    vsize: u64,
    found: &gfxkit_host::Discovery<'_>,
    fat_name: &str,
) -> Result<()> {
    let sections = file.section_table();
    let wrapper_slots: std::collections::HashSet<u64> = found
        .wrappers
        .iter()
        .map(|w| w.location.offset + 8)
        .collect();
    let blocks = match file.data_directories().relocation_blocks(data, &sections) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(()),
        Err(e) => return Err(bad(0, format!("base relocation table: {e}"))),
    };
    for block in blocks {
        let block = block.map_err(|e| bad(0, format!("base relocation table: {e}")))?;
        for r in block {
            if r.typ != pe::IMAGE_REL_BASED_DIR64 {
                continue;
            }
            let Some((at, _)) = sections.pe_file_range_at(r.virtual_address) else {
                continue;
            };
            let at = u64::from(at);
            if wrapper_slots.contains(&at) {
                continue;
            }
            let value = Cursor::new(data).u64(at)?;
            if value >= fat_va && value - fat_va < vsize {
                return Err(unsupported(
                    at,
                    format!(
                        "a pointer at RVA {:#x} other than a wrapper's leads into {fat_name} \
                         ({value:#x})",
                        u64::from(r.virtual_address)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Patches the file offsets (`PointerToRawData`) of debug directory entries whose data lies
/// after `.hip_fat`.
fn debug_entries(
    data: &[u8],
    file: &PeFile64<'_>,
    fo: u64,
    old_end: u64,
    shift: u64,
    fat_name: &str,
    patches: &mut Vec<(u64, Vec<u8>)>,
) -> Result<()> {
    let Some(dir) = file.data_directory(pe::IMAGE_DIRECTORY_ENTRY_DEBUG) else {
        return Ok(());
    };
    if dir.size.get(LE) == 0 {
        return Ok(());
    }
    let dir_at = offset_of(data, object::pod::bytes_of(dir));
    let entries = dir
        .data(data, &file.section_table())
        .map_err(|e| bad(dir_at, format!("debug directory: {e}")))?;
    let base = offset_of(data, entries);
    if (fo..old_end).contains(&base) {
        return Err(unsupported(
            dir_at,
            format!("the debug directory lies in {fat_name}"),
        ));
    }
    for i in 0..entries.len() / 28 {
        let field = (i * 28 + 24) as u64;
        let v = u64::from(Cursor::at(entries, base).u32(field)?);
        if v >= old_end {
            patches.push((base + field, ((v - shift) as u32).to_le_bytes().to_vec()));
        } else if v >= fo && v != 0 {
            return Err(unsupported(
                base + field,
                format!("debug data lies in {fat_name}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::checksum;

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
}
