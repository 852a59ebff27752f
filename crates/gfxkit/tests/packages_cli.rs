//! Packages read in place: wheels, conda packages (`.conda`, `.tar.bz2`), tarballs, a `.deb`
//! and a nested archive around a clang-19 built shared library, listed as `package!member` and
//! compared with listing the library itself; damaged packages; a pruned wheel that pip
//! installs.

mod common;
mod host_fixtures;

use common::json_stdout;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Built {
    dir: tempfile::TempDir,
    lib: PathBuf,
}

fn gfxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gfxkit"))
        .args(args)
        .output()
        .expect("run gfxkit")
}

/// `gfxkit prune --keep KEEP SRC -o DST`, which must succeed.
fn pruned(keep: &str, src: &Path, dst: &Path) -> Output {
    let out = gfxkit(&[
        "prune",
        "--keep",
        keep,
        src.to_str().unwrap(),
        "-o",
        dst.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const WHEEL_PY: &str = r#"
import zipfile, hashlib, base64, sys
def h(b): return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
out, lib, method = sys.argv[1], sys.argv[2], sys.argv[3]
files = {
  'gfxt/__init__.py': b'import os\nHERE = os.path.dirname(__file__)\n',
  'gfxt/lib/libt.so': open(lib, 'rb').read(),
  'gfxt-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: gfxt\nVersion: 1.0\n',
  'gfxt-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n',
}
rec = ''.join(f'{n},{h(b)},{len(b)}\n' for n, b in files.items()) + 'gfxt-1.0.dist-info/RECORD,,\n'
m = zipfile.ZIP_STORED if method == 'stored' else zipfile.ZIP_DEFLATED
with zipfile.ZipFile(out, 'w', m) as z:
    for n, b in files.items(): z.writestr(n, b)
    z.writestr('gfxt-1.0.dist-info/RECORD', rec)
"#;

const CONDA_PY: &str = r#"
import zipfile, sys, subprocess, json, hashlib, os
out, lib = sys.argv[1], sys.argv[2]
os.makedirs('conda/pkg/lib', exist_ok=True); os.makedirs('conda/info/info', exist_ok=True)
data = open(lib, 'rb').read()
open('conda/pkg/lib/libt.so', 'wb').write(data)
paths = {'paths': [{'_path': 'lib/libt.so', 'path_type': 'hardlink', 'sha256': hashlib.sha256(data).hexdigest(), 'size_in_bytes': len(data)}], 'paths_version': 1}
open('conda/info/info/paths.json', 'w').write(json.dumps(paths, indent=2, sort_keys=True))
subprocess.check_call(['tar', '--zstd', '-cf', 'conda/pkg-gfxt-1.0-0.tar.zst', '-C', 'conda/pkg', 'lib'])
subprocess.check_call(['tar', '--zstd', '-cf', 'conda/info-gfxt-1.0-0.tar.zst', '-C', 'conda/info', 'info'])
with zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as z:
    z.writestr('metadata.json', '{"conda_pkg_format_version": 2}')
    z.write('conda/info-gfxt-1.0-0.tar.zst', 'info-gfxt-1.0-0.tar.zst')
    z.write('conda/pkg-gfxt-1.0-0.tar.zst', 'pkg-gfxt-1.0-0.tar.zst')
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
        std::fs::write(d.join("wheel.py"), WHEEL_PY).unwrap();
        std::fs::write(d.join("conda.py"), CONDA_PY).unwrap();
        std::fs::create_dir_all(d.join("rpmtop/SPECS")).unwrap();
        std::fs::write(
            d.join("rpmtop/SPECS/t.spec"),
            format!(
                "Name: gfxt\nVersion: 1.0\nRelease: 1\nSummary: t\nLicense: MIT\n\
                 BuildArch: x86_64\n%description\nt\n%install\n\
                 mkdir -p %{{buildroot}}/usr/lib64\ncp {} %{{buildroot}}/usr/lib64/\n\
                 %files\n/usr/lib64/libt.so\n",
                lib.display()
            ),
        )
        .unwrap();
        sh(
            d,
            "python3 wheel.py gfxt-1.0-py3-none-linux_x86_64.whl libt.so deflated
             python3 wheel.py stored.whl libt.so stored
             python3 conda.py gfxt-1.0-0.conda libt.so
             mkdir -p root/usr/lib && cp libt.so root/usr/lib/ && echo 'x = 1' > root/usr/lib/a.py
             tar -cf t.tar -C root usr
             tar -czf t.tar.gz -C root usr
             tar -cJf t.tar.xz -C root usr
             tar --zstd -cf t.tar.zst -C root usr
             tar -cjf t.tar.bz2 -C root usr
             mkdir -p deb/DEBIAN && cp -r root/usr deb/
             printf 'Package: gfxt\\nVersion: 1.0\\nArchitecture: amd64\\nMaintainer: t <t@t>\\nDescription: t\\n' > deb/DEBIAN/control
             dpkg-deb -Zxz --build deb gfxt_1.0_amd64.deb >/dev/null
             python3 -c \"import zipfile; z=zipfile.ZipFile('nested.zip','w'); z.write('t.tar.gz','inner/t.tar.gz'); z.close()\"
             python3 -c \"import zipfile; z=zipfile.ZipFile('empty.whl','w'); z.writestr('a/__init__.py','x=1'); z.close()\"
             top=$PWD/rpmtop
             for c in w6.xzdio w19.zstdio; do
               rpmbuild -bb --define \"_topdir $top\" --define \"_binary_payload $c\" --define '__strip /bin/true' --define '__os_install_post %{nil}' --define 'debug_package %{nil}' $top/SPECS/t.spec >/dev/null 2>&1
               mv $top/RPMS/x86_64/gfxt-1.0-1.x86_64.rpm gfxt-$c.rpm
             done",
        );
        Built { dir, lib }
    })
}

