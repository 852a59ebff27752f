//! Windows files built by the llvm-19 tools: two HIP translation units (one uncompressed, one
//! `--offload-compress`) compiled by clang-19 for `x86_64-pc-windows-msvc` into COFF objects,
//! linked by lld-link-19 into a DLL and an EXE, archived by llvm-lib-19. What `list` and
//! `extract` give is checked against `llvm-objcopy-19 --dump-section` and
//! `clang-offload-bundler-19`; `select` and `doctor` against the ELF build of the same sources;
//! damaged copies never panic.

mod common;

use common::gfxkit;
use gfxkit_host::{discover, InputKind, ProblemKind, WrapperMagic, WrapperTarget};
use gfxkit_testkit::windows::{linux_shared, lld_link, llvm_lib, Tu};
use gfxkit_testkit::{bundler_list, bundler_unbundle, dump_section, llvm_tool, run_ok};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const W0: &str = "extern \"C\" __global__ void w0_k0(float *a, int n) {\n\
  int t = __builtin_amdgcn_workitem_id_x(); if (t < n) a[t] = a[t] * 2.5f + t; }\n\
extern \"C\" __global__ void w0_k1(float *a, const float *b, int n) {\n\
  int t = __builtin_amdgcn_workitem_id_x(); if (t < n) a[t] += b[t]; }\n";
const W1: &str = "extern \"C\" __global__ void w1_k0(int *a, int n) {\n\
  int t = __builtin_amdgcn_workitem_id_x(); if (t < n) a[t] ^= n; }\n\
int main() { return 0; }\n";

const TUS: [Tu<'static>; 2] = [
    Tu {
        stem: "w0",
        source: W0,
        archs: &["gfx90a", "gfx1151"],
        compress: false,
    },
    Tu {
        stem: "w1",
        source: W1,
        archs: &["gfx942", "gfx1100"],
        compress: true,
    },
];

struct Built {
    dir: tempfile::TempDir,
    objs: Vec<PathBuf>,
    dll: PathBuf,
    exe: PathBuf,
    lib: PathBuf,
    elf: PathBuf,
    /// The DLL linked with `/release`, which sets the optional header's `CheckSum`.
    release: PathBuf,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let objs: Vec<PathBuf> = TUS.iter().map(|t| t.windows_object(d)).collect();
        let dll = lld_link(d, "w.dll", &objs, None);
        let exe = lld_link(d, "w.exe", &objs, Some("main"));
        let lib = llvm_lib(d, "w.lib", &objs);
        let release = lld_link_release(d, "wr.dll", &objs);
        let elf_objs: Vec<PathBuf> = TUS.iter().map(|t| t.linux_object(d)).collect();
        let elf = linux_shared(d, "libw.so", &elf_objs);
        Built {
            dir,
            objs,
            dll,
            exe,
            lib,
            elf,
            release,
        }
    })
}

