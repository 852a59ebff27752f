//! The two codecs of compressed bundles, zlib and zstd, with bounded decompression.
//!
//! Decompression trusts a size read from the file for allocation only within bounds: output of
//! up to 1 GiB, and at most 1024 times the compressed payload, is one zeroed allocation whose
//! pages the system provides as the codec writes them (a lying header costs address space, not
//! memory); beyond that the buffer grows with the bytes the codec actually produces, from 16
//! times the payload (at least 64 KiB) doubling. Producing more (or fewer) bytes than declared
//! is an error. A whole zstd frame is decoded in one call straight into that buffer (no window
//! buffer beside it). [`decompress_to`] streams the output to a sink instead of keeping it,
//! hashing it on a second thread while decoding goes on, and [`decoded_extent`] finds where a
//! frame ends keeping nothing.

use crate::error::{Error, ErrorKind, Result};
use std::io::Write;

/// Compression method of a CCOB bundle (the `u16` at offset 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// zlib stream (method 0).
    Zlib,
    /// zstd frame (method 1); clang's default.
    Zstd,
}

impl Method {
    /// Decodes the header field.
    pub fn from_u16(v: u16) -> Option<Method> {
        match v {
            0 => Some(Method::Zlib),
            1 => Some(Method::Zstd),
            _ => None,
        }
    }

    /// The header field value.
    pub fn as_u16(self) -> u16 {
        match self {
            Method::Zlib => 0,
            Method::Zstd => 1,
        }
    }

    /// `zlib` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Zlib => "zlib",
            Method::Zstd => "zstd",
        }
    }

    /// Parses `zlib` or `zstd`.
    pub fn by_name(s: &str) -> Option<Method> {
        match s {
            "zlib" => Some(Method::Zlib),
            "zstd" => Some(Method::Zstd),
            _ => None,
        }
    }

    /// clang's default level: 3 for zstd (with long-distance matching), 6 for zlib
    /// (zlib's default).
    pub fn default_level(self) -> i32 {
        match self {
            Method::Zlib => 6,
            Method::Zstd => 3,
        }
    }

    /// The accepted level range.
    pub fn level_range(self) -> (i32, i32) {
        match self {
            Method::Zlib => (0, 9),
            Method::Zstd => {
                let r = zstd::compression_level_range();
                (*r.start(), *r.end())
            }
        }
    }
}

/// Serializes as `zlib` or `zstd`.
impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Compresses `data` as one zstd frame (level `level`, long-distance matching on, as clang 19
/// does) or one zlib stream. `threads` > 0 asks zstd for that many worker threads; 0 compresses
/// on the calling thread, which is what clang does and gives clang's exact bytes.
pub fn compress(method: Method, level: i32, threads: u32, data: &[u8]) -> Result<Vec<u8>> {
    let (min, max) = method.level_range();
    if level < min || level > max {
        return Err(Error::new(ErrorKind::BadLevel {
            method: method.name(),
            level,
            min,
            max,
        }));
    }
    let fail = |e: std::io::Error| {
        Error::new(ErrorKind::Compress {
            method: method.name(),
            message: e.to_string(),
        })
    };
    match method {
        Method::Zstd => {
            use zstd::zstd_safe::CParameter;
            let mut c = zstd::bulk::Compressor::new(level).map_err(fail)?;
            c.set_parameter(CParameter::EnableLongDistanceMatching(true))
                .map_err(fail)?;
            if threads > 0 {
                c.set_parameter(CParameter::NbWorkers(threads))
                    .map_err(fail)?;
                for p in mt_parameters(level) {
                    c.set_parameter(p).map_err(fail)?;
                }
            }
            c.compress(data).map_err(fail)
        }
        Method::Zlib => {
            let mut enc = flate2::write::ZlibEncoder::new(
                Vec::with_capacity(data.len() / 2 + 64),
                flate2::Compression::new(level as u32),
            );
            enc.write_all(data).map_err(fail)?;
            enc.finish().map_err(fail)
        }
    }
}

/// Size of the jobs multi-threaded zstd cuts the input into at levels up to 12 (32 MiB; each
/// sees 8 MiB before its start besides what long-distance matching finds further back).
pub const MT_JOB_SIZE: u32 = 32 << 20;

/// Smallest hash log multi-threaded zstd compresses with at levels up to 3.
pub const MT_MIN_HASH_LOG: u32 = 20;

/// Chain log (the second hash table of zstd's `dfast` match finder) multi-threaded zstd
/// compresses with at levels up to 3.
pub const MT_CHAIN_LOG_FAST: u32 = 18;

/// The parameters multi-threaded zstd adds to `level` (with long-distance matching on).
///
/// With long-distance matching, zstd's workers cut the input into jobs of 8 times the chain
/// table (2 MiB at level 3) that see little before their start, so the ordinary match finder
/// loses every match further back at a job boundary: output 5% larger than clang's
/// single-threaded frame on a 93 MB ROCm bundle. gfxkit sets jobs of 32 MiB
/// ([`MT_JOB_SIZE`]) that overlap by a quarter (overlap log 9: the largest) and, at the fast
/// levels, tables of 2^20 and 2^18 entries (level 3's own are 2^17 and 2^16). On the largest
/// bundles of Debian's librocsparse (64-93 MB) the frame comes out 0.7-4% smaller than
/// clang's at about 1.1 times the CPU time of one thread. The window stays what one thread
/// uses (clang's: the bundle, up to 128 MiB) and long-distance matching still runs over all of
/// it. (Getting large jobs by raising the chain log to 22, as gfxkit did before, costs about
/// 1.6 times the CPU time of one thread: its 16 MiB table misses the cache. Tables of 2^18 and
/// 2^17 entries cost no more than one thread but can come out 0.8% larger than clang's.)
/// Levels above 12 keep zstd's own, larger, jobs.
fn mt_parameters(level: i32) -> Vec<zstd::zstd_safe::CParameter> {
    use zstd::zstd_safe::CParameter;
    let mut p = vec![CParameter::OverlapSizeLog(9)];
    if level <= 12 {
        p.push(CParameter::JobSize(MT_JOB_SIZE));
    }
    if level <= 3 {
        p.push(CParameter::HashLog(MT_MIN_HASH_LOG));
        p.push(CParameter::ChainLog(MT_CHAIN_LOG_FAST));
    }
    p
}

/// zstd worker threads to compress with on this machine: one per core (at least 1). zstd's
/// output is the same for any number of workers from one up, so it does not depend on the
/// machine; 0 workers (the calling thread, as clang does) gives different bytes. Counted once
/// per process (counting reads the cgroup files each time: a twentieth of the time of rewriting a
/// small bundle).
pub fn all_cores() -> u32 {
    static CORES: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .unwrap_or(1)
    })
}

