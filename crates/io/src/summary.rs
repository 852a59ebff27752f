//! `gfxkit list --summary`: per package, per container image, per site-packages distribution
//! (found through the `*.dist-info/RECORD` that lists a file), or per file otherwise, which GPU
//! targets it ships and how many bytes of code objects each. Shared by the CLI and Python.

use gfxkit_inventory::list::FileListing;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The summary of a set of listings (`gfxkit list --summary --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary<'a> {
    /// One entry per package, image, distribution or file with device code.
    pub packages: Vec<Shipped>,
    /// The inputs without device code (files, package members, packages, files found in
    /// trees that were read).
    pub without_device_code: Vec<&'a str>,
}

/// Summarizes `files` (see the module documentation).
pub fn summary(files: &[FileListing]) -> Summary<'_> {
    Summary {
        packages: summarize(files),
        without_device_code: gfxkit_inventory::list::without_device_code(files),
    }
}

/// JSON: one package, distribution or file.
#[derive(Debug, Clone, Serialize)]
pub struct Shipped {
    /// The package path, `name version` of a distribution, or the file path.
    pub name: String,
    /// `package`, `image` (a container image), `distribution` or `file`.
    pub kind: &'static str,
    /// Files (or members) holding device code.
    pub files: usize,
    /// Bytes of code objects per target ID (`gfx90a:xnack+`), sorted by target.
    pub targets: BTreeMap<String, u64>,
    /// Processors (`gfx90a`), sorted.
    pub architectures: Vec<String>,
    /// Bytes of device code as stored in its files (compressed bundles at their compressed
    /// size, headers included): what `device_bytes` means in `list -r --json` and `diff`.
    pub device_bytes: u64,
    /// Bytes of code objects over all targets (uncompressed): the sum of `targets`.
    pub code_object_bytes: u64,
}

/// Distributions of the `*.dist-info` directories in one directory: (name, files listed).
type Dists = Vec<(String, HashSet<String>)>;

fn dists_in(dir: &Path, cache: &mut HashMap<PathBuf, Dists>) -> Dists {
    if let Some(d) = cache.get(dir) {
        return d.clone();
    }
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(stem) = n.strip_suffix(".dist-info") else {
                continue;
            };
            let Ok(record) = std::fs::read_to_string(e.path().join("RECORD")) else {
                continue;
            };
            let files = record
                .lines()
                .filter_map(|l| gfxkit_package::record::split_row(l).into_iter().next())
                .collect();
            let name = match stem.rsplit_once('-') {
                Some((n, v)) => format!("{n} {v}"),
                None => stem.to_owned(),
            };
            out.push((name, files));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    cache.insert(dir.to_owned(), out.clone());
    out
}

/// The distribution whose RECORD lists `file`, searching up to 8 directories up.
fn distribution(file: &Path, cache: &mut HashMap<PathBuf, Dists>) -> Option<String> {
    let abs = std::fs::canonicalize(file).ok()?;
    for dir in abs.ancestors().skip(1).take(8) {
        let rel = abs.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
        for (name, files) in dists_in(dir, cache) {
            if files.contains(&rel) {
                return Some(name);
            }
        }
    }
    None
}

/// One group's files, bytes per target and bytes stored.
type Group = (HashSet<String>, BTreeMap<String, u64>, u64);

/// Groups listings by package, distribution or file.
pub fn summarize(files: &[FileListing]) -> Vec<Shipped> {
    let mut cache = HashMap::new();
    let mut groups: BTreeMap<(String, &'static str), Group> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.bundles.is_empty()) {
        let key = match f.path.split_once('!') {
            // A container image's files name their layer.
            Some((pkg, _)) if f.layer.is_some() => (pkg.to_owned(), "image"),
            Some((pkg, _)) => (pkg.to_owned(), "package"),
            None => match distribution(Path::new(&f.path), &mut cache) {
                Some(d) => (d, "distribution"),
                None => (f.path.clone(), "file"),
            },
        };
        let g = groups.entry(key).or_default();
        if g.0.insert(f.path.clone()) {
            g.2 += f.device_bytes();
        }
        for e in f.bundles.iter().flat_map(|b| &b.entries) {
            if let Some(t) = &e.target_id {
                *g.1.entry(t.clone()).or_default() += e.size;
            }
        }
    }
    groups
        .into_iter()
        .map(|((name, kind), (members, targets, stored))| {
            let architectures: std::collections::BTreeSet<String> = targets
                .keys()
                .map(|t| t.split(':').next().unwrap_or(t).to_owned())
                .collect();
            Shipped {
                name,
                kind,
                files: members.len(),
                device_bytes: stored,
                code_object_bytes: targets.values().sum(),
                targets,
                architectures: architectures.into_iter().collect(),
            }
        })
        .collect()
}
