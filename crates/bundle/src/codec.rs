//! The two codecs of compressed bundles, zlib and zstd, with bounded decompression.
//!
//! Decompression never trusts a size read from the file for allocation: the output buffer grows
//! with the bytes the codec actually produces, up to the declared size, and producing more (or
//! fewer) than declared is an error.

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

/// zstd worker threads to compress with on this machine: one per core (at least 1). zstd's
/// output is the same for any number of workers from one up, so it does not depend on the
/// machine; 0 workers (the calling thread, as clang does) gives different bytes.
pub fn all_cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1)
}

/// Growth step for output buffers: at least 1 MiB, doubling, never past `declared`.
fn grow(out: &mut Vec<u8>, declared: usize) {
    let have = out.len();
    let step = have.max(1 << 20).min(declared.saturating_sub(have).max(1));
    out.reserve_exact(step);
}

/// Decompresses the single zstd frame or zlib stream at the start of `payload`, which must
/// produce exactly `declared` bytes. Returns the data and the number of payload bytes the frame
/// or stream occupies. When `stop_after` is given, stops once that many bytes are out (a
/// prefix; no exactness check).
pub fn decompress(
    method: Method,
    payload: &[u8],
    declared: u64,
    stop_after: Option<usize>,
) -> Result<(Vec<u8>, u64)> {
    let declared_usize = usize::try_from(declared).map_err(|_| Error::new(ErrorKind::Overflow))?;
    let target = stop_after.map_or(declared_usize, |s| s.min(declared_usize));
    let fail = |message: String| {
        Error::new(ErrorKind::Decompress {
            method: method.name(),
            message,
        })
    };
    // Start with room for a plausible expansion of the payload (bounded by the payload's own
    // length, not by the untrusted declared size), then grow with the data produced.
    let plausible = payload.len().saturating_mul(16).max(1 << 24);
    let mut out: Vec<u8> = Vec::with_capacity(target.min(plausible));
    match method {
        Method::Zstd => {
            use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer};
            let mut dctx =
                DCtx::try_create().ok_or_else(|| fail("cannot create context".into()))?;
            let wlog = (64 - declared.max(1).saturating_sub(1).leading_zeros()).clamp(27, 31);
            dctx.set_parameter(DParameter::WindowLogMax(wlog))
                .map_err(|c| fail(zstd::zstd_safe::get_error_name(c).to_owned()))?;
            let mut input = InBuffer::around(payload);
            let mut finished = false;
            let mut extra = [0u8; 1];
            loop {
                if out.len() >= target {
                    if stop_after.is_some() && target < declared_usize {
                        out.truncate(target);
                        break;
                    }
                    if out.len() > declared_usize {
                        return Err(Error::new(ErrorKind::SizeMismatch {
                            declared,
                            produced: out.len() as u64,
                            more: true,
                        }));
                    }
                    if finished {
                        break;
                    }
                    // All declared bytes are out; the frame must end without producing more.
                    let mut ob = OutBuffer::around(&mut extra[..]);
                    let r = dctx
                        .decompress_stream(&mut ob, &mut input)
                        .map_err(|c| fail(zstd::zstd_safe::get_error_name(c).to_owned()))?;
                    if ob.pos() > 0 {
                        return Err(Error::new(ErrorKind::SizeMismatch {
                            declared,
                            produced: declared + 1,
                            more: true,
                        }));
                    }
                    if r == 0 {
                        break;
                    }
                    if input.pos() == payload.len() {
                        return Err(fail("frame is truncated".into()));
                    }
                    continue;
                }
                if out.len() == out.capacity() {
                    grow(&mut out, target);
                }
                let before_in = input.pos();
                let len = out.len();
                let mut ob = OutBuffer::around_pos(&mut out, len);
                let r = dctx
                    .decompress_stream(&mut ob, &mut input)
                    .map_err(|c| fail(zstd::zstd_safe::get_error_name(c).to_owned()))?;
                let produced = ob.pos() - len;
                if r == 0 {
                    finished = true;
                    if out.len() < target {
                        return Err(Error::new(ErrorKind::SizeMismatch {
                            declared,
                            produced: out.len() as u64,
                            more: false,
                        }));
                    }
                }
                if !finished
                    && produced == 0
                    && input.pos() == before_in
                    && input.pos() == payload.len()
                {
                    return Err(fail(format!(
                        "frame is truncated after {} bytes of output",
                        out.len()
                    )));
                }
            }
            Ok((out, input.pos() as u64))
        }
        Method::Zlib => {
            use flate2::{Decompress, FlushDecompress, Status};
            let mut d = Decompress::new(true);
            let mut extra = [0u8; 1];
            loop {
                let consumed = d.total_in() as usize;
                let rest = payload.get(consumed..).unwrap_or(&[]);
                if out.len() >= target {
                    if stop_after.is_some() && target < declared_usize {
                        out.truncate(target);
                        break;
                    }
                    if out.len() > declared_usize {
                        return Err(Error::new(ErrorKind::SizeMismatch {
                            declared,
                            produced: out.len() as u64,
                            more: true,
                        }));
                    }
                    let before = d.total_out();
                    let st = d
                        .decompress(rest, &mut extra, FlushDecompress::Finish)
                        .map_err(|e| fail(e.to_string()))?;
                    if d.total_out() > before {
                        return Err(Error::new(ErrorKind::SizeMismatch {
                            declared,
                            produced: declared + 1,
                            more: true,
                        }));
                    }
                    match st {
                        Status::StreamEnd => break,
                        _ if d.total_in() as usize == consumed => {
                            return Err(fail("stream is truncated".into()))
                        }
                        _ => continue,
                    }
                }
                if out.len() == out.capacity() {
                    grow(&mut out, target);
                }
                let before_out = out.len();
                let st = d
                    .decompress_vec(rest, &mut out, FlushDecompress::None)
                    .map_err(|e| fail(e.to_string()))?;
                match st {
                    Status::StreamEnd => {
                        if out.len() < target {
                            return Err(Error::new(ErrorKind::SizeMismatch {
                                declared,
                                produced: out.len() as u64,
                                more: false,
                            }));
                        }
                        if out.len() >= declared_usize {
                            break;
                        }
                    }
                    _ => {
                        if out.len() == before_out && d.total_in() as usize == consumed {
                            // No progress with room to write: the input is exhausted.
                            if out.len() < out.capacity() {
                                return Err(fail(format!(
                                    "stream is truncated after {} bytes of output",
                                    out.len()
                                )));
                            }
                        }
                    }
                }
            }
            Ok((out, d.total_in()))
        }
    }
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
    use md5::{Digest, Md5};
    let d = Md5::digest(data);
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_never_passes_the_declared_size() {
        let mut v = vec![0u8; 10];
        grow(&mut v, 12);
        assert!(v.capacity() >= 11);
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
}
