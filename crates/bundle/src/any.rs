//! Either kind of bundle, and bundles laid back to back (a dumped `.hip_fatbin`).

use crate::compressed::{self, DecompressOptions, Header};
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{Limits, MAX_CONCATENATED};
use crate::read::{self, Bundle};
use gfxkit_bytes::Cursor;
use std::borrow::Cow;

/// The container format of one bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `__CLANG_OFFLOAD_BUNDLE__`.
    Uncompressed,
    /// `CCOB`.
    Ccob,
}

impl Format {
    /// `uncompressed` or `ccob`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Uncompressed => "uncompressed",
            Format::Ccob => "ccob",
        }
    }
}

/// Serializes as `uncompressed` or `ccob`.
impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Compression method of a CCOB bundle, as its header stores it: unknown values are kept (to
/// be reported by whoever decompresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompressionMethod(pub u16);

impl CompressionMethod {
    /// zlib.
    pub const ZLIB: CompressionMethod = CompressionMethod(0);
    /// zstd.
    pub const ZSTD: CompressionMethod = CompressionMethod(1);

    /// The method, when it is one gfxkit can decode and write.
    pub fn known(self) -> Option<crate::Method> {
        crate::Method::from_u16(self.0)
    }

    /// `zlib`, `zstd` or `unknown(N)`.
    pub fn name(self) -> String {
        match self.0 {
            0 => "zlib".into(),
            1 => "zstd".into(),
            n => format!("unknown({n})"),
        }
    }
}

impl From<crate::Method> for CompressionMethod {
    fn from(m: crate::Method) -> CompressionMethod {
        CompressionMethod(m.as_u16())
    }
}

impl std::fmt::Display for CompressionMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Serializes as [`CompressionMethod::name`].
impl serde::Serialize for CompressionMethod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// How one bundle is stored, as its first bytes say: the one model of a bundle's storage form
/// (its [`Format`] with, for a CCOB bundle, the version and the method as stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(tag = "format", rename_all = "lowercase")]
pub enum BundleFormat {
    /// `__CLANG_OFFLOAD_BUNDLE__` binary bundle.
    Uncompressed,
    /// `CCOB` compressed bundle.
    Compressed {
        /// CCOB version (1, 2 or 3).
        version: u16,
        /// Compression method.
        method: CompressionMethod,
    },
}

impl BundleFormat {
    /// The form of a CCOB bundle with `header`.
    pub fn of_header(header: &Header) -> BundleFormat {
        BundleFormat::Compressed {
            version: header.version,
            method: header.method.into(),
        }
    }

    /// The form as one word, as reports of rewrites and sizes print it: `uncompressed`,
    /// `ccob-v2-zstd` (`ccob-v2-unknown(7)` for a method gfxkit does not know).
    pub fn short_name(self) -> String {
        match self {
            BundleFormat::Uncompressed => "uncompressed".to_owned(),
            BundleFormat::Compressed { version, method } => format!("ccob-v{version}-{method}"),
        }
    }

    /// The container format alone.
    pub fn format(self) -> Format {
        match self {
            BundleFormat::Uncompressed => Format::Uncompressed,
            BundleFormat::Compressed { .. } => Format::Ccob,
        }
    }
}

/// `uncompressed`, or `CCOB v2 zstd`.
impl std::fmt::Display for BundleFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundleFormat::Uncompressed => f.write_str("uncompressed"),
            BundleFormat::Compressed { version, method } => write!(f, "CCOB v{version} {method}"),
        }
    }
}

/// Which format `data` starts with, if any.
pub fn detect(data: &[u8]) -> Option<Format> {
    if read::is_bundle(data) {
        Some(Format::Uncompressed)
    } else if compressed::is_ccob(data) {
        Some(Format::Ccob)
    } else {
        None
    }
}

