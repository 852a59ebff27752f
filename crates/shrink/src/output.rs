//! A rewritten file as a plan: pieces in order (most borrowed from the input), zero runs, and
//! small patches over them, written out sequentially without ever being assembled in memory.
//!
//! Pruning a 1.3 GB library keeps a few hundred MB of device code; holding that output whole
//! (and the new `.hip_fatbin` a second time) is what made a rewrite cost twice the output in
//! memory. Here the kept payloads stay in the input mapping, new bundle headers and compressed
//! bundles are the only owned bytes, and the fields a rewrite patches (program and section
//! headers, relocation addends, symbol values, wrapper pointers) are recorded as patches and
//! applied on the way out.

use crate::error::{fail, ErrorKind, Result};
use std::borrow::Cow;
use std::io::{self, Write};

/// Where an [`Output`] is written: a writer that is also handed each run of the output's own
/// bytes whole ([`Sink::write_run`]), so that one writing to a file can copy a run that is a
/// slice of a mapped input file from that file inside the kernel.
pub trait Sink: Write {
    /// Writes a run of bytes, which may be a slice of the input; by default as any bytes.
    fn write_run(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }
}

/// A plain writer as a [`Sink`].
struct Plain<'w>(&'w mut dyn Write);

impl Write for Plain<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Sink for Plain<'_> {}

/// One run of output bytes.
#[derive(Debug, Clone)]
enum Piece<'a> {
    /// Bytes, borrowed from the input or owned.
    Bytes(Cow<'a, [u8]>),
    /// This many zero bytes.
    Zeros(u64),
}

impl Piece<'_> {
    fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Zeros(n) => *n,
        }
    }
}

/// The bytes of a file being written: see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Output<'a> {
    pieces: Vec<Piece<'a>>,
    len: u64,
    /// (offset, bytes), applied in order over the pieces (a later patch wins where two meet).
    patches: Vec<(u64, Vec<u8>)>,
}

static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

impl<'a> Output<'a> {
    /// Empty output.
    pub fn new() -> Output<'a> {
        Output::default()
    }

    /// Output of exactly these bytes.
    pub fn of(bytes: impl Into<Cow<'a, [u8]>>) -> Output<'a> {
        let mut o = Output::new();
        o.push(bytes);
        o
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the output is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends bytes (borrowed from the input, or owned).
    pub fn push(&mut self, bytes: impl Into<Cow<'a, [u8]>>) {
        let b = bytes.into();
        if !b.is_empty() {
            self.len += b.len() as u64;
            self.pieces.push(Piece::Bytes(b));
        }
    }

    /// Appends `n` zero bytes.
    pub fn push_zeros(&mut self, n: u64) {
        if n > 0 {
            self.len += n;
            self.pieces.push(Piece::Zeros(n));
        }
    }

    /// Appends zero bytes up to length `len`; a length below the current one is an error (a
    /// layout that would overlap what is already placed).
    pub fn pad_to(&mut self, len: u64) -> Result<()> {
        if len < self.len {
            return fail(
                len,
                ErrorKind::Unsupported(format!(
                    "layout places bytes at {len:#x}, inside what is already written (up to {:#x})",
                    self.len
                )),
            );
        }
        self.push_zeros(len - self.len);
        Ok(())
    }

    /// Appends another output (its patches move with it).
    pub fn append(&mut self, other: Output<'a>) {
        let base = self.len;
        self.pieces.extend(other.pieces);
        self.patches
            .extend(other.patches.into_iter().map(|(at, b)| (at + base, b)));
        self.len += other.len;
    }

    /// Overwrites the bytes at `at` with `bytes` when the output is written; the field must lie
    /// inside the output.
    pub fn put(&mut self, at: u64, bytes: &[u8]) -> Result<()> {
        match at.checked_add(bytes.len() as u64) {
            Some(end) if end <= self.len => {
                self.patches.push((at, bytes.to_vec()));
                Ok(())
            }
            _ => fail(
                at,
                ErrorKind::Truncated {
                    what: "patched field",
                },
            ),
        }
    }

    /// The bytes of `[at, at + len)` before patches, from the pieces.
    fn raw_range(&self, at: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        let end = at + len as u64;
        let mut pos = 0u64;
        for p in &self.pieces {
            let (s, e) = (pos, pos + p.len());
            pos = e;
            if e <= at {
                continue;
            }
            if s >= end {
                break;
            }
            if let Piece::Bytes(b) = p {
                let from = at.max(s);
                let to = end.min(e);
                out[(from - at) as usize..(to - at) as usize]
                    .copy_from_slice(&b[(from - s) as usize..(to - s) as usize]);
            }
        }
        out
    }

    /// The patches merged into disjoint windows of final bytes, in offset order.
    fn windows(&self) -> Vec<(u64, Vec<u8>)> {
        let mut spans: Vec<(u64, u64)> = self
            .patches
            .iter()
            .map(|(at, b)| (*at, at + b.len() as u64))
            .filter(|(s, e)| e > s)
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let mut windows: Vec<(u64, Vec<u8>)> = merged
            .iter()
            .map(|&(s, e)| (s, self.raw_range(s, (e - s) as usize)))
            .collect();
        for (at, b) in &self.patches {
            if b.is_empty() {
                continue;
            }
            let i = windows.partition_point(|w| w.0 <= *at) - 1;
            let w = &mut windows[i];
            let off = (at - w.0) as usize;
            w.1[off..off + b.len()].copy_from_slice(b);
        }
        windows
    }

    /// Writes the output, patches applied, to `w` in order; returns the bytes written.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<u64> {
        self.write_to_sink(&mut Plain(w))
    }

    /// [`Output::write_to`] into a [`Sink`], which is handed the runs of bytes the output
    /// borrows (most of them from the input) as they are, to copy them as cheaply as it can.
    pub fn write_to_sink(&self, w: &mut dyn Sink) -> io::Result<u64> {
        let windows = self.windows();
        let mut wi = 0usize;
        let mut pos = 0u64;
        for p in &self.pieces {
            let end = pos + p.len();
            let mut cur = pos;
            while cur < end {
                while wi < windows.len() && windows[wi].0 + windows[wi].1.len() as u64 <= cur {
                    wi += 1;
                }
                let next = windows.get(wi).filter(|w| w.0 < end);
                let plain_end = next.map_or(end, |w| w.0.max(cur));
                if plain_end > cur {
                    emit(w, p, cur - pos, plain_end - cur)?;
                    cur = plain_end;
                }
                if let Some((ws, wb)) = next {
                    let wend = (ws + wb.len() as u64).min(end);
                    w.write_all(&wb[(cur - ws) as usize..(wend - ws) as usize])?;
                    cur = wend;
                }
            }
            pos = end;
        }
        Ok(pos)
    }

    /// The whole output in memory (tests, dry runs, archive members).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len as usize);
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut v);
        v
    }

    /// Whether the output, patches applied, equals `data`, compared piece by piece.
    pub fn equals(&self, data: &[u8]) -> bool {
        struct Cmp<'d> {
            rest: &'d [u8],
            same: bool,
        }
        impl Write for Cmp<'_> {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if self.same {
                    match self.rest.get(..buf.len()) {
                        Some(head) if head == buf => self.rest = &self.rest[buf.len()..],
                        _ => self.same = false,
                    }
                }
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        if self.len != data.len() as u64 {
            return false;
        }
        let mut c = Cmp {
            rest: data,
            same: true,
        };
        let _ = self.write_to(&mut c);
        c.same && c.rest.is_empty()
    }
}

