//! `gfxkit prune` and `gfxkit recompress` on shared libraries, executables, objects and an
//! archive built by clang-19 (linked by lld and by GNU ld): the results still load and run
//! against a stub HIP runtime that checks every registered bundle, hold only the kept
//! targets with entries identical to the originals (as clang-offload-bundler-19 unbundles
//! them), read cleanly with llvm-readelf, keep their host code, symbols and addresses, and
//! are smaller.

mod shrink_fixtures;

use gfxkit_testkit::{llvm_tool, run_ok};
use shrink_fixtures::{gfxkit, run_program, Fixture};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(shrink_fixtures::build)
}

fn out_dir(tag: &str) -> PathBuf {
    let d = fixture().dir.path().join(format!("out-{tag}"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `gfxkit <args> <input> -o <out>` and returns `out`, asserting success.
fn rewrite(args: &[&str], input: &Path, out: &Path) -> String {
    let mut v: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    v.push(input.as_os_str());
    v.push(OsStr::new("-o"));
    v.push(out.as_os_str());
    let o = gfxkit(&v);
    assert!(
        o.status.success(),
        "gfxkit {args:?} {} failed:\n{}{}",
        input.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Entries of every bundle of the file's `.hip_fatbin`, as clang-offload-bundler-19 lists and
/// unbundles them from the dumped section: per bundle, entry ID -> payload.
fn clang_entries(file: &Path, tag: &str) -> Vec<BTreeMap<String, Vec<u8>>> {
    let dir = out_dir(&format!("entries-{tag}"));
    let dumped = dir.join("fatbin.bin");
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg(format!("--dump-section=.hip_fatbin={}", dumped.display()))
            .arg(file)
            .arg(dir.join("scratch")),
    );
    let section = std::fs::read(&dumped).unwrap();
    let mut out = Vec::new();
    for (i, b) in
        gfxkit_shrink::bundle::scan(gfxkit_bytes::Cursor::new(&section), &Default::default())
            .unwrap()
            .iter()
            .enumerate()
    {
        let path = dir.join(format!("b{i}.bin"));
        std::fs::write(&path, b.bytes).unwrap();
        let listed = run_ok(
            Command::new(llvm_tool("clang-offload-bundler"))
                .args(["-list", "-type=o"])
                .arg(format!("-input={}", path.display())),
        );
        let mut entries = BTreeMap::new();
        for id in String::from_utf8(listed.stdout).unwrap().lines() {
            if id.starts_with("host-") {
                entries.insert(id.to_owned(), Vec::new());
                continue;
            }
            let target = dir.join(format!("b{i}-{}.co", id.replace([':', '+'], "_")));
            run_ok(
                Command::new(llvm_tool("clang-offload-bundler"))
                    .args(["-unbundle", "-type=o"])
                    .arg(format!("-input={}", path.display()))
                    .arg(format!("-targets={id}"))
                    .arg(format!("-output={}", target.display())),
            );
            entries.insert(id.to_owned(), std::fs::read(&target).unwrap());
        }
        out.push(entries);
    }
    out
}

fn readelf(args: &[&str], file: &Path) -> (String, String) {
    let o = Command::new(llvm_tool("llvm-readelf"))
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// Runs `program` ([`run_program`]), which must succeed; its standard output.
fn run_program_ok(program: &Path, lib_path: Option<&str>, expect: Option<&str>) -> String {
    let o = run_program(program, lib_path, expect);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{}: {stdout}{}",
        program.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// Runs the fixture's `lib_main` ([`run_program_ok`]) with the libraries in `dir` first on
/// the library path, then the fixture's own; `expect` lists the targets every registered bundle
/// may hold. Its standard output.
fn run_main_with_libs_in(dir: &Path, expect: &str) -> String {
    let f = fixture();
    let path = format!("{}:{}", dir.display(), f.dir.path().display());
    run_program_ok(&f.lib_main, Some(&path), Some(expect))
}

/// `e_phoff` and `e_phnum` of an ELF64 file.
fn phdr_table(data: &[u8]) -> (usize, usize) {
    let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes(data[56..58].try_into().unwrap()) as usize;
    (phoff, phnum)
}

/// The program header table (as `llvm-readelf -h` prints it) is still right after the ELF
/// header, with `phnum` entries.
fn assert_table_unmoved(header: &str, phnum: usize) {
    assert!(
        header.contains("Start of program headers:          64 "),
        "{header}"
    );
    assert!(
        header.contains(&format!("Number of program headers:         {phnum}\n")),
        "{header}"
    );
}

/// `.hip_fatbin`'s address and size from `llvm-readelf -S`.
fn fatbin_range(file: &Path) -> (u64, u64) {
    let (s, _) = readelf(&["-S", "-W"], file);
    let line = s.lines().find(|l| l.contains(".hip_fatbin")).unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    let i = f.iter().position(|x| *x == ".hip_fatbin").unwrap();
    (
        u64::from_str_radix(f[i + 2], 16).unwrap(),
        u64::from_str_radix(f[i + 4], 16).unwrap(),
    )
}

/// Section headers without file offsets (and without `.hip_fatbin`'s size).
fn sections_sans_offsets(file: &Path) -> Vec<String> {
    let (s, _) = readelf(&["-S", "-W"], file);
    s.lines()
        .filter(|l| l.trim_start().starts_with('['))
        .map(|l| {
            let (nr, rest) = l.split_once(']').unwrap();
            let mut f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() >= 5 && f[0] != "Name" {
                f[3] = "-";
                if f[0] == ".hip_fatbin" {
                    f[4] = "-";
                }
            }
            format!("{nr}] {}", f.join(" "))
        })
        .collect()
}

/// Relocations with file offsets masked and the addends that point into `.hip_fatbin`
/// replaced by a marker.
fn relocs_masked(file: &Path) -> Vec<String> {
    let (lo, size) = fatbin_range(file);
    let (s, _) = readelf(&["-r", "-W"], file);
    s.lines()
        .map(|l| {
            if l.starts_with("Relocation section") {
                return l.split(" at offset").next().unwrap().to_owned();
            }
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 4 && f[2] == "R_X86_64_RELATIVE" {
                let a = u64::from_str_radix(f[3], 16).unwrap();
                if a >= lo && a < lo + size {
                    return format!("{} {} {} <fatbin>", f[0], f[1], f[2]);
                }
            }
            f.join(" ")
        })
        .collect()
}

/// Replaces the hex number after every "offset " and "Offset: " (file offsets move;
/// addresses do not).
fn mask_offsets(s: &str) -> String {
    let mut out = s.to_owned();
    for key in ["offset 0x", "Offset: 0x"] {
        let mut masked = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(i) = rest.find(key) {
            masked.push_str(&rest[..i + key.len() - 2]);
            masked.push('X');
            rest = rest[i + key.len()..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        }
        masked.push_str(rest);
        out = masked;
    }
    out
}

fn tool_out(tool: &str, args: &[&str], file: &Path) -> String {
    let o = run_ok(Command::new(llvm_tool(tool)).args(args).arg(file));
    String::from_utf8(o.stdout)
        .unwrap()
        .replace(&file.display().to_string(), "FILE")
}

/// Everything that must hold for a pruned linked file.
fn check_pruned_elf(orig: &Path, pruned: &Path, kept: &[&str], tag: &str) {
    let before = std::fs::metadata(orig).unwrap().len();
    let after = std::fs::metadata(pruned).unwrap().len();
    assert!(
        after < before,
        "{tag}: {after} is not smaller than {before}"
    );
    // Reads cleanly.
    let (_, err) = readelf(&["-a", "-W"], pruned);
    assert!(err.is_empty(), "{tag}: llvm-readelf -a complains:\n{err}");
    // Unchanged apart from offsets and sizes.
    assert_eq!(
        sections_sans_offsets(orig),
        sections_sans_offsets(pruned),
        "{tag}: sections"
    );
    for args in [
        &["-s", "-W"][..],
        &["--dyn-syms", "-W"],
        &["-d", "-W"],
        &["-n"],
        &["-V"],
        &["--unwind"],
    ] {
        assert_eq!(
            mask_offsets(&readelf(args, orig).0),
            mask_offsets(&readelf(args, pruned).0),
            "{tag}: llvm-readelf {args:?} differs"
        );
    }
    assert_eq!(
        relocs_masked(orig),
        relocs_masked(pruned),
        "{tag}: relocations"
    );
    assert_eq!(
        tool_out(
            "llvm-objdump",
            &["-d", "--no-show-raw-insn", "-j", ".text"],
            orig
        ),
        tool_out(
            "llvm-objdump",
            &["-d", "--no-show-raw-insn", "-j", ".text"],
            pruned
        ),
        "{tag}: host code differs"
    );
    assert_eq!(
        tool_out("llvm-nm", &["-D"], orig),
        tool_out("llvm-nm", &["-D"], pruned),
        "{tag}: dynamic symbols differ"
    );
    // gfxkit's host-binary reader (a separate implementation) finds every bundle through
    // its wrapper, with no problem.
    let data = std::fs::read(pruned).unwrap();
    let found = gfxkit_host::discover(&data);
    assert!(found.problems.is_empty(), "{tag}: {:?}", found.problems);
    let orig_data = std::fs::read(orig).unwrap();
    let orig_found = gfxkit_host::discover(&orig_data);
    assert_eq!(found.bundle_count(), orig_found.bundle_count(), "{tag}");
    assert_eq!(found.wrappers.len(), orig_found.wrappers.len(), "{tag}");
    for i in 0..found.bundle_count() {
        let at = found.bundle_location(i);
        assert!(found.is_wrapped(i), "{tag}: bundle at {at:?}");
    }
    // `gfxkit list` shows only the kept targets (plus host) in every bundle.
    let listed = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(["list", "--json"])
        .arg(pruned)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{tag}: gfxkit list failed");
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let bundles = json["files"][0]["bundles"].as_array().unwrap();
    assert_eq!(
        bundles.len(),
        orig_found.bundle_count(),
        "{tag}: gfxkit list"
    );
    for b in bundles {
        for e in b["entries"].as_array().unwrap() {
            let id = e["id"].as_str().unwrap();
            let target = id.rsplit("--").next().unwrap();
            assert!(
                id.starts_with("host-") || kept.contains(&target),
                "{tag}: gfxkit list shows {id}"
            );
        }
    }
    // Only the kept targets (plus host), with entries identical to the originals.
    let old = clang_entries(orig, &format!("{tag}-old"));
    let new = clang_entries(pruned, &format!("{tag}-new"));
    assert_eq!(old.len(), new.len(), "{tag}: bundle count");
    for (i, (o, n)) in old.iter().zip(&new).enumerate() {
        for (id, bytes) in n {
            let target = id.rsplit("--").next().unwrap();
            assert!(
                id.starts_with("host-") || kept.contains(&target),
                "{tag}: bundle {i} still holds {id}"
            );
            assert_eq!(
                Some(bytes),
                o.get(id),
                "{tag}: bundle {i} entry {id} changed"
            );
        }
        let expected: Vec<&String> = o
            .keys()
            .filter(|id| id.starts_with("host-") || kept.contains(&id.rsplit("--").next().unwrap()))
            .collect();
        assert_eq!(
            expected,
            n.keys().collect::<Vec<_>>(),
            "{tag}: bundle {i} entries"
        );
    }
}

#[test]
fn shared_libraries_pruned_still_load_and_hold_only_kept_targets() {
    let f = fixture();
    let kept = ["gfx90a:xnack+", "gfx90a:xnack-", "gfx90a"];
    let stub_dir = f.dir.path().display().to_string();
    for (name, lib) in &f.libs {
        let dir = out_dir(&format!("lib-{name}"));
        let pruned = dir.join("libt.so");
        let report = rewrite(&["prune", "--keep", "gfx90a"], lib, &pruned);
        let layout = if name.ends_with("-last") {
            "segment shortened"
        } else {
            "segment split"
        };
        assert!(report.contains(layout), "{report}");
        check_pruned_elf(lib, &pruned, &kept, name);
        // The original holds gfx1030 code, so the strict stub refuses it...
        let orig_dir = out_dir(&format!("lib-{name}-orig"));
        std::fs::copy(lib, orig_dir.join("libt.so")).unwrap();
        let path = format!("{}:{stub_dir}", orig_dir.display());
        let o = run_program(&f.lib_main, Some(&path), Some(&kept.join(",")));
        assert_eq!(
            o.status.code(),
            Some(3),
            "{name}: stub accepted gfx1030 code"
        );
        let o = run_program(&f.lib_main, Some(&path), None);
        assert!(o.status.success(), "{name}: original does not run");
        // ...and accepts the pruned library, which still works.
        let path = format!("{}:{stub_dir}", dir.display());
        let o = run_program(&f.lib_main, Some(&path), Some(&kept.join(",")));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{name}: pruned library fails: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(stdout.contains("fa=1 fb=2 fc=3 registered=3"), "{stdout}");
        assert_eq!(stdout.matches("stub-hip: bundle").count(), 3, "{stdout}");
    }
}

#[test]
fn executables_pruned_still_run() {
    let f = fixture();
    for (name, exe) in &f.exes {
        let dir = out_dir(&format!("exe-{name}"));
        let pruned = dir.join(format!("app-{name}"));
        rewrite(&["prune", "--drop", "gfx1030"], exe, &pruned);
        let kept = ["gfx90a:xnack+", "gfx90a:xnack-", "gfx90a"];
        check_pruned_elf(exe, &pruned, &kept, name);
        let o = run_program(&pruned, None, Some(&kept.join(",")));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{name}: pruned executable fails: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(stdout.contains("fa=1 fb=2 fc=3 registered=4"), "{stdout}");
    }
}

#[test]
fn keep_with_a_feature_keeps_that_variant_and_the_any_entry() {
    let f = fixture();
    let (_, exe) = &f.exes[0];
    let dir = out_dir("keep-xnack");
    let pruned = dir.join("app");
    rewrite(&["prune", "--keep", "gfx90a:xnack+"], exe, &pruned);
    let kept = ["gfx90a:xnack+", "gfx90a"];
    check_pruned_elf(exe, &pruned, &kept, "keep-xnack");
    let o = run_program(&pruned, None, Some(&kept.join(",")));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn recompressed_libraries_load_with_every_encoding() {
    let f = fixture();
    let stub_dir = f.dir.path().display().to_string();
    let (_, lib) = &f.libs[0];
    for (tag, args, enc) in [
        (
            "v3",
            &["recompress", "--ccob-version", "3"][..],
            "ccob-v3-zstd",
        ),
        (
            "zlib",
            &["recompress", "--method", "zlib"][..],
            "ccob-v2-zlib",
        ),
    ] {
        let dir = out_dir(&format!("recompress-{tag}"));
        let out = dir.join("libt.so");
        rewrite(args, lib, &out);
        assert!(std::fs::metadata(&out).unwrap().len() < std::fs::metadata(lib).unwrap().len());
        let path = format!("{}:{stub_dir}", dir.display());
        let o = run_program(&f.lib_main, Some(&path), None);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{tag}: {stdout}");
        assert_eq!(stdout.matches(enc).count(), 3, "{tag}: {stdout}");
        let (_, err) = readelf(&["-a"], &out);
        assert!(err.is_empty(), "{tag}: {err}");
        // Same entries as before.
        assert_eq!(entry_digests(lib), entry_digests(&out), "{tag}");
    }
}

#[test]
fn pruned_objects_and_archive_still_link_and_run() {
    let f = fixture();
    let dir = out_dir("objects");
    let mut pruned = Vec::new();
    for (i, o) in f.objs.iter().enumerate() {
        let out = dir.join(format!("o{i}.o"));
        rewrite(&["prune", "--keep", "gfx1030"], o, &out);
        assert!(std::fs::metadata(&out).unwrap().len() < std::fs::metadata(o).unwrap().len());
        let (_, err) = readelf(&["-a"], &out);
        assert!(err.is_empty(), "{err}");
        pruned.push(out);
    }
    // Link the pruned objects into a library and run it.
    let lib = dir.join("libt.so");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-shared", "-fuse-ld=lld", "-o"])
            .arg(&lib)
            .args(&pruned)
            .arg(format!("-L{}", f.dir.path().display()))
            .arg("-lamdhip64"),
    );
    run_main_with_libs_in(&dir, "gfx1030");
    // The archive: pruned, its index still leads the linker to the right members.
    let adir = out_dir("archive");
    let archive = adir.join("libobjs.a");
    rewrite(&["prune", "--keep", "gfx1030"], &f.archive, &archive);
    assert!(
        std::fs::metadata(&archive).unwrap().len() < std::fs::metadata(&f.archive).unwrap().len()
    );
    let lib = adir.join("libt.so");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-shared", "-fuse-ld=lld", "-o"])
            .arg(&lib)
            .arg("-Wl,--undefined=fa,--undefined=fb,--undefined=fc")
            .arg(format!("-L{}", adir.display()))
            .arg("-lobjs")
            .arg(format!("-L{}", f.dir.path().display()))
            .arg("-lamdhip64"),
    );
    let stdout = run_main_with_libs_in(&adir, "gfx1030");
    assert!(stdout.contains("registered=3"), "{stdout}");
    let listed = run_ok(Command::new(llvm_tool("llvm-ar")).arg("t").arg(&archive));
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 3);
}

/// Survey entries (ID, MD5) per bundle.
fn entry_digests(file: &Path) -> Vec<Vec<(String, String)>> {
    let data = std::fs::read(file).unwrap();
    gfxkit_shrink::survey(&data, &Default::default())
        .unwrap()
        .regions[0]
        .bundles
        .iter()
        .map(|b| {
            b.entries
                .iter()
                .map(|e| (e.id.clone(), e.md5.clone()))
                .collect()
        })
        .collect()
}

#[test]
fn uncompressing_grows_the_section_into_a_new_segment_and_still_runs() {
    let f = fixture();
    for (name, exe) in &f.exes {
        let dir = out_dir(&format!("grow-{name}"));
        let z = dir.join("z");
        let u = dir.join("u");
        rewrite(&["recompress", "--ccob-version", "3"], exe, &z);
        let report = rewrite(&["recompress", "--uncompressed"], &z, &u);
        assert!(report.contains("section grew"), "{report}");
        let (_, err) = readelf(&["-a", "-W"], &u);
        assert!(err.is_empty(), "{name}: {err}");
        assert_eq!(
            sections_sans_offsets(exe).len(),
            sections_sans_offsets(&u).len()
        );
        assert_eq!(entry_digests(exe), entry_digests(&u), "{name}");
        let found = gfxkit_host::discover(&std::fs::read(&u).unwrap()).problems;
        assert!(found.is_empty(), "{name}: {found:?}");
        let o = run_program(&u, None, None);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(stdout.matches("(uncompressed)").count(), 4, "{stdout}");
    }
    // A library, through the C program.
    let (_, lib) = &f.libs[1];
    let dir = out_dir("grow-lib");
    let z = dir.join("z.so");
    rewrite(&["recompress", "--ccob-version", "2"], lib, &z);
    rewrite(&["recompress", "--uncompressed"], &z, &dir.join("libt.so"));
    let path = format!("{}:{}", dir.display(), f.dir.path().display());
    let o = run_program(&f.lib_main, Some(&path), None);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    assert_eq!(stdout.matches("(uncompressed)").count(), 3, "{stdout}");
    // A relocatable object grows too, and still links.
    let obj = dir.join("b.o");
    rewrite(&["recompress", "--uncompressed"], &f.objs[1], &obj);
    assert!(std::fs::metadata(&obj).unwrap().len() > std::fs::metadata(&f.objs[1]).unwrap().len());
    let (_, err) = readelf(&["-a"], &obj);
    assert!(err.is_empty(), "{err}");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-shared", "-fuse-ld=lld", "-o"])
            .arg(dir.join("libb.so"))
            .arg(&obj)
            .arg(format!("-L{}", f.dir.path().display()))
            .arg("-lamdhip64"),
    );
}

#[test]
fn files_without_section_headers_are_refused_with_the_reason() {
    let f = fixture();
    let dir = out_dir("strip-sections");
    let bare = dir.join("bare");
    run_ok(
        Command::new(llvm_tool("llvm-objcopy"))
            .arg("--strip-sections")
            .arg(&f.exes[0].1)
            .arg(&bare),
    );
    let before = std::fs::read(&bare).unwrap();
    let out = dir.join("out");
    let o = gfxkit(&[
        OsStr::new("prune"),
        OsStr::new("--keep"),
        OsStr::new("gfx90a"),
        bare.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no section headers"), "{err}");
    assert!(!out.exists());
    assert_eq!(std::fs::read(&bare).unwrap(), before);
}

#[test]
fn savings_under_the_segment_alignment_are_zero_filled() {
    let f = fixture();
    let dir = out_dir("zero-filled");
    // 2 MiB segment alignment: the few KiB freed cannot move what follows.
    let lib = dir.join("libbig.so");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args([
                "-shared",
                "-fuse-ld=lld",
                "-Wl,-z,max-page-size=0x200000",
                "-o",
            ])
            .arg(&lib)
            .args(&f.objs)
            .arg(format!("-L{}", f.dir.path().display()))
            .arg("-lamdhip64"),
    );
    let libdir = out_dir("zero-filled-lib");
    let pruned = libdir.join("libt.so");
    let report = rewrite(&["prune", "--keep", "gfx1030"], &lib, &pruned);
    assert!(report.contains("zero-filled"), "{report}");
    assert_eq!(
        std::fs::metadata(&lib).unwrap().len(),
        std::fs::metadata(&pruned).unwrap().len()
    );
    let (_, err) = readelf(&["-a"], &pruned);
    assert!(err.is_empty(), "{err}");
    run_main_with_libs_in(&libdir, "gfx1030");
}

#[test]
fn a_spare_pt_null_header_is_reused_and_the_table_stays() {
    let f = fixture();
    let (_, lib) = &f.libs[0];
    let dir = out_dir("pt-null");
    // Turn the PT_NOTE entry into PT_NULL: a spare slot, as some tools leave.
    let mut data = std::fs::read(lib).unwrap();
    let (phoff, phnum) = phdr_table(&data);
    let note = (0..phnum)
        .map(|i| phoff + i * 56)
        .find(|&at| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) == 4)
        .expect("a PT_NOTE entry");
    data[note..note + 4].copy_from_slice(&0u32.to_le_bytes());
    let spare = dir.join("spare.so");
    std::fs::write(&spare, &data).unwrap();
    let pruned = dir.join("libt.so");
    let report = rewrite(&["prune", "--keep", "gfx90a"], &spare, &pruned);
    assert!(report.contains("spare PT_NULL"), "{report}");
    let (header, err) = readelf(&["-h", "-l", "-W"], &pruned);
    assert!(err.is_empty(), "{err}");
    assert_table_unmoved(&header, phnum);
    assert!(!header.contains("NULL"), "{header}");
    run_main_with_libs_in(&dir, "gfx90a:xnack+,gfx90a:xnack-,gfx90a");
}

#[test]
fn unused_bytes_after_the_table_take_the_extra_header() {
    let f = fixture();
    let (_, lib) = &f.libs[0];
    let dir = out_dir("slack");
    // Drop the PT_NOTE entry from the table (later entries move up, the last slot is zeroed,
    // PT_PHDR shrinks): 56 unused bytes now follow the table.
    let mut data = std::fs::read(lib).unwrap();
    let (phoff, phnum) = phdr_table(&data);
    let ty = |d: &[u8], i: usize| u32::from_le_bytes(d[phoff + i * 56..][..4].try_into().unwrap());
    let note = (0..phnum)
        .find(|&i| ty(&data, i) == 4)
        .expect("a PT_NOTE entry");
    let end = phoff + phnum * 56;
    data.copy_within(phoff + (note + 1) * 56..end, phoff + note * 56);
    data[end - 56..end].fill(0);
    data[56..58].copy_from_slice(&((phnum - 1) as u16).to_le_bytes());
    for i in 0..phnum - 1 {
        if ty(&data, i) == 6 {
            let at = phoff + i * 56;
            let len = ((phnum - 1) * 56) as u64;
            data[at + 32..at + 40].copy_from_slice(&len.to_le_bytes());
            data[at + 40..at + 48].copy_from_slice(&len.to_le_bytes());
        }
    }
    let slack = dir.join("slack.so");
    std::fs::write(&slack, &data).unwrap();
    let (_, err) = readelf(&["-a"], &slack);
    assert!(err.is_empty(), "the prepared file is not clean: {err}");
    let pruned = dir.join("libt.so");
    let report = rewrite(&["prune", "--keep", "gfx90a"], &slack, &pruned);
    assert!(
        report.contains("unused bytes after the program header table"),
        "{report}"
    );
    let (header, err) = readelf(&["-h", "-W"], &pruned);
    assert!(err.is_empty(), "{err}");
    assert_table_unmoved(&header, phnum);
    run_main_with_libs_in(&dir, "gfx90a:xnack+,gfx90a:xnack-,gfx90a");
}
