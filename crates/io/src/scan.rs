//! Finding and reading many input files: a recursive, parallel directory walk that follows
//! symbolic links without looping, skips files that cannot hold device code by their first
//! bytes, maps each file once and runs a function over its bytes on all cores.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # std::fs::write(dir.path().join("k.hipfb"), b"__CLANG_OFFLOAD_BUNDLE__\0\0\0\0\0\0\0\0")?;
//! let paths = [dir.path().to_path_buf()];
//! let results = gfxkit_io::scan::scan(&paths, &(), |_path, bytes| {
//!     Ok::<_, std::convert::Infallible>(bytes.len())
//! })?;
//! assert_eq!(results.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::format::Formats;
use crate::input::{for_each_of, for_each_with, Failed, Input};
use crate::{Error, ErrorKind};
use rayon::prelude::*;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::input::Progress;

/// One file to read, with how it was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The path as reached (through the named directory).
    pub path: PathBuf,
    /// Named on the command line (then it is read even if it holds no device code).
    pub explicit: bool,
    /// A regular file met in a directory walk (not a container image layout directory, not
    /// a path named on the command line).
    pub walked_file: bool,
    /// The size and identity of a regular file as the walk stated it (`None` for a package
    /// member, a directory, anything else).
    pub stated: Option<Stated>,
}

/// A regular file's size and identity (device, inode), stated once by the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stated {
    /// Bytes.
    pub size: u64,
    /// The device and inode: one file reached by two paths has one.
    pub id: (u64, u64),
}

impl Stated {
    fn of(m: &std::fs::Metadata) -> Option<Stated> {
        m.is_file().then(|| Stated {
            size: m.len(),
            id: (m.dev(), m.ino()),
        })
    }
}

/// The outcome for one file (or package member).
#[derive(Debug)]
pub struct Scanned<T, E> {
    /// The path (`package!member` for a member).
    pub path: PathBuf,
    /// Named on the command line rather than found in a directory.
    pub explicit: bool,
    /// The package file (as named or found) this is one member of; `None` for a file read
    /// whole, a member named directly as `pkg!member`, and a package reported as a whole.
    pub package: Option<PathBuf>,
    /// For a file of a container image: the digest of the layer that holds it.
    pub layer: Option<String>,
    /// What `f` returned, or why the file could not be read.
    pub result: Result<T, ScanError<E>>,
}

/// Why a scanned file has no value.
#[derive(Debug)]
pub enum ScanError<E> {
    /// The file cannot be opened, or is a package that cannot be walked.
    Input(Error),
    /// The function failed, a package member is damaged, or a package named directly has no
    /// member that may hold device code.
    Member(Failed<E>),
}

/// Lists the files under `paths`: files named directly, and for directories every regular
/// file below them except gfxkit's temporary files (symbolic links followed; each directory
/// and each file visited once, by device and inode, so links cannot loop or duplicate).
/// A package member named `pkg!member` (nested: `a.tar!b.whl!c.so`) is a file named directly.
/// Sorted by path. A path that does not exist is an error (`cannot read PATH`).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<Candidate>, Error> {
    let seen_dirs = Mutex::new(HashSet::new());
    let found = Mutex::new(Vec::new());
    for p in paths {
        // A package member `pkg!member` is read through its package, as named.
        if let Some(pkg) = crate::input::member_package(p) {
            let meta = std::fs::metadata(pkg).map_err(|e| Error::new(p, ErrorKind::Read(e)))?;
            // Stated as nothing: its package is not the member's bytes.
            let member = Reached {
                stated: None,
                ..Reached::new(p, &meta, true, false)
            };
            member.found(&found);
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::new(p, ErrorKind::Read(e)))?;
        if meta.is_dir() && !crate::input::is_image_dir(p) {
            walk_dir(p, &meta, &seen_dirs, &found);
        } else {
            Reached::new(p, &meta, true, false).found(&found);
        }
    }
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    // Explicit files first among equal paths, then by path; each inode once.
    found.sort_by(|a, b| a.path.cmp(&b.path).then(b.explicit.cmp(&a.explicit)));
    let mut seen_files = HashSet::new();
    Ok(found
        .into_iter()
        .filter(|r| r.explicit || seen_files.insert(r.id))
        .map(|r| Candidate {
            path: r.path,
            explicit: r.explicit,
            walked_file: r.walked_file,
            stated: r.stated,
        })
        .collect())
}

