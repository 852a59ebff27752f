//! Binaries split by ROCm's kpack (`HIPK` wrappers) seen through their `.kpack` archives, and
//! `.kpack` files themselves, for every command: the listing, the loader's choice on a device,
//! the doctor's verdict, verification, sizes and extraction. The rules are
//! [`gfxkit_kpack`]'s; this module turns them into the answers the other modules give for fat
//! binaries.
//!
//! No file I/O: the caller finds and opens the archives ([`Archives`]: every file a marker's
//! `@GFXARCH@` pattern matches, for listing; [`select_paths`] for a device) and lends their
//! bytes.

use crate::inventory::Inventory;
use crate::list::{self, BundleListing, EntryListing, FileListing};
use crate::locate::{self, ListedEntry};
use crate::verify::{Finding, FindingKind, Verification};
use gfxkit_host::{InputKind, KpackRef};
use gfxkit_kpack::search::{self, Env, Loader, Opened, Outcome};
use gfxkit_kpack::view::{self, ArchiveFile};
use gfxkit_kpack::{Archive, Kernel};
use gfxkit_target_id::TargetId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The archives a caller found and opened for a split binary, in search order.
#[derive(Debug, Default)]
pub struct Archives<'d> {
    /// (path, bytes) of each archive that exists.
    pub files: Vec<(PathBuf, &'d [u8])>,
    /// Paths or patterns searched and not found.
    pub not_found: Vec<String>,
    /// Archives that exist but cannot be opened, with the reason.
    pub unreadable: Vec<String>,
}

impl<'d> Archives<'d> {
    /// The archives parsed (header and TOC only).
    pub fn parse(&self) -> Vec<ArchiveFile<'_, 'd>> {
        self.files
            .iter()
            .map(|(p, b)| ArchiveFile {
                path: p,
                parsed: Archive::parse(b),
            })
            .collect()
    }
}

/// Whether the inventory is of a split binary: `HIPK` wrappers and no bundle.
pub fn is_split(inv: &Inventory<'_>) -> bool {
    inv.units.is_empty() && view::hipk_wrappers(&inv.discovery).next().is_some()
}

/// For a `.kpack` file whose header or TOC does not read: what is damaged and at which
/// offset (the caller names the file). `None` for an archive that parses and for other files.
pub fn archive_damage(data: &[u8]) -> Option<String> {
    if !gfxkit_kpack::archive::is_kpack(data) {
        return None;
    }
    Archive::parse(data)
        .err()
        .map(|e| format!("damaged kpack archive: {e}"))
}

/// The entry ID a kpack code object is listed under.
pub fn entry_id(arch: &str) -> String {
    format!("hipv4-amdgcn-amd-amdhsa--{arch}")
}

/// One kernel as a listed entry; with `check`, decoded and read as a code object
/// ([`Archive::code_object`]), its damage added to `errors` (`<archive>: <error>`).
fn entry(
    a: &Archive<'_>,
    k: &Kernel,
    check: bool,
    archive: Option<String>,
    name: &str,
    errors: &mut Vec<String>,
) -> EntryListing {
    let id = entry_id(&k.arch);
    let check = if check {
        match a.code_object(k) {
            Ok(p) => Some(locate::check_payload(&id, &p)),
            Err(e) => {
                errors.push(format!("{}: {e}", archive.as_deref().unwrap_or(name)));
                None
            }
        }
    } else {
        None
    };
    EntryListing {
        archive,
        stored_size: Some(k.stored_size),
        ..list::entry_listing(ListedEntry {
            offset: 0,
            size: a.size_of(k).unwrap_or(0),
            check,
            id,
        })
    }
}

fn unit(
    section: Option<String>,
    offset: u64,
    size: u64,
    key: Option<String>,
    entries: Vec<EntryListing>,
) -> BundleListing {
    BundleListing {
        member: None,
        section,
        offset,
        size,
        format: "kpack",
        ccob: None,
        header_size: 0,
        entries,
        kpack_key: key,
    }
}

