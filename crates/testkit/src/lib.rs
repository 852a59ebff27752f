//! Test support shared by gfxkit's crates: locating the llvm-19 reference tools (clang++,
//! clang-offload-bundler, llc, llvm-readelf, ...) and building fixtures with them.
//!
//! A missing tool is a test failure with a message that says how to install it, never a skip:
//! `scripts/ensure-llvm19` (run by the README's test command) installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod image;
pub mod llvm22;
pub mod readelf;
pub mod tensile;
pub mod windows;

pub use llvm22::{llvm22_batch, llvm22_command, llvm22_cpus, Llvm22Job};

/// Directory holding Debian's llvm-19 tools.
pub const LLVM19_BIN: &str = "/usr/lib/llvm-19/bin";

/// Path of an llvm-19 tool such as `clang-offload-bundler` or `llc`. Panics, naming the fix,
/// when the tool is not installed.
pub fn llvm_tool(name: &str) -> PathBuf {
    let path = Path::new(LLVM19_BIN).join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `bash scripts/ensure-llvm19` (installs clang-19 llvm-19 lld-19)",
        path.display()
    );
    path
}

/// Runs `cmd` and returns its output, panicking with stderr when it fails to start or exits
/// non-zero.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .env("LLVM_DISABLE_SYMBOLIZATION", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A C translation unit without device code compiled by clang-19 into `dir/name` with `args`
/// (`-shared -fPIC -nostdlib` for a shared library, `--target=x86_64-pc-windows-msvc -c` for a
/// COFF object).
pub fn host_only(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let src = dir.join("host_only.c");
    std::fs::write(&src, "int host_only(int x) { return x + 1; }\n").unwrap();
    let out = dir.join(name);
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(args)
            .arg(&src)
            .arg("-o")
            .arg(&out),
    );
    out
}

/// `dir/fatbin.bin`: an NVIDIA fat binary's header (magic `0xba55ed50`, version 1, a 16-byte
/// header declaring `payload` bytes) and `payload` bytes, as a CUDA build's `.nv_fatbin` holds,
/// for a test that gives a file such a section.
pub fn nvidia_fatbin(dir: &Path, payload: usize) -> PathBuf {
    let mut fatbin = vec![0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0];
    fatbin.extend((payload as u64).to_le_bytes());
    fatbin.resize(16 + payload, 0xcc);
    let path = dir.join("fatbin.bin");
    std::fs::write(&path, &fatbin).unwrap();
    path
}

/// Compiles LLVM IR at `ir` with llc-19 into an `amdgcn-amd-amdhsa` code object at `obj` for
/// processor `cpu` and code-object version `cov`; `attrs` (such as `+xnack,-sramecc`) becomes
/// `-mattr` when not empty.
pub fn llc_object(ir: &Path, obj: &Path, cpu: &str, cov: u8, attrs: &str) {
    let mut cmd = Command::new(llvm_tool("llc"));
    cmd.args(["-filetype=obj", "-mtriple=amdgcn-amd-amdhsa"])
        .arg(format!("-mcpu={cpu}"))
        .arg(format!("--amdhsa-code-object-version={cov}"));
    if !attrs.is_empty() {
        cmd.arg(format!("-mattr={attrs}"));
    }
    run_ok(cmd.arg(ir).arg("-o").arg(obj));
}

/// A HIP translation unit compiled for device only by clang-19 into an offload bundle.
pub struct HipBuild<'a> {
    /// HIP source; `__global__` is defined by the harness.
    pub source: &'a str,
    /// `--offload-arch` values, such as `gfx90a:xnack+`.
    pub archs: &'a [&'a str],
    /// Pass `--offload-compress` (CCOB output).
    pub compress: bool,
    /// Extra clang arguments.
    pub extra: &'a [&'a str],
}

