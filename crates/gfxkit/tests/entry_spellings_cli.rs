//! Every spelling of an entry ID that `list` reads (the `amdgcn` and `amdgpu<subarch>` triples,
//! legacy 3-part triples, `unknown` vendors and environments, the `hip`, `hipv4` and `openmp`
//! kinds) selects the same entries in `prune --keep`, `prune --drop`, `extract --target` and
//! the architecture grouping of `kpack split`: every command reads IDs through
//! `gfxkit_bundle::EntryId`. A bundle made by `gfxkit bundle` with
//! `hip-amdgpu12.00-amd-amdhsa--gfx1200` once lost its gfx1200 entry to `prune --keep gfx1200`.

use gfxkit_testkit::{llvm_tool, run_ok, HipBuild};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The spellings of a gfx1200 entry (each beside a plain `hipv4-amdgcn-amd-amdhsa--gfx90a`).
const GFX1200: &[&str] = &[
    "hipv4-amdgcn-amd-amdhsa--gfx1200",
    "hip-amdgcn-amd-amdhsa-gfx1200",
    "hip-amdgcn-amd-amdhsa--gfx1200",
    "hip-amdgpu12.00-amd-amdhsa--gfx1200",
    "hipv4-amdgpu12.00-amd-amdhsa-unknown-gfx1200",
    "hipv4-amdgpu-amd-amdhsa--gfx1200",
    "hipv4-amdgcn-amd-amdhsa-unknown-gfx1200",
    "hipv4-amdgcn-unknown-amdhsa--gfx1200",
    "openmp-amdgcn-amd-amdhsa--gfx1200",
    "openmp-amdgpu12.00-amd-amdhsa--gfx1200",
];

/// The other entry, also in several spellings (paired with the gfx1200 spellings in turn).
const GFX90A: &[&str] = &[
    "hipv4-amdgcn-amd-amdhsa--gfx90a",
    "hipv4-amdgpu9.0a-amd-amdhsa--gfx90a",
    "hip-amdgcn-amd-amdhsa-gfx90a",
];

fn gfxkit(args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked"),
        "gfxkit {args:?} panicked:\n{err}"
    );
    o
}

