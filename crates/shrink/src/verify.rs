//! Checking a rewrite: the rewritten file read again from scratch and every kept entry
//! compared byte for byte with the input it came from; and the entries' MD5 digests for the
//! report, computed only when asked.
//!
//! The comparison makes hashing unnecessary here: a compressed bundle of the rewritten file is
//! decoded without computing its CCOB hash (its declared size and extent are still checked),
//! and its entries are compared with the input's, which stay in the input mapping. The hash
//! stored in that bundle was computed from those same bytes when it was compressed, in the
//! same pass that fed the compressor.

use crate::bundle;
use crate::elf::{self, Elf};
use crate::error::{Error, ErrorKind, Result};
use crate::plan::BundleOutcome;
use crate::report::{Report, Rewritten};
use crate::survey::{page_conflicts, survey_read, Reading};
use gfxkit_bundle::ccob;
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::{Bundle, Entry};
use gfxkit_bytes::Cursor;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;

fn verify_error(msg: String) -> Error {
    Error::at(0, ErrorKind::Verify(msg))
}

/// Checks a rewritten file: every bundle re-read, every kept entry equal byte for byte to the
/// original's, every wrapper leading to a bundle, and (ELF) every loadable segment still
/// congruent to its address and in address order.
/// `original` is the input the rewrite was made from.
/// Bundles are read under `limits`, those the rewrite was made under.
pub fn verify(original: &[u8], rewritten: &Rewritten, limits: &Limits) -> Result<()> {
    verify_bytes(original, &rewritten.bytes(), &rewritten.report, limits)
}

/// Like [`verify`], for the bytes of a rewritten file read back from disk: `bytes` must hold
/// what `report` says (the report of the rewrite of `original`).
pub fn verify_bytes(original: &[u8], bytes: &[u8], report: &Report, limits: &Limits) -> Result<()> {
    let fail_v = |msg: String| Err(verify_error(msg));
    let by_new: HashMap<u64, &BundleOutcome> = report
        .regions
        .iter()
        .flat_map(|r| &r.bundles)
        .map(|b| (b.new_offset, b))
        .collect();
    let compare = |at: u64, stored: &[u8], rewritten: &Bundle<'_>| -> Result<()> {
        let Some(w) = by_new.get(&at) else {
            return Err(verify_error(format!(
                "bundle at {at:#x} is not one the rewrite placed"
            )));
        };
        same_as_original(original, w, stored, rewritten, limits)
    };
    let s = survey_read(
        bytes,
        &Reading {
            decode: true,
            digests: false,
            hash: false,
            headers: false,
            visit: Some(&compare),
            base: 0,
            limits: *limits,
        },
    )?;
    let want: Vec<_> = report
        .regions
        .iter()
        .filter(|r| !r.bundles.is_empty())
        .collect();
    let got: Vec<_> = s.regions.iter().filter(|r| !r.bundles.is_empty()).collect();
    if want.len() != got.len() {
        return fail_v(format!(
            "{} regions of bundles expected, {} found",
            want.len(),
            got.len()
        ));
    }
    for (w, g) in want.iter().zip(&got) {
        let place = w.member.clone().unwrap_or_default();
        if let Some(p) = g.problems.first() {
            return fail_v(format!("{place} {p}"));
        }
        if g.wrappers != w.wrappers {
            return fail_v(format!(
                "{place}: {} wrappers expected, {} found",
                w.wrappers, g.wrappers
            ));
        }
        if w.bundles.len() != g.bundles.len() {
            return fail_v(format!(
                "{place}: {} bundles expected, {} found",
                w.bundles.len(),
                g.bundles.len()
            ));
        }
        for (k, (wb, gb)) in w.bundles.iter().zip(&g.bundles).enumerate() {
            let same_entries = wb.kept.len() == gb.entries.len()
                && wb
                    .kept
                    .iter()
                    .zip(&gb.entries)
                    .all(|(a, b)| a.id == b.id && a.target == b.target && a.size == b.size);
            if !same_entries || wb.new_offset != gb.offset {
                return fail_v(format!(
                    "{place} bundle {k}: entries differ from the originals kept"
                ));
            }
            if wb.encoding_after != gb.encoding {
                return fail_v(format!(
                    "{place} bundle {k}: encoding {} expected, {} found",
                    wb.encoding_after, gb.encoding
                ));
            }
        }
    }
    if elf::is_elf(bytes) {
        check_segments(bytes)?;
        let before = page_conflicts(original);
        let after = page_conflicts(bytes);
        if after > before {
            return fail_v(format!(
                "{after} pairs of loadable segments share a page or are out of order (were {before})"
            ));
        }
    }
    Ok(())
}

