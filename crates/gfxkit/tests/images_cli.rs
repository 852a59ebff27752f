//! Container images read as the file system they unpack to, written by the test from the OCI
//! image-spec and the `docker save` layout (no container engine): a clang-19 shared library
//! and Debian's librocrand in two layers with a whiteout and an opaque directory, gzip, zstd
//! and plain layers, an index of two platforms; every command that reads inputs on them,
//! compared with the same command on the libraries themselves; damaged images.

mod common;
mod host_fixtures;

use common::json_stdout;
use gfxkit_testkit::image::{docker_save, oci_layout, tar_of, write_dir, Compress, Entry, Layer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

fn rocrand() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/real/librocrand.so.1.1");
    assert!(
        p.is_file(),
        "{} is missing: run `bash scripts/ensure-real-inputs` (scripts/test does)",
        p.display()
    );
    p
}

struct Built {
    _dir: tempfile::TempDir,
    clang: Vec<u8>,
    rocrand: Vec<u8>,
    lib_clang: PathBuf,
    lib_rocrand: PathBuf,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let (fdir, so) = host_fixtures::build_shared();
        let dir = tempfile::tempdir().unwrap();
        let lib_clang = dir.path().join("libt.so");
        std::fs::copy(&so, &lib_clang).unwrap();
        drop(fdir);
        let lib_rocrand = rocrand();
        Built {
            clang: std::fs::read(&lib_clang).unwrap(),
            rocrand: std::fs::read(&lib_rocrand).unwrap(),
            _dir: dir,
            lib_clang,
            lib_rocrand,
        }
    })
}

/// The base layer: both libraries, a library the next layer deletes, one in a directory it
/// makes opaque, and links.
fn base(b: &Built) -> Vec<Entry> {
    vec![
        Entry::Dir("usr/lib/x86_64-linux-gnu".into()),
        Entry::File(
            "usr/lib/x86_64-linux-gnu/librocrand.so.1.1".into(),
            b.rocrand.clone(),
        ),
        Entry::Symlink(
            "usr/lib/x86_64-linux-gnu/librocrand.so.1".into(),
            "librocrand.so.1.1".into(),
        ),
        Entry::Symlink("lib".into(), "usr/lib".into()),
        Entry::File("usr/lib/x86_64-linux-gnu/libt.so".into(), b.clang.clone()),
        Entry::File(
            "usr/lib/x86_64-linux-gnu/libgone.so".into(),
            b.clang.clone(),
        ),
        Entry::File("opt/rocm/lib/libold.so".into(), b.clang.clone()),
        Entry::File("usr/share/doc/readme".into(), b"text".to_vec()),
    ]
}

fn top(b: &Built) -> Vec<Entry> {
    vec![
        Entry::Whiteout("usr/lib/x86_64-linux-gnu/libgone.so".into()),
        Entry::Opaque("opt/rocm/lib".into()),
        Entry::File("opt/rocm/lib/libnew.so".into(), b.clang.clone()),
    ]
}

const SURVIVORS: [&str; 3] = [
    "/opt/rocm/lib/libnew.so",
    "/usr/lib/x86_64-linux-gnu/librocrand.so.1.1",
    "/usr/lib/x86_64-linux-gnu/libt.so",
];

fn oci(b: &Built, cb: Compress, ct: Compress) -> BTreeMap<String, Vec<u8>> {
    oci_layout(
        &[(
            "linux/amd64",
            vec![
                Layer {
                    entries: base(b),
                    compress: cb,
                },
                Layer {
                    entries: top(b),
                    compress: ct,
                },
            ],
        )],
        "rocm:test",
    )
}

