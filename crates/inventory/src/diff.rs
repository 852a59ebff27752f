//! What changed in device code between two builds (what `gfxkit diff` prints; `--json` is the
//! serialised [`DiffReport`]).
//!
//! Each side is a file, a tree or a package. Files are matched by their path relative to the
//! side ([`key`]: below a directory, or the member path inside a package; a side that is one
//! file matches the other side's one file; a file left unmatched is matched to the one file
//! left unmatched on the other side whose path ends the same, [`pair_by_suffix`]: a package
//! member `usr/lib/x.so` and the same file unpacked as `lib/x.so`, or named alone). For each
//! file present on both sides: the targets added and removed, counted by the devices they
//! serve ([`served`]: an xnack-any `gfx90a` code object serves `gfx90a:xnack+` and
//! `gfx90a:xnack-` devices, so replacing the two by it removes nothing) with the target-ID
//! strings beside them, per target the code objects whose bytes changed (compared by the
//! SHA-256 of the uncompressed code object, as multisets: moving a code object to another
//! bundle changes nothing), and the device bytes, code objects and kernels before and after.
//! Files with device code on one side only are added or removed.

use crate::digest::Digest;
use gfxkit_bundle::EntryId;
use gfxkit_host::select::{concrete_settings, select, Via};
use gfxkit_spec::Processor;
use gfxkit_target_id::TargetId;
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

    fn served(&self) -> BTreeSet<String> {
        served(self.digests.iter().map(|d| d.entry.as_str()))
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
    /// The path relative to its side (empty when each side is one file; for a file matched
    /// by its path's end, [`pair_by_suffix`], the longer of the two).
    pub path: String,
    /// How it changed.
    pub status: Status,
    /// Devices served only after, folded into target IDs ([`fold`]: `gfx906:xnack+` for the
    /// two sramecc settings of an xnack-on gfx906), and code that serves no device by the
    /// runtime's rule (SPIR-V, unknown processors) by its target; sorted.
    pub added: Vec<String>,
    /// Devices served only before, as [`FileDiff::added`].
    pub removed: Vec<String>,
    /// Target-ID strings of code objects only after (`gfx90a` replacing `gfx90a:xnack+`
    /// serves the same devices, yet the strings differ), sorted.
    pub added_ids: Vec<String>,
    /// Target-ID strings of code objects only before, sorted.
    pub removed_ids: Vec<String>,
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
    /// Devices served (as [`FileDiff::added`]) by some file only after.
    pub targets_added: Vec<String>,
    /// Devices served by some file before and by none after.
    pub targets_removed: Vec<String>,
    /// Target-ID strings over all files only after.
    pub ids_added: Vec<String>,
    /// Target-ID strings over all files only before.
    pub ids_removed: Vec<String>,
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

/// The devices the code objects with entry IDs `entries` serve: every concrete device (each
/// target-ID feature of its processor on or off) for which the HIP runtime's choice
/// ([`gfxkit_host::select::select`]) finds native code or the family's generic code, by its
/// canonical target ID; code that serves no device by that rule (SPIR-V, compiled for any
/// device when loaded; unknown processors; other triples) by its target as
/// [`crate::digest::target_of`] names it.
pub fn served<'a>(entries: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut ids = Vec::new();
    for raw in entries {
        match EntryId::parse(raw) {
            Ok(id) if id.target_id().is_some() => ids.push(id),
            _ => out.extend(crate::digest::target_of(raw)),
        }
    }
    if ids.is_empty() {
        return out;
    }
    let mut serves = vec![false; ids.len()];
    for p in Processor::all().iter().filter(|p| !p.is_generic()) {
        for device in concrete_settings(&TargetId::new(p)) {
            let mut any = false;
            for (i, id) in ids.iter().enumerate() {
                let via = select(&device, std::slice::from_ref(id)).via;
                if matches!(via, Some(Via::Native | Via::Generic)) {
                    serves[i] = true;
                    any = true;
                }
            }
            if any {
                out.insert(device.to_string());
            }
        }
    }
    // Code of an AMDGPU target that serves no device by the runtime's rule (another offload
    // kind than HIP, say) is named by its target.
    for (id, s) in ids.iter().zip(serves) {
        if !s {
            out.insert(id.target().to_string());
        }
    }
    out
}

/// Devices (concrete target IDs, as [`served`] names them) folded per processor into the
/// fewest target IDs that describe exactly them: all four settings of gfx90a are `gfx90a`,
/// the two sramecc settings of an xnack-off gfx906 `gfx906:xnack-`. Labels that are no target
/// ID stay as they are. Sorted.
pub fn fold(devices: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut by_processor: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    for d in devices {
        match TargetId::parse(d) {
            Ok(t) if !t.is_generic() => {
                by_processor
                    .entry(t.processor().name)
                    .or_default()
                    .insert(t.to_string());
            }
            _ => out.push(d.clone()),
        }
    }
    for (name, set) in by_processor {
        let Some(p) = Processor::by_name(name) else {
            continue;
        };
        let all = concrete_settings(&TargetId::new(p));
        // The most general IDs first (fewest features set).
        let mut variants = TargetId::variants(p);
        variants.sort_by_key(|v| v.features().count());
        let mut covered: BTreeSet<String> = BTreeSet::new();
        for v in variants {
            let cover: BTreeSet<String> = all
                .iter()
                .filter(|c| v.overlaps(c))
                .map(ToString::to_string)
                .collect();
            if !cover.is_empty() && cover.is_subset(&set) && !cover.is_subset(&covered) {
                covered.extend(cover);
                out.push(v.to_string());
            }
        }
    }
    out.sort();
    out
}

