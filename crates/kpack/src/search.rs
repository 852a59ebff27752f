//! How the ROCm runtime finds a kpack'ed code object (rocm-kpack `loader.cpp`,
//! `isa_target_match.h`; CLR `hip_fatbin.cpp`), as data and pure functions: the caller opens
//! the files.
//!
//! 1. The device's architecture list: its full target ID (`gfx942:sramecc+:xnack-`), then its
//!    generic target carrying the same feature settings (`gfx9-4-generic:sramecc+:xnack-`).
//! 2. Archive paths ([`archive_paths`]): `ROCM_KPACK_PATH` (`:`-separated) replaces the
//!    marker's list; otherwise `ROCM_KPACK_PATH_PREFIX` entries come first, then each marker
//!    path resolved against the binary's directory, `@GFXARCH@` expanded for every
//!    architecture and every feature subset, most specific first ([`compatible_targets`]).
//!    Paths that do not exist are skipped; `ROCM_KPACK_DISABLE` (non-empty, not starting
//!    with `0`) turns kpack off.
//! 3. Arch-first search over the opened archives whose `gfx_arches` holds a candidate
//!    ([`resolve`]). The current loader tries every (architecture, subset, archive) in turn
//!    until one has the kernel; the older one stopped at the first archive holding a matching
//!    architecture and failed there when it lacked the kernel, so an `:xnack-` archive
//!    without a kernel shadowed the plain one ([`Loader`]).

use crate::archive::Archive;
use crate::marker::KpackRef;
use gfxkit_target_id::TargetId;
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// The placeholder expanded for each candidate architecture.
pub const GFXARCH: &str = "@GFXARCH@";

/// The kpack environment variables, passed in as values (the library reads no environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `ROCM_KPACK_PATH`: replaces the marker's search paths.
    pub path: Option<String>,
    /// `ROCM_KPACK_PATH_PREFIX`: searched before the marker's paths.
    pub path_prefix: Option<String>,
    /// `ROCM_KPACK_DISABLE`.
    pub disable: Option<String>,
}

impl Env {
    /// Whether `ROCM_KPACK_DISABLE` turns kpack off (set, non-empty, not starting with `0`).
    pub fn disabled(&self) -> bool {
        self.disable
            .as_deref()
            .is_some_and(|v| !v.is_empty() && !v.starts_with('0'))
    }
}

/// Which runtime search to model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Loader {
    /// Every candidate tried in turn (rocm-systems after #9874/#9953).
    #[default]
    Current,
    /// The first archive holding a matching architecture decides (earlier releases).
    Old,
}

/// The architecture list the runtime passes for `device`: its target ID, then its generic
/// target with the device's settings.
pub fn arch_list(device: &TargetId) -> Vec<String> {
    let mut out = vec![device.to_string()];
    if let Some(g) = gfxkit_host::select::generic_device(device) {
        out.push(g.to_string());
    }
    out
}

/// Every target an archive for `arch` may be named or listed with, most specific first, in
/// the runtime's order (descending subset masks over the features as written:
/// `gfx942:sramecc+:xnack-`, `gfx942:sramecc+`, `gfx942:xnack-`, `gfx942`). A leading
/// `amdgcn-amd-amdhsa--` is dropped.
pub fn compatible_targets(arch: &str) -> Vec<String> {
    let arch = arch.strip_prefix("amdgcn-amd-amdhsa--").unwrap_or(arch);
    let mut parts = arch.split(':');
    let processor = parts.next().unwrap_or("");
    if processor.is_empty() {
        return Vec::new();
    }
    let features: Vec<&str> = parts.filter(|f| !f.is_empty()).take(8).collect();
    let n = features.len();
    let mut out = Vec::with_capacity(1 << n);
    for mask in (0..(1u32 << n)).rev() {
        let mut c = processor.to_owned();
        for (i, f) in features.iter().enumerate() {
            if mask & (1 << (n - 1 - i)) != 0 {
                c.push(':');
                c.push_str(f);
            }
        }
        out.push(c);
    }
    out
}

