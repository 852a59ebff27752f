//! Where the device code of a file is, and what each entry's ELF header says about itself.
//!
//! [`locate`] is the one place that decides where device code is in a file: standalone bundle
//! files go through [`find_bundles`] (one bundle, or several back to back like a dumped
//! `.hip_fatbin`); everything else (ELF executables, shared objects, relocatable objects, `ar`
//! archives, OffloadBinaries, code objects) through host discovery ([`discover`](mod@gfxkit_host::discover)),
//! which also reports damage with its location. [`read_header`] lists a unit's entries without
//! decompressing payloads; [`with_payloads`] hands out the payloads; [`check_payload`] is the
//! rule that an entry's code object must be built for the target its ID names.

use crate::error::{Error, ErrorKind, Result};
use gfxkit_bundle::compressed::{self as ccob, HashCheck};
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::read::Bundle;
use gfxkit_bytes::Cursor;
use gfxkit_host::unit::entry_ext;
use gfxkit_host::{Form, InputKind, LooseEntry, Unit, Units};
use std::borrow::Cow;

/// Finds every bundle in `data`: a bundle at offset 0 and any that follow it back to back
/// (zero padding between them is skipped). Returns an empty list when `data` does not start
/// with a bundle. Bytes after the last bundle that are neither padding nor a bundle are an
/// error naming their offset.
pub fn find_bundles(data: &[u8]) -> Result<Vec<Unit<'_>>> {
    find_bundles_with(data, &Limits::default())
}

/// [`find_bundles`] under `limits`, which the bundles found keep ([`Unit::limits`]).
pub fn find_bundles_with<'a>(data: &'a [u8], limits: &Limits) -> Result<Vec<Unit<'a>>> {
    if gfxkit_bundle::detect(data).is_none() {
        return Ok(Vec::new());
    }
    let spans = gfxkit_bundle::scan_concatenated(data, limits)?;
    spans
        .iter()
        .enumerate()
        .map(|(index, s)| {
            Unit::of_span(index, Cursor::new(data), s, limits).ok_or_else(|| {
                Error::new(ErrorKind::PastEnd {
                    index,
                    offset: s.offset,
                })
            })
        })
        .collect()
}

/// The uncompressed bundle `contents` of the bundle `b` ([`uncompressed`]) read: errors at
/// file offsets for a stored bundle, and said to be inside the compressed bundle (at offsets
/// of its decompressed bytes) for a compressed one.
pub fn parse_contents<'c>(b: &Unit<'_>, contents: &'c [u8]) -> Result<Bundle<'c>> {
    if b.ccob.is_none() {
        Ok(Bundle::parse_at(Cursor::at(contents, b.offset))?)
    } else {
        Bundle::parse(contents).map_err(|e| Error::from(e).within("inside the compressed bundle"))
    }
}

/// Finds the device code in a file's bytes. A standalone bundle file is read exactly as
/// [`find_bundles`] reads it (its damage is an error); any other file goes through host
/// discovery, whose damage reports are returned as problems beside what could be read.
/// Nothing is decompressed or copied.
pub fn locate(data: &[u8]) -> Result<Units<'_>> {
    locate_with(data, &Limits::default())
}

/// [`locate`] under `limits`, which the units found keep ([`Unit::limits`]).
pub fn locate_with<'a>(data: &'a [u8], limits: &Limits) -> Result<Units<'a>> {
    let kind = InputKind::sniff(data.get(..64).unwrap_or(data));
    let mut found = if kind == InputKind::Bundle {
        Units {
            units: find_bundles_with(data, limits)?,
            problems: Vec::new(),
        }
    } else {
        gfxkit_host::discover_with(data, limits).units()
    };
    let more = contradictions(&found.units);
    found.problems.extend(more);
    Ok(found)
}

