//! Replays every input kept under `fuzz/regressions/<target>/` (inputs that once made a reader
//! panic or misbehave) and `fuzz/seeds/<target>/` (small seed inputs) through the body of the
//! fuzz target of that name, on stable, in ordinary `cargo test`. With `GFXKIT_FUZZ_SEEDS=DIR`
//! the seeds `scripts/fuzz-seeds DIR` built are replayed as well.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs every file under `dir/<target>/` through its target; returns how many ran.
fn replay(dir: &Path) -> usize {
    let mut ran = 0;
    let mut targets: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    targets.sort();
    for t in targets {
        let name = t.file_name().unwrap().to_str().unwrap().to_owned();
        let body = gfxkit_fuzzing::body(&name).unwrap_or_else(|| {
            panic!(
                "{}: no fuzz target called {name} (see gfxkit_fuzzing::TARGETS)",
                t.display()
            )
        });
        let mut files: Vec<_> = std::fs::read_dir(&t)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let caught = std::panic::catch_unwind(|| body(&data));
            assert!(caught.is_ok(), "{} fails target {name}", f.display());
            ran += 1;
        }
    }
    ran
}

#[test]
fn regressions_replay() {
    let n = replay(&fuzz_dir().join("regressions"));
    assert!(n >= 5, "only {n} regression inputs");
}

#[test]
fn seeds_replay() {
    let n = replay(&fuzz_dir().join("seeds"));
    assert!(n >= gfxkit_fuzzing::TARGETS.len(), "only {n} seed inputs");
    // Larger seeds built by `scripts/fuzz-seeds DIR` (clang-19, the corpus), when named.
    if let Some(dir) = std::env::var_os("GFXKIT_FUZZ_SEEDS") {
        let n = replay(Path::new(&dir));
        eprintln!("{n} inputs from {}", Path::new(&dir).display());
    }
}

#[test]
fn every_target_has_a_fuzz_target_file_and_seeds() {
    for (name, _) in gfxkit_fuzzing::TARGETS {
        let src = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text =
            std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        assert!(
            text.contains(&format!("gfxkit_fuzzing::body(\"{name}\")")),
            "{} does not run the {name} body",
            src.display()
        );
        let seeds = fuzz_dir().join("seeds").join(name);
        assert!(
            std::fs::read_dir(&seeds).is_ok_and(|mut d| d.next().is_some()),
            "no seeds in {}",
            seeds.display()
        );
    }
}
