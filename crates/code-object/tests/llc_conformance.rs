//! Conformance with LLVM 19: objects produced by `llc` for a matrix of processors x target-ID
//! feature settings x code-object versions 4, 5 and 6 are inspected by gfxkit and compared with
//! what `llvm-readelf` reports (`e_flags`, ABI version, kernels of the metadata note) and with the
//! target ID they were built for.

use gfxkit_code_object::{CodeObject, EFlags, Header};
use gfxkit_spec::{CodeObjectVersion, Feature, Processor};
use gfxkit_target_id::{FeatureSetting, TargetId};
use gfxkit_testkit::readelf::parse_readelf;
use gfxkit_testkit::{llc_object, llvm_tool, run_ok};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const IR: &str = include_str!("data/two_kernels.ll");

/// At least one processor of each family, and every generic target llc-19 knows.
const MATRIX: &[&str] = &[
    "gfx601",
    "gfx704",
    "gfx801",
    "gfx803",
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx90c",
    "gfx940",
    "gfx942",
    "gfx1010",
    "gfx1013",
    "gfx1030",
    "gfx1036",
    "gfx1100",
    "gfx1151",
    "gfx1201",
    "gfx9-generic",
    "gfx10-1-generic",
    "gfx10-3-generic",
    "gfx11-generic",
    "gfx12-generic",
];

/// Every target ID of `p`: each target-ID feature any / on / off.
fn ids_of(p: &'static Processor) -> Vec<TargetId> {
    let mut ids = vec![TargetId::new(p)];
    for f in p.target_id_features {
        ids = ids
            .into_iter()
            .flat_map(|i| {
                [FeatureSetting::Any, FeatureSetting::On, FeatureSetting::Off]
                    .map(|s| i.with_setting(*f, s).unwrap())
            })
            .collect();
    }
    ids
}

fn mattr(id: &TargetId) -> String {
    let mut parts = Vec::new();
    for f in [Feature::Sramecc, Feature::Xnack] {
        match id.setting(f) {
            FeatureSetting::On => parts.push(format!("+{}", f.name())),
            FeatureSetting::Off => parts.push(format!("-{}", f.name())),
            FeatureSetting::Any => {}
        }
    }
    parts.join(",")
}

struct Case {
    id: TargetId,
    cov: CodeObjectVersion,
    path: PathBuf,
}

