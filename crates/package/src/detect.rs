//! Telling package formats apart by their first bytes (never by name alone).

use std::io::{self, BufRead, BufReader, Read};

/// How many leading bytes [`detect`] looks at (a tar header's `ustar` magic is at 257).
pub const PREFIX_LEN: usize = 512;

/// A stream compression around a tar archive (or around a single file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Compression {
    /// gzip (`1f 8b`).
    Gzip,
    /// xz (`fd 37 7a 58 5a 00`).
    Xz,
    /// zstd (`28 b5 2f fd`).
    Zstd,
    /// bzip2 (`BZh`).
    Bzip2,
}

impl Compression {
    /// The compression whose magic starts `prefix`.
    pub fn sniff(prefix: &[u8]) -> Option<Compression> {
        if prefix.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if prefix.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if prefix.len() >= 4
            && prefix.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&prefix[3])
        {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }

    /// A streaming decoder of this compression over `r` (concatenated streams and frames are
    /// all read, as the command-line tools do; an xz stream of several blocks, as `xz -T`
    /// writes them, is decoded on several threads, as [`XzStreams`] says).
    pub fn decoder<'r>(self, r: impl Read + 'r) -> std::io::Result<Box<dyn Read + 'r>> {
        Ok(match self {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            Compression::Xz => Box::new(XzStreams::new(BufReader::new(r))?),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(r)?),
            Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(r)),
        })
    }

    /// The usual file-name suffix (`gz`, `xz`, `zst`, `bz2`).
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::Gzip => "gz",
            Compression::Xz => "xz",
            Compression::Zstd => "zst",
            Compression::Bzip2 => "bz2",
        }
    }
}

/// The most memory an xz decoder may take to decode blocks in parallel; beyond it, it uses
/// fewer threads (down to one, which needs what the stream's dictionary needs).
pub const XZ_THREADING_MEMORY: u64 = 1 << 30;

/// Concatenated xz streams read as one, as `xz -d` reads them: each stream decoded by
/// liblzma's multithreaded decoder on up to as many threads as the machine has (blocks that
/// record their sizes, as multithreaded encoders write them, decode in parallel; others on
/// one thread), then stream padding (zero bytes, a multiple of four), then the next stream.
pub struct XzStreams<R: BufRead> {
    decoder: Option<liblzma::bufread::XzDecoder<R>>,
}

impl<R: BufRead> XzStreams<R> {
    /// A decoder of the streams `r` holds.
    pub fn new(r: R) -> io::Result<XzStreams<R>> {
        Ok(XzStreams {
            decoder: Some(xz_stream(r)?),
        })
    }
}

/// liblzma's decoder of one stream over `r`: multithreaded on as many threads as the rayon
/// pool it is called on has (one per core, unless a census was given fewer), single-threaded
/// on a pool of one (no thread decoding ahead beside the caller).
fn xz_stream<R: BufRead>(r: R) -> io::Result<liblzma::bufread::XzDecoder<R>> {
    let threads = rayon::current_num_threads();
    if threads <= 1 {
        let stream =
            liblzma::stream::Stream::new_stream_decoder(u64::MAX, 0).map_err(io::Error::other)?;
        return Ok(liblzma::bufread::XzDecoder::new_stream(r, stream));
    }
    let stream = liblzma::stream::MtStreamBuilder::new()
        .threads(u32::try_from(threads).unwrap_or(1))
        .memlimit_threading(XZ_THREADING_MEMORY)
        .memlimit_stop(u64::MAX)
        .decoder()
        .map_err(io::Error::other)?;
    Ok(liblzma::bufread::XzDecoder::new_stream(r, stream))
}

impl<R: BufRead> Read for XzStreams<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while let Some(decoder) = self.decoder.as_mut() {
            let n = decoder.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // The end of a stream: its padding, then the end of the input or another stream.
            let mut r = self
                .decoder
                .take()
                .map(|d| d.into_inner())
                .expect("a decoder");
            let mut padding = 0u64;
            loop {
                let (zeros, more) = {
                    let avail = r.fill_buf()?;
                    let zeros = avail.iter().take_while(|&&b| b == 0).count();
                    (zeros, zeros == avail.len() && !avail.is_empty())
                };
                r.consume(zeros);
                padding += zeros as u64;
                if !more {
                    break;
                }
            }
            if padding % 4 != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("xz stream padding of {padding} bytes, not a multiple of four"),
                ));
            }
            if r.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.decoder = Some(xz_stream(r)?);
        }
        Ok(0)
    }
}

