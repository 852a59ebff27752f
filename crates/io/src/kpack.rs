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
    let concrete: Vec<TargetId> = all
        .iter()
        .flat_map(gfxkit_host::select::concrete_settings)
        .collect();
    let paths = inv_kpack::select_paths(inv, &dir, &concrete, &env);
    let files = open_existing(&paths);
    let open = |p: &Path| files.get(p).map(|i| &i[..]);
    for d in &all {
        let (units, needs) = on_device(inv, &dir, d, loader, &env, &open);
        if devices.contains(d) {
            inv_kpack::damage_met(&units, &mut out.damage);
            if let Some(p) = inv_kpack::missing_package(&units) {
                out.packages.push((d.to_string(), p));
            }
        }
        out.verdicts
            .push((d.to_string(), inv_kpack::doctor_verdict(&units)));
        if let Some(n) = needs {
            out.needs.push((d.to_string(), n));
        }
    }
    let o = all_archives(path, &inv.discovery, &env);
    out.targets = inv_kpack::targets(&o.archives());
    out
}

pub use gfxkit_inventory::error::chain;

/// What the kpack loader finds for each wrapper of a split binary (in `dir`) on `device`
/// ([`by_setting`]); `open` gives the archives already opened.
fn on_device<'f>(
    inv: &gfxkit_inventory::Inventory<'_>,
    dir: &Path,
    device: &TargetId,
    loader: Loader,
    env: &Env,
    open: &dyn Fn(&Path) -> Option<&'f [u8]>,
) -> (Vec<inv_kpack::KpackUnit>, Option<String>) {
    by_setting(device, |s| {
        inv_kpack::select_units(inv, dir, s, loader, env, open)
    })
}

/// What the kpack loader finds on `device` (`look` gives the units on one concrete device),
/// with the features the device leaves unknown set as a real device has them: every concrete
/// setting is tried (a `gfx90a` device finds `gfx90a:xnack-` archives), as bundles are
/// judged. The units are those of the first setting under which every unit loads, else those
/// of the device as given (what it was asked for, with its failure); with what the device
/// must be set to when only some settings load them ([`gfxkit_inventory::doctor::needs`]).
pub fn by_setting(
    device: &TargetId,
    look: impl Fn(&TargetId) -> Vec<inv_kpack::KpackUnit>,
) -> (Vec<inv_kpack::KpackUnit>, Option<String>) {
    let settings = gfxkit_host::select::concrete_settings(device);
    let mut tried: Vec<_> = settings.iter().map(&look).collect();
    let working: Vec<&TargetId> = settings
        .iter()
        .zip(&tried)
        .filter(|(_, units)| inv_kpack::doctor_verdict(units).is_none())
        .map(|(s, _)| s)
        .collect();
    // A setting that does not load is not what the device has: the first that does is
    // reported, with the damage met there; when none does, the device as given.
    let Some(first) = settings.iter().position(|s| working.first() == Some(&s)) else {
        return (look(device), None);
    };
    let needs = gfxkit_inventory::doctor::needs(device, &working, settings.len());
    (tried.swap_remove(first), needs)
}

/// `select` of a split binary: what the kpack loader finds for each wrapper on `device`, under
/// the first concrete setting of the features the device leaves unknown that loads them all
/// (else the device as given), with what the device must be set to when only some settings
/// do; empty for other files.
pub fn select_units(
    path: &Path,
    inv: &gfxkit_inventory::Inventory<'_>,
    device: &gfxkit_target_id::TargetId,
    loader: gfxkit_kpack::search::Loader,
) -> (Vec<inv_kpack::KpackUnit>, Option<String>) {
    if !inv_kpack::is_split(inv) {
        return (Vec::new(), None);
    }
    let env = env();
    let dir = binary_dir(path);
    let settings = gfxkit_host::select::concrete_settings(device);
    let paths = inv_kpack::select_paths(inv, &dir, &settings, &env);
    let files = open_existing(&paths);
    let open = |p: &Path| files.get(p).map(|i| &i[..]);
    on_device(inv, &dir, device, loader, &env, &open)
}

/// Code objects taken from kpack archives: the picks and the archive files they come from.
pub struct KpackExtract {
    /// What to take.
    pub picks: Vec<inv_kpack::Pick>,
    /// Archive paths, indexed by [`inv_kpack::Pick::archive`].
    pub archives: Vec<PathBuf>,
}

/// For `extract`: the code objects of the `.kpack` archive `data` (the file `path`) that
/// `wanted` (given the entry ID) selects. An archive that does not parse is the error, with
/// its offset; one whose kernels cannot be read, naming `path`.
pub fn archive_picks(
    path: &Path,
    data: &[u8],
    wanted: &mut dyn FnMut(&str) -> bool,
) -> Result<KpackExtract, crate::Error> {
    if let Err(e) = gfxkit_kpack::Archive::parse(data) {
        return Err(crate::Error::new(path, crate::ErrorKind::Kpack(e)));
    }
    let picks = inv_kpack::extract_archive(data, wanted)
        .map_err(|e| crate::Error::new(path, crate::ErrorKind::Found(e)))?;
    Ok(KpackExtract {
        picks,
        archives: vec![path.to_path_buf()],
    })
}

/// For `extract`: the code objects of a binary split by kpack (through its archives) that
/// `wanted` (given the entry ID) selects; `None` for a binary that is not split. The error
/// (an archive or wrapper that cannot be read) names `path`.
pub fn split_picks(
    path: &Path,
    data: &[u8],
    wanted: &mut dyn FnMut(&str) -> bool,
    limits: &gfxkit_bundle::limits::Limits,
) -> Result<Option<KpackExtract>, crate::Error> {
    let found = |e| crate::Error::new(path, crate::ErrorKind::Found(e));
    let inv = gfxkit_inventory::Inventory::of_with(data, limits);
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
