//! Container images written from the OCI image-spec and the `docker save` layout (no
//! container engine): layers applied with whiteouts and opaque directories, gzip, zstd and
//! plain layers, an index of two platforms, links, and damaged images.

use gfxkit_package::image::{self, MemoryLayout, Platform};
use gfxkit_package::{walk, ErrorKind, MemorySpill, Options};
use gfxkit_testkit::image::{docker_save, oci_layout, tar_of, Compress, Entry, Layer};
use std::collections::BTreeMap;

/// Bytes that start like a shared library (what a walk reads whole).
fn elf(tag: &str) -> Vec<u8> {
    let mut b = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0".to_vec();
    b.extend_from_slice(tag.as_bytes());
    b
}

fn f(p: &str) -> Entry {
    Entry::File(p.into(), elf(p))
}

/// The base layer and a layer that deletes, replaces and hides.
fn two_layers() -> (Vec<Entry>, Vec<Entry>) {
    let base = vec![
        Entry::Dir("usr".into()),
        Entry::Dir("usr/lib".into()),
        f("usr/lib/libfoo.so"),
        f("usr/lib/libbar.so"),
        f("usr/lib/libkeep.so.1"),
        Entry::Symlink("usr/lib/libkeep.so".into(), "libkeep.so.1".into()),
        Entry::Dir("opt/rocm/lib".into()),
        f("opt/rocm/lib/librocold.so"),
        f("opt/rocm/lib/sub/libdeep.so"),
        f("opt/app/libgone.so"),
        Entry::File("usr/share/doc.txt".into(), b"text".to_vec()),
    ];
    let top = vec![
        Entry::Whiteout("usr/lib/libfoo.so".into()),
        Entry::Whiteout("opt/app".into()),
        Entry::Opaque("opt/rocm/lib".into()),
        f("opt/rocm/lib/libnew.so"),
        Entry::File("usr/lib/libbar.so".into(), elf("replaced")),
    ];
    (base, top)
}

const SURVIVORS: [&str; 4] = [
    "/opt/rocm/lib/libnew.so",
    "/usr/lib/libbar.so",
    "/usr/lib/libkeep.so.1",
    "/usr/lib/libkeep.so.1",
];

fn walk_names(name: &str, data: &[u8], opts: &Options) -> Vec<(String, Vec<u8>, Option<String>)> {
    let got = walk(name, data, opts, &MemorySpill, &|m| m.bytes.to_vec()).unwrap();
    let mut v: Vec<_> = got
        .into_iter()
        .map(|r| {
            let v = r.unwrap();
            (v.path, v.value, v.layer)
        })
        .collect();
    v.sort();
    v
}

fn expect_survivors(got: &[(String, Vec<u8>, Option<String>)], name: &str) {
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    let want: Vec<String> = SURVIVORS[..3]
        .iter()
        .map(|p| format!("{name}!{p}"))
        .collect();
    assert_eq!(paths, want);
    // The replaced file has the top layer's bytes.
    assert_eq!(got[1].1, elf("replaced"));
}

#[test]
fn oci_archive_with_gzip_and_zstd_layers_unpacks_with_whiteouts() {
    let (base, top) = two_layers();
    for (cb, ct) in [
        (Compress::Gzip, Compress::Zstd),
        (Compress::Zstd, Compress::None),
        (Compress::None, Compress::Gzip),
    ] {
        let files = oci_layout(
            &[(
                "linux/amd64",
                vec![
                    Layer {
                        entries: base.clone(),
                        compress: cb,
                    },
                    Layer {
                        entries: top.clone(),
                        compress: ct,
                    },
                ],
            )],
            "latest",
        );
        let archive = tar_of(&files);
        let got = walk_names("img.tar", &archive, &Options::default());
        expect_survivors(&got, "img.tar");
        // Each file names the digest of the layer holding it.
        let digests: Vec<String> = files
            .keys()
            .filter_map(|k| k.strip_prefix("blobs/sha256/"))
            .map(|h| format!("sha256:{h}"))
            .collect();
        for g in &got {
            assert!(digests.contains(g.2.as_ref().unwrap()), "{g:?}");
        }
        assert_ne!(
            got[0].2, got[2].2,
            "libnew (top) and libkeep (base) are in different layers"
        );
        // The same layout as a directory's files.
        let layout = MemoryLayout(files.into_iter().collect());
        let total = image::walk_layout(
            "dir",
            &layout,
            &Options::default(),
            &MemorySpill,
            &|m| m.path.to_owned(),
            &|_| {},
        )
        .unwrap();
        assert_eq!(total.len(), 3);
    }
}

#[test]
fn docker_save_archive_unpacks_with_whiteouts() {
    let (base, top) = two_layers();
    let archive = tar_of(&docker_save(&[base, top], "rocm/app:1"));
    let got = walk_names("app.tar", &archive, &Options::default());
    expect_survivors(&got, "app.tar");
}

