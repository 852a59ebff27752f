//! Inputs found by fuzzing the prune planner (kept under `fuzz/regressions/prune/`; the first
//! byte picks the fuzz target's transform, the rest is the file), each with the error the
//! planner must refuse it with: the input already breaks a rule the rewritten file is checked
//! against.

use gfxkit_shrink::{
    rewrite, Conversion, EntryFilter, ErrorKind, Pattern, SegmentProblem, Transform, WrapperProblem,
};

fn regression(name: &str) -> Vec<u8> {
    regression_with_selector(name).1
}

/// The input's first byte (which picks the fuzz target's transform) and the file after it.
fn regression_with_selector(name: &str) -> (u8, Vec<u8>) {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/regressions/prune/").to_owned() + name;
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (data[0], data[1..].to_vec())
}

/// The error every transform gets for `file` (the planner checks the input before it plans).
fn refusal(file: &[u8]) -> gfxkit_shrink::Error {
    let transforms = [
        Transform {
            selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
            conversion: Conversion::Keep,
            limits: Default::default(),
        },
        Transform {
            selection: EntryFilter::All,
            conversion: Conversion::Uncompressed,
            limits: Default::default(),
        },
    ];
    let errors: Vec<_> = transforms
        .iter()
        .map(|t| match rewrite(file, t) {
            Ok(_) => panic!("rewritten: {:?}", t.selection),
            Err(e) => e,
        })
        .collect();
    assert_eq!(errors[0], errors[1]);
    errors[0].clone()
}

#[test]
fn segment_past_the_end() {
    // Program header 8 (PT_GNU_STACK, at 0x200) claims 0x10000000000 file bytes.
    let e = refusal(&regression("segment-past-the-end.bin"));
    assert_eq!(e.offset, 0x200);
    assert_eq!(
        e.kind,
        ErrorKind::Segment {
            index: 8,
            problem: SegmentProblem::PastTheEnd {
                offset: 0,
                filesz: 0x100_0000_0000,
                file_size: 25872,
            },
        }
    );
    assert_eq!(
        e.to_string(),
        "segment 8: 0x10000000000 bytes at 0x0 run past the end of the file (0x6510 bytes) \
         (at offset 0x200)"
    );
}

#[test]
fn segment_filesz_over_memsz() {
    let e = refusal(&regression("segment-filesz-over-memsz.bin"));
    assert_eq!(e.offset, 0xb0);
    assert_eq!(
        e.kind,
        ErrorKind::Segment {
            index: 2,
            problem: SegmentProblem::FileszOverMemsz {
                filesz: 0x2ff,
                memsz: 0x2a0,
            },
        }
    );
}

#[test]
fn segment_offset_address_disagree() {
    let e = refusal(&regression("segment-offset-address-disagree.bin"));
    assert_eq!(e.offset, 0x120);
    assert_eq!(
        e.kind,
        ErrorKind::Segment {
            index: 4,
            problem: SegmentProblem::Incongruent {
                offset: 0x5536,
                vaddr: 0x8538,
                align: 0x1000,
            },
        }
    );
    assert!(
        e.to_string()
            .contains("disagree modulo the alignment 0x1000"),
        "{e}"
    );
}

