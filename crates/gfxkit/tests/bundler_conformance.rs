//! Conformance of the drop-in `clang-offload-bundler` against Debian's clang-offload-bundler 19.
//!
//! Every case runs both tools in twin directories holding the same fixtures, with the same
//! arguments, and compares the exit code, standard output and every file left in the
//! directory byte for byte. Standard error must carry clang's message (gfxkit may add the file
//! name or offset after it). Cases where gfxkit deliberately differs (docs/offload-bundler.md)
//! are tested separately at the end.
//!
//! The same matrix runs through `gfxkit offload-bundler` and through a symlink named
//! `clang-offload-bundler` pointing at the gfxkit binary.

use gfxkit_testkit::{bundler_unbundle, hip_kernels, llvm_tool, run_ok, HipBuild};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const GFXKIT: &str = env!("CARGO_BIN_EXE_gfxkit");

const ARCHS: &[&str] = &[
    "gfx906",
    "gfx90a:xnack+",
    "gfx90a:xnack-",
    "gfx1030",
    "gfx1100",
];

struct Fixtures {
    _dir: tempfile::TempDir,
    /// File name -> bytes, copied into every case directory.
    files: BTreeMap<String, Vec<u8>>,
    /// A directory holding a `clang-offload-bundler` symlink to gfxkit.
    link: PathBuf,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let src = hip_kernels(6);
        let plain = HipBuild::new(&src, ARCHS).build(d, "k");
        let packed = HipBuild::new(&src, ARCHS).compressed().build(d, "kz");
        let mut files = BTreeMap::new();
        files.insert("k.hipfb".to_owned(), std::fs::read(&plain).unwrap());
        files.insert("kz.hipfb".to_owned(), std::fs::read(&packed).unwrap());
        // Code objects unbundled by clang itself.
        for (t, name) in [
            ("hipv4-amdgcn-amd-amdhsa--gfx906", "gfx906.co"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", "gfx1030.co"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", "gfx90a_xnack+.co"),
        ] {
            files.insert(name.to_owned(), bundler_unbundle(&plain, t, &d.join(name)));
        }
        // Text inputs and a host object.
        files.insert(
            "host.ll".to_owned(),
            b"; host module\ndefine i32 @main() {\n  ret i32 0\n}\n".to_vec(),
        );
        files.insert(
            "dev.ll".to_owned(),
            b"; device module\ntarget triple = \"amdgcn-amd-amdhsa\"\n".to_vec(),
        );
        files.insert("host.i".to_owned(), b"int main() { return 0; }\n".to_vec());
        files.insert("dev.i".to_owned(), b"__global__ void k() {}\n".to_vec());
        files.insert("garbage.bin".to_owned(), b"not a bundle at all\n".to_vec());
        files.insert("empty".to_owned(), Vec::new());
        files.insert(
            "args.rsp".to_owned(),
            b"-type=o\n-targets=hipv4-amdgcn-amd-amdhsa--gfx906 \"-input=k.hipfb\"\n-output=a -unbundle\n".to_vec(),
        );
        // A host relocatable object, an object bundle made by clang from it, and an archive.
        std::fs::write(d.join("h.c"), "int main(void) { return 0; }\n").unwrap();
        run_ok(
            Command::new(llvm_tool("clang"))
                .current_dir(d)
                .args(["-c", "h.c", "-o", "h.o"]),
        );
        run_ok(
            Command::new(llvm_tool("clang-offload-bundler"))
                .current_dir(d)
                .arg("-type=o")
                .arg(format!("-targets={HOST},{G1030},{G906}"))
                .args([
                    "-input=h.o",
                    "-input=gfx1030.co",
                    "-input=gfx906.co",
                    "-output=m.o",
                ]),
        );
        run_ok(
            Command::new(llvm_tool("clang-offload-bundler"))
                .current_dir(d)
                .arg("-type=o")
                .arg(format!("-targets={HOST},{G906}"))
                .args(["-input=h.o", "-input=gfx906.co", "-output=m1.o"]),
        );
        run_ok(
            Command::new(llvm_tool("llvm-ar"))
                .current_dir(d)
                .args(["rc", "lib.a", "m1.o", "m.o"]),
        );
        for f in ["h.o", "m.o", "lib.a"] {
            files.insert(f.to_owned(), std::fs::read(d.join(f)).unwrap());
        }
        let link_dir = d.join("link");
        std::fs::create_dir(&link_dir).unwrap();
        std::os::unix::fs::symlink(GFXKIT, link_dir.join("clang-offload-bundler")).unwrap();
        Fixtures {
            link: link_dir.join("clang-offload-bundler"),
            _dir: dir,
            files,
        }
    })
}