/// Cores from which [`default_workers`] uses zstd's workers.
///
/// To come out no larger than clang's one-thread frame, the workers need larger tables
/// ([`MT_MIN_HASH_LOG`], [`MT_CHAIN_LOG_FAST`]): about 2.6 times one thread's CPU time at level 3.
/// On two cores they lose to one thread with the hash beside it (a 93 MB ROCm bundle: 397 ms
/// against 258 ms, clang taking 529 ms), and on three they would about break even.
pub const MT_MIN_CORES: u32 = 4;

/// The zstd worker threads a bundle is compressed with when the caller does not say: one per
/// core on machines of [`MT_MIN_CORES`] cores or more, else none (the calling thread, which
/// gives clang's exact bytes while the hash runs on the second core). The output therefore
/// differs between machines below and from that size; pass the worker count explicitly
/// (0 for clang's bytes) for bytes that do not depend on the machine.
pub fn default_workers() -> u32 {
    let cores = all_cores();
    if cores >= MT_MIN_CORES {
        cores
    } else {
        0
    }
}

/// A zstd frame or zlib stream being decoded into caller-provided slices.
enum Decoder<'p> {
    Zstd {
        dctx: zstd::zstd_safe::DCtx<'static>,
        input: &'p [u8],
        pos: usize,
    },
    Zlib {
        d: flate2::Decompress,
        input: &'p [u8],
    },
}