/// A path found by the walk.
struct Reached {
    path: PathBuf,
    /// Device and inode (of the package, for a member).
    id: (u64, u64),
    explicit: bool,
    walked_file: bool,
    stated: Option<Stated>,
}

/// Every path found so far.
type Found = Mutex<Vec<Reached>>;

impl Reached {
    /// `path`, stated as `meta`, as reached.
    fn new(path: &Path, meta: &std::fs::Metadata, explicit: bool, walked_file: bool) -> Reached {
        Reached {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
            explicit,
            walked_file,
            stated: Stated::of(meta),
        }
    }

    /// Adds it to what was found.
    fn found(self, found: &Found) {
        found.lock().unwrap_or_else(|e| e.into_inner()).push(self);
    }
}

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
        if m.is_dir() && crate::input::is_image_dir(path) {
            // A container image layout: one input, its layers read as its file system.
            Reached::new(path, &m, false, false).found(found);
        } else if m.is_dir() {
            walk_dir(path, &m, seen, found);
        } else if m.is_file()
            && m.len() > 0
            // A temporary file of an interrupted write is not an input.
            && !path
                .file_name()
                .is_some_and(crate::write::is_temp_name)
        {
            Reached::new(path, &m, false, true).found(found);
        }
    });
}

/// Whether a file met in a directory walk may hold device code, for gfxkit's own formats
/// ([`Formats::worth_reading`]).
pub fn worth_reading(path: &Path) -> bool {
    Formats::standard().worth_reading(path)
}

/// Runs `f` over the bytes of every file under `paths` that may hold device code (files named
/// directly are always read), in parallel. Results are in path order. Packages (wheels,
/// conda, deb, rpm, tarballs) give one result per member that may hold device code, with the
/// path `package!member`; a package named directly that has none gives
/// [`Failed::NoDeviceCode`] (one found in a directory is left out). The outer error is a path
/// in `paths` that does not exist.
pub fn scan<T, E, F>(
    paths: &[PathBuf],
    progress: &dyn Progress,
    f: F,
) -> Result<Vec<Scanned<T, E>>, Error>
where
    T: Send,
    E: Send,
    F: Fn(&Path, &[u8]) -> Result<T, E> + Sync,
{
    scan_with(paths, &Formats::standard(), progress, f)
}

/// [`scan`], with the files of a walk chosen by what `formats` find worth reading
/// ([`Formats::worth_reading`]).
pub fn scan_with<T, E, F>(
    paths: &[PathBuf],
    formats: &Formats,
    progress: &dyn Progress,
    f: F,
) -> Result<Vec<Scanned<T, E>>, Error>
where
    T: Send,
    E: Send,
    F: Fn(&Path, &[u8]) -> Result<T, E> + Sync,
{
    let candidates = collect(paths)?;
    progress.start(candidates.len() as u64);
    let results: Vec<Vec<Scanned<T, E>>> = candidates
        .par_iter()
        .map(|c| {
            let visit = |input: Input| {
                let layer = input.layer().map(str::to_owned);
                f(input.path(), &input).map(|v| (v, layer))
            };
            // A regular file of a walk is opened once, to see whether it is worth reading
            // and to read it.
            let read = if c.walked_file {
                match formats.open_if_worth_reading(&c.path) {
                    Ok(Some(input)) => {
                        progress.reading(&c.path.display().to_string());
                        Some(for_each_of(
                            &c.path,
                            input,
                            progress,
                            formats.settings(),
                            visit,
                        ))
                    }
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                }
            } else if c.explicit || formats.worth_reading(&c.path) {
                Some(for_each_with(&c.path, progress, formats.settings(), visit))
            } else {
                None
            };
            let out = if let Some(read) = read {
                match read {
                    Ok(items) => items
                        .into_iter()
                        .filter(|(_, r)| c.explicit || !matches!(r, Err(Failed::NoDeviceCode)))
                        .map(|(path, result)| {
                            let (result, layer) = match result {
                                Ok((v, layer)) => (Ok(v), layer),
                                Err(e) => (Err(ScanError::Member(e)), None),
                            };
                            Scanned {
                                package: (path != c.path).then(|| c.path.clone()),
                                path,
                                explicit: c.explicit,
                                layer,
                                result,
                            }
                        })
                        .collect(),
                    Err(e) => vec![Scanned {
                        package: None,
                        path: c.path.clone(),
                        explicit: c.explicit,
                        layer: None,
                        result: Err(ScanError::Input(e)),
                    }],
                }
            } else {
                Vec::new()
            };
            progress.advance();
            out
        })
        .collect();
    progress.finish();
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
