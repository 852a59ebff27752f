//! Package members named `PKG!MEMBER` in every command that reads files, and how members
//! without device code are reported: a wheel holding a clang-19 built HIP library and
//! CPU-only shared libraries, and a tarball holding that wheel (`a.tar!b.whl!c.so`).

mod common;
mod host_fixtures;

use common::json_stdout;
use gfxkit_testkit::{llvm_tool, run_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Built {
    dir: tempfile::TempDir,
    /// The wheel: `gfxt/lib/libt.so` (HIP) and the CPU-only `gfxt/cpu/cpu<N>.so`.
    wheel: PathBuf,
    /// A tarball holding the wheel.
    tar: PathBuf,
    /// A wheel holding only CPU-only libraries.
    cpu_wheel: PathBuf,
    /// A CPU-only library on its own.
    cpu: PathBuf,
}

/// CPU-only members of the wheel.
const CPU_MEMBERS: usize = 12;
/// The HIP library's path inside the wheel.
const HIP: &str = "gfxt/lib/libt.so";

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

const WHEEL_PY: &str = r#"
import zipfile, sys
out = sys.argv[1]
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('gfxt/__init__.py', b'')
    for a in sys.argv[2:]:
        name, path = a.split('=', 1)
        z.write(path, name)
"#;

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let (fdir, so) = host_fixtures::build_shared();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lib = d.join("libt.so");
        std::fs::copy(&so, &lib).unwrap();
        drop(fdir);
        let src = d.join("cpu.c");
        std::fs::write(&src, "int cpu_only(int x) { return x * 3; }\n").unwrap();
        let cpu = d.join("cpu.so");
        run_ok(
            Command::new(llvm_tool("clang"))
                .args(["-shared", "-fPIC", "-fuse-ld=lld"])
                .arg(&src)
                .arg("-o")
                .arg(&cpu),
        );
        std::fs::write(d.join("wheel.py"), WHEEL_PY).unwrap();
        let wheel = d.join("gfxt-1.0-py3-none-linux_x86_64.whl");
        let mut py = Command::new("python3");
        py.arg(d.join("wheel.py"))
            .arg(&wheel)
            .arg(format!("{HIP}={}", lib.display()));
        for i in 0..CPU_MEMBERS {
            py.arg(format!("gfxt/cpu/cpu{i:02}.so={}", cpu.display()));
        }
        run_ok(&mut py);
        let cpu_wheel = d.join("cpuonly-1.0-py3-none-linux_x86_64.whl");
        run_ok(
            Command::new("python3")
                .arg(d.join("wheel.py"))
                .arg(&cpu_wheel)
                .arg(format!("c/a.so={}", cpu.display()))
                .arg(format!("c/b.so={}", cpu.display())),
        );
        let tar = d.join("outer.tar");
        run_ok(
            Command::new("tar")
                .arg("-cf")
                .arg(&tar)
                .arg("-C")
                .arg(d)
                .arg(wheel.file_name().unwrap()),
        );
        Built {
            dir,
            wheel,
            tar,
            cpu_wheel,
            cpu,
        }
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Exit 0, or 1 (a negative answer: the library has a bundle for gfx1030 alone), not 2.
fn ok(out: &Output, what: &str) {
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{what}: exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The file names a command's JSON report gives, from wherever that command puts them.
fn names(cmd: &str, v: &Value) -> Vec<String> {
    let strs = |a: &Value, key: &str| -> Vec<String> {
        a.as_array()
            .unwrap_or_else(|| panic!("{cmd}: no array in {v}"))
            .iter()
            .map(|x| x[key].as_str().unwrap().to_owned())
            .collect()
    };
    match cmd {
        "kernels" => strs(&v["kernels"], "file"),
        "size" => strs(&v["files"], "path"),
        _ => strs(&v["files"], "path"),
    }
}

#[test]
fn member_paths_work_in_every_command() {
    let b = built();
    let members = [
        format!("{}!{HIP}", s(&b.wheel)),
        format!(
            "{}!{}!{HIP}",
            s(&b.tar),
            b.wheel.file_name().unwrap().to_str().unwrap()
        ),
    ];
    for m in &members {
        for args in [
            vec!["list", "--json"],
            vec!["verify", "--json"],
            vec!["select", "--device", "gfx90a:xnack+", "--json"],
            vec!["doctor", "--device", "gfx906", "--json"],
            vec!["size", "--json"],
            vec!["kernels", "--json"],
        ] {
            let mut a = args.clone();
            a.push(m);
            let out = gfxkit(&a);
            ok(&out, &a.join(" "));
            let got = names(args[0], &json_stdout(&out));
            assert!(!got.is_empty(), "{}: nothing reported", a.join(" "));
            for n in got {
                assert_eq!(&n, m, "{}: the result names another file", a.join(" "));
            }
        }
        // Text names the member too.
        for args in [
            vec!["select", "--device", "gfx906"],
            vec!["doctor", "--device", "gfx906"],
        ] {
            let mut a = args.clone();
            a.push(m);
            let out = gfxkit(&a);
            ok(&out, &a.join(" "));
            assert!(
                String::from_utf8_lossy(&out.stdout).contains(m.as_str()),
                "{}: {}",
                a.join(" "),
                String::from_utf8_lossy(&out.stdout)
            );
        }
        // `size --json` also names the member in its bundle rows.
        let v = json_stdout(&gfxkit(&["size", "--json", m]));
        for r in v["bundles"].as_array().unwrap() {
            assert_eq!(r["path"].as_str(), Some(m.as_str()), "{r}");
        }
    }
    // A member that is not in the package is an error naming the package, in every command.
    let missing = format!("{}!gfxt/lib/missing.so", s(&b.wheel));
    for args in [
        vec!["list"],
        vec!["select", "--device", "gfx906"],
        vec!["doctor", "--device", "gfx906"],
        vec!["size"],
        vec!["kernels"],
    ] {
        let mut a = args.clone();
        a.push(&missing);
        let out = gfxkit(&a);
        let err = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", a.join(" "));
        assert!(
            err.contains("gfxt/lib/missing.so") && !err.contains("No such file or directory"),
            "{}: {err}",
            a.join(" ")
        );
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn list_names_members_without_device_code_on_one_line() {
    let b = built();
    let w = s(&b.wheel);
    let cpu: Vec<String> = (0..CPU_MEMBERS)
        .map(|i| format!("gfxt/cpu/cpu{i:02}.so"))
        .collect();
    for args in [vec!["list", w], vec!["list", "-r", w]] {
        let out = gfxkit(&args);
        ok(&out, &args.join(" "));
        let text = stdout(&out);
        assert!(
            text.contains(&format!("{w}!{HIP}: 3 bundles")),
            "{}: {text}",
            args.join(" ")
        );
        // One line for the 12 CPU-only members: the first 8 named, then how many more.
        let want = format!(
            "{w}: 12 members without device code: {} and 4 more\n",
            cpu[..8].join(", ")
        );
        assert!(text.contains(&want), "{}: {text}", args.join(" "));
        assert!(!text.contains("(no offload bundle)"), "{text}");
        assert!(!text.contains("cpu/cpu08.so"), "{text}");
    }
    // JSON keeps every member.
    let v = json_stdout(&gfxkit(&["list", "--json", w]));
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), CPU_MEMBERS + 1, "{v}");
    let empty: Vec<&str> = files
        .iter()
        .filter(|f| f["bundles"].as_array().unwrap().is_empty())
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let want: Vec<String> = cpu.iter().map(|m| format!("{w}!{m}")).collect();
    assert_eq!(empty, want);
    // A package whose members all lack device code: the one line alone.
    let c = s(&b.cpu_wheel);
    let out = gfxkit(&["list", c]);
    ok(&out, "list cpu-only wheel");
    assert_eq!(
        stdout(&out),
        format!("{c}: 2 members without device code: c/a.so, c/b.so\n")
    );
    // An input named by itself (a file, or one member) is listed in full.
    for p in [s(&b.cpu).to_owned(), format!("{w}!gfxt/cpu/cpu03.so")] {
        let out = gfxkit(&["list", &p]);
        ok(&out, &p);
        assert_eq!(
            stdout(&out),
            format!("{p}: 0 bundles, 0 entries, 0 B\n  (no offload bundle)\n")
        );
    }
}

#[test]
fn list_summary_names_inputs_without_device_code() {
    let b = built();
    let w = s(&b.wheel);
    let tree = tempfile::tempdir().unwrap();
    let found = tree.path().join("sub/found.so");
    std::fs::create_dir_all(found.parent().unwrap()).unwrap();
    std::fs::copy(&b.cpu, &found).unwrap();
    std::fs::copy(b.dir.path().join("libt.so"), tree.path().join("libt.so")).unwrap();
    let member = format!("{w}!gfxt/cpu/cpu03.so");
    let args = [
        "list",
        "--summary",
        "--json",
        w,
        s(&b.cpu),
        &member,
        s(&b.cpu_wheel),
        s(tree.path()),
    ];
    let out = gfxkit(&args);
    ok(&out, "list --summary --json");
    let v = json_stdout(&out);
    let got: Vec<&str> = v["without_device_code"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let mut want: Vec<String> = (0..CPU_MEMBERS)
        .map(|i| format!("{w}!gfxt/cpu/cpu{i:02}.so"))
        .collect();
    want.push(s(&b.cpu).to_owned());
    want.push(member.clone());
    want.push(format!("{}!c/a.so", s(&b.cpu_wheel)));
    want.push(format!("{}!c/b.so", s(&b.cpu_wheel)));
    want.push(s(&found).to_owned());
    let mut got_sorted = got.clone();
    got_sorted.sort();
    want.sort();
    assert_eq!(got_sorted, want);
    // The packages with device code are still summarised.
    let names: Vec<&str> = v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&w), "{names:?}");
    // Text: one line naming them, shortened.
    let out = gfxkit(
        &args
            .iter()
            .filter(|a| **a != "--json")
            .copied()
            .collect::<Vec<_>>(),
    );
    ok(&out, "list --summary");
    let text = stdout(&out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("without device code"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with(&format!("without device code ({}): ", want.len()))
            && lines[0].ends_with(&format!(" and {} more", want.len() - 8)),
        "{text}"
    );
}

/// Runs `gfxkit ARGS` on a terminal (a pseudo-terminal by `script`), stdout to `out`: what the
/// terminal showed (stderr).
fn on_terminal(args: &[&str], delay_ms: &str, out: &Path) -> String {
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    let cmd = format!(
        "{} {} > {}",
        quote(env!("CARGO_BIN_EXE_gfxkit")),
        args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
        quote(s(out))
    );
    let typescript = out.with_extension("typescript");
    let o = Command::new("script")
        .args(["-q", "-c", &cmd])
        .arg(&typescript)
        .env("GFXKIT_PROGRESS_DELAY_MS", delay_ms)
        .output()
        .expect("run script (util-linux)");
    assert!(o.status.success(), "{cmd}: {o:?}");
    let shown = std::fs::read(&typescript).unwrap();
    String::from_utf8_lossy(&shown).into_owned()
}

#[test]
fn progress_shows_on_a_terminal_only_and_only_when_reading_takes_long() {
    let b = built();
    let w = s(&b.wheel);
    let member = format!(
        "{}!{}!{HIP}",
        s(&b.tar),
        b.wheel.file_name().unwrap().to_str().unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let cmds: Vec<Vec<&str>> = vec![
        vec!["list", w],
        vec!["list", "--json", w],
        vec!["verify", w],
        vec!["size", w],
        vec!["select", "--device", "gfx906", &member],
        vec!["kernels", &member],
    ];
    for (i, args) in cmds.iter().enumerate() {
        // Not a terminal: nothing on stderr, even when progress would show at once.
        let o = Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(args)
            .env("GFXKIT_PROGRESS_DELAY_MS", "0")
            .output()
            .unwrap();
        ok(&o, &args.join(" "));
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            "",
            "{}: stderr is not a terminal",
            args.join(" ")
        );
        let plain = o.stdout;
        // A terminal, reading that takes longer than the delay (0 ms): a spinner naming what
        // is read, cleared before the results, which stdout holds unchanged.
        let out = dir.path().join(format!("{i}.out"));
        let shown = on_terminal(args, "0", &out);
        let file = args.last().unwrap().split('!').next().unwrap();
        let base = Path::new(file).file_name().unwrap().to_str().unwrap();
        assert!(
            shown.contains(&format!("reading {base}")),
            "{}: no progress on the terminal: {shown:?}",
            args.join(" ")
        );
        assert_eq!(std::fs::read(&out).unwrap(), plain, "{}", args.join(" "));
        // Reading faster than the delay shows nothing.
        let shown = on_terminal(args, "60000", &out);
        assert!(
            !shown.contains("reading"),
            "{}: progress before the delay: {shown:?}",
            args.join(" ")
        );
    }
}

#[test]
fn verify_of_a_package_names_members_without_device_code_and_passes() {
    let b = built();
    let w = s(&b.wheel);
    for args in [vec!["verify", w], vec!["verify", "-r", w]] {
        let out = gfxkit(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}{}",
            args.join(" "),
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = stdout(&out);
        assert!(
            text.contains(&format!("{w}!{HIP}: ok (3 bundles")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "{w}: 12 members without device code: gfxt/cpu/cpu00.so, "
            )) && text.contains(" and 4 more\n"),
            "{text}"
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
    let v = json_stdout(&gfxkit(&["verify", "--json", w]));
    assert_eq!(v["files"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        v["without_device_code"].as_array().unwrap().len(),
        CPU_MEMBERS,
        "{v}"
    );
    // A package none of whose members holds device code, and a CPU-only member named by
    // itself, still fail as a file without a bundle does.
    for p in [s(&b.cpu_wheel).to_owned(), format!("{w}!gfxt/cpu/cpu00.so")] {
        let out = gfxkit(&["verify", &p]);
        assert_eq!(out.status.code(), Some(2), "{p}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("no offload bundle"),
            "{p}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
