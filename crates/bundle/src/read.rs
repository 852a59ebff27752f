//! Reading uncompressed offload bundles (`__CLANG_OFFLOAD_BUNDLE__`), zero-copy and bounded.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! 0   24  "__CLANG_OFFLOAD_BUNDLE__"
//! 24   8  N entries
//! 32      N x { u64 offset (from bundle start); u64 size; u64 id_len; id_len bytes of ID }
//! ...     payloads at their offsets, gaps zero-filled
//! ```

use crate::entry_id::EntryId;
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{HIP_HEADER_READ_LIMIT, MAX_ENTRIES, MAX_ID_LEN};
use gfxkit_bytes::{Cursor, OutOfBounds};
use std::collections::HashMap;

/// Magic at the start of an uncompressed bundle.
pub const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// Size of the fixed part of the header (magic and entry count).
pub const FIXED_HEADER_LEN: u64 = 32;

/// Size of an entry record without its ID (offset, size, ID length).
pub const ENTRY_RECORD_LEN: u64 = 24;

/// Whether `data` starts with the uncompressed bundle magic.
pub fn is_bundle(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// One entry of a bundle: its ID, where its payload lies, and the payload itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'data> {
    /// Index in header order.
    pub index: usize,
    /// The ID bytes exactly as stored (checked to be UTF-8).
    pub id: &'data str,
    /// Payload offset from the bundle start.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
    /// Offset of this entry's record in the header.
    pub record_offset: u64,
    /// The payload.
    pub payload: &'data [u8],
}

impl<'data> Entry<'data> {
    /// Parses the ID ([`EntryId::parse`]).
    pub fn parse_id(&self) -> Result<EntryId> {
        EntryId::parse(self.id).map_err(|e| {
            Error::at(
                ErrorKind::InvalidEntryId(e),
                self.record_offset + ENTRY_RECORD_LEN,
            )
            .in_entry(self.index)
        })
    }

    /// End of the payload (offset + size) from the bundle start.
    pub fn end(&self) -> u64 {
        self.offset + self.size
    }
}

/// An uncompressed offload bundle, borrowing its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle<'data> {
    data: &'data [u8],
    header_len: u64,
    extent: u64,
    entries: Vec<Entry<'data>>,
}

/// One problem found by [`Bundle::parse_lenient`].
pub type Problem = Error;

/// Reads one entry record at `pos`. Returns the record's parts and the position after it.
fn read_record<'d>(c: Cursor<'d>, pos: u64, index: usize) -> Result<(u64, u64, &'d [u8], u64)> {
    let avail = c.len().saturating_sub(pos);
    let cut = |e: OutOfBounds| {
        Error::truncated("entry record", ENTRY_RECORD_LEN, avail, e.offset()).in_entry(index)
    };
    let r = c.sub(pos, ENTRY_RECORD_LEN).map_err(cut)?;
    let offset = r.u64(0).map_err(cut)?;
    let size = r.u64(8).map_err(cut)?;
    let id_len = r.u64(16).map_err(cut)?;
    if id_len > MAX_ID_LEN {
        return Err(Error::at(
            ErrorKind::IdTooLong {
                len: id_len,
                limit: MAX_ID_LEN,
            },
            c.inside(pos + 16),
        )
        .in_entry(index));
    }
    let id_pos = pos + ENTRY_RECORD_LEN;
    let id = c.slice(id_pos, id_len).map_err(|_| {
        // With no byte of the ID present, the length field that asks for it is named.
        let at = if id_pos < c.len() {
            c.abs(id_pos)
        } else {
            r.abs(16)
        };
        let avail = c.len().saturating_sub(id_pos);
        Error::truncated("entry ID", id_len, avail, at).in_entry(index)
    })?;
    Ok((offset, size, id, id_pos + id_len))
}

