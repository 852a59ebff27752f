//! `size` and `list` read compressed (CCOB) bundles from their headers alone, `--check`
//! decompresses them in full and verifies their hashes: on Debian sid's hipBLASLt 7.1 and
//! rocBLAS 6.4 (the files of them `scripts/ensure-real-inputs` unpacks into `target/real/sid`)
//! both give the same answers, and on a damaged bundle the header answer stays while `--check`
//! names the damage.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sid() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/real/sid");
    assert!(
        dir.join(".complete").exists(),
        "{} is missing: run `bash scripts/ensure-real-inputs` (scripts/test does)",
        dir.display()
    );
    dir.join("usr/lib/x86_64-linux-gnu")
}

fn hipblaslt() -> PathBuf {
    sid().join("hipblaslt/library")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .env_remove("GFXKIT_PROGRESS_DELAY_MS")
        .env_remove("ROCBLAS_TENSILE_LIBPATH")
        .env_remove("HIPBLASLT_TENSILE_LIBPATH")
        .output()
        .expect("run gfxkit")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `args` and expects exit 0.
fn ok(args: &[&str]) -> Output {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    o
}

/// The bundles of every file of a `list --json` answer.
fn bundles(listing: &Value) -> impl Iterator<Item = &Value> {
    listing["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["bundles"].as_array().unwrap())
}

#[test]
fn size_and_list_from_headers_equal_the_full_decode() {
    let lib = hipblaslt();
    let dir = lib.to_str().unwrap();
    let compressed = std::fs::read_dir(&lib)
        .unwrap()
        .filter(|e| {
            let p = e.as_ref().unwrap().path();
            p.extension().is_some_and(|x| x == "co")
                && std::fs::read(&p).unwrap().starts_with(b"CCOB")
        })
        .count();
    assert!(compressed > 40, "{compressed} CCOB shards in {dir}");

    // size: every grouping, text and JSON, byte for byte; the figures are counted.
    for args in [
        &["size", "--json"][..],
        &["size", "--json", "--by", "library", "--keep", "gfx1151"],
        &["size", "--by", "bundle"],
        &["size", "--by", "file"],
        &["size"],
    ] {
        let headers = ok(&[args, &[dir]].concat());
        let full = ok(&[args, &["--check", dir]].concat());
        assert_eq!(
            String::from_utf8_lossy(&headers.stdout),
            String::from_utf8_lossy(&full.stdout),
            "{args:?}"
        );
    }
    let size: Value = common::json_stdout(&ok(&["size", "--json", dir]));
    let ccob: Vec<&Value> = size["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["encoding"].as_str().unwrap().starts_with("ccob"))
        .collect();
    assert_eq!(ccob.len(), compressed, "{size}");
    assert!(ccob
        .iter()
        .all(|b| b["uncompressed"].as_u64().unwrap() > b["stored"].as_u64().unwrap()));

    // list: the header answer is what --check answers, but for what only a full decode gives
    // (the hash, and the code objects' headers), which it leaves null.
    let headers = common::json_stdout(&ok(&["list", "-r", "--json", dir]));
    let mut full = common::json_stdout(&ok(&["list", "-r", "--json", "--check", dir]));
    let mut checked = 0;
    for b in bundles(&headers).filter(|b| b["format"] == "ccob") {
        assert_eq!(b["ccob"]["hash_ok"], Value::Null);
        for e in b["entries"].as_array().unwrap() {
            assert_eq!(e["code_object_version"], Value::Null);
            assert_eq!(e["eflags_agree"], Value::Null);
        }
    }
    for f in full["files"].as_array_mut().unwrap() {
        for b in f["bundles"].as_array_mut().unwrap() {
            if b["format"] != "ccob" {
                continue;
            }
            assert_eq!(b["ccob"]["hash_ok"], Value::Bool(true));
            b["ccob"]["hash_ok"] = Value::Null;
            for e in b["entries"].as_array_mut().unwrap() {
                if e["kind"] == "hipv4" {
                    assert!(e["code_object_version"].is_u64(), "{e}");
                    assert_eq!(e["eflags_agree"], Value::Bool(true), "{e}");
                    checked += 1;
                }
                e["code_object_version"] = Value::Null;
                e["eflags_agree"] = Value::Null;
            }
        }
    }
    assert!(checked >= compressed, "{checked} code objects checked");
    assert_eq!(headers, full);

    // list --summary and the rocBLAS library beside it: the same either way.
    let summary = ok(&["list", "--summary", "--json", dir]);
    let summary_full = ok(&["list", "--summary", "--json", "--check", dir]);
    assert_eq!(summary.stdout, summary_full.stdout);
    let rocblas = sid().join("rocblas");
    let rocblas = rocblas.to_str().unwrap();
    assert_eq!(
        ok(&["size", "--json", rocblas]).stdout,
        ok(&["size", "--json", "--check", rocblas]).stdout
    );
}

/// Copies the largest CCOB shard of the hipBLASLt directory into `dir` as `name`, with `edit`
/// applied to its bytes; returns the new file's path.
fn shard(dir: &Path, name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> String {
    let largest = std::fs::read_dir(hipblaslt())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "co"))
        .max_by_key(|p| (std::fs::metadata(p).unwrap().len(), p.clone()))
        .unwrap();
    let mut bytes = std::fs::read(&largest).unwrap();
    assert!(bytes.starts_with(b"CCOB"), "{}", largest.display());
    edit(&mut bytes);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_damaged_payload_is_found_by_check_only() {
    let tmp = tempfile::tempdir().unwrap();
    let good = shard(tmp.path(), "good.co", |_| {});
    let good_size = ok(&["size", "--json", &good]);
    let good_list = ok(&["list", "--json", &good]);
    let same = |o: &Output, path: &str, want: &Output| {
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).replace(path, &good),
            String::from_utf8_lossy(&want.stdout)
        );
    };
    // One byte flipped near the end of the compressed payload (its last zstd blocks, far
    // from the bundle header at the start): one that no longer decodes, and one that decodes
    // to other bytes (a hash mismatch).
    for (back, damage) in [(16, "decompression failed"), (3000, "hash mismatch")] {
        let name = format!("flipped-{back}.co");
        let bad = shard(tmp.path(), &name, |b| {
            let at = b.len() - back;
            b[at] ^= 1;
        });
        same(&ok(&["size", "--json", &bad]), &bad, &good_size);
        same(&ok(&["list", "--json", &bad]), &bad, &good_list);
        for cmd in ["size", "list"] {
            let o = run(&[cmd, "--check", &bad]);
            let said = text(&o);
            // list --check tells a hash mismatch (1) from a bundle that cannot be read (2).
            let want = if cmd == "list" && damage == "hash mismatch" {
                1
            } else {
                2
            };
            assert_eq!(o.status.code(), Some(want), "{cmd}: {said}");
            assert!(
                said.contains(&bad) && said.to_lowercase().contains(damage),
                "{cmd}: {said}"
            );
        }
        // The commands that judge code keep decoding and checking it.
        let v = run(&["verify", &bad]);
        assert_ne!(v.status.code(), Some(0), "{}", text(&v));
    }
}

#[test]
fn a_damaged_header_is_an_error_either_way() {
    let tmp = tempfile::tempdir().unwrap();
    // The CCOB header declares fewer bytes than the zstd frame holds (v2: the uncompressed
    // size at offset 12).
    let bad = shard(tmp.path(), "declared.co", |b| {
        b[12..16].copy_from_slice(&2000u32.to_le_bytes())
    });
    for args in [&["size"][..], &["size", "--check"]] {
        let o = run(&[args, &[bad.as_str()]].concat());
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains(&format!("{bad}: bad bundle: frame size mismatch")),
            "{args:?}: {said}"
        );
    }
    let o = run(&["list", &bad]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("frame size mismatch"), "{}", text(&o));
}