#[test]
fn two_images_in_one_archive_are_named_by_tag() {
    let (base, top) = two_layers();
    let mut files = docker_save(std::slice::from_ref(&base), "a:1");
    let other = docker_save(&[base, top], "b:2");
    let mut entries: Vec<serde_json::Value> =
        serde_json::from_slice(&files["manifest.json"]).unwrap();
    entries
        .extend(serde_json::from_slice::<Vec<serde_json::Value>>(&other["manifest.json"]).unwrap());
    files.extend(other);
    files.insert(
        "manifest.json".into(),
        serde_json::to_vec(&entries).unwrap(),
    );
    let got = walk_names("two.tar", &tar_of(&files), &Options::default());
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert!(
        paths.contains(&"two.tar!a:1!/usr/lib/libfoo.so"),
        "{paths:?}"
    );
    assert!(
        !paths.contains(&"two.tar!b:2!/usr/lib/libfoo.so"),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"two.tar!b:2!/opt/rocm/lib/libnew.so"),
        "{paths:?}"
    );
}

#[test]
fn an_index_of_two_platforms_picks_amd64_unless_told() {
    let amd = vec![Layer {
        entries: vec![f("usr/lib/libamd64.so")],
        compress: Compress::Gzip,
    }];
    let arm = vec![Layer {
        entries: vec![f("usr/lib/libarm64.so")],
        compress: Compress::Zstd,
    }];
    let archive = tar_of(&oci_layout(
        &[("linux/arm64/v8", arm), ("linux/amd64", amd)],
        "multi",
    ));
    let names = |p: Option<&str>| {
        let opts = Options {
            platform: p.map(|p| Platform::parse(p).unwrap()),
            ..Options::default()
        };
        walk("m.tar", &archive, &opts, &MemorySpill, &|m| {
            m.path.to_owned()
        })
        .map(|w| w.into_iter().map(|r| r.unwrap().value).collect::<Vec<_>>())
    };
    assert_eq!(names(None).unwrap(), ["m.tar!/usr/lib/libamd64.so"]);
    assert_eq!(
        names(Some("linux/arm64")).unwrap(),
        ["m.tar!/usr/lib/libarm64.so"]
    );
    assert_eq!(
        names(Some("linux/arm64/v8")).unwrap(),
        ["m.tar!/usr/lib/libarm64.so"]
    );
    let e = names(Some("linux/s390x")).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Platform { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "m.tar: no image for platform linux/s390x (the image has linux/arm64/v8, linux/amd64; \
         choose one with --platform)"
    );
}

#[test]
fn lookups_follow_symlinks_and_hard_links() {
    let base = vec![
        Entry::Dir("usr/lib".into()),
        Entry::Symlink("lib".into(), "usr/lib".into()),
        f("usr/lib/libreal.so.1.2"),
        Entry::Symlink("usr/lib/libreal.so".into(), "libreal.so.1.2".into()),
        f("usr/lib/libgone.so.1"),
        Entry::Hardlink("usr/lib/libalias.so".into(), "usr/lib/libgone.so.1".into()),
    ];
    // The hard link survives the whiteout of the name that holds its data.
    let top = vec![Entry::Whiteout("usr/lib/libgone.so.1".into())];
    let files = oci_layout(
        &[(
            "linux/amd64",
            vec![
                Layer {
                    entries: base,
                    compress: Compress::Gzip,
                },
                Layer {
                    entries: top,
                    compress: Compress::Gzip,
                },
            ],
        )],
        "l",
    );
    let layout = MemoryLayout(files.clone().into_iter().collect());
    let open = |m: &str| {
        image::open_member("i", &layout, &Options::default(), &MemorySpill, m, &|_| {})
            .unwrap()
            .map(|f| f.bytes.to_vec())
    };
    assert_eq!(
        open("i!/lib/libreal.so"),
        Some(elf("usr/lib/libreal.so.1.2"))
    );
    assert_eq!(
        open("i!/usr/lib/libreal.so.1.2"),
        Some(elf("usr/lib/libreal.so.1.2"))
    );
    assert_eq!(
        open("i!/usr/lib/libalias.so"),
        Some(elf("usr/lib/libgone.so.1"))
    );
    assert_eq!(
        open("i!/lib/libalias.so"),
        Some(elf("usr/lib/libgone.so.1"))
    );
    assert_eq!(open("i!/usr/lib/libgone.so.1"), None);
    assert_eq!(open("i!/nothing"), None);
    let got = walk_names("i.tar", &tar_of(&files), &Options::default());
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "i.tar!/usr/lib/libalias.so",
            "i.tar!/usr/lib/libreal.so.1.2"
        ]
    );
}

