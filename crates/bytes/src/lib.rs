//! The bounds-checked little-endian reader over untrusted bytes, [`Cursor`]: absolute
//! offsets, and a typed error ([`OutOfBounds`]) naming an offset inside the bytes read; never
//! a panic. The one reader of fixed-layout binary fields in gfxkit's libraries (bundles and
//! CCOB headers, ELF and PE/COFF fields the `object` crate does not expose, zip records,
//! OffloadBinaries, kpack markers, AKS2 headers): a sub-cursor keeps the absolute offset of its
//! first byte, so an error built from a read names the place in the file, never a place
//! relative to some slice.

/// A bounds-checked little-endian reader over bytes whose first byte is at an absolute
/// offset (`base`) of the file or member they come from. Reads take offsets relative to the
/// bytes and fail with [`OutOfBounds`], which names an absolute offset inside them: an error
/// built from it never points outside the file.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'data> {
    data: &'data [u8],
    base: u64,
}

/// A read that runs past the end of a [`Cursor`]'s bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{len} bytes at offset {at:#x} run past the end at {end:#x}")]
pub struct OutOfBounds {
    /// The absolute offset asked for (saturated: it may lie past the end, or be `u64::MAX`).
    pub at: u64,
    /// The bytes asked for.
    pub len: u64,
    /// The absolute offset where the cursor's bytes end.
    pub end: u64,
    /// The absolute offset where they start.
    pub start: u64,
}

impl OutOfBounds {
    /// Where to report the failed read: the offset asked for when it lies inside the bytes,
    /// else their last byte (their start when there are none). Always inside the bytes read.
    pub fn offset(&self) -> u64 {
        if self.at >= self.start && self.at < self.end {
            self.at
        } else {
            self.end.saturating_sub(1).max(self.start)
        }
    }
}

impl<'data> Cursor<'data> {
    /// A cursor over `data`, a whole file (offsets from 0).
    pub fn new(data: &'data [u8]) -> Cursor<'data> {
        Cursor { data, base: 0 }
    }

    /// A cursor over `data`, which starts at absolute offset `base`.
    pub fn at(data: &'data [u8], base: u64) -> Cursor<'data> {
        Cursor { data, base }
    }

    /// The bytes.
    pub fn bytes(&self) -> &'data [u8] {
        self.data
    }

    /// The absolute offset of the first byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// The number of bytes.
    pub fn len(&self) -> u64 {
        self.data.len() as u64
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The absolute offset of relative offset `rel` (saturating).
    pub fn abs(&self, rel: u64) -> u64 {
        self.base.saturating_add(rel)
    }

    /// An absolute offset inside the bytes for relative offset `rel`: `rel`'s own when it lies
    /// inside, else the last byte's (what an error about `rel` should name).
    pub fn inside(&self, rel: u64) -> u64 {
        self.oob(rel, 0).offset()
    }

    fn oob(&self, rel: u64, len: u64) -> OutOfBounds {
        OutOfBounds {
            at: self.abs(rel),
            len,
            end: self.abs(self.len()),
            start: self.base,
        }
    }

    /// The `len` bytes at relative offset `rel`.
    pub fn slice(&self, rel: u64, len: u64) -> Result<&'data [u8], OutOfBounds> {
        usize::try_from(rel)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(s, n)| self.data.get(s..s.checked_add(n)?))
            .ok_or_else(|| self.oob(rel, len))
    }