/// The listing of a `.kpack` file: one unit per TOC key, its architectures as entries. With
/// `check`, every kernel is read as a code object; damage is the listing's `error` (an archive
/// that does not parse also its `failure`, with the offset).
pub fn list_archive(name: &str, data: &[u8], check: bool) -> FileListing {
    let mut out = list::unreadable(name, String::new());
    out.error = None;
    let a = match Archive::parse(data) {
        Ok(a) => a,
        Err(e) => {
            out.error = Some(format!("{name}: {e}"));
            out.failure = Some(crate::Error::new(crate::ErrorKind::KpackArchive(e)));
            return out;
        }
    };
    let mut by_key: BTreeMap<&str, Vec<&Kernel>> = BTreeMap::new();
    for k in &a.kernels {
        by_key.entry(&k.key).or_default().push(k);
    }
    let mut errors = Vec::new();
    for (key, ks) in by_key {
        out.bundles.push(unit(
            None,
            ks.iter().map(|k| k.stored_offset).min().unwrap_or(0),
            ks.iter().map(|k| k.stored_size).sum(),
            Some(key.to_owned()),
            ks.iter()
                .map(|k| entry(&a, k, check, None, name, &mut errors))
                .collect(),
        ));
    }
    if !errors.is_empty() {
        out.error = Some(errors.join("; "));
    }
    out
}

/// Adds to `out` (the listing of a split binary) one unit per `HIPK` wrapper, with the code
/// objects its key finds in `archives`, and the archives found and not found. Archives that do
/// not parse and (with `check`) code objects that do not read are the listing's `error`.
pub fn list_split(
    out: &mut FileListing,
    inv: &Inventory<'_>,
    archives: &Archives<'_>,
    check: bool,
) {
    let parsed = archives.parse();
    let mut errors: Vec<String> = archives.unreadable.clone();
    for a in &parsed {
        if let Err(e) = &a.parsed {
            errors.push(format!("{}: {e}", a.path.display()));
        }
    }
    for v in view::view(&inv.discovery, &parsed) {
        let entries = v
            .entries
            .iter()
            .filter_map(|e| {
                let a = parsed[e.archive].parsed.as_ref().ok()?;
                let path = parsed[e.archive].path.display().to_string();
                Some(entry(a, &e.kernel, check, Some(path), "", &mut errors))
            })
            .collect();
        out.bundles.push(unit(
            Some(gfxkit_kpack::marker::section_for(inv.kind).to_owned()),
            v.record_offset,
            v.entries.iter().map(|e| e.kernel.stored_size).sum(),
            v.key.clone(),
            entries,
        ));
    }
    out.kpack_archives = archives
        .files
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    out.kpack_not_found = archives.not_found.clone();
    if !errors.is_empty() {
        out.error = Some(errors.join("; "));
    }
}

/// What the kpack loader finds for one `HIPK` wrapper on a device: the kpack fields of a
/// `select --json` unit of `format` `kpack` ([`crate::select::Selection::add_kpack`], which
/// serialises the offset, the entry selected and the reason as every unit's).
#[derive(Serialize, Debug, Clone)]
pub struct KpackUnit {
    /// Wrapper index N (at +16).
    #[serde(rename = "wrapper")]
    pub index: u32,
    /// File offset of the wrapper record.
    #[serde(skip)]
    pub offset: u64,
    /// The entry ID of the code object loaded (`hipv4-amdgcn-amd-amdhsa--<arch>`), or null.
    #[serde(skip)]
    pub selected: Option<String>,
    /// The marker section's name (`.rocm_kpack_ref`, `.kpackrf` in a PE image).
    #[serde(skip)]
    pub section: &'static str,
    /// The look-up: outcome, kpack error code, archive, architecture, reason, missing file or
    /// key, package.
    #[serde(flatten)]
    pub lookup: gfxkit_kpack::select::Lookup,
}

impl KpackUnit {
    /// One line for a unit that loads nothing: the reason, the missing file or key and the
    /// package to install.
    pub fn failure_text(&self) -> String {
        let mut s = self.lookup.reason.clone();
        if let Some(m) = &self.lookup.missing {
            s.push_str(&format!("; missing {m}"));
        }
        if let Some(p) = &self.lookup.package {
            if matches!(self.lookup.error_code, Some(13) | Some(14)) {
                s.push_str(&format!(" (install {p})"));
            }
        }
        s
    }
}

