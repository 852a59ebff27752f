//! `gfxkit select` on clang-19 built host binaries: the entry the HIP runtime would load, per
//! bundle, in text and JSON, and the exit codes.

mod common;
mod host_fixtures;

use common::json_stdout;
use gfxkit_testkit::{llvm_tool, run_ok};
use host_fixtures::Tu;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Built {
    dir: tempfile::TempDir,
    so: PathBuf,
    generic: PathBuf,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let (dir, so) = host_fixtures::build_shared();
        let tu = Tu {
            name: "g",
            archs: &["gfx9-generic"],
            compress: false,
            kernels: 1,
        };
        let src = dir.path().join("g.hip");
        std::fs::write(&src, host_fixtures::kernels(tu.name, tu.kernels)).unwrap();
        let generic = dir.path().join("g.o");
        run_ok(
            Command::new(llvm_tool("clang++"))
                .args([
                    "-x",
                    "hip",
                    "-nogpulib",
                    "-nogpuinc",
                    "-fPIC",
                    "-mcode-object-version=6",
                ])
                .args(tu.archs.iter().map(|a| format!("--offload-arch={a}")))
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&generic),
        );
        Built { dir, so, generic }
    })
}

fn gfxkit(args: &[&str], files: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

fn selections(v: &Value) -> Vec<(Option<String>, Option<String>)> {
    v["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["selected"].as_str().map(str::to_owned),
                b["via"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn some(id: &str) -> (Option<String>, Option<String>) {
    (Some(id.to_owned()), Some("native".to_owned()))
}

#[test]
fn native_selection_per_bundle_and_exit_code() {
    let b = built();
    let out = gfxkit(
        &["select", "--device", "gfx906:sramecc+:xnack-", "--json"],
        &[&b.so],
    );
    assert_eq!(out.status.code(), Some(1), "a bundle has no gfx906 code");
    let v = json_stdout(&out);
    assert_eq!(v["device"], "gfx906:sramecc+:xnack-");
    assert_eq!(
        selections(&v),
        [
            some("hipv4-amdgcn-amd-amdhsa--gfx906"),
            (None, None),
            some("hipv4-amdgcn-amd-amdhsa--gfx906"),
        ]
    );
    let b1 = &v["files"][0]["bundles"][1];
    assert_eq!(b1["index"], 1);
    assert_eq!(b1["section"], ".hip_fatbin");
    let reason = b1["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("No compatible code objects found for: gfx906:sramecc+:xnack-"),
        "{reason}"
    );
    assert_eq!(b1["nearest"], serde_json::json!(["gfx1030"]));
    // The kernels of each code object loaded (t0 has 2, t2 has 3); none where none loads.
    let kernels: Vec<&Value> = v["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["kernels"])
        .collect();
    assert_eq!(kernels, [&Value::from(2), &Value::Null, &Value::from(3)]);

    let out = gfxkit(
        &["select", "--device", "gfx90a:sramecc+:xnack+", "--json"],
        &[&b.so],
    );
    assert_eq!(
        selections(&json_stdout(&out)),
        [
            some("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            (None, None),
            (None, None)
        ]
    );
    let out = gfxkit(&["select", "--device", "gfx1030", "--json"], &[&b.so]);
    assert_eq!(
        selections(&json_stdout(&out)),
        [
            (None, None),
            some("hipv4-amdgcn-amd-amdhsa--gfx1030"),
            (None, None)
        ]
    );
}

/// A code object the runtime loads that holds no kernel (its translation unit's kernels are
/// compiled for other architectures only, as in XLA's ROCm plugins) is said to hold none: a
/// launch from it fails on the device.
#[test]
fn a_loaded_code_object_without_kernels_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let source = format!(
        "{}#if !defined(__gfx1030__)\n\
         extern \"C\" __global__ void some(float *a) {{ a[0] += 1.0f; }}\n\
         #else\n\
         extern \"C\" __global__ void some(float *a);\n\
         #endif\n",
        host_fixtures::PRELUDE
    );
    let so = host_fixtures::shared_from_source(
        dir.path(),
        "guarded",
        &source,
        &["gfx90a:xnack-", "gfx1030"],
    );
    let out = gfxkit(&["select", "--device", "gfx1030"], &[&so]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("hipv4-amdgcn-amd-amdhsa--gfx1030 (native), holds no kernels"),
        "{text}"
    );
    let v = json_stdout(&gfxkit(
        &["select", "--json", "--device", "gfx1030"],
        &[&so],
    ));
    assert_eq!(v["files"][0]["bundles"][0]["kernels"], 0, "{v}");
    let out = gfxkit(&["select", "--device", "gfx90a:xnack-"], &[&so]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gfx90a:xnack- (native)") && !text.contains("no kernels"),
        "{text}"
    );
    let v = json_stdout(&gfxkit(
        &["select", "--json", "--device", "gfx90a:xnack-"],
        &[&so],
    ));
    assert_eq!(v["files"][0]["bundles"][0]["kernels"], 1, "{v}");
}

#[test]
fn unknown_xnack_reports_the_needed_setting() {
    let b = built();
    let out = gfxkit(&["select", "--device", "gfx90a", "--json"], &[&b.so]);
    let v = json_stdout(&out);
    let bundles = v["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(
        bundles[0]["selected"],
        "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"
    );
    assert_eq!(bundles[0]["needs"], "xnack+");
    assert!(bundles[1]["selected"].is_null());
    assert_eq!(
        bundles[2]["selected"],
        "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"
    );
    assert_eq!(bundles[2]["needs"], "xnack-");
}

#[test]
fn every_bundle_selected_exits_zero_and_generic_fallback() {
    let b = built();
    let t0 = b.dir.path().join("t0.o");
    let t2 = b.dir.path().join("t2.o");
    let out = gfxkit(&["select", "--device", "gfx906:xnack-"], &[&t0, &t2]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("t0.o: 1 of 1 bundle has a code object for the device"),
        "{text}"
    );
    assert!(
        text.contains("hipv4-amdgcn-amd-amdhsa--gfx906 (native)"),
        "{text}"
    );

    let out = gfxkit(
        &["select", "--device", "gfx900:xnack-", "--json"],
        &[&b.generic],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        selections(&json_stdout(&out)),
        [(
            Some("hipv4-amdgcn-amd-amdhsa--gfx9-generic".to_owned()),
            Some("generic".to_owned())
        )]
    );
    // gfx90a has no generic family.
    let out = gfxkit(
        &["select", "--device", "gfx90a:xnack-", "--json"],
        &[&b.generic],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_stdout(&out)["files"][0]["bundles"][0]["nearest"],
        serde_json::json!(["gfx9-generic"])
    );
}

#[test]
fn bad_inputs_are_errors() {
    let b = built();
    let missing = b.dir.path().join("missing.so");
    let out = gfxkit(&["select", "--device", "gfx906"], &[&missing]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.so"));
    let out = gfxkit(&["select", "--device", "gfx9000"], &[&b.so]);
    assert_eq!(out.status.code(), Some(2));
    // A compressed bundle whose payload is garbage: reported, exit 2.
    let mut data = std::fs::read(&b.so).unwrap();
    let found = gfxkit_host::discover(&data);
    let ccob = found.bundle_location(1).unwrap();
    let (ccob, len) = (ccob.offset as usize, ccob.size as usize);
    drop(found);
    for x in &mut data[ccob + 24..ccob + len] {
        *x = 0x55;
    }
    let bad = b.dir.path().join("bad.so");
    std::fs::write(&bad, &data).unwrap();
    let out = gfxkit(&["select", "--device", "gfx1030", "--json"], &[&bad]);
    assert_eq!(out.status.code(), Some(2));
    let v = json_stdout(&out);
    let reason = v["files"][0]["bundles"][1]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("cannot read the bundle's entries"),
        "{reason}"
    );
}

/// A standalone bundle with `pads` extra entries before a gfx906 one (and a zero-size gfx906
/// entry first, which the runtime skips).
fn padded_bundle(name: &str, pads: usize) -> PathBuf {
    let names: Vec<String> = (0..pads)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfxpadding{i:04}"))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("host-x86_64-unknown-linux--", b""),
        ("hipv4-amdgcn-amd-amdhsa--gfx906:xnack-", b""),
    ];
    for n in &names {
        entries.push((n.as_str(), b"pad"));
    }
    // Not an ELF file: a payload with the ELF magic that is no code object contradicts its ID.
    entries.push(("hipv4-amdgcn-amd-amdhsa--gfx906", b"code-for-gfx906"));
    let bytes = gfxkit_bundle::write_bundle(&entries, 4096).unwrap();
    let path = built().dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn header_beyond_4096_bytes_cannot_be_loaded_and_empty_entries_are_skipped() {
    let small = padded_bundle("small.hipfb", 3);
    let out = gfxkit(
        &["select", "--device", "gfx906:xnack-", "--json"],
        &[&small],
    );
    assert_eq!(out.status.code(), Some(0));
    let v = json_stdout(&out);
    let b = &v["files"][0]["bundles"][0];
    assert_eq!(b["selected"], "hipv4-amdgcn-amd-amdhsa--gfx906");
    assert_eq!(b["index"], 0);

    let big = padded_bundle("big.hipfb", 100);
    let out = gfxkit(&["select", "--device", "gfx906:xnack-", "--json"], &[&big]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_stdout(&out);
    let reason = v["files"][0]["bundles"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("reads only the first 4096 bytes"),
        "{reason}"
    );
    assert_eq!(
        v["files"][0]["bundles"][0]["nearest"],
        serde_json::json!(["gfx906", "gfx906:xnack-"])
    );
}

#[test]
fn damage_found_on_the_way_is_reported() {
    let b = built();
    let mut data = std::fs::read(&b.so).unwrap();
    let seg = host_fixtures::section(&data, ".hipFatBinSegment");
    data[seg.offset as usize..][..4].copy_from_slice(b"JUNK");
    let bad = b.dir.path().join("badmagic.so");
    std::fs::write(&bad, &data).unwrap();
    let out = gfxkit(&["select", "--device", "gfx906", "--json"], &[&bad]);
    assert_eq!(out.status.code(), Some(2));
    let v = json_stdout(&out);
    let problems = v["files"][0]["problems"].as_array().unwrap();
    assert_eq!(problems[0]["severity"], "error");
    assert_eq!(problems[0]["location"]["section"], ".hipFatBinSegment");
    let msg = problems[0]["message"].as_str().unwrap();
    assert!(msg.starts_with("wrapper has magic 0x4b4e554a"), "{msg}");
    let out = gfxkit(&["select", "--device", "gfx906"], &[&bad]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gfxkit: error: ") && err.contains("section .hipFatBinSegment"),
        "{err}"
    );
}

#[test]
fn kpack_split_binaries_without_their_archive_name_the_missing_file() {
    let b = built();
    let k = host_fixtures::kpack_binary(&b.so, &b.dir.path().join("libk.so"), "../.kpack/x.kpack");
    let out = gfxkit(&["select", "--device", "gfx906", "--json"], &[&k]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_stdout(&out);
    let one =
        serde_json::json!({"kernel_name": "lib/libt.so", "search_paths": ["../.kpack/x.kpack"]});
    assert_eq!(v["files"][0]["kpack"], serde_json::json!([one, one, one]));
    // Every loadable unit is in `bundles`, kpack units told by their format, as `list` does.
    let units = v["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(units.len(), 3);
    let listed = json_stdout(&gfxkit(&["list", "--json"], &[&k]));
    let listed = listed["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(listed.len(), 3);
    for (i, (u, l)) in units.iter().zip(listed).enumerate() {
        assert_eq!(u["index"], i);
        assert_eq!(u["format"], "kpack");
        assert_eq!(u["format"], l["format"]);
        assert_eq!(u["offset"], l["offset"]);
        assert_eq!(u["kpack_key"], l["kpack_key"]);
        assert_eq!(u["wrapper"], 0, "every record of this file says 0");
        assert_eq!(u["selected"], serde_json::Value::Null);
        assert_eq!(u["error_code"], 13);
        assert_eq!(u["kpack_key"], "lib/libt.so#0");
        let m = std::fs::canonicalize(b.dir.path())
            .unwrap()
            .parent()
            .unwrap()
            .join(".kpack/x.kpack");
        assert_eq!(u["missing"], m.display().to_string());
    }
    let out = gfxkit(&["select", "--device", "gfx906"], &[&k]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("no kpack archive found (kpack error 13"),
        "{text}"
    );
}
