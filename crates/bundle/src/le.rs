//! The bounds-checked little-endian reader over untrusted bytes: every read is `None` past
//! the end, never a panic. The one little-endian reader of gfxkit's libraries (this crate,
//! gfxkit-host, gfxkit-shrink).

/// Reads a little-endian `u16` at `offset`, or `None` past the end.
pub fn u16_at(data: &[u8], offset: u64) -> Option<u16> {
    let b = bytes_at(data, offset, 2)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// Reads a little-endian `u32` at `offset`, or `None` past the end.
pub fn u32_at(data: &[u8], offset: u64) -> Option<u32> {
    let b = bytes_at(data, offset, 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian `u64` at `offset`, or `None` past the end.
pub fn u64_at(data: &[u8], offset: u64) -> Option<u64> {
    let b = bytes_at(data, offset, 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// The `len` bytes at `offset`, or `None` when they run past the end.
pub fn bytes_at(data: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let len = usize::try_from(len).ok()?;
    let end = start.checked_add(len)?;
    data.get(start..end)
}

/// Offset of `inner` within `outer`, when `inner` is a sub-slice of it.
pub fn offset_within(outer: &[u8], inner: &[u8]) -> Option<u64> {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    let off = i.checked_sub(o)?;
    if off.checked_add(inner.len())? <= outer.len() {
        u64::try_from(off).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(u16_at(&d, 0), Some(0x0201));
        assert_eq!(u32_at(&d, 5), Some(0x0908_0706));
        assert_eq!(u32_at(&d, 6), None);
        assert_eq!(u64_at(&d, 1), Some(0x0908_0706_0504_0302));
        assert_eq!(u64_at(&d, 2), None);
        assert_eq!(bytes_at(&d, u64::MAX, 1), None);
        assert_eq!(offset_within(&d, &d[3..5]), Some(3));
        assert_eq!(offset_within(&d[3..], &d[..2]), None);
    }
}
