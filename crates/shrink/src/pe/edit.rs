//! The one edit model of PE images and COFF objects, used by the prune and recompress of both
//! (`super::rewrite`, [`super::coff`]) and by the kpack split and inline of images
//! ([`super::kpack`]).
//!
//! An edit is planned against the input, then written once:
//!
//! 1. [`Splice`]: input byte ranges replaced by other bytes (a section's new raw data, a
//!    section's raw data removed, a new section's raw data inserted), in file order;
//! 2. [`Patches`]: header fields to write, each at the input offset of the field;
//! 3. [`Splice::finish`]: the output, every range replaced and every field written where its
//!    bytes went ([`Splice::map`]). A field inside a replaced range belongs to no header: the
//!    headers are damaged, and the edit is refused.
//!
//! The output borrows every byte it keeps from the input; only the replacement bytes and the
//! fields are owned. How the headers' file offsets follow the splice is the image model's
//! ([`super::image`]); objects move theirs themselves.

use crate::error::{fail, Error, ErrorKind, Result};
use crate::output::Output;
use crate::plan::{BundleOutcome, NewRegion};
use gfxkit_host::WrapperMagic;

/// A layout the rewrite does not handle, at file offset `at`.
pub(crate) fn unsupported(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Unsupported(msg.into()))
}

/// Damage at file offset `at`.
pub(crate) fn bad(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Damaged(msg.into()))
}

/// File offset of bytes borrowed from `data`.
pub(crate) fn offset_of(data: &[u8], inner: &[u8]) -> u64 {
    gfxkit_bytes::offset_within(data, inner).unwrap_or(0)
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

/// Input byte ranges replaced by other bytes: disjoint, in file order (an insertion is an
/// empty range).
#[derive(Debug, Default)]
pub(crate) struct Splice<'a> {
    edits: Vec<(u64, u64, Output<'a>)>,
}

impl<'a> Splice<'a> {
    /// No edit yet.
    pub(crate) fn new() -> Splice<'a> {
        Splice::default()
    }

    /// Replaces the input bytes `start..end` by `bytes` (inserts them at `start` when the range
    /// is empty). Ranges are added in file order and do not overlap.
    pub(crate) fn replace(&mut self, start: u64, end: u64, bytes: Output<'a>) {
        debug_assert!(start <= end);
        debug_assert!(self.edits.last().map_or(true, |(_, e, _)| *e <= start));
        self.edits.push((start, end, bytes));
    }

    /// Replaces `start..end` by the rewritten `region` padded with zeros to `new_len` bytes;
    /// returns the region's bundle outcomes rebased to file offsets.
    pub(crate) fn replace_region(
        &mut self,
        start: u64,
        end: u64,
        region: NewRegion<'a>,
        new_len: u64,
    ) -> Result<Vec<BundleOutcome>> {
        let NewRegion {
            mut out, outcomes, ..
        } = region;
        out.pad_to(new_len)?;
        self.replace(start, end, out);
        Ok(outcomes
            .into_iter()
            .map(|mut o| {
                o.offset += start;
                o.new_offset += start;
                o
            })
            .collect())
    }

    /// Where input offset `x` lands in the output; `None` inside a replaced range (bytes
    /// inserted at `x` come before it).
    pub(crate) fn map(&self, x: u64) -> Option<u64> {
        let mut y = i128::from(x);
        for (s, e, b) in &self.edits {
            let grown = i128::from(b.len()) - i128::from(e - s);
            if x >= *e {
                y += grown;
            } else if x >= *s {
                return None;
            }
        }
        u64::try_from(y).ok()
    }

    /// The replaced range holding input offset `x`.
    fn replaced(&self, x: u64) -> Option<(u64, u64)> {
        self.edits
            .iter()
            .find(|(s, e, _)| (*s..*e).contains(&x))
            .map(|(s, e, _)| (*s, *e))
    }

    /// The output: `data` with every range replaced and every field of `patches` written
    /// where its bytes went.
    pub(crate) fn finish(self, data: &'a [u8], patches: &Patches) -> Result<Output<'a>> {
        // Two fields that overlap are two readings of one place: the headers contradict
        // each other, and either write would break the other's field.
        let mut spans: Vec<(u64, u64)> = patches
            .0
            .iter()
            .map(|(at, b)| (*at, at + b.len() as u64))
            .collect();
        spans.sort_unstable();
        if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
            let at = w[1].0;
            return Err(Error::at(
                at,
                ErrorKind::Damaged(format!(
                    "two fields the rewrite updates overlap at file offset {at:#x} (one from \
                     {:#x}): damaged headers",
                    w[0].0
                )),
            ));
        }
        let mut placed = Vec::with_capacity(patches.0.len());
        for (at, bytes) in &patches.0 {
            let Some(to) = self.map(*at) else {
                let (s, e) = self.replaced(*at).unwrap_or((*at, *at));
                return Err(Error::at(
                    *at,
                    ErrorKind::Damaged(format!(
                        "a header field the rewrite updates, at file offset {at:#x}, lies in \
                         bytes the rewrite replaces ({s:#x}..{e:#x}): damaged headers"
                    )),
                ));
            };
            placed.push((to, bytes));
        }
        let mut out = Output::new();
        let mut at = 0u64;
        for (s, e, bytes) in self.edits {
            out.push(&data[at as usize..s as usize]);
            out.append(bytes);
            at = e;
        }
        out.push(&data[at as usize..]);
        for (to, bytes) in placed {
            out.put(to, bytes)?;
        }
        Ok(out)
    }
}

