//! The rewrite of an x86-64 COFF object (a Windows `.obj`, or a member of a `.lib`): a new
//! `.hip_fatbin`, and everything after its raw data moved by the difference in length.
//!
//! An object has no addresses, only file offsets and section-relative values, so the plan is
//! the one of a relocatable ELF object: the section's `SizeOfRawData` becomes the new bundles'
//! length (objects do not align raw data in the file), the `PointerToRawData`,
//! `PointerToRelocations` and `PointerToLinenumbers` of what follows and the file header's
//! `PointerToSymbolTable` move with it, and the section symbol's auxiliary record gets the new
//! `Length` and `CheckSum` (the JamCRC of the contents, as LLVM's object writer sets it).
//!
//! A wrapper's pointer is an `IMAGE_REL_AMD64_ADDR64` relocation against a symbol of
//! `.hip_fatbin` with the addend stored in place: symbols of the section that start a bundle
//! follow it, and each addend is set so that symbol plus addend is the bundle's new offset.
//! Any other relocation against a symbol of the section must carry no addend (it then follows
//! its symbol); anything else is refused, as is a section holding relocations itself. Regular
//! and bigobj headers are both handled.

use super::edit::{bad, fat_wrapper, offset_of, unsupported, Patches, Splice};
use crate::error::{Error, ErrorKind, Result};
use crate::output::Output;
use crate::plan::{self, NewRegion, Transform};
use crate::report::{FileKind, Layout, RegionReport};
use gfxkit_bytes::Cursor;
use gfxkit_host::fatbin::is_fatbin_section;
use gfxkit_host::WrapperTarget;
use object::pe::{self, ImageSectionHeader};
use object::read::coff::{CoffHeader, ImageSymbol, SectionTable, SymbolTable};
use object::LittleEndian as LE;
use std::collections::HashMap;

/// The JamCRC (CRC-32 started from zero, not inverted at the end) of `bytes`: the `CheckSum`
/// LLVM writes into a section symbol's auxiliary record.
pub fn jamcrc(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(u32::MAX);
    h.update(bytes);
    !h.finalize()
}

/// Bytes of the value a relocation of type `typ` stores in place (its addend), for the AMD64
/// types that add one; `None` for the others.
fn addend_width(typ: u16) -> Option<u64> {
    match typ {
        pe::IMAGE_REL_AMD64_ADDR64 => Some(8),
        pe::IMAGE_REL_AMD64_ADDR32
        | pe::IMAGE_REL_AMD64_ADDR32NB
        | pe::IMAGE_REL_AMD64_REL32
        | pe::IMAGE_REL_AMD64_REL32_1
        | pe::IMAGE_REL_AMD64_REL32_2
        | pe::IMAGE_REL_AMD64_REL32_3
        | pe::IMAGE_REL_AMD64_REL32_4
        | pe::IMAGE_REL_AMD64_REL32_5
        | pe::IMAGE_REL_AMD64_SECREL => Some(4),
        _ => None,
    }
}

/// Rewrites the COFF object `data` (a regular header when `bigobj` is false) with `t`
/// applied to every bundle of its `.hip_fatbin`.
pub(crate) fn rewrite_object<'a>(
    data: &'a [u8],
    t: &Transform,
    bigobj: bool,
    found: &gfxkit_host::Discovery<'_>,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    if bigobj {
        rewrite::<pe::AnonObjectHeaderBigobj>(data, t, 44, found)
    } else {
        rewrite::<pe::ImageFileHeader>(data, t, 8, found)
    }
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

/// A piece of the file that must lie wholly before `.hip_fatbin`'s raw data or wholly after
/// it: (file offset, length, what it is, where its pointer is).
type Extent = (u64, u64, String, u64);

