//! The ROCm release installed on a machine (`--rocm auto`), read from where it is written, under
//! a root directory (`/` normally; a machine description in tests), as [`crate::kfd`] reads the
//! GPUs. In order, the first found wins:
//!
//! 1. `<ROCM_PATH or /opt/rocm>/.info/version` (`6.4.3-128`);
//! 2. the newest `/opt/rocm-<version>/.info/version`;
//! 3. the version in the file name of `libamdhip64.so.<major>.<minor>.<MMmmpp>` under
//!    `<ROCM_PATH or /opt/rocm>/lib` (`libamdhip64.so.6.4.60403` is 6.4.3);
//! 4. Debian's package database (`/var/lib/dpkg/status`): `rocm-core`, else `libamdhip64-<N>`
//!    installed (`5.7.1-3` is 5.7.1);
//! 5. the Python environment of `VIRTUAL_ENV`: TheRock's `rocm-sdk-core` wheel
//!    (`rocm_sdk_core-<version>.dist-info`), else PyPI's `torch` built for ROCm
//!    (`torch/version.py`: `hip = '6.4.43484-...'`, the release 6.4).

use gfxkit_inventory::release::RocmRelease;
use gfxkit_spec::rocm::RocmVersion;
use std::path::{Path, PathBuf};

/// `path` (absolute, as on the machine) under `root`.
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The release read from the file at `path` under `root`, named as on the machine.
fn version_file(root: &Path, path: &Path) -> Option<RocmRelease> {
    let text = std::fs::read_to_string(under(root, path)).ok()?;
    let v = RocmVersion::parse(text.lines().next()?).ok()?;
    Some(RocmRelease::new(v, path.display().to_string()))
}

/// The version in a `libamdhip64.so.6.4.60403` file name: the third number is
/// `major * 10000 + minor * 100 + patch` since ROCm 6 (HIP's own build number before it, where
/// the release is `major.minor` only).
fn hip_library_version(name: &str) -> Option<RocmVersion> {
    let rest = name.strip_prefix("libamdhip64.so.")?;
    let nums: Vec<u32> = rest
        .split(['.', '-'])
        .map_while(|p| p.parse().ok())
        .collect();
    match nums[..] {
        [major, minor, code, ..] => {
            let (major, minor) = (u16::try_from(major).ok()?, u16::try_from(minor).ok()?);
            let patch = (code / 10000 == u32::from(major)
                && (code / 100) % 100 == u32::from(minor))
            .then(|| u16::try_from(code % 100).ok())
            .flatten();
            Some(RocmVersion {
                major,
                minor,
                patch,
            })
        }
        _ => None,
    }
}

/// Debian's package database: the version of `rocm-core`, else of an installed
/// `libamdhip64-<N>`.
fn dpkg(root: &Path) -> Option<RocmRelease> {
    let status = Path::new("/var/lib/dpkg/status");
    let text = std::fs::read_to_string(under(root, status)).ok()?;
    let mut found: Vec<(u8, String, RocmVersion)> = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
        };
        let (Some(package), Some(version)) = (field("Package:"), field("Version:")) else {
            continue;
        };
        if !field("Status:").is_some_and(|s| s.ends_with(" installed")) {
            continue;
        }
        let rank = if package == "rocm-core" {
            0
        } else if package.starts_with("libamdhip64-") {
            1
        } else {
            continue;
        };
        // An epoch (`1:5.7.1-3`) comes first.
        let upstream = version.rsplit_once(':').map_or(version.as_str(), |v| v.1);
        if let Ok(v) = RocmVersion::parse(upstream) {
            found.push((rank, package, v));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)));
    let (_, package, v) = found.into_iter().next()?;
    Some(RocmRelease::new(
        v,
        format!("Debian package {package} ({})", status.display()),
    ))
}

/// The Python environment at `env` (absolute, as on the machine): TheRock's `rocm-sdk-core`,
/// else `torch.version.hip`.
fn python_env(root: &Path, env: &Path) -> Option<RocmRelease> {
    let lib = under(root, &env.join("lib"));
    let mut site: Vec<PathBuf> = std::fs::read_dir(&lib)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .collect();
    site.sort();
    let shown = |p: &Path| env.join(p.strip_prefix(under(root, env)).unwrap_or(p));
    for dir in &site {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in &names {
            let Some(v) = n
                .strip_prefix("rocm_sdk_core-")
                .and_then(|r| r.strip_suffix(".dist-info"))
            else {
                continue;
            };
            if let Ok(v) = RocmVersion::parse(v) {
                return Some(RocmRelease::new(
                    v,
                    format!("rocm-sdk-core in {}", shown(&dir.join(n)).display()),
                ));
            }
        }
        let version_py = dir.join("torch/version.py");
        if let Ok(text) = std::fs::read_to_string(&version_py) {
            let hip = text.lines().find_map(|l| {
                let (name, value) = l.split_once('=')?;
                let name = name.split(':').next()?.trim();
                (name == "hip").then(|| value.trim().trim_matches(['\'', '"']).to_owned())
            });
            // HIP's patch number is a build number: the release is major.minor.
            if let Some(v) = hip.and_then(|h| RocmVersion::parse(&h).ok()) {
                return Some(RocmRelease::new(
                    v.release(),
                    format!("torch.version.hip in {}", shown(&version_py).display()),
                ));
            }
        }
    }
    None
}

