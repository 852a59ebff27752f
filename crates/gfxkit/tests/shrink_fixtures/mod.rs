//! Fixtures for the shrink tests: HIP translation units built by clang-19 for several targets
//! (some with `--offload-compress`), linked by lld and by GNU ld into shared libraries and
//! executables against a stub HIP runtime (`tests/stub-hip/hip_stub.c`) that checks every
//! bundle registered with it.

#![allow(dead_code)]

use gfxkit_testkit::{llvm_tool, run_ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Declarations clang's HIP host code needs, in place of the HIP headers.
const PRELUDE: &str = "#define __global__ __attribute__((global))\n\
typedef struct { unsigned x, y, z; } dim3;\n\
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);\n";

/// The targets every translation unit is built for.
pub const ARCHS: [&str; 3] = ["gfx90a:xnack+", "gfx90a:xnack-", "gfx1030"];

/// The built fixture.
pub struct Fixture {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The stub runtime (`libamdhip64.so`).
    pub stub: PathBuf,
    /// PIC objects: a (uncompressed), b (compressed), c (uncompressed, two targets).
    pub objs: Vec<PathBuf>,
    /// Shared libraries: (name, path) linked by lld and by GNU ld from a, b, c, and by lld with
    /// `.hip_fatbin` last in its segment.
    pub libs: Vec<(String, PathBuf)>,
    /// Executables: (name, path): PIE by lld, PIE by GNU ld, non-PIE by GNU ld, PIE by lld with
    /// RELR relocations, non-PIE by lld, and the GNU ld PIE stripped of its symbols.
    pub exes: Vec<(String, PathBuf)>,
    /// A C program calling the shared library's functions (`fa`, `fb`, `fc`).
    pub lib_main: PathBuf,
    /// A static archive of the PIC objects.
    pub archive: PathBuf,
}

fn zstd_lib() -> PathBuf {
    for p in [
        "/usr/lib/x86_64-linux-gnu/libzstd.so.1",
        "/lib/x86_64-linux-gnu/libzstd.so.1",
        "/usr/lib64/libzstd.so.1",
    ] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("libzstd.so.1 is missing (apt-get install libzstd1); the stub HIP runtime needs it");
}

fn source(name: &str, with_main: bool) -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(&format!(
        "extern \"C\" __global__ void k{name}(float *a, int n) {{\n\
         int t = __builtin_amdgcn_workitem_id_x();\n\
         if (t < n) a[t] = a[t] * 2.0f + {len}.0f;\n}}\n\
         extern \"C\" __global__ void k{name}2(float *a) {{ a[1] = a[0] - 1.0f; }}\n",
        len = name.len()
    ));
    if with_main {
        s.push_str(
            "extern \"C\" int printf(const char *, ...);\n\
             extern \"C\" int fa(void); extern \"C\" int fb(void); extern \"C\" int fc(void);\n\
             extern \"C\" int stub_hip_registered(void);\n\
             int main() { printf(\"fa=%d fb=%d fc=%d registered=%d\\n\", fa(), fb(), fc(), stub_hip_registered()); return 0; }\n",
        );
    } else {
        // The value comes back through a C++ exception: unwinding finds this code's frame
        // description through the program headers (PT_GNU_EH_FRAME), which a rewrite moves.
        s.push_str(&format!(
            "static int raise_{name}(int v) {{ if (v > 0) throw v; return -1; }}\n\
             extern \"C\" int f{name}(void) {{ try {{ return raise_{name}({}); }} catch (int x) {{ return x; }} }}\n",
            name.as_bytes()[0] - b'a' + 1
        ));
    }
    s
}

fn compile(
    dir: &Path,
    name: &str,
    archs: &[&str],
    compress: bool,
    pic: bool,
    main: bool,
) -> PathBuf {
    let src = dir.join(format!("{name}.hip"));
    std::fs::write(&src, source(name, main)).unwrap();
    let out = dir.join(format!("{name}{}.o", if pic { "" } else { "-nopic" }));
    let mut cmd = Command::new(llvm_tool("clang++"));
    cmd.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1"])
        .arg(format!("-cuid={name}"))
        .arg(if pic { "-fPIC" } else { "-fno-pic" });
    for a in archs {
        cmd.arg(format!("--offload-arch={a}"));
    }
    if compress {
        cmd.arg("--offload-compress");
    }
    cmd.arg("-c").arg(&src).arg("-o").arg(&out);
    run_ok(&mut cmd);
    out
}

