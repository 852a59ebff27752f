//! `gfxkit kpack split` and `inline` on shared libraries and executables built by clang-19
//! (three translation units, xnack variants, one compressed; linked by lld and GNU ld, PIE,
//! non-PIE, RELR, stripped), and every command seeing through the split layout: `list`,
//! `extract`, `select` equal the fat binary's, `inline` gives back bundles with the same code
//! objects, the stub HIP runtime registers HIPK wrappers with parseable markers, and damaged
//! or missing archives and markers give clear errors, never a panic.

mod shrink_fixtures;

use serde_json::Value;
use shrink_fixtures::{gfxkit, Fixture};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&OsStr]) -> Output {
    let o = gfxkit(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked"),
        "gfxkit {args:?} panicked:\n{err}"
    );
    o
}

fn ok(args: &[&OsStr]) -> Output {
    let o = run(args);
    assert!(
        o.status.success(),
        "gfxkit {args:?} failed ({:?}):\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(&o.stdout)))
}

/// Per bundle (or kpack wrapper): the device entries (ID, size), sorted.
fn device_entries(file: &Path) -> Vec<Vec<(String, u64)>> {
    let v = json(&ok(&[os("list"), os("--json"), file.as_os_str()]));
    v["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let mut e: Vec<(String, u64)> = b["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| !e["id"].as_str().unwrap().starts_with("host-"))
                .map(|e| {
                    (
                        e["id"].as_str().unwrap().to_owned(),
                        e["size"].as_u64().unwrap(),
                    )
                })
                .collect();
            e.sort();
            e
        })
        .collect()
}

/// `gfxkit extract FILE -o DIR`: file name -> bytes.
fn extracted(file: &Path, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    ok(&[os("extract"), file.as_os_str(), os("-o"), dir.as_os_str()]);
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        out.insert(
            e.file_name().to_string_lossy().into_owned(),
            std::fs::read(e.path()).unwrap(),
        );
    }
    out
}

