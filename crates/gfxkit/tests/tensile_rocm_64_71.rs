//! rocBLAS 6.4 and hipBLASLt 7.1 as Debian sid ships them (`librocblas4` 6.4.4, `libhipblaslt1`
//! 7.1.1), on the files of them `scripts/ensure-real-inputs` unpacks into `target/real/sid`:
//! every index, rocBLAS's arch-neutral fallback shards, all of gfx803 and gfx1010 (rocBLAS) and
//! of gfx1151 (hipBLASLt, with `libhipblaslt.so.1`). The routes a library takes to its kernels
//! are walked here by a reader of the indexes of the test's own (`rmpv`), as the libraries'
//! sources state them, and compared with what gfxkit answers and what its prune keeps.

use std::collections::BTreeSet;
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

fn gfxkit(args: &[&str]) -> Output {
    gfxkit_with(args, &[])
}

/// `gfxkit ARGS` with the variables `env` set (the libraries' own variables unset otherwise).
fn gfxkit_with(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gfxkit"));
    c.args(args)
        .env_remove("GFXKIT_PROGRESS_DELAY_MS")
        .env_remove("ROCBLAS_TENSILE_LIBPATH")
        .env_remove("HIPBLASLT_TENSILE_LIBPATH");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run gfxkit")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

/// How [`tree`] makes a file of the copy.
#[derive(Clone, Copy)]
enum Copy {
    /// A hard link (a real file, for a prune, which copies symbolic links as links), else a
    /// copy.
    Hard,
    /// A symbolic link (a user's install with files missing looks like this).
    Symbolic,
}

/// A copy of `src` in `dst`, its files made as `how` says, leaving out the files `skip` says.
fn tree(src: &Path, dst: &Path, how: Copy, skip: &dyn Fn(&str) -> bool) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let to = dst.join(&name);
        if e.file_type().unwrap().is_dir() {
            tree(&e.path(), &to, how, skip);
        } else if !skip(&name) {
            let from = std::fs::canonicalize(e.path()).unwrap();
            match how {
                Copy::Hard => {
                    if std::fs::hard_link(&from, &to).is_err() {
                        std::fs::copy(&from, &to).unwrap();
                    }
                }
                Copy::Symbolic => std::os::unix::fs::symlink(&from, &to).unwrap(),
            }
        }
    }
}

fn copy_tree(src: &Path, dst: &Path, skip: &dyn Fn(&str) -> bool) {
    tree(src, dst, Copy::Hard, skip)
}

fn link_tree(src: &Path, dst: &Path, skip: &dyn Fn(&str) -> bool) {
    tree(src, dst, Copy::Symbolic, skip)
}

