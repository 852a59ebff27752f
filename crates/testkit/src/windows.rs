//! Windows fixtures built by the llvm-19 tools: HIP translation units compiled by clang-19 for
//! `x86_64-pc-windows-msvc` into COFF objects, linked by lld-link-19 into DLLs and EXEs and
//! archived by llvm-lib-19 into static libraries; and the same sources built for Linux (an ELF
//! shared library) to compare with.
//!
//! Without the HIP headers clang needs `__global__`, `dim3` and the launch functions declared
//! ([`PRELUDE`]); the links leave the HIP runtime's symbols unresolved (`/force:unresolved`),
//! as nothing here runs the files. clang-19 needs `-O1` or more for this target (at `-O0` its
//! AMDGPU back end fails with "Cannot emit physreg copy instruction").

use crate::{llvm_tool, run_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Declarations clang needs to compile kernels and their launch stubs without the HIP headers,
/// for Windows and Linux alike.
pub const PRELUDE: &str = "#define __global__ __attribute__((global))\n\
struct dim3 { unsigned x, y, z; };\n\
extern \"C\" int __hipPushCallConfiguration(dim3, dim3, unsigned long long, void *);\n\
extern \"C\" int __hipPopCallConfiguration(dim3 *, dim3 *, unsigned long long *, void *);\n\
extern \"C\" int hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long long, void *);\n";

/// One HIP translation unit.
#[derive(Debug, Clone, Copy)]
pub struct Tu<'a> {
    /// File stem (also the `-cuid`, so outputs do not depend on paths).
    pub stem: &'a str,
    /// HIP source (after [`PRELUDE`]).
    pub source: &'a str,
    /// `--offload-arch` values.
    pub archs: &'a [&'a str],
    /// `--offload-compress` (CCOB).
    pub compress: bool,
}

impl Tu<'_> {
    fn compile(&self, dir: &Path, target: &str, ext: &str, extra: &[&str]) -> PathBuf {
        let src = dir.join(format!("{}.hip", self.stem));
        std::fs::write(&src, format!("{PRELUDE}{}", self.source)).expect("write HIP source");
        let out = dir.join(format!("{}.{ext}", self.stem));
        let mut cmd = Command::new(llvm_tool("clang++"));
        cmd.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O2"])
            .arg(format!("--target={target}"))
            .arg(format!("-cuid={}", self.stem))
            .args(extra);
        for a in self.archs {
            cmd.arg(format!("--offload-arch={a}"));
        }
        if self.compress {
            cmd.arg("--offload-compress");
        }
        run_ok(cmd.arg("-c").arg(&src).arg("-o").arg(&out));
        out
    }

    /// Compiles for `x86_64-pc-windows-msvc` into the COFF object `dir/<stem>.obj`.
    pub fn windows_object(&self, dir: &Path) -> PathBuf {
        self.compile(dir, "x86_64-pc-windows-msvc", "obj", &[])
    }

    /// Compiles for `x86_64-unknown-linux-gnu` into the ELF object `dir/<stem>.o` (position
    /// independent).
    pub fn linux_object(&self, dir: &Path) -> PathBuf {
        self.compile(dir, "x86_64-unknown-linux-gnu", "o", &["-fPIC"])
    }
}

/// Links `objs` with lld-link-19 into `dir/<name>`: a DLL without an entry point when `entry`
/// is `None`, else a console EXE starting at `entry`.
pub fn lld_link(dir: &Path, name: &str, objs: &[PathBuf], entry: Option<&str>) -> PathBuf {
    let out = dir.join(name);
    let mut cmd = Command::new(llvm_tool("lld-link"));
    match entry {
        None => cmd.args(["/dll", "/noentry"]),
        Some(e) => cmd.arg(format!("/entry:{e}")).arg("/subsystem:console"),
    };
    cmd.args(["/force:unresolved", "/nodefaultlib"])
        .args(objs)
        .arg(format!("/out:{}", out.display()));
    run_ok(&mut cmd);
    out
}

/// Archives `objs` with llvm-lib-19 into the static library `dir/<name>`.
pub fn llvm_lib(dir: &Path, name: &str, objs: &[PathBuf]) -> PathBuf {
    let out = dir.join(name);
    run_ok(
        Command::new(llvm_tool("llvm-lib"))
            .arg(format!("/out:{}", out.display()))
            .args(objs),
    );
    out
}

/// Links ELF `objs` into the shared library `dir/<name>` with clang++-19 and lld (undefined
/// HIP runtime symbols are left to the loader).
pub fn linux_shared(dir: &Path, name: &str, objs: &[PathBuf]) -> PathBuf {
    let out = dir.join(name);
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-shared", "-fuse-ld=lld", "-nostdlib"])
            .args(objs)
            .arg("-o")
            .arg(&out),
    );
    out
}
