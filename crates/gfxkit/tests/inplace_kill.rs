//! Crash safety of in-place rewrites: a real `gfxkit prune --in-place` (and `recompress
//! --in-place`) on a library built by clang-19 is killed with SIGKILL at many random moments.
//! After each kill the library is either byte-identical to the input or exactly the complete
//! output (which verifies), never anything in between; a temporary file left behind is skipped
//! by directory scans and removed by the next run.

use gfxkit_testkit::{llvm_tool, run_ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PRELUDE: &str = "#define __global__ __attribute__((global))\n\
typedef struct { unsigned x, y, z; } dim3;\n\
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);\n";

/// A shared library with 64 kernels for six targets (about 430 KiB, 390 KiB of it device code).
fn library(dir: &Path) -> PathBuf {
    let src = dir.join("k.hip");
    std::fs::write(
        &src,
        format!("{PRELUDE}{}", gfxkit_testkit::hip_kernels(64)),
    )
    .unwrap();
    let obj = dir.join("k.o");
    let mut cc = Command::new(llvm_tool("clang++"));
    cc.args([
        "-x",
        "hip",
        "-nogpulib",
        "-nogpuinc",
        "-O1",
        "-fPIC",
        "-cuid=kill",
    ]);
    for a in [
        "gfx906",
        "gfx90a:xnack+",
        "gfx90a:xnack-",
        "gfx1030",
        "gfx1100",
        "gfx942",
    ] {
        cc.arg(format!("--offload-arch={a}"));
    }
    run_ok(cc.arg("-c").arg(&src).arg("-o").arg(&obj));
    let lib = dir.join("libk.so");
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-shared", "-fuse-ld=lld"])
            .arg(&obj)
            .arg("-o")
            .arg(&lib),
    );
    lib
}

/// splitmix64: a fixed seed gives the same kill moments on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn gfxkit() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gfxkit"));
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[derive(Default, Debug)]
struct Outcomes {
    kills: usize,
    untouched: usize,
    replaced: usize,
    strays: usize,
}

/// Kills `args` (run on a fresh copy of `input` named `libk.so`) at random moments until
/// `kills` runs were killed while still running; checks every outcome.
fn kill_at_random_moments(input: &[u8], args: &[&str], kills: usize, seed: u64) -> Outcomes {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libk.so");
    let run = |lib: &Path| {
        let mut c = gfxkit();
        c.args(args).arg(lib);
        c
    };
    // The complete output, and how long an uninterrupted run takes.
    std::fs::write(&lib, input).unwrap();
    let started = Instant::now();
    assert!(run(&lib).status().unwrap().success(), "{args:?} fails");
    let full = started.elapsed();
    let expected = std::fs::read(&lib).unwrap();
    assert_ne!(expected, input, "{args:?} changes nothing");
    assert_eq!(names(dir.path()), ["libk.so"]);
    assert!(gfxkit().arg("verify").arg(&lib).status().unwrap().success());

    let mut rng = Rng(seed);
    let mut o = Outcomes::default();
    let window = full.as_micros() as u64 * 5 / 4 + 1;
    let mut runs = 0;
    while o.kills < kills {
        runs += 1;
        assert!(
            runs < kills * 10,
            "too few runs could be killed while running: {o:?}"
        );
        std::fs::write(&lib, input).unwrap();
        let delay = Duration::from_micros(rng.next() % window);
        let mut child = run(&lib).spawn().unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            o.kills += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let now = std::fs::read(&lib).unwrap();
        if now == input {
            o.untouched += 1;
        } else {
            assert!(
                now == expected,
                "{args:?} killed after {delay:?}: the file is neither the input nor the output ({} bytes)",
                now.len()
            );
            o.replaced += 1;
            assert!(gfxkit().arg("verify").arg(&lib).status().unwrap().success());
        }
        let strays: Vec<String> = names(dir.path())
            .into_iter()
            .filter(|n| n != "libk.so")
            .collect();
        for s in &strays {
            assert!(
                s.starts_with(".gfxkit-") && s.ends_with(".libk.so"),
                "unexpected file {s} after a kill"
            );
        }
        if !strays.is_empty() {
            o.strays += 1;
            // A scan of the directory ignores the temporary file...
            let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
                .args(["list", "--json", "-r"])
                .arg(dir.path())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("libk.so"), "{text}");
            for s in &strays {
                assert!(!text.contains(s.as_str()), "list reads the temporary {s}");
            }
            let size = |p: &Path| {
                let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
                    .args(["size", "--json"])
                    .arg(p)
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            assert_eq!(
                size(dir.path()).replace(&dir.path().display().to_string(), ""),
                size(&lib).replace(&dir.path().display().to_string(), ""),
                "size counts the temporary file"
            );
            // ...and the next run on the file removes it.
            std::fs::write(&lib, input).unwrap();
            assert!(run(&lib).status().unwrap().success());
            assert_eq!(std::fs::read(&lib).unwrap(), expected);
            assert_eq!(
                names(dir.path()),
                ["libk.so"],
                "the next run left a temporary file"
            );
        }
    }
    eprintln!("{args:?}: {runs} runs (uninterrupted: {full:?}), {o:?}");
    o
}

#[test]
fn in_place_rewrites_survive_sigkill_at_random_moments() {
    let dir = tempfile::tempdir().unwrap();
    let input = std::fs::read(library(dir.path())).unwrap();
    let prune = kill_at_random_moments(
        &input,
        &["prune", "--in-place", "--keep", "gfx90a"],
        50,
        0x5eed_0001,
    );
    let recompress = kill_at_random_moments(&input, &["recompress", "--in-place"], 15, 0x5eed_0002);
    // Kills landed before and after the rename.
    for o in [&prune, &recompress] {
        assert!(o.untouched > 0, "{o:?}");
    }
    assert!(
        prune.replaced + recompress.replaced > 0,
        "{prune:?} {recompress:?}"
    );
}