/// How the drop-in is invoked.
#[derive(Clone, Copy, Debug)]
enum Route {
    Subcommand,
    Symlink,
}

struct Run {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    files: BTreeMap<String, Vec<u8>>,
}

fn run_in(dir: &Path, program: &Path, pre: &[&str], args: &[&str], env: &[(&str, &str)]) -> Run {
    for (name, bytes) in &fixtures().files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .args(pre)
        .args(args)
        .env("LLVM_DISABLE_SYMBOLIZATION", "1")
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_VERBOSE")
        .env_remove("OFFLOAD_BUNDLER_COMPRESSION_LEVEL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            files.insert(
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            );
        }
    }
    Run {
        code: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        files,
    }
}

/// The messages of a run's stderr without the program-name prefixes.
fn messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(|l| {
            let l = l.trim();
            for marker in ["error: ", "warning: "] {
                if let Some(i) = l.find(marker) {
                    return l[i + marker.len()..].to_owned();
                }
            }
            match l.find(": ") {
                Some(i) => l[i + 2..].to_owned(),
                None => l.to_owned(),
            }
        })
        .filter(|l| !l.is_empty())
        .collect()
}

fn sorted_lines(b: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(b)
        .lines()
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

fn gfxkit_run(route: Route, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    match route {
        Route::Subcommand => run_in(dir, Path::new(GFXKIT), &["offload-bundler"], args, env),
        Route::Symlink => run_in(dir, &fixtures().link, &[], args, env),
    }
}

/// Runs `args` with both tools and checks they agree.
fn same(args: &[&str]) {
    same_env(args, &[]);
}

fn same_env(args: &[&str], env: &[(&str, &str)]) {
    let fx = fixtures();
    let a = tempfile::tempdir().unwrap();
    let clang = run_in(
        a.path(),
        &llvm_tool("clang-offload-bundler"),
        &[],
        args,
        env,
    );
    for route in [Route::Subcommand, Route::Symlink] {
        let b = tempfile::tempdir().unwrap();
        let ours = gfxkit_run(route, b.path(), args, env);
        let ctx = format!(
            "{route:?} {args:?}\n-- clang stderr:\n{}\n-- gfxkit stderr:\n{}",
            clang.stderr, ours.stderr
        );
        assert_eq!(ours.code, clang.code, "exit code differs: {ctx}");
        let listing = args.iter().any(|a| a.trim_start_matches('-') == "list");
        if listing {
            // clang lists in hash order; gfxkit in header order. Same IDs.
            assert_eq!(
                sorted_lines(&ours.stdout),
                sorted_lines(&clang.stdout),
                "{ctx}"
            );
        } else {
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&clang.stdout),
                "stdout differs: {ctx}"
            );
        }
        if clang.code != Some(0) {
            // On failure clang may leave some outputs behind; gfxkit checks everything
            // first and writes nothing (docs/offload-bundler.md).
            let extra: Vec<&String> = ours
                .files
                .keys()
                .filter(|n| !fx.files.contains_key(*n))
                .collect();
            assert!(
                extra.is_empty(),
                "gfxkit left {extra:?} after failing: {ctx}"
            );
        } else {
            let names_a: Vec<&String> = clang.files.keys().collect();
            let names_b: Vec<&String> = ours.files.keys().collect();
            assert_eq!(names_b, names_a, "files left differ: {ctx}");
        }
        for (name, bytes) in clang.files.iter().filter(|_| clang.code == Some(0)) {
            assert!(
                ours.files[name] == *bytes,
                "file {name} differs ({} vs {} bytes): {ctx}",
                ours.files[name].len(),
                bytes.len()
            );
        }
        // Every message of clang's appears in ours (ours may say more).
        let ours_msgs = messages(&ours.stderr).join("\n");
        for m in messages(&clang.stderr) {
            if m.starts_with("Did you mean") || m.starts_with("Unknown command line argument") {
                let head = m.split("  Try:").next().unwrap();
                if m.starts_with("Unknown") {
                    assert!(ours_msgs.contains(head), "missing message {m:?}: {ctx}");
                }
                continue;
            }
            assert!(ours_msgs.contains(&m), "missing message {m:?}: {ctx}");
        }
        assert_eq!(
            clang.stderr.is_empty(),
            ours.stderr.is_empty(),
            "stderr emptiness differs: {ctx}"
        );
    }
}