/// Where an archive path came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Origin {
    /// `ROCM_KPACK_PATH`.
    Override,
    /// `ROCM_KPACK_PATH_PREFIX`.
    Prefix,
    /// A marker path without `@GFXARCH@`.
    Marker,
    /// A marker path with `@GFXARCH@` expanded for `target`.
    Expanded {
        /// The pattern as written in the marker.
        pattern: String,
        /// The target substituted.
        target: String,
    },
}

/// One archive path the runtime would try, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchivePath {
    /// The path (lexically normalised; relative paths joined to the binary's directory).
    pub path: PathBuf,
    /// Where it came from.
    pub origin: Origin,
}

/// Joins `rel` to `dir` (unless absolute) and removes `.` and `..` lexically.
pub fn resolve_path(dir: &Path, rel: &str) -> PathBuf {
    let joined = if Path::new(rel).is_absolute() {
        PathBuf::from(rel)
    } else {
        dir.join(rel)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn split_list(v: Option<&str>) -> Vec<String> {
    v.unwrap_or("")
        .split(':')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The archive paths the runtime tries for a binary in `binary_dir` with marker `marker` on
/// a device with architecture list `arches` ([`arch_list`]), in order, duplicates kept
/// (the caller skips paths that do not exist).
pub fn archive_paths(
    marker: &KpackRef,
    binary_dir: &Path,
    arches: &[String],
    env: &Env,
) -> Vec<ArchivePath> {
    let over = split_list(env.path.as_deref());
    if !over.is_empty() {
        return over
            .into_iter()
            .map(|p| ArchivePath {
                path: PathBuf::from(p),
                origin: Origin::Override,
            })
            .collect();
    }
    let mut out: Vec<ArchivePath> = split_list(env.path_prefix.as_deref())
        .into_iter()
        .map(|p| ArchivePath {
            path: PathBuf::from(p),
            origin: Origin::Prefix,
        })
        .collect();
    for rel in &marker.search_paths {
        if rel.contains(GFXARCH) {
            for arch in arches {
                for t in compatible_targets(arch) {
                    out.push(ArchivePath {
                        path: resolve_path(binary_dir, &rel.replacen(GFXARCH, &t, 1)),
                        origin: Origin::Expanded {
                            pattern: rel.clone(),
                            target: t,
                        },
                    });
                }
            }
        } else {
            out.push(ArchivePath {
                path: resolve_path(binary_dir, rel),
                origin: Origin::Marker,
            });
        }
    }
    out
}

/// For a marker path with `@GFXARCH@`: the resolved directory and the file-name prefix and
/// suffix around the placeholder, so that a caller can list every archive the pattern can
/// name (`../.kpack/foo_@GFXARCH@.kpack` gives (`<dir>/../.kpack`, `foo_`, `.kpack`)).
pub fn pattern_parts(binary_dir: &Path, rel: &str) -> Option<(PathBuf, String, String)> {
    let full = resolve_path(binary_dir, rel);
    let name = full.file_name()?.to_str()?.to_owned();
    let (pre, suf) = name.split_once(GFXARCH)?;
    Some((
        full.parent().unwrap_or(Path::new("")).to_path_buf(),
        pre.to_owned(),
        suf.to_owned(),
    ))
}

/// The architecture a file name stands for under a pattern's prefix and suffix.
pub fn arch_in_name<'n>(name: &'n str, prefix: &str, suffix: &str) -> Option<&'n str> {
    let a = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    (!a.is_empty()).then_some(a)
}

/// An archive the caller opened, in search order.
#[derive(Debug, Clone, Copy)]
pub struct Opened<'a, 'data> {
    /// Its path.
    pub path: &'a Path,
    /// Its parsed contents.
    pub archive: &'a Archive<'data>,
}

/// How a look-up ended, with the runtime's `kpack_error_t` where it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Outcome {
    /// `ROCM_KPACK_DISABLE` is set (the runtime returns "not implemented").
    Disabled,
    /// No archive path exists (error 13, `KPACK_ERROR_ARCHIVE_NOT_FOUND`).
    NoArchive,
    /// Archives exist, none lists a compatible architecture (error 14).
    ArchNotFound,
    /// An archive lists the architecture but lacks the kernel (error 5).
    KernelNotFound {
        /// Index into the opened archives.
        archive: usize,
        /// The architecture matched.
        arch: String,
    },
    /// The kernel is found.
    Found {
        /// Index into the opened archives.
        archive: usize,
        /// The architecture matched (may be a subset of the device's, or generic).
        arch: String,
    },
}