/// The entries of every bundle of each listed file, keyed by path.
fn entries(json: &Value) -> Vec<(String, Vec<Value>)> {
    json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let mut bundles = f["bundles"].clone();
            (f["path"].as_str().unwrap().to_owned(), {
                bundles.as_array_mut().unwrap().iter_mut().for_each(|b| {
                    b.as_object_mut().unwrap().remove("member");
                });
                bundles.as_array().unwrap().clone()
            })
        })
        .collect()
}

#[test]
fn packages_list_in_place_like_their_members() {
    let b = built();
    let d = b.dir.path();
    let lib = json_stdout(&gfxkit(&["list", "--json", b.lib.to_str().unwrap()]));
    let want = entries(&lib).remove(0).1;
    assert!(!want.is_empty());
    for (pkg, member) in [
        ("gfxt-1.0-py3-none-linux_x86_64.whl", "gfxt/lib/libt.so"),
        ("stored.whl", "gfxt/lib/libt.so"),
        ("gfxt-1.0-0.conda", "pkg-gfxt-1.0-0.tar.zst!lib/libt.so"),
        ("t.tar", "usr/lib/libt.so"),
        ("t.tar.gz", "usr/lib/libt.so"),
        ("t.tar.xz", "usr/lib/libt.so"),
        ("t.tar.zst", "usr/lib/libt.so"),
        ("t.tar.bz2", "usr/lib/libt.so"),
        ("gfxt_1.0_amd64.deb", "data.tar.xz!usr/lib/libt.so"),
        ("nested.zip", "inner/t.tar.gz!usr/lib/libt.so"),
        ("gfxt-w6.xzdio.rpm", "usr/lib64/libt.so"),
        ("gfxt-w19.zstdio.rpm", "usr/lib64/libt.so"),
    ] {
        let p = d.join(pkg);
        let out = gfxkit(&["list", "--json", p.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{pkg}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = entries(&json_stdout(&out));
        assert_eq!(got.len(), 1, "{pkg}: {got:?}");
        assert_eq!(got[0].0, format!("{}!{member}", p.display()), "{pkg}");
        assert_eq!(got[0].1, want, "{pkg}: entries differ from the library's");
        // The member can be named directly.
        let out = gfxkit(&["verify", &got[0].0]);
        assert!(
            out.status.success(),
            "{pkg}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // -r over a directory of packages finds every one.
    let out = gfxkit(&["list", "-r", "--json", d.to_str().unwrap()]);
    let n = entries(&json_stdout(&out))
        .iter()
        .filter(|(p, _)| p.contains('!'))
        .count();
    assert!(n >= 12, "{n} package members found with -r");
}

#[test]
fn package_without_device_code_says_so() {
    let p = built().dir.path().join("empty.whl");
    let out = gfxkit(&["list", p.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no device code in this package"));
    let out = gfxkit(&["doctor", "--device", "gfx90a", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no device code in this package"));
}

#[test]
fn damaged_packages_name_the_member() {
    let d = built().dir.path();
    let good = std::fs::read(d.join("stored.whl")).unwrap();
    // Truncated: the central directory is gone.
    let t = d.join("truncated.whl");
    std::fs::write(&t, &good[..good.len() / 2]).unwrap();
    let out = gfxkit(&["list", t.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated.whl"));
    // A byte of the stored library flipped: the CRC no longer matches.
    let lib = std::fs::read(&built().lib).unwrap();
    let at = good
        .windows(64)
        .position(|w| w == &lib[..64])
        .expect("stored library in the wheel")
        + lib.len() / 2;
    let mut bad = good.clone();
    bad[at] ^= 0xff;
    let c = d.join("crc.whl");
    std::fs::write(&c, &bad).unwrap();
    let out = gfxkit(&["list", c.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("crc.whl!gfxt/lib/libt.so") && err.contains("checksum"),
        "{err}"
    );
    // A truncated tarball.
    let tz = std::fs::read(d.join("t.tar.gz")).unwrap();
    let tt = d.join("cut.tar.gz");
    std::fs::write(&tt, &tz[..tz.len() / 2]).unwrap();
    let out = gfxkit(&["list", tt.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut.tar.gz!usr/lib/libt.so") || err.contains("cut.tar.gz"),
        "{err}"
    );
}

#[test]
fn pruned_wheel_installs_with_only_kept_targets() {
    let d = built().dir.path();
    let src = d.join("gfxt-1.0-py3-none-linux_x86_64.whl");
    let outdir = d.join("pruned");
    std::fs::create_dir_all(&outdir).unwrap();
    let dst = outdir.join("gfxt-1.0-py3-none-linux_x86_64.whl");
    pruned("gfx90a", &src, &dst);
    // Only gfx90a targets are left.
    let listed = json_stdout(&gfxkit(&["list", "--json", dst.to_str().unwrap()]));
    let ids: Vec<String> = listed["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["entries"].as_array().unwrap().clone())
        .filter_map(|e| e["target_id"].as_str().map(str::to_owned))
        .collect();
    assert!(
        !ids.is_empty() && ids.iter().all(|t| t.starts_with("gfx90a")),
        "{ids:?}"
    );
    // zipfile's own test, RECORD entry by entry, other members raw-identical, pip install.
    std::fs::write(
        d.join("check.py"),
        r#"
import zipfile, hashlib, base64, sys, csv, io
src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2])
assert dst.testzip() is None
assert [i.filename for i in src.infolist()] == [i.filename for i in dst.infolist()]
rec = dst.read('gfxt-1.0.dist-info/RECORD').decode()
rows = list(csv.reader(io.StringIO(rec)))
assert len(rows) == len(dst.infolist())
for name, h, size in rows:
    if not h: continue
    b = dst.read(name)
    assert h == 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode(), name
    assert int(size) == len(b), name
for a, b in zip(src.infolist(), dst.infolist()):
    if a.filename in ('gfxt/lib/libt.so', 'gfxt-1.0.dist-info/RECORD'): continue
    assert (a.CRC, a.compress_type, a.compress_size) == (b.CRC, b.compress_type, b.compress_size), a.filename
    assert src.open(a).read() == dst.open(b).read()
print('ok')
"#,
    )
    .unwrap();
    sh(
        d,
        &format!(
            "python3 check.py {} {}
             python3 -m zipfile -t {}
             python3 -m venv venv
             venv/bin/pip install -q --no-index --no-deps {}
             venv/bin/python -c 'import gfxt, os; assert os.path.exists(gfxt.HERE + \"/lib/libt.so\")'",
            src.display(),
            dst.display(),
            dst.display(),
            dst.display()
        ),
    );
    // The summary of the installed environment shows the kept targets only.
    let out = gfxkit(&[
        "list",
        "--summary",
        "--json",
        d.join("venv").to_str().unwrap(),
    ]);
    let s = json_stdout(&out);
    assert_eq!(s["packages"][0]["name"], "gfxt 1.0");
    assert_eq!(
        s["packages"][0]["architectures"],
        serde_json::json!(["gfx90a"])
    );
    // -o is required.
    let out = gfxkit(&["prune", "--keep", "gfx90a", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    // recompress --in-place: through a verified temporary file, RECORD updated again.
    let inplace = outdir.join("inplace.whl");
    std::fs::copy(&dst, &inplace).unwrap();
    let out = gfxkit(&["recompress", "--in-place", inplace.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = json_stdout(&gfxkit(&["list", "--json", inplace.to_str().unwrap()]));
    let formats: Vec<&str> = listed["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["format"].as_str().unwrap())
        .collect();
    assert!(
        !formats.is_empty() && formats.iter().all(|f| *f == "ccob"),
        "{formats:?}"
    );
    sh(
        d,
        &format!("python3 check.py {} {}", dst.display(), inplace.display()),
    );
    let leftovers: Vec<_> = std::fs::read_dir(&outdir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".gfxkit"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn pruned_conda_package_updates_paths_json() {
    let d = built().dir.path();
    let src = d.join("gfxt-1.0-0.conda");
    let dst = d.join("pruned-gfxt-1.0-0.conda");
    pruned("gfx1030", &src, &dst);
    std::fs::write(
        d.join("conda_check.py"),
        r#"
import zipfile, tarfile, io, json, hashlib, sys, subprocess
z = zipfile.ZipFile(sys.argv[1])
def tar(n):
    raw = subprocess.run(['zstd', '-dc'], input=z.read(n), capture_output=True, check=True).stdout
    return tarfile.open(fileobj=io.BytesIO(raw))
lib = tar('pkg-gfxt-1.0-0.tar.zst').extractfile('lib/libt.so').read()
paths = json.load(tar('info-gfxt-1.0-0.tar.zst').extractfile('info/paths.json'))
p = paths['paths'][0]
assert p['sha256'] == hashlib.sha256(lib).hexdigest() and p['size_in_bytes'] == len(lib), p
print('ok')
"#,
    )
    .unwrap();
    sh(d, &format!("python3 conda_check.py {}", dst.display()));
    let listed = json_stdout(&gfxkit(&["list", "--json", dst.to_str().unwrap()]));
    let ids: Vec<String> = listed["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["entries"].as_array().unwrap().clone())
        .filter_map(|e| e["target_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids, ["gfx1030"]);
    // Debian packages are refused with the reason.
    let deb = d.join("gfxt_1.0_amd64.deb");
    let out = gfxkit(&[
        "prune",
        "--keep",
        "gfx1030",
        deb.to_str().unwrap(),
        "-o",
        "/tmp/x.deb",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dpkg-deb"));
}

#[test]
fn a_package_prune_that_would_leave_no_device_code_is_refused() {
    let d = built().dir.path();
    let src = d.join("gfxt-1.0-py3-none-linux_x86_64.whl");
    let outdir = tempfile::tempdir().unwrap();
    let dst = outdir.path().join("gfxt-1.0-py3-none-linux_x86_64.whl");
    let out = gfxkit(&[
        "prune",
        "--keep",
        "gfx1151",
        src.to_str().unwrap(),
        "-o",
        dst.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--keep gfx1151 would leave no device code"),
        "{err}"
    );
    assert!(!dst.exists());
    assert_eq!(std::fs::read_dir(outdir.path()).unwrap().count(), 0);
    // A second target that is present: written, and the absent one named.
    let out = pruned("gfx1151,gfx90a", &src, &dst);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--keep gfx1151 matches no device code of") && err.contains(".whl"),
        "{err}"
    );
}

/// A wheel laid out as aiter's: code objects in directories named for their processor (one
/// holding a CSV map too) beside a host library.
const PER_ARCH_WHEEL_PY: &str = r#"
import zipfile, hashlib, base64, sys
def h(b): return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
out, lib, co90a, co1030 = sys.argv[1:5]
files = {
  'gfxt/__init__.py': b'x = 1\n',
  'gfxt/lib/libt.so': open(lib, 'rb').read(),
  'gfxt/hsa/gfx90a/k.co': open(co90a, 'rb').read(),
  'gfxt/hsa/gfx1030/k.co': open(co1030, 'rb').read(),
  'gfxt/hsa/gfx1030/k.csv': b'knl_name,co_name\nk,k.co\n',
  'gfxt-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: gfxt\nVersion: 1.0\n',
  'gfxt-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n',
}
rec = ''.join(f'{n},{h(b)},{len(b)}\n' for n, b in files.items()) + 'gfxt-1.0.dist-info/RECORD,,\n'
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    for n, b in files.items():
        if n.startswith('gfxt/hsa/gfx1030/k.co'): z.writestr('gfxt/hsa/gfx1030/', b'')
        z.writestr(n, b)
    z.writestr('gfxt-1.0.dist-info/RECORD', rec)
"#;

/// One code object per processor of the built library, from its own bundles, written under
/// `dir/objs`: a function from a processor to its code object's path.
/// The `fields` of each file a prune report lists, as text (a missing field is empty).
fn report_files(report: &Value, fields: &[&str]) -> Vec<Vec<String>> {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            fields
                .iter()
                .map(|k| match &f[*k] {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    v => v.to_string(),
                })
                .collect()
        })
        .collect()
}

fn code_objects(dir: &Path) -> impl Fn(&str) -> String {
    let got = json_stdout(&gfxkit(&[
        "extract",
        "--json",
        built().lib.to_str().unwrap(),
        "-o",
        dir.join("objs").to_str().unwrap(),
    ]));
    move |processor: &str| -> String {
        got["written"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| {
                w["id"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("--{processor}"))
            })
            .map(|w| w["path"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("no {processor} code object in {got}"))
    }
}

#[test]
fn a_pruned_wheel_leaves_out_what_the_prune_of_its_tree_drops() {
    let built = built();
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let code_object = code_objects(d);
    std::fs::write(d.join("per_arch.py"), PER_ARCH_WHEEL_PY).unwrap();
    sh(
        d,
        &format!(
            "python3 per_arch.py src.whl {} {} {}",
            built.lib.display(),
            code_object("gfx90a"),
            code_object("gfx1030")
        ),
    );
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gfxkit"))
            .args(args)
            .current_dir(d)
            .output()
            .expect("run gfxkit")
    };
    let report = json_stdout(&run(&[
        "prune", "--keep", "gfx90a", "src.whl", "-o", "dst.whl", "--json",
    ]));
    let files = report_files(&report, &["path", "action"]);
    let want = [
        ("gfxt/hsa/gfx1030", "dropped"),
        ("gfxt/hsa/gfx1030/k.co", "dropped"),
        ("gfxt/hsa/gfx1030/k.csv", "dropped"),
        ("gfxt/hsa/gfx90a/k.co", "kept"),
    ];
    let want: Vec<Vec<String>> = want
        .iter()
        .map(|(p, a)| vec![format!("src.whl!{p}"), a.to_string()])
        .collect();
    assert_eq!(files, want, "{report}");
    let members = report["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "{report}");
    assert_eq!(members[0]["path"], "src.whl!gfxt/lib/libt.so");

    // The prune of the unpacked wheel keeps the same files with the same bytes, its RECORD
    // too: the pruned wheel's RECORD lists exactly its members with their hashes.
    sh(
        d,
        "mkdir tree && cd tree && python3 -m zipfile -e ../src.whl .",
    );
    let out = run(&["prune", "--keep", "gfx90a", "tree", "-o", "pruned"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        d.join("same.py"),
        r#"
import zipfile, hashlib, base64, csv, io, os
z = zipfile.ZipFile('dst.whl')
assert z.testzip() is None
names = sorted(n for n in z.namelist() if not n.endswith('/'))
tree = sorted(os.path.relpath(os.path.join(r, f), 'pruned') for r, _, fs in os.walk('pruned') for f in fs)
assert names == tree, (names, tree)
assert not any('gfx1030' in n for n in z.namelist()), z.namelist()
for n in names:
    assert z.read(n) == open(os.path.join('pruned', n), 'rb').read(), n
rows = list(csv.reader(io.StringIO(z.read('gfxt-1.0.dist-info/RECORD').decode())))
assert sorted(r[0] for r in rows) == names, rows
for name, h, size in rows:
    if not h: continue
    b = z.read(name)
    assert h == 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode(), name
    assert int(size) == len(b), name
print('ok')
"#,
    )
    .unwrap();
    sh(d, "python3 same.py");
}

#[test]
fn the_prune_of_an_installed_conda_environment_keeps_its_records_true() {
    // An environment as conda installs a package: its files under the prefix and
    // `conda-meta/<name>.json` listing each with its SHA-256 and size.
    let built = built();
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let path_of = code_objects(d);
    let code_object = |processor: &str| std::fs::read(path_of(processor)).unwrap();
    let env = d.join("env");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("lib/libt.so", std::fs::read(&built.lib).unwrap()),
        ("lib/hsa/gfx90a/k.co", code_object("gfx90a")),
        ("lib/hsa/gfx1030/k.co", code_object("gfx1030")),
        ("share/gfxt/README", b"gfxt\n".to_vec()),
    ];
    let sha = gfxkit_package::record::sha256_hex;
    let mut paths = Vec::new();
    for (rel, bytes) in &files {
        let at = env.join(rel);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(&at, bytes).unwrap();
        paths.push(serde_json::json!({
            "_path": rel, "path_type": "hardlink", "sha256": sha(bytes),
            "size_in_bytes": bytes.len(),
        }));
    }
    let record = serde_json::json!({
        "name": "gfxt", "version": "1.0", "build": "0",
        "files": files.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        "paths_data": {"paths": paths, "paths_version": 1},
    });
    std::fs::create_dir_all(env.join("conda-meta")).unwrap();
    let meta = "conda-meta/gfxt-1.0-0.json";
    std::fs::write(env.join(meta), serde_json::to_vec_pretty(&record).unwrap()).unwrap();

    let out_dir = d.join("pruned");
    let report = json_stdout(&gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        env.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--json",
    ]));
    let action = |path: &str| {
        report["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .map(|f| f["action"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        action("lib/hsa/gfx1030").as_deref(),
        Some("dropped"),
        "{report}"
    );
    assert_eq!(
        action("lib/libt.so").as_deref(),
        Some("rewritten"),
        "{report}"
    );
    assert_eq!(action(meta).as_deref(), Some("rewritten"), "{report}");
    // The record lists exactly the files left, each with its hash and size.
    let now: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join(meta)).unwrap()).unwrap();
    let listed: Vec<&str> = now["paths_data"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["_path"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["lib/libt.so", "lib/hsa/gfx90a/k.co", "share/gfxt/README"]
    );
    assert_eq!(now["files"], serde_json::json!(listed));
    for p in now["paths_data"]["paths"].as_array().unwrap() {
        let bytes = std::fs::read(out_dir.join(p["_path"].as_str().unwrap())).unwrap();
        assert_eq!(p["sha256"], sha(&bytes), "{p}");
        assert_eq!(p["size_in_bytes"], bytes.len(), "{p}");
    }
    let before = std::fs::read(&built.lib).unwrap();
    let after = std::fs::read(out_dir.join("lib/libt.so")).unwrap();
    assert_ne!(after, before);
    // A dry run tells the same: every file's action and size after, the record's included.
    let dry = json_stdout(&gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        env.to_str().unwrap(),
        "--dry-run",
        "--json",
    ]));
    let fields = ["path", "action", "size_after", "note"];
    let files = report_files(&dry, &fields);
    assert_eq!(files, report_files(&report, &fields));
    assert_eq!(dry["size_after"], report["size_after"]);
    let written = std::fs::metadata(out_dir.join(meta)).unwrap().len();
    assert!(files.contains(&vec![
        meta.to_owned(),
        "rewritten".to_owned(),
        written.to_string(),
        "entries updated: 1 files rewritten, 1 left out".to_owned(),
    ]));
}

#[test]
fn a_package_that_cannot_be_written_again_is_refused_before_its_members_are_read() {
    // A .deb whose payload is damaged: the refusal names the reason and the tool to use, not
    // the damage, which a prune would otherwise meet first reading the members.
    let d = built().dir.path();
    let mut deb = std::fs::read(d.join("gfxt_1.0_amd64.deb")).unwrap();
    let n = deb.len();
    for b in &mut deb[n - 600..n - 100] {
        *b ^= 0x5a;
    }
    let out = tempfile::tempdir().unwrap();
    let damaged = out.path().join("gfxt_1.0_amd64.deb");
    std::fs::write(&damaged, &deb).unwrap();
    let listed = gfxkit(&["list", damaged.to_str().unwrap()]);
    assert_ne!(
        listed.status.code(),
        Some(0),
        "the damage is seen by a read"
    );
    let o = gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        damaged.to_str().unwrap(),
        "-o",
        out.path().join("x.deb").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("dpkg-deb"), "{err}");
    assert!(!out.path().join("x.deb").exists());
}

/// The targets of every bundle entry `gfxkit list --json` finds in `path`, sorted, without
/// repeats (the host entry left out).
fn listed_targets(path: &Path) -> Vec<String> {
    let listed = json_stdout(&gfxkit(&["list", "-r", "--json", path.to_str().unwrap()]));
    let mut ids: Vec<String> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["bundles"].as_array().unwrap().clone())
        .flat_map(|b| b["entries"].as_array().unwrap().clone())
        .filter_map(|e| e["target_id"].as_str().map(str::to_owned))
        .filter(|t| t != "host")
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// A wheel inside a tarball, a tarball inside a zip, and a wheel in a directory are pruned
/// as packages of their own (they were copied as they were, while `list` and `size` read
/// them): what is left lists the kept targets only, the inner wheel's `RECORD` is true, the
/// report counts the members inside once, and a prune that would empty them is refused.
#[test]
fn packages_inside_packages_and_trees_are_pruned_as_their_own() {
    let d = built().dir.path();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let wheel = "gfxt-1.0-py3-none-linux_x86_64.whl";
    sh(
        w,
        &format!(
            "mkdir -p house && cp {d}/{wheel} house/ && echo notes > house/README
             tar -cf outer.tar -C house {wheel} README
             cp {d}/nested.zip nested.zip",
            d = d.display()
        ),
    );
    let before = listed_targets(&d.join(wheel));
    assert!(before.len() > 1 && before.iter().any(|t| t.starts_with("gfx90a")));
    assert_eq!(listed_targets(&w.join("outer.tar")), before);
    for (src, dst) in [
        ("outer.tar", "out.tar"),
        ("nested.zip", "out.zip"),
        ("house", "house-out"),
    ] {
        let (src, dst) = (w.join(src), w.join(dst));
        let out = pruned("gfx90a", &src, &dst);
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("matches no device code"), "{err}");
        let after = listed_targets(&dst);
        assert!(
            !after.is_empty() && after.iter().all(|t| t.starts_with("gfx90a")),
            "{}: {after:?}\n{text}",
            dst.display()
        );
        if src.ends_with("outer.tar") {
            // The wheel inside and its library, counted once.
            assert!(text.contains("outer.tar: 1 member rewritten"), "{text}");
            assert!(
                text.contains(&format!("outer.tar!{wheel}!gfxt/lib/libt.so")),
                "{text}"
            );
        }
    }
    // The wheel taken out of the tarball, and the one of the directory: zip's own test, and
    // every RECORD row true.
    sh(
        w,
        &format!(
            "mkdir -p x && tar -xf out.tar -C x
             cmp house/README x/README
             for f in x/{wheel} house-out/{wheel}; do
             python3 - \"$f\" <<'PY'
import zipfile, hashlib, base64, sys, csv, io
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
rows = list(csv.reader(io.StringIO(z.read('gfxt-1.0.dist-info/RECORD').decode())))
assert len(rows) == len(z.infolist())
for name, h, size in rows:
    if not h: continue
    b = z.read(name)
    assert h == 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode(), name
    assert int(size) == len(b), name
PY
             done"
        ),
    );
    // The dry run of the directory names the wheel as a package rewritten, with its size.
    let dry = json_stdout(&gfxkit(&[
        "prune",
        "--keep",
        "gfx90a",
        "--dry-run",
        "--json",
        w.join("house").to_str().unwrap(),
        "-o",
        w.join("house-dry").to_str().unwrap(),
    ]));
    let size = std::fs::metadata(w.join("house-out").join(wheel))
        .unwrap()
        .len();
    assert_eq!(
        report_files(&dry, &["path", "kind", "action", "size_after"])
            .into_iter()
            .filter(|f| f[0] == wheel)
            .collect::<Vec<_>>(),
        vec![vec![
            wheel.to_owned(),
            "package".to_owned(),
            "rewritten".to_owned(),
            size.to_string()
        ]]
    );
    // Nested deeper than a walk reads (a wheel six zips down): copied as it is, nothing said
    // to match no device code, and the read-back does not fail on what it cannot enter.
    sh(
        w,
        &format!(
            "python3 - <<'PY'
import io, zipfile
data = open('house/{wheel}', 'rb').read()
for level in range(6):
    b = io.BytesIO()
    with zipfile.ZipFile(b, 'w') as z:
        z.writestr(f'level{{level}}.zip' if level else '{wheel}', data)
    data = b.getvalue()
open('deep.zip', 'wb').write(data)
PY"
        ),
    );
    let out = pruned("gfx90a", &w.join("deep.zip"), &w.join("deep-out.zip"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("matches no device code"), "{err}");
    sh(
        w,
        "python3 - <<'PY'
import io, zipfile
a, b = open('deep.zip', 'rb').read(), open('deep-out.zip', 'rb').read()
for level in range(6):
    za, zb = zipfile.ZipFile(io.BytesIO(a)), zipfile.ZipFile(io.BytesIO(b))
    assert za.namelist() == zb.namelist()
    a, b = za.read(za.namelist()[0]), zb.read(zb.namelist()[0])
assert a == b
PY",
    );
    // Emptying the wheel inside empties the tarball: refused, nothing written.
    let out = gfxkit(&[
        "prune",
        "--keep",
        "gfx1151",
        w.join("outer.tar").to_str().unwrap(),
        "-o",
        w.join("empty.tar").to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!w.join("empty.tar").exists());
}
