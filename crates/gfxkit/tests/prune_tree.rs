//! `prune` of a directory tree on small trees built here: MIOpen `.kdb` and AOTriton `.aks2`
//! files (built by `kernel_db_fixtures.py`) and raw code objects (clang-19) for gfx90a and
//! gfx1100 in aiter's `hsa/<arch>/` layout, beside plain files, a script and a symbolic link.

mod common;
use common::gfxkit;
use gfxkit_testkit::{bundler_unbundle, hip_kernels, HipBuild};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Code objects for gfx90a and gfx1100 (clang-19, unbundled by clang-offload-bundler-19).
fn code_objects(dir: &Path) -> Vec<PathBuf> {
    let src = hip_kernels(3);
    let bundle = HipBuild::new(&src, &["gfx90a", "gfx1100"]).build(dir, "k");
    ["gfx90a", "gfx1100"]
        .iter()
        .map(|a| {
            let out = dir.join(format!("{a}.co"));
            bundler_unbundle(&bundle, &format!("hipv4-amdgcn-amd-amdhsa--{a}"), &out);
            out
        })
        .collect()
}

fn fixture(kind: &str, out: &Path, specs: &[String]) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel_db_fixtures.py");
    let st = Command::new("python3")
        .arg(script)
        .arg(kind)
        .arg(out)
        .args(specs)
        .status()
        .expect("python3 is needed to build kernel-database fixtures");
    assert!(st.success(), "kernel_db_fixtures.py {kind} failed");
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A tree with gfx90a and gfx1100 device code in every database layout.
fn tree(work: &Path) -> PathBuf {
    let cos = code_objects(work);
    let (a, b) = (&cos[0], &cos[1]);
    let t = work.join("tree");
    fixture(
        "kdb",
        &t.join("share/miopen/db/gfx90a68.kdb"),
        &[format!("conv.cl.o|-DX=1|{}", a.display())],
    );
    fixture(
        "kdb",
        &t.join("share/miopen/db/gfx1100.kdb"),
        &[format!("conv.cl.o|-DX=1|{}", b.display())],
    );
    fixture(
        "aks2",
        &t.join("aotriton.images/amd-gfx90a/flash/attn_fwd.aks2"),
        &[format!("attn_fwd/FONLY__a.hsaco|{}", a.display())],
    );
    fixture(
        "aks2",
        &t.join("aotriton.images/amd-gfx110x/flash/attn_fwd.aks2"),
        &[format!("attn_fwd/FONLY__a.hsaco|{}", b.display())],
    );
    // AOTriton's zip packs: uncompressed zips of `.aks2` images.
    for (pack, co) in [("amd-gfx90a", a), ("amd-gfx110x", b)] {
        let img = work.join(format!("{pack}.aks2"));
        fixture(
            "aks2",
            &img,
            &[format!("attn_bwd/FONLY__a.hsaco|{}", co.display())],
        );
        let zip = t.join(format!("aotriton.images/{pack}/flash/attn_bwd.zip"));
        let st = Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile\n\
                 with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED) as z:\n\
                 \x20   z.write(sys.argv[2], 'attn_bwd/FONLY__a.aks2')",
            ])
            .arg(&zip)
            .arg(&img)
            .status()
            .unwrap();
        assert!(st.success());
    }
    for (arch, co) in [("gfx90a", a), ("gfx1100", b)] {
        let d = t.join("aiter_meta/hsa").join(arch);
        write(&d.join("fmha/k.co"), &std::fs::read(co).unwrap());
        write(&d.join("fmha.csv"), b"knl_name,knl_file\nk,fmha/k.co\n");
    }
    write(&t.join("README"), b"a tree\n");
    write(&t.join("bin/run.sh"), b"#!/bin/sh\n");
    std::fs::set_permissions(t.join("bin/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("README", t.join("README.link")).unwrap();
    // Links to what a prune drops: a file, one inside a dropped directory, through a link.
    std::os::unix::fs::symlink("gfx1100.kdb", t.join("share/miopen/db/current.kdb")).unwrap();
    std::os::unix::fs::symlink("gfx1100/fmha/k.co", t.join("aiter_meta/hsa/k1100.co")).unwrap();
    std::os::unix::fs::symlink("k1100.co", t.join("aiter_meta/hsa/latest.co")).unwrap();
    std::os::unix::fs::symlink("../../README", t.join("aiter_meta/hsa/README")).unwrap();
    t
}

/// The permission bits of `path`.
fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// No `.gfxkit-*` temporary (a stage or an old tree) is left in `dir`.
fn no_temporaries(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".gfxkit-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn json(out: &str, err: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
}

#[test]
fn tree_prune_drops_other_architectures_databases_and_copies_the_rest() {
    let work = tempfile::tempdir().unwrap();
    let t = tree(work.path());
    let out = work.path().join("out");
    let (code, o, e) = gfxkit(&[
        "prune",
        "--json",
        "--keep",
        "gfx90a",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{e}");
    let r = json(&o, &e);
    let action = |p: &str| {
        r["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p)
            .unwrap_or_else(|| panic!("{p} not in {r}"))["action"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(action("share/miopen/db/gfx90a68.kdb"), "kept");
    assert_eq!(action("share/miopen/db/gfx1100.kdb"), "dropped");
    assert_eq!(
        action("aotriton.images/amd-gfx90a/flash/attn_fwd.aks2"),
        "kept"
    );
    assert_eq!(
        action("aotriton.images/amd-gfx110x/flash/attn_fwd.aks2"),
        "dropped"
    );
    assert_eq!(
        action("aotriton.images/amd-gfx90a/flash/attn_bwd.zip"),
        "kept"
    );
    assert_eq!(
        action("aotriton.images/amd-gfx110x/flash/attn_bwd.zip"),
        "dropped"
    );
    assert_eq!(action("aiter_meta/hsa/gfx90a/fmha/k.co"), "kept");
    assert_eq!(action("aiter_meta/hsa/gfx1100"), "dropped");
    assert_eq!(action("aiter_meta/hsa/gfx1100/fmha.csv"), "dropped");
    assert_eq!(action("README"), "copied");
    assert_eq!(action("README.link"), "copied");
    assert_eq!(action("aiter_meta/hsa/README"), "copied");
    // Links to dropped paths go with them: no dangling link is written.
    for link in [
        "share/miopen/db/current.kdb",
        "aiter_meta/hsa/k1100.co",
        "aiter_meta/hsa/latest.co",
    ] {
        assert_eq!(action(link), "dropped", "{link}");
        assert!(std::fs::symlink_metadata(out.join(link)).is_err(), "{link}");
    }

    // What was written.
    for kept in [
        "share/miopen/db/gfx90a68.kdb",
        "aotriton.images/amd-gfx90a/flash/attn_fwd.aks2",
        "aotriton.images/amd-gfx90a/flash/attn_bwd.zip",
        "aiter_meta/hsa/gfx90a/fmha/k.co",
        "aiter_meta/hsa/gfx90a/fmha.csv",
        "aiter_meta/hsa/README",
        "README",
        "bin/run.sh",
    ] {
        assert!(
            std::fs::read(out.join(kept)).unwrap() == std::fs::read(t.join(kept)).unwrap(),
            "{kept}"
        );
    }
    for gone in [
        "share/miopen/db/gfx1100.kdb",
        "aotriton.images/amd-gfx110x/flash/attn_fwd.aks2",
        "aotriton.images/amd-gfx110x/flash/attn_bwd.zip",
        "aiter_meta/hsa/gfx1100",
    ] {
        assert!(!out.join(gone).exists(), "{gone}");
    }
    let link = std::fs::symlink_metadata(out.join("README.link")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(out.join("README.link")).unwrap(),
        Path::new("README")
    );
    assert_eq!(mode_of(&out.join("bin/run.sh")), 0o755);
    // No temporary directory is left beside the output.
    no_temporaries(work.path());

    // The text report names each database file and the dropped directory.
    let out2 = work.path().join("out2");
    let (code, o, e) = gfxkit(&[
        "prune",
        "--drop",
        "gfx90a",
        t.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{e}");
    assert!(
        o.contains("dropped   aiter_meta/hsa/gfx90a/ (directory: 2 files"),
        "{o}"
    );
    assert!(
        o.contains("kept      share/miopen/db/gfx1100.kdb (miopen-kdb: gfx1100)"),
        "{o}"
    );
    assert!(out2.join("aiter_meta/hsa/gfx1100/fmha.csv").exists());
    // Kept this time, the links are written as they were.
    assert_eq!(
        std::fs::read(out2.join("aiter_meta/hsa/latest.co")).unwrap(),
        std::fs::read(t.join("aiter_meta/hsa/gfx1100/fmha/k.co")).unwrap()
    );
}

/// Every file under `root` (relative path, and the bytes or the link target), for comparing
/// trees.
fn contents(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.push((rel, t.display().to_string().into_bytes()));
            } else if m.is_dir() {
                stack.push(p);
            } else {
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn tree_prune_in_place_replaces_the_tree_with_what_o_writes() {
    let work = tempfile::tempdir().unwrap();
    let t = tree(work.path());
    let out = work.path().join("out");
    let (code, _, e) = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{e}");
    let (code, o, e) = gfxkit(&[
        "prune",
        "--json",
        "--keep",
        "gfx90a",
        t.to_str().unwrap(),
        "--in-place",
    ]);
    assert_eq!(code, 0, "{e}");
    let r = json(&o, &e);
    assert_eq!(
        r["output"].as_str().unwrap(),
        std::fs::canonicalize(&t).unwrap().to_str().unwrap()
    );
    assert_eq!(contents(&t), contents(&out));
    assert_eq!(mode_of(&t.join("bin/run.sh")), 0o755);
    // Neither the stage nor the old tree is left beside it.
    no_temporaries(work.path());
    // A refusal leaves the tree as it was.
    let before = contents(&t);
    let (code, _, e) = gfxkit(&[
        "prune",
        "--keep",
        "gfx942",
        t.to_str().unwrap(),
        "--in-place",
    ]);
    assert_eq!(code, 2, "{e}");
    assert_eq!(contents(&t), before);
}

#[test]
fn tree_prune_refusals_write_nothing() {
    let work = tempfile::tempdir().unwrap();
    let t = tree(work.path());
    let ts = t.to_str().unwrap();
    let out = work.path().join("out");
    let os = out.to_str().unwrap();

    // A target the tree has no code for: the result would hold no device code.
    let (code, _, e) = gfxkit(&["prune", "--keep", "gfx942", ts, "-o", os]);
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("would leave no device code"), "{e}");
    assert!(!out.exists());
    // Unless asked for.
    let (code, _, e) = gfxkit(&["prune", "--keep", "gfx942", "--allow-empty", ts, "-o", os]);
    assert_eq!(code, 0, "{e}");
    assert!(out.join("README").exists() && !out.join("aiter_meta/hsa/gfx90a").exists());

    // The output exists and is not empty / is inside the tree.
    let (code, _, e) = gfxkit(&["prune", "--keep", "gfx90a", ts, "-o", os]);
    assert_eq!(code, 2);
    assert!(e.contains("exists and is not empty"), "{e}");
    let inside = t.join("sub/out");
    let (code, _, e) = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        ts,
        "-o",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("inside the input tree"), "{e}");

    // A dry run writes nothing and reports the same.
    let dry = work.path().join("dry");
    let (code, o, e) = gfxkit(&["prune", "--keep", "gfx90a", "--dry-run", "--json", ts]);
    assert_eq!(code, 0, "{e}");
    let r = json(&o, &e);
    assert_eq!(r["dry_run"], true);
    assert!(r["size_after"].as_u64() < r["size_before"].as_u64());
    assert!(!dry.exists());

    // A .kdb whose name says another processor than its code objects: an error naming it.
    let bad = work.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::copy(
        t.join("share/miopen/db/gfx90a68.kdb"),
        bad.join("gfx1030.kdb"),
    )
    .unwrap();
    let (code, _, e) = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        bad.to_str().unwrap(),
        "-o",
        work.path().join("bad-out").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        e.contains("gfx1030.kdb") && e.contains("the file name says gfx1030"),
        "{e}"
    );
    assert!(!work.path().join("bad-out").exists());

    // One file a prune keeps or drops whole, named on its own (a raw code object, a .kdb):
    // refused with what it holds and the way to prune it, nothing written, whether the
    // selection would keep or drop it. Before, a raw code object was copied as "no device code".
    for (file, holds) in [
        (
            "aiter_meta/hsa/gfx90a/fmha/k.co",
            "a code-object file for gfx90a",
        ),
        (
            "share/miopen/db/gfx1100.kdb",
            "a miopen-kdb file for gfx1100",
        ),
    ] {
        for keep in ["gfx90a", "gfx1100"] {
            let one = work.path().join("one");
            let (code, _, e) = gfxkit(&[
                "prune",
                "--keep",
                keep,
                t.join(file).to_str().unwrap(),
                "-o",
                one.to_str().unwrap(),
            ]);
            assert_eq!(code, 2, "{file} {keep}: {e}");
            assert!(
                e.contains(holds) && e.contains("prune --keep ... DIR"),
                "{e}"
            );
            assert!(!one.exists());
        }
    }
    // Recompressing one is not a prune: it is read as before.
    let (code, _, e) = gfxkit(&[
        "recompress",
        "--uncompressed",
        "--dry-run",
        t.join("aiter_meta/hsa/gfx90a/fmha/k.co").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{e}");

    // A truncated code object: a clear error naming the file, nothing written.
    let co = t.join("aiter_meta/hsa/gfx90a/fmha/k.co");
    let bytes = std::fs::read(&co).unwrap();
    std::fs::write(&co, &bytes[..bytes.len() / 2]).unwrap();
    let o2 = work.path().join("o2");
    let (code, _, e) = gfxkit(&["prune", "--keep", "gfx90a", ts, "-o", o2.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(e.contains("k.co"), "{e}");
    assert!(!o2.exists());
}

/// `kpack split -r --overlays` of the same tree: every database file (and aiter's processor
/// directories with their maps) in the overlay of the processor its content names, a link
/// with the file it leads to, the rest in `generic/`.
#[test]
fn tree_split_into_overlays_places_database_files_by_content() {
    let work = tempfile::tempdir().unwrap();
    let t = tree(work.path());
    let out = work.path().join("split");
    let (code, o, e) = gfxkit(&[
        "kpack",
        "split",
        "-r",
        t.to_str().unwrap(),
        "--group",
        "t",
        "--overlays",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{o}{e}");
    let r = json(&o, &e);
    let placed = |p: &str| -> Vec<String> {
        ["generic", "gfx90a", "gfx1100"]
            .iter()
            .filter(|d| std::fs::symlink_metadata(out.join(d).join(p)).is_ok())
            .map(|d| d.to_string())
            .collect()
    };
    for (p, want) in [
        ("share/miopen/db/gfx90a68.kdb", "gfx90a"),
        ("share/miopen/db/gfx1100.kdb", "gfx1100"),
        ("share/miopen/db/current.kdb", "gfx1100"),
        ("aotriton.images/amd-gfx90a/flash/attn_fwd.aks2", "gfx90a"),
        ("aotriton.images/amd-gfx110x/flash/attn_bwd.zip", "gfx1100"),
        ("aiter_meta/hsa/gfx90a/fmha/k.co", "gfx90a"),
        ("aiter_meta/hsa/gfx90a/fmha.csv", "gfx90a"),
        ("aiter_meta/hsa/gfx1100/fmha.csv", "gfx1100"),
        ("aiter_meta/hsa/latest.co", "gfx1100"),
        ("README", "generic"),
        ("README.link", "generic"),
        ("bin/run.sh", "generic"),
    ] {
        assert_eq!(placed(p), [want], "{p}");
    }
    let files = r["overlay_files"].as_array().unwrap();
    let zip = files
        .iter()
        .find(|f| f["path"] == "aotriton.images/amd-gfx90a/flash/attn_bwd.zip")
        .unwrap();
    assert_eq!(zip["kind"], "aotriton-pack");
    assert_eq!(zip["targets"][0], "gfx90a");
    assert_eq!(mode_of(&out.join("generic/bin/run.sh")), 0o755);
}
