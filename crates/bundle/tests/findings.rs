//! Inputs found by fuzzing the object-bundle reader (kept under
//! `fuzz/regressions/bundle_object/`), each with the error gfxkit must give for it.

use gfxkit_bundle::object;

fn regression(name: &str) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/regressions/bundle_object/"
    )
    .to_owned()
        + name;
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn f1_object_bundle_non_utf8_section_name() {
    let data = regression("f1-object-bundle-non-utf8-section-name.o");
    assert!(object::is_object(&data));
    let e = object::read_object(&data).unwrap_err();
    // The first byte that is not UTF-8, in the section-name table.
    assert_eq!(e.offset, Some(0x1a2));
    let msg = e.to_string();
    assert!(msg.contains("section 10 name"), "{msg}");
    assert!(msg.contains(r"amdgc\xff-amd"), "{msg}");
    assert!(msg.contains("is not UTF-8"), "{msg}");
}

#[test]
fn f4_host_object_symtab_offset_overflow() {
    // `.symtab` (section 8) has `sh_offset` 0xffffffffffffffff: refused, never wrapped around.
    let data = regression("f4-host-object-symtab-offset-overflow.o");
    assert!(object::is_object(&data));
    let msg = object::strip_bundle_sections(&data)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("section 8 (type 2): 96 bytes at 0xffffffffffffffff run past the end"),
        "{msg}"
    );
}

#[test]
fn f4_section_table_over_the_elf_header_is_refused() {
    // The same file with `.symtab` moved onto the ELF header (offset 0x10): its symbol
    // section indices would be rewritten inside the header.
    let mut data = regression("f4-host-object-symtab-offset-overflow.o");
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    let symtab_offset = shoff + 8 * 64 + 24;
    data[symtab_offset..symtab_offset + 8].copy_from_slice(&0x10u64.to_le_bytes());
    let msg = object::strip_bundle_sections(&data)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("section 8 (type 2) at 0x10 overlaps the ELF header"),
        "{msg}"
    );
    // In its place the section is rewritten.
    let mut ok = regression("f4-host-object-symtab-offset-overflow.o");
    ok[symtab_offset..symtab_offset + 8].copy_from_slice(&0xb0u64.to_le_bytes());
    let stripped = object::strip_bundle_sections(&ok).unwrap();
    assert_eq!(&stripped[..0x28], &ok[..0x28]);
}