impl Outcome {
    /// The runtime's error code (`kpack_types.h`), `None` when found.
    pub fn runtime_code(&self) -> Option<u32> {
        match self {
            Outcome::Found { .. } => None,
            Outcome::Disabled => Some(8),
            Outcome::NoArchive => Some(13),
            Outcome::ArchNotFound => Some(14),
            Outcome::KernelNotFound { .. } => Some(5),
        }
    }
}

/// Looks `key` up as the runtime would, over `opened` archives (in search order, paths that
/// exist only), for the architecture list `arches`.
pub fn resolve(loader: Loader, arches: &[String], key: &str, opened: &[Opened<'_, '_>]) -> Outcome {
    if opened.is_empty() {
        return Outcome::NoArchive;
    }
    let mut first_without: Option<Outcome> = None;
    for arch in arches {
        for t in compatible_targets(arch) {
            for (i, o) in opened.iter().enumerate() {
                if !o.archive.has_arch(&t) {
                    continue;
                }
                if o.archive.kernel(key, &t).is_some() {
                    return Outcome::Found {
                        archive: i,
                        arch: t,
                    };
                }
                let miss = Outcome::KernelNotFound {
                    archive: i,
                    arch: t.clone(),
                };
                if loader == Loader::Old {
                    return miss;
                }
                first_without.get_or_insert(miss);
            }
        }
    }
    first_without.unwrap_or(Outcome::ArchNotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_follow_the_runtime_order() {
        assert_eq!(
            compatible_targets("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"),
            [
                "gfx942:sramecc+:xnack-",
                "gfx942:sramecc+",
                "gfx942:xnack-",
                "gfx942"
            ]
        );
        assert_eq!(compatible_targets("gfx1201"), ["gfx1201"]);
        assert!(compatible_targets("").is_empty());
    }

    #[test]
    fn arch_list_adds_the_generic_target() {
        let d = TargetId::parse("gfx942:sramecc+:xnack-").unwrap();
        assert_eq!(
            arch_list(&d),
            ["gfx942:sramecc+:xnack-", "gfx9-4-generic:sramecc+:xnack-"]
        );
        let d = TargetId::parse("gfx90a:xnack+").unwrap();
        assert_eq!(arch_list(&d), ["gfx90a:xnack+"]);
    }

    #[test]
    fn paths_expand_and_honour_the_environment() {
        let m = KpackRef {
            kernel_name: Some("lib/libx.so".into()),
            search_paths: vec!["../.kpack/x_@GFXARCH@.kpack".into(), "/abs/y.kpack".into()],
        };
        let dir = Path::new("/opt/rocm/lib");
        let arches = vec!["gfx90a:xnack-".to_owned()];
        let p = archive_paths(&m, dir, &arches, &Env::default());
        let names: Vec<_> = p.iter().map(|a| a.path.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "/opt/rocm/.kpack/x_gfx90a:xnack-.kpack",
                "/opt/rocm/.kpack/x_gfx90a.kpack",
                "/abs/y.kpack"
            ]
        );
        let env = Env {
            path_prefix: Some("/p1.kpack::/p2.kpack".into()),
            ..Env::default()
        };
        let p = archive_paths(&m, dir, &arches, &env);
        assert_eq!(p.len(), 5);
        assert_eq!(p[0].origin, Origin::Prefix);
        let env = Env {
            path: Some("/only.kpack".into()),
            path_prefix: Some("/p1.kpack".into()),
            ..Env::default()
        };
        let p = archive_paths(&m, dir, &arches, &env);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].origin, Origin::Override);
        for (v, off) in [("1", true), ("0", false), ("", false), ("yes", true)] {
            let e = Env {
                disable: Some(v.into()),
                ..Env::default()
            };
            assert_eq!(e.disabled(), off, "{v:?}");
        }
    }

    fn archive(arch: &str, keys: &[&str]) -> Vec<u8> {
        use crate::write::{write_archive, ArchiveMeta, Compression, KernelIn};
        let body = b"\x7fELF".to_vec();
        let ks: Vec<KernelIn<'_>> = keys
            .iter()
            .map(|k| KernelIn {
                key: k,
                arch,
                bytes: &body,
            })
            .collect();
        let meta = ArchiveMeta {
            group_name: "t".into(),
            arch_family: arch.into(),
            arches: vec![arch.into()],
        };
        write_archive(&meta, &ks, Compression::None).unwrap()
    }

    #[test]
    fn the_old_loader_is_shadowed_by_a_variant_archive_the_current_one_is_not() {
        let variant = archive("gfx90a:xnack-", &["lib/a.so#0"]);
        let plain = archive("gfx90a", &["lib/a.so#0", "lib/a.so#1"]);
        let (v, p) = (
            Archive::parse(&variant).unwrap(),
            Archive::parse(&plain).unwrap(),
        );
        let (pv, pp) = (Path::new("v"), Path::new("p"));
        let opened = [
            Opened {
                path: pv,
                archive: &v,
            },
            Opened {
                path: pp,
                archive: &p,
            },
        ];
        let dev = arch_list(&TargetId::parse("gfx90a:sramecc+:xnack-").unwrap());
        for l in [Loader::Old, Loader::Current] {
            assert_eq!(
                resolve(l, &dev, "lib/a.so#0", &opened),
                Outcome::Found {
                    archive: 0,
                    arch: "gfx90a:xnack-".into()
                }
            );
        }
        assert_eq!(
            resolve(Loader::Old, &dev, "lib/a.so#1", &opened),
            Outcome::KernelNotFound {
                archive: 0,
                arch: "gfx90a:xnack-".into()
            }
        );
        assert_eq!(
            resolve(Loader::Current, &dev, "lib/a.so#1", &opened),
            Outcome::Found {
                archive: 1,
                arch: "gfx90a".into()
            }
        );
        assert_eq!(
            resolve(Loader::Current, &dev, "lib/a.so#2", &opened),
            Outcome::KernelNotFound {
                archive: 0,
                arch: "gfx90a:xnack-".into()
            }
        );
        let other = arch_list(&TargetId::parse("gfx1100").unwrap());
        assert_eq!(
            resolve(Loader::Current, &other, "lib/a.so#0", &opened),
            Outcome::ArchNotFound
        );
        assert_eq!(
            resolve(Loader::Current, &other, "k", &[]),
            Outcome::NoArchive
        );
        // An xnack+ device never takes the xnack- archive.
        let plus = arch_list(&TargetId::parse("gfx90a:sramecc+:xnack+").unwrap());
        assert_eq!(
            resolve(Loader::Old, &plus, "lib/a.so#0", &opened),
            Outcome::Found {
                archive: 1,
                arch: "gfx90a".into()
            }
        );
    }

    #[test]
    fn pattern_parts_name_archives() {
        let (dir, pre, suf) =
            pattern_parts(Path::new("/r/lib"), "../.kpack/torch_@GFXARCH@.kpack").unwrap();
        assert_eq!(dir, Path::new("/r/.kpack"));
        assert_eq!(
            arch_in_name("torch_gfx90a:xnack-.kpack", &pre, &suf),
            Some("gfx90a:xnack-")
        );
        assert_eq!(arch_in_name("other_gfx90a.kpack", &pre, &suf), None);
    }
}
