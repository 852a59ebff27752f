//! The program header table against the `PT_PHDR` entry that describes it. AMD's LLD 23 (ROCm
//! 7's toolchain) sizes the table of a code object without kernels for one more segment than
//! it keeps: it drops the empty executable segment afterwards and leaves its slot as zeros,
//! which `PT_PHDR` still covers (the empty gfx90a code objects of PyPI's jax-rocm7-pjrt 0.12.0
//! wheel: `PT_PHDR` of 504 bytes over 8 entries of 56). Such a code object is sound; a slot
//! holding a segment that `e_phnum` no longer counts is damage.

use gfxkit_code_object::CodeObject;
use gfxkit_testkit::{bundler_unbundle, HipBuild};

const PHDR: usize = 56;

fn u16_at(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(d[at..at + 2].try_into().unwrap())
}

fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(d[at..at + 4].try_into().unwrap())
}

fn u64_at(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
}

/// A code object linked by clang-19 (lld-19) from a translation unit without kernels.
fn empty_code_object() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let bundle = HipBuild::new(
        "extern \"C\" int host_only(int x) { return x + 1; }\n",
        &["gfx90a"],
    )
    .build(dir.path(), "empty");
    bundler_unbundle(
        &bundle,
        "hipv4-amdgcn-amd-amdhsa--gfx90a",
        &dir.path().join("empty.co"),
    )
}

/// `data` with the program header of type `p_type` taken out of the table: the entries after
/// it move up, `e_phnum` drops by one, and the freed last slot is left holding `fill`.
fn drop_segment(data: &[u8], p_type: u32, fill: Option<u8>) -> Vec<u8> {
    let mut d = data.to_vec();
    let phoff = u64_at(&d, 0x20) as usize;
    let phnum = usize::from(u16_at(&d, 0x38));
    let at = (0..phnum)
        .find(|&i| u32_at(&d, phoff + i * PHDR) == p_type)
        .expect("the segment is in the table");
    let end = phoff + phnum * PHDR;
    d.copy_within(phoff + (at + 1) * PHDR..end, phoff + at * PHDR);
    if let Some(b) = fill {
        d[end - PHDR..end].fill(b);
    }
    d[0x38..0x3a].copy_from_slice(&(phnum as u16 - 1).to_le_bytes());
    d
}

#[test]
fn a_phdr_covering_empty_slots_after_the_table_is_sound() {
    let data = empty_code_object();
    let co = CodeObject::parse(&data).unwrap();
    assert_eq!(co.kernels().len(), 0);
    // GNU_STACK: a segment of no bytes, as the dropped executable segment was.
    let lld23 = drop_segment(&data, object::elf::PT_GNU_STACK, Some(0));
    let co = CodeObject::parse(&lld23).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(co.target_id().unwrap().to_string(), "gfx90a");

    // The slot still holding a segment (`e_phnum` lowered over a real entry) is damage, as is
    // a table that runs past what PT_PHDR covers (`e_phnum` raised).
    let stale = drop_segment(&data, object::elf::PT_GNU_STACK, None);
    let e = CodeObject::parse(&stale).unwrap_err().to_string();
    assert!(
        e.contains("PT_PHDR says the program header table is"),
        "{e}"
    );
    let mut raised = data.clone();
    let phnum = u16_at(&raised, 0x38);
    raised[0x38..0x3a].copy_from_slice(&(phnum + 1).to_le_bytes());
    assert!(CodeObject::parse(&raised).is_err());
    // Zeros that are not a whole number of entries are not empty slots either.
    let mut ragged = lld23;
    let phoff = u64_at(&ragged, 0x20) as usize;
    let at = (0..usize::from(u16_at(&ragged, 0x38)))
        .find(|&i| u32_at(&ragged, phoff + i * PHDR) == object::elf::PT_PHDR)
        .unwrap();
    let filesz = phoff + at * PHDR + 32;
    let size = u64_at(&ragged, filesz) - 8;
    ragged[filesz..filesz + 8].copy_from_slice(&size.to_le_bytes());
    let e = CodeObject::parse(&ragged).unwrap_err().to_string();
    assert!(e.contains("PT_PHDR says"), "{e}");
}
