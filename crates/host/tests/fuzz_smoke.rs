//! Fuzz smoke tests: arbitrary bytes behind each magic gfxkit-host recognises never panic,
//! and whatever is reported lies inside the input.

use gfxkit_host::{discover, entries, select};
use proptest::prelude::*;

const PREFIXES: &[&[u8]] = &[
    b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x3e\x00",
    b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x3e\x00",
    b"!<arch>\n",
    b"__CLANG_OFFLOAD_BUNDLE__",
    b"CCOB\x01\x00\x01\x00",
    b"CCOB\x02\x00\x00\x00",
    b"CCOB\x03\x00\x01\x00",
    b"\x10\xff\x10\xad\x01\x00\x00\x00",
    // A PE32+ x86-64 DLL's DOS header, NT signature, file header and optional-header magic.
    b"MZ\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x40\0\0\0PE\0\0\x64\x86\x02\0\0\0\0\0\0\0\0\0\0\0\0\0\xf0\0\x22\x20\x0b\x02",
    // An x86-64 COFF object's file header (two sections, no optional header).
    b"\x64\x86\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
];

fn check(data: &[u8]) {
    let found = discover(data);
    let len = data.len() as u64;
    for i in 0..found.bundle_count() {
        let l = found.bundle_location(i).unwrap();
        assert!(l.offset + l.size <= len);
    }
    let units = found.units();
    for u in &units.units {
        assert!(u.offset + u.bytes.len() as u64 <= len);
        for e in &u.loose {
            assert!(u.offset + e.offset + e.payload.len() as u64 <= len);
        }
        let Some(format) = u.format() else { continue };
        if let Ok(ids) = entries::entry_ids(format, u.bytes, &u.limits) {
            let device = gfxkit_target_id::TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
            let _ = select::select(&device, &ids);
        }
    }
    for u in entries::load_views(&units.units) {
        let _ = u.header_readable_by_hip();
    }
    for p in &found.problems {
        let _ = p.to_string();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_bytes_behind_each_magic(which in 0..PREFIXES.len(), tail in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut data = PREFIXES[which].to_vec();
        data.extend_from_slice(&tail);
        check(&data);
    }

    #[test]
    fn small_counts_and_offsets(which in 0..PREFIXES.len(), words in proptest::collection::vec(0u64..512, 0..40)) {
        // Small numbers make the readers follow offsets and counts instead of rejecting them.
        let mut data = PREFIXES[which].to_vec();
        for w in words {
            data.extend_from_slice(&w.to_le_bytes());
        }
        check(&data);
    }
}

/// The PE and COFF prefixes are taken for what they are, so the cases above reach the PE/COFF
/// reader.
#[test]
fn pe_and_coff_prefixes_reach_their_reader() {
    let kinds: Vec<_> = PREFIXES[PREFIXES.len() - 2..]
        .iter()
        .map(|p| gfxkit_host::InputKind::sniff(p))
        .collect();
    assert_eq!(
        kinds,
        [
            gfxkit_host::InputKind::PeImage,
            gfxkit_host::InputKind::CoffObject
        ]
    );
}
