//! Writing fields into a file being built: little-endian values at an offset, checked to lie
//! inside it ([`Patch`], for an [`Output`] of pieces and for a plain buffer), and offset
//! alignment ([`align_up`], [`align_down`]). The one place the rewrite and the kpack split
//! put bytes; reads go through `gfxkit_bytes`.

use crate::error::{fail, ErrorKind, Result};
use crate::output::Output;

/// Something that fields can be written into at byte offsets.
pub(crate) trait Patch {
    /// Overwrites the bytes at `at` with `bytes`; the field must lie inside.
    fn put(&mut self, at: u64, bytes: &[u8]) -> Result<()>;

    /// Writes a little-endian `u64` at `at`.
    fn put_u64(&mut self, at: u64, v: u64) -> Result<()> {
        self.put(at, &v.to_le_bytes())
    }

    /// Writes a little-endian `u16` at `at`.
    fn put_u16(&mut self, at: u64, v: u16) -> Result<()> {
        self.put(at, &v.to_le_bytes())
    }

    /// Zeroes `len` bytes at `at`.
    fn zero(&mut self, at: u64, len: usize) -> Result<()> {
        self.put(at, &vec![0u8; len])
    }
}

impl Patch for Output<'_> {
    fn put(&mut self, at: u64, bytes: &[u8]) -> Result<()> {
        Output::put(self, at, bytes)
    }
}

/// The `len` bytes at `at` of `out`, or the error for a field that does not lie inside.
fn field(out: &mut [u8], at: u64, len: usize) -> Result<&mut [u8]> {
    let range = usize::try_from(at)
        .ok()
        .and_then(|a| Some(a..a.checked_add(len)?));
    match range.and_then(|r| out.get_mut(r)) {
        Some(s) => Ok(s),
        None => fail(
            at,
            ErrorKind::Truncated {
                what: "patched field",
            },
        ),
    }
}

impl Patch for [u8] {
    fn put(&mut self, at: u64, bytes: &[u8]) -> Result<()> {
        field(self, at, bytes.len())?.copy_from_slice(bytes);
        Ok(())
    }

    fn zero(&mut self, at: u64, len: usize) -> Result<()> {
        field(self, at, len)?.fill(0);
        Ok(())
    }
}

/// `v` rounded up to a multiple of `a` (`a` 0 counts as 1), or `None` when that passes
/// `u64::MAX` (both can come from a file).
pub(crate) fn align_up(v: u64, a: u64) -> Option<u64> {
    let a = a.max(1);
    v.div_ceil(a).checked_mul(a)
}

/// `v` rounded down to a multiple of `a` (`a` 0 counts as 1).
pub(crate) fn align_down(v: u64, a: u64) -> u64 {
    v / a.max(1) * a.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lie_inside_or_are_refused() {
        let mut b = [0xffu8; 16];
        b.put_u64(8, 0x0102_0304_0506_0708).unwrap();
        b.put_u16(0, 0xabcd).unwrap();
        b.zero(2, 2).unwrap();
        assert_eq!(&b[..4], &[0xcd, 0xab, 0, 0]);
        assert_eq!(&b[8..], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert!(b.put_u64(9, 1).is_err());
        assert!(b.zero(u64::MAX, 1).is_err());
        assert_eq!(
            (align_up(9, 8), align_down(9, 8), align_up(9, 0)),
            (Some(16), 8, Some(9))
        );
        assert_eq!(align_up(u64::MAX - 2, 8), None);
        assert_eq!(align_up(9, u64::MAX), Some(u64::MAX));
        assert_eq!(align_up(u64::MAX, u64::MAX), Some(u64::MAX));
    }
}
