//! Kernel databases as device code: MIOpen `.kdb` and AOTriton `.aks2` files built by python3
//! (`kernel_db_fixtures.py`, following the formats' layouts) from clang-19 code objects, and a
//! Tensile index beside its code objects: listed, extracted byte for byte, counted by `size`,
//! found by `-r` walks, checked by `verify`; damage is a finding or a clear error.

mod common;
use common::gfxkit;
use gfxkit_testkit::{bundler_unbundle, hip_kernels, HipBuild};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Code objects for gfx90a and gfx1100 (clang-19, unbundled by clang-offload-bundler-19).
fn code_objects(dir: &Path) -> Vec<(String, PathBuf, Vec<u8>)> {
    let src = hip_kernels(3);
    let bundle = HipBuild::new(&src, &["gfx90a", "gfx1100"]).build(dir, "k");
    ["gfx90a", "gfx1100"]
        .iter()
        .map(|a| {
            let out = dir.join(format!("{a}.co"));
            let bytes = bundler_unbundle(&bundle, &format!("hipv4-amdgcn-amd-amdhsa--{a}"), &out);
            (a.to_string(), out, bytes)
        })
        .collect()
}

fn fixture(kind: &str, out: &Path, specs: &[String]) {
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

fn json(args: &[&str]) -> (i32, serde_json::Value, String) {
    let (code, out, err) = gfxkit(args);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v, err)
}

