//! `check`, `diff`, `size --duplicates` and doctor's remedies on real libraries: Debian's
//! librocrand (`target/real`, from `scripts/ensure-real-inputs`), the torch-scatter-rocm wheel
//! and clang-19 builds. The answers are derived from `clang-offload-bundler-19 -list` (and
//! `-unbundle` for sizes) and the processor table, not written down.

use gfxkit_host::select::runtime_generic;
use gfxkit_spec::{Arch, Processor, PROCESSORS};
use gfxkit_testkit::{bundler_list, bundler_unbundle, dump_section, llvm_tool, run_ok};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn real(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/real");
    std::fs::read_dir(&dir)
        .ok()
        .and_then(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(name))
            })
        })
        .unwrap_or_else(|| {
            panic!(
                "{name}* is missing from {}: run `bash scripts/ensure-real-inputs`",
                dir.display()
            )
        })
}

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The AMDGPU entry IDs clang-offload-bundler-19 lists for the `.hip_fatbin` of `lib`.
fn fatbin_ids(lib: &Path, scratch: &Path) -> Vec<String> {
    let fatbin = scratch.join(format!(
        "{}.hip_fatbin",
        lib.file_name().unwrap().to_string_lossy()
    ));
    dump_section(lib, ".hip_fatbin", &fatbin);
    let ids: Vec<String> = bundler_list(&fatbin)
        .into_iter()
        .filter(|i| i.starts_with("hipv4-amdgcn"))
        .collect();
    assert!(!ids.is_empty());
    ids
}

fn targets(ids: &[String]) -> BTreeSet<String> {
    ids.iter()
        .map(|i| i.split_once("--").unwrap().1.to_owned())
        .collect()
}

/// A processor of LLVM 19 whose code is nowhere in `present`, nor its runtime generic target.
fn absent(present: &BTreeSet<String>) -> &'static Processor {
    let has = |n: &str| present.iter().any(|t| t.split(':').next() == Some(n));
    PROCESSORS
        .iter()
        .filter(|p| p.arch == Arch::Amdgcn && p.in_llvm19() && !p.is_generic())
        .find(|p| !has(p.name) && !runtime_generic(p).is_some_and(|g| has(g.name)))
        .expect("some processor is absent")
}

/// Takes `member` out of the zip file `pkg` (with Python's zipfile) into `dir`.
fn unzip(pkg: &Path, member: &str, dir: &Path) -> PathBuf {
    let out = dir.join(member.rsplit('/').next().unwrap());
    run_ok(Command::new("python3").args([
        "-c",
        "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
        s(pkg),
        member,
        s(&out),
    ]));
    out
}

