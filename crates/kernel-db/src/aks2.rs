//! AOTriton kernel storage V2 (`.aks2`): PyTorch's flash-attention images.
//!
//! Layout (AOTriton `python/aks2.py`, `v3src/packed_kernel_common.cc`): magic `AKS2`, three
//! little-endian u32 (total uncompressed size, number of kernels, directory size), then one
//! xz stream holding the directory followed by the image area. A directory entry is five u32
//! (shared memory size, block threads, offset of the image within the image area, image size,
//! name length including its NUL) and the NUL-terminated name. The total is the directory
//! size plus the image area; an image of size 0 is a kernel that did not compile.
//!
//! [`Aks2::parse`] decodes the stream once, bounded by the declared total, and checks every
//! entry against it, so [`Aks2::image`] cannot fail.

use crate::error::{Error, ErrorKind, Result};
use crate::limits::{Limits, MAX_NAME_LEN};
use gfxkit_bytes::Cursor;
use std::io::Read;

/// The magic at the start of an `.aks2` file.
pub const MAGIC: &[u8; 4] = b"AKS2";

/// Size of the header before the xz stream.
pub const HEADER_LEN: usize = 16;

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Position in the directory.
    pub position: u32,
    /// Shared memory the kernel needs, in bytes.
    pub shared_memory_size: u32,
    /// Threads per block.
    pub block_threads: u32,
    /// Offset of the image within the image area.
    pub offset: u32,
    /// Size of the image (0: the kernel did not compile).
    pub image_size: u32,
    /// The entry's name (such as `attn_fwd/FONLY__^bf16@16,128,False,...hsaco`).
    pub name: String,
    /// Offset of the entry in the decoded stream.
    pub entry_offset: u64,
}

/// A parsed `.aks2` file: its directory and decoded stream.
#[derive(Debug, Clone)]
pub struct Aks2 {
    /// The directory, in file order.
    pub entries: Vec<Entry>,
    decoded: Vec<u8>,
    directory_size: usize,
}

/// The little-endian `u32` at `at` of `c`, or an error naming `what` there.
fn u32_at(c: Cursor<'_>, at: usize, what: &'static str) -> Result<u32> {
    c.u32(at as u64).map_err(|e| {
        Error::at(
            e.offset(),
            ErrorKind::Truncated {
                what,
                need: 4,
                have: c.len().saturating_sub(at as u64),
            },
        )
    })
}

impl Aks2 {
    /// Parses a whole `.aks2` file.
    pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Aks2> {
        let (total, count, dir_size) = header(bytes, limits)?;
        let decoded = decompress(bytes, total)?;
        let dir_size = dir_size as usize;
        let area = (total as usize) - dir_size;
        let mut entries = Vec::with_capacity((count as usize).min(4096));
        let mut at = 0usize;
        for position in 0..count {
            let (entry, next) = directory_entry(&decoded[..dir_size], at, position, area)?;
            entries.push(entry);
            at = next;
        }
        if at != dir_size {
            return Err(Error::at(
                at as u64,
                ErrorKind::Inconsistent(format!(
                    "the {count} entries take {at} bytes, but the directory size is {dir_size}"
                )),
            ));
        }
        Ok(Aks2 {
            entries,
            decoded,
            directory_size: dir_size,
        })
    }

