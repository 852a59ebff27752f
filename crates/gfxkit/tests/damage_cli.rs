//! Damage from the outside: real inputs built by clang-19 (bundles, compressed bundles, host
//! objects, a shared library, an archive, an object bundle, a code object) are mutated a few
//! thousand times with a fixed seed (truncation, bit flips, size and offset fields set to huge
//! values, regions copied over others) and given to `gfxkit list`, `verify`, `extract`,
//! `select` and `inspect` under an address-space limit: every run ends with exit code 0, 1 or
//! 2 within its deadline, never a panic, a signal or a hang.
//!
//! Answers under damage (`damaged_inputs_exit_0_only_with_the_original_answer`): the same
//! inputs plus a `kpack split` of the library (its split binary and its zstd and uncompressed
//! archives, read directly and through the binary), a stored wheel holding the library and a
//! CPU-only one, a `.tar.gz` of the library, TheRock's archives (`tests/data/kpack`)
//! and the files named in `GFXKIT_DAMAGE_EXTRA` are truncated at a random length or have 1-8
//! bits flipped (`GFXKIT_DAMAGE_MUTANTS` copies each, a quarter truncations). Each copy goes
//! through `list --json`, `list --check --json`, `verify --json`, `select --json`,
//! `doctor --json`, `size --json`, `kernels --json`, `extract -o` and (code objects)
//! `inspect --json`, and is compared with the original's answer (exit code, stdout with paths
//! replaced, the bytes extract wrote): the same answer, or a non-zero exit naming the damage
//! (stderr, or the JSON's error fields), are fine; another answer is allowed only where no
//! reader can see the damage (see `unprotected` and `judge` for the exact rule) or in a case of
//! the named `ALLOWED` list of known defects. A table of counts per input, command, damage kind
//! and outcome is printed (`--nocapture`); `GFXKIT_DAMAGE_KEEP=DIR` keeps the failing copies, and
//! `GFXKIT_DAMAGE_STRICT=1` sets `ALLOWED` aside to show which of its rows are still needed.

use gfxkit_testkit::{llvm_tool, run_ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PRELUDE: &str = "#define __global__ __attribute__((global))\n\
typedef struct { unsigned x, y, z; } dim3;\n\
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);\n";

/// Address-space limit of every gfxkit run (bytes).
const MEMORY_LIMIT: u64 = 1 << 30;
/// Mutated copies of each input.
const MUTANTS_PER_INPUT: usize = 300;
/// Files per gfxkit run (every command takes many files and goes on after a bad one).
const BATCH: usize = 50;
/// Longest a run of one batch may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// The inputs: (name, bytes).
fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let src = dir.join("k.hip");
    std::fs::write(&src, format!("{PRELUDE}{}", gfxkit_testkit::hip_kernels(3))).unwrap();
    let hip = |extra: &[&str], out: &str| {
        let mut c = Command::new(llvm_tool("clang++"));
        c.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-cuid=damage"])
            .args(["--offload-arch=gfx906", "--offload-arch=gfx90a:xnack+"])
            .args(extra)
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(dir.join(out));
        run_ok(&mut c);
    };
    hip(&["--cuda-device-only"], "k.hipfb");
    hip(&["--cuda-device-only", "--offload-compress"], "k.z.hipfb");
    hip(&["-fPIC"], "host.o");
    hip(&["-fPIC", "-fgpu-rdc"], "rdc.o");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args([
                "-x",
                "hip",
                "-nogpulib",
                "-nogpuinc",
                "-O1",
                "--cuda-device-only",
            ])
            .args([
                "--offload-arch=gfx90a:sramecc+:xnack-",
                "--no-gpu-bundle-output",
            ])
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(dir.join("k.co")),
    );
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-shared", "-fuse-ld=lld"])
            .arg(dir.join("host.o"))
            .arg("-o")
            .arg(dir.join("libk.so")),
    );
    run_ok(
        Command::new(llvm_tool("llvm-ar"))
            .arg("rcs")
            .arg(dir.join("libk.a"))
            .arg(dir.join("host.o"))
            .arg(dir.join("rdc.o")),
    );
    [
        "k.hipfb",
        "k.z.hipfb",
        "host.o",
        "rdc.o",
        "k.co",
        "libk.so",
        "libk.a",
    ]
    .iter()
    .map(|n| (n.to_string(), std::fs::read(dir.join(n)).unwrap()))
    .collect()
}

/// splitmix64 with a fixed seed: the same mutants on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// An offset in `len` bytes, half the time among the first KiB (where headers are).
    fn offset(&mut self, len: usize) -> usize {
        if self.next() & 1 == 0 {
            self.below(len.min(1024))
        } else {
            self.below(len)
        }
    }
}