#[test]
fn check_passes_exactly_the_targets_clang_lists() {
    let d = tempfile::tempdir().unwrap();
    let lib = real("librocrand.so.1.1");
    let present = targets(&fatbin_ids(&lib, d.path()));
    let all: Vec<&str> = present.iter().map(String::as_str).collect();
    let o = gfxkit(&[
        "check",
        "--require",
        &all.join(","),
        "--exactly",
        "--json",
        s(&lib),
    ]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(0), "{r}");
    assert_eq!(r["summary"]["passed"], 1);
    assert_eq!(r["files"][0]["targets"], serde_json::json!(all));
    // One left out: beyond the list, by name.
    let o = gfxkit(&[
        "check",
        "--require",
        &all[1..].join(","),
        "--exactly",
        "--json",
        s(&lib),
    ]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(r["files"][0]["extra"], serde_json::json!([all[0]]));
    // A processor it has no code for: missing, with the nearest present.
    let p = absent(&present);
    let o = gfxkit(&["check", "--require", p.name, s(&lib)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("lacks {}", p.name)), "{text}");
    assert!(text.contains("0 pass, 1 fail"), "{text}");
    // The same library inside Debian's package, by member.
    let deb = real("librocrand1_");
    let o = gfxkit(&["check", "--require", &all.join(","), "--exactly", s(&deb)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn check_of_a_wheel_member_and_a_bare_processor() {
    let d = tempfile::tempdir().unwrap();
    let wheel = real("torch_scatter_rocm-2.1.2.post7-");
    let member = "torch_scatter/_scatter_cuda.so";
    let so = unzip(&wheel, member, d.path());
    let present = targets(&fatbin_ids(&so, d.path()));
    let all: Vec<&str> = present.iter().map(String::as_str).collect();
    let named = format!("{}!{member}", s(&wheel));
    let o = gfxkit(&[
        "check",
        "--require",
        &all.join(","),
        "--exactly",
        "--json",
        &named,
    ]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(0), "{r}");
    assert_eq!(r["files"][0]["path"], named.as_str());
    // Every member of the wheel, against a processor none of them has code for.
    let p = absent(&present);
    let o = gfxkit(&["check", "--require", p.name, "--json", s(&wheel)]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(r["summary"]["files"].as_u64().unwrap() >= 1);
    for f in r["files"].as_array().unwrap() {
        assert_eq!(f["missing"], serde_json::json!([p.name]), "{f}");
    }
}

#[test]
fn diff_of_a_pruned_copy_names_the_targets_dropped_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let lib = real("librocrand.so.1.1");
    let (old, new) = (d.path().join("old"), d.path().join("new"));
    std::fs::create_dir_all(old.join("lib")).unwrap();
    std::fs::create_dir_all(new.join("lib")).unwrap();
    std::fs::copy(&lib, old.join("lib/librocrand.so.1")).unwrap();
    let before = targets(&fatbin_ids(&lib, d.path()));
    let keep: Vec<&str> = before.iter().take(2).map(String::as_str).collect();
    let o = gfxkit(&[
        "prune",
        "--keep",
        &keep.join(","),
        s(&old.join("lib/librocrand.so.1")),
        "-o",
        s(&new.join("lib/librocrand.so.1")),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let after = targets(&fatbin_ids(&new.join("lib/librocrand.so.1"), d.path()));
    let o = gfxkit(&["diff", "--json", s(&old), s(&new)]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(1), "{r}");
    let f = &r["files"][0];
    assert_eq!(f["path"], "lib/librocrand.so.1");
    assert_eq!(f["status"], "modified");
    let removed: Vec<&String> = before.difference(&after).collect();
    assert_eq!(f["removed_ids"], serde_json::json!(removed));
    // Targets by the devices they served: both xnack settings of gfx90a are every gfx90a.
    assert_eq!(keep, ["gfx1030", "gfx803"]);
    assert_eq!(
        f["removed"],
        serde_json::json!(["gfx900:xnack-", "gfx906:xnack-", "gfx908:xnack-", "gfx90a"])
    );
    assert_eq!(f["added"], serde_json::json!([]));
    assert_eq!(f["added_ids"], serde_json::json!([]));
    // The kept code objects are the same bytes.
    assert_eq!(f["changed"], serde_json::json!([]));
    assert_eq!(f["code_objects"]["old"].as_u64(), Some(before.len() as u64));
    assert_eq!(f["code_objects"]["new"].as_u64(), Some(after.len() as u64));
    assert!(f["kernels"]["old"].as_u64() > f["kernels"]["new"].as_u64());
    // A build against itself is equal; text says so.
    let o = gfxkit(&["diff", s(&old), s(&old)]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("device code is the same"));
}

#[test]
fn duplicates_across_copies_and_a_package() {
    let d = tempfile::tempdir().unwrap();
    let lib = real("librocrand.so.1.1");
    let tree = d.path().join("tree");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::create_dir_all(tree.join("b")).unwrap();
    std::fs::copy(&lib, tree.join("a/librocrand.so.1")).unwrap();
    std::fs::copy(&lib, tree.join("b/librocrand.so.1")).unwrap();
    std::fs::copy(real("librocrand1_"), tree.join("rocrand.deb")).unwrap();
    // Each code object clang-offload-bundler takes out of the library, stored three times.
    let fatbin = d.path().join("f.hip_fatbin");
    dump_section(&lib, ".hip_fatbin", &fatbin);
    let ids: Vec<String> = bundler_list(&fatbin)
        .into_iter()
        .filter(|i| i.starts_with("hipv4-amdgcn"))
        .collect();
    let mut want = 0u64;
    for (i, id) in ids.iter().enumerate() {
        let co = bundler_unbundle(&fatbin, id, &d.path().join(format!("{i}.co")));
        want += 2 * co.len() as u64;
    }
    let o = gfxkit(&["size", "--duplicates", "--json", s(&tree)]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(0), "{r}");
    let dup = &r["duplicates"];
    assert_eq!(dup["groups"].as_array().unwrap().len(), ids.len());
    for g in dup["groups"].as_array().unwrap() {
        assert_eq!(g["count"], 3, "{g}");
        assert_eq!(g["places"].as_array().unwrap().len(), 3);
        assert_eq!(g["sha256"].as_str().unwrap().len(), 64);
    }
    assert_eq!(dup["bytes"].as_u64(), Some(want));
    let o = gfxkit(&["size", "--duplicates", "--top", "1", s(&tree)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!(
            "duplicates: {} code objects stored more than once",
            ids.len()
        )),
        "{text}"
    );
}

#[test]
fn remedies_on_debians_librocrand() {
    let d = tempfile::tempdir().unwrap();
    let lib = real("librocrand.so.1.1");
    let present = targets(&fatbin_ids(&lib, d.path()));
    // A device of the same instruction set as a processor present, but absent itself.
    let (device, code) = PROCESSORS
        .iter()
        .filter(|p| p.arch == Arch::Amdgcn && !present.contains(p.name))
        .find_map(|p| {
            p.same_isa()
                .find(|q| present.contains(q.name))
                .map(|q| (p, q))
        })
        .expect("librocrand has gfx1030 code");
    let (major, minor, stepping) = code.isa_version().unwrap();
    let o = gfxkit(&["doctor", "--device", device.name, "--json", s(&lib)]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(1), "{r}");
    let rem = r["files"][0]["remedies"].as_array().unwrap();
    assert_eq!(rem[0]["kind"], "override");
    assert_eq!(rem[0]["standing"], "unsupported-by-amd");
    assert!(rem[0]["text"].as_str().unwrap().contains(&format!(
        "HSA_OVERRIDE_GFX_VERSION={major}.{minor}.{stepping}"
    )));
    // Which the runtime reads back as that processor.
    assert_eq!(
        gfxkit_host::kfd::processor_for_override(&format!("{major}.{minor}.{stepping}"))
            .unwrap()
            .name,
        code.name
    );
    // A GFX11 device: no processor of its instruction set is present; the generic target.
    let o = gfxkit(&["doctor", "--device", "gfx1101", "--json", s(&lib)]);
    let r = json(&o);
    let rem = r["files"][0]["remedies"].as_array().unwrap();
    let kinds: Vec<&str> = rem.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["generic"]);
    let g = runtime_generic(Processor::by_name("gfx1101").unwrap()).unwrap();
    assert!(rem[0]["text"]
        .as_str()
        .unwrap()
        .contains(&format!("--offload-arch={} ", g.name)));
    // xnack on where the library has only xnack-off code for the processor: switch it.
    let off: Vec<&String> = present
        .iter()
        .filter(|t| t.ends_with(":xnack-"))
        .filter(|t| !present.contains(&t.replace(":xnack-", ":xnack+")))
        .collect();
    let t = off.first().expect("a target with xnack- code only");
    let device = t.replace(":xnack-", ":xnack+");
    let o = gfxkit(&["doctor", "--device", &device, s(&lib)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text.contains("remedy (supported): run with HSA_XNACK=0"),
        "{text}"
    );
    let _ = llvm_tool("clang-offload-bundler");
}

/// A shared library clang-19 builds for `archs`, split by `gfxkit kpack split` into
/// `<dir>/lib/libw.so` and `<dir>/.kpack/w_<arch>.kpack`; returns the split library.
fn split_library(dir: &Path, archs: &[&str]) -> PathBuf {
    let src = dir.join("w.hip");
    std::fs::write(
        &src,
        format!(
            "#define __global__ __attribute__((global))\n\
             struct dim3 {{ unsigned x, y, z; }};\n\
             typedef struct ihipStream_t *hipStream_t;\n\
             extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, \
             unsigned long shm, hipStream_t s);\n{}",
            gfxkit_testkit::hip_kernels(3)
        ),
    )
    .unwrap();
    let obj = dir.join("w.o");
    let mut cmd = Command::new(llvm_tool("clang++"));
    cmd.args([
        "-x",
        "hip",
        "-nogpulib",
        "-nogpuinc",
        "-O1",
        "-fPIC",
        "-cuid=w",
    ]);
    for a in archs {
        cmd.arg(format!("--offload-arch={a}"));
    }
    run_ok(cmd.arg("-c").arg(&src).arg("-o").arg(&obj));
    let fat = dir.join("libw-fat.so");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-fuse-ld=lld", "-shared"])
            .arg(&obj)
            .arg("-o")
            .arg(&fat),
    );
    let out = dir.join("lib/libw.so");
    let o = gfxkit(&["kpack", "split", s(&fat), "--group", "w", "-o", s(&out)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn check_and_remedies_through_kpack_archives() {
    let d = tempfile::tempdir().unwrap();
    let lib = split_library(d.path(), &["gfx1030", "gfx90a:xnack-"]);
    let kdir = d.path().join(".kpack");
    // The archives hold what the fat library held.
    let o = gfxkit(&[
        "check",
        "--require",
        "gfx1030,gfx90a:xnack-",
        "--exactly",
        s(&lib),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // A gfx1031: the kpack loader would find gfx1030 code under the override.
    let o = gfxkit(&["doctor", "--device", "gfx1031", "--json", s(&lib)]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(1), "{r}");
    let rem = &r["files"][0]["remedies"];
    assert_eq!(rem[0]["kind"], "override", "{r}");
    assert!(rem[0]["text"]
        .as_str()
        .unwrap()
        .contains("HSA_OVERRIDE_GFX_VERSION=10.3.0"));
    // The gfx90a archive gone: the package that provides it.
    let gone = kdir.join("w_gfx90a:xnack-.kpack");
    assert!(gone.is_file());
    std::fs::remove_file(&gone).unwrap();
    let o = gfxkit(&[
        "doctor",
        "--device",
        "gfx90a:sramecc+:xnack-",
        "--json",
        s(&lib),
    ]);
    let r = json(&o);
    assert_eq!(o.status.code(), Some(1), "{r}");
    let rem = r["files"][0]["remedies"].as_array().unwrap();
    let package = rem
        .iter()
        .find(|x| x["kind"] == "package")
        .expect("package");
    let want = gfxkit_kpack::view::package_hint("w", "gfx90a");
    assert!(package["text"].as_str().unwrap().contains(&want), "{r}");
    assert_eq!(package["standing"], "supported");
    let o = gfxkit(&["check", "--require", "gfx90a:xnack-", s(&lib)]);
    assert_eq!(o.status.code(), Some(1));
}

/// The commands that always search the directories they are given accept `-r` as `list -r`
/// and `verify -r` are typed, and answer with it exactly as without it.
#[test]
fn commands_that_always_search_accept_the_recursive_flag() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("lib/deeper");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(real("librocrand.so"), nested.join("librocrand.so.1.1")).unwrap();
    let d = s(dir.path());
    for args in [
        vec!["kernels", "--json", d],
        vec!["size", "--json", d],
        vec!["check", "--json", "--require", "gfx90a", d],
        vec!["select", "--json", "--device", "gfx90a", d],
        vec!["doctor", "--json", "--device", "gfx90a", d],
    ] {
        let plain = gfxkit(&args);
        let mut flagged = args.clone();
        flagged.insert(1, "-r");
        let with_r = gfxkit(&flagged);
        assert_eq!(plain.status.code(), with_r.status.code(), "{args:?}");
        assert!(
            plain.status.code().is_some_and(|c| c < 2),
            "{args:?}: {}",
            String::from_utf8_lossy(&plain.stderr)
        );
        assert_eq!(json(&plain), json(&with_r), "{args:?}");
        // The file under the subdirectory was found.
        assert!(
            String::from_utf8_lossy(&plain.stdout).contains("librocrand.so.1.1"),
            "{args:?}"
        );
    }
}
