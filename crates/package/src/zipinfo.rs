//! Where a zip file is damaged, in its own terms: the end-of-central-directory record, the
//! central directory and each member's local header and data, with their byte offsets in the
//! package. The `zip` crate reads the file; this module checks the layout first (so that a
//! truncated zip says how much is missing instead of "Could not find EOCD") and puts the
//! place and the expectation into the crate's errors.

use crate::error::{Error, ErrorKind};
use gfxkit_bytes::Cursor;

/// `PK\x05\x06`: the end-of-central-directory record.
const EOCD_SIG: &[u8; 4] = b"PK\x05\x06";
/// `PK\x06\x07`: the ZIP64 end-of-central-directory locator, just before the record.
const ZIP64_LOCATOR_SIG: &[u8; 4] = b"PK\x06\x07";
/// `PK\x01\x02`: a central directory header.
const CENTRAL_SIG: &[u8; 4] = b"PK\x01\x02";
/// Size of the end-of-central-directory record without its comment.
const EOCD_LEN: u64 = 22;
/// The record lies in the last `EOCD_LEN + 65535` bytes (its comment is at most 65535 bytes).
const EOCD_SEARCH: u64 = EOCD_LEN + 0xffff;
/// Size of a central directory header without its name, extra field and comment.
const CENTRAL_LEN: u64 = 46;

/// The last end-of-central-directory signature in the tail of `data`, if any.
fn find_eocd(data: &[u8]) -> Option<usize> {
    let len = data.len();
    let from = len.saturating_sub(EOCD_SEARCH as usize);
    data.get(from..)?
        .windows(4)
        .rposition(|w| w == EOCD_SIG)
        .map(|i| from + i)
}

/// Checks the end of the zip file `data` (named `name`) before the `zip` crate reads it: a
/// missing or cut end-of-central-directory record, or a central directory that runs past it,
/// is an error that says so, with the sizes and offsets. `None` when the layout holds (the
/// crate's own checks follow).
pub(crate) fn check_end(name: &str, data: &[u8]) -> Option<Error> {
    let len = data.len() as u64;
    let Some(at) = find_eocd(data) else {
        let searched = len.min(EOCD_SEARCH);
        return Some(
            Error::new(
                name,
                ErrorKind::Truncated(format!(
                    "no end-of-central-directory record (PK\\x05\\x06) in the last {searched} \
                     bytes of the {len}-byte package (a zip file ends with one)"
                )),
            )
            .at(len.saturating_sub(searched)),
        );
    };
    let at64 = at as u64;
    if at64 + EOCD_LEN > len {
        return Some(
            Error::new(
                name,
                ErrorKind::Truncated(format!(
                    "need {EOCD_LEN} bytes at offset {at64:#x} for the end-of-central-directory \
                     record, the package has {len}"
                )),
            )
            .at(at64),
        );
    }
    let c = Cursor::new(data);
    let comment = u64::from(c.u16(at64 + 20).ok()?);
    if at64 + EOCD_LEN + comment > len {
        return Some(
            Error::new(
                name,
                ErrorKind::Truncated(format!(
                    "need {} bytes at offset {at64:#x} for the end-of-central-directory record \
                     and its {comment}-byte comment, the package has {len}",
                    EOCD_LEN + comment
                )),
            )
            .at(at64),
        );
    }
    let size = u64::from(c.u32(at64 + 12).ok()?);
    let offset = u64::from(c.u32(at64 + 16).ok()?);
    // ZIP64 keeps the real values in its own record; the zip crate checks those.
    let zip64 = size == 0xffff_ffff
        || offset == 0xffff_ffff
        || (at >= 20 && data.get(at - 20..at - 16) == Some(&ZIP64_LOCATOR_SIG[..]));
    if !zip64 && offset.saturating_add(size) > at64 {
        return Some(
            Error::new(
                name,
                ErrorKind::Corrupt(format!(
                    "zip: the central directory ({size} bytes at offset {offset:#x}, as the \
                     end-of-central-directory record at {at64:#x} says) runs past that record"
                )),
            )
            .at(at64),
        );
    }
    None
}

/// The offset of the local header of member `index` (in central directory order), read from
/// the central directory starting at `cd_start`; `None` when the directory does not say (a
/// ZIP64 offset, or damage).
pub(crate) fn local_header_offset(data: &[u8], cd_start: u64, index: usize) -> Option<u64> {
    let c = Cursor::new(data);
    let mut at = cd_start;
    for i in 0..=index {
        if c.slice(at, 4).ok()? != CENTRAL_SIG {
            return None;
        }
        if i == index {
            let offset = c.u32(at + 42).ok()?;
            return (offset != 0xffff_ffff).then_some(u64::from(offset));
        }
        let n = u64::from(c.u16(at + 28).ok()?);
        let m = u64::from(c.u16(at + 30).ok()?);
        let k = u64::from(c.u16(at + 32).ok()?);
        at = at.checked_add(CENTRAL_LEN + n + m + k)?;
    }
    None
}

/// The `zip` crate's words for what went wrong inside a member, said as what was expected.
fn plain(message: &str) -> String {
    match message {
        "Invalid checksum" => {
            "the decompressed data does not match the CRC-32 the zip directory records".into()
        }
        "failed to fill whole buffer" => "the member's data ends early".into(),
        "Invalid local file header" => {
            "no local file header (PK\\x03\\x04) where the central directory places it".into()
        }
        m => m.to_owned(),
    }
}

