//! Hand-built ELF files: layouts llc does not produce (notes only in a `PT_NOTE` segment, several
//! notes, foreign notes) and malformed identification bytes.

use gfxkit_code_object::{CodeObject, ErrorKind, Header};

/// `{"amdhsa.kernels": [{".name": "k", ".sgpr_count": 7}], "amdhsa.target": "amdgcn-amd-amdhsa--gfx1100"}`
fn metadata() -> Vec<u8> {
    let mut m = vec![0x82];
    m.push(0xa0 | 14);
    m.extend(b"amdhsa.kernels");
    m.extend([0x91, 0x82, 0xa5]);
    m.extend(b".name");
    m.extend([0xa1, b'k', 0xab]);
    m.extend(b".sgpr_count");
    m.push(7);
    m.push(0xa0 | 13);
    m.extend(b"amdhsa.target");
    let t = b"amdgcn-amd-amdhsa--gfx1100";
    m.extend([0xd9, t.len() as u8]);
    m.extend(t);
    m
}

fn note(owner: &str, ty: u32, desc: &[u8]) -> Vec<u8> {
    let mut n = Vec::new();
    n.extend((owner.len() as u32 + 1).to_le_bytes());
    n.extend((desc.len() as u32).to_le_bytes());
    n.extend(ty.to_le_bytes());
    n.extend(owner.as_bytes());
    n.push(0);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n.extend(desc);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n
}

/// ELF64 HSA V5 shared object for gfx1100 whose notes sit in one `PT_NOTE` segment and which has
/// no section headers.
fn segment_only(notes: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(b"\x7fELF");
    f.extend([2, 1, 1, 64, 3, 0, 0, 0, 0, 0, 0, 0]);
    f.extend(3u16.to_le_bytes()); // ET_DYN
    f.extend(224u16.to_le_bytes());
    f.extend(1u32.to_le_bytes());
    f.extend(0u64.to_le_bytes()); // entry
    f.extend(64u64.to_le_bytes()); // phoff
    f.extend(0u64.to_le_bytes()); // shoff
    f.extend(0x41u32.to_le_bytes()); // gfx1100
    f.extend(64u16.to_le_bytes());
    f.extend(56u16.to_le_bytes()); // phentsize
    f.extend(1u16.to_le_bytes()); // phnum
    f.extend(64u16.to_le_bytes());
    f.extend(0u16.to_le_bytes()); // shnum
    f.extend(0u16.to_le_bytes());
    let notes_off = 64u64 + 56;
    f.extend(4u32.to_le_bytes()); // PT_NOTE
    f.extend(4u32.to_le_bytes()); // PF_R
    f.extend(notes_off.to_le_bytes());
    f.extend(0u64.to_le_bytes());
    f.extend(0u64.to_le_bytes());
    f.extend((notes.len() as u64).to_le_bytes());
    f.extend((notes.len() as u64).to_le_bytes());
    f.extend(4u64.to_le_bytes());
    f.extend(notes);
    f
}

#[test]
fn metadata_found_in_a_note_segment_after_foreign_notes() {
    let meta = metadata();
    let mut notes = note("GNU", 3, b"build-id");
    notes.extend(note("AMDGPU", 33, b"not metadata"));
    let desc_off = 64 + 56 + notes.len() + 12 + 8;
    notes.extend(note("AMDGPU", 32, &meta));
    let f = segment_only(&notes);
    let co = CodeObject::parse(&f).unwrap();
    assert_eq!(co.target_id().unwrap().to_string(), "gfx1100");
    assert_eq!(co.elf_type(), 3);
    assert_eq!(co.metadata_offset(), Some(desc_off as u64));
    assert_eq!(co.kernels().len(), 1);
    assert_eq!(co.kernels()[0].name, "k");
    assert_eq!(co.kernels()[0].sgpr_count, Some(7));
    assert_eq!(co.metadata().unwrap().target_id_str(), Some("gfx1100"));
    assert!(co.issues().is_empty(), "{:?}", co.issues());
    assert_eq!(Header::parse(&f).as_ref(), Ok(co.header()));

    // The same without the metadata note: no kernels, no error.
    let f = segment_only(&note("GNU", 3, b"x"));
    let co = CodeObject::parse(&f).unwrap();
    assert!(co.metadata().is_none());
    assert!(co.kernels().is_empty());
}

