//! The honest answers on real third-party inputs: Debian 12's librocrand (ROCm 5.3) and PyPI's
//! torch-scatter-rocm 2.1.2.post7 wheel, which `scripts/ensure-real-inputs` downloads into
//! `target/real` before the tests run. Each check is a defect a user met on these files: a
//! typo that pruned every GPU, a target present nowhere passed over in silence, hints ranked by
//! digits, `PKG!MEMBER` refused by some commands, CPU-only members failing `verify`, a library
//! without section headers read as holding no device code, a flipped byte in a kpack archive
//! reported as fine.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn real(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/real");
    let found = std::fs::read_dir(&dir).ok().and_then(|d| {
        d.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(name))
        })
    });
    found.unwrap_or_else(|| {
        panic!(
            "{name}* is missing from {}: run `bash scripts/ensure-real-inputs` (scripts/test does)",
            dir.display()
        )
    })
}

fn rocrand() -> PathBuf {
    real("librocrand.so.1.1")
}

fn wheel() -> PathBuf {
    real("torch_scatter_rocm-2.1.2.post7-")
}

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .env_remove("GFXKIT_PROGRESS_DELAY_MS")
        .output()
        .expect("run gfxkit")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn a_typo_in_keep_is_refused_and_an_absent_target_named() {
    let lib = rocrand();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("p.so");
    let o = gfxkit(&["prune", "--keep", "gfx1151", s(&lib), "-o", s(&out)]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--keep gfx1151 would leave no device code (the file has gfx1030, gfx803, gfx900:xnack-, gfx906:xnack-, gfx908:xnack-, gfx90a:xnack+, gfx90a:xnack-)"),
        "{err}"
    );
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    let o = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a,gfx942",
        "--json",
        s(&lib),
        "-o",
        s(&out),
    ]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("note: --keep gfx942 matches no entry of"),
        "{err}"
    );
    assert_eq!(json(&o)["unmatched"], serde_json::json!(["gfx942"]));
}

#[test]
fn nearest_targets_are_ranked_by_what_could_run() {
    let lib = rocrand();
    for (device, nearest) in [
        ("gfx1151", "gfx1030, gfx90a, gfx908"),
        ("gfx942", "gfx90a, gfx908, gfx906"),
        ("gfx90a:xnack+:sramecc-", "gfx90a:xnack+"),
    ] {
        let o = gfxkit(&["select", "--json", "--device", device, s(&lib)]);
        let v = json(&o);
        let b = &v["files"][0]["bundles"][0];
        if b["selected"].is_null() {
            assert_eq!(o.status.code(), Some(1));
            let reason = b["reason"].as_str().unwrap();
            assert!(
                reason.ends_with(&format!("nearest present: {nearest}")),
                "{device}: {reason}"
            );
        } else {
            // gfx90a:xnack+ is present: it loads.
            assert_eq!(b["selected"], "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        }
    }
}

#[test]
fn every_command_takes_a_package_member() {
    let member = format!("{}!torch_scatter/_scatter_cuda.so", s(&wheel()));
    let d = tempfile::tempdir().unwrap();
    for args in [
        vec!["list", "--json"],
        vec!["verify", "--json"],
        vec!["select", "--json", "--device", "gfx1151"],
        vec!["doctor", "--json", "--device", "gfx1100"],
        vec!["size", "--json"],
        vec!["kernels", "--json", "--target", "gfx942"],
    ] {
        let mut a = args.clone();
        a.push(&member);
        let o = gfxkit(&a);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            out.contains(&member),
            "{args:?}: the result names the member"
        );
    }
    let out = d.path().join("x");
    let o = gfxkit(&["extract", "--target", "gfx1151", &member, "-o", s(&out)]);
    assert!(o.status.success(), "{}", text(&o).1);
}

#[test]
fn cpu_only_members_are_named_not_failed() {
    let w = wheel();
    let o = gfxkit(&["verify", s(&w)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let line = "5 members without device code: torch_scatter/_scatter_cpu.so";
    assert!(out.contains(line), "{out}");
    let o = gfxkit(&["list", s(&w)]);
    let (out, _) = text(&o);
    assert!(out.contains(line), "{out}");
    assert!(!out.contains("0 bundles"), "{out}");
    let v = json(&gfxkit(&["list", "--summary", "--json", s(&w)]));
    assert_eq!(
        v["without_device_code"].as_array().map(Vec::len),
        Some(5),
        "{v}"
    );
}

#[test]
fn a_library_without_section_headers_is_read_as_the_loader_reads_it() {
    let lib = rocrand();
    let d = tempfile::tempdir().unwrap();
    let stripped = d.path().join("librocrand.stripped.so");
    let o = Command::new(gfxkit_testkit::llvm_tool("llvm-objcopy"))
        .arg("--strip-sections")
        .arg(&lib)
        .arg(&stripped)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let entries = |p: &Path| -> Vec<String> {
        let v = json(&gfxkit(&["list", "--json", s(p)]));
        v["files"][0]["bundles"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|b| b["entries"].as_array().unwrap().clone())
            .map(|e| format!("{} {}", e["id"], e["size"]))
            .collect()
    };
    let want = entries(&lib);
    assert_eq!(want.len(), 8);
    assert_eq!(entries(&stripped), want);
    let o = gfxkit(&["select", "--device", "gfx90a:sramecc+:xnack-", s(&stripped)]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).0.contains("1 of 1 bundles"), "{}", text(&o).0);
}

#[test]
fn a_flipped_byte_in_a_kpack_archive_is_damage() {
    let lib = rocrand();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("lib/librocrand.so.1.1");
    let o = gfxkit(&[
        "kpack",
        "split",
        s(&lib),
        "--group",
        "rocrand",
        "-o",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let archive = d.path().join(".kpack/rocrand_gfx90a:xnack-.kpack");
    let mut bytes = std::fs::read(&archive).unwrap();
    // A byte in the middle of the one frame (past the header and TOC).
    let at = bytes.len() - bytes.len() / 4;
    bytes[at] ^= 0x10;
    std::fs::write(&archive, &bytes).unwrap();
    let o = gfxkit(&["verify", s(&out)]);
    let (out_text, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out_text}");
    assert!(
        out_text.contains("rocrand_gfx90a:xnack-.kpack"),
        "{out_text}"
    );
    let x = d.path().join("x");
    let o = gfxkit(&["extract", "--target", "gfx90a:xnack-", s(&out), "-o", s(&x)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).0);
    assert!(
        text(&o).1.contains("rocrand_gfx90a:xnack-.kpack"),
        "{}",
        text(&o).1
    );
    let o = gfxkit(&["select", "--device", "gfx90a:sramecc+:xnack-", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).0);
    let (o_text, e_text) = text(&o);
    assert!(
        !o_text.contains("install") && !e_text.contains("install"),
        "{o_text}{e_text}"
    );
}
