//! Finding and opening the `.kpack` archives a split binary's markers name: the file-system
//! half of `gfxkit_kpack::search` (the library holds the rules, this module touches files),
//! and what `doctor` concludes for a split binary from the archives it finds.

use crate::input::Input;
use gfxkit_host::Discovery;
use gfxkit_inventory::kpack as inv_kpack;
use gfxkit_inventory::kpack::Archives;
use gfxkit_kpack::search::{self, Env, Loader};
use gfxkit_kpack::view;
use gfxkit_target_id::TargetId;
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
            Err(e) => unreadable.push(chain(&e)),
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

/// `doctor` of a split binary at `path`: per device, `None` when every wrapper loads, else why
/// not; the architectures its archives hold; and the damage met (archives present but
/// damaged, code objects that do not decode). All empty for other files and for files not
/// loaded at run time.
pub fn doctor_verdicts(
    path: &Path,
    inv: &gfxkit_inventory::Inventory<'_>,
    devices: &[TargetId],
    loader: Loader,
) -> gfxkit_inventory::doctor::KpackVerdicts {
    let mut out = gfxkit_inventory::doctor::KpackVerdicts::default();
    if !inv_kpack::is_split(inv) || !inv.loaded_at_run_time() {
        return out;
    }
    let env = env();
    let dir = binary_dir(path);
    // The devices judged, then those an override could make of them (for the remedies).
    let mut all: Vec<TargetId> = devices.to_vec();
    for d in devices {
        for o in gfxkit_inventory::remedy::override_devices(d) {
            if !all.contains(&o) {
                all.push(o);
            }
        }
    }
    let paths = inv_kpack::select_paths(inv, &dir, &all, &env);
    let files = open_existing(&paths);
    let open = |p: &Path| files.get(p).map(|i| &i[..]);
    for d in &all {
        let units = inv_kpack::select_units(inv, &dir, d, loader, &env, &open);
        if devices.contains(d) {
            inv_kpack::damage_met(&units, &mut out.damage);
            if let Some(p) = inv_kpack::missing_package(&units) {
                out.packages.push((d.to_string(), p));
            }
        }
        out.verdicts
            .push((d.to_string(), inv_kpack::doctor_verdict(&units)));
    }
    let o = all_archives(path, &inv.discovery, &env);
    out.targets = inv_kpack::targets(&o.archives());
    out
}

pub use gfxkit_inventory::error::chain;

