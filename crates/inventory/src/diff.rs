//! What changed in device code between two builds (what `gfxkit diff` prints; `--json` is the
//! serialised [`DiffReport`]).
//!
//! Each side is a file, a tree or a package. Files are matched by their path relative to the
//! side ([`key`]: below a directory, or the member path inside a package; a side that is one
//! file matches the other side's one file). For each file present on both sides: the targets
//! added and removed, per target the code objects whose bytes changed (compared by the SHA-256
//! of the uncompressed code object, as multisets: moving a code object to another bundle
//! changes nothing), and the device bytes, code objects and kernels before and after. Files
//! with device code on one side only are added or removed.

use crate::digest::Digest;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One file of one side, as [`diff`] compares it.
#[derive(Debug, Clone, Default)]
pub struct FileState {
    /// Device bytes as stored (compressed bundles at their compressed size).
    pub device_bytes: u64,
    /// Its code objects ([`crate::digest`]), kernels counted.
    pub digests: Vec<Digest>,
}

impl FileState {
    /// Whether it holds device code.
    pub fn has_device_code(&self) -> bool {
        !self.digests.is_empty() || self.device_bytes > 0
    }

    fn targets(&self) -> BTreeSet<&str> {
        self.digests.iter().map(|d| d.target.as_str()).collect()
    }

    fn kernels(&self) -> u64 {
        self.digests
            .iter()
            .filter_map(|d| d.kernels)
            .map(|k| k as u64)
            .sum()
    }
}

/// A number before and after (`null` on the side without the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Before.
    pub old: Option<u64>,
    /// After.
    pub new: Option<u64>,
}

/// Code objects of one target whose bytes changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    /// The target (`gfx90a:xnack-`).
    pub target: String,
    /// Code objects for it before.
    pub old: usize,
    /// Code objects for it after.
    pub new: usize,
    /// Code objects after whose bytes no code object before has (by SHA-256).
    pub differ: usize,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its device code is the same (every code object's bytes).
    Same,
    /// Present on both sides, with different device code.
    Modified,
    /// Only after.
    Added,
    /// Only before.
    Removed,
}

impl Status {
    /// `=`, `M`, `A`, `D`.
    pub fn letter(self) -> &'static str {
        match self {
            Status::Same => "=",
            Status::Modified => "M",
            Status::Added => "A",
            Status::Removed => "D",
        }
    }
}

/// One file (the file object of `diff --json`).
#[derive(Debug, Clone, Serialize)]
pub struct FileDiff {
    /// The path relative to its side (empty when each side is one file).
    pub path: String,
    /// How it changed.
    pub status: Status,
    /// Targets only after, sorted.
    pub added: Vec<String>,
    /// Targets only before, sorted.
    pub removed: Vec<String>,
    /// Targets on both sides whose code objects changed.
    pub changed: Vec<Changed>,
    /// Device bytes as stored.
    pub device_bytes: Change,
    /// Code objects.
    pub code_objects: Change,
    /// Kernels over its code objects.
    pub kernels: Change,
}

/// Totals of one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Files with device code.
    pub files: u64,
    /// Device bytes as stored.
    pub device_bytes: u64,
    /// Code objects.
    pub code_objects: u64,
    /// Kernels.
    pub kernels: u64,
}

/// The whole report (`diff --json`).
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// The old side as given.
    pub old: String,
    /// The new side as given.
    pub new: String,
    /// Whether the device code is the same file for file.
    pub equal: bool,
    /// Every file with device code on either side, by path (unchanged ones included).
    pub files: Vec<FileDiff>,
    /// Totals before.
    pub old_totals: Totals,
    /// Totals after.
    pub new_totals: Totals,
    /// Targets over all files only after, and only before.
    pub targets_added: Vec<String>,
    /// Targets over all files only before.
    pub targets_removed: Vec<String>,
    /// Inputs or files that could not be read, each naming itself.
    pub errors: Vec<String>,
}

