//! The groups of `gfxkit_spec::isa::SAME_ISA` against clang-19 and llc-19: the members of a
//! group get one list of target features from clang, and llc compiles one IR file to the same
//! machine code for each of them. Pairs the table does not group that clang already tells
//! apart (different target features) are checked not to be grouped.

use gfxkit_spec::isa::SAME_ISA;
use gfxkit_spec::{Arch, Processor, PROCESSORS};
use gfxkit_testkit::{llc_object, llvm_tool, run_ok};
use std::collections::BTreeMap;
use std::process::Command;

/// clang-19's `target-features` attribute for a HIP kernel compiled for `cpu`.
fn clang_features(dir: &std::path::Path, cpu: &str) -> String {
    let src = dir.join("k.hip");
    std::fs::write(
        &src,
        "__attribute__((global)) void k(float *a) { a[0] = 1.0f; }\n",
    )
    .unwrap();
    let out = run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-x", "hip", "-nogpulib", "-nogpuinc", "--cuda-device-only"])
            .arg(format!("--offload-arch={cpu}"))
            .args(["-S", "-emit-llvm", "-o", "-"])
            .arg(&src),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let key = "\"target-features\"=\"";
    let start = text
        .find(key)
        .unwrap_or_else(|| panic!("no target-features for {cpu}:\n{text}"))
        + key.len();
    let end = text[start..].find('"').unwrap() + start;
    text[start..end].to_owned()
}

#[test]
fn members_of_a_group_share_clangs_target_features() {
    let dir = tempfile::tempdir().unwrap();
    let mut by_cpu = BTreeMap::new();
    for p in PROCESSORS
        .iter()
        .filter(|p| p.arch == Arch::Amdgcn && p.in_llvm19() && !p.is_generic())
    {
        by_cpu.insert(p.name, clang_features(dir.path(), p.name));
    }
    for g in SAME_ISA {
        for n in *g {
            assert_eq!(by_cpu[n], by_cpu[g[0]], "{n} and {} differ", g[0]);
        }
    }
    // Processors clang tells apart are never taken as one instruction set.
    for (a, fa) in &by_cpu {
        for (b, fb) in &by_cpu {
            if fa != fb {
                let pa = Processor::by_name(a).unwrap();
                let pb = Processor::by_name(b).unwrap();
                assert!(!pa.runs_code_of(pb), "{a} {b}");
            }
        }
    }
}

#[test]
fn members_of_a_group_get_the_same_machine_code() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("k.ll");
    std::fs::write(
        &ir,
        r#"
define amdgpu_kernel void @k(ptr addrspace(1) %a, ptr addrspace(1) %b, i32 %n) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %i = zext i32 %t to i64
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %i
  %v = load float, ptr addrspace(1) %pb
  %w = fmul float %v, 3.5
  %h = fptrunc float %w to half
  %x = fpext half %h to float
  %s = call float @llvm.sqrt.f32(float %x)
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %i
  store float %s, ptr addrspace(1) %pa
  %old = atomicrmw add ptr addrspace(1) %a, i32 %n syncscope("agent") seq_cst
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.sqrt.f32(float)
"#,
    )
    .unwrap();
    for g in SAME_ISA
        .iter()
        .filter(|g| Processor::by_name(g[0]).unwrap().in_llvm19())
    {
        let mut first: Option<Vec<u8>> = None;
        for n in *g {
            let obj = dir.path().join(format!("{n}.o"));
            llc_object(&ir, &obj, n, 5, "");
            let text = dir.path().join(format!("{n}.text"));
            let bytes = gfxkit_testkit::dump_section(&obj, ".text", &text);
            assert!(!bytes.is_empty(), "{n}");
            match &first {
                None => first = Some(bytes),
                Some(f) => assert_eq!(&bytes, f, "{n}: .text differs from {}", g[0]),
            }
        }
    }
}