fn compare(path: &str, old: Option<&FileState>, new: Option<&FileState>) -> FileDiff {
    let empty = FileState::default();
    let (o, n) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
    let (ot, nt) = (o.targets(), n.targets());
    let added_ids: Vec<String> = nt.difference(&ot).map(|s| s.to_string()).collect();
    let removed_ids: Vec<String> = ot.difference(&nt).map(|s| s.to_string()).collect();
    let (os, ns) = (o.served(), n.served());
    let added = fold(&ns.difference(&os).cloned().collect());
    let removed = fold(&os.difference(&ns).cloned().collect());
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
        _ if added.is_empty()
            && removed.is_empty()
            && added_ids.is_empty()
            && removed_ids.is_empty()
            && changed.is_empty() =>
        {
            Status::Same
        }
        _ => Status::Modified,
    };
    let side = |f: Option<&FileState>, g: fn(&FileState) -> u64| f.map(g);
    FileDiff {
        path: path.to_owned(),
        status,
        added,
        removed,
        added_ids,
        removed_ids,
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

/// The path components of a key (`/` and `!` both separate; `.` and empty ones dropped).
fn components(key: &str) -> Vec<&str> {
    key.split(['/', '!'])
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// Pairs the keys of files with device code found on one side only (`old_only`, `new_only`)
/// whose paths end the same: the components of one are the last components of the other
/// (`usr/lib/x86_64-linux-gnu/librocrand.so.1.1` in a `.deb` and `librocrand.so.1.1` named
/// alone, or `lib/x.so` of an unpacked tree). The empty key of a side that is one file is
/// matched by that file's name (`old_file`, `new_file`). A key is paired only when exactly one
/// key of the other side fits it and it is the only one that fits that key. Returns
/// `(old key, new key)` pairs.
pub fn pair_by_suffix(
    old_only: &[&str],
    new_only: &[&str],
    old_file: &str,
    new_file: &str,
) -> Vec<(String, String)> {
    let name = |k: &str, file: &str| -> Vec<String> {
        let k = if k.is_empty() {
            std::path::Path::new(file)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        } else {
            k.to_owned()
        };
        components(&k).into_iter().map(str::to_owned).collect()
    };
    let fits = |a: &[String], b: &[String]| {
        !a.is_empty() && !b.is_empty() && (a.ends_with(b) || b.ends_with(a))
    };
    let olds: Vec<Vec<String>> = old_only.iter().map(|k| name(k, old_file)).collect();
    let news: Vec<Vec<String>> = new_only.iter().map(|k| name(k, new_file)).collect();
    let mut out = Vec::new();
    for (i, o) in olds.iter().enumerate() {
        let matches: Vec<usize> = (0..news.len()).filter(|&j| fits(o, &news[j])).collect();
        let [j] = matches[..] else { continue };
        if olds.iter().filter(|p| fits(p, &news[j])).count() == 1 {
            out.push((old_only[i].to_owned(), new_only[j].to_owned()));
        }
    }
    out
}

/// Compares the files of two sides (by [`key`], then files left over by [`pair_by_suffix`]);
/// `errors` are the inputs or files that could not be read, carried into the report.
pub fn diff(
    old_name: &str,
    new_name: &str,
    old: &BTreeMap<String, FileState>,
    new: &BTreeMap<String, FileState>,
    errors: Vec<String>,
) -> DiffReport {
    let with_code = |side: &BTreeMap<String, FileState>| -> BTreeSet<String> {
        side.iter()
            .filter(|(_, f)| f.has_device_code())
            .map(|(k, _)| k.clone())
            .collect()
    };
    let (ok, nk) = (with_code(old), with_code(new));
    let old_only: Vec<&str> = ok.difference(&nk).map(String::as_str).collect();
    let new_only: Vec<&str> = nk.difference(&ok).map(String::as_str).collect();
    let pairs = pair_by_suffix(&old_only, &new_only, old_name, new_name);
    let paired_old: BTreeSet<&str> = pairs.iter().map(|(o, _)| o.as_str()).collect();
    let paired_new: BTreeSet<&str> = pairs.iter().map(|(_, n)| n.as_str()).collect();
    let mut files: Vec<FileDiff> = ok
        .union(&nk)
        .filter(|k| !paired_old.contains(k.as_str()) && !paired_new.contains(k.as_str()))
        .map(|k| compare(k, old.get(k), new.get(k)))
        .collect();
    for (o, n) in &pairs {
        let path = if components(o).len() >= components(n).len() {
            o
        } else {
            n
        };
        files.push(compare(path, old.get(o), new.get(n)));
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let all = |side: &BTreeMap<String, FileState>| -> BTreeSet<String> {
        side.values()
            .flat_map(|f| f.digests.iter().map(|d| d.target.clone()))
            .collect()
    };
    let devices = |side: &BTreeMap<String, FileState>| -> BTreeSet<String> {
        served(
            side.values()
                .flat_map(|f| f.digests.iter().map(|d| d.entry.as_str())),
        )
    };
    let (oa, na) = (all(old), all(new));
    let (od, nd) = (devices(old), devices(new));
    DiffReport {
        old: old_name.to_owned(),
        new: new_name.to_owned(),
        equal: files.iter().all(|f| f.status == Status::Same),
        old_totals: totals(old.values()),
        new_totals: totals(new.values()),
        targets_added: fold(&nd.difference(&od).cloned().collect()),
        targets_removed: fold(&od.difference(&nd).cloned().collect()),
        ids_added: na.difference(&oa).cloned().collect(),
        ids_removed: oa.difference(&na).cloned().collect(),
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
    fn targets_are_the_devices_served_with_the_id_strings_beside() {
        let side = |targets: &[&str]| FileState {
            device_bytes: 1,
            digests: targets
                .iter()
                .enumerate()
                .map(|(i, t)| co(t, &i.to_string(), 1))
                .collect(),
        };
        // xnack+ and xnack- code replaced by xnack-any code: every gfx90a device is served
        // on both sides; the strings changed.
        let mut old = BTreeMap::new();
        let mut new = BTreeMap::new();
        old.insert(
            "x.so".to_owned(),
            side(&["gfx90a:xnack+", "gfx90a:xnack-", "gfx906:xnack-"]),
        );
        new.insert("x.so".to_owned(), side(&["gfx90a", "gfx906"]));
        let r = diff("o", "n", &old, &new, Vec::new());
        let f = &r.files[0];
        assert!(f.removed.is_empty(), "{f:?}");
        assert_eq!(f.added, ["gfx906:xnack+"]);
        assert_eq!(f.added_ids, ["gfx906", "gfx90a"]);
        assert_eq!(
            f.removed_ids,
            ["gfx906:xnack-", "gfx90a:xnack+", "gfx90a:xnack-"]
        );
        assert_eq!(f.status, Status::Modified);
        assert!(r.targets_removed.is_empty());
        assert_eq!(r.ids_removed.len(), 3);
        // The other way round, the xnack+ gfx906 devices are no longer served.
        let r = diff("o", "n", &new, &old, Vec::new());
        assert_eq!(r.files[0].removed, ["gfx906:xnack+"]);
        assert_eq!(r.targets_removed, ["gfx906:xnack+"]);
        // Generic code serves the family's processors: dropping gfx11-generic for gfx1100
        // removes gfx1101, gfx1102, ... and keeps gfx1100.
        old.insert("g.so".to_owned(), side(&["gfx11-generic"]));
        new.insert("g.so".to_owned(), side(&["gfx1100"]));
        let r = diff("o", "n", &old, &new, Vec::new());
        let g = r.files.iter().find(|f| f.path == "g.so").unwrap();
        assert!(g.removed.contains(&"gfx1101".to_owned()), "{g:?}");
        assert!(!g.removed.contains(&"gfx1100".to_owned()), "{g:?}");
        assert!(g.added.is_empty(), "{g:?}");
        // SPIR-V is named as it is.
        let spirv = BTreeSet::from(["amdgcnspirv".to_owned()]);
        assert_eq!(
            served(["hip-spirv64-amd-amdhsa--amdgcnspirv"].into_iter()),
            spirv
        );
    }

    #[test]
    fn devices_fold_into_the_fewest_target_ids() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            fold(&set(&[
                "gfx90a:sramecc+:xnack+",
                "gfx90a:sramecc+:xnack-",
                "gfx90a:sramecc-:xnack+",
                "gfx90a:sramecc-:xnack-",
                "gfx906:sramecc+:xnack+",
                "gfx906:sramecc-:xnack+",
                "gfx908:sramecc+:xnack-",
                "gfx1100",
                "amdgcnspirv",
            ])),
            [
                "amdgcnspirv",
                "gfx1100",
                "gfx906:xnack+",
                "gfx908:sramecc+:xnack-",
                "gfx90a"
            ]
        );
    }

    #[test]
    fn files_left_over_pair_by_the_end_of_their_paths() {
        let p = pair_by_suffix(
            &["data.tar.xz!./usr/lib/x86_64-linux-gnu/librocrand.so.1.1"],
            &[""],
            "librocrand1.deb",
            "/tmp/x/librocrand.so.1.1",
        );
        assert_eq!(p.len(), 1);
        let p = pair_by_suffix(
            &[
                "data.tar.xz!usr/lib/a/libx.so",
                "data.tar.xz!usr/lib/b/libx.so",
            ],
            &["libx.so"],
            "o.deb",
            "n",
        );
        assert!(p.is_empty(), "two fit: no pair");
        let p = pair_by_suffix(&["lib/libx.so"], &["lib/liby.so"], "o", "n");
        assert!(p.is_empty());
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
