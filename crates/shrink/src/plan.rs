//! What to do to each bundle, and doing it to a region of back-to-back bundles.

use crate::bundle::{self, encoding, Method};
use crate::error::{Error, Result};
use crate::filter::{label, EntryFilter};
use crate::output::Output;
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::BundleFormat;
use gfxkit_bundle::{Bundle, Entry};
use gfxkit_bytes::Cursor;
use gfxkit_host::Unit;
use rayon::prelude::*;
use serde::Serialize;
use std::borrow::Cow;

/// How each rewritten bundle is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// As it was: same encoding; a compressed bundle whose entries change is recompressed with
    /// the same version and method (zstd level 3, zlib level 6).
    Keep,
    /// Uncompressed.
    Uncompressed,
    /// Compressed as CCOB.
    Compressed {
        /// CCOB version (1, 2 or 3).
        version: u16,
        /// Method.
        method: Method,
        /// Level; `None` is the method's default. A bundle already stored with this version
        /// and method is left alone unless a level is given.
        level: Option<i32>,
    },
}

/// A prune and/or a conversion, applied to every bundle of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    /// Which entries stay.
    pub selection: EntryFilter,
    /// How bundles are stored afterwards.
    pub conversion: Conversion,
    /// The limits the input's bundles are read under.
    pub limits: Limits,
}

/// An entry of a bundle: its ID, size and the MD5 of its payload (when computed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryRecord {
    /// Entry ID.
    pub id: String,
    /// Target label (`host`, `gfx90a:xnack+`, ...).
    pub target: String,
    /// Payload size in bytes.
    pub size: u64,
    /// MD5 of the payload, hex (empty when not computed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub md5: String,
}

impl EntryRecord {
    pub(crate) fn of_with(e: &Entry<'_>, digest: bool) -> EntryRecord {
        EntryRecord {
            id: e.id.to_owned(),
            target: label(e.id),
            size: e.size,
            md5: if digest {
                hex::encode(gfxkit_bundle::hash::digests(&[e.payload])[0])
            } else {
                String::new()
            },
        }
    }

    /// The record of an entry known from its bundle's header alone (no digest).
    pub(crate) fn of_header(id: &str, size: u64) -> EntryRecord {
        EntryRecord {
            id: id.to_owned(),
            target: label(id),
            size,
            md5: String::new(),
        }
    }

    /// The records of a bundle's entries; with `digest`, their MD5s are computed side by side
    /// ([`gfxkit_bundle::hash::digests`]).
    pub(crate) fn all_of(entries: &[Entry<'_>], digest: bool) -> Vec<EntryRecord> {
        let mut records: Vec<EntryRecord> = entries
            .iter()
            .map(|e| EntryRecord::of_with(e, false))
            .collect();
        if digest {
            let payloads: Vec<&[u8]> = entries.iter().map(|e| e.payload).collect();
            for (r, d) in records
                .iter_mut()
                .zip(gfxkit_bundle::hash::digests(&payloads))
            {
                r.md5 = hex::encode(d);
            }
        }
        records
    }
}

/// What happened to one bundle.
#[derive(Debug, Clone, Serialize)]
pub struct BundleOutcome {
    /// Offset of the bundle in the input file.
    pub offset: u64,
    /// Offset of the bundle in the output file.
    pub new_offset: u64,
    /// Bytes before.
    pub size_before: u64,
    /// Bytes after.
    pub size_after: u64,
    /// Encoding before (`uncompressed`, `ccob-v2-zstd`, ...).
    pub encoding_before: String,
    /// Encoding after.
    pub encoding_after: String,
    /// Whether the bundle's bytes changed.
    pub changed: bool,
    /// Entries kept, in order.
    pub kept: Vec<EntryRecord>,
    /// Entries dropped.
    pub dropped: Vec<EntryRecord>,
}

/// A rewritten bundle.
pub(crate) struct NewBundle<'a> {
    pub out: Output<'a>,
    pub outcome: BundleOutcome,
}

/// The kept entries of an uncompressed bundle stored in the input, laid out as
/// [`bundle::write_uncompressed`] would, with the payloads left where they are: a new header,
/// zero gaps, and the payloads borrowed from the input.
fn pruned_in_place<'a>(kept: &[(&'a str, &'a [u8])], align: u64) -> Result<Output<'a>> {
    let sizes = || kept.iter().map(|(id, p)| (*id, p.len() as u64));
    let layout =
        gfxkit_bundle::layout(sizes(), align.max(1)).map_err(|e| bundle::error_at(e, 0))?;
    let mut out = Output::of(layout.header(sizes()));
    for ((_, payload), off) in kept.iter().zip(&layout.offsets) {
        out.pad_to(*off)?;
        out.push(*payload);
    }
    debug_assert_eq!(out.len(), layout.total_len);
    Ok(out)
}

