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

use super::edit::{bad, fat_wrapper, unsupported, Patches, Splice};
use super::image::{file_offsets, finish, only_wrappers_lead_into, Image, Sec, SECTION_HEADER};
use crate::error::{fail, ErrorKind, Result};
use crate::kpack::Split;
use crate::output::Output;
use crate::patch::align_up;
use gfxkit_host::{WrapperMagic, WrapperTarget};
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader};
use std::collections::HashSet;

/// Name of the kpack marker section in PE images (the 8-byte spelling of ELF's
/// `.rocm_kpack_ref`).
pub const MARKER_SECTION: &str = ".kpackrf";

/// The marker section's characteristics (TheRock's): readable initialized data.
const MARKER_CHARACTERISTICS: u32 = pe::IMAGE_SCN_MEM_READ | pe::IMAGE_SCN_CNT_INITIALIZED_DATA;

/// The image `data` read and checked as every kpack rewrite requires ([`check_image`]), with
/// the index of its `.hip_fat` section and that section.
fn checked(data: &[u8]) -> Result<(Image<'_>, usize, Sec)> {
    let img = Image::parse(data)?;
    img.check(data)?;
    img.all_aligned()?;
    let fat = img.fat()?.clone();
    let index = img.fat.unwrap_or_default();
    Ok((img, index, fat))
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
    let (img, fat_at, fat) = checked(data)?;
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
    let wrapper_bundles = wrapper_bundles(&img, &found, &fat, &dir64, &slots)?;
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
    let mut splice = Splice::new();
    splice.replace(fo, old_end, Output::new());
    splice.replace(p, p, Output::of(padded));
    let m_off = splice.map(p).unwrap_or(0) - m_raw;

    let mut patches = Patches::new();
    file_offsets(data, &img, &splice, &[fat_at], &mut patches)?;
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
    let bytes = finish(data, &img, splice, &patches)?.to_vec();
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
    img: &Image<'_>,
    found: &gfxkit_host::Discovery<'_>,
    fat: &Sec,
    dir64: &[(u64, u64)],
    slots: &HashSet<u64>,
) -> Result<Vec<u64>> {
    let (fo, old_end) = (fat.ptr, fat.ptr + fat.raw);
    let relocated: HashSet<u64> = dir64.iter().map(|&(at, _)| at).collect();
    let mut wrapper_bundles = Vec::with_capacity(found.wrappers.len());
    for (i, w) in found.wrappers.iter().enumerate() {
        let at = w.location.offset;
        fat_wrapper(i, w)?;
        let WrapperTarget::Bundle { index } = w.target else {
            return Err(bad(
                at,
                format!("wrapper {i} does not lead to a bundle of {}", fat.name),
            ));
        };
        let Some(bundle) = found.bundle_location(index) else {
            return Err(bad(at, format!("wrapper {i} leads to no bundle")));
        };
        let b = bundle.offset;
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
    only_wrappers_lead_into(img, dir64, slots, (fat.va, fat.vsize), &fat.name)?;
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
    let what = format!("where {MARKER_SECTION} goes (the end of the image)");
    only_wrappers_lead_into(img, dir64, slots, (m_rva, m_len), &what)?;
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
    checked(data)?;
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
    Ok(checked(data)?.2.vsize)
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
    let (img, fat_at, fat) = checked(data)?;
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
        if s == Some(fat_at) {
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
    let mut splice = Splice::new();
    splice.replace(p, p + fat.raw, Output::of(content));
    if let Some(m) = removed {
        let s = &img.secs[m];
        splice.replace(s.ptr, s.ptr + s.raw, Output::new());
    }

    let mut patches = Patches::new();
    let mut skip = vec![fat_at];
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
    Ok(finish(data, &img, splice, &patches)?.to_vec())
}

/// Checks the layout rules a kpack split or inline keeps in an image it wrote (and requires
/// of the image it reads): it parses as a PE32+ image with one `.hip_fat` section and keeps the
/// rules of every rewrite of an image (no signature; every section's raw data in the file
/// after the headers, overlapping no other; sections following each other in memory within
/// `SizeOfImage`; a readable base relocation table), and every section's raw data lies at
/// multiples of `FileAlignment` (the marker section goes after the last).
pub fn check_image(data: &[u8]) -> Result<()> {
    checked(data).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_are_placed_at_aligned_offsets() {
        assert_eq!(
            bundle_offsets([10, 4096, 1], 4096),
            (vec![0, 4096, 8192], 8193)
        );
    }
}