/// The input bundle `w` came from, uncompressed (borrowed from `original` when it is stored
/// so). A compressed one is decoded without its hash, which the rewrite checked when it read
/// it.
fn original_bundle<'o>(
    original: &'o [u8],
    w: &BundleOutcome,
    limits: &Limits,
) -> Result<(&'o [u8], Cow<'o, [u8]>)> {
    let stored = usize::try_from(w.offset)
        .ok()
        .zip(usize::try_from(w.size_before).ok())
        .and_then(|(at, n)| original.get(at..at.checked_add(n)?))
        .ok_or_else(|| {
            verify_error(format!(
                "the input has no bundle of {} bytes at {:#x}",
                w.size_before, w.offset
            ))
        })?;
    let raw = if ccob::is_ccob(stored) {
        let mut data = Vec::new();
        let located = Cursor::at(stored, w.offset);
        ccob::decompress_ccob_unhashed_into(located, &limits.decompress_options(), &mut data)
            .map_err(|e| bundle::error_at(e, w.offset))?;
        Cow::Owned(data)
    } else {
        Cow::Borrowed(stored)
    };
    Ok((stored, raw))
}

/// The next entry of `entries` from `*from` on with ID `id`; `*from` moves past it.
fn next_with_id<'e, 'd>(
    entries: &'e [Entry<'d>],
    from: &mut usize,
    id: &str,
) -> Option<&'e Entry<'d>> {
    let i = *from + entries.get(*from..)?.iter().position(|e| e.id == id)?;
    *from = i + 1;
    Some(&entries[i])
}

/// Whether the rewritten bundle (stored as `stored`, parsed as `rewritten`) holds exactly the
/// payloads of the input bundle `w` came from that it keeps, in their order.
fn same_as_original(
    original: &[u8],
    w: &BundleOutcome,
    stored: &[u8],
    rewritten: &Bundle<'_>,
    limits: &Limits,
) -> Result<()> {
    let (orig_stored, raw) = original_bundle(original, w, limits)?;
    if orig_stored == stored {
        // The same bytes as the input's bundle: the same entries.
        return Ok(());
    }
    let orig = Bundle::parse(&raw).map_err(|e| {
        verify_error(format!(
            "the input bundle at {:#x} no longer reads: {e}",
            w.offset
        ))
    })?;
    let mut from = 0usize;
    for e in rewritten.entries() {
        let Some(o) = next_with_id(orig.entries(), &mut from, e.id) else {
            return Err(verify_error(format!(
                "bundle at {:#x}: entries differ from the originals kept: entry {} ({}) is \
                 not an entry of the input bundle at {:#x}",
                w.new_offset, e.index, e.id, w.offset
            )));
        };
        if o.payload != e.payload {
            let at = o
                .payload
                .iter()
                .zip(e.payload)
                .position(|(a, b)| a != b)
                .unwrap_or(o.payload.len().min(e.payload.len()));
            return Err(verify_error(format!(
                "bundle at {:#x}: entries differ from the originals kept: entry {} ({}) \
                 differs from the input's at byte {at} of its payload",
                w.new_offset, e.index, e.id
            )));
        }
    }
    Ok(())
}

impl Report {
    /// Fills in the MD5 of every kept entry (`kept[].md5`), reading the payloads from
    /// `original`, the input the rewrite was made from: one MD5 pass over the kept payloads,
    /// bundles in parallel. [`crate::rewrite()`] does this itself;
    /// [`crate::rewrite_without_digests`] leaves it to callers that want the digests. Bundles
    /// are read under `limits`.
    pub fn add_digests(&mut self, original: &[u8], limits: &Limits) -> Result<()> {
        let mut all: Vec<&mut BundleOutcome> = self
            .regions
            .iter_mut()
            .flat_map(|r| r.bundles.iter_mut())
            .filter(|b| !b.kept.is_empty())
            .collect();
        all.par_iter_mut().try_for_each(|w| -> Result<()> {
            let (_, raw) = original_bundle(original, w, limits)?;
            let stored = matches!(raw, Cow::Borrowed(_));
            let orig = bundle::parse_uncompressed(&raw, stored, w.offset)?;
            let mut from = 0usize;
            let offset = w.offset;
            let mut payloads = Vec::with_capacity(w.kept.len());
            for k in &w.kept {
                let o = next_with_id(orig.entries(), &mut from, &k.id).ok_or_else(|| {
                    verify_error(format!(
                        "entry {} is not in the input bundle at {offset:#x}",
                        k.id
                    ))
                })?;
                payloads.push(o.payload);
            }
            // The bundle's kept entries side by side.
            for (k, d) in w
                .kept
                .iter_mut()
                .zip(gfxkit_bundle::hash::digests(&payloads))
            {
                k.md5 = hex::encode(d);
            }
            Ok(())
        })
    }
}

