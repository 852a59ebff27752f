//! Tar streams as the walk of a package and the reading of an image's layers meet them: member
//! names, the position in a stream, and errors at a tar header that say where and what a
//! header needs.

use crate::error::{Error, ErrorKind};
use std::io::{self, Read};

/// Tar member names without a leading `./`.
pub(crate) fn clean_name(name: &str) -> &str {
    let mut n = name;
    while let Some(rest) = n.strip_prefix("./") {
        n = rest;
    }
    n
}

/// A reader that counts the bytes read through it (the position in a stream).
pub(crate) struct Counting<'a, 'r> {
    pub(crate) inner: &'a mut (dyn Read + 'r),
    pub(crate) pos: &'a std::cell::Cell<u64>,
}

impl Read for Counting<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos.set(self.pos.get().saturating_add(n as u64));
        Ok(n)
    }
}

/// A tar header block.
pub(crate) const TAR_BLOCK: u64 = 512;

/// A tar header that cannot be read: where the stream (`chain`) stopped, after `end` bytes,
/// and what a header needs.
pub(crate) fn tar_header_error(chain: &str, e: &io::Error, end: u64) -> Error {
    let block = end - end % TAR_BLOCK;
    // The tar reader's own words for a short block; anything else comes from the
    // decompressor under it.
    let short_block = e.to_string().contains("entire block");
    let e = if short_block {
        Error::new(
            chain,
            ErrorKind::Truncated(format!(
                "need {TAR_BLOCK} bytes at offset {block:#x} for a tar header, the tar \
                 stream has {end}"
            )),
        )
    } else {
        let mut e = Error::from_read(chain, e).with_tar_note();
        if let ErrorKind::Truncated(m) | ErrorKind::Corrupt(m) | ErrorKind::Checksum(m) =
            &mut e.kind
        {
            *m = format!(
                "{m} (reading the tar header at offset {block:#x}; the tar stream gave \
                 {end} bytes)"
            );
        }
        e
    };
    e.at(block)
}

impl Error {
    /// Says that a corrupt stream was found reading a tar header.
    pub(crate) fn with_tar_note(mut self) -> Error {
        if let ErrorKind::Corrupt(m) = &mut self.kind {
            *m = format!("tar: {m}");
        }
        self
    }
}
