//! `--rocm VERSION` on `select`, `doctor` and `check`, judged on real clang-19 builds of one
//! library: native V5 and V4, native V6, V6 generic only, generic plus native (V6), a generic V6
//! entry beside a native V5 one, CCOB v2 (clang) and v3 (`gfxkit compress`), and a kpack-split
//! shared library (`gfxkit kpack split`), against ROCm 5.2, 6.1, 6.2, 6.3, 6.4, 7.0 and 7.2.
//! Every answer matches the table of `gfxkit rocm show`, with its reason; `--rocm` of the newest
//! release changes nothing; `doctor --device auto` reads the release of a machine description
//! (KFD topology and `opt/rocm/.info/version` under `--sysfs-root`).

mod common;

use gfxkit_testkit::{llvm_tool, run_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const RELEASES: [&str; 7] = ["5.2", "6.1", "6.2", "6.3", "6.4", "7.0", "7.2"];

const SOURCE: &str = "#define __global__ __attribute__((global))\n\
typedef struct { unsigned x, y, z; } dim3;\n\
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);\n\
extern \"C\" __global__ void scale(float *a, int n) {\n\
  int t = __builtin_amdgcn_workitem_id_x();\n\
  if (t < n) a[t] = a[t] * 2.0f;\n}\n";

struct Built {
    dir: tempfile::TempDir,
}

impl Built {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn gfxkit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .env_remove("ROCM_PATH")
        .env_remove("VIRTUAL_ENV")
        .env_remove("HSA_XNACK")
        .env_remove("HSA_OVERRIDE_GFX_VERSION")
        .output()
        .expect("run gfxkit")
}

/// The same library built every way, once.
fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let src = d.join("lib.hip");
        std::fs::write(&src, SOURCE).unwrap();
        // Device-only bundles.
        let device = |out: &str, archs: &[&str], extra: &[&str], env: &[(&str, &str)]| {
            let mut c = Command::new(llvm_tool("clang++"));
            c.args([
                "-x",
                "hip",
                "-nogpulib",
                "-nogpuinc",
                "--cuda-device-only",
                "-O1",
                "-cuid=lib",
            ]);
            for a in archs {
                c.arg(format!("--offload-arch={a}"));
            }
            c.args(extra).arg("-c").arg(&src).arg("-o").arg(d.join(out));
            for (k, v) in env {
                c.env(k, v);
            }
            run_ok(&mut c);
        };
        device("v5.hipfb", &["gfx1100"], &[], &[]);
        device("new.hipfb", &["gfx1151", "gfx1201", "gfx942"], &[], &[]);
        device("rdna2.hipfb", &["gfx1030"], &[], &[]);
        device("v4.hipfb", &["gfx1100"], &["-mcode-object-version=4"], &[]);
        device("v6.hipfb", &["gfx1100"], &["-mcode-object-version=6"], &[]);
        device("generic.hipfb", &["gfx11-generic"], &["-mcode-object-version=6"], &[]);
        device(
            "generic-native.hipfb",
            &["gfx11-generic", "gfx1100"],
            &["-mcode-object-version=6"],
            &[],
        );
        device(
            "ccob2.hipfb",
            &["gfx1100"],
            &["--offload-compress"],
            &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "2")],
        );
        device(
            "v6-ccob2.hipfb",
            &["gfx1030", "gfx1100"],
            &["-mcode-object-version=6", "--offload-compress"],
            &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "2")],
        );
        // CCOB v3 (clang-19 writes v2 at most): the v5 bundle compressed by gfxkit.
        let out = gfxkit(&[
            "compress",
            d.join("v5.hipfb").to_str().unwrap(),
            "-o",
            d.join("ccob3.hipfb").to_str().unwrap(),
            "--ccob-version",
            "3",
        ]);
        assert!(out.status.success(), "{out:?}");
        // A generic V6 entry beside a native V5 one (for gfx1100), bundled by clang's bundler.
        for (name, bundle) in [("gen", "generic.hipfb"), ("nat", "v5.hipfb")] {
            let target = if name == "gen" {
                "hipv4-amdgcn-amd-amdhsa--gfx11-generic"
            } else {
                "hipv4-amdgcn-amd-amdhsa--gfx1100"
            };
            run_ok(
                Command::new(llvm_tool("clang-offload-bundler"))
                    .args(["-type=o", "-unbundle", "-allow-missing-bundles"])
                    .arg(format!("-targets={target}"))
                    .arg(format!("-input={}", d.join(bundle).display()))
                    .arg(format!("-output={}", d.join(format!("{name}.co")).display())),
            );
        }
        run_ok(
            Command::new(llvm_tool("clang-offload-bundler"))
                .args(["-type=o"])
                .arg("-targets=host-x86_64-unknown-linux--,hipv4-amdgcn-amd-amdhsa--gfx11-generic,hipv4-amdgcn-amd-amdhsa--gfx1100")
                .arg("-input=/dev/null")
                .arg(format!("-input={}", d.join("gen.co").display()))
                .arg(format!("-input={}", d.join("nat.co").display()))
                .arg(format!("-output={}", d.join("mixed.hipfb").display())),
        );
        // A shared library (host and device code), split by kpack.
        let obj = d.join("lib.o");
        run_ok(
            Command::new(llvm_tool("clang++"))
                .args(["-x", "hip", "-nogpulib", "-nogpuinc", "-fPIC", "-O1", "-cuid=lib"])
                .arg("--offload-arch=gfx1100")
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&obj),
        );
        run_ok(
            Command::new(llvm_tool("clang++"))
                .args(["-shared", "-fuse-ld=lld"])
                .arg(&obj)
                .arg("-o")
                .arg(d.join("liblib.so")),
        );
        std::fs::create_dir_all(d.join("split/lib")).unwrap();
        let out = gfxkit(&[
            "kpack",
            "split",
            d.join("liblib.so").to_str().unwrap(),
            "--group",
            "lib",
            "-o",
            d.join("split/lib/liblib.so").to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{out:?}");
        Built { dir }
    })
}