impl<'p> Decoder<'p> {
    fn new(method: Method, payload: &'p [u8], declared: u64) -> Result<Decoder<'p>> {
        match method {
            Method::Zstd => {
                use zstd::zstd_safe::{DCtx, DParameter};
                check_frame_header(payload, declared)?;
                let mut dctx = DCtx::try_create()
                    .ok_or_else(|| decode_error(method, "cannot create context".into()))?;
                dctx.set_parameter(DParameter::WindowLogMax(window_log_max(declared)))
                    .map_err(zstd_error)?;
                Ok(Decoder::Zstd {
                    dctx,
                    input: payload,
                    pos: 0,
                })
            }
            Method::Zlib => Ok(Decoder::Zlib {
                d: flate2::Decompress::new(true),
                input: payload,
            }),
        }
    }

    fn method(&self) -> Method {
        match self {
            Decoder::Zstd { .. } => Method::Zstd,
            Decoder::Zlib { .. } => Method::Zlib,
        }
    }

    /// Length of the payload.
    fn input_len(&self) -> usize {
        match self {
            Decoder::Zstd { input, .. } | Decoder::Zlib { input, .. } => input.len(),
        }
    }

    /// Payload bytes consumed so far.
    fn consumed(&self) -> u64 {
        match self {
            Decoder::Zstd { pos, .. } => *pos as u64,
            Decoder::Zlib { d, .. } => d.total_in(),
        }
    }

    /// Decodes into `out` until it is full or the frame or stream ends. Returns the bytes
    /// written and whether the end was reached; input that runs out first is an error.
    fn fill(&mut self, out: &mut [u8]) -> Result<(usize, bool)> {
        let method = self.method();
        let mut written = 0usize;
        match self {
            Decoder::Zstd { dctx, input, pos } => {
                use zstd::zstd_safe::{InBuffer, OutBuffer};
                loop {
                    if written == out.len() && !out.is_empty() {
                        return Ok((written, false));
                    }
                    let mut ib = InBuffer::around(input);
                    ib.set_pos(*pos);
                    let mut ob = OutBuffer::around(&mut out[written..]);
                    let r = dctx
                        .decompress_stream(&mut ob, &mut ib)
                        .map_err(zstd_error)?;
                    let produced = ob.pos();
                    let progressed = produced > 0 || ib.pos() > *pos;
                    written += produced;
                    *pos = ib.pos();
                    if r == 0 {
                        return Ok((written, true));
                    }
                    if out.is_empty() && written == 0 && !progressed {
                        return Ok((0, false));
                    }
                    if !progressed && *pos == input.len() {
                        return Err(decode_error(
                            method,
                            "frame is truncated (the payload ends before the frame)".into(),
                        ));
                    }
                }
            }
            Decoder::Zlib { d, input } => {
                use flate2::{FlushDecompress, Status};
                loop {
                    if written == out.len() && !out.is_empty() {
                        return Ok((written, false));
                    }
                    let consumed = d.total_in() as usize;
                    let before_out = d.total_out();
                    let rest = input.get(consumed..).unwrap_or(&[]);
                    let st = d
                        .decompress(rest, &mut out[written..], FlushDecompress::None)
                        .map_err(|e| decode_error(method, e.to_string()))?;
                    written += (d.total_out() - before_out) as usize;
                    if st == Status::StreamEnd {
                        return Ok((written, true));
                    }
                    let progressed = d.total_out() > before_out || d.total_in() as usize > consumed;
                    if out.is_empty() && !progressed {
                        return Ok((0, false));
                    }
                    if !progressed {
                        return Err(decode_error(
                            method,
                            "stream is truncated (the payload ends before the stream)".into(),
                        ));
                    }
                }
            }
        }
    }

    /// After the declared bytes: the frame or stream must end without producing more.
    fn expect_end(&mut self, declared: u64) -> Result<()> {
        let mut extra = [0u8; 1];
        let (n, _) = self.fill(&mut extra)?;
        if n > 0 {
            return Err(Error::new(ErrorKind::SizeMismatch {
                declared,
                produced: declared + 1,
                more: true,
            }));
        }
        Ok(())
    }
}

/// The magic number that opens a zstd frame (skippable frames have others), little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The largest window, as a power of two, a frame producing `declared` bytes is allowed: what
/// that much output can refer back to, at least zstd's default limit (128 MiB) and at most its
/// largest (2 GiB).
fn window_log_max(declared: u64) -> u32 {
    (64 - declared.max(1).saturating_sub(1).leading_zeros()).clamp(27, 31)
}

/// Checks the header of the zstd frame at the start of `payload` against the declared size,
/// before anything is decoded: a content size it states must equal `declared`
/// ([`ErrorKind::FrameSizeMismatch`]), and the window it asks for must be no larger than
/// [`window_log_max`] allows.
///
/// zstd checks the content size itself only when a frame is decoded in one call, and the
/// window only when it is decoded in steps (which must hold the window); checking both here
/// gives every path (one call, chunks, streaming, counting) the same answer. The window is
/// read from the frame header descriptor and window descriptor (RFC 8878, 3.1.1.1); anything
/// else about the header is left to zstd, which refuses it with its own message.
fn check_frame_header(payload: &[u8], declared: u64) -> Result<()> {
    if !payload.starts_with(&ZSTD_MAGIC) {
        return Ok(());
    }
    if let Ok(Some(frame)) = zstd::zstd_safe::get_frame_content_size(payload) {
        if frame != declared {
            return Err(Error::new(ErrorKind::FrameSizeMismatch { declared, frame }));
        }
    }
    const SINGLE_SEGMENT: u8 = 1 << 5;
    let (Some(&descriptor), Some(&window)) = (payload.get(4), payload.get(5)) else {
        return Ok(());
    };
    if descriptor & SINGLE_SEGMENT == 0 {
        // Window_Log = 10 + exponent; Window_Size = 2^Window_Log + mantissa eighths of it.
        let base = 1u64 << (10 + u32::from(window >> 3));
        let size = base + base / 8 * u64::from(window & 7);
        let limit = 1u64 << window_log_max(declared);
        if size > limit {
            return Err(decode_error(
                Method::Zstd,
                format!(
                    "the frame asks for a window of {size} bytes, more than its declared \
                     {declared} bytes can use (at most {limit})"
                ),
            ));
        }
    }
    Ok(())
}

fn decode_error(method: Method, message: String) -> Error {
    Error::new(ErrorKind::Decompress {
        method: method.name(),
        message,
    })
}

fn zstd_error(code: usize) -> Error {
    decode_error(
        Method::Zstd,
        zstd::zstd_safe::get_error_name(code).to_owned(),
    )
}

/// Bytes decoded per step; each finished step is handed on (to the hash) while the next is
/// decoded.
const CHUNK: usize = 4 << 20;

/// Output up to this size is allocated at once (zeroed pages come from the system lazily, so
/// only the bytes actually produced take memory); a larger declared size grows with the data.
const PRESIZE_LIMIT: usize = 1 << 30;

/// Output more than this many times the compressed payload grows with the data too (real
/// bundles compress 5-100 fold).
const PRESIZE_RATIO: usize = 1024;

/// A buffer that grows with the data starts at this many times the payload, within
/// [`GROW_START_MIN`]..[`GROW_START_MAX`], and doubles: a header that lies about the size of a
/// small payload costs a few KiB, not the declared size.
const GROW_START_RATIO: usize = 16;
const GROW_START_MIN: usize = 64 << 10;
const GROW_START_MAX: usize = 64 << 20;

/// Decodes exactly `target` bytes (the whole output when `target` is the declared size, a
/// prefix otherwise), handing each finished chunk to `on_chunk` in order. Ending early is an
/// error; for the whole output, so is producing more than declared.
fn decode<'o>(
    dec: &mut Decoder<'_>,
    declared: u64,
    target: usize,
    out: &'o mut Vec<u8>,
    mut on_chunk: impl FnMut(&'o [u8]),
) -> Result<()> {
    let whole = target as u64 == declared;
    let mut finished = false;
    if target <= PRESIZE_LIMIT.min(dec.input_len().saturating_mul(PRESIZE_RATIO)) {
        *out = vec![0u8; target];
        let mut rest: &'o mut [u8] = &mut out[..];
        while !rest.is_empty() {
            if finished {
                return Err(Error::new(ErrorKind::SizeMismatch {
                    declared,
                    produced: (target - rest.len()) as u64,
                    more: false,
                }));
            }
            let step = CHUNK.min(rest.len());
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(step);
            let (n, end) = dec.fill(chunk)?;
            if n < chunk.len() {
                let produced = (target - tail.len() - chunk.len() + n) as u64;
                return Err(Error::new(ErrorKind::SizeMismatch {
                    declared,
                    produced,
                    more: false,
                }));
            }
            finished = end;
            on_chunk(chunk);
            rest = tail;
        }
    } else {
        // Grow with the data produced, never from the declared size alone: start from what
        // the payload could plausibly hold and double.
        let start = dec
            .input_len()
            .saturating_mul(GROW_START_RATIO)
            .clamp(GROW_START_MIN, GROW_START_MAX);
        let mut len = 0usize;
        while len < target {
            if finished {
                return Err(Error::new(ErrorKind::SizeMismatch {
                    declared,
                    produced: len as u64,
                    more: false,
                }));
            }
            let next = target.min(if len == 0 {
                start
            } else {
                len.saturating_mul(2)
            });
            out.resize(next, 0);
            let (n, end) = dec.fill(&mut out[len..next])?;
            len += n;
            finished = end;
            if len < next {
                out.truncate(len);
                return Err(Error::new(ErrorKind::SizeMismatch {
                    declared,
                    produced: len as u64,
                    more: false,
                }));
            }
        }
        let out: &'o [u8] = out;
        for c in out.chunks(CHUNK) {
            on_chunk(c);
        }
    }
    if whole && !finished {
        dec.expect_end(declared)?;
    }
    Ok(())
}

fn declared_len(declared: u64) -> Result<usize> {
    usize::try_from(declared).map_err(|_| Error::new(ErrorKind::Overflow))
}

/// Decompresses the single zstd frame or zlib stream at the start of `payload`, which must
/// produce exactly `declared` bytes. Returns the data and the number of payload bytes the frame
/// or stream occupies. When `stop_after` is given, stops once that many bytes are out (a
/// prefix; no exactness check).
///
/// Output up to 1 GiB (and 1024 times the payload) is one allocation of the declared size,
/// whose pages the system provides as the data is written; a larger declared size grows with
/// the data actually produced. The whole of a zstd frame within those bounds is decoded in one
/// call into that allocation, which zstd uses as its window: memory is the output alone.
pub fn decompress(
    method: Method,
    payload: &[u8],
    declared: u64,
    stop_after: Option<usize>,
) -> Result<(Vec<u8>, u64)> {
    let declared_usize = declared_len(declared)?;
    let target = stop_after.map_or(declared_usize, |s| s.min(declared_usize));
    if target == declared_usize {
        if let Some(done) = zstd_one_shot(method, payload, declared) {
            return Ok(done);
        }
    }
    let mut dec = Decoder::new(method, payload, declared)?;
    let mut out = Vec::new();
    decode(&mut dec, declared, target, &mut out, |_| {})?;
    Ok((out, dec.consumed()))
}

/// Like [`decompress`] of the whole output, also returning its [`truncated_md5`].
///
/// A zstd frame (within the presize bounds) is decoded in one call straight into the output,
/// which zstd then uses as its window: memory is the output alone, not a window buffer of the
/// same size beside it. It is hashed afterwards. Anything else (zlib, a larger declared size,
/// a frame that does not decode to exactly the declared size, which then gives the exact
/// error) is decoded chunk by chunk, each finished chunk hashed on a second thread while the
/// next is decoded. To overlap hashing with decoding without holding the output twice, stream
/// it with [`decompress_to`].
pub fn decompress_hashed(
    method: Method,
    payload: &[u8],
    declared: u64,
) -> Result<(Vec<u8>, u64, u64)> {
    use crate::hash::Md5;
    let target = declared_len(declared)?;
    if let Some(done) = decompress_hashed_compact(method, payload, declared) {
        return Ok(done);
    }
    let mut dec = Decoder::new(method, payload, declared)?;
    let mut out = Vec::new();
    // Small, or called on a pool of one thread (a census given one core): hashed after.
    if target < 2 * CHUNK || rayon::current_num_threads() <= 1 {
        decode(&mut dec, declared, target, &mut out, |_| {})?;
        let hash = truncated_md5(&out);
        return Ok((out, dec.consumed(), hash));
    }
    let digest = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<&[u8]>(4);
        let hasher = s.spawn(move || {
            let mut m = Md5::new();
            for c in rx {
                m.update(c);
            }
            m.finalize()
        });
        let decoded = decode(&mut dec, declared, target, &mut out, |c| {
            // The receiver lives until the sender is dropped.
            let _ = tx.send(c);
        });
        drop(tx);
        let digest = hasher
            .join()
            .map_err(|_| Error::new(ErrorKind::Invalid("the hashing thread failed".into())))?;
        decoded.map(|()| digest)
    })?;
    Ok((out, dec.consumed(), crate::hash::prefix(&digest)))
}