fn err_text(archive: &[u8]) -> String {
    match walk(
        "bad.tar",
        archive,
        &Options::default(),
        &MemorySpill,
        &|m| m.path.to_owned(),
    ) {
        Err(e) => e.to_string(),
        Ok(w) => w
            .into_iter()
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn one_layer(entries: Vec<Entry>) -> BTreeMap<String, Vec<u8>> {
    oci_layout(
        &[(
            "linux/amd64",
            vec![Layer {
                entries,
                compress: Compress::Gzip,
            }],
        )],
        "x",
    )
}

fn layer_key(files: &BTreeMap<String, Vec<u8>>) -> String {
    // The gzip blob.
    files
        .iter()
        .find(|(k, v)| k.starts_with("blobs/") && v.starts_with(&[0x1f, 0x8b]))
        .unwrap()
        .0
        .clone()
}

#[test]
fn damaged_images_name_the_image_blob_and_offset() {
    // Bytes that do not compress, so that the layer is the largest blob.
    let mut x = 1u32;
    let noise: Vec<u8> = (0..50_000)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 24) as u8
        })
        .collect();
    let files = one_layer(vec![f("usr/lib/libx.so"), Entry::File("big".into(), noise)]);
    let key = layer_key(&files);
    // A layer whose bytes do not match its digest.
    let mut bad = files.clone();
    let n = bad[&key].len();
    bad.get_mut(&key).unwrap()[n / 2] ^= 1;
    let e = err_text(&tar_of(&bad));
    assert!(
        e.starts_with(&format!(
            "bad.tar!{key}: checksum mismatch: the blob's sha256 is "
        )),
        "{e}"
    );
    assert!(e.contains("(at offset 0x"), "{e}");
    // A manifest naming a blob that is not there.
    let mut missing = files.clone();
    missing.remove(&key);
    let e = err_text(&tar_of(&missing));
    assert!(
        e.contains(&format!("is not in the image (no {key})")),
        "{e}"
    );
    // The archive cut inside the layer.
    let archive = tar_of(&files);
    for cut in [archive.len() - 3_000, archive.len() / 2, 700] {
        let e = err_text(&archive[..cut]);
        assert!(e.starts_with("bad.tar"), "{e}");
        assert!(e.contains("truncated: need"), "{cut}: {e}");
    }
    // Entries leaving the root.
    for (name, why) in [
        ("../../etc/evil.so", "leaves the image's root with '..'"),
        ("/etc/evil.so", "is an absolute path"),
    ] {
        let files = one_layer(vec![
            Entry::Raw(name.into(), elf("evil")),
            f("usr/lib/libok.so"),
        ]);
        let key = layer_key(&files);
        let archive = tar_of(&files);
        let got = walk(
            "bad.tar",
            &archive,
            &Options::default(),
            &MemorySpill,
            &|m| m.path.to_owned(),
        )
        .unwrap();
        let errs: Vec<String> = got
            .iter()
            .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
            .collect();
        assert_eq!(
            errs,
            [format!(
                "bad.tar!{key}: damaged: layer entry {name:?} {why} (the offset is its tar header's \
                 in the layer's tar stream) (at offset 0x0)"
            )]
        );
        // The other file is still read.
        assert!(got.iter().any(|r| r
            .as_ref()
            .is_ok_and(|v| v.value == "bad.tar!/usr/lib/libok.so")));
    }
}

#[test]
fn a_compressed_image_archive_is_refused_with_the_reason() {
    let (base, top) = two_layers();
    let archive = tar_of(&docker_save(&[base, top], "a:1"));
    let gz = gfxkit_testkit::image::compress(&archive, Compress::Gzip);
    let e = err_text(&gz);
    assert!(
        e.starts_with("bad.tar: unsupported: a container image inside a compressed stream"),
        "{e}"
    );
    let oci = gfxkit_testkit::image::compress(&tar_of(&one_layer(vec![f("a.so")])), Compress::Zstd);
    let e = err_text(&oci);
    assert!(
        e.contains("(.zst)") && e.contains("decompress it first, e.g. `unzstd`"),
        "{e}"
    );
    // An image archive inside another, uncompressed: nothing to decompress (no `gunzip -k`),
    // the image's archive is to be taken out of the one holding it.
    let (base, top) = two_layers();
    let outer = tar_of(&BTreeMap::from([(
        "img.tar".to_owned(),
        tar_of(&docker_save(&[base, top], "a:1")),
    )]));
    let e = err_text(&outer);
    assert!(
        e.contains("a container image inside another archive"),
        "{e}"
    );
    assert!(!e.contains("gunzip") && !e.contains("decompress"), "{e}");
}

#[test]
fn an_index_json_listing_platforms_directly_is_one_image() {
    let amd = vec![Layer {
        entries: vec![f("usr/lib/libamd64.so")],
        compress: Compress::Gzip,
    }];
    let arm = vec![Layer {
        entries: vec![f("usr/lib/libarm64.so")],
        compress: Compress::Gzip,
    }];
    let mut files = oci_layout(&[("linux/arm64", arm), ("linux/amd64", amd)], "m");
    // Lift the nested image index's manifests into index.json.
    let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
    let nested = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .strip_prefix("sha256:")
        .unwrap();
    let nested: serde_json::Value =
        serde_json::from_slice(&files[&format!("blobs/sha256/{nested}")]).unwrap();
    let flat = serde_json::json!({"schemaVersion": 2, "manifests": nested["manifests"]});
    files.insert("index.json".into(), serde_json::to_vec(&flat).unwrap());
    let got = walk_names("flat.tar", &tar_of(&files), &Options::default());
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(paths, ["flat.tar!/usr/lib/libamd64.so"]);
}
