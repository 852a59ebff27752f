//! The three containers `clang-offload-bundler -type` reads and writes, behind one interface:
//! text with comment markers ([`crate::text`]), the binary bundle format ([`crate::read`],
//! [`crate::write`]) and the bundle sections of a host object ([`crate::object`]).
//!
//! A file type names a container (`-type=o` the object one, but only for an ELF file: clang
//! reads any other file given as an object as a binary bundle); [`Container::for_object`] is
//! that rule. Reading gives the entries in file order, borrowed from the input; writing takes
//! `(ID, payload)` pairs in the order they are to be stored.

use crate::error::{Error, ErrorKind, Result};
use crate::read::{Bundle, MAGIC};
use std::borrow::Cow;

/// A container format of `clang-offload-bundler -type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Text with entries between comment markers (`//`, `#` or `;`).
    Text(&'static str),
    /// The binary bundle format (uncompressed; a CCOB input is decompressed first).
    Binary,
    /// Sections `__CLANG_OFFLOAD_BUNDLE__<id>` of a host object.
    Object,
}

impl Container {
    /// The container an object file type (`-type=o`) selects for `data`: the object one for
    /// any ELF file, as clang treats every object file, and the binary format otherwise.
    /// Writing sections needs a relocatable host object; [`write()`] says so clearly when given
    /// another kind of ELF file.
    pub fn for_object(data: &[u8]) -> Container {
        if data.starts_with(b"\x7fELF") {
            Container::Object
        } else {
            Container::Binary
        }
    }
}

/// An entry read by [`entries`], in file order.
#[derive(Debug, Clone)]
pub struct ContainerEntry<'a> {
    /// The ID exactly as stored.
    pub id: &'a str,
    /// The payload as stored.
    pub payload: &'a [u8],
    /// The host placeholder of an object bundle (one zero byte standing for the host object
    /// itself; [`entry_payload`] gives the object).
    pub host_placeholder: bool,
}

/// The entries of `data` read as `container`, in file order. A binary input that is not a
/// bundle has no entries (clang then treats it as the host file).
pub fn entries(data: &[u8], container: Container) -> Result<Vec<ContainerEntry<'_>>> {
    let plain = |id, payload| ContainerEntry {
        id,
        payload,
        host_placeholder: false,
    };
    Ok(match container {
        Container::Binary if !data.starts_with(MAGIC) => Vec::new(),
        Container::Binary => Bundle::parse(data)?
            .entries()
            .iter()
            .map(|e| plain(e.id, e.payload))
            .collect(),
        Container::Text(comment) => crate::text::read_text(data, comment)?
            .into_iter()
            .map(|e| plain(e.id, e.payload))
            .collect(),
        Container::Object => crate::object::read_object(data)?
            .into_iter()
            .map(|e| ContainerEntry {
                host_placeholder: e.is_host_placeholder(),
                id: e.id,
                payload: e.payload,
            })
            .collect(),
    })
}

/// The bytes an entry read by [`entries`] stands for: its payload, or, for the host
/// placeholder of an object bundle, the host object without its bundle sections.
pub fn entry_payload<'a>(data: &'a [u8], e: &ContainerEntry<'a>) -> Result<Cow<'a, [u8]>> {
    if e.host_placeholder {
        return Ok(Cow::Owned(crate::object::strip_bundle_sections(data)?));
    }
    Ok(Cow::Borrowed(e.payload))
}

/// Writes `entries` (ID, payload) in `container` form, binary bundles aligned to `align`.
/// `host` is the index of the host entry, whose payload is the host object an object bundle
/// is written into (required for [`Container::Object`]).
pub fn write(
    container: Container,
    entries: &[(&str, &[u8])],
    host: Option<usize>,
    align: u64,
) -> Result<Vec<u8>> {
    match container {
        Container::Binary => crate::write::write_bundle(entries, align),
        Container::Text(c) => Ok(crate::text::write_text(entries, c)),
        Container::Object => {
            let Some(h) = host.filter(|&h| h < entries.len()) else {
                return Err(Error::new(ErrorKind::Invalid(
                    "an object bundle needs a host input".into(),
                )));
            };
            crate::object::write_object(entries[h].1, entries, h)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_container_reads_back_what_it_writes() {
        let pairs: [(&str, &[u8]); 2] = [
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"device bytes\n"),
        ];
        for c in [Container::Binary, Container::Text("//")] {
            let bytes = write(c, &pairs, Some(0), 4096).unwrap();
            let read = entries(&bytes, c).unwrap();
            let got: Vec<(&str, &[u8])> = read.iter().map(|e| (e.id, e.payload)).collect();
            assert_eq!(got, pairs, "{c:?}");
            assert!(read.iter().all(|e| !e.host_placeholder));
        }
    }

    #[test]
    fn an_object_container_needs_a_host_and_other_files_are_binary() {
        assert_eq!(Container::for_object(b"\x7fELF\x02"), Container::Object);
        assert_eq!(
            Container::for_object(b"__CLANG_OFFLOAD_BUNDLE__"),
            Container::Binary
        );
        let pairs: [(&str, &[u8]); 1] = [("hipv4-amdgcn-amd-amdhsa--gfx90a", b"x")];
        let err = write(Container::Object, &pairs, None, 1).unwrap_err();
        assert!(err.to_string().contains("needs a host input"), "{err}");
        assert!(entries(b"not a bundle", Container::Binary)
            .unwrap()
            .is_empty());
    }
}