/// Like [`decompress_hashed`] with the output decoded straight into its final buffer: a zstd
/// frame is decoded in one call (zstd then uses the output as its window, so memory is the
/// output alone, not a window buffer beside it) and hashed afterwards on the same thread.
/// `None` when that does not apply: see [`zstd_one_shot`].
fn decompress_hashed_compact(
    method: Method,
    payload: &[u8],
    declared: u64,
) -> Option<(Vec<u8>, u64, u64)> {
    let (out, used) = zstd_one_shot(method, payload, declared)?;
    let hash = truncated_md5(&out);
    Some((out, used, hash))
}

/// A zstd frame decoded in one call into a buffer of exactly the declared size, with no
/// window buffer beside it; returns the output and the bytes the frame occupies. `None` for
/// zlib, for sizes past the presize bounds, and for a frame that does not decode to exactly
/// the declared size: the general, chunked decoder then runs and gives the exact error.
fn zstd_one_shot(method: Method, payload: &[u8], declared: u64) -> Option<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    let used = zstd_one_shot_into(method, payload, declared, &mut out)?;
    Some((out, used))
}

/// [`zstd_one_shot`] into `out` (cleared; its allocation reused when it is large enough).
fn zstd_one_shot_into(
    method: Method,
    payload: &[u8],
    declared: u64,
    out: &mut Vec<u8>,
) -> Option<u64> {
    let target = usize::try_from(declared).ok()?;
    // An empty output is left to the streaming decoder: zstd's one-shot decoder handed no
    // destination at all (a zero-capacity buffer) reads and writes through it on some frames.
    if method != Method::Zstd
        || target == 0
        || target > PRESIZE_LIMIT.min(payload.len().saturating_mul(PRESIZE_RATIO))
    {
        return None;
    }
    // A header the other paths refuse is refused here too (by them, with the exact error).
    check_frame_header(payload, declared).ok()?;
    let frame = usize::try_from(zstd_frame_len(payload).ok()?).ok()?;
    let mut dctx = zstd::zstd_safe::DCtx::try_create()?;
    out.clear();
    if out.capacity() < target {
        *out = Vec::with_capacity(target);
    }
    match dctx.decompress(out, payload.get(..frame)?) {
        Ok(n) if n == target && out.len() == target => Some(frame as u64),
        _ => None,
    }
}