/// What contradicts an entry whose ID is `id` and whose payload is `payload`, when its
/// payload is at hand: the payload is an AMDGPU code object built for another target than the
/// ID names ([`check_payload`]'s mismatch), or for a known target while the ID names no AMDGPU
/// target at all (an ID that does not parse, another triple, a host entry); or it starts
/// with the ELF magic under an AMDGPU ID but is no AMDGPU code object. Payload and ID were
/// written together by the compiler: when they disagree one of them is damaged, and nothing
/// read from the ID can be trusted. `None` when they agree or nothing can be told (bitcode,
/// SPIR-V, host code, a processor neither side names that gfxkit knows).
pub fn contradiction(id: &str, payload: &[u8]) -> Option<String> {
    match check_payload(id, payload) {
        PayloadCheck::Checked { mismatch, .. } => mismatch,
        PayloadCheck::NotCodeObject(e) => payload.starts_with(b"\x7fELF").then(|| {
            format!("the payload starts with the ELF magic but is no AMDGPU code object: {e}")
        }),
        PayloadCheck::NotApplicable => {
            let built = gfxkit_code_object::Header::parse(payload)
                .ok()?
                .target_id()
                .ok()?;
            match gfxkit_bundle::EntryId::parse(id) {
                Err(err) => Some(format!(
                    "the ID does not parse ({err}), but the payload is an AMDGPU code object \
                     built for {built}"
                )),
                // An AMDGPU triple without a processor: nothing to compare.
                Ok(e) if e.triple().is_amdgpu() => None,
                Ok(e) => Some(format!(
                    "the ID's triple {} is no AMDGPU one, but the payload is an AMDGPU code \
                     object built for {built}",
                    e.triple()
                )),
            }
        }
    }
}

/// The contradictions in `units` that their bytes show without decompressing anything, as
/// errors at the payload concerned: every entry of an uncompressed bundle, an object bundle or
/// an offload image whose payload contradicts its ID ([`contradiction`]), and every standalone
/// code object that does not parse as `inspect` parses it or whose `e_flags` name another
/// target than its metadata. (Compressed bundles are protected by their hash, checked where
/// they are decompressed.)
pub fn contradictions(units: &[Unit<'_>]) -> Vec<gfxkit_host::Problem> {
    use gfxkit_host::{Location, Problem, ProblemKind};
    let mut out = Vec::new();
    for b in units {
        let at = |offset: u64, size: u64| Location {
            member: b.member.clone(),
            section: b.section.clone(),
            offset: b.offset.saturating_add(offset),
            size,
        };
        match b.form {
            Form::Bundle if b.ccob.is_none() => {
                // A header that does not parse is reported where the bundle is read.
                let Ok(bundle) = Bundle::parse(b.bytes) else {
                    continue;
                };
                for e in bundle.entries() {
                    if let Some(reason) = contradiction(e.id, e.payload) {
                        out.push(Problem::error(
                            at(e.offset, e.size),
                            ProblemKind::EntryContradiction {
                                index: e.index,
                                id: e.id.to_owned(),
                                reason,
                            },
                        ));
                    }
                }
            }
            Form::Bundle => {}
            Form::CodeObject => {
                for e in &b.loose {
                    let why = match gfxkit_code_object::CodeObject::parse(e.payload) {
                        Err(err) => Some((err.offset(), err.in_code_object())),
                        Ok(co) => co.target_mismatch().map(|i| (0, i.to_string())),
                    };
                    if let Some((offset, why)) = why {
                        let mut l = at(e.offset, e.payload.len() as u64);
                        l.offset = l.offset.saturating_add(offset);
                        out.push(Problem::error(l, ProblemKind::BadCodeObject(why)));
                    }
                }
            }
            Form::ObjectBundle | Form::OffloadImage => {
                for (index, e) in b.loose.iter().enumerate() {
                    if e.ext != "co" {
                        continue;
                    }
                    if let Some(reason) = contradiction(&e.id, e.payload) {
                        out.push(Problem::error(
                            at(e.offset, e.payload.len() as u64),
                            ProblemKind::EntryContradiction {
                                index,
                                id: e.id.clone(),
                                reason,
                            },
                        ));
                    }
                }
            }
        }
    }
    out
}

/// An entry as listed without decompressing payloads.
#[derive(Debug, Clone)]
pub struct ListedEntry {
    /// The ID exactly as stored.
    pub id: String,
    /// Payload offset within the (uncompressed) bundle.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
    /// What the payload's ELF header says, when the payload was at hand (uncompressed
    /// bundles, compressed ones read in full, units that are not bundles).
    pub check: Option<PayloadCheck>,
}

fn listed(bundle: &Bundle<'_>) -> Vec<ListedEntry> {
    bundle
        .entries()
        .iter()
        .map(|e| ListedEntry {
            id: e.id.to_owned(),
            offset: e.offset,
            size: e.size,
            check: Some(check_payload(e.id, e.payload)),
        })
        .collect()
}

/// The header of a located unit: entries and header length. Compressed bundles are
/// decompressed only as far as their header reaches, unless `full` is set, in which case the
/// whole bundle is decompressed and its hash checked (the result says whether it matched).
/// Entries carry the check of their payload's ELF header whenever the payload is at hand.
pub fn read_header(b: &Unit<'_>, full: bool) -> Result<(Vec<ListedEntry>, u64, Option<bool>)> {
    if b.form != Form::Bundle {
        let entries = b
            .loose
            .iter()
            .map(|e| ListedEntry {
                id: e.id.clone(),
                offset: e.offset,
                size: e.payload.len() as u64,
                check: Some(check_loose(e)),
            })
            .collect();
        return Ok((entries, 0, None));
    }
    match &b.ccob {
        None => {
            let bundle = parse_contents(b, b.bytes)?;
            Ok((listed(&bundle), bundle.header_len(), None))
        }
        Some(_) if full => {
            let opts = b.limits.decompress_options_hash(HashCheck::Warn);
            let d = ccob::decompress_ccob_at(b.cursor(), &opts)?;
            let bundle = parse_contents(b, &d.data)?;
            Ok((listed(&bundle), bundle.header_len(), Some(d.hash_ok())))
        }
        Some(h) => {
            // Only as much is decompressed as the header needs (host discovery's reader).
            let format = gfxkit_host::BundleFormat::of_header(h);
            let (items, header_len) =
                gfxkit_host::entries::read_header(format, b.cursor(), &b.limits)
                    .map_err(|e| Error::from(e).within("inside the compressed bundle"))?;
            let entries = items
                .into_iter()
                .map(|e| ListedEntry {
                    id: e.header.id,
                    offset: e.header.offset,
                    size: e.header.size,
                    check: None,
                })
                .collect();
            Ok((entries, header_len, None))
        }
    }
}

/// The uncompressed bytes of a located bundle (borrowed when it is not compressed). The
/// CCOB hash is checked: a mismatch is an error unless `hash` is [`HashCheck::Warn`].
pub fn uncompressed<'a>(b: &Unit<'a>, hash: HashCheck) -> Result<Cow<'a, [u8]>> {
    if b.ccob.is_some() {
        let opts = b.limits.decompress_options_hash(hash);
        Ok(Cow::Owned(
            ccob::decompress_ccob_at(b.cursor(), &opts)?.data,
        ))
    } else {
        Ok(Cow::Borrowed(b.bytes))
    }
}

