//! Commands over whole trees and packages, shared by the CLI and Python: `doctor` (which
//! libraries run on given devices), `check` (every file with device code against required
//! targets), `diff` (two builds, file by file) and `size` (device bytes by architecture, file
//! and library). The answers are `gfxkit_inventory`'s ([`gfxkit_inventory::check`],
//! [`gfxkit_inventory::diff`], [`gfxkit_inventory::size`]); this module walks the inputs and
//! reads each file once.

use crate::format::{Around, File, Formats};
use crate::input::Failed;
use crate::scan::{Progress, ScanError};
use gfxkit_inventory::check::{self, CheckReport};
use gfxkit_inventory::database::LibPaths;
use gfxkit_inventory::diff::{self, DiffReport, FileState};
use gfxkit_inventory::digest::Digesting;
use gfxkit_inventory::error::chain;
use gfxkit_inventory::release::RocmRelease;
use gfxkit_inventory::select::{self, SelectReport, Selection};
use gfxkit_inventory::{database, doctor, size, verify};
use gfxkit_kpack::search::Loader;
use gfxkit_spec::rocm::Rules;
use gfxkit_target_id::TargetId;
use std::collections::BTreeMap;
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::path::{Path, PathBuf};

/// How a failed input of a scan reads in a report; `None` for a package without device code.
fn scan_error(e: ScanError<Infallible>) -> Option<String> {
    match e {
        ScanError::Input(e) => Some(chain(&e)),
        ScanError::Member(Failed::Package(e)) => Some(chain(&e)),
        ScanError::Member(Failed::NoDeviceCode) => None,
        ScanError::Member(Failed::Visit(never)) => match never {},
    }
}

/// What the runtime would load of every file under `paths` (directories searched, packages
/// by member, split binaries through their kpack archives for `devices` as `loader` finds
/// them), with the kernel-database files found apart ([`database::member_of`]): those are
/// judged with the library that loads them, not one by one. A file that cannot be read, or a
/// package named in `paths` that holds no device code, is examined as its error (one found in
/// a directory is left out). The error is a path that does not exist.
#[allow(clippy::type_complexity)]
pub fn examine(
    paths: &[PathBuf],
    devices: &[TargetId],
    loader: Loader,
    progress: &dyn Progress,
) -> Result<(Vec<(String, doctor::Examined)>, Vec<database::DbMember>), crate::Error> {
    examine_on(paths, devices, loader, None, &Formats::standard(), progress)
}

