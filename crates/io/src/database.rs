//! Kernel databases on disk: the file-system half of `gfxkit_inventory::database` (listing a
//! Tensile index's directory, opening the code objects it resolves to).

use crate::input::Input;
use gfxkit_inventory::database::{self as db, DbKind};
use gfxkit_inventory::list::FileListing;
use gfxkit_kernel_db::resolve::Listing;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Most names read from one index directory (a rocBLAS `library/` holds tens of files; a
/// hipBLASLt one with per-architecture subdirectories some thousands).
pub const MAX_DIR_NAMES: usize = 1 << 20;

/// The kind of kernel database `path` is, from its name and bytes.
pub fn kind(path: &Path, data: &[u8]) -> Option<DbKind> {
    db::kind(&path.to_string_lossy(), data)
}

/// The directory a Tensile index sits in, when it is a file on disk (not a package member).
pub fn index_dir(path: &Path) -> Option<PathBuf> {
    if crate::input::member_package(path).is_some() {
        return None;
    }
    let dir = path.parent()?;
    Some(if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir.to_path_buf()
    })
}

/// Where the companions of kernel database `path` are looked for: its directory when it is a
/// file on disk (`beside`: its surroundings are looked for) and not a package member; `None`
/// for bytes, whose name is no place on disk.
fn companions_dir(path: &Path, beside: bool) -> Option<PathBuf> {
    beside.then(|| index_dir(path)).flatten()
}

/// The names in `dir` and, one level down, in its subdirectories (`gfx942/x.co`): what
/// rocBLAS's rule is applied to. Sorted; `None` when `dir` cannot be read.
pub fn dir_names(dir: &Path) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        if out.len() >= MAX_DIR_NAMES {
            break;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        // The entry's own type, as the directory gives it (no stat of each file); a symbolic
        // link is followed (one to a directory counts as a directory, a dangling one is left
        // out).
        let Ok(kind) = e.file_type() else { continue };
        let is_dir = if kind.is_symlink() {
            match std::fs::metadata(e.path()) {
                Ok(meta) => meta.is_dir(),
                Err(_) => continue,
            }
        } else {
            kind.is_dir()
        };
        if is_dir {
            out.push(format!("{name}/"));
            if let Ok(rd) = std::fs::read_dir(e.path()) {
                for s in rd.flatten().take(MAX_DIR_NAMES) {
                    out.push(format!("{name}/{}", s.file_name().to_string_lossy()));
                }
            }
        } else {
            out.push(name);
        }
    }
    out.sort();
    Some(out)
}

/// The listings of index directories ([`dir_names`]), each read once for all the indexes of
/// one run that sit in it: a hipBLASLt `library/` holds some 700 indexes beside 1,400 names.
/// Shared between threads; a directory is taken as it was when first read.
pub struct DirNames {
    read: Mutex<HashMap<PathBuf, Option<Arc<Listing>>>>,
    /// Whether directories are read at all.
    reads: bool,
}

impl Default for DirNames {
    fn default() -> DirNames {
        DirNames::new()
    }
}

impl DirNames {
    /// An empty cache.
    pub fn new() -> DirNames {
        DirNames {
            read: Mutex::default(),
            reads: true,
        }
    }

    /// A cache that reads no directory: every index is taken as having nothing beside it.
    pub fn none() -> DirNames {
        DirNames {
            read: Mutex::default(),
            reads: false,
        }
    }

    /// The listing of `dir`, read now or earlier in this run; `None` when it cannot be read.
    pub fn of(&self, dir: &Path) -> Option<Arc<Listing>> {
        if !self.reads {
            return None;
        }
        let lock = || self.read.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = lock().get(dir) {
            return known.clone();
        }
        // Read outside the lock: another thread may read the same directory meanwhile, and the
        // first answer stored is the one every later caller gets.
        let listing = dir_names(dir).map(|names| Arc::new(Listing::of(names)));
        lock().entry(dir.to_path_buf()).or_insert(listing).clone()
    }
}