#[test]
fn a_note_running_past_its_segment_is_an_error_at_the_segment() {
    let meta = metadata();
    let mut notes = note("AMDGPU", 32, &meta);
    // Claim a descriptor far larger than the segment.
    notes[4..8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let f = segment_only(&notes);
    let e = CodeObject::parse(&f).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::BadElf { .. }), "{e}");
    assert_eq!(e.offset(), 64 + 56);
}

#[test]
fn identification_errors_name_the_byte() {
    let good = segment_only(&[]);
    let mut big_endian = good.clone();
    big_endian[5] = 2;
    let e = CodeObject::parse(&big_endian).unwrap_err();
    assert_eq!(e.offset(), 5);
    assert!(e.to_string().contains("little-endian"), "{e}");

    let mut class = good.clone();
    class[4] = 7;
    let e = Header::parse(&class).unwrap_err();
    assert_eq!(e.offset(), 4);
    assert!(e.to_string().contains("EI_CLASS is 7"), "{e}");

    let e = CodeObject::parse(b"\x7fEL").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    let e = CodeObject::parse(b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0\0\0").unwrap_err();
    assert!(e.to_string().contains("needs 52 bytes"), "{e}");
    let e = CodeObject::parse(b"MZ\x90\0").unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::NotElf);
}

/// Code object V2 (`EI_ABIVERSION` 0) whose kernels are in a YAML `NT_AMD_HSA_METADATA` note
/// (owner `AMD`, type 10), hand-built from AMDGPUUsage's "Code Object V2 Metadata" layout:
/// llc-19 can no longer write V2.
#[test]
fn v2_yaml_metadata_lists_kernels() {
    let yaml = b"---\nVersion: [ 1, 0 ]\nKernels:\n  - Name: _Z4testPf\n    SymbolName: '_Z4testPf@kd'\n    Args:\n      - Name: out\n        TypeName: 'float*'\n        Size: 8\n        Align: 8\n        ValueKind: GlobalBuffer\n        AddrSpaceQual: Global\n    CodeProps:\n      KernargSegmentSize: 8\n      GroupSegmentFixedSize: 0\n      PrivateSegmentFixedSize: 0\n      WavefrontSize: 64\n      NumSGPRs: 16\n      NumVGPRs: 24\n      MaxFlatWorkGroupSize: 256\n...\n";
    let mut notes = note("AMD", 1, &[2, 0, 0, 0, 1, 0, 0, 0]); // NT_AMD_HSA_CODE_OBJECT_VERSION
    notes.extend(note("AMD", 10, yaml));
    let mut f = segment_only(&notes);
    f[8] = 0; // EI_ABIVERSION: V2
    f[48..52].copy_from_slice(&0u32.to_le_bytes());
    let co = CodeObject::parse(&f).unwrap();
    assert!(co.metadata().is_none());
    let ks = co.v2_kernels();
    assert_eq!(ks.len(), 1);
    assert_eq!(ks[0].name, "_Z4testPf");
    assert_eq!(ks[0].vgpr_count, Some(24));
    assert_eq!(ks[0].args[0].type_name.as_deref(), Some("float*"));
    let sums = gfxkit_code_object::summaries(&co, true);
    assert_eq!(sums.len(), 1);
    assert_eq!(sums[0].source, gfxkit_code_object::KernelSource::MetadataV2);
    assert_eq!(sums[0].demangled.as_deref(), Some("test(float*)"));
    assert_eq!(sums[0].max_flat_workgroup_size, Some(256));

    // A damaged YAML note is an error naming its offset.
    let mut notes = note("AMD", 10, b"Kernels: [ {");
    notes.extend(note("GNU", 3, b"x"));
    let mut f = segment_only(&notes);
    f[8] = 0;
    let e = CodeObject::parse(&f).unwrap_err();
    assert!(e.to_string().contains("not valid YAML"), "{e}");
    assert_eq!(e.offset(), 64 + 56 + 12 + 4);
}
