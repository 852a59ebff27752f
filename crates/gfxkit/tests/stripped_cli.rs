//! Host binaries whose section headers were stripped (`llvm-objcopy --strip-sections`): the
//! loader and the HIP runtime need none, and gfxkit reads them through the program headers
//! and the dynamic relocations. `list`, `select`, `doctor`, `verify`, `size`, `kernels` and
//! `extract` answer for the stripped copy of a clang-19 built shared library, non-PIE and PIE
//! executable, and kpack split library, exactly as for the original, but for the section names
//! (null without a section table); `prune` and `recompress` refuse it saying why.

mod host_fixtures;

use gfxkit_testkit::{llvm_tool, run_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const GFXKIT: &str = env!("CARGO_BIN_EXE_gfxkit");

struct Built {
    f: host_fixtures::Fixture,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| Built {
        f: host_fixtures::build(),
    })
}

fn gfxkit(args: &[&str]) -> Output {
    let out = Command::new(GFXKIT).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && out.status.code().is_some_and(|c| c <= 2),
        "gfxkit {args:?} crashed: {stderr}"
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A copy of `file` without section headers, under the same name in `dir`.
fn stripped(file: &Path, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let out = dir.join(file.file_name().unwrap());
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg("--strip-sections")
            .arg(file)
            .arg(&out),
    );
    let bytes = std::fs::read(&out).unwrap();
    // e_shoff and e_shnum are 0: no section table at all.
    assert_eq!(&bytes[0x28..0x30], &[0; 8]);
    assert_eq!(&bytes[0x3c..0x3e], &[0; 2]);
    out
}

/// The names of the sections a sectioned file's answers give and a stripped file's cannot.
const SECTIONS: [&str; 2] = [".hip_fatbin", ".hipFatBinSegment"];

