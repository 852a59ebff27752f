//! Writing uncompressed offload bundles with clang-offload-bundler 19's layout, byte for byte.
//!
//! Header length H = 32 + sum(24 + id_len). Entries and payloads come in the order given; for
//! each, H = align_up(H, align); offset = H; H += size. Gaps are zero-filled and there is no
//! trailing padding, so a 0-byte entry (the host entry of a device-only bundle) gets the
//! aligned offset, equal to the next entry's offset.

use crate::error::{Error, ErrorKind, Result};
use crate::read::{ENTRY_RECORD_LEN, FIXED_HEADER_LEN, MAGIC};
use std::collections::HashSet;
use std::io::{self, Write};

/// Where each payload goes in a bundle being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Header length (magic, count, records).
    pub header_len: u64,
    /// Payload offset of each entry, in the order given.
    pub offsets: Vec<u64>,
    /// Total length of the bundle.
    pub total_len: u64,
}

fn align_up(v: u64, align: u64) -> Result<u64> {
    let r = v % align;
    if r == 0 {
        Ok(v)
    } else {
        v.checked_add(align - r)
            .ok_or(Error::new(ErrorKind::Overflow))
    }
}

/// Plans the layout of a bundle holding entries with these IDs and payload sizes. Fails on
/// alignment 0, an empty or duplicate ID, or sizes overflowing 64 bits.
pub fn layout<'a>(entries: impl IntoIterator<Item = (&'a str, u64)>, align: u64) -> Result<Layout> {
    if align == 0 {
        return Err(Error::new(ErrorKind::ZeroAlignment));
    }
    let entries: Vec<(&str, u64)> = entries.into_iter().collect();
    let mut seen = HashSet::new();
    let mut header_len = FIXED_HEADER_LEN;
    for (i, (id, _)) in entries.iter().enumerate() {
        if id.is_empty() {
            return Err(Error::new(ErrorKind::EmptyId).in_entry(i));
        }
        if let Some(first) = seen.replace(*id) {
            let first = entries.iter().position(|(x, _)| *x == first).unwrap_or(0);
            return Err(Error::new(ErrorKind::DuplicateId {
                id: (*id).to_owned(),
                first,
            })
            .in_entry(i));
        }
        header_len = header_len
            .checked_add(ENTRY_RECORD_LEN + id.len() as u64)
            .ok_or(Error::new(ErrorKind::Overflow))?;
    }
    let mut pos = header_len;
    let mut offsets = Vec::with_capacity(entries.len());
    for (_, size) in &entries {
        pos = align_up(pos, align)?;
        offsets.push(pos);
        pos = pos
            .checked_add(*size)
            .ok_or(Error::new(ErrorKind::Overflow))?;
    }
    Ok(Layout {
        header_len,
        offsets,
        total_len: pos,
    })
}

/// The payload alignment a bundle was written with, read back from its payload offsets: the
/// largest power of two up to 4096 (the HIP driver's `-bundle-align`) dividing every offset (4096
/// when there are none). Rewriting a bundle with [`write_bundle`] at this alignment keeps its
/// layout. The same rule gives the alignment of bundles laid back to back, from their offsets.
pub fn infer_alignment(offsets: impl IntoIterator<Item = u64>) -> u64 {
    let mut align = 4096u64;
    for off in offsets {
        while align > 1 && off % align != 0 {
            align /= 2;
        }
    }
    align
}

/// Writes a bundle of `(id, payload)` entries, in the order given, with payloads aligned to
/// `align` bytes (clang's `-bundle-align`, default 1; the HIP driver uses 4096).
pub fn write_bundle(entries: &[(&str, &[u8])], align: u64) -> Result<Vec<u8>> {
    let plan = layout(entries.iter().map(|(id, p)| (*id, p.len() as u64)), align)?;
    let total = usize::try_from(plan.total_len).map_err(|_| Error::new(ErrorKind::Overflow))?;
    let mut out = Vec::with_capacity(total);
    emit(&mut out, entries, &plan).map_err(|e| Error::new(ErrorKind::Invalid(e.to_string())))?;
    debug_assert_eq!(out.len() as u64, plan.total_len);
    Ok(out)
}

/// Streams a bundle to `w` (same bytes as [`write_bundle`]) and returns its length. Layout
/// errors are reported as [`io::ErrorKind::InvalidInput`] wrapping an [`Error`].
pub fn write_bundle_to<W: Write>(
    w: &mut W,
    entries: &[(&str, &[u8])],
    align: u64,
) -> io::Result<u64> {
    let plan = layout(entries.iter().map(|(id, p)| (*id, p.len() as u64)), align)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    emit(w, entries, &plan)?;
    Ok(plan.total_len)
}

