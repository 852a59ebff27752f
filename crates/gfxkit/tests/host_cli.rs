//! `gfxkit list`, `extract` and `verify` on host binaries built by clang-19: a shared library
//! and executables from several translation units (some `--offload-compress`), an archive,
//! a new-offload-driver object, a directory tree; extracted entries compared byte for byte
//! with clang-offload-bundler-19's unbundling of each object's own `.hip_fatbin`; damaged
//! copies give errors naming file and offset, never a panic.

mod host_fixtures;

use host_fixtures::{section, Fixture, TUS};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const GFXKIT: &str = env!("CARGO_BIN_EXE_gfxkit");

struct Built {
    f: Fixture,
    /// A new-offload-driver object (`.llvm.offloading` images).
    new_driver: PathBuf,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let f = host_fixtures::build();
        let d = f.dir.path();
        let new_driver =
            host_fixtures::new_driver_object(d, "nd", 1, &["gfx90a:xnack+", "gfx1030"], &["-O1"]);
        Built { f, new_driver }
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

fn json(args: &[&str]) -> (i32, Value) {
    let out = gfxkit(args);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "gfxkit {args:?}: {e}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks the bundles `list --json` reports for a file linked from every TU, in link order.
fn check_linked_listing(file: &Path, check: bool) {
    let mut args = vec!["list", "--json", s(file)];
    if check {
        args.push("--check");
    }
    let (code, v) = json(&args);
    assert_eq!(code, 0, "{v}");
    let bundles = v["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), TUS.len(), "{v}");
    for (b, tu) in bundles.iter().zip(TUS) {
        assert_eq!(b["section"], ".hip_fatbin");
        assert!(b.get("member").is_none());
        assert_eq!(
            b["format"],
            if tu.compress { "ccob" } else { "uncompressed" }
        );
        let entries = b["entries"].as_array().unwrap();
        let devices: Vec<&Value> = entries
            .iter()
            .filter(|e| e["kind"] != "host")
            .collect::<Vec<_>>();
        let targets: Vec<&str> = devices
            .iter()
            .map(|e| e["target_id"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = tu.archs.to_vec();
        want.sort_unstable();
        let mut got = targets.clone();
        got.sort_unstable();
        assert_eq!(got, want);
        for e in devices {
            if tu.compress && !check {
                // Not decompressed: unknown.
                assert!(e["eflags_agree"].is_null(), "{e}");
                assert!(e["code_object_version"].is_null(), "{e}");
            } else {
                assert_eq!(e["eflags_agree"], true, "{e}");
                assert_eq!(e["code_object_version"], 5, "{e}");
            }
        }
        if tu.compress {
            let c = &b["ccob"];
            assert_eq!(c["version"], 2);
            assert!(c["ratio"].as_f64().unwrap() > 1.0, "{c}");
            assert_eq!(
                c["hash_ok"],
                if check {
                    Value::Bool(true)
                } else {
                    Value::Null
                }
            );
        }
    }
}

#[test]
fn list_shared_library_and_executables() {
    let f = &built().f;
    for file in [&f.shared, &f.exe, &f.pie] {
        check_linked_listing(file, false);
        check_linked_listing(file, true);
    }
    let (out, err) = text(&gfxkit(&["list", s(&f.shared)]));
    assert!(err.is_empty(), "{err}");
    let first = out.lines().next().unwrap();
    let entries: usize = TUS.iter().map(|t| t.archs.len() + 1).sum();
    assert!(
        first.contains(&format!("3 bundles, {entries} entries"))
            && first.ends_with("; gfx1030 gfx906 gfx90a"),
        "{out}"
    );
    assert!(out.contains("  bundle 0 in .hip_fatbin at 0x"), "{out}");
    assert!(out.contains("x), header "), "ratio: {out}");
    assert!(out.contains("  v5  ok       hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
}

#[test]
fn list_archive_members_and_new_driver_images() {
    let b = built();
    let (code, v) = json(&["list", "--json", s(&b.f.archive)]);
    assert_eq!(code, 0, "{v}");
    let bundles = v["files"][0]["bundles"].as_array().unwrap();
    let members: Vec<&str> = bundles
        .iter()
        .map(|b| b["member"].as_str().unwrap())
        .collect();
    assert_eq!(members, ["t0.o", "t1.o"]);
    assert_eq!(bundles[0]["format"], "uncompressed");
    assert_eq!(bundles[1]["format"], "ccob");
    assert!(bundles.iter().all(|b| b["section"] == ".hip_fatbin"));
    let (out, _) = text(&gfxkit(&["list", s(&b.f.archive)]));
    assert!(
        out.contains("\n  bundle 0 in t0.o, .hip_fatbin at 0x"),
        "{out}"
    );
    assert!(
        out.contains("\n  bundle 1 in t1.o, .hip_fatbin at 0x"),
        "{out}"
    );

    let (code, v) = json(&["list", "--json", s(&b.new_driver)]);
    assert_eq!(code, 0, "{v}");
    let units = v["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(units.len(), 2, "{v}");
    let mut archs: Vec<&str> = units
        .iter()
        .map(|u| {
            assert_eq!(u["format"], "offload-image");
            assert_eq!(u["section"], ".llvm.offloading");
            u["entries"][0]["target_id"].as_str().unwrap()
        })
        .collect();
    archs.sort_unstable();
    assert_eq!(archs, ["gfx1030", "gfx90a:xnack+"]);
    let out = gfxkit(&["verify", s(&b.new_driver)]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
}

#[test]
fn list_recursive_summary() {
    let f = &built().f;
    let tree = tempfile::tempdir().unwrap();
    let t = tree.path();
    std::fs::create_dir_all(t.join("lib/sub")).unwrap();
    std::fs::copy(&f.shared, t.join("lib/libt.so")).unwrap();
    std::fs::copy(&f.archive, t.join("lib/sub/libt.a")).unwrap();
    std::fs::copy(&f.objects[0], t.join("t0.o")).unwrap();
    std::fs::copy(f.dir.path().join("stub.o"), t.join("lib/stub.o")).unwrap();
    std::fs::write(t.join("README"), "no device code here\n").unwrap();
    std::os::unix::fs::symlink(t.join("lib"), t.join("lib/sub/loop")).unwrap();
    let (code, v) = json(&["list", "-r", "--json", s(t)]);
    assert_eq!(code, 0, "{v}");
    let paths: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let want: Vec<String> = ["lib/libt.so", "lib/sub/libt.a", "t0.o"]
        .iter()
        .map(|p| t.join(p).display().to_string())
        .collect();
    assert_eq!(paths, want);
    let sum = &v["summary"];
    assert_eq!(
        sum["files_with_device_code"].as_u64().unwrap() as usize,
        paths.len()
    );
    let bundles: u64 = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bundles"].as_array().unwrap().len() as u64)
        .sum();
    assert_eq!(sum["bundles"].as_u64().unwrap(), bundles);
    let archs: Vec<&str> = sum["architectures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        archs.contains(&"gfx1030") && archs.contains(&"gfx906"),
        "{archs:?}"
    );
    let out = gfxkit(&["list", "-r", s(t)]);
    let (o, _) = text(&out);
    assert!(
        o.contains("\ntotal: 3 files with device code, 6 bundles, 16 entries, ")
            && o.ends_with(" KiB; gfx1030 gfx906 gfx90a\n"),
        "{o}"
    );
    // Without -r a directory is refused.
    let out = gfxkit(&["list", s(t)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("use -r"));
}

/// The `.hip_fatbin` of one object holds exactly its TU's bundle: clang-offload-bundler
/// unbundles that independently of gfxkit.
fn clang_entries(obj: &Path, tag: &str) -> Vec<(String, Vec<u8>)> {
    let dir = built().f.dir.path().join(format!("clang-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let dumped = dir.join("fatbin.bin");
    gfxkit_testkit::dump_section(obj, ".hip_fatbin", &dumped);
    gfxkit_testkit::bundler_list(&dumped)
        .into_iter()
        .filter(|id| !id.starts_with("host-"))
        .map(|id| {
            let o = dir.join(id.replace(':', "_"));
            let bytes = gfxkit_testkit::bundler_unbundle(&dumped, &id, &o);
            (id, bytes)
        })
        .collect()
}

#[test]
fn extract_matches_clang_unbundling() {
    let f = &built().f;
    let out_dir = f.dir.path().join("extract-all");
    let (code, v) = json(&["extract", "--json", s(&f.shared), "-o", s(&out_dir)]);
    assert_eq!(code, 0, "{v}");
    let written = v["written"].as_array().unwrap();
    let want: usize = TUS.iter().map(|t| t.archs.len()).sum();
    assert_eq!(written.len(), want, "{v}");
    let mut compared = 0;
    for (i, (obj, tu)) in f.objects.iter().zip(TUS).enumerate() {
        for (id, bytes) in clang_entries(obj, tu.name) {
            let w = written
                .iter()
                .find(|w| w["bundle"] == i && w["id"] == id.as_str())
                .unwrap_or_else(|| panic!("{id} of bundle {i} not extracted: {v}"));
            assert_eq!(w["file"], s(&f.shared));
            assert_eq!(w["section"], ".hip_fatbin");
            let path = w["path"].as_str().unwrap();
            assert!(
                path.ends_with(&format!("libt.{i}.{}.co", id.replace(':', "_"))),
                "{path}"
            );
            assert_eq!(std::fs::read(path).unwrap(), bytes, "{path}");
            compared += 1;
        }
    }
    assert_eq!(compared, want);
}

#[test]
fn extract_by_device_target() {
    let f = &built().f;
    let cases: &[(&str, &[(usize, &str)])] = &[
        ("gfx90a:xnack+", &[(0, "gfx90a:xnack+")]),
        ("gfx90a:sramecc+:xnack-", &[(2, "gfx90a:xnack-")]),
        ("gfx906", &[(0, "gfx906"), (2, "gfx906")]),
        ("gfx1030", &[(1, "gfx1030")]),
    ];
    for (i, (target, want)) in cases.iter().enumerate() {
        let dir = f.dir.path().join(format!("sel-{i}"));
        let (code, v) = json(&[
            "extract",
            "--json",
            s(&f.exe),
            "--target",
            target,
            "-o",
            s(&dir),
        ]);
        assert_eq!(code, 0, "{target}: {v}");
        let got: Vec<(usize, String)> = v["written"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let id = w["id"].as_str().unwrap();
                (
                    w["bundle"].as_u64().unwrap() as usize,
                    id.trim_start_matches("hipv4-amdgcn-amd-amdhsa--")
                        .to_owned(),
                )
            })
            .collect();
        let want: Vec<(usize, String)> = want.iter().map(|(b, t)| (*b, t.to_string())).collect();
        assert_eq!(got, want, "{target}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), want.len());
    }
    // A device nothing runs on: exit 1 and nothing written.
    let dir = f.dir.path().join("sel-none");
    let out = gfxkit(&["extract", s(&f.exe), "--target", "gfx1100", "-o", s(&dir)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.exists());
    // Two inputs with one stem would overwrite each other's outputs: refused.
    let other = f.dir.path().join("again");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(&f.exe, other.join("t_nopie")).unwrap();
    let out = gfxkit(&[
        "extract",
        s(&f.exe),
        s(&other.join("t_nopie")),
        "-o",
        s(&dir),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("would both write"),
        "{:?}",
        text(&out)
    );
    assert!(!dir.exists());
    // From an archive: names say member bundle index.
    let dir = f.dir.path().join("sel-ar");
    let (code, v) = json(&[
        "extract",
        "--json",
        s(&f.archive),
        "-t",
        "gfx1030",
        "-o",
        s(&dir),
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["written"][0]["member"], "t1.o");
    assert_eq!(v["written"][0]["bundle"], 1);
}

#[test]
fn verify_clean_binaries() {
    let b = built();
    for file in [
        &b.f.shared,
        &b.f.exe,
        &b.f.pie,
        &b.f.archive,
        &b.f.objects[0],
    ] {
        let out = gfxkit(&["verify", s(file)]);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{}: {o}{e}", file.display());
        assert!(o.contains(": ok ("), "{o}");
    }
}

/// An object whose only `__CLANG_OFFLOAD_BUNDLE__` sections are another toolchain's (OpenMP
/// offload to NVIDIA GPUs, SYCL images for Intel GPUs, as multi-backend wheels ship) holds no
/// device code for an AMD GPU: `verify` passes over it as `check` does (it failed on the IDs,
/// which follow the other toolchain's rules), says why when the file is named, and leaves it
/// out of a directory's walk; `list` still shows it.
#[test]
fn verify_passes_over_offload_bundles_for_other_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = gfxkit_testkit::host_only(d, "plain.o", &["-c", "-fPIC"]);
    let payload = d.join("image.bin");
    std::fs::write(&payload, b"not an AMDGPU code object").unwrap();
    let obj = d.join("nvptx.o");
    gfxkit_testkit::run_ok(
        Command::new(gfxkit_testkit::llvm_tool("llvm-objcopy"))
            .arg(format!(
                "--add-section=__CLANG_OFFLOAD_BUNDLE__openmp-nvptx64-nvidia-cuda--sm_80={}",
                payload.display()
            ))
            .arg(format!(
                "--add-section=__CLANG_OFFLOAD_BUNDLE__sycl-spir64_gen={}",
                payload.display()
            ))
            .arg(format!(
                "--add-section=__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu={}",
                payload.display()
            ))
            .arg(&plain)
            .arg(&obj),
    );
    let (code, l) = json(&["list", "--json", s(&obj)]);
    assert_eq!(code, 0, "{l}");
    assert_eq!(
        l["files"][0]["bundles"][0]["format"], "object-bundle",
        "{l}"
    );
    let out = gfxkit(&["verify", s(&obj)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{o}{e}");
    assert!(
        e.contains("no device code for an AMD GPU in this file")
            && e.contains("other targets: 'openmp-nvptx64-nvidia-cuda--sm_80', 'sycl-spir64_gen')"),
        "{e}"
    );
    // `select` says it as `verify` does, and names the entries in its JSON (the host entry is
    // no GPU's).
    let out = gfxkit(&["select", "--device", "gfx90a", s(&obj)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(
        o.contains("no device code for an AMD GPU in this file")
            && o.contains("other targets: 'openmp-nvptx64-nvidia-cuda--sm_80', 'sycl-spir64_gen'"),
        "{o}"
    );
    let (code, j) = json(&["select", "--json", "--device", "gfx90a", s(&obj)]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(
        j["files"][0]["other_gpus"],
        serde_json::json!(["openmp-nvptx64-nvidia-cuda--sm_80", "sycl-spir64_gen"]),
        "{j}"
    );
    // In a directory beside a library with AMD device code: that one verified, this one left
    // out as files without device code found in a walk are, and the run passes.
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::copy(&obj, tree.join("nvptx.o")).unwrap();
    std::fs::copy(&built().f.shared, tree.join("libamd.so")).unwrap();
    let (code, v) = json(&["verify", "--json", "-r", s(&tree)]);
    assert_eq!(code, 0, "{v}");
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{v}");
    assert!(files[0]["path"].as_str().unwrap().ends_with("libamd.so"));
    assert_eq!(files[0]["ok"], true, "{v}");
    // `check` judges the library alone, as before.
    let out = gfxkit(&["check", "--require", "gfx1030", s(&obj)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out).1);
}

fn set_u64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Offset of the file's first uncompressed bundle and of its `.hip_fatbin` section.
fn first_bundle(d: &[u8]) -> usize {
    let fatbin = section(d, ".hip_fatbin");
    let start = fatbin.offset as usize;
    let at = d[start..]
        .windows(24)
        .position(|w| w == b"__CLANG_OFFLOAD_BUNDLE__")
        .unwrap();
    start + at
}

/// Writes `d` as `name` and runs `gfxkit verify` on it, which must find problems (exit 1).
/// Returns the path and what verify printed.
fn verify_damaged(name: &str, d: &[u8]) -> (PathBuf, String) {
    let p = write_copy(name, d);
    let out = gfxkit(&["verify", s(&p)]);
    let (o, _) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    (p, o)
}

fn write_copy(name: &str, d: &[u8]) -> PathBuf {
    let p = built().f.dir.path().join(name);
    std::fs::write(&p, d).unwrap();
    p
}

#[test]
fn verify_finds_eflags_disagreeing_with_the_entry_id() {
    let data = std::fs::read(&built().f.shared).unwrap();
    let mut d = data.clone();
    // Bundle 0 holds gfx906 and gfx90a:xnack+: rename the second entry gfx90a:xnack- (same
    // length) so its ID no longer fits the code object's e_flags.
    let b0 = first_bundle(&d);
    let id = b"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
    let at = b0
        + d[b0..b0 + 4096]
            .windows(id.len())
            .position(|w| w == id)
            .unwrap();
    d[at + id.len() - 1] = b'-';
    let p = write_copy("eflags.so", &d);
    let out = gfxkit(&["verify", s(&p)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{o}{e}");
    assert!(
        o.contains("bundle 0 in .hip_fatbin at ")
            && o.contains("(hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-): the ID says gfx90a:xnack- but the code object is built for gfx90a:xnack+"),
        "{o}"
    );
    // An answer decided by the contradiction: list names it and exits 2.
    let (code, v) = json(&["list", "--json", s(&p)]);
    assert_eq!(code, 2);
    let problems = v["files"][0]["problems"].to_string();
    assert!(
        problems
            .contains("the ID says gfx90a:xnack- but the code object is built for gfx90a:xnack+"),
        "{problems}"
    );
    let e = v["files"][0]["bundles"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["target_id"] == "gfx90a:xnack-")
        .unwrap()
        .clone();
    assert_eq!(e["eflags_agree"], false, "{e}");
}

#[test]
fn damaged_binaries_name_file_and_offset() {
    let f = &built().f;
    let data = std::fs::read(&f.shared).unwrap();
    let fatbin = section(&data, ".hip_fatbin");
    let (_, v) = json(&["list", "--json", s(&f.shared)]);
    let bundles = v["files"][0]["bundles"].as_array().unwrap();
    let last = bundles.last().unwrap();
    let last_off = last["offset"].as_u64().unwrap();
    let last_size = last["size"].as_u64().unwrap();

    // Truncated section: the last bundle runs 10 bytes past it.
    let mut short = data.clone();
    set_u64(
        &mut short,
        fatbin.header_at + 0x20,
        last_off - fatbin.offset + last_size - 10,
    );
    let (p, o) = verify_damaged("short.so", &short);
    assert!(
        o.contains(&format!(".hip_fatbin at {last_off:#x}: error: bundle of {last_size} bytes runs 10 bytes past the end of the section")),
        "{o}"
    );
    let out = gfxkit(&["list", s(&p)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(o.starts_with(&format!("{}: 2 bundles", p.display())), "{o}");
    assert!(
        e.contains(&format!(
            "gfxkit: error: {}: section .hip_fatbin, offset {last_off:#x}: bundle of",
            p.display()
        )),
        "{e}"
    );

    // A wrapper pointing outside the file's sections.
    let seg = section(&data, ".hipFatBinSegment");
    let r = host_fixtures::wrapper_rela(&data, 0);
    let mut outside = data.clone();
    set_u64(&mut outside, r + 16, 0x7fff_0000_0000);
    let (_, o) = verify_damaged("outside.so", &outside);
    assert!(
        o.contains(&format!(
            "in .hipFatBinSegment at {:#x}: error: wrapper points outside the file's sections (address 0x7fff00000000)",
            seg.offset
        )),
        "{o}"
    );
    assert!(o.contains("no wrapper points to this bundle"), "{o}");

    // CCOB bundles (bundle 1 is CCOB v2): a bad hash, then a bad uncompressed size.
    let ccob = bundles[1]["offset"].as_u64().unwrap() as usize;
    assert_eq!(&data[ccob..ccob + 4], b"CCOB");
    let mut hash = data.clone();
    hash[ccob + 16] ^= 0x01; // v2: u64 hash at offset 16
    let (p, o) = verify_damaged("hash.so", &hash);
    assert!(
        o.contains(&format!(
            "bundle 1 in .hip_fatbin at {ccob:#x}: compressed bundle hash mismatch"
        )),
        "{o}"
    );
    let out = gfxkit(&["extract", s(&p), "-o", s(&f.dir.path().join("x-hash"))]);
    let (_, e) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        e.contains(&format!(
            "bundle 1 in section .hip_fatbin at offset {ccob:#x}"
        )) && e.contains("hash mismatch"),
        "{e}"
    );
    let out = gfxkit(&[
        "extract",
        "--ignore-hash",
        s(&p),
        "-o",
        s(&f.dir.path().join("x-hash2")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));

    let mut size = data.clone();
    let declared = u32::from_le_bytes(size[ccob + 12..ccob + 16].try_into().unwrap());
    size[ccob + 12..ccob + 16].copy_from_slice(&(declared + 1000).to_le_bytes());
    let (_, o) = verify_damaged("size.so", &size);
    assert!(
        o.contains(&format!("bundle 1 in .hip_fatbin at {ccob:#x}: ")),
        "{o}"
    );
    // Listing and extracting never panic on any of these (checked in `gfxkit`).
    for name in ["short.so", "outside.so", "hash.so", "size.so"] {
        let p = f.dir.path().join(name);
        gfxkit(&["list", "--check", s(&p)]);
        gfxkit(&["extract", s(&p), "-o", s(&f.dir.path().join("x-any"))]);
    }
}

/// A CUDA build of a library (its device code in `.nv_fatbin` and `__nv_relfatbin`, as nvcc
/// links it) is not "no device code": every command that reads device code says it holds
/// NVIDIA's, where, and how much; in a walk it is one more file without AMD device code.
#[test]
fn a_cuda_build_is_named_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = gfxkit_testkit::host_only(d, "libplain.so", &["-shared", "-fPIC", "-nostdlib"]);
    let payload = gfxkit_testkit::nvidia_fatbin(d, 2000);
    let cuda = d.join("libcuda_build.so");
    gfxkit_testkit::run_ok(
        Command::new(gfxkit_testkit::llvm_tool("llvm-objcopy"))
            .arg(format!("--add-section=.nv_fatbin={}", payload.display()))
            .arg(format!(
                "--add-section=__nv_relfatbin={}",
                payload.display()
            ))
            .arg(&plain)
            .arg(&cuda),
    );
    let named = ".nv_fatbin (2.0 KiB), __nv_relfatbin (2.0 KiB)";
    let out = gfxkit(&["verify", s(&cuda)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{o}{e}");
    assert!(
        e.contains(&format!(
            "no device code for an AMD GPU in this file: it holds NVIDIA device code (a CUDA \
             build; CUDA fat binaries in {named})"
        )),
        "{e}"
    );
    let out = gfxkit(&["select", "--device", "gfx90a", s(&cuda)]);
    let (o, e) = text(&out);
    assert!(
        o.contains("it holds NVIDIA device code") && o.contains(named),
        "{o}{e}"
    );
    let (_, j) = json(&["select", "--json", "--device", "gfx90a", s(&cuda)]);
    let nvidia = &j["files"][0]["nvidia"];
    assert_eq!(nvidia[0]["section"], ".nv_fatbin", "{j}");
    assert_eq!(nvidia[1]["section"], "__nv_relfatbin", "{j}");
    assert_eq!(nvidia[0]["size"], 2016, "{j}");
    assert!(
        nvidia[0]["member"].is_null() && nvidia[0]["offset"].as_u64() > Some(0),
        "{j}"
    );
    let out = gfxkit(&["list", s(&cuda)]);
    let (o, _) = text(&out);
    assert!(
        o.contains(&format!(
            "(no offload bundle; NVIDIA device code, a CUDA build: {named})"
        )),
        "{o}"
    );
    let (code, l) = json(&["list", "--json", s(&cuda)]);
    assert_eq!(code, 0, "{l}");
    assert_eq!(l["files"][0]["nvidia"].as_array().unwrap().len(), 2, "{l}");
    // The library without them says nothing of NVIDIA.
    let (_, l) = json(&["list", "--json", s(&plain)]);
    assert!(l["files"][0].get("nvidia").is_none(), "{l}");
    let out = gfxkit(&["verify", s(&plain)]);
    assert!(!text(&out).1.contains("NVIDIA"), "{}", text(&out).1);
    // `doctor` and `check` of the file named judge nothing and say why.
    let note = format!(
        "NOTE  {}: no device code for an AMD GPU in this file",
        s(&cuda)
    );
    let out = gfxkit(&["doctor", "--device", "gfx90a", s(&cuda)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(o.contains(&note) && o.contains(named), "{o}");
    let (_, j) = json(&["doctor", "--json", "--device", "gfx90a", s(&cuda)]);
    assert_eq!(j["files"], serde_json::json!([]), "{j}");
    assert_eq!(j["other_gpus_only"][0]["path"], s(&cuda), "{j}");
    let out = gfxkit(&["check", "--require", "gfx90a", s(&cuda)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{o}{e}");
    assert!(o.contains(&note), "{o}");
    assert!(
        e.contains("no file with device code for an AMD GPU under the paths given"),
        "{e}"
    );
    // In a directory beside a ROCm build: that one verified and judged, the CUDA build left
    // out as files without AMD device code found in a walk are.
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::copy(&cuda, tree.join("libcuda_build.so")).unwrap();
    std::fs::copy(&built().f.shared, tree.join("libamd.so")).unwrap();
    let (code, v) = json(&["verify", "--json", "-r", s(&tree)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["files"].as_array().unwrap().len(), 1, "{v}");
    let (_, j) = json(&["doctor", "--json", "--device", "gfx90a", s(&tree)]);
    assert_eq!(j["files"].as_array().unwrap().len(), 1, "{j}");
    assert!(j.get("other_gpus_only").is_none(), "{j}");
    // A package named is read member by member, as `select` lists them: its CUDA build is
    // named among the files judged on no device.
    let wheel = d.join("multi-1.0-py3-none-linux_x86_64.whl");
    gfxkit_testkit::run_ok(
        Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile\n\
                 with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
                 \x20   z.write(sys.argv[2], 'multi/libcuda_build.so')\n\
                 \x20   z.write(sys.argv[3], 'multi/libamd.so')",
            ])
            .arg(&wheel)
            .arg(&cuda)
            .arg(&built().f.shared),
    );
    let (_, j) = json(&["doctor", "--json", "--device", "gfx90a", s(&wheel)]);
    assert_eq!(j["files"].as_array().unwrap().len(), 1, "{j}");
    let noted = j["other_gpus_only"][0]["path"].as_str().unwrap_or_default();
    assert!(noted.ends_with("!multi/libcuda_build.so"), "{j}");
    // `list` of the package names its CUDA build as one, not among members without device code.
    let out = gfxkit(&["list", s(&wheel)]);
    let (o, e) = text(&out);
    let w = s(&wheel);
    assert!(
        o.contains(&format!(
            "{w}!multi/libcuda_build.so: 0 bundles, 0 entries, 0 B\n  (no offload bundle; \
             NVIDIA device code, a CUDA build: {named})\n"
        )),
        "{o}{e}"
    );
    assert!(!o.contains("without device code"), "{o}{e}");
    // `verify` of it: the CUDA build does not fail the package, and is named with what it
    // holds, not among members without device code.
    let out = gfxkit(&["verify", s(&wheel)]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(
        o.contains(&format!(
            "{w}!multi/libcuda_build.so: no device code for an AMD GPU in this file: it holds \
             NVIDIA device code (a CUDA build; CUDA fat binaries in {named})\n"
        )),
        "{o}{e}"
    );
    assert!(!o.contains("without device code"), "{o}{e}");
    let (code, j) = json(&["verify", "--json", s(&wheel)]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["without_device_code"], serde_json::json!([]), "{j}");
    let path = j["other_gpus_only"][0]["path"].as_str().unwrap_or_default();
    assert!(path.ends_with("!multi/libcuda_build.so"), "{j}");
    let reason = j["other_gpus_only"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("it holds NVIDIA device code"), "{j}");
}