/// The entries (ID, size) of each bundle of a `list --json` file object.
fn bundles(file: &Value) -> Vec<Vec<(String, u64)>> {
    file["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            b["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["id"].as_str().unwrap().to_owned(),
                        e["size"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

fn listed(path: &Path) -> Value {
    let out = gfxkit(&["list", "--json", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_stdout(&out)
}

/// Checks a listing of the image against the listings of the libraries themselves.
fn check_image_listing(image: &Path, layer_digests: &[String]) {
    let b = built();
    let want_clang = bundles(&listed(&b.lib_clang)["files"][0]);
    let want_rocrand = bundles(&listed(&b.lib_rocrand)["files"][0]);
    assert!(!want_clang.is_empty() && !want_rocrand.is_empty());
    let got = listed(image);
    let files = got["files"].as_array().unwrap();
    let mut paths: Vec<String> = files
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    paths.sort();
    let name = image.display().to_string();
    let want: Vec<String> = SURVIVORS.iter().map(|p| format!("{name}!{p}")).collect();
    assert_eq!(paths, want);
    for f in files {
        let p = f["path"].as_str().unwrap();
        let want = if p.ends_with("librocrand.so.1.1") {
            &want_rocrand
        } else {
            &want_clang
        };
        assert_eq!(&bundles(f), want, "{p}");
        let layer = f["layer"].as_str().unwrap();
        assert!(layer_digests.iter().any(|d| d == layer), "{p}: {layer}");
    }
    // libnew.so is in the top layer, the others in the base layer.
    let layer_of = |s: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(s))
            .unwrap()["layer"]
            .clone()
    };
    assert_ne!(layer_of("libnew.so"), layer_of("libt.so"));
    assert_eq!(layer_of("librocrand.so.1.1"), layer_of("libt.so"));
}

fn blob_digests(files: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    files
        .keys()
        .filter_map(|k| k.strip_prefix("blobs/sha256/"))
        .map(|h| format!("sha256:{h}"))
        .collect()
}

#[test]
fn oci_archives_and_directories_list_the_unpacked_file_system() {
    let b = built();
    let d = tempfile::tempdir().unwrap();
    for (i, (cb, ct)) in [
        (Compress::Gzip, Compress::Zstd),
        (Compress::Zstd, Compress::None),
    ]
    .into_iter()
    .enumerate()
    {
        let files = oci(b, cb, ct);
        let archive = d.path().join(format!("image{i}.tar"));
        std::fs::write(&archive, tar_of(&files)).unwrap();
        check_image_listing(&archive, &blob_digests(&files));
        let dir = d.path().join(format!("layout{i}"));
        write_dir(&files, &dir);
        check_image_listing(&dir, &blob_digests(&files));
    }
}

#[test]
fn docker_save_archives_list_the_unpacked_file_system() {
    let b = built();
    let d = tempfile::tempdir().unwrap();
    let files = docker_save(&[base(b), top(b)], "rocm:test");
    let archive = d.path().join("saved.tar");
    std::fs::write(&archive, tar_of(&files)).unwrap();
    // The layers of an old `docker save` go by the digests of their tars (diff_ids).
    let cfg = files
        .iter()
        .find(|(k, _)| k.ends_with(".json") && *k != "manifest.json")
        .unwrap()
        .1;
    let cfg: Value = serde_json::from_slice(cfg).unwrap();
    let diffs: Vec<String> = cfg["rootfs"]["diff_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    check_image_listing(&archive, &diffs);
}

#[test]
fn every_command_reads_images() {
    let b = built();
    let d = tempfile::tempdir().unwrap();
    let files = oci(b, Compress::Gzip, Compress::Gzip);
    let image = d.path().join("image.tar");
    std::fs::write(&image, tar_of(&files)).unwrap();
    let img = image.to_str().unwrap();
    let roc = b.lib_rocrand.to_str().unwrap();
    // list --summary: one image, the targets of both libraries.
    let out = gfxkit(&["list", "--summary", "--json", img]);
    assert!(out.status.success());
    let s = json_stdout(&out);
    assert_eq!(s["packages"].as_array().unwrap().len(), 1);
    assert_eq!(s["packages"][0]["kind"], "image");
    assert_eq!(s["packages"][0]["files"], 3);
    let lib_summary = json_stdout(&gfxkit(&["list", "--summary", "--json", roc]));
    for (t, _) in lib_summary["packages"][0]["targets"].as_object().unwrap() {
        assert!(s["packages"][0]["targets"].get(t).is_some(), "{t}");
    }
    // size: the device bytes of the three files.
    let size_of = |p: &str| json_stdout(&gfxkit(&["size", "--json", p]));
    let img_size = size_of(img);
    let stored = |v: &Value| v["stored"].as_u64().unwrap();
    assert_eq!(
        stored(&img_size),
        stored(&size_of(roc)) + 2 * stored(&size_of(b.lib_clang.to_str().unwrap()))
    );
    // kernels: as many rows as the libraries have.
    let rows = |p: &str| {
        let out = gfxkit(&["kernels", "--json", p]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json_stdout(&out)["kernels"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0)
    };
    assert_eq!(
        rows(img),
        rows(roc) + 2 * rows(b.lib_clang.to_str().unwrap())
    );
    // verify, select, doctor: the image's files are named by their path in it.
    let out = gfxkit(&["verify", img]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("{img}!/opt/rocm/lib/libnew.so"))
    );
    let out = gfxkit(&[
        "select",
        "--device",
        "gfx90a:xnack+",
        &format!("{img}!/usr/lib/x86_64-linux-gnu/librocrand.so.1.1"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = gfxkit(&["doctor", "--json", "--device", "gfx1100", img]);
    let doc = json_stdout(&out);
    assert!(doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["path"] == format!("{img}!/usr/lib/x86_64-linux-gnu/librocrand.so.1.1")));
    // A path through symbolic links opens the file they lead to; a deleted file is not there.
    let via = format!("{img}!/lib/x86_64-linux-gnu/librocrand.so.1");
    let out = gfxkit(&["list", "--json", &via]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        bundles(&json_stdout(&out)["files"][0]),
        bundles(&listed(&b.lib_rocrand)["files"][0])
    );
    let gone = format!("{img}!/usr/lib/x86_64-linux-gnu/libgone.so");
    let out = gfxkit(&["list", &gone]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such member"));
    // A directory holding an image among other files: the image is one input.
    let tree = d.path().join("tree");
    write_dir(&files, &tree.join("layout"));
    std::fs::copy(&b.lib_clang, tree.join("libt.so")).unwrap();
    let out = gfxkit(&["list", "-r", "--json", tree.to_str().unwrap()]);
    let l = json_stdout(&out);
    let paths: Vec<&str> = l["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert!(paths.iter().all(|p| !p.contains("blobs/")), "{paths:?}");
    // Images are not rewritten.
    let out = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        img,
        "-o",
        d.path().join("p.tar").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a container image"));
    assert!(!d.path().join("p.tar").exists());
}

#[test]
fn an_index_of_two_platforms_reads_amd64_unless_platform_says_otherwise() {
    let b = built();
    let d = tempfile::tempdir().unwrap();
    let files = oci_layout(
        &[
            (
                "linux/arm64/v8",
                vec![Layer {
                    entries: vec![Entry::File(
                        "usr/lib/librocrand.so.1.1".into(),
                        b.rocrand.clone(),
                    )],
                    compress: Compress::Zstd,
                }],
            ),
            (
                "linux/amd64",
                vec![Layer {
                    entries: vec![Entry::File("usr/lib/libt.so".into(), b.clang.clone())],
                    compress: Compress::Gzip,
                }],
            ),
        ],
        "multi",
    );
    let image = d.path().join("multi.tar");
    std::fs::write(&image, tar_of(&files)).unwrap();
    let img = image.to_str().unwrap();
    let paths = |extra: &[&str]| {
        let mut args = vec!["list", "--json"];
        args.extend_from_slice(extra);
        args.push(img);
        let out = gfxkit(&args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            {
                let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                v["files"]
                    .as_array()
                    .map(|f| {
                        f.iter()
                            .map(|f| f["path"].as_str().unwrap_or("").to_owned())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            },
        )
    };
    assert_eq!(paths(&[]).2, [format!("{img}!/usr/lib/libt.so")]);
    assert_eq!(
        paths(&["--platform", "linux/arm64"]).2,
        [format!("{img}!/usr/lib/librocrand.so.1.1")]
    );
    let (code, _, _) = paths(&["--platform", "linux/riscv64"]);
    assert_eq!(code, Some(2));
    let out = gfxkit(&["list", "--platform", "linux/riscv64", img]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no image for platform linux/riscv64 (the image has linux/arm64/v8, linux/amd64; choose one with --platform)"),
        "{err}"
    );
    let out = gfxkit(&["list", "--platform", "linux", img]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn damaged_images_give_clear_errors_and_extract_writes_only_below_its_directory() {
    let b = built();
    let d = tempfile::tempdir().unwrap();
    let files = oci(b, Compress::Gzip, Compress::Gzip);
    let layer = files
        .iter()
        .filter(|(k, v)| k.starts_with("blobs/") && v.starts_with(&[0x1f, 0x8b]))
        .max_by_key(|(_, v)| v.len())
        .unwrap()
        .0
        .clone();
    let run = |name: &str, files: &BTreeMap<String, Vec<u8>>, cut: Option<usize>| {
        let p = d.path().join(name);
        let mut bytes = tar_of(files);
        if let Some(c) = cut {
            bytes.truncate(c);
        }
        std::fs::write(&p, bytes).unwrap();
        let out = gfxkit(&["list", p.to_str().unwrap()]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            p,
        )
    };
    // A truncated layer: the image, the blob and the offset.
    let whole = tar_of(&files).len();
    let (code, err, p) = run("cut.tar", &files, Some(whole / 2));
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!("{}!blobs/sha256/", p.display())),
        "{err}"
    );
    assert!(
        err.contains("truncated: need") && err.contains("at offset 0x"),
        "{err}"
    );
    // A manifest naming a missing blob.
    let mut missing = files.clone();
    missing.remove(&layer);
    let (code, err, _) = run("missing.tar", &missing, None);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!("is not in the image (no {layer})")),
        "{err}"
    );
    // A blob whose digest does not match.
    let mut flipped = files.clone();
    let v = flipped.get_mut(&layer).unwrap();
    let n = v.len() / 2;
    v[n] ^= 0x40;
    let (code, err, p) = run("flipped.tar", &flipped, None);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "{}!{layer}: checksum mismatch: the blob's sha256 is",
            p.display()
        )),
        "{err}"
    );
    // Layer entries leaving the root: refused, the rest read; extract writes nothing outside.
    let evil = oci_layout(
        &[(
            "linux/amd64",
            vec![Layer {
                entries: vec![
                    Entry::Raw("../../evil.so".into(), b.clang.clone()),
                    Entry::Raw("/tmp/evil-abs.so".into(), b.clang.clone()),
                    Entry::File("usr/lib/libt.so".into(), b.clang.clone()),
                ],
                compress: Compress::Gzip,
            }],
        )],
        "evil",
    );
    let (code, err, p) = run("evil.tar", &evil, None);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("layer entry \"../../evil.so\" leaves the image's root with '..'"),
        "{err}"
    );
    assert!(
        err.contains("layer entry \"/tmp/evil-abs.so\" is an absolute path"),
        "{err}"
    );
    let out_dir = d.path().join("x/out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = gfxkit(&[
        "extract",
        p.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outside: Vec<_> = std::fs::read_dir(d.path().join("x"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, ["out"]);
    assert!(!Path::new("/tmp/evil-abs.so").exists());
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let e = e.unwrap();
        assert!(e.file_type().unwrap().is_file(), "{:?}", e.path());
    }
}