#[test]
fn wrapper_misses_bundle_after_rewrite() {
    // The only wrapper (at 0x5540) has a relocation of unknown type 0xf9 with the addend
    // 0x18c0_0001, outside .hip_fatbin. The planner once took it as setting the pointer (to
    // no bundle); like host discovery it now counts only RELATIVE and R_X86_64_64 relocations
    // in a linked file, so the wrapper's pointer is its stored null. Either way the rewritten
    // file's wrapper would lead nowhere.
    let e = refusal(&regression("wrapper-misses-bundle-after-rewrite.bin"));
    assert_eq!(e.offset, 0x5540);
    assert_eq!(
        e.kind,
        ErrorKind::Wrapper {
            index: 0,
            problem: WrapperProblem::Null,
        }
    );
    assert_eq!(
        e.to_string(),
        "wrapper 0: null bundle pointer, and no relocation sets it (at offset 0x5540)"
    );
    // Made R_X86_64_RELATIVE (entry 4 of .rela.dyn at 0x570; the type is r_info's low half),
    // the relocation sets the pointer, to no bundle.
    let mut relative = regression("wrapper-misses-bundle-after-rewrite.bin");
    let r_info = 0x570 + 4 * 24 + 8;
    relative[r_info..r_info + 4].copy_from_slice(&8u32.to_le_bytes());
    let e = refusal(&relative);
    assert_eq!(
        e.kind,
        ErrorKind::Wrapper {
            index: 0,
            problem: WrapperProblem::NoBundle {
                target: 0x18c0_0001
            },
        }
    );
    assert_eq!(
        e.to_string(),
        "wrapper 0: points to 0x18c00001, where no bundle starts (at offset 0x5540)"
    );
}

#[test]
fn wrapper_relocation_without_symbol_table() {
    // host.o (in an archive) has the one relocation of its wrapper, but the section that
    // relocation links to is not a symbol table (type 0xf60002): the relocation sets nothing,
    // as host discovery reads it, so the wrapper's pointer is its stored null.
    // The planner refused it before it looked at the wrappers: the relocations of .text name
    // symbols of that same non-table.
    let e = refusal(&regression("wrapper-relocation-without-symbol-table.bin"));
    assert_eq!(e.member.as_deref(), Some("host.o"));
    // Relocation 0 of .rela.text (at 0x42b0 in host.o, whose data starts at 0xc4).
    assert_eq!(e.offset, 0xc4 + 0x42b0);
    assert_eq!(
        e.to_string(),
        "member host.o: malformed ELF file: relocation 0 of .rela.text names symbol 12, but \
         .rela.text links to section 18, which is not a symbol table (at offset 0x4374)"
    );
}

#[test]
fn fatbin_section_outside_file() {
    // .hip_fatbin claims 0 bytes at 0xc00003000 in a 20344-byte file. Discovery (which the
    // verification of every rewrite reads) refuses the section; the plan, which skips empty
    // sections, had accepted it.
    let e = refusal(&regression("fatbin-section-outside-file.bin"));
    assert_eq!(e.offset, 0x4b78); // the section header
    assert_eq!(
        e.to_string(),
        "malformed ELF file: section data (0 bytes at 0xc00003000) runs past the end of the \
         file (20344 bytes) (at offset 0x4b78)"
    );
}

#[test]
fn fatbin_of_section_type_null() {
    // .hip_fatbin has section type 0: the plan reads no bytes there, discovery reads it by
    // its name and finds a bundle.
    let e = refusal(&regression("fatbin-of-section-type-null.bin"));
    assert_eq!(e.offset, 0x1000);
    assert_eq!(
        e.to_string(),
        "cannot rewrite: discovery finds 1 bundle here where the rewrite reads 0 (a \
         .hip_fatbin that is not one by its section type or layout) (at offset 0x1000)"
    );
}