#[test]
fn llc19_objects_match_readelf_and_their_target_id() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("two_kernels.ll");
    std::fs::write(&ir, IR).unwrap();
    let llc = llvm_tool("llc");
    let readelf = llvm_tool("llvm-readelf");

    let mut cases = Vec::new();
    for name in MATRIX {
        let p = Processor::by_name(name).unwrap();
        assert!(p.in_llvm19(), "{name} is not in LLVM 19");
        for cov in [
            CodeObjectVersion::V4,
            CodeObjectVersion::V5,
            CodeObjectVersion::V6,
        ] {
            if p.is_generic() && cov != CodeObjectVersion::V6 {
                continue;
            }
            for id in ids_of(p) {
                let file = format!(
                    "{}-v{}.o",
                    id.to_string()
                        .replace(':', "_")
                        .replace('+', "on")
                        .replace('-', "off"),
                    cov.number()
                );
                cases.push(Case {
                    id,
                    cov,
                    path: dir.path().join(file),
                });
            }
        }
    }
    assert!(cases.len() > 150, "matrix has {} cases", cases.len());

    // Two workers: CI has two cores.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        cases.par_iter().for_each(|c| {
            let mut cmd = Command::new(&llc);
            cmd.args(["-filetype=obj", "-mtriple=amdgcn-amd-amdhsa", "-O1"])
                .arg(format!("-mcpu={}", c.id.processor().name))
                .arg(format!("--amdhsa-code-object-version={}", c.cov.number()));
            let attrs = mattr(&c.id);
            if !attrs.is_empty() {
                cmd.arg(format!("-mattr={attrs}"));
            }
            cmd.arg(&ir).arg("-o").arg(&c.path);
            run_ok(&mut cmd);
        });
    });

    // llvm-readelf over batches of files (one process per batch).
    let mut reports = BTreeMap::new();
    let chunks: Vec<&[Case]> = cases.chunks(40).collect();
    let parsed: Vec<_> = pool.install(|| {
        chunks
            .par_iter()
            .map(|chunk| {
                let files: Vec<&Path> = chunk.iter().map(|c| c.path.as_path()).collect();
                let out = run_ok(Command::new(&readelf).args(["-h", "--notes"]).args(&files));
                parse_readelf(&String::from_utf8_lossy(&out.stdout), &files)
            })
            .collect()
    });
    for p in parsed {
        reports.extend(p);
    }

    let mut kernels_checked = 0;
    for c in &cases {
        let what = format!("{} {}", c.id, c.cov);
        let r = reports
            .get(&c.path)
            .unwrap_or_else(|| panic!("{what}: no readelf output"));
        let bytes = std::fs::read(&c.path).unwrap();
        let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{what}: {e}"));

        assert_eq!(Some(co.e_flags()), r.flags, "{what}: e_flags");
        assert_eq!(Some(co.abi_version()), r.abi_version, "{what}: ABI version");
        assert_eq!(co.code_object_version(), Some(c.cov), "{what}");
        assert_eq!(co.target_id().as_ref(), Ok(&c.id), "{what}: target ID");
        assert_eq!(
            EFlags::encode(&c.id, c.cov),
            Ok(co.e_flags()),
            "{what}: encode"
        );
        assert_eq!(co.check_target(&c.id), Ok(()), "{what}: check_target");
        assert_eq!(
            Header::parse(&bytes).as_ref(),
            Ok(co.header()),
            "{what}: header"
        );
        assert!(co.issues().is_empty(), "{what}: {:?}", co.issues());
        let meta = co
            .metadata()
            .unwrap_or_else(|| panic!("{what}: no metadata"));
        assert_eq!(
            meta.target_id_str().map(|s| TargetId::parse(s).unwrap()),
            Some(c.id),
            "{what}: amdhsa.target"
        );

        assert_eq!(co.kernels().len(), r.kernels.len(), "{what}: kernel count");
        assert_eq!(co.kernels().len(), 2, "{what}");
        for k in co.kernels() {
            let want = r
                .kernels
                .get(k.name)
                .unwrap_or_else(|| panic!("{what}: readelf has no kernel {}", k.name));
            let num = |key: &str| want.get(key).map(|v| v.parse::<u64>().unwrap());
            assert_eq!(
                k.kernarg_segment_size,
                num(".kernarg_segment_size"),
                "{what} {}",
                k.name
            );
            assert_eq!(k.sgpr_count, num(".sgpr_count"), "{what} {}", k.name);
            assert_eq!(k.vgpr_count, num(".vgpr_count"), "{what} {}", k.name);
            assert_eq!(k.agpr_count, num(".agpr_count"), "{what} {}", k.name);
            assert_eq!(
                k.group_segment_fixed_size,
                num(".group_segment_fixed_size"),
                "{what} {}",
                k.name
            );
            assert_eq!(
                k.wavefront_size,
                num(".wavefront_size"),
                "{what} {}",
                k.name
            );
            assert_eq!(k.symbol, want.get(".symbol").map(String::as_str));
            assert!(k.sgpr_count.is_some() && k.vgpr_count.is_some());
            kernels_checked += 1;
        }
        // The LDS kernel has a group segment, the other one has none.
        let shared = co.kernels().iter().find(|k| k.name == "shared").unwrap();
        assert_eq!(shared.group_segment_fixed_size, Some(256), "{what}");
        let kds = co.kernel_descriptors().unwrap();
        let names: Vec<&str> = kds.iter().map(|d| d.kernel_name()).collect();
        assert_eq!(names, ["scale", "shared"], "{what}");
        assert_eq!(kds[1].group_segment_fixed_size, 256, "{what}");
        assert_eq!(
            Some(u64::from(kds[0].kernarg_size)),
            co.kernels()[0].kernarg_segment_size,
            "{what}"
        );
    }
    assert_eq!(kernels_checked, cases.len() * 2);
}