/// What is known of a member whose data failed to read, for its error message.
pub(crate) struct MemberPlace {
    /// Offset of the local header in the package.
    pub header: u64,
    /// Offset of the compressed data.
    pub data: u64,
    /// Compressed size.
    pub compressed: u64,
    /// Size when decompressed, as the directory records.
    pub size: u64,
    /// The compression method, as the `zip` crate names it.
    pub method: String,
}

impl MemberPlace {
    /// The place of `f` in the package.
    pub(crate) fn of<R: std::io::Read>(f: &zip::read::ZipFile<'_, R>) -> MemberPlace {
        MemberPlace {
            header: f.header_start(),
            data: f.data_start(),
            compressed: f.compressed_size(),
            size: f.size(),
            method: f.compression().to_string(),
        }
    }
}

/// The error `e` of reading the member `path` at `place`: the zip crate's words made plain,
/// with the member's data (size, method, offset) and the offset of its local header.
pub(crate) fn in_member(mut e: Error, path: &str, place: &MemberPlace) -> Error {
    if e.path != path {
        return e;
    }
    let with = |m: &str| {
        format!(
            "{} (its data: {} bytes, {}, at offset {:#x}, {} bytes decompressed)",
            plain(m),
            place.compressed,
            place.method.to_lowercase(),
            place.data,
            place.size
        )
    };
    match &mut e.kind {
        ErrorKind::Truncated(m) | ErrorKind::Checksum(m) | ErrorKind::Corrupt(m) => {
            *m = with(m);
        }
        _ => {}
    }
    if e.offset.is_none() {
        e.offset = Some(place.header);
    }
    e
}

/// The error of opening member `index` (named `path`) of the zip `data` whose central
/// directory starts at `cd_start`: the crate's words made plain, at the member's local header
/// when the directory says where it is.
pub(crate) fn opening_member(mut e: Error, data: &[u8], cd_start: u64, index: usize) -> Error {
    if let ErrorKind::Corrupt(m) | ErrorKind::Truncated(m) = &mut e.kind {
        let bare = m.strip_prefix("zip: ").unwrap_or(m);
        let bare = bare.strip_prefix("invalid Zip archive: ").unwrap_or(bare);
        *m = format!("zip: {}", plain(bare));
    }
    if e.offset.is_none() {
        e.offset = local_header_offset(data, cd_start, index);
    }
    e
}

/// The member `path` whose central directory entry names it `central` (raw bytes) and places
/// its local header at `header`: an error when the local header names it otherwise. Names
/// carry no checksum, but a zip records each twice, and a damaged copy shows as a mismatch
/// (the member would otherwise be read under a name it does not have).
pub(crate) fn check_local_name(
    path: &str,
    data: &[u8],
    header: u64,
    central: &[u8],
) -> Option<Error> {
    let c = Cursor::new(data);
    let local = c
        .u16(header.checked_add(26)?)
        .and_then(|n| c.slice(header.saturating_add(30), n.into()))
        .ok();
    match local {
        Some(l) if l == central => None,
        Some(l) => Some(
            Error::new(
                path,
                ErrorKind::Corrupt(format!(
                    "zip: the local header names the member {:?}, the central directory {:?}",
                    String::from_utf8_lossy(l),
                    String::from_utf8_lossy(central)
                )),
            )
            .at(header),
        ),
        None => Some(
            Error::new(
                path,
                ErrorKind::Truncated(format!(
                    "zip: the local header's name runs past the end of the {}-byte package",
                    data.len()
                )),
            )
            .at(header),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored zip with one member `a` holding `body`.
    fn zip_one(body: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        w.start_file("a", opts).unwrap();
        w.write_all(body).unwrap();
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn a_cut_end_says_what_is_missing() {
        let z = zip_one(b"hello");
        assert!(check_end("p.zip", &z).is_none());
        // Cut inside the end record: its offset and the sizes.
        let cut = &z[..z.len() - 10];
        let e = check_end("p.zip", cut).unwrap();
        let at = z.len() as u64 - EOCD_LEN;
        assert_eq!(e.offset, Some(at));
        assert_eq!(
            e.to_string(),
            format!(
                "p.zip: truncated: need 22 bytes at offset {at:#x} for the \
                 end-of-central-directory record, the package has {} (at offset {at:#x})",
                cut.len()
            )
        );
        // Cut before it: no record at all.
        let e = check_end("p.zip", &z[..20]).unwrap();
        assert!(
            e.to_string()
                .contains("no end-of-central-directory record (PK\\x05\\x06) in the last 20 bytes"),
            "{e}"
        );
    }

    #[test]
    fn a_directory_past_its_record_is_named() {
        let mut z = zip_one(b"hello");
        let at = find_eocd(&z).unwrap();
        z[at + 16..at + 20].copy_from_slice(&(at as u32).to_le_bytes());
        let e = check_end("p.zip", &z).unwrap();
        assert!(e.to_string().contains("runs past that record"), "{e}");
    }

    #[test]
    fn local_headers_are_found_through_the_directory() {
        let z = zip_one(b"hello");
        let a = zip::ZipArchive::new(std::io::Cursor::new(&z[..])).unwrap();
        assert_eq!(
            local_header_offset(&z, a.central_directory_start(), 0),
            Some(0)
        );
        assert_eq!(
            local_header_offset(&z, a.central_directory_start(), 1),
            None
        );
    }
}