fn ok(args: &[&str]) -> Output {
    let o = gfxkit(args);
    assert!(
        o.status.success(),
        "gfxkit {args:?} exited {:?}:\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The entries `list --json` reads in a file: (id, target_id).
fn listed(file: &Path) -> Vec<(String, Option<String>)> {
    let v: Value = serde_json::from_slice(&ok(&["list", "--json", s(file)]).stdout).unwrap();
    v["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["entries"].as_array().unwrap().clone())
        .filter(|e| e["kind"] != "host")
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_owned(),
                e["target_id"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// The gfx1200 and gfx90a code objects clang-19 builds.
fn code_objects(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let src = gfxkit_testkit::hip_kernels(2);
    let fb = HipBuild::new(&src, &["gfx1200", "gfx90a"]).build(dir, "co");
    let bytes = std::fs::read(fb).unwrap();
    let b = gfxkit_bundle::Bundle::parse(&bytes).unwrap();
    let payload = |t: &str| {
        b.entries()
            .iter()
            .find(|e| e.id.ends_with(t))
            .unwrap()
            .payload
            .to_vec()
    };
    (payload("--gfx1200"), payload("--gfx90a"))
}

fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut all: Vec<(&str, &[u8])> = vec![("host-x86_64-unknown-linux--", &[])];
    all.extend_from_slice(entries);
    gfxkit_bundle::write_bundle(&all, 4096).unwrap()
}

/// A host object compiled by clang-19 whose `.hip_fatbin` is replaced by `fatbin`, linked by
/// lld into a shared library.
fn fat_library(dir: &Path, host_obj: &Path, fatbin: &[u8], name: &str) -> PathBuf {
    let fb = dir.join(format!("{name}.fatbin"));
    std::fs::write(&fb, fatbin).unwrap();
    let obj = dir.join(format!("{name}.o"));
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--update-section=.hip_fatbin={}", fb.display()))
            .arg(host_obj)
            .arg(&obj),
    );
    let lib = dir.join(format!("lib{name}.so"));
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-shared", "-fuse-ld=lld", "-o"])
            .arg(&lib)
            .arg(&obj),
    );
    lib
}

fn host_object(dir: &Path) -> PathBuf {
    let src = dir.join("host.hip");
    std::fs::write(
        &src,
        "#define __global__ __attribute__((global))\n\
         typedef struct { unsigned x, y, z; } dim3;\n\
         extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);\n\
         extern \"C\" __global__ void k(float *a) { a[0] = 1.0f; }\n",
    )
    .unwrap();
    let obj = dir.join("host.o");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-fPIC"])
            .args([
                "-cuid=host",
                "--offload-arch=gfx1200",
                "--offload-arch=gfx90a",
            ])
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    obj
}

#[test]
fn every_entry_id_spelling_selects_alike() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (co1200, co90a) = code_objects(d);
    let host = host_object(d);
    for (n, id1200) in GFX1200.iter().enumerate() {
        let id90a = GFX90A[n % GFX90A.len()];
        let file = d.join(format!("b{n}.hipfb"));
        std::fs::write(&file, bundle(&[(id1200, &co1200), (id90a, &co90a)])).unwrap();

        // `list` reads the spelling as gfx1200.
        assert_eq!(
            listed(&file),
            [
                (id1200.to_string(), Some("gfx1200".to_owned())),
                (id90a.to_string(), Some("gfx90a".to_owned()))
            ],
            "{id1200}"
        );

        // prune --keep gfx1200 keeps exactly that entry; --drop gfx1200 drops exactly it.
        let kept = d.join(format!("keep{n}.hipfb"));
        ok(&["prune", "--keep", "gfx1200", s(&file), "-o", s(&kept)]);
        assert_eq!(
            listed(&kept),
            [(id1200.to_string(), Some("gfx1200".to_owned()))],
            "prune --keep gfx1200 of {id1200}"
        );
        let dropped = d.join(format!("drop{n}.hipfb"));
        ok(&["prune", "--drop", "gfx1200", s(&file), "-o", s(&dropped)]);
        assert_eq!(
            listed(&dropped),
            [(id90a.to_string(), Some("gfx90a".to_owned()))],
            "prune --drop gfx1200 of {id1200}"
        );

        // extract --target gfx1200 writes that entry's code object only. A bare target ID asks
        // for HIP code (`gfxkit extract --help`): OpenMP entries are asked for by their kind, in
        // either triple spelling.
        let out = d.join(format!("x{n}"));
        let want = if id1200.starts_with("openmp-") {
            let o = gfxkit(&["extract", "--target", "gfx1200", s(&file), "-o", s(&out)]);
            assert_eq!(o.status.code(), Some(1), "extract of {id1200}");
            "openmp-amdgcn-amd-amdhsa--gfx1200"
        } else {
            "gfx1200"
        };
        ok(&["extract", "--target", want, s(&file), "-o", s(&out)]);
        let files: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(
            files.len(),
            1,
            "extract --target gfx1200 of {id1200}: {files:?}"
        );
        assert_eq!(std::fs::read(&files[0]).unwrap(), co1200, "{id1200}");

        // kpack split groups HIP entries by their target ID; OpenMP code has no place in a
        // kpack archive, in any spelling.
        let lib = fat_library(
            d,
            &host,
            &bundle(&[(id1200, &co1200), (id90a, &co90a)]),
            &format!("f{n}"),
        );
        let kdir = d.join(format!("kpack{n}"));
        let split_out = d.join(format!("split{n}.so"));
        let o = gfxkit(&[
            "kpack",
            "split",
            "--group",
            "g",
            "--kpack-dir",
            s(&kdir),
            "-o",
            s(&split_out),
            s(&lib),
        ]);
        if id1200.starts_with("openmp-") {
            assert_eq!(o.status.code(), Some(2), "kpack split of {id1200}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("not HIP AMDGPU code"), "{id1200}: {err}");
            continue;
        }
        assert!(
            o.status.success(),
            "kpack split of {id1200}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut archives: Vec<String> = std::fs::read_dir(&kdir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        archives.sort();
        assert_eq!(
            archives,
            ["g_gfx1200.kpack", "g_gfx90a.kpack"],
            "kpack split of {id1200}"
        );
        // The archive's gfx1200 kernel is the gfx1200 code object.
        let x = d.join(format!("kx{n}"));
        ok(&[
            "extract",
            "--target",
            "gfx1200",
            s(&kdir.join("g_gfx1200.kpack")),
            "-o",
            s(&x),
        ]);
        let files: Vec<PathBuf> = std::fs::read_dir(&x)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{id1200}: {files:?}");
        assert_eq!(std::fs::read(&files[0]).unwrap(), co1200, "{id1200}");
    }
}
