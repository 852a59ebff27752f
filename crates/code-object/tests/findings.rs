//! Inputs found by fuzzing the code-object reader (kept under `fuzz/regressions/code_object/`),
//! each with the error gfxkit must give for it.

use gfxkit_code_object::CodeObject;

#[test]
fn section_table_past_the_end() {
    // Found by fuzzing `code_object`: a code object whose `e_shoff` (0x1d90) lies past its end
    // (3472 bytes) was reported at 0x1d90, outside the file; the place is the `e_shoff` field.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/regressions/code_object/section-table-past-the-end.co"
    );
    let data = std::fs::read(path).unwrap();
    let e = CodeObject::parse(&data).unwrap_err();
    assert_eq!(e.offset(), 0x28);
    assert!(
        e.to_string().starts_with(
            "truncated: need 512 bytes at offset 0x1d90 (the section header table), the file \
             has 3472"
        ),
        "{e}"
    );
}