/// A bundle of either format, with its uncompressed bytes (borrowed for an uncompressed bundle,
/// owned after decompression).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnyBundle<'data> {
    /// Format in the input.
    pub format: Format,
    /// Offset of the bundle in the input handed to [`iter_concatenated`] (0 for
    /// [`AnyBundle::parse`]).
    pub offset: u64,
    /// Bytes the bundle occupies in the input (compressed size for CCOB).
    pub extent: u64,
    /// The CCOB header, for compressed bundles.
    pub ccob: Option<Header>,
    /// Whether the CCOB hash matched (always true unless [`HashCheck::Warn`] let a mismatch
    /// through); `None` for uncompressed bundles.
    ///
    /// [`HashCheck::Warn`]: crate::compressed::HashCheck::Warn
    pub hash_ok: Option<bool>,
    data: Cow<'data, [u8]>,
}

impl<'data> AnyBundle<'data> {
    /// Parses the bundle at the start of `data`, decompressing a CCOB one. `data` may extend
    /// past the bundle; [`extent`](Self::extent) says where it ends.
    pub fn parse(data: &'data [u8], opts: &DecompressOptions) -> Result<AnyBundle<'data>> {
        Self::parse_at(Cursor::new(data), opts)
    }

    /// [`parse`](Self::parse) of the bytes of `c`, with error offsets absolute (from
    /// `c.base()`, where the bundle starts in its file). An error about a compressed bundle's
    /// payload, which has no place of its own in the file, is placed at the bundle's start.
    pub fn parse_at(c: Cursor<'data>, opts: &DecompressOptions) -> Result<AnyBundle<'data>> {
        let data = c.bytes();
        match detect(data) {
            Some(Format::Uncompressed) => {
                let b = Bundle::parse_at(c)?;
                Ok(AnyBundle {
                    format: Format::Uncompressed,
                    offset: 0,
                    extent: b.extent(),
                    ccob: None,
                    hash_ok: None,
                    data: Cow::Borrowed(b.as_bytes()),
                })
            }
            Some(Format::Ccob) => {
                let d = compressed::decompress_ccob_at(c, opts)?;
                let hash_ok = d.hash_ok();
                // The content must itself be an uncompressed bundle.
                Bundle::parse(&d.data).map_err(|e| {
                    Error::at(
                        ErrorKind::Invalid(format!(
                            "decompressed content is not a valid bundle: {e}"
                        )),
                        c.inside(0),
                    )
                })?;
                Ok(AnyBundle {
                    format: Format::Ccob,
                    offset: 0,
                    extent: d.extent,
                    ccob: Some(d.header),
                    hash_ok: Some(hash_ok),
                    data: Cow::Owned(d.data),
                })
            }
            None => Err(Error::at(
                ErrorKind::BadMagic {
                    expected: "__CLANG_OFFLOAD_BUNDLE__ or CCOB",
                },
                c.inside(0),
            )),
        }
    }

    /// The uncompressed bundle bytes.
    pub fn uncompressed(&self) -> &[u8] {
        &self.data
    }

    /// The parsed uncompressed bundle (cheap: reads the header only).
    pub fn bundle(&self) -> Result<Bundle<'_>> {
        Bundle::parse(&self.data)
    }
}

/// Where a bundle lies in a buffer of bundles laid back to back, found without decompressing
/// (except a v1 zlib bundle, whose end is known only by decoding it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Offset in the input (from the cursor's base, for [`scan_concatenated_at`]).
    pub offset: u64,
    /// Bytes the bundle occupies.
    pub len: u64,
    /// Format.
    pub format: Format,
    /// CCOB header, for compressed bundles.
    pub ccob: Option<Header>,
}