fn rewrite<'a, Coff: CoffHeader>(
    data: &'a [u8],
    t: &Transform,
    symtab_field: u64,
    discovered: &gfxkit_host::Discovery<'_>,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    let damaged = |what: &str, e: object::read::Error| bad(0, format!("COFF object: {what}{e}"));
    let mut offset = 0;
    let header = Coff::parse(data, &mut offset).map_err(|e| damaged("", e))?;
    let sections: SectionTable<'a> = header
        .sections(data, offset)
        .map_err(|e| damaged("section table: ", e))?;
    let symbols = header
        .symbols(data)
        .map_err(|e| damaged("symbol table: ", e))?;
    let strings = symbols.strings();
    let named: Vec<(String, &ImageSectionHeader)> = sections
        .iter()
        .map(|sh| {
            let name = sh.name(strings).unwrap_or_else(|_| sh.raw_name());
            (String::from_utf8_lossy(name).into_owned(), sh)
        })
        .collect();
    let fat = match fatbin_section(data, offset, &named)? {
        Found::Section(fat) => fat,
        Found::None(kind) => return Ok((Output::of(data), kind, None)),
    };
    let (fo, raw) = (fat.fo, fat.raw);
    let located = Cursor::new(data).sub(fo, raw)?;
    let region = plan::transform_region(located, None, t)?;
    let ns = region.out.len();
    if ns > u64::from(u32::MAX) {
        return Err(unsupported(
            fat.header_at + 16,
            format!("the rewritten bundles ({ns} bytes) do not fit a COFF section"),
        ));
    }
    let mut patches = moved_pieces(data, header, symtab_field, &named, &fat, ns)?;
    patches.bytes(fat.header_at + 16, &(ns as u32).to_le_bytes());
    let (new_value, n_symbols) = symbol_patches(data, &symbols, &fat, &region, &mut patches)?;
    let (n_relocations, n_wrappers) = relocation_patches(
        data,
        &symbols,
        &named,
        &fat,
        &region,
        &new_value,
        discovered,
        &mut patches,
    )?;
    let mut splice = Splice::new();
    let outcomes = splice.replace_region(fo, fo + raw, region, ns)?;
    let out = splice.finish(data, &patches)?;
    let layout = if out.equals(data) {
        Layout::Unchanged
    } else {
        Layout::Rebuilt
    };
    Ok((
        out,
        FileKind::Object,
        Some(RegionReport {
            member: None,
            section: Some(fat.name),
            layout,
            wrappers: n_wrappers,
            relocations: n_relocations,
            symbols: n_symbols,
            bundles: outcomes,
        }),
    ))
}

/// The `.hip_fatbin` section of an object.
struct FatSection {
    /// Its index in the section table.
    index: usize,
    /// Its name.
    name: String,
    /// The file offset of its section header.
    header_at: u64,
    /// Its raw data: file offset and length.
    fo: u64,
    raw: u64,
}

/// What [`fatbin_section`] found.
enum Found {
    /// A `.hip_fatbin` with raw data to rewrite.
    Section(FatSection),
    /// Nothing to rewrite: the file's kind (no section, or one without raw data).
    None(FileKind),
}

/// The one `.hip_fatbin` section of the object whose section table (`named`, after the
/// headers that end at `offset`) is given, checked to be rewritable: its raw data in the file
/// and after the headers, no relocations of its own.
fn fatbin_section(
    data: &[u8],
    offset: u64,
    named: &[(String, &ImageSectionHeader)],
) -> Result<Found> {
    let sh_at = |sh: &ImageSectionHeader| offset_of(data, object::pod::bytes_of(sh));
    let mut fat = named
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| is_fatbin_section(n));
    let Some((fat_index, (fat_name, fsh))) = fat.next() else {
        return Ok(Found::None(FileKind::NoDeviceCode));
    };
    if let Some((_, (_, second))) = fat.next() {
        return Err(unsupported(
            sh_at(second),
            "more than one .hip_fatbin section",
        ));
    }
    // The headers, the section table included, lie before the section's raw data: a table
    // running into it would be rewritten with it.
    let table_end = offset + named.len() as u64 * std::mem::size_of::<ImageSectionHeader>() as u64;
    let (fo, raw) = match fsh.coff_file_range() {
        Some((fo, raw)) if raw != 0 => (u64::from(fo), u64::from(raw)),
        _ => return Ok(Found::None(FileKind::Object)),
    };
    if table_end > fo {
        return Err(bad(
            sh_at(fsh),
            format!(
                "the section table ends at file offset {table_end:#x}, inside {fat_name}'s raw \
                 data (from {fo:#x}): damaged headers"
            ),
        ));
    }
    raw_data_in_file(sh_at(fsh), fat_name, fo, raw, data)?;
    if fsh.number_of_relocations.get(LE) != 0 {
        return Err(unsupported(
            sh_at(fsh) + 32,
            format!("{fat_name} holds relocations: its bytes are not offload bundles alone"),
        ));
    }
    Ok(Found::Section(FatSection {
        index: fat_index,
        name: fat_name.clone(),
        header_at: sh_at(fsh),
        fo,
        raw,
    }))
}