impl<'a> HipBuild<'a> {
    /// An uncompressed build of `source` for `archs` without extra arguments.
    pub fn new(source: &'a str, archs: &'a [&'a str]) -> HipBuild<'a> {
        HipBuild {
            source,
            archs,
            compress: false,
            extra: &[],
        }
    }

    /// The same build with `--offload-compress`.
    pub fn compressed(self) -> HipBuild<'a> {
        HipBuild {
            compress: true,
            ..self
        }
    }

    /// Compiles into `dir/<stem>.hipfb` and returns the path. A fixed `-cuid` keeps the output
    /// independent of paths.
    pub fn build(&self, dir: &Path, stem: &str) -> PathBuf {
        let src = dir.join(format!("{stem}.hip"));
        std::fs::write(
            &src,
            format!(
                "#define __global__ __attribute__((global))\n{}",
                self.source
            ),
        )
        .expect("write HIP source");
        let out = dir.join(format!("{stem}.hipfb"));
        let mut cmd = Command::new(llvm_tool("clang++"));
        cmd.args([
            "-x",
            "hip",
            "-nogpulib",
            "-nogpuinc",
            "--cuda-device-only",
            "-O1",
        ])
        .arg(format!("-cuid={stem}"));
        for a in self.archs {
            cmd.arg(format!("--offload-arch={a}"));
        }
        if self.compress {
            cmd.arg("--offload-compress");
        }
        cmd.args(self.extra).arg("-c").arg(&src).arg("-o").arg(&out);
        run_ok(&mut cmd);
        out
    }
}

/// A small HIP source with `n` kernels of varied shape.
pub fn hip_kernels(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "extern \"C\" __global__ void k{i}(float *a, const float *b, int n) {{\n\
             int t = __builtin_amdgcn_workitem_id_x();\n\
             if (t < n) a[t] = b[t] * {i}.5f + (float)t;\n}}\n"
        ));
    }
    s
}

/// The entry IDs clang-offload-bundler-19 lists for `input` (a bundle, or a host object with
/// bundle sections: `-type=o` reads both), in the order it prints them.
pub fn bundler_list(input: &Path) -> Vec<String> {
    let out = run_ok(
        Command::new(llvm_tool("clang-offload-bundler"))
            .args(["-list", "-type=o"])
            .arg(format!("-input={}", input.display())),
    );
    String::from_utf8(out.stdout)
        .expect("clang-offload-bundler lists UTF-8 IDs")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Unbundles entry `id` of `input` with clang-offload-bundler-19 (`-type=o`) into `out` and
/// returns the bytes written.
pub fn bundler_unbundle(input: &Path, id: &str, out: &Path) -> Vec<u8> {
    run_ok(
        Command::new(llvm_tool("clang-offload-bundler"))
            .args(["-unbundle", "-type=o"])
            .arg(format!("-input={}", input.display()))
            .arg(format!("-targets={id}"))
            .arg(format!("-output={}", out.display())),
    );
    std::fs::read(out).unwrap_or_else(|e| panic!("cannot read {}: {e}", out.display()))
}

/// Dumps section `name` of the ELF file `file` into `out` with llvm-objcopy-19 (the way a user
/// gets a `.hip_fatbin` out of a library) and returns its bytes. llvm-objcopy's rewritten copy
/// of `file` goes to `out` with `.scratch` appended.
pub fn dump_section(file: &Path, name: &str, out: &Path) -> Vec<u8> {
    let mut scratch = out.as_os_str().to_owned();
    scratch.push(".scratch");
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--dump-section={name}={}", out.display()))
            .arg(file)
            .arg(&scratch),
    );
    let _ = std::fs::remove_file(&scratch);
    std::fs::read(out).unwrap_or_else(|e| panic!("cannot read {}: {e}", out.display()))
}

/// Every file under `root` (directories walked, links followed), by its path below it,
/// sorted.
pub fn files_under(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

/// A wheel-like zip at `to` of every file under `root` ([`files_under`]), each stored (not
/// compressed) under its path below `root`: a package around a tree the tests unpacked.
pub fn zip_tree(root: &Path, to: &Path) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for name in files_under(root) {
        z.start_file(name.as_str(), stored).unwrap();
        std::io::copy(&mut std::fs::File::open(root.join(&name)).unwrap(), &mut z).unwrap();
    }
    z.finish().unwrap();
}

/// The messages of the findings that name a missing file in `gfxkit verify --json`'s answer
/// `verified`, about the files whose path ends with `file`.
pub fn missing_findings(
    verified: &serde_json::Value,
    file: &str,
) -> std::collections::BTreeSet<String> {
    verified["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().ends_with(file))
        .flat_map(|f| f["problems"].as_array().unwrap().clone())
        .map(|p| p["message"].as_str().unwrap().to_owned())
        .filter(|m| m.ends_with(" is missing"))
        .collect()
}
