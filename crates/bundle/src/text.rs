//! Text bundles (`-type=i ii cui hipi d ll s`): entries between comment-line markers.
//!
//! Each entry is written as
//! `"\n" C " __CLANG_OFFLOAD_BUNDLE____START__ " ID "\n" payload "\n" C " __CLANG_OFFLOAD_BUNDLE____END__ " ID "\n"`
//! where `C` is the type's line comment: `//` for `i ii cui hipi`, `#` for `d s`, `;` for `ll`.

use crate::error::{Error, ErrorKind, Result};

/// Whether a `-type` value names a text bundle, and its comment string.
pub fn comment_for_type(file_type: &str) -> Option<&'static str> {
    match file_type {
        "i" | "ii" | "cui" | "hipi" => Some("//"),
        "d" | "s" => Some("#"),
        "ll" => Some(";"),
        _ => None,
    }
}

fn start_marker(comment: &str) -> String {
    format!("\n{comment} __CLANG_OFFLOAD_BUNDLE____START__ ")
}

fn end_marker(comment: &str) -> String {
    format!("\n{comment} __CLANG_OFFLOAD_BUNDLE____END__ ")
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from > hay.len() || needle.is_empty() {
        return None;
    }
    memchr_find(&hay[from..], needle).map(|i| i + from)
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..].iter().position(|&b| b == first) {
            None => return None,
            Some(p) => {
                let at = i + p;
                if at + needle.len() > hay.len() {
                    return None;
                }
                if &hay[at..at + needle.len()] == needle {
                    return Some(at);
                }
                i = at + 1;
            }
        }
    }
    None
}

/// One entry of a text bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextEntry<'data> {
    /// The ID as written after the start marker.
    pub id: &'data str,
    /// The payload (between the start line and the newline before the end marker).
    pub payload: &'data [u8],
    /// Offset of the start marker (its leading newline).
    pub offset: u64,
}

/// Reads every entry of a text bundle, in file order. A file with no start marker has no
/// entries (a host-only input). A start marker without an end marker is an error.
pub fn read_text<'data>(data: &'data [u8], comment: &str) -> Result<Vec<TextEntry<'data>>> {
    let start = start_marker(comment);
    let end = end_marker(comment);
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Some(s) = find(data, start.as_bytes(), pos) {
        let id_start = s + start.len();
        let Some(nl) = find(data, b"\n", id_start) else {
            break; // clang stops at a start line without a newline
        };
        let id = std::str::from_utf8(&data[id_start..nl])
            .map_err(|_| Error::at(ErrorKind::IdNotUtf8, id_start as u64).in_entry(out.len()))?;
        let body = nl + 1;
        let e = find(data, end.as_bytes(), body).ok_or_else(|| {
            Error::at(ErrorKind::MissingEndMarker { id: id.to_owned() }, s as u64)
                .in_entry(out.len())
        })?;
        out.push(TextEntry {
            id,
            payload: &data[body..e],
            offset: s as u64,
        });
        // Skip the end marker line.
        pos = match find(data, b"\n", e + 1) {
            Some(n) => n + 1,
            None => data.len(),
        };
    }
    Ok(out)
}

/// Writes a text bundle of `(id, payload)` entries in the order given.
pub fn write_text(entries: &[(&str, &[u8])], comment: &str) -> Vec<u8> {
    let start = start_marker(comment);
    let end = end_marker(comment);
    let mut out = Vec::new();
    for (id, payload) in entries {
        out.extend_from_slice(start.as_bytes());
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(payload);
        out.extend_from_slice(end.as_bytes());
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_and_without_trailing_newline() {
        let entries: Vec<(&str, &[u8])> = vec![
            ("host-x86_64-unknown-linux-gnu-", b"int x;\n"),
            ("hipv4-amdgcn-amd-amdhsa--gfx906", b"no newline"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", b""),
        ];
        for c in ["//", "#", ";"] {
            let t = write_text(&entries, c);
            let r = read_text(&t, c).unwrap();
            let back: Vec<(&str, &[u8])> = r.iter().map(|e| (e.id, e.payload)).collect();
            assert_eq!(back, entries);
        }
        let t = write_text(&entries[..1], "//");
        assert_eq!(
            t,
            b"\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nint x;\n\n// __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n"
        );
    }

    #[test]
    fn missing_end_marker_is_an_error() {
        let t = b"\n// __CLANG_OFFLOAD_BUNDLE____START__ a-b-c-d-\nxx";
        let e = read_text(t, "//").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::MissingEndMarker { .. }));
        assert!(read_text(b"plain text", "//").unwrap().is_empty());
    }
}