/// `list` of a kernel database (`None` for other files): a Tensile index with its files
/// resolved against its directory (its listing taken from `dirs`).
pub fn list_file_bytes(path: &Path, data: &[u8], dirs: &DirNames) -> Option<FileListing> {
    let kind = kind(path, data)?;
    let name = path.display().to_string();
    let listing = match kind {
        DbKind::TensileIndex => index_dir(path).and_then(|d| dirs.of(&d)),
        _ => None,
    };
    Some(db::list(&name, data, kind, listing.as_deref()))
}

/// What `verify` finds wrong in a kernel database on disk against the files beside it, each
/// a message: a hipBLASLt mapping against the names in its directory (listed through `dirs`),
/// an aiter kernel map against the function symbols of the code objects its rows name (opened
/// beside it, as `verify` opens them). Empty for other files, for one that does not read (its
/// listing says so) and for one whose directory cannot be listed (a package member, which
/// `verify` checks only for reading). For answers that take what a file's listing says (which
/// names neither kind's missing pieces) and must not call an incomplete database sound.
pub fn beside_problems(path: &Path, data: &[u8], dirs: &DirNames) -> Vec<String> {
    let kind = kind(path, data);
    if !matches!(kind, Some(DbKind::TensileMapping | DbKind::AiterMap)) {
        return Vec::new();
    }
    let dir = index_dir(path);
    let Some(listing) = dir.as_deref().and_then(|d| dirs.of(d)) else {
        return Vec::new();
    };
    let verified = if kind == Some(DbKind::AiterMap) {
        verify_aiter_map(path, data, dir.as_deref())
    } else {
        let names: Vec<&str> = listing.paths().collect();
        db::verify_mapping(&path.display().to_string(), data, Some(&names))
    };
    match verified {
        Ok(v) => v.problems.into_iter().map(|f| f.message).collect(),
        Err(_) => Vec::new(),
    }
}

/// `size` of a kernel database or a raw code object (`None` for other files).
pub fn size_survey(
    path: &Path,
    data: &[u8],
) -> Option<Result<gfxkit_shrink::Survey, gfxkit_shrink::Error>> {
    if let Some(k) = kind(path, data) {
        return db::size_survey(&path.to_string_lossy(), data, k);
    }
    db::code_object_survey(data)
}

/// Opens the files of `names` (relative to `dir`) that exist, for reading their symbols.
pub fn open_all(dir: &Path, names: &[String]) -> Vec<(String, Result<Input, crate::Error>)> {
    names
        .iter()
        .map(|n| (n.clone(), Input::open(&dir.join(n))))
        .collect()
}

/// `kernels` of a Tensile index (`None` for other files): one row per solution of each
/// processor row ([`gfxkit_inventory::kernels::solution_rows`]), resolved against the files
/// beside the index (an index that is a package member has no directory: its solutions are
/// listed as not present here, and found among the package's members by
/// [`crate::whole::kernels`]).
pub fn kernels(
    path: &Path,
    data: &[u8],
    beside: bool,
    wanted: Option<&gfxkit_target_id::TargetId>,
    demangle: bool,
) -> Option<Result<gfxkit_inventory::kernels::KernelListing, crate::Error>> {
    if kind(path, data)? != DbKind::TensileIndex {
        return None;
    }
    let name = path.display().to_string();
    let listed = with_index(
        path,
        data,
        companions_dir(path, beside),
        |index, listing, open| {
            let (solutions, errors) = gfxkit_inventory::kernels::solution_rows(
                &name, index, listing, open, wanted, demangle,
            );
            gfxkit_inventory::kernels::KernelListing {
                kernels: Vec::new(),
                solutions,
                errors,
            }
        },
    );
    Some(listed.map_err(|e| crate::Error::new(path, crate::ErrorKind::Locate(e))))
}

