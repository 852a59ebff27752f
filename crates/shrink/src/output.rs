//! A rewritten file as a plan: pieces in order (most borrowed from the input), zero runs, and
//! small patches over them, written out sequentially without ever being assembled in memory.
//!
//! Pruning a 1.3 GB library keeps a few hundred MB of device code; holding that output whole
//! (and the new `.hip_fatbin` a second time) is what made a rewrite cost twice the output in
//! memory. Here the kept payloads stay in the input mapping, new bundle headers and compressed
//! bundles are the only owned bytes, and the fields a rewrite patches (program and section
//! headers, relocation addends, symbol values, wrapper pointers) are recorded as patches and
//! applied on the way out.
//!
//! Bytes no input holds and that would be too large to keep (the bundles `kpack inline` builds
//! from archives) are [`Deferred`]: only their length is planned, and each is made when the
//! writer reaches it and dropped once written, so a whole output is never in memory and at
//! most one deferred piece is being made at a time.

use crate::error::{fail, ErrorKind, Result};
use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::Arc;

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

/// Bytes of an [`Output`] made only when the output is written ([`Output::push_deferred`]):
/// their length is fixed when the output is planned; the bytes are made each time the output
/// is written, straight into the writer, and must come to exactly that length.
pub trait Deferred: std::fmt::Debug + Send + Sync {
    /// How many bytes [`Deferred::write_to`] writes.
    fn byte_len(&self) -> u64;

    /// Makes the bytes and writes them to `w`. An error (its own, or the writer's) stops the
    /// write of the whole output.
    fn write_to(&self, w: &mut dyn Write) -> io::Result<()>;
}