const G906: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
const G1030: &str = "hipv4-amdgcn-amd-amdhsa--gfx1030";
const HOST: &str = "host-x86_64-unknown-linux";

fn t(parts: &[&str]) -> String {
    format!("-targets={}", parts.join(","))
}

/// [`same`] for an unbundling run: `-type=<ty> -targets=<targets> -input=<input>
/// -output=<each output> -unbundle <extra...>`, in that order.
fn unbundle_same(ty: &str, targets: &[&str], input: &str, outputs: &[&str], extra: &[&str]) {
    let mut args = vec![format!("-type={ty}"), t(targets), format!("-input={input}")];
    args.extend(outputs.iter().map(|o| format!("-output={o}")));
    args.push("-unbundle".to_owned());
    args.extend(extra.iter().map(|e| (*e).to_owned()));
    same(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn usage_errors() {
    same(&["-type=o"]);
    same(&["-type=o", "-input=k.hipfb", "-output=x", "-unbundle"]);
    same(&[]);
    same(&["-input=k.hipfb", "-output=x", &t(&[G906]), "-unbundle"]);
    unbundle_same("zz", &[G906], "k.hipfb", &["x"], &[]);
    unbundle_same("o", &[G906, G1030], "k.hipfb", &["x"], &[]);
    same(&[
        "-type=o",
        &t(&[G906]),
        "-input=k.hipfb",
        "-input=k.hipfb",
        "-output=x",
    ]);
    same(&[
        "-type=o",
        &t(&[G906]),
        "-input=k.hipfb",
        "-output=x",
        "-output=y",
    ]);
    same(&["-type=a", &t(&[G906]), "-input=gfx906.co", "-output=x"]);
    same(&["-list", "-unbundle", "-type=o", "-input=k.hipfb"]);
    same(&["-list", "-type=o", "-input=k.hipfb", "-input=k.hipfb"]);
    same(&["-list", "-type=o", "-input=k.hipfb", "-output=a"]);
    same(&["-list", "-type=o", "-input=k.hipfb", "-targets=a"]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-inputs=a,b",
        "-targets=a",
        "-output=x",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        "-outputs=a,b",
        "-targets=a",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        "-targets=a",
        "-check-input-archive",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        "-targets=a",
        "-check-input-archive",
        "-unbundle",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-unbundle",
        "-bogus",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-unbundle",
        "positional",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-unbundle=maybe",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-bundle-align=abc",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-compression-level=x",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-unbundle",
        "-type",
    ]);
    same(&[
        "---type=o",
        "-input=k.hipfb",
        "-output=x",
        &t(&[G906]),
        "-unbundle",
    ]);
}

#[test]
fn target_errors() {
    let u = |targets: &str| {
        same(&[
            "-type=o",
            targets,
            "-input=k.hipfb",
            "-output=x",
            "-unbundle",
        ]);
    };
    u("-targets=foo-amdgcn-amd-amdhsa--gfx906");
    u("-targets=hip-foo-amd-amdhsa--gfx906");
    u("-targets=hip-AMDGCN-amd-amdhsa--gfx906");
    // Architectures LLVM knows under other names are valid triples.
    u("-targets=host-armv7-unknown-linux-gnueabihf");
    u("-targets=host-amd64-unknown-linux-gnu");
    unbundle_same("o", &[G906, G906], "k.hipfb", &["x", "y"], &[]);
    same(&[
        "-type=o",
        "-targets=hip-amdgcn-amd-amdhsa--gfx90a,hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "-input=gfx906.co",
        "-input=gfx906.co",
        "-output=x",
    ]);
    same(&[
        "-type=o",
        "-targets=openmp-amdgcn-amd-amdhsa--gfx906",
        "-input=gfx906.co",
        "-output=x",
    ]);
    same(&[
        "-type=o",
        &t(&[HOST, G906, "host-x86_64-unknown-linux-gnu"]),
        "-input=empty",
        "-input=gfx906.co",
        "-input=gfx906.co",
        "-output=x",
    ]);
    unbundle_same(
        "o",
        &[HOST, "host-x86_64-unknown-linux-gnu"],
        "empty",
        &["x", "y"],
        &[],
    );
}

#[test]
fn list() {
    same(&["-list", "-type=o", "-input=k.hipfb"]);
    same(&["--list", "--type=o", "--input=kz.hipfb"]);
    same(&["-list", "-type=bc", "-input", "k.hipfb"]);
    same(&["-list", "-type=o", "-input=gfx906.co"]);
    same(&["-list", "-type=o", "-input=garbage.bin"]);
    same(&["-list", "-type=o", "-input=nonexist"]);
    // Response files.
    same(&["@args.rsp"]);
    same(&["@missing.rsp"]);
}

#[test]
fn unbundle_binary() {
    for input in ["-input=k.hipfb", "-input=kz.hipfb"] {
        // One target, one output.
        let one = |targets: &str, extra: &[&str]| {
            let mut args = vec!["-type=o", targets, input, "-output=a", "-unbundle"];
            args.extend_from_slice(extra);
            same(&args);
        };
        same(&[
            "-type=o",
            &t(&[G906, G1030]),
            input,
            "-output=a",
            "-output=b",
            "-unbundle",
        ]);
        one("-targets=hip-amdgcn-amd-amdhsa--gfx906", &[]);
        // Legacy 3-part triple, compatible feature matching.
        one("-targets=hip-amdgcn-amd-amdhsa-gfx906", &[]);
        one("-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack+", &[]);
        one(
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+",
            &[],
        );
        one("-targets=hipv4-amdgcn-amd-amdhsa--gfx90a", &[]);
        // Missing bundles, with and without -allow-missing-bundles.
        one("-targets=hip-amdgcn-amd-amdhsa--gfx803", &[]);
        same(&[
            "-type=o",
            "-targets=hip-amdgcn-amd-amdhsa--gfx803,hipv4-amdgcn-amd-amdhsa--gfx1151,hip-amdgcn-amd-amdhsa--gfx1030",
            input,
            "-output=a",
            "-output=b",
            "-output=c",
            "-unbundle",
        ]);
        one(
            "-targets=hip-amdgcn-amd-amdhsa--gfx803",
            &["-allow-missing-bundles"],
        );
        // openmp matches hip entries only when asked.
        one("-targets=openmp-amdgcn-amd-amdhsa--gfx906", &[]);
        one(
            "-targets=openmp-amdgcn-amd-amdhsa--gfx906",
            &["-hip-openmp-compatible"],
        );
        // The host entry.
        same(&[
            "-type=o",
            &t(&[HOST, G906]),
            input,
            "-output=h",
            "-output=a",
            "-unbundle",
        ]);
    }
    // Option spellings.
    same(&[
        "--type",
        "o",
        "-input",
        "k.hipfb",
        "-output",
        "a",
        "-targets",
        G906,
        "-unbundle",
    ]);
    same(&[
        "-type=o",
        "-type=bc",
        "-input=k.hipfb",
        "-output=a",
        &t(&[G906]),
        "-unbundle",
        "-unbundle",
    ]);
    same(&[
        "-type=o",
        "-inputs=k.hipfb",
        "-outputs=a,b",
        &t(&[G906, G1030]),
        "-unbundle",
    ]);
    same(&[
        "-type=o",
        "-input=k.hipfb",
        "-output=a",
        &t(&[G906]),
        "-unbundle=true",
        "-list=false",
    ]);
}

#[test]
fn unbundle_host_only_and_bad_inputs() {
    // A plain ELF or any non-bundle: no bundles found.
    unbundle_same("o", &[G906], "gfx906.co", &["a"], &[]);
    unbundle_same(
        "o",
        &[HOST, G906],
        "gfx906.co",
        &["h", "a"],
        &["-allow-missing-bundles"],
    );
    unbundle_same(
        "bc",
        &[HOST, G906],
        "garbage.bin",
        &["h", "a"],
        &["-allow-missing-bundles"],
    );
    unbundle_same("o", &[G906], "nonexist", &["a"], &[]);
    unbundle_same("o", &[G906], "k.hipfb", &["/nonexistent-dir/a"], &[]);
}

#[test]
fn bundle_binary() {
    let co = ["-input=empty", "-input=gfx906.co", "-input=gfx1030.co"];
    for align in [
        "-bundle-align=1",
        "-bundle-align=4096",
        "-bundle-align=0x10",
    ] {
        let mut a = vec!["-type=o", "-output=out.hipfb", align];
        let targets = t(&[HOST, G906, G1030]);
        a.push(&targets);
        a.extend(co);
        same(&a);
    }
    // `-input=/dev/null` for the host entry, as HIP's builds write it (a device read as the
    // empty file it is), uncompressed and compressed.
    let targets = t(&[HOST, G906, G1030]);
    let null = ["-input=/dev/null", "-input=gfx906.co", "-input=gfx1030.co"];
    for extra in [&[][..], &["-compress", "-compression-level=3"][..]] {
        let mut a = vec!["-type=o", "-output=out.hipfb", &targets];
        a.extend(null);
        a.extend(extra);
        same(&a);
    }
    // Device-only HIP bundles need no host (non-object first input).
    same(&[
        "-type=o",
        &t(&[G906, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"]),
        "-input=garbage.bin",
        "-input=gfx90a_xnack+.co",
        "-output=out",
    ]);
    // bc, gch, ast use the binary format whatever the inputs are.
    same(&[
        "-type=bc",
        &t(&[HOST, "openmp-amdgcn-amd-amdhsa--gfx906"]),
        "-input=host.ll",
        "-input=dev.ll",
        "-output=out.bc",
    ]);
    // Legacy triple and 4-part host spellings are written in clang's standard form.
    same(&[
        "-type=o",
        "-targets=host-x86_64-unknown-linux,hip-amdgcn-amd-amdhsa-gfx906,openmp-x86_64-pc-linux-gnu",
        "-input=empty",
        "-input=gfx906.co",
        "-input=gfx1030.co",
        "-output=out",
    ]);
    same(&[
        "-type=o",
        &t(&[HOST, G906]),
        "-input=empty",
        "-input=nonexist",
        "-output=x",
    ]);
    same(&[
        "-type=o",
        &t(&[HOST, G906]),
        "-input=empty",
        "-input=gfx906.co",
        "-output=/nonexistent-dir/x",
    ]);
}

#[test]
fn bundle_compressed_decompresses_to_the_same_bundle() {
    // Compressed bytes may differ between zstd builds; what must agree is the exit code and the
    // bundle inside. clang 19 itself unbundles gfxkit's output.
    for level in [None, Some("-compression-level=9")] {
        let mut args = vec!["-type=o", "-output=out", "-compress"];
        let targets = t(&[HOST, G906, G1030]);
        args.push(&targets);
        args.extend([
            "-input=empty",
            "-input=gfx906.co",
            "-input=gfx1030.co",
            "-bundle-align=4096",
        ]);
        if let Some(l) = level {
            args.push(l);
        }
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let clang = run_in(
            a.path(),
            &llvm_tool("clang-offload-bundler"),
            &[],
            &args,
            &[],
        );
        let ours = gfxkit_run(Route::Subcommand, b.path(), &args, &[]);
        assert_eq!(clang.code, Some(0), "{}", clang.stderr);
        assert_eq!(ours.code, Some(0), "{}", ours.stderr);
        assert_eq!(
            &ours.files["out"][..8],
            &clang.files["out"][..8],
            "CCOB v2 zstd header"
        );
        // Linked against the zstd release clang links (scripts/test builds so), the very same
        // bytes; with another zstd, the same bundle inside (checked below).
        let same_zstd = gfxkit_bundle::codec::zstd_version()
            == gfxkit_bundle::codec::CLANG19_DEBIAN_ZSTD_VERSION;
        assert!(
            same_zstd || std::env::var_os("GFXKIT_EXPECT_CLANG_ZSTD").is_none(),
            "GFXKIT_EXPECT_CLANG_ZSTD is set but zstd {} is linked",
            gfxkit_bundle::codec::zstd_version()
        );
        if same_zstd {
            assert!(
                ours.files["out"] == clang.files["out"],
                "compressed bundle differs from clang's"
            );
        }
        let unpack = |dir: &Path| {
            for (t, o) in [(G906, "u906"), (G1030, "u1030")] {
                run_ok(
                    Command::new(llvm_tool("clang-offload-bundler"))
                        .current_dir(dir)
                        .args(["-type=o", "-input=out", "-unbundle"])
                        .arg(format!("-targets={t}"))
                        .arg(format!("-output={o}")),
                );
            }
        };
        unpack(a.path());
        unpack(b.path());
        for f in ["u906", "u1030"] {
            assert_eq!(
                std::fs::read(a.path().join(f)).unwrap(),
                std::fs::read(b.path().join(f)).unwrap()
            );
        }
        // The uncompressed sizes agree (same bundle inside).
        assert_eq!(&ours.files["out"][12..16], &clang.files["out"][12..16]);
    }
}

#[test]
fn text_bundles() {
    for (ty, host, dev) in [("ll", "host.ll", "dev.ll"), ("i", "host.i", "dev.i")] {
        let targets = t(&[HOST, "openmp-amdgcn-amd-amdhsa--gfx906"]);
        let ty = format!("-type={ty}");
        let (hi, di) = (format!("-input={host}"), format!("-input={dev}"));
        same(&[&ty, &targets, &hi, &di, "-output=bundled"]);
        // Unbundle clang's bundled file with both tools.
        let a = tempfile::tempdir().unwrap();
        let made = run_in(
            a.path(),
            &llvm_tool("clang-offload-bundler"),
            &[],
            &[&ty, &targets, &hi, &di, "-output=bundled"],
            &[],
        );
        assert_eq!(made.code, Some(0));
        let bytes = &made.files["bundled"];
        for route in [Route::Subcommand, Route::Symlink] {
            let b = tempfile::tempdir().unwrap();
            std::fs::write(b.path().join("bundled"), bytes).unwrap();
            let r = gfxkit_run(
                route,
                b.path(),
                &[
                    &ty,
                    &targets,
                    "-input=bundled",
                    "-output=h",
                    "-output=d",
                    "-unbundle",
                ],
                &[],
            );
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            assert_eq!(r.files["h"], fixtures().files[host]);
            assert_eq!(r.files["d"], fixtures().files[dev]);
        }
    }
}

// ---- Intentional differences (docs/offload-bundler.md) ----

fn ours(args: &[&str], env: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let d = tempfile::tempdir().unwrap();
    let r = gfxkit_run(Route::Symlink, d.path(), args, env);
    (d, r)
}

/// [`ours`], which must succeed.
fn ours_ok(args: &[&str], env: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let (d, r) = ours(args, env);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    (d, r)
}

/// clang-offload-bundler 19 run in a fresh directory holding the fixtures.
fn theirs(args: &[&str]) -> (tempfile::TempDir, Run) {
    let d = tempfile::tempdir().unwrap();
    let r = run_in(
        d.path(),
        &llvm_tool("clang-offload-bundler"),
        &[],
        args,
        &[],
    );
    (d, r)
}

/// clang-offload-bundler 19 unbundles `input` in `dir`, giving each `(target, fixture)` pair's
/// target exactly the fixture's bytes.
fn clang_unbundles(dir: &Path, input: &str, expect: &[(&str, &str)]) {
    let targets: Vec<&str> = expect.iter().map(|(t, _)| *t).collect();
    let outputs: Vec<String> = (0..expect.len()).map(|i| format!("-output=u{i}")).collect();
    let mut args = vec!["-type=o".to_owned(), t(&targets), format!("-input={input}")];
    args.extend(outputs);
    args.push("-unbundle".to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let c = clangs(dir, &args);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    for (i, (_, fixture)) in expect.iter().enumerate() {
        assert_eq!(
            std::fs::read(dir.join(format!("u{i}"))).unwrap(),
            fixtures().files[*fixture],
            "{fixture}"
        );
    }
}

/// The entry IDs clang-offload-bundler lists for `input` (in `dir`), sorted.
fn clang_list(dir: &Path, input: &str) -> Vec<String> {
    let c = clangs(dir, &["-list", "-type=o", &format!("-input={input}")]);
    sorted_lines(&c.stdout)
}

fn clangs(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(llvm_tool("clang-offload-bundler"))
        .current_dir(dir)
        .args(args)
        .env("LLVM_DISABLE_SYMBOLIZATION", "1")
        .output()
        .unwrap()
}

#[test]
fn device_only_bundle_with_a_code_object_first_where_clang_crashes() {
    let args = [
        "-type=o",
        "-targets=hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "-input=gfx906.co",
        "-input=gfx90a_xnack+.co",
        "-output=out",
    ];
    let (d, _) = ours_ok(&args, &[]);
    // clang 19 dies on a signal here; gfxkit writes the binary format, which clang reads.
    clang_unbundles(d.path(), "out", &[(G906, "gfx906.co")]);
    let (_a, crashed) = theirs(&args);
    assert_eq!(
        crashed.code, None,
        "clang 19 was expected to crash (signal)"
    );
}

#[test]
fn unknown_processors_keep_their_target_id() {
    let args = [
        "-type=o",
        "-targets=host-x86_64-unknown-linux,hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+",
        "-input=empty",
        "-input=gfx906.co",
        "-output=out",
    ];
    let (d, _) = ours_ok(&args, &[]);
    let list = gfxkit_run(
        Route::Subcommand,
        d.path(),
        &["-list", "-type=o", "-input=out"],
        &[],
    );
    assert_eq!(
        sorted_lines(&list.stdout),
        [
            "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+",
            "host-x86_64-unknown-linux--"
        ]
    );
    let (a, _) = theirs(&args);
    assert!(clang_list(a.path(), "out").contains(&"hipv4-amdgcn-amd-amdhsa--gfx1250-".to_owned()));
}

#[test]
fn host_ids_with_empty_components_are_not_doubled() {
    let args = [
        "-type=o",
        "-targets=host-x86_64-unknown-linux--,hipv4-amdgcn-amd-amdhsa--gfx906",
        "-input=empty",
        "-input=gfx906.co",
        "-output=out",
    ];
    let (d, _) = ours_ok(&args, &[]);
    assert!(clang_list(d.path(), "out").contains(&"host-x86_64-unknown-linux--".to_owned()));
}

#[test]
fn damaged_bundles_are_errors_with_offsets() {
    let d = tempfile::tempdir().unwrap();
    let whole = &fixtures().files["k.hipfb"];
    std::fs::write(d.path().join("trunc"), &whole[..whole.len() / 2]).unwrap();
    let r = gfxkit_run(
        Route::Subcommand,
        d.path(),
        &["-list", "-type=o", "-input=trunc"],
        &[],
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("trunc") && r.stderr.contains("offset"),
        "{}",
        r.stderr
    );
    let r = gfxkit_run(
        Route::Subcommand,
        d.path(),
        &[
            "-type=o",
            &t(&[G906]),
            "-input=trunc",
            "-output=x",
            "-unbundle",
        ],
        &[],
    );
    assert_eq!(r.code, Some(1));
    assert!(!d.path().join("x").exists());
}

#[test]
fn compressed_hash_mismatch_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let mut z = fixtures().files["kz.hipfb"].clone();
    z[16] ^= 0xff; // the v2 hash field
    std::fs::write(d.path().join("bad"), &z).unwrap();
    let args = [
        "-type=o",
        &t(&[G906]),
        "-input=bad",
        "-output=x",
        "-unbundle",
    ];
    let r = gfxkit_run(Route::Subcommand, d.path(), &args, &[]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("hash"), "{}", r.stderr);
    assert!(!d.path().join("x").exists());
    // clang 19 never checks the hash.
    assert!(clangs(d.path(), &args).status.success());
}

#[test]
fn ccob_v3_on_request() {
    let args = [
        "-type=o",
        &t(&[HOST, G906]),
        "-input=empty",
        "-input=gfx906.co",
        "-output=out",
        "-compress",
    ];
    let (d, _) = ours_ok(&args, &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "3")]);
    let out = std::fs::read(d.path().join("out")).unwrap();
    assert_eq!(&out[..6], b"CCOB\x03\x00");
    let u = gfxkit_run(
        Route::Subcommand,
        d.path(),
        &[
            "-type=o",
            &t(&[G906]),
            "-input=out",
            "-output=u",
            "-unbundle",
        ],
        &[],
    );
    assert_eq!(u.code, Some(0), "{}", u.stderr);
    assert_eq!(u.files["u"], fixtures().files["gfx906.co"]);
    // Without the variable: v2, as clang 19 writes.
    let (d2, r2) = ours(&args, &[]);
    assert_eq!(r2.code, Some(0));
    assert_eq!(
        &std::fs::read(d2.path().join("out")).unwrap()[..6],
        b"CCOB\x02\x00"
    );
}

#[test]
fn zero_alignment_is_an_error() {
    let (d, r) = ours(
        &[
            "-type=o",
            &t(&[HOST, G906]),
            "-input=empty",
            "-input=gfx906.co",
            "-output=out",
            "-bundle-align=0",
        ],
        &[],
    );
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("alignment"), "{}", r.stderr);
    assert!(!d.path().join("out").exists());
}

