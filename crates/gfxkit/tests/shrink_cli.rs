//! `gfxkit prune`, `recompress` and `size` from the command line: the safety rules (`-o` may
//! not name the input, `--in-place` replaces only after verification, `--dry-run` writes
//! nothing, a failure leaves the input untouched), conversions that clang-offload-bundler-19
//! reads back, and the size report.

use gfxkit_testkit::{llvm_tool, run_ok, HipBuild};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Bundles {
    dir: tempfile::TempDir,
    /// Uncompressed, four targets.
    plain: PathBuf,
    /// CCOB v2 zstd, three targets.
    packed: PathBuf,
}

fn bundles() -> &'static Bundles {
    static B: OnceLock<Bundles> = OnceLock::new();
    B.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let src = gfxkit_testkit::hip_kernels(4);
        let plain = HipBuild::new(
            &src,
            &["gfx90a:xnack+", "gfx90a:xnack-", "gfx1030", "gfx906"],
        )
        .build(dir.path(), "plain");
        let packed = HipBuild::new(&src, &["gfx90a", "gfx1030", "gfx1100"])
            .compressed()
            .build(dir.path(), "packed");
        Bundles { dir, plain, packed }
    })
}

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

/// [`gfxkit`] with one environment variable set.
fn gfxkit_with_env(args: &[&str], var: &str, value: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .env(var, value)
        .output()
        .expect("run gfxkit")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn scratch(name: &str, from: &Path) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    std::fs::copy(from, &p).unwrap();
    (d, p)
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".gfxkit-"))
        .collect()
}

