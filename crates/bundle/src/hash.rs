//! MD5, as fast as one stream's chain allows and of many messages at once.
//!
//! The CCOB hash is an MD5 of the whole uncompressed bundle, verified on every read, so its
//! speed bounds decompression. gfxkit hashes with its own MD5 for two reasons:
//!
//! - **One stream** ([`Md5`], [`truncated_one`]): an MD5 stream cannot go faster than its chain
//!   of 64 dependent steps per block. [`Md5`] keeps everything that does not depend on the
//!   previous step (message word plus constant, the halves of the mix that do not involve the
//!   latest word) off that chain, and adds round 2's two disjoint halves separately, so a step
//!   costs 4-5 dependent operations instead of the 5-6 of a textbook implementation (whose
//!   message-and-constant addition sits on the chain as a three-operand address computation).
//!   `bench/md5.sh` measures it beside the well-kept Rust implementations: as fast as
//!   `md5-asm` (the assembly behind `md-5`'s `asm` feature, in maintenance only) and OpenSSL,
//!   about 1.3 times the throughput of `md-5` itself.
//! - **Many messages** ([`digests`]): a file holds many bundles and a bundle many entries, and
//!   independent messages can share the steps. [`digests`] hashes eight messages per thread
//!   side by side in the lanes of SIMD registers (`wide::u32x8`, safe code, no runtime feature
//!   dispatch), several groups of eight on all cores. On a ROCm library of 111 bundles (1.3 GB)
//!   that is about five times the throughput of one stream per thread.
//!
//! Messages are dealt to lanes longest first, each to the lane with the least work so far, so
//! that lanes finish together. When only one lane of a group is left busy it continues on its
//! own, and the messages not started by then are hashed one stream each. Single messages, and
//! groups too small to fill lanes, are one stream each. Every digest equals `md-5`'s, which the
//! tests check for lengths around every padding boundary and for every way of splitting a
//! stream into updates.

use rayon::prelude::*;
use std::ops::{Add, BitAnd, BitOr, BitXor, Not, Shl, Shr};
use wide::u32x8;

/// Messages side by side in one group.
pub const LANES: usize = 8;

/// Fewer messages than this are hashed one stream each: lanes would mostly run empty.
const MIN_BATCH: usize = 3;

/// The MD5 digest of every message, in order.
pub fn digests(msgs: &[&[u8]]) -> Vec<[u8; 16]> {
    if msgs.len() < MIN_BATCH {
        return msgs.iter().map(|m| single(m)).collect();
    }
    // As many groups as there are cores to run them, but no more than the messages can fill.
    let groups = rayon::current_num_threads()
        .min(msgs.len().div_ceil(LANES))
        .max(1);
    let lanes = deal(msgs, groups * LANES);
    let mut out = vec![[0u8; 16]; msgs.len()];
    let done: Vec<Vec<(usize, [u8; 16])>> = lanes
        .par_chunks(LANES)
        .map(|group| {
            let mut q: [&[usize]; LANES] = [&[]; LANES];
            for (slot, lane) in q.iter_mut().zip(group) {
                *slot = lane;
            }
            Group::new(msgs, q).run()
        })
        .collect();
    for (i, d) in done.into_iter().flatten() {
        out[i] = d;
    }
    out
}

/// The first 8 bytes, little-endian, of every message's MD5 digest (the CCOB hash), in order.
pub fn truncated(msgs: &[&[u8]]) -> Vec<u64> {
    digests(msgs).iter().map(|d| prefix(d)).collect()
}

/// The CCOB hash of one message: the first 8 bytes of its MD5 digest, little-endian.
pub fn truncated_one(msg: &[u8]) -> u64 {
    prefix(&single(msg))
}