#[test]
fn object_bundles() {
    same(&["-list", "-type=o", "-input=m.o"]);
    unbundle_same("o", &[G906, G1030], "m.o", &["a", "b"], &[]);
    unbundle_same(
        "o",
        &[G906, "hipv4-amdgcn-amd-amdhsa--gfx1100"],
        "m.o",
        &["a", "b"],
        &[],
    );
    // The host entry: the object without its bundle sections. clang rewrites the file with
    // llvm-objcopy; gfxkit keeps the layout and drops the section headers, so the bytes
    // differ but the sections agree.
    let args = [
        "-type=o",
        &t(&[HOST, G906]),
        "-input=m.o",
        "-output=h",
        "-output=a",
        "-unbundle",
    ];
    let (d, r) = ours_ok(&args, &[]);
    let (a, c) = theirs(&args);
    assert_eq!(c.code, Some(0));
    assert_eq!(r.files["a"], c.files["a"]);
    let sections = |dir: &Path| {
        let o = run_ok(
            Command::new(llvm_tool("llvm-readelf"))
                .current_dir(dir)
                .args(["-S", "-W", "h"]),
        );
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut names: Vec<String> = text
            .lines()
            .filter_map(|l| l.split(']').nth(1))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|n| n != "Name")
            .collect();
        names.sort();
        names
    };
    let ours_s = sections(d.path());
    assert_eq!(ours_s, sections(a.path()));
    assert!(!ours_s
        .iter()
        .any(|n| n.starts_with("__CLANG_OFFLOAD_BUNDLE__")));
}