/// One run of output bytes.
#[derive(Debug, Clone)]
enum Piece<'a> {
    /// Bytes, borrowed from the input or owned.
    Bytes(Cow<'a, [u8]>),
    /// This many zero bytes.
    Zeros(u64),
    /// Bytes made when written.
    Deferred(Arc<dyn Deferred + 'a>),
}

impl Piece<'_> {
    fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Zeros(n) => *n,
            Piece::Deferred(d) => d.byte_len(),
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

    /// Appends bytes made only when the output is written (see [`Deferred`]); no patch may
    /// lie over them.
    pub fn push_deferred(&mut self, d: impl Deferred + 'a) {
        let n = d.byte_len();
        if n > 0 {
            self.len += n;
            self.pieces.push(Piece::Deferred(Arc::new(d)));
        }
    }

    /// Bytes the output holds in memory: its owned pieces and its patches (pieces borrowed
    /// from the input, zero runs and [`Deferred`] pieces cost nothing until written).
    pub fn owned_len(&self) -> u64 {
        let owned = self.pieces.iter().map(|p| match p {
            Piece::Bytes(Cow::Owned(b)) => b.len(),
            _ => 0,
        });
        held_bytes(owned, &self.patches)
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

    /// The bytes of `[at, at + len)` before patches, from the pieces; an error where the
    /// range meets a [`Deferred`] piece (a patch over bytes not yet made).
    fn raw_range(&self, at: u64, len: usize) -> io::Result<Vec<u8>> {
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
            match p {
                Piece::Bytes(b) => {
                    let from = at.max(s);
                    let to = end.min(e);
                    out[(from - at) as usize..(to - at) as usize]
                        .copy_from_slice(&b[(from - s) as usize..(to - s) as usize]);
                }
                Piece::Zeros(_) => {}
                Piece::Deferred(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "a patch at {at:#x} lies over bytes made when written ({s:#x}..{e:#x})"
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// The patches merged into disjoint windows of final bytes, in offset order.
    fn windows(&self) -> io::Result<Vec<(u64, Vec<u8>)>> {
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
            .map(|&(s, e)| Ok((s, self.raw_range(s, (e - s) as usize)?)))
            .collect::<io::Result<_>>()?;
        for (at, b) in &self.patches {
            if b.is_empty() {
                continue;
            }
            let i = windows.partition_point(|w| w.0 <= *at) - 1;
            let w = &mut windows[i];
            let off = (at - w.0) as usize;
            w.1[off..off + b.len()].copy_from_slice(b);
        }
        Ok(windows)
    }

    /// Writes the output, patches applied, to `w` in order; returns the bytes written.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<u64> {
        self.write_to_sink(&mut Plain(w))
    }

    /// [`Output::write_to`] into a [`Sink`], which is handed the runs of bytes the output
    /// borrows (most of them from the input) as they are, to copy them as cheaply as it can.
    /// [`Deferred`] pieces are made one at a time, as the writer reaches them.
    pub fn write_to_sink(&self, w: &mut dyn Sink) -> io::Result<u64> {
        let windows = self.windows()?;
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

    /// The whole output in memory (tests, dry runs, archive members). Writing to memory
    /// cannot fail, but making a [`Deferred`] piece can: for an output with such pieces use
    /// [`Output::try_to_vec`] (here the bytes stop where the error came).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len as usize);
        let _ = self.write_to(&mut v);
        v
    }

    /// The whole output in memory, or the error of a [`Deferred`] piece that could not be made.
    pub fn try_to_vec(&self) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.write_to(&mut v)?;
        Ok(v)
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

impl<'a> Output<'a> {
    /// This output apart from `input`, the bytes it was made from: each run borrowed from
    /// `input` kept as its place there, owned runs and patches as they are (a run borrowed from
    /// elsewhere is copied). `None` for an output with [`Deferred`] pieces, which borrow what
    /// they make their bytes from.
    pub fn detach(self, input: &[u8]) -> Option<Detached> {
        let base = input.as_ptr() as usize;
        let pieces = self
            .pieces
            .into_iter()
            .map(|p| match p {
                Piece::Bytes(Cow::Borrowed(b)) => {
                    let start = (b.as_ptr() as usize).wrapping_sub(base);
                    Some(if start <= input.len() && b.len() <= input.len() - start {
                        Held::Input {
                            start,
                            len: b.len(),
                        }
                    } else {
                        Held::Owned(b.to_vec())
                    })
                }
                Piece::Bytes(Cow::Owned(b)) => Some(Held::Owned(b)),
                Piece::Zeros(n) => Some(Held::Zeros(n)),
                Piece::Deferred(_) => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Detached {
            pieces,
            len: self.len,
            patches: self.patches,
            input_len: input.len(),
        })
    }
}

/// An [`Output`] kept apart from the input it borrows ([`Output::detach`]): what a plan keeps
/// of a rewrite it made (the bundles it compressed, the headers it built) until the file is
/// written, when the input is read again and the output put back together over it
/// ([`Detached::attach`]) instead of being made a second time.
#[derive(Debug, Clone)]
pub struct Detached {
    pieces: Vec<Held>,
    len: u64,
    patches: Vec<(u64, Vec<u8>)>,
    input_len: usize,
}

/// One run of a [`Detached`] output.
#[derive(Debug, Clone)]
enum Held {
    /// The input's bytes `start..start + len`.
    Input {
        start: usize,
        len: usize,
    },
    Owned(Vec<u8>),
    Zeros(u64),
}

impl Detached {
    /// Bytes held in memory: the owned runs and the patches.
    pub fn owned_len(&self) -> u64 {
        let owned = self.pieces.iter().map(|p| match p {
            Held::Owned(b) => b.len(),
            _ => 0,
        });
        held_bytes(owned, &self.patches)
    }

    /// The output again, over `input`; `None` when `input` is not as long as the bytes it was
    /// detached from (a file that changed since: make the output again).
    pub fn attach(self, input: &[u8]) -> Option<Output<'_>> {
        if input.len() != self.input_len {
            return None;
        }
        let pieces = self
            .pieces
            .into_iter()
            .map(|p| match p {
                Held::Input { start, len } => {
                    Piece::Bytes(Cow::Borrowed(&input[start..start + len]))
                }
                Held::Owned(b) => Piece::Bytes(Cow::Owned(b)),
                Held::Zeros(n) => Piece::Zeros(n),
            })
            .collect();
        Some(Output {
            pieces,
            len: self.len,
            patches: self.patches,
        })
    }
}

/// Bytes in memory: the lengths of the owned runs and of the patches.
fn held_bytes(owned: impl Iterator<Item = usize>, patches: &[(u64, Vec<u8>)]) -> u64 {
    owned
        .chain(patches.iter().map(|(_, b)| b.len()))
        .sum::<usize>() as u64
}

/// Counts the bytes a [`Deferred`] piece writes.
struct Counted<'w> {
    w: &'w mut dyn Sink,
    n: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.w.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.write_all(buf)?;
        self.n += buf.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Writes `len` bytes of piece `p` from offset `from` within it.
fn emit(w: &mut dyn Sink, p: &Piece<'_>, from: u64, len: u64) -> io::Result<()> {
    match p {
        Piece::Bytes(b) => w.write_run(&b[from as usize..(from + len) as usize]),
        Piece::Deferred(d) => {
            let planned = d.byte_len();
            // No patch lies over a deferred piece (`windows` refuses one): it is written whole.
            if from != 0 || len != planned {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a deferred piece written in part",
                ));
            }
            let mut c = Counted { w, n: 0 };
            d.write_to(&mut c)?;
            if c.n != planned {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} bytes made where {planned} were planned", c.n),
                ));
            }
            Ok(())
        }
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

    #[test]
    fn a_detached_output_is_put_back_over_the_same_bytes_read_again() {
        static HEADER: [u8; 3] = [0xaa, 0xbb, 0xcc];
        let input: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let mut o = Output::new();
        o.push(&input[100..300]);
        o.push(vec![7u8; 16]);
        o.push(&HEADER[..]);
        o.push_zeros(20);
        o.push(&input[990..]);
        o.push(&input[1000..]);
        o.put(205, &[1, 2, 3, 4]).unwrap();
        let want = o.to_vec();
        let held = o.detach(&input).unwrap();
        // The owned run, the run borrowed from elsewhere (copied) and the patch.
        assert_eq!(held.owned_len(), 16 + 3 + 4);
        // The input read again: another buffer with the same bytes.
        let again = input.clone();
        assert_eq!(held.clone().attach(&again).unwrap().to_vec(), want);
        assert!(held.attach(&again[1..]).is_none());
        // An output with a piece made when written keeps what it borrows: not detached.
        let (live, most) = Default::default();
        let mut d = Output::of(&input[..4]);
        d.push_deferred(Made {
            n: 4,
            fill: 1,
            makes: 4,
            live: &live,
            most: &most,
        });
        assert!(d.detach(&input).is_none());
    }

    /// A piece of `n` bytes `fill` that counts how many pieces are being made at once.
    #[derive(Debug)]
    struct Made<'c> {
        n: u64,
        fill: u8,
        /// Bytes it claims to make (a wrong plan when not `n`).
        makes: u64,
        live: &'c std::sync::atomic::AtomicUsize,
        most: &'c std::sync::atomic::AtomicUsize,
    }

    impl Deferred for Made<'_> {
        fn byte_len(&self) -> u64 {
            self.n
        }
        fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
            use std::sync::atomic::Ordering::SeqCst;
            let now = self.live.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            let bytes = vec![self.fill; self.makes as usize];
            let r = w.write_all(&bytes);
            self.live.fetch_sub(1, SeqCst);
            r
        }
    }

    #[test]
    fn deferred_pieces_are_made_one_at_a_time_when_written_and_never_held() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let (live, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let made = |n: u64, fill: u8, makes: u64| Made {
            n,
            fill,
            makes,
            live: &live,
            most: &most,
        };
        let head: Vec<u8> = (1..=16).collect();
        let mut o = Output::of(&head[..]);
        let mut want = head.clone();
        for k in 0..5u8 {
            o.pad_to(o.len().next_multiple_of(32)).unwrap();
            want.resize(want.len().next_multiple_of(32), 0);
            let n = 1000 + u64::from(k) * 77;
            o.push_deferred(made(n, k + 1, n));
            want.extend(std::iter::repeat(k + 1).take(n as usize));
        }
        o.put(2, &[0xee; 4]).unwrap();
        want[2..6].fill(0xee);
        assert_eq!(o.len(), want.len() as u64);
        // Planned, nothing made: only the patch is held.
        assert_eq!(o.owned_len(), 4);
        assert_eq!(most.load(SeqCst), 0);
        assert_eq!(o.try_to_vec().unwrap(), want);
        assert!(o.equals(&want));
        assert_eq!(most.load(SeqCst), 1, "one deferred piece made at a time");

        // A piece that makes another length than planned stops the write.
        let mut bad = Output::of(&head[..]);
        bad.push_deferred(made(10, 1, 9));
        let e = bad.try_to_vec().unwrap_err();
        assert!(e.to_string().contains("9 bytes made where 10"), "{e}");
        // A patch over a deferred piece is refused when written.
        let mut over = Output::of(&head[..]);
        over.push_deferred(made(10, 1, 10));
        over.put(14, &[0; 4]).unwrap();
        let e = over.try_to_vec().unwrap_err();
        assert!(e.to_string().contains("made when written"), "{e}");
    }
}