/// Builds everything.
pub fn build() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let clang = llvm_tool("clang");
    let clangxx = llvm_tool("clang++");
    let stub_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stub-hip/hip_stub.c");
    let stub = d.join("libamdhip64.so");
    run_ok(
        Command::new(&clang)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&stub)
            .arg(&stub_src)
            .arg(zstd_lib())
            .arg("-lz"),
    );
    let two = ["gfx90a", "gfx1030"];
    let a = compile(d, "a", &ARCHS, false, true, false);
    let b = compile(d, "b", &ARCHS, true, true, false);
    let c = compile(d, "c", &two, false, true, false);
    let m = compile(d, "main", &ARCHS, true, true, true);
    let an = compile(d, "a", &ARCHS, false, false, false);
    let bn = compile(d, "b", &ARCHS, true, false, false);
    let cn = compile(d, "c", &two, false, false, false);
    let mn = compile(d, "main", &ARCHS, true, false, true);
    let rpath = format!("-Wl,-rpath,{}", d.display());
    let last_ld = d.join("fatbin-last.ld");
    std::fs::write(
        &last_ld,
        "SECTIONS { .hip_fatbin : { *(.hip_fatbin) } } INSERT AFTER .eh_frame;\n",
    )
    .unwrap();
    let link = |out: &str, objs: &[&PathBuf], extra: &[&str]| -> PathBuf {
        let p = d.join(out);
        let mut cmd = Command::new(&clangxx);
        cmd.args(extra).arg("-o").arg(&p);
        for o in objs {
            cmd.arg(o);
        }
        cmd.arg(format!("-L{}", d.display()))
            .arg("-lamdhip64")
            .arg(&rpath);
        run_ok(&mut cmd);
        p
    };
    let libs = vec![
        (
            "lld".to_owned(),
            link("libt-lld.so", &[&a, &b, &c], &["-shared", "-fuse-ld=lld"]),
        ),
        (
            "bfd".to_owned(),
            link("libt-bfd.so", &[&a, &b, &c], &["-shared"]),
        ),
        (
            // .hip_fatbin placed last in its segment (after .eh_frame) by a linker script.
            "lld-last".to_owned(),
            link(
                "libt-lld-last.so",
                &[&a, &b, &c],
                &[
                    "-shared",
                    "-fuse-ld=lld",
                    &format!("-Wl,-T,{}", last_ld.display()),
                ],
            ),
        ),
    ];
    let exes = vec![
        (
            "pie-lld".to_owned(),
            link("app-pie-lld", &[&m, &a, &b, &c], &["-fuse-ld=lld", "-pie"]),
        ),
        (
            "pie-bfd".to_owned(),
            link("app-pie-bfd", &[&m, &a, &b, &c], &["-pie"]),
        ),
        (
            "nopie-bfd".to_owned(),
            link("app-nopie-bfd", &[&mn, &an, &bn, &cn], &["-no-pie"]),
        ),
        (
            // RELR: the wrapper pointers are stored in place, not in RELA addends.
            "pie-lld-relr".to_owned(),
            link(
                "app-pie-lld-relr",
                &[&m, &a, &b, &c],
                &["-fuse-ld=lld", "-pie", "-Wl,-z,pack-relative-relocs"],
            ),
        ),
        (
            "nopie-lld".to_owned(),
            link(
                "app-nopie-lld",
                &[&mn, &an, &bn, &cn],
                &["-no-pie", "-fuse-ld=lld"],
            ),
        ),
    ];
    let mut exes = exes;
    // Stripped: no .symtab, section headers kept.
    let stripped = d.join("app-stripped");
    run_ok(
        Command::new(llvm_tool("llvm-strip"))
            .arg("--strip-all")
            .arg(&exes[1].1)
            .arg("-o")
            .arg(&stripped),
    );
    exes.push(("stripped-bfd".to_owned(), stripped));
    let main_c = d.join("libmain.c");
    std::fs::write(
        &main_c,
        "#include <stdio.h>\nint fa(void); int fb(void); int fc(void); int stub_hip_registered(void);\n\
         int main(void) { printf(\"fa=%d fb=%d fc=%d registered=%d\\n\", fa(), fb(), fc(), stub_hip_registered()); return 0; }\n",
    )
    .unwrap();
    // Linked against a library called libt.so; which file that is comes from LD_LIBRARY_PATH.
    std::fs::copy(&libs[0].1, d.join("libt.so")).unwrap();
    let lib_main = d.join("libmain");
    run_ok(
        Command::new(&clang)
            .arg("-o")
            .arg(&lib_main)
            .arg(&main_c)
            .arg(format!("-L{}", d.display()))
            .args(["-lt", "-lamdhip64"]),
    );
    let archive = d.join("libobjs.a");
    run_ok(
        Command::new(llvm_tool("llvm-ar"))
            .arg("rcs")
            .arg(&archive)
            .args([&a, &b, &c]),
    );
    Fixture {
        stub,
        objs: vec![a, b, c],
        libs,
        exes,
        lib_main,
        archive,
        dir,
    }
}

/// Runs `gfxkit` with `args`.
pub fn gfxkit(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

/// Runs a program against the stub runtime; `expect` lists the targets every registered
/// bundle may hold (`None`: anything). `lib_path` becomes LD_LIBRARY_PATH.
pub fn run_program(prog: &Path, lib_path: Option<&str>, expect: Option<&str>) -> Output {
    let mut cmd = Command::new(prog);
    if let Some(d) = lib_path {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    match expect {
        Some(e) => cmd.env("STUB_HIP_EXPECT", e),
        None => cmd.env_remove("STUB_HIP_EXPECT"),
    };
    cmd.output().expect("run program")
}
