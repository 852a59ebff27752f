//! ROCm 7.2.2's LLVM 22 as a second oracle beside LLVM 19 (through `scripts/llvm22.py`, which
//! installs the `rocm-llvm-python` wheel into `target/llvm22` when missing):
//! - the processor table's `llvm` column agrees with the processors LLVM 22 lists;
//! - for every processor LLVM 22 knows, in every target-ID variant, the code object LLVM 22
//!   writes is read by `gfxkit inspect` as LLVM means it: `e_flags` equal to what gfxkit encodes
//!   for the target ID, the target ID itself, code object V6 by default (V5 on request), and the
//!   kernels of the metadata note as `llvm-readelf` (LLVM 19) prints them.

mod common;

use gfxkit_code_object::EFlags;
use gfxkit_spec::{Arch, CodeObjectVersion, Feature, Processor, PROCESSORS};
use gfxkit_target_id::{FeatureSetting, TargetId};
use gfxkit_testkit::readelf::parse_readelf;
use gfxkit_testkit::{llvm22_batch, llvm22_cpus, llvm_tool, run_ok, Llvm22Job};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const IR: &str = r#"@lds = internal addrspace(3) global [32 x i32] undef, align 4

define amdgpu_kernel void @scale(ptr addrspace(1) %p, i32 %n, float %f) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %q = getelementptr i32, ptr addrspace(1) %p, i32 %id
  %v = load i32, ptr addrspace(1) %q
  %m = mul i32 %v, %n
  store i32 %m, ptr addrspace(1) %q
  ret void
}

define amdgpu_kernel void @shared(ptr addrspace(1) %p, i64 %a) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %l = getelementptr [32 x i32], ptr addrspace(3) @lds, i32 0, i32 %id
  store i32 %id, ptr addrspace(3) %l
  call void @llvm.amdgcn.s.barrier()
  %x = xor i32 %id, 1
  %l2 = getelementptr [32 x i32], ptr addrspace(3) @lds, i32 0, i32 %x
  %v = load i32, ptr addrspace(3) %l2
  %q = getelementptr i32, ptr addrspace(1) %p, i32 %id
  store i32 %v, ptr addrspace(1) %q
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
"#;

/// `llc -mcpu=help` placeholders that are not processors.
fn is_placeholder(cpu: &str) -> bool {
    cpu == "generic" || cpu == "generic-hsa"
}

#[test]
fn table_rows_match_llvm22_processors() {
    for (triple, arch) in [("amdgcn-amd-amdhsa", Arch::Amdgcn), ("r600", Arch::R600)] {
        let listed: BTreeSet<String> = llvm22_cpus(triple).into_iter().collect();
        assert!(listed.len() > 10, "{triple}: {listed:?}");
        for cpu in listed.iter().filter(|c| !is_placeholder(c)) {
            let p = Processor::by_name(cpu).unwrap_or_else(|| {
                panic!("LLVM 22 lists {cpu} for {triple}; the table has no row")
            });
            assert_eq!(p.arch, arch, "{cpu}");
            assert!(
                p.in_llvm(22),
                "LLVM 22 lists {cpu}, its llvm column says {}",
                p.llvm
            );
        }
        for p in PROCESSORS.iter().filter(|p| p.arch == arch) {
            for n in p.names() {
                assert_eq!(
                    listed.contains(n),
                    p.in_llvm(22),
                    "{n}: llvm column {} but LLVM 22 {} it",
                    p.llvm,
                    if listed.contains(n) {
                        "lists"
                    } else {
                        "does not list"
                    }
                );
            }
        }
    }
}

/// One object LLVM 22 builds and what gfxkit must make of it.
struct Case {
    /// What the object was built for.
    cpu: &'static Processor,
    features: String,
    cov: CodeObjectVersion,
    path: PathBuf,
    /// The target ID gfxkit must read.
    want: TargetId,
    /// The e_flags LLVM is expected to write.
    e_flags: u32,
    /// Whether gfxkit must report an issue (xnack off where it is always on).
    issue: bool,
}

