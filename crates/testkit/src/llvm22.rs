//! ROCm 7.2.2's LLVM 22 as a second oracle, through `scripts/llvm22.py` (which downloads the
//! `rocm-llvm-python` wheel into `target/llvm22` when missing and drives its `librocmllvm.so`).
//!
//! Like the llvm-19 tools, a missing oracle is a test failure naming the fix, never a skip.

use crate::run_ok;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// `scripts/llvm22.py` of this checkout.
pub fn llvm22_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/llvm22.py")
}

/// A `python3 scripts/llvm22.py` command, the library installed first (once per process).
pub fn llvm22_command() -> Command {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let out = Command::new("python3")
            .arg(llvm22_script())
            .arg("install")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run python3: {e} (run `bash scripts/ensure-llvm22`)")
            });
        assert!(
            out.status.success(),
            "installing ROCm's LLVM 22 failed (run `bash scripts/ensure-llvm22`):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let mut cmd = Command::new("python3");
    cmd.arg(llvm22_script());
    cmd
}

/// The processor names LLVM 22 lists for `triple` (`-mcpu=help`).
pub fn llvm22_cpus(triple: &str) -> Vec<String> {
    let out = run_ok(llvm22_command().args(["cpus", "--triple", triple]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One compile of a [`llvm22_batch`].
#[derive(Debug, Clone)]
pub struct Llvm22Job {
    /// LLVM IR text.
    pub ir: String,
    /// `-mcpu`.
    pub cpu: String,
    /// `-mattr`, such as `+xnack,-sramecc` (may be empty).
    pub features: String,
    /// `asm` or `obj`.
    pub kind: &'static str,
    /// Optimisation level 0 to 3.
    pub opt: u8,
    /// Where the output goes.
    pub output: PathBuf,
}

/// Compiles every job in one LLVM 22 process (LLVM command-line `options` apply to all of them);
/// returns, per job, `Ok(())` or LLVM's error text.
pub fn llvm22_batch(jobs: &[Llvm22Job], options: &[&str]) -> Vec<Result<(), String>> {
    let mut input = String::new();
    for j in jobs {
        let line = serde_json::json!({
            "ir": j.ir,
            "cpu": j.cpu,
            "features": j.features,
            "kind": j.kind,
            "opt": j.opt,
            "output": j.output,
        });
        input.push_str(&line.to_string());
        input.push('\n');
    }
    let mut cmd = llvm22_command();
    cmd.arg("batch");
    for o in options {
        cmd.arg(format!("--option={o}"));
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("llvm22.py batch");
    writer.join().expect("writer thread").expect("write jobs");
    assert!(
        out.status.success(),
        "llvm22.py batch failed with {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Result<(), String>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("batch answers JSON");
            if v["ok"] == true {
                Ok(())
            } else {
                Err(v["error"].as_str().unwrap_or("?").to_owned())
            }
        })
        .collect();
    assert_eq!(results.len(), jobs.len(), "one answer per job");
    results
}
