//! `gfxkit inspect`: objects built by llc-19 (checked against llvm-readelf), a synthetic code
//! object with hand-written metadata (golden text and JSON, re-blessed with `GFXKIT_BLESS=1`),
//! and bad inputs (typed errors naming the file, exit 2).

mod common;

use common::{check_golden, gfxkit};
use gfxkit_testkit::{llc_object, llvm_tool, run_ok};
use std::path::Path;
use std::process::Command;

// ---- a tiny MessagePack writer and ELF64 generator for synthetic code objects ----

fn mp_str(out: &mut Vec<u8>, s: &str) {
    assert!(s.len() < 256);
    if s.len() < 32 {
        out.push(0xa0 | s.len() as u8);
    } else {
        out.extend([0xd9, s.len() as u8]);
    }
    out.extend(s.as_bytes());
}

fn mp_uint(out: &mut Vec<u8>, v: u16) {
    if v < 128 {
        out.push(v as u8);
    } else {
        out.push(0xcd);
        out.extend(v.to_be_bytes());
    }
}

fn kernel(out: &mut Vec<u8>, name: &str, fields: &[(&str, u16)]) {
    out.push(0x80 | (fields.len() as u8 + 2));
    mp_str(out, ".name");
    mp_str(out, name);
    mp_str(out, ".symbol");
    mp_str(out, &format!("{name}.kd"));
    for (k, v) in fields {
        mp_str(out, k);
        mp_uint(out, *v);
    }
}