impl Layout {
    /// The header (magic, count, entry records) of a bundle with this layout, for the entries
    /// (ID, payload size) it was planned from, in the same order. What follows it is each
    /// payload at its offset, zero bytes between: a caller that has the payloads elsewhere (a
    /// memory-mapped input) can write them from there without copying them into one buffer.
    pub fn header<'a>(&self, entries: impl IntoIterator<Item = (&'a str, u64)>) -> Vec<u8> {
        let mut header = Vec::with_capacity(self.header_len as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&(self.offsets.len() as u64).to_le_bytes());
        for ((id, size), off) in entries.into_iter().zip(&self.offsets) {
            header.extend_from_slice(&off.to_le_bytes());
            header.extend_from_slice(&size.to_le_bytes());
            header.extend_from_slice(&(id.len() as u64).to_le_bytes());
            header.extend_from_slice(id.as_bytes());
        }
        header
    }
}

fn emit<W: Write>(w: &mut W, entries: &[(&str, &[u8])], plan: &Layout) -> io::Result<()> {
    let header = plan.header(entries.iter().map(|(id, p)| (*id, p.len() as u64)));
    w.write_all(&header)?;
    let mut pos = plan.header_len;
    const ZEROS: [u8; 4096] = [0; 4096];
    for ((_, payload), off) in entries.iter().zip(&plan.offsets) {
        while pos < *off {
            let n = (*off - pos).min(ZEROS.len() as u64) as usize;
            w.write_all(&ZEROS[..n])?;
            pos += n as u64;
        }
        w.write_all(payload)?;
        pos += payload.len() as u64;
    }
    Ok(())
}

/// Builds a bundle entry by entry. Same output as [`write_bundle`].
///
/// ```
/// use gfxkit_bundle::BundleWriter;
/// let mut w = BundleWriter::new(4096);
/// w.add("host-x86_64-unknown-linux--", b"");
/// w.add("hipv4-amdgcn-amd-amdhsa--gfx906", b"\x7fELF...");
/// let bytes = w.to_vec().unwrap();
/// let b = gfxkit_bundle::Bundle::parse(&bytes).unwrap();
/// assert_eq!(b.entries()[1].offset, 4096);
/// assert_eq!(b.entries()[0].offset, 4096);
/// ```
#[derive(Debug, Clone, Default)]
pub struct BundleWriter<'a> {
    entries: Vec<(&'a str, &'a [u8])>,
    align: u64,
}

impl<'a> BundleWriter<'a> {
    /// A writer aligning payloads to `align` bytes.
    pub fn new(align: u64) -> Self {
        BundleWriter {
            entries: Vec::new(),
            align,
        }
    }

    /// Appends an entry.
    pub fn add(&mut self, id: &'a str, payload: &'a [u8]) -> &mut Self {
        self.entries.push((id, payload));
        self
    }

    /// The planned layout.
    pub fn layout(&self) -> Result<Layout> {
        layout(
            self.entries.iter().map(|(id, p)| (*id, p.len() as u64)),
            self.align,
        )
    }

    /// The bundle's bytes.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        write_bundle(&self.entries, self.align)
    }

    /// Streams the bundle to `w`; returns its length.
    pub fn write_to<W: Write>(&self, w: &mut W) -> io::Result<u64> {
        write_bundle_to(w, &self.entries, self.align)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_reads_back_from_offsets() {
        for align in [1u64, 8, 64, 4096] {
            let b = write_bundle(
                &[
                    ("host-x86_64-unknown-linux--", b""),
                    ("hipv4-amdgcn-amd-amdhsa--gfx90a", &[1u8; 77]),
                    ("hipv4-amdgcn-amd-amdhsa--gfx1030", &[2u8; 5]),
                ],
                align,
            )
            .unwrap();
            let parsed = crate::Bundle::parse(&b).unwrap();
            let got = infer_alignment(parsed.entries().iter().map(|e| e.offset));
            // At least the alignment written with (offsets may happen to be aligned further).
            assert_eq!(got % align, 0, "{align} -> {got}");
            let offsets: Vec<(&str, &[u8])> =
                parsed.entries().iter().map(|e| (e.id, e.payload)).collect();
            assert_eq!(write_bundle(&offsets, got).unwrap(), b);
        }
        assert_eq!(infer_alignment([4096, 8192 + 64]), 64);
        assert_eq!(infer_alignment([3]), 1);
        assert_eq!(infer_alignment(std::iter::empty()), 4096);
    }
}