/// [`examine`], each file also read for what the runtime of the release `rules` refuses in
/// it, when given ([`gfxkit_inventory::release::Refused`]).
#[allow(clippy::type_complexity)]
pub fn examine_on(
    paths: &[PathBuf],
    devices: &[TargetId],
    loader: Loader,
    rules: Option<&Rules>,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<(Vec<(String, doctor::Examined)>, Vec<database::DbMember>), crate::Error> {
    libraries_and_databases(
        paths,
        formats,
        progress,
        |format, file| format.examine(file, devices, loader, rules),
        // A file found whose only device code is for other GPUs is passed over; one named
        // is said to be such (`other_gpus_only`).
        |e| e.other_gpus_only.is_none(),
        // Unreadable, or a package named on the command line that holds no device code.
        |_, error| doctor::Examined {
            errors: vec![error],
            ..Default::default()
        },
    )
}

/// Every file under `paths` read by `read` (directories searched, packages by member), with
/// the kernel-database files found apart ([`database::member_of`]) together with those where
/// the libraries named on the command line keep their databases ([`members_beside`]). A file
/// found in a directory is left out when `keep` says so; one that cannot be read (or a package
/// named that holds no device code) is `failed(path, why)`. The error is a path that does not
/// exist.
#[allow(clippy::type_complexity)]
fn libraries_and_databases<T: Send>(
    paths: &[PathBuf],
    formats: &Formats,
    progress: &dyn Progress,
    read: impl Fn(&dyn crate::format::Format, &File<'_>) -> T + Sync,
    keep: impl Fn(&T) -> bool,
    failed: impl Fn(&str, String) -> T,
) -> Result<(Vec<(String, T)>, Vec<database::DbMember>), crate::Error> {
    let scanned = crate::scan::scan_with(paths, formats, progress, |path, bytes| {
        let file = formats.file(path, bytes);
        let format = formats.of(&file);
        Ok::<_, Infallible>(match format.database_member(&file) {
            Some(m) => Err(m),
            None => Ok(read(format, &file)),
        })
    })?;
    let mut libraries = Vec::new();
    let mut members = Vec::new();
    let mut files = Vec::new();
    for s in scanned {
        let path = s.path.display().to_string();
        match s.result {
            Ok(Ok(v)) if !s.explicit && !keep(&v) => {}
            Ok(Ok(v)) => {
                if s.package.is_none() {
                    files.push(s.path);
                }
                libraries.push((path, v));
            }
            Ok(Err(m)) => members.push(m),
            Err(e) => {
                let why = scan_error(e).unwrap_or_else(|| crate::NoDeviceCode.to_string());
                let v = failed(&path, why);
                libraries.push((path, v));
            }
        }
    }
    members.extend(members_beside(&files, paths, formats, progress)?);
    Ok((libraries, members))
}

/// Where this process's environment sends rocBLAS and hipBLASLt for their kernel databases
/// (`ROCBLAS_TENSILE_LIBPATH`, `HIPBLASLT_TENSILE_LIBPATH`; empty values are unset), as the
/// libraries themselves read it: `doctor`, `select`, `check` and `verify` judge a library with
/// the database it would load.
pub fn tensile_lib_paths() -> LibPaths {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    LibPaths {
        rocblas: var("ROCBLAS_TENSILE_LIBPATH"),
        hipblaslt: var("HIPBLASLT_TENSILE_LIBPATH"),
    }
}

/// The kernel-database files where the libraries `libraries` (files read, not package members)
/// keep their databases ([`LibPaths::dir_for`]: `rocblas/` beside `librocblas.so`, or where
/// `ROCBLAS_TENSILE_LIBPATH` sends it), in directories not searched already (under none of
/// `paths`): a library named alone is judged with the database it loads, as a search of its
/// whole directory judges it, and a library whose variable sends it elsewhere with that one.
fn members_beside(
    libraries: &[PathBuf],
    paths: &[PathBuf],
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<Vec<database::DbMember>, crate::Error> {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    // A directory searched already, as named or as resolved (a database directory reached
    // through a symbolic link lies under the path named, not under its real place).
    let searched: Vec<(PathBuf, PathBuf)> = paths
        .iter()
        .filter(|p| p.is_dir())
        .map(|p| (p.clone(), real(p)))
        .collect();
    let lib_paths = tensile_lib_paths();
    let mut dirs: Vec<PathBuf> = libraries
        .iter()
        .filter_map(|l| lib_paths.dir_for(&l.display().to_string()))
        .map(PathBuf::from)
        .filter(|d| {
            d.is_dir()
                && !searched
                    .iter()
                    .any(|(named, resolved)| d.starts_with(named) || real(d).starts_with(resolved))
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    if dirs.is_empty() {
        return Ok(Vec::new());
    }
    database_members_under(&dirs, formats, progress)
}

/// The kernel-database files under `dirs`, each as `check` reads it
/// ([`crate::format::Format::database_member`]); files that cannot be read are left out. The
/// error is a path in `dirs` that does not exist.
pub(crate) fn database_members_under(
    dirs: &[PathBuf],
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<Vec<database::DbMember>, crate::Error> {
    let scanned = crate::scan::scan_with(dirs, formats, progress, |path, bytes| {
        let file = formats.file(path, bytes);
        Ok::<_, Infallible>(formats.of(&file).database_member(&file))
    })?;
    Ok(scanned
        .into_iter()
        .filter_map(|s| s.result.ok().flatten())
        .collect())
}

/// `gfxkit select`: what the runtime would load on `device` from every file under `paths`
/// (directories searched, packages by member, split binaries through their kpack archives as
/// `loader` finds them), each library with a unit per kernel database it loads
/// ([`Selection::add_database`]), then each database no library loads
/// ([`select::database_alone`]). Files found in a directory without device code are left out;
/// one named that cannot be read is its error. The error is a path that does not exist.
pub fn select(
    paths: &[PathBuf],
    device: &TargetId,
    loader: Loader,
    progress: &dyn Progress,
) -> Result<SelectReport, crate::Error> {
    select_on(
        paths,
        device,
        None,
        loader,
        None,
        &Formats::standard(),
        progress,
    )
}

/// [`select()`] as the runtime of the ROCm release `rocm` chooses, when given: what it cannot
/// load is passed over with the reason ([`select::select_on`]), a split binary's wrappers
/// load nothing on a release without the kpack loader, and the report names the release.
/// `cu_count`: the device's number of compute units, when known (kernel databases' rows for
/// other counts are not selected; unknown, every count's rows are).
pub fn select_on(
    paths: &[PathBuf],
    device: &TargetId,
    cu_count: Option<u64>,
    loader: Loader,
    rocm: Option<&RocmRelease>,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<SelectReport, crate::Error> {
    let rules = rocm.map(|r| &r.rules);
    let (libraries, members) = libraries_and_databases(
        paths,
        formats,
        progress,
        |format, file| format.select(file, device, loader, rules),
        // Found in a directory without device code: left out.
        |s| !s.is_empty(),
        select::unreadable,
    )?;
    Ok(select_together(libraries, members, device, cu_count, rocm))
}

/// The `select` report of files read already: `libraries`, each file's name and its own
/// selection ([`crate::format::Format::select`]), judged with the kernel databases that
/// `members` (the kernel-database files among them, [`crate::format::Format::database_member`])
/// make, as [`select_on`] judges what it reads; each database no library loads is judged
/// alone. For files read from memory (Python's bytes, a package's members).
pub fn select_together(
    libraries: Vec<(String, Selection)>,
    members: Vec<database::DbMember>,
    device: &TargetId,
    cu_count: Option<u64>,
    rocm: Option<&RocmRelease>,
) -> SelectReport {
    let rules = rocm.map(|r| &r.rules);
    let files = database::with_databases(
        libraries,
        members,
        &tensile_lib_paths(),
        |_, mut f: Selection, loaded| {
            for db in loaded.databases() {
                f.add_database(db, device, cu_count, rules);
            }
            if let Some(r) = rules {
                f.refuse_device(r, device);
            }
            Some(f)
        },
        |db| {
            let mut f = select::database_alone(db, device, cu_count, rules);
            if let Some(r) = rules {
                f.refuse_device(r, device);
            }
            f
        },
    );
    SelectReport {
        device: device.to_string(),
        cu_count,
        files,
        rocm: rocm.map(|r| r.for_devices(std::slice::from_ref(device))),
    }
}

/// `gfxkit doctor`: the verdict on `devices` of every library under `paths` together with
/// the kernel databases it loads, and of each database no library loads
/// ([`database::judge_with_databases`] over [`examine`]). The error is a path that does not
/// exist.
pub fn doctor(
    paths: &[PathBuf],
    devices: &[TargetId],
    loader: Loader,
    progress: &dyn Progress,
) -> Result<doctor::DoctorReport, crate::Error> {
    doctor_on(
        paths,
        devices,
        &database::CuCounts::none(),
        loader,
        None,
        &Formats::standard(),
        progress,
    )
}

/// [`doctor()`] for the runtime of the ROCm release `rocm`, when given: what it cannot load is
/// left out of the verdict and named in `missing`, with remedies that follow the release.
/// `cu_counts`: the devices' numbers of compute units where known, for kernel databases with
/// rows per count.
pub fn doctor_on(
    paths: &[PathBuf],
    devices: &[TargetId],
    cu_counts: &database::CuCounts,
    loader: Loader,
    rocm: Option<&RocmRelease>,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<doctor::DoctorReport, crate::Error> {
    let rules = rocm.map(|r| &r.rules);
    let (libraries, members) = examine_on(paths, devices, loader, rules, formats, progress)?;
    let other_gpus_only = doctor::OtherGpusOnly::of(&libraries);
    let mut files = database::judge_with_databases(
        libraries,
        members,
        devices,
        cu_counts,
        &tensile_lib_paths(),
        rules,
    );
    if let Some(r) = rules {
        // Kernel databases no library loads too.
        for f in &mut files {
            f.refuse_devices(r, devices);
        }
    }
    Ok(doctor::DoctorReport {
        devices: devices.iter().map(ToString::to_string).collect(),
        cu_counts: cu_counts.by_device(),
        files,
        other_gpus_only,
        rocm: rocm.map(|r| r.for_devices(devices)),
    })
}

/// `gfxkit check`: every file with device code under `paths`, each library together with the
/// kernel databases it loads ([`check::judge_with_databases`] over [`examine`]), judged
/// against `required`. The error is a path that does not exist.
pub fn check(
    paths: &[PathBuf],
    required: &[TargetId],
    exactly: bool,
    loader: Loader,
    progress: &dyn Progress,
) -> Result<CheckReport, crate::Error> {
    check_on(
        paths,
        required,
        exactly,
        loader,
        None,
        &Formats::standard(),
        progress,
    )
}

/// [`check()`] for the runtime of the ROCm release `rocm`, when given: a required target
/// passes only with code that release loads.
pub fn check_on(
    paths: &[PathBuf],
    required: &[TargetId],
    exactly: bool,
    loader: Loader,
    rocm: Option<&RocmRelease>,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<CheckReport, crate::Error> {
    let rules = rocm.map(|r| &r.rules);
    let (libraries, members) = examine_on(paths, required, loader, rules, formats, progress)?;
    let other_gpus_only = doctor::OtherGpusOnly::of(&libraries);
    let mut files = check::judge_with_databases(
        libraries,
        members,
        required,
        exactly,
        &tensile_lib_paths(),
        rules,
    );
    if let Some(r) = rules {
        // Kernel databases no library loads too.
        for f in &mut files {
            f.refuse_devices(r, required);
        }
    }
    let mut report = CheckReport::new(required, exactly, files);
    report.other_gpus_only = other_gpus_only;
    report.rocm = rocm.map(|r| r.for_devices(required));
    Ok(report)
}

/// One side of a diff: every file under `root` by its key ([`diff::key`]) with its device
/// bytes and code objects (kernels counted), and the errors met, each naming its file.
pub fn diff_side(
    root: &Path,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<(BTreeMap<String, FileState>, Vec<String>), crate::Error> {
    let around = Around::new();
    let scanned =
        crate::scan::scan_with(&[root.to_path_buf()], formats, progress, |path, data| {
            let file = formats.file(path, data);
            let format = formats.of(&file);
            let listing = format.list(&file, false, &around);
            let digests = format.digests(&file, Digesting::checked(true), &around);
            Ok::<_, Infallible>((listing, digests))
        })?;
    let root_s = root.display().to_string();
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for s in scanned {
        let name = s.path.display().to_string();
        let (listing, digests) = match s.result {
            Ok(r) => r,
            Err(e) => {
                errors.extend(scan_error(e));
                continue;
            }
        };
        let mut found = Vec::new();
        if let Some(e) = &listing.error {
            found.push(e.clone());
        }
        let digests = match digests {
            Ok((d, e)) => {
                if found.is_empty() {
                    found.extend(e);
                }
                d
            }
            Err(e) => {
                if found.is_empty() {
                    found.push(chain(&e));
                }
                Vec::new()
            }
        };
        errors.extend(found);
        out.insert(
            diff::key(&root_s, &name),
            FileState {
                device_bytes: listing.device_bytes(),
                digests,
            },
        );
    }
    Ok((out, errors))
}

/// `gfxkit diff OLD NEW`: both sides read ([`diff_side`]) and compared ([`diff::diff`]); a
/// file that is a side of its own is named by that side's path.
pub fn diff(
    old: &Path,
    new: &Path,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<DiffReport, crate::Error> {
    let (o, mut errors) = diff_side(old, formats, progress)?;
    let (n, e) = diff_side(new, formats, progress)?;
    errors.extend(e);
    let mut report = diff::diff(
        &old.display().to_string(),
        &new.display().to_string(),
        &o,
        &n,
        errors,
    );
    for f in &mut report.files {
        if f.path.is_empty() {
            let side = if f.status == diff::Status::Removed {
                old
            } else {
                new
            };
            f.path = side.display().to_string();
        }
    }
    Ok(report)
}

/// What `gfxkit size` counts besides the device bytes of each file.
#[derive(Debug, Clone, Default)]
pub struct SizeOptions {
    /// What keeping only these targets would save.
    pub keep: Option<gfxkit_inventory::size::Keep>,
    /// Group each library with the kernel databases it loads ([`size::libraries`]).
    pub by_library: bool,
    /// Find code objects stored more than once across the inputs.
    pub duplicates: bool,
    /// Decompress every compressed bundle in full and check its hash (a bundle that does not
    /// decode, or whose hash does not match, is an error); without it, compressed bundles are
    /// counted from their headers alone ([`size::survey_with`]).
    pub check: bool,
}

/// `gfxkit size`: the device bytes of every file under `paths` (directories searched,
/// packages by member), a split binary's through its kpack archives, kernel databases and raw
/// code objects by architecture ([`Format::size`](crate::format::Format::size)), with what `opts` asks for
/// besides. A file found in a directory (or a package) that is no host binary or bundle is
/// left out; any other failure is one of the report's `errors`, each naming its file. The
/// error is a path that does not exist.
pub fn size(
    paths: &[PathBuf],
    opts: &SizeOptions,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<size::SizeReport, crate::Error> {
    let around = Around::new();
    let scanned = crate::scan::scan_with(paths, formats, progress, |path, data| {
        let file = formats.file(path, data);
        let format = formats.of(&file);
        let sized = format.size(&file, opts.check, &around);
        let digests = opts
            .duplicates
            .then(|| format.digests(&file, Digesting::checked(false), &around));
        Ok::<_, Infallible>((sized.survey, digests, sized.is_kpack_archive, sized.reached))
    })?;
    // The `.kpack` files a split binary of the inputs reaches: their kernels are counted under
    // that binary, not a second time as files of their own.
    let reached: std::collections::HashSet<PathBuf> = scanned
        .iter()
        .filter_map(|s| s.result.as_ref().ok())
        .flat_map(|r| r.3.iter().cloned())
        .collect();
    let mut surveyed = Vec::new();
    let mut errors = Vec::new();
    let mut digested = Vec::new();
    for s in scanned {
        let name = s.path.display().to_string();
        // Named as it is (a file, or a member `pkg!member`), rather than a member of a named
        // package or a file found in a directory.
        let named = s.explicit && paths.contains(&s.path);
        let (survey, digests) = match s.result {
            Ok((_, digests, true, _))
                if !reached.is_empty()
                    && reached.contains(
                        &std::fs::canonicalize(&s.path).unwrap_or_else(|_| s.path.clone()),
                    ) =>
            {
                // Counted under its binary; its code objects are still places of duplicates.
                if let Some(Ok((d, _))) = digests {
                    digested.push((name, d));
                }
                continue;
            }
            Ok((survey, digests, _, _)) => (survey, digests),
            Err(e) => {
                errors.push(
                    scan_error(e).unwrap_or_else(|| format!("{name}: {}", crate::NoDeviceCode)),
                );
                continue;
            }
        };
        let failed = errors.len();
        match survey {
            Ok(sv) if sv.regions.iter().any(|r| !r.bundles.is_empty()) => {
                surveyed.push((name.clone(), sv))
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind, gfxkit_shrink::ErrorKind::Unsupported(_)) && !named => {}
            Err(e) => errors.push(format!("{name}: {e}")),
        }
        match digests {
            Some(Ok((d, e))) => {
                // Damage the survey already named is not named twice.
                if errors.len() == failed {
                    errors.extend(e);
                }
                digested.push((name, d));
            }
            Some(Err(e)) if errors.len() == failed => errors.push(chain(&e)),
            _ => {}
        }
    }
    let mut report = size::build_report(&surveyed, opts.keep.as_ref());
    report.errors = errors;
    if opts.by_library {
        report.libraries = size::libraries(&report.files);
    }
    if opts.duplicates {
        report.duplicates = Some(gfxkit_inventory::duplicates::duplicates(
            digested.iter().map(|(n, d)| (n.as_str(), d.as_slice())),
        ));
    }
    Ok(report)
}

/// `verify` of one file's bytes, named `path`: a kernel database by its own rules (for a file
/// `on_disk`, a Tensile index against the files beside it), a `.kpack` archive and (on disk) a
/// binary split by kpack through [`gfxkit_inventory::kpack`] with the archives it names, any
/// other file by the inventory's rules. With the verification, the processors the file's own
/// device code is built for (empty for a database or archive), which a tree checks against
/// the kernel database the library loads ([`database::library_findings`]).
pub fn verify_file(
    formats: &Formats,
    file: &File<'_>,
    around: &Around,
) -> (gfxkit_inventory::Result<verify::Verification>, Vec<String>) {
    formats.of(file).verify(file, around)
}

/// `gfxkit verify`'s answer over many inputs ([`verify()`]).
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Each file (or package member) with device code, verified, in path order.
    pub files: Vec<verify::Verification>,
    /// Per package (as named or found), its members without device code, which do not fail
    /// a package that has others.
    pub without_device_code: Vec<(String, Vec<String>)>,
    /// The members of packages (among those set apart as [`Self::without_device_code`] would
    /// be) whose only device code is for other GPUs: a CUDA build, SYCL object bundles; each
    /// with what it holds, as `verify` of the file says it.
    pub other_gpus_only: Vec<doctor::OtherGpusOnly>,
    /// What could not be verified, each naming its file.
    pub errors: Vec<String>,
}

/// Why [`verify()`] or [`list()`] did not start.
#[derive(Debug)]
pub enum WalkError {
    /// A directory named without `recursive`.
    Directory(PathBuf),
    /// A path that does not exist.
    Io(crate::Error),
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalkError::Directory(d) => {
                write!(f, "{} is a directory (use -r to search it)", d.display())
            }
            WalkError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for WalkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WalkError::Directory(_) => None,
            WalkError::Io(e) => e.source(),
        }
    }
}

/// The verifications of one input named or found: a file, or the members of one package.
struct Group {
    package: Option<PathBuf>,
    explicit: bool,
    results: Vec<(String, Result<verify::Verification, VerifyFailed>)>,
    /// A package's kernel-database members and its libraries' processors
    /// ([`judge_package`]).
    databases: PackageDatabases,
}

/// What `verify` keeps of one file beside its verification, for the judgment of its package
/// or tree ([`verify_kept`]).
#[derive(Debug, Default)]
pub struct Kept {
    /// The file as a kernel-database member, when it is one.
    pub member: Option<database::DbMember>,
    /// A library's processors (those of its own device code; none for a database file).
    pub processors: Vec<String>,
    /// A package member that may be a lazy shard's code: the names of its function symbols,
    /// per processor it holds code for.
    pub symbols: Vec<(String, HashSet<String>)>,
}

/// [`verify_file`] of one file, with what its package or tree is judged by ([`Kept`]).
pub fn verify_kept(
    formats: &Formats,
    file: &File<'_>,
    around: &Around,
) -> (gfxkit_inventory::Result<verify::Verification>, Kept) {
    let member = formats.of(file).database_member(file);
    let (r, processors) = verify_file(formats, file, around);
    // Only a package member's: on disk a shard's code is read where the shard is checked.
    let symbols = match &member {
        Some(m) if crate::input::member_package(file.path).is_some() => shard_code_symbols(file, m),
        _ => Vec::new(),
    };
    let processors = if member.is_some() {
        Vec::new()
    } else {
        processors
    };
    (
        r,
        Kept {
            member,
            processors,
            symbols,
        },
    )
}

/// The function symbols of a kernel-database code file (`.co`, `.hsaco`), per processor it
/// holds code for; none for other members and for code that cannot be read (its own
/// verification says why).
fn shard_code_symbols(
    file: &File<'_>,
    member: &database::DbMember,
) -> Vec<(String, HashSet<String>)> {
    let name = file.name();
    if !(name.ends_with(".co") || name.ends_with(".hsaco")) {
        return Vec::new();
    }
    member
        .processors
        .iter()
        .filter_map(|p| {
            let symbols =
                database::code_function_symbols(&name, file.data, p, &file.limits).ok()?;
            Some((p.clone(), symbols))
        })
        .collect()
}

/// What a package's members say about its kernel databases, kept while they are verified:
/// the database files among them, the processors each library's own device code is built
/// for, and the function symbols of the code files a lazy library's shards need.
#[derive(Debug, Default)]
pub struct PackageDatabases {
    /// The kernel-database members.
    pub members: Vec<database::DbMember>,
    /// Per library member, the processors of its own device code.
    pub processors: Vec<(String, Vec<String>)>,
    /// Per code member, its function symbols per processor.
    pub symbols: HashMap<String, Vec<(String, HashSet<String>)>>,
}

impl PackageDatabases {
    /// Keeps what one member says ([`Kept`]): its database file and its code's symbols, else
    /// its processors.
    pub fn add(&mut self, name: &str, kept: Kept) {
        if !kept.symbols.is_empty() {
            self.symbols.insert(name.to_owned(), kept.symbols);
        }
        match kept.member {
            Some(m) => self.members.push(m),
            None if !kept.processors.is_empty() => {
                self.processors.push((name.to_owned(), kept.processors))
            }
            None => {}
        }
    }
}

/// One package's verified members (`results`, by name) judged as its files in a tree are: the
/// kernel databases read without a directory against the members beside them
/// ([`resolve_in_package`]), a lazy library's shards against the symbols of their code among
/// them, rocBLAS or hipBLASLt without device code of its own (`no_device_code` says which
/// results are such) by the database beside it in the package, and each library's own
/// processors against that database. [`verify()`] and the Python module's `verify` judge a
/// package so.
pub fn judge_package<E>(
    results: &mut [(String, Result<verify::Verification, E>)],
    databases: PackageDatabases,
    no_device_code: impl Fn(&E) -> bool,
) {
    shards_in_package(results, &databases.symbols);
    resolve_in_package(results);
    let paths = tensile_lib_paths();
    let grouped = database::group(databases.members);
    for (name, r) in results.iter_mut() {
        if matches!(r, Err(e) if no_device_code(e)) {
            if let Some(v) = database::verify_database_library(name, &grouped, &paths) {
                *r = Ok(v);
            }
        }
    }
    for (path, procs) in &databases.processors {
        let found = database::library_findings(path, procs, &grouped, &paths);
        if found.is_empty() {
            continue;
        }
        if let Some((_, Ok(v))) = results.iter_mut().find(|(n, _)| n == path) {
            v.problems.extend(found);
            v.ok = false;
        }
    }
}

/// Why one file has no verification.
enum VerifyFailed {
    /// No device code for an AMD GPU in it (typed, so that a package's members without any
    /// are set apart); with what it holds instead when that is device code for other GPUs.
    NoDeviceCode(String, Option<String>),
    /// Anything else, naming the file.
    Other(String),
}

/// `gfxkit verify`: every file named (a package by member), and with `recursive` every file
/// below the directories named that may hold device code, verified ([`verify_file`]); in a
/// tree, each library whose own device code is built for a processor its kernel database
/// lacks gets that finding ([`database::library_findings`]). A file found in a directory
/// without device code is left out; a package's members without any are named apart.
pub fn verify(
    paths: &[PathBuf],
    recursive: bool,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<VerifyReport, WalkError> {
    let around = Around::new();
    // In a tree: the kernel-database files found, and each library's processors.
    let found = if recursive {
        verify_tree(paths, formats, progress, &around)?
    } else {
        verify_named(paths, formats, progress, &around)?
    };
    let mut groups = found.groups;
    for g in groups.iter_mut().filter(|g| g.package.is_some()) {
        let databases = std::mem::take(&mut g.databases);
        judge_package(&mut g.results, databases, |e| {
            matches!(e, VerifyFailed::NoDeviceCode(..))
        });
    }
    let (mut report, database_only) = report_groups(groups);
    // A library whose device code is all in its kernel database: judged by it.
    if !database_only.is_empty() {
        let searched = if recursive { paths } else { &[] };
        let beside =
            members_beside(&database_only, searched, formats, progress).map_err(WalkError::Io)?;
        let mut all = found.members.clone();
        all.extend(beside);
        verify_database_only(&mut report, &database_only, all);
    }
    // A library whose own device code is built for a processor its kernel database lacks.
    library_findings(&mut report, found.members, &found.processors);
    Ok(report)
}

/// The directory of package member `name` (`package!dir/file`), as the prefix its siblings'
/// names start with: `package!dir/`, or `package!` for a member at the package's root (a
/// package's own path may hold `/` and `!`: the member's part is after the last `!`). `None`
/// for a name that is not a package member.
fn member_dir(name: &str) -> Option<&str> {
    let bang = name.rfind('!')?;
    let end = name[bang..].rfind('/').map_or(bang, |i| bang + i);
    Some(&name[..=end])
}

/// What lies beside package member `index` among the package's members `names` (all named
/// `package!...`): the names in its directory and one level down, relative to it, as
/// [`database::dir_names`](crate::database::dir_names) lists a directory on disk (a member at
/// the package's root lies beside the package's other root members). `None` for a name that
/// is not a package member.
fn names_in_package<S: AsRef<str>>(names: &[S], index: &str) -> Option<Vec<String>> {
    let dir = member_dir(index)?;
    let mut beside = std::collections::BTreeSet::new();
    for n in names {
        // Members of a package inside this one are not files beside it.
        let Some(rel) = n.as_ref().strip_prefix(dir).filter(|r| !r.contains('!')) else {
            continue;
        };
        match rel.split_once('/') {
            None => {
                beside.insert(rel.to_owned());
            }
            Some((sub, rest)) if !rest.contains('/') => {
                beside.insert(format!("{sub}/"));
                beside.insert(rel.to_owned());
            }
            Some(_) => {}
        }
    }
    Some(beside.into_iter().collect())
}

/// The kernel databases among a package's verified members that were read without a
/// directory ([`verify::Verification::unresolved`]: Tensile indexes, hipBLASLt mappings)
/// checked against the names of the members beside them in the package, as on disk against
/// their directory: a row whose files the package lacks, a mapped library it lacks, is a
/// finding. The members' symbols are not read (they are not kept). `results` are one
/// package's members, by name, as [`verify()`] and the Python module's `verify` have them.
pub fn resolve_in_package<E>(results: &mut [(String, Result<verify::Verification, E>)]) {
    let names: Vec<String> = results.iter().map(|(n, _)| n.clone()).collect();
    let members: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
    for (name, r) in results.iter_mut() {
        let Ok(v) = r else { continue };
        let what = std::mem::take(&mut v.unresolved);
        v.problems
            .extend(findings_beside(&names, &members, name, &v.path, &what));
        v.ok = v.problems.is_empty();
    }
}

/// What the kernel database `name`, a member of a package whose members are `names`
/// (`members` the same, as a set), read without a directory (`what`), finds missing among the
/// members beside it ([`gfxkit_inventory::database::names_beside`]); `path` names it in the
/// findings. A shard's kernels are not judged here (their code's symbols are not at hand).
pub fn findings_beside(
    names: &[String],
    members: &HashSet<&str>,
    name: &str,
    path: &str,
    what: &verify::Beside,
) -> Vec<verify::Finding> {
    let Some(beside) = names_in_package(names, name) else {
        return Vec::new();
    };
    let beside: Vec<&str> = beside.iter().map(String::as_str).collect();
    let dir = member_dir(name).unwrap_or_default();
    let exists = |rel: &str| members.contains(format!("{dir}{rel}").as_str());
    gfxkit_inventory::database::names_beside(path, what, &beside, &exists)
}

/// The shard indexes among a package's members (`results`, by name), read without a directory
/// ([`verify::Beside::ShardKernels`]), judged by the function symbols of the members that are
/// their code (`symbols`, per member and processor), as on disk by the files beside them.
fn shards_in_package<E>(
    results: &mut [(String, Result<verify::Verification, E>)],
    symbols: &HashMap<String, Vec<(String, HashSet<String>)>>,
) {
    let names: Vec<String> = results.iter().map(|(n, _)| n.clone()).collect();
    for (name, r) in results.iter_mut() {
        let Ok(v) = r else { continue };
        let verify::Beside::ShardKernels(rows) = &v.unresolved else {
            continue;
        };
        let (Some(beside), Some(dir)) = (names_in_package(&names, name), member_dir(name)) else {
            continue;
        };
        let listing = gfxkit_kernel_db::resolve::Listing::new(&beside);
        let mut narrow = |f: &str, processor: &str, absent: &mut Vec<&str>| {
            let held = symbols
                .get(&format!("{dir}{f}"))
                .and_then(|by| by.iter().find(|(p, _)| p == processor));
            if let Some((_, s)) = held {
                absent.retain(|n| !s.contains(*n));
            }
            Ok(())
        };
        let found = database::shard_findings(&v.path, rows, &listing, &mut narrow);
        v.unresolved = verify::Beside::Nothing;
        if !found.is_empty() {
            v.problems.extend(found);
            v.ok = false;
        }
    }
}

/// What [`verify`] found in the files it read: each input's results, and in a tree the
/// kernel-database files and each library's processors.
struct Found {
    groups: Vec<Group>,
    members: Vec<database::DbMember>,
    processors: Vec<(String, Vec<String>)>,
}

/// Why verifying `path` failed, from the reader's error.
fn verify_failed(path: &Path, e: gfxkit_inventory::Error) -> VerifyFailed {
    let message = format!("cannot verify {}: {}", path.display(), chain(&e));
    if e.is_no_device_code() {
        let other = !matches!(*e.kind, gfxkit_inventory::ErrorKind::NoDeviceCode);
        VerifyFailed::NoDeviceCode(message, other.then(|| e.kind.to_string()))
    } else {
        VerifyFailed::Other(message)
    }
}

/// Why package member `path` could not be verified.
fn member_failed(path: &Path, f: Failed<Infallible>) -> VerifyFailed {
    match f {
        Failed::NoDeviceCode => {
            VerifyFailed::NoDeviceCode(format!("{}: {}", path.display(), crate::NoDeviceCode), None)
        }
        Failed::Package(e) => VerifyFailed::Other(chain(&e)),
        Failed::Visit(never) => match never {},
    }
}

/// Every file below `paths` verified, grouped by package, with the kernel-database files
/// found and the processors each library's own device code is built for.
fn verify_tree(
    paths: &[PathBuf],
    formats: &Formats,
    progress: &dyn Progress,
    around: &Around,
) -> Result<Found, WalkError> {
    let mut groups: Vec<Group> = Vec::new();
    let mut members = Vec::new();
    let mut processors: Vec<(String, Vec<String>)> = Vec::new();
    let scanned = crate::scan::scan_with(paths, formats, progress, |p, d| {
        let file = formats.file(p, d);
        Ok::<_, Infallible>(verify_kept(formats, &file, around))
    })
    .map_err(WalkError::Io)?;
    for s in scanned {
        let name = s.path.display().to_string();
        if !matches!(groups.last(), Some(g) if g.package.is_some() && g.package == s.package) {
            groups.push(Group {
                package: s.package.clone(),
                explicit: s.explicit,
                results: Vec::new(),
                databases: PackageDatabases::default(),
            });
        }
        let g = groups.last_mut().expect("a group was pushed");
        let r = match s.result {
            Ok((r, kept)) => {
                // A package's are judged with it; a tree's with the tree.
                if g.package.is_some() {
                    g.databases.add(&name, kept);
                } else {
                    members.extend(kept.member);
                    if !kept.processors.is_empty() {
                        processors.push((name.clone(), kept.processors));
                    }
                }
                r.map_err(|e| verify_failed(&s.path, e))
            }
            Err(ScanError::Input(e)) => Err(VerifyFailed::Other(chain(&e))),
            Err(ScanError::Member(f)) => Err(member_failed(&s.path, f)),
        };
        g.results.push((name, r));
    }
    Ok(Found {
        groups,
        members,
        processors,
    })
}

/// Each file named verified (a package by member, its kernel databases and its libraries'
/// processors kept for [`judge_package`]); a directory named is the error.
fn verify_named(
    paths: &[PathBuf],
    formats: &Formats,
    progress: &dyn Progress,
    around: &Around,
) -> Result<Found, WalkError> {
    let mut found = Found {
        groups: Vec::new(),
        members: Vec::new(),
        processors: Vec::new(),
    };
    for f in paths {
        if f.is_dir() && !crate::input::is_image_dir(f) {
            return Err(WalkError::Directory(f.clone()));
        }
        let visit = |data: crate::Input| {
            let file = formats.file(data.path(), &data);
            Ok::<_, Infallible>(verify_kept(formats, &file, around))
        };
        let group = match crate::input::for_each_with(f, progress, formats.settings(), visit) {
            Ok(items) => {
                let package = items.iter().any(|(p, _)| p != f).then(|| f.clone());
                let mut databases = PackageDatabases::default();
                let mut results = Vec::new();
                for (p, r) in items {
                    let name = p.display().to_string();
                    let r = match r {
                        Ok((r, kept)) => {
                            // A file named alone is judged with what lies beside it on disk.
                            if package.is_some() {
                                databases.add(&name, kept);
                            }
                            r.map_err(|e| verify_failed(&p, e))
                        }
                        Err(m) => Err(member_failed(&p, m)),
                    };
                    results.push((name, r));
                }
                Group {
                    package,
                    explicit: true,
                    results,
                    databases,
                }
            }
            Err(e) => Group {
                package: None,
                explicit: true,
                results: vec![(f.display().to_string(), Err(VerifyFailed::Other(chain(&e))))],
                databases: PackageDatabases::default(),
            },
        };
        found.groups.push(group);
    }
    Ok(found)
}

/// The report of the groups read: verifications and errors, a package's members without
/// device code set apart; and the libraries without device code of their own that load a
/// kernel database (rocBLAS, hipBLASLt), to be judged by it.
fn report_groups(groups: Vec<Group>) -> (VerifyReport, Vec<PathBuf>) {
    let mut report = VerifyReport::default();
    let mut database_only: Vec<PathBuf> = Vec::new();
    for g in groups {
        // What each member without AMD device code holds for other GPUs, when it does.
        let other: BTreeMap<String, String> = g
            .results
            .iter()
            .filter_map(|(name, r)| match r {
                Err(VerifyFailed::NoDeviceCode(_, Some(why))) => Some((name.clone(), why.clone())),
                _ => None,
            })
            .collect();
        let (results, none) = match &g.package {
            // Members without device code do not fail a package that has others.
            Some(_) => {
                verify::package_members(g.results, |e| matches!(e, VerifyFailed::NoDeviceCode(..)))
            }
            None => (g.results, Vec::new()),
        };
        // Those holding device code for other GPUs are named with it, the others together.
        let (none, for_others): (Vec<String>, Vec<String>) =
            none.into_iter().partition(|n| !other.contains_key(n));
        report
            .other_gpus_only
            .extend(for_others.into_iter().map(|path| doctor::OtherGpusOnly {
                reason: other[&path].clone(),
                path,
            }));
        if let (Some(p), false) = (&g.package, none.is_empty()) {
            report
                .without_device_code
                .push((p.display().to_string(), none));
        }
        for (name, r) in results {
            match r {
                Ok(v) => report.files.push(v),
                // rocBLAS or hipBLASLt without device code of its own: its kernel database.
                // (A package's are judged with it: `judge_package`.)
                Err(VerifyFailed::NoDeviceCode(..))
                    if g.package.is_none()
                        && database::needs_database(&name, &tensile_lib_paths()).is_some() =>
                {
                    database_only.push(PathBuf::from(name))
                }
                // Found in a directory without device code: not a library to verify.
                Err(VerifyFailed::NoDeviceCode(..)) if !g.explicit => {}
                Err(VerifyFailed::NoDeviceCode(e, _) | VerifyFailed::Other(e)) => {
                    report.errors.push(e)
                }
            }
        }
    }
    (report, database_only)
}

/// Each library of `libraries`, judged by the kernel databases among `members`.
fn verify_database_only(
    report: &mut VerifyReport,
    libraries: &[PathBuf],
    members: Vec<database::DbMember>,
) {
    let databases = database::group(members);
    for path in libraries {
        let name = path.display().to_string();
        report.files.extend(database::verify_database_library(
            &name,
            &databases,
            &tensile_lib_paths(),
        ));
    }
    report.files.sort_by(|a, b| a.path.cmp(&b.path));
}

/// Adds to each library's verification what its kernel database (among `members`) lacks
/// of the `processors` its own device code is built for.
fn library_findings(
    report: &mut VerifyReport,
    members: Vec<database::DbMember>,
    processors: &[(String, Vec<String>)],
) {
    if members.is_empty() || processors.is_empty() {
        return;
    }
    let databases = database::group(members);
    for (path, procs) in processors {
        let found = database::library_findings(path, procs, &databases, &tensile_lib_paths());
        if let (false, Some(r)) = (
            found.is_empty(),
            report.files.iter_mut().find(|r| r.path == *path),
        ) {
            r.problems.extend(found);
            r.ok = false;
        }
    }
}

/// What [`list()`] reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListOptions {
    /// Search directories (else a directory named is an error).
    pub recursive: bool,
    /// Check every code object's header against its entry ID.
    pub check: bool,
    /// Keep the listing of every file read, with or without device code (`list --summary`
    /// names them all); a listing of a tree otherwise leaves out files found in it without
    /// device code, never damage. Implies searching directories.
    pub every_file: bool,
}

/// `gfxkit list`: the listing of every file named (a package by member) and, recursively,
/// found ([`ListOptions`]); a split binary through its kpack archives, a `.kpack` file by
/// kernel ([`Format::list`](crate::format::Format::list)). A file that cannot be read is listed with its
/// error. The error is a directory named without `recursive`, or a path that does not exist.
pub fn list(
    paths: &[PathBuf],
    opts: ListOptions,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<Vec<gfxkit_inventory::list::FileListing>, WalkError> {
    use gfxkit_inventory::list::{self, FileListing};
    let check = opts.check;
    // The listing of one input that could not be read.
    let failed = |path: &Path, e: String| list::unreadable(&path.display().to_string(), e);
    let without = |path: &Path| FileListing {
        note: Some(crate::NoDeviceCode.to_string()),
        ..list::list_bytes(&path.display().to_string(), &[], false)
    };
    let member = |path: &Path, f: Failed<Infallible>| match f {
        Failed::NoDeviceCode => without(path),
        Failed::Package(e) => failed(path, chain(&e)),
        Failed::Visit(never) => match never {},
    };
    let around = Around::new();
    let list_one = |path: &Path, data: &[u8]| {
        let file = formats.file(path, data);
        formats.of(&file).list(&file, check, &around)
    };
    if opts.recursive || opts.every_file {
        let scanned = crate::scan::scan_with(paths, formats, progress, |path, data| {
            Ok::<_, Infallible>(list_one(path, data))
        })
        .map_err(WalkError::Io)?;
        return Ok(scanned
            .into_iter()
            .filter_map(|s| {
                let mut l = match s.result {
                    Ok(l)
                        if opts.every_file
                            || s.explicit
                            || !l.bundles.is_empty()
                            || l.database.is_some()
                            || l.error.is_some()
                            || l.problems
                                .iter()
                                .any(|p| p.severity == gfxkit_host::Severity::Error) =>
                    {
                        l
                    }
                    Ok(_) => return None,
                    Err(ScanError::Input(e)) => failed(&s.path, chain(&e)),
                    Err(ScanError::Member(f)) => member(&s.path, f),
                };
                l.package = s.package.map(|p| p.display().to_string());
                l.layer = s.layer;
                Some(l)
            })
            .collect());
    }
    if let Some(d) = paths
        .iter()
        .find(|p| p.is_dir() && !crate::input::is_image_dir(p))
    {
        return Err(WalkError::Directory(d.clone()));
    }
    let mut out = Vec::new();
    for path in paths {
        let visit = |data: crate::Input| {
            let mut l = list_one(data.path(), &data);
            l.layer = data.layer().map(str::to_owned);
            Ok::<_, Infallible>(l)
        };
        match crate::input::for_each_with(path, progress, formats.settings(), visit) {
            Ok(items) => out.extend(items.into_iter().map(|(p, r)| {
                let mut l = match r {
                    Ok(l) => l,
                    Err(f) => member(&p, f),
                };
                if p != *path {
                    l.package = Some(path.display().to_string());
                }
                l
            })),
            Err(e) => out.push(failed(path, chain(&e))),
        }
    }
    Ok(out)
}

/// `gfxkit kernels`: every kernel of every code object under `paths` (directories searched,
/// packages by member, split binaries through their archives, a Tensile index by solution:
/// [`Format::kernels`](crate::format::Format::kernels)), those for `wanted` only when given. What cannot be read is one
/// of the listing's `errors`, naming its file; a file without device code only when named.
/// The error is a path that does not exist.
pub fn kernels(
    paths: &[PathBuf],
    wanted: Option<&TargetId>,
    demangle: bool,
    formats: &Formats,
    progress: &dyn Progress,
) -> Result<gfxkit_inventory::kernels::KernelListing, crate::Error> {
    let around = Around::new();
    let scanned = crate::scan::scan_with(paths, formats, progress, |path, data| {
        let file = formats.file(path, data);
        formats.of(&file).kernels(&file, wanted, demangle, &around)
    })?;
    let mut out = gfxkit_inventory::kernels::KernelListing::default();
    // Per package: its members' names, and whether an index among them lists solutions.
    let mut packages: BTreeMap<PathBuf, (Vec<String>, bool)> = BTreeMap::new();
    for s in scanned {
        if let Some(p) = &s.package {
            let (names, indexes) = packages.entry(p.clone()).or_default();
            names.push(s.path.display().to_string());
            *indexes |= matches!(&s.result, Ok(l) if !l.solutions.is_empty());
        }
        match s.result {
            Ok(l) => {
                out.kernels.extend(l.kernels);
                out.solutions.extend(l.solutions);
                out.errors.extend(l.errors);
            }
            // A package without device code, only when named.
            Err(ScanError::Member(Failed::NoDeviceCode)) if !s.explicit => {}
            Err(ScanError::Member(Failed::NoDeviceCode)) => {
                out.errors
                    .push(format!("{}: {}", s.path.display(), crate::NoDeviceCode))
            }
            Err(ScanError::Member(Failed::Visit(e))) => out.errors.push(chain(&e)),
            Err(ScanError::Member(Failed::Package(e))) => out.errors.push(chain(&e)),
            Err(ScanError::Input(e)) => out.errors.push(chain(&e)),
        }
    }
    let packages: Vec<&[String]> = packages
        .values()
        .filter(|(_, indexes)| *indexes)
        .map(|(names, _)| names.as_slice())
        .collect();
    solutions_in_packages(&mut out, &packages, wanted);
    Ok(out)
}

/// The solutions of the Tensile indexes among the members of each of `packages` (their
/// names), listed without a directory (none present), found in the members beside them, as
/// on disk. A lazy library's shard is listed for each processor with a lazy master beside it
/// (for `wanted`'s only, when given), with the code the library loads for it
/// ([`database::shard_code`]); a shard without one, or read outside a package, is not listed.
/// Per row, the files the library's rule loads for its processor there
/// ([`database::row_files`]), and among their kernels listed here for that processor the one
/// of the solution's `kernel_name` (the last, as on disk). On disk a solution is present when
/// a function symbol of that name is there; here when a kernel is.
pub fn solutions_in_packages(
    out: &mut gfxkit_inventory::kernels::KernelListing,
    packages: &[&[String]],
    wanted: Option<&TargetId>,
) {
    use std::collections::HashMap;
    let package_of: HashMap<&str, &[String]> = packages
        .iter()
        .flat_map(|names| names.iter().map(move |n| (n.as_str(), *names)))
        .collect();
    // What lies beside each index listing solutions, in its package.
    let mut listings: HashMap<String, gfxkit_kernel_db::resolve::Listing> = HashMap::new();
    for sol in &out.solutions {
        if let Some(names) = package_of.get(sol.index.as_str()) {
            if !listings.contains_key(&sol.index) {
                if let Some(n) = names_in_package(names, &sol.index) {
                    listings.insert(
                        sol.index.clone(),
                        gfxkit_kernel_db::resolve::Listing::new(&n),
                    );
                }
            }
        }
    }
    // A shard's rows, in place, once per processor that loads it (each processor's rows
    // together, as on disk), with the files to look in.
    let mut placed: Vec<(gfxkit_inventory::kernels::SolutionRow, Option<Vec<String>>)> =
        Vec::with_capacity(out.solutions.len());
    let mut rows = std::mem::take(&mut out.solutions).into_iter().peekable();
    while let Some(first) = rows.next() {
        if !first.processor.is_empty() {
            placed.push((first, None));
            continue;
        }
        let mut run = vec![first];
        while let Some(next) = rows.next_if(|r| r.processor.is_empty() && r.index == run[0].index) {
            run.push(next);
        }
        let Some(listing) = listings.get(&run[0].index) else {
            continue;
        };
        for (processor, files) in database::shard_code(&run[0].index, listing) {
            if wanted.is_some_and(|w| w.processor().name != processor) {
                continue;
            }
            for r in &run {
                let mut r = r.clone();
                r.processor.clone_from(&processor);
                placed.push((r, Some(files.clone())));
            }
        }
    }
    // Each member's kernels by file, name and the processor of its code object.
    let mut kernels: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for (i, k) in out.kernels.iter().enumerate() {
        if package_of.contains_key(k.file.as_str()) {
            let processor = k
                .target_id
                .as_deref()
                .map_or("", |t| t.split(':').next().unwrap_or(t));
            kernels.insert((k.file.as_str(), k.kernel.name.as_str(), processor), i);
        }
    }
    // The files a row of an index loads for a processor, by the library's rule, once each.
    let mut row_files: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut solutions = Vec::with_capacity(placed.len());
    for (mut sol, shard_files) in placed {
        let (Some(listing), Some(dir)) = (listings.get(&sol.index), member_dir(&sol.index)) else {
            solutions.push(sol);
            continue;
        };
        if sol.present {
            solutions.push(sol);
            continue;
        }
        let files = match &shard_files {
            Some(f) => f,
            None => row_files
                .entry((sol.index.clone(), sol.processor.clone()))
                .or_insert_with(|| database::row_files(listing, &sol.processor, &[]).files),
        };
        // The code for the row's processor: its own, or its generic target's.
        let generic = gfxkit_target_id::TargetId::parse(&sol.processor)
            .ok()
            .and_then(|t| t.processor().generic().map(|g| g.name));
        let hit = files.iter().find_map(|f| {
            let path = format!("{dir}{f}");
            [Some(sol.processor.as_str()), generic]
                .into_iter()
                .flatten()
                .find_map(|p| kernels.get(&(path.as_str(), sol.kernel_name.as_str(), p)))
                .map(|&i| (f, i))
        });
        if let Some((f, i)) = hit {
            sol.code_object = Some(f.clone());
            sol.present = true;
            let mut kernel = out.kernels[i].kernel.clone();
            kernel.name.clear(); // Named by the row's `kernel_name`.
            sol.kernel = Some(kernel);
        }
        solutions.push(sol);
    }
    out.solutions = solutions;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_lies_beside_the_members_of_its_own_directory() {
        assert_eq!(member_dir("a/b.zip!lib/x.dat"), Some("a/b.zip!lib/"));
        assert_eq!(member_dir("a/b.zip!x.dat"), Some("a/b.zip!"));
        assert_eq!(member_dir("a.deb!data.tar!x.dat"), Some("a.deb!data.tar!"));
        assert_eq!(member_dir("a/b.dat"), None);
        let names = [
            "d/p.zip!x.dat",
            "d/p.zip!x.co",
            "d/p.zip!gfx90a/y.co",
            "d/p.zip!gfx90a/z/w.co",
            "d/p.zip!inner.whl!v.co",
            "d/q.zip!u.co",
        ];
        assert_eq!(
            names_in_package(&names, "d/p.zip!x.dat").unwrap(),
            ["gfx90a/", "gfx90a/y.co", "x.co", "x.dat"]
        );
        assert_eq!(
            names_in_package(&names, "d/p.zip!gfx90a/y.co").unwrap(),
            ["y.co", "z/", "z/w.co"]
        );
    }
}