/// llc-19 refuses code object V2 and V3, so these layouts are checked against values derived
/// from the specification's tables instead (see `v2_v3_flags_from_the_spec_tables`).
#[test]
fn llc19_cannot_emit_v2_or_v3() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("k.ll");
    std::fs::write(&ir, IR).unwrap();
    for v in [2, 3] {
        let out = Command::new(llvm_tool("llc"))
            .args([
                "-filetype=obj",
                "-mtriple=amdgcn-amd-amdhsa",
                "-mcpu=gfx906",
            ])
            .arg(format!("--amdhsa-code-object-version={v}"))
            .arg(&ir)
            .arg("-o")
            .arg(dir.path().join("k.o"))
            .env("LLVM_DISABLE_SYMBOLIZATION", "1")
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "llc-19 now emits V{v}: extend the conformance matrix"
        );
    }
}

/// V2/V3 `e_flags` of every amdgcn processor, built from the table and the constants of the
/// specification's "ELF Header" section (xnack 0x100, sram-ecc 0x200, mach in bits 0..7).
#[test]
fn v2_v3_flags_from_the_spec_tables() {
    for p in Processor::all().iter().filter(|p| !p.is_generic()) {
        if p.arch != gfxkit_spec::Arch::Amdgcn {
            continue;
        }
        for cov in [CodeObjectVersion::V2, CodeObjectVersion::V3] {
            for xnack_bit in [false, true] {
                for sramecc_bit in [false, true] {
                    let raw = u32::from(p.mach)
                        | if xnack_bit { 0x100 } else { 0 }
                        | if sramecc_bit { 0x200 } else { 0 };
                    let d = EFlags::decode(raw, cov);
                    assert_eq!(d.processor(), Some(p));
                    let bit_ok = |f: Feature, set: bool| {
                        if f == Feature::Xnack && p.xnack_always() {
                            // Always on: the bit (set by LLVM) never reaches the target ID.
                            true
                        } else if !p.has_target_id_feature(f) {
                            !set
                        } else {
                            true
                        }
                    };
                    let valid =
                        bit_ok(Feature::Xnack, xnack_bit) && bit_ok(Feature::Sramecc, sramecc_bit);
                    let id = d.target_id();
                    assert_eq!(id.is_ok(), valid, "{} {cov} {raw:#x}", p.name);
                    if let Ok(id) = id {
                        for (f, set) in
                            [(Feature::Xnack, xnack_bit), (Feature::Sramecc, sramecc_bit)]
                        {
                            let want = match (p.has_target_id_feature(f), set) {
                                (false, _) => FeatureSetting::Any,
                                (true, true) => FeatureSetting::On,
                                (true, false) => FeatureSetting::Off,
                            };
                            assert_eq!(id.setting(f), want, "{} {cov} {raw:#x}", p.name);
                        }
                        // Writing the ID back gives the same word (with the xnack bit
                        // where xnack is always on).
                        let back = if p.xnack_always() { raw | 0x100 } else { raw };
                        assert_eq!(EFlags::encode(&id, cov), Ok(back), "{id} {cov}");
                    }
                }
            }
        }
    }
}

