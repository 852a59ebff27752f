//! Every `gfxkit` command example of README.md and docs/*.md runs, and gives the exit code and
//! the output the docs show.
//!
//! An example is a line of a fenced code block that starts with `gfxkit ` (or `$ gfxkit `). In a
//! block whose commands carry the `$ ` prompt, the lines after a command up to the next one
//! are its output as shown: each must appear, in order, as a line of what the command prints
//! (a line `...` stands for any lines; a line ending in `...` for a line that begins so). A comment `# exit N` on the command line states its exit
//! code (the comment starts with it); otherwise it must exit 0. Commands run through `sh` (globs, quotes, redirections as a
//! user's shell sees them), in order, one working directory per document, with `gfxkit` on
//! `PATH` and `HOME` in that directory; the paths the docs name are files made there from the
//! real inputs `scripts/ensure-real-inputs` fetches and from clang-19 builds ([`setup`]), and
//! absolute paths (`/opt/rocm/lib`) are read below the working directory ([`ROOTED`]).
//!
//! Every example is either run or listed in [`NOT_RUN`] with the reason it cannot run here; an
//! example in neither fails the test, and so does a listed one the docs no longer hold. Code
//! examples must be fenced: an indented `gfxkit` line is refused. A block marked `text` (a
//! diagram, a log) holds no commands.

use gfxkit_testkit::image::{docker_save, oci_layout, tar_of, write_dir, Compress, Entry, Layer};
use gfxkit_testkit::windows::{linux_shared, lld_link, Tu};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Examples that cannot run in this test, each with the reason.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "gfxkit doctor --device auto /opt/rocm/lib",
        "reads this machine's GPUs from /sys/class/kfd; the test machine has none \
         (doctor_cli.rs reads a KFD topology written by the test through --sysfs-root)",
    ),
    (
        "gfxkit doctor",
        "reads this machine's GPUs and its installed ROCm release; the test machine has neither",
    ),
    (
        "gfxkit check --require gfx90a,gfx942 \"$(spack location -i rocblas)\"",
        "needs Spack and a rocBLAS it installed",
    ),
    (
        "gfxkit census wheels/ /opt/rocm/lib -o out --require gfx90a,gfx942,gfx1100",
        "needs the Python package with its census extra (Dask): run by \
         tests/python/test_docs_examples.py",
    ),
    (
        "python -m gfxkit census ...",
        "stands for the command above (its arguments elided): run by \
         tests/python/test_docs_examples.py",
    ),
];

/// Absolute paths the docs name, read below the working directory (where [`setup`] makes
/// them). Replaced where they start a word, not after `!` (a path inside an image).
const ROOTED: &[&str] = &["/usr/lib/x86_64-linux-gnu/", "/opt/rocm/lib"];

/// One example: where it is, the command line, and the output shown (prompt blocks only).
#[derive(Debug)]
struct Example {
    place: String,
    command: String,
    shown: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn is_example(line: &str) -> bool {
    line.starts_with("gfxkit ") || line == "gfxkit" || line.starts_with("python -m gfxkit")
}

/// The documents: README.md and docs/*.md.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// The examples of one document, in order.
fn examples(doc: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(doc).unwrap();
    let name = doc
        .strip_prefix(root())
        .unwrap_or(doc)
        .display()
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !line.trim_start().starts_with("```") {
            assert!(
                !(line.starts_with("    ") && is_example(line.trim())),
                "{name}:{}: an indented command example; put it in a fenced code block",
                i + 1
            );
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].trim_start().starts_with("```") {
            end += 1;
        }
        let block = &lines[start..end];
        // A diagram or a listing, not commands.
        if line.trim_start().trim_start_matches('`').trim() == "text" {
            i = end + 1;
            continue;
        }
        let prompt = block.iter().any(|l| l.starts_with("$ "));
        let mut current: Option<Example> = None;
        for (k, l) in block.iter().enumerate() {
            let place = format!("{name}:{}", start + k + 1);
            if prompt {
                if let Some(cmd) = l.strip_prefix("$ ") {
                    out.extend(current.take());
                    if is_example(cmd.trim()) {
                        current = Some(Example {
                            place,
                            command: cmd.trim().to_owned(),
                            shown: Vec::new(),
                        });
                    }
                } else if let Some(c) = current.as_mut() {
                    if !l.trim().is_empty() {
                        c.shown.push(l.trim_end().to_owned());
                    }
                }
            } else if is_example(l.trim()) {
                out.push(Example {
                    place,
                    command: l.trim().to_owned(),
                    shown: Vec::new(),
                });
            }
        }
        out.extend(current);
        i = end + 1;
    }
    out
}