impl DiffReport {
    /// The exit status: 2 on errors, 1 when the sides differ, 0 when equal.
    pub fn status(&self) -> u8 {
        if !self.errors.is_empty() {
            2
        } else if self.equal {
            0
        } else {
            1
        }
    }
}

/// The key a file `path` of a side given as `root` is matched by: the path below `root`
/// (a directory: `lib/x.so`; a package: the member path, `torch/lib/x.so`; nested members
/// keep their `!`), or the empty string for `root` itself.
pub fn key(root: &str, path: &str) -> String {
    if path == root {
        return String::new();
    }
    let root = root.trim_end_matches('/');
    match path.strip_prefix(root) {
        Some(rest) if rest.starts_with('/') || rest.starts_with('!') => rest[1..].to_owned(),
        _ => path.to_owned(),
    }
}

fn totals<'a>(files: impl Iterator<Item = &'a FileState>) -> Totals {
    let mut t = Totals::default();
    for f in files.filter(|f| f.has_device_code()) {
        t.files += 1;
        t.device_bytes += f.device_bytes;
        t.code_objects += f.digests.len() as u64;
        t.kernels += f.kernels();
    }
    t
}

fn hashes<'a>(f: &'a FileState, target: &str) -> Vec<&'a str> {
    let mut v: Vec<&str> = f
        .digests
        .iter()
        .filter(|d| d.target == target)
        .map(|d| d.sha256.as_str())
        .collect();
    v.sort_unstable();
    v
}

/// The code objects of `new` (sorted hashes) that `old` (sorted hashes) has no copy of, as
/// multisets.
fn unmatched(old: &[&str], new: &[&str]) -> usize {
    let (mut i, mut n) = (0, 0);
    for h in new {
        while i < old.len() && old[i] < *h {
            i += 1;
        }
        if i < old.len() && old[i] == *h {
            i += 1;
        } else {
            n += 1;
        }
    }
    n
}

fn compare(path: &str, old: Option<&FileState>, new: Option<&FileState>) -> FileDiff {
    let empty = FileState::default();
    let (o, n) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
    let (ot, nt) = (o.targets(), n.targets());
    let added: Vec<String> = nt.difference(&ot).map(|s| s.to_string()).collect();
    let removed: Vec<String> = ot.difference(&nt).map(|s| s.to_string()).collect();
    let mut changed = Vec::new();
    for t in ot.intersection(&nt) {
        let (a, b) = (hashes(o, t), hashes(n, t));
        if a != b {
            changed.push(Changed {
                target: t.to_string(),
                old: a.len(),
                new: b.len(),
                differ: unmatched(&a, &b).max(usize::from(a.len() != b.len())),
            });
        }
    }
    let status = match (
        old.is_some_and(FileState::has_device_code),
        new.is_some_and(FileState::has_device_code),
    ) {
        (false, true) => Status::Added,
        (true, false) => Status::Removed,
        _ if added.is_empty() && removed.is_empty() && changed.is_empty() => Status::Same,
        _ => Status::Modified,
    };
    let side = |f: Option<&FileState>, g: fn(&FileState) -> u64| f.map(g);
    FileDiff {
        path: path.to_owned(),
        status,
        added,
        removed,
        changed,
        device_bytes: Change {
            old: side(old, |f| f.device_bytes),
            new: side(new, |f| f.device_bytes),
        },
        code_objects: Change {
            old: side(old, |f| f.digests.len() as u64),
            new: side(new, |f| f.digests.len() as u64),
        },
        kernels: Change {
            old: side(old, FileState::kernels),
            new: side(new, FileState::kernels),
        },
    }
}