/// 32-bit r600 objects (every r600 processor) and amdgcn objects for PAL and Mesa (which use the
/// V3 bits): gfxkit names the processor llvm-readelf names and reads the flags LLVM wrote.
#[test]
fn r600_pal_and_mesa_objects() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("empty.ll");
    std::fs::write(&ir, "define amdgpu_kernel void @k() {\n  ret void\n}\n").unwrap();
    let mut cases: Vec<(String, String, String, &str)> = Processor::all()
        .iter()
        .filter(|p| p.arch == gfxkit_spec::Arch::R600)
        .map(|p| ("r600".to_owned(), p.name.to_owned(), String::new(), p.name))
        .collect();
    cases.extend([
        (
            "amdgcn-amd-amdpal".to_owned(),
            "gfx1030".to_owned(),
            String::new(),
            "gfx1030",
        ),
        (
            "amdgcn-amd-amdpal".to_owned(),
            "gfx90a".to_owned(),
            "-xnack".to_owned(),
            "gfx90a:sramecc+:xnack-",
        ),
        (
            "amdgcn-mesa-mesa3d".to_owned(),
            "gfx906".to_owned(),
            "+xnack".to_owned(),
            "gfx906:sramecc+:xnack+",
        ),
        (
            "amdgcn-mesa-mesa3d".to_owned(),
            "gfx900".to_owned(),
            "-xnack".to_owned(),
            "gfx900:xnack-",
        ),
    ]);
    for (triple, cpu, attrs, want) in &cases {
        let obj = dir
            .path()
            .join(format!("{cpu}-{}.o", triple.replace('-', "_")));
        let mut cmd = Command::new(llvm_tool("llc"));
        cmd.arg("-filetype=obj")
            .arg(format!("-mtriple={triple}"))
            .arg(format!("-mcpu={cpu}"));
        if !attrs.is_empty() {
            cmd.arg(format!("-mattr={attrs}"));
        }
        run_ok(cmd.arg(&ir).arg("-o").arg(&obj));
        let out = run_ok(Command::new(llvm_tool("llvm-readelf")).arg("-h").arg(&obj));
        let text = String::from_utf8_lossy(&out.stdout);
        let flags_line = text
            .lines()
            .find(|l| l.trim_start().starts_with("Flags:"))
            .unwrap();
        let mut parts = flags_line
            .split(':')
            .nth(1)
            .unwrap()
            .split(',')
            .map(str::trim);
        let raw = u32::from_str_radix(parts.next().unwrap().trim_start_matches("0x"), 16).unwrap();
        let readelf_cpu = parts.next().unwrap();

        let bytes = std::fs::read(&obj).unwrap();
        let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{triple} {cpu}: {e}"));
        assert_eq!(co.e_flags(), raw, "{triple} {cpu}");
        assert_eq!(co.code_object_version(), None, "{triple} {cpu}");
        assert_eq!(
            co.processor().map(|p| p.name),
            Some(readelf_cpu),
            "{triple} {cpu}"
        );
        assert_eq!(co.target_id().unwrap().to_string(), *want, "{triple} {cpu}");
        assert!(
            co.flags().issues().is_empty(),
            "{triple} {cpu}: {:?}",
            co.flags().issues()
        );
        let arch = if triple == "r600" {
            gfxkit_spec::Arch::R600
        } else {
            gfxkit_spec::Arch::Amdgcn
        };
        assert_eq!(co.arch(), arch);
    }
    assert_eq!(cases.len(), 20);
}

