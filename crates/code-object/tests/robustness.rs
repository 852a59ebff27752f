//! Damaged input never panics, hangs or allocates without bound: every prefix of a real code
//! object and random corruptions of it give a result (usually a typed error), and every e_flags
//! word of every version decodes.

use gfxkit_code_object::{CodeObject, EFlags, Header};
use gfxkit_spec::CodeObjectVersion;
use gfxkit_testkit::llc_object;
use proptest::prelude::*;
use std::sync::OnceLock;

/// A gfx90a code object V5 with two kernels, built once by llc-19.
fn sample() -> &'static [u8] {
    static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ir = dir.path().join("k.ll");
        std::fs::write(&ir, include_str!("data/two_kernels.ll")).unwrap();
        let obj = dir.path().join("k.o");
        llc_object(&ir, &obj, "gfx90a", 5, "");
        std::fs::read(obj).unwrap()
    })
}

/// Exercises every accessor of a parsed object.
fn touch(co: &CodeObject<'_>) {
    let _ = co.target_id();
    let _ = co.issues();
    let _ = co.kernel_descriptors();
    let _ = co.flags().to_string();
    for k in co.kernels() {
        let _ = (k.name.len(), k.symbol, k.sgpr_count);
    }
    if let Some(m) = co.metadata() {
        let _ = serde_json::to_string(&m.to_json()).unwrap();
    }
}

#[test]
fn every_prefix_is_handled() {
    let data = sample();
    let full = CodeObject::parse(data).unwrap();
    assert_eq!(full.kernels().len(), 2);
    let mut errors = 0;
    for len in 0..data.len() {
        let header = Header::parse(&data[..len]);
        assert_eq!(header.is_ok(), len >= 64, "{len}");
        let parsed = CodeObject::parse(&data[..len]);
        agree(&data[..len], &parsed);
        match parsed {
            Ok(co) => touch(&co),
            Err(e) => {
                assert!(e.offset() <= data.len() as u64, "{len}: {e}");
                errors += 1;
            }
        }
    }
    // The section headers are at the end: nearly every prefix loses them.
    assert!(
        errors > data.len() * 9 / 10,
        "{errors} errors for {} prefixes",
        data.len()
    );
}

/// The identity check (`extract`'s) against the whole parse: whatever parses has the same
/// target verdict, and whatever the identity check refuses does not parse.
fn agree(data: &[u8], parsed: &Result<CodeObject<'_>, gfxkit_code_object::Error>) {
    match (CodeObject::check_identity(data), parsed) {
        (Ok(verdict), Ok(co)) => assert_eq!(verdict, co.target_mismatch()),
        (Err(e), Ok(_)) => panic!("the identity check refuses a code object that parses: {e}"),
        (_, Err(_)) => {}
    }
}

/// `encoded` as LLVM may also have written it: where xnack is always on, LLVM 22 writes the V4+
/// xnack field as "any" (gfxkit's choice) and LLVM main as "on"; both mean the same target ID.
fn written(encoded: u32, raw: u32) -> u32 {
    let always =
        gfxkit_spec::Processor::by_mach((encoded & 0xff) as u8).is_some_and(|p| p.xnack_always());
    if always && encoded & 0x300 == 0x100 && raw & 0x300 == 0x300 {
        encoded | 0x300
    } else {
        encoded
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn corrupted_objects_do_not_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut data = sample().to_vec();
        for (at, byte) in edits {
            let i = at.index(data.len());
            data[i] = byte;
        }
        let parsed = CodeObject::parse(&data);
        agree(&data, &parsed);
        if let Ok(co) = parsed {
            touch(&co);
        }
    }

    #[test]
    fn any_flags_decode_and_clean_ones_round_trip(raw in any::<u32>(), n in 2u8..9) {
        let cov = CodeObjectVersion(n);
        let d = EFlags::decode(raw, cov);
        let _ = d.to_string();
        prop_assert_eq!(d.raw(), raw);
        if let (Ok(id), true) = (d.target_id(), d.issues().is_empty()) {
            // Flags without issues are exactly what gfxkit (and LLVM) write for their target ID.
            prop_assert_eq!(EFlags::encode(&id, cov).map(|e| written(e, raw)), Ok(raw), "{} {}", id, cov);
        }
    }

    #[test]
    fn small_mach_values_round_trip_in_every_version(mach in 0u32..0x70, feat in 0u32..16, n in 2u8..7) {
        let raw = mach | (feat << 8);
        let cov = CodeObjectVersion(n);
        let d = EFlags::decode(raw, cov);
        if let (Ok(id), true) = (d.target_id(), d.issues().is_empty()) {
            prop_assert_eq!(EFlags::encode(&id, cov).map(|e| written(e, raw)), Ok(raw), "{} {}", id, cov);
        }
    }
}