/// `list` of any file: a `.kpack` archive, a kernel database (`crate::database`), a split
/// binary seen through the archives its markers find, or anything else as the inventory
/// lists it.
pub fn list_file_bytes(
    path: &Path,
    data: &[u8],
    check: bool,
) -> gfxkit_inventory::list::FileListing {
    let name = path.display().to_string();
    if inv_kpack::is_archive(data) {
        return inv_kpack::list_archive(&name, data, check);
    }
    if let Some(l) = crate::database::list_file_bytes(path, data) {
        return l;
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    let mut l = gfxkit_inventory::list::list(&name, &inv, check);
    if inv_kpack::is_split(&inv) {
        let o = all_archives(path, &inv.discovery, &env());
        inv_kpack::list_split(&mut l, &inv, &o.archives(), check);
    }
    l
}

/// `select` of a split binary: what the kpack loader finds for each wrapper on `device`
/// (empty for other files).
pub fn select_units(
    path: &Path,
    inv: &gfxkit_inventory::Inventory<'_>,
    device: &gfxkit_target_id::TargetId,
    loader: gfxkit_kpack::search::Loader,
) -> Vec<inv_kpack::KpackUnit> {
    if !inv_kpack::is_split(inv) {
        return Vec::new();
    }
    let env = env();
    let dir = binary_dir(path);
    let paths = inv_kpack::select_paths(inv, &dir, std::slice::from_ref(device), &env);
    let files = open_existing(&paths);
    let open = |p: &Path| files.get(p).map(|i| &i[..]);
    inv_kpack::select_units(inv, &dir, device, loader, &env, &open)
}

/// `verify` of a `.kpack` file or a split binary; `None` for other files.
pub fn verify_file_bytes(
    path: &Path,
    data: &[u8],
    inv: &gfxkit_inventory::Inventory<'_>,
) -> Option<gfxkit_inventory::verify::Verification> {
    let name = path.display().to_string();
    if inv_kpack::is_archive(data) {
        return Some(inv_kpack::verify_archive(&name, data));
    }
    if !inv_kpack::is_split(inv) {
        return None;
    }
    let o = all_archives(path, &inv.discovery, &env());
    Some(inv_kpack::verify_split(&name, inv, &o.archives()))
}

/// Code objects taken from kpack archives: the picks and the archive files they come from.
pub struct KpackExtract {
    /// What to take.
    pub picks: Vec<inv_kpack::Pick>,
    /// Archive paths, indexed by [`inv_kpack::Pick::archive`].
    pub archives: Vec<PathBuf>,
}

/// For `extract` and `kernels`: the code objects of a split binary (through its archives) or
/// of a `.kpack` file that `wanted` (given the entry ID) selects; `None` for other files.
/// The error (an archive or wrapper that cannot be read) names `path`.
pub fn extract_picks(
    path: &Path,
    data: &[u8],
    wanted: &mut dyn FnMut(&str) -> bool,
) -> Result<Option<KpackExtract>, crate::Error> {
    let found = |e| crate::Error::new(path, crate::ErrorKind::Found(e));
    if inv_kpack::is_archive(data) {
        let picks = inv_kpack::extract_archive(data, wanted).map_err(found)?;
        return Ok(Some(KpackExtract {
            picks,
            archives: vec![path.to_path_buf()],
        }));
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    if !inv_kpack::is_split(&inv) {
        return Ok(None);
    }
    let o = all_archives(path, &inv.discovery, &env());
    let picks = inv_kpack::extract_split(&inv, &o.archives(), wanted).map_err(found)?;
    Ok(Some(KpackExtract {
        picks,
        archives: o.files.iter().map(|(p, _)| p.clone()).collect(),
    }))
}

/// The kernels of the file at `path` (`data` its bytes), as `gfxkit kernels` lists them: a
/// split binary's through the archives its markers name, a `.kpack` file's by kernel, any
/// other file's from its units; with the errors met. Only code objects whose target ID
/// overlaps `wanted` count.
pub fn kernels(
    path: &Path,
    data: &[u8],
    wanted: Option<&TargetId>,
    demangle: bool,
) -> Result<gfxkit_inventory::kernels::KernelListing, crate::Error> {
    use gfxkit_inventory::kernels::{self, KernelListing};
    let name = path.display().to_string();
    if let Some(x) = extract_picks(path, data, &mut |_| true)? {
        let mut out = KernelListing::default();
        for (ai, archive_path) in x.archives.iter().enumerate() {
            let bytes = Input::open(archive_path)?;
            let a = gfxkit_kpack::Archive::parse(&bytes)
                .map_err(|e| crate::Error::new(archive_path, crate::ErrorKind::Kpack(e)))?;
            let picks: Vec<_> = x.picks.iter().filter(|p| p.archive == ai).collect();
            let (rows, errors) = kernels::archive_rows(
                &name,
                &archive_path.display().to_string(),
                &a,
                &picks,
                wanted,
                demangle,
            );
            out.kernels.extend(rows);
            out.errors.extend(errors);
        }
        return Ok(out);
    }
    if let Some(l) = crate::database::kernels(path, data, wanted, demangle) {
        return l;
    }
    let (kernels, errors) = kernels::file_rows(&name, data, wanted, demangle)
        .map_err(|e| crate::Error::new(path, crate::ErrorKind::Locate(e)))?;
    Ok(KernelListing {
        kernels,
        errors,
        ..Default::default()
    })
}

/// `size` of a `.kpack` file, a kernel database or raw code object (`crate::database`), or a
/// split binary; `None` for other files.
pub fn size_survey(
    path: &Path,
    data: &[u8],
) -> Option<Result<gfxkit_shrink::Survey, gfxkit_shrink::Error>> {
    if inv_kpack::is_archive(data) {
        return inv_kpack::size_archive(data);
    }
    if let Some(s) = crate::database::size_survey(path, data) {
        return Some(s);
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    if !inv_kpack::is_split(&inv) {
        return None;
    }
    let o = all_archives(path, &inv.discovery, &env());
    Some(inv_kpack::size_split(
        &inv,
        data.len() as u64,
        &o.archives(),
    ))
}

/// The archives (canonical paths) whose kernels [`size_survey`] counts under the binary split
/// by kpack at `path` (`data` its bytes): those found and opened; empty for other files. A
/// caller sizing a tree leaves these `.kpack` files out, their kernels being counted already.
pub fn size_archives(path: &Path, data: &[u8]) -> Vec<PathBuf> {
    if inv_kpack::is_archive(data) || crate::database::kind(path, data).is_some() {
        return Vec::new();
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    if !inv_kpack::is_split(&inv) {
        return Vec::new();
    }
    all_archives(path, &inv.discovery, &env())
        .files
        .into_iter()
        .map(|(p, _)| std::fs::canonicalize(&p).unwrap_or(p))
        .collect()
}

/// The code objects of the file at `path` (`data` its bytes) with their SHA-256
/// ([`gfxkit_inventory::digest`]): a split binary's through the archives its markers name, a
/// `.kpack` file's by kernel, any other file's from its units; with the errors met. Archives
/// are named by their canonical path, so that a code object reached through a split binary
/// and through its `.kpack` file is one place. With `kernels`, kernels are counted.
pub fn digests(
    path: &Path,
    data: &[u8],
    kernels: bool,
) -> Result<(Vec<gfxkit_inventory::digest::Digest>, Vec<String>), crate::Error> {
    use gfxkit_inventory::digest;
    let name = path.display().to_string();
    // A package member has no path of its own on disk.
    let on_disk = path.is_file();
    let canonical = |p: &Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    if inv_kpack::is_archive(data) {
        let found = |e| crate::Error::new(path, crate::ErrorKind::Found(e));
        let picks = inv_kpack::extract_archive(data, &mut |_| true).map_err(found)?;
        let a = gfxkit_kpack::Archive::parse(data)
            .map_err(|e| crate::Error::new(path, crate::ErrorKind::Kpack(e)))?;
        let archive_name = if on_disk {
            canonical(path)
        } else {
            name.clone()
        };
        let picks: Vec<_> = picks.iter().collect();
        return Ok(digest::archive_digests(
            &name,
            &archive_name,
            &a,
            &picks,
            kernels,
        ));
    }
    if on_disk {
        if let Some(x) = extract_picks(path, data, &mut |_| true)? {
            let (mut out, mut errors) = (Vec::new(), Vec::new());
            for (ai, archive_path) in x.archives.iter().enumerate() {
                let bytes = Input::open(archive_path)?;
                let a = gfxkit_kpack::Archive::parse(&bytes)
                    .map_err(|e| crate::Error::new(archive_path, crate::ErrorKind::Kpack(e)))?;
                let picks: Vec<_> = x.picks.iter().filter(|p| p.archive == ai).collect();
                let (d, e) =
                    digest::archive_digests(&name, &canonical(archive_path), &a, &picks, kernels);
                out.extend(d);
                errors.extend(e);
            }
            return Ok((out, errors));
        }
    }
    digest::file_digests(&name, data, kernels)
        .map_err(|e| crate::Error::new(path, crate::ErrorKind::Locate(e)))
}
