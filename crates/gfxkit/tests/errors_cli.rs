//! One clear message per fault: every command run on damaged inputs built here (clang-19
//! bundles and shared objects, a CPU-only library, cut ELF files, wheels and tarballs cut or
//! with CPU-only members, a binary split by kpack) names the file exactly once in its error
//! (never "X: X: ..."), says "truncated" with the sizes for a cut ELF file, gives the place
//! and the expectation for a cut package, says a split binary is already split, and never
//! calls a message that makes it exit 2 a warning.

use gfxkit_testkit::{llvm_tool, run_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

const PRELUDE: &str = "#define __global__ __attribute__((global))\n\
typedef struct { unsigned x, y, z; } dim3;\n\
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);\n";

/// A run of gfxkit in `dir`: exit code, stdout, stderr.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn gfxkit(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .current_dir(dir)
        .env_remove("GFXKIT_MAX_UNCOMPRESSED")
        .output()
        .expect("run gfxkit");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes the first `n` bytes of `from` to `to` (both in `dir`).
fn cut(dir: &Path, from: &str, n: usize, to: &str) {
    let data = std::fs::read(dir.join(from)).unwrap();
    std::fs::write(dir.join(to), &data[..n.min(data.len())]).unwrap();
}

/// The inputs, built in `dir`: a clang-19 HIP library `libk.so`, its device code as a
/// compressed bundle, and the damaged files the test runs every command on.
fn build(dir: &Path) -> Vec<&'static str> {
    std::fs::write(
        dir.join("k.hip"),
        format!("{PRELUDE}{}", gfxkit_testkit::hip_kernels(2)),
    )
    .unwrap();
    let hip = |extra: &[&str], out: &str| {
        let mut c = Command::new(llvm_tool("clang++"));
        c.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-cuid=errors"])
            .args(["--offload-arch=gfx906", "--offload-arch=gfx90a"])
            .args(extra)
            .arg("-c")
            .arg(dir.join("k.hip"))
            .arg("-o")
            .arg(dir.join(out));
        run_ok(&mut c);
    };
    hip(&["--cuda-device-only"], "good.hipfb");
    hip(&["--cuda-device-only", "--offload-compress"], "k.z.hipfb");
    hip(&["-fPIC"], "host.o");
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-shared", "-fuse-ld=lld"])
            .arg(dir.join("host.o"))
            .arg("-o")
            .arg(dir.join("libk.so")),
    );
    std::fs::write(dir.join("cpu.c"), "int f(int x) { return x + 1; }\n").unwrap();
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-shared", "-fPIC", "-fuse-ld=lld"])
            .arg(dir.join("cpu.c"))
            .arg("-o")
            .arg(dir.join("cpu.so")),
    );
    // A compressed bundle whose zstd frame is overwritten: its header cannot be read.
    let mut z = std::fs::read(dir.join("k.z.hipfb")).unwrap();
    assert_eq!(&z[..4], b"CCOB");
    z[24..29].fill(0);
    std::fs::write(dir.join("bad.ccob"), &z).unwrap();
    // ELF files cut inside the program header table and before the section header table.
    cut(dir, "libk.so", 100, "cut100.so");
    cut(dir, "libk.so", 3000, "cut.so");
    // Wheels: CPU-only and cut members; cut in the end record and in half.
    sh(
        dir,
        "python3 -c \"import zipfile
z = zipfile.ZipFile('w.whl', 'w', zipfile.ZIP_DEFLATED)
z.writestr('w/__init__.py', '')
z.write('cpu.so', 'w/m.so')
z.write('libk.so', 'w/k.so')
z.write('cut.so', 'w/t.so')
z.close()\"
         mkdir -p t && cp libk.so t/ && tar cf t.tar t",
    );
    let whl = std::fs::metadata(dir.join("w.whl")).unwrap().len() as usize;
    cut(dir, "w.whl", whl - 10, "cutend.whl");
    cut(dir, "w.whl", whl / 2, "half.whl");
    cut(dir, "t.tar", 512 + 3000, "cut.tar");
    // A binary split by kpack.
    std::fs::create_dir_all(dir.join("ks/lib")).unwrap();
    let r = gfxkit(
        dir,
        &[
            "kpack",
            "split",
            "--group",
            "g",
            "-o",
            "ks/lib/split.so",
            "libk.so",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    vec![
        "bad.ccob",
        "cut100.so",
        "cut.so",
        "cpu.so",
        "w.whl",
        "cutend.whl",
        "half.whl",
        "cut.tar",
        "ks/lib/split.so",
        "missing.so",
    ]
}

/// Every command that reads files, with the options it needs (the file goes last).
fn commands(out: &Path) -> Vec<Vec<String>> {
    let o = |name: &str| out.join(name).display().to_string();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["list"]),
        v(&["verify"]),
        v(&["extract", "-o", &o("x")]),
        v(&["size"]),
        v(&["kernels"]),
        v(&["select", "--device", "gfx90a"]),
        v(&["doctor", "--device", "gfx90a"]),
        v(&["inspect"]),
        v(&["prune", "--keep", "gfx90a", "-o", &o("p")]),
        v(&["recompress", "--uncompressed", "-o", &o("r")]),
        v(&[
            "unbundle",
            "--target",
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "-o",
            &o("u"),
        ]),
        v(&["decompress", "-o", &o("d")]),
        v(&["kpack", "split", "--group", "g", "-o", &o("s.so")]),
    ]
}

