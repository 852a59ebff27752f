//! Golden tests of the bundle commands: each case runs gfxkit in a directory of fixtures and
//! compares the exit code, standard output and standard error with
//! `tests/golden/<case>.txt`. `GFXKIT_BLESS=1 cargo test -p gfxkit --test bundler_golden`
//! rewrites the files; without it any drift fails.
//!
//! Fixtures are built in code from synthetic payloads (deterministic whatever compiler is
//! installed), plus a few code objects compiled by clang-19 where a real one is needed.

mod common;

use common::check_golden;
use gfxkit_bundle::ccob::{self, CompressOptions};
use gfxkit_bundle::{write_bundle, Method};
use gfxkit_testkit::{hip_kernels, llvm_tool, run_ok, HipBuild};
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

const GFXKIT: &str = env!("CARGO_BIN_EXE_gfxkit");

/// A deterministic pseudo-random payload (compressible, like code).
fn payload(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 7 < 4 {
                (i % 251) as u8
            } else {
                (x & 0xff) as u8
            }
        })
        .collect()
}

const HOST: &str = "host-x86_64-unknown-linux--";
const G906: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
const G90AP: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
const G90AM: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-";
const G1100: &str = "hipv4-amdgcn-amd-amdhsa--gfx1100";

fn synthetic() -> Vec<u8> {
    let (a, b, c, d) = (
        payload(1, 3000),
        payload(2, 5000),
        payload(3, 4000),
        payload(4, 2500),
    );
    write_bundle(
        &[
            (HOST, b""),
            (G906, &a),
            (G90AP, &b),
            (G90AM, &c),
            (G1100, &d),
        ],
        4096,
    )
    .unwrap()
}

struct Fixtures {
    _dir: tempfile::TempDir,
    files: Vec<(String, Vec<u8>)>,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let mut files = Vec::new();
        let plain = synthetic();
        let v2 = ccob::compress(&plain, &CompressOptions::default()).unwrap();
        let v3 = ccob::compress(
            &plain,
            &CompressOptions {
                version: 3,
                ..CompressOptions::default()
            },
        )
        .unwrap();
        let zlib = ccob::compress(
            &plain,
            &CompressOptions {
                method: Method::Zlib,
                ..CompressOptions::default()
            },
        )
        .unwrap();
        // A dumped .hip_fatbin: an uncompressed bundle, then a compressed one, 4096-aligned.
        let mut fatbin = plain.clone();
        fatbin.resize(plain.len().div_ceil(4096) * 4096, 0);
        fatbin.extend_from_slice(&v3);
        let mut bad_hash = v2.clone();
        bad_hash[16] ^= 0x5a;
        // Problems verify must find: legacy device ID, conflicting IDs, a payload that is not a
        // code object, a header past 4096 bytes.
        let long: Vec<String> = (0..120)
            .map(|i| format!("openmp-x86_64-pc-linux-gnu-{:0>20}", i))
            .collect();
        let mut many: Vec<(&str, &[u8])> = vec![(HOST, b"")];
        many.extend(long.iter().map(|s| (s.as_str(), &b"x"[..])));
        let problems = write_bundle(
            &[
                (HOST, b""),
                ("hip-amdgcn-amd-amdhsa-gfx906", b"not an ELF file"),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"also not"),
                (G90AP, b"nor this"),
            ],
            1,
        )
        .unwrap();
        let big_header = write_bundle(&many, 1).unwrap();
        let mut truncated = plain.clone();
        truncated.truncate(plain.len() - 100);
        files.push(("app.hipfb".to_owned(), plain));
        files.push(("app.z.hipfb".to_owned(), v2));
        files.push(("app.v3.hipfb".to_owned(), v3));
        files.push(("app.zlib.hipfb".to_owned(), zlib));
        files.push(("lib.hip_fatbin".to_owned(), fatbin));
        files.push(("badhash.hipfb".to_owned(), bad_hash));
        files.push(("problems.hipfb".to_owned(), problems));
        files.push(("bigheader.hipfb".to_owned(), big_header));
        files.push(("truncated.hipfb".to_owned(), truncated));
        files.push(("notabundle.txt".to_owned(), b"hello\n".to_vec()));
        // Real code objects from clang-19, for verify and bundle.
        let dir = tempfile::tempdir().unwrap();
        let src = hip_kernels(2);
        let fb = HipBuild::new(&src, &["gfx906", "gfx90a:xnack+"]).build(dir.path(), "real");
        files.push(("real.hipfb".to_owned(), std::fs::read(&fb).unwrap()));
        for (t, name) in [(G906, "gfx906.co"), (G90AP, "gfx90a.co")] {
            let out = dir.path().join(name);
            run_ok(
                Command::new(llvm_tool("clang-offload-bundler"))
                    .arg("-type=o")
                    .arg(format!("-targets={t}"))
                    .arg(format!("-input={}", fb.display()))
                    .arg(format!("-output={}", out.display()))
                    .arg("-unbundle"),
            );
            files.push((name.to_owned(), std::fs::read(&out).unwrap()));
        }
        Fixtures { _dir: dir, files }
    })
}

