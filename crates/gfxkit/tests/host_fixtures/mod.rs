//! Host binaries built by clang-19 for the host, select and doctor tests: HIP translation units
//! compiled for host and device, linked into a shared library, executables (PIE and non-PIE),
//! an archive, and a new-offload-driver object. A small C stub stands in for the HIP runtime.

#![allow(dead_code)]

use gfxkit_testkit::{llvm_tool, run_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Declarations clang needs to compile kernel launches without the HIP headers.
pub const PRELUDE: &str = "#define __global__ __attribute__((global))\n\
struct dim3 { unsigned x, y, z; };\n\
typedef struct ihipStream_t *hipStream_t;\n\
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, hipStream_t s);\n";

/// The registration functions the compiler-generated constructors call.
const STUB: &str = "void **__hipRegisterFatBinary(void *p) { static void *h; (void)p; return &h; }\n\
void __hipRegisterFunction(void **a, const void *b, char *c, const char *d, int e, void *f, void *g, void *h, void *i, int *j) {}\n\
void __hipUnregisterFatBinary(void **h) {}\n\
int hipLaunchKernel() { return 0; }\n\
int __hipPushCallConfiguration() { return 0; }\n\
int __hipPopCallConfiguration() { return 0; }\n";

/// One HIP translation unit.
#[derive(Debug, Clone)]
pub struct Tu {
    /// File stem.
    pub name: &'static str,
    /// `--offload-arch` values.
    pub archs: &'static [&'static str],
    /// `--offload-compress`.
    pub compress: bool,
    /// Number of kernels.
    pub kernels: usize,
}

/// The translation units of the standard fixture, in link order.
pub const TUS: &[Tu] = &[
    Tu {
        name: "t0",
        archs: &["gfx906", "gfx90a:xnack+"],
        compress: false,
        kernels: 2,
    },
    Tu {
        name: "t1",
        archs: &["gfx1030"],
        compress: true,
        kernels: 1,
    },
    Tu {
        name: "t2",
        archs: &["gfx90a:xnack-", "gfx906"],
        compress: true,
        kernels: 3,
    },
];

/// HIP source with `n` kernels named `<prefix>_k<i>`, with the declarations clang needs.
pub fn kernels(prefix: &str, n: usize) -> String {
    let mut s = String::from(PRELUDE);
    for i in 0..n {
        s.push_str(&format!(
            "extern \"C\" __global__ void {prefix}_k{i}(float *a, int n) {{\n\
             int t = __builtin_amdgcn_workitem_id_x();\n if (t < n) a[t] = a[t] * {i}.5f + t;\n}}\n"
        ));
    }
    s
}

/// Compiles `n` kernels (named `<stem>_k<i>`) with the new offload driver (`-fgpu-rdc`) into
/// `dir/<stem>.o`, whose `.llvm.offloading` section holds one image per `--offload-arch`;
/// `extra` goes to clang as well.
pub fn new_driver_object(
    dir: &Path,
    stem: &str,
    n: usize,
    archs: &[&str],
    extra: &[&str],
) -> PathBuf {
    let src = dir.join(format!("{stem}.hip"));
    std::fs::write(&src, kernels(stem, n)).unwrap();
    let obj = dir.join(format!("{stem}.o"));
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-x", "hip", "--offload-new-driver", "-fgpu-rdc"])
            .args(["-nogpulib", "-nogpuinc", "-c"])
            .args(extra)
            .args(archs.iter().map(|a| format!("--offload-arch={a}")))
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    obj
}

/// Compiles one TU for host and device into `dir/<name>.o` (position independent).
pub fn compile_tu(dir: &Path, tu: &Tu) -> PathBuf {
    let src = dir.join(format!("{}.hip", tu.name));
    std::fs::write(&src, kernels(tu.name, tu.kernels)).unwrap();
    let obj = dir.join(format!("{}.o", tu.name));
    let mut cmd = Command::new(llvm_tool("clang++"));
    cmd.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-fPIC"])
        .arg(format!("-cuid={}", tu.name));
    for a in tu.archs {
        cmd.arg(format!("--offload-arch={a}"));
    }
    if tu.compress {
        cmd.arg("--offload-compress");
    }
    cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
    run_ok(&mut cmd);
    obj
}