/// Like [`decompress`] of the whole output, into `out` (cleared first; its allocation is reused
/// when it is large enough). Returns the payload bytes the frame or stream occupies. For a
/// caller decoding many bundles in turn: the memory it writes is then fresh once, not once per
/// bundle (page faults and zeroing by the system cost about a tenth of the decoding).
pub fn decompress_into(
    method: Method,
    payload: &[u8],
    declared: u64,
    out: &mut Vec<u8>,
) -> Result<u64> {
    if let Some(used) = zstd_one_shot_into(method, payload, declared, out) {
        return Ok(used);
    }
    let (data, used) = decompress(method, payload, declared, None)?;
    *out = data;
    Ok(used)
}

/// Decodes the single zstd frame or zlib stream at the start of `payload`, which must produce
/// exactly `declared` bytes, without keeping the output: returns the number of payload bytes
/// the frame or stream occupies. Memory stays at one small scratch buffer (plus zstd's window)
/// whatever the header declares; a header that lies is refused after decoding only what the
/// payload holds.
pub fn decoded_extent(method: Method, payload: &[u8], declared: u64) -> Result<u64> {
    let mut dec = Decoder::new(method, payload, declared)?;
    let mut scratch = vec![0u8; SCRATCH.min(declared_len(declared)?).max(1)];
    let mut produced = 0u64;
    while produced < declared {
        let want = usize::try_from(declared - produced)
            .unwrap_or(usize::MAX)
            .min(scratch.len());
        let (n, end) = dec.fill(&mut scratch[..want])?;
        produced += n as u64;
        if n < want || (end && produced < declared) {
            return Err(Error::new(ErrorKind::SizeMismatch {
                declared,
                produced,
                more: false,
            }));
        }
        if end {
            return Ok(dec.consumed());
        }
    }
    dec.expect_end(declared)?;
    Ok(dec.consumed())
}

/// Scratch buffer of [`decoded_extent`].
const SCRATCH: usize = 64 << 10;

/// Bytes [`decompress_to`] decodes per step and hands to the sink and the hash: small enough
/// that the sink (a `write` into the page cache) copies them while they are still in the
/// decoding core's cache. With 4 MiB steps that copy ran at memory speed and cost as much CPU
/// as decoding.
const STREAM_CHUNK: usize = 256 << 10;

/// Buffers [`decompress_to`] rotates between the decoder and the hashing thread (8 MiB in
/// flight: the hash may fall behind by that much before the decoder waits).
const STREAM_BUFFERS: usize = 32;

/// Output from this size up is hashed on a second thread by [`decompress_to`].
const STREAM_THREAD_MIN: u64 = 8 << 20;

/// Decodes the single zstd frame or zlib stream at the start of `payload`, which must produce
/// exactly `declared` bytes, handing the output to `sink` in order, chunk by chunk, as it is
/// decoded; returns the payload bytes the frame or stream occupies and the [`truncated_md5`]
/// of the output.
///
/// Nothing of the output is kept: memory is zstd's window (at most the output size) plus
/// 8 MiB of 256 KiB chunks, whatever the header declares. Each chunk is hashed on a second thread
/// while the next is decoded and handed on, so a large bundle costs about the longer of the
/// two, not their sum. The sink may have received bytes when an error is returned (a size or
/// decoding error found late): write to a temporary file and keep it only on success.
pub fn decompress_to(
    method: Method,
    payload: &[u8],
    declared: u64,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(u64, u64)> {
    use crate::hash::Md5;
    let mut dec = Decoder::new(method, payload, declared)?;
    let chunk_len = STREAM_CHUNK.min(declared_len(declared)?);
    let out_err = |e: std::io::Error| {
        Error::new(ErrorKind::Output {
            message: e.to_string(),
        })
    };
    // One chunk of output, checked against the declared size; whether more are to come. At
    // the end, the frame or stream must end there too.
    let mut produced = 0u64;
    let mut next = |dec: &mut Decoder<'_>, buf: &mut Vec<u8>| -> Result<bool> {
        let want = usize::try_from(declared - produced)
            .unwrap_or(usize::MAX)
            .min(chunk_len);
        buf.resize(want, 0);
        // Nothing to decode for a declared size of 0: go straight to checking that the frame
        // ends, as the in-memory path does (zstd answers an empty output buffer differently).
        let (n, end) = if want == 0 {
            (0, false)
        } else {
            dec.fill(buf)?
        };
        produced += n as u64;
        if n < want || (end && produced < declared) {
            return Err(Error::new(ErrorKind::SizeMismatch {
                declared,
                produced,
                more: false,
            }));
        }
        if produced < declared {
            return Ok(true);
        }
        if !end {
            dec.expect_end(declared)?;
        }
        Ok(false)
    };
    if declared < STREAM_THREAD_MIN || rayon::current_num_threads() <= 1 {
        let mut m = Md5::new();
        let mut buf = Vec::new();
        let mut more = true;
        while more {
            more = next(&mut dec, &mut buf)?;
            sink(&buf).map_err(out_err)?;
            m.update(&buf);
        }
        return Ok((dec.consumed(), crate::hash::prefix(&m.finalize())));
    }
    let digest = std::thread::scope(|s| -> Result<_> {
        use std::sync::mpsc::sync_channel;
        let (to_hash, hash_rx) = sync_channel::<Vec<u8>>(STREAM_BUFFERS);
        let (back_tx, back_rx) = sync_channel::<Vec<u8>>(STREAM_BUFFERS);
        for _ in 0..STREAM_BUFFERS {
            let _ = back_tx.send(Vec::with_capacity(chunk_len));
        }
        let hasher = s.spawn(move || {
            let mut m = Md5::new();
            for buf in hash_rx {
                m.update(&buf);
                // The decoder may have stopped early; a buffer it no longer wants is dropped.
                let _ = back_tx.send(buf);
            }
            m.finalize()
        });
        let decoded = (|| -> Result<()> {
            let mut more = true;
            while more {
                let Ok(mut buf) = back_rx.recv() else {
                    return Err(Error::new(ErrorKind::Invalid(
                        "the hashing thread failed".into(),
                    )));
                };
                more = next(&mut dec, &mut buf)?;
                sink(&buf).map_err(out_err)?;
                if to_hash.send(buf).is_err() {
                    return Err(Error::new(ErrorKind::Invalid(
                        "the hashing thread failed".into(),
                    )));
                }
            }
            Ok(())
        })();
        drop(to_hash);
        let digest = hasher
            .join()
            .map_err(|_| Error::new(ErrorKind::Invalid("the hashing thread failed".into())))?;
        decoded.map(|()| digest)
    })?;
    Ok((dec.consumed(), crate::hash::prefix(&digest)))
}