/// `v` with every section name a file without section table cannot give set to null (keys
/// `section`) or removed from descriptions (`bundle 0 in section .hip_fatbin at ...`), and the
/// sizes of the whole file (which stripping changes) removed.
fn without_sections(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("file_size");
            for (k, x) in m.iter_mut() {
                if k == "section" && x.as_str().is_some_and(|n| SECTIONS.contains(&n)) {
                    *x = Value::Null;
                } else {
                    without_sections(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(without_sections),
        Value::String(t) => {
            for n in SECTIONS {
                *t = t.replace(&format!(" in section {n}"), "");
            }
        }
        _ => {}
    }
}

/// Runs `args` on `file` and on `bare` (its stripped copy, same file name) and checks the
/// exit codes and JSON agree but for section names; returns the original's JSON.
fn same_answer(args: &[&str], file: &Path, bare: &Path) -> Value {
    let run = |f: &Path| {
        let mut a = args.to_vec();
        a.push(s(f));
        let o = gfxkit(&a);
        let text = String::from_utf8_lossy(&o.stdout).replace(s(f), "FILE");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "gfxkit {a:?}: {e}\n{text}\n{}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
        (o.status.code(), v)
    };
    let (code, mut want) = run(file);
    let (bare_code, mut got) = run(bare);
    let original = want.clone();
    without_sections(&mut want);
    without_sections(&mut got);
    assert_eq!(
        (bare_code, &got),
        (code, &want),
        "gfxkit {args:?} on {} (stripped) and {}",
        bare.display(),
        file.display()
    );
    original
}

/// Every reading command on `file` and its stripped copy `bare`.
fn check_commands(file: &Path, bare: &Path, bundles: usize) {
    let v = same_answer(&["list", "--json"], file, bare);
    let listed = v["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(listed.len(), bundles, "{v}");
    assert!(listed.iter().all(|b| b["section"] == ".hip_fatbin"), "{v}");
    same_answer(&["list", "--json", "--check"], file, bare);
    for device in ["gfx90a:sramecc+:xnack+", "gfx906", "gfx1030", "gfx1100"] {
        same_answer(&["select", "--device", device, "--json"], file, bare);
        same_answer(&["doctor", "--device", device, "--json"], file, bare);
    }
    let v = same_answer(&["verify", "--json"], file, bare);
    assert!(!v.to_string().contains("error"), "{v}");
    same_answer(&["size", "--json"], file, bare);
    same_answer(&["kernels", "--json"], file, bare);
}

/// What `extract` writes for `file` into `dir`: file name (stem removed) and bytes.
fn extracted(file: &Path, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let o = gfxkit(&["extract", "-o", s(dir), s(file)]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let stem = file.file_name().unwrap().to_str().unwrap();
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            let rest = name.strip_prefix(stem).unwrap_or(&name).to_owned();
            (rest, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn stripped_shared_library_answers_as_the_original() {
    let f = &built().f;
    let d = f.dir.path();
    let bare = stripped(&f.shared, &d.join("bare"));
    check_commands(&f.shared, &bare, host_fixtures::TUS.len());
    let want = extracted(&f.shared, &d.join("x-so"));
    // One code object per device entry: 2 + 1 + 2.
    assert_eq!(want.len(), 5);
    assert_eq!(extracted(&bare, &d.join("x-so-bare")), want);
}

#[test]
fn stripped_non_pie_executable_answers_as_the_original() {
    let f = &built().f;
    let d = f.dir.path();
    let bare = stripped(&f.exe, &d.join("bare"));
    check_commands(&f.exe, &bare, host_fixtures::TUS.len());
    let want = extracted(&f.exe, &d.join("x-exe"));
    assert_eq!(extracted(&bare, &d.join("x-exe-bare")), want);
}

#[test]
fn stripped_pie_answers_as_the_original() {
    let f = &built().f;
    let bare = stripped(&f.pie, &f.dir.path().join("bare"));
    check_commands(&f.pie, &bare, host_fixtures::TUS.len());
}

/// A library split by `gfxkit kpack split` (HIPK wrappers relocated to `.rocm_kpack_ref`),
/// stripped: its wrappers, markers and archives are found as in the split library.
#[test]
fn stripped_kpack_split_library_answers_as_the_split_one() {
    let f = &built().f;
    let root = f.dir.path().join("kp");
    let split = root.join("lib").join("libt.so");
    let o = gfxkit(&[
        "kpack",
        "split",
        s(&f.shared),
        "--group",
        "t",
        "-o",
        s(&split),
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // Beside `lib`, so that the marker's `../.kpack/...` finds the same archives.
    let bare = stripped(&split, &root.join("bare"));
    let v = same_answer(&["list", "--json"], &split, &bare);
    let units = v["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(units.len(), 3, "{v}");
    assert!(units.iter().all(|u| u["format"] == "kpack"), "{v}");
    assert_eq!(v["files"][0]["kpack_archives"].as_array().unwrap().len(), 4);
    for device in ["gfx90a:sramecc+:xnack+", "gfx906", "gfx1100"] {
        let v = same_answer(&["select", "--device", device, "--json"], &split, &bare);
        assert_eq!(v["files"][0]["kpack"].as_array().unwrap().len(), 3, "{v}");
        assert_eq!(v["files"][0]["bundles"].as_array().unwrap().len(), 3);
        same_answer(&["doctor", "--device", device, "--json"], &split, &bare);
    }
    same_answer(&["verify", "--json"], &split, &bare);
    same_answer(&["kernels", "--json"], &split, &bare);
}

/// `prune`, `recompress` and `kpack split` refuse a stripped file, saying why, and leave it
/// alone.
#[test]
fn stripped_files_are_refused_by_rewrites_with_the_reason() {
    let f = &built().f;
    let bare = stripped(&f.shared, &f.dir.path().join("bare-rewrite"));
    let before = std::fs::read(&bare).unwrap();
    let out = bare.with_extension("out");
    for args in [
        vec!["prune", "--keep", "gfx906", s(&bare), "-o", s(&out)],
        vec!["recompress", s(&bare), "-o", s(&out)],
        vec!["kpack", "split", s(&bare), "--group", "t", "-o", s(&out)],
    ] {
        let o = gfxkit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("no section headers") && err.contains("needs the section table"),
            "{args:?}: {err}"
        );
        assert!(!out.exists());
    }
    assert_eq!(std::fs::read(&bare).unwrap(), before);
}
