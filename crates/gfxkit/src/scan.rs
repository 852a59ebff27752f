//! Finding and reading many input files: a recursive, parallel directory walk that follows
//! symbolic links without looping, skips files that cannot hold device code by their first
//! bytes, maps each file once and runs a function over its bytes on all cores. A progress bar
//! shows on a terminal (stderr), nothing when piped.
//!
//! ```ignore
//! let results = scan::scan(&paths, &scan::Options::default(), |path, bytes| {
//!     let found = gfxkit_host::discover(bytes);
//!     Ok(found.bundles.len())
//! })?;
//! ```

use crate::input::Input;
use anyhow::{Context, Result};
use gfxkit_host::InputKind;
use rayon::prelude::*;
use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Options of a scan.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Never show a progress bar, even on a terminal.
    pub quiet: bool,
}

/// One file to read, with how it was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The path as reached (through the named directory).
    pub path: PathBuf,
    /// Named on the command line (then it is read even if it holds no device code).
    pub explicit: bool,
}

/// The outcome for one file.
#[derive(Debug)]
pub struct Scanned<T> {
    /// The path.
    pub path: PathBuf,
    /// Named on the command line rather than found in a directory.
    pub explicit: bool,
    /// What `f` returned, or why the file could not be read.
    pub result: Result<T>,
}

/// Lists the files under `paths`: files named directly, and for directories every regular
/// file below them except gfxkit's temporary files (symbolic links followed; each directory
/// and each file visited once, by device and inode, so links cannot loop or duplicate).
/// Sorted by path.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<Candidate>> {
    let seen_dirs = Mutex::new(HashSet::new());
    let found = Mutex::new(Vec::new());
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read {}", p.display()))?;
        if meta.is_dir() {
            walk_dir(p, &meta, &seen_dirs, &found);
        } else {
            found.lock().unwrap_or_else(|e| e.into_inner()).push((
                p.clone(),
                meta.dev(),
                meta.ino(),
                true,
            ));
        }
    }
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    // Explicit files first among equal paths, then by path; each inode once.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.3.cmp(&a.3)));
    let mut seen_files = HashSet::new();
    Ok(found
        .into_iter()
        .filter(|(_, dev, ino, explicit)| *explicit || seen_files.insert((*dev, *ino)))
        .map(|(path, _, _, explicit)| Candidate { path, explicit })
        .collect())
}

type Found = Mutex<Vec<(PathBuf, u64, u64, bool)>>;

fn walk_dir(
    dir: &Path,
    meta: &std::fs::Metadata,
    seen: &Mutex<HashSet<(u64, u64)>>,
    found: &Found,
) {
    if !seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((meta.dev(), meta.ino()))
    {
        return; // Already walked (a link back up the tree, or two links to one directory).
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return; // Unreadable directories are skipped, like `find` reports and goes on.
    };
    let entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.par_iter().for_each(|path| {
        // `metadata` follows links; a dangling link fails and is skipped.
        let Ok(m) = std::fs::metadata(path) else {
            return;
        };
        if m.is_dir() {
            walk_dir(path, &m, seen, found);
        } else if m.is_file()
            && m.len() > 0
            // A temporary file of an interrupted write is not an input.
            && !path
                .file_name()
                .is_some_and(crate::output::is_temp_name)
        {
            found.lock().unwrap_or_else(|e| e.into_inner()).push((
                path.clone(),
                m.dev(),
                m.ino(),
                false,
            ));
        }
    });
}

/// Reads the first bytes of `path` and tells whether it may hold device code.
pub fn worth_reading(path: &Path) -> bool {
    let mut prefix = [0u8; 64];
    let Ok(mut f) = std::fs::File::open(path) else {
        return true; // Let the real open report the error.
    };
    let mut n = 0;
    while n < prefix.len() {
        match f.read(&mut prefix[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return true,
        }
    }
    InputKind::sniff(&prefix[..n]).may_hold_device_code()
}

/// Runs `f` over the bytes of every file under `paths` that may hold device code (files named
/// directly are always read), in parallel. Results are in path order.
pub fn scan<T, F>(paths: &[PathBuf], opts: &Options, f: F) -> Result<Vec<Scanned<T>>>
where
    T: Send,
    F: Fn(&Path, &[u8]) -> Result<T> + Sync,
{
    let candidates = collect(paths)?;
    let bar = crate::output::progress(candidates.len() as u64, "scanning", opts.quiet);
    let results: Vec<Option<Scanned<T>>> = candidates
        .par_iter()
        .map(|c| {
            let out = if c.explicit || worth_reading(&c.path) {
                let result = Input::open(&c.path).and_then(|input| f(&c.path, &input));
                Some(Scanned {
                    path: c.path.clone(),
                    explicit: c.explicit,
                    result,
                })
            } else {
                None
            };
            bar.inc(1);
            out
        })
        .collect();
    bar.finish_and_clear();
    Ok(results.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_without_looping_and_skips_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/b/lib.so"), b"\x7fELF").unwrap();
        std::fs::write(d.join("a/empty"), b"").unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("a/b/up")).unwrap();
        std::os::unix::fs::symlink(d.join("a/b/lib.so"), d.join("a/lib.so.1")).unwrap();
        std::os::unix::fs::symlink(d.join("missing"), d.join("a/dangling")).unwrap();
        let got = collect(&[d.to_path_buf()]).unwrap();
        let names: Vec<String> = got
            .iter()
            .map(|c| c.path.strip_prefix(d).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a/b/lib.so"]);
    }
}
