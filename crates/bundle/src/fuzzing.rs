//! Bodies of the fuzz targets in `fuzz/`, also run as ordinary tests on truncated and
//! bit-flipped fixtures (`tests/robustness.rs`). Each feeds arbitrary bytes to a reader and
//! checks the invariants of whatever it accepts; none may panic, hang or allocate without
//! bound.

use crate::compressed::{self, DecompressOptions, HashCheck};
use crate::limits::Limits;
use crate::read::Bundle;
use crate::{any, archive, entry_id::EntryId, object, text};

/// The uncompressed reader, strict and lenient.
pub fn bundle(data: &[u8]) {
    let strict = Bundle::parse(data);
    let lenient = Bundle::parse_lenient(data);
    if let Ok(b) = &strict {
        assert!(b.header_len() <= b.extent() && b.extent() <= data.len() as u64);
        for e in b.entries() {
            assert_eq!(
                e.payload,
                &data[e.offset as usize..(e.offset + e.size) as usize]
            );
            let _ = e.parse_id();
        }
        let (l, problems) = lenient
            .as_ref()
            .expect("lenient accepts what strict accepts");
        assert!(problems.is_empty());
        assert_eq!(l.entries(), b.entries());
    }
    if let Ok((l, _)) = lenient {
        for e in l.entries() {
            assert!(e.offset + e.size <= data.len() as u64);
        }
    }
    let _ = crate::read::parse_header(data);
}

/// The limit on decompressed output in the fuzz bodies: the documented override
/// [`DecompressOptions::max_uncompressed`], at 1 MiB. A 20-byte header may claim any size up
/// to the limit, and decompression then does work in proportion to that size: with 16 MiB an
/// input cost milliseconds; what is checked (the limit itself, size mismatches, both paths of
/// the decoder, the hash) does not depend on the size.
pub const FUZZ_MAX_UNCOMPRESSED: u64 = 1 << 20;

/// The CCOB reader: header, extent, full and prefix decompression, and the header read from a
/// prefix alone.
pub fn ccob(data: &[u8]) {
    let opts = DecompressOptions {
        hash: HashCheck::Warn,
        max_uncompressed: FUZZ_MAX_UNCOMPRESSED,
    };
    if let Ok(h) = compressed::Header::parse(data) {
        let _ = h.extent(data, Limits::default().max_uncompressed);
        let whole = compressed::decompress_ccob(data, &opts);
        if let Ok(d) = &whole {
            assert_eq!(d.data.len() as u64, h.uncompressed_size);
            assert!(d.extent <= data.len() as u64);
        }
        // Streamed: the same verdict and the same bytes.
        let mut streamed = Vec::new();
        let s = compressed::decompress_ccob_to(data, &opts, &mut |c| {
            streamed.extend_from_slice(c);
            Ok(())
        });
        match (&whole, s) {
            (Ok(d), Ok(s)) => {
                assert_eq!(streamed, d.data);
                assert_eq!((s.extent, s.computed_hash), (d.extent, d.computed_hash));
            }
            (Err(a), Err(b)) => assert!(same_refusal(&a.kind, &b.kind), "{a:?} / {b:?}"),
            (a, b) => panic!("in memory {a:?}, streamed {b:?}"),
        }
        if let Ok((_, p)) = compressed::decompress_prefix(data, 64, &opts) {
            assert!(p.len() <= 64);
        }
        // The header read from a prefix (what `size` and `list` use) agrees with the whole
        // bundle's parse wherever the whole bundle decodes.
        let header = crate::read::ccob_header_checked_at(
            gfxkit_bytes::Cursor::new(data),
            &Limits::default(),
        );
        if let Ok(d) = &whole {
            match (Bundle::parse(&d.data), &header) {
                (Ok(b), Ok((_, entries, _))) => {
                    let whole: Vec<(&str, u64, u64)> = b
                        .entries()
                        .iter()
                        .map(|e| (e.id, e.offset, e.size))
                        .collect();
                    let read: Vec<(&str, u64, u64)> = entries
                        .iter()
                        .map(|e| (e.id.as_str(), e.offset, e.size))
                        .collect();
                    assert_eq!(whole, read);
                }
                (Err(_), Err(_)) => {}
                (w, h) => panic!("whole bundle {:?}, header alone {:?}", w.is_ok(), h.is_ok()),
            }
        }
    }
}

