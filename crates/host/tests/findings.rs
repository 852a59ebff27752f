//! Inputs found by fuzzing host discovery (kept under `fuzz/regressions/host/`), each with what
//! gfxkit must report for it.

use gfxkit_host::{discover, Form, ProblemKind};

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
    let units = found.units().units;
    let ids: Vec<&str> = units
        .iter()
        .filter(|u| u.form == Form::ObjectBundle)
        .flat_map(|u| u.loose.iter().map(|e| e.id.as_str()))
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
    for u in found.units().units {
        for e in &u.loose {
            assert!(!e.id.is_empty());
        }
    }
}

#[test]
fn archive_member_name_not_utf8_is_reported_with_its_offset() {
    // A GNU archive with one member, `k\xff.o`, holding a small bundle.
    let id = b"hipv4-amdgcn-amd-amdhsa--gfx90a";
    let mut bundle = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    bundle.extend_from_slice(&1u64.to_le_bytes());
    bundle.extend_from_slice(&(32 + 24 + id.len() as u64).to_le_bytes());
    bundle.extend_from_slice(&4u64.to_le_bytes());
    bundle.extend_from_slice(&(id.len() as u64).to_le_bytes());
    bundle.extend_from_slice(id);
    bundle.extend_from_slice(b"\x7fELF");
    let mut ar = b"!<arch>\n".to_vec();
    let mut header = b"k\xff.o/".to_vec();
    header.resize(16, b' ');
    header.extend_from_slice(
        format!("{:<12}{:<6}{:<6}{:<8}{:<10}`\n", 0, 0, 0, 644, bundle.len()).as_bytes(),
    );
    assert_eq!(header.len(), 60);
    ar.extend_from_slice(&header);
    ar.extend_from_slice(&bundle);
    let found = discover(&ar);
    let units = found.units().units;
    assert_eq!(units.len(), 1, "{:?}", found.problems);
    assert_eq!(units[0].member.as_deref(), Some(r"k\xff.o"));
    let p = &found.problems[0];
    assert_eq!(
        p.kind,
        ProblemKind::MemberNameNotUtf8 {
            index: 0,
            name: r"k\xff.o".into(),
            bad_byte_offset: 9,
        }
    );
    assert_eq!(p.location.offset, 8);
}

#[test]
fn section_data_past_the_end() {
    // Found by fuzzing `host`: an object-bundle section whose `sh_offset` (0x16000000) lies
    // past the end of the 1558-byte file was reported at that offset, outside the file.
    let data = regression("section-data-past-the-end.bin");
    let found = discover(&data);
    let p = found
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::SectionOutsideFile { .. }))
        .expect("reported");
    assert_eq!(
        p.kind,
        ProblemKind::SectionOutsideFile {
            offset: 0x1600_0000,
            size: 0,
            file_size: 1558,
        }
    );
    // The section header that claims it.
    assert_eq!(p.location.offset, 0x588);
    for p in &found.problems {
        assert!(p.location.offset < data.len() as u64, "{p}");
    }
}

#[test]
fn f5_host_problem_offset_outside_input() {
    // An OffloadBinary (version 3, uncompressed) whose entry 0 puts its string table at
    // 0xa0000, past the 95-byte binary: the problem was reported at 0xa0000 of the 115-byte
    // input. It names the field that leads there, the entry's string offset at 0x30.
    let data = regression("f5-host-problem-offset-outside-input.bin");
    let found = discover(&data);
    let p = found
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::BadOffloadBinary(_)))
        .expect("the damage is reported");
    assert_eq!(p.location.offset, 0x30, "{p}");
    assert!(
        p.to_string()
            .contains("string entry 0 at 0xa0000 runs past the binary's 95 bytes"),
        "{p}"
    );
    for p in &found.problems {
        assert!((p.location.offset as usize) < data.len(), "{p}");
    }
}