/// The pointers to every other piece of the file (raw data, relocations, line numbers, the
/// symbol table) that lies after `.hip_fatbin`'s raw data, moved by the new length `ns`; a
/// piece that overlaps the section is refused.
fn moved_pieces<Coff: CoffHeader>(
    data: &[u8],
    header: &Coff,
    symtab_field: u64,
    named: &[(String, &ImageSectionHeader)],
    fat: &FatSection,
    ns: u64,
) -> Result<Patches> {
    let sh_at = |sh: &ImageSectionHeader| offset_of(data, object::pod::bytes_of(sh));
    let header_at = offset_of(data, object::pod::bytes_of(header));
    let (fat_index, fat_name, fo) = (fat.index, &fat.name, fat.fo);
    let old_end = fat.fo + fat.raw;
    let mut extents: Vec<Extent> = Vec::new();
    for (i, (name, sh)) in named.iter().enumerate() {
        let at = sh_at(sh);
        if i != fat_index {
            if let Some((p, n)) = sh.coff_file_range() {
                extents.push((p.into(), n.into(), format!("{name}'s raw data"), at + 20));
            }
        }
        if let Ok(rs) = sh.coff_relocations(data) {
            if !rs.is_empty() {
                let p = offset_of(data, object::pod::bytes_of_slice(rs));
                let n = std::mem::size_of_val(rs) as u64;
                extents.push((p, n, format!("{name}'s relocations"), at + 24));
            }
        }
        let lines = u64::from(sh.pointer_to_linenumbers.get(LE));
        if lines != 0 {
            let n = u64::from(sh.number_of_linenumbers.get(LE)) * 6;
            extents.push((lines, n, format!("{name}'s line numbers"), at + 28));
        }
    }
    let symtab = u64::from(header.pointer_to_symbol_table());
    if symtab != 0 {
        let records =
            u64::from(header.number_of_symbols()) * std::mem::size_of::<Coff::ImageSymbol>() as u64;
        // The string table follows the symbols; its first four bytes hold its length (at
        // least those four; a file that ends before them has an empty one).
        let strings = Cursor::new(data).u32(symtab + records).unwrap_or(4).max(4);
        let n = records + u64::from(strings);
        extents.push((
            symtab,
            n,
            "the symbol table".into(),
            header_at + symtab_field,
        ));
    }
    // The pieces lie apart: one that runs into another (a relocation table over the symbol
    // table, say) would be rewritten twice, once as each, and read back as neither.
    let mut sorted: Vec<&Extent> = extents.iter().filter(|e| e.1 != 0).collect();
    sorted.sort_by_key(|e| e.0);
    if let Some(w) = sorted
        .windows(2)
        .find(|w| w[1].0 < w[0].0.saturating_add(w[0].1))
    {
        let ((p, n, what, _), (q, _, other, field)) = (w[0], w[1]);
        return Err(bad(
            *field,
            format!(
                "{other} (at file offset {q:#x}) lies inside {what} ({n} bytes at file offset \
                 {p:#x}): damaged headers"
            ),
        ));
    }
    let mut patches = Patches::new();
    let moved = |x: u64| (x - old_end + fo + ns) as u32;
    for (p, n, what, field) in &extents {
        if *p >= old_end {
            patches.bytes(*field, &moved(*p).to_le_bytes());
        } else if p + n > fo && *n != 0 {
            return Err(unsupported(
                *field,
                format!("{what} ({n} bytes at file offset {p:#x}) overlaps {fat_name}"),
            ));
        }
    }
    Ok(patches)
}