/// Applies `t` to one bundle.
///
/// `hash` is the CCOB hash of `found.bytes` when the caller computed it already (an
/// uncompressed bundle compressed with every entry kept).
pub(crate) fn transform_bundle<'a>(
    found: &Unit<'a>,
    t: &Transform,
    threads: u32,
    hash: Option<u64>,
) -> Result<NewBundle<'a>> {
    let at = found.offset;
    let raw = bundle::uncompressed(found)?;
    let parsed = parse(&raw, found)?;
    let entries = parsed.entries();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut keep_entries = Vec::new();
    for e in entries {
        if t.selection.keeps(e.id) {
            // Digests only when asked for (`Report::add_digests`): an MD5 pass over every
            // kept payload costs as much as compressing them.
            kept.push(EntryRecord::of_with(e, false));
            keep_entries.push((e.id, e.payload));
        } else {
            // Dropped payloads are never compared: no digest.
            dropped.push(EntryRecord::of_with(e, false));
        }
    }
    let target = match t.conversion {
        Conversion::Keep => encoding(found),
        Conversion::Uncompressed => BundleFormat::Uncompressed,
        Conversion::Compressed {
            version, method, ..
        } => BundleFormat::Compressed {
            version,
            method: method.into(),
        },
    };
    let forced_level = match t.conversion {
        Conversion::Compressed { level, .. } => level,
        _ => None,
    };
    let unchanged = dropped.is_empty() && target == encoding(found) && forced_level.is_none();
    let align = gfxkit_bundle::infer_alignment(entries.iter().map(|e| e.offset));
    let mut written = target;
    let out: Output<'a> = if unchanged {
        Output::of(found.bytes)
    } else {
        match (target, &raw) {
            // Stored uncompressed and kept so: the payloads stay in the input.
            (BundleFormat::Uncompressed, Cow::Borrowed(r)) => {
                if dropped.is_empty() {
                    Output::of(*r)
                } else {
                    let b = parse(r, found)?;
                    let kept: Vec<(&'a str, &'a [u8])> = b
                        .entries()
                        .iter()
                        .filter(|e| t.selection.keeps(e.id))
                        .map(|e| (e.id, e.payload))
                        .collect();
                    pruned_in_place(&kept, align).map_err(|e| e.placed_at(at))?
                }
            }
            _ => {
                // The hash of what is compressed, where it is known: the caller's for an
                // uncompressed bundle, the stored one (checked by the decompression) for a
                // compressed bundle kept whole.
                let known = match (dropped.is_empty(), encoding(found)) {
                    (false, _) => None,
                    (true, BundleFormat::Uncompressed) => hash,
                    (true, BundleFormat::Compressed { .. }) => {
                        gfxkit_bundle::ccob::Header::parse(found.bytes)
                            .ok()
                            .map(|h| h.hash)
                    }
                };
                let inner: Cow<'_, [u8]> = if dropped.is_empty() {
                    Cow::Borrowed(&raw[..])
                } else {
                    Cow::Owned(
                        bundle::write_uncompressed(&keep_entries, align)
                            .map_err(|e| e.placed_at(at))?,
                    )
                };
                match target {
                    BundleFormat::Uncompressed => Output::of(inner.into_owned()),
                    BundleFormat::Compressed { version, method } => {
                        // Known: a conversion names a known method, and the scans refuse
                        // bundles stored with another.
                        let method = method.known().ok_or_else(|| {
                            Error::at(
                                at,
                                crate::ErrorKind::Unsupported(format!("{method} compression")),
                            )
                        })?;
                        let level = forced_level.unwrap_or_else(|| method.default_level());
                        let z =
                            bundle::compress_hashed(&inner, known, version, method, level, threads)
                                .map_err(|e| e.placed_at(at))?;
                        // What was written: a v2 request whose sizes do not fit 32 bits is
                        // stored as v3.
                        written = bundle::encoding_of(&z);
                        Output::of(z)
                    }
                }
            }
        }
    };
    let target = written;
    let changed = !unchanged && !out.equals(found.bytes);
    Ok(NewBundle {
        outcome: BundleOutcome {
            offset: found.offset,
            new_offset: 0,
            size_before: found.bytes.len() as u64,
            size_after: out.len(),
            encoding_before: encoding(found).short_name(),
            encoding_after: target.short_name(),
            changed,
            kept,
            dropped,
        },
        out,
    })
}

/// Reads the uncompressed bundle `raw` held in `found` ([`bundle::parse_uncompressed`]).
pub(crate) fn parse<'r>(raw: &'r [u8], found: &Unit<'_>) -> Result<Bundle<'r>> {
    bundle::parse_uncompressed(raw, found.ccob.is_none(), found.offset)
}

/// A region of bundles rewritten.
pub(crate) struct NewRegion<'a> {
    /// The new region (bundles at aligned offsets, zero gaps, no trailing padding).
    pub out: Output<'a>,
    /// Per bundle, in order: (old offset in region, new offset in region, old length, new length).
    pub moves: Vec<(u64, u64, u64, u64)>,
    /// Per bundle outcome (offsets relative to the region until the caller rebases them).
    pub outcomes: Vec<BundleOutcome>,
}