/// `select --json` of one file on `device`, with `--rocm` when given: the report and the
/// (selected, reason) of its one unit.
fn select(file: &Path, device: &str, rocm: Option<&str>) -> (Value, Option<String>, String) {
    let mut args = vec![
        "select",
        "--json",
        "--device",
        device,
        file.to_str().unwrap(),
    ];
    if let Some(r) = rocm {
        args.extend(["--rocm", r]);
    }
    let out = gfxkit(&args);
    let v = common::json_stdout(&out);
    let u = &v["files"][0]["bundles"][0];
    (
        v.clone(),
        u["selected"].as_str().map(str::to_owned),
        u["reason"].as_str().unwrap_or("").to_owned(),
    )
}

/// Loaded on every release but 5.2, whose runtime does not know gfx11 processors (ROCr's ISA
/// registry has gfx1100 from 5.3, gfx1101 from 5.5).
const LOADED_FROM_6_1: [bool; 7] = [false, true, true, true, true, true, true];

/// What each case loads on each release of [`RELEASES`] (true: the device gets a code
/// object), and the refusal its reason names where it does not (on 5.2: the device's).
fn table() -> Vec<(&'static str, &'static str, [bool; 7], &'static str)> {
    vec![
        ("v5.hipfb", "gfx1100", LOADED_FROM_6_1, ""),
        ("v4.hipfb", "gfx1100", LOADED_FROM_6_1, ""),
        (
            "v6.hipfb",
            "gfx1100",
            [false, false, false, true, true, true, true],
            "code object V6: ROCm {r} loads up to V5",
        ),
        (
            "generic.hipfb",
            "gfx1100",
            [false, false, false, false, true, true, true],
            "gfx11-generic: ROCm {r} loads no generic code objects (gfx11-generic from 6.4, first tag not pinned)",
        ),
        (
            "generic-native.hipfb",
            "gfx1100",
            [false, false, false, true, true, true, true],
            "code object V6: ROCm {r} loads up to V5",
        ),
        (
            "generic-native.hipfb",
            "gfx1101",
            [false, false, false, false, true, true, true],
            "gfx11-generic: ROCm {r} loads no generic code objects",
        ),
        ("mixed.hipfb", "gfx1100", LOADED_FROM_6_1, ""),
        (
            "mixed.hipfb",
            "gfx1101",
            [false, false, false, false, true, true, true],
            "hipv4-amdgcn-amd-amdhsa--gfx11-generic passed over: ",
        ),
        (
            "ccob2.hipfb",
            "gfx1100",
            [false, false, true, true, true, true, true],
            "CCOB v2: ROCm {r}'s HIP runtime unpacks no compressed bundles (v2 from 6.2)",
        ),
        (
            "ccob3.hipfb",
            "gfx1100",
            [false, false, false, false, false, true, true],
            "CCOB v3: ROCm {r}'s HIP runtime unpacks ",
        ),
        (
            "split/lib/liblib.so",
            "gfx1100",
            [false; 7],
            "kpack-split binary (HIPK wrapper): ROCm {r}'s HIP runtime has no kpack loader (from 7.13, first tag not pinned)",
        ),
    ]
}