/// Runs one golden case: `gfxkit <args>` in a fresh fixture directory, then `after` (more
/// commands whose output is appended, e.g. to list what was written).
fn golden(name: &str, args: &[&str], after: &[&[&str]]) {
    let d = tempfile::tempdir().unwrap();
    for (f, bytes) in &fixtures().files {
        std::fs::write(d.path().join(f), bytes).unwrap();
    }
    let mut text = String::new();
    for a in std::iter::once(args).chain(after.iter().copied()) {
        text.push_str(&run_case(d.path(), a));
    }
    check_golden("golden", name, &text);
}

fn run_case(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(GFXKIT)
        .current_dir(dir)
        .args(args)
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .output()
        .unwrap();
    let clean = |b: &[u8]| String::from_utf8_lossy(b).replace(&dir.display().to_string(), "$DIR");
    format!(
        "$ gfxkit {}\nexit: {}\n--- stdout\n{}--- stderr\n{}\n",
        args.join(" "),
        out.status
            .code()
            .map_or("signal".to_owned(), |c| c.to_string()),
        clean(&out.stdout),
        clean(&out.stderr)
    )
}

#[test]
fn list() {
    golden(
        "list",
        &[
            "list",
            "app.hipfb",
            "app.z.hipfb",
            "app.v3.hipfb",
            "app.zlib.hipfb",
        ],
        &[],
    );
    golden("list_fatbin", &["list", "lib.hip_fatbin"], &[]);
    golden("list_json", &["list", "--json", "lib.hip_fatbin"], &[]);
    golden(
        "list_check",
        &["list", "--check", "app.z.hipfb", "badhash.hipfb"],
        &[],
    );
    golden("list_not_a_bundle", &["list", "notabundle.txt"], &[]);
    golden("list_truncated", &["list", "truncated.hipfb"], &[]);
    golden("list_missing", &["list", "nonexistent.hipfb"], &[]);
}

#[test]
fn extract() {
    golden(
        "extract_all",
        &["extract", "lib.hip_fatbin", "-o", "out"],
        &[],
    );
    golden(
        "extract_targets_json",
        &[
            "extract",
            "app.z.hipfb",
            "-t",
            "gfx90a:sramecc+:xnack-",
            "-t",
            "gfx906",
            "--json",
            "-o",
            "sel",
        ],
        &[],
    );
    golden(
        "extract_no_match",
        &["extract", "app.hipfb", "-t", "gfx1030", "-o", "none"],
        &[&["list", "none"]],
    );
    // A bare processor selects every variant of it.
    golden(
        "extract_bare_processor",
        &["extract", "app.hipfb", "-t", "gfx90a", "-o", "bare"],
        &[],
    );
    golden("extract_not_a_bundle", &["extract", "notabundle.txt"], &[]);
    golden(
        "extract_bad_hash",
        &["extract", "badhash.hipfb", "-o", "bh"],
        &[],
    );
}

#[test]
fn verify() {
    golden("verify_ok", &["verify", "real.hipfb"], &[]);
    golden(
        "verify_problems",
        &[
            "verify",
            "problems.hipfb",
            "badhash.hipfb",
            "bigheader.hipfb",
            "truncated.hipfb",
        ],
        &[],
    );
    golden("verify_json", &["verify", "--json", "problems.hipfb"], &[]);
    golden("verify_not_a_bundle", &["verify", "notabundle.txt"], &[]);
}

