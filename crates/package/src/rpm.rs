//! RPM packages: the lead, the signature and main headers (parsed with bounds checks), and the
//! cpio (`newc`) payload after them, read as a stream.
//!
//! Layout (RPM v3/v4): a 96-byte lead starting `ed ab ee db`; the signature header, padded to
//! a multiple of 8 bytes; the main header; then the payload, a compressed cpio archive. Each
//! header is `8e ad e8 01`, 4 reserved bytes, the index entry count and the data size (both
//! big-endian u32), the 16-byte index entries (tag, type, offset, count), then the data.

use crate::detect::{read_prefix, Compression};
use crate::error::{Error, ErrorKind, Result};
use std::io::{self, Read};

const LEAD_LEN: usize = 96;
const HEADER_MAGIC: [u8; 4] = [0x8e, 0xad, 0xe8, 0x01];
/// At most this many index entries in one header (real packages have a few hundred).
const MAX_INDEX: u32 = 1 << 16;
/// At most this many bytes of header data (real packages: well under a megabyte).
const MAX_HEADER_DATA: u32 = 256 << 20;
const TAG_PAYLOADFORMAT: u32 = 1124;
const TAG_PAYLOADCOMPRESSOR: u32 = 1125;
const TYPE_STRING: u32 = 6;

/// What the headers say about the payload that follows them.
#[derive(Debug, Clone)]
pub struct Payload {
    /// The payload's compression, from its magic.
    pub compression: Compression,
    /// The payload's first bytes (already read from the stream).
    pub prefix: Vec<u8>,
    /// `PAYLOADCOMPRESSOR` from the main header, when present.
    pub compressor: Option<String>,
}

fn read_exact(chain: &str, r: &mut dyn Read, buf: &mut [u8], what: &str, at: u64) -> Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::new(chain, ErrorKind::Truncated(format!("rpm {what}"))).at(at)
        } else {
            Error::from_read(chain, &e)
        }
    })
}

/// One header: returns the string tags we use, and the bytes it took.
fn header(chain: &str, r: &mut dyn Read, what: &str, at: u64) -> Result<(Vec<(u32, String)>, u64)> {
    let mut intro = [0u8; 16];
    read_exact(chain, r, &mut intro, what, at)?;
    if intro[..4] != HEADER_MAGIC {
        return Err(Error::new(
            chain,
            ErrorKind::Corrupt(format!("rpm {what}: no header magic 8e ad e8 01")),
        )
        .at(at));
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let nindex = be(&intro[8..12]);
    let hsize = be(&intro[12..16]);
    if nindex > MAX_INDEX || hsize > MAX_HEADER_DATA {
        return Err(Error::new(
            chain,
            ErrorKind::Corrupt(format!(
                "rpm {what}: {nindex} index entries and {hsize} data bytes exceed the limits"
            )),
        )
        .at(at));
    }
    let mut index = vec![0u8; nindex as usize * 16];
    read_exact(chain, r, &mut index, what, at + 16)?;
    let mut data = vec![0u8; hsize as usize];
    read_exact(chain, r, &mut data, what, at + 16 + index.len() as u64)?;
    let mut strings = Vec::new();
    for (i, e) in index.chunks_exact(16).enumerate() {
        let (tag, ty, off) = (be(&e[0..4]), be(&e[4..8]), be(&e[8..12]));
        if off > hsize {
            return Err(Error::new(
                chain,
                ErrorKind::Corrupt(format!(
                    "rpm {what}: index entry {i} (tag {tag}) points at {off}, past the {hsize} data bytes"
                )),
            )
            .at(at + 16 + i as u64 * 16));
        }
        if ty == TYPE_STRING && (tag == TAG_PAYLOADFORMAT || tag == TAG_PAYLOADCOMPRESSOR) {
            let s = &data[off as usize..];
            let end = s.iter().position(|&b| b == 0).ok_or_else(|| {
                Error::new(
                    chain,
                    ErrorKind::Corrupt(format!("rpm {what}: tag {tag} string is not terminated")),
                )
            })?;
            strings.push((tag, String::from_utf8_lossy(&s[..end]).into_owned()));
        }
    }
    Ok((strings, 16 + index.len() as u64 + data.len() as u64))
}

/// Reads the lead and both headers from `r`, leaving it at the payload; checks the payload is
/// cpio and finds its compression.
pub fn payload(chain: &str, r: &mut dyn Read) -> Result<Payload> {
    let mut lead = [0u8; LEAD_LEN];
    read_exact(chain, r, &mut lead, "lead", 0)?;
    if lead[..4] != [0xed, 0xab, 0xee, 0xdb] {
        return Err(Error::new(chain, ErrorKind::NotAPackage));
    }
    if lead[4] < 3 {
        return Err(Error::new(
            chain,
            ErrorKind::Unsupported(format!("rpm format version {}", lead[4])),
        ));
    }
    let mut at = LEAD_LEN as u64;
    let (_, sig_len) = header(chain, r, "signature header", at)?;
    at += sig_len;
    let pad = (8 - sig_len % 8) % 8;
    let mut padding = vec![0u8; pad as usize];
    read_exact(chain, r, &mut padding, "signature padding", at)?;
    at += pad;
    let (tags, main_len) = header(chain, r, "header", at)?;
    at += main_len;
    let tag = |t: u32| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| v.clone());
    if let Some(f) = tag(TAG_PAYLOADFORMAT) {
        if f != "cpio" {
            return Err(Error::new(
                chain,
                ErrorKind::Unsupported(format!("rpm payload format {f:?} (only cpio is read)")),
            ));
        }
    }
    let compressor = tag(TAG_PAYLOADCOMPRESSOR);
    let prefix = read_prefix(r, 8).map_err(|e| Error::from_read(chain, &e))?;
    let compression = Compression::sniff(&prefix).ok_or_else(|| {
        Error::new(
            chain,
            ErrorKind::Unsupported(format!(
                "rpm payload compression {} (gzip, xz, zstd and bzip2 are read)",
                compressor.as_deref().unwrap_or("unknown")
            )),
        )
        .at(at)
    })?;
    Ok(Payload {
        compression,
        prefix,
        compressor,
    })
}