#[test]
fn every_build_on_every_release_answers_as_the_table_says() {
    let b = built();
    // The JSON names what was passed over, with the rebuild and the release that loads it.
    let (v, _, _) = select(&b.path("v6.hipfb"), "gfx1100", Some("6.2"));
    assert_eq!(
        v["files"][0]["bundles"][0]["passed_over"],
        serde_json::json!([{
            "entry": "hipv4-amdgcn-amd-amdhsa--gfx1100",
            "reason": "code object V6: ROCm 6.2 loads up to V5",
            "rebuild": "rebuild with -mcode-object-version=5",
            "upgrade": "6.3"
        }])
    );
    let (v, _, _) = select(&b.path("split/lib/liblib.so"), "gfx1100", Some("7.2"));
    let p = &v["files"][0]["bundles"][0]["passed_over"][0];
    assert_eq!(p["entry"], "hipv4-amdgcn-amd-amdhsa--gfx1100");
    assert_eq!(p["upgrade"], "7.13, first tag not pinned");
    for (file, device, loads, refusal) in table() {
        let path = b.path(file);
        // Without --rocm: the newest runtime loads every one of them.
        let (newest, selected, _) = select(&path, device, None);
        assert!(selected.is_some(), "{file} on {device}: {newest}");
        for (r, want) in RELEASES.iter().zip(loads) {
            let (v, selected, reason) = select(&path, device, Some(r));
            assert_eq!(v["rocm"]["version"], *r);
            assert_eq!(v["rocm"]["from"], "--rocm");
            assert_eq!(
                selected.is_some(),
                want,
                "{file} on {device} with ROCm {r}: {reason}"
            );
            if *r == "5.2" {
                // Before 5.3 the runtime does not know gfx11 processors at all.
                let first = if device == "gfx1100" { "5.3" } else { "5.5" };
                let said = format!(
                    "{device}: ROCm 5.2's runtime does not know this processor (first in {first}: ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-{first}.0"
                );
                assert!(!want, "{file} on {device} with ROCm 5.2");
                assert!(reason.contains(&said), "{reason:?} lacks {said:?}");
            } else if !want {
                let said = refusal.replace("{r}", r);
                assert!(
                    reason.contains(&said),
                    "{file} on {device} with ROCm {r}: {reason:?} lacks {said:?}"
                );
            } else if file != "mixed.hipfb" {
                // Loaded: the reason is the newest runtime's, nothing passed over.
                assert!(!reason.contains("passed over"), "{file} {r}: {reason}");
            }
        }
    }
}

/// The newest release gfxkit lists (and any later one) changes no answer: the JSON is the
/// same but for the `rocm` object, the text the same but for its `runtime` line.
#[test]
fn the_newest_release_changes_nothing() {
    let b = built();
    for (file, device, _, _) in table() {
        let path = b.path(file);
        let (newest, _, _) = select(&path, device, None);
        for r in ["7.13", "8.0"] {
            let (mut v, _, _) = select(&path, device, Some(r));
            v.as_object_mut().unwrap().remove("rocm");
            assert_eq!(v, newest, "{file} on {device} with ROCm {r}");
        }
        for cmd in [
            vec!["doctor", "--device", device],
            vec!["check", "--require", device],
        ] {
            let mut plain = cmd.clone();
            plain.push(path.to_str().unwrap());
            let want = gfxkit(&plain);
            let mut with = cmd.clone();
            with.extend(["--rocm", "7.13", path.to_str().unwrap()]);
            let got = gfxkit(&with);
            assert_eq!(got.status.code(), want.status.code(), "{cmd:?} {file}");
            let got = String::from_utf8(got.stdout).unwrap();
            let want = String::from_utf8(want.stdout).unwrap();
            let got: String = got
                .lines()
                .filter(|l| *l != "runtime ROCm 7.13 (--rocm)")
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(got, want, "{cmd:?} {file}");
        }
    }
}