fn mattr(id: &TargetId) -> String {
    id.features()
        .map(|(f, s)| {
            format!(
                "{}{}",
                if s == FeatureSetting::On { '+' } else { '-' },
                f.name()
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn file_name(what: &str) -> String {
    what.replace(':', "_")
        .replace('+', "on")
        .replace('-', "off")
        .replace(',', "_")
}

#[test]
fn llvm22_code_objects_read_as_llvm_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let listed: BTreeSet<String> = llvm22_cpus("amdgcn-amd-amdhsa").into_iter().collect();
    let processors: Vec<&'static Processor> = PROCESSORS
        .iter()
        .filter(|p| p.arch == Arch::Amdgcn && listed.contains(p.name))
        .collect();
    assert!(processors.len() >= 50, "{} processors", processors.len());

    let mut cases = Vec::new();
    for &p in &processors {
        for id in TargetId::variants(p) {
            let features = mattr(&id);
            let e_flags = EFlags::encode(&id, CodeObjectVersion::V6).unwrap();
            cases.push((id, features, CodeObjectVersion::V6, e_flags, false));
        }
        if p.xnack_always() {
            // LLVM 22 still takes an xnack setting there and names the object
            // `gfx1250:xnack+`/`gfx1250:xnack-`. e_flags "on" cannot tell its `+xnack` from
            // LLVM main's default, so it reads as the bare processor; "off" is only ever its
            // `-xnack`: `gfx1250:xnack-`, reported.
            let base = EFlags::encode(&TargetId::new(p), CodeObjectVersion::V6).unwrap();
            cases.push((
                TargetId::new(p),
                "+xnack".into(),
                CodeObjectVersion::V6,
                base | 0x300,
                false,
            ));
            let off = TargetId::new(p)
                .with_setting(Feature::Xnack, FeatureSetting::Off)
                .unwrap();
            assert_eq!(
                EFlags::encode(&off, CodeObjectVersion::V6).unwrap(),
                (base & !0x300) | 0x200
            );
            cases.push((
                off,
                "-xnack".into(),
                CodeObjectVersion::V6,
                (base & !0x300) | 0x200,
                true,
            ));
        }
        if !p.is_generic() {
            let id = TargetId::new(p);
            let e_flags = EFlags::encode(&id, CodeObjectVersion::V5).unwrap();
            cases.push((id, String::new(), CodeObjectVersion::V5, e_flags, false));
        }
    }
    let cases: Vec<Case> = cases
        .into_iter()
        .map(|(want, features, cov, e_flags, issue)| {
            let what = format!("{}-{}-v{}", want.processor().name, features, cov.number());
            Case {
                cpu: want.processor(),
                path: dir.path().join(format!("{}.o", file_name(&what))),
                features,
                cov,
                want,
                e_flags,
                issue,
            }
        })
        .collect();

    // V6 is LLVM 22's default: those objects are built without a code-object option.
    for (cov, options) in [
        (CodeObjectVersion::V6, vec![]),
        (
            CodeObjectVersion::V5,
            vec!["--amdhsa-code-object-version=5"],
        ),
    ] {
        let jobs: Vec<Llvm22Job> = cases
            .iter()
            .filter(|c| c.cov == cov)
            .map(|c| Llvm22Job {
                ir: IR.to_owned(),
                cpu: c.cpu.name.to_owned(),
                features: c.features.clone(),
                kind: "obj",
                opt: 1,
                output: c.path.clone(),
            })
            .collect();
        for (job, result) in jobs.iter().zip(llvm22_batch(&jobs, &options)) {
            result.unwrap_or_else(|e| panic!("{} {}: {e}", job.cpu, job.features));
        }
    }

    // llvm-readelf (LLVM 19) prints the metadata notes: one process per batch of files.
    let mut readelf = std::collections::BTreeMap::new();
    for chunk in cases.chunks(60) {
        let files: Vec<&Path> = chunk.iter().map(|c| c.path.as_path()).collect();
        let out = run_ok(
            Command::new(llvm_tool("llvm-readelf"))
                .args(["-h", "--notes"])
                .args(&files),
        );
        readelf.extend(parse_readelf(&String::from_utf8_lossy(&out.stdout), &files));
    }

    // gfxkit inspect, two at a time (CI has two cores).
    let reports: Vec<serde_json::Value> = std::thread::scope(|s| {
        let halves: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|half| {
                s.spawn(move || {
                    half.iter()
                        .map(|c| {
                            let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
                                .args(["inspect", "--json"])
                                .arg(&c.path)
                                .output()
                                .unwrap();
                            assert!(out.status.success(), "{}", c.path.display());
                            common::json_stdout(&out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });

    let mut kernels = 0;
    for (c, j) in cases.iter().zip(&reports) {
        let what = format!("{} [{}] {}", c.cpu.name, c.features, c.cov);
        let r = &readelf[&c.path];
        assert_eq!(
            r.flags,
            Some(c.e_flags),
            "{what}: e_flags LLVM 22 wrote (readelf)"
        );
        assert_eq!(j["e_flags"], c.e_flags, "{what}: e_flags");
        assert_eq!(j["code_object_version"], u32::from(c.cov.0), "{what}");
        assert_eq!(j["abi_version"], r.abi_version.unwrap(), "{what}");
        assert_eq!(j["processor"], c.cpu.name, "{what}");
        assert_eq!(j["target_id"], c.want.to_string(), "{what}: target ID");
        assert_eq!(j["generic_version"], c.cpu.generic_version, "{what}");
        let issues = j["issues"].as_array().unwrap();
        if c.issue {
            assert!(
                issues
                    .iter()
                    .any(|i| i.as_str().unwrap().contains("xnack always on")),
                "{what}: {issues:?}"
            );
        } else {
            assert!(issues.is_empty(), "{what}: {issues:?}");
        }
        // LLVM's metadata names the same target (LLVM 22 spells xnack+ on gfx1250, which its
        // e_flags "on" cannot tell from the bare processor).
        let meta = j["metadata_target"].as_str().unwrap();
        let id = meta.strip_prefix("amdgcn-amd-amdhsa--").unwrap();
        let mut named = TargetId::parse(id).unwrap();
        if named.legacy_xnack() == Some(FeatureSetting::On) {
            named = named
                .with_setting(Feature::Xnack, FeatureSetting::Any)
                .unwrap();
        }
        assert_eq!(named, c.want, "{what}: {meta}");
        let ks = j["kernels"].as_array().unwrap();
        assert_eq!(ks.len(), 2, "{what}");
        assert_eq!(ks.len(), r.kernels.len(), "{what}");
        for k in ks {
            let name = k["name"].as_str().unwrap();
            let want = &r.kernels[name];
            for key in [
                "kernarg_segment_size",
                "sgpr_count",
                "vgpr_count",
                "agpr_count",
                "group_segment_fixed_size",
                "wavefront_size",
            ] {
                let readelf_value = want
                    .get(&format!(".{key}"))
                    .map(|v| serde_json::Value::from(v.parse::<u64>().unwrap()))
                    .unwrap_or(serde_json::Value::Null);
                assert_eq!(k[key], readelf_value, "{what} {name} {key}");
            }
            assert_eq!(k["symbol"], format!("{name}.kd"), "{what}");
            kernels += 1;
        }
        let shared = ks.iter().find(|k| k["name"] == "shared").unwrap();
        assert_eq!(shared["group_segment_fixed_size"], 128, "{what}");
        let wave = if c.cpu.supports(Feature::Wavefrontsize64)
            || c.cpu.memory_model >= gfxkit_spec::MemoryModelFamily::Gfx12
        {
            32
        } else {
            64
        };
        assert_eq!(shared["wavefront_size"], wave, "{what}");
    }
    assert_eq!(kernels, cases.len() * 2);
    eprintln!(
        "{} LLVM 22 code objects for {} processors checked",
        cases.len(),
        processors.len()
    );
}

/// ROCm 7.2.2's LLVM 22 builds gfx1250 with `-xnack` and names the object
/// `amdgcn-amd-amdhsa--gfx1250:xnack-`, so a bundle made from it carries
/// `hipv4-amdgcn-amd-amdhsa--gfx1250:xnack-`. gfxkit reads that ID, notes it, finds the
/// e_flags agree, and `select` passes it over (the runtime names a gfx1250 device without
/// xnack) for the bare entry.
#[test]
fn llvm22_gfx1250_xnack_off_bundles_are_read_and_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<Llvm22Job> = ["-xnack", ""]
        .iter()
        .enumerate()
        .map(|(i, features)| Llvm22Job {
            ir: IR.to_owned(),
            cpu: "gfx1250".to_owned(),
            features: (*features).to_owned(),
            kind: "obj",
            opt: 1,
            output: dir.path().join(format!("k{i}.o")),
        })
        .collect();
    for (job, result) in jobs.iter().zip(llvm22_batch(&jobs, &[])) {
        result.unwrap_or_else(|e| panic!("{} {}: {e}", job.cpu, job.features));
    }
    // LLVM names the -xnack object gfx1250:xnack-.
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(["inspect", "--json"])
            .arg(&jobs[0].output),
    );
    let j = common::json_stdout(&out);
    assert_eq!(j["metadata_target"], "amdgcn-amd-amdhsa--gfx1250:xnack-");
    assert_eq!(j["target_id"], "gfx1250:xnack-");
    let off = format!("{}:gfx1250:xnack-", jobs[0].output.display());
    let bare = format!("{}:gfx1250", jobs[1].output.display());
    let bundle = dir.path().join("b.hipfb");
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(["bundle", "-o"])
            .arg(&bundle)
            .arg(&off),
    );
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(["list", "--json"])
            .arg(&bundle),
    );
    let j = common::json_stdout(&out);
    let e = &j["files"][0]["bundles"][0]["entries"][1];
    assert_eq!(e["id"], "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack-", "{j}");
    assert_eq!(e["target_id"], "gfx1250:xnack-");
    assert_eq!(e["eflags_agree"], true, "{e}");
    assert!(
        e["id_note"].as_str().unwrap().contains("xnack always on"),
        "{e}"
    );
    // The bare entry, in a bundle of its own (the bundler's rule: for one processor every ID
    // names features or none does), is what loads.
    let plain = dir.path().join("plain.hipfb");
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(["bundle", "-o"])
            .arg(&plain)
            .arg(&bare),
    );
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(["select", "--json", "--device", "gfx1250"])
            .arg(&plain),
    );
    let j = common::json_stdout(&out);
    let s = &j["files"][0]["bundles"][0];
    assert_eq!(s["selected"], "hipv4-amdgcn-amd-amdhsa--gfx1250", "{s}");
    // The xnack- entry does not load, and the reason says why.
    let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(["select", "--json", "--device", "gfx1250"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let j = common::json_stdout(&out);
    let s = &j["files"][0]["bundles"][0];
    assert!(s["selected"].is_null(), "{s}");
    assert!(
        s["reason"].as_str().unwrap().contains("xnack always on"),
        "{s}"
    );
    // doctor agrees: the library does not run on a gfx1250; the bare one does.
    let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(["doctor", "--device", "gfx1250"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gfx1250:xnack-"));
    let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(["doctor", "--device", "gfx1250"])
        .arg(&plain)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