    /// The image of `entry` (one of [`Aks2::entries`]; checked when parsed).
    pub fn image(&self, entry: &Entry) -> &[u8] {
        let start = self.directory_size + entry.offset as usize;
        self.decoded
            .get(start..start + entry.image_size as usize)
            .unwrap_or(&[])
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

fn bad_magic(bytes: &[u8]) -> Error {
    Error::at(
        0,
        ErrorKind::BadMagic {
            found: bytes.iter().take(4).copied().collect(),
            expected: "AKS2",
        },
    )
}

/// The header of a `.aks2` file: the total uncompressed size, the number of kernels and the
/// directory's size, checked against `limits` and each other.
fn header(bytes: &[u8], limits: &Limits) -> Result<(u32, u32, u32)> {
    if bytes.len() < HEADER_LEN {
        if !bytes.is_empty() && !MAGIC.starts_with(&bytes[..bytes.len().min(4)]) {
            return Err(bad_magic(bytes));
        }
        return Err(Error::at(
            0,
            ErrorKind::Truncated {
                what: "AKS2 header",
                need: HEADER_LEN as u64,
                have: bytes.len() as u64,
            },
        ));
    }
    if &bytes[..4] != MAGIC {
        return Err(bad_magic(bytes));
    }
    let field = |at| u32_at(Cursor::new(bytes), at, "AKS2 header");
    let (total, count, dir_size) = (field(4)?, field(8)?, field(12)?);
    if u64::from(total) > limits.max_decompressed {
        return Err(Error::at(
            4,
            ErrorKind::LimitExceeded {
                what: "declared uncompressed size",
                limit: limits.max_decompressed,
            },
        ));
    }
    if u64::from(count) > limits.max_aks2_entries {
        return Err(Error::at(
            8,
            ErrorKind::LimitExceeded {
                what: "number of kernels",
                limit: limits.max_aks2_entries,
            },
        ));
    }
    if dir_size > total {
        return Err(Error::at(
            12,
            ErrorKind::Inconsistent(format!(
                "directory size {dir_size} is above the total uncompressed size {total}"
            )),
        ));
    }
    // Each entry takes at least 21 bytes (five u32 and a NUL).
    if u64::from(count) * 21 > u64::from(dir_size) {
        return Err(Error::at(
            8,
            ErrorKind::Inconsistent(format!(
                "{count} kernels cannot fit a directory of {dir_size} bytes"
            )),
        ));
    }
    Ok((total, count, dir_size))
}

/// The xz stream after the header, decompressed: exactly `total` bytes, and nothing after
/// the stream.
fn decompress(bytes: &[u8], total: u32) -> Result<Vec<u8>> {
    let stream = &bytes[HEADER_LEN..];
    // Memory follows what the stream produces; a lying header buys at most 16 MiB up front.
    let mut decoded = Vec::with_capacity((total as usize).min(1 << 24));
    let mut dec = liblzma::read::XzDecoder::new(stream);
    (&mut dec)
        .take(u64::from(total) + 1)
        .read_to_end(&mut decoded)
        .map_err(|e| {
            Error::at(
                HEADER_LEN as u64,
                ErrorKind::Decompress {
                    codec: "xz",
                    why: e.to_string(),
                },
            )
        })?;
    if decoded.len() as u64 != u64::from(total) {
        return Err(Error::at(
            HEADER_LEN as u64,
            ErrorKind::SizeMismatch {
                expected: u64::from(total),
                got: decoded.len() as u64,
            },
        ));
    }
    let consumed = HEADER_LEN as u64 + dec.total_in();
    if consumed < bytes.len() as u64 {
        return Err(Error::at(
            consumed,
            ErrorKind::TrailingBytes(bytes.len() as u64 - consumed),
        ));
    }
    Ok(decoded)
}

/// The directory entry `position` at byte `at` of the directory `dir` (whose images lie in an
/// area of `area` bytes after it), and where the next entry starts.
fn directory_entry(dir: &[u8], at: usize, position: u32, area: usize) -> Result<(Entry, usize)> {
    let dir_size = dir.len();
    let mut at = at;
    let place = format!("entry {position}");
    let need = |at: usize, n: usize, what: &'static str| -> Result<()> {
        if at + n > dir_size {
            return Err(Error::at(
                at as u64,
                ErrorKind::Truncated {
                    what,
                    need: n as u64,
                    have: (dir_size - at) as u64,
                },
            )
            .place(place.clone()));
        }
        Ok(())
    };
    need(at, 20, "directory entry")?;
    let f = |i: usize| {
        u32_at(Cursor::new(dir), at + 4 * i, "directory entry").map_err(|e| e.place(place.clone()))
    };
    let (shared, threads, offset, size, name_len) = (f(0)?, f(1)?, f(2)?, f(3)?, f(4)?);
    if name_len == 0 || u64::from(name_len) > MAX_NAME_LEN {
        return Err(Error::at(
            (at + 16) as u64,
            ErrorKind::Inconsistent(format!(
                "name length {name_len} (1 to {MAX_NAME_LEN}, NUL included)"
            )),
        )
        .place(place));
    }
    let entry_offset = at as u64;
    at += 20;
    need(at, name_len as usize, "entry name")?;
    let raw = &dir[at..at + name_len as usize];
    let (text, nul) = raw.split_at(raw.len() - 1);
    if nul != [0] || text.contains(&0) {
        return Err(Error::at(
            at as u64,
            ErrorKind::Inconsistent("name is not NUL-terminated where its length says".into()),
        )
        .place(place));
    }
    let name = String::from_utf8_lossy(text).into_owned();
    at += name_len as usize;
    let end = u64::from(offset) + u64::from(size);
    if end > area as u64 {
        return Err(Error::at(
            entry_offset,
            ErrorKind::Inconsistent(format!(
                "image at {offset} of {size} bytes runs past the image area of {area} bytes"
            )),
        )
        .place(format!("{place} ({name})")));
    }
    let entry = Entry {
        position,
        shared_memory_size: shared,
        block_threads: threads,
        offset,
        image_size: size,
        name,
        entry_offset,
    };
    Ok((entry, at))
}