fn compile_c(dir: &Path, name: &str, text: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).unwrap();
    let obj = dir.join(format!("{name}.o"));
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-fPIC", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    obj
}

/// Links `objs` with clang++ and lld.
pub fn link(dir: &Path, out: &str, flags: &[&str], objs: &[PathBuf]) -> PathBuf {
    let path = dir.join(out);
    run_ok(
        Command::new(llvm_tool("clang++"))
            .arg("-fuse-ld=lld")
            .args(flags)
            .args(objs)
            .arg("-o")
            .arg(&path),
    );
    path
}

/// Everything the tests read.
pub struct Fixture {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The TU objects, in [`TUS`] order.
    pub objects: Vec<PathBuf>,
    /// `libt.so` from all TUs.
    pub shared: PathBuf,
    /// Non-PIE executable from all TUs.
    pub exe: PathBuf,
    /// PIE executable from all TUs.
    pub pie: PathBuf,
    /// `libt.a` holding t0.o and t1.o.
    pub archive: PathBuf,
}

/// A directory for fixtures under Cargo's per-target scratch directory: fixtures held in
/// statics are never dropped, so they stay below `target/` rather than piling up in `/tmp`.
fn fixture_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("host-fixture-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Builds the standard fixture.
pub fn build() -> Fixture {
    let dir = fixture_dir();
    let d = dir.path();
    let objects: Vec<PathBuf> = TUS.iter().map(|t| compile_tu(d, t)).collect();
    let stub = compile_c(d, "stub", STUB);
    let main = compile_c(d, "main", "int main(void) { return 0; }\n");
    let mut so_objs = objects.clone();
    so_objs.push(stub.clone());
    let shared = link(d, "libt.so", &["-shared"], &so_objs);
    let mut exe_objs = so_objs.clone();
    exe_objs.push(main);
    let exe = link(d, "t_nopie", &["-no-pie"], &exe_objs);
    let pie = link(d, "t_pie", &["-pie"], &exe_objs);
    let archive = d.join("libt.a");
    run_ok(
        Command::new(llvm_tool("llvm-ar"))
            .arg("rcs")
            .arg(&archive)
            .arg(&objects[0])
            .arg(&objects[1]),
    );
    Fixture {
        dir,
        objects,
        shared,
        exe,
        pie,
        archive,
    }
}

/// Builds just the shared library (for select and doctor tests).
pub fn build_shared() -> (tempfile::TempDir, PathBuf) {
    let dir = fixture_dir();
    let d = dir.path();
    let mut objs: Vec<PathBuf> = TUS.iter().map(|t| compile_tu(d, t)).collect();
    objs.push(compile_c(d, "stub", STUB));
    let so = link(d, "libt.so", &["-shared"], &objs);
    (dir, so)
}

/// Compiles the HIP `source` for `archs` and links it with the runtime stub into
/// `dir/lib<name>.so`.
pub fn shared_from_source(dir: &Path, name: &str, source: &str, archs: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.hip"));
    std::fs::write(&src, source).unwrap();
    let obj = dir.join(format!("{name}.o"));
    let mut cmd = Command::new(llvm_tool("clang++"));
    cmd.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-fPIC"])
        .arg(format!("-cuid={name}"));
    for a in archs {
        cmd.arg(format!("--offload-arch={a}"));
    }
    run_ok(cmd.arg("-c").arg(&src).arg("-o").arg(&obj));
    let stub = compile_c(dir, &format!("{name}-stub"), STUB);
    link(dir, &format!("lib{name}.so"), &["-shared"], &[obj, stub])
}

/// A section header of a little-endian ELF64 file: (index, name, offset of the header in the
/// file, sh_addr, sh_offset, sh_size).
#[derive(Debug, Clone)]
pub struct Shdr {
    pub name: String,
    pub header_at: usize,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
}

fn u16le(d: &[u8], o: usize) -> usize {
    u16::from_le_bytes([d[o], d[o + 1]]) as usize
}
fn u32le(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(d[o..o + 4].try_into().unwrap())
}
pub fn u64le(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(d[o..o + 8].try_into().unwrap())
}

/// The section headers of a well-formed ELF64 file (test-side reader, independent of gfxkit).
pub fn sections(d: &[u8]) -> Vec<Shdr> {
    let shoff = u64le(d, 0x28) as usize;
    let shentsize = u16le(d, 0x3a);
    let shnum = u16le(d, 0x3c);
    let shstrndx = u16le(d, 0x3e);
    let strtab_off = u64le(d, shoff + shstrndx * shentsize + 0x18) as usize;
    (0..shnum)
        .map(|i| {
            let h = shoff + i * shentsize;
            let name_off = strtab_off + u32le(d, h) as usize;
            let end = d[name_off..].iter().position(|&b| b == 0).unwrap();
            Shdr {
                name: String::from_utf8_lossy(&d[name_off..name_off + end]).into_owned(),
                header_at: h,
                addr: u64le(d, h + 0x10),
                offset: u64le(d, h + 0x18),
                size: u64le(d, h + 0x20),
            }
        })
        .collect()
}

/// The section named `name`.
pub fn section(d: &[u8], name: &str) -> Shdr {
    sections(d)
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no section {name}"))
}

/// Offset in the file of the `.rela.dyn` entry relocating the pointer of wrapper `i` (a
/// shared library's `.hipFatBinSegment` record).
pub fn wrapper_rela(d: &[u8], i: u64) -> usize {
    let seg = section(d, ".hipFatBinSegment");
    let rela = section(d, ".rela.dyn");
    let slot = seg.addr + i * 24 + 8;
    (0..rela.size / 24)
        .map(|k| (rela.offset + k * 24) as usize)
        .find(|&at| u64le(d, at) == slot)
        .expect("a relocation for the wrapper")
}

/// The MessagePack metadata a kpack-split library's wrappers point to:
/// `{"kernel_name": "lib/libt.so", "kpack_search_paths": [archive]}` (`archive` shorter than 32
/// bytes).
pub fn kpack_metadata(archive: &str) -> Vec<u8> {
    let mut msg = vec![0x82u8, 0xab];
    msg.extend_from_slice(b"kernel_name");
    msg.push(0xab);
    msg.extend_from_slice(b"lib/libt.so");
    msg.push(0xb2);
    msg.extend_from_slice(b"kpack_search_paths");
    msg.push(0x91);
    assert!(archive.len() < 32);
    msg.push(0xa0 | archive.len() as u8);
    msg.extend_from_slice(archive.as_bytes());
    msg
}

/// Rewrites the shared library at `so` the way kpack splitting does: `.hip_fatbin` zeroed,
/// every wrapper's magic `HIPK` and its pointer (the `R_X86_64_RELATIVE` addend) aimed at
/// MessagePack metadata naming `archive`, written into `.eh_frame` (any allocated section
/// does for discovery). Returns the new file's path.
pub fn kpack_binary(so: &Path, out: &Path, archive: &str) -> PathBuf {
    let mut d = std::fs::read(so).unwrap();
    let fatbin = section(&d, ".hip_fatbin");
    d[fatbin.offset as usize..(fatbin.offset + fatbin.size) as usize].fill(0);
    let frame = section(&d, ".eh_frame");
    let msg = kpack_metadata(archive);
    d[frame.offset as usize..][..msg.len()].copy_from_slice(&msg);
    let seg = section(&d, ".hipFatBinSegment");
    for i in 0..seg.size / 24 {
        let rec = (seg.offset + i * 24) as usize;
        d[rec..rec + 4].copy_from_slice(&0x4B50_4948u32.to_le_bytes());
        let at = wrapper_rela(&d, i);
        d[at + 16..at + 24].copy_from_slice(&frame.addr.to_le_bytes());
    }
    std::fs::write(out, &d).unwrap();
    out.to_path_buf()
}