/// Whether two refusals of the same input say the same: equal, except that the codec's own
/// message may differ (zstd words one corruption differently depending on the size of the
/// buffer it decodes into, which differs between the in-memory and the streamed paths).
fn same_refusal(a: &crate::ErrorKind, b: &crate::ErrorKind) -> bool {
    use crate::ErrorKind::Decompress;
    match (a, b) {
        (Decompress { method: x, .. }, Decompress { method: y, .. }) => x == y,
        _ => a == b,
    }
}

/// Either format and bundles back to back.
pub fn concatenated(data: &[u8]) {
    let opts = DecompressOptions {
        hash: HashCheck::Error,
        max_uncompressed: FUZZ_MAX_UNCOMPRESSED,
    };
    let _ = any::AnyBundle::parse(data, &opts);
    let mut last_end = 0u64;
    for b in any::iter_concatenated(data, 1, opts).take(64) {
        match b {
            Ok(b) => {
                assert!(b.offset >= last_end);
                last_end = b.offset + b.extent;
                assert!(last_end <= data.len() as u64);
            }
            Err(_) => break,
        }
    }
    let (spans, _) = any::scan_concatenated_lenient(data, &Limits::default());
    for s in spans {
        assert!(s.offset + s.len <= data.len() as u64);
    }
    if let Ok(spans) = any::scan_concatenated(data, &Limits::default()) {
        for s in spans {
            assert!(s.offset + s.len <= data.len() as u64);
        }
    }
}

/// Entry IDs, text bundles, object files and archives (each body below in turn).
pub fn other_formats(data: &[u8]) {
    entry_ids(data);
    text(data);
    object(data);
    archive(data);
}

/// Entry IDs: what parses keeps its raw spelling, its canonical form parses back to an equal
/// ID, and two IDs (the input split at its first newline) are equal exactly when their
/// canonical forms are, with equal hashes.
pub fn entry_ids(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = |s: &str| {
        let id = EntryId::parse(s).ok()?;
        assert_eq!(id.raw(), s);
        let again = EntryId::parse(&id.canonical()).expect("canonical form parses");
        assert_eq!(again, id);
        assert_eq!(again.canonical(), id.canonical());
        assert!(again.is_canonical());
        let _ = id.clang_form();
        Some(id)
    };
    let (a, b) = s.split_once('\n').unwrap_or((s, ""));
    if let (Some(x), Some(y)) = (parsed(a), parsed(b)) {
        use std::hash::BuildHasher;
        let h = std::collections::hash_map::RandomState::new();
        assert_eq!(x == y, x.canonical() == y.canonical(), "{a:?} vs {b:?}");
        if x == y {
            assert_eq!(h.hash_one(&x), h.hash_one(&y));
        }
        let _ = x.is_compatible_with(&y, false);
        let _ = x.is_compatible_with(&y, true);
    }
}

/// Text bundles with each comment style: what reads is written back and reads again.
pub fn text(data: &[u8]) {
    for c in ["//", "#", ";"] {
        if let Ok(entries) = text::read_text(data, c) {
            let pairs: Vec<(&str, &[u8])> = entries.iter().map(|e| (e.id, e.payload)).collect();
            let rewritten = text::write_text(&pairs, c);
            let again = text::read_text(&rewritten, c).expect("written text bundle reads");
            assert_eq!(again.len(), entries.len());
        }
    }
}

/// Object bundles: listing the sections, stripping them for the host entry, adding one.
pub fn object(data: &[u8]) {
    if object::is_object(data) {
        if let Ok(entries) = object::read_object(data) {
            for e in entries {
                assert!(e.id.len() < data.len());
                let _ = EntryId::parse(e.id);
            }
        }
        if let Ok(stripped) = object::strip_bundle_sections(data) {
            assert!(stripped.len() >= data.len());
        }
        let _ = object::write_object(
            data,
            &[("hipv4-amdgcn-amd-amdhsa--gfx906", b"x")],
            usize::MAX,
        );
    }
}

/// Archives: members, and unbundling one target from every member.
pub fn archive(data: &[u8]) {
    if data.starts_with(b"!<arch>\n") {
        if let Ok(members) = archive::read_members(data) {
            for (_, m) in members {
                assert!(m.len() <= data.len());
            }
        }
        if let Ok(req) = EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx906") {
            let _ = archive::unbundle_archive(
                data,
                &[req],
                "fuzz.a",
                &archive::ArchiveOptions {
                    allow_missing: true,
                    ..Default::default()
                },
            );
        }
    }
}
