//! Running the oracle of a configuration's LLVM release over batches of cases (llc-19, or
//! ROCm's LLVM 22 through `scripts/llvm22-memmodel.py`), and the recorded-expectation files.
#![allow(dead_code)]

use gfxkit_memory_model::conformance::{self, render_strict};
use gfxkit_memory_model::{Case, Config, Llvm};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What llc made of one case: the strict normal form, or an error (llc rejected the kernel).
pub type Outcome = Result<String, String>;

/// Directory of the recorded expectations.
pub fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected")
}

/// The recording of a configuration.
pub fn expected_path(config: &Config) -> PathBuf {
    expected_dir().join(format!("{}.txt", config.recording()))
}

/// The oracle of a configuration, as named in its recording.
fn oracle_name(config: &Config) -> &'static str {
    match config.llvm {
        Llvm::V19 => "llc-19",
        Llvm::V22 => "LLVM 22 (ROCm 7.2.2 rocm-llvm-python 7.2.2.562.46)",
    }
}

/// Why a batch failed: llc's reason, and the kernels it names (by case index).
pub struct Failure {
    /// A short, stable reason.
    pub reason: String,
    /// Indices of the kernels named in llc's errors.
    pub kernels: Vec<usize>,
}

/// A short, stable reason from llc's stderr (no addresses or kernel names).
fn reason_of(err: &str) -> String {
    for l in err.lines() {
        if l.contains("Cannot select") {
            return "llc cannot select an instruction for it".to_owned();
        }
        if let Some(pos) = l.find("error: ") {
            let msg = &l[pos + 7..];
            let msg = msg.rsplit("): ").next().unwrap_or(msg);
            return msg.trim().chars().take(120).collect();
        }
    }
    err.lines()
        .next()
        .unwrap_or("llc failed")
        .trim()
        .chars()
        .take(120)
        .collect()
}