/// Patches for the symbols of `.hip_fatbin`: each at a bundle's start (or the section's end)
/// follows it; the section symbol's auxiliary record takes the new length and checksum.
/// Returns each symbol's new value by index, and the number of symbols moved.
fn symbol_patches<'a, Coff: CoffHeader>(
    data: &'a [u8],
    symbols: &SymbolTable<'a, &'a [u8], Coff>,
    fat: &FatSection,
    region: &NewRegion<'_>,
    patches: &mut Patches,
) -> Result<(HashMap<usize, u64>, usize)> {
    let strings = symbols.strings();
    let (fat_name, raw) = (&fat.name, fat.raw);
    let ns = region.out.len();
    let fat_number = fat.index as i32 + 1;
    let mut new_value: HashMap<usize, u64> = HashMap::new();
    let mut n_symbols = 0;
    let mut checksum = None;
    for (index, sym) in symbols.iter() {
        if sym.section_number() != fat_number {
            continue;
        }
        let at = offset_of(data, object::pod::bytes_of(sym));
        let old = u64::from(sym.value());
        let new = region.map(old, raw).ok_or_else(|| {
            let name = sym.name(strings).unwrap_or_default();
            unsupported(
                at + 8,
                format!(
                    "symbol {} lies at offset {old:#x} of {fat_name}, not at a bundle's start",
                    String::from_utf8_lossy(name)
                ),
            )
        })?;
        new_value.insert(index.0, new);
        if new != old {
            patches.bytes(at + 8, &(new as u32).to_le_bytes());
            n_symbols += 1;
        }
        if sym.has_aux_section() {
            let aux = symbols
                .aux_section(index)
                .map_err(|e| bad(at, format!("{fat_name}'s section symbol: {e}")))?;
            let aux_at = offset_of(data, object::pod::bytes_of(aux));
            patches.bytes(aux_at, &(ns as u32).to_le_bytes());
            if aux.check_sum.get(LE) != 0 {
                let sum = match checksum {
                    Some(s) => s,
                    None => *checksum.insert(jamcrc_of(&region.out)?),
                };
                patches.bytes(aux_at + 8, &sum.to_le_bytes());
            }
        }
    }

    Ok((new_value, n_symbols))
}