/// Compares the files of two sides (by [`key`]); `errors` are the inputs or files that could
/// not be read, carried into the report.
pub fn diff(
    old_name: &str,
    new_name: &str,
    old: &BTreeMap<String, FileState>,
    new: &BTreeMap<String, FileState>,
    errors: Vec<String>,
) -> DiffReport {
    let keys: BTreeSet<&String> = old
        .iter()
        .chain(new.iter())
        .filter(|(_, f)| f.has_device_code())
        .map(|(k, _)| k)
        .collect();
    let files: Vec<FileDiff> = keys
        .into_iter()
        .map(|k| compare(k, old.get(k), new.get(k)))
        .collect();
    let all = |side: &BTreeMap<String, FileState>| -> BTreeSet<String> {
        side.values()
            .flat_map(|f| f.digests.iter().map(|d| d.target.clone()))
            .collect()
    };
    let (oa, na) = (all(old), all(new));
    DiffReport {
        old: old_name.to_owned(),
        new: new_name.to_owned(),
        equal: files.iter().all(|f| f.status == Status::Same),
        old_totals: totals(old.values()),
        new_totals: totals(new.values()),
        targets_added: na.difference(&oa).cloned().collect(),
        targets_removed: oa.difference(&na).cloned().collect(),
        files,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn co(target: &str, sha: &str, kernels: usize) -> Digest {
        Digest {
            unit: "bundle 0".into(),
            entry: format!("hipv4-amdgcn-amd-amdhsa--{target}"),
            target: target.into(),
            size: 10,
            sha256: sha.into(),
            kernels: Some(kernels),
            archive: None,
            code_object_version: None,
        }
    }

    #[test]
    fn keys_below_a_tree_or_a_package() {
        assert_eq!(key("build", "build/lib/x.so"), "lib/x.so");
        assert_eq!(key("build/", "build/lib/x.so"), "lib/x.so");
        assert_eq!(key("p.whl", "p.whl!torch/x.so"), "torch/x.so");
        assert_eq!(key("d", "d/p.whl!a.tar!x.so"), "p.whl!a.tar!x.so");
        assert_eq!(key("x.so", "x.so"), "");
    }

    #[test]
    fn targets_code_objects_and_files() {
        let mut old = BTreeMap::new();
        let mut new = BTreeMap::new();
        old.insert(
            "a.so".to_owned(),
            FileState {
                device_bytes: 100,
                digests: vec![
                    co("gfx906", "1", 2),
                    co("gfx90a", "2", 2),
                    co("gfx90a", "3", 2),
                ],
            },
        );
        new.insert(
            "a.so".to_owned(),
            FileState {
                device_bytes: 120,
                digests: vec![
                    co("gfx90a", "3", 2),
                    co("gfx90a", "4", 3),
                    co("gfx1100", "5", 3),
                ],
            },
        );
        old.insert(
            "gone.so".to_owned(),
            FileState {
                device_bytes: 5,
                digests: vec![co("gfx906", "9", 1)],
            },
        );
        new.insert(
            "same.so".to_owned(),
            FileState {
                device_bytes: 5,
                digests: vec![co("gfx906", "9", 1)],
            },
        );
        old.insert(
            "same.so".to_owned(),
            FileState {
                device_bytes: 5,
                digests: vec![co("gfx906", "9", 1)],
            },
        );
        let r = diff("o", "n", &old, &new, Vec::new());
        assert!(!r.equal);
        assert_eq!(r.status(), 1);
        let a = &r.files[0];
        assert_eq!((a.path.as_str(), a.status), ("a.so", Status::Modified));
        assert_eq!(a.added, ["gfx1100"]);
        assert_eq!(a.removed, ["gfx906"]);
        assert_eq!(
            a.changed,
            [Changed {
                target: "gfx90a".into(),
                old: 2,
                new: 2,
                differ: 1
            }]
        );
        assert_eq!(
            a.kernels,
            Change {
                old: Some(6),
                new: Some(8)
            }
        );
        assert_eq!(r.files[1].status, Status::Removed);
        assert_eq!(
            r.files[1].device_bytes,
            Change {
                old: Some(5),
                new: None
            }
        );
        assert_eq!(r.files[2].status, Status::Same);
        assert_eq!(r.targets_added, ["gfx1100"]);
        assert!(r.targets_removed.is_empty(), "gfx906 is still in same.so");
        let same = diff("o", "n", &old, &old, Vec::new());
        assert!(same.equal);
        assert_eq!(same.status(), 0);
    }
}