/// The `database` unit of the first file of a `select --json` output.
fn database_unit(o: &Output) -> serde_json::Value {
    json(o)["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["format"] == "database")
        .unwrap_or_else(|| panic!("no database unit: {}", out(o)))
        .clone()
}

/// The files a `database` unit of `select --json` names.
fn unit_files(unit: &serde_json::Value) -> BTreeSet<String> {
    unit["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect()
}

// --- An index reader of the test's own ------------------------------------------------------

fn field<'v>(v: &'v rmpv::Value, key: &str) -> Option<&'v rmpv::Value> {
    v.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

/// Every `Placeholder` value below a library node.
fn placeholders(node: &rmpv::Value, out: &mut BTreeSet<String>) {
    match node {
        rmpv::Value::Map(entries) => {
            if field(node, "type").and_then(|t| t.as_str()) == Some("Placeholder") {
                if let Some(v) = field(node, "value").and_then(|v| v.as_str()) {
                    out.insert(v.to_owned());
                }
            }
            for (_, v) in entries {
                placeholders(v, out);
            }
        }
        rmpv::Value::Array(items) => items.iter().for_each(|v| placeholders(v, out)),
        _ => {}
    }
}

/// Whether a hardware predicate may hold for `processor` with `cu` compute units (any count
/// when `None`).
fn may_hold(p: &rmpv::Value, processor: &str, cu: Option<u64>) -> bool {
    let t = field(p, "type").and_then(|t| t.as_str()).unwrap_or("");
    let v = field(p, "value");
    match t {
        "TruePred" => true,
        "AMDGPU" => v.is_some_and(|v| may_hold(v, processor, cu)),
        "Processor" => v.and_then(|v| v.as_str()) == Some(processor),
        "CUCount" => cu.map_or(true, |c| v.and_then(|v| v.as_u64()) == Some(c)),
        "And" => v
            .and_then(|v| v.as_array())
            .is_some_and(|a| a.iter().all(|p| may_hold(p, processor, cu))),
        other => panic!("predicate {other} not expected in these indexes"),
    }
}

/// The hardware rows of an index: (predicate, placeholders below it).
fn rows(index: &Path) -> Vec<(rmpv::Value, BTreeSet<String>)> {
    let bytes = std::fs::read(index).unwrap();
    let v = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
    let lib = field(&v, "library").unwrap();
    assert_eq!(
        field(lib, "type").and_then(|t| t.as_str()),
        Some("Hardware")
    );
    field(lib, "rows")
        .and_then(|r| r.as_array())
        .unwrap()
        .iter()
        .map(|r| {
            let mut p = BTreeSet::new();
            placeholders(field(r, "library").unwrap(), &mut p);
            (field(r, "predicate").unwrap().clone(), p)
        })
        .collect()
}

/// What rocBLAS 6.4 (`rocblas`) or hipBLASLt 7.1 opens in `dir` for `processor`, as their
/// sources state it: the lazy index, `Kernels.so-000-<P>.hsaco`, and for every placeholder of a
/// row the processor can select its `.dat` and code objects (rocBLAS: `.co`, `.hsaco` or, for a
/// fallback, `_<P>.hsaco`; hipBLASLt: `.co`; each with its XNACK spellings). Files absent are
/// collected apart.
fn routes(dir: &Path, processor: &str, rocblas: bool) -> (BTreeSet<String>, BTreeSet<String>) {
    routes_with(dir, processor, rocblas, None)
}

/// [`routes`] for a device of `cu` compute units (any count when `None`).
fn routes_with(
    dir: &Path,
    processor: &str,
    rocblas: bool,
    cu: Option<u64>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let index = format!("TensileLibrary_lazy_{processor}.dat");
    let mut have = BTreeSet::new();
    let mut missing = BTreeSet::new();
    let exists = |n: &str| dir.join(n).exists();
    let first = |names: Vec<String>| names.into_iter().find(|n| exists(n));
    let spellings = |name: &str| -> Vec<String> {
        let (stem, ext) = name.rsplit_once('.').unwrap();
        vec![
            name.to_owned(),
            format!("{stem}-xnack-.{ext}"),
            format!("{stem}-xnack+.{ext}"),
        ]
    };
    assert!(exists(&index), "{index} in {}", dir.display());
    have.insert(index.clone());
    match first(spellings(&format!("Kernels.so-000-{processor}.hsaco"))) {
        Some(k) => have.insert(k),
        None => missing.insert(format!("Kernels.so-000-{processor}.hsaco")),
    };
    for (pred, shards) in rows(&dir.join(&index)) {
        if !may_hold(&pred, processor, cu) {
            continue;
        }
        for v in shards {
            let dat = format!("{v}.dat");
            if exists(&dat) {
                have.insert(dat);
            } else {
                missing.insert(dat);
            }
            let code = if rocblas {
                let source = if v.contains("fallback") {
                    format!("{v}_{processor}.hsaco")
                } else {
                    format!("{v}.hsaco")
                };
                let found: Vec<String> = [
                    first(spellings(&format!("{v}.co"))),
                    first(spellings(&source)),
                ]
                .into_iter()
                .flatten()
                .collect();
                if found.is_empty() {
                    missing.insert(format!("{v}: no code object"));
                }
                found
            } else {
                let found: Vec<String> = first(spellings(&format!("{v}.co"))).into_iter().collect();
                if found.is_empty() {
                    missing.insert(format!("{v}.co"));
                }
                found
            };
            have.extend(code);
        }
    }
    (have, missing)
}

const ROCBLAS: &str = "rocblas/4.4.1/library";
const HIPBLASLT: &str = "hipblaslt/library";

// --- rocBLAS 6.4 ------------------------------------------------------------------------------

/// gfx803's and gfx1010's part of rocBLAS 6.4's directory, as links (the other processors'
/// indexes left out: their shards are not unpacked).
fn rocblas_two(dst: &Path) -> PathBuf {
    let lib = dst.join("rocblas/4.4.1/library");
    copy_tree(&sid().join(ROCBLAS), &lib, &|n| {
        n.starts_with("TensileLibrary_lazy_") && !n.contains("gfx803") && !n.contains("gfx1010")
    });
    lib
}

#[test]
fn rocblas_64_every_route_a_processor_can_take_is_opened_and_kept_by_prune() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = rocblas_two(&tmp.path().join("in"));
    // gfx803's index: [Processor, TruePred]; gfx1010's: [TruePred] only.
    assert_eq!(rows(&lib.join("TensileLibrary_lazy_gfx803.dat")).len(), 2);
    assert_eq!(rows(&lib.join("TensileLibrary_lazy_gfx1010.dat")).len(), 1);
    for p in ["gfx803", "gfx1010"] {
        let (files, missing) = routes(&lib, p, true);
        assert!(missing.is_empty(), "{p}: {missing:?}");
        assert!(
            files.iter().filter(|f| f.contains("_fallback")).count() >= 100,
            "{p}: the 50 fallback shards and their code: {files:?}"
        );
        // select names exactly these files.
        let o = gfxkit(&["select", "--json", "--device", p, s(&lib)]);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
        let j = json(&o);
        let unit = &j["files"][0]["bundles"][0];
        let named = unit_files(unit);
        assert_eq!(named, files, "{p}");
    }
    // A processor the package has no index for: rocBLAS aborts at start-up.
    let o = gfxkit(&["doctor", "--device", "gfx1151", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("rocBLAS aborts at start-up: no index for gfx1151"),
        "{}",
        out(&o)
    );

    // The prune keeps every route of the kept processor: same files reachable, catch-all rows
    // and fallback shards included; the other processor's files are gone.
    for (keep, gone) in [("gfx803", "gfx1010"), ("gfx1010", "gfx803")] {
        let pruned = tmp.path().join(format!("out-{keep}"));
        let o = gfxkit(&[
            "prune",
            "--keep",
            keep,
            s(&tmp.path().join("in")),
            "-o",
            s(&pruned),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
        let plib = pruned.join(ROCBLAS);
        assert_eq!(
            routes(&plib, keep, true),
            routes(&lib, keep, true),
            "--keep {keep}"
        );
        assert_eq!(
            rows(&plib.join(format!("TensileLibrary_lazy_{keep}.dat"))).len(),
            rows(&lib.join(format!("TensileLibrary_lazy_{keep}.dat"))).len()
        );
        assert!(!plib
            .join(format!("TensileLibrary_lazy_{gone}.dat"))
            .exists());
        let o = gfxkit(&["doctor", "--device", keep, s(&plib)]);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
        let o = gfxkit(&["verify", "-r", s(&plib)]);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    }
}

#[test]
fn rocblas_64_a_missing_shard_or_index_fails_every_checker() {
    let tmp = tempfile::tempdir().unwrap();
    // The fallback shards' gfx1010 code gone: problem types without a tuned shard fail.
    let lib = tmp.path().join("no-fallback");
    link_tree(&rocblas_two(&tmp.path().join("whole")), &lib, &|n| {
        n.contains("_fallback_gfx1010")
    });
    let o = gfxkit(&["doctor", "--device", "gfx1010", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("_fallback_gfx1010.hsaco"), "{}", out(&o));
    let o = gfxkit(&["check", "--require", "gfx1010", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let o = gfxkit(&["select", "--device", "gfx1010", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let o = gfxkit(&["verify", "-r", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("_fallback_gfx1010.hsaco is missing"),
        "{}",
        out(&o)
    );
    // gfx803's own shards gone, its index left.
    let lib = tmp.path().join("no-shards");
    link_tree(&rocblas_two(&tmp.path().join("whole2")), &lib, &|n| {
        n.starts_with("TensileLibrary_Type_") && n.contains("gfx803") && !n.contains("fallback")
    });
    let o = gfxkit(&["doctor", "--device", "gfx803", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let o = gfxkit(&["check", "--require", "gfx803", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    // The index gone: rocBLAS aborts.
    let lib = tmp.path().join("no-index");
    link_tree(&rocblas_two(&tmp.path().join("whole3")), &lib, &|n| {
        n.starts_with("TensileLibrary_lazy_gfx1010")
    });
    let o = gfxkit(&["doctor", "--device", "gfx1010", s(&lib)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("rocBLAS aborts at start-up"),
        "{}",
        out(&o)
    );
}

/// A lazy index inside a package is checked against the members beside it, as one on disk is
/// against its directory: the real layout in a zip verifies, and the same layout without
/// gfx1010's fallback shards fails naming them, as `verify -r` of it unpacked does.
#[test]
fn rocblas_64_in_a_package_is_verified_against_its_members() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    rocblas_two(&whole);
    let zipped = tmp.path().join("rocblas-4.4.1-py3-none-any.whl");
    gfxkit_testkit::zip_tree(&whole, &zipped);
    let o = gfxkit(&["verify", "--json", s(&zipped)]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        gfxkit_testkit::missing_findings(&json(&o), "TensileLibrary_lazy_gfx1010.dat").is_empty()
    );

    let lacking = tmp.path().join("lacking");
    link_tree(&whole, &lacking, &|n| n.contains("_fallback_gfx1010"));
    let zipped = tmp.path().join("lacking-4.4.1-py3-none-any.whl");
    gfxkit_testkit::zip_tree(&lacking, &zipped);
    let o = gfxkit(&["verify", "--json", s(&zipped)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let in_package = gfxkit_testkit::missing_findings(&json(&o), "TensileLibrary_lazy_gfx1010.dat");
    assert!(
        in_package
            .iter()
            .any(|m| m.contains("_fallback_gfx1010.hsaco is missing")),
        "{in_package:?}"
    );
    let o = gfxkit(&["verify", "-r", "--json", s(&lacking)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert_eq!(
        in_package,
        gfxkit_testkit::missing_findings(&json(&o), "TensileLibrary_lazy_gfx1010.dat")
    );
    // gfx803's index lacks nothing there.
    assert!(
        gfxkit_testkit::missing_findings(&json(&o), "TensileLibrary_lazy_gfx803.dat").is_empty()
    );

    // The library directory itself zipped (its files at the package's root), with a shard's
    // code replaced by another's: judged as the directory, file by file, finding for finding.
    let lib = lacking.join(ROCBLAS);
    let (victim, other) = (
        "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx803.co",
        "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx803.co",
    );
    std::fs::remove_file(lib.join(victim)).unwrap();
    std::fs::copy(lib.join(other), lib.join(victim)).unwrap();
    let (zipped, in_tree, in_package) = verified_failing_as_package(&lib, "at-root");
    let judged = verdicts(&in_package, &zipped);
    for (file, finding) in [
        (
            "TensileLibrary_lazy_gfx1010.dat",
            "_fallback_gfx1010.hsaco is missing",
        ),
        (
            victim.replace(".co", ".dat").as_str(),
            "solutions have no function symbol in",
        ),
    ] {
        assert!(
            judged
                .iter()
                .any(|v| v.starts_with(&format!("{file} false")) && v.contains(finding)),
            "{file}: {judged:?}"
        );
    }
    assert_eq!(judged, verdicts(&in_tree, &lib));
}

/// The files a `lacks` message names: those quoted and the `and N more`.
fn lacking(message: &str) -> (Vec<String>, usize) {
    let list = message
        .split_once(" lacks ")
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("{message}"));
    let list = list.split(" (").next().unwrap();
    let (quoted, more) = match list.rsplit_once(" and ") {
        Some((q, m)) => (q, m.trim_end_matches(" more").parse::<usize>().unwrap()),
        None => (list, 0),
    };
    let quoted: Vec<String> = quoted.split(", ").map(str::to_owned).collect();
    let n = quoted.len() + more;
    (quoted, n)
}

#[test]
fn rocblas_64_a_device_is_judged_by_the_rows_of_its_cu_count() {
    // gfx90a's index: [Processor && CUCount == 104, Processor, TruePred]; its shards are not
    // unpacked, so every file a device of a count can reach is missing: what gfxkit names
    // missing is what that count reaches.
    let lib = sid().join(ROCBLAS);
    let index = lib.join("TensileLibrary_lazy_gfx90a.dat");
    assert_eq!(rows(&index).len(), 3);
    let tmp = tempfile::tempdir().unwrap();
    let only = tmp.path().join("rocblas/4.4.1/library");
    link_tree(&lib, &only, &|n| {
        n.starts_with("TensileLibrary_lazy_") && !n.contains("gfx90a")
    });
    let mut counts = Vec::new();
    for cu in [None, Some(104), Some(110)] {
        let (_, expected) = routes_with(&only, "gfx90a", true, cu);
        let n = cu.map(|c| c.to_string());
        let mut args = vec!["doctor", "--json", "--device", "gfx90a"];
        if let Some(n) = &n {
            args.extend(["--cu-count", n.as_str()]);
        }
        args.push(s(&only));
        let o = gfxkit(&args);
        assert_eq!(o.status.code(), Some(1), "{}", out(&o));
        let j = json(&o);
        assert_eq!(
            j["cu_counts"]["gfx90a"].as_u64(),
            cu,
            "the count judged is reported: {j}"
        );
        let why = j["files"][0]["missing"]["gfx90a"]
            .as_str()
            .unwrap()
            .to_owned();
        let (quoted, total) = lacking(&why);
        assert_eq!(total, expected.len(), "{cu:?}: {why}");
        assert_eq!(
            quoted.iter().any(|f| f.contains("_CU104_")),
            cu != Some(110),
            "{why}"
        );
        counts.push(total);
    }
    // 104 CUs reach what any count reaches (one CU row, for 104); 110 fewer: not the CU104 row.
    assert_eq!(counts[0], counts[1]);
    assert!(counts[2] < counts[0], "{counts:?}");

    // With --device auto the count comes from the topology (simd_count / simd_per_cu), and
    // select takes it too.
    let sys = tmp.path().join("machine");
    let node = sys.join("sys/class/kfd/kfd/topology/nodes/1");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(
        node.join("properties"),
        "simd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\ncapability 0\nvendor_id 4098\n",
    )
    .unwrap();
    let o = gfxkit(&[
        "doctor",
        "--json",
        "--sysfs-root",
        s(&sys),
        "--rocm",
        "7.2",
        s(&only),
    ]);
    let j = json(&o);
    let device = j["devices"][0].as_str().unwrap().to_owned();
    assert_eq!(j["cu_counts"][&device].as_u64(), Some(110), "{j}");
    let (_, total) = lacking(j["files"][0]["missing"][&device].as_str().unwrap());
    assert_eq!(total, counts[2]);
    let o = gfxkit(&[
        "select",
        "--json",
        "--device",
        "gfx90a",
        "--cu-count",
        "110",
        s(&only),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let j = json(&o);
    assert_eq!(j["cu_count"].as_u64(), Some(110));
    let (_, total) = lacking(j["files"][0]["bundles"][0]["reason"].as_str().unwrap());
    assert_eq!(total, counts[2]);
}

// --- hipBLASLt 7.1 ----------------------------------------------------------------------------

/// `libhipblaslt.so.1` and gfx1151's part of its directory (its index, the mapping, the
/// extension-op library and the transform kernels), as links.
fn hipblaslt(dst: &Path) -> PathBuf {
    link_tree(&sid(), dst, &|n| {
        n.starts_with("TensileLibrary_lazy_") && !n.contains("gfx1151")
    });
    std::fs::remove_dir_all(dst.join("rocblas")).unwrap();
    dst.to_path_buf()
}

#[test]
fn hipblaslt_71_is_one_library_with_its_database() {
    let tmp = tempfile::tempdir().unwrap();
    let root = hipblaslt(&tmp.path().join("lib"));
    let lib = root.join(HIPBLASLT);
    let (files, missing) = routes(&lib, "gfx1151", false);
    assert!(missing.is_empty(), "{missing:?}");

    // One library, judged with its database: not one per shard.
    let o = gfxkit(&["doctor", "--json", "--device", "gfx1151", s(&root)]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let j = json(&o);
    let judged = j["files"].as_array().unwrap();
    assert_eq!(judged.len(), 1, "{j}");
    assert!(judged[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("libhipblaslt.so.1"));
    // Debian's transform kernels are gfx908's only: named, not a failure.
    let notes = judged[0]["notes"]["gfx1151"].to_string();
    assert!(
        notes.contains("hipblasltTransform.hsaco has no code for gfx1151"),
        "{notes}"
    );
    // No index for gfx942: hipBLASLt loads and its calls fail (it does not abort).
    let o = gfxkit(&["doctor", "--device", "gfx942", s(&root)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("hipBLASLt loads, then every GEMM call fails: no index for gfx942"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("1 library with device code"),
        "{}",
        out(&o)
    );

    // select names what hipBLASLt opens: its index, the one mapping, the start-up code
    // object, the shards of its rows and its extension ops.
    let o = gfxkit(&[
        "select",
        "--json",
        "--device",
        "gfx1151",
        s(&root.join("libhipblaslt.so.1")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let named = unit_files(&database_unit(&o));
    let mut expected = files.clone();
    expected.insert("TensileLiteLibrary_lazy_Mapping.dat".into());
    expected.insert("extop_gfx1151.co".into());
    assert_eq!(named, expected);

    // verify: the library through its database, the mapping as hipBLASLt 7.1 has it.
    let o = gfxkit(&["verify", s(&root.join("libhipblaslt.so.1"))]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = gfxkit(&["verify", s(&lib.join("TensileLibrary_lazy_gfx1151.dat"))]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    // The one mapping of every processor is read as such: here only gfx1151's libraries are
    // unpacked, and only the others' are reported.
    let o = gfxkit(&[
        "verify",
        "--json",
        s(&lib.join("TensileLiteLibrary_lazy_Mapping.dat")),
    ]);
    let j = json(&o);
    let problems = j["files"][0]["problems"].as_array().unwrap();
    assert!(!problems.is_empty());
    for p in problems {
        let m = p["message"].as_str().unwrap();
        assert!(!m.contains("gfx1151") && !m.contains("architecture"), "{m}");
    }
    let o = gfxkit(&["list", s(&lib.join("TensileLiteLibrary_lazy_Mapping.dat"))]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(!out(&o).contains("not resolved"), "{}", out(&o));
    // A listing names a row's first files, --files all of them.
    let index = lib.join("TensileLibrary_lazy_gfx1151.dat");
    let o = gfxkit(&["list", s(&index)]);
    assert!(out(&o).contains("46 shards  92 files:"), "{}", out(&o));
    let all = gfxkit(&["list", "--files", s(&index)]);
    assert!(out(&all).len() > out(&o).len() + 92 * 40);

    // A shard's code gone: the processor fails, naming it.
    let broken = tmp.path().join("broken");
    let victim = files
        .iter()
        .find(|f| f.ends_with(".co") && f.starts_with("TensileLibrary_"))
        .unwrap()
        .clone();
    link_tree(&root, &broken, &|n| n == victim);
    let o = gfxkit(&["doctor", "--device", "gfx1151", s(&broken)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains(&victim), "{}", out(&o));
    let o = gfxkit(&["verify", s(&broken.join("libhipblaslt.so.1"))]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
}

/// Each file's verdict in `verify --json`: its path from `usr/` or the package's root on,
/// whether it is ok, and its findings' messages with the same paths cut.
fn verdicts(o: &Output, root: &Path) -> BTreeSet<String> {
    let root = format!("{}", root.display());
    json(o)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let cut = |t: &str| {
                t.replace(&format!("{root}!"), "")
                    .replace(&format!("{root}/"), "")
            };
            let problems: Vec<String> = f["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| cut(p["message"].as_str().unwrap()))
                .collect();
            format!(
                "{} {} {problems:?}",
                cut(f["path"].as_str().unwrap()),
                f["ok"]
            )
        })
        .collect()
}

/// `tree` zipped into a wheel named `name` beside it, and `verify --json` of the tree (`-r`)
/// and of the wheel, both failing (exit code 1): the wheel and the two answers.
fn verified_failing_as_package(tree: &Path, name: &str) -> (PathBuf, Output, Output) {
    let wheel = tree.with_file_name(format!("{name}-7.1.1-py3-none-any.whl"));
    gfxkit_testkit::zip_tree(tree, &wheel);
    let in_tree = gfxkit(&["verify", "-r", "--json", s(tree)]);
    let in_package = gfxkit(&["verify", "--json", s(&wheel)]);
    assert_eq!(in_tree.status.code(), Some(1), "{}", out(&in_tree));
    assert_eq!(in_package.status.code(), Some(1), "{}", out(&in_package));
    (wheel, in_tree, in_package)
}

/// hipBLASLt in a package is judged as the same files in a tree: the library by the database
/// beside it (ok with it, failing without it), each index and the mapping by the members
/// beside them.
#[test]
fn hipblaslt_71_in_a_package_is_judged_as_in_a_tree() {
    let tmp = tempfile::tempdir().unwrap();
    // As hipblaslt() makes it, the library once (a tree's walk reads a file once, a package
    // has each name's bytes).
    let tree = tmp.path().join("tree");
    link_tree(&sid(), &tree, &|n| {
        (n.starts_with("TensileLibrary_lazy_") && !n.contains("gfx1151"))
            || n == "libhipblaslt.so.1.1"
    });
    std::fs::remove_dir_all(tree.join("rocblas")).unwrap();
    // The shared mapping names the libraries of processors not unpacked here: one finding
    // per library, in both.
    let (wheel, in_tree, in_package) = verified_failing_as_package(&tree, "hipblaslt");
    let judged = verdicts(&in_package, &wheel);
    assert!(
        judged.iter().any(|v| v
            .starts_with("hipblaslt/library/TensileLiteLibrary_lazy_Mapping.dat false")
            && v.contains("is not there")),
        "{judged:?}"
    );
    assert!(
        judged
            .iter()
            .any(|v| v.starts_with("libhipblaslt.so.1 true")),
        "{judged:?}"
    );
    assert_eq!(judged, verdicts(&in_tree, &tree));

    // The library alone: hipBLASLt loads, then every GEMM call fails.
    let alone = tmp.path().join("alone");
    link_tree(&sid(), &alone, &|n| n == "libhipblaslt.so.1.1");
    std::fs::remove_dir_all(alone.join("rocblas")).unwrap();
    std::fs::remove_dir_all(alone.join("hipblaslt")).unwrap();
    let (wheel, in_tree, in_package) = verified_failing_as_package(&alone, "alone");
    assert!(
        out(&in_package).contains("every GEMM call fails"),
        "{}",
        out(&in_package)
    );
    assert_eq!(verdicts(&in_package, &wheel), verdicts(&in_tree, &alone));
}

#[test]
fn hipblaslt_71_looks_for_a_processor_directory_only_without_its_variable() {
    // The directory's files moved into `library/gfx1151/` (the layout of later releases).
    let tmp = tempfile::tempdir().unwrap();
    let root = hipblaslt(&tmp.path().join("flat"));
    let nested = tmp.path().join("nested");
    link_tree(&root, &nested, &|_| false);
    let flat_lib = root.join(HIPBLASLT);
    let lib = nested.join(HIPBLASLT);
    std::fs::remove_dir_all(&lib).unwrap();
    link_tree(&flat_lib, &lib.join("gfx1151"), &|_| false);
    assert!(lib.join("gfx1151/TensileLibrary_lazy_gfx1151.dat").exists());
    assert!(!lib.join("TensileLibrary_lazy_gfx1151.dat").exists());
    let so = nested.join("libhipblaslt.so.1");
    // Beside the library: the processor's directory is looked into.
    let o = gfxkit(&["doctor", "--device", "gfx1151", s(&so)]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    // HIPBLASLT_TENSILE_LIBPATH naming the same directory is used as given: no index there.
    let env = [("HIPBLASLT_TENSILE_LIBPATH", lib.as_path())];
    let o = gfxkit_with(&["doctor", "--device", "gfx1151", s(&so)], &env);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("hipBLASLt loads, then every GEMM call fails: no index for gfx1151"),
        "{}",
        out(&o)
    );
    // Naming the flat directory, it loads.
    let env = [("HIPBLASLT_TENSILE_LIBPATH", flat_lib.as_path())];
    let o = gfxkit_with(&["doctor", "--device", "gfx1151", s(&so)], &env);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));

    // The database directory reached through a symbolic link (an install assembled from
    // links): read once, its note said once, the same files opened.
    let linked = tmp.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    for name in ["libhipblaslt.so.1", "hipblaslt"] {
        std::os::unix::fs::symlink(root.join(name), linked.join(name)).unwrap();
    }
    let o = gfxkit(&["doctor", "--json", "--device", "gfx1151", s(&linked)]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let j = json(&o);
    assert_eq!(j["files"].as_array().unwrap().len(), 1, "{j}");
    assert_eq!(
        j["files"][0]["notes"]["gfx1151"].as_array().unwrap().len(),
        1,
        "{j}"
    );
    let files = |dir: &Path| {
        let o = gfxkit(&["select", "--json", "--device", "gfx1151", s(dir)]);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
        unit_files(&database_unit(&o)).len()
    };
    assert_eq!(files(&linked), files(&root));
}

/// The code-object versions of the files in `dir` whose names contain `needle`, as
/// `gfxkit list --check --json` reads them (a compressed shard decoded whole).
fn versions_of(dir: &Path, needle: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.contains(needle) || !(name.ends_with(".co") || name.ends_with(".hsaco")) {
            continue;
        }
        let v = json(&gfxkit(&["list", "--check", "--json", s(&p)]));
        for b in v["files"][0]["bundles"].as_array().unwrap() {
            let ccob = b["ccob"]["version"].as_u64().map(|v| format!("ccob v{v}"));
            for e in b["entries"].as_array().unwrap() {
                if let Some(cov) = e["code_object_version"].as_u64() {
                    out.insert((name.clone(), format!("V{cov}")));
                }
            }
            if let Some(c) = &ccob {
                out.insert((name.clone(), c.clone()));
            }
        }
    }
    out
}

/// Under `--rocm`, a kernel database is judged by what that release's runtime loads of the
/// files the library opens for the device: Debian's hipBLASLt 7.1 opens, for gfx1151,
/// `Kernels.so-000-gfx1151.hsaco` (a code object V6, which ROCm 6.2 refuses: it loads up to
/// V5) and 46 compressed shards (CCOB v2, which ROCm 6.1's HIP runtime cannot unpack); its
/// own release loads all of them. `doctor` and `check` say so, with the files and the
/// remedies of the release; the versions are those `list --check` reads in the files.
#[test]
fn hipblaslt_71_database_under_older_releases() {
    let lib = sid().join("libhipblaslt.so.1");
    let dir = sid().join("hipblaslt/library");
    let versions = versions_of(&dir, "gfx1151");
    assert!(versions.contains(&("Kernels.so-000-gfx1151.hsaco".into(), "V6".into())));
    let shards: BTreeSet<&String> = versions
        .iter()
        .filter(|(_, v)| v == "ccob v2")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(shards.len(), 46, "{versions:?}");
    let doctor = |rocm: &str| {
        json(&gfxkit(&[
            "doctor",
            "--json",
            "--device",
            "gfx1151",
            "--rocm",
            rocm,
            s(&lib),
        ]))
    };
    let file = |v: &serde_json::Value| v["files"][0].clone();
    let f = file(&doctor("7.1"));
    assert_eq!(f["runs_on"]["gfx1151"], true, "{f}");
    let f = file(&doctor("6.2"));
    assert_eq!(f["runs_on"]["gfx1151"], false, "{f}");
    let why = f["missing"]["gfx1151"].as_str().unwrap();
    assert!(
        why.starts_with(
            "its kernel database does not load: code object V6: ROCm 6.2 loads up to V5: "
        ) && why.ends_with("hipblaslt/library/Kernels.so-000-gfx1151.hsaco"),
        "{why}"
    );
    let remedies: Vec<&str> = f["remedies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert!(
        remedies.contains(&"rebuild with -mcode-object-version=5")
            && remedies.contains(&"upgrade ROCm to at least 6.3"),
        "{remedies:?}"
    );
    let f = file(&doctor("6.1"));
    let why = f["missing"]["gfx1151"].as_str().unwrap();
    assert!(
        why.contains(
            "CCOB v2: ROCm 6.1's HIP runtime unpacks no compressed bundles (v2 from 6.2): "
        ) && why.contains(&format!(" and {} more files", shards.len() - 1)),
        "{why}"
    );
    // check --require follows the same rule.
    let o = gfxkit(&[
        "check",
        "--json",
        "--require",
        "gfx1151",
        "--rocm",
        "6.2",
        s(&lib),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let v = json(&o);
    assert!(
        v.to_string()
            .contains("code object V6: ROCm 6.2 loads up to V5"),
        "{v}"
    );
    let o = gfxkit(&[
        "check",
        "--json",
        "--require",
        "gfx1151",
        "--rocm",
        "7.1",
        s(&lib),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    // select: the database unit selects nothing on 6.2, each refused file passed over.
    let select = |rocm: &str| {
        json(&gfxkit(&[
            "select",
            "--json",
            "--device",
            "gfx1151",
            "--rocm",
            rocm,
            s(&lib),
        ]))
    };
    let v = select("6.2");
    let unit = &v["files"][0]["bundles"][0];
    assert!(unit["selected"].is_null(), "{unit}");
    let passed: Vec<&str> = unit["passed_over"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["entry"].as_str().unwrap())
        .collect();
    assert_eq!(passed, ["Kernels.so-000-gfx1151.hsaco"], "{unit}");
    let v = select("7.1");
    let unit = &v["files"][0]["bundles"][0];
    assert_eq!(
        unit["selected"], "hipv4-amdgcn-amd-amdhsa--gfx1151",
        "{unit}"
    );
}

/// The function symbols each solution of shard index `dat` must find: its `kernelName`
/// (hipBLASLt's TensileLite, where solutions differing in launch settings share a kernel), else
/// its `name`, read by the test's own reader.
fn solution_kernels(dat: &Path) -> BTreeSet<String> {
    let v = rmpv::decode::read_value(&mut &std::fs::read(dat).unwrap()[..]).unwrap();
    field(&v, "solutions")
        .and_then(|s| s.as_array())
        .expect("a solutions array")
        .iter()
        .map(|s| {
            field(s, "kernelName")
                .or_else(|| field(s, "name"))
                .and_then(|n| n.as_str())
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The kernel names `gfxkit kernels` finds in a code file.
fn kernel_names(code: &Path) -> BTreeSet<String> {
    let o = gfxkit(&["kernels", "--json", s(code)]);
    json(&o)["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn lazy_shards_are_verified_and_listed_with_the_kernels_of_their_code() {
    let root = sid();
    let rocblas = root.join("rocblas/4.4.1/library");
    let hipblaslt = root.join("hipblaslt/library");
    // Every shard unpacked here (of gfx803, of gfx1010, arch-neutral, of gfx1151) as built:
    // its solutions' kernels are in the code its library loads for it.
    let shards: Vec<PathBuf> = [&rocblas, &hipblaslt]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("TensileLibrary_") && !n.contains("_lazy_") && n.ends_with(".dat")
        })
        .collect();
    assert!(shards.len() > 100, "{}", shards.len());
    let mut args = vec!["verify", "--json"];
    args.extend(shards.iter().map(|p| s(p)));
    let o = gfxkit(&args);
    assert!(o.status.success(), "{}", out(&o));
    // `kernels` lists a shard's solutions in its code: hipBLASLt's by their kernelName, which
    // is not their name.
    let shard = hipblaslt.join(
        "TensileLibrary_BB_BB_HA_Bias_Aux_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1151.dat",
    );
    let o = gfxkit(&["kernels", "--json", s(&shard)]);
    assert!(o.status.success(), "{}", out(&o));
    let k = json(&o);
    let sols = k["solutions"].as_array().unwrap();
    let wanted = solution_kernels(&shard);
    let code = shard.with_extension("co");
    let there = kernel_names(&code);
    assert!(!sols.is_empty());
    for r in sols {
        let kernel = r["kernel_name"].as_str().unwrap();
        assert!(wanted.contains(kernel) && there.contains(kernel), "{r}");
        assert_ne!(r["name"], r["kernel_name"], "{r}");
        assert_eq!(r["processor"], "gfx1151");
        assert_eq!(
            r["code_object"],
            code.file_name().unwrap().to_str().unwrap()
        );
        assert!(r["present"] == true && r["vgpr_count"].is_u64(), "{r}");
    }
    // A shard whose code is another shard's (a stale or misplaced file): every solution it
    // reaches lacks its kernel, which its library fails to find when it runs it.
    let cases = [
        (
            &rocblas,
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx803",
            ".co",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx803.co",
            "gfx803",
        ),
        (
            &rocblas,
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback",
            "_gfx1010.hsaco",
            "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1010.hsaco",
            "gfx1010",
        ),
        (
            &hipblaslt,
            "TensileLibrary_BB_BB_HA_Bias_Aux_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1151",
            ".co",
            "TensileLibrary_BB_BB_HA_Bias_Aux_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1151.co",
            "gfx1151",
        ),
    ];
    for (dir, stem, code, other, processor) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("library");
        copy_tree(dir, &lib, &|_| false);
        let target = lib.join(format!("{stem}{code}"));
        std::fs::remove_file(&target).unwrap();
        std::fs::copy(dir.join(other), &target).unwrap();
        let dat = lib.join(format!("{stem}.dat"));
        let o = gfxkit(&["verify", "--json", s(&dat)]);
        assert_eq!(o.status.code(), Some(1), "{stem}: {}", out(&o));
        let problems = json(&o)["files"][0]["problems"].clone();
        let messages: Vec<&str> = problems
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["message"].as_str().unwrap())
            .collect();
        let [message] = messages[..] else {
            panic!("{stem}: {messages:?}")
        };
        let prefix = format!("row 0 ({processor}): ");
        let rest = message
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{message}"));
        let (count, rest) = rest.split_once(" of ").unwrap();
        let (total, rest) = rest
            .split_once(" solutions have no function symbol in ")
            .unwrap();
        assert_eq!(count, total, "{message}");
        assert!(count.parse::<usize>().unwrap() > 0, "{message}");
        assert!(rest.starts_with(&format!("{stem}{code}")), "{message}");
        // The kernels named are the shard's own, and none is in the code put in its place.
        let (_, quoted) = rest.split_once(": ").unwrap();
        let wanted = solution_kernels(&dir.join(format!("{stem}.dat")));
        let there = kernel_names(&target);
        let named: Vec<&str> = quoted.split(" and ").next().unwrap().split(", ").collect();
        for n in named {
            assert!(wanted.contains(n) && !there.contains(n), "{n} in {message}");
        }
        // The same directory in a package: its shard member is judged by the symbols of the
        // member in its code's place, with the same finding.
        let wheel = tempfile::tempdir().unwrap();
        let zipped = wheel.path().join("tree-1.0-py3-none-any.whl");
        let member = format!("{}!library/{stem}.dat", s(&zipped));
        // The package made of the directory as it is now, and the shard member's verification.
        let shard_in_package = || {
            gfxkit_testkit::zip_tree(tmp.path(), &zipped);
            let v = json(&gfxkit(&["verify", "--json", s(&zipped)]));
            v["files"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["path"] == member.as_str())
                .unwrap_or_else(|| panic!("{member}: {v}"))
                .clone()
        };
        let shard = shard_in_package();
        assert_eq!(shard["ok"], false, "{shard}");
        assert_eq!(shard["problems"][0]["message"], message, "{shard}");
        // The shard's own code put back: sound again.
        std::fs::remove_file(&target).unwrap();
        std::fs::copy(dir.join(format!("{stem}{code}")), &target).unwrap();
        let o = gfxkit(&["verify", s(&dat)]);
        assert!(o.status.success(), "{stem}: {}", out(&o));
        let shard = shard_in_package();
        assert_eq!(shard["ok"], true, "{shard}");
    }
}

/// `kernels --json`'s solutions (with `--target`, when given) of `paths`, each as JSON with
/// the index's path from `root` on (the path of the tree or the package, then `/` or `!`).
fn solutions_from(paths: &[&str], target: Option<&str>, root: &Path) -> BTreeSet<String> {
    let mut args = vec!["kernels", "--json"];
    args.extend(paths);
    if let Some(t) = target {
        args.extend(["--target", t]);
    }
    let o = gfxkit(&args);
    assert!(o.status.success(), "{}", out(&o));
    let cut = s(root).len() + 1;
    json(&o)["solutions"]
        .as_array()
        .unwrap_or_else(|| panic!("no solutions: {}", out(&o)))
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let index = r["index"].as_str().unwrap()[cut..].to_owned();
            r["index"] = index.into();
            r.to_string()
        })
        .collect()
}

/// A lazy library in a package (rocBLAS 6.4 and hipBLASLt 7.1, whose solutions are all in
/// shards) lists the solutions of every shard for each processor that loads it, found in the
/// members that are its code, as the same files on disk do: row for row, kernel for kernel.
#[test]
fn lazy_shards_in_a_package_list_their_solutions_as_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    copy_tree(&sid(), &tree, &|n| {
        n.starts_with("libhipblaslt.so")
            || (n.starts_with("TensileLibrary_lazy_")
                && !n.contains("gfx803")
                && !n.contains("gfx1010")
                && !n.contains("gfx1151"))
    });
    let wheel = tmp.path().join("lazy-1.0-py3-none-any.whl");
    gfxkit_testkit::zip_tree(&tree, &wheel);
    for target in [None, Some("gfx1151"), Some("gfx1010")] {
        let on_disk = solutions_from(&["-r", s(&tree)], target, &tree);
        let in_package = solutions_from(&[s(&wheel)], target, &wheel);
        let present = on_disk
            .iter()
            .filter(|r| r.contains(r#""present":true"#))
            .count();
        // Every processor unpacked here has shards whose code is there.
        let processors: BTreeSet<&str> = ["gfx803", "gfx1010", "gfx1151"]
            .into_iter()
            .filter(|p| {
                on_disk
                    .iter()
                    .any(|r| r.contains(&format!(r#""processor":"{p}""#)))
            })
            .collect();
        match target {
            None => assert_eq!(processors.len(), 3, "{processors:?}"),
            Some(t) => assert_eq!(processors, BTreeSet::from([t])),
        }
        assert!(
            present > 100 && present == on_disk.len(),
            "{target:?}: {present} of {}",
            on_disk.len()
        );
        assert_eq!(in_package, on_disk, "{target:?}");
    }
}
