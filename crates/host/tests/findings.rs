//! Inputs found by fuzzing host discovery (kept under `fuzz/regressions/host/`), each with what
//! gfxkit must report for it.

use gfxkit_host::{discover, ProblemKind};

fn regression(name: &str) -> Vec<u8> {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/regressions/host/").to_owned() + name;
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn f1_object_bundle_non_utf8_section_name() {
    // Section 10 is `__CLANG_OFFLOAD_BUNDLE__hipv4-amdgc\xff-amd-amdhsa--gfx906`: its name
    // starts at 0x17f in the section-name table and the bad byte is at 0x1a2.
    let data = regression("f1-object-bundle-non-utf8-section-name.o");
    let found = discover(&data);
    let bad: Vec<_> = found
        .problems
        .iter()
        .filter(|p| matches!(p.kind, ProblemKind::SectionNameNotUtf8 { .. }))
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", found.problems);
    assert_eq!(bad[0].location.offset, 0x17f);
    assert_eq!(
        bad[0].kind,
        ProblemKind::SectionNameNotUtf8 {
            index: 10,
            name: r"__CLANG_OFFLOAD_BUNDLE__hipv4-amdgc\xff-amd-amdhsa--gfx906".into(),
            bad_byte_offset: 0x1a2,
        }
    );
    // Only the host entry is listed: nothing under an empty or replaced ID.
    let ids: Vec<&str> = found
        .object_bundles
        .iter()
        .flat_map(|b| b.entries.iter().map(|e| e.id))
        .collect();
    assert_eq!(ids, ["host-x86_64-unknown-linux-gnu-"]);
}

#[test]
fn f1_host_discover_crash() {
    // The same damage in an object inside an `ar` archive.
    let data = regression("f1-host-discover-crash.bin");
    let found = discover(&data);
    let p = found
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::SectionNameNotUtf8 { .. }))
        .expect("the bad name is reported");
    assert_eq!(p.location.member.as_deref(), Some("obj_bundle.o"));
    assert!(p.to_string().contains("is not UTF-8"), "{p}");
    for b in &found.object_bundles {
        for e in &b.entries {
            assert!(!e.id.is_empty());
        }
    }
}