/// Checks one entry record of a bundle of `len` bytes whose header is `header_len` bytes long,
/// as [`Bundle::parse`] checks it (`seen`: the IDs of the entries before it that passed, with
/// their index). Returns the ID, or the error and the field of the record it is about (0: the
/// record's start, 16: its ID length, [`ENTRY_RECORD_LEN`]: its ID).
fn check_record<'d>(
    id: &'d [u8],
    offset: u64,
    size: u64,
    header_len: u64,
    len: u64,
    seen: &HashMap<&[u8], usize>,
) -> std::result::Result<&'d str, (ErrorKind, u64)> {
    let id_str = std::str::from_utf8(id).map_err(|_| (ErrorKind::IdNotUtf8, ENTRY_RECORD_LEN))?;
    if let Some(k) = control_byte(id) {
        return Err((k, ENTRY_RECORD_LEN));
    }
    if id.is_empty() {
        return Err((ErrorKind::EmptyId, 16));
    }
    let end = offset.checked_add(size);
    if end.map_or(true, |end| end > len) {
        return Err((ErrorKind::PayloadOutOfRange { offset, size, len }, 0));
    }
    if offset < header_len {
        return Err((ErrorKind::PayloadInHeader { offset, header_len }, 0));
    }
    if let Some(&first) = seen.get(id) {
        return Err((
            ErrorKind::DuplicateId {
                id: id_str.to_owned(),
                first,
            },
            ENTRY_RECORD_LEN,
        ));
    }
    Ok(id_str)
}

/// Where an entry's payload lies, and where its record is (for [`overlaps`]).
struct Span {
    index: usize,
    offset: u64,
    size: u64,
    record_offset: u64,
}

/// The overlaps between the non-empty payloads of `spans`, each an error at the record of the
/// later entry (in header order) of the pair.
fn overlaps(c: Cursor<'_>, spans: &[Span]) -> Vec<Error> {
    let mut by_offset: Vec<&Span> = spans.iter().filter(|e| e.size > 0).collect();
    by_offset.sort_by_key(|e| (e.offset, e.index));
    let mut out = Vec::new();
    for pair in by_offset.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b.offset < a.offset + a.size {
            let (first, second) = if a.index < b.index { (a, b) } else { (b, a) };
            out.push(
                Error::at(
                    ErrorKind::Overlap { other: first.index },
                    c.inside(second.record_offset),
                )
                .in_entry(second.index),
            );
        }
    }
    out
}

/// Checks the magic and reads the entry count, bounded by the data length and [`MAX_ENTRIES`].
fn read_count_bounded(c: Cursor<'_>, require_fit: bool) -> Result<u64> {
    let data = c.bytes();
    if !data.starts_with(MAGIC) {
        let n = data.len().min(MAGIC.len());
        if data.len() < MAGIC.len() && MAGIC.starts_with(data) {
            return Err(Error::truncated(
                "bundle magic",
                MAGIC.len() as u64,
                n as u64,
                c.inside(0),
            ));
        }
        return Err(Error::at(
            ErrorKind::BadMagic {
                expected: "__CLANG_OFFLOAD_BUNDLE__",
            },
            c.inside(0),
        ));
    }
    let count = c
        .u64(24)
        .map_err(|e| Error::truncated("entry count", 8, c.len() - 24, e.offset()))?;
    let fits = (data.len() as u64 - FIXED_HEADER_LEN) / ENTRY_RECORD_LEN;
    if count > MAX_ENTRIES {
        return Err(Error::at(
            ErrorKind::TooManyEntries {
                count,
                limit: MAX_ENTRIES,
            },
            c.abs(24),
        ));
    }
    if require_fit && count > fits {
        // With no byte of the table present, the count that asks for it is named.
        return Err(Error::truncated(
            "entry table",
            count * ENTRY_RECORD_LEN,
            c.len() - FIXED_HEADER_LEN,
            c.abs(if c.len() > FIXED_HEADER_LEN {
                FIXED_HEADER_LEN
            } else {
                24
            }),
        ));
    }
    Ok(count)
}