/// Writes `len` bytes of piece `p` from offset `from` within it.
fn emit(w: &mut dyn Sink, p: &Piece<'_>, from: u64, len: u64) -> io::Result<()> {
    match p {
        Piece::Bytes(b) => w.write_run(&b[from as usize..(from + len) as usize]),
        Piece::Zeros(_) => {
            let mut left = len;
            while left > 0 {
                let n = left.min(ZEROS.len() as u64) as usize;
                w.write_all(&ZEROS[..n])?;
                left -= n as u64;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_zeros_and_overlapping_patches_write_like_a_buffer() {
        let input: Vec<u8> = (0..200u8).collect();
        let mut o = Output::new();
        o.push(&input[..50]);
        o.push_zeros(30);
        o.push(vec![7u8; 10]);
        o.pad_to(100).unwrap();
        o.push(&input[50..]);
        let mut want = input[..50].to_vec();
        want.resize(80, 0);
        want.extend_from_slice(&[7; 10]);
        want.resize(100, 0);
        want.extend_from_slice(&input[50..]);
        assert_eq!(o.len(), want.len() as u64);
        // Patches across piece boundaries, overlapping each other (the later wins), at the
        // very start and end.
        for (at, b) in [
            (45u64, vec![1u8; 10]),
            (48, vec![2u8; 4]),
            (0, vec![3u8; 2]),
            (78, vec![4u8; 30]),
            (want.len() as u64 - 3, vec![5u8; 3]),
        ] {
            o.put(at, &b).unwrap();
            want[at as usize..at as usize + b.len()].copy_from_slice(&b);
        }
        assert_eq!(o.to_vec(), want);
        assert!(o.equals(&want));
        let mut other = want.clone();
        other[120] ^= 1;
        assert!(!o.equals(&other));
        assert!(!o.equals(&want[1..]));
        assert!(o.put(want.len() as u64 - 2, &[0; 3]).is_err());
        assert!(o.pad_to(10).is_err());
        // Appended outputs keep their patches at their new place.
        let mut a = Output::of(&want[..5]);
        let mut b = Output::of(vec![9u8; 4]);
        b.put(1, &[8]).unwrap();
        a.append(b);
        assert_eq!(a.to_vec(), [&want[..5], &[9, 8, 9, 9][..]].concat());
    }
}