/// `doctor` and `check` agree with `select`, name the refusal where a library fails, and
/// offer the remedies of the release: the rebuild it loads, or the release to upgrade to.
#[test]
fn doctor_and_check_follow_the_release_with_its_remedies() {
    let b = built();
    let doctor = |file: &str, device: &str, r: &str| -> Value {
        let out = gfxkit(&[
            "doctor",
            "--json",
            "--device",
            device,
            "--rocm",
            r,
            b.path(file).to_str().unwrap(),
        ]);
        common::json_stdout(&out)
    };
    for (file, device, loads, _) in table() {
        for (r, want) in RELEASES.iter().zip(loads) {
            let v = doctor(file, device, r);
            let f = &v["files"][0];
            assert_eq!(
                f["runs_on"][device], want,
                "{file} on {device}, ROCm {r}: {v}"
            );
            let out = gfxkit(&[
                "check",
                "--json",
                "--require",
                device,
                "--rocm",
                r,
                b.path(file).to_str().unwrap(),
            ]);
            let c = common::json_stdout(&out);
            assert_eq!(c["ok"], want, "check {file} {device} {r}: {c}");
            assert_eq!(out.status.code(), Some(if want { 0 } else { 1 }));
        }
    }
    let remedies = |v: &Value| -> Vec<String> {
        v["files"][0]["remedies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["text"].as_str().unwrap().to_owned())
            .collect()
    };
    // Native V6 on 6.2: rebuild with V5, or upgrade to 6.3.
    let v = doctor("v6.hipfb", "gfx1100", "6.2");
    assert!(v["files"][0]["missing"]["gfx1100"]
        .as_str()
        .unwrap()
        .contains("gfx1100 passed over: code object V6: ROCm 6.2 loads up to V5"));
    assert_eq!(
        remedies(&v),
        [
            "rebuild with -mcode-object-version=5",
            "upgrade ROCm to at least 6.3"
        ]
    );
    // Generic only on 6.3: native targets, or 6.4 (bracketed).
    let v = doctor("generic.hipfb", "gfx1101", "6.3");
    assert_eq!(
        remedies(&v),
        [
            "build the native targets instead of gfx11-generic (--offload-arch=gfx1101)",
            "upgrade ROCm to at least 6.4, first tag not pinned"
        ]
    );
    // CCOB v3 on 6.4: COMPRESSED_BUNDLE_FORMAT_VERSION=2, or 7.0.
    let r = remedies(&doctor("ccob3.hipfb", "gfx1100", "6.4"));
    assert!(
        r[0].starts_with("rebuild with COMPRESSED_BUNDLE_FORMAT_VERSION=2"),
        "{r:?}"
    );
    assert_eq!(r[1], "upgrade ROCm to at least 7.0, first tag not pinned");
    // A library without code for the device: the generic-target remedy only where the
    // release loads it.
    let r = remedies(&doctor("v5.hipfb", "gfx1101", "6.2"));
    assert_eq!(
        r,
        ["rebuild with --offload-arch=gfx1101 (ROCm 6.2 does not load gfx11-generic)"]
    );
    let r = remedies(&doctor("v5.hipfb", "gfx1101", "6.4"));
    assert!(r[0].contains("--offload-arch=gfx11-generic"), "{r:?}");
    // The kpack split on 7.2: inline it, or the release with the loader.
    let r = remedies(&doctor("split/lib/liblib.so", "gfx1100", "7.2"));
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].contains("gfxkit kpack inline"), "{r:?}");
    assert_eq!(r[1], "upgrade ROCm to at least 7.13, first tag not pinned");
}

