//! The processor table agrees with what llc from LLVM 19 accepts: every row marked `in_llvm19`
//! is listed by `llc -mcpu=help`, and every processor llc lists has a row.

use gfxkit_spec::{Arch, Processor, PROCESSORS};
use gfxkit_testkit::{llvm_tool, run_ok};
use std::collections::BTreeSet;
use std::process::Command;

/// The CPU names `llc -mtriple=<triple> -mcpu=help` lists (printed on stderr or stdout).
fn llc_cpus(triple: &str) -> BTreeSet<String> {
    let out = run_ok(
        Command::new(llvm_tool("llc"))
            .arg(format!("-mtriple={triple}"))
            .arg("-mcpu=help"),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cpus = BTreeSet::new();
    let mut in_cpus = false;
    for line in text.lines() {
        if line.starts_with("Available CPUs") {
            in_cpus = true;
            continue;
        }
        if line.starts_with("Available features") {
            break;
        }
        if in_cpus {
            if let Some((name, _)) = line.trim().split_once(" - ") {
                cpus.insert(name.trim().to_owned());
            }
        }
    }
    assert!(
        cpus.len() > 10,
        "could not parse llc -mcpu=help output:\n{text}"
    );
    cpus
}

fn check(triple: &str, arch: Arch) {
    let listed = llc_cpus(triple);
    // `generic` and `generic-hsa` are llc's placeholders for "no processor", not processors.
    for cpu in &listed {
        if cpu == "generic" || cpu == "generic-hsa" {
            continue;
        }
        let p = Processor::by_name(cpu)
            .unwrap_or_else(|| panic!("llc-19 lists {cpu} for {triple} but the table has no row"));
        assert_eq!(p.arch, arch, "{cpu}");
        assert!(
            p.in_llvm19(),
            "{cpu} is listed by llc-19 but in_llvm19 is false"
        );
    }
    for p in PROCESSORS.iter().filter(|p| p.arch == arch) {
        if p.in_llvm19() {
            for n in p.names() {
                assert!(
                    listed.contains(n),
                    "{n} marked in_llvm19 but llc-19 does not list it"
                );
            }
        } else {
            assert!(!listed.contains(p.name), "{} is listed by llc-19", p.name);
        }
    }
}

#[test]
fn amdgcn_rows_match_llc19() {
    check("amdgcn", Arch::Amdgcn);
}

#[test]
fn r600_rows_match_llc19() {
    check("r600", Arch::R600);
}

/// For every amdgcn row LLVM 19 knows: an object built by llc-19 for the processor (code object
/// V6) carries the row's `EF_AMDGPU_MACH`, an xnack / sramecc field exactly when the row lists
/// the feature in target IDs, and the row's generic version.
#[test]
fn llc19_e_flags_match_rows() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("k.ll");
    std::fs::write(&ir, "define amdgpu_kernel void @k() {\n  ret void\n}\n").unwrap();
    let rows: Vec<&Processor> = PROCESSORS
        .iter()
        .filter(|p| p.arch == Arch::Amdgcn && p.in_llvm19())
        .collect();
    for p in rows {
        let obj = dir.path().join(format!("{}.o", p.name));
        run_ok(
            Command::new(llvm_tool("llc"))
                .args(["-filetype=obj", "-mtriple=amdgcn-amd-amdhsa"])
                .arg(format!("-mcpu={}", p.name))
                .arg("--amdhsa-code-object-version=6")
                .arg(&ir)
                .arg("-o")
                .arg(&obj),
        );
        let bytes = std::fs::read(&obj).unwrap();
        assert!(bytes.len() >= 64 && bytes[4] == 2, "{}: not ELF64", p.name);
        let flags = u32::from_le_bytes(bytes[48..52].try_into().unwrap());
        assert_eq!(flags & 0xff, u32::from(p.mach), "{}: mach", p.name);
        assert_eq!(
            flags & 0x300 != 0,
            p.has_target_id_feature(gfxkit_spec::Feature::Xnack),
            "{}: xnack field in {flags:#x}",
            p.name
        );
        assert_eq!(
            flags & 0xc00 != 0,
            p.has_target_id_feature(gfxkit_spec::Feature::Sramecc),
            "{}: sramecc field in {flags:#x}",
            p.name
        );
        assert_eq!(
            flags >> 24,
            u32::from(p.generic_version),
            "{}: generic version",
            p.name
        );
    }
}