/// One mutation of `data`, in place.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>) {
    let len = data.len();
    if len == 0 {
        return;
    }
    match rng.below(5) {
        0 => data.truncate(rng.below(len)),
        1 => {
            for _ in 0..1 + rng.below(8) {
                let at = rng.offset(len);
                data[at] ^= 1 << rng.below(8);
            }
        }
        2 => {
            let at = rng.offset(len) & !3;
            let v = [u32::MAX, 0x7fff_ffff, 0x8000_0000, len as u32 + 1, 0][rng.below(5)];
            if at + 4 <= len {
                data[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        3 => {
            let at = rng.offset(len) & !7;
            let v = [u64::MAX, 1 << 63, 1 << 40, len as u64 + 1, 0xffff_ffff][rng.below(5)];
            if at + 8 <= len {
                data[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            let n = 1 + rng.below(256);
            let (from, to) = (rng.below(len), rng.offset(len));
            let n = n.min(len - from).min(len - to);
            data.copy_within(from..from + n, to);
        }
    }
}

/// Runs gfxkit with `args` under the memory limit: its exit code, or the failure.
fn run(args: &[String]) -> Result<i32, String> {
    let mut child = Command::new("prlimit")
        .arg(format!("--as={MEMORY_LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            return Err(format!("no answer within {DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    match status.code() {
        Some(c @ 0..=2) if !stderr.contains("panicked") => Ok(c),
        _ => Err(format!(
            "{status}: {}",
            stderr.chars().take(2000).collect::<String>()
        )),
    }
}

/// The commands run on a batch of files (each goes on after a file it cannot read).
fn commands(files: &[PathBuf]) -> Vec<Vec<String>> {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let with = |head: &[&str]| {
        let mut v: Vec<String> = head.iter().map(|s| s.to_string()).collect();
        v.extend(names.iter().cloned());
        v
    };
    vec![
        with(&["list"]),
        with(&["list", "--json"]),
        with(&["verify"]),
        with(&["select", "--device", "gfx90a:sramecc+:xnack+"]),
    ]
}

#[test]
fn mutated_inputs_never_crash_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let mut rng = Rng(0xda3a_9e00);
    let mut mutants: Vec<PathBuf> = Vec::new();
    let mut code_objects = Vec::new();
    for (name, bytes) in &inputs {
        for i in 0..MUTANTS_PER_INPUT {
            let mut m = bytes.clone();
            for _ in 0..1 + rng.below(3) {
                mutate(&mut rng, &mut m);
            }
            let path = dir.path().join(format!("m{i:04}-{name}"));
            std::fs::write(&path, &m).unwrap();
            if name.ends_with(".co") {
                code_objects.push(path.clone());
            }
            mutants.push(path);
        }
    }
    let batches: Vec<&[PathBuf]> = mutants.chunks(BATCH).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let runs = std::sync::atomic::AtomicUsize::new(0);
    // Exit codes 0, 1, 2 seen.
    let codes: [std::sync::atomic::AtomicUsize; 3] = Default::default();
    std::thread::scope(|s| {
        for worker in 0..2 {
            let (next, failures, runs, batches, codes) =
                (&next, &failures, &runs, &batches, &codes);
            let code_objects = &code_objects;
            let out = dir.path().join(format!("out{worker}"));
            s.spawn(move || loop {
                let b = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut jobs: Vec<(Vec<PathBuf>, Vec<String>)> = Vec::new();
                if let Some(files) = batches.get(b) {
                    for c in commands(files) {
                        jobs.push((files.to_vec(), c));
                    }
                    // `extract` stops at the first file it cannot read: one run per file.
                    for f in files.iter() {
                        let o = out.display().to_string();
                        let c = ["extract", "-o", &o, &f.display().to_string()].map(String::from);
                        jobs.push((vec![f.clone()], c.to_vec()));
                    }
                } else if let Some(co) = code_objects.get(b - batches.len()) {
                    // `inspect` reads one code object.
                    for c in [
                        vec!["inspect".to_owned()],
                        vec!["inspect".into(), "--json".into()],
                    ] {
                        let mut c = c;
                        c.push(co.display().to_string());
                        jobs.push((vec![co.clone()], c));
                    }
                } else {
                    break;
                }
                for (files, args) in jobs {
                    runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    match run(&args) {
                        Ok(c) => {
                            codes[c as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(e) => {
                            // Name the file: the same command on each file of the batch alone.
                            let culprit = files
                                .iter()
                                .find(|f| {
                                    let mut one: Vec<String> =
                                        args[..args.len() - files.len()].to_vec();
                                    one.push(f.display().to_string());
                                    run(&one).is_err()
                                })
                                .map(|f| f.display().to_string());
                            failures.lock().unwrap().push(format!(
                                "gfxkit {} ... on {culprit:?}: {e}",
                                args[..args.len() - files.len()].join(" ")
                            ));
                        }
                    }
                }
                let _ = std::fs::remove_dir_all(&out);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let codes = codes.map(|c| c.into_inner());
    eprintln!(
        "{} mutants of {} inputs, {} gfxkit runs (exit 0/1/2: {codes:?}), {} failures",
        mutants.len(),
        inputs.len(),
        runs.into_inner(),
        failures.len()
    );
    // Damage is noticed: some runs report it.
    assert!(codes[1] + codes[2] > 0, "{codes:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Answers under damage: exit 0 only when the answer is unaffected.
// ---------------------------------------------------------------------------------------------

/// Mutated copies of each input in the answer test (a quarter truncations, the rest bit flips);
/// `GFXKIT_DAMAGE_MUTANTS` sets another count for a longer run by hand.
const ANSWER_MUTANTS: usize = 48;

/// A file tree the answer test damages: one file of it is mutated, the commands are given
/// another (or the same) file of it.
struct Subject {
    /// What the input is (the table's row).
    kind: String,
    /// Relative path -> bytes.
    tree: Vec<(String, Vec<u8>)>,
    /// The file mutated (relative).
    mutated: String,
    /// The file named on the command line (relative).
    arg: String,
    /// `--device` of select and doctor.
    device: String,
    /// Also run `inspect --json` (a code object).
    code_object: bool,
    /// Byte ranges of `mutated` no reader can check (see [`unprotected`]).
    unprotected: Vec<std::ops::Range<usize>>,
    /// The magic `mutated` starts with: damaged, the file is of no known kind, which no reader
    /// can tell from a file that never held device code, whatever else was damaged.
    magic: std::ops::Range<usize>,
}

/// The damage done to one copy.
#[derive(Clone, Debug)]
enum Damage {
    /// Cut to this length.
    Truncated(usize),
    /// These bits flipped: (offset, bit).
    Flipped(Vec<(usize, u8)>),
}

impl Damage {
    fn name(&self) -> &'static str {
        match self {
            Damage::Truncated(_) => "trunc",
            Damage::Flipped(_) => "flip",
        }
    }
}

/// What one run of gfxkit answered, its paths replaced by `@`.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    code: i32,
    stdout: String,
    stderr: String,
    /// For `extract`: relative path -> bytes written.
    written: BTreeMap<String, Vec<u8>>,
}

/// How a damaged copy's answer compares with the original's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// The original's exit code and answer.
    Same,
    /// A non-zero exit and the damage named (stderr, or the JSON's error fields).
    Reported,
    /// A changed answer, but every flipped bit lies where no reader can check it.
    Undetectable,
    /// A changed answer in a case of [`ALLOWED`] (a known defect being fixed).
    Allowed,
    /// Exit 0 with another answer: what the test forbids.
    Silent,
    /// A non-zero exit and another answer, without naming the damage.
    Unnamed,
}

const OUTCOMES: [Outcome; 6] = [
    Outcome::Same,
    Outcome::Reported,
    Outcome::Undetectable,
    Outcome::Allowed,
    Outcome::Silent,
    Outcome::Unnamed,
];

/// Known defects, each (input kind, command, damage kind or "any", reason): changed answers in
/// these cases are counted as `allowed` instead of failing the test. Shrink it as they are
/// fixed; every other changed answer without a report fails.
const ALLOWED: &[(&str, &str, &str, &str)] = &[
    // Empty: every changed answer at the default count is reported or lies in bytes no
    // reader can check. A row goes here only for a known defect being fixed.
];

use std::collections::BTreeMap;

/// The ELF header of the code object at `at` in `data`, without `e_entry` (empty when it is not
/// a 64-bit ELF file): the fields readers check (identification, type, machine, `e_flags`
/// against the entry ID and metadata, and where the tables are).
fn elf_structure(data: &[u8], at: usize, len: usize) -> Vec<std::ops::Range<usize>> {
    let co = &data[at..(at + len).min(data.len())];
    if co.len() < 64 || &co[..4] != b"\x7fELF" || co[4] != 2 {
        return Vec::new();
    }
    vec![at..at + 0x18, at + 0x20..at + 0x40]
}

/// `r` without the ranges of `holes`.
fn subtract(
    r: std::ops::Range<usize>,
    holes: &[std::ops::Range<usize>],
) -> Vec<std::ops::Range<usize>> {
    let mut out = vec![r];
    for h in holes {
        out = out
            .into_iter()
            .flat_map(|r| {
                [r.start..r.end.min(h.start), r.start.max(h.end)..r.end]
                    .into_iter()
                    .filter(|x| x.start < x.end)
            })
            .collect();
    }
    out
}

/// The bytes of an ORIGINAL file that no reader can check, from its `list --json`:
///
/// - an uncompressed bundle (`format` "uncompressed", in a bundle file or a host file): from
///   the end of its header to its end (the alignment padding and every entry's payload), and
///   an object bundle's entry payloads: no hash protects them;
/// - a `.kpack` unit stored uncompressed (every entry's `stored_size` equals its `size`): its
///   blobs; a `zstd-per-kernel` archive's frames that carry no content checksum: the frame
///   after its frame header (the blocks decode to other bytes without any check failing);
/// - minus, inside each payload that is a 64-bit ELF code object, its ELF header but
///   `e_entry`: readers check those fields, so damage there must show.
///
/// What remains is a code object's program and section header tables and section contents
/// (instructions, data, notes, symbol and string tables) and padding: a changed byte there
/// makes another valid code object as far as any reader can tell. (The magic at the start of
/// the file is [`Subject::magic`], a rule of its own.) Compressed
/// bundles (CCOB, hashed), packages (zip and gzip CRC-32), host code and every header are
/// protected: damage there must be reported. A truncation is never undetectable.
fn unprotected(data: &[u8], listing: &serde_json::Value) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let num = |v: &serde_json::Value| v.as_u64().unwrap_or(0) as usize;
    for f in listing["files"].as_array().into_iter().flatten() {
        if f["path"].as_str().is_some_and(|p| p.contains('!')) {
            // A package member: offsets are the member's, and the package's CRC covers it.
            continue;
        }
        for b in f["bundles"].as_array().into_iter().flatten() {
            let (at, size) = (num(&b["offset"]), num(&b["size"]));
            let entries: Vec<&serde_json::Value> =
                b["entries"].as_array().into_iter().flatten().collect();
            let elf = |off: usize, len: usize| elf_structure(data, off, len);
            match b["format"].as_str() {
                Some("uncompressed") => {
                    let holes: Vec<_> = entries
                        .iter()
                        .flat_map(|e| elf(at + num(&e["offset"]), num(&e["size"])))
                        .collect();
                    out.extend(subtract(at + num(&b["header_size"])..at + size, &holes));
                    // The IDs of entries whose payload is no code object (the host entry,
                    // empty): no payload says what they should be. Header: magic (24), u64
                    // count, then per entry u64 offset, u64 size, u64 ID length, the ID.
                    let mut o = at + 32;
                    for e in &entries {
                        let n = data
                            .get(o + 16..o + 24)
                            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()) as usize);
                        if e["code_object_version"].is_null() && e["eflags_agree"].is_null() {
                            out.push(o + 24..o + 24 + n);
                        }
                        o += 24 + n;
                    }
                }
                Some("object-bundle") => {
                    for e in &entries {
                        let (o, n) = (at + num(&e["offset"]), num(&e["size"]));
                        out.extend(subtract(o..o + n, &elf(o, n)));
                    }
                }
                Some("kpack")
                    if entries
                        .iter()
                        .all(|e| e["stored_size"] == e["size"] && !e["size"].is_null()) =>
                {
                    // Blobs back to back in the order listed.
                    let mut o = at;
                    let mut holes = Vec::new();
                    for e in &entries {
                        holes.extend(elf(o, num(&e["size"])));
                        o += num(&e["size"]);
                    }
                    out.extend(subtract(at..at + size, &holes));
                }
                _ => {}
            }
        }
    }
    out.extend(unchecked_names(data, listing));
    // zstd-per-kernel archives: u32 count at 0x40, then (u32 size, frame) per kernel.
    if data.starts_with(b"KPAK")
        && data.len() > 0x48
        && data[0x48..0x4c] == [0x28, 0xb5, 0x2f, 0xfd]
    {
        let u32_at = |o: usize| {
            data.get(o..o + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
        };
        let mut o = 0x44;
        for _ in 0..u32_at(0x40).unwrap_or(0) {
            let Some(n) = u32_at(o) else { break };
            let frame = o + 4;
            let Some(&fhd) = data.get(frame + 4) else {
                break;
            };
            if fhd & 4 == 0 {
                let single = fhd & 0x20 != 0;
                let fcs = match fhd >> 6 {
                    0 => usize::from(single),
                    1 => 2,
                    2 => 4,
                    _ => 8,
                };
                let header = 5 + usize::from(!single) + [0, 1, 2, 4][usize::from(fhd & 3)] + fcs;
                out.push(frame + header..frame + n);
            }
            o = frame + n;
        }
    }
    out
}

/// Names no format protects and nothing else repeats, so that another valid name is another
/// valid file as far as any reader can tell:
///
/// - `ar` member names (the 16-byte name field of each member header, and the GNU long-name
///   table `//`): an archive carries no checksum, and a member is found by its contents;
/// - the names of an object bundle's `__CLANG_OFFLOAD_BUNDLE__<id>` sections (the bytes in
///   the section-name table, and each section header's `sh_name`) whose payload is no ELF
///   code object (bitcode, host code, nothing): the ID is the name, and no payload says which
///   target it was built for (a code object's `e_flags` do, so those names are protected);
/// - the TOC keys of a `.kpack` archive (`<kernel_name>#<N>`, MessagePack strings): the key
///   is only looked up by name (a split binary's marker names it, and a changed key is
///   reported there as a kernel missing from the archive).
fn unchecked_names(data: &[u8], listing: &serde_json::Value) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let u16_at = |o: usize| {
        data.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |o: usize| {
        data.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    let u64_at = |o: usize| {
        data.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    // ar: 8-byte magic, then 60-byte headers (name 0..16, size 48..58), data padded to 2.
    if data.starts_with(b"!<arch>\n") {
        let mut at = 8;
        while at + 60 <= data.len() {
            out.push(at..at + 16);
            let size: usize = std::str::from_utf8(&data[at + 48..at + 58])
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            if &data[at..at + 2] == b"//" {
                out.push(at + 60..(at + 60 + size).min(data.len()));
            }
            at += 60 + size + size % 2;
        }
    }
    // An ELF64 relocatable object: its object-bundle sections.
    if data.starts_with(b"\x7fELF\x02\x01") && u16_at(16) == Some(1) {
        let (Some(shoff), Some(shentsize), Some(shnum), Some(shstrndx)) =
            (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e))
        else {
            return out;
        };
        let header = |i: usize| shoff + i * shentsize;
        let Some(strtab) = u64_at(header(shstrndx) + 0x18) else {
            return out;
        };
        const PREFIX: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
        for i in 0..shnum {
            let (Some(name), Some(off), Some(size)) = (
                u32_at(header(i)),
                u64_at(header(i) + 0x18),
                u64_at(header(i) + 0x20),
            ) else {
                continue;
            };
            let Some(text) = data.get(strtab + name..) else {
                continue;
            };
            let len = text.iter().position(|&b| b == 0).unwrap_or(text.len());
            let payload = data.get(off..off + size).unwrap_or(&[]);
            if text.starts_with(PREFIX) && !payload.starts_with(b"\x7fELF") {
                out.push(strtab + name..strtab + name + len);
                out.push(header(i)..header(i) + 4);
            }
        }
    }
    // A split binary's kpack marker: the strings of `kpack_search_paths` (MessagePack: the
    // key, an array header, then fixstr or str8 strings). A search path is only where the
    // loader looks: another valid path is a binary whose archives are not installed, and
    // nothing records what it was.
    const PATHS: &[u8] = b"\xb2kpack_search_paths";
    let mut from = 0;
    while let Some(i) = data[from..].windows(PATHS.len()).position(|w| w == PATHS) {
        let mut at = from + i + PATHS.len();
        from = at;
        let Some(&n) = data.get(at).filter(|&&b| (0x91..=0x9f).contains(&b)) else {
            continue;
        };
        at += 1;
        for _ in 0..n & 0x0f {
            let (start, len) = match data.get(at) {
                Some(&b) if (0xa0..=0xbf).contains(&b) => (at + 1, usize::from(b & 0x1f)),
                Some(0xd9) => (at + 2, usize::from(*data.get(at + 1).unwrap_or(&0))),
                _ => break,
            };
            out.push(start..start + len);
            at = start + len;
        }
    }
    // kpack: each TOC key, where it is stored (after the TOC offset).
    if data.starts_with(b"KPAK") {
        let toc = u64_at(8).unwrap_or(usize::MAX).min(data.len());
        let keys: std::collections::BTreeSet<&str> = listing["files"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|f| f["bundles"].as_array().into_iter().flatten())
            .filter_map(|b| b["kpack_key"].as_str())
            .collect();
        for k in keys {
            let mut from = toc;
            while let Some(i) = data[from..]
                .windows(k.len())
                .position(|w| w == k.as_bytes())
            {
                out.push(from + i..from + i + k.len());
                from += i + k.len();
            }
        }
    }
    out
}

/// Builds the subjects: the clang-built inputs, a kpack split (zstd and uncompressed), a wheel,
/// a tarball, TheRock's archives, and the files named in `GFXKIT_DAMAGE_EXTRA` (`:`-separated).
fn subjects(dir: &Path) -> Vec<Subject> {
    let gfx = env!("CARGO_BIN_EXE_gfxkit");
    let mut out = Vec::new();
    let plain = |name: &str, bytes: Vec<u8>, device: &str| Subject {
        kind: name.to_owned(),
        tree: vec![(name.to_owned(), bytes)],
        mutated: name.to_owned(),
        arg: name.to_owned(),
        device: device.to_owned(),
        code_object: name.ends_with(".co"),
        unprotected: Vec::new(),
        magic: 0..0,
    };
    let built = inputs(dir);
    for (name, bytes) in &built {
        let device = if name.ends_with(".co") {
            "gfx90a:sramecc+:xnack-"
        } else {
            "gfx90a:sramecc+:xnack+"
        };
        out.push(plain(name, bytes.clone(), device));
    }
    let read_tree = |root: &Path| -> Vec<(String, Vec<u8>)> {
        gfxkit_testkit::files_under(root)
            .into_iter()
            .map(|rel| {
                let bytes = std::fs::read(root.join(&rel)).unwrap();
                (rel, bytes)
            })
            .collect()
    };
    // kpack split of the shared library: zstd archives, and uncompressed ones.
    for (tag, extra) in [("", &[][..]), ("-none", &["--compression", "none"][..])] {
        let root = dir.join(format!("split{tag}"));
        run_ok(
            Command::new(gfx)
                .args(["kpack", "split"])
                .arg(dir.join("libk.so"))
                .args(["--group", "t", "-o"])
                .arg(root.join("lib/libk.so"))
                .args(extra),
        );
        let tree = read_tree(&root);
        let archive = ".kpack/t_gfx90a:xnack+.kpack".to_owned();
        let subject = |kind: &str, mutated: &str, arg: &str| Subject {
            kind: kind.to_owned(),
            tree: tree.clone(),
            mutated: mutated.to_owned(),
            arg: arg.to_owned(),
            device: "gfx90a:sramecc+:xnack+".to_owned(),
            code_object: false,
            unprotected: Vec::new(),
            magic: 0..0,
        };
        if tag.is_empty() {
            out.push(subject("split libk.so", "lib/libk.so", "lib/libk.so"));
            out.push(subject("kpack via split", &archive, "lib/libk.so"));
        }
        out.push(subject(&format!("kpack{tag}"), &archive, &archive));
    }
    // A stored wheel with the library and a CPU-only library; a tarball with the library.
    std::fs::write(dir.join("cpu.c"), "int f(int x) { return x + 1; }\n").unwrap();
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-shared", "-fuse-ld=lld"])
            .arg(dir.join("cpu.c"))
            .arg("-o")
            .arg(dir.join("libcpu.so")),
    );
    run_ok(Command::new("python3").current_dir(dir).args([
        "-c",
        "import zipfile\n\
         with zipfile.ZipFile('k-1.0-py3-none-linux_x86_64.whl', 'w', zipfile.ZIP_STORED) as z:\n\
         \x20   z.write('libk.so', 'k/lib/libk.so')\n\
         \x20   z.write('libcpu.so', 'k/lib/libcpu.so')\n\
         \x20   z.writestr('k/__init__.py', 'x = 1\\n')\n",
    ]));
    std::fs::create_dir_all(dir.join("tar/usr/lib")).unwrap();
    std::fs::copy(dir.join("libk.so"), dir.join("tar/usr/lib/libk.so")).unwrap();
    run_ok(
        Command::new("tar")
            .arg("-czf")
            .arg(dir.join("k.tar.gz"))
            .arg("-C")
            .arg(dir.join("tar"))
            .arg("usr"),
    );
    for name in ["k-1.0-py3-none-linux_x86_64.whl", "k.tar.gz"] {
        let mut s = plain(
            name,
            std::fs::read(dir.join(name)).unwrap(),
            "gfx90a:sramecc+:xnack+",
        );
        s.kind = if name.ends_with(".whl") {
            "wheel"
        } else {
            "tar.gz"
        }
        .to_owned();
        out.push(s);
    }
    // TheRock's own archives (payloads are test patterns, not code objects).
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/kpack");
    for (name, device) in [
        ("test_noop.kpack", "gfx906"),
        ("test_zstd.kpack", "gfx1100"),
    ] {
        let mut s = plain(name, std::fs::read(fixtures.join(name)).unwrap(), device);
        s.kind = format!("therock {name}");
        out.push(s);
    }
    // Real files by hand.
    if let Some(extra) = std::env::var_os("GFXKIT_DAMAGE_EXTRA") {
        for p in std::env::split_paths(&extra) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            out.push(plain(
                &name,
                std::fs::read(&p).unwrap(),
                "gfx90a:sramecc+:xnack+",
            ));
        }
    }
    // The unprotected bytes, from each original's listing.
    for s in &mut out {
        let root = dir.join("orig-listing");
        let _ = std::fs::remove_dir_all(&root);
        write_tree(&root, &s.tree);
        let o = Command::new(gfx)
            .args(["list", "--json"])
            .arg(root.join(&s.mutated))
            .output()
            .unwrap();
        let listing: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
        let data = &s.tree.iter().find(|(n, _)| *n == s.mutated).unwrap().1;
        let packaged = s.kind == "wheel" || s.kind == "tar.gz";
        s.unprotected = if packaged {
            Vec::new()
        } else if s.code_object {
            subtract(0..data.len(), &elf_structure(data, 0, data.len()))
        } else {
            unprotected(data, &listing)
        };
        // The file's own magic.
        let magics: [&[u8]; 7] = [
            b"\x7fELF",
            b"__CLANG_OFFLOAD_BUNDLE__",
            b"CCOB",
            b"KPAK",
            b"!<arch>\n",
            b"PK\x03\x04",
            b"\x1f\x8b",
        ];
        if let Some(m) = magics.iter().find(|m| data.starts_with(m)) {
            s.magic = 0..m.len();
        }
    }
    out
}

fn write_tree(root: &Path, tree: &[(String, Vec<u8>)]) {
    for (rel, bytes) in tree {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
}

/// The commands of the answer test on `file` (output directory `out` for extract).
fn answer_commands(s: &Subject, file: &Path, out: &Path) -> Vec<(&'static str, Vec<String>)> {
    let f = file.display().to_string();
    let d = s.device.clone();
    let mut v: Vec<(&'static str, Vec<String>)> = vec![
        ("list", vec!["list".into(), "--json".into(), f.clone()]),
        (
            "list --check",
            vec!["list".into(), "--check".into(), "--json".into(), f.clone()],
        ),
        ("verify", vec!["verify".into(), "--json".into(), f.clone()]),
        (
            "select",
            vec![
                "select".into(),
                "--json".into(),
                "--device".into(),
                d.clone(),
                f.clone(),
            ],
        ),
        (
            "doctor",
            vec![
                "doctor".into(),
                "--json".into(),
                "--device".into(),
                d,
                f.clone(),
            ],
        ),
        ("size", vec!["size".into(), "--json".into(), f.clone()]),
        (
            "kernels",
            vec!["kernels".into(), "--json".into(), f.clone()],
        ),
        (
            "extract",
            vec![
                "extract".into(),
                "-o".into(),
                out.display().to_string(),
                f.clone(),
            ],
        ),
    ];
    if s.code_object {
        v.push(("inspect", vec!["inspect".into(), "--json".into(), f]));
    }
    v
}

/// Runs gfxkit under the memory limit and deadline: the answer with `root` replaced by `@`, or
/// the failure (a signal, a panic, an exit code outside 0-2, no answer in time).
fn answer(args: &[String], root: &Path, out: &Path) -> Result<Answer, String> {
    let dir = tempfile::tempdir().unwrap();
    let (so, se) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new("prlimit")
        .arg(format!("--as={MEMORY_LIMIT}"))
        .arg(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&so).unwrap())
        .stderr(std::fs::File::create(&se).unwrap())
        .spawn()
        .expect("prlimit (util-linux) runs");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            return Err(format!("no answer within {DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let r = root.display().to_string();
    let norm = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).replace(&r, "@");
    let (stdout, stderr) = (norm(&so), norm(&se));
    let code = match status.code() {
        Some(c @ 0..=2) if !stderr.contains("panicked") => c,
        _ => {
            return Err(format!(
                "{status}: {}",
                stderr.chars().take(2000).collect::<String>()
            ))
        }
    };
    let mut written = BTreeMap::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(out).unwrap().display().to_string();
                written.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let _ = std::fs::remove_dir_all(out);
    Ok(Answer {
        code,
        stdout,
        stderr,
        written,
    })
}

/// Every string under the JSON keys that carry damage (`error`, `errors`, `problems`,
/// `damaged`, `warnings`, and `reason` when the run `failed` with exit 2), and `hash_ok: false`
/// as "hash mismatch".
fn damage_text(v: &serde_json::Value, under: bool, failed: bool, out: &mut Vec<String>) {
    use serde_json::Value;
    match v {
        Value::String(s) if under => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| damage_text(x, under, failed, out)),
        Value::Object(m) => {
            for (k, x) in m {
                let key = matches!(
                    k.as_str(),
                    "error" | "errors" | "problems" | "damaged" | "warnings"
                ) || (failed && k == "reason");
                if k == "hash_ok" && *x == Value::Bool(false) {
                    out.push("hash mismatch".into());
                }
                damage_text(x, under || key, failed, out);
            }
        }
        _ => {}
    }
}

/// Whether `a` names the damage of the file called `name`: stderr names it, or the JSON's
/// damage fields do (any of them when the damaged file is the one on the command line).
fn names_damage(a: &Answer, name: &str, is_arg: bool) -> bool {
    if a.stderr.contains(name) {
        return true;
    }
    let mut text = Vec::new();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&a.stdout) {
        damage_text(&v, false, a.code == 2, &mut text);
    }
    if is_arg {
        !text.is_empty()
    } else {
        text.iter().any(|t| t.contains(name))
    }
}

/// The first line where two outputs differ, for the failure report.
fn first_difference(a: &str, b: &str) -> String {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return "same stdout (exit code or files written differ)".into(),
            (x, y) if x != y => {
                return format!("line {n}: {:?} -> {:?}", x.unwrap_or(""), y.unwrap_or(""))
            }
            _ => {}
        }
    }
    unreachable!()
}

/// Runs command `c` of `s` with `data` as the mutated file, in the tree at `root`.
fn answer_with(s: &Subject, c: usize, data: &[u8], root: &Path) -> Result<Answer, String> {
    write_tree(root, &s.tree);
    std::fs::write(root.join(&s.mutated), data).unwrap();
    let out = root.join("extracted");
    let (_, args) = answer_commands(s, &root.join(&s.arg), &out).swap_remove(c);
    answer(&args, root, &out)
}

/// The answer's outcome before the unprotected-bytes rule: `None` when it changed without a
/// report (exit 0, or non-zero without naming the damage).
fn plain_outcome(s: &Subject, orig: &Answer, a: &Answer) -> Option<Outcome> {
    let name = Path::new(&s.mutated).file_name().unwrap().to_string_lossy();
    if a.code == orig.code && a.stdout == orig.stdout && a.written == orig.written {
        Some(Outcome::Same)
    } else if a.code != 0 && names_damage(a, &name, s.mutated == s.arg) {
        Some(Outcome::Reported)
    } else {
        None
    }
}

/// Judges command `c` on the mutant `data` (already written at `root`): its outcome, and a
/// failure report for `silent` and `unnamed` ones.
///
/// A changed, unreported answer counts as `undetectable` when a flipped bit lies in the file's
/// magic, when every flipped bit lies in the original's unprotected bytes, or when the flips
/// outside them, applied alone, leave the answer as it was (so the change comes from the
/// unprotected bytes only). Otherwise the
/// report names each protected flip that alone changes the answer without a report.
fn judge(
    s: &Subject,
    c: usize,
    orig: &Answer,
    data: &[u8],
    damage: &Damage,
    root: &Path,
) -> Result<(Outcome, Option<String>), String> {
    let cmd = answer_commands(s, root, root)[c].0;
    let a = answer_with(s, c, data, root)?;
    if let Some(o) = plain_outcome(s, orig, &a) {
        return Ok((o, None));
    }
    let original = &s.tree.iter().find(|(n, _)| *n == s.mutated).unwrap().1;
    let mut culprits = String::new();
    if let Damage::Flipped(bits) = damage {
        let protected: Vec<(usize, u8)> = bits
            .iter()
            .filter(|(at, _)| !s.unprotected.iter().any(|r| r.contains(at)))
            .copied()
            .collect();
        let with = |flips: &[(usize, u8)]| {
            let mut d = original.clone();
            for (at, bit) in flips {
                d[*at] ^= 1 << bit;
            }
            let other = root.with_extension("alone");
            let r = answer_with(s, c, &d, &other);
            let _ = std::fs::remove_dir_all(&other);
            r
        };
        let magic = bits.iter().any(|(at, _)| s.magic.contains(at));
        if magic
            || protected.is_empty()
            || plain_outcome(s, orig, &with(&protected)?) == Some(Outcome::Same)
        {
            return Ok((Outcome::Undetectable, None));
        }
        for f in &protected {
            let one = with(&[*f])?;
            if plain_outcome(s, orig, &one).is_none() {
                culprits.push_str(&format!(
                    "\n    flip {f:?} alone: exit {}; {}",
                    one.code,
                    first_difference(&orig.stdout, &one.stdout)
                ));
            }
        }
    }
    // GFXKIT_DAMAGE_STRICT=1 sets the list aside: to see which of its rows are still needed.
    let strict = std::env::var_os("GFXKIT_DAMAGE_STRICT").is_some_and(|v| v == "1");
    let allowed = !strict
        && ALLOWED.iter().any(|(k, c, d, _)| {
            *k == s.kind && (*c == cmd || *c == "any") && (*d == "any" || *d == damage.name())
        });
    if allowed {
        return Ok((Outcome::Allowed, None));
    }
    let outcome = if a.code == 0 {
        Outcome::Silent
    } else {
        Outcome::Unnamed
    };
    Ok((
        outcome,
        Some(format!(
            "{} / {cmd} / {damage:?}: {outcome:?}, exit {} (was {}); {}; stderr: {}{culprits}",
            s.kind,
            a.code,
            orig.code,
            first_difference(&orig.stdout, &a.stdout),
            a.stderr.trim().chars().take(300).collect::<String>()
        )),
    ))
}

#[test]
fn damaged_inputs_exit_0_only_with_the_original_answer() {
    let mutants: usize = std::env::var("GFXKIT_DAMAGE_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ANSWER_MUTANTS);
    let dir = tempfile::tempdir().unwrap();
    let subjects = subjects(dir.path());
    // The originals' answers, twice (the answers must be deterministic for the comparison).
    let mut originals = Vec::new();
    for (i, s) in subjects.iter().enumerate() {
        let root = dir.path().join(format!("orig{i}"));
        write_tree(&root, &s.tree);
        let out = root.join("extracted");
        let mut answers = Vec::new();
        for (name, args) in answer_commands(s, &root.join(&s.arg), &out) {
            let a = answer(&args, &root, &out).unwrap_or_else(|e| panic!("{} {name}: {e}", s.kind));
            let b = answer(&args, &root, &out).unwrap();
            assert_eq!(a, b, "{} {name}: two runs answer differently", s.kind);
            answers.push(a);
        }
        originals.push(answers);
    }
    // The mutants: (subject, index, damage), truncations first.
    let mut rng = Rng(0xa45e_0000);
    let mut jobs = Vec::new();
    for (si, s) in subjects.iter().enumerate() {
        let len = s
            .tree
            .iter()
            .find(|(n, _)| *n == s.mutated)
            .unwrap()
            .1
            .len();
        for i in 0..mutants {
            let damage = if i < mutants / 4 {
                Damage::Truncated(rng.below(len))
            } else {
                let bits = (0..1 + rng.below(8))
                    .map(|_| (rng.offset(len), rng.below(8) as u8))
                    .collect();
                Damage::Flipped(bits)
            };
            jobs.push((si, i, damage));
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // (kind, command, damage kind, outcome) -> count.
    let counts = std::sync::Mutex::new(BTreeMap::<(String, &str, &str, Outcome), usize>::new());
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let keep = std::env::var_os("GFXKIT_DAMAGE_KEEP").map(PathBuf::from);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            let (next, jobs, counts, failures) = (&next, &jobs, &counts, &failures);
            let (subjects, originals, keep) = (&subjects, &originals, &keep);
            let dir = dir.path();
            sc.spawn(move || loop {
                let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((si, i, damage)) = jobs.get(j) else {
                    break;
                };
                let s = &subjects[*si];
                let root = dir.join(format!("m{si}-{i}"));
                write_tree(&root, &s.tree);
                let target = root.join(&s.mutated);
                let mut data = std::fs::read(&target).unwrap();
                match damage {
                    Damage::Truncated(n) => data.truncate(*n),
                    Damage::Flipped(bits) => {
                        for (at, bit) in bits {
                            data[*at] ^= 1 << bit;
                        }
                    }
                }
                std::fs::write(&target, &data).unwrap();
                let mut kept = false;
                for (c, (cmd, _)) in answer_commands(s, &root, &root).into_iter().enumerate() {
                    let orig = &originals[*si][c];
                    let outcome = match judge(s, c, orig, &data, damage, &root) {
                        Err(e) => {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("{} / {cmd} / {damage:?}: {e}", s.kind));
                            kept = true;
                            continue;
                        }
                        Ok((outcome, report)) => {
                            if let Some(r) = report {
                                failures.lock().unwrap().push(r);
                                kept = true;
                            }
                            outcome
                        }
                    };
                    *counts
                        .lock()
                        .unwrap()
                        .entry((s.kind.clone(), cmd, damage.name(), outcome))
                        .or_default() += 1;
                }
                if let (true, Some(k)) = (kept, keep) {
                    let to = k.join(format!("m{si}-{i}"));
                    let _ = std::fs::remove_dir_all(&to);
                    write_tree(&to, &s.tree);
                    std::fs::write(to.join(&s.mutated), &data).unwrap();
                }
                let _ = std::fs::remove_dir_all(&root);
            });
        }
    });
    // The table: per input kind and command, the outcomes of truncations and of bit flips.
    let counts = counts.into_inner().unwrap();
    let letters = ["same", "rep", "undet", "allow", "SILENT", "UNNAMED"];
    eprintln!(
        "{mutants} mutants of each of {} inputs ({} truncated, {} flipped), {} gfxkit runs",
        subjects.len(),
        mutants / 4,
        mutants - mutants / 4,
        counts.values().sum::<usize>()
    );
    eprintln!(
        "{:<34} {:<12} | trunc: {} | flip: {}",
        "input",
        "command",
        letters.join(" "),
        letters.join(" ")
    );
    let mut totals: BTreeMap<(&str, Outcome), usize> = BTreeMap::new();
    for s in &subjects {
        for (cmd, _) in answer_commands(s, Path::new(""), Path::new("")) {
            let row = |d: &str| {
                OUTCOMES
                    .iter()
                    .map(|o| {
                        counts
                            .get(&(s.kind.clone(), cmd, d, *o))
                            .copied()
                            .unwrap_or(0)
                            .to_string()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            eprintln!(
                "{:<34} {:<12} | {} | {}",
                s.kind,
                cmd,
                row("trunc"),
                row("flip")
            );
        }
    }
    for ((_, _, d, o), n) in &counts {
        *totals.entry((*d, *o)).or_default() += n;
    }
    eprintln!("totals: {totals:?}");
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} damaged answers not reported:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A flipped bit in `e_shstrndx` of a shared library pointed the section names at a section
/// that is no string table: no `.hip_fatbin` was found and `list` answered "no offload bundle"
/// with exit 0, as for a library without device code.
#[test]
fn a_damaged_section_name_index_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let lib = inputs(dir.path())
        .into_iter()
        .find(|(n, _)| n == "libk.so")
        .unwrap()
        .1;
    let u16_at = |o: usize| u16::from_le_bytes([lib[o], lib[o + 1]]) as usize;
    let shoff = u64::from_le_bytes(lib[0x28..0x30].try_into().unwrap()) as usize;
    let (shentsize, shnum) = (u16_at(0x3a), u16_at(0x3c));
    let not_strtab = (1..shnum)
        .find(|i| {
            let t = shoff + i * shentsize + 4;
            u32::from_le_bytes(lib[t..t + 4].try_into().unwrap()) != 3
        })
        .unwrap();
    let mut damaged = lib.clone();
    damaged[0x3e..0x40].copy_from_slice(&(not_strtab as u16).to_le_bytes());
    let path = dir.path().join("damaged.so");
    std::fs::write(&path, &damaged).unwrap();
    for cmd in ["list", "select"] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gfxkit"));
        c.arg(cmd);
        if cmd == "select" {
            c.args(["--device", "gfx906"]);
        }
        let out = c.arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("damaged.so") && err.contains("e_shstrndx"),
            "{cmd}: {err}"
        );
    }
}

/// Damage that used to decide an answer silently: a bare code object whose `e_type` or
/// `EI_CLASS` was flipped (listed as target "unknown", printed as type "other", copied by
/// extract, exit 0), and an uncompressed bundle whose entry ID no longer fits its code object
/// (listed with the mismatch, "no compatible code object" from select, exit 0 and 1). Each is
/// now exit 2 naming the file and the place.
#[test]
fn damage_that_decides_an_answer_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let built = inputs(dir.path());
    let get = |n: &str| built.iter().find(|(m, _)| m == n).unwrap().1.clone();
    let gfx = |args: &[&str], path: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(args)
            .arg(path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let co = get("k.co");
    // e_type 3 -> 0x203; EI_CLASS 2 -> 3.
    for (at, bit, what) in [(17usize, 1u8, "e_type"), (4, 0, "EI_CLASS")] {
        let mut d = co.clone();
        d[at] ^= 1 << bit;
        let path = dir.path().join(format!("bad-{what}.co"));
        std::fs::write(&path, &d).unwrap();
        for args in [
            &["list", "--json"][..],
            &["select", "--device", "gfx90a:sramecc+:xnack-"],
            &["inspect"],
            &["extract", "-o", &dir.path().join("x").display().to_string()],
        ] {
            let (code, text) = gfx(args, &path);
            assert_eq!(code, Some(2), "{args:?} {what}: {text}");
            assert!(text.contains(what), "{args:?} {what}: {text}");
        }
        assert!(
            !dir.path().join("x").exists()
                || std::fs::read_dir(dir.path().join("x"))
                    .unwrap()
                    .next()
                    .is_none()
        );
    }
    // A feature bit of e_flags (sramecc+ -> sramecc-, bit 10) against the metadata's
    // amdhsa.target: only inspect compared them.
    let mut d = co.clone();
    d[0x31] ^= 1 << 2;
    let path = dir.path().join("bad-eflags.co");
    std::fs::write(&path, &d).unwrap();
    for args in [
        &["select", "--device", "gfx90a:sramecc+:xnack-"][..],
        &["doctor", "--device", "gfx90a:sramecc+:xnack-"],
        &["kernels"],
        &["list"],
    ] {
        let (code, text) = gfx(args, &path);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(
            text.contains("amdhsa.target says gfx90a:sramecc+:xnack-"),
            "{args:?}: {text}"
        );
    }
    // A shared library whose EI_CLASS was flipped reads as "another kind of ELF": doctor
    // skipped it.
    let mut d = get("libk.so");
    d[4] ^= 1;
    let path = dir.path().join("bad-class.so");
    std::fs::write(&path, &d).unwrap();
    let (code, text) = gfx(&["doctor", "--device", "gfx906"], &path);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("EI_CLASS is 3"), "{text}");
    // An entry ID in an uncompressed bundle: gfx90a:xnack+ -> cfx90a:xnack+.
    let fb = get("k.hipfb");
    let id = b"--gfx90a:xnack+";
    let at = fb.windows(id.len()).position(|w| w == id).unwrap() + 2;
    let mut d = fb.clone();
    d[at] ^= 1 << 2;
    let path = dir.path().join("bad-id.hipfb");
    std::fs::write(&path, &d).unwrap();
    for args in [
        &["list", "--json"][..],
        &["select", "--device", "gfx90a:xnack+"],
        &["doctor", "--device", "gfx90a:xnack+"],
        &["size"],
        &["kernels"],
    ] {
        let (code, text) = gfx(args, &path);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(
            text.contains("cfx90a:xnack+") && text.contains("built for gfx90a:xnack+"),
            "{args:?}: {text}"
        );
    }
}
