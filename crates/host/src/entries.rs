//! The entry list of a found bundle, read from its header only.
//!
//! For an uncompressed bundle this reads the header in place. For a CCOB bundle it decompresses
//! only the first bytes of the payload, as many as the header needs (the header of a real
//! bundle is a few hundred bytes; entries start at 4096 in HIP builds), so listing the entries
//! of a 100 MB bundle costs microseconds. The hash is not checked here (nothing is fully
//! decompressed): `gfxkit verify` does that.

use crate::fatbin::{BundleFormat, CompressionMethod};
use crate::unit::{Form, Unit};
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::read::{parse_header_at, HeaderEntry};
use gfxkit_bundle::EntryId;
use gfxkit_bytes::Cursor;

/// Most bytes of a compressed bundle decompressed to read its header (the bundle crate's).
pub const MAX_HEADER_PREFIX: u64 = gfxkit_bundle::read::MAX_HEADER_PREFIX;

/// Why a bundle's entries could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EntriesError(pub String);

/// One entry of a bundle header: as stored, and parsed when the ID is well formed.
#[derive(Debug, Clone)]
pub struct HeaderItem {
    /// The header record (index, ID as stored, payload offset and size).
    pub header: HeaderEntry,
    /// The parsed ID, or why it does not parse.
    pub id: Result<EntryId, String>,
}