impl KpackUnit {
    /// Whether damage met in the look-up (a damaged archive skipped, or a code object that
    /// does not decode) makes the answer an error (exit 2).
    pub fn met_damage(&self) -> bool {
        self.lookup.damaged.is_some() || !self.lookup.skipped.is_empty()
    }
}

/// Every archive path the loader tries for the split binary in `binary_dir` on `devices`, for
/// a caller to open before [`select_units`].
pub fn select_paths(
    inv: &Inventory<'_>,
    binary_dir: &Path,
    devices: &[TargetId],
    env: &Env,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for m in view::markers(&inv.discovery) {
        for d in devices {
            for p in search::archive_paths(&m, binary_dir, &search::arch_list(d), env) {
                if !out.contains(&p.path) {
                    out.push(p.path);
                }
            }
        }
    }
    out
}

/// Resolves every `HIPK` wrapper on `device` as the kpack loader does. `open` gives the bytes
/// of an archive path the caller opened (`None`: it does not exist); archives that do not
/// parse are skipped, as the runtime skips them, and named in the unit's `skipped` (and in
/// `damaged` when nothing loads without them).
pub fn select_units<'d>(
    inv: &Inventory<'_>,
    binary_dir: &Path,
    device: &TargetId,
    loader: Loader,
    env: &Env,
    open: &dyn Fn(&Path) -> Option<&'d [u8]>,
) -> Vec<KpackUnit> {
    let arches = search::arch_list(device);
    let mut out = Vec::new();
    for w in view::hipk_wrappers(&inv.discovery) {
        let index = w.kpack_index().unwrap_or(0);
        let mut files: Vec<(PathBuf, &'d [u8])> = Vec::new();
        let mut not_found: Vec<String> = Vec::new();
        if let Some(m) = &w.kpack {
            for p in search::archive_paths(m, binary_dir, &arches, env) {
                match open(&p.path) {
                    Some(b) if !files.iter().any(|(q, _)| *q == p.path) => files.push((p.path, b)),
                    Some(_) => {}
                    None => {
                        let s = p.path.display().to_string();
                        if !not_found.contains(&s) {
                            not_found.push(s);
                        }
                    }
                }
            }
        }
        let mut damaged: Vec<String> = Vec::new();
        let parsed: Vec<(&Path, Option<Archive<'d>>)> = files
            .iter()
            .map(|(p, b)| match Archive::parse(b) {
                Ok(a) => (p.as_path(), Some(a)),
                Err(e) => {
                    damaged.push(format!("{}: {e}", p.display()));
                    (p.as_path(), None)
                }
            })
            .collect();
        let opened: Vec<Opened<'_, 'd>> = parsed
            .iter()
            .filter_map(|(p, a)| a.as_ref().map(|archive| Opened { path: p, archive }))
            .collect();
        let lookup = gfxkit_kpack::select::lookup(
            loader,
            device,
            w.kpack.as_ref(),
            index,
            env,
            &opened,
            &not_found,
            &damaged,
        );
        let selected = match &lookup.outcome {
            Outcome::Found { arch, .. } if lookup.loads() => Some(entry_id(arch)),
            _ => None,
        };
        out.push(KpackUnit {
            index,
            section: gfxkit_kpack::marker::section_for(inv.kind),
            offset: w.location.offset,
            selected,
            lookup,
        });
    }
    out
}

/// `select` of a `.kpack` file named `path`: one unit per TOC key (`<kernel_name>#<N>`, as
/// `list` reads the archive's units), resolved as the loader would resolve a split binary's
/// wrapper for that key over this one archive. Empty when `data` does not parse (its damage is
/// [`archive_damage`]).
pub fn select_archive(
    path: &Path,
    data: &[u8],
    device: &TargetId,
    loader: Loader,
    env: &Env,
) -> Vec<KpackUnit> {
    let Ok(archive) = Archive::parse(data) else {
        return Vec::new();
    };
    let opened = [Opened {
        path,
        archive: &archive,
    }];
    let mut keys: Vec<&str> = archive.kernels.iter().map(|k| k.key.as_str()).collect();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        // A key without `#N` is one no wrapper can look up.
        let (name, Some(index)) = gfxkit_kpack::archive::split_key(key) else {
            continue;
        };
        let marker = KpackRef {
            kernel_name: Some(name.to_owned()),
            search_paths: vec![path.display().to_string()],
        };
        let lookup = gfxkit_kpack::select::lookup(
            loader,
            device,
            Some(&marker),
            index,
            env,
            &opened,
            &[],
            &[],
        );
        let selected = match &lookup.outcome {
            Outcome::Found { arch, .. } if lookup.loads() => Some(entry_id(arch)),
            _ => None,
        };
        out.push(KpackUnit {
            index,
            section: gfxkit_kpack::marker::SECTION,
            offset: 0,
            selected,
            lookup,
        });
    }
    out
}

/// The doctor's verdict from [`select_units`]: `None` when every wrapper loads, else why the
/// first one does not.
pub fn doctor_verdict(units: &[KpackUnit]) -> Option<String> {
    units
        .iter()
        .find(|u| u.selected.is_none())
        .map(KpackUnit::failure_text)
}

/// The package that provides an archive [`select_units`] found missing (no archive, or none
/// listing the device: kpack errors 13 and 14), where the layout tells.
pub fn missing_package(units: &[KpackUnit]) -> Option<String> {
    units
        .iter()
        .filter(|u| u.selected.is_none() && matches!(u.lookup.error_code, Some(13) | Some(14)))
        .find_map(|u| u.lookup.package.clone())
}

/// The damage [`select_units`] met (archives skipped as damaged, code objects that do not
/// decode), added to `out` once each.
pub fn damage_met(units: &[KpackUnit], out: &mut Vec<String>) {
    for u in units {
        let code_object = u
            .lookup
            .damaged
            .iter()
            .filter(|_| u.lookup.skipped.is_empty());
        for d in u.lookup.skipped.iter().chain(code_object) {
            let line = format!("damaged kpack archive {d}");
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
}

/// The architectures `archives` hold, sorted.
pub fn targets(archives: &Archives<'_>) -> Vec<String> {
    let mut t: Vec<String> = archives
        .parse()
        .iter()
        .filter_map(|a| a.parsed.as_ref().ok())
        .flat_map(|a| a.arches.iter().cloned())
        .collect();
    t.sort();
    t.dedup();
    t
}

fn findings(f: Vec<gfxkit_kpack::verify::Finding>) -> Vec<Finding> {
    f.into_iter()
        .map(|f| Finding {
            bundle: None,
            bundle_offset: f.offset,
            member: None,
            section: f.archive,
            entry: None,
            id: f.key,
            message: f.message,
            kind: FindingKind::Kpack,
        })
        .collect()
}

/// Verifies a `.kpack` file (named `name`).
pub fn verify_archive(name: &str, data: &[u8]) -> Verification {
    let problems = findings(gfxkit_kpack::verify::verify_archive(name, data));
    let (units, entries) = match Archive::parse(data) {
        Ok(a) => {
            let mut keys: Vec<&str> = a.kernels.iter().map(|k| k.key.as_str()).collect();
            keys.dedup();
            (keys.len(), a.kernels.len())
        }
        Err(_) => (0, 0),
    };
    Verification {
        path: name.to_owned(),
        ok: problems.is_empty(),
        bundles: units,
        entries,
        problems,
        unresolved: crate::verify::Beside::Nothing,
    }
}

/// Verifies a split binary (named `name`) against `archives`.
pub fn verify_split(name: &str, inv: &Inventory<'_>, archives: &Archives<'_>) -> Verification {
    let parsed = archives.parse();
    let mut f = gfxkit_kpack::verify::verify_split(&inv.discovery, &parsed, &archives.not_found);
    for u in &archives.unreadable {
        f.push(gfxkit_kpack::verify::Finding {
            offset: None,
            archive: None,
            key: None,
            message: u.clone(),
        });
    }
    // What host discovery met first (damaged headers, wrappers without base relocation), as
    // for fat binaries; a marker that does not decode is the kpack check's finding.
    let mut problems: Vec<Finding> = inv
        .problems
        .iter()
        .filter(|p| !matches!(p.kind, gfxkit_host::ProblemKind::BadKpackMetadata(_)))
        .filter_map(crate::verify::host_finding)
        .collect();
    problems.extend(findings(f));
    let views = view::view(&inv.discovery, &parsed);
    Verification {
        path: name.to_owned(),
        ok: problems.is_empty(),
        bundles: views.len(),
        entries: views.iter().map(|v| v.entries.len()).sum(),
        problems,
        unresolved: crate::verify::Beside::Nothing,
    }
}

fn survey_bundle(offset: u64, a: &Archive<'_>, k: &Kernel) -> gfxkit_shrink::SurveyBundle {
    let size = a.size_of(k).unwrap_or(0);
    let id = entry_id(&k.arch);
    gfxkit_shrink::SurveyBundle {
        offset,
        stored: k.stored_size,
        encoding: format!("kpack-{}", a.scheme.name()),
        uncompressed: size,
        entries: vec![gfxkit_shrink::EntryRecord {
            target: gfxkit_shrink::label(&id),
            id,
            size,
            md5: String::new(),
        }],
    }
}

/// A survey of one region holding `bundles` (for files whose device code is not in offload
/// bundles: kpack archives, kernel databases, raw code objects).
pub(crate) fn one_region_survey(
    kind: gfxkit_shrink::FileKind,
    size: u64,
    section: Option<String>,
    wrappers: usize,
    bundles: Vec<gfxkit_shrink::SurveyBundle>,
) -> gfxkit_shrink::Survey {
    survey(kind, size, section, wrappers, bundles)
}

fn survey(
    kind: gfxkit_shrink::FileKind,
    size: u64,
    section: Option<String>,
    wrappers: usize,
    bundles: Vec<gfxkit_shrink::SurveyBundle>,
) -> gfxkit_shrink::Survey {
    gfxkit_shrink::Survey {
        kind,
        size,
        regions: vec![gfxkit_shrink::SurveyRegion {
            member: None,
            section,
            offset: 0,
            size: 0,
            found: bundles.len(),
            bundles,
            wrappers,
            problems: Vec::new(),
            first_problem: None,
        }],
    }
}

/// For `size`: a `.kpack` file as one bundle per (key, architecture), so that stored bytes
/// (the frame or blob) are exact per architecture; kind `bundle`.
pub fn size_archive(data: &[u8]) -> Option<Result<gfxkit_shrink::Survey, gfxkit_shrink::Error>> {
    let a = match Archive::parse(data) {
        Ok(a) => a,
        Err(e) => {
            return Some(Err(damaged(
                e.offset,
                format!("damaged kpack archive: {}", e.kind),
            )))
        }
    };
    let bundles = a
        .kernels
        .iter()
        .map(|k| survey_bundle(k.stored_offset, &a, k))
        .collect();
    Some(Ok(survey(
        gfxkit_shrink::FileKind::Bundle,
        data.len() as u64,
        None,
        0,
        bundles,
    )))
}

/// A size error for damage in kpack archives (their bytes are not counted).
fn damaged(offset: u64, what: String) -> gfxkit_shrink::Error {
    gfxkit_shrink::Error::at(offset, gfxkit_shrink::ErrorKind::Damaged(what))
}

/// For `size`: a split binary seen through `archives`, one bundle per (wrapper, architecture).
/// An archive found that does not read (or cannot be opened) is an error naming it: its
/// architecture's bytes would otherwise be left out in silence.
pub fn size_split(
    inv: &Inventory<'_>,
    size: u64,
    archives: &Archives<'_>,
) -> Result<gfxkit_shrink::Survey, gfxkit_shrink::Error> {
    let parsed = archives.parse();
    if let Some(u) = archives.unreadable.first() {
        return Err(damaged(0, u.clone()));
    }
    for a in &parsed {
        if let Err(e) = &a.parsed {
            return Err(damaged(
                e.offset,
                format!("damaged kpack archive {}: {}", a.path.display(), e.kind),
            ));
        }
    }
    let mut bundles = Vec::new();
    for v in view::view(&inv.discovery, &parsed) {
        for e in &v.entries {
            if let Ok(a) = &parsed[e.archive].parsed {
                bundles.push(survey_bundle(v.record_offset, a, &e.kernel));
            }
        }
    }
    let kind = match inv.kind {
        InputKind::ElfExecutable => gfxkit_shrink::FileKind::Executable,
        _ => gfxkit_shrink::FileKind::SharedObject,
    };
    Ok(survey(
        kind,
        size,
        Some(gfxkit_kpack::marker::section_for(inv.kind).to_owned()),
        view::hipk_wrappers(&inv.discovery).count(),
        bundles,
    ))
}

/// One code object `extract` takes from a kpack archive.
#[derive(Debug, Clone)]
pub struct Pick {
    /// Unit index: the wrapper's N for a split binary (the fat binary's bundle index), the
    /// key's position for an archive.
    pub bundle: usize,
    /// Entry position within the unit.
    pub entry: usize,
    /// `hipv4-amdgcn-amd-amdhsa--<arch>`.
    pub id: String,
    /// Uncompressed size.
    pub size: u64,
    /// Index into the archives (0 for a `.kpack` file).
    pub archive: usize,
    /// TOC key.
    pub key: String,
    /// Architecture.
    pub arch: String,
}

/// Runs `f` over the code objects `picks` names in the kpack `archive` (at `archive_name`),
/// decoded and checked ([`gfxkit_kpack::Archive::code_object`]), in parallel. Returns `f`'s
/// values in the picks' order, and the errors met (a kernel missing from the archive, one that
/// does not decode, `f`'s own), each naming `name`, the key and the archive. `f` gets the
/// place (`KEY in ARCHIVE`), the pick and the code object.
pub fn each_pick<T: Send>(
    name: &str,
    archive_name: &str,
    archive: &gfxkit_kpack::Archive<'_>,
    picks: &[&Pick],
    f: impl Fn(&str, &Pick, &[u8]) -> std::result::Result<Vec<T>, String> + Sync,
) -> (Vec<T>, Vec<String>) {
    use rayon::prelude::*;
    let found: Vec<std::result::Result<Vec<T>, String>> = picks
        .par_iter()
        .map(|p| {
            let unit = format!("{} in {archive_name}", p.key);
            let k = archive
                .kernel(&p.key, &p.arch)
                .ok_or_else(|| format!("{name}: {unit}: {} is not in the archive", p.arch))?;
            let payload = archive
                .code_object(k)
                .map_err(|e| format!("{name}: {unit}: {e}"))?;
            f(&unit, p, &payload)
        })
        .collect();
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    for r in found {
        match r {
            Ok(v) => out.extend(v),
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

/// For `extract`: every kernel of a `.kpack` file that `wanted` (given its entry ID) selects.
pub fn extract_archive(
    data: &[u8],
    wanted: &mut dyn FnMut(&str) -> bool,
) -> crate::Result<Vec<Pick>> {
    let a = Archive::parse(data).map_err(|e| {
        crate::Error::new(crate::ErrorKind::Kpack(format!(
            "not a readable kpack archive: {e}"
        )))
    })?;
    let mut keys: Vec<&str> = a.kernels.iter().map(|k| k.key.as_str()).collect();
    keys.dedup();
    let mut out = Vec::new();
    for (ki, key) in keys.iter().enumerate() {
        for (ei, k) in a.kernels.iter().filter(|k| k.key == *key).enumerate() {
            let id = entry_id(&k.arch);
            if wanted(&id) {
                out.push(Pick {
                    bundle: ki,
                    entry: ei,
                    size: a.size_of(k).unwrap_or(0),
                    id,
                    archive: 0,
                    key: k.key.clone(),
                    arch: k.arch.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// For `extract`: the code objects of a split binary found in `archives` that `wanted`
/// selects. A wrapper whose key no archive holds, or an archive that does not parse, is an
/// error naming it.
pub fn extract_split(
    inv: &Inventory<'_>,
    archives: &Archives<'_>,
    wanted: &mut dyn FnMut(&str) -> bool,
) -> crate::Result<Vec<Pick>> {
    let parsed = archives.parse();
    let invalid = |m: String| crate::Error::new(crate::ErrorKind::Kpack(m));
    for a in &parsed {
        if let Err(e) = &a.parsed {
            return Err(invalid(format!("{}: {e}", a.path.display())));
        }
    }
    let mut out = Vec::new();
    for v in view::view(&inv.discovery, &parsed) {
        let Some(key) = &v.key else {
            return Err(invalid(format!(
                "the HIPK wrapper at {:#x} has no readable marker",
                v.record_offset
            )));
        };
        if v.entries.is_empty() {
            return Err(invalid(format!(
                "no archive holds {key} (found: {}; not found: {})",
                archives
                    .files
                    .iter()
                    .map(|(p, _)| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                archives.not_found.join(", ")
            )));
        }
        for (ei, e) in v.entries.iter().enumerate() {
            let id = entry_id(&e.arch);
            if wanted(&id) {
                let size = parsed[e.archive]
                    .parsed
                    .as_ref()
                    .ok()
                    .and_then(|a| a.size_of(&e.kernel))
                    .unwrap_or(0);
                out.push(Pick {
                    bundle: v.index as usize,
                    entry: ei,
                    size,
                    id,
                    archive: e.archive,
                    key: key.clone(),
                    arch: e.arch.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// The markers of the split binary's wrappers (for callers that find archives).
pub fn markers(inv: &Inventory<'_>) -> Vec<KpackRef> {
    view::markers(&inv.discovery)
}

/// One `.kpack` archive as `gfxkit kpack list` prints it (`--json`: one item of `archives`).
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveListing {
    /// Path.
    pub path: String,
    /// `group_name`.
    pub group: Option<String>,
    /// `gfx_arch_family`.
    pub family: Option<String>,
    /// `gfx_arches`.
    pub arches: Vec<String>,
    /// `zstd-per-kernel` or `none`.
    pub scheme: &'static str,
    /// Archive size.
    pub size: u64,
    /// Kernels sorted by key, then architecture.
    pub kernels: Vec<KernelListing>,
}

impl ArchiveListing {
    /// Whether a checked kernel does not decode to its size.
    pub fn has_bad_kernel(&self) -> bool {
        self.kernels.iter().any(|k| k.ok == Some(false))
    }
}

/// One kernel of an [`ArchiveListing`].
#[derive(Debug, Clone, Serialize)]
pub struct KernelListing {
    /// `<kernel_name>#<N>`.
    pub key: String,
    /// Architecture.
    pub arch: String,
    /// Ordinal.
    pub ordinal: u64,
    /// Uncompressed size.
    pub size: Option<u64>,
    /// Stored bytes.
    pub stored_size: u64,
    /// With `check`: whether it decodes to its size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// With `check`: why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Lists the `.kpack` archive `data` (at `path`); with `check`, every kernel is decoded (its
/// size and any content checksum checked) and read as a code object for its architecture. The error is the kpack reader's when the archive cannot be parsed.
pub fn archive_listing(path: &str, data: &[u8], check: bool) -> crate::Result<ArchiveListing> {
    let a =
        Archive::parse(data).map_err(|e| crate::Error::new(crate::ErrorKind::KpackArchive(e)))?;
    Ok(listing_of(path, data.len() as u64, &a, check))
}

fn listing_of(path: &str, size: u64, a: &Archive<'_>, check: bool) -> ArchiveListing {
    let kernels = a
        .kernels
        .iter()
        .map(|k| {
            let (ok, error) = if check {
                match a.code_object(k) {
                    Ok(_) => (Some(true), None),
                    Err(e) => (Some(false), Some(e.to_string())),
                }
            } else {
                (None, None)
            };
            KernelListing {
                key: k.key.clone(),
                arch: k.arch.clone(),
                ordinal: k.ordinal,
                size: a.size_of(k),
                stored_size: k.stored_size,
                ok,
                error,
            }
        })
        .collect();
    ArchiveListing {
        path: path.to_owned(),
        group: a.group_name.clone(),
        family: a.arch_family.clone(),
        arches: a.arches.clone(),
        scheme: a.scheme.name(),
        size,
        kernels,
    }
}

/// A `.kpack` archive as `gfxkit inspect` prints it: the checked listing, the header and TOC
/// fields, and each kernel's code-object target (from its ELF header).
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveInspection {
    /// The listing, every kernel checked.
    #[serde(flatten)]
    pub listing: ArchiveListing,
    /// Archive format version.
    pub version: u32,
    /// File offset of the table of contents.
    pub toc_offset: u64,
    /// The TOC's `format_version`.
    pub format_version: Option<u64>,
    /// Per kernel (listing order), the target ID its code object's header names.
    pub targets: Vec<Option<String>>,
}

/// Inspects the `.kpack` archive `data` (at `path`).
pub fn inspect_archive(path: &str, data: &[u8]) -> crate::Result<ArchiveInspection> {
    let a =
        Archive::parse(data).map_err(|e| crate::Error::new(crate::ErrorKind::KpackArchive(e)))?;
    let targets = a
        .kernels
        .iter()
        .map(|k| {
            let p = a.payload(k).ok()?;
            let co = gfxkit_code_object::CodeObject::parse(&p).ok()?;
            co.target_id().ok().map(|t| t.to_string())
        })
        .collect();
    Ok(ArchiveInspection {
        listing: listing_of(path, data.len() as u64, &a, true),
        version: a.version,
        toc_offset: a.toc_offset,
        format_version: a.format_version,
        targets,
    })
}

/// Per architecture, the code objects of binaries just split (`gfxkit kpack split`), in
/// binary order then wrapper order: one archive is written per architecture.
pub fn kernels_by_arch<'k, 'd>(
    splits: &'k [gfxkit_kpack::split::SplitBinary<'d>],
) -> BTreeMap<String, Vec<&'k gfxkit_kpack::split::KernelOut<'d>>> {
    let mut by_arch: BTreeMap<String, Vec<&gfxkit_kpack::split::KernelOut<'d>>> = BTreeMap::new();
    for s in splits {
        for k in &s.kernels {
            by_arch.entry(k.arch.clone()).or_default().push(k);
        }
    }
    by_arch
}

/// One architecture's archive after a split: its bytes and what it holds.
#[derive(Debug, Clone)]
pub struct MergedArchive {
    /// The archive, its parts written to the file without being gathered first.
    pub bytes: gfxkit_kpack::write::Encoded,
    /// Kernels in it.
    pub kernels: usize,
    /// Their uncompressed bytes.
    pub uncompressed: u64,
}

/// The archive of `group` for `arch` after splitting binaries into it: the kernels of `old`
/// (the archive already there, when there is one) whose binary (`kernel_name`) is not in
/// `replaced`, then `kernels`. Errors name what failed; the caller adds the archive's path.
pub fn merged_archive(
    group: &str,
    arch: &str,
    kernels: &[&gfxkit_kpack::split::KernelOut<'_>],
    old: Option<&[u8]>,
    replaced: &std::collections::HashSet<&str>,
    compression: gfxkit_kpack::write::Compression,
) -> crate::Result<MergedArchive> {
    use gfxkit_kpack::write::{encode_stored, ArchiveMeta, Stored, StoredIn};
    let fail = |m: String| crate::Error::new(crate::ErrorKind::Kpack(m));
    let old = old
        .map(Archive::parse)
        .transpose()
        .map_err(|e| fail(format!("exists and is not a readable archive: {e}")))?;
    let mut kept = Vec::new();
    if let Some(o) = &old {
        for k in o
            .kernels
            .iter()
            .filter(|k| !replaced.contains(k.kernel_name()))
        {
            let p = o
                .payload(k)
                .map_err(|e| fail(format!("kernel {}: {e}", k.key)))?;
            kept.push((k.key.as_str(), k.arch.as_str(), p));
        }
    }
    let mut ins: Vec<StoredIn<'_>> = kept
        .iter()
        .map(|(key, arch, p)| StoredIn {
            key,
            arch,
            stored: Stored::Plain(p),
        })
        .collect();
    // A kernel of a compressed bundle may come as its zstd frame (`split_binary_framed`).
    ins.extend(kernels.iter().map(|k| StoredIn {
        key: &k.key,
        arch: &k.arch,
        stored: k.stored(),
    }));
    let meta = ArchiveMeta {
        group_name: group.to_owned(),
        arch_family: arch.to_owned(),
        arches: vec![arch.to_owned()],
    };
    let bytes = encode_stored(&meta, &ins, compression)
        .map_err(|e| fail(format!("cannot be written: {e}")))?;
    Ok(MergedArchive {
        kernels: ins.len(),
        uncompressed: ins.iter().map(|k| k.stored.size()).sum(),
        bytes,
    })
}
