//! One verdict per file, on the real inputs `scripts/ensure-real-inputs` fetches (Debian's
//! librocrand 5.3, its `.deb`, PyPI's torch-scatter-rocm wheel) and on clang-19 builds: a
//! damaged compressed bundle is damage for every command that judges whether code can load,
//! `extract` of a package skips its CPU-only members as `list` does, `diff` counts targets by
//! the devices they serve and matches a package member to the same file unpacked, and the
//! smaller answers that read two ways.

mod common;

use common::json_stdout;
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

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .env_remove("GFXKIT_PROGRESS_DELAY_MS")
        .env_remove("ROCBLAS_TENSILE_LIBPATH")
        .env_remove("HIPBLASLT_TENSILE_LIBPATH")
        .output()
        .expect("run gfxkit")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Debian's librocrand with its bundle recompressed as CCOB v3 (zstd), and the file offset and
/// size of that bundle.
fn compressed_rocrand(dir: &Path) -> (PathBuf, u64, u64) {
    let lib = dir.join("librocrand.so.1.1");
    let o = gfxkit(&[
        "recompress",
        "--ccob-version",
        "3",
        s(&real("librocrand.so.1.1")),
        "-o",
        s(&lib),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let j = json_stdout(&gfxkit(&["list", "--json", s(&lib)]));
    let b = &j["files"][0]["bundles"][0];
    assert_eq!(b["format"], "ccob", "{j}");
    (
        lib,
        b["offset"].as_u64().unwrap(),
        b["size"].as_u64().unwrap(),
    )
}

/// A byte flipped inside the zstd stream of a CCOB: the bundle decodes to other bytes (its
/// hash no longer matches) or does not decode. `check`, `doctor` and `select` used to call the
/// file ok (exit 0) while `verify` found the damage; `diff` printed "targets removed ..." and
/// "kernels 560 -> 0" before its error, in text and JSON.
#[test]
fn a_damaged_compressed_bundle_is_damage_for_every_judge() {
    let d = tempfile::tempdir().unwrap();
    let (good, at, size) = compressed_rocrand(d.path());
    let data = std::fs::read(&good).unwrap();
    let flipped = d.path().join("flipped.so");
    let mut bytes = data.clone();
    bytes[(at + size / 2) as usize] ^= 0x01;
    std::fs::write(&flipped, &bytes).unwrap();
    // A copy whose zstd frame header is damaged: the bundle does not decode at all.
    let undecodable = d.path().join("undecodable.so");
    let mut bytes = data.clone();
    bytes[(at + 40) as usize] ^= 0x80;
    std::fs::write(&undecodable, &bytes).unwrap();
    let place = format!("{at:#x}");
    for (file, what) in [
        (&flipped, "hash mismatch"),
        (&undecodable, "frame size mismatch"),
    ] {
        let f = s(file);
        for args in [
            vec!["check", "--require", "gfx90a", f],
            vec!["doctor", "--device", "gfx90a", f],
            vec!["select", "--device", "gfx90a", f],
        ] {
            let o = gfxkit(&args);
            let all = format!("{}{}", out(&o), err(&o));
            assert_eq!(o.status.code(), Some(2), "{args:?}: {all}");
            assert!(all.contains(f), "{args:?} names the file: {all}");
            assert!(all.contains(&place), "{args:?} names the bundle: {all}");
            assert!(all.contains(what), "{args:?} says what failed: {all}");
            assert!(!all.contains("ok    "), "{args:?}: {all}");
        }
        // JSON says the same: check's file has the error and does not pass.
        let j = json_stdout(&gfxkit(&["check", "--json", "--require", "gfx90a", f]));
        assert_eq!(j["ok"], false, "{j}");
        assert_eq!(j["summary"]["errors"], 1, "{j}");
        let e = j["files"][0]["errors"][0].as_str().unwrap();
        assert!(e.contains(&place) && e.contains(what), "{e}");
        // doctor's JSON says what its text says: the file runs nowhere, because it is damaged.
        let o = gfxkit(&["doctor", "--json", "--device", "gfx90a", f]);
        assert_eq!(o.status.code(), Some(2), "{}", out(&o));
        let j = json_stdout(&o);
        let file = &j["files"][0];
        assert_eq!(file["runs_on"]["gfx90a"], false, "{j}");
        let m = file["missing"]["gfx90a"].as_str().unwrap();
        assert!(
            m.starts_with("damaged: ") && m.contains(&place) && m.contains(what),
            "{m}"
        );
        let e = file["errors"][0].as_str().unwrap();
        assert!(e.contains(&place) && e.contains(what), "{e}");
        assert!(
            file.get("remedies").is_none(),
            "no remedy mends damage: {j}"
        );
        // check's JSON: no verdict on a target beyond the error.
        let j = json_stdout(&gfxkit(&["check", "--json", "--require", "gfx90a", f]));
        assert_eq!(j["files"][0]["ok"], false, "{j}");
        assert_eq!(j["summary"]["passed"], 0, "{j}");
        let o = gfxkit(&["select", "--json", "--device", "gfx90a", f]);
        assert_eq!(o.status.code(), Some(2), "{}", out(&o));
        assert!(out(&o).contains(what), "{}", out(&o));
        // The damaged bundle gives the device nothing, and says why.
        let b = &json_stdout(&o)["files"][0]["bundles"][0];
        assert!(b["selected"].is_null(), "{b}");
        assert!(b["reason"].as_str().unwrap().contains(what), "{b}");
        // verify reports it as a problem found (exit 1, as documented).
        let o = gfxkit(&["verify", f]);
        assert_eq!(o.status.code(), Some(1), "{}", out(&o));
        // diff compares code objects by digest: it errors before printing anything.
        for json in [false, true] {
            let mut args = vec!["diff"];
            if json {
                args.push("--json");
            }
            args.extend([s(&good), f]);
            let o = gfxkit(&args);
            assert_eq!(o.status.code(), Some(2), "{}", err(&o));
            assert_eq!(out(&o), "", "diff printed before its error");
            assert!(err(&o).contains(f), "{}", err(&o));
        }
    }
    // The text of doctor names the damage once, as an error, and calls nothing ok or FAIL.
    let o = gfxkit(&["doctor", "--device", "gfx90a", s(&flipped)]);
    let text = out(&o);
    assert!(!text.contains("FAIL") && !text.contains("ok    "), "{text}");
    assert!(
        text.contains("ERROR ") && text.contains("hash mismatch"),
        "{text}"
    );
    // The sound file passes all of them.
    for args in [
        vec!["check", "--require", "gfx90a", s(&good)],
        vec!["doctor", "--device", "gfx90a", s(&good)],
        vec!["select", "--device", "gfx90a", s(&good)],
        vec!["verify", s(&good)],
    ] {
        let o = gfxkit(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}{}", out(&o), err(&o));
    }
    // A truncated copy is damage too, never ok.
    let cut = d.path().join("cut.so");
    std::fs::write(&cut, &data[..(at + size / 2) as usize]).unwrap();
    for args in [
        vec!["check", "--require", "gfx90a", s(&cut)],
        vec!["doctor", "--device", "gfx90a", s(&cut)],
        vec!["select", "--device", "gfx90a", s(&cut)],
    ] {
        let o = gfxkit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}{}", out(&o), err(&o));
    }
    let o = gfxkit(&["verify", s(&cut)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    // The doctor's summary counts a damaged input apart from the libraries judged.
    let o = gfxkit(&["doctor", "--device", "gfx90a", s(&flipped), s(&good)]);
    assert!(
        out(&o).contains(
            "1 library with device code: 1 runs on every device, 0 do not; 1 damaged or unreadable"
        ),
        "{}",
        out(&o)
    );
}

/// `size` and `list` (without `--check`) do not verify, and their help says so.
#[test]
fn size_and_list_say_they_do_not_verify() {
    for cmd in ["size", "list"] {
        let o = gfxkit(&[cmd, "--help"]);
        let help = out(&o).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains("does not verify"), "{cmd}: {help}");
    }
}

/// `extract` of a wheel with CPU-only members (torch-scatter-rocm: `_scatter_cpu.so` and four
/// more) skips them as `list` does; it used to stop at the first with "no offload bundle in
/// this file" and write nothing. A tarball of `/bin/ls` and a GPU library likewise.
#[test]
fn extract_of_a_package_skips_members_without_device_code() {
    let d = tempfile::tempdir().unwrap();
    let wheel = real("torch_scatter_rocm-2.1.2.post7-");
    let o = gfxkit(&[
        "extract",
        s(&wheel),
        "--target",
        "gfx90a",
        "--json",
        "-o",
        s(&d.path().join("co")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let j = json_stdout(&o);
    let written = j["written"].as_array().unwrap();
    // The three HIP libraries, one gfx90a code object each.
    assert_eq!(written.len(), 3, "{j}");
    for w in written {
        assert_eq!(w["id"], "hipv4-amdgcn-amd-amdhsa--gfx90a", "{w}");
        assert!(Path::new(w["path"].as_str().unwrap()).is_file());
    }
    let t = d.path().join("t");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::copy("/bin/ls", t.join("ls")).unwrap();
    std::fs::copy(real("librocrand.so.1.1"), t.join("librocrand.so.1.1")).unwrap();
    let tar = d.path().join("both.tar");
    let st = Command::new("tar")
        .arg("cf")
        .arg(&tar)
        .arg("-C")
        .arg(&t)
        .args(["ls", "librocrand.so.1.1"])
        .status()
        .unwrap();
    assert!(st.success());
    let o = gfxkit(&[
        "extract",
        s(&tar),
        "--target",
        "gfx1030",
        "-o",
        s(&d.path().join("co2")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(std::fs::read_dir(d.path().join("co2")).unwrap().count(), 1);
    // A package none of whose members holds device code is still an error.
    let lsonly = d.path().join("ls.tar");
    let st = Command::new("tar")
        .arg("cf")
        .arg(&lsonly)
        .arg("-C")
        .arg(&t)
        .arg("ls")
        .status()
        .unwrap();
    assert!(st.success());
    let o = gfxkit(&["extract", s(&lsonly), "-o", s(&d.path().join("co3"))]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(err(&o).contains("no device code"), "{}", err(&o));
    assert!(!d.path().join("co3").exists());
}

/// The `.deb` against the library unpacked from it: the member is matched to the file by its
/// path's end and the device code is the same (it used to say the files differ, exit 1).
#[test]
fn a_deb_against_its_own_unpacked_library_is_the_same() {
    let deb = real("librocrand1_5.3.3-4_amd64.deb");
    let lib = real("librocrand.so.1.1");
    for (a, b) in [(&deb, &lib), (&lib, &deb)] {
        let o = gfxkit(&["diff", s(a), s(b)]);
        assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
        assert!(
            out(&o).starts_with("device code is the same: 1 file, 7 code objects"),
            "{}",
            out(&o)
        );
    }
    // An unpacked tree: usr/lib/... against data.tar.xz!usr/lib/...
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("root/usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&lib, dir.join("librocrand.so.1.1")).unwrap();
    let o = gfxkit(&["diff", "--json", s(&deb), s(&d.path().join("root"))]);
    let j = json_stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{j}");
    assert_eq!(j["files"].as_array().unwrap().len(), 1, "{j}");
}

/// clang-19 builds of one source: for `gfx90a:xnack+` and `gfx90a:xnack-`, then for
/// `gfx90a` (xnack any). The newer build serves every device the older one did, so no
/// target is removed; the ID strings that changed are listed beside. The other way round,
/// dropping `gfx90a` for `gfx90a:xnack-` removes the xnack-on devices.
#[test]
fn diff_counts_targets_by_the_devices_they_serve() {
    let d = tempfile::tempdir().unwrap();
    let src = gfxkit_testkit::hip_kernels(2);
    let two =
        gfxkit_testkit::HipBuild::new(&src, &["gfx90a:xnack+", "gfx90a:xnack-", "gfx906:xnack-"])
            .build(d.path(), "two");
    let any =
        gfxkit_testkit::HipBuild::new(&src, &["gfx90a", "gfx906:xnack-"]).build(d.path(), "any");
    let o = gfxkit(&["diff", "--json", s(&two), s(&any)]);
    let j = json_stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{j}");
    let f = &j["files"][0];
    assert_eq!(f["status"], "modified", "{j}");
    assert_eq!(f["removed"], serde_json::json!([]), "{j}");
    assert_eq!(f["added"], serde_json::json!([]), "{j}");
    assert_eq!(f["added_ids"], serde_json::json!(["gfx90a"]), "{j}");
    assert_eq!(
        f["removed_ids"],
        serde_json::json!(["gfx90a:xnack+", "gfx90a:xnack-"]),
        "{j}"
    );
    assert_eq!(j["targets_removed"], serde_json::json!([]), "{j}");
    let text = out(&gfxkit(&["diff", s(&two), s(&any)]));
    assert!(!text.contains("targets removed"), "{text}");
    assert!(
        text.contains("target IDs +gfx90a -gfx90a:xnack+ -gfx90a:xnack-"),
        "{text}"
    );
    // Dropping xnack-any code for xnack-off code: the xnack-on devices are no longer served.
    let off = gfxkit_testkit::HipBuild::new(&src, &["gfx90a:xnack-", "gfx906:xnack-"])
        .build(d.path(), "off");
    let j = json_stdout(&gfxkit(&["diff", "--json", s(&any), s(&off)]));
    assert_eq!(
        j["targets_removed"],
        serde_json::json!(["gfx90a:xnack+"]),
        "{j}"
    );
    assert_eq!(
        j["files"][0]["removed"],
        serde_json::json!(["gfx90a:xnack+"])
    );
    let text = out(&gfxkit(&["diff", s(&any), s(&off)]));
    assert!(text.contains("targets removed: gfx90a:xnack+"), "{text}");
}

/// `memmodel --table --json` prints JSON (it printed the Markdown table).
#[test]
fn memmodel_table_json_is_json() {
    let o = gfxkit(&["memmodel", "--table", "gfx942", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let j = json_stdout(&o);
    assert!(j["cases"].as_object().is_some_and(|c| !c.is_empty()), "{j}");
    let all = json_stdout(&gfxkit(&["memmodel", "--cpu", "gfx942", "--all", "--json"]));
    assert_eq!(j["cases"], all["cases"]);
}

/// Numbers that mean one thing each, on Debian's librocrand: `size`'s rows and the bytes of
/// headers and padding add up to its total, with no star on exact sizes (the bundle is
/// uncompressed; the star used to mark every kernel-database and kpack row); `device_bytes` is
/// the bytes stored in `list -r --json` and in `list --summary --json` alike (the summary
/// counted code objects uncompressed under that name); a split binary sized with its `.kpack`
/// files counts each code object once (it counted them twice).
#[test]
fn size_numbers_add_up_and_mean_one_thing() {
    let lib = real("librocrand.so.1.1");
    let r = json_stdout(&gfxkit(&["size", "--json", s(&lib)]));
    let rows: u64 = r["archs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["stored"].as_u64().unwrap())
        .sum();
    let overhead = r["overhead"].as_u64().unwrap();
    assert!(overhead > 0, "{r}");
    assert_eq!(rows + overhead, r["stored"].as_u64().unwrap(), "{r}");
    assert!(
        r["archs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["estimated"] == false),
        "{r}"
    );
    let text = out(&gfxkit(&["size", s(&lib)]));
    assert!(!text.contains('*'), "{text}");
    assert!(
        text.contains("bundle headers and padding between payloads, in no row above"),
        "{text}"
    );
    // device_bytes: stored, in both listings; the summary's code objects under their own name.
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(&lib, d.path().join("librocrand.so.1.1")).unwrap();
    let listed = json_stdout(&gfxkit(&["list", "-r", "--json", s(d.path())]));
    let summary = json_stdout(&gfxkit(&["list", "--summary", "--json", s(d.path())]));
    let p = &summary["packages"][0];
    assert_eq!(
        p["device_bytes"], listed["summary"]["device_bytes"],
        "{summary} {listed}"
    );
    let targets: u64 = p["targets"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(p["code_object_bytes"].as_u64(), Some(targets));
    // A split binary and its archives: each code object once, rows without a star.
    let root = d.path().join("split");
    std::fs::create_dir_all(root.join("lib")).unwrap();
    let bin = root.join("lib/librocrand.so.1.1");
    let o = gfxkit(&["kpack", "split", "--group", "rand", s(&lib), "-o", s(&bin)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let alone = json_stdout(&gfxkit(&["size", "--json", s(&bin)]));
    let mut args = vec!["size".to_owned(), "--json".to_owned(), s(&bin).to_owned()];
    for e in std::fs::read_dir(root.join(".kpack")).unwrap() {
        args.push(e.unwrap().path().display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let both = json_stdout(&gfxkit(&args));
    assert_eq!(both["stored"], alone["stored"], "{both}");
    assert_eq!(both["uncompressed"], alone["uncompressed"], "{both}");
    assert!(
        both["archs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["estimated"] == false),
        "{both}"
    );
}

/// A MIOpen `.kdb` named alone is named by itself, not `.`; `size` counts it as one unit as
/// `list` does ("1 bundle, 3 entries"; size said "3 bundles").
#[test]
fn a_kernel_database_file_is_one_unit_named_by_itself() {
    let d = tempfile::tempdir().unwrap();
    let o = gfxkit(&[
        "extract",
        s(&real("librocrand.so.1.1")),
        "--target",
        "gfx1030",
        "--json",
        "-o",
        s(d.path()),
    ]);
    let co = json_stdout(&o)["written"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel_db_fixtures.py");
    let st = Command::new("python3")
        .arg(&script)
        .arg("kdb")
        .arg("gfx103040.kdb")
        .args([
            format!("k1|-O1|{co}"),
            format!("k2|-O2|{co}"),
            format!("k3|-O3|{co}"),
        ])
        .current_dir(d.path())
        .status()
        .expect("python3 builds the .kdb");
    assert!(st.success());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap()
    };
    let o = run(&["doctor", "--device", "gfx90a", "gfx103040.kdb"]);
    let text = out(&o);
    assert!(
        text.contains("FAIL  gfx103040.kdb  on gfx90a: gfx103040.kdb has no code object"),
        "{text}"
    );
    assert!(!text.contains("FAIL  .  "), "{text}");
    let l = out(&run(&["list", "gfx103040.kdb"]));
    assert!(l.starts_with("gfx103040.kdb: 1 bundle, 3 entries"), "{l}");
    let j = json_stdout(&run(&["size", "--json", "gfx103040.kdb"]));
    assert_eq!(j["files"][0]["bundles"], 1, "{j}");
    let t = out(&run(&["size", "gfx103040.kdb"]));
    assert!(t.contains("in 1 file, 1 bundle"), "{t}");
    assert!(!t.contains('*'), "{t}");
}

/// `extract` names a file of a container image the same whether the image or the file
/// (`IMAGE!/path`) is named (the file alone was named by its own stem).
#[test]
fn extract_names_an_image_file_alike_either_way() {
    use gfxkit_testkit::image::{docker_save, tar_of, Entry};
    let d = tempfile::tempdir().unwrap();
    let lib = std::fs::read(real("librocrand.so.1.1")).unwrap();
    let image = d.path().join("img.tar");
    let layer = vec![
        Entry::Dir("usr/lib".into()),
        Entry::File("usr/lib/librocrand.so.1.1".into(), lib),
    ];
    std::fs::write(&image, tar_of(&docker_save(&[layer], "r:1"))).unwrap();
    let names = |input: &str, dir: &str| {
        let out_dir = d.path().join(dir);
        let o = gfxkit(&[
            "extract",
            input,
            "--target",
            "gfx1030",
            "--json",
            "-o",
            s(&out_dir),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let mut v: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let whole = names(s(&image), "a");
    let member = names(&format!("{}!/usr/lib/librocrand.so.1.1", s(&image)), "b");
    assert_eq!(whole.len(), 1, "{whole:?}");
    assert_eq!(whole, member);
}

/// The units of a file as `list --json` gives them: `(index, offset)` of each, in order.
fn listed_units(j: &serde_json::Value) -> Vec<(u64, u64)> {
    j["files"][0]["bundles"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| (b["index"].as_u64().unwrap(), b["offset"].as_u64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

/// `list`, `select` and `doctor` read one model of a file's units: each lists the same units,
/// and damage that keeps a unit from being read is named by all three. They used to disagree
/// on two kinds of damage: `select` and `doctor` read a standalone bundle file leniently
/// (listing bundles `list` refuses to read), and counted a compressed bundle whose CCOB
/// header names an unknown method as a unit of their own (`list` names it as damage).
#[test]
fn every_command_reads_the_same_units_of_a_damaged_file() {
    let dir = tempfile::tempdir().unwrap();
    // Two bundles back to back; the second's entry ID is not UTF-8.
    let good =
        gfxkit_bundle::write_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", b"0123")], 1).unwrap();
    let mut bad =
        gfxkit_bundle::write_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"4567")], 1).unwrap();
    let id_at = bad
        .windows(5)
        .position(|w| w == b"hipv4")
        .expect("the ID is stored");
    bad[id_at] = 0xff;
    let bundles = dir.path().join("two.hipfb");
    std::fs::write(&bundles, [good.clone(), bad].concat()).unwrap();
    // The real library with its bundle recompressed, the method of its CCOB header unknown.
    let (lib, offset, _) = compressed_rocrand(dir.path());
    let mut data = std::fs::read(&lib).unwrap();
    let method = usize::try_from(offset).unwrap() + 6;
    data[method..method + 2].copy_from_slice(&257u16.to_le_bytes());
    std::fs::write(&lib, &data).unwrap();
    // Where each is damaged: the second bundle's entry ID; the compressed bundle.
    let cases = [
        (&bundles, (good.len() + id_at) as u64, "not valid UTF-8"),
        (&lib, offset, "unknown compression method 257"),
    ];
    for (path, at, why) in cases {
        let p = s(path);
        let list = gfxkit(&["list", "--json", p]);
        let listed = listed_units(&json_stdout(&list));
        assert_eq!(list.status.code(), Some(2), "{}", err(&list));
        assert!(out(&list).contains(why), "{}", out(&list));
        let select = gfxkit(&["select", "--json", "--device", "gfx906", p]);
        assert_eq!(select.status.code(), Some(2), "{}", err(&select));
        let j = json_stdout(&select);
        assert_eq!(listed_units(&j), listed, "select of {p}: {j}");
        let named = j["files"][0]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["location"]["offset"] == at && p["message"].as_str().unwrap().contains(why));
        assert!(named, "select of {p}: {j}");
        let doctor = gfxkit(&["doctor", "--json", "--device", "gfx906", p]);
        assert_eq!(doctor.status.code(), Some(2), "{}", err(&doctor));
        let j = json_stdout(&doctor);
        let errors = j["files"][0]["errors"].to_string();
        assert!(
            errors.contains(&format!("offset {at:#x}: bundle cannot be read")),
            "{j}"
        );
        assert!(errors.contains(why), "{j}");
        assert_eq!(j["files"][0]["bundles"], listed.len(), "{j}");
    }
}

/// An aiter install (amd-aiter's wheel, one directory of its kernels unpacked) with a code
/// object its kernel map names gone: `check` and `doctor` fail the device whose maps name it,
/// naming the file, as `verify` finds it (they used to pass it: the directory still held code
/// for the processor); intact, it passes.
#[test]
fn an_aiter_install_missing_a_mapped_code_object_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let part = "aiter_meta/hsa/gfx942/bf16gemm/";
    let mut z = zip::ZipArchive::new(std::fs::File::open(real("amd_aiter-")).unwrap()).unwrap();
    let names: Vec<String> = z
        .file_names()
        .filter(|n| n.starts_with(part) && !n.ends_with('/'))
        .map(str::to_owned)
        .collect();
    for n in &names {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut z.by_name(n).unwrap(), &mut bytes).unwrap();
        let to = dir.path().join(n);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
    let root = dir.path().join("aiter_meta");
    let gate = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push(s(&root));
        gfxkit(&all)
    };
    for args in [
        &["check", "--require", "gfx942"][..],
        &["doctor", "--device", "gfx942"],
        &["verify", "-r"],
    ] {
        let o = gate(args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?} intact: {}{}",
            out(&o),
            err(&o)
        );
    }
    let gone = names
        .iter()
        .find(|n| n.ends_with(".co"))
        .expect("a code object");
    std::fs::remove_file(dir.path().join(gone)).unwrap();
    let base = gone.rsplit('/').next().unwrap();
    let o = gate(&["check", "--require", "gfx942"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let lacks = format!("lacks hsa/gfx942/bf16gemm/{base} (aiter fails the kernels");
    assert!(out(&o).contains(&lacks), "{}", out(&o));
    let o = gate(&["doctor", "--device", "gfx942"]);
    assert!(out(&o).contains(&lacks), "{}", out(&o));
    assert_ne!(o.status.code(), Some(0), "{}", out(&o));
    // A device whose maps name nothing missing is not failed by them.
    let o = gate(&["check", "--require", "gfx950"]);
    assert!(!out(&o).contains("aiter fails"), "{}", out(&o));
    let o = gate(&["verify", "-r"]);
    assert!(
        out(&o).contains(&format!("its code object {base} is not there")),
        "{}",
        out(&o)
    );
}
