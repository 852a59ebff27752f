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
//! table) is refused: the rewrite would invalidate it; [`super::without_signature`] gives the
//! file without it (`--drop-signature`).
//!
//! The bundles are read and rewritten by the same planner as ELF files
//! (`plan::transform_region`), and the result is checked by the same verification
//! ([`verify`](mod@crate::verify)), which reads it back through host discovery.

use super::edit::{bad, fat_wrapper, unsupported, Patches, Splice};
use super::image::{file_offsets, finish, only_wrappers_lead_into, Image};
use crate::error::Result;
use crate::output::Output;
use crate::patch::align_up;
use crate::plan::{self, NewRegion, Transform};
use crate::report::{FileKind, Layout, RegionReport};
use gfxkit_bytes::Cursor;
use gfxkit_host::WrapperTarget;
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader};
use object::LittleEndian as LE;
use std::collections::HashSet;

/// Bundles in `.hip_fat` are laid out at this alignment (what clang asks for `.hip_fatbin`).
const BUNDLE_ALIGN: u64 = 4096;

/// Rewrites the PE32+ image `data` with `t` applied to every bundle of its `.hip_fat`.
pub(crate) fn rewrite_image<'a>(
    data: &'a [u8],
    t: &Transform,
    found: &gfxkit_host::Discovery<'_>,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    let img = Image::parse(data)?;
    let kind =
        if img.file.nt_headers().file_header().characteristics.get(LE) & pe::IMAGE_FILE_DLL != 0 {
            FileKind::SharedObject
        } else {
            FileKind::Executable
        };
    let Some(fat_index) = img.fat else {
        return Ok((Output::of(data), FileKind::NoDeviceCode, None));
    };
    img.check(data)?;
    let fat = &img.secs[fat_index];
    let (fo, raw, vsize) = (fat.ptr, fat.raw, fat.vsize);
    // Without raw data the section may still point anywhere: past the end is damage, as it
    // is for a section with some (which the image check refuses).
    let Some(region_bytes) = data
        .get(fo as usize..)
        .and_then(|d| d.get(..fat.contents_len() as usize))
    else {
        return Err(bad(
            fat.header,
            format!("{} runs past the end of the file", fat.name),
        ));
    };
    if region_bytes.is_empty() {
        return Ok((Output::of(data), kind, None));
    }
    let region = plan::transform_region(Cursor::at(region_bytes, fo), Some(BUNDLE_ALIGN), t)?;
    let ns = region.out.len();
    if ns > vsize {
        return Err(unsupported(
            fat.header,
            format!(
                "the rewritten bundles ({ns} bytes) do not fit {}'s {vsize} bytes of address \
                 space: an image's device code can shrink, not grow",
                fat.name
            ),
        ));
    }
    let new_raw = align_up(ns, img.file_align).unwrap_or(u64::MAX);
    if new_raw > raw {
        return Err(unsupported(
            fat.header,
            format!(
                "the rewritten bundles ({ns} bytes) need more file space than {} has",
                fat.name
            ),
        ));
    }
    let shift = raw - new_raw;
    let mut patches = Patches::new();
    let n_wrappers = wrapper_patches(data, &img, &region, found, &mut patches)?;
    let mut splice = Splice::new();
    let outcomes = splice.replace_region(fo, fo + raw, region, new_raw)?;
    file_offsets(data, &img, &splice, &[fat_index], &mut patches)?;
    // `.hip_fat` itself: its new raw size (its offset and virtual size stay).
    patches.u32(fat.header + 16, new_raw)?;
    // SizeOfInitializedData counts the raw bytes of initialized-data sections.
    if fat.initialized() {
        let v = img
            .file
            .nt_headers()
            .optional_header()
            .size_of_initialized_data();
        patches.u32(img.opt + 8, u64::from(v).saturating_sub(shift))?;
    }
    let out = finish(data, &img, splice, &patches)?;
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
            section: Some(fat.name.clone()),
            layout,
            wrappers: n_wrappers,
            relocations: 0,
            symbols: 0,
            bundles: outcomes,
        }),
    ))
}

/// Patches for the wrappers: each `HIPF` pointer leads to a bundle of `.hip_fat`, and now to
/// its new place in `region`; every bundle must be led to, and nothing else may point into
/// the section's addresses. Returns the number of wrappers.
fn wrapper_patches(
    data: &[u8],
    img: &Image<'_>,
    region: &NewRegion<'_>,
    found: &gfxkit_host::Discovery<'_>,
    patches: &mut Patches,
) -> Result<usize> {
    let fat = img.fat()?;
    let (fo, old_end) = (fat.ptr, fat.ptr + fat.raw);
    let fat_va = img.image_base + fat.va;
    let mut pointed = vec![false; region.moves.len()];
    let mut n_wrappers = 0;
    for (i, w) in found.wrappers.iter().enumerate() {
        let at = w.location.offset;
        fat_wrapper(i, w)?;
        let not_a_bundle = || {
            bad(
                at,
                format!("wrapper {i} does not lead to a bundle of {}", fat.name),
            )
        };
        let WrapperTarget::Bundle { .. } = w.target else {
            return Err(not_a_bundle());
        };
        let pointer = w.pointer;
        let k = region
            .moves
            .binary_search_by_key(&pointer.wrapping_sub(fat_va), |m| m.0)
            .map_err(|_| not_a_bundle())?;
        pointed[k] = true;
        n_wrappers += 1;
        let new = fat_va + region.moves[k].1;
        if new != pointer {
            if (fo..old_end).contains(&at) {
                return Err(unsupported(at, format!("a wrapper lies in {}", fat.name)));
            }
            patches.u64(at + 8, new);
        }
    }
    crate::check::every_bundle_pointed(&pointed, |k| fo + region.moves[k].0)?;
    let slots: HashSet<u64> = found
        .wrappers
        .iter()
        .map(|w| w.location.offset + 8)
        .collect();
    only_wrappers_lead_into(
        img,
        &img.dir64(data)?,
        &slots,
        (fat.va, fat.vsize),
        &fat.name,
    )?;
    Ok(n_wrappers)
}

#[cfg(test)]
mod tests {
    use crate::filter::{EntryFilter, Pattern};
    use crate::plan::{Conversion, Transform};

    /// A `.hip_fat` without raw data whose `PointerToRawData` lies past the end of the file
    /// (found by the `pe_rewrite` fuzz target): refused as damage, where the rewrite used to
    /// slice the file at that pointer.
    #[test]
    fn fat_pointer_past_the_end_without_raw_data() {
        // The target's first byte picks its transform; the image follows.
        let data = &include_bytes!(
            "../../../../fuzz/regressions/pe_rewrite/fat-pointer-past-the-end-without-raw-data.bin"
        )[1..];
        let t = Transform {
            selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
            conversion: Conversion::Keep,
            limits: Default::default(),
        };
        let e = crate::rewrite(data, &t).expect_err("refused");
        assert!(
            e.to_string().contains("runs past the end of the file"),
            "{e}"
        );
    }
}