#[test]
fn new_segment_on_section_addresses() {
    // The text segment's header was damaged (no bytes, address 0) while .init, .text and the
    // rest keep their addresses from 0x1000. Made uncompressed, .hip_fatbin grows and moves
    // to a new segment, which the plan had put at 0x1000: an address readers map through
    // .init. It now goes above every section's addresses, and the rewrite verifies.
    let (selector, input) = regression_with_selector("new-segment-on-section-addresses.bin");
    assert_eq!(selector, 4); // everything kept, made uncompressed
    let t = Transform {
        selection: EntryFilter::All,
        conversion: Conversion::Uncompressed,
        limits: Default::default(),
    };
    let input = &input[..];
    let out = rewrite(input, &t).unwrap();
    gfxkit_shrink::verify(input, &out, &Default::default()).unwrap();
    match &out.report.regions[0].layout {
        gfxkit_shrink::Layout::Relocated { address, .. } => {
            assert!(*address >= 0x5048, "new segment at {address:#x}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn second_phdr_segment() {
    // Program header 8 is a second PT_PHDR (zero bytes at 0x800000, past the end of the
    // file). The rewrite (keep gfx90a, to CCOB v1) shrinks .hip_fatbin; it used to give every
    // PT_PHDR the table's new size, which made this one run past the end. Only the PT_PHDR at
    // e_phoff describes the table; the other is left as it is, and the rewrite verifies.
    let (selector, input) = regression_with_selector("second-phdr-segment.bin");
    assert_eq!(selector, 9);
    let t = Transform {
        selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
        conversion: Conversion::Compressed {
            version: 1,
            method: gfxkit_shrink::Method::Zstd,
            level: Some(1),
        },
        limits: Default::default(),
    };
    let input = &input[..];
    let out = rewrite(input, &t).unwrap();
    gfxkit_shrink::verify(input, &out, &Default::default()).unwrap();
    let bytes = out.bytes();
    // Program header 8 (at 0x40 + 8 * 56) keeps zero file bytes.
    let filesz = u64::from_le_bytes(bytes[0x40 + 8 * 56 + 32..][..8].try_into().unwrap());
    assert_eq!(filesz, 0);
}

#[test]
fn load_segment_at_the_top_of_the_address_space() {
    // Section 13 at address 0xffff_ffff_ffff_ed72: a grown `.hip_fatbin` needs a new segment
    // above every section's addresses, which put it at 0xffff_ffff_ffff_f000, where its 0x3248
    // bytes ran past the top of the address space (the check of the output overflowed
    // counting pages). The planner now refuses that, and the segment rules refuse any loadable
    // segment that runs past the top, in an input or a rewritten file.
    let (selector, file) =
        regression_with_selector("load-segment-at-the-top-of-the-address-space.bin");
    assert_eq!(selector, 4);
    let t = Transform {
        selection: EntryFilter::All,
        conversion: Conversion::Uncompressed,
        limits: Default::default(),
    };
    let e = rewrite(&file, &t).map(|_| ()).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Unsupported("segments reach the top of the address space".into()),
        "{e}"
    );
    // A loadable segment past the top in the input itself is refused where its header is.
    let mut past = file.clone();
    let ph8 = 0x40 + 8 * 56;
    // Its p_vaddr (p_align is 1, so any address is congruent to its offset).
    past[ph8 + 16..ph8 + 24].copy_from_slice(&0xffff_ffff_ffff_ff00u64.to_le_bytes());
    let e = refusal(&past);
    assert_eq!(e.offset, ph8 as u64);
    assert_eq!(
        e.kind,
        ErrorKind::Segment {
            index: 8,
            problem: SegmentProblem::PastTheTop {
                vaddr: 0xffff_ffff_ffff_ff00,
                memsz: 0x220,
            },
        }
    );
}

#[test]
fn section_without_bytes_at_the_end_of_the_offsets() {
    // A relocatable object whose section 15 (type 0, no file bytes) names the offset
    // 0xffff_ffff_ffff_0000. The rewrite grows .hip_fatbin by 118,792 bytes and moves every
    // later section up by that much: the new offset overflowed (a panic with overflow checks
    // on). The rewrite is now refused at that section's header.
    let (selector, file) =
        regression_with_selector("section-without-bytes-at-the-end-of-the-offsets.bin");
    assert_eq!(selector, 1);
    let t = Transform {
        selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
        conversion: Conversion::Keep,
        limits: Default::default(),
    };
    let e = rewrite(&file, &t).map(|_| ()).unwrap_err();
    let shoff = u64::from_le_bytes(file[0x28..0x30].try_into().unwrap());
    assert_eq!(e.offset, shoff + 15 * 64, "{e}");
    assert!(
        e.to_string()
            .contains("at offset 0xffffffffffff0000 cannot move 118792 bytes up"),
        "{e}"
    );
}