/// Version of the zstd library linked in, as `major * 10000 + minor * 100 + patch` (10507 for
/// the copy bundled with the `zstd` crate). clang's `--offload-compress` output is reproduced
/// byte for byte only with the same zstd release clang links (Debian 12's clang 19 links
/// 1.5.4 = 10504); build with `ZSTD_SYS_USE_PKG_CONFIG=1` (and `libzstd-dev`) to link the
/// system library. Other releases give a different but equally valid frame.
pub fn zstd_version() -> u32 {
    zstd::zstd_safe::version_number()
}

/// The zstd release Debian 12's clang 19 links, whose output gfxkit then reproduces exactly.
pub const CLANG19_DEBIAN_ZSTD_VERSION: u32 = 10504;

/// Bytes the zstd frame at the start of `payload` occupies, read from its block headers
/// without decompressing.
pub fn zstd_frame_len(payload: &[u8]) -> Result<u64> {
    zstd::zstd_safe::find_frame_compressed_size(payload)
        .map(|n| n as u64)
        .map_err(|c| {
            Error::new(ErrorKind::Decompress {
                method: "zstd",
                message: zstd::zstd_safe::get_error_name(c).to_owned(),
            })
        })
}

/// The hash stored in CCOB headers: the first 8 bytes of the MD5 digest, little-endian.
pub fn truncated_md5(data: &[u8]) -> u64 {
    crate::hash::truncated_one(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_whole_and_prefix() {
        let data = vec![5u8; 3 << 20];
        for m in [Method::Zstd, Method::Zlib] {
            let z = compress(m, m.default_level(), 0, &data).unwrap();
            let (out, used) = decompress(m, &z, data.len() as u64, None).unwrap();
            assert_eq!(out, data);
            assert_eq!(used, z.len() as u64);
            let (p, _) = decompress(m, &z, data.len() as u64, Some(100)).unwrap();
            assert_eq!(p, &data[..100]);
        }
    }

    #[test]
    fn decoding_into_a_reused_buffer_gives_each_output_exactly() {
        let big: Vec<u8> = (0..3 * CHUNK).map(|i| (i % 249) as u8).collect();
        let small = b"a few bytes".to_vec();
        let mut buf = Vec::new();
        for m in [Method::Zstd, Method::Zlib] {
            for data in [&big, &small, &big] {
                let z = compress(m, m.default_level(), 0, data).unwrap();
                let used = decompress_into(m, &z, data.len() as u64, &mut buf).unwrap();
                assert_eq!((&buf, used), (data, z.len() as u64), "{m}");
            }
            let z = compress(m, m.default_level(), 0, &small).unwrap();
            for declared in [small.len() - 1, small.len() + 1] {
                assert!(
                    decompress_into(m, &z, declared as u64, &mut buf).is_err(),
                    "{m}"
                );
            }
        }
    }

    #[test]
    fn hashed_while_decoding_across_chunks() {
        // Sizes around the chunk size and the threaded threshold, ending mid-chunk and on a
        // chunk boundary.
        for len in [0usize, 1, CHUNK - 1, 2 * CHUNK, 3 * CHUNK + 17] {
            let data: Vec<u8> = (0..len)
                .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
                .collect();
            for m in [Method::Zstd, Method::Zlib] {
                let z = compress(m, 1.max(m.level_range().0), 0, &data).unwrap();
                let (out, used, hash) = decompress_hashed(m, &z, len as u64).unwrap();
                assert_eq!(out, data, "{m} {len}");
                assert_eq!(used, z.len() as u64);
                assert_eq!(hash, truncated_md5(&data), "{m} {len}");
            }
        }
    }

    #[test]
    fn output_past_the_presize_ratio_grows_with_the_data() {
        // Zeros compress far beyond 1024 fold: the growth path decodes and hashes them.
        let data = vec![0u8; 3 * CHUNK + 5];
        for m in [Method::Zstd, Method::Zlib] {
            let z = compress(m, m.default_level(), 0, &data).unwrap();
            assert!(z.len() * PRESIZE_RATIO < data.len(), "{m}: {}", z.len());
            let (out, used, hash) = decompress_hashed(m, &z, data.len() as u64).unwrap();
            assert_eq!(out, data);
            assert_eq!(used, z.len() as u64);
            assert_eq!(hash, truncated_md5(&data));
            for declared in [data.len() - 1, data.len() + 1] {
                assert!(decompress_hashed(m, &z, declared as u64).is_err(), "{m}");
            }
        }
    }

    /// Streams `z` through [`decompress_to`], collecting the chunks.
    fn streamed(m: Method, z: &[u8], declared: u64) -> Result<(Vec<u8>, u64, u64)> {
        let mut out = Vec::new();
        let mut chunks = 0usize;
        let (used, hash) = decompress_to(m, z, declared, &mut |c| {
            assert!(c.len() <= STREAM_CHUNK);
            chunks += 1;
            out.extend_from_slice(c);
            Ok(())
        })?;
        assert!(out.len() <= (chunks * STREAM_CHUNK).max(1));
        Ok((out, used, hash))
    }

    /// On a rayon pool of one thread (a census given one core) the hash is taken in place,
    /// with the answers of the hashing thread's: whole, short, and declared too long.
    #[test]
    fn on_a_pool_of_one_thread_the_stream_is_hashed_in_place_alike() {
        let len = STREAM_THREAD_MIN as usize + 3 * STREAM_CHUNK + 5;
        let data: Vec<u8> = (0..len)
            .map(|i| (i % 241) as u8 ^ (i >> 15) as u8)
            .collect();
        let z = compress(Method::Zstd, 1, 0, &data).unwrap();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for declared in [len as u64, len as u64 - 1, len as u64 + 1] {
            let here = streamed(Method::Zstd, &z, declared).map_err(|e| e.to_string());
            let alone = one
                .install(|| streamed(Method::Zstd, &z, declared))
                .map_err(|e| e.to_string());
            assert_eq!(alone, here, "declared {declared}");
        }
        let (out, _, hash) = one
            .install(|| streamed(Method::Zstd, &z, len as u64))
            .unwrap();
        assert_eq!((out, hash), (data.clone(), truncated_md5(&data)));
    }

    #[test]
    fn streamed_output_and_hash_equal_the_in_memory_ones() {
        for len in [0usize, 1, CHUNK, 2 * CHUNK - 1, 2 * CHUNK, 5 * CHUNK + 3] {
            let data: Vec<u8> = (0..len)
                .map(|i| (i % 253) as u8 ^ (i >> 13) as u8)
                .collect();
            for m in [Method::Zstd, Method::Zlib] {
                let z = compress(m, 1, 0, &data).unwrap();
                let (out, used, hash) = streamed(m, &z, len as u64).unwrap();
                assert_eq!(out, data, "{m} {len}");
                assert_eq!(used, z.len() as u64);
                assert_eq!(hash, truncated_md5(&data));
                assert_eq!(decoded_extent(m, &z, len as u64).unwrap(), z.len() as u64);
                // Trailing bytes after the frame are not part of it.
                let mut padded = z.clone();
                padded.extend_from_slice(&z);
                assert_eq!(streamed(m, &padded, len as u64).unwrap().1, z.len() as u64);
                assert_eq!(
                    decoded_extent(m, &padded, len as u64).unwrap(),
                    z.len() as u64
                );
            }
        }
    }

    #[test]
    fn streamed_and_counted_refuse_wrong_sizes_and_truncation() {
        let len = 2 * CHUNK + 100;
        let data: Vec<u8> = (0..len).map(|i| (i * 13 % 256) as u8).collect();
        // A zstd frame whose header states its size, one whose header does not (the size is
        // then found by decoding), and a zlib stream.
        let sized = compress(Method::Zstd, 3, 0, &data).unwrap();
        let unsized_frame = zstd_without_content_size(&data);
        assert!(matches!(
            zstd::zstd_safe::get_frame_content_size(&unsized_frame),
            Ok(None)
        ));
        let zlib = compress(Method::Zlib, Method::Zlib.default_level(), 0, &data).unwrap();
        for (m, z) in [
            (Method::Zstd, &sized),
            (Method::Zstd, &unsized_frame),
            (Method::Zlib, &zlib),
        ] {
            let header_size = zstd::zstd_safe::get_frame_content_size(z).ok().flatten();
            for (declared, more) in [(len - 1, true), (len + 1, false), (len << 8, false)] {
                let declared = declared as u64;
                for e in [
                    streamed(m, z, declared).unwrap_err(),
                    decoded_extent(m, z, declared).unwrap_err(),
                    decompress(m, z, declared, None).unwrap_err(),
                    decompress_hashed(m, z, declared).unwrap_err(),
                ] {
                    match header_size {
                        Some(frame) => assert_eq!(
                            e.kind,
                            ErrorKind::FrameSizeMismatch { declared, frame },
                            "{m} {declared}"
                        ),
                        None => assert!(
                            matches!(e.kind, ErrorKind::SizeMismatch { more: x, .. } if x == more),
                            "{m} {declared}: {e}"
                        ),
                    }
                }
            }
            let z = z.as_slice();
            let short = &z[..z.len() / 2];
            assert!(matches!(
                streamed(m, short, len as u64).unwrap_err().kind,
                ErrorKind::Decompress { .. }
            ));
            assert!(matches!(
                decoded_extent(m, short, len as u64).unwrap_err().kind,
                ErrorKind::Decompress { .. }
            ));
        }
    }

    /// `data` as one zstd frame whose header leaves out the content size.
    fn zstd_without_content_size(data: &[u8]) -> Vec<u8> {
        use zstd::zstd_safe::{CCtx, CParameter};
        let mut c = CCtx::create();
        c.set_parameter(CParameter::ContentSizeFlag(false)).unwrap();
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()));
        c.compress2(&mut out, data).unwrap();
        out
    }

    #[test]
    fn a_frame_header_stating_another_size_is_refused_before_decoding() {
        // The regression input of `fuzz/regressions/ccob/`: a frame declaring 1 byte that holds
        // one empty raw block, under a declared size of 0. Read in steps, the frame ends where
        // its blocks end; in one call, zstd refuses it. Every path must refuse it the same way.
        let frame = [0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x01, 0x01, 0x00, 0x00];
        let want = ErrorKind::FrameSizeMismatch {
            declared: 0,
            frame: 1,
        };
        assert_eq!(streamed(Method::Zstd, &frame, 0).unwrap_err().kind, want);
        assert_eq!(
            decoded_extent(Method::Zstd, &frame, 0).unwrap_err().kind,
            want
        );
        assert_eq!(
            decompress(Method::Zstd, &frame, 0, None).unwrap_err().kind,
            want
        );
        assert_eq!(
            decompress_hashed(Method::Zstd, &frame, 0).unwrap_err().kind,
            want
        );
        // Declaring the 1 byte it states, it is short (it holds none).
        assert!(matches!(
            decompress(Method::Zstd, &frame, 1, None).unwrap_err().kind,
            ErrorKind::SizeMismatch { .. } | ErrorKind::Decompress { .. }
        ));
    }

    #[test]
    fn a_window_larger_than_the_declared_size_can_use_is_refused_on_every_path() {
        // Frames without a content size: 0x00 frame header descriptor, then the window
        // descriptor, then one empty raw block (last).
        let frame = |window: u8| [0x28, 0xb5, 0x2f, 0xfd, 0x00, window, 0x01, 0x00, 0x00];
        // 2^27 (exponent 17) is allowed whatever the declared size, 2^27 + 2^24 is not for 0
        // bytes, but is for 200 MiB (a 2^28 limit).
        for (window, declared, ok) in [
            (17u8 << 3, 0u64, true),
            ((17 << 3) | 1, 0, false),
            (21 << 3, 0, false),
            ((17 << 3) | 1, 200 << 20, true),
        ] {
            let f = frame(window);
            let results = [
                decompress(Method::Zstd, &f, declared, None).map(|_| ()),
                decompress_hashed(Method::Zstd, &f, declared).map(|_| ()),
                streamed(Method::Zstd, &f, declared).map(|_| ()),
                decoded_extent(Method::Zstd, &f, declared).map(|_| ()),
            ];
            for r in results {
                match r {
                    // The frame is empty: a declared size above 0 is then short.
                    Err(e) if ok => assert!(
                        matches!(e.kind, ErrorKind::SizeMismatch { produced: 0, .. }),
                        "{window:#x} {declared}: {e}"
                    ),
                    Ok(()) => assert!(ok && declared == 0, "{window:#x} {declared}"),
                    Err(e) => assert!(
                        e.to_string().contains("asks for a window of"),
                        "{window:#x} {declared}: {e}"
                    ),
                }
            }
        }
    }

    #[test]
    fn a_failing_sink_stops_decoding() {
        let data = vec![9u8; 3 * CHUNK];
        let z = compress(Method::Zstd, 3, 0, &data).unwrap();
        let mut calls = 0;
        let e = decompress_to(Method::Zstd, &z, data.len() as u64, &mut |_| {
            calls += 1;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(calls, 1);
        assert!(e.to_string().contains("disk full"), "{e}");
    }

    #[test]
    fn a_lying_size_grows_from_the_payload_not_the_header() {
        // 4 GiB declared for a few bytes: refused after decoding what is there, with a
        // buffer of the growth start (64 KiB), never one of the declared size.
        let z = compress(Method::Zlib, 6, 0, b"tiny").unwrap();
        for declared in [u32::MAX as u64, 4 << 30, 1 << 40] {
            let e = decompress(Method::Zlib, &z, declared, None).unwrap_err();
            assert_eq!(
                e.kind,
                ErrorKind::SizeMismatch {
                    declared,
                    produced: 4,
                    more: false
                }
            );
        }
        assert_eq!(
            z.len()
                .saturating_mul(GROW_START_RATIO)
                .clamp(GROW_START_MIN, GROW_START_MAX),
            GROW_START_MIN
        );
    }

    #[test]
    fn multi_threaded_zstd_is_no_larger_than_one_thread_and_the_same_for_any_worker_count() {
        // Two halves far apart that repeat each other: long-distance matching across the
        // job boundary of the worker split.
        let mut data: Vec<u8> = (0..24usize << 20)
            .map(|i| ((i * 2_654_435_761) >> 13) as u8)
            .collect();
        let half = data[..12 << 20].to_vec();
        data[12 << 20..].copy_from_slice(&half);
        let one = compress(Method::Zstd, 3, 0, &data).unwrap();
        let two = compress(Method::Zstd, 3, 2, &data).unwrap();
        let three = compress(Method::Zstd, 3, 3, &data).unwrap();
        assert_eq!(two, three);
        assert!(
            two.len() <= one.len() + one.len() / 100,
            "{} vs {}",
            two.len(),
            one.len()
        );
        assert_eq!(
            decompress(Method::Zstd, &two, data.len() as u64, None)
                .unwrap()
                .0,
            data
        );
    }

    #[test]
    fn on_a_rayon_worker_the_compact_path_gives_the_same_answers() {
        let len = 3 * CHUNK + 11;
        let data: Vec<u8> = (0..len)
            .map(|i| (i * 31 % 256) as u8 ^ (i >> 14) as u8)
            .collect();
        let z = compress(Method::Zstd, 3, 0, &data).unwrap();
        let mut padded = z.clone();
        padded.extend_from_slice(b"trailing bytes");
        let here = |p: &[u8], d: u64| decompress_hashed(Method::Zstd, p, d);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for (p, d) in [
            (&z[..], len as u64),
            (&padded[..], len as u64),
            (&z[..], len as u64 - 1),
            (&z[..], len as u64 + 1),
            (&z[..z.len() / 2], len as u64),
        ] {
            assert!(decompress_hashed_compact(Method::Zstd, p, d).is_none() || d == len as u64);
            let worker = pool.install(|| here(p, d));
            assert_eq!(worker, here(p, d), "declared {d}");
        }
        assert!(decompress_hashed_compact(Method::Zstd, &padded, len as u64).is_some());
        let (out, used, hash) = pool.install(|| here(&padded, len as u64)).unwrap();
        assert_eq!(
            (out, used, hash),
            (data.clone(), z.len() as u64, truncated_md5(&data))
        );
    }

    #[test]
    fn wrong_declared_sizes_and_truncation_are_errors() {
        let len = 2 * CHUNK;
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
        for m in [Method::Zstd, Method::Zlib] {
            // A zstd frame without its size in the header: the size is checked by decoding
            // (a stated size is checked before, by the test above).
            let z = match m {
                Method::Zstd => zstd_without_content_size(&data),
                Method::Zlib => compress(m, m.default_level(), 0, &data).unwrap(),
            };
            for (declared, more) in [(len - 1, true), (len + 1, false), (len + CHUNK, false)] {
                let e = decompress_hashed(m, &z, declared as u64).unwrap_err();
                assert!(
                    matches!(e.kind, ErrorKind::SizeMismatch { more: x, .. } if x == more),
                    "{m} {declared}: {e}"
                );
            }
            let e = decompress_hashed(m, &z[..z.len() / 2], len as u64).unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Decompress { .. }), "{m}: {e}");
        }
    }
}