/// Header fields to write, each at the input offset of the field: applied through a
/// [`Splice`] by [`Splice::finish`], in order (a later write wins where two meet).
#[derive(Debug, Default)]
pub(crate) struct Patches(Vec<(u64, Vec<u8>)>);

impl Patches {
    /// No field yet.
    pub(crate) fn new() -> Patches {
        Patches::default()
    }

    /// Writes `bytes` at input offset `at`.
    pub(crate) fn bytes(&mut self, at: u64, bytes: &[u8]) {
        self.0.push((at, bytes.to_vec()));
    }

    /// Writes the 32-bit field at `at`; a value that does not fit is refused.
    pub(crate) fn u32(&mut self, at: u64, v: u64) -> Result<()> {
        let v = u32::try_from(v).map_err(|_| {
            Error::at(
                at,
                ErrorKind::TooLarge(format!("{v:#x} does not fit a 32-bit field")),
            )
        })?;
        self.bytes(at, &v.to_le_bytes());
        Ok(())
    }

    /// Writes the 16-bit field at `at` (`NumberOfSections`).
    pub(crate) fn u16(&mut self, at: u64, v: u16) {
        self.bytes(at, &v.to_le_bytes());
    }

    /// Writes the 64-bit field at `at`.
    pub(crate) fn u64(&mut self, at: u64, v: u64) {
        self.bytes(at, &v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10..20 removed, five bytes inserted at 30.
    fn splice<'a>() -> Splice<'a> {
        let mut s = Splice::new();
        s.replace(10, 20, Output::new());
        s.replace(30, 30, Output::of(vec![7; 5]));
        s
    }

    #[test]
    fn offsets_move_around_the_edits() {
        let data: Vec<u8> = (0..40).collect();
        let s = splice();
        assert_eq!(s.map(5), Some(5));
        assert_eq!(s.map(10), None);
        assert_eq!(s.map(19), None);
        assert_eq!(s.map(20), Some(10));
        assert_eq!(s.map(30), Some(25));
        assert_eq!(s.map(31), Some(26));
        let mut p = Patches::new();
        p.bytes(21, &[0xaa]);
        p.bytes(30, &[0xbb]);
        let out = s.finish(&data, &p).unwrap().to_vec();
        assert_eq!(out.len(), 35);
        assert_eq!(out[10], 20);
        assert_eq!(out[11], 0xaa);
        assert_eq!(&out[20..25], &[7; 5]);
        assert_eq!(out[25], 0xbb);
    }

    #[test]
    fn a_field_in_replaced_bytes_is_damage() {
        let data = [0u8; 40];
        let mut p = Patches::new();
        p.bytes(12, &[1]);
        let e = splice().finish(&data, &p).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("0xa..0x14"), "{msg}");
        assert!(matches!(e.kind, ErrorKind::Damaged(_)), "{e:?}");
    }

    #[test]
    fn overlapping_fields_are_damage() {
        let data = [0u8; 40];
        let mut p = Patches::new();
        p.bytes(30, &[1, 2, 3, 4]);
        p.bytes(32, &[5]);
        let e = Splice::new().finish(&data, &p).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Damaged(_)), "{e:?}");
        assert!(e.to_string().contains("overlap at file offset 0x20"), "{e}");
        // Fields side by side are not.
        let mut p = Patches::new();
        p.bytes(30, &[1, 2]);
        p.bytes(32, &[5]);
        let out = Splice::new().finish(&data, &p).unwrap().to_vec();
        assert_eq!(&out[30..33], &[1, 2, 5]);
    }

    #[test]
    fn a_replacement_may_be_longer_or_shorter() {
        let data: Vec<u8> = (0..10).collect();
        let mut s = Splice::new();
        s.replace(2, 4, Output::of(vec![9; 4]));
        assert_eq!(s.map(4), Some(6));
        let out = s.finish(&data, &Patches::new()).unwrap().to_vec();
        assert_eq!(out, [0, 1, 9, 9, 9, 9, 4, 5, 6, 7, 8, 9]);
    }
}
