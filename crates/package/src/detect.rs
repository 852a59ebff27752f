//! Telling package formats apart by their first bytes (never by name alone).

use std::io::{self, Read};

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
    /// all read, as the command-line tools do).
    pub fn decoder<'r>(self, r: impl Read + 'r) -> std::io::Result<Box<dyn Read + 'r>> {
        Ok(match self {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            Compression::Xz => Box::new(xz2::read::XzDecoder::new_multi_decoder(r)),
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
}