/// `doctor --device auto` on a machine description: one gfx1100 and ROCm 6.2.4 installed.
/// The release is read, named, and applied (the V6 build fails, the V5 one runs).
#[test]
fn doctor_on_a_machine_reads_its_release() {
    let b = built();
    let root = b.path("machine");
    let node = root.join("sys/class/kfd/kfd/topology/nodes/1");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(
        node.join("properties"),
        "cpu_cores_count 0\nsimd_count 96\ngfx_target_version 110000\n",
    )
    .unwrap();
    let libs = b.path("machine-libs");
    std::fs::create_dir_all(&libs).unwrap();
    for f in ["v5.hipfb", "v6.hipfb"] {
        std::fs::copy(b.path(f), libs.join(f)).unwrap();
    }
    let run = |extra: &[&str]| {
        let mut a = vec!["doctor", "--sysfs-root", root.to_str().unwrap()];
        a.extend(extra);
        a.push(libs.to_str().unwrap());
        gfxkit(&a)
    };
    // Nothing installed: the newest runtime, said nowhere.
    let out = run(&[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("runtime"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    std::fs::create_dir_all(root.join("opt/rocm/.info")).unwrap();
    std::fs::write(root.join("opt/rocm/.info/version"), "6.2.4-5\n").unwrap();
    let out = run(&[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("runtime ROCm 6.2.4 from /opt/rocm/.info/version\n"),
        "{text}"
    );
    assert!(text.contains("ok    "), "{text}");
    assert!(
        text.contains(
            "v6.hipfb  on gfx1100: no code object ROCm 6.2.4 loads for gfx1100 in 1 of 1 bundle"
        ),
        "{text}"
    );
    assert!(
        text.contains("code object V6: ROCm 6.2.4 loads up to V5"),
        "{text}"
    );
    let v = common::json_stdout(&run(&["--json"]));
    assert_eq!(v["rocm"]["version"], "6.2.4");
    assert_eq!(v["rocm"]["from"], "/opt/rocm/.info/version");
    // --rocm overrides what is installed.
    let v = common::json_stdout(&run(&["--json", "--rocm", "6.3"]));
    assert_eq!(v["rocm"]["from"], "--rocm");
    assert!(v["files"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["runs_on"]["gfx1100"] == true));
    // select and check read it with --rocm auto under --rocm-root.
    let out = gfxkit(&[
        "select",
        "--device",
        "gfx1100",
        "--rocm",
        "auto",
        "--rocm-root",
        root.to_str().unwrap(),
        libs.join("v6.hipfb").to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("runtime ROCm 6.2.4 from /opt/rocm/.info/version"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

/// The code-object version of an entry inside a compressed bundle is read from the stream (the
/// second entry lies after the first's payload): V6 in CCOB v2 is refused by 6.2, which
/// unpacks the bundle, and loaded by 6.3; 6.1 refuses the bundle itself.
/// A device whose processor the release's runtime does not register (ROCr's ISA registry at
/// each tag) runs nothing on it, whatever the code objects: gfx1151 before 6.1, gfx1201 before
/// 6.2 (`select`, `doctor`, `check --require`, and the remedy to upgrade); where the release's
/// list was not read and the lists around it do not tell (gfx1250 on TheRock's 7.13, after
/// 7.2's list), the answer says so.
#[test]
fn processors_the_runtime_does_not_know() {
    let f = built().path("new.hipfb");
    let (v, selected, reason) = select(&f, "gfx1151", Some("6.0"));
    assert_eq!(selected, None, "{v}");
    assert_eq!(
        reason,
        "gfx1151: ROCm 6.0's runtime does not know this processor (first in 6.1: \
ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-6.1.0 (a4ab29c5))"
    );
    let p = &v["files"][0]["bundles"][0]["passed_over"][0];
    assert_eq!(p["entry"], "hipv4-amdgcn-amd-amdhsa--gfx1151");
    assert_eq!(p["upgrade"], "6.1");
    let (_, selected, _) = select(&f, "gfx1151", Some("6.1"));
    assert_eq!(
        selected.as_deref(),
        Some("hipv4-amdgcn-amd-amdhsa--gfx1151")
    );
    let (_, selected, reason) = select(&f, "gfx1201", Some("6.1"));
    assert_eq!(selected, None);
    assert!(reason.contains("first in 6.2"), "{reason}");
    let (_, selected, _) = select(&f, "gfx1201", Some("6.2"));
    assert!(selected.is_some());
    // gfx950: first in 6.4's list (read in its 6.4.3 source), no note there.
    let (v, _, reason) = select(&f, "gfx950", Some("6.3"));
    assert!(
        reason.contains("first in 6.4, first tag not pinned"),
        "{reason}"
    );
    assert!(
        v["rocm"]["notes"].as_array().is_none_or(|n| n.is_empty()),
        "{v}"
    );
    let (v, _, _) = select(&f, "gfx950", Some("6.4"));
    assert!(
        v["rocm"]["notes"].as_array().is_none_or(|n| n.is_empty()),
        "{v}"
    );
    // gfx1250 on 7.13: not known either way; said, nothing refused.
    let (v, _, _) = select(&f, "gfx1250", Some("7.13"));
    assert_eq!(
        v["rocm"]["notes"][0],
        "gfx1250: whether ROCm 7.13's runtime knows this processor is not known (7.13's ISA \
registry not read; not in 7.2's, the last read)"
    );
    let out = gfxkit(&[
        "select",
        "--device",
        "gfx1250",
        "--rocm",
        "7.13",
        f.to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  note: gfx1250: whether ROCm 7.13's runtime knows"),
        "{text}"
    );
    // doctor: the verdict and the upgrade.
    let out = gfxkit(&[
        "doctor",
        "--json",
        "--device",
        "gfx1201",
        "--rocm",
        "6.1",
        f.to_str().unwrap(),
    ]);
    let v = common::json_stdout(&out);
    let file = &v["files"][0];
    assert_eq!(file["runs_on"]["gfx1201"], false, "{v}");
    assert!(file["missing"]["gfx1201"]
        .as_str()
        .unwrap()
        .starts_with("gfx1201: ROCm 6.1's runtime does not know this processor (first in 6.2"));
    let remedies: Vec<&str> = file["remedies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(remedies, ["upgrade ROCm to at least 6.2"]);
    // gfx1036 (first in 5.3) on 5.2 runs gfx1030 code as gfx1030, which 5.2 knows: the
    // override, then the upgrade; on 4.2 the V5 code object does not load as gfx1030 either;
    // a V6 build needs 6.3 whatever the device.
    let remedies = |file: &str, device: &str, rocm: &str| -> Vec<String> {
        let out = gfxkit(&[
            "doctor",
            "--json",
            "--device",
            device,
            "--rocm",
            rocm,
            built().path(file).to_str().unwrap(),
        ]);
        let v = common::json_stdout(&out);
        assert_eq!(v["files"][0]["runs_on"][device], false, "{v}");
        v["files"][0]["remedies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["text"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = remedies("rdna2.hipfb", "gfx1036", "5.2");
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(
        r[0].starts_with("run with HSA_OVERRIDE_GFX_VERSION=10.3.0"),
        "{r:?}"
    );
    assert_eq!(r[1], "upgrade ROCm to at least 5.3");
    assert_eq!(
        remedies("rdna2.hipfb", "gfx1036", "4.2"),
        ["upgrade ROCm to at least 5.3"]
    );
    assert_eq!(
        remedies("v6.hipfb", "gfx1100", "5.2"),
        ["upgrade ROCm to at least 6.3"]
    );
    // check --require: each processor on each release.
    for (require, rocm, ok) in [
        ("gfx1151,gfx942", "6.0", false),
        ("gfx1151,gfx942", "6.1", true),
        ("gfx1201", "6.1", false),
        ("gfx1201", "7.2", true),
        ("gfx942", "5.6", false),
        ("gfx942", "5.7", true),
        ("gfx942", "7.13", true),
    ] {
        let out = gfxkit(&[
            "check",
            "--json",
            "--require",
            require,
            "--rocm",
            rocm,
            f.to_str().unwrap(),
        ]);
        let c = common::json_stdout(&out);
        assert_eq!(c["ok"], ok, "{require} on {rocm}: {c}");
        if !ok {
            let why = c["files"][0]["why"].as_object().unwrap();
            assert!(
                why.values().any(|w| w
                    .as_str()
                    .unwrap()
                    .contains("runtime does not know this processor")),
                "{c}"
            );
        }
    }
    // rocm show lists the processors with where they were read.
    let v = common::json_stdout(&gfxkit(&["rocm", "show", "6.1", "--json"]));
    let list: Vec<&str> = v["processors"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        list.contains(&"gfx1151") && !list.contains(&"gfx1201"),
        "{list:?}"
    );
    assert_eq!(v["processors"]["pin"], "pinned");
    let v = common::json_stdout(&gfxkit(&["rocm", "show", "6.4", "--json"]));
    assert_eq!(v["processors"]["pin"], "bracketed");
    assert!(v["processors"]["source"]
        .as_str()
        .unwrap()
        .contains("of the 6.4.3 release"));
    let v = common::json_stdout(&gfxkit(&["rocm", "show", "7.1", "--json"]));
    assert_eq!(v["processors"]["pin"], "unknown");
    assert!(v["processors"]["list"].is_null());
}

#[test]
fn versions_inside_compressed_bundles() {
    let f = built().path("v6-ccob2.hipfb");
    for device in ["gfx1030", "gfx1100"] {
        let (_, selected, reason) = select(&f, device, Some("6.2"));
        assert_eq!(selected, None);
        assert!(
            reason.contains(&format!(
                "hipv4-amdgcn-amd-amdhsa--{device} passed over: code object V6: ROCm 6.2 loads up to V5"
            )),
            "{reason}"
        );
        let (_, selected, _) = select(&f, device, Some("6.3"));
        assert_eq!(
            selected.unwrap(),
            format!("hipv4-amdgcn-amd-amdhsa--{device}")
        );
        let (_, _, reason) = select(&f, device, Some("6.1"));
        assert!(
            reason.starts_with("CCOB v2: ROCm 6.1's HIP runtime unpacks no compressed bundles"),
            "{reason}"
        );
    }
}

#[test]
fn the_table_lists_and_shows_each_release_with_its_sources() {
    let out = gfxkit(&["rocm", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("generic targets (6.4, first tag not pinned)"),
        "{text}"
    );
    assert!(
        text.contains("processors: +gfx1150 +gfx1151 (read at the tag)")
            && text.contains("processors: +gfx950 +gfx1153 (read in the 6.4.3 release's source)")
            && text.contains("processors: -gfx940 -gfx941 (read on the release branch)")
            && text.contains("processors: unchanged (read in 7.2.4's runtime library)"),
        "{text}"
    );
    let v = common::json_stdout(&gfxkit(&["rocm", "list", "--json"]));
    let versions: Vec<&str> = v["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    for r in RELEASES {
        assert!(versions.contains(&r), "{versions:?}");
    }
    assert!(v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| !f["source"].as_str().unwrap().is_empty()));
    let v = common::json_stdout(&gfxkit(&["rocm", "show", "6.2", "--json"]));
    assert_eq!(v["code_object_max"], 5);
    assert_eq!(v["ccob"], serde_json::json!([1, 2]));
    let out = gfxkit(&["rocm", "show", "6.2"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("ELFABIVERSION_AMDGPU_HSA_V5 appears in 5.2.0"),
        "{text}"
    );
    let out = gfxkit(&["select", "--device", "gfx1100", "--rocm", "six", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--rocm six"), "{err}");
    assert!(err.contains("not a ROCm release number"), "{err}");
}

/// A real input of `scripts/ensure-real-inputs` (in `target/real`).
fn real(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/real");
    std::fs::read_dir(&dir)
        .ok()
        .and_then(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(name))
            })
        })
        .unwrap_or_else(|| {
            panic!(
                "{name}* is missing from {}: run `bash scripts/ensure-real-inputs`",
                dir.display()
            )
        })
}

/// Real libraries judged against the release they were built for and an older one: Debian
/// 12's librocrand (ROCm 5.3, code objects V4) runs on 5.3 and not on 4.0 (V1-V3); PyPI's
/// torch-scatter-rocm 2.1.2.post7 (code objects V6, gfx900 to gfx1251) runs on 7.2 and not on
/// 6.2 (up to V5), on every library of the wheel; the newest release changes nothing.
#[test]
fn real_libraries_on_their_release_and_an_older_one() {
    let rocrand = real("librocrand.so.1.1");
    let wheel = real("torch_scatter_rocm-2.1.2.post7-");
    let doctor = |file: &Path, device: &str, rocm: Option<&str>| -> Value {
        let mut a = vec!["doctor", "--json", "--device", device];
        if let Some(r) = rocm {
            a.extend(["--rocm", r]);
        }
        a.push(file.to_str().unwrap());
        common::json_stdout(&gfxkit(&a))
    };
    for (file, device, built_for, older, why) in [
        (
            &rocrand,
            "gfx90a:sramecc+:xnack-",
            "5.3",
            "4.0",
            "code object V4: ROCm 4.0 loads up to V3",
        ),
        (
            &wheel,
            "gfx1100",
            "7.2",
            "6.2",
            "code object V6: ROCm 6.2 loads up to V5",
        ),
    ] {
        let newest = doctor(file, device, None);
        let files = newest["files"].as_array().unwrap();
        assert!(!files.is_empty());
        assert!(
            files.iter().all(|f| f["runs_on"][device] == true),
            "{newest}"
        );
        for r in [built_for, "7.13"] {
            let mut v = doctor(file, device, Some(r));
            v.as_object_mut().unwrap().remove("rocm");
            assert_eq!(v, newest, "{} on ROCm {r}", file.display());
        }
        let v = doctor(file, device, Some(older));
        for f in v["files"].as_array().unwrap() {
            assert_eq!(f["runs_on"][device], false, "{f}");
            let m = f["missing"][device].as_str().unwrap();
            assert!(m.contains(why), "{m}");
        }
    }
}

/// The processor names one shipped runtime library carries: every `gfx` followed by hex digits
/// among its bytes (the ISA registry's target IDs are strings or immediates of its code; the
/// loader's table of ELF machines adds names no registry had, which the caller leaves out).
fn names_in(library: &Path) -> std::collections::BTreeSet<String> {
    let bytes = std::fs::read(library).unwrap();
    let mut out = std::collections::BTreeSet::new();
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(3).position(|w| w == b"gfx") {
        let start = i + at;
        let end = start
            + 3
            + bytes[start + 3..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                .count();
        if end > start + 3 {
            out.insert(String::from_utf8_lossy(&bytes[start..end]).into_owned());
        }
        i = start + 3;
    }
    out
}

/// The processors of `gfxkit rocm show RELEASE --json`, when its list was read.
fn processors_of(release: &str) -> Vec<String> {
    let v = common::json_stdout(&gfxkit(&["rocm", "show", release, "--json"]));
    v["processors"]["list"]
        .as_array()
        .unwrap_or_else(|| panic!("{release}: {v}"))
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect()
}

/// The table's processor lists against the runtimes themselves: ROCr's library as Debian
/// builds 6.1.2 (trixie), 6.4.3 (sid) and 7.2.4 (experimental) carries exactly the processors
/// of its release's row among those any release registered (and none of gfx1250/gfx1251),
/// except gfx940 and gfx941, which Debian's 6.4.3 removes by a patch the release does not have.
#[test]
fn isa_registries_of_shipped_runtimes_match_the_table() {
    let v = common::json_stdout(&gfxkit(&["rocm", "list", "--json"]));
    let mut ever: std::collections::BTreeSet<String> = ["gfx1250", "gfx1251"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for r in v["releases"].as_array().unwrap() {
        let r = r["version"].as_str().unwrap();
        let shown = common::json_stdout(&gfxkit(&["rocm", "show", r, "--json"]));
        if shown["processors"]["pin"] != "unknown" {
            ever.extend(processors_of(r));
        }
    }
    assert!(ever.len() > 40, "{ever:?}");
    for (release, patch, debian_removed) in [
        ("6.1", "6.1.2", &[][..]),
        ("6.4", "6.4.3", &["gfx940", "gfx941"][..]),
        ("7.2", "7.2.4", &[][..]),
    ] {
        let library = real("rocr").join(format!("libhsa-runtime64-{patch}.so"));
        let carried: Vec<String> = names_in(&library)
            .into_iter()
            .filter(|n| ever.contains(n))
            .collect();
        let mut expected: Vec<String> = processors_of(release)
            .into_iter()
            .filter(|p| !debian_removed.contains(&p.as_str()))
            .collect();
        expected.sort();
        assert_eq!(carried, expected, "ROCm {patch}: {}", library.display());
        for p in debian_removed {
            assert!(processors_of(release).iter().any(|q| q == p), "{p}");
        }
    }
}