/// The command without its trailing comment, and the comment.
fn split_comment(command: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let b = command.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'#' if !single && !double && i > 0 && b[i - 1] == b' ' => {
                return (command[..i].trim_end(), &command[i + 1..]);
            }
            _ => {}
        }
    }
    (command, "")
}

/// The exit code a comment states by starting with it (`# exit 1 when ...`), else 0.
fn stated_exit(comment: &str) -> i32 {
    let mut words = comment.split_whitespace();
    match (words.next(), words.next()) {
        (Some("exit"), Some(n)) => n.trim_end_matches([':', ',', ';']).parse().unwrap_or(-1),
        _ => 0,
    }
}

/// The command as run: absolute paths of [`ROOTED`] made relative to the working directory.
fn rooted(command: &str) -> String {
    let mut s = command.to_owned();
    for abs in ROOTED {
        for lead in [" ", "\"", "'"] {
            s = s.replace(&format!("{lead}{abs}"), &format!("{lead}{}", &abs[1..]));
        }
    }
    s
}

fn real(name: &str) -> PathBuf {
    let dir = root().join("target/real");
    let found = std::fs::read_dir(&dir).ok().and_then(|d| {
        d.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(name))
        })
    });
    found.unwrap_or_else(|| {
        panic!(
            "{name}* is missing from {}: run `bash scripts/ensure-real-inputs` (scripts/test does)",
            dir.display()
        )
    })
}

fn gfxkit_ok(args: &[&str], cwd: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "setup: gfxkit {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One member of a zip file (a wheel), its bytes.
fn member(zip: &Path, name: &str) -> Vec<u8> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    let mut f = z.by_name(name).unwrap();
    let mut v = Vec::new();
    f.read_to_end(&mut v).unwrap();
    v
}