/// The bundle at relative offset `rel` of `c`, with its offset and errors absolute.
fn span_at(c: Cursor<'_>, rel: u64, limits: &Limits) -> Result<Span> {
    let at = c.tail(rel);
    let (here, offset) = (at.bytes(), at.base());
    match detect(here) {
        Some(Format::Uncompressed) => {
            let b = Bundle::parse_at(at)?;
            Ok(Span {
                offset,
                len: b.extent(),
                format: Format::Uncompressed,
                ccob: None,
            })
        }
        Some(Format::Ccob) => {
            let h = Header::parse_at(at)?;
            let len = h.extent_at(at, limits.max_uncompressed)?;
            Ok(Span {
                offset,
                len,
                format: Format::Ccob,
                ccob: Some(h),
            })
        }
        None => Err(Error::at(
            ErrorKind::Garbage {
                byte: here.first().copied().unwrap_or(0),
            },
            offset,
        )),
    }
}

/// Skips zero padding from `pos`; returns the next non-zero offset or `None` at the end.
fn skip_padding(data: &[u8], pos: u64) -> Option<u64> {
    data.get(pos as usize..)?
        .iter()
        .position(|&b| b != 0)
        .map(|i| pos + i as u64)
}

/// Finds every bundle in `data`, laid back to back with zero padding between (a dumped
/// `.hip_fatbin`), without decompressing v2/v3 bundles. Non-zero bytes that do not start a
/// bundle are an error naming their offset. An input holding no bundle yields no span. A zlib
/// CCOB v1 bundle, delimited by decoding it, may not declare more than `limits` allow.
pub fn scan_concatenated(data: &[u8], limits: &Limits) -> Result<Vec<Span>> {
    scan_concatenated_at(Cursor::new(data), limits)
}

/// [`scan_concatenated`] of the bytes of `c`, which lie at `c.base()` of their file: the spans'
/// offsets and the errors' are absolute.
pub fn scan_concatenated_at(c: Cursor<'_>, limits: &Limits) -> Result<Vec<Span>> {
    let data = c.bytes();
    let mut spans = Vec::new();
    let mut pos = 0u64;
    while let Some(start) = skip_padding(data, pos) {
        if spans.len() >= MAX_CONCATENATED {
            return Err(Error::at(
                ErrorKind::TooManyEntries {
                    count: spans.len() as u64 + 1,
                    limit: MAX_CONCATENATED as u64,
                },
                c.abs(start),
            ));
        }
        let s = span_at(c, start, limits)?;
        pos = start + s.len.max(1);
        spans.push(s);
    }
    Ok(spans)
}

/// Finds the next offset at or after `from` that starts something that looks like a bundle:
/// the full uncompressed magic, or `CCOB` followed by a version 1-3 and method 0-1.
fn resync(data: &[u8], from: u64) -> Option<u64> {
    let start = usize::try_from(from).ok()?;
    let rest = data.get(start..)?;
    // Only offsets holding the first byte of a magic are compared in full (a comparison at
    // every offset cost a memcmp call per byte of garbage).
    let (u, c) = (read::MAGIC[0], compressed::MAGIC[0]);
    let mut i = 0;
    while let Some(k) = rest[i..].iter().position(|&b| b == u || b == c) {
        let r = &rest[i + k..];
        let field = |at| Cursor::new(r).u16(at).ok();
        if read::is_bundle(r)
            || (r.starts_with(compressed::MAGIC)
                && matches!(field(4), Some(1..=3))
                && matches!(field(6), Some(0 | 1)))
        {
            return Some(from + (i + k) as u64);
        }
        i += k + 1;
    }
    None
}

