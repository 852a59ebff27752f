//! Inputs found by fuzzing `kpack split` and `inline` (kept under
//! `fuzz/regressions/kpack_split/`), each with what the split must do with it.

use gfxkit_kpack::error::ErrorKind;
use gfxkit_kpack::split::split_binary;

fn regression(name: &str) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/regressions/kpack_split/"
    )
    .to_owned()
        + name;
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How `split_binary` refuses `data`.
fn split_refusal(data: &[u8]) -> gfxkit_kpack::error::Error {
    split_binary(data, "lib", &["lib_@GFXARCH@.kpack".into()])
        .map(|_| ())
        .unwrap_err()
}

#[test]
fn segment_past_the_end_of_the_file() {
    // A clang-built library with its third PT_LOAD damaged: 0x617368 file bytes from 0x17d0 in
    // an 8240-byte file, at a wild address. The split used to lay the file out around it; the
    // inline then put `.hip_fatbin` where that segment claimed the file, and the binary did
    // not split again. Both now refuse an input whose segments break the rewrite's rules, at
    // the program header.
    let data = regression("segment-past-the-end-of-the-file.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x40 + 3 * 56, "{e}");
    match &e.kind {
        ErrorKind::Rewrite(m) => assert!(
            m.contains("segment 3") && m.contains("run past the end of the file"),
            "{m}"
        ),
        k => panic!("{k:?}"),
    }
    let e = gfxkit_shrink::kpack::inline_elf(&data, Vec::new(), 4096).unwrap_err();
    assert_eq!(e.offset, 0x40 + 3 * 56, "{e}");
}

#[test]
fn wrapper_relocation_of_type_none() {
    // A binary inlined from a split whose one wrapper pointer relocation, at 0x7548, has type
    // R_X86_64_NONE (0) with the addend 0x8000 of its bundle. The split took any relocation
    // there as setting the pointer and found the bundle; host discovery (and so the runtime's
    // view gfxkit checks against) counts only RELATIVE and R_X86_64_64, and saw a null
    // pointer, so the split binary's wrapper did not lead to its marker. Both now follow the
    // one rule: the wrapper points nowhere, and the split is refused at the wrapper.
    let data = regression("wrapper-relocation-of-type-none.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x2540, "{e}");
    assert_eq!(
        e.kind,
        ErrorKind::Rewrite(
            "cannot rewrite: a wrapper's bundle pointer is null and no relocation sets it".into()
        ),
        "{e}"
    );
}

/// The file offset and size of section `index` of the ELF file `data`.
fn section_bytes(data: &[u8], index: usize) -> &[u8] {
    let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap()) as usize;
    let rec = u64_at(0x28) + index * 64;
    let (offset, size) = (u64_at(rec + 24), u64_at(rec + 32));
    &data[offset..offset + size]
}

#[test]
fn section_inside_the_section_header_table() {
    // A clang-built library whose .fini_array (section 17) says its 8 bytes are at 0x5270,
    // inside the section header table that ends the file. The split writes the table again at
    // the end and dropped the old one with those bytes: the split binary's .fini_array led
    // into its new section names, and the binary inlined from it did not split again (that
    // section then overlapped the new .hip_fatbin). The old table is now dropped only when no
    // section or segment reaches into it.
    let data = regression("section-inside-the-section-header-table.bin");
    let split = split_binary(&data, "lib", &["lib_@GFXARCH@.kpack".into()]).unwrap();
    gfxkit_kpack::split::check_split(&split).unwrap();
    assert_eq!(
        section_bytes(&split.host, 17),
        section_bytes(&data, 17),
        "the split binary's .fini_array"
    );
}

#[test]
fn section_names_not_a_string_table() {
    // A binary inlined from a split whose section name table (section 30) has type 0. The
    // split rewrites that table with the marker's name added, and read it as empty (a section
    // of type 0 has no contents), so every other section's name led past the end of the new
    // table. Splitting and inlining now refuse a name table that is not a string table.
    let data = regression("section-names-not-a-string-table.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x62f0 + 30 * 64, "{e}");
    assert!(
        e.to_string()
            .contains("section 30 (e_shstrndx) is not a string table"),
        "{e}"
    );
}

#[test]
fn relocations_not_whole_records() {
    // A binary inlined from a split whose .rela.dyn (section 7, at 0x570) holds 458 bytes,
    // 19 records and 2 bytes over. The split read the 19 records and found the wrapper's
    // pointer among them; host discovery refuses a table that is not whole records and saw
    // no relocation, so the split binary's wrapper did not lead to its marker. The rewrite's
    // reader of symbol and relocation tables now refuses such a table, at the section.
    let data = regression("relocations-not-whole-records.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x570, "{e}");
    assert!(
        e.to_string()
            .contains("section .rela.dyn holds 458 bytes, not a whole number of 24-byte"),
        "{e}"
    );
}

#[test]
fn wrapper_relocation_against_no_symbol() {
    // A binary inlined from a split whose wrapper pointer relocation (entry 4 of .rela.dyn, at
    // 0x5d0) is R_X86_64_64 against symbol 0 with the addend 0x8000 of its bundle: an absolute
    // address, not one relative to where the library is loaded. The rewrite took it as
    // pointing to the bundle and, patching only RELATIVE addends, left it there; host
    // discovery leaves it unresolved. The rewrite now refuses it at the relocation.
    let data = regression("wrapper-relocation-against-no-symbol.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x5d0, "{e}");
    assert!(
        e.to_string().contains(
            "relocation 4 sets wrapper 0's pointer to the absolute address 0x8000 \
             (R_X86_64_64 against no symbol)"
        ),
        "{e}"
    );
    // Against symbol 1 (undefined __gmon_start__, value 0) the pointer is resolved only when
    // loading: the split, which rewrites only RELATIVE addends, refuses it as well.
    let mut with_symbol = data.clone();
    let r_info = 0x5d0 + 8;
    with_symbol[r_info + 4..r_info + 8].copy_from_slice(&1u32.to_le_bytes());
    let e = split_refusal(&with_symbol);
    assert_eq!(e.offset, 0x5d0, "{e}");
    assert!(
        e.to_string()
            .contains("a wrapper pointer is a symbol relocation (only RELATIVE is rewritten)"),
        "{e}"
    );
}

#[test]
fn section_on_the_addresses_of_hip_fatbin() {
    // A binary inlined from a split whose section 32 (type 0, allocated, unnamed) claims the
    // addresses 0x2..0xf001, over .hip_fatbin's 0x8000..0xb018. The marker took those
    // addresses; host discovery, which maps an address to the file through the sections
    // first, found section 32 there (not the emptied .hip_fatbin) and no marker. The split
    // now refuses a section that claims .hip_fatbin's addresses, naming it.
    let data = regression("section-on-the-addresses-of-hip-fatbin.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x62f0 + 32 * 64, "{e}");
    assert!(
        e.to_string()
            .contains("section 32 (unnamed) claims addresses of .hip_fatbin (0x8000..0xb018)"),
        "{e}"
    );
}

#[test]
fn relocation_above_every_segment() {
    // A library whose RELATIVE relocation at 0x1858 stores 0x3600, above every segment and
    // section (they end at 0x1a11). The inline put its new .hip_fatbin at 0x2000..0x5018,
    // over that address, and the inlined binary did not split again (a pointer into
    // .hip_fatbin not from a wrapper). A new segment now goes above every address a RELATIVE
    // relocation stores too, so split, inline, split works.
    let data = regression("relocation-above-every-segment.bin");
    let search = ["lib_@GFXARCH@.kpack".to_owned()];
    let split = split_binary(&data, "lib", &search).unwrap();
    let mut archives = Vec::new();
    for (arch, kernels) in gfxkit_kpack::split::group_by_arch(&split.kernels) {
        let ins: Vec<_> = kernels
            .iter()
            .map(|k| gfxkit_kpack::write::KernelIn {
                key: &k.key,
                arch: &k.arch,
                bytes: &k.bytes,
            })
            .collect();
        let meta = gfxkit_kpack::write::ArchiveMeta {
            group_name: "lib".into(),
            arch_family: arch.clone(),
            arches: vec![arch],
        };
        archives.push(
            gfxkit_kpack::write::write_archive(&meta, &ins, gfxkit_kpack::write::Compression::None)
                .unwrap(),
        );
    }
    let parsed: Vec<_> = archives
        .iter()
        .map(|a| gfxkit_kpack::Archive::parse(a).unwrap())
        .collect();
    let refs: Vec<_> = parsed.iter().collect();
    let inlined = gfxkit_kpack::split::inline_binary(&split.host, &refs).unwrap();
    let bytes = inlined.output.try_to_vec().unwrap();
    let again = split_binary(&bytes, "lib", &search).unwrap();
    assert_eq!(again.kernels.len(), split.kernels.len());
}

#[test]
fn hip_fatbin_at_the_top_of_the_address_space() {
    // A library whose .hip_fatbin claims 0x3018 bytes at 0xffff_ffff_ffff_f000: the end of its
    // addresses overflowed (a panic in a build with overflow checks) before the split checked
    // that the section lies in a segment. It is now refused first, at the section's bytes.
    let data = regression("hip-fatbin-at-the-top-of-the-address-space.bin");
    let e = split_refusal(&data);
    assert_eq!(e.offset, 0x1000, "{e}");
    assert!(
        e.to_string()
            .contains(".hip_fatbin's addresses run past the top of the address space"),
        "{e}"
    );
}