/// The ROCm release installed under `root`, and where it was read (see the module
/// documentation for the order); `rocm_path` is `ROCM_PATH` (default `/opt/rocm`),
/// `python_env` `VIRTUAL_ENV`. `None` when nothing says.
pub fn installed(
    root: &Path,
    rocm_path: Option<&Path>,
    python: Option<&Path>,
) -> Option<RocmRelease> {
    let rocm = rocm_path.unwrap_or(Path::new("/opt/rocm"));
    if let Some(r) = version_file(root, &rocm.join(".info/version")) {
        return Some(r);
    }
    // Side-by-side installations: the newest.
    let opt = Path::new("/opt");
    if let Ok(rd) = std::fs::read_dir(under(root, opt)) {
        let mut all: Vec<RocmRelease> = rd
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("rocm-"))
            .filter_map(|e| version_file(root, &opt.join(e.file_name()).join(".info/version")))
            .collect();
        all.sort_by_key(|r| std::cmp::Reverse(r.version));
        if let Some(r) = all.into_iter().next() {
            return Some(r);
        }
    }
    let lib = rocm.join("lib");
    if let Ok(rd) = std::fs::read_dir(under(root, &lib)) {
        let mut all: Vec<(RocmVersion, String)> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                hip_library_version(&n).map(|v| (v, n))
            })
            .collect();
        all.sort_by_key(|b| std::cmp::Reverse(b.0));
        if let Some((v, n)) = all.into_iter().next() {
            return Some(RocmRelease::new(v, lib.join(n).display().to_string()));
        }
    }
    if let Some(r) = dpkg(root) {
        return Some(r);
    }
    python.and_then(|p| python_env(root, p))
}

/// [`installed`] with `ROCM_PATH` and `VIRTUAL_ENV` read from the environment.
pub fn installed_from_environment(root: &Path) -> Option<RocmRelease> {
    let var = |n: &str| {
        std::env::var_os(n)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    installed(
        root,
        var("ROCM_PATH").as_deref(),
        var("VIRTUAL_ENV").as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn each_place_the_release_is_written() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        assert!(installed(root, None, None).is_none());
        write(
            root,
            "venv/lib/python3.12/site-packages/torch/version.py",
            "__version__ = '2.7.1+rocm6.3'\nhip: Optional[str] = '6.3.42131-fa1d09cbd'\n",
        );
        let venv = Path::new("/venv");
        let r = installed(root, None, Some(venv)).unwrap();
        assert_eq!(
            r.said(),
            "ROCm 6.3 from torch.version.hip in /venv/lib/python3.12/site-packages/torch/version.py"
        );
        write(
            root,
            "venv/lib/python3.12/site-packages/rocm_sdk_core-7.10.0a20251020.dist-info/METADATA",
            "",
        );
        let r = installed(root, None, Some(venv)).unwrap();
        assert_eq!(r.version.to_string(), "7.10.0");
        write(
            root,
            "var/lib/dpkg/status",
            "Package: libamdhip64-5\nStatus: install ok installed\nVersion: 5.2.3-3\n\n\
             Package: libamdhip64-6\nStatus: deinstall ok config-files\nVersion: 6.4.1-1\n",
        );
        let r = installed(root, None, Some(venv)).unwrap();
        assert_eq!(
            r.said(),
            "ROCm 5.2.3 from Debian package libamdhip64-5 (/var/lib/dpkg/status)"
        );
        write(root, "opt/rocm/lib/libamdhip64.so.6.2.60203", "");
        write(root, "opt/rocm/lib/libamdhip64.so.6", "");
        let r = installed(root, None, None).unwrap();
        assert_eq!(
            r.said(),
            "ROCm 6.2.3 from /opt/rocm/lib/libamdhip64.so.6.2.60203"
        );
        write(root, "opt/rocm-6.1.2/.info/version", "6.1.2-119\n");
        write(root, "opt/rocm-6.3.0/.info/version", "6.3.0-39\n");
        assert_eq!(
            installed(root, None, None).unwrap().said(),
            "ROCm 6.3.0 from /opt/rocm-6.3.0/.info/version"
        );
        write(root, "opt/rocm/.info/version", "6.4.3-128\n");
        assert_eq!(
            installed(root, None, None).unwrap().said(),
            "ROCm 6.4.3 from /opt/rocm/.info/version"
        );
        // ROCM_PATH elsewhere.
        write(root, "usr/local/rocm/.info/version", "7.0.2\n");
        assert_eq!(
            installed(root, Some(Path::new("/usr/local/rocm")), None)
                .unwrap()
                .said(),
            "ROCm 7.0.2 from /usr/local/rocm/.info/version"
        );
    }

    #[test]
    fn hip_library_names() {
        let v = |n| hip_library_version(n).map(|v| v.to_string());
        assert_eq!(v("libamdhip64.so.6.4.60403").as_deref(), Some("6.4.3"));
        assert_eq!(v("libamdhip64.so.5.7.31921").as_deref(), Some("5.7"));
        assert_eq!(v("libamdhip64.so.6"), None);
        assert_eq!(v("libhsa-runtime64.so.1.14.0"), None);
    }
}