fn clang_list(p: &Path) -> Vec<String> {
    let o = run_ok(
        Command::new(llvm_tool("clang-offload-bundler"))
            .args(["-list", "-type=o"])
            .arg(format!("-input={}", p.display())),
    );
    let mut v: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

fn clang_unbundle(p: &Path, id: &str, out: &Path) -> Vec<u8> {
    run_ok(
        Command::new(llvm_tool("clang-offload-bundler"))
            .args(["-unbundle", "-type=o"])
            .arg(format!("-input={}", p.display()))
            .arg(format!("-targets={id}"))
            .arg(format!("-output={}", out.display())),
    );
    std::fs::read(out).unwrap()
}

#[test]
fn output_may_not_name_the_input() {
    let (d, p) = scratch("b.hipfb", &bundles().plain);
    let before = std::fs::read(&p).unwrap();
    let dotted = d.path().join(".").join("b.hipfb");
    let link = d.path().join("link.hipfb");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    for out in [&p, &dotted, &link] {
        let o = gfxkit(&["prune", "--keep", "gfx90a", s(&p), "-o", s(out)]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("names the input") && err.contains("--in-place"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert!(leftovers(d.path()).is_empty());
}

#[test]
fn in_place_replaces_after_verification_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let b = bundles();
    let (d, p) = scratch("b.hipfb", &b.plain);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
    let before = std::fs::read(&p).unwrap();
    let o = gfxkit(&["prune", "--keep", "gfx1030", "--in-place", s(&p)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = std::fs::read(&p).unwrap();
    assert!(after.len() < before.len());
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o751
    );
    assert!(leftovers(d.path()).is_empty());
    assert_eq!(
        clang_list(&p),
        [
            "hipv4-amdgcn-amd-amdhsa--gfx1030",
            "host-x86_64-unknown-linux--"
        ]
    );
    // The kept entry is byte-identical to the original's.
    let id = "hipv4-amdgcn-amd-amdhsa--gfx1030";
    assert_eq!(
        clang_unbundle(&p, id, &d.path().join("new.co")),
        clang_unbundle(&b.plain, id, &d.path().join("old.co"))
    );
}

#[test]
fn dry_run_writes_nothing() {
    let (d, p) = scratch("b.hipfb", &bundles().plain);
    let before = std::fs::read(&p).unwrap();
    let out = d.path().join("out.hipfb");
    let o = gfxkit(&[
        "prune",
        "--drop",
        "gfx906",
        "--dry-run",
        s(&p),
        "-o",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("dry run") && text.contains("dropped gfx906"),
        "{text}"
    );
    assert!(!out.exists());
    let o = gfxkit(&[
        "prune",
        "--drop",
        "gfx906",
        "--dry-run",
        "--in-place",
        s(&p),
    ]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert!(leftovers(d.path()).is_empty());
}

#[test]
fn a_failure_leaves_the_input_untouched() {
    let b = bundles();
    // Two bundles back to back; the second's CCOB hash is damaged.
    let mut data = std::fs::read(&b.plain).unwrap();
    data.resize(data.len().div_ceil(4096) * 4096, 0);
    let mut packed = std::fs::read(&b.packed).unwrap();
    packed[16] ^= 0xff;
    data.extend_from_slice(&packed);
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("two.hipfb");
    std::fs::write(&p, &data).unwrap();
    let o = gfxkit(&["prune", "--keep", "gfx1030", "--in-place", s(&p)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("hash"), "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), data);
    assert!(leftovers(d.path()).is_empty());
    // Not a bundle, ELF or archive at all.
    std::fs::write(&p, b"hello world").unwrap();
    let o = gfxkit(&["prune", "--keep", "gfx1030", "--in-place", s(&p)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no known magic"));
    assert_eq!(std::fs::read(&p).unwrap(), b"hello world");
}

#[test]
fn recompress_round_trips_and_clang_reads_the_result() {
    let b = bundles();
    let d = tempfile::tempdir().unwrap();
    let z = d.path().join("z.hipfb");
    let o = gfxkit(&[
        "recompress",
        "--ccob-version",
        "2",
        "--method",
        "zstd",
        s(&b.plain),
        "-o",
        s(&z),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(&z).unwrap().len() < std::fs::metadata(&b.plain).unwrap().len());
    assert!(std::fs::read(&z)
        .unwrap()
        .starts_with(b"CCOB\x02\x00\x01\x00"));
    assert_eq!(clang_list(&z), clang_list(&b.plain));
    for id in clang_list(&b.plain)
        .iter()
        .filter(|i| !i.starts_with("host"))
    {
        assert_eq!(
            clang_unbundle(&z, id, &d.path().join("a.co")),
            clang_unbundle(&b.plain, id, &d.path().join("b.co")),
            "{id}"
        );
    }
    // Back to uncompressed: the original bytes.
    let u = d.path().join("u.hipfb");
    let o = gfxkit(&["recompress", "--uncompressed", s(&z), "-o", s(&u)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&u).unwrap(), std::fs::read(&b.plain).unwrap());
    // v3 and zlib verify and report their encoding.
    for (args, enc) in [
        (&["--ccob-version", "3"][..], "ccob-v3-zstd"),
        (&["--method", "zlib", "--level", "9"][..], "ccob-v2-zlib"),
    ] {
        let out = d.path().join("c.hipfb");
        let mut v = vec!["recompress", "--json"];
        v.extend_from_slice(args);
        v.extend_from_slice(&[s(&b.packed), "-o", s(&out)]);
        let o = gfxkit(&v);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["regions"][0]["bundles"][0]["encoding_after"], enc);
        assert_eq!(j["size_after"], std::fs::metadata(&out).unwrap().len());
    }
}

#[test]
fn size_reports_per_arch_file_and_bundle_with_prune_savings() {
    let b = bundles();
    let o = gfxkit(&["size", "--json", "--keep", "gfx90a", s(b.dir.path())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["files"].as_array().unwrap().len(), 2);
    assert_eq!(j["bundles"].as_array().unwrap().len(), 2);
    let plain_len = std::fs::metadata(&b.plain).unwrap().len();
    let packed_len = std::fs::metadata(&b.packed).unwrap().len();
    assert_eq!(j["stored"], plain_len + packed_len);
    let archs = j["archs"].as_array().unwrap();
    let sum: u64 = archs.iter().map(|a| a["stored"].as_u64().unwrap()).sum();
    // The rows and the bytes in no entry (headers, padding) add up to the total exactly.
    assert_eq!(
        sum + j["overhead"].as_u64().unwrap(),
        plain_len + packed_len
    );
    assert!(j["overhead"].as_u64().unwrap() > 0);
    // A star only where a compressed bundle's bytes are shared out: the uncompressed bundle's
    // rows are exact.
    let text = String::from_utf8_lossy(&gfxkit(&["size", s(&b.plain)]).stdout).into_owned();
    assert!(!text.contains('*'), "{text}");
    assert!(text.contains("bundle headers and padding"), "{text}");
    let row = |name: &str| archs.iter().find(|a| a["arch"] == name).unwrap().clone();
    assert_eq!(row("gfx1030")["entries"], 2);
    assert_eq!(row("gfx1030")["kept"], false);
    assert_eq!(row("gfx90a:xnack+")["kept"], true);
    assert_eq!(row("gfx90a")["kept"], true);
    // The plain bundle's saving is exact: what prune actually removes is close to it.
    let plain_saves = j["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("plain.hipfb"))
        .unwrap()["prune_saves"]
        .as_u64()
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("p.hipfb");
    let o = gfxkit(&["prune", "--keep", "gfx90a", s(&b.plain), "-o", s(&out)]);
    assert!(o.status.success());
    let removed = plain_len - std::fs::metadata(&out).unwrap().len();
    assert!(
        removed.abs_diff(plain_saves) <= 8192,
        "{removed} vs {plain_saves}"
    );
    for by in ["arch", "file", "bundle"] {
        let o = gfxkit(&["size", "--by", by, s(&b.plain)]);
        assert!(o.status.success());
        let t = String::from_utf8_lossy(&o.stdout);
        assert!(t.contains("total:"), "{t}");
        if by != "arch" {
            assert!(t.contains("plain.hipfb"), "{t}");
        } else {
            assert!(t.contains("gfx906"), "{t}");
        }
    }
}

#[test]
fn recompress_compresses_like_clang_offload_compress() {
    // Same format, method, level and parameters as clang 19's --offload-compress: the same
    // header fields and hash, and a payload within 1% of clang's size (the zstd library
    // versions may differ, so the payload bytes are not compared).
    let src = gfxkit_testkit::hip_kernels(2);
    let archs = ["gfx90a:xnack+", "gfx1030"];
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let build = |dir: &Path, compress: bool| {
        HipBuild {
            source: &src,
            archs: &archs,
            compress,
            extra: &[],
        }
        .build(dir, "same")
    };
    let plain = build(d1.path(), false);
    let packed = build(d2.path(), true);
    let out = d1.path().join("z.hipfb");
    let o = gfxkit(&[
        "recompress",
        "--ccob-version",
        "2",
        s(&plain),
        "-o",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = std::fs::read(&out).unwrap();
    let clangs = std::fs::read(&packed).unwrap();
    // Magic, version, method, uncompressed size and hash agree.
    assert_eq!(ours[..8], clangs[..8]);
    assert_eq!(ours[12..24], clangs[12..24]);
    assert!(
        ours.len().abs_diff(clangs.len()) * 100 <= clangs.len(),
        "{} vs {}",
        ours.len(),
        clangs.len()
    );
    assert_eq!(
        gfxkit_shrink::bundle::decompress(&ours, &Default::default()).unwrap(),
        gfxkit_shrink::bundle::decompress(&clangs, &Default::default()).unwrap()
    );
}

#[test]
fn recompress_and_prune_compress_exactly_like_gfxkit_compress() {
    // One compressor: the CCOB bytes `recompress` and `prune --ccob-version` write equal those
    // of `gfxkit compress` with the same version, method and level.
    let d = tempfile::tempdir().unwrap();
    let plain = &bundles().plain;
    for (version, method, level) in [("2", "zstd", "3"), ("3", "zstd", "9"), ("2", "zlib", "6")] {
        let opts = [
            "--ccob-version",
            version,
            "--method",
            method,
            "--level",
            level,
        ];
        let re = d.path().join(format!("re-{version}-{method}"));
        let co = d.path().join(format!("co-{version}-{method}"));
        let mut a = vec!["recompress"];
        a.extend(opts);
        a.extend([s(plain), "-o", s(&re)]);
        let o = gfxkit(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut a = vec!["compress"];
        a.extend(opts);
        a.extend([s(plain), "-o", s(&co)]);
        let o = gfxkit(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read(&re).unwrap(), std::fs::read(&co).unwrap());
    }
    // Pruned, then compressed, is what compressing the pruned bundle gives.
    let pruned = d.path().join("pruned");
    let packed = d.path().join("pruned.z");
    let o = gfxkit(&["prune", "--keep", "gfx1030", s(plain), "-o", s(&pruned)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = gfxkit(&[
        "prune",
        "--keep",
        "gfx1030",
        "--ccob-version",
        "2",
        s(plain),
        "-o",
        s(&packed),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let co = d.path().join("pruned.co");
    let o = gfxkit(&["compress", s(&pruned), "-o", s(&co)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&packed).unwrap(), std::fs::read(&co).unwrap());
}

#[test]
fn in_place_through_a_symlink_replaces_the_target() {
    let (d, p) = scratch("b.hipfb", &bundles().plain);
    let link = d.path().join("link.hipfb");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    let before = std::fs::metadata(&p).unwrap().len();
    let o = gfxkit(&["prune", "--keep", "gfx906", "--in-place", s(&link)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::metadata(&p).unwrap().len() < before);
    assert!(leftovers(d.path()).is_empty());
}

#[test]
fn a_lowered_uncompressed_limit_refuses_bundles_declaring_more() {
    let b = bundles();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out.hipfb");
    // The whole process follows `--max-uncompressed` (any subcommand, any reader).
    let o = gfxkit(&[
        "decompress",
        "--max-uncompressed",
        "1K",
        s(&b.packed),
        "-o",
        s(&out),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("exceeds the limit of 1024"), "{err}");
    assert!(!out.exists());
    // Or GFXKIT_MAX_UNCOMPRESSED, for recompress and prune alike; the input is not touched.
    let before = std::fs::read(&b.packed).unwrap();
    for args in [
        vec!["recompress", "--uncompressed", s(&b.packed), "-o", s(&out)],
        vec!["prune", "--keep", "gfx90a", s(&b.packed), "-o", s(&out)],
    ] {
        let o = gfxkit_with_env(&args, "GFXKIT_MAX_UNCOMPRESSED", "2KiB");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("exceeds the limit of 2048"), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}");
    }
    assert_eq!(std::fs::read(&b.packed).unwrap(), before);
    // The option wins over the variable; a limit above the size decodes as usual.
    let o = gfxkit_with_env(
        &[
            "decompress",
            "--max-uncompressed",
            "1G",
            s(&b.packed),
            "-o",
            s(&out),
        ],
        "GFXKIT_MAX_UNCOMPRESSED",
        "1K",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A size that is not one is a usage error, named.
    let o = gfxkit_with_env(&["list", s(&b.packed)], "GFXKIT_MAX_UNCOMPRESSED", "12X");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("GFXKIT_MAX_UNCOMPRESSED"), "{err}");
}

#[test]
fn a_prune_that_would_leave_no_device_code_is_refused() {
    let (d, p) = scratch("b.hipfb", &bundles().plain);
    let out = d.path().join("out.hipfb");
    // A target the bundle does not have (a typo for gfx1030, say): refused, nothing written.
    for sel in [["--keep", "gfx1151"], ["--drop", "gfx90a,gfx1030,gfx906"]] {
        let o = gfxkit(&["prune", sel[0], sel[1], s(&p), "-o", s(&out)]);
        assert_eq!(o.status.code(), Some(2), "{sel:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("{} {} would leave no device code", sel[0], sel[1]))
                && err.contains("gfx1030, gfx906, gfx90a:xnack+, gfx90a:xnack-")
                && err.contains("--allow-empty"),
            "{err}"
        );
        assert!(!out.exists(), "{sel:?}");
        // A dry run answers the same.
        let o = gfxkit(&["prune", sel[0], sel[1], s(&p), "--dry-run"]);
        assert_eq!(o.status.code(), Some(2), "{sel:?}");
    }
    assert!(leftovers(d.path()).is_empty());
    // Asked for, it is written: only the host entry is left.
    let o = gfxkit(&[
        "prune",
        "--keep",
        "gfx1151",
        "--allow-empty",
        s(&p),
        "-o",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(clang_list(&out), ["host-x86_64-unknown-linux--"]);
}

#[test]
fn a_kept_target_found_in_no_bundle_is_named() {
    let (d, p) = scratch("b.hipfb", &bundles().plain);
    let out = d.path().join("out.hipfb");
    let o = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a,gfx942",
        "--json",
        s(&p),
        "-o",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("note: --keep gfx942 matches no entry of")
            && err.contains("present: gfx1030, gfx906, gfx90a:xnack+, gfx90a:xnack-"),
        "{err}"
    );
    assert!(!err.contains("gfx90a matches"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["unmatched"], serde_json::json!(["gfx942"]));
    // Every target found: nothing said, an empty list.
    let o = gfxkit(&["prune", "--drop", "gfx906", "--json", s(&p), "--dry-run"]);
    assert!(o.status.success());
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["unmatched"], serde_json::json!([]));
}

/// Twelve copies of the compressed bundle back to back, each at a 4 KiB boundary.
fn twelve_bundles(dir: &Path) -> PathBuf {
    let mut one = std::fs::read(&bundles().packed).unwrap();
    one.resize(one.len().div_ceil(4096) * 4096, 0);
    let p = dir.join("twelve.hipfb");
    std::fs::write(&p, one.repeat(12)).unwrap();
    p
}

#[test]
fn repeated_per_bundle_lines_are_summarised_in_text_output() {
    let d = tempfile::tempdir().unwrap();
    let p = twelve_bundles(d.path());
    // select: one line for the twelve bundles that load the same entry.
    let o = gfxkit(&["select", "--device", "gfx90a:sramecc+:xnack-", s(&p)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("12 of 12 bundles")
            && text.contains("  [0-11] 12 bundles: hipv4-amdgcn-amd-amdhsa--gfx90a (native)"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3, "{text}");
    let o = gfxkit(&["select", "--device", "gfx1151", s(&p)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.contains("[0-11] 12 bundles: none: No compatible code objects found for: gfx1151; nearest present: gfx1100, gfx1030, gfx90a"),
        "{text}"
    );
    // JSON keeps every bundle.
    let o = gfxkit(&["select", "--json", "--device", "gfx90a", s(&p)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["bundles"].as_array().unwrap().len(), 12);
    // prune: one line for the twelve bundles with the same outcome, sizes added up.
    let o = gfxkit(&["prune", "--keep", "gfx90a", "--dry-run", s(&p)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("    bundles 0-11 (12): ccob-v2-zstd ")
            && text.contains("kept host, gfx90a; dropped gfx1030, gfx1100"),
        "{text}"
    );
    assert!(!text.contains("bundle 1 at"), "{text}");
    // Up to eight bundles, each its own line.
    let few = d.path().join("few.hipfb");
    let data = std::fs::read(&p).unwrap();
    std::fs::write(&few, &data[..data.len() / 12 * 3]).unwrap();
    let o = gfxkit(&["select", "--device", "gfx90a", s(&few)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.matches("hipv4-amdgcn-amd-amdhsa--gfx90a (native)")
            .count(),
        3,
        "{text}"
    );
}

#[test]
fn extract_notes_unchecked_hashes_once_per_file() {
    let d = tempfile::tempdir().unwrap();
    let p = twelve_bundles(d.path());
    let out = d.path().join("out");
    // The first device entry: a compressed bundle is decoded only up to it.
    let first = {
        let o = gfxkit(&["list", "--json", s(&bundles().packed)]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["files"][0]["bundles"][0]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["target_id"].as_str().map(str::to_owned))
            .next()
            .unwrap()
    };
    let o = gfxkit(&["extract", "--target", &first, s(&p), "-o", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let notes: Vec<&str> = text.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{text}");
    assert!(
        notes[0].contains(
            "12 compressed bundles (bundle 0 at offset 0x0, bundle 1 at offset 0x1000 and 10 more)"
        ) && notes[0].contains("their hashes were not checked"),
        "{text}"
    );
}