/// A package (container) format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// A zip archive: Python wheels, `.conda` packages (a zip of `.tar.zst` members), jars.
    Zip,
    /// An uncompressed tar archive (`ustar` magic).
    Tar,
    /// A compressed stream: `.tar.gz` and friends, `.tar.bz2` conda packages, or one
    /// compressed file.
    Compressed(Compression),
    /// A Debian package: an `ar` archive whose first member is `debian-binary`.
    Deb,
    /// An RPM package (lead magic `ed ab ee db`).
    Rpm,
}

/// The package format whose magic starts `prefix` (give it [`PREFIX_LEN`] bytes, or the whole
/// file when shorter). Plain `ar` archives (static libraries) are not packages: the host
/// reader lists their members.
pub fn detect(prefix: &[u8]) -> Option<Format> {
    if prefix.starts_with(b"PK\x03\x04") || prefix.starts_with(b"PK\x05\x06") {
        return Some(Format::Zip);
    }
    if prefix.starts_with(b"!<arch>\ndebian-binary") {
        return Some(Format::Deb);
    }
    if prefix.starts_with(&[0xed, 0xab, 0xee, 0xdb]) {
        return Some(Format::Rpm);
    }
    if is_tar(prefix) {
        return Some(Format::Tar);
    }
    Compression::sniff(prefix).map(Format::Compressed)
}

/// Whether `prefix` starts with a POSIX or GNU tar header (`ustar` at offset 257).
pub fn is_tar(prefix: &[u8]) -> bool {
    prefix.get(257..262) == Some(b"ustar")
}

/// Reads up to `n` bytes (fewer only at the end of the data).
pub(crate) fn read_prefix(r: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_magic() {
        assert_eq!(detect(b"PK\x03\x04rest"), Some(Format::Zip));
        assert_eq!(detect(b"!<arch>\ndebian-binary   "), Some(Format::Deb));
        assert_eq!(detect(b"!<arch>\nfoo.o/          "), None);
        assert_eq!(detect(&[0xed, 0xab, 0xee, 0xdb, 3, 0]), Some(Format::Rpm));
        assert_eq!(
            detect(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Some(Format::Compressed(Compression::Zstd))
        );
        assert_eq!(
            detect(b"BZh9"),
            Some(Format::Compressed(Compression::Bzip2))
        );
        assert_eq!(detect(b"BZhx"), None);
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(detect(&tar), Some(Format::Tar));
        assert_eq!(detect(b"\x7fELF\x02\x01"), None);
        assert_eq!(detect(b""), None);
    }

    /// An xz stream of several blocks (as a multithreaded encoder writes), of 128 KiB each.
    fn xz_blocks(data: &[u8]) -> Vec<u8> {
        let stream = liblzma::stream::MtStreamBuilder::new()
            .threads(2)
            .block_size(128 << 10)
            .preset(1)
            .encoder()
            .unwrap();
        let mut out = Vec::new();
        liblzma::read::XzEncoder::new_stream(data, stream)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn xz_one(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        liblzma::read::XzEncoder::new(data, 1)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn decoded(xz: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Compression::Xz.decoder(xz)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn xz_streams_read_as_xz_reads_them() {
        let data: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        // Blocks decoded in parallel come back in order.
        assert_eq!(decoded(&xz_blocks(&data)).unwrap(), data);
        // Concatenated streams, with padding between and after them.
        let mut two = xz_blocks(&data[..1000]);
        two.extend_from_slice(&[0; 8]);
        two.extend(xz_one(&data[1000..3000]));
        two.extend_from_slice(&[0; 4]);
        assert_eq!(decoded(&two).unwrap(), &data[..3000]);
        // Padding that is not a multiple of four, garbage after a stream, a stream cut short
        // and no stream at all are errors.
        let mut odd = xz_one(b"abc");
        odd.extend_from_slice(&[0; 3]);
        let e = decoded(&odd).unwrap_err();
        assert!(e.to_string().contains("not a multiple of four"), "{e}");
        let mut garbage = xz_one(b"abc");
        garbage.extend_from_slice(b"junk");
        assert!(decoded(&garbage).is_err());
        let cut = xz_blocks(&data);
        assert!(decoded(&cut[..cut.len() / 2]).is_err());
        assert!(decoded(b"").is_err());
    }
}