/// Like [`scan_concatenated`], but keeps going after a damaged bundle or garbage: the problem
/// is recorded and the scan resumes at the next offset that starts with a bundle magic (for
/// `verify`-style reports of everything wrong in a file). Spans are those that read cleanly.
pub fn scan_concatenated_lenient(data: &[u8], limits: &Limits) -> (Vec<Span>, Vec<Error>) {
    let c = Cursor::new(data);
    let mut spans = Vec::new();
    let mut problems = Vec::new();
    let mut pos = 0u64;
    while let Some(start) = skip_padding(data, pos) {
        if spans.len() + problems.len() >= MAX_CONCATENATED {
            problems.push(Error::at(
                ErrorKind::TooManyEntries {
                    count: (spans.len() + problems.len()) as u64 + 1,
                    limit: MAX_CONCATENATED as u64,
                },
                start,
            ));
            break;
        }
        match span_at(c, start, limits) {
            Ok(s) => {
                pos = start + s.len.max(1);
                spans.push(s);
            }
            Err(e) => {
                problems.push(e);
                match resync(data, start + 1) {
                    Some(next) => pos = next,
                    None => break,
                }
            }
        }
    }
    (spans, problems)
}

/// Iterator over bundles laid back to back; see [`iter_concatenated`].
#[derive(Debug, Clone)]
pub struct Concatenated<'data> {
    data: &'data [u8],
    pos: u64,
    align: u64,
    opts: DecompressOptions,
    done: bool,
    count: usize,
}

impl<'data> Iterator for Concatenated<'data> {
    type Item = Result<AnyBundle<'data>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let start = skip_padding(self.data, self.pos)?;
        let fail = |me: &mut Self, e: Error| {
            me.done = true;
            Some(Err(e))
        };
        if self.count >= MAX_CONCATENATED {
            let e = Error::at(
                ErrorKind::TooManyEntries {
                    count: self.count as u64 + 1,
                    limit: MAX_CONCATENATED as u64,
                },
                start,
            );
            return fail(self, e);
        }
        if self.align > 1 && start % self.align != 0 {
            let e = Error::at(
                ErrorKind::Invalid(format!(
                    "bundle at {start:#x} is not aligned to {} bytes",
                    self.align
                )),
                start,
            );
            return fail(self, e);
        }
        let at = Cursor::new(self.data).tail(start);
        let here = at.bytes();
        if detect(here).is_none() {
            let e = Error::at(ErrorKind::Garbage { byte: here[0] }, start);
            return fail(self, e);
        }
        match AnyBundle::parse_at(at, &self.opts) {
            Ok(mut b) => {
                b.offset = start;
                self.pos = start + b.extent.max(1);
                self.count += 1;
                Some(Ok(b))
            }
            Err(e) => {
                let e = Error {
                    offset: Some(e.offset.unwrap_or(start)),
                    ..e
                };
                fail(self, e)
            }
        }
    }
}

/// Iterates over the bundles in `data` laid back to back with zero padding between (a dumped
/// `.hip_fatbin`): uncompressed bundles end at their largest payload end, CCOB v2/v3 at their
/// total size, v1 where their frame ends. `align` > 1 also checks that each bundle starts at a
/// multiple of it (1 = no check). CCOB bundles are decompressed as they are reached; the
/// iterator stops after the first error.
pub fn iter_concatenated(data: &[u8], align: u64, opts: DecompressOptions) -> Concatenated<'_> {
    Concatenated {
        data,
        pos: 0,
        align,
        opts,
        done: false,
        count: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::resync;

    #[test]
    fn resync_finds_the_next_magic_past_lookalikes() {
        let mut d = b"x_C__CLANG_OFFLOAD_BUNDLE_CCOB\x04\0\0\0CCOB\x02\0\x02\0".to_vec();
        assert_eq!(resync(&d, 0), None);
        d.extend_from_slice(b"__CCOB\x03\0\x01\0");
        assert_eq!(resync(&d, 0), Some(d.len() as u64 - 8));
        d.extend_from_slice(b"__CLANG_OFFLOAD_BUNDLE__");
        assert_eq!(resync(&d, 0), Some(d.len() as u64 - 32));
        assert_eq!(resync(&d, d.len() as u64 - 31), Some(d.len() as u64 - 24));
        assert_eq!(resync(&d, d.len() as u64), None);
        assert_eq!(resync(&d, d.len() as u64 + 1), None);
    }
}