fn check_segments(data: &[u8]) -> Result<()> {
    let e = Elf::parse(data)?;
    crate::check::segments(&e, data.len() as u64)
        .map_err(|err| Error::at(err.offset, ErrorKind::Verify(err.kind.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bundle, rewrite, rewrite_without_digests, Conversion, Method, Output};
    use crate::{EntryFilter, Pattern, Transform};
    use md5::{Digest, Md5};

    fn input() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let a: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let b: Vec<u8> = (0..3000u32).map(|i| (i * 13 % 241) as u8).collect();
        let data = bundle::write_uncompressed(
            &[
                ("host-x86_64-unknown-linux--", &[]),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &a),
                ("hipv4-amdgcn-amd-amdhsa--gfx1030", &b),
            ],
            4096,
        )
        .unwrap();
        (data, a, b)
    }

    fn to_ccob() -> Transform {
        Transform {
            selection: EntryFilter::Drop(vec![Pattern::parse("gfx1030").unwrap()]),
            conversion: Conversion::Compressed {
                version: 2,
                method: Method::Zstd,
                level: None,
            },
            limits: Default::default(),
        }
    }

    #[test]
    fn a_compressed_bundle_whose_entry_changed_is_caught_without_the_hash() {
        let (data, a, _) = input();
        let out = rewrite_without_digests(&data, &to_ccob()).unwrap();
        verify(&data, &out, &Default::default()).unwrap();
        // The same bundle with one byte of the kept payload changed, compressed with a
        // matching hash: only comparing with the input can tell.
        let mut changed = a.clone();
        changed[1234] ^= 1;
        let inner = bundle::write_uncompressed(
            &[
                ("host-x86_64-unknown-linux--", &[]),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &changed),
            ],
            4096,
        )
        .unwrap();
        let z = bundle::compress(&inner, 2, Method::Zstd, 3, 0).unwrap();
        let bad = Rewritten {
            output: Output::of(z),
            report: out.report.clone(),
        };
        let e = verify(&data, &bad, &Default::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("differs from the input's at byte 1234"),
            "{e}"
        );
        // A truncated compressed bundle is refused while it is read.
        let mut short = out.bytes();
        short.truncate(short.len() - 10);
        assert!(verify_bytes(&data, &short, &out.report, &Default::default()).is_err());
    }

    #[test]
    fn digests_only_when_asked_and_equal_to_the_payloads_md5() {
        let (data, a, _) = input();
        let bare = rewrite_without_digests(&data, &to_ccob()).unwrap();
        let kept = &bare.report.regions[0].bundles[0].kept;
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|k| k.md5.is_empty()));
        let full = rewrite(&data, &to_ccob()).unwrap();
        let kept = &full.report.regions[0].bundles[0].kept;
        assert_eq!(kept[1].md5, hex::encode(Md5::digest(&a)));
        assert_eq!(kept[0].md5, hex::encode(Md5::digest(b"")));
        let mut later = bare.report.clone();
        later.add_digests(&data, &Default::default()).unwrap();
        assert_eq!(later.regions[0].bundles[0].kept, *kept);
        // Digests of a compressed input come from its decoded payloads.
        let z = full.bytes();
        let again = rewrite(
            &z,
            &Transform {
                selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
                conversion: Conversion::Uncompressed,
                limits: Default::default(),
            },
        )
        .unwrap();
        assert_eq!(again.report.regions[0].bundles[0].kept, *kept);
        verify(&z, &again, &Default::default()).unwrap();
        // A report that does not match the input is an error, not a panic.
        let mut wrong = bare.report.clone();
        wrong.regions[0].bundles[0].offset = 1 << 40;
        assert!(wrong.add_digests(&data, &Default::default()).is_err());
    }
}
