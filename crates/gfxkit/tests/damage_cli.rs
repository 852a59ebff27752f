//! Damage from the outside: real inputs built by clang-19 (bundles, compressed bundles, host
//! objects, a shared library, an archive, an object bundle, a code object) are mutated a few
//! thousand times with a fixed seed (truncation, bit flips, size and offset fields set to huge
//! values, regions copied over others) and given to `gfxkit list`, `verify`, `extract`,
//! `select` and `inspect` under an address-space limit: every run ends with exit code 0, 1 or
//! 2 within its deadline, never a panic, a signal or a hang.

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