/// Reads the entry list of the bundle in `bytes` (exactly one bundle, uncompressed or CCOB,
/// which may not declare more than `limits` allow).
pub fn header_entries(
    format: BundleFormat,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Vec<HeaderItem>, EntriesError> {
    Ok(read_header(format, Cursor::new(bytes), limits)?.0)
}

/// Like [`header_entries`] of the bundle whose bytes `c` holds, located where they lie in
/// their file (errors in what is stored name file offsets), also returning the length of the
/// (uncompressed) bundle header: the HIP runtime reads only the first [`HIP_HEADER_LIMIT`]
/// bytes of an uncompressed bundle.
pub fn read_header(
    format: BundleFormat,
    c: Cursor<'_>,
    limits: &Limits,
) -> Result<(Vec<HeaderItem>, u64), EntriesError> {
    let (list, header_len) = match format {
        BundleFormat::Uncompressed => {
            parse_header_at(c).map_err(|e| EntriesError(e.to_string()))?
        }
        BundleFormat::Compressed { version, method } => {
            compressed_header(version, method, c, limits)?
        }
    };
    let items = list
        .into_iter()
        .map(|h| {
            let id = EntryId::parse(&h.id).map_err(|e| e.to_string());
            HeaderItem { header: h, id }
        })
        .collect();
    Ok((items, header_len))
}

/// Bytes of an uncompressed bundle the HIP runtime hands to comgr to find a code object: a
/// header longer than this cannot be read, and nothing in the bundle can be loaded (the bundle
/// crate's [`HIP_HEADER_READ_LIMIT`](gfxkit_bundle::limits::HIP_HEADER_READ_LIMIT)).
pub const HIP_HEADER_LIMIT: u64 = gfxkit_bundle::limits::HIP_HEADER_READ_LIMIT;

/// The parsed entry IDs of a bundle, in header order, skipping IDs that do not parse.
pub fn entry_ids(
    format: BundleFormat,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Vec<EntryId>, EntriesError> {
    Ok(header_entries(format, bytes, limits)?
        .into_iter()
        .filter_map(|h| h.id.ok())
        .collect())
}

fn compressed_header(
    version: u16,
    method: CompressionMethod,
    c: Cursor<'_>,
    limits: &Limits,
) -> Result<(Vec<HeaderEntry>, u64), EntriesError> {
    // The bundle crate's CCOB header and its prefix decoder (bounded by the declared size).
    let header = gfxkit_bundle::ccob::Header::parse_at(c)
        .map_err(|e| EntriesError(format!("CCOB header: {e}")))?;
    if header.version != version || header.method.as_u16() != method.0 {
        return Err(EntriesError(format!(
            "CCOB header says v{} {}, not {}",
            header.version,
            header.method.name(),
            BundleFormat::Compressed { version, method }
        )));
    }
    let (_, entries, header_len) = gfxkit_bundle::read::ccob_header_at(c, limits)
        .map_err(|e| EntriesError(format!("header of the decompressed bundle: {e}")))?;
    Ok((entries, header_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make_bundle(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
        gfxkit_bundle::write_bundle(entries, align).unwrap()
    }

    fn make_ccob(version: u16, inner: &[u8]) -> Vec<u8> {
        let opts = gfxkit_bundle::ccob::CompressOptions {
            version,
            ..Default::default()
        };
        gfxkit_bundle::ccob::compress(inner, &opts).unwrap()
    }

    #[test]
    fn reads_entries_of_plain_and_compressed_bundles() {
        let big = vec![0x5au8; 200_000];
        let b = make_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", &big),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"\x7fELF"),
            ],
            4096,
        );
        let plain = header_entries(BundleFormat::Uncompressed, &b, &Limits::default()).unwrap();
        assert_eq!(plain.len(), 3);
        assert_eq!(plain[2].header.id, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        for v in [2u16, 3] {
            let c = make_ccob(v, &b);
            let f = BundleFormat::Compressed {
                version: v,
                method: CompressionMethod::ZSTD,
            };
            let got = header_entries(f, &c, &Limits::default()).unwrap();
            let ids: Vec<&str> = got.iter().map(|h| h.header.id.as_str()).collect();
            assert_eq!(
                ids,
                plain
                    .iter()
                    .map(|h| h.header.id.as_str())
                    .collect::<Vec<_>>()
            );
            assert_eq!(got[1].header.size, 200_000);
        }
    }

    #[test]
    fn garbage_payload_is_an_error() {
        let b = make_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", b"x")], 1);
        let mut c = make_ccob(2, &b);
        let n = c.len();
        for x in &mut c[30..n] {
            *x = 0xee;
        }
        let f = BundleFormat::Compressed {
            version: 2,
            method: CompressionMethod::ZSTD,
        };
        assert!(header_entries(f, &c, &Limits::default()).is_err());
    }
}

/// One entry of a unit as the HIP runtime reads it.
#[derive(Debug, Clone)]
pub struct UnitEntry {
    /// The parsed entry ID.
    pub id: EntryId,
    /// Payload size in bytes (the runtime skips empty entries).
    pub size: u64,
}

/// What the HIP runtime reads of a [`Unit`] before choosing a code object from it: what the
/// unit is, how it is stored, the length of its header and its entries' IDs and sizes. The
/// runtime's rules ([`crate::select`], [`crate::release`]) are written over it; a view is made
/// from a unit ([`Unit::load_view`]) or, where only the IDs are known (a census's rows, a
/// release's view with refused entries emptied), from them.
#[derive(Debug, Clone)]
pub struct LoadView {
    /// What the unit is.
    pub form: Form,
    /// For bundles, how they are stored.
    pub format: Option<BundleFormat>,
    /// For bundles, the length of the (uncompressed) header.
    pub header_len: Option<u64>,
    /// Its entries whose IDs parse (for a code object, one entry made from its `e_flags`), or
    /// why they could not be read.
    pub entries: Result<Vec<UnitEntry>, EntriesError>,
}

impl LoadView {
    /// The entry IDs, in order (empty when the entries could not be read).
    pub fn ids(&self) -> Vec<EntryId> {
        match &self.entries {
            Ok(e) => e.iter().map(|e| e.id.clone()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Whether this unit is a bundle whose device entries (all but the host's) are all empty,
    /// or that has none: the runtime finds no code object in it for any device. Not known
    /// (false) when its entries could not be read.
    pub fn device_entries_all_empty(&self) -> bool {
        self.form == crate::Form::Bundle
            && self
                .entries
                .as_ref()
                .is_ok_and(|e| e.iter().filter(|x| !x.id.is_host()).all(|x| x.size == 0))
    }

    /// Whether the HIP runtime can read this unit's header: an uncompressed bundle whose header
    /// is longer than [`HIP_HEADER_LIMIT`] cannot be read.
    pub fn header_readable_by_hip(&self) -> bool {
        header_readable_by_hip(
            self.format == Some(BundleFormat::Uncompressed),
            self.header_len.unwrap_or(0),
        )
    }
}

/// Whether the HIP runtime can read the header of a bundle (`uncompressed` or not) whose
/// header is `header_len` bytes: all but an uncompressed bundle's longer than
/// [`HIP_HEADER_LIMIT`].
pub fn header_readable_by_hip(uncompressed: bool, header_len: u64) -> bool {
    !(uncompressed && header_len > HIP_HEADER_LIMIT)
}

impl Unit<'_> {
    /// What the HIP runtime reads of this unit: a bundle's header (a compressed bundle
    /// decoded only as far as its header), an object bundle's section names, a code object's
    /// `e_flags`. `None` for a unit the runtime does not load ([`Unit::is_loadable`]).
    pub fn load_view(&self) -> Option<LoadView> {
        if !self.is_loadable() {
            return None;
        }
        let format = self.format();
        let (header_len, entries) = match self.form {
            Form::Bundle => {
                let read = read_header(
                    format.unwrap_or(BundleFormat::Uncompressed),
                    self.cursor(),
                    &self.limits,
                );
                let header_len = read.as_ref().ok().map(|r| r.1);
                let entries = read.map(|(items, _)| {
                    items
                        .into_iter()
                        .filter_map(|h| {
                            let size = h.header.size;
                            h.id.ok().map(|id| UnitEntry { id, size })
                        })
                        .collect()
                });
                (header_len, entries)
            }
            Form::ObjectBundle => {
                let entries = self
                    .loose
                    .iter()
                    .filter_map(|e| {
                        EntryId::parse(&e.id).ok().map(|id| UnitEntry {
                            id,
                            size: e.payload.len() as u64,
                        })
                    })
                    .collect();
                (None, Ok(entries))
            }
            Form::CodeObject => {
                let entries = gfxkit_code_object::CodeObject::parse(self.bytes)
                    .map_err(|e| EntriesError(format!("code object: {}", e.in_code_object())))
                    .and_then(|co| {
                        co.target_id()
                            .map_err(|e| EntriesError(format!("code object target ID: {e}")))
                    })
                    .map(|t| {
                        vec![UnitEntry {
                            id: EntryId::hip(t),
                            size: self.bytes.len() as u64,
                        }]
                    });
                (None, entries)
            }
            // Not loadable: passed over above.
            Form::OffloadImage => return None,
        };
        Some(LoadView {
            form: self.form,
            format,
            header_len,
            entries,
        })
    }
}

/// What the HIP runtime reads of each unit it would consider loading ([`Unit::load_view`]),
/// in order: bundles, object bundles, code objects (the first units of a file; object bundles
/// of other GPUs and OffloadImages, which come last, are not loaded).
pub fn load_views(units: &[Unit<'_>]) -> Vec<LoadView> {
    units.iter().filter_map(Unit::load_view).collect()
}