/// The inputs the docs name, made in `dir` from the real inputs (Debian's librocrand 5.3:
/// 7 targets, gfx803 ... gfx1030, no gfx942 or gfx11; PyPI's torch-scatter-rocm wheel: 29
/// processors) and clang-19 builds. Each stands for what the docs name; the comment says
/// which real file it is.
fn setup(dir: &Path) {
    let rocrand = real("librocrand.so.1.1");
    let wheel = real("torch_scatter_rocm-");
    let mkdir = |p: &str| std::fs::create_dir_all(dir.join(p)).unwrap();
    let copy = |from: &Path, to: &str| {
        if let Some(parent) = Path::new(to).parent() {
            mkdir(parent.to_str().unwrap());
        }
        std::fs::copy(from, dir.join(to)).unwrap();
    };
    // A HIP library, and a build of it: Debian's librocrand.
    for to in [
        "librocsparse.so",
        "libfoo.so",
        "usr/lib/x86_64-linux-gnu/librocsparse.so.0",
        "build-6.4/lib/librocrand.so.1",
        "librocrand.so.1.1",
    ] {
        copy(&rocrand, to);
    }
    // The ROCm tree: a library clang-19 built for gfx90a:xnack- and gfx942 (with a link), and
    // a copy of it in a Python environment.
    const KERNEL: &str = "extern \"C\" __global__ void k(float *a, int n) {\n\
  int t = __builtin_amdgcn_workitem_id_x(); if (t < n) a[t] = a[t] * 2.5f + t; }\n";
    let build = dir.join("build-clang");
    mkdir("build-clang");
    let obj = Tu {
        stem: "rocm",
        source: KERNEL,
        archs: &["gfx90a:xnack-", "gfx942"],
        compress: true,
    }
    .linux_object(&build);
    let so = linux_shared(&build, "libk.so.1.0", &[obj]);
    copy(&so, "opt/rocm/lib/libk.so.1.0");
    copy(&so, "venv/lib/python3.12/site-packages/k/libk.so.1");
    std::os::unix::fs::symlink("libk.so.1.0", dir.join("opt/rocm/lib/libk.so.1")).unwrap();
    // The next build, which dropped gfx906.
    mkdir("build-7.0/lib");
    gfxkit_ok(
        &[
            "prune",
            "--drop",
            "gfx906",
            "build-6.4/lib/librocrand.so.1",
            "-o",
            "build-7.0/lib/librocrand.so.1",
        ],
        dir,
    );
    // Wheels: torch-scatter-rocm, and built for exactly gfx90a, gfx942 and gfx1100.
    std::fs::copy(&wheel, dir.join("torch-2.5+rocm6.2.whl")).unwrap();
    let wheel_name = wheel.file_name().unwrap().to_str().unwrap();
    mkdir("dist");
    mkdir("wheelhouse");
    let three = format!("dist/{wheel_name}");
    gfxkit_ok(
        &[
            "prune",
            "--keep",
            "gfx90a",
            "--keep",
            "gfx942",
            "--keep",
            "gfx1100",
            wheel.to_str().unwrap(),
            "-o",
            &three,
        ],
        dir,
    );
    gfxkit_ok(
        &[
            "prune",
            "--drop",
            "gfx906",
            "torch-2.5+rocm6.2.whl",
            "-o",
            "torch-2.6+rocm6.3.whl",
        ],
        dir,
    );
    std::fs::copy(dir.join(&three), dir.join("wheelhouse").join(wheel_name)).unwrap();
    // A library of that wheel in a build directory and a stage (cmake --install).
    let lib = member(&dir.join(&three), "torch_scatter/_scatter_cuda.so");
    std::fs::write(dir.join("dist/libfoo.so"), &lib).unwrap();
    mkdir("stage/lib");
    std::fs::write(dir.join("stage/lib/libtorch_scatter.so"), &lib).unwrap();
    // Code objects for `bundle`: librocrand's gfx906 and gfx90a:xnack+ entries.
    mkdir("cos");
    gfxkit_ok(
        &[
            "extract",
            rocrand.to_str().unwrap(),
            "--target",
            "gfx906",
            "--target",
            "gfx90a:xnack+",
            "-o",
            "cos",
        ],
        dir,
    );
    for e in std::fs::read_dir(dir.join("cos")).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        let to = if n.ends_with("gfx906_xnack-.co") {
            "gfx906.co"
        } else {
            "gfx90a.co"
        };
        std::fs::rename(&p, dir.join(to)).unwrap();
    }
    // Container images holding Debian's librocrand where a ROCm image has it.
    let rocrand_bytes = std::fs::read(&rocrand).unwrap();
    let layer = vec![
        Entry::Dir("opt/rocm/lib".into()),
        Entry::File("opt/rocm/lib/librocrand.so.1.1".into(), rocrand_bytes),
        Entry::Symlink(
            "opt/rocm/lib/librocrand.so.1".into(),
            "librocrand.so.1.1".into(),
        ),
        Entry::Symlink(
            "opt/rocm/lib/librocrand.so".into(),
            "librocrand.so.1".into(),
        ),
    ];
    for name in ["pytorch.tar", "rocm.tar"] {
        let files = docker_save(std::slice::from_ref(&layer), "rocm/dev:6.2");
        std::fs::write(dir.join(name), tar_of(&files)).unwrap();
    }
    let one = |layer: &Vec<Entry>| {
        vec![Layer {
            entries: layer.clone(),
            compress: Compress::Gzip,
        }]
    };
    write_dir(
        &oci_layout(&[("linux/amd64", one(&layer))], "rocm/pytorch:latest"),
        &dir.join("pytorch"),
    );
    let arm = vec![Entry::File(
        "usr/share/doc/readme".into(),
        b"arm64".to_vec(),
    )];
    std::fs::write(
        dir.join("multi.tar"),
        tar_of(&oci_layout(
            &[("linux/amd64", one(&layer)), ("linux/arm64", one(&arm))],
            "multi:latest",
        )),
    )
    .unwrap();
    // Windows: DLLs built by clang-19 and lld-link-19.
    let build = dir.join("build-win");
    mkdir("build-win");
    mkdir("Lib/site-packages/torch/lib");
    for (stem, archs) in [
        ("torch_hip", &["gfx1151", "gfx1201", "gfx942"][..]),
        ("amdhip_kernels", &["gfx1100", "gfx1151", "gfx1201"][..]),
    ] {
        let obj = Tu {
            stem,
            source: KERNEL,
            archs,
            compress: true,
        }
        .windows_object(&build);
        let dll = lld_link(&build, &format!("{stem}.dll"), &[obj], None);
        std::fs::copy(&dll, dir.join(format!("{stem}.dll"))).unwrap();
        std::fs::copy(
            &dll,
            dir.join(format!("Lib/site-packages/torch/lib/{stem}.dll")),
        )
        .unwrap();
    }
    // Where the install examples write.
    for d in [
        ".local/share/bash-completion/completions",
        ".zfunc",
        ".config/fish/completions",
        "out",
    ] {
        mkdir(d);
    }
}

/// Whether the lines `shown` appear in `got`, in order (a line `...` stands for any lines, a
/// line ending in `...` for the lines that begin with what precedes it); the first line not
/// found otherwise.
fn shows(shown: &[String], got: &str) -> Result<(), String> {
    let lines: Vec<&str> = got.lines().map(str::trim_end).collect();
    let mut at = 0;
    for s in shown {
        if s.trim() == "..." {
            continue;
        }
        let matches = |l: &&str| match s.strip_suffix("...") {
            Some(start) => l.starts_with(start),
            None => *l == s,
        };
        match lines[at..].iter().position(matches) {
            Some(k) => at += k + 1,
            None => return Err(s.clone()),
        }
    }
    Ok(())
}