/// An entry with its payload, as handed out by [`with_payloads`].
#[derive(Debug, Clone, Copy)]
pub struct PayloadEntry<'p> {
    /// The ID exactly as stored.
    pub id: &'p str,
    /// The payload.
    pub payload: &'p [u8],
    /// File-name extension when extracted.
    pub ext: &'static str,
}

/// Payload bytes from which [`each_entry`] spreads a unit's entries over the thread pool.
const PARALLEL_FROM: usize = 1 << 20;

/// How [`each_entry`] decodes a compressed bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoding {
    /// Its MD5 hash computed and checked: a mismatch is an error naming the unit.
    Checked,
    /// Its hash not computed: for answers that take their own digest of every payload they
    /// read (the census's SHA-256), where damage the codec does not catch goes unnoticed.
    Unchecked,
}

/// The largest bundle a thread decodes unchecked ([`each_entry`]) into the buffer it keeps
/// between bundles; a larger one is decoded into memory of its own, given back after use, so
/// that what each thread keeps stays within this.
const KEPT_BUFFER: u64 = 64 << 20;

thread_local! {
    /// The buffer a thread decodes compressed bundles into, reused from one bundle to the
    /// next: memory written once, not once per bundle (a census of a ROCm 7 kernel directory
    /// decodes gigabytes, in bundles of a few MiB, where the system's page faults and
    /// zeroing of fresh memory cost about a fifth of the decoding).
    static DECODE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Calls `f` with the uncompressed bytes of `b`: a compressed bundle decoded, its CCOB hash not
/// computed ([`Decoding::Unchecked`]), into this thread's reused buffer; a stored one as it
/// is.
fn with_unchecked<R>(b: &Unit<'_>, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
    let Some(header) = &b.ccob else {
        return Ok(f(b.bytes));
    };
    let decode = |buffer: &mut Vec<u8>| -> Result<R> {
        let opts = b.limits.decompress_options();
        ccob::decompress_ccob_unhashed_into(b.cursor(), &opts, buffer)?;
        Ok(f(buffer))
    };
    if header.uncompressed_size > KEPT_BUFFER {
        return decode(&mut Vec::new());
    }
    let mut buffer = DECODE_BUFFER.take();
    let r = decode(&mut buffer);
    buffer.clear();
    DECODE_BUFFER.set(buffer);
    r
}

/// Runs `f` over the entries of every unit of `units` with their payloads (a compressed
/// bundle decoded as `decoding` says), in parallel within a unit of 1 MiB of payload or more.
/// Returns `f`'s values in file order, and the errors met: the errors among `problems` (what
/// was found beside the units, as [`Units::error_lines`] names them), a unit that cannot be
/// decoded (naming `name` and the unit), then `f`'s. `f` gets the unit's description and the
/// entry.
pub fn each_entry<T: Send>(
    name: &str,
    units: &[Unit<'_>],
    problems: &[gfxkit_host::Problem],
    decoding: Decoding,
    f: impl Fn(&str, &PayloadEntry<'_>) -> std::result::Result<Vec<T>, String> + Sync,
) -> (Vec<T>, Vec<String>) {
    use rayon::prelude::*;
    let mut errors = gfxkit_host::error_lines(problems, name);
    let mut out = Vec::new();
    for unit in units {
        let where_ = unit.describe();
        let each = |entries: &[PayloadEntry<'_>]| {
            // Small payloads on this thread: handing them to the pool costs more than their
            // work (a census reads thousands of small files from several threads at once).
            let bytes: usize = entries.iter().map(|e| e.payload.len()).sum();
            if bytes < PARALLEL_FROM {
                entries.iter().map(|e| f(&where_, e)).collect::<Vec<_>>()
            } else {
                entries
                    .par_iter()
                    .map(|e| f(&where_, e))
                    .collect::<Vec<_>>()
            }
        };
        let r = match decoding {
            Decoding::Checked => with_contents(unit, || uncompressed(unit, HashCheck::Error), each),
            Decoding::Unchecked => with_unchecked(unit, |contents| {
                with_contents(unit, || Ok(Cow::Borrowed(contents)), each)
            })
            .and_then(|r| r),
        };
        match r {
            Ok(per_entry) => {
                for r in per_entry {
                    match r {
                        Ok(v) => out.extend(v),
                        Err(e) => errors.push(e),
                    }
                }
            }
            Err(e) => errors.push(format!("{name}: {where_}: {}", crate::error::chain(&e))),
        }
    }
    (out, errors)
}

/// Calls `f` with the entries of a located unit and their payloads. A compressed bundle is
/// decompressed first (hash checked as `hash` says); nothing else is copied.
pub fn with_payloads<R>(
    b: &Unit<'_>,
    hash: HashCheck,
    f: impl FnOnce(&[PayloadEntry<'_>]) -> R,
) -> Result<R> {
    with_contents(b, || uncompressed(b, hash), f)
}

/// [`with_payloads`], a bundle's uncompressed bytes given by `contents`.
fn with_contents<'a, R>(
    b: &Unit<'a>,
    contents: impl FnOnce() -> Result<Cow<'a, [u8]>>,
    f: impl FnOnce(&[PayloadEntry<'_>]) -> R,
) -> Result<R> {
    if b.form != Form::Bundle {
        let list: Vec<PayloadEntry<'_>> = b
            .loose
            .iter()
            .map(|e| PayloadEntry {
                id: &e.id,
                payload: e.payload,
                ext: e.ext,
            })
            .collect();
        return Ok(f(&list));
    }
    let contents = contents()?;
    let bundle = parse_contents(b, &contents)?;
    let list: Vec<PayloadEntry<'_>> = bundle
        .entries()
        .iter()
        .map(|e| PayloadEntry {
            id: e.id,
            payload: e.payload,
            ext: entry_ext(e.id),
        })
        .collect();
    Ok(f(&list))
}

/// Like [`with_payloads`], for a caller that needs only the bytes before `upto` (the end of
/// the last entry it wants): a compressed bundle larger than that is decoded only so far, its
/// entries ending past `upto` are handed on with an empty payload and its hash cannot be
/// checked. Returns `f`'s result and, for a compressed bundle, whether its hash was checked
/// (`Some(false)`: decoded in part, not checked; the caller must say so).
pub fn with_payloads_upto<R>(
    b: &Unit<'_>,
    hash: HashCheck,
    upto: u64,
    f: impl FnOnce(&[PayloadEntry<'_>]) -> R,
) -> Result<(R, Option<bool>)> {
    let compressed = b.ccob.is_some() && b.form == Form::Bundle;
    if !b
        .ccob
        .is_some_and(|h| compressed && upto < h.uncompressed_size)
    {
        return Ok((with_payloads(b, hash, f)?, compressed.then_some(true)));
    }
    let len = usize::try_from(upto).unwrap_or(usize::MAX);
    let (_, prefix) = ccob::decompress_prefix_at(b.cursor(), len, &b.limits.decompress_options())?;
    if prefix.len() != len {
        return Err(Error::new(ErrorKind::ShortPrefix {
            index: b.index,
            offset: b.offset,
            got: prefix.len() as u64,
            needed: upto,
        }));
    }
    let (records, _) = gfxkit_bundle::read::parse_header(&prefix)
        .map_err(|e| Error::from(e).within("inside the compressed bundle"))?;
    let mut list = Vec::with_capacity(records.len());
    for r in &records {
        let payload = r
            .offset
            .checked_add(r.size)
            .filter(|&e| e <= upto)
            .and_then(|e| prefix.get(usize::try_from(r.offset).ok()?..usize::try_from(e).ok()?))
            .unwrap_or(&[]);
        list.push(PayloadEntry {
            id: &r.id,
            payload,
            ext: entry_ext(&r.id),
        });
    }
    Ok((f(&list), Some(false)))
}

/// What an entry's payload says about itself, from its ELF header alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadCheck {
    /// The ID names no AMDGPU target ID (host entries, other triples, IDs that do not parse).
    NotApplicable,
    /// The payload is not an AMDGPU code object.
    NotCodeObject(String),
    /// The code object's header was read and its `e_flags` checked against the ID.
    Checked {
        /// The HSA code-object version (`EI_ABIVERSION`), when it is an HSA object.
        version: Option<gfxkit_spec::CodeObjectVersion>,
        /// Why the `e_flags` do not fit the ID's target ID (none when they do).
        mismatch: Option<String>,
    },
}

impl PayloadCheck {
    /// Whether the `e_flags` agree with the ID; `None` when unknown.
    pub fn agrees(&self) -> Option<bool> {
        match self {
            PayloadCheck::Checked { mismatch, .. } => Some(mismatch.is_none()),
            _ => None,
        }
    }

    /// The code-object version number, when known.
    pub fn version(&self) -> Option<u8> {
        match self {
            PayloadCheck::Checked { version, .. } => version.map(|v| v.number()),
            _ => None,
        }
    }
}

/// [`check_payload`] for an entry of a unit that is not a bundle: bitcode images are not
/// code objects and are not checked.
pub fn check_loose(e: &LooseEntry<'_>) -> PayloadCheck {
    if e.ext == "bc" {
        return PayloadCheck::NotApplicable;
    }
    check_payload(&e.id, e.payload)
}

/// Reads the ELF header of an entry's payload and checks its `e_flags` against the target ID
/// the entry ID names, with the rules of the object's own version (a V2/V3 object cannot say
/// "any", so `gfx90a` fits either setting there).
pub fn check_payload(id: &str, payload: &[u8]) -> PayloadCheck {
    let Ok(id) = gfxkit_bundle::EntryId::parse(id) else {
        return PayloadCheck::NotApplicable;
    };
    if !id.triple().is_amdgpu() {
        return PayloadCheck::NotApplicable;
    }
    let tid = match id.target() {
        gfxkit_bundle::EntryTarget::Known(t) => t,
        gfxkit_bundle::EntryTarget::Unknown(text) => {
            // An AMDGPU entry naming no known processor while its payload is a code object of
            // a known one: the two disagree (a damaged ID), whatever the ID was meant to say.
            return match gfxkit_code_object::Header::parse(payload) {
                Ok(h) => match h.target_id() {
                    Ok(actual) => PayloadCheck::Checked {
                        version: h.code_object_version(),
                        mismatch: Some(format!(
                            "the ID names {text}, no known target, but the code object is built \
                             for {actual}"
                        )),
                    },
                    Err(_) => PayloadCheck::NotApplicable,
                },
                Err(_) => PayloadCheck::NotApplicable,
            };
        }
        gfxkit_bundle::EntryTarget::None => return PayloadCheck::NotApplicable,
    };
    match gfxkit_code_object::Header::parse(payload) {
        Err(e) => PayloadCheck::NotCodeObject(e.in_code_object()),
        Ok(h) => {
            let mismatch = h.check_target(tid).err().map(|e| match h.target_id() {
                Ok(actual) => {
                    format!("the ID says {tid} but the code object is built for {actual} ({e})")
                }
                Err(_) => format!("the ID says {tid} but {e}"),
            });
            // An HSA code object (EI_OSABI 64) under another OS than amdhsa in the triple.
            let os = mismatch.is_none() && h.code_object_version().is_some();
            let mismatch = mismatch.or_else(|| {
                (os && !id.triple().is_amdhsa()).then(|| {
                    format!(
                        "the ID's triple is {} but the code object is an amdhsa (HSA) one",
                        id.triple()
                    )
                })
            });
            PayloadCheck::Checked {
                version: h.code_object_version(),
                mismatch,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 64-byte ELF header of an HSA code object (v5) with `e_flags`.
    fn header(e_flags: u32) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..9].copy_from_slice(b"\x7fELF\x02\x01\x01\x40\x03");
        h[16] = 3; // ET_DYN
        h[18] = 224; // EM_AMDGPU
        h[20] = 1;
        h[48..52].copy_from_slice(&e_flags.to_le_bytes());
        h
    }

    /// A bit flip in an uncompressed bundle's header turned `gfx90a` into `cfx90a`, or
    /// `amdhsa` into `amdhwa`: the entry no longer fits its code object, yet it was checked as
    /// "not applicable" (the processor unknown) or as agreeing (the OS never compared), so
    /// `verify` called the bundle ok.
    #[test]
    fn a_damaged_entry_id_disagrees_with_its_code_object() {
        // gfx90a (mach 0x3f), xnack on, sramecc any.
        let co = header(0x3f | 0x300 | 0x400);
        let ok = check_payload("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", &co);
        assert_eq!(ok.agrees(), Some(true), "{ok:?}");
        for (id, says) in [
            (
                "hipv4-amdgcn-amd-amdhsa--cfx90a:xnack+",
                "names cfx90a:xnack+, no known target",
            ),
            (
                "hipv4-amdgcn-amd-amdhwa--gfx90a:xnack+",
                "triple is amdgcn-amd-amdhwa-",
            ),
        ] {
            match check_payload(id, &co) {
                PayloadCheck::Checked {
                    mismatch: Some(m), ..
                } => assert!(m.contains(says), "{id}: {m}"),
                other => panic!("{id}: {other:?}"),
            }
        }
        // An unknown processor over a payload that is no code object (bitcode, say) stays
        // unchecked, and so does one whose code object names an unknown processor too.
        let bitcode = b"BC\xc0\xde0000";
        assert_eq!(
            check_payload("hip-amdgcn-amd-amdhsa--gfx9999", bitcode),
            PayloadCheck::NotApplicable
        );
        assert_eq!(
            check_payload("hipv4-amdgcn-amd-amdhsa--gfx9999", &header(0xff)),
            PayloadCheck::NotApplicable
        );
    }
}
