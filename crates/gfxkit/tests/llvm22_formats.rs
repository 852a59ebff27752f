//! What LLVM 22 writes and LLVM 19 cannot: OffloadBinary version 2 (many images per binary,
//! HIP as offload kind 4, SPIR-V images) in `.llvm.offloading` and standalone, and SPIR-V
//! entries in bundles (`hip-spirv64-amd-amdhsa--amdgcnspirv`). The version-2 binaries are made
//! from the images of a real clang-19 new-driver object with `gfxkit_host::offloading::write_v2`;
//! `list`, `extract`, `select` and `doctor` are run on them. LLVM main's version 3 (40-byte
//! header, optionally compressed) is made the same way with `write_v3`/`write_v3_compressed`.

mod common;
mod host_fixtures;

use gfxkit_host::offloading::{parse_offloading, write_v2, Image, ImageKind, OffloadKind};
use gfxkit_testkit::{dump_section, llc_object, llvm_tool, run_ok};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A SPIR-V module header (magic 0x07230203, version 1.6) and some words: not compiled (clang-19
/// needs the external llvm-spirv translator for amdgcnspirv), but what the runtime checks first.
const SPIRV: &[u8] =
    b"\x03\x02\x23\x07\x00\x06\x01\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00";

fn gfxkit(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn ok_json(dir: &Path, args: &[&str]) -> Value {
    let out = gfxkit(dir, args);
    assert!(
        out.status.success(),
        "gfxkit {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::json_stdout(&out)
}

#[test]
fn offload_binary_v2_in_objects_and_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let obj = host_fixtures::new_driver_object(dir, "nd", 2, &["gfx90a:xnack+", "gfx1100"], &[]);
    let v1 = dump_section(&obj, ".llvm.offloading", &dir.join("v1.bin"));
    let (old, stop) = parse_offloading(&v1);
    assert_eq!(stop, None);
    assert_eq!(old.len(), 2);
    assert!(old
        .iter()
        .all(|e| e.version == 1 && e.offload_kind == OffloadKind::HIP_LLVM20));

    // The same two code objects as LLVM 22 writes them (one version-2 binary, HIP kind 4), one
    // under LLVM main's amdgpu triple, plus a SPIR-V image.
    let triple_of = |arch: &str| {
        if arch == "gfx1100" {
            "amdgpu11.00-amd-amdhsa"
        } else {
            "amdgcn-amd-amdhsa"
        }
    };
    let mut images: Vec<Image<'_>> = old
        .iter()
        .map(|e| (e, triple_of(e.arch().unwrap())))
        .map(|(e, triple)| Image {
            image_kind: e.image_kind.0,
            offload_kind: OffloadKind::HIP.0,
            flags: 0,
            strings: vec![
                ("triple", triple.as_bytes()),
                ("arch", e.arch().unwrap().as_bytes()),
            ],
            image: e.image,
        })
        .collect();
    images.push(Image {
        image_kind: ImageKind::SPIRV.0,
        offload_kind: OffloadKind::HIP.0,
        flags: 0,
        strings: vec![("triple", b"spirv64-amd-amdhsa"), ("arch", b"amdgcnspirv")],
        image: SPIRV,
    });
    let v2 = write_v2(&images);
    std::fs::write(dir.join("v2.bin"), &v2).unwrap();
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!(
                "--update-section=.llvm.offloading={}",
                dir.join("v2.bin").display()
            ))
            .arg(&obj)
            .arg(dir.join("nd22.o")),
    );

    let want_ids: Vec<String> = old
        .iter()
        .map(|e| {
            format!(
                "hipv4-{}--{}",
                triple_of(e.arch().unwrap()),
                e.arch().unwrap()
            )
        })
        .chain(["hipv4-spirv64-amd-amdhsa--amdgcnspirv".to_owned()])
        .collect();
    assert!(want_ids.contains(&"hipv4-amdgpu11.00-amd-amdhsa--gfx1100".to_owned()));
    for input in ["nd22.o", "v2.bin"] {
        let j = ok_json(dir, &["list", "--json", input]);
        let units = j["files"][0]["bundles"].as_array().unwrap();
        let ids: Vec<&str> = units
            .iter()
            .flat_map(|u| u["entries"].as_array().unwrap())
            .map(|e| e["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want_ids, "{input}");
        let text = gfxkit(dir, &["list", input]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains("amdgcnspirv gfx1100 gfx90a"),
            "{input}: {text}"
        );
        assert!(gfxkit(dir, &["verify", input]).status.success(), "{input}");

        let out = format!("out-{input}");
        let j = ok_json(dir, &["extract", "--json", "-o", &out, input]);
        let written = j["written"].as_array().unwrap();
        assert_eq!(written.len(), 3, "{input}: {j}");
        for (w, img) in written.iter().zip(&images) {
            let path = w["path"].as_str().unwrap();
            assert_eq!(std::fs::read(dir.join(path)).unwrap(), img.image, "{path}");
            // clang's -fgpu-rdc images are bitcode.
            let ext = match ImageKind(img.image_kind) {
                ImageKind::BITCODE => ".bc",
                ImageKind::SPIRV => ".spv",
                _ => ".co",
            };
            assert!(path.ends_with(ext), "{path}");
        }
        // One target, either triple spelling.
        for t in [
            "gfx1100",
            "hipv4-amdgpu11.00-amd-amdhsa--gfx1100",
            "amdgcnspirv",
        ] {
            let j = ok_json(
                dir,
                &[
                    "extract",
                    "--json",
                    "-o",
                    &format!("{out}-t"),
                    "-t",
                    t,
                    input,
                ],
            );
            assert_eq!(
                j["written"].as_array().unwrap().len(),
                1,
                "{input} -t {t}: {j}"
            );
        }
    }
}

#[test]
fn spirv_entries_in_bundles() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ir = dir.join("k.ll");
    std::fs::write(&ir, "define amdgpu_kernel void @k() {\n  ret void\n}\n").unwrap();
    llc_object(&ir, &dir.join("gfx906.co"), "gfx906", 5, "");
    std::fs::write(dir.join("k.spv"), SPIRV).unwrap();
    for (name, spirv_id) in [
        ("a.hipfb", "hip-spirv64-amd-amdhsa--amdgcnspirv"),
        // The runtime also accepts the spelling with an `unknown` environment.
        ("b.hipfb", "hipv4-spirv64-amd-amdhsa-unknown-amdgcnspirv"),
    ] {
        let spec = format!("k.spv:{spirv_id}");
        let out = gfxkit(dir, &["bundle", "-o", name, "gfx906.co", &spec]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // clang-offload-bundler-19 reads it (it knows the spirv64 triple).
        let listed = gfxkit_testkit::bundler_list(&dir.join(name));
        assert_eq!(listed.len(), 3, "{listed:?}");

        let list = gfxkit(dir, &["list", name]);
        assert!(String::from_utf8_lossy(&list.stdout).contains("; amdgcnspirv gfx906"));
        // The runtime's order: native, generic, then SPIR-V.
        let pick = |device: &str| {
            let j = ok_json(dir, &["select", "--json", "--device", device, name]);
            let b = &j["files"][0]["bundles"][0];
            (
                b["via"].as_str().unwrap_or("").to_owned(),
                b["selected"].clone(),
            )
        };
        assert_eq!(pick("gfx906").0, "native");
        let (via, selected) = pick("gfx1201");
        assert_eq!(via, "spirv", "{selected}");
        assert!(
            selected.as_str().unwrap().contains("amdgcnspirv"),
            "{selected}"
        );
        let out = gfxkit(dir, &["doctor", "--device", "gfx1201", name]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("on gfx1201 (through SPIR-V, compiled when loaded)"),
            "{text}"
        );
        let j = ok_json(
            dir,
            &[
                "doctor", "--json", "--device", "gfx1201", "--device", "gfx906", name,
            ],
        );
        assert_eq!(
            j["files"][0]["spirv"],
            serde_json::json!(["gfx1201"]),
            "{j}"
        );

        let j = ok_json(
            dir,
            &["extract", "--json", "-o", "x", "-t", "amdgcnspirv", name],
        );
        let written = j["written"].as_array().unwrap();
        assert_eq!(written.len(), 1, "{j}");
        let path = written[0]["path"].as_str().unwrap();
        assert!(path.ends_with(".spv"), "{path}");
        assert_eq!(std::fs::read(dir.join(path)).unwrap(), SPIRV);
    }
}

/// ROCm 7's `.hip_fatbin` layout: CCOB bundles (v3 as LLVM 22 writes by default, v2 as LLVM 19)
/// back to back at 4096-byte offsets. `list` shows each, `unbundle` walks them all (each bounded
/// by its header's size) and takes each target from the one bundle holding it.
#[test]
fn unbundle_walks_concatenated_compressed_bundles() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ir = dir.join("k.ll");
    std::fs::write(&ir, "define amdgpu_kernel void @k() {\n  ret void\n}\n").unwrap();
    let mut cat = Vec::new();
    let mut objects = Vec::new();
    for (cpu, extra) in [
        ("gfx906", &["--ccob-version", "3"][..]),
        ("gfx90a", &[][..]),
        ("gfx1100", &["--ccob-version", "3", "--method", "zlib"][..]),
    ] {
        let co = dir.join(format!("{cpu}.co"));
        llc_object(&ir, &co, cpu, 5, "");
        let hipfb = format!("{cpu}.hipfb");
        let mut args = vec!["bundle", "-o", &hipfb, "--compress"];
        args.extend_from_slice(extra);
        let co_arg = format!("{cpu}.co");
        args.push(&co_arg);
        assert!(gfxkit(dir, &args).status.success());
        cat.resize(cat.len().div_ceil(4096) * 4096, 0);
        cat.extend(std::fs::read(dir.join(&hipfb)).unwrap());
        objects.push((cpu, std::fs::read(&co).unwrap()));
    }
    std::fs::write(dir.join("cat.bin"), &cat).unwrap();
    let j = ok_json(dir, &["list", "--json", "cat.bin"]);
    let bundles = j["files"][0]["bundles"].as_array().unwrap();
    let versions: Vec<u64> = bundles
        .iter()
        .map(|b| b["ccob"]["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, [3, 2, 3], "{j}");
    let offsets: Vec<u64> = bundles
        .iter()
        .map(|b| b["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(offsets, [0, 4096, 8192]);
    let out = gfxkit(
        dir,
        &[
            "unbundle", "cat.bin", "-t", "gfx1100", "-o", "a.co", "-t", "gfx906", "-o", "b.co",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(dir.join("a.co")).unwrap(), objects[2].1);
    assert_eq!(std::fs::read(dir.join("b.co")).unwrap(), objects[0].1);
    // The same target in two bundles has no single answer without --bundle.
    let mut dup = cat.clone();
    dup.resize(dup.len().div_ceil(4096) * 4096, 0);
    dup.extend(std::fs::read(dir.join("gfx90a.hipfb")).unwrap());
    std::fs::write(dir.join("dup.bin"), &dup).unwrap();
    let out = gfxkit(dir, &["unbundle", "dup.bin", "-t", "gfx90a", "-o", "c.co"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gfx90a (bundles 1, 3)"), "{err}");
    assert!(!dir.join("c.co").exists());
    let out = gfxkit(
        dir,
        &[
            "unbundle", "dup.bin", "-t", "gfx90a", "-o", "c.co", "--bundle", "3",
        ],
    );
    assert!(out.status.success());
    assert_eq!(std::fs::read(dir.join("c.co")).unwrap(), objects[1].1);
}

/// LLVM main's OffloadBinary version 3 with clang-19's code objects in it: a plain binary is
/// listed, extracted and verified like version 2; a compressed one next to it is a warning that
/// names it, and `inflate` gives back the plain binary byte for byte.
#[test]
fn offload_binary_v3_plain_and_compressed() {
    use gfxkit_host::offloading::{inflate, parse_binary, write_v3, write_v3_compressed};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let obj = host_fixtures::new_driver_object(dir, "nd3", 1, &["gfx942", "gfx1100"], &[]);
    let v1 = dump_section(&obj, ".llvm.offloading", &dir.join("v1.bin"));
    let (old, stop) = parse_offloading(&v1);
    assert_eq!(stop, None);
    let images: Vec<Image<'_>> = old
        .iter()
        .map(|e| Image {
            image_kind: e.image_kind.0,
            offload_kind: OffloadKind::HIP.0,
            flags: 0,
            strings: vec![
                ("triple", b"amdgcn-amd-amdhsa"),
                ("arch", e.arch().unwrap().as_bytes()),
            ],
            image: e.image,
        })
        .collect();
    let plain = write_v3(&images);
    std::fs::write(dir.join("v3.bin"), &plain).unwrap();
    let j = ok_json(dir, &["list", "--json", "v3.bin"]);
    let ids: Vec<&str> = j["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| u["entries"].as_array().unwrap())
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let want: Vec<String> = old
        .iter()
        .map(|e| format!("hipv4-amdgcn-amd-amdhsa--{}", e.arch().unwrap()))
        .collect();
    assert_eq!(ids, want);
    assert_eq!(ids.len(), 2);
    assert!(gfxkit(dir, &["verify", "v3.bin"]).status.success());
    let j = ok_json(dir, &["extract", "--json", "-o", "out3", "v3.bin"]);
    let written = j["written"].as_array().unwrap();
    assert_eq!(written.len(), 2, "{j}");
    for (w, e) in written.iter().zip(&old) {
        let path = w["path"].as_str().unwrap();
        assert_eq!(std::fs::read(dir.join(path)).unwrap(), e.image, "{path}");
    }

    // Compressed (zstd), then the plain one after it, in one section of the object.
    let packed = write_v3_compressed(&images, gfxkit_bundle::Method::Zstd, 3).unwrap();
    assert!(packed.len() < plain.len());
    assert_eq!(inflate(&packed, 0).unwrap(), plain);
    assert_eq!(
        parse_binary(&inflate(&packed, 0).unwrap(), 0)
            .unwrap()
            .len(),
        2
    );
    let mut section = packed.clone();
    section.extend_from_slice(&plain);
    std::fs::write(dir.join("both.bin"), &section).unwrap();
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!(
                "--update-section=.llvm.offloading={}",
                dir.join("both.bin").display()
            ))
            .arg(&obj)
            .arg(dir.join("nd3z.o")),
    );
    let j = ok_json(dir, &["list", "--json", "nd3z.o"]);
    let f = &j["files"][0];
    let n: usize = f["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["entries"].as_array().unwrap().len())
        .sum();
    assert_eq!(n, 2, "the plain binary's entries: {f}");
    let problems = f["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{f}");
    assert_eq!(problems[0]["severity"], "warning");
    assert!(
        problems[0]["message"]
            .as_str()
            .unwrap()
            .contains("compressed OffloadBinary"),
        "{f}"
    );
}
