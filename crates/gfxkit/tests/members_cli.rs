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