/// llvm-readelf (LLVM 19) reads V2 and V3 `e_flags` too: objects whose ABI version and flags are
/// rewritten to every amdgcn processor x xnack/sramecc bit x V2/V3 decode as llvm-readelf says
/// (processor name, and `xnack` / `sramecc` exactly when gfxkit reads the feature as on).
#[test]
fn v2_v3_decode_agrees_with_llvm_readelf() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("empty.ll");
    std::fs::write(&ir, "define amdgpu_kernel void @k() {\n  ret void\n}\n").unwrap();
    let base = dir.path().join("base.o");
    llc_object(&ir, &base, "gfx906", 4, "");
    let base = std::fs::read(&base).unwrap();
    let mut files = Vec::new();
    for p in Processor::all()
        .iter()
        .filter(|p| p.arch == gfxkit_spec::Arch::Amdgcn && !p.is_generic() && p.in_llvm19())
    {
        for (abi, cov) in [(0u8, CodeObjectVersion::V2), (1, CodeObjectVersion::V3)] {
            for bits in [0u32, 0x100, 0x200, 0x300] {
                let raw = u32::from(p.mach) | bits;
                let mut bytes = base.clone();
                bytes[8] = abi;
                bytes[48..52].copy_from_slice(&raw.to_le_bytes());
                let path = dir.path().join(format!("{}-{abi}-{bits:x}.o", p.name));
                std::fs::write(&path, &bytes).unwrap();
                files.push((path, cov, raw, p.name));
            }
        }
    }
    let mut checked = 0;
    for chunk in files.chunks(100) {
        let out = run_ok(
            Command::new(llvm_tool("llvm-readelf"))
                .arg("-h")
                .args(chunk.iter().map(|f| &f.0)),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let flag_lines: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("Flags:"))
            .collect();
        assert_eq!(flag_lines.len(), chunk.len());
        for ((path, cov, raw, name), line) in chunk.iter().zip(flag_lines) {
            let tokens: Vec<&str> = line
                .split(':')
                .nth(1)
                .unwrap()
                .split(',')
                .map(str::trim)
                .collect();
            let bytes = std::fs::read(path).unwrap();
            let co = CodeObject::parse(&bytes).unwrap();
            assert_eq!(co.code_object_version(), Some(*cov));
            assert_eq!(co.e_flags(), *raw);
            assert_eq!(tokens[1], *name, "{line}");
            assert_eq!(co.processor().map(|p| p.name), Some(*name));
            let on = |f| co.flags().feature(f) == gfxkit_code_object::FeatureFlag::On;
            assert_eq!(
                tokens.contains(&"xnack"),
                on(Feature::Xnack),
                "{name} {cov}: {line}"
            );
            assert_eq!(
                tokens.contains(&"sramecc"),
                on(Feature::Sramecc),
                "{name} {cov}: {line}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, files.len());
    assert!(checked >= 300, "{checked}");
}

/// Linked code objects (what the HIP runtime loads): `ld.lld -shared` output, and the same with
/// its section headers stripped, so the metadata note is found through the `PT_NOTE` segment.
#[test]
fn linked_and_stripped_objects() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("two_kernels.ll");
    std::fs::write(&ir, IR).unwrap();
    for (cpu, attrs, cov, want) in [
        ("gfx90a", "+xnack", 5, "gfx90a:xnack+"),
        ("gfx1100", "", 6, "gfx1100"),
        ("gfx9-generic", "-xnack", 6, "gfx9-generic:xnack-"),
    ] {
        let obj = dir.path().join(format!("{cpu}.o"));
        let so = dir.path().join(format!("{cpu}.so"));
        let stripped = dir.path().join(format!("{cpu}.stripped.so"));
        llc_object(&ir, &obj, cpu, cov, attrs);
        run_ok(
            Command::new(llvm_tool("ld.lld"))
                .arg("-shared")
                .arg(&obj)
                .arg("-o")
                .arg(&so),
        );
        run_ok(
            Command::new(llvm_tool("llvm-objcopy"))
                .arg("--strip-sections")
                .arg(&so)
                .arg(&stripped),
        );
        let relocatable = std::fs::read(&obj).unwrap();
        let reloc = CodeObject::parse(&relocatable).unwrap();
        for path in [&so, &stripped] {
            let bytes = std::fs::read(path).unwrap();
            let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            assert_eq!(co.elf_type(), 3, "{path:?}");
            assert_eq!(co.target_id().unwrap().to_string(), want, "{path:?}");
            assert_eq!(co.e_flags(), reloc.e_flags(), "{path:?}");
            assert!(co.issues().is_empty(), "{path:?}: {:?}", co.issues());
            // The linker keeps the metadata note as is.
            assert_eq!(co.kernels(), reloc.kernels(), "{path:?}");
            assert_eq!(co.kernels().len(), 2);
            let kds = co.kernel_descriptors().unwrap();
            let want = if path == &stripped { 0 } else { 2 };
            assert_eq!(kds.len(), want, "{path:?}");
            for d in &kds {
                let k = co
                    .kernels()
                    .iter()
                    .find(|k| k.symbol == Some(d.symbol))
                    .unwrap();
                assert_eq!(
                    Some(u64::from(d.group_segment_fixed_size)),
                    k.group_segment_fixed_size
                );
                // Linked: the descriptor points at the kernel's code (before it, in .text).
                assert_ne!(d.kernel_code_entry_byte_offset, 0, "{path:?}");
            }
        }
        // Stripping really removed the section headers.
        let stripped = std::fs::read(&stripped).unwrap();
        assert_eq!(u16::from_le_bytes([stripped[60], stripped[61]]), 0);
    }
}
