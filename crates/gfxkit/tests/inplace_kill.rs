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

/// Kills `args` (run on a fresh copy of `input` named `name`) at random moments until `kills`
/// runs were killed while still running; checks every outcome.
fn kill_at_random_moments(
    input: &[u8],
    name: &str,
    args: &[&str],
    kills: usize,
    seed: u64,
) -> Outcomes {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join(name);
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
    assert_eq!(names(dir.path()), [name]);
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
            .filter(|n| n != name)
            .collect();
        for s in &strays {
            assert!(
                s.starts_with(".gfxkit-") && s.ends_with(&format!(".{name}")),
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
            assert!(text.contains(name), "{text}");
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
                [name],
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
        "libk.so",
        &["prune", "--in-place", "--keep", "gfx90a"],
        50,
        0x5eed_0001,
    );
    let recompress = kill_at_random_moments(
        &input,
        "libk.so",
        &["recompress", "--in-place"],
        15,
        0x5eed_0002,
    );
    // Kills landed before and after the rename.
    for o in [&prune, &recompress] {
        assert!(o.untouched > 0, "{o:?}");
    }
    assert!(
        prune.replaced + recompress.replaced > 0,
        "{prune:?} {recompress:?}"
    );
}

/// A wheel holding `lib` as `k/lib/libk.so`, deflated, with its `RECORD`.
fn wheel(dir: &Path, lib: &Path) -> PathBuf {
    let whl = dir.join("k-1.0-py3-none-linux_x86_64.whl");
    let script = r#"
import zipfile, hashlib, base64, sys
def h(b): return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
files = {'k/__init__.py': b'', 'k/lib/libk.so': open(sys.argv[2], 'rb').read(),
         'k-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: k\nVersion: 1.0\n'}
rec = ''.join(f'{n},{h(b)},{len(b)}\n' for n, b in files.items()) + 'k-1.0.dist-info/RECORD,,\n'
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    for n, b in files.items(): z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), b)
    z.writestr(zipfile.ZipInfo('k-1.0.dist-info/RECORD', (2020, 1, 1, 0, 0, 0)), rec)
"#;
    run_ok(
        Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(&whl)
            .arg(lib),
    );
    whl
}

#[test]
fn in_place_package_prune_survives_sigkill_at_random_moments() {
    // A wheel is rewritten member by member, written again, read back and checked before the
    // rename: killed at any moment it is the old wheel or the new one.
    let dir = tempfile::tempdir().unwrap();
    let whl = wheel(dir.path(), &library(dir.path()));
    let input = std::fs::read(&whl).unwrap();
    let o = kill_at_random_moments(
        &input,
        "k-1.0-py3-none-linux_x86_64.whl",
        &["prune", "--in-place", "--keep", "gfx90a"],
        20,
        0x5eed_0003,
    );
    assert!(o.untouched > 0, "{o:?}");
}

#[test]
fn kpack_split_killed_at_random_moments_leaves_whole_files_only() {
    // `kpack split` writes a host-only binary and one archive per architecture, each through
    // a temporary file and a rename: after a kill at any moment every file there is complete
    // (byte-identical to what an uninterrupted run writes), the input is untouched, and a
    // temporary file left behind is one of gfxkit's, which the next run does not trip over.
    let dir = tempfile::tempdir().unwrap();
    let input = std::fs::read(library(dir.path())).unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let lib = work.join("libk.so");
    let out = work.join("out");
    let split = || {
        let mut c = gfxkit();
        c.args(["kpack", "split", "--group", "k", "-o"])
            .arg(out.join("libk.so"))
            .arg("--kpack-dir")
            .arg(&out)
            .arg(&lib);
        c
    };
    let clean = || {
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir(&out).unwrap();
        std::fs::write(&lib, &input).unwrap();
    };
    clean();
    let started = Instant::now();
    assert!(split().status().unwrap().success());
    let full = started.elapsed();
    let expected: Vec<(String, Vec<u8>)> = names(&out)
        .into_iter()
        .map(|n| {
            let b = std::fs::read(out.join(&n)).unwrap();
            (n, b)
        })
        .collect();
    assert!(expected.len() >= 7, "{:?}", names(&out));
    let mut rng = Rng(0x5eed_0004);
    let window = full.as_micros() as u64 * 5 / 4 + 1;
    let (mut kills, mut partial, mut runs) = (0, 0, 0);
    while kills < 20 {
        runs += 1;
        assert!(runs < 200, "too few runs could be killed while running");
        clean();
        let delay = Duration::from_micros(rng.next() % window);
        let mut child = split().spawn().unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            kills += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert_eq!(std::fs::read(&lib).unwrap(), input, "the input changed");
        let now = names(&out);
        if now.len() < expected.len() {
            partial += 1;
        }
        for n in now {
            if n.starts_with(".gfxkit-") {
                continue;
            }
            let want = expected.iter().find(|(e, _)| *e == n);
            let want = want.unwrap_or_else(|| panic!("unexpected file {n} after a kill"));
            assert!(
                std::fs::read(out.join(&n)).unwrap() == want.1,
                "{n} is incomplete after a kill at {delay:?}"
            );
        }
        // Run again over what was left: the same files, no temporary one.
        let _ = std::fs::remove_file(&lib);
        std::fs::write(&lib, &input).unwrap();
        assert!(split().status().unwrap().success());
        let again: Vec<String> = names(&out)
            .into_iter()
            .filter(|n| !n.starts_with(".gfxkit-"))
            .collect();
        assert_eq!(
            again,
            expected.iter().map(|e| e.0.clone()).collect::<Vec<_>>()
        );
    }
    eprintln!("kpack split: {runs} runs (uninterrupted: {full:?}), {kills} killed, {partial} with files missing");
}