#[test]
fn kdb_records_list_extract_size_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cos = code_objects(d);
    let kdb = d.join("db/gfx90a68.kdb");
    std::fs::create_dir_all(kdb.parent().unwrap()).unwrap();
    let (a, b) = (&cos[0], &cos[1]);
    fixture(
        "kdb",
        &kdb,
        &[
            format!("conv.cl.o|-DX=1|{}", a.1.display()),
            format!("gemm.cl.o|-DY=2 -mcpu=gfx1100|{}|raw", b.1.display()),
        ],
    );
    let k = kdb.to_str().unwrap();

    // list: one unit, an entry per record; the target from the file name or -mcpu=.
    let (code, l, err) = json(&["list", "--json", k]);
    assert_eq!(code, 0, "{err}");
    let unit = &l["files"][0]["bundles"][0];
    assert_eq!(unit["format"], "miopen-kdb");
    let e = unit["entries"].as_array().unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0]["id"], "hipv4-amdgcn-amd-amdhsa--gfx90a");
    assert_eq!(e[0]["name"], "conv.cl.o");
    assert_eq!(e[0]["size"], a.2.len() as u64);
    assert_eq!(e[1]["id"], "hipv4-amdgcn-amd-amdhsa--gfx1100");
    assert_eq!(e[1]["size"], b.2.len() as u64);

    // extract: byte for byte, and --target picks records.
    let out = d.join("out");
    let (code, w, err) = json(&["extract", "--json", k, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let written = w["written"].as_array().unwrap();
    assert_eq!(written.len(), 2);
    for (x, co) in written.iter().zip([a, b]) {
        let got = std::fs::read(x["path"].as_str().unwrap()).unwrap();
        assert!(got == co.2, "{} differs from {}", x["path"], co.1.display());
    }
    let (code, w, _) = json(&[
        "extract",
        "--json",
        "--target",
        "gfx1100",
        k,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(w["written"].as_array().unwrap().len(), 1);

    // size: the records by architecture, found by a walk of the directory.
    let (code, s, err) = json(&["size", "--json", d.join("db").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let arch = |n: &str| {
        s["archs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["arch"] == n)
            .unwrap_or_else(|| panic!("no {n} in {s}"))
            .clone()
    };
    assert_eq!(arch("gfx90a")["uncompressed"], a.2.len() as u64);
    assert_eq!(arch("gfx1100")["uncompressed"], b.2.len() as u64);
    assert_eq!(s["files"][0]["kind"], "kernel-database");

    // verify: a clean database passes; a record whose MD5 is wrong is named.
    let (code, _, err) = gfxkit(&["verify", k]);
    assert_eq!(code, 0, "{err}");
    let bad = d.join("db/gfx1100.kdb");
    fixture(
        "kdb",
        &bad,
        &[
            format!("ok.cl.o|-mcpu=gfx1100|{}", b.1.display()),
            format!("bad.cl.o|-mcpu=gfx1100|{}|badhash", b.1.display()),
        ],
    );
    let (code, out, err) = gfxkit(&["verify", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("kern_db id 2 (bad.cl.o)") && out.contains("MD5"),
        "{out}"
    );

    // A truncated database is a clear error naming the file.
    let data = std::fs::read(&kdb).unwrap();
    let cut = d.join("cut.kdb");
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
    let (code, _, err) = gfxkit(&["list", cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cut.kdb"), "{err}");
}

#[test]
fn aks2_kernels_list_extract_and_walk() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cos = code_objects(d);
    let img = d.join("aotriton.images/amd-gfx90a/flash/attn_fwd.aks2");
    std::fs::create_dir_all(img.parent().unwrap()).unwrap();
    fixture(
        "aks2",
        &img,
        &[
            format!("attn_fwd/FONLY__a.hsaco|{}", cos[0].1.display()),
            format!("attn_fwd/FONLY__b.hsaco|{}", cos[1].1.display()),
        ],
    );
    let p = img.to_str().unwrap();
    let (code, l, err) = json(&["list", "--json", p]);
    assert_eq!(code, 0, "{err}");
    let unit = &l["files"][0]["bundles"][0];
    assert_eq!(unit["format"], "aks2");
    let e = unit["entries"].as_array().unwrap();
    assert_eq!(e[0]["id"], "hipv4-amdgcn-amd-amdhsa--gfx90a");
    assert_eq!(e[0]["name"], "attn_fwd/FONLY__a.hsaco");
    assert_eq!(e[0]["eflags_agree"], true);
    assert_eq!(e[1]["id"], "hipv4-amdgcn-amd-amdhsa--gfx1100");

    let outdir = tempfile::tempdir().unwrap();
    let out = outdir.path();
    let (code, w, err) = json(&["extract", "--json", p, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for (x, co) in w["written"].as_array().unwrap().iter().zip(&cos) {
        assert!(std::fs::read(x["path"].as_str().unwrap()).unwrap() == co.2);
    }

    // A walk finds the image (and the raw code objects beside the bundle).
    let (code, l, err) = json(&["list", "-r", "--json", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let paths: Vec<&str> = l["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.iter().any(|p| p.ends_with("attn_fwd.aks2")),
        "{paths:?}"
    );
    assert!(paths.iter().any(|p| p.ends_with("gfx90a.co")), "{paths:?}");

    // size counts raw code objects too.
    let (code, s, _) = json(&["size", "--json", d.to_str().unwrap()]);
    assert_eq!(code, 0);
    let raw: u64 = s["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "code-object")
        .map(|f| f["stored"].as_u64().unwrap())
        .sum();
    assert_eq!(raw, (cos[0].2.len() + cos[1].2.len()) as u64);

    // A damaged image: a clear error naming the file, never a panic.
    let mut data = std::fs::read(&img).unwrap();
    data.truncate(data.len() - 9);
    let cut = d.join("cut.aks2");
    std::fs::write(&cut, &data).unwrap();
    let (code, _, err) = gfxkit(&["list", cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cut.aks2") && err.contains("xz"), "{err}");
}

/// A stored (uncompressed) zip at `zip` holding `members` (name, file), as AOTriton packs its
/// images since mid 2026.
fn zip_pack(zip: &Path, members: &[(&str, &Path)]) {
    let mut args = vec![zip.display().to_string()];
    for (name, file) in members {
        args.push(name.to_string());
        args.push(file.display().to_string());
    }
    let st = Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED)\n\
             for name, path in zip(sys.argv[2::2], sys.argv[3::2]):\n    z.write(path, name)\n\
             z.close()",
        )
        .args(&args)
        .status()
        .expect("python3 writes the zip pack");
    assert!(st.success());
}

#[test]
fn aotriton_zip_packs_and_images_are_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cos = code_objects(d);
    let images = d.join("torch/lib/aotriton.images");
    let packed = d.join("attn_fwd_gfx90a.aks2");
    fixture(
        "aks2",
        &packed,
        &[format!("attn_fwd/FONLY__a.hsaco|{}", cos[0].1.display())],
    );
    let zip = images.join("amd-gfx90a/flash/attn_fwd.zip");
    std::fs::create_dir_all(zip.parent().unwrap()).unwrap();
    zip_pack(&zip, &[("FONLY__a.aks2", &packed)]);
    let loose = images.join("amd-gfx11xx/flash/attn_fwd.aks2");
    std::fs::create_dir_all(loose.parent().unwrap()).unwrap();
    fixture(
        "aks2",
        &loose,
        &[format!("attn_fwd/FONLY__b.hsaco|{}", cos[1].1.display())],
    );
    let z = zip.to_str().unwrap();

    // The pack's member is listed, extracted byte for byte and counted, as a loose image is.
    let (code, l, err) = json(&["list", "--json", z]);
    assert_eq!(code, 0, "{err}");
    let f = &l["files"][0];
    assert!(
        f["path"]
            .as_str()
            .unwrap()
            .ends_with("attn_fwd.zip!FONLY__a.aks2"),
        "{f}"
    );
    assert_eq!(f["bundles"][0]["format"], "aks2");
    assert_eq!(
        f["bundles"][0]["entries"][0]["id"],
        "hipv4-amdgcn-amd-amdhsa--gfx90a"
    );
    let outdir = tempfile::tempdir().unwrap();
    let (code, w, err) = json(&[
        "extract",
        "--json",
        z,
        "-o",
        outdir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let written = w["written"].as_array().unwrap();
    assert_eq!(written.len(), 1, "{w}");
    assert!(std::fs::read(written[0]["path"].as_str().unwrap()).unwrap() == cos[0].2);
    let (code, s, _) = json(&["size", "--json", images.to_str().unwrap()]);
    assert_eq!(code, 0);
    let archs: Vec<&str> = s["archs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arch"].as_str().unwrap())
        .collect();
    assert!(
        archs.contains(&"gfx90a") && archs.contains(&"gfx1100"),
        "{s}"
    );

    // doctor and select: every family's images, packed or loose, are one database.
    let root = d.join("torch");
    let (code, r, err) = json(&[
        "doctor",
        "--json",
        "--device",
        "gfx90a",
        "--device",
        "gfx1100",
        root.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{r}\n{err}");
    let files = r["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{r}");
    assert!(files[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("torch/lib/aotriton.images"));
    let (code, r, _) = json(&[
        "doctor",
        "--json",
        "--device",
        "gfx942",
        root.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        r["files"][0]["missing"]["gfx942"]
            .as_str()
            .unwrap()
            .contains("no code object for gfx942 (present: gfx1100 gfx90a)"),
        "{r}"
    );
    let (code, r, _) = json(&[
        "select",
        "--json",
        "--device",
        "gfx1100",
        root.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["files"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(
        r["files"][0]["bundles"][0]["files"],
        serde_json::json!(["amd-gfx11xx/flash/attn_fwd.aks2"])
    );

    // A damaged image inside a pack: verify names the member.
    let mut data = std::fs::read(&packed).unwrap();
    let n = data.len();
    data[n - 20] ^= 0x40;
    let bad = d.join("bad.aks2");
    std::fs::write(&bad, &data).unwrap();
    zip_pack(&zip, &[("FONLY__a.aks2", &bad)]);
    let (code, out, err) = gfxkit(&["verify", z]);
    assert_ne!(code, 0, "{out}");
    assert!(
        format!("{out}{err}").contains("attn_fwd.zip!FONLY__a.aks2"),
        "{out}\n{err}"
    );
}

#[test]
fn hipblaslt_mappings_keep_the_layout_rules() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("hipblaslt/library/gfx942");
    std::fs::create_dir_all(&d).unwrap();
    let touch = |n: &str| std::fs::write(d.join(n), b"").unwrap();
    let map = d.join("TensileLiteLibrary_lazy_gfx942_Mapping.dat");
    fixture(
        "mapping",
        &map,
        &["0|Cijk_a_gfx942".into(), "1|Cijk_b_fallback_gfx942".into()],
    );
    touch("TensileLibrary_lazy_gfx942.dat");
    touch("Cijk_a_gfx942.dat");
    touch("Cijk_b_fallback_gfx942.dat");
    let m = map.to_str().unwrap();
    let (code, l, err) = json(&["list", "--json", m]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(l["files"][0]["database"]["kind"], "tensile-mapping");
    assert_eq!(l["files"][0]["database"]["solutions"], 2);
    let (code, out, err) = gfxkit(&["verify", m]);
    assert_eq!(code, 0, "{out}{err}");

    // A mapped library gone, and a fallback library the mapping leaves out.
    std::fs::remove_file(d.join("Cijk_a_gfx942.dat")).unwrap();
    touch("Cijk_c_fallback_gfx942.dat.zlib");
    let (code, out, _) = gfxkit(&["verify", m]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("solution 0: library Cijk_a_gfx942.dat is not there"),
        "{out}"
    );
    assert!(
        out.contains("fallback library Cijk_c_fallback_gfx942.dat.zlib is not in the mapping"),
        "{out}"
    );

    // A truncated mapping: an error naming the file.
    let data = std::fs::read(&map).unwrap();
    std::fs::write(&map, &data[..data.len() - 3]).unwrap();
    let (code, out, err) = gfxkit(&["verify", m]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("TensileLiteLibrary_lazy_gfx942_Mapping.dat"),
        "{out}{err}"
    );
}

/// In hipBLASLt's layout (a directory holding mappings), a lazy master index without its own
/// mapping is a finding of `verify`; beside its mapping, or in rocBLAS's layout (no mappings
/// at all), it is not.
#[test]
fn a_hipblaslt_lazy_master_without_its_mapping_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // {solutions: [], library: {type: Hardware, rows: []}}
    let mut master = vec![0x82, 0xa9];
    master.extend_from_slice(b"solutions");
    master.extend_from_slice(&[0x90, 0xa7]);
    master.extend_from_slice(b"library");
    master.extend_from_slice(&[0x82, 0xa4]);
    master.extend_from_slice(b"type");
    master.push(0xa8);
    master.extend_from_slice(b"Hardware");
    master.push(0xa4);
    master.extend_from_slice(b"rows");
    master.push(0x90);
    let m = d.join("TensileLibrary_lazy_gfx950.dat");
    std::fs::write(&m, &master).unwrap();
    let ms = m.to_str().unwrap();
    let (code, out, err) = gfxkit(&["verify", ms]);
    assert_eq!(code, 0, "rocBLAS's layout: {out}{err}");

    fixture(
        "mapping",
        &d.join("TensileLiteLibrary_lazy_gfx942_Mapping.dat"),
        &["0|Cijk_a_gfx942".into()],
    );
    let (code, out, _) = gfxkit(&["verify", ms]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("its mapping TensileLiteLibrary_lazy_gfx950_Mapping.dat is not beside it"),
        "{out}"
    );
    fixture(
        "mapping",
        &d.join("TensileLiteLibrary_lazy_gfx950_Mapping.dat"),
        &["0|Cijk_a_gfx950".into()],
    );
    let (code, out, err) = gfxkit(&["verify", ms]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A rocBLAS library directory whose index is YAML (`TensileLibrary.yaml`, as rocBLAS built
/// with `TENSILE_YAML` reads it), in the block and flow styles Tensile's writer mixes, beside
/// the code objects its rows name: listed, its solutions resolved to the kernels, verified,
/// judged per device, and pruned to one processor with the index written again as YAML.
#[test]
fn a_yaml_tensile_index_is_read_judged_and_pruned_like_messagepack() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("rocblas/library");
    std::fs::create_dir_all(&lib).unwrap();
    for (arch, path, _) in code_objects(dir.path()) {
        std::fs::rename(&path, lib.join(format!("TensileLibrary_{arch}.co"))).unwrap();
    }
    let row = |arch: &str, first: u32| {
        format!(
            "  - predicate: {{type: AMDGPU, value: {{type: Processor, value: {arch}}}}}\n    \
             library: {{type: Matching, table: [{{key: [1, 2], index: {first}, speed: 1.5}}, \
             {{key: [3, 4], index: {}, speed: .inf}}]}}\n",
            first + 1
        )
    };
    let yaml = format!(
        "---\n# written as Tensile writes it\nlibrary:\n  type: Hardware\n  rows:\n{}{}solutions:\n\
         - {{index: 0, name: k0}}\n- {{index: 1, name: k1}}\n- index: 2\n  name: 'k2'\n\
         - {{index: 3, name: \"k0\"}}\n",
        row("gfx90a", 0),
        row("gfx1100", 2)
    );
    let index = lib.join("TensileLibrary.yaml");
    std::fs::write(&index, yaml).unwrap();
    let ix = index.to_str().unwrap();

    let (code, l, err) = json(&["list", "--json", ix]);
    assert_eq!(code, 0, "{err}");
    let db = &l["files"][0]["database"];
    assert_eq!(db["kind"], "tensile", "{l}");
    assert_eq!(db["solutions"], 4, "{l}");
    let procs: Vec<&str> = db["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["processor"].as_str().unwrap())
        .collect();
    assert_eq!(procs, ["gfx90a", "gfx1100"]);

    // Every solution resolves to a kernel of its processor's code object.
    let (code, k, err) = json(&["kernels", "--json", ix]);
    assert_eq!(code, 0, "{err}");
    let sols = k["solutions"].as_array().unwrap();
    assert_eq!(sols.len(), 4, "{k}");
    assert!(sols.iter().all(|s| s["present"] == true), "{k}");
    let (code, out, err) = gfxkit(&["verify", ix]);
    assert_eq!(code, 0, "{out}{err}");

    // Per device: gfx90a is served; gfx1030 has no row, no code object.
    let root = dir.path().join("rocblas");
    let r = root.to_str().unwrap();
    let (code, out, _) = gfxkit(&["doctor", "--device", "gfx90a", r]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = gfxkit(&["doctor", "--device", "gfx1030", r]);
    assert_eq!(code, 1, "{out}");

    // Pruned to gfx90a: the index is YAML again, with gfx90a's row and its two solutions.
    let out_dir = dir.path().join("pruned");
    let (code, p, err) = json(&[
        "prune",
        "--json",
        "--keep",
        "gfx90a",
        r,
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let pruned = out_dir.join("library/TensileLibrary.yaml");
    let text = std::fs::read_to_string(&pruned).unwrap();
    assert!(text.starts_with("---\n"), "{text}");
    assert!(
        !out_dir.join("library/TensileLibrary_gfx1100.co").exists(),
        "{p}"
    );
    let (code, l, err) = json(&["list", "--json", pruned.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let db = &l["files"][0]["database"];
    assert_eq!(db["solutions"], 2, "{l}");
    assert_eq!(db["rows"].as_array().unwrap().len(), 1, "{l}");
    let (code, out, err) = gfxkit(&["verify", "-r", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");

    // Damage: a cut index is an error naming the file and the line.
    std::fs::write(&index, &std::fs::read(&index).unwrap()[..60]).unwrap();
    let (code, out, err) = gfxkit(&["list", ix]);
    assert_ne!(code, 0, "{out}");
    assert!(
        format!("{out}{err}").contains("TensileLibrary.yaml"),
        "{out}{err}"
    );
}