impl<'data> Bundle<'data> {
    /// Parses an uncompressed bundle at the start of `data`. `data` may extend past the bundle
    /// (bundles back to back); [`extent`](Self::extent) tells where this one ends.
    ///
    /// Strict: any truncated record, payload out of range or inside the header, overlapping
    /// payloads (of non-zero size), a duplicate or non-UTF-8 ID is an error naming the entry and
    /// offset. Entry IDs are not parsed here; see [`Entry::parse_id`].
    pub fn parse(data: &'data [u8]) -> Result<Bundle<'data>> {
        Self::parse_at(Cursor::new(data))
    }

    /// [`parse`](Self::parse) of the bytes of `c`, which lie at absolute offset `c.base()` of
    /// the file they come from: error offsets are absolute; entry offsets stay relative to the
    /// bundle's start, as the format stores them.
    pub fn parse_at(c: Cursor<'data>) -> Result<Bundle<'data>> {
        let (bundle, problems) = Self::parse_inner(c, true)?;
        debug_assert!(problems.is_empty());
        Ok(bundle)
    }

    /// Parses as much of a damaged bundle as can be read: every entry whose record and payload
    /// are readable, in header order, and the problems found. Fails only when the magic or the
    /// entry count cannot be read.
    pub fn parse_lenient(data: &'data [u8]) -> Result<(Bundle<'data>, Vec<Problem>)> {
        Self::parse_lenient_at(Cursor::new(data))
    }

    /// [`parse_lenient`](Self::parse_lenient) of the bytes of `c`, with the offsets of errors
    /// and problems absolute (from `c.base()`).
    pub fn parse_lenient_at(c: Cursor<'data>) -> Result<(Bundle<'data>, Vec<Problem>)> {
        Self::parse_inner(c, false)
    }

    fn parse_inner(c: Cursor<'data>, strict: bool) -> Result<(Bundle<'data>, Vec<Problem>)> {
        let data = c.bytes();
        let mut problems = Vec::new();
        let count = match read_count_bounded(c, true) {
            Ok(c) => c,
            Err(e)
                if !strict
                    && matches!(
                        e.kind,
                        ErrorKind::Truncated {
                            what: "entry table",
                            ..
                        }
                    ) =>
            {
                problems.push(e);
                (data.len() as u64 - FIXED_HEADER_LEN) / ENTRY_RECORD_LEN
            }
            Err(e) => return Err(e),
        };
        let mut records = Vec::with_capacity(count as usize);
        let mut pos = FIXED_HEADER_LEN;
        for index in 0..count as usize {
            match read_record(c, pos, index) {
                Ok((offset, size, id, next)) => {
                    records.push((index, pos, offset, size, id));
                    pos = next;
                }
                Err(e) => {
                    if strict {
                        return Err(e);
                    }
                    problems.push(e);
                    break;
                }
            }
        }
        let header_len = pos;
        let len = data.len() as u64;
        let mut entries: Vec<Entry<'data>> = Vec::with_capacity(records.len());
        let mut seen: HashMap<&[u8], usize> = HashMap::with_capacity(records.len());
        for (index, record_offset, offset, size, id) in records {
            // At a field of the record: its start, its ID length (16) or its ID.
            let fail_at =
                |kind, field: u64| Error::at(kind, c.inside(record_offset + field)).in_entry(index);
            let check = check_record(id, offset, size, header_len, len, &seen)
                .map_err(|(kind, field)| fail_at(kind, field));
            match check {
                Ok(id_str) => {
                    seen.insert(id, index);
                    entries.push(Entry {
                        index,
                        id: id_str,
                        offset,
                        size,
                        record_offset,
                        payload: &data[offset as usize..(offset + size) as usize],
                    });
                }
                Err(e) => {
                    if strict {
                        return Err(e);
                    }
                    problems.push(e);
                }
            }
        }
        // Overlaps between non-empty payloads.
        let spans: Vec<Span> = entries
            .iter()
            .map(|e| Span {
                index: e.index,
                offset: e.offset,
                size: e.size,
                record_offset: e.record_offset,
            })
            .collect();
        for e in overlaps(c, &spans) {
            if strict {
                return Err(e);
            }
            problems.push(e);
        }
        let extent = entries
            .iter()
            .map(|e| e.end())
            .max()
            .unwrap_or(0)
            .max(header_len);
        Ok((
            Bundle {
                data: &data[..extent as usize],
                header_len,
                extent,
                entries,
            },
            problems,
        ))
    }

    /// The entries in header order.
    pub fn entries(&self) -> &[Entry<'data>] {
        &self.entries
    }

    /// The entry whose stored ID is exactly `id`.
    pub fn entry(&self, id: &str) -> Option<&Entry<'data>> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the bundle has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Header length: magic, count and every entry record.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// Whether the header is longer than the 4096 bytes comgr reads when the HIP runtime looks
    /// a code object up (such a bundle cannot be loaded by HIP).
    pub fn header_exceeds_hip_limit(&self) -> bool {
        self.header_len > HIP_HEADER_READ_LIMIT
    }

    /// End of the bundle from its start: the largest payload end, at least the header length.
    pub fn extent(&self) -> u64 {
        self.extent
    }

    /// The bundle's bytes (`extent` bytes from its start).
    pub fn as_bytes(&self) -> &'data [u8] {
        self.data
    }
}

/// Where the uncompressed bundle at the start of `data` ends, from its header alone: the
/// furthest of the header's end and every payload's end. Payloads are not range-checked (the
/// result exceeds `data.len()` when the bundle is cut short) and IDs are not decoded, so a
/// bundle whose entries are damaged can still be stepped over (host discovery splits sections
/// of bundles laid back to back with it).
pub fn header_extent(data: &[u8]) -> Result<u64> {
    header_extent_at(Cursor::new(data))
}

/// [`header_extent`] of the bytes of `c`, with error offsets absolute (from `c.base()`).
pub fn header_extent_at(c: Cursor<'_>) -> Result<u64> {
    let count = read_count_bounded(c, false)?;
    let mut pos = FIXED_HEADER_LEN;
    let mut end = 0u64;
    for index in 0..count as usize {
        let (offset, size, _, next) = read_record(c, pos, index)?;
        let payload_end = offset.checked_add(size).ok_or_else(|| {
            Error::at(
                ErrorKind::Invalid(format!(
                    "payload offset {offset:#x} + size {size} overflows"
                )),
                c.inside(pos),
            )
            .in_entry(index)
        })?;
        end = end.max(payload_end);
        pos = next;
    }
    Ok(end.max(pos))
}

/// An entry as listed by [`parse_header`]: its ID and where its payload lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderEntry {
    /// Index in header order.
    pub index: usize,
    /// The ID exactly as stored.
    pub id: String,
    /// Payload offset from the bundle start.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
}