/// The first 8 bytes of an MD5 digest, little-endian.
pub(crate) fn prefix(d: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// One message, one stream.
fn single(msg: &[u8]) -> [u8; 16] {
    let mut m = Md5::new();
    m.update(msg);
    m.finalize()
}

/// An MD5 stream: [`update`](Md5::update) with the message in pieces of any size, then
/// [`finalize`](Md5::finalize). See the module documentation for why it is gfxkit's own.
#[derive(Clone)]
pub struct Md5 {
    state: [u32; 4],
    /// The start of a block not yet complete.
    pending: [u8; 64],
    /// Bytes in `pending`.
    buffered: usize,
    /// Message bytes so far.
    len: u64,
}

impl Default for Md5 {
    fn default() -> Md5 {
        Md5::new()
    }
}

impl Md5 {
    /// A stream at the start of a message.
    pub fn new() -> Md5 {
        Md5 {
            state: IV,
            pending: [0; 64],
            buffered: 0,
            len: 0,
        }
    }

    /// Adds the next bytes of the message.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.buffered > 0 {
            let take = (64 - self.buffered).min(data.len());
            self.pending[self.buffered..self.buffered + take].copy_from_slice(&data[..take]);
            self.buffered += take;
            data = &data[take..];
            if self.buffered < 64 {
                return;
            }
            let block = self.pending;
            chain_blocks(&mut self.state, &block);
            self.buffered = 0;
        }
        let whole = data.len() - data.len() % 64;
        chain_blocks(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.pending[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    /// The digest of the message.
    pub fn finalize(mut self) -> [u8; 16] {
        let (t, n) = tail(&self.pending[..self.buffered], self.len);
        chain_blocks(&mut self.state, &t[..n * 64]);
        digest_of(self.state)
    }
}

/// Runs the whole 64-byte blocks of `data` (a multiple of 64 bytes) through `state`.
fn chain_blocks(state: &mut [u32; 4], data: &[u8]) {
    if data.is_empty() {
        return;
    }
    // The constants are read through an opaque reference: as compile-time constants the
    // optimiser would move each one to the end of its step's sum, onto the chain, where the
    // point is to add it to the message word beforehand.
    let k = std::hint::black_box(&K);
    for block in data.chunks_exact(64) {
        chain_block(state, &words(block), k);
    }
}

/// One block into `state`, with the fewest dependent operations per step: see the module
/// documentation. `k` is [`K`].
#[inline(always)]
fn chain_block(state: &mut [u32; 4], m: &[u32; 16], k: &[u32; 64]) {
    let [mut a, mut b, mut c, mut d] = *state;
    // `off` is what does not depend on the latest word `b` (it runs beside the chain), `on`
    // what does.
    macro_rules! step {
        ($i:expr, |$b:ident, $c:ident, $d:ident| $off:expr, $on:expr) => {{
            let ($b, $c, $d) = (b, c, d);
            let t = a
                .wrapping_add(m[const { word_of($i) }].wrapping_add(k[$i]))
                .wrapping_add($off)
                .wrapping_add($on);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(t.rotate_left(S[$i]));
        }};
    }
    macro_rules! round {
        ($r:expr, $($i:expr),*) => {{
            $(
                match $r {
                    // (b & c) | (!b & d), as d ^ (b & (c ^ d)).
                    0 => step!(16 * 0 + $i, |x, y, z| 0, z ^ (x & (y ^ z))),
                    // (b & d) | (c & !d): the halves share no bit, so they can be added, and
                    // c & !d before b is known.
                    1 => step!(16 * 1 + $i, |x, y, z| y & !z, x & z),
                    2 => step!(16 * 2 + $i, |x, y, z| 0, x ^ (y ^ z)),
                    _ => step!(16 * 3 + $i, |x, y, z| 0, y ^ (x | !z)),
                }
            )*
        }};
    }
    round!(0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    round!(1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    round!(2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    round!(3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    state[0] = state[0].wrapping_add(a);
    state[1] = state[1].wrapping_add(b);
    state[2] = state[2].wrapping_add(c);
    state[3] = state[3].wrapping_add(d);
}

/// Deals the message indices to `n` lanes: longest first, each to the lane with the fewest
/// bytes so far (ties to the lowest lane). Lanes keep their messages longest first.
fn deal(msgs: &[&[u8]], n: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..msgs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(msgs[i].len()));
    let mut lanes = vec![Vec::new(); n];
    let mut load = vec![0u64; n];
    for i in order {
        let (lane, _) = load
            .iter()
            .enumerate()
            .min_by_key(|&(j, l)| (*l, j))
            .expect("at least one lane");
        lanes[lane].push(i);
        load[lane] += msgs[i].len() as u64 + 64;
    }
    lanes
}

/// The 32-bit operations of an MD5 step on a lane vector of words.
trait Word:
    Copy
    + Add<Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Not<Output = Self>
{
    fn splat(x: u32) -> Self;
    fn rotl(self, s: u32) -> Self;
}

impl Word for u32x8 {
    #[inline(always)]
    fn splat(x: u32) -> Self {
        u32x8::splat(x)
    }
    #[inline(always)]
    fn rotl(self, s: u32) -> Self {
        Shl::<u32>::shl(self, s) | Shr::<u32>::shr(self, 32 - s)
    }
}

/// MD5's initial state (RFC 1321, 3.3).
const IV: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// The additive constants: the integer part of 2^32 * |sin(i + 1)| (RFC 1321, 3.4).
const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// The rotation of each step (RFC 1321, 3.4).
const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15,
    21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// The message word each step adds.
const fn word_of(i: usize) -> usize {
    match i / 16 {
        0 => i,
        1 => (5 * i + 1) % 16,
        2 => (3 * i + 5) % 16,
        _ => (7 * i) % 16,
    }
}

/// One 64-byte block (as 16 little-endian words `m`) into `state`. The 64 steps are written
/// out (a macro per round), so that every rotation and mix is a constant.
#[inline(always)]
fn compress<V: Word>(state: &mut [V; 4], m: &[V; 16]) {
    let [mut a, mut b, mut c, mut d] = *state;
    macro_rules! step {
        ($mix:expr, $i:expr) => {{
            let t = a + $mix + V::splat(K[$i]) + m[word_of($i)];
            let nb = b + t.rotl(S[$i]);
            a = d;
            d = c;
            c = b;
            b = nb;
        }};
    }
    macro_rules! round {
        ($r:expr, $mix:expr) => {{
            step!($mix(b, c, d), $r * 16);
            step!($mix(b, c, d), $r * 16 + 1);
            step!($mix(b, c, d), $r * 16 + 2);
            step!($mix(b, c, d), $r * 16 + 3);
            step!($mix(b, c, d), $r * 16 + 4);
            step!($mix(b, c, d), $r * 16 + 5);
            step!($mix(b, c, d), $r * 16 + 6);
            step!($mix(b, c, d), $r * 16 + 7);
            step!($mix(b, c, d), $r * 16 + 8);
            step!($mix(b, c, d), $r * 16 + 9);
            step!($mix(b, c, d), $r * 16 + 10);
            step!($mix(b, c, d), $r * 16 + 11);
            step!($mix(b, c, d), $r * 16 + 12);
            step!($mix(b, c, d), $r * 16 + 13);
            step!($mix(b, c, d), $r * 16 + 14);
            step!($mix(b, c, d), $r * 16 + 15);
        }};
    }
    round!(0, |x: V, y: V, z: V| ((y ^ z) & x) ^ z);
    round!(1, |x: V, y: V, z: V| ((x ^ y) & z) ^ y);
    round!(2, |x: V, y: V, z: V| x ^ y ^ z);
    round!(3, |x: V, y: V, z: V| y ^ (x | !z));
    state[0] = state[0] + a;
    state[1] = state[1] + b;
    state[2] = state[2] + c;
    state[3] = state[3] + d;
}

/// The 16 little-endian words of a block.
#[inline(always)]
fn words(block: &[u8]) -> [u32; 16] {
    let mut w = [0u32; 16];
    for (x, c) in w.iter_mut().zip(block.chunks_exact(4)) {
        *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    w
}

/// The last one or two blocks of a message whose final `rest.len() < 64` bytes are `rest`:
/// the bytes, 0x80, zeros, and the length in bits. Returns the blocks and how many there are.
fn tail(rest: &[u8], len: u64) -> ([u8; 128], usize) {
    let mut t = [0u8; 128];
    t[..rest.len()].copy_from_slice(rest);
    t[rest.len()] = 0x80;
    let blocks = if rest.len() < 56 { 1 } else { 2 };
    let end = blocks * 64;
    t[end - 8..end].copy_from_slice(&len.wrapping_mul(8).to_le_bytes());
    (t, blocks)
}

fn digest_of(state: [u32; 4]) -> [u8; 16] {
    let mut d = [0u8; 16];
    for (c, w) in d.chunks_exact_mut(4).zip(state) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    d
}

/// Where one message stands in its lane.
#[derive(Clone, Copy)]
struct MessageState<'m> {
    index: usize,
    msg: &'m [u8],
    /// Bytes of `msg` consumed.
    pos: usize,
    /// The padded last blocks, once `msg` has fewer than 64 bytes left.
    tail: Option<([u8; 128], usize, usize)>,
}

impl<'m> MessageState<'m> {
    fn new(index: usize, msg: &'m [u8]) -> MessageState<'m> {
        MessageState {
            index,
            msg,
            pos: 0,
            tail: None,
        }
    }

    /// The next block's words and whether it is the message's last.
    #[inline(always)]
    fn next(&mut self) -> ([u32; 16], bool) {
        if self.tail.is_none() {
            if self.msg.len() - self.pos >= 64 {
                let w = words(&self.msg[self.pos..self.pos + 64]);
                self.pos += 64;
                return (w, false);
            }
            let (t, n) = tail(&self.msg[self.pos..], self.msg.len() as u64);
            self.tail = Some((t, n, 0));
        }
        let (t, n, k) = self.tail.as_mut().expect("set above");
        let w = words(&t[*k * 64..*k * 64 + 64]);
        *k += 1;
        (w, *k == *n)
    }

    /// Blocks left, this one included.
    fn blocks_left(&self) -> usize {
        match &self.tail {
            Some((_, n, k)) => n - k,
            None => {
                let rest = self.msg.len() - self.pos;
                rest / 64 + if rest % 64 < 56 { 1 } else { 2 }
            }
        }
    }
}

/// Eight lanes, each working through its queue of messages.
struct Group<'m, 'q> {
    msgs: &'q [&'m [u8]],
    queue: [&'q [usize]; LANES],
    cur: [Option<MessageState<'m>>; LANES],
    state: [u32x8; 4],
    done: Vec<(usize, [u8; 16])>,
}

impl<'m, 'q> Group<'m, 'q> {
    fn new(msgs: &'q [&'m [u8]], queue: [&'q [usize]; LANES]) -> Group<'m, 'q> {
        let mut g = Group {
            msgs,
            queue,
            cur: [None; LANES],
            state: IV.map(u32x8::splat),
            done: Vec::new(),
        };
        for lane in 0..LANES {
            g.start_next(lane);
        }
        g
    }

    /// Starts the lane's next message (state back to the IV), or leaves the lane idle.
    fn start_next(&mut self, lane: usize) {
        self.cur[lane] = match self.queue[lane].split_first() {
            Some((&i, rest)) => {
                self.queue[lane] = rest;
                Some(MessageState::new(i, self.msgs[i]))
            }
            None => None,
        };
        let mut s = self.state.map(|v| v.to_array());
        for (w, iv) in s.iter_mut().zip(IV) {
            w[lane] = iv;
        }
        self.state = s.map(u32x8::from);
    }

    fn run(mut self) -> Vec<(usize, [u8; 16])> {
        loop {
            let busy = self.cur.iter().filter(|c| c.is_some()).count();
            if busy == 0 {
                return self.done;
            }
            if busy == 1 {
                let lane = self.cur.iter().position(Option::is_some).expect("one busy");
                self.finish_alone(lane);
                return self.done;
            }
            // Run every busy lane for as many blocks as the shortest of them has left: no lane
            // can finish in between, so no lane needs looking at.
            let steps = self
                .cur
                .iter()
                .flatten()
                .map(MessageState::blocks_left)
                .min()
                .expect("busy lanes");
            for _ in 0..steps {
                let mut m = [[0u32; LANES]; 16];
                let mut last = [false; LANES];
                for (lane, c) in self.cur.iter_mut().enumerate() {
                    if let Some(c) = c {
                        let (w, l) = c.next();
                        for (row, x) in m.iter_mut().zip(w) {
                            row[lane] = x;
                        }
                        last[lane] = l;
                    }
                }
                compress(&mut self.state, &m.map(u32x8::from));
                if last.iter().any(|&l| l) {
                    let s = self.state.map(|v| v.to_array());
                    for lane in (0..LANES).filter(|&l| last[l]) {
                        let c = self.cur[lane].expect("busy lane");
                        self.done.push((c.index, digest_of(s.map(|w| w[lane]))));
                        self.start_next(lane);
                    }
                }
            }
        }
    }

    /// The last busy lane: its message continued on plain words, the rest of its queue one
    /// stream each.
    fn finish_alone(&mut self, lane: usize) {
        let mut c = self.cur[lane].take().expect("busy lane");
        let s = self.state.map(|v| v.to_array());
        let mut st = [s[0][lane], s[1][lane], s[2][lane], s[3][lane]];
        let k = std::hint::black_box(&K);
        loop {
            let (w, last) = c.next();
            chain_block(&mut st, &w, k);
            if last {
                break;
            }
        }
        self.done.push((c.index, digest_of(st)));
        for &i in self.queue[lane] {
            self.done.push((i, single(self.msgs[i])));
        }
        self.queue[lane] = &[];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// The `md-5` crate's digest, which every one of gfxkit's must equal.
    fn oracle(m: &[u8]) -> [u8; 16] {
        use md5::Digest;
        md5::Md5::digest(m).into()
    }

    #[test]
    fn a_stream_in_any_pieces_equals_md_5() {
        let msg = data(4 * 64 + 57, 7);
        for len in 0..msg.len() {
            let want = oracle(&msg[..len]);
            assert_eq!(single(&msg[..len]), want, "length {len}");
            // Split at every point, and in pieces of every small size.
            for cut in [0, 1, len / 3, len / 2, len.saturating_sub(1), len] {
                let mut h = Md5::new();
                h.update(&msg[..cut.min(len)]);
                h.update(&msg[cut.min(len)..len]);
                assert_eq!(h.finalize(), want, "length {len} cut at {cut}");
            }
        }
        for piece in 1..=130 {
            let mut h = Md5::default();
            for p in msg.chunks(piece) {
                h.update(p);
            }
            assert_eq!(h.finalize(), oracle(&msg), "pieces of {piece}");
        }
    }

    fn check(lens: &[usize]) {
        let bufs: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &l)| data(l, i as u64 + 1))
            .collect();
        let msgs: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
        let got = digests(&msgs);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(got[i], oracle(m), "message {i} of length {}", m.len());
        }
        let t = truncated(&msgs);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(t[i], truncated_one(m));
        }
    }

    #[test]
    fn every_padding_boundary_in_every_lane() {
        // Lengths around the one- and two-block tails, in every lane position.
        let edges = [
            0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 121, 127, 128, 129, 1000,
        ];
        for shift in 0..LANES {
            let mut lens: Vec<usize> = edges.iter().map(|e| e + shift * 64).collect();
            lens.rotate_left(shift);
            check(&lens);
        }
    }

    #[test]
    fn any_number_of_messages() {
        for n in [0, 1, 2, 3, 7, 8, 9, 16, 17, 33, 100] {
            let lens: Vec<usize> = (0..n).map(|i| (i * 7919) % 5000).collect();
            check(&lens);
        }
    }

    #[test]
    fn one_long_message_among_short_ones_finishes_alone() {
        let mut lens = vec![100_000];
        lens.extend((0..20).map(|i| i * 3 + 1));
        check(&lens);
        // Equal messages: lanes finish together.
        check(&[4096; 24]);
    }

    #[test]
    fn known_answers() {
        // RFC 1321, A.5.
        let msgs: [&[u8]; 4] = [b"", b"a", b"abc", b"message digest"];
        let hex: Vec<String> = digests(&msgs)
            .iter()
            .map(|d| d.iter().map(|b| format!("{b:02x}")).collect())
            .collect();
        assert_eq!(
            hex,
            [
                "d41d8cd98f00b204e9800998ecf8427e",
                "0cc175b9c0f1b6a831c399e269772661",
                "900150983cd24fb0d6963f7d28e17f72",
                "f96b697d7cb7938d525a2f31aaf161d0",
            ]
        );
    }

    #[test]
    fn dealing_balances_lanes() {
        let bufs: Vec<Vec<u8>> = [900, 500, 400, 300, 200, 100]
            .iter()
            .map(|&l| vec![0; l])
            .collect();
        let msgs: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
        let lanes = deal(&msgs, 2);
        assert_eq!(lanes, [vec![0, 3], vec![1, 2, 4, 5]]);
    }
}