    /// A cursor over the `len` bytes at relative offset `rel`, keeping absolute offsets.
    pub fn sub(&self, rel: u64, len: u64) -> Result<Cursor<'data>, OutOfBounds> {
        Ok(Cursor {
            data: self.slice(rel, len)?,
            base: self.abs(rel),
        })
    }

    /// A cursor over the bytes from relative offset `rel` to the end, keeping absolute
    /// offsets: empty (at the end) when `rel` lies past it.
    pub fn tail(&self, rel: u64) -> Cursor<'data> {
        let start = usize::try_from(rel).map_or(self.data.len(), |r| r.min(self.data.len()));
        Cursor {
            data: &self.data[start..],
            base: self.abs(start as u64),
        }
    }

    /// The `N` bytes at relative offset `rel`, as a record whose fields [`u16_in`],
    /// [`u32_in`] and [`u64_in`] read without a check that can fail.
    pub fn array<const N: usize>(&self, rel: u64) -> Result<[u8; N], OutOfBounds> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.slice(rel, N as u64)?);
        Ok(a)
    }

    /// The little-endian `u16` at relative offset `rel`.
    pub fn u16(&self, rel: u64) -> Result<u16, OutOfBounds> {
        self.array(rel).map(u16::from_le_bytes)
    }

    /// The little-endian `u32` at relative offset `rel`.
    pub fn u32(&self, rel: u64) -> Result<u32, OutOfBounds> {
        self.array(rel).map(u32::from_le_bytes)
    }

    /// The little-endian `u64` at relative offset `rel`.
    pub fn u64(&self, rel: u64) -> Result<u64, OutOfBounds> {
        self.array(rel).map(u64::from_le_bytes)
    }
}

/// The little-endian `u16` at byte `AT` of a fixed-size record (a field past the record's end
/// does not compile).
pub fn u16_in<const AT: usize, const N: usize>(record: &[u8; N]) -> u16 {
    const { assert!(AT + 2 <= N) };
    let mut b = [0; 2];
    b.copy_from_slice(&record[AT..AT + 2]);
    u16::from_le_bytes(b)
}

/// The little-endian `u32` at byte `AT` of a fixed-size record (a field past the record's end
/// does not compile).
pub fn u32_in<const AT: usize, const N: usize>(record: &[u8; N]) -> u32 {
    const { assert!(AT + 4 <= N) };
    let mut b = [0; 4];
    b.copy_from_slice(&record[AT..AT + 4]);
    u32::from_le_bytes(b)
}

/// The little-endian `u64` at byte `AT` of a fixed-size record (a field past the record's end
/// does not compile).
pub fn u64_in<const AT: usize, const N: usize>(record: &[u8; N]) -> u64 {
    const { assert!(AT + 8 <= N) };
    let mut b = [0; 8];
    b.copy_from_slice(&record[AT..AT + 8]);
    u64::from_le_bytes(b)
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
    fn offsets_within() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(offset_within(&d, &d[3..5]), Some(3));
        assert_eq!(offset_within(&d[3..], &d[..2]), None);
        assert_eq!(Cursor::new(&d).slice(u64::MAX, 1).ok(), None);
    }

    #[test]
    fn cursor_errors_name_an_offset_inside() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let c = Cursor::at(&d, 0x100);
        assert_eq!(c.u32(5), Ok(0x0908_0706));
        let e = c.u32(6).unwrap_err();
        assert_eq!((e.at, e.len, e.end, e.offset()), (0x106, 4, 0x109, 0x106));
        let e = c.u64(0xa0000).unwrap_err();
        assert_eq!(e.offset(), 0x108, "past the end: the last byte");
        assert_eq!(c.u16(u64::MAX).unwrap_err().offset(), 0x108);
        let s = c.sub(2, 4).unwrap();
        assert_eq!((s.base(), s.len(), s.u16(0)), (0x102, 4, Ok(0x0403)));
        assert_eq!(s.u32(1).unwrap_err().offset(), 0x103);
        assert_eq!(s.inside(10), 0x105);
        let r: [u8; 8] = c.array(1).unwrap();
        assert_eq!(
            (u16_in::<0, 8>(&r), u32_in::<4, 8>(&r)),
            (0x0302, 0x0908_0706)
        );
        assert_eq!(u64_in::<0, 8>(&r), 0x0908_0706_0504_0302);
        assert!(c.array::<8>(2).is_err());
        let empty = Cursor::at(&d[..0], 7);
        assert_eq!(empty.u16(0).unwrap_err().offset(), 7);
        assert!(c.sub(8, 2).is_err());
        let t = c.tail(7);
        assert_eq!((t.base(), t.len(), t.u16(0)), (0x107, 2, Ok(0x0908)));
        let t = c.tail(u64::MAX);
        assert_eq!((t.base(), t.len()), (0x109, 0));
    }
}