#[test]
fn bundling_into_a_host_object() {
    let args = [
        "-type=o",
        &t(&[HOST, G906, G1030]),
        "-input=h.o",
        "-input=gfx906.co",
        "-input=gfx1030.co",
        "-output=out.o",
    ];
    let (d, _) = ours_ok(&args, &[]);
    // clang reads gfxkit's object bundle back entry for entry.
    assert_eq!(
        clang_list(d.path(), "out.o"),
        [G1030, G906, "host-x86_64-unknown-linux--"]
    );
    clang_unbundles(
        d.path(),
        "out.o",
        &[(G906, "gfx906.co"), (G1030, "gfx1030.co")],
    );
}

#[test]
fn archives() {
    unbundle_same("a", &[G906, G1030], "lib.a", &["a.a", "b.a"], &[]);
    unbundle_same(
        "a",
        &["hipv4-amdgcn-amd-amdhsa--gfx1100"],
        "lib.a",
        &["a.a"],
        &[],
    );
    unbundle_same(
        "a",
        &["hipv4-amdgcn-amd-amdhsa--gfx1100"],
        "lib.a",
        &["a.a"],
        &["-allow-missing-bundles"],
    );
    unbundle_same("a", &[G906], "lib.a", &["a.a"], &["-check-input-archive"]);
    unbundle_same("a", &[G906], "nonexist.a", &["a.a"], &[]);
}

#[test]
fn back_to_back_bundles_are_all_listed() {
    let d = tempfile::tempdir().unwrap();
    let one = &fixtures().files["k.hipfb"];
    let mut two = one.clone();
    two.resize(one.len().div_ceil(4096) * 4096, 0);
    two.extend_from_slice(one);
    std::fs::write(d.path().join("two"), &two).unwrap();
    let r = gfxkit_run(
        Route::Symlink,
        d.path(),
        &["-list", "-type=o", "-input=two"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ours = sorted_lines(&r.stdout);
    let theirs = clang_list(d.path(), "two");
    // clang 19 stops after the first bundle; gfxkit lists both.
    assert_eq!(ours.len(), 2 * theirs.len());
    let mut doubled: Vec<String> = theirs.iter().flat_map(|l| [l.clone(), l.clone()]).collect();
    doubled.sort();
    assert_eq!(ours, doubled);
}