/// [`ErrorKind::IdControlByte`] for the first control character (below 0x20, or 0x7f) of an
/// entry ID.
fn control_byte(id: &[u8]) -> Option<ErrorKind> {
    id.iter()
        .position(|&b| b < 0x20 || b == 0x7f)
        .map(|position| ErrorKind::IdControlByte {
            byte: id[position],
            position,
        })
}

/// Reads only the header of an uncompressed bundle (IDs, offsets, sizes) from `prefix`, which
/// may be just the start of the bundle: payloads are not looked at or range-checked. For
/// listing a bundle whose payloads are not at hand (the first bytes of a decompression).
/// Returns the entries and the header length.
pub fn parse_header(prefix: &[u8]) -> Result<(Vec<HeaderEntry>, u64)> {
    parse_header_at(Cursor::new(prefix))
}

/// [`parse_header`] of the bytes of `c`, with error offsets absolute (from `c.base()`).
pub fn parse_header_at(c: Cursor<'_>) -> Result<(Vec<HeaderEntry>, u64)> {
    let prefix = c.bytes();
    let count = read_count_bounded(c, false)?;
    let fits = (prefix.len() as u64 - FIXED_HEADER_LEN) / ENTRY_RECORD_LEN;
    let mut out = Vec::with_capacity(count.min(fits) as usize);
    let mut pos = FIXED_HEADER_LEN;
    for index in 0..count as usize {
        let (offset, size, id, next) = read_record(c, pos, index)?;
        let id = std::str::from_utf8(id).map_err(|_| {
            Error::at(ErrorKind::IdNotUtf8, c.abs(pos + ENTRY_RECORD_LEN)).in_entry(index)
        })?;
        if let Some(k) = control_byte(id.as_bytes()) {
            return Err(Error::at(k, c.abs(pos + ENTRY_RECORD_LEN)).in_entry(index));
        }
        out.push(HeaderEntry {
            index,
            id: id.to_owned(),
            offset,
            size,
        });
        pos = next;
    }
    Ok((out, pos))
}