/// Metadata for a gfx90a:sramecc+:xnack- code object V5 with two kernels.
fn metadata() -> Vec<u8> {
    let mut m = vec![0x83];
    mp_str(&mut m, "amdhsa.version");
    m.extend([0x92, 1, 2]);
    mp_str(&mut m, "amdhsa.target");
    mp_str(&mut m, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    mp_str(&mut m, "amdhsa.kernels");
    m.push(0x92);
    kernel(
        &mut m,
        "saxpy",
        &[
            (".kernarg_segment_size", 280),
            (".sgpr_count", 18),
            (".vgpr_count", 6),
            (".agpr_count", 0),
            (".group_segment_fixed_size", 0),
            (".private_segment_fixed_size", 0),
            (".wavefront_size", 64),
        ],
    );
    kernel(
        &mut m,
        "reduce_shared",
        &[
            (".kernarg_segment_size", 24),
            (".sgpr_count", 22),
            (".vgpr_count", 132),
            (".agpr_count", 4),
            (".group_segment_fixed_size", 4096),
            (".private_segment_fixed_size", 16),
            (".wavefront_size", 64),
        ],
    );
    m
}

/// A relocatable ELF64 with a `.note` section holding one note, and `.shstrtab`.
fn synth_elf(
    machine: u16,
    osabi: u8,
    abi_version: u8,
    flags: u32,
    note: Option<(&str, u32, &[u8])>,
) -> Vec<u8> {
    let pad4 = |v: &mut Vec<u8>| {
        while v.len() % 4 != 0 {
            v.push(0)
        }
    };
    let mut note_bytes = Vec::new();
    if let Some((owner, ty, desc)) = note {
        note_bytes.extend((owner.len() as u32 + 1).to_le_bytes());
        note_bytes.extend((desc.len() as u32).to_le_bytes());
        note_bytes.extend(ty.to_le_bytes());
        note_bytes.extend(owner.as_bytes());
        note_bytes.push(0);
        pad4(&mut note_bytes);
        note_bytes.extend(desc);
        pad4(&mut note_bytes);
    }
    let shstrtab = b"\0.note\0.shstrtab\0";
    let note_off = 64u64;
    let str_off = note_off + note_bytes.len() as u64;
    let mut sh_off = str_off + shstrtab.len() as u64;
    sh_off = (sh_off + 7) & !7;

    let mut f = Vec::new();
    f.extend(b"\x7fELF");
    f.extend([2, 1, 1, osabi, abi_version, 0, 0, 0, 0, 0, 0, 0]);
    f.extend(1u16.to_le_bytes()); // ET_REL
    f.extend(machine.to_le_bytes());
    f.extend(1u32.to_le_bytes());
    f.extend(0u64.to_le_bytes()); // entry
    f.extend(0u64.to_le_bytes()); // phoff
    f.extend(sh_off.to_le_bytes());
    f.extend(flags.to_le_bytes());
    f.extend(64u16.to_le_bytes()); // ehsize
    f.extend(0u16.to_le_bytes()); // phentsize
    f.extend(0u16.to_le_bytes()); // phnum
    f.extend(64u16.to_le_bytes()); // shentsize
    f.extend(3u16.to_le_bytes()); // shnum
    f.extend(2u16.to_le_bytes()); // shstrndx
    assert_eq!(f.len(), 64);
    f.extend(&note_bytes);
    f.extend(shstrtab);
    f.resize(sh_off as usize, 0);
    let section = |f: &mut Vec<u8>, name: u32, ty: u32, off: u64, size: u64, align: u64| {
        f.extend(name.to_le_bytes());
        f.extend(ty.to_le_bytes());
        f.extend(0u64.to_le_bytes()); // flags
        f.extend(0u64.to_le_bytes()); // addr
        f.extend(off.to_le_bytes());
        f.extend(size.to_le_bytes());
        f.extend(0u32.to_le_bytes()); // link
        f.extend(0u32.to_le_bytes()); // info
        f.extend(align.to_le_bytes());
        f.extend(0u64.to_le_bytes()); // entsize
    };
    section(&mut f, 0, 0, 0, 0, 0);
    section(&mut f, 1, 7, note_off, note_bytes.len() as u64, 4); // SHT_NOTE
    section(&mut f, 7, 3, str_off, shstrtab.len() as u64, 1); // SHT_STRTAB
    f
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn synthetic_object_golden_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let meta = metadata();
    let elf = synth_elf(224, 64, 3, 0xe3f, Some(("AMDGPU", 32, &meta)));
    let path = write(dir.path(), "synthetic.co", &elf);

    let (code, out, err) = gfxkit(&["inspect", &path]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    let shown = out.replace(&path, "<FILE>");
    check_golden("inspect_golden", "synthetic_text", &shown);

    let (code, out, err) = gfxkit(&["inspect", "--json", &path]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["code_object_version"], 5);
    assert_eq!(v["os_abi"], "hsa");
    assert_eq!(v["e_flags"], 0xe3f);
    assert_eq!(v["processor"], "gfx90a");
    assert_eq!(v["target_id"], "gfx90a:sramecc+:xnack-");
    assert_eq!(v["xnack"], "off");
    assert_eq!(v["sramecc"], "on");
    let kernels = v["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2);
    assert_eq!(kernels[1]["name"], "reduce_shared");
    assert_eq!(kernels[1]["group_segment_fixed_size"], 4096);
    assert_eq!(kernels[1]["vgpr_count"], 132);
    assert_eq!(kernels[1]["agpr_count"], 4);
    assert_eq!(
        kernels[0]["max_flat_workgroup_size"],
        serde_json::Value::Null
    );
    assert_eq!(v["issues"].as_array().unwrap().len(), 0);
    assert_eq!(v["metadata"]["amdhsa.kernels"][0][".symbol"], "saxpy.kd");
    let shown = out.replace(&path, "<FILE>");
    check_golden("inspect_golden", "synthetic_json", &shown);
}

#[test]
fn mismatches_and_unknown_values_are_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let meta = metadata();
    // e_flags say gfx906 while the metadata says gfx90a; a reserved bit is set.
    let elf = synth_elf(224, 64, 3, 0x1052f, Some(("AMDGPU", 32, &meta)));
    let path = write(dir.path(), "mismatch.co", &elf);
    let (code, out, err) = gfxkit(&["inspect", &path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("gfx906"), "{out}");
    assert!(err.contains("reserved e_flags bits set: 0x10000"), "{err}");
    assert!(
        err.contains("amdhsa.target says gfx90a:sramecc+:xnack-"),
        "{err}"
    );
    assert!(err.contains(&path), "warnings name the file: {err}");

    // Unknown processor, unknown (future) code-object version, no note.
    let elf = synth_elf(224, 64, 9, 0x3fe, None);
    let path = write(dir.path(), "future.co", &elf);
    let (code, out, err) = gfxkit(&["inspect", "--json", &path]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["processor"], "unknown (0xfe)");
    assert_eq!(v["target_id"], serde_json::Value::Null);
    assert_eq!(v["code_object_version"], 11);
    assert_eq!(v["kernels"].as_array().unwrap().len(), 0);
    assert_eq!(v["metadata"], serde_json::Value::Null);
    let issues = v["issues"].to_string();
    assert!(
        issues.contains("unknown code object version V11"),
        "{issues}"
    );

    // A PAL object: no HSA version, V3 bits.
    let elf = synth_elf(224, 65, 0, 0x336, None);
    let path = write(dir.path(), "pal.co", &elf);
    let (_, out, _) = gfxkit(&["inspect", "--json", &path]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["os_abi"], "pal");
    assert_eq!(v["code_object_version"], serde_json::Value::Null);
    assert_eq!(v["processor"], "gfx1030");
}

#[test]
fn bad_inputs_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let meta = metadata();
    let good = synth_elf(224, 64, 3, 0xe3f, Some(("AMDGPU", 32, &meta)));
    let mut bad_note = meta.clone();
    bad_note.truncate(20);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.co", vec![], "not an ELF file"),
        ("text.co", b"hello world\n".to_vec(), "not an ELF file"),
        (
            "short.co",
            good[..40].to_vec(),
            "truncated ELF header: needs 64 bytes, only 40 available (at offset 0x0)",
        ),
        (
            "x86.co",
            synth_elf(62, 0, 0, 0, None),
            "e_machine is 62, expected 224",
        ),
        (
            "no_sections.co",
            good[..good.len() - 100].to_vec(),
            "section header table",
        ),
        (
            "bad_metadata.co",
            synth_elf(224, 64, 3, 0xe3f, Some(("AMDGPU", 32, &bad_note))),
            "bad NT_AMDGPU_METADATA note: invalid MessagePack",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = write(dir.path(), name, &bytes);
        for json in [false, true] {
            let mut args = vec!["inspect", path.as_str()];
            if json {
                args.push("--json");
            }
            let (code, out, err) = gfxkit(&args);
            assert_eq!(code, 2, "{name}: {err}");
            assert_eq!(out, "", "{name}");
            assert!(
                err.contains(&path),
                "{name}: error does not name the file: {err}"
            );
            assert!(err.contains(want), "{name}: {err}");
        }
    }
    // The metadata error gives the offset of the note descriptor (after the 64-byte header and
    // the 12-byte note header and the padded owner name "AMDGPU\0").
    let (_, _, err) = gfxkit(&[
        "inspect",
        &dir.path().join("bad_metadata.co").display().to_string(),
    ]);
    assert!(err.contains("(at offset 0x54)"), "{err}");
    let bundle = write(
        dir.path(),
        "b.hipfb",
        b"__CLANG_OFFLOAD_BUNDLE__\x01\0\0\0\0\0\0\0",
    );
    let (code, _, err) = gfxkit(&["inspect", &bundle]);
    assert_eq!(code, 2);
    assert!(err.contains("it is an offload bundle"), "{err}");
    let (code, _, err) = gfxkit(&["inspect", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("is a directory"), "{err}");
}

#[test]
fn llc19_objects_inspect_like_readelf() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("k.ll");
    std::fs::write(
        &ir,
        "@lds = internal addrspace(3) global [32 x i32] undef, align 4\n\
         define amdgpu_kernel void @fill(ptr addrspace(1) %0, i32 %1) {\n\
           store i32 %1, ptr addrspace(1) %0\n  ret void\n}\n\
         define amdgpu_kernel void @lds_copy(ptr addrspace(1) %0) {\n\
           %v = load i32, ptr addrspace(3) @lds\n  store i32 %v, ptr addrspace(1) %0\n  ret void\n}\n",
    )
    .unwrap();
    for (cpu, attrs, cov, want_id) in [
        ("gfx90a", "+xnack,-sramecc", 5, "gfx90a:sramecc-:xnack+"),
        ("gfx942", "", 4, "gfx942"),
        ("gfx1030", "", 5, "gfx1030"),
        ("gfx1100", "", 6, "gfx1100"),
        ("gfx9-generic", "-xnack", 6, "gfx9-generic:xnack-"),
    ] {
        let obj = dir.path().join(format!("{cpu}.o"));
        llc_object(&ir, &obj, cpu, cov, attrs);
        let readelf = run_ok(Command::new(llvm_tool("llvm-readelf")).arg("-h").arg(&obj));
        let readelf = String::from_utf8_lossy(&readelf.stdout).into_owned();
        let flags_line = readelf
            .lines()
            .find(|l| l.trim_start().starts_with("Flags:"))
            .unwrap();
        let hex = flags_line
            .split(':')
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .trim();
        let want_flags = u64::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap();

        let (code, out, err) = gfxkit(&["inspect", "--json", obj.to_str().unwrap()]);
        assert_eq!(code, 0, "{cpu}: {err}");
        assert_eq!(err, "", "{cpu}: no warnings expected");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["e_flags"], want_flags, "{cpu}");
        assert_eq!(v["code_object_version"], cov, "{cpu}");
        assert_eq!(v["target_id"], want_id, "{cpu}");
        let names: Vec<&str> = v["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["fill", "lds_copy"], "{cpu}");
        assert_eq!(v["kernels"][1]["group_segment_fixed_size"], 128, "{cpu}");
        let kds = v["kernel_descriptors"].as_array().unwrap();
        assert_eq!(kds.len(), 2, "{cpu}");
        assert_eq!(kds[1]["symbol"], "lds_copy.kd", "{cpu}");
        assert_eq!(kds[1]["group_segment_fixed_size"], 128, "{cpu}");

        let (code, text, _) = gfxkit(&["inspect", obj.to_str().unwrap()]);
        assert_eq!(code, 0);
        assert!(
            text.contains(&format!("target id:      {want_id}\n")),
            "{text}"
        );
        assert!(text.contains("NAME      KERNARG  SGPR  VGPR"), "{text}");
    }
}