/// Reads the Tensile index `data` (at `path`) and calls `f` with it, the names in its
/// directory (`None` for an index that is a package member, or whose directory cannot be
/// listed) and a function giving the bytes (mapped) of the files its rows need there.
fn with_index<R>(
    path: &Path,
    data: &[u8],
    dir: Option<PathBuf>,
    f: impl for<'d> FnOnce(
        &gfxkit_kernel_db::tensile::Index<'_>,
        Option<&gfxkit_kernel_db::resolve::Listing>,
        &(dyn Fn(&str) -> Option<&'d [u8]> + Sync),
    ) -> R,
) -> gfxkit_inventory::Result<R> {
    let mut file = None;
    let index = db::read_tensile(&path.display().to_string(), data, &mut file)?;
    // A directory that cannot be listed (bytes named as a package's member) is as none.
    let names = dir.as_deref().and_then(dir_names);
    let listing = names
        .as_ref()
        .map(|n| gfxkit_kernel_db::resolve::Listing::new(n));
    let files = match (&dir, &listing) {
        (Some(d), Some(l)) => {
            open_all(d, &db::needed_files(&path.display().to_string(), &index, l))
        }
        _ => Vec::new(),
    };
    let open = |n: &str| -> Option<&[u8]> {
        files
            .iter()
            .find(|(f, _)| f == n)
            .and_then(|(_, i)| i.as_ref().ok())
            .map(|i| &i[..])
    };
    Ok(f(&index, listing.as_ref(), &open))
}

/// `verify` of a kernel database (`None` for other files): `.kdb`/`.aks2` records decoded and
/// checked; a Tensile index, and an aiter kernel map, against the files beside it (their
/// function symbols read from the mapped files); a hipBLASLt mapping against the names beside
/// it. A database that is a package member has no directory: it is read here, and a Tensile
/// index keeps its rows, a mapping itself ([`gfxkit_inventory::verify::Verification::unresolved`]),
/// checked against the names of the members beside it once its package is read
/// ([`crate::whole::verify`]).
pub fn verify_file_bytes(
    path: &Path,
    data: &[u8],
    beside: bool,
) -> Option<gfxkit_inventory::Result<gfxkit_inventory::verify::Verification>> {
    let kind = kind(path, data)?;
    let name = path.display().to_string();
    let dir = companions_dir(path, beside);
    match kind {
        DbKind::MiopenKdb | DbKind::Aks2 => db::verify_opened(&name, data, kind),
        DbKind::TensileMapping => {
            let names = dir.and_then(|d| dir_names(&d));
            let refs: Option<Vec<&str>> = names
                .as_ref()
                .map(|n| n.iter().map(String::as_str).collect());
            Some(db::verify_mapping(&name, data, refs.as_deref()))
        }
        DbKind::TensileIndex => Some(with_index(path, data, dir, |index, listing, open| {
            db::verify_tensile(&name, index, listing, open)
        })),
        DbKind::AiterMap => Some(verify_aiter_map(path, data, dir.as_deref())),
    }
}

/// `verify` of an aiter kernel map with the code objects its rows name, opened beside it
/// (names that climb out of its directory are not opened: reported as not there). A map that
/// is a package member is checked without its directory: only that it reads.
fn verify_aiter_map(
    path: &Path,
    data: &[u8],
    dir: Option<&Path>,
) -> gfxkit_inventory::Result<gfxkit_inventory::verify::Verification> {
    let name = path.display().to_string();
    let Some(dir) = dir else {
        return db::verify_aiter_map(&name, data, None);
    };
    let limits = gfxkit_kernel_db::Limits::default();
    let mut files: Vec<String> = gfxkit_kernel_db::aiter::KernelMap::parse(data, &limits)
        .map(|m| m.rows.into_iter().map(|r| r.file).collect())
        .unwrap_or_default(); // A map that does not read is reported below.
    files.retain(|f| !f.starts_with('/') && !f.split('/').any(|c| c == ".."));
    files.sort();
    files.dedup();
    let opened = open_all(dir, &files);
    let by_name: std::collections::HashMap<&str, &[u8]> = opened
        .iter()
        .filter_map(|(n, i)| Some((n.as_str(), &i.as_ref().ok()?[..])))
        .collect();
    let open = |n: &str| by_name.get(n).copied();
    db::verify_aiter_map(&name, data, Some(&open))
}