fn lld_link_release(dir: &Path, name: &str, objs: &[PathBuf]) -> PathBuf {
    let out = dir.join(name);
    run_ok(
        Command::new(llvm_tool("lld-link"))
            .args([
                "/dll",
                "/noentry",
                "/force:unresolved",
                "/nodefaultlib",
                "/release",
            ])
            .args(objs)
            .arg(format!("/out:{}", out.display())),
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = gfxkit(args);
    assert!(code == 0 || code == 1, "{args:?}: exit {code}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// A section as llvm-readobj-19 prints it.
#[derive(Debug, Clone)]
struct Section {
    name: String,
    virtual_address: u64,
    raw_size: u64,
    raw_pointer: u64,
}

fn hex_or_dec(v: &str) -> u64 {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

/// The section table of a PE/COFF file as llvm-readobj-19 reads it.
fn readobj_sections(file: &Path) -> Vec<Section> {
    let out = run_ok(
        Command::new(llvm_tool("llvm-readobj"))
            .arg("--sections")
            .arg(file),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut v: Vec<Section> = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((k, val)) = line.split_once(": ") else {
            continue;
        };
        match k {
            "Name" => v.push(Section {
                name: val.split(" (").next().unwrap().to_owned(),
                virtual_address: 0,
                raw_size: 0,
                raw_pointer: 0,
            }),
            "VirtualAddress" => v.last_mut().unwrap().virtual_address = hex_or_dec(val),
            "RawDataSize" => v.last_mut().unwrap().raw_size = hex_or_dec(val),
            "PointerToRawData" => v.last_mut().unwrap().raw_pointer = hex_or_dec(val),
            _ => {}
        }
    }
    v
}

fn section(file: &Path, name: &str) -> Section {
    readobj_sections(file)
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{}: no section {name}", file.display()))
}

/// The RVAs the base relocation table fixes with `IMAGE_REL_BASED_DIR64`, per llvm-readobj-19.
fn dir64_relocations(file: &Path) -> BTreeSet<u64> {
    let out = run_ok(
        Command::new(llvm_tool("llvm-readobj"))
            .arg("--coff-basereloc")
            .arg(file),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut set = BTreeSet::new();
    let mut dir64 = false;
    for line in text.lines().map(str::trim) {
        if let Some(t) = line.strip_prefix("Type: ") {
            dir64 = t == "DIR64";
        } else if let Some(a) = line.strip_prefix("Address: ") {
            if dir64 {
                set.insert(hex_or_dec(a));
            }
        }
    }
    set
}

/// Checks `gfxkit list --json` and `gfxkit extract` on `file` against the section `name`
/// dumped by llvm-objcopy-19 and clang-offload-bundler-19's listing and unbundling of each
/// bundle in it. Returns the entry IDs per bundle.
fn check_against_clang(file: &Path, name: &str, tag: &str) -> Vec<BTreeSet<String>> {
    let work = built().dir.path().join(format!("check-{tag}"));
    std::fs::create_dir_all(&work).unwrap();
    let dumped = dump_section(file, name, &work.join("section.bin"));
    let sec = section(file, name);
    let listing = json(&["list", "--json", s(file)]);
    let bundles = listing["files"][0]["bundles"].as_array().unwrap();
    assert!(!bundles.is_empty(), "{tag}: no bundle listed");
    let out = work.join("extracted");
    let (code, _, err) = gfxkit(&["extract", s(file), "-o", s(&out)]);
    assert_eq!(code, 0, "{err}");
    let stem = file.file_stem().unwrap().to_str().unwrap();
    let mut covered = 0usize;
    let mut ids = Vec::new();
    for (i, b) in bundles.iter().enumerate() {
        assert_eq!(b["section"], name, "{tag} bundle {i}");
        let at = (b["offset"].as_u64().unwrap() - sec.raw_pointer) as usize;
        let size = b["size"].as_u64().unwrap() as usize;
        assert!(
            dumped[covered..at].iter().all(|&x| x == 0),
            "{tag}: gap before bundle {i} is padding"
        );
        covered = at + size;
        let path = work.join(format!("b{i}.bin"));
        std::fs::write(&path, &dumped[at..covered]).unwrap();
        let ours: BTreeSet<String> = b["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect();
        let theirs: BTreeSet<String> = bundler_list(&path).into_iter().collect();
        assert_eq!(ours, theirs, "{tag} bundle {i} entry IDs");
        for id in ours.iter().filter(|id| !id.starts_with("host-")) {
            let clang = bundler_unbundle(&path, id, &work.join(format!("b{i}-{id}.co")));
            let mine = std::fs::read(out.join(format!("{stem}.{i}.{id}.co"))).unwrap();
            assert_eq!(mine, clang, "{tag} bundle {i} entry {id}");
        }
        ids.push(ours);
    }
    assert!(
        dumped[covered..].iter().all(|&x| x == 0),
        "{tag}: the tail of the section is padding"
    );
    ids
}

fn expected_ids() -> Vec<BTreeSet<String>> {
    TUS.iter()
        .map(|t| {
            let mut s: BTreeSet<String> = t
                .archs
                .iter()
                .map(|a| format!("hipv4-amdgcn-amd-amdhsa--{a}"))
                .collect();
            s.insert("host-x86_64-unknown-linux--".to_owned());
            s
        })
        .collect()
}

#[test]
fn dll_and_exe_list_and_extract_as_objcopy_and_clang_do() {
    let b = built();
    for (file, tag) in [(&b.dll, "dll"), (&b.exe, "exe")] {
        assert_eq!(check_against_clang(file, ".hip_fat", tag), expected_ids());
        let data = std::fs::read(file).unwrap();
        let found = discover(&data);
        assert_eq!(found.kind, InputKind::PeImage);
        assert!(found.problems.is_empty(), "{tag}: {:?}", found.problems);
        // Every wrapper is base-relocated (llvm-readobj says so) and leads to its bundle.
        let wrappers = section(file, ".hipFatB");
        let relocated = dir64_relocations(file);
        assert_eq!(found.wrappers.len(), 2);
        for (i, w) in found.wrappers.iter().enumerate() {
            assert_eq!(w.magic, WrapperMagic::Hipf);
            assert_eq!(w.location.section.as_deref(), Some(".hipFatB"));
            let rva = wrappers.virtual_address + w.location.offset - wrappers.raw_pointer;
            assert!(relocated.contains(&(rva + 8)), "{tag} wrapper {i}");
            assert_eq!(w.target, WrapperTarget::Bundle { index: i });
        }
    }
}

#[test]
fn objects_and_static_library_list_and_extract_as_objcopy_and_clang_do() {
    let b = built();
    let want = expected_ids();
    for (i, obj) in b.objs.iter().enumerate() {
        let tag = format!("obj{i}");
        let ids = check_against_clang(obj, ".hip_fatbin", &tag);
        assert_eq!(ids, want[i..=i]);
        let data = std::fs::read(obj).unwrap();
        let found = discover(&data);
        assert_eq!(found.kind, InputKind::CoffObject);
        assert!(found.problems.is_empty(), "{tag}: {:?}", found.problems);
        // The IMAGE_REL_AMD64_ADDR64 relocation leads the wrapper to the bundle.
        assert_eq!(found.wrappers.len(), 1);
        assert_eq!(
            found.wrappers[0].location.section.as_deref(),
            Some(".hipFatBinSegment")
        );
        assert_eq!(found.wrappers[0].target, WrapperTarget::Bundle { index: 0 });
    }
    // The static library lists each member as the object on its own.
    let lib = json(&["list", "--json", s(&b.lib)]);
    let bundles = lib["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), 2);
    for bundle in bundles {
        let member = bundle["member"].as_str().unwrap();
        let obj = b.objs.iter().find(|o| o.ends_with(member)).unwrap();
        let alone = json(&["list", "--json", s(obj)]);
        assert_eq!(
            bundle["entries"],
            alone["files"][0]["bundles"][0]["entries"]
        );
    }
    let (code, out, err) = gfxkit(&["verify", s(&b.lib), s(&b.dll), s(&b.exe)]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `select` and `doctor` answer for the DLL and the EXE what they answer for the ELF shared
/// library built from the same sources.
#[test]
fn select_and_doctor_match_the_elf_build() {
    let b = built();
    let devices = ["gfx90a:sramecc+:xnack-", "gfx942", "gfx1151", "gfx1201"];
    let choices = |file: &Path, device: &str| -> Vec<Value> {
        let v = json(&["select", "--json", "--device", device, s(file)]);
        v["files"][0]["bundles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                serde_json::json!({
                    "selected": b["selected"], "via": b["via"], "reason": b["reason"]
                })
            })
            .collect()
    };
    let verdict = |file: &Path| -> Value {
        let mut args = vec!["doctor", "--json"];
        for d in devices {
            args.extend(["--device", d]);
        }
        args.push(s(file));
        let mut v = json(&args);
        let f = &mut v["files"][0];
        f.as_object_mut().unwrap().remove("path");
        v
    };
    for device in devices {
        let elf = choices(&b.elf, device);
        assert_eq!(elf.len(), 2);
        assert_eq!(choices(&b.dll, device), elf, "{device}");
        assert_eq!(choices(&b.exe, device), elf, "{device}");
    }
    let elf = verdict(&b.elf);
    assert_eq!(elf["files"][0]["runs_on"]["gfx1201"], false);
    assert_eq!(verdict(&b.dll), elf);
    assert_eq!(verdict(&b.exe), elf);
    // And the kernels, per target, are the same.
    let kernels = |file: &Path| {
        let v = json(&["kernels", "--json", s(file)]);
        let mut rows: Vec<String> = v["kernels"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|k| format!("{} {}", k["target_id"], k["name"]))
            .collect();
        rows.sort();
        rows
    };
    let elf = kernels(&b.elf);
    assert_eq!(elf.len(), 6);
    assert_eq!(kernels(&b.dll), elf);
}

/// `-r` over a tree reads the DLL, EXE, objects and static library, and a Windows wheel in
/// place; `size` reads them too.
#[test]
fn recursive_listing_and_wheels_read_windows_files() {
    let b = built();
    let tree = b.dir.path().join("tree");
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    for f in [&b.dll, &b.exe, &b.lib, &b.objs[0], &b.objs[1]] {
        std::fs::copy(f, tree.join("bin").join(f.file_name().unwrap())).unwrap();
    }
    let wheel = tree.join("w-1.0-cp312-cp312-win_amd64.whl");
    run_ok(
        Command::new("python3")
            .arg("-c")
            .arg(
                "import sys, zipfile\n\
                 z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED)\n\
                 z.write(sys.argv[2], 'w/lib/w.dll')\n\
                 z.writestr('w/__init__.py', '')\n\
                 z.close()",
            )
            .arg(&wheel)
            .arg(&b.dll),
    );
    let v = json(&["list", "-r", "--json", s(&tree)]);
    let files: BTreeSet<String> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["bundles"].as_array().unwrap().is_empty())
        .map(|f| {
            let p = f["path"].as_str().unwrap();
            Path::new(p.split('!').next().unwrap())
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
                + p.find('!').map_or("", |i| &p[i..])
        })
        .collect();
    let want: BTreeSet<String> = [
        "w.dll",
        "w.exe",
        "w.lib",
        "w0.obj",
        "w1.obj",
        "w-1.0-cp312-cp312-win_amd64.whl!w/lib/w.dll",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(files, want);
    let (code, out, err) = gfxkit(&["size", "--json", s(&b.dll)]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v.to_string().contains("gfx942"), "{v}");
}

/// An image whose wrapper has lost its base relocation is still read (the pointer as stored),
/// with a warning that it is wrong wherever the image is rebased.
#[test]
fn wrapper_without_base_relocation_is_a_warning() {
    let b = built();
    let mut data = std::fs::read(&b.dll).unwrap();
    let wrappers = section(&b.dll, ".hipFatB");
    let reloc = section(&b.dll, ".reloc");
    let slot = wrappers.virtual_address + 8;
    // Find the block and the entry fixing the first wrapper's pointer; make it padding.
    let mut at = reloc.raw_pointer as usize;
    let end = at + reloc.raw_size as usize;
    let mut cleared = false;
    while at + 8 <= end && !cleared {
        let page = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as u64;
        let size = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap()) as usize;
        if size < 8 {
            break;
        }
        for e in (at + 8..at + size).step_by(2) {
            let v = u16::from_le_bytes([data[e], data[e + 1]]);
            if v >> 12 == 10 && page + u64::from(v & 0xfff) == slot {
                data[e..e + 2].copy_from_slice(&0u16.to_le_bytes());
                cleared = true;
            }
        }
        at += size;
    }
    assert!(cleared, "no DIR64 entry at {slot:#x}");
    let found = discover(&data);
    assert_eq!(found.wrappers[0].target, WrapperTarget::Bundle { index: 0 });
    let warned: Vec<_> = found
        .problems
        .iter()
        .filter(|p| matches!(p.kind, ProblemKind::WrapperWithoutBaseRelocation { .. }))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", found.problems);
    assert_eq!(warned[0].location.section.as_deref(), Some(".hipFatB"));
    assert_eq!(warned[0].location.offset, wrappers.raw_pointer);
}

/// A kpack'ed image as TheRock lays it out: `.kpackrf` holds the MessagePack marker, the
/// wrappers are `HIPK` leading to it (still base-relocated), and `.hip_fat` keeps its virtual
/// size but no file bytes (`SizeOfRawData` 0).
#[test]
fn kpacked_image_wrappers_lead_to_the_marker() {
    let b = built();
    let work = b.dir.path().join("kpack");
    std::fs::create_dir_all(&work).unwrap();
    let marker = work.join("marker.bin");
    // {"kernel_name": "w.dll", "kpack_search_paths": ["../.kpack/w_gfx90a.kpack"]}
    let mut m = vec![0x82];
    let str8 = |m: &mut Vec<u8>, s: &str| {
        m.push(0xa0 | s.len() as u8);
        m.extend_from_slice(s.as_bytes());
    };
    str8(&mut m, "kernel_name");
    str8(&mut m, "w.dll");
    str8(&mut m, "kpack_search_paths");
    m.push(0x91);
    str8(&mut m, "../.kpack/w_gfx90a.kpack");
    std::fs::write(&marker, &m).unwrap();
    let split = work.join("w.dll");
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--add-section=.kpackrf={}", marker.display()))
            .arg("--set-section-flags=.kpackrf=readonly,data")
            .arg(&b.dll)
            .arg(&split),
    );
    let kpackrf = section(&split, ".kpackrf");
    let wrappers = section(&split, ".hipFatB");
    let fat = section(&split, ".hip_fat");
    let mut data = std::fs::read(&split).unwrap();
    let image_base = 0x1_8000_0000u64; // lld-link's default for a DLL
    for i in 0..2u64 {
        let r = (wrappers.raw_pointer + 24 * i) as usize;
        data[r..r + 4].copy_from_slice(b"HIPK");
        data[r + 8..r + 16].copy_from_slice(&(image_base + kpackrf.virtual_address).to_le_bytes());
        data[r + 16..r + 24].copy_from_slice(&i.to_le_bytes());
    }
    // Zero paging: the section header's SizeOfRawData (at +16 of its 40 bytes) becomes 0.
    let headers = readobj_sections(&split);
    let index = headers.iter().position(|s| s.name == ".hip_fat").unwrap();
    let lfanew = u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize;
    let opt = u16::from_le_bytes([data[lfanew + 20], data[lfanew + 21]]) as usize;
    let sh = lfanew + 24 + opt + 40 * index;
    assert_eq!(&data[sh..sh + 8], b".hip_fat");
    assert_eq!(
        u32::from_le_bytes(data[sh + 16..sh + 20].try_into().unwrap()) as u64,
        fat.raw_size
    );
    data[sh + 16..sh + 20].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(&split, &data).unwrap();

    let found = discover(&data);
    assert!(found.bundle_count() == 0);
    assert_eq!(found.wrappers.len(), 2);
    for (i, w) in found.wrappers.iter().enumerate() {
        assert_eq!(w.magic, WrapperMagic::Hipk);
        assert_eq!(w.kpack_index(), Some(i as u32));
        let k = w.kpack.as_ref().expect("the marker decodes");
        assert_eq!(k.kernel_name.as_deref(), Some("w.dll"));
        assert_eq!(k.search_paths, ["../.kpack/w_gfx90a.kpack"]);
    }
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    // Without its archives, doctor says what is missing rather than seeing nothing.
    let (code, out, err) = gfxkit(&["doctor", "--device", "gfx90a", s(&split)]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(format!("{out}{err}").contains("kpack"), "{out}{err}");
}

/// Truncated and bit-flipped copies of the DLL, of an object and of the static library never
/// panic any command's reading (discovery, the inventory, the listing, verification, the
/// survey of `size`) or the rewrite (which refuses, or verifies); the fuzz targets `host_pe`
/// and `prune` cover the rest (seeded with such files).
#[test]
fn damaged_pe_and_coff_never_panic() {
    let b = built();
    for file in [&b.dll, &b.objs[1], &b.lib] {
        let data = std::fs::read(file).unwrap();
        let read = |d: &[u8]| {
            let inv = gfxkit_inventory::Inventory::of(d);
            let _ = gfxkit_inventory::list::list("damaged", &inv, true);
            let _ = gfxkit_inventory::verify::verify("damaged", &inv);
            let _ = gfxkit_shrink::survey(d, &Default::default());
            // A rewrite refuses, or produces a file that verifies.
            let keep = gfxkit_shrink::Transform {
                selection: gfxkit_shrink::EntryFilter::Keep(vec![gfxkit_shrink::Pattern::parse(
                    "gfx90a",
                )
                .unwrap()]),
                conversion: gfxkit_shrink::Conversion::Keep,
                limits: Default::default(),
            };
            if let Ok(out) = gfxkit_shrink::rewrite(d, &keep) {
                if let Err(e) = gfxkit_shrink::verify(d, &out, &Default::default()) {
                    panic!("a rewrite that does not verify: {e}");
                }
            }
            for p in &inv.problems {
                assert!(p.location.offset <= d.len() as u64, "{p}");
            }
        };
        for cut in (0..data.len()).step_by(data.len() / 97) {
            read(&data[..cut]);
        }
        // A bit of every third byte of the headers and section table (the bit moving along),
        // and a spread over the rest.
        let mut d = data.clone();
        let head = 0x400.min(data.len());
        let spots = (0..head)
            .step_by(3)
            .chain((head..data.len()).step_by(data.len() / 61));
        for at in spots {
            let bit = at % 8;
            d[at] ^= 1 << bit;
            read(&d);
            d[at] ^= 1 << bit;
        }
    }
}

/// The optional header's `CheckSum` as llvm-readobj-19 prints it.
fn readobj_checksum(file: &Path) -> u32 {
    let out = run_ok(
        Command::new(llvm_tool("llvm-readobj"))
            .arg("--file-headers")
            .arg(file),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let v = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("CheckSum: "))
        .expect("CheckSum in the file headers");
    hex_or_dec(v) as u32
}

/// Where the optional header's `CheckSum` is: `e_lfanew` + 4 + 20 + 64.
fn checksum_field(data: &[u8]) -> usize {
    u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize + 88
}

/// Pruned and recompressed DLLs and EXEs are valid PE files (llvm-readobj-19 reads their
/// headers, sections and base relocations), smaller, with only the kept entries as
/// clang-offload-bundler-19 sees them, every wrapper base-relocated and leading to its bundle.
#[test]
fn pruned_and_recompressed_images_are_valid_and_smaller() {
    let b = built();
    let work = b.dir.path().join("rewrite");
    std::fs::create_dir_all(&work).unwrap();
    let cases: [(&PathBuf, &[&str], &str); 4] = [
        (
            &b.dll,
            &["prune", "--keep", "gfx90a", "--keep", "gfx942"],
            "p.dll",
        ),
        (&b.exe, &["prune", "--drop", "gfx1151"], "p.exe"),
        (&b.dll, &["recompress", "--ccob-version", "2"], "r.dll"),
        (&b.release, &["prune", "--keep", "gfx1100"], "pr.dll"),
    ];
    for (input, args, name) in cases {
        let out = work.join(name);
        let mut argv = args.to_vec();
        argv.extend([s(input), "-o", s(&out), "--json"]);
        let (code, stdout, err) = gfxkit(&argv);
        assert_eq!(code, 0, "{name}: {stdout}{err}");
        let before = std::fs::metadata(input).unwrap().len();
        let after = std::fs::metadata(&out).unwrap().len();
        assert!(after < before, "{name}: {after} >= {before}");
        // llvm-readobj reads every header, section and base relocation.
        let readobj = run_ok(
            Command::new(llvm_tool("llvm-readobj"))
                .args(["--file-headers", "--sections", "--coff-basereloc"])
                .arg(&out),
        );
        assert!(
            readobj.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&readobj.stderr)
        );
        // Raw data offsets and sizes are multiples of FileAlignment (512 for lld-link).
        for sec in readobj_sections(&out) {
            assert_eq!(sec.raw_pointer % 512, 0, "{name} {sec:?}");
            assert_eq!(sec.raw_size % 512, 0, "{name} {sec:?}");
        }
        let data = std::fs::read(&out).unwrap();
        let found = discover(&data);
        assert!(found.problems.is_empty(), "{name}: {:?}", found.problems);
        let wrappers = section(&out, ".hipFatB");
        let relocated = dir64_relocations(&out);
        assert_eq!(found.wrappers.len(), found.bundle_count());
        for (i, w) in found.wrappers.iter().enumerate() {
            let rva = wrappers.virtual_address + w.location.offset - wrappers.raw_pointer;
            assert!(relocated.contains(&(rva + 8)), "{name} wrapper {i}");
            assert_eq!(w.target, WrapperTarget::Bundle { index: i }, "{name}");
        }
        // What clang finds in the dumped section is what was kept.
        let ids = check_against_clang(&out, ".hip_fat", name);
        let report: Value = serde_json::from_str(&stdout).unwrap();
        let kept: Vec<BTreeSet<String>> = report["regions"][0]["bundles"]
            .as_array()
            .unwrap_or_else(|| panic!("{report}"))
            .iter()
            .map(|b| {
                b["kept"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["id"].as_str().unwrap().to_owned())
                    .collect()
            })
            .collect();
        assert_eq!(ids, kept, "{name}");
        // CheckSum: kept zero, or recomputed as lld-link computes it.
        let input_data = std::fs::read(input).unwrap();
        let field = checksum_field(&data);
        if readobj_checksum(input) == 0 {
            assert_eq!(readobj_checksum(&out), 0, "{name}");
        } else {
            assert_eq!(
                gfxkit_shrink::pe::checksum(&input_data, field),
                readobj_checksum(input),
                "our checksum of lld-link's output"
            );
            assert_eq!(
                gfxkit_shrink::pe::checksum(&data, field),
                readobj_checksum(&out),
                "{name}"
            );
        }
    }
}

/// The `CheckSum` of the auxiliary record of section `name`'s symbol in the COFF object
/// `file`, as llvm-readobj-19 reads it.
fn readobj_section_checksum(file: &Path, name: &str) -> u32 {
    let out = run_ok(
        Command::new(llvm_tool("llvm-readobj"))
            .arg("--symbols")
            .arg(file),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut in_symbol = false;
    for line in text.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("Name: ") {
            in_symbol = n == name;
        } else if let Some(sum) = line.strip_prefix("Checksum: ").filter(|_| in_symbol) {
            return hex_or_dec(&sum.to_lowercase()) as u32;
        }
    }
    panic!("{}: no section symbol {name}", file.display())
}

/// For each symbol of the `.lib` at `file`, the name of the member its index entry leads to,
/// as the `object` crate reads the index (the second linker member of a COFF library).
fn library_index(file: &Path) -> BTreeSet<(String, String)> {
    use object::read::archive::ArchiveFile;
    let data = std::fs::read(file).unwrap();
    let ar = ArchiveFile::parse(&data[..]).unwrap();
    assert_eq!(
        ar.kind(),
        object::read::archive::ArchiveKind::Coff,
        "{}",
        file.display()
    );
    let symbols = ar.symbols().unwrap().expect("a symbol index");
    symbols
        .map(|sym| {
            let sym = sym.unwrap();
            let member = ar.member(sym.offset()).unwrap();
            (
                String::from_utf8_lossy(sym.name()).into_owned(),
                String::from_utf8_lossy(member.name()).into_owned(),
            )
        })
        .collect()
}

/// Pruned and recompressed COFF objects and static libraries are valid (llvm-readobj-19 reads
/// every header, section, symbol and relocation), smaller when pruned, hold only the kept
/// entries as clang-offload-bundler-19 sees them, and carry the section checksum LLVM's object
/// writer would give their new `.hip_fatbin`; lld-link-19 links them into a DLL holding the
/// kept entries, and a library's symbol index leads each symbol to its member, as before.
#[test]
fn pruned_and_recompressed_objects_and_libraries_link() {
    let b = built();
    let work = b.dir.path().join("rewrite-coff");
    std::fs::create_dir_all(&work).unwrap();
    // clang's own checksums are the JamCRC of the section, as gfxkit computes it.
    for obj in &b.objs {
        let dumped = dump_section(obj, ".hip_fatbin", &work.join("clang.bin"));
        assert_eq!(
            gfxkit_shrink::pe::coff::jamcrc(&dumped),
            readobj_section_checksum(obj, ".hip_fatbin"),
            "{}",
            obj.display()
        );
    }
    let cases: [(&PathBuf, &[&str], &str, &[&str]); 4] = [
        (
            &b.objs[0],
            &["prune", "--keep", "gfx90a"],
            "p0.obj",
            &["gfx90a"],
        ),
        (
            &b.objs[1],
            &["prune", "--drop", "gfx942"],
            "p1.obj",
            &["gfx1100"],
        ),
        (
            &b.objs[0],
            &["recompress", "--ccob-version", "2", "--method", "zlib"],
            "r0.obj",
            &["gfx90a", "gfx1151"],
        ),
        (
            &b.objs[1],
            &["recompress", "--uncompressed"],
            "r1.obj",
            &["gfx942", "gfx1100"],
        ),
    ];
    let mut outputs = Vec::new();
    for (input, args, name, kept) in cases {
        let out = work.join(name);
        let mut argv = args.to_vec();
        argv.extend([s(input), "-o", s(&out)]);
        let (code, stdout, err) = gfxkit(&argv);
        assert_eq!(code, 0, "{name}: {stdout}{err}");
        let before = std::fs::metadata(input).unwrap().len();
        let after = std::fs::metadata(&out).unwrap().len();
        if args[0] == "prune" {
            assert!(after < before, "{name}: {after} >= {before}");
        }
        let readobj = run_ok(
            Command::new(llvm_tool("llvm-readobj"))
                .args(["--file-headers", "--sections", "--symbols", "--relocations"])
                .arg(&out),
        );
        assert!(
            readobj.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&readobj.stderr)
        );
        let ids = check_against_clang(&out, ".hip_fatbin", name);
        let mut expected: BTreeSet<String> = kept
            .iter()
            .map(|a| format!("hipv4-amdgcn-amd-amdhsa--{a}"))
            .collect();
        expected.insert("host-x86_64-unknown-linux--".to_owned());
        assert_eq!(ids, [expected], "{name}");
        let dumped = dump_section(&out, ".hip_fatbin", &work.join(format!("{name}.bin")));
        assert_eq!(
            gfxkit_shrink::pe::coff::jamcrc(&dumped),
            readobj_section_checksum(&out, ".hip_fatbin"),
            "{name}: the section checksum"
        );
        let data = std::fs::read(&out).unwrap();
        let found = discover(&data);
        assert!(found.problems.is_empty(), "{name}: {:?}", found.problems);
        assert_eq!(found.wrappers.len(), 1, "{name}");
        outputs.push(out);
    }
    // The pruned objects link into a DLL holding what each kept.
    let dll = lld_link(&work, "p.dll", &outputs[..2], None);
    let want: Vec<BTreeSet<String>> = [["gfx90a"], ["gfx1100"]]
        .iter()
        .map(|a| {
            a.iter()
                .map(|a| format!("hipv4-amdgcn-amd-amdhsa--{a}"))
                .collect()
        })
        .collect();
    assert_eq!(listed_ids(&dll), want);

    // The static library: each member pruned, the symbol index following the members.
    let lib = work.join("p.lib");
    let (code, stdout, err) = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        "--keep",
        "gfx1100",
        s(&b.lib),
        "-o",
        s(&lib),
    ]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(std::fs::metadata(&lib).unwrap().len() < std::fs::metadata(&b.lib).unwrap().len());
    let index = library_index(&lib);
    assert!(!index.is_empty());
    assert_eq!(index, library_index(&b.lib));
    let mut lib_ids = listed_ids(&lib);
    lib_ids.sort();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(lib_ids, want_sorted);
    // lld-link finds both members through the index (no /wholearchive) and links what was kept.
    let linked = work.join("from-lib.dll");
    run_ok(
        Command::new(llvm_tool("lld-link"))
            .args(["/dll", "/noentry", "/force:unresolved", "/nodefaultlib"])
            .args(["/include:w0_k0", "/include:w1_k0"])
            .arg(&lib)
            .arg(format!("/out:{}", linked.display())),
    );
    let mut linked_ids = listed_ids(&linked);
    linked_ids.sort();
    assert_eq!(linked_ids, want_sorted);
    let (code, out, err) = gfxkit(&["verify", s(&lib), s(&dll), s(&linked)]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A signed image (a certificate table) is refused with the reason; kpack split refuses COFF
/// objects and static libraries saying what it splits.
#[test]
fn signed_images_and_objects_are_refused_with_the_reason() {
    let b = built();
    let mut data = std::fs::read(&b.dll).unwrap();
    // The certificate table's data directory: optional header + 112 + 4 * 8 in PE32+.
    let dir = u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize + 24 + 112 + 32;
    let end = data.len() as u32;
    data[dir..dir + 4].copy_from_slice(&end.to_le_bytes());
    data[dir + 4..dir + 8].copy_from_slice(&8u32.to_le_bytes());
    data.extend_from_slice(&[8, 0, 0, 0, 0, 2, 2, 0]);
    let signed = b.dir.path().join("signed.dll");
    std::fs::write(&signed, &data).unwrap();
    let out = b.dir.path().join("signed-pruned.dll");
    let (code, _, err) = gfxkit(&["prune", "--keep", "gfx90a", s(&signed), "-o", s(&out)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("signed") && err.contains("Authenticode"),
        "{err}"
    );
    assert!(!out.exists());
    // With --drop-signature the result is the unsigned image, pruned.
    let (code, _, err) = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        "--drop-signature",
        s(&signed),
        "-o",
        s(&out),
    ]);
    assert_eq!(code, 0, "{err}");
    let pruned = std::fs::read(&out).unwrap();
    assert_eq!(&pruned[dir..dir + 8], &[0; 8]);
    assert!(pruned.len() < data.len());
    let found = discover(&pruned);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(found.bundle_count(), 2);
    // kpack split refuses the signed image unless its signature may go, and objects and
    // static libraries (what is split is a linked image), saying why.
    let split = b.dir.path().join("signed-split").join("bin").join("w.dll");
    let (code, _, err) = gfxkit(&[
        "kpack",
        "split",
        "--group",
        "w",
        "-o",
        s(&split),
        s(&signed),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("signed") && err.contains("--drop-signature"),
        "{err}"
    );
    assert!(!split.exists());
    let (code, _, err) = gfxkit(&[
        "kpack",
        "split",
        "--group",
        "w",
        "--drop-signature",
        "-o",
        s(&split),
        s(&signed),
    ]);
    assert_eq!(code, 0, "{err}");
    let host = std::fs::read(&split).unwrap();
    assert_eq!(&host[dir..dir + 8], &[0; 8]);
    assert_eq!(discover(&host).wrappers.len(), 2);
    for (f, why) in [(&b.objs[0], "COFF object"), (&b.lib, "static library")] {
        let (code, _, err) = gfxkit(&["kpack", "split", "--group", "w", "-o", s(&out), s(f)]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(why), "{err}");
    }
}

/// The device entry IDs of each unit `list --json` gives for `file` (bundles of a fat file,
/// wrappers of a split one), in order.
fn listed_ids(file: &Path) -> Vec<BTreeSet<String>> {
    let v = json_any(&["list", "--json", s(file)]);
    v["files"][0]["bundles"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|b| {
            b["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_owned())
                .filter(|id| !id.starts_with("host-"))
                .collect()
        })
        .collect()
}

/// `gfxkit ARGS` printing JSON, whatever its exit code (2 included: damage met).
fn json_any(args: &[&str]) -> Value {
    let (_, out, err) = gfxkit(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}{err}"))
}

/// The code objects `extract` writes for `file`: (file name after the stem, bytes), sorted.
fn extracted(file: &Path, dir: &Path) -> Vec<Vec<u8>> {
    let (code, out, err) = gfxkit(&["extract", s(file), "-o", s(dir)]);
    assert_eq!(code, 0, "{}: {out}{err}", file.display());
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "co"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    v.sort();
    v
}

/// What `select --json` on four devices and `doctor --json` answer for `file`, without paths
/// and file offsets (a split binary's answers come from its archives).
fn answers(file: &Path) -> Value {
    let devices = ["gfx90a:sramecc+:xnack-", "gfx942", "gfx1151", "gfx1201"];
    let mut out = Vec::new();
    for device in devices {
        let v = json_any(&["select", "--json", "--device", device, s(file)]);
        let picks: Vec<Value> = v["files"][0]["bundles"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|b| {
                let arch = b["selected"]
                    .as_str()
                    .map(|id| id.rsplit("--").next().unwrap().to_owned());
                serde_json::json!({ "arch": arch, "loads": !b["selected"].is_null() })
            })
            .collect();
        out.push(serde_json::json!({ "device": device, "picks": picks }));
    }
    let mut args = vec!["doctor", "--json"];
    for d in devices {
        args.extend(["--device", d]);
    }
    args.push(s(file));
    let v = json_any(&args);
    out.push(v["files"][0]["runs_on"].clone());
    Value::Array(out)
}

/// `kpack split` of the DLL and the EXE lays them out as TheRock's Windows transform does:
/// llvm-readobj-19 reads the result, which is smaller, has `.kpackrf` last and `.hip_fat`
/// without file bytes; every wrapper is `HIPK`, base-relocated, numbered and leads to the
/// marker; the archives at `../.kpack/w_<arch>.kpack` hold every code object byte for byte;
/// a `/release` DLL's `CheckSum` is recomputed;
/// `list`, `select` and `doctor` see through it, answering as for the fat image and as for the
/// ELF build split alike; `verify` and `size` answer as for the split ELF build. `kpack inline` gives back
/// an image with the original's entries, which splits again to the same bytes, and inlines
/// again to the same bytes.
#[test]
fn kpack_split_and_inline_of_pe_images() {
    let b = built();
    let elf = b.dir.path().join("kpack-elf").join("bin").join("libw.so");
    let (code, o, e) = gfxkit(&["kpack", "split", "--group", "w", s(&b.elf), "-o", s(&elf)]);
    assert_eq!(code, 0, "{o}{e}");
    for (input, name) in [(&b.dll, "w.dll"), (&b.exe, "w.exe")] {
        let work = b.dir.path().join(format!("kpack-{name}"));
        let out = work.join("bin").join(name);
        let (code, stdout, err) = gfxkit(&[
            "kpack",
            "split",
            "--group",
            "w",
            "--json",
            s(input),
            "-o",
            s(&out),
        ]);
        assert_eq!(code, 0, "{name}: {stdout}{err}");
        let before = std::fs::metadata(input).unwrap().len();
        let after = std::fs::metadata(&out).unwrap().len();
        assert!(after < before, "{name}: {after} >= {before}");
        let readobj = run_ok(
            Command::new(llvm_tool("llvm-readobj"))
                .args(["--file-headers", "--sections", "--coff-basereloc"])
                .arg(&out),
        );
        assert!(
            readobj.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&readobj.stderr)
        );
        let sections = readobj_sections(&out);
        assert_eq!(sections.last().unwrap().name, ".kpackrf", "{name}");
        for sec in &sections {
            assert_eq!(sec.raw_pointer % 512, 0, "{name} {sec:?}");
            assert_eq!(sec.raw_size % 512, 0, "{name} {sec:?}");
        }
        assert_eq!(section(&out, ".hip_fat").raw_size, 0, "{name}");
        assert_eq!(
            section(&out, ".hip_fat").virtual_address,
            section(input, ".hip_fat").virtual_address
        );
        let kpackrf = section(&out, ".kpackrf");
        let data = std::fs::read(&out).unwrap();
        let found = discover(&data);
        assert!(found.problems.is_empty(), "{name}: {:?}", found.problems);
        assert!(found.bundle_count() == 0);
        // The optional header's ImageBase: e_lfanew + 4 + 20 + 24.
        let lfanew = u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize;
        let image_base = u64::from_le_bytes(data[lfanew + 48..lfanew + 56].try_into().unwrap());
        let wrappers = section(&out, ".hipFatB");
        let relocated = dir64_relocations(&out);
        assert_eq!(found.wrappers.len(), 2);
        for (i, w) in found.wrappers.iter().enumerate() {
            assert_eq!(w.magic, WrapperMagic::Hipk, "{name} wrapper {i}");
            assert_eq!(w.kpack_index(), Some(i as u32));
            let at = w.location.offset as usize;
            let pointer = u64::from_le_bytes(data[at + 8..at + 16].try_into().unwrap());
            assert_eq!(pointer, image_base + kpackrf.virtual_address, "{name}");
            let rva = wrappers.virtual_address + w.location.offset - wrappers.raw_pointer;
            assert!(relocated.contains(&(rva + 8)), "{name} wrapper {i}");
            let k = w.kpack.as_ref().expect("the marker decodes");
            assert_eq!(k.kernel_name.as_deref(), Some(&*format!("bin/{name}")));
            assert_eq!(k.search_paths, ["../.kpack/w_@GFXARCH@.kpack"]);
        }
        for arch in ["gfx90a", "gfx942", "gfx1100", "gfx1151"] {
            assert!(
                work.join(format!(".kpack/w_{arch}.kpack")).is_file(),
                "{arch}"
            );
        }
        // The code objects, byte for byte, through the archives.
        let original = extracted(input, &work.join("x-original"));
        assert_eq!(original.len(), 4);
        assert_eq!(extracted(&out, &work.join("x-split")), original, "{name}");
        // Every command sees through it as through the fat image.
        assert_eq!(listed_ids(&out), listed_ids(input), "{name}");
        assert_eq!(listed_ids(&out), listed_ids(&elf), "{name}");
        assert_eq!(answers(&out), answers(input), "{name}");
        assert_eq!(answers(&out), answers(&elf), "{name}");
        let units = json_any(&["list", "--json", s(&out)]);
        assert_eq!(units["files"][0]["bundles"][0]["section"], ".kpackrf");
        for cmd in ["verify", "size"] {
            let (code, o, e) = gfxkit(&[cmd, s(&out)]);
            let (elf_code, ..) = gfxkit(&[cmd, s(&elf)]);
            assert_eq!(code, elf_code, "{cmd} {name}: {o}{e}");
            assert_ne!(code, 2, "{cmd} {name}: {o}{e}");
        }

        // Inline: the original's entries, in a valid image without .kpackrf.
        let fat = work.join(format!("fat-{name}"));
        let (code, o, e) = gfxkit(&["kpack", "inline", s(&out), "-o", s(&fat)]);
        assert_eq!(code, 0, "{name}: {o}{e}");
        let readobj = run_ok(
            Command::new(llvm_tool("llvm-readobj"))
                .args(["--file-headers", "--sections", "--coff-basereloc"])
                .arg(&fat),
        );
        assert!(readobj.stderr.is_empty(), "{name}");
        assert!(readobj_sections(&fat).iter().all(|s| s.name != ".kpackrf"));
        let fat_data = std::fs::read(&fat).unwrap();
        let found = discover(&fat_data);
        assert!(found.problems.is_empty(), "{name}: {:?}", found.problems);
        for (i, w) in found.wrappers.iter().enumerate() {
            assert_eq!(w.magic, WrapperMagic::Hipf);
            assert_eq!(w.target, WrapperTarget::Bundle { index: i });
        }
        assert_eq!(listed_ids(&fat), listed_ids(input), "{name}");
        assert_eq!(extracted(&fat, &work.join("x-fat")), original, "{name}");
        assert_eq!(answers(&fat), answers(input), "{name}");
        assert_eq!(readobj_checksum(&fat), readobj_checksum(input));
        // clang-19 lays the bundles out as inline does (and its CCOB bytes are zstd's at the
        // default level): the image comes back byte for byte, headers and timestamp included.
        assert!(
            fat_data == std::fs::read(input).unwrap(),
            "{name}: inline(split(x)) == x"
        );

        // An image in the layout inline writes makes the round trip byte for byte.
        let again = work.join("again").join("bin").join(name);
        let (code, o, e) = gfxkit(&["kpack", "split", "--group", "w", s(&fat), "-o", s(&again)]);
        assert_eq!(code, 0, "{name}: {o}{e}");
        assert_eq!(std::fs::read(&again).unwrap(), data, "{name}: split again");
        let fat2 = work.join(format!("fat2-{name}"));
        let (code, o, e) = gfxkit(&["kpack", "inline", s(&again), "-o", s(&fat2)]);
        assert_eq!(code, 0, "{name}: {o}{e}");
        assert_eq!(
            std::fs::read(&fat2).unwrap(),
            fat_data,
            "{name}: inline again"
        );

        // Damaged split images: a clear error naming the file, never a panic.
        for cut in [data.len() / 3, data.len() / 2, data.len() - 100, 0x300] {
            let bad = work.join(format!("cut-{cut}-{name}"));
            std::fs::write(&bad, &data[..cut]).unwrap();
            let o = work.join(format!("cut-fat-{name}"));
            let (code, so, e) = gfxkit(&["kpack", "inline", s(&bad), "-o", s(&o)]);
            assert_eq!(code, 2, "{name} cut at {cut}: {so}{e}");
            assert!(e.contains(s(&bad)), "{e}");
            assert!(!o.exists());
        }
    }
    // A DLL with a CheckSum: recomputed in the split, and the round trip gives it back.
    let work = b.dir.path().join("kpack-release");
    let out = work.join("bin").join("wr.dll");
    let (code, o, e) = gfxkit(&[
        "kpack",
        "split",
        "--group",
        "w",
        s(&b.release),
        "-o",
        s(&out),
    ]);
    assert_eq!(code, 0, "{o}{e}");
    let data = std::fs::read(&out).unwrap();
    assert_ne!(readobj_checksum(&out), 0);
    assert_eq!(
        gfxkit_shrink::pe::checksum(&data, checksum_field(&data)),
        readobj_checksum(&out)
    );
    let fat = work.join("fat-wr.dll");
    let (code, o, e) = gfxkit(&["kpack", "inline", s(&out), "-o", s(&fat)]);
    assert_eq!(code, 0, "{o}{e}");
    assert!(std::fs::read(&fat).unwrap() == std::fs::read(&b.release).unwrap());
}

/// The section table of the PE image `data`: (header offset, name, VirtualSize,
/// VirtualAddress, SizeOfRawData, PointerToRawData) per section.
fn pe_sections(data: &[u8]) -> Vec<(usize, String, u32, u32, u32, u32)> {
    let u16_at = |at: usize| u16::from_le_bytes(data[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
    let lfanew = u32_at(0x3c) as usize;
    let count = u16_at(lfanew + 6);
    let table = lfanew + 24 + u16_at(lfanew + 20);
    (0..count)
        .map(|i| {
            let h = table + 40 * i;
            let name = String::from_utf8_lossy(&data[h..h + 8])
                .trim_end_matches('\0')
                .to_owned();
            (
                h,
                name,
                u32_at(h + 8),
                u32_at(h + 12),
                u32_at(h + 16),
                u32_at(h + 20),
            )
        })
        .collect()
}

/// `split` (a DLL `kpack split` made, whose `.hip_fat` has no file bytes) with `stale` put back
/// as the raw data of `.hip_fat`, padded to the file alignment (512): the later sections' raw
/// data moves up and `SizeOfInitializedData` grows, as in an image TheRock's Windows transform
/// wrote, which keeps the part of `.hip_fat` outside whole pages.
fn with_stale_fatbin(split: &[u8], stale: &[u8]) -> Vec<u8> {
    let sections = pe_sections(split);
    let (h, .., raw_size, at) = sections.iter().find(|s| s.1 == ".hip_fat").unwrap().clone();
    assert_eq!(
        raw_size, 0,
        "kpack split leaves .hip_fat without file bytes"
    );
    let len = stale.len().div_ceil(512) * 512;
    let mut out = split.to_vec();
    let mut padded = stale.to_vec();
    padded.resize(len, 0);
    out.splice(at as usize..at as usize, padded);
    let put =
        |out: &mut Vec<u8>, at: usize, v: u32| out[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put(&mut out, h + 16, len as u32);
    for (other, _, _, _, size, pointer) in &sections {
        if *other != h && *size > 0 && *pointer >= at {
            put(&mut out, other + 20, pointer + len as u32);
        }
    }
    let lfanew = u32::from_le_bytes(out[0x3c..0x40].try_into().unwrap()) as usize;
    let init = u32::from_le_bytes(out[lfanew + 32..lfanew + 36].try_into().unwrap());
    put(&mut out, lfanew + 32, init + len as u32);
    out
}

/// Regression (issue 38): a DLL of two `--offload-compress` units split as TheRock's Windows
/// transform does keeps, in a shortened `.hip_fat`, the bytes outside whole pages: a stale CCOB
/// (the second unit's, moved to the start of the section), or a piece of one when a bundle
/// straddles the last page boundary. `list`, `select` and `extract` reported that leftover as
/// the file's one bundle ("no wrapper points to this bundle"); the runtime reads the two `HIPK`
/// wrappers' code objects from the kpack archives. They now answer through the wrappers, as for
/// the fat DLL, and the leftover is a note.
#[test]
fn therock_split_dll_of_two_compressed_units_reads_through_its_wrappers() {
    let archs: &[&str] = &["gfx90a", "gfx942", "gfx1100", "gfx1151"];
    let tus = [
        Tu {
            stem: "u0",
            source: W0,
            archs,
            compress: true,
        },
        Tu {
            stem: "u1",
            source: "extern \"C\" __global__ void u1_k0(int *a, int n) {\n\
                int t = __builtin_amdgcn_workitem_id_x(); if (t < n) a[t] ^= n; }\n",
            archs,
            compress: true,
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let objs: Vec<PathBuf> = tus.iter().map(|t| t.windows_object(d)).collect();
    let fat = lld_link(d, "u.dll", &objs, None);
    let fat_data = std::fs::read(&fat).unwrap();
    let fat_ids = listed_ids(&fat);
    assert_eq!(fat_ids.len(), 2, "two CCOBs in .hip_fat");
    assert!(fat_ids.iter().all(|ids| ids.len() == 4), "{fat_ids:?}");
    let original = extracted(&fat, &d.join("x-fat"));
    assert_eq!(original.len(), 8);

    let out = d.join("split").join("bin").join("u.dll");
    let (code, o, e) = gfxkit(&["kpack", "split", "--group", "u", s(&fat), "-o", s(&out)]);
    assert_eq!(code, 0, "{o}{e}");
    let split = std::fs::read(&out).unwrap();

    // `.hip_fat` as the loader maps it from the fat DLL, and what TheRock's zero-paging keeps
    // of it: the bytes before the first and after the last page boundary of its addresses.
    let (.., vsize, rva, _, pointer) = pe_sections(&fat_data)
        .into_iter()
        .find(|s| s.1 == ".hip_fat")
        .unwrap();
    let contents = &fat_data[pointer as usize..(pointer + vsize) as usize];
    let head = ((4096 - rva % 4096) % 4096).min(vsize) as usize;
    let tail = ((rva + vsize) / 4096 * 4096)
        .saturating_sub(rva)
        .max(head as u32) as usize;
    let mut kept = contents[..head].to_vec();
    kept.extend_from_slice(&contents[tail..]);
    assert!(
        kept.starts_with(b"CCOB"),
        "the kept bytes hold a stale bundle"
    );
    // A piece cut from inside a bundle, as when one straddles the page boundary.
    let piece = contents[0x100..0x100 + kept.len()].to_vec();
    assert!(!piece.starts_with(b"CCOB"));

    for (tag, stale, says) in [
        ("bundle", &kept, "(1 stale offload bundle)"),
        ("piece", &piece, "(no whole offload bundle)"),
    ] {
        let file = out.with_file_name(format!("u-{tag}.dll"));
        std::fs::write(&file, with_stale_fatbin(&split, stale)).unwrap();
        let readobj = run_ok(
            Command::new(llvm_tool("llvm-readobj"))
                .args(["--file-headers", "--sections", "--coff-basereloc"])
                .arg(&file),
        );
        assert!(readobj.stderr.is_empty(), "{tag}");
        let raw = section(&file, ".hip_fat").raw_size;
        assert_eq!(raw, stale.len().div_ceil(512) as u64 * 512, "{tag}");
        // The file's bytes at .hip_fat are the stale ones: the test would fail without them.
        let dumped = dump_section(&file, ".hip_fat", &d.join(format!("{tag}.bin")));
        assert_eq!(&dumped[..stale.len()], &stale[..], "{tag}");

        // list: one unit per wrapper, its code in the archives, the fat DLL's entries.
        let (code, o, e) = gfxkit(&["list", "--json", s(&file)]);
        assert_eq!(code, 0, "{tag}: {o}{e}");
        let v: Value = serde_json::from_str(&o).unwrap();
        let f = &v["files"][0];
        let units = f["bundles"].as_array().unwrap();
        assert_eq!(units.len(), 2, "{tag}: {f}");
        for (i, u) in units.iter().enumerate() {
            assert_eq!(u["format"], "kpack", "{tag}");
            assert_eq!(u["section"], ".kpackrf", "{tag}");
            assert_eq!(u["kpack_key"], format!("bin/u.dll#{i}"), "{tag}");
        }
        assert_eq!(listed_ids(&file), fat_ids, "{tag}");
        assert_eq!(f["kpack_archives"].as_array().unwrap().len(), 4, "{tag}");
        // The leftover: one note at .hip_fat, nothing else.
        let problems = f["problems"].as_array().unwrap();
        assert_eq!(problems.len(), 1, "{tag}: {problems:?}");
        assert_eq!(problems[0]["severity"], "note", "{tag}");
        assert_eq!(problems[0]["location"]["section"], ".hip_fat", "{tag}");
        let message = problems[0]["message"].as_str().unwrap();
        assert!(message.contains(says), "{tag}: {message}");
        assert!(message.contains("kpack archives"), "{tag}: {message}");
        let (_, text, err) = gfxkit(&["list", s(&file)]);
        assert!(text.contains("kpack 1 in .kpackrf"), "{tag}: {text}");
        assert!(err.contains("gfxkit: note:"), "{tag}: {err}");
        assert!(
            !err.contains("warning") && !err.contains("error"),
            "{tag}: {err}"
        );

        // select: each wrapper's code object from `u_gfx1151.kpack`.
        let (code, o, e) = gfxkit(&["select", "--json", "--device", "gfx1151", s(&file)]);
        assert_eq!(code, 0, "{tag}: {o}{e}");
        let v: Value = serde_json::from_str(&o).unwrap();
        let picks = v["files"][0]["bundles"].as_array().unwrap();
        assert_eq!(picks.len(), 2, "{tag}: {v}");
        for (i, p) in picks.iter().enumerate() {
            assert_eq!(p["format"], "kpack", "{tag}");
            assert_eq!(p["selected"], "hipv4-amdgcn-amd-amdhsa--gfx1151", "{tag}");
            assert_eq!(p["kpack_key"], format!("bin/u.dll#{i}"), "{tag}");
            let archive = p["archive"].as_str().unwrap();
            assert!(
                archive.ends_with("/.kpack/u_gfx1151.kpack"),
                "{tag}: {archive}"
            );
        }
        assert_eq!(answers(&file), answers(&fat), "{tag}");

        // extract: both units' code objects for every target, byte for byte.
        assert_eq!(
            extracted(&file, &d.join(format!("x-{tag}"))),
            original,
            "{tag}"
        );
        // verify and doctor: nothing wrong.
        let (code, o, e) = gfxkit(&["verify", s(&file)]);
        assert_eq!(code, 0, "{tag}: {o}{e}");
        let (code, o, e) = gfxkit(&["doctor", "--device", "gfx1151", s(&file)]);
        assert_eq!(code, 0, "{tag}: {o}{e}");
    }

    // Damage host discovery meets in a split image is `verify`'s finding too, as for a fat one:
    // a base relocation directory claiming more bytes than its section holds.
    let bad = out.with_file_name("u-bad.dll");
    let mut data = with_stale_fatbin(&split, &kept);
    let lfanew = u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize;
    let size_at = lfanew + 24 + 112 + 5 * 8 + 4; // DataDirectory[BASERELOC].Size
    data[size_at + 2] = 1; // + 64 KiB
    std::fs::write(&bad, data).unwrap();
    let (code, o, e) = gfxkit(&["verify", s(&bad)]);
    assert_eq!(code, 1, "{o}{e}");
    assert!(
        o.contains("error: malformed PE/COFF file: base relocation table"),
        "{o}"
    );
    assert!(
        o.contains("no IMAGE_REL_BASED_DIR64 base relocation"),
        "{o}"
    );
    assert!(
        !o.contains("left in this section"),
        "a note is no finding: {o}"
    );

    // Wrappers given `HIPK` while they still lead to their bundles (damage, not a split): the
    // bundles stay units, and no note says that no wrapper leads to them.
    let mut flipped = fat_data.clone();
    let found = discover(&fat_data);
    assert_eq!(found.wrappers.len(), 2);
    for w in &found.wrappers {
        let at = w.location.offset as usize;
        flipped[at..at + 4].copy_from_slice(&WrapperMagic::HIPK.to_le_bytes());
    }
    let found = discover(&flipped);
    assert_eq!(found.bundle_count(), 2);
    assert!(found.wrappers.iter().all(|w| w.magic == WrapperMagic::Hipk));
    assert!(
        !found
            .problems
            .iter()
            .any(|p| matches!(p.kind, ProblemKind::LeftAfterSplit { .. })),
        "{:?}",
        found.problems
    );
}

/// The prune and the kpack split of an image share one edit model, so they follow the same
/// rules where the headers are unusual: a section without raw data whose `PointerToRawData`
/// lies after `.hip_fat` has it moved with the bytes it names (both), a `PointerToRelocations`
/// at the start of `.hip_fat`'s raw data is refused with the same reason (both), and a last
/// section whose raw size is not a multiple of `FileAlignment` is pruned (what follows
/// `.hip_fat` moves by whole units of it) but not split (the marker section goes after it).
#[test]
fn prune_and_split_of_unusual_images_follow_one_rule() {
    let b = built();
    let dll = std::fs::read(&b.dll).unwrap();
    let sections = pe_sections(&dll);
    let field = |name: &str| sections.iter().find(|s| s.1 == name).unwrap().clone();
    let (fat_header, .., fat_raw, fat_at) = field(".hip_fat");
    let (reloc_header, .., reloc_at) = field(".reloc");
    let (text_header, ..) = field(".text");
    let bss = sections
        .iter()
        .find(|s| s.4 == 0 && s.5 == 0)
        .expect("a section without raw data")
        .0;
    assert!(reloc_at > fat_at, "{sections:?}");
    let dir = b.dir.path().join("unusual");
    std::fs::create_dir_all(&dir).unwrap();
    let crafted = |name: &str, at: usize, v: u32| {
        let mut d = dll.clone();
        d[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let p = dir.join(name);
        std::fs::write(&p, d).unwrap();
        p
    };
    let prune = |input: &Path| {
        let out = input.with_extension("pruned");
        let r = gfxkit(&["prune", "--keep", "gfx90a", s(input), "-o", s(&out)]);
        (r, out)
    };
    let split = |input: &Path| {
        let out = input.with_extension("split");
        let kp = input.with_extension("kp");
        let r = gfxkit(&[
            "kpack",
            "split",
            "--group",
            "u",
            s(input),
            "-o",
            s(&out),
            "--kpack-dir",
            s(&kp),
        ]);
        (r, out)
    };
    let pointer_of = |file: &Path, header: usize| {
        let d = std::fs::read(file).unwrap();
        let (_, _, _, _, _, at) = pe_sections(&d).into_iter().find(|s| s.0 == header).unwrap();
        (at, d.len() as u32)
    };

    // A section without raw data pointing at `.reloc`'s raw data: moved with it.
    let bss_after = crafted("bss.dll", bss + 20, reloc_at);
    for (what, ((code, o, e), out)) in [("prune", prune(&bss_after)), ("split", split(&bss_after))]
    {
        assert_eq!(code, 0, "{what}: {o}{e}");
        let (moved, len) = pointer_of(&out, bss);
        assert_eq!(moved, pointer_of(&out, reloc_header).0, "{what}");
        assert!(moved < len, "{what}: {moved:#x} past the end ({len:#x})");
    }

    // Relocations said to start where `.hip_fat`'s raw data does: refused, for one reason.
    let relocs = crafted("relocs.dll", text_header + 24, fat_at);
    for (what, ((code, o, e), out)) in [("prune", prune(&relocs)), ("split", split(&relocs))] {
        assert_eq!(code, 2, "{what}: {o}{e}");
        assert!(
            e.contains(&format!(
                "PointerToRelocations ({fat_at:#x}) lies in bytes the rewrite replaces"
            )),
            "{what}: {e}"
        );
        assert!(!out.exists(), "{what}");
    }

    // The last section's raw size not a multiple of FileAlignment.
    let unaligned = crafted("unaligned.dll", reloc_header + 16, 0x1f0);
    let ((code, o, e), out) = prune(&unaligned);
    assert_eq!(code, 0, "prune: {o}{e}");
    let pruned = pe_sections(&std::fs::read(&out).unwrap());
    let new_fat_raw = pruned.iter().find(|s| s.0 == fat_header).unwrap().4;
    let (pruned_at, _) = pointer_of(&out, reloc_header);
    assert!(
        new_fat_raw < fat_raw && new_fat_raw % 512 == 0,
        "{pruned:?}"
    );
    assert_eq!(reloc_at - pruned_at, fat_raw - new_fat_raw, "{pruned:?}");
    let ((code, o, e), _) = split(&unaligned);
    assert_eq!(code, 2, "split: {o}{e}");
    assert!(
        e.contains("is not a multiple of FileAlignment 0x200"),
        "{e}"
    );
}

/// A CUDA build of a DLL (its device code in `.nv_fatb`, the PE spelling of `.nv_fatbin`), and
/// the COFF object it is linked from, are named as NVIDIA device code, as on Linux.
#[test]
fn a_cuda_build_of_a_dll_is_named_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain =
        gfxkit_testkit::host_only(d, "host.obj", &["--target=x86_64-pc-windows-msvc", "-c"]);
    let payload = gfxkit_testkit::nvidia_fatbin(d, 4096);
    let obj = d.join("cuda.obj");
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--add-section=.nv_fatb={}", payload.display()))
            .arg("--set-section-flags=.nv_fatb=contents,alloc,load,readonly,data")
            .arg(&plain)
            .arg(&obj),
    );
    let dll = lld_link(d, "cuda.dll", std::slice::from_ref(&obj), None);
    for file in [&obj, &dll] {
        let (code, out, err) = gfxkit(&["verify", s(file)]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains(
                "it holds NVIDIA device code (a CUDA build; CUDA fat binaries in .nv_fatb ("
            ),
            "{err}"
        );
        let j = json(&["select", "--json", "--device", "gfx1100", s(file)]);
        let nvidia = &j["files"][0]["nvidia"][0];
        assert_eq!(nvidia["section"], ".nv_fatb", "{j}");
        // A DLL's section holds what the object's did, rounded up to its file alignment.
        assert!(nvidia["size"].as_u64() >= Some(4112), "{j}");
    }
}