fn outputs(dir: &Path, files: &[&str]) -> Vec<(String, String, Run)> {
    let out = dir.join("out");
    let mut runs = Vec::new();
    for f in files {
        for c in commands(&out) {
            let _ = std::fs::remove_dir_all(&out);
            std::fs::create_dir_all(out.join("x")).unwrap();
            let mut args: Vec<&str> = c.iter().map(String::as_str).collect();
            args.push(f);
            let r = gfxkit(dir, &args);
            runs.push((f.to_string(), c.join(" "), r));
        }
    }
    runs
}

#[test]
fn every_error_names_its_file_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = build(dir);
    let mut failures = Vec::new();
    for (file, cmd, r) in outputs(dir, &files) {
        let all = format!("{}{}", r.stdout, r.stderr);
        let what = format!("gfxkit {cmd} {file} (exit {}):\n{all}", r.code);
        assert!((0..=2).contains(&r.code), "{what}");
        // The first error line names the file (or its package member) exactly once.
        if let Some(first) = r.stderr.lines().find(|l| l.starts_with("gfxkit: error:")) {
            if first.matches(file.as_str()).count() != 1 {
                failures.push(format!("first error line names {file} not once: {what}"));
            }
        }
        // No line says the file twice ("X: X: ...", "cannot verify X: X: ...").
        for line in all.lines() {
            if line.matches(file.as_str()).count() > 1 {
                failures.push(format!("{file} twice in {line:?}: {what}"));
            }
        }
        // A message that makes the command exit 2 is an error, not a warning.
        if r.code == 2 && !all.contains("error") && !all.contains("ERROR") {
            failures.push(format!("exit 2 without an error: {what}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn list_keeps_its_output_and_its_errors_in_order_on_one_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    // Standard output and standard error into one pipe, as on a terminal or with `2>&1`:
    // the error about the damaged bundle comes after the lines of the file before it and
    // before those of the file after it, although standard output is buffered.
    let out = Command::new("sh")
        .args(["-c", "exec \"$0\" \"$@\" 2>&1"])
        .arg(env!("CARGO_BIN_EXE_gfxkit"))
        .args(["list", "good.hipfb", "bad.ccob", "good.hipfb"])
        .current_dir(dir)
        .output()
        .expect("run gfxkit");
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(2), "{all}");
    let error = all.find("gfxkit: error: bad.ccob").expect(&all);
    let first = all.find("good.hipfb:").expect(&all);
    let second = all[error..].find("good.hipfb:").map(|i| error + i);
    assert!(first < error && second.is_some(), "{all}");
}

#[test]
fn list_names_the_file_of_a_bad_bundle_header() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    // The damaged bundle first, then a good one: the error says which file it is about.
    let r = gfxkit(dir, &["list", "bad.ccob", "good.hipfb"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("gfxkit: error: bad.ccob: bundle 0 at offset 0x0: "),
        "{}",
        r.stderr
    );
    let json = gfxkit(dir, &["list", "--json", "bad.ccob"]);
    assert!(
        json.stdout
            .contains("\"error\": \"bad.ccob: bundle 0 at offset 0x0:"),
        "{}",
        json.stdout
    );
    // A wheel with a CPU-only member, a library and a cut library: the CPU-only member is
    // named as such (not an error), the cut one is a problem naming it once.
    let r = gfxkit(dir, &["verify", "w.whl"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("w.whl: 1 member without device code: w/m.so"),
        "{}",
        r.stdout
    );
    assert!(!r.stderr.contains("w/m.so"), "{}", r.stderr);
    assert_eq!(r.stdout.matches("w.whl!w/t.so").count(), 1, "{}", r.stdout);
    assert!(r.stdout.contains("truncated: need"), "{}", r.stdout);
}

#[test]
fn a_cut_elf_file_says_truncated_with_the_sizes_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    let size = std::fs::read(dir.join("libk.so")).unwrap();
    // e_shoff and the section header table's size, from the ELF header.
    let shoff = u64::from_le_bytes(size[0x28..0x30].try_into().unwrap());
    let shnum = u16::from_le_bytes(size[0x3c..0x3e].try_into().unwrap());
    let want = format!(
        "truncated: need {} bytes at offset {shoff:#x} (the section header table), the file \
         has 3000",
        u64::from(shnum) * 64
    );
    for cmd in commands(&dir.join("out")) {
        if matches!(cmd[0].as_str(), "inspect" | "unbundle" | "decompress") {
            continue; // These read code objects or bundles only.
        }
        let _ = std::fs::remove_dir_all(dir.join("out"));
        std::fs::create_dir_all(dir.join("out/x")).unwrap();
        let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        args.push("cut.so");
        let r = gfxkit(dir, &args);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(r.code >= 1, "{cmd:?}: {all}");
        assert!(all.contains(&want), "{cmd:?}: want {want:?} in\n{all}");
        assert!(!all.contains("Invalid ELF"), "{cmd:?}: {all}");
    }
    // extract gives the damage alone, not also "no offload bundle".
    let r = gfxkit(dir, &["extract", "-o", "out/x", "cut.so"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(!r.stderr.contains("no offload bundle"), "{}", r.stderr);
    // select does not add "no device code" after the damage.
    let r = gfxkit(dir, &["select", "--device", "gfx90a", "cut.so"]);
    assert!(!r.stdout.contains("no device code"), "{}", r.stdout);
    // The program header table cut short.
    let r = gfxkit(dir, &["list", "cut100.so"]);
    assert!(
        r.stderr
            .contains("(the program header table), the file has 100"),
        "{}",
        r.stderr
    );
}

#[test]
fn cut_packages_give_the_place_and_what_was_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    let whl = std::fs::metadata(dir.join("w.whl")).unwrap().len();
    for cmd in [
        &["list"][..],
        &["verify"],
        &["size"],
        &["prune", "--keep", "gfx90a", "-o", "out.whl"],
    ] {
        let mut args = cmd.to_vec();
        args.push("cutend.whl");
        let r = gfxkit(dir, &args);
        assert_eq!(r.code, 2, "{cmd:?}: {}", r.stderr);
        let want = format!(
            "truncated: need 22 bytes at offset {:#x} for the end-of-central-directory record, \
             the package has {}",
            whl - 22,
            whl - 10
        );
        assert!(
            r.stderr.contains(&want),
            "{cmd:?}: want {want}\n{}",
            r.stderr
        );
        assert!(!r.stderr.contains("fill whole buffer"), "{}", r.stderr);

        let mut args = cmd.to_vec();
        args.push("half.whl");
        let r = gfxkit(dir, &args);
        assert!(
            r.stderr.contains("no end-of-central-directory record"),
            "{cmd:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("EOCD"), "{}", r.stderr);
    }
    // A tar cut inside a member: that member, its size, and nothing after it.
    let r = gfxkit(dir, &["list", "cut.tar"]);
    let errors: Vec<&str> = r.stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{}", r.stderr);
    assert!(
        errors[0].contains("cut.tar!t/libk.so: member has ")
            && errors[0].contains("bytes, fewer than the"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_split_binary_is_said_to_be_split() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    let split: PathBuf = dir.join("ks/lib/split.so");
    assert!(split.exists());
    for cmd in [
        &["prune", "--keep", "gfx90a", "-o", "out.so"][..],
        &["recompress", "--uncompressed", "-o", "out.so"],
        &["kpack", "split", "--group", "g", "-o", "out.so"],
    ] {
        let mut args = cmd.to_vec();
        args.push("ks/lib/split.so");
        let r = gfxkit(dir, &args);
        assert_eq!(r.code, 2, "{cmd:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("already split by kpack") && r.stderr.contains("gfxkit kpack inline"),
            "{cmd:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("not HIPF"), "{}", r.stderr);
        assert!(!r.stderr.contains("is empty"), "{}", r.stderr);
    }
}

#[test]
fn size_calls_what_makes_it_exit_2_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    let r = gfxkit(dir, &["size", "bad.ccob", "libk.so"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("gfxkit: error: bad.ccob: "),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

#[test]
fn damage_found_in_a_directory_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir);
    std::fs::create_dir_all(dir.join("tree")).unwrap();
    for f in ["cut.so", "cutend.whl", "cpu.so"] {
        std::fs::copy(dir.join(f), dir.join("tree").join(f)).unwrap();
    }
    // `list -r` kept only files with bundles or a read error: a cut ELF file vanished.
    let r = gfxkit(dir, &["list", "-r", "tree"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("tree/cut.so: "), "{}", r.stderr);
    assert!(
        r.stderr.contains("tree/cutend.whl: truncated"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("cpu.so"), "{}", r.stdout);
    // `kernels DIR` dropped the errors of files it found.
    let r = gfxkit(dir, &["kernels", "tree"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("tree/cut.so: "), "{}", r.stderr);
    assert!(
        r.stderr.contains("tree/cutend.whl: truncated"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("cpu.so"), "{}", r.stderr);
}
