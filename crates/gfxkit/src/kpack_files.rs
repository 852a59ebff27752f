//! Finding and opening the `.kpack` archives a split binary's markers name: the file-system
//! half of `gfxkit_kpack::search` (the library holds the rules, this module touches files).

use crate::input::Input;
use gfxkit_host::Discovery;
use gfxkit_inventory::kpack::Archives;
use gfxkit_kpack::search::{self, Env, Loader};
use gfxkit_kpack::view;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The kpack environment of this process (`ROCM_KPACK_PATH`, `ROCM_KPACK_PATH_PREFIX`,
/// `ROCM_KPACK_DISABLE`).
pub fn env() -> Env {
    let var = |n: &str| std::env::var(n).ok();
    Env {
        path: var("ROCM_KPACK_PATH"),
        path_prefix: var("ROCM_KPACK_PATH_PREFIX"),
        disable: var("ROCM_KPACK_DISABLE"),
    }
}

/// Archives found for a binary, opened, in search order.
pub struct Opened {
    /// (path, bytes) of each archive that exists.
    pub files: Vec<(PathBuf, Input)>,
    /// Paths or patterns searched and not found.
    pub not_found: Vec<String>,
    /// Archives that exist but cannot be opened.
    pub unreadable: Vec<String>,
}

impl Opened {
    /// The archives as the inventory takes them (borrowing the mapped files).
    pub fn archives(&self) -> Archives<'_> {
        Archives {
            files: self
                .files
                .iter()
                .map(|(p, i)| (p.clone(), &i[..]))
                .collect(),
            not_found: self.not_found.clone(),
            unreadable: self.unreadable.clone(),
        }
    }
}

fn push_unique(out: &mut Vec<PathBuf>, p: PathBuf) {
    let canon = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
    if !out
        .iter()
        .any(|q| std::fs::canonicalize(q).unwrap_or_else(|_| q.clone()) == canon)
    {
        out.push(p);
    }
}

/// Every archive the binary at `binary` may load from, for any device: each marker path, with
/// `@GFXARCH@` matched against the files in its directory (`ROCM_KPACK_PATH` and
/// `ROCM_KPACK_PATH_PREFIX` honoured).
pub fn all_archives(binary: &Path, found: &Discovery<'_>, env: &Env) -> Opened {
    let dir = binary_dir(binary);
    let mut paths = Vec::new();
    let mut not_found = Vec::new();
    let direct = |p: PathBuf, not_found: &mut Vec<String>, paths: &mut Vec<PathBuf>| {
        if p.is_file() {
            push_unique(paths, p);
        } else {
            not_found.push(p.display().to_string());
        }
    };
    let over: Vec<&str> = env
        .path
        .as_deref()
        .unwrap_or("")
        .split(':')
        .filter(|s| !s.is_empty())
        .collect();
    if !over.is_empty() {
        for p in over {
            direct(PathBuf::from(p), &mut not_found, &mut paths);
        }
    } else {
        for p in env
            .path_prefix
            .as_deref()
            .unwrap_or("")
            .split(':')
            .filter(|s| !s.is_empty())
        {
            direct(PathBuf::from(p), &mut not_found, &mut paths);
        }
        for m in view::markers(found) {
            for rel in &m.search_paths {
                match search::pattern_parts(&dir, rel) {
                    Some((d, pre, suf)) => {
                        let mut names: Vec<String> = std::fs::read_dir(&d)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .filter_map(|e| e.file_name().into_string().ok())
                            .filter(|n| search::arch_in_name(n, &pre, &suf).is_some())
                            .collect();
                        names.sort();
                        if names.is_empty() {
                            not_found.push(search::resolve_path(&dir, rel).display().to_string());
                        }
                        for n in names {
                            let p = d.join(n);
                            if p.is_file() {
                                push_unique(&mut paths, p);
                            }
                        }
                    }
                    None => direct(search::resolve_path(&dir, rel), &mut not_found, &mut paths),
                }
            }
        }
    }
    open(paths, not_found)
}

fn open(paths: Vec<PathBuf>, not_found: Vec<String>) -> Opened {
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    for p in paths {
        match Input::open(&p) {
            Ok(i) => files.push((p, i)),
            Err(e) => unreadable.push(format!("{e:#}")),
        }
    }
    Opened {
        files,
        not_found,
        unreadable,
    }
}

/// Opens every path of `paths` that is a file (the archives the loader may try for some
/// device, from `gfxkit_inventory::kpack::select_paths`).
pub fn open_existing(paths: &[PathBuf]) -> HashMap<PathBuf, Input> {
    let mut out = HashMap::new();
    for p in paths {
        if p.is_file() {
            if let Ok(i) = Input::open(p) {
                out.insert(p.clone(), i);
            }
        }
    }
    out
}

/// The directory of the binary at `binary` (absolute, symbolic links resolved), against
/// which marker paths are resolved.
pub fn binary_dir(binary: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    abs.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The loader chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LoaderArg {
    /// Every candidate archive tried in turn (ROCm after the fix for TheRock#7081).
    #[default]
    Current,
    /// The first archive listing a matching architecture decides (earlier ROCm 7 releases).
    Old,
}

impl From<LoaderArg> for Loader {
    fn from(l: LoaderArg) -> Loader {
        match l {
            LoaderArg::Current => Loader::Current,
            LoaderArg::Old => Loader::Old,
        }
    }
}