impl NewRegion<'_> {
    /// Maps an offset in the old region that starts a bundle (or is the region's end, `old_len`)
    /// to the new region.
    pub fn map(&self, old: u64, old_len: u64) -> Option<u64> {
        if old == old_len {
            return Some(self.out.len());
        }
        self.moves
            .binary_search_by_key(&old, |m| m.0)
            .ok()
            .map(|i| self.moves[i].1)
    }
}

/// Applies `t` to every bundle of `region` (bundles back to back, zero padding between) and lays
/// them out again, each at an offset aligned to `align` (`None`: aligned as they were laid out,
/// [`region_alignment`]).
///
/// Bundles are rewritten in parallel, one per core; several bundles are each compressed on one
/// thread (clang's exact bytes for each), which keeps every core busy without oversubscribing
/// them, and gives the same bytes on every machine. A region of one bundle is compressed as
/// `gfxkit compress` does by default ([`gfxkit_bundle::codec::default_workers`]): with zstd's
/// workers on every core from 4 cores up, on one thread beside the hash below.
pub(crate) fn transform_region<'a>(
    region: Cursor<'a>,
    align: Option<u64>,
    t: &Transform,
) -> Result<NewRegion<'a>> {
    let found = bundle::scan(region, &t.limits)?;
    let align = align.unwrap_or_else(|| region_alignment(&found, region.base()));
    let threads = if found.len() == 1 {
        gfxkit_bundle::codec::default_workers()
    } else {
        0
    };
    let hashes = batch_hashes(&found, t);
    // Every bundle's result, then the first error in file order: the bundle a damaged region
    // is reported at does not depend on which thread finished first.
    let news: Vec<NewBundle<'a>> = found
        .par_iter()
        .zip(hashes)
        .map(|(f, h)| transform_bundle(f, t, threads, h))
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<_>>()?;
    let align = align.max(1);
    let mut len = 0u64;
    let mut moves = Vec::with_capacity(news.len());
    for (f, n) in found.iter().zip(&news) {
        let off = len.div_ceil(align) * align;
        moves.push((
            f.offset - region.base(),
            off,
            f.bytes.len() as u64,
            n.out.len(),
        ));
        len = off + n.out.len();
    }
    // Padding between bundles is bounded by the data itself (or 64 MiB): a damaged file with
    // many tiny "bundles" cannot make the rewrite allocate without bound.
    let data: u64 = moves.iter().map(|m| m.3).sum();
    if len - data > data.max(64 << 20) {
        return Err(Error::at(
            region.base(),
            crate::error::ErrorKind::Unsupported(format!(
                "{} bundles aligned to {align} bytes would need {} bytes of padding",
                moves.len(),
                len - data
            )),
        ));
    }
    let mut out = Output::new();
    let mut outcomes = Vec::with_capacity(news.len());
    for (n, m) in news.into_iter().zip(&moves) {
        out.pad_to(m.1)?;
        out.append(n.out);
        let mut o = n.outcome;
        o.offset = m.0;
        o.new_offset = m.1;
        outcomes.push(o);
    }
    debug_assert_eq!(out.len(), len);
    Ok(NewRegion {
        out,
        moves,
        outcomes,
    })
}

/// The CCOB hashes of the bundles of a region that `t` compresses whole from their stored
/// uncompressed form, computed side by side before the rewrite ([`gfxkit_bundle::hash`]: about
/// a fifth of the time of one MD5 stream per bundle); `None` for the others, which compute
/// their own if they need one. A bundle that does not parse is left to the rewrite to report.
fn batch_hashes(found: &[Unit<'_>], t: &Transform) -> Vec<Option<u64>> {
    let wanted = |f: &Unit<'_>| {
        matches!(t.conversion, Conversion::Compressed { .. })
            && f.ccob.is_none()
            && Bundle::parse(f.bytes)
                .is_ok_and(|b| b.entries().iter().all(|e| t.selection.keeps(e.id)))
    };
    let picked: Vec<bool> = found.par_iter().map(wanted).collect();
    let msgs: Vec<&[u8]> = found
        .iter()
        .zip(&picked)
        .filter(|(_, p)| **p)
        .map(|(f, _)| f.bytes)
        .collect();
    if msgs.len() < 2 {
        // One bundle hashes on a second thread while it is compressed.
        return vec![None; found.len()];
    }
    let mut hashes = gfxkit_bundle::hash::truncated(&msgs).into_iter();
    picked
        .iter()
        .map(|&p| if p { hashes.next() } else { None })
        .collect()
}

/// The alignment bundles in a standalone file (or a region starting at file offset `base`)
/// were laid out with: the largest power of two up to 4096 dividing every bundle's offset from
/// the start (1 for a single bundle).
fn region_alignment(found: &[Unit<'_>], base: u64) -> u64 {
    if found.len() < 2 {
        return 1;
    }
    gfxkit_bundle::infer_alignment(found.iter().map(|f| f.offset - base))
}