/// Per bundle / wrapper: the entry selected on `device` (null when none).
fn selected(file: &Path, device: &str, loader: &str) -> (Option<i32>, Vec<Value>) {
    let o = run(&[
        os("select"),
        os("--json"),
        os("--kpack-loader"),
        os(loader),
        os("--device"),
        os(device),
        file.as_os_str(),
    ]);
    let v = json(&o);
    let f = &v["files"][0];
    (
        o.status.code(),
        f["bundles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["selected"].clone())
            .collect(),
    )
}

/// Runs a program with the stub HIP runtime accepting HIPK wrappers.
fn run_kpack(prog: &Path, lib_path: Option<&str>) -> String {
    let mut cmd = Command::new(prog);
    cmd.env("STUB_HIP_KPACK", "1").env_remove("STUB_HIP_EXPECT");
    if let Some(d) = lib_path {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{} failed ({:?}):\n{}{}",
        prog.display(),
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Runs a split binary under the stub runtime: an executable itself, a library (copied to
/// `run_dir` as `libt.so`) through the fixture's `lib_main`.
fn run_split(fx: &Fixture, split: &Path, is_lib: bool, run_dir: &Path) -> String {
    if is_lib {
        std::fs::create_dir_all(run_dir).unwrap();
        std::fs::copy(split, run_dir.join("libt.so")).unwrap();
        let path = format!("{}:{}", run_dir.display(), fx.dir.path().display());
        run_kpack(&fx.lib_main, Some(&path))
    } else {
        run_kpack(split, Some(&fx.dir.path().display().to_string()))
    }
}

fn split(f: &Path, out: &Path, extra: &[&str]) -> Value {
    let mut a = vec![
        os("kpack"),
        os("split"),
        f.as_os_str(),
        os("--group"),
        os("t"),
        os("-o"),
        out.as_os_str(),
        os("--json"),
    ];
    a.extend(extra.iter().map(os));
    json(&ok(&a))
}

fn check_binary(fx: &Fixture, name: &str, fat: &Path, is_lib: bool) {
    let root = fx.dir.path().join(format!("kp-{name}"));
    let file = fat.file_name().unwrap();
    let out = root.join("lib").join(file);
    let r = split(fat, &out, &[]);
    // The layout fails under the old loader (see below), and the split says so as it writes.
    let failures = r["old_loader_failures"].as_array().unwrap();
    // Both variant archives (xnack+ and xnack-) lack the third unit's kernel.
    assert_eq!(failures.len(), 2, "{name}: {r}");
    for (f, variant) in failures.iter().zip(["xnack+", "xnack-"]) {
        let f = f.as_str().unwrap();
        assert!(
            f.contains(&format!("this gfx90a:{variant} archive shadows"))
                && f.contains("t_gfx90a.kpack"),
            "{name}: {f}"
        );
    }
    let wrappers = r["binaries"][0]["wrappers"].as_u64().unwrap() as usize;
    assert_eq!(wrappers, 3 + usize::from(!is_lib), "{name}: {r}");
    // Smaller on disk: no stored .hip_fatbin payload.
    let before = std::fs::metadata(fat).unwrap().len();
    let after = std::fs::metadata(&out).unwrap().len();
    assert!(after < before, "{name}: {before} -> {after}");
    for a in std::fs::read_dir(root.join(".kpack")).unwrap() {
        let p = a.unwrap().path();
        assert!(p.file_name().unwrap().to_str().unwrap().starts_with("t_"));
    }

    // list, extract, select equal the fat binary's.
    let fat_entries = device_entries(fat);
    assert_eq!(device_entries(&out), fat_entries, "{name}: list");
    let x_fat = extracted(fat, &root.join("x-fat"));
    let x_split = extracted(&out, &root.join("x-split"));
    assert!(!x_fat.is_empty());
    assert_eq!(x_split, x_fat, "{name}: extract");
    // gfxkit kernels sees the same kernels (by target, name and resources) through the archives.
    let kernels = |f: &Path| {
        let v = json(&ok(&[os("kernels"), f.as_os_str(), os("--json")]));
        let mut k: Vec<String> = v["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                format!(
                    "{} {} {} {}",
                    k["target_id"], k["name"], k["vgpr_count"], k["occupancy"]
                )
            })
            .collect();
        k.sort();
        k
    };
    let fat_kernels = kernels(fat);
    assert!(!fat_kernels.is_empty());
    assert_eq!(kernels(&out), fat_kernels, "{name}: kernels");
    for device in [
        "gfx90a:sramecc+:xnack+",
        "gfx90a:sramecc-:xnack-",
        "gfx1030",
        "gfx1100",
    ] {
        let (fc, fs) = selected(fat, device, "current");
        let (sc, ss) = selected(&out, device, "current");
        assert_eq!(ss, fs, "{name} on {device}");
        assert_eq!(sc, fc, "{name} on {device}");
    }
    // A `.kpack` file given to select answers for its units as list reads them (it used to
    // say "no device code"): on its own architecture each loads, elsewhere none does.
    let a1030 = root.join(".kpack/t_gfx1030.kpack");
    let listed = json(&ok(&[os("list"), os("--json"), a1030.as_os_str()]));
    let keys = listed["files"][0]["bundles"].as_array().unwrap().len();
    assert!(keys > 0, "{listed}");
    let (code, units) = selected(&a1030, "gfx1030", "current");
    assert_eq!(code, Some(0), "{name}: select on {}", a1030.display());
    assert_eq!(units.len(), keys, "{units:?}");
    assert!(
        units
            .iter()
            .all(|u| u == "hipv4-amdgcn-amd-amdhsa--gfx1030"),
        "{units:?}"
    );
    let (code, units) = selected(&a1030, "gfx1100", "current");
    assert_eq!(code, Some(1));
    assert!(
        units.len() == keys && units.iter().all(Value::is_null),
        "{units:?}"
    );
    // The third translation unit is built for plain gfx90a: under the old loader the
    // gfx90a:xnack- archive, which lacks it, shadows t_gfx90a.kpack.
    let (code, old) = selected(&out, "gfx90a:sramecc-:xnack-", "old");
    assert_eq!(code, Some(1), "{name}: old loader");
    assert_eq!(old.iter().filter(|s| s.is_null()).count(), 1, "{old:?}");
    let v = run(&[os("verify"), out.as_os_str()]);
    assert_eq!(v.status.code(), Some(1), "{name}: verify");
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(
        text.contains("shadows") && text.contains("t_gfx90a.kpack"),
        "{text}"
    );

    // The runtime registers HIPK wrappers whose marker names the archives.
    let marker_path = "kernel_name=lib/".to_owned() + file.to_str().unwrap();
    let stub_out = run_split(fx, &out, is_lib, &root.join("run"));
    let regs: Vec<&str> = stub_out
        .lines()
        .filter(|l| l.starts_with("stub-hip: kpack"))
        .collect();
    assert_eq!(regs.len(), wrappers, "{name}: {stub_out}");
    for (i, l) in regs.iter().enumerate() {
        if is_lib {
            // The library's own wrappers only (lib_main has no device code).
            assert!(l.contains(&format!("index {i}:")), "{l}");
        }
        assert!(l.contains("path=../.kpack/t_@GFXARCH@.kpack"), "{l}");
        assert!(
            l.contains("kernel_name=lib/") && (!is_lib || l.contains(&marker_path)),
            "{l}"
        );
    }

    // inline: back to HIPF wrappers and bundles holding every code object.
    let fat2 = root.join("fat2");
    ok(&[
        os("kpack"),
        os("inline"),
        out.as_os_str(),
        os("-o"),
        fat2.as_os_str(),
    ]);
    assert_eq!(device_entries(&fat2), fat_entries, "{name}: inline list");
    let x_inline = extracted(&fat2, &root.join("x-inline"));
    let renamed: BTreeMap<String, Vec<u8>> = x_inline
        .into_iter()
        .map(|(k, v)| (k.replacen("fat2.", &format!("{}.", file_stem(fat)), 1), v))
        .collect();
    assert_eq!(renamed, x_fat, "{name}: inline extract");
    let v = ok(&[os("verify"), fat2.as_os_str()]);
    assert!(String::from_utf8_lossy(&v.stdout).contains("ok"));
    let st = if is_lib {
        let lib_dir = root.join("run2");
        std::fs::create_dir_all(&lib_dir).unwrap();
        std::fs::copy(&fat2, lib_dir.join("libt.so")).unwrap();
        let path = format!("{}:{}", lib_dir.display(), fx.dir.path().display());
        shrink_fixtures::run_program(&fx.lib_main, Some(&path), None)
    } else {
        std::fs::set_permissions(&fat2, std::fs::metadata(fat).unwrap().permissions()).unwrap();
        shrink_fixtures::run_program(&fat2, Some(&fx.dir.path().display().to_string()), None)
    };
    assert!(
        st.status.success(),
        "{name}: inlined binary does not run:\n{}{}",
        String::from_utf8_lossy(&st.stdout),
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&st.stdout)
            .lines()
            .filter(|l| l.starts_with("stub-hip: bundle"))
            .count(),
        wrappers
    );

    // The inlined binary splits again like the fat one (the header of its old marker section
    // is reused), and that split reads and runs alike.
    let again = root.join("again").join(file);
    let r2 = split(&fat2, &again, &[]);
    assert_eq!(
        r2["binaries"][0]["wrappers"].as_u64(),
        Some(wrappers as u64),
        "{name}: {r2}"
    );
    assert_eq!(
        device_entries(&again),
        fat_entries,
        "{name}: second split list"
    );
    // Named after the file, which has the fat binary's name again.
    let x_again = extracted(&again, &root.join("x-again"));
    assert_eq!(x_again, x_fat, "{name}: second split extract");
    let regs = run_split(fx, &again, is_lib, &root.join("run3"))
        .lines()
        .filter(|l| l.starts_with("stub-hip: kpack"))
        .count();
    assert_eq!(regs, wrappers, "{name}: second split run");
}

fn file_stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn split_binaries_read_select_run_and_inline_like_the_fat_ones() {
    let fx = shrink_fixtures::build();
    for (name, lib) in &fx.libs {
        check_binary(&fx, &format!("lib-{name}"), lib, true);
    }
    for (name, exe) in &fx.exes {
        check_binary(&fx, &format!("exe-{name}"), exe, false);
    }
}

fn flip(p: &Path, at: usize, mask: u8) {
    let mut d = std::fs::read(p).unwrap();
    let at = at % d.len();
    d[at] ^= mask;
    std::fs::write(p, d).unwrap();
}

fn no_panic_codes(args: &[&OsStr]) -> i32 {
    let o = run(args);
    let c = o.status.code().expect("exit code (not a signal)");
    assert!((0..=2).contains(&c), "{args:?}: exit {c}");
    c
}

#[test]
fn missing_damaged_archives_and_markers_are_explained() {
    let fx = shrink_fixtures::build();
    let fat = &fx.libs[0].1;
    let root = fx.dir.path().join("damage");
    let out = root.join("lib/libt-lld.so");
    split(fat, &out, &[]);
    let kdir = root.join(".kpack");

    // -o naming the input is refused and the input is left alone.
    let copy = root.join("copy.so");
    std::fs::copy(fat, &copy).unwrap();
    let o = run(&[
        os("kpack"),
        os("split"),
        copy.as_os_str(),
        os("--group"),
        os("t"),
        os("-o"),
        copy.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("names the input"));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(fat).unwrap());

    // A missing archive: select and doctor exit 1 naming the file and the package.
    let a1030 = kdir.join("t_gfx1030.kpack");
    let saved = std::fs::read(&a1030).unwrap();
    std::fs::remove_file(&a1030).unwrap();
    let o = run(&[
        os("select"),
        os("--json"),
        os("--device"),
        os("gfx1030"),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    for u in v["files"][0]["bundles"].as_array().unwrap() {
        assert_eq!(u["error_code"], 13);
        assert_eq!(u["missing"], "t_gfx1030.kpack");
        assert_eq!(u["package"], "rocm-sdk-device-gfx1030");
    }
    let o = run(&[os("doctor"), os("--device"), os("gfx1030"), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("FAIL")
            && t.contains("t_gfx1030.kpack")
            && t.contains("install rocm-sdk-device-gfx1030"),
        "{t}"
    );
    // Other devices still load.
    let o = run(&[
        os("select"),
        os("--device"),
        os("gfx90a:sramecc+:xnack+"),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    std::fs::write(&a1030, &saved).unwrap();

    // A truncated archive: clear errors naming it, for every length.
    let step = (saved.len() / 23).max(1);
    for cut in (0..saved.len()).step_by(step) {
        std::fs::write(&a1030, &saved[..cut]).unwrap();
        let c = no_panic_codes(&[os("verify"), out.as_os_str()]);
        assert_eq!(c, 1, "cut at {cut}");
        let o = run(&[os("list"), out.as_os_str()]);
        assert_eq!(o.status.code(), Some(2), "cut at {cut}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("t_gfx1030.kpack"));
        no_panic_codes(&[os("select"), os("--device"), os("gfx1030"), out.as_os_str()]);
        no_panic_codes(&[
            os("extract"),
            out.as_os_str(),
            os("-o"),
            root.join("xt").as_os_str(),
        ]);
        no_panic_codes(&[os("kpack"), os("list"), os("--check"), a1030.as_os_str()]);
    }
    // Bit flips anywhere in an archive: never a panic; the frame header flip is named.
    for (i, at) in (0..saved.len()).step_by(step).enumerate() {
        std::fs::write(&a1030, &saved).unwrap();
        flip(&a1030, at, 1 << (i % 8));
        for cmd in [
            vec![os("verify"), out.as_os_str()],
            vec![os("list"), os("--check"), out.as_os_str()],
            vec![os("select"), os("--device"), os("gfx1030"), out.as_os_str()],
            vec![os("size"), out.as_os_str()],
            vec![os("inspect"), a1030.as_os_str()],
        ] {
            no_panic_codes(&cmd);
        }
    }
    std::fs::write(&a1030, &saved).unwrap();
    flip(&a1030, 0x48, 0xff); // the first zstd frame's magic
    let o = run(&[os("verify"), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let t = String::from_utf8_lossy(&o.stdout);
    // The frame index is checked when the archive is read: a frame without the zstd magic.
    assert!(
        t.contains("zstd frame 0 at 0x48 does not start with the zstd magic"),
        "{t}"
    );
    // The damage decides the answer: an error (exit 2), naming it.
    let o = run(&[os("select"), os("--device"), os("gfx1030"), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("zstd magic"));
    std::fs::write(&a1030, &saved).unwrap();

    // A damaged marker.
    let good = std::fs::read(&out).unwrap();
    let at = good
        .windows(19)
        .position(|w| w == b"\xb2kpack_search_paths")
        .expect("marker")
        - 1;
    let mut bad = good.clone();
    bad[at] = 0xc1; // never used in MessagePack
    let damaged = root.join("lib/libt-bad.so");
    std::fs::write(&damaged, &bad).unwrap();
    let o = run(&[os("verify"), damaged.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("marker does not parse"));
    let o = run(&[
        os("select"),
        os("--json"),
        os("--device"),
        os("gfx1030"),
        damaged.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o)["files"][0]["bundles"][0]["error_code"], 12);
    // A truncated or bit-flipped split binary: never a panic.
    for cut in (0..good.len()).step_by(good.len() / 17) {
        std::fs::write(&damaged, &good[..cut]).unwrap();
        no_panic_codes(&[os("list"), damaged.as_os_str()]);
        no_panic_codes(&[os("verify"), damaged.as_os_str()]);
        no_panic_codes(&[
            os("kpack"),
            os("inline"),
            damaged.as_os_str(),
            os("-o"),
            root.join("i.so").as_os_str(),
        ]);
    }
    for i in 0..40 {
        let mut b = good.clone();
        let at = (i * 7919 + 3) % b.len();
        b[at] ^= 1 << (i % 8);
        std::fs::write(&damaged, &b).unwrap();
        no_panic_codes(&[os("list"), damaged.as_os_str()]);
        no_panic_codes(&[
            os("select"),
            os("--device"),
            os("gfx1030"),
            damaged.as_os_str(),
        ]);
    }

    // A second binary split into the same archives, one of which cannot be written (a
    // directory stands at its path, the last in architecture order): the split fails naming
    // it, and every other archive is as it was (the archives are renamed into place only once
    // all are written), the binary is not written and no temporary file is left.
    let mut names: Vec<_> = std::fs::read_dir(&kdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 2, "{names:?}");
    let blocked = names.pop().unwrap();
    let before: Vec<Vec<u8>> = names.iter().map(|p| std::fs::read(p).unwrap()).collect();
    std::fs::remove_file(&blocked).unwrap();
    std::fs::create_dir(&blocked).unwrap();
    let second = root.join("lib/libt-second.so");
    let o = run(&[
        os("kpack"),
        os("split"),
        fat.as_os_str(),
        os("--group"),
        os("t"),
        os("-o"),
        second.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&*blocked.file_name().unwrap().to_string_lossy()),
        "{err}"
    );
    for (p, b) in names.iter().zip(&before) {
        assert!(std::fs::read(p).unwrap() == *b, "{} changed", p.display());
    }
    assert!(!second.exists());
    let left: Vec<_> = std::fs::read_dir(&kdir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".gfxkit-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Once it can be written, the same split adds the second binary's kernels to each.
    std::fs::remove_dir(&blocked).unwrap();
    split(fat, &second, &[]);
    for (p, b) in names.iter().zip(&before) {
        assert!(std::fs::read(p).unwrap().len() > b.len(), "{}", p.display());
    }
}

#[test]
fn split_of_a_tree_and_uncompressed_archives() {
    let fx = shrink_fixtures::build();
    let tree = fx.dir.path().join("tree");
    std::fs::create_dir_all(tree.join("lib")).unwrap();
    std::fs::create_dir_all(tree.join("share")).unwrap();
    std::fs::copy(&fx.libs[0].1, tree.join("lib/libt.so.1")).unwrap();
    std::os::unix::fs::symlink("libt.so.1", tree.join("lib/libt.so")).unwrap();
    std::fs::copy(&fx.exes[0].1, tree.join("app")).unwrap();
    std::fs::write(tree.join("share/readme"), "text\n").unwrap();
    let out = fx.dir.path().join("tree-out");
    let r = json(&ok(&[
        os("kpack"),
        os("split"),
        os("-r"),
        tree.as_os_str(),
        os("--group"),
        os("rocm"),
        os("-o"),
        out.as_os_str(),
        os("--compression"),
        os("none"),
        os("--json"),
    ]));
    assert_eq!(r["binaries"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["copied"], 1);
    assert_eq!(
        std::fs::read_link(out.join("lib/libt.so")).unwrap(),
        PathBuf::from("libt.so.1")
    );
    assert_eq!(std::fs::read(out.join("share/readme")).unwrap(), b"text\n");
    let names: Vec<&str> = r["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kernel_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "lib/libt.so.1"]);
    for a in std::fs::read_dir(out.join(".kpack")).unwrap() {
        let p = a.unwrap().path();
        let v = json(&ok(&[
            os("kpack"),
            os("list"),
            os("--json"),
            os("--check"),
            p.as_os_str(),
        ]));
        assert_eq!(v["archives"][0]["scheme"], "none");
        assert_eq!(v["archives"][0]["group"], "rocm");
    }
    assert_eq!(
        device_entries(&out.join("lib/libt.so.1")),
        device_entries(&fx.libs[0].1)
    );
    assert_eq!(
        device_entries(&out.join("app")),
        device_entries(&fx.exes[0].1)
    );
    // The executable at the root finds the archives through ./.kpack.
    let t = run_kpack(&out.join("app"), Some(&fx.dir.path().display().to_string()));
    assert!(t.contains("path=.kpack/rocm_@GFXARCH@.kpack"), "{t}");

    // A prune of the split tree keeps or drops each archive by its architectures; the split
    // binaries, whose device code is in the archives, are kept as they are.
    let pruned = fx.dir.path().join("tree-pruned");
    let r = json(&ok(&[
        os("prune"),
        os("--keep"),
        os("gfx90a"),
        out.as_os_str(),
        os("-o"),
        pruned.as_os_str(),
        os("--json"),
    ]));
    let files = r["files"].as_array().unwrap();
    let file = |p: &str| {
        files
            .iter()
            .find(|f| f["path"] == p)
            .unwrap_or_else(|| panic!("{p}: {r}"))
    };
    for (arch, action) in [
        ("gfx1030", "dropped"),
        ("gfx90a:xnack+", "kept"),
        ("gfx90a:xnack-", "kept"),
    ] {
        let f = file(&format!(".kpack/rocm_{arch}.kpack"));
        assert_eq!(
            (&f["kind"], &f["action"]),
            (&"kpack".into(), &action.into()),
            "{f}"
        );
        assert_eq!(f["targets"][0], arch);
        assert_eq!(
            pruned.join(format!(".kpack/rocm_{arch}.kpack")).exists(),
            action == "kept"
        );
    }
    for bin in ["app", "lib/libt.so.1"] {
        let f = file(bin);
        assert_eq!(
            (&f["kind"], &f["action"]),
            (&"host".into(), &"kept".into()),
            "{f}"
        );
        assert!(
            f["note"].as_str().unwrap().contains("split by kpack"),
            "{f}"
        );
        assert_eq!(
            std::fs::read(pruned.join(bin)).unwrap(),
            std::fs::read(out.join(bin)).unwrap()
        );
    }
    // What the pruned library loads: its gfx90a code, nothing for gfx1030.
    let entries = device_entries(&pruned.join("lib/libt.so.1"));
    let ids: Vec<&str> = entries
        .iter()
        .flatten()
        .map(|(id, _)| id.as_str())
        .collect();
    assert!(
        !ids.is_empty() && ids.iter().all(|id| id.contains("gfx90a")),
        "{ids:?}"
    );
    // Split again with overlays, the archives of the split tree go to their processors'
    // overlays (they went to generic/ before the door placed them), the binaries to generic/.
    let layered = fx.dir.path().join("tree-overlays");
    ok(&[
        os("kpack"),
        os("split"),
        os("-r"),
        out.as_os_str(),
        os("--group"),
        os("again"),
        os("--overlays"),
        os("-o"),
        layered.as_os_str(),
    ]);
    for (dir, arch) in [
        ("gfx1030", "gfx1030"),
        ("gfx90a", "gfx90a:xnack+"),
        ("gfx90a", "gfx90a:xnack-"),
    ] {
        let name = format!(".kpack/rocm_{arch}.kpack");
        assert_eq!(
            std::fs::read(layered.join(dir).join(&name)).unwrap(),
            std::fs::read(out.join(&name)).unwrap(),
            "{dir}/{name}"
        );
        assert!(!layered.join("generic").join(&name).exists());
    }
    assert!(layered.join("generic/lib/libt.so.1").is_file());

    // The split tree runs where the fat one does: a `gfx90a` device (xnack unknown) finds
    // the `gfx90a:xnack±` archives under the setting it has, as it finds the fat library's
    // `gfx90a:xnack±` entries. With only the xnack- archive it needs xnack-, as the fat
    // library with only that entry does.
    for tree in [&tree, &out, &pruned] {
        let o = ok(&[os("check"), os("--require"), os("gfx90a"), tree.as_os_str()]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("0 fail"), "{}: {text}", tree.display());
    }
    std::fs::remove_file(pruned.join(".kpack/rocm_gfx90a:xnack+.kpack")).unwrap();
    let v = json(&ok(&[
        os("doctor"),
        os("--device"),
        os("gfx90a"),
        os("--json"),
        pruned.join("lib/libt.so.1").as_os_str(),
    ]));
    let f = &v["files"][0];
    assert_eq!(f["runs_on"]["gfx90a"], true, "{f}");
    assert_eq!(f["needs"]["gfx90a"], "xnack-", "{f}");
    let v = json(&run(&[
        os("doctor"),
        os("--device"),
        os("gfx90a:xnack+"),
        os("--json"),
        pruned.join("lib/libt.so.1").as_os_str(),
    ]));
    assert_eq!(v["files"][0]["runs_on"]["gfx90a:xnack+"], false, "{v}");
    // select says what the loader picks under that setting, and what it needs.
    let o = ok(&[
        os("select"),
        os("--device"),
        os("gfx90a"),
        pruned.join("lib/libt.so.1").as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("gfx90a:xnack- (kpack: ") && text.contains(", needs xnack-"),
        "{text}"
    );
    // So does select of the archive named directly.
    let o = ok(&[
        os("select"),
        os("--device"),
        os("gfx90a"),
        pruned.join(".kpack/rocm_gfx90a:xnack-.kpack").as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        !text.contains("none:") && text.contains(", needs xnack-"),
        "{text}"
    );

    // One archive named on its own is kept or dropped whole only with its directory.
    let one = fx.dir.path().join("one.kpack");
    let o = run(&[
        os("prune"),
        os("--drop"),
        os("gfx1030"),
        out.join(".kpack/rocm_gfx1030.kpack").as_os_str(),
        os("-o"),
        one.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("a kpack file for gfx1030") && e.contains("would drop it"),
        "{e}"
    );
    assert!(!one.exists());
    // A selection that keeps no archive is refused, as for a fat tree.
    let o = run(&[
        os("prune"),
        os("--keep"),
        os("gfx942"),
        out.as_os_str(),
        os("--dry-run"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("would leave no device code"));
}

/// A split of several binaries of which one cannot be split writes nothing: the host-only
/// binaries of those split before it, written to temporary files as each is split, are removed
/// with the directories made for them.
#[test]
fn a_split_that_fails_on_one_binary_leaves_nothing_behind() {
    let fx = shrink_fixtures::build();
    let dir = fx.dir.path().join("split-fails");
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("libgood.so");
    std::fs::copy(&fx.libs[0].1, &good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    // Cut short: its section header table is gone.
    let bad = dir.join("libbad.so");
    std::fs::write(&bad, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let out = dir.join("out");
    let split_both = |to: &Path| {
        run(&[
            os("kpack"),
            os("split"),
            good.as_os_str(),
            bad.as_os_str(),
            os("--group"),
            os("t"),
            os("-o"),
            to.as_os_str(),
        ])
    };
    let o = split_both(&out.join("lib/x"));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("cannot split {}", bad.display())),
        "{err}"
    );
    assert!(
        !out.exists(),
        "{:?}",
        std::fs::read_dir(&out).map(|d| d.count())
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    // In an existing directory: nothing added there either.
    std::fs::create_dir_all(&out).unwrap();
    assert_eq!(split_both(&out).status.code(), Some(2));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    // The good one alone splits.
    ok(&[
        os("kpack"),
        os("split"),
        good.as_os_str(),
        os("--group"),
        os("t"),
        os("-o"),
        out.join("libgood.so").as_os_str(),
    ]);
    assert!(out.join("libgood.so").is_file());
}

/// Two libraries of one group, one built for fewer targets: the group's archive for a target
/// only the other has holds no code of the first, which is that library's lack of code for it
/// (kpack error 5, a failure), not damage.
#[test]
fn a_library_built_for_fewer_targets_than_its_group_lacks_them() {
    let fx = shrink_fixtures::build();
    let tree = fx.dir.path().join("group");
    std::fs::create_dir_all(tree.join("lib")).unwrap();
    std::fs::copy(&fx.libs[0].1, tree.join("lib/libwide.so")).unwrap();
    ok(&[
        os("prune"),
        os("--keep"),
        os("gfx90a"),
        fx.libs[0].1.as_os_str(),
        os("-o"),
        tree.join("lib/libnarrow.so").as_os_str(),
    ]);
    let out = fx.dir.path().join("group-split");
    ok(&[
        os("kpack"),
        os("split"),
        os("-r"),
        tree.as_os_str(),
        os("--group"),
        os("g"),
        os("-o"),
        out.as_os_str(),
    ]);
    assert!(out.join(".kpack/g_gfx1030.kpack").is_file());
    let narrow = out.join("lib/libnarrow.so");
    let o = run(&[
        os("check"),
        os("--json"),
        os("--require"),
        os("gfx1030,gfx90a"),
        narrow.as_os_str(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let f = &v["files"][0];
    assert_eq!(f["missing"], serde_json::json!(["gfx1030"]), "{v}");
    let why = f["why"]["gfx1030"].as_str().unwrap();
    assert!(
        why.contains("g_gfx1030.kpack lists gfx1030 but has no kernel")
            && why.contains("it holds no code of lib/libnarrow.so"),
        "{why}"
    );
    assert!(f["errors"].as_array().is_none_or(|e| e.is_empty()), "{v}");
    // The wider library loads there.
    let o = run(&[
        os("check"),
        os("--require"),
        os("gfx1030,gfx90a"),
        out.join("lib/libwide.so").as_os_str(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
