//! `gfxkit doctor` with a fake KFD sysfs tree and clang-19 built libraries.

mod common;
mod host_fixtures;

use common::json_stdout;
use host_fixtures::Tu;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Built {
    dir: tempfile::TempDir,
    libs: PathBuf,
}

/// `libs/libone.so` (gfx90a:xnack- + gfx1030, and gfx906 + gfx90a:xnack-) and `libs/libtwo.so`
/// (gfx90a:xnack- + gfx1030 only); an object file beside them, which doctor does not list.
fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let da = Tu {
            name: "da",
            archs: &["gfx90a:xnack-", "gfx1030"],
            compress: true,
            kernels: 1,
        };
        let db = Tu {
            name: "db",
            archs: &["gfx906", "gfx90a:xnack-"],
            compress: false,
            kernels: 2,
        };
        let a = host_fixtures::compile_tu(d, &da);
        let b = host_fixtures::compile_tu(d, &db);
        let libs = d.join("libs");
        std::fs::create_dir(&libs).unwrap();
        host_fixtures::link(&libs, "libone.so", &["-shared"], &[a.clone(), b.clone()]);
        host_fixtures::link(&libs, "libtwo.so", &["-shared"], &[a]);
        std::fs::copy(&b, libs.join("db.o")).unwrap();
        Built { dir, libs }
    })
}

/// A fake `sys/class/kfd/kfd/topology/nodes` tree: a CPU node and the given GPU nodes
/// (`gfx_target_version`, SRAM ECC on).
fn sysfs(name: &str, gpus: &[u64]) -> PathBuf {
    let root = built().dir.path().join(name);
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let cpu = nodes.join("0");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(
        cpu.join("properties"),
        "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n",
    )
    .unwrap();
    for (i, v) in gpus.iter().enumerate() {
        let n = nodes.join((i + 1).to_string());
        std::fs::create_dir_all(&n).unwrap();
        std::fs::write(
            n.join("properties"),
            format!(
                "cpu_cores_count 0\nsimd_count 104\ngfx_target_version {v}\ncapability {}\n",
                0x0408_2280u64
            ),
        )
        .unwrap();
    }
    root
}

fn doctor(args: &[&str], env: &[(&str, &str)], path: &Path) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gfxkit"));
    c.arg("doctor").args(args).arg(path);
    c.env_remove("HSA_XNACK")
        .env_remove("HSA_OVERRIDE_GFX_VERSION");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn file<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("{name} not in {v}"))
}

#[test]
fn auto_devices_with_unknown_xnack() {
    let root = sysfs("two-gpus", &[90010, 100300]);
    let out = doctor(
        &["--sysfs-root", root.to_str().unwrap(), "--json"],
        &[],
        &built().libs,
    );
    assert_eq!(out.status.code(), Some(1), "libone cannot run on gfx1030");
    let v = json_stdout(&out);
    assert_eq!(v["devices"], json!(["gfx90a:sramecc+", "gfx1030"]));
    assert_eq!(
        v["files"].as_array().unwrap().len(),
        2,
        "the object file is not listed"
    );
    let one = file(&v, "libone.so");
    assert_eq!(
        one["runs_on"],
        json!({"gfx90a:sramecc+": true, "gfx1030": false})
    );
    assert_eq!(one["needs"]["gfx90a:sramecc+"], "xnack-");
    assert_eq!(
        one["targets"],
        json!(["gfx1030", "gfx906", "gfx90a:xnack-"])
    );
    let missing = one["missing"]["gfx1030"].as_str().unwrap();
    assert!(
        missing.starts_with("no code object for gfx1030 in 1 of 2 bundles"),
        "{missing}"
    );
    assert!(
        missing.contains("nearest present: gfx90a, gfx906"),
        "{missing}"
    );
    let two = file(&v, "libtwo.so");
    assert_eq!(
        two["runs_on"],
        json!({"gfx90a:sramecc+": true, "gfx1030": true})
    );
}

#[test]
fn hsa_xnack_and_override() {
    let root = sysfs("one-gpu", &[90010]);
    let r = root.to_str().unwrap();
    let out = doctor(
        &["--sysfs-root", r, "--json"],
        &[("HSA_XNACK", "1")],
        &built().libs,
    );
    assert_eq!(out.status.code(), Some(1));
    let v = json_stdout(&out);
    assert_eq!(v["devices"], json!(["gfx90a:sramecc+:xnack+"]));
    assert_eq!(
        file(&v, "libtwo.so")["runs_on"],
        json!({"gfx90a:sramecc+:xnack+": false})
    );

    let out = doctor(
        &["--sysfs-root", r, "--json"],
        &[("HSA_XNACK", "0")],
        &built().libs,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json_stdout(&out)["devices"],
        json!(["gfx90a:sramecc+:xnack-"])
    );

    let out = doctor(
        &["--sysfs-root", r, "--json"],
        &[("HSA_OVERRIDE_GFX_VERSION", "10.3.0")],
        &built().libs,
    );
    let v = json_stdout(&out);
    assert_eq!(v["devices"], json!(["gfx1030"]));
    assert_eq!(file(&v, "libtwo.so")["runs_on"], json!({"gfx1030": true}));
    assert_eq!(file(&v, "libone.so")["runs_on"], json!({"gfx1030": false}));
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn named_device_text_report_and_errors() {
    let libs = &built().libs;
    let out = doctor(&["--device", "gfx1030"], &[], &libs.join("libtwo.so"));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("ok    "), "{text}");
    assert!(
        text.contains("1 library with device code: 1 runs on every device, 0 do not"),
        "{text}"
    );

    let out = doctor(&["--device", "gfx1030"], &[], libs);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("FAIL  ") && text.contains("libone.so"),
        "{text}"
    );
    assert!(
        text.contains("targets present: gfx1030 gfx906 gfx90a:xnack-"),
        "{text}"
    );

    // No GPU in the topology: an error, exit 2.
    let root = sysfs("cpu-only", &[]);
    let out = doctor(&["--sysfs-root", root.to_str().unwrap()], &[], libs);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no GPU in the KFD topology"));
    // An override naming no processor.
    let root = sysfs("bad-override", &[90010]);
    let out = doctor(
        &["--sysfs-root", root.to_str().unwrap()],
        &[("HSA_OVERRIDE_GFX_VERSION", "11.x")],
        libs,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HSA_OVERRIDE_GFX_VERSION"));
}

#[test]
fn kpack_split_library_without_its_archive_fails_naming_it() {
    let d = built().dir.path().join("kpack");
    std::fs::create_dir_all(&d).unwrap();
    host_fixtures::kpack_binary(
        &built().libs.join("libtwo.so"),
        &d.join("libk.so"),
        "../.kpack/y.kpack",
    );
    let out = doctor(&["--device", "gfx1030", "--json"], &[], &d);
    assert_eq!(out.status.code(), Some(1));
    let v = json_stdout(&out);
    let f = file(&v, "libk.so");
    assert_eq!(f["runs_on"], json!({"gfx1030": false}));
    assert_eq!(f["kpack"], json!(["../.kpack/y.kpack"]));
    let missing = f["missing"]["gfx1030"].as_str().unwrap();
    assert!(
        missing.contains("kpack error 13") && missing.contains(".kpack/y.kpack"),
        "{missing}"
    );
    let out = doctor(&["--device", "gfx1030"], &[], &d);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("FAIL  ") && text.contains(".kpack/y.kpack"),
        "{text}"
    );
    assert!(
        text.contains("1 library with device code: 0 run on every device, 1 does not"),
        "{text}"
    );
}