/// [`parse_header`] of the first bytes of an uncompressed bundle of `len` bytes, each entry
/// checked as [`Bundle::parse`] checks it in the whole bundle: a non-empty ID of UTF-8 without
/// control characters, found once; a payload within the `len` bytes, after the header, and
/// overlapping no other non-empty payload. The payloads themselves are not read. Errors are
/// at offsets of the prefix.
pub fn parse_header_checked(prefix: &[u8], len: u64) -> Result<(Vec<HeaderEntry>, u64)> {
    let c = Cursor::new(prefix);
    let count = read_count_bounded(c, false)?;
    if count > len.saturating_sub(FIXED_HEADER_LEN) / ENTRY_RECORD_LEN {
        // As the whole bundle's parse says it: its table cannot fit in its bytes.
        return Err(Error::truncated(
            "entry table",
            count * ENTRY_RECORD_LEN,
            len.saturating_sub(FIXED_HEADER_LEN),
            c.abs(FIXED_HEADER_LEN.min(prefix.len() as u64)),
        ));
    }
    let mut records =
        Vec::with_capacity(count.min(prefix.len() as u64 / ENTRY_RECORD_LEN) as usize);
    let mut pos = FIXED_HEADER_LEN;
    for index in 0..count as usize {
        let (offset, size, id, next) = read_record(c, pos, index)?;
        records.push((index, pos, offset, size, id));
        pos = next;
    }
    let header_len = pos;
    let mut seen: HashMap<&[u8], usize> = HashMap::with_capacity(records.len());
    let mut out = Vec::with_capacity(records.len());
    let mut spans = Vec::with_capacity(records.len());
    for (index, record_offset, offset, size, id) in records {
        let id_str =
            check_record(id, offset, size, header_len, len, &seen).map_err(|(kind, field)| {
                Error::at(kind, c.inside(record_offset + field)).in_entry(index)
            })?;
        seen.insert(id, index);
        spans.push(Span {
            index,
            offset,
            size,
            record_offset,
        });
        out.push(HeaderEntry {
            index,
            id: id_str.to_owned(),
            offset,
            size,
        });
    }
    if let Some(e) = overlaps(c, &spans).into_iter().next() {
        return Err(e);
    }
    Ok((out, header_len))
}

/// Most bytes of a compressed bundle decompressed by [`ccob_header`] to read its header.
pub const MAX_HEADER_PREFIX: u64 = 16 << 20;

/// Reads the header of the uncompressed bundle inside the CCOB bundle `data` (its entry IDs,
/// payload offsets and sizes) by decompressing only the first bytes of the payload: 4 KiB,
/// then four times more while the header is not complete, up to [`MAX_HEADER_PREFIX`] or the
/// declared size. The hash cannot be checked (nothing is fully decompressed). Returns the CCOB
/// header, the entries and the header length. A bundle declaring more than `limits` allow is
/// refused.
pub fn ccob_header(
    data: &[u8],
    limits: &crate::limits::Limits,
) -> Result<(crate::compressed::Header, Vec<HeaderEntry>, u64)> {
    ccob_header_at(Cursor::new(data), limits)
}

/// [`ccob_header`] of the bytes of `c`: errors in the CCOB header at absolute offsets (from
/// `c.base()`), errors in the uncompressed header at offsets of the decompressed bytes.
pub fn ccob_header_at(
    c: Cursor<'_>,
    limits: &crate::limits::Limits,
) -> Result<(crate::compressed::Header, Vec<HeaderEntry>, u64)> {
    ccob_header_with(c, limits, |prefix, _| parse_header(prefix))
}

/// [`ccob_header_at`], with the header checked as [`Bundle::parse`] checks the decompressed
/// bundle ([`parse_header_checked`] against the declared uncompressed size): what a caller
/// that needs only the entries' IDs and sizes reads instead of decompressing the bundle. The
/// payloads and the hash are not checked.
pub fn ccob_header_checked_at(
    c: Cursor<'_>,
    limits: &crate::limits::Limits,
) -> Result<(crate::compressed::Header, Vec<HeaderEntry>, u64)> {
    ccob_header_with(c, limits, parse_header_checked)
}

/// Decompresses growing prefixes of the CCOB bundle of `c` until `parse` (given the prefix and
/// the declared uncompressed size) reads its header.
fn ccob_header_with(
    c: Cursor<'_>,
    limits: &crate::limits::Limits,
    parse: impl Fn(&[u8], u64) -> Result<(Vec<HeaderEntry>, u64)>,
) -> Result<(crate::compressed::Header, Vec<HeaderEntry>, u64)> {
    let opts = limits.decompress_options();
    let header = crate::compressed::Header::parse_at(c)?;
    let limit = header.uncompressed_size.min(MAX_HEADER_PREFIX);
    let mut want: u64 = 4096;
    loop {
        let len = usize::try_from(want.min(limit)).unwrap_or(usize::MAX);
        let (_, prefix) = crate::compressed::decompress_prefix_at(c, len, &opts)?;
        match parse(&prefix, header.uncompressed_size) {
            Ok((entries, header_len)) => return Ok((header, entries, header_len)),
            Err(_) if (prefix.len() as u64) < limit && prefix.len() == len => {
                want = want.saturating_mul(4);
            }
            Err(e) => return Err(e),
        }
    }
}