#[test]
fn bundle_unbundle_compress() {
    golden(
        "bundle",
        &[
            "bundle",
            "-o",
            "new.hipfb",
            "gfx906.co",
            "gfx90a.co:gfx90a:xnack+",
        ],
        &[&["list", "new.hipfb"], &["verify", "new.hipfb"]],
    );
    golden(
        "bundle_conflict",
        &[
            "bundle",
            "-o",
            "bad.hipfb",
            "gfx906.co:gfx90a",
            "gfx90a.co:gfx90a:xnack+",
        ],
        &[],
    );
    // LLVM main's amdgpu triples: kept as written, listed and verified like amdgcn ones.
    golden(
        "bundle_amdgpu_triple",
        &[
            "bundle",
            "-o",
            "new2.hipfb",
            "gfx906.co:hipv4-amdgpu9.06-amd-amdhsa-unknown-gfx906",
            "gfx90a.co:hip-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+",
        ],
        &[&["list", "new2.hipfb"], &["verify", "new2.hipfb"]],
    );
    // One target twice, however spelled, is an error (LLVM 22's bundler rule).
    golden(
        "bundle_duplicate_target",
        &[
            "bundle",
            "-o",
            "bad.hipfb",
            "gfx90a.co:hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "gfx90a.co:hip-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+",
        ],
        &[],
    );
    golden(
        "bundle_subarch_mismatch",
        &[
            "bundle",
            "-o",
            "bad.hipfb",
            "gfx906.co:hipv4-amdgpu9.0a-amd-amdhsa--gfx906",
        ],
        &[],
    );
    golden(
        "bundle_needs_id",
        &["bundle", "-o", "bad.hipfb", "notabundle.txt"],
        &[],
    );
    golden(
        "unbundle",
        &[
            "unbundle",
            "app.z.hipfb",
            "-t",
            "gfx90a:xnack-",
            "-o",
            "a.co",
            "-t",
            "gfx1100",
            "-o",
            "b.co",
        ],
        &[
            &["unbundle", "app.hipfb", "-t", "gfx1030", "-o", "c.co"],
            &["unbundle", "lib.hip_fatbin", "-t", "gfx906", "-o", "d.co"],
        ],
    );
    golden(
        "compress",
        &["compress", "app.hipfb", "-o", "c2.hipfb", "--threads", "0"],
        &[
            &[
                "compress",
                "app.hipfb",
                "-o",
                "c3.hipfb",
                "--ccob-version",
                "3",
                "--method",
                "zlib",
                "--level",
                "9",
            ],
            &["list", "--check", "c2.hipfb", "c3.hipfb"],
            &["decompress", "c3.hipfb", "-o", "back.hipfb"],
            &["decompress", "badhash.hipfb", "-o", "never.hipfb"],
            &["list", "back.hipfb"],
        ],
    );
}

#[test]
fn offload_bundler_messages() {
    golden("offload_bundler_help", &["offload-bundler", "--help"], &[]);
    golden(
        "offload_bundler_errors",
        &["offload-bundler", "-list", "-input=app.hipfb"],
        &[
            &["offload-bundler", "-type=o", "-inputt=app.hipfb"],
            &[
                "offload-bundler",
                "-type=o",
                "-input=truncated.hipfb",
                "-list",
            ],
            &[
                "offload-bundler",
                "-type=o",
                "-input=badhash.hipfb",
                "-targets=hipv4-amdgcn-amd-amdhsa--gfx906",
                "-output=x",
                "-unbundle",
            ],
            &[
                "offload-bundler",
                "-type=o",
                "-input=app.hipfb",
                "-targets=hipv4-amdgcn-amd-amdhsa--gfx1030",
                "-output=x",
                "-unbundle",
            ],
            &[
                "offload-bundler",
                "-type=o",
                "-input=lib.hip_fatbin",
                "-list",
            ],
        ],
    );
}