/// cpio `newc` header length: the 6-byte magic and 13 eight-digit hex fields.
const CPIO_HEADER: usize = 110;
/// The longest member name accepted.
const MAX_NAME: u64 = 1 << 16;

fn pad4(n: u64) -> u64 {
    (4 - n % 4) % 4
}

fn skip(r: &mut dyn Read, n: u64) -> io::Result<()> {
    let got = io::copy(&mut r.take(n), &mut io::sink())?;
    if got < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// What walking a cpio archive yields: per member, what the visitor made of it, or an error.
pub type Visits<V> = Vec<Result<V>>;

/// Walks a cpio `newc` (`070701`) or `crc` (`070702`) archive: `f` gets each regular file's
/// name (without a leading `./`), size and a reader of exactly its bytes.
pub fn walk_cpio<V>(
    chain: &str,
    r: &mut dyn Read,
    f: &mut dyn FnMut(&str, u64, &mut dyn Read) -> Visits<V>,
) -> Visits<V> {
    let mut out = Vec::new();
    let mut at: u64 = 0;
    let trunc = |what: &str, at: u64| {
        Error::new(chain, ErrorKind::Truncated(format!("cpio {what}"))).at(at)
    };
    loop {
        let mut h = [0u8; CPIO_HEADER];
        if let Err(e) = r.read_exact(&mut h) {
            out.push(Err(if e.kind() == io::ErrorKind::UnexpectedEof {
                trunc("header (no TRAILER!!! entry)", at)
            } else {
                Error::from_read(chain, &e)
            }));
            return out;
        }
        if &h[..6] != b"070701" && &h[..6] != b"070702" {
            out.push(Err(Error::new(
                chain,
                ErrorKind::Unsupported(format!(
                    "cpio header magic {:?} (only newc 070701/070702 is read)",
                    String::from_utf8_lossy(&h[..6])
                )),
            )
            .at(at)));
            return out;
        }
        let field = |i: usize| -> Option<u64> {
            let s = std::str::from_utf8(&h[6 + i * 8..14 + i * 8]).ok()?;
            u64::from_str_radix(s, 16).ok()
        };
        let (Some(mode), Some(filesize), Some(namesize)) = (field(1), field(6), field(11)) else {
            out.push(Err(Error::new(
                chain,
                ErrorKind::Corrupt("cpio header field is not hexadecimal".into()),
            )
            .at(at)));
            return out;
        };
        if namesize == 0 || namesize > MAX_NAME {
            out.push(Err(Error::new(
                chain,
                ErrorKind::Corrupt(format!("cpio name size {namesize}")),
            )
            .at(at)));
            return out;
        }
        let mut name = vec![0u8; namesize as usize];
        if r.read_exact(&mut name).is_err() {
            out.push(Err(trunc("name", at)));
            return out;
        }
        name.pop(); // the terminating NUL
        let name = String::from_utf8_lossy(&name).into_owned();
        let name_pad = pad4(CPIO_HEADER as u64 + namesize);
        if skip(r, name_pad).is_err() {
            out.push(Err(trunc("name padding", at)));
            return out;
        }
        if name == "TRAILER!!!" {
            return out;
        }
        let data_at = at + CPIO_HEADER as u64 + namesize + name_pad;
        let regular = mode & 0o170000 == 0o100000;
        // Whatever the function did not read is skipped.
        let left = {
            let mut body = (&mut *r).take(filesize);
            if regular && filesize > 0 {
                let mut n = name.as_str();
                while let Some(rest) = n.strip_prefix("./") {
                    n = rest;
                }
                let n = n.trim_start_matches('/');
                out.extend(f(n, filesize, &mut body));
            }
            body.limit()
        };
        if skip(r, left).is_err() {
            out.push(Err(trunc(&format!("data of {name}"), data_at)));
            return out;
        }
        if skip(r, pad4(filesize)).is_err() {
            out.push(Err(trunc("data padding", data_at)));
            return out;
        }
        at = data_at + filesize + pad4(filesize);
    }
}