#[test]
fn every_docs_example_runs_as_documented() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_gfxkit"));
    let bindir = bin.parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bindir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut seen_not_run = Vec::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    // The inputs, made once; each document starts from a copy of them (hard links: gfxkit
    // writes its outputs to new files and renames them, never into an input).
    let inputs = tempfile::tempdir().unwrap();
    setup(inputs.path());
    for doc in documents() {
        let examples = examples(&doc);
        if examples.is_empty() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("cp")
            .args(["-a", "-l", "-T"])
            .arg(inputs.path())
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for ex in &examples {
            let (command, comment) = split_comment(&ex.command);
            if NOT_RUN.iter().any(|(c, _)| *c == command) {
                seen_not_run.push(command.to_owned());
                continue;
            }
            let want = stated_exit(comment);
            let o = Command::new("sh")
                .arg("-c")
                .arg(rooted(command))
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("HOME", dir.path())
                .env_remove("ROCBLAS_TENSILE_LIBPATH")
                .env_remove("HIPBLASLT_TENSILE_LIBPATH")
                .env_remove("GFXKIT_PROGRESS_DELAY_MS")
                .env_remove("ROCM_PATH")
                .output()
                .unwrap();
            ran += 1;
            let stdout = String::from_utf8_lossy(&o.stdout);
            let stderr = String::from_utf8_lossy(&o.stderr);
            let code = o.status.code().unwrap_or(-1);
            if code != want {
                failures.push(format!(
                    "{}: `{}` exited {code}, the docs say {want}\n{stdout}{stderr}",
                    ex.place, ex.command
                ));
            } else if let Err(line) = shows(&ex.shown, &stdout) {
                failures.push(format!(
                    "{}: `{}` does not print the line shown: {line:?}\n{stdout}{stderr}",
                    ex.place, ex.command
                ));
            }
        }
    }
    for (c, _) in NOT_RUN {
        assert!(
            seen_not_run.iter().any(|s| s == c),
            "NOT_RUN lists `{c}`, which no document holds any more: remove it"
        );
    }
    eprintln!("{ran} examples run, {} not run", NOT_RUN.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 50, "only {ran} examples found");
}

#[test]
fn examples_are_found_as_written() {
    // The extraction itself: prompts, output, comments and exit codes.
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("x.md");
    std::fs::write(
        &doc,
        "text\n\n```sh\ngfxkit list a.so   # which targets\nls\n```\n\n```console\n\
         $ gfxkit target canon gfx90a:xnack-:sramecc+\ngfx90a:sramecc+:xnack-\n\
         $ gfxkit target compat gfx90a:xnack+ gfx90a:xnack-   # exit 1: incompatible\n\
         incompatible: ...\n```\n",
    )
    .unwrap();
    let ex = examples(&doc);
    assert_eq!(ex.len(), 3, "{ex:?}");
    assert_eq!(ex[0].command, "gfxkit list a.so   # which targets");
    assert!(ex[0].shown.is_empty());
    assert_eq!(ex[1].shown, ["gfx90a:sramecc+:xnack-"]);
    let (c, comment) = split_comment(&ex[2].command);
    assert_eq!(c, "gfxkit target compat gfx90a:xnack+ gfx90a:xnack-");
    assert_eq!(stated_exit(comment), 1);
    assert_eq!(stated_exit(" which targets"), 0);
    assert_eq!(stated_exit(" CI: exit 1 naming what is missing"), 0);
    assert_eq!(
        split_comment("gfxkit memmodel 'a # b'").0,
        "gfxkit memmodel 'a # b'"
    );
    assert_eq!(
        rooted("gfxkit list /opt/rocm/lib 'x.tar!/opt/rocm/lib/a.so'"),
        "gfxkit list opt/rocm/lib 'x.tar!/opt/rocm/lib/a.so'"
    );
    assert!(shows(&["a".into(), "...".into(), "c".into()], "a\nb\nc\n").is_ok());
    assert!(shows(&["a".into(), "c ...".into()], "a\nb\nc d e\n").is_ok());
    assert!(shows(&["c e...".into()], "c d e\n").is_err());
    assert_eq!(
        shows(&["c".into(), "a".into()], "a\nb\nc\n"),
        Err("a".into())
    );
    // An indented example is refused.
    std::fs::write(&doc, "text:\n\n    gfxkit list a.so\n").unwrap();
    assert!(std::panic::catch_unwind(|| examples(&doc)).is_err());
}