/// The `list --json` shape the issue fixes: every key present, with its type.
#[test]
fn list_json_shape() {
    let d = tempfile::tempdir().unwrap();
    for (f, bytes) in &fixtures().files {
        std::fs::write(d.path().join(f), bytes).unwrap();
    }
    let out = Command::new(GFXKIT)
        .current_dir(d.path())
        .args([
            "list",
            "--json",
            "lib.hip_fatbin",
            "app.z.hipfb",
            "notabundle.txt",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    assert_eq!(files[0]["path"], "lib.hip_fatbin");
    let bundles = files[0]["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), 2);
    assert_eq!(bundles[0]["offset"], 0);
    assert_eq!(bundles[0]["format"], "uncompressed");
    assert!(bundles[0]["ccob"].is_null());
    assert_eq!(bundles[1]["offset"], 24576);
    assert_eq!(bundles[1]["format"], "ccob");
    let c = &bundles[1]["ccob"];
    assert_eq!(c["version"], 3);
    assert_eq!(c["method"], "zstd");
    assert_eq!(c["uncompressed_size"], 22980);
    // Not decompressed by a plain listing: the hash is unknown.
    assert!(c["hash_ok"].is_null());
    for b in bundles {
        let entries = b["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 5);
        let e = &entries[2];
        assert_eq!(e["id"], "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        assert_eq!(e["kind"], "hipv4");
        assert_eq!(e["triple"], "amdgcn-amd-amdhsa-");
        assert_eq!(e["target_id"], "gfx90a:xnack+");
        assert_eq!(e["offset"], 8192);
        assert_eq!(e["size"], 5000);
        let host = &entries[0];
        assert_eq!(host["kind"], "host");
        assert!(host["target_id"].is_null());
        assert_eq!(host["size"], 0);
    }
    assert!(files[2]["bundles"].as_array().unwrap().is_empty());
    // --check decompresses and fills hash_ok.
    let out = Command::new(GFXKIT)
        .current_dir(d.path())
        .args(["list", "--json", "--check", "app.z.hipfb"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"][0]["bundles"][0]["ccob"]["hash_ok"], true);
    // Old spellings are listed as stored, with canonical parts beside them.
    let legacy = write_bundle(
        &[
            ("host-x86_64-unknown-linux", b""),
            ("hip-amdgcn-amd-amdhsa-gfx906", b"x"),
        ],
        1,
    )
    .unwrap();
    std::fs::write(d.path().join("legacy.hipfb"), legacy).unwrap();
    let out = Command::new(GFXKIT)
        .current_dir(d.path())
        .args(["list", "--json", "legacy.hipfb"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &v["files"][0]["bundles"][0]["entries"];
    assert_eq!(e[0]["id"], "host-x86_64-unknown-linux");
    assert_eq!(e[0]["canonical_id"], "host-x86_64-unknown-linux--");
    assert_eq!(e[1]["id"], "hip-amdgcn-amd-amdhsa-gfx906");
    assert_eq!(e[1]["kind"], "hip");
    assert_eq!(e[1]["triple"], "amdgcn-amd-amdhsa-");
    assert_eq!(e[1]["target_id"], "gfx906");
}

/// Damaged inputs (truncated at, or with a bit flipped at, positions spread over the file)
/// give an answer or an error, never a panic or a signal.
#[test]
fn damaged_inputs_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let files = &fixtures().files;
    let get = |n: &str| files.iter().find(|(f, _)| f == n).unwrap().1.clone();
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for src in [get("app.hipfb"), get("app.z.hipfb"), get("lib.hip_fatbin")] {
        let step = (src.len() / 40).max(1);
        for pos in (0..src.len()).step_by(step).chain([1, 7, 24, 31, 33, 40]) {
            if pos < src.len() {
                cases.push(src[..pos].to_vec());
                let mut flipped = src.clone();
                flipped[pos] ^= 1 << (pos % 8);
                cases.push(flipped);
            }
        }
    }
    let f = d.path().join("damaged");
    let commands: [&[&str]; 5] = [
        &["list", "damaged"],
        &["list", "--check", "--json", "damaged"],
        &["verify", "damaged"],
        &["extract", "damaged", "-o", "x"],
        &["offload-bundler", "-list", "-type=o", "-input=damaged"],
    ];
    for (i, bytes) in cases.iter().enumerate() {
        std::fs::write(&f, bytes).unwrap();
        for args in commands {
            let out = Command::new(GFXKIT)
                .current_dir(d.path())
                .args(args)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0..=2)) && !err.contains("panicked"),
                "case {i} ({} bytes), gfxkit {args:?}: {:?}\n{err}",
                bytes.len(),
                out.status
            );
        }
    }
}

#[test]
fn unbundle_matches_like_clang_and_writes_allowed_missing_targets_empty() {
    // Each entry serves the first compatible request still waiting: the xnack- entry serves
    // the xnack- request, the xnack+ entry the sramecc+:xnack+ one (code with sramecc left
    // open runs either way); nothing serves gfx1030, which --allow-missing writes empty.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.hipfb"), synthetic()).unwrap();
    let run = |args: &[&str]| {
        Command::new(GFXKIT)
            .current_dir(d.path())
            .args(args)
            .output()
            .unwrap()
    };
    let read = |n: &str| std::fs::read(d.path().join(n)).unwrap();
    let o = run(&[
        "unbundle",
        "s.hipfb",
        "-t",
        "gfx90a:xnack-",
        "-o",
        "m.co",
        "-t",
        "gfx90a:sramecc+:xnack+",
        "-o",
        "p.co",
        "-t",
        "gfx1030",
        "-o",
        "none.co",
        "--allow-missing",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read("m.co"), payload(3, 4000));
    assert_eq!(read("p.co"), payload(2, 5000));
    assert!(read("none.co").is_empty());
    // Without --allow-missing: exit 1, nothing written. Code built for xnack+ or xnack- does
    // not serve a request that leaves xnack open.
    for (t, missing) in [("gfx1030", "gfx1030"), ("gfx90a", "gfx90a")] {
        let o = run(&[
            "unbundle", "s.hipfb", "-t", "gfx906", "-o", "a.co", "-t", t, "-o", "b.co",
        ]);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("no compatible entry for {missing} ")),
            "{err}"
        );
        assert!(!d.path().join("a.co").exists());
    }
}
