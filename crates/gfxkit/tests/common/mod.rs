//! Helpers shared by the gfxkit CLI tests: running the built binary and comparing output with
//! golden files (re-blessed with `GFXKIT_BLESS=1`).

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs the built `gfxkit` with `args`: exit code (-1 for a signal), stdout, stderr.
pub fn gfxkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Compares `got` with `tests/<dir>/<case>.txt`; with `GFXKIT_BLESS` set, writes it instead.
pub fn check_golden(dir: &str, case: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir)
        .join(format!("{case}.txt"));
    if std::env::var_os("GFXKIT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with GFXKIT_BLESS=1 to create it). Output:\n{got}",
            path.display()
        )
    });
    assert_eq!(
        got,
        want,
        "golden {case} drifted ({}); re-bless with GFXKIT_BLESS=1 if intended",
        path.display()
    );
}

/// A command's stdout as JSON; panics with its stdout and stderr when it is not JSON.
pub fn json_stdout(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