/// Patches for the relocations against the symbols of `.hip_fatbin` (`new_value`): the
/// wrappers' pointer slots get their addends, others must carry none; every wrapper must lead
/// to a bundle through one, and every bundle be led to. Returns the number of relocations
/// changed and of wrappers.
#[allow(clippy::too_many_arguments)]
fn relocation_patches<'a, Coff: CoffHeader>(
    data: &'a [u8],
    symbols: &SymbolTable<'a, &'a [u8], Coff>,
    named: &[(String, &ImageSectionHeader)],
    fat: &FatSection,
    region: &NewRegion<'_>,
    new_value: &HashMap<usize, u64>,
    discovered: &gfxkit_host::Discovery<'_>,
    patches: &mut Patches,
) -> Result<(usize, usize)> {
    let (fat_index, fat_name, fo) = (fat.index, &fat.name, fat.fo);
    let slots: HashMap<u64, usize> = discovered
        .wrappers
        .iter()
        .enumerate()
        .map(|(i, w)| (w.location.offset + 8, i))
        .collect();
    let mut pointed = vec![false; region.moves.len()];
    let mut n_relocations = 0;
    let mut wrappers_done = vec![false; discovered.wrappers.len()];
    for (i, (name, sh)) in named.iter().enumerate() {
        if i == fat_index {
            continue;
        }
        let Ok(rs) = sh.coff_relocations(data) else {
            continue;
        };
        let Some((base, size)) = sh.coff_file_range() else {
            continue;
        };
        let (base, size) = (u64::from(base), u64::from(size));
        for r in rs {
            let index = r.symbol_table_index.get(LE) as usize;
            let Some(&new_sym) = new_value.get(&index) else {
                continue;
            };
            let typ = r.typ.get(LE);
            let off = u64::from(r.virtual_address.get(LE));
            if typ == pe::IMAGE_REL_AMD64_ABSOLUTE || typ == pe::IMAGE_REL_AMD64_SECTION {
                continue;
            }
            let Some(width) = addend_width(typ).filter(|w| off + w <= size) else {
                return Err(unsupported(
                    base + off.min(size),
                    format!(
                        "a relocation of type {typ:#x} in {name} at offset {off:#x} refers to \
                         {fat_name}"
                    ),
                ));
            };
            let slot = base + off;
            let addend = if width == 8 {
                Cursor::new(data).u64(slot)?
            } else {
                u64::from(Cursor::new(data).u32(slot)?)
            };
            let Some(&w) = slots.get(&slot).filter(|_| width == 8) else {
                if addend != 0 {
                    return Err(unsupported(
                        slot,
                        format!(
                            "a relocation in {name} at offset {off:#x} refers into {fat_name} \
                             with addend {addend:#x}: it would not follow its bundle"
                        ),
                    ));
                }
                continue;
            };
            let wrapper = &discovered.wrappers[w];
            fat_wrapper(w, wrapper)?;
            let old_sym = symbols
                .symbol(object::SymbolIndex(index))
                .map(|s| u64::from(s.value()))
                .unwrap_or(0);
            let target = old_sym.wrapping_add(addend);
            let k = region
                .moves
                .binary_search_by_key(&target, |m| m.0)
                .map_err(|_| {
                    bad(
                        wrapper.location.offset,
                        format!("wrapper {w} does not lead to a bundle of {fat_name}"),
                    )
                })?;
            pointed[k] = true;
            wrappers_done[w] = true;
            let new_addend = region.moves[k].1.wrapping_sub(new_sym);
            if new_addend != addend {
                patches.bytes(slot, &new_addend.to_le_bytes());
                n_relocations += 1;
            }
        }
    }
    for (i, w) in discovered.wrappers.iter().enumerate() {
        if !wrappers_done[i] {
            fat_wrapper(i, w)?;
            if matches!(w.target, WrapperTarget::Bundle { .. }) {
                return Err(bad(
                    w.location.offset,
                    format!("wrapper {i} leads to {fat_name} without a relocation"),
                ));
            }
        }
    }
    crate::check::every_bundle_pointed(&pointed, |k| fo + region.moves[k].0)?;

    let n_wrappers = wrappers_done.iter().filter(|d| **d).count();
    Ok((n_relocations, n_wrappers))
}

/// The JamCRC of the new region's bytes.
fn jamcrc_of(region: &Output<'_>) -> Result<u32> {
    let bytes = region
        .try_to_vec()
        .map_err(|e| Error::at(0, ErrorKind::Unsupported(format!("{e}"))))?;
    Ok(jamcrc(&bytes))
}

#[cfg(test)]
mod tests {
    /// An object whose `.hipFatBinSegment` relocation table runs over the raw data of the
    /// sections after it and the symbol table (found by the `pe_rewrite` fuzz target):
    /// refused as damage, where the recompressed object failed its verification.
    #[test]
    fn object_relocations_over_the_symbol_table() {
        use crate::filter::{EntryFilter, Pattern};
        use crate::plan::{Conversion, Transform};
        // The target's first byte picks its transform; the object follows.
        let data = &include_bytes!(
            "../../../../fuzz/regressions/pe_rewrite/object-relocations-over-the-symbol-table.bin"
        )[1..];
        let t = Transform {
            selection: EntryFilter::Keep(vec![Pattern::parse("gfx1030").unwrap()]),
            conversion: Conversion::Compressed {
                version: 2,
                method: crate::Method::Zstd,
                level: Some(1),
            },
            limits: Default::default(),
        };
        let e = crate::rewrite(data, &t).expect_err("refused");
        assert!(
            e.to_string()
                .contains("lies inside .hipFatBinSegment's relocations"),
            "{e}"
        );
    }
}