/// Kernel indices named in llc's stderr (`in function k12 ...`, `In function: k12`).
fn named_kernels(err: &str) -> Vec<usize> {
    let mut v = Vec::new();
    for l in err.lines() {
        for pat in ["in function k", "In function: k"] {
            if let Some(pos) = l.find(pat) {
                let digits: String = l[pos + pat.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if let Ok(i) = digits.parse() {
                    if !v.contains(&i) {
                        v.push(i);
                    }
                }
            }
        }
    }
    v
}

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Installs ROCm's LLVM 22 (`scripts/ensure-llvm22`) once per test process.
pub fn ensure_llvm22() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let out = Command::new("bash")
            .arg(root().join("scripts/ensure-llvm22"))
            .output()
            .expect("run scripts/ensure-llvm22");
        assert!(
            out.status.success(),
            "scripts/ensure-llvm22 failed (the LLVM 22 oracle is required):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// What one compile of a batch gave: the assembly, and for LLVM 22 the legalizer's machine
/// code.
struct Compiled {
    asm: String,
    mir: Option<String>,
}

/// A `scripts/llvm22-memmodel.py --serve` process: LLVM 22 loaded once, one forked compile per job.
pub struct Rocm {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Rocm {
    /// Starts the server (installing LLVM 22 first when missing).
    pub fn start() -> Rocm {
        ensure_llvm22();
        let mut child = Command::new("python3")
            .arg(root().join("scripts/llvm22-memmodel.py"))
            .arg("--serve")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run scripts/llvm22-memmodel.py: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Rocm {
            child,
            stdin,
            stdout,
        }
    }

    /// Runs one job; its exit status.
    fn run(&mut self, args: &[String]) -> i32 {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{}", args.join("\t")).expect("write to llvm22-memmodel");
        self.stdin.flush().expect("write to llvm22-memmodel");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("read from llvm22-memmodel");
        line.trim()
            .parse()
            .unwrap_or_else(|_| panic!("llvm22-memmodel --serve answered `{line}`"))
    }
}

impl Drop for Rocm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Compiles one batch with the configuration's oracle, or says why it rejected it.
fn compile(
    config: &Config,
    batch: &[(usize, Case)],
    dir: &Path,
    rocm: &mut Option<Rocm>,
) -> Result<Compiled, Failure> {
    match config.llvm {
        Llvm::V19 => compile19(config, batch, dir).map(|asm| Compiled { asm, mir: None }),
        Llvm::V22 => compile22(config, batch, dir, rocm.get_or_insert_with(Rocm::start)),
    }
}

/// LLVM 22: the whole pipeline at -O0 through the C API, with the machine code as the memory
/// legalizer leaves it (there is no MIR parser in the C API to resume from, as with llc-19).
fn compile22(
    config: &Config,
    batch: &[(usize, Case)],
    dir: &Path,
    rocm: &mut Rocm,
) -> Result<Compiled, Failure> {
    let stem = format!("b{}", batch[0].0);
    let ll = dir.join(format!("{stem}.ll"));
    let mir = dir.join(format!("{stem}.mir"));
    let s = dir.join(format!("{stem}.s"));
    std::fs::write(&ll, conformance::ir_module(batch, config.llvm)).expect("write IR");
    let _ = std::fs::remove_file(&s);
    let mut args = vec!["-O0".to_owned()];
    args.extend(config.llc_args());
    for a in [
        "--mir-after-legalizer",
        &mir.display().to_string(),
        &ll.display().to_string(),
    ] {
        args.push(a.to_owned());
    }
    args.extend(["-o".to_owned(), s.display().to_string()]);
    let status = rocm.run(&args);
    let log = std::fs::read_to_string(&mir).unwrap_or_default();
    if status != 0 {
        let err = log;
        return Err(Failure {
            reason: reason_of(&err),
            kernels: named_kernels(&err),
        });
    }
    let asm = std::fs::read_to_string(&s).expect("read llvm22-memmodel output");
    for p in [&ll, &mir, &s] {
        let _ = std::fs::remove_file(p);
    }
    Ok(Compiled {
        asm,
        mir: Some(log),
    })
}

/// LLVM 19: llc stopped after the memory legalizer and resumed after wait insertion, so the
/// waits in the assembly are the legalizer's own.
fn compile19(config: &Config, batch: &[(usize, Case)], dir: &Path) -> Result<String, Failure> {
    let llc = gfxkit_testkit::llvm_tool("llc");
    let stem = format!("b{}", batch[0].0);
    let ll = dir.join(format!("{stem}.ll"));
    let mir = dir.join(format!("{stem}.mir"));
    let s = dir.join(format!("{stem}.s"));
    std::fs::write(&ll, conformance::ir_module(batch, config.llvm)).expect("write IR");
    let run = |args: Vec<String>| -> Result<(), Failure> {
        let out = Command::new(&llc)
            .env("LLVM_DISABLE_SYMBOLIZATION", "1")
            .arg("-O0")
            .args(config.llc_args())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run llc: {e}"));
        if out.status.success() {
            Ok(())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(Failure {
                reason: reason_of(&err),
                kernels: named_kernels(&err),
            })
        }
    };
    run(vec![
        "-stop-after=si-memory-legalizer".into(),
        ll.display().to_string(),
        "-o".into(),
        mir.display().to_string(),
    ])?;
    run(vec![
        "-start-after=si-insert-waitcnts".into(),
        mir.display().to_string(),
        "-o".into(),
        s.display().to_string(),
    ])?;
    let asm = std::fs::read_to_string(&s).expect("read llc output");
    for p in [&ll, &mir, &s] {
        let _ = std::fs::remove_file(p);
    }
    Ok(asm)
}

/// The strict form of every case of a compiled batch.
fn outcomes_of(config: &Config, c: &Compiled) -> BTreeMap<usize, Outcome> {
    let mut found = BTreeMap::new();
    let legalizer: Option<BTreeMap<usize, Vec<&str>>> = c
        .mir
        .as_deref()
        .map(|m| conformance::split_mir(m).into_iter().collect());
    for (i, lines) in conformance::split_asm(&c.asm) {
        let strict = conformance::normalize_strict(lines);
        let o = match &legalizer {
            None => Ok(render_strict(&strict)),
            Some(regions) => match regions.get(&i) {
                None => Err("oracle: the case is missing from the legalizer's dump".to_owned()),
                Some(mlines) => {
                    let items = conformance::mir_items(mlines.iter().copied(), config.major);
                    conformance::with_legalizer_waits(&strict, &items).map(|t| render_strict(&t))
                }
            },
        };
        found.insert(i, o);
    }
    found
}

/// Runs the oracle over `cases` for `config`. When llc rejects a batch, the kernels its errors name
/// are recorded as rejected and the rest of the batch is compiled again (a batch whose error
/// names no kernel is split in halves).
pub fn llc_outcomes(
    config: &Config,
    cases: &[(usize, Case)],
    dir: &Path,
) -> BTreeMap<usize, Outcome> {
    let mut out = BTreeMap::new();
    let mut work: Vec<Vec<(usize, Case)>> = cases.chunks(500).map(|c| c.to_vec()).collect();
    let mut rocm = None;
    while let Some(batch) = work.pop() {
        if batch.is_empty() {
            continue;
        }
        match compile(config, &batch, dir, &mut rocm) {
            Ok(compiled) => {
                let mut found = outcomes_of(config, &compiled);
                for (i, _) in &batch {
                    let o = found
                        .remove(i)
                        .unwrap_or_else(|| Err("markers not found in llc output".to_owned()));
                    out.insert(*i, o);
                }
            }
            Err(f) => {
                let named: Vec<usize> = f
                    .kernels
                    .iter()
                    .copied()
                    .filter(|k| batch.iter().any(|(i, _)| i == k))
                    .collect();
                if batch.len() == 1 {
                    out.insert(batch[0].0, Err(f.reason));
                } else if !named.is_empty() {
                    for k in &named {
                        out.insert(*k, Err(f.reason.clone()));
                    }
                    // Kernels before the first named one compiled; those after it may not
                    // have been reached. Compile both parts again, apart.
                    let first = batch.iter().position(|(i, _)| named.contains(i)).unwrap();
                    let rest: Vec<_> = batch
                        .iter()
                        .copied()
                        .filter(|(i, _)| !named.contains(i))
                        .collect();
                    let (a, b) = rest.split_at(first.min(rest.len()));
                    work.push(b.to_vec());
                    work.push(a.to_vec());
                } else {
                    let (a, b) = batch.split_at(batch.len() / 2);
                    work.push(b.to_vec());
                    work.push(a.to_vec());
                }
            }
        }
    }
    out
}

/// A hash of the case list, so a recording made for another enumeration is detected.
pub fn cases_hash(cases: &[Case]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in cases {
        for b in c.to_string().bytes().chain([b'\n']) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// Writes the recording of one configuration: a dictionary of distinct outcomes, then the
/// outcome number of each case in enumeration order (`n*k` for a run of `n` equal numbers).
pub fn write_expected(
    config: &Config,
    cases: &[Case],
    outcomes: &BTreeMap<usize, Outcome>,
) -> String {
    let mut dict: Vec<String> = Vec::new();
    let mut ids = Vec::new();
    for i in 0..cases.len() {
        let text = match &outcomes[&i] {
            Ok(s) => s.clone(),
            Err(e) => format!("!error {e}"),
        };
        let id = match dict.iter().position(|d| *d == text) {
            Some(p) => p,
            None => {
                dict.push(text);
                dict.len() - 1
            }
        };
        ids.push(id);
    }
    let mut s = format!(
        "# {} memory-model outcomes for {} ({} cases, case-list hash {:016x}); written by scripts/memmodel-sweep\n",
        oracle_name(config),
        config.label(),
        cases.len(),
        cases_hash(cases)
    );
    for (n, d) in dict.iter().enumerate() {
        s.push_str(&format!("@{n} {d}\n"));
    }
    let mut runs = Vec::new();
    let mut k = 0;
    while k < ids.len() {
        let mut n = 1;
        while k + n < ids.len() && ids[k + n] == ids[k] {
            n += 1;
        }
        runs.push(if n == 1 {
            ids[k].to_string()
        } else {
            format!("{n}*{}", ids[k])
        });
        k += n;
    }
    for chunk in runs.chunks(32) {
        s.push_str(&chunk.join(" "));
        s.push('\n');
    }
    s
}

/// Reads a recording back: one outcome per case. Panics (naming the fix) if the file is
/// missing or was recorded for a different case list.
pub fn read_expected(config: &Config, cases: &[Case]) -> Vec<Outcome> {
    let path = expected_path(config);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run scripts/memmodel-sweep to record llc's outcomes",
            path.display()
        )
    });
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let want = format!("case-list hash {:016x}", cases_hash(cases));
    assert!(
        header.contains(&want),
        "{}: recorded for another case list; run scripts/memmodel-sweep",
        path.display()
    );
    let mut dict = Vec::new();
    let mut out = Vec::new();
    for line in lines {
        if let Some(rest) = line.strip_prefix('@') {
            let (_, d) = rest.split_once(' ').expect("dictionary line");
            dict.push(match d.strip_prefix("!error ") {
                Some(e) => Err(e.to_owned()),
                None => Ok(d.to_owned()),
            });
            continue;
        }
        for tok in line.split_whitespace() {
            let (n, id) = match tok.split_once('*') {
                Some((n, id)) => (n.parse::<usize>().unwrap(), id.parse::<usize>().unwrap()),
                None => (1, tok.parse::<usize>().unwrap()),
            };
            for _ in 0..n {
                out.push(dict[id].clone());
            }
        }
    }
    assert_eq!(
        out.len(),
        cases.len(),
        "{}: wrong number of outcomes",
        path.display()
    );
    out
}
