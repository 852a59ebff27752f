//! `gfxkit._gfxkit`: the native half of the `gfxkit` Python package.
//!
//! A thin shell: every answer comes from [`gfxkit_inventory`] (and the format crates), and
//! every result is the serde serialisation the CLI's `--json` prints, converted to Python
//! objects, so `gfxkit.list(p).to_dict()` is the file object of `gfxkit list --json p`. The
//! Python classes wrapping these dicts, the error classes and the docstrings live in
//! `python/gfxkit/`.
//!
//! Module map:
//! - input: a path (memory-mapped), `bytes` (borrowed) or another buffer (copied);
//! - errors: `Fail`, raised as `gfxkit.errors.*` with `file`, `entry` and `offset`;
//! - the functions `list`, `select`, `verify`, `doctor`, `check`, `diff`, `size`, `extract`, `inspect`,
//!   `kernels`, `kpack_split`, `kpack_inline`, `prune`, `recompress`, `compatible`, `processors`, `memmodel`, `census_walk_each`, `census_local_inputs`, `census_publish`, `census_rows_json`, `census_lacks`, and the classes
//!   `TargetId` and `CensusScope`.
//!
//! Files are opened, walked and written through `gfxkit_io` (as the CLI does): paths are
//! memory-mapped, `pkg!member` names a package member, a package gives one result per
//! member, outputs are written atomically and verified before they replace anything.

use gfxkit_inventory as inv;
use gfxkit_io::format::{Around, File, Formats};
use gfxkit_shrink::{Conversion, EntryFilter, Pattern, Transform};
use gfxkit_target_id::FeatureSetting;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3::IntoPyObjectExt;
use std::path::{Path, PathBuf};

/// Why a call failed; raised as the `gfxkit.errors` class of the same name.
#[derive(Debug)]
enum Fail {
    /// Damaged or unreadable device code.
    Format {
        msg: String,
        entry: Option<usize>,
        offset: Option<u64>,
    },
    /// A target or device ID that does not parse.
    Target(String),
    /// A file without device code where some is needed.
    NoDeviceCode(String),
    /// No device to judge against (no GPU in the KFD topology): the message and the file.
    Device(String, String),
    /// A call the command line would refuse as bad usage (a memory-model case that does not
    /// parse, an unknown processor or OS).
    Usage(String),
}

impl Fail {
    fn format(msg: impl Into<String>) -> Fail {
        Fail::Format {
            msg: msg.into(),
            entry: None,
            offset: None,
        }
    }

    fn from_inventory(e: &gfxkit_inventory::Error, msg: String) -> Fail {
        match &*e.kind {
            gfxkit_inventory::ErrorKind::BadTarget(_)
            | gfxkit_inventory::ErrorKind::NotATarget { .. } => Fail::Target(msg),
            gfxkit_inventory::ErrorKind::NoDeviceCode
            | gfxkit_inventory::ErrorKind::OtherGpusOnly(_)
            | gfxkit_inventory::ErrorKind::NvidiaOnly(_) => Fail::NoDeviceCode(msg),
            _ => Fail::Format {
                msg,
                entry: e.entry(),
                offset: e.offset(),
            },
        }
    }

    fn into_py(self, py: Python<'_>, file: &str) -> PyErr {
        let (class, msg, entry, offset) = match self {
            Fail::Format { msg, entry, offset } => ("FormatError", msg, entry, offset),
            Fail::Target(msg) => ("TargetError", msg, None, None),
            Fail::NoDeviceCode(msg) => ("NoDeviceCodeError", msg, None, None),
            Fail::Usage(msg) => ("UsageError", msg, None, None),
            Fail::Device(msg, path) => {
                let made = py
                    .import("gfxkit.errors")
                    .and_then(|m| m.getattr("DeviceError"))
                    .and_then(|c| c.call1((msg, path, None::<usize>, None::<u64>)));
                return match made {
                    Ok(v) => PyErr::from_value(v),
                    Err(e) => e,
                };
            }
        };
        let made = py
            .import("gfxkit.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((msg, file, entry, offset)));
        match made {
            Ok(v) => PyErr::from_value(v),
            Err(e) => e,
        }
    }
}

use gfxkit_inventory::error::chain;

/// Why a walk over files on disk did not start, as Python raises it: a missing path by
/// [`io_error`], a directory where a file was expected as `ValueError`.
fn walk_error(py: Python<'_>, e: gfxkit_io::whole::WalkError) -> PyErr {
    match e {
        gfxkit_io::whole::WalkError::Io(e) => io_error(py, &e),
        e => pyo3::exceptions::PyValueError::new_err(e.to_string()),
    }
}

/// A file error as Python raises it: the `OSError` subclass of the system's error
/// (`FileNotFoundError`, `PermissionError`, ...) with the message and `filename`; a damaged
/// package as `gfxkit.FormatError` with the byte offset; a missing package member as
/// `FileNotFoundError`.
fn io_error(py: Python<'_>, e: &gfxkit_io::Error) -> PyErr {
    use gfxkit_io::ErrorKind;
    let file = e.path().display().to_string();
    let msg = chain(e);
    let os = |errno: i32| pyo3::exceptions::PyOSError::new_err((errno, msg.clone(), file.clone()));
    match e.kind() {
        ErrorKind::Package(p) | ErrorKind::Member(p) => {
            let made = py
                .import("gfxkit.errors")
                .and_then(|m| m.getattr("FormatError"))
                .and_then(|c| c.call1((msg.clone(), file.clone(), None::<usize>, p.offset)));
            match made {
                Ok(v) => PyErr::from_value(v),
                Err(err) => err,
            }
        }
        ErrorKind::NoSuchMember { .. } => os(2),
        ErrorKind::IsDirectory | ErrorKind::WriteDirectory => os(21),
        _ => match e.io_error().and_then(|i| i.raw_os_error()) {
            Some(errno) => os(errno),
            None => pyo3::exceptions::PyOSError::new_err(msg),
        },
    }
}

/// The bytes of an input: borrowed from a Python `bytes`, or an opened file (memory-mapped; a
/// package member `pkg!member` decompressed) or a copy of another buffer.
enum Data<'py> {
    Bytes(Bound<'py, PyBytes>),
    Input(gfxkit_io::Input),
}

impl Data<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Bytes(b) => b.as_bytes(),
            Data::Input(i) => i,
        }
    }
}

/// An input and the name it goes by in reports (the path as given, the name given with bytes,
/// or `<bytes>`).
struct Source<'py> {
    name: String,
    path: Option<PathBuf>,
    data: Data<'py>,
    /// An OCI image layout directory (read through its files; `data` is empty).
    image_dir: bool,
}

impl Source<'_> {
    /// Whether the source is read by member: a package, a container image (archive or
    /// directory).
    fn is_package(&self) -> bool {
        self.image_dir || gfxkit_io::input::is_package(self.data.bytes())
    }

    /// Refuses an image directory where one file is needed.
    fn one_file(&self) -> PyResult<()> {
        if self.image_dir {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{}: a container image directory, not a file (name one of its files as {}!/PATH)",
                self.name, self.name
            )));
        }
        Ok(())
    }
}

fn source<'py>(src: &Bound<'py, PyAny>) -> PyResult<Source<'py>> {
    // Bytes and the name they go by (the Python functions' `name=`): read as a file of that
    // name would be, without what lies beside it.
    if let Ok((name, b)) = src.extract::<(String, Bound<'py, PyBytes>)>() {
        return Ok(Source {
            name,
            path: None,
            data: Data::Bytes(b),
            image_dir: false,
        });
    }
    if let Ok(b) = src.downcast::<PyBytes>() {
        return Ok(Source {
            name: "<bytes>".to_owned(),
            path: None,
            data: Data::Bytes(b.clone()),
            image_dir: false,
        });
    }
    if let Ok(path) = src.extract::<PathBuf>() {
        let name = path.display().to_string();
        if gfxkit_io::input::is_image_dir(&path) {
            return Ok(Source {
                data: Data::Input(gfxkit_io::Input::from_vec(&name, Vec::new())),
                name,
                path: Some(path),
                image_dir: true,
            });
        }
        let input = gfxkit_io::Input::open_with(&path, &(), &settings())
            .map_err(|e| io_error(src.py(), &e))?;
        return Ok(Source {
            name,
            path: Some(path),
            data: Data::Input(input),
            image_dir: false,
        });
    }
    match src.extract::<Vec<u8>>() {
        Ok(v) => Ok(Source {
            name: "<bytes>".to_owned(),
            path: None,
            data: Data::Input(gfxkit_io::Input::from_vec("<bytes>", v)),
            image_dir: false,
        }),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(
            "expected a path (str or os.PathLike) or bytes",
        )),
    }
}

/// Converts a serialised value to Python objects (dict, list, str, int, float, bool, None).
fn to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.into_bound_py_any(py)?,
            (None, Some(i), _) => i.into_bound_py_any(py)?,
            (None, None, f) => f.unwrap_or(f64::NAN).into_bound_py_any(py)?,
        },
        Value::String(s) => s.into_bound_py_any(py)?,
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// Serialises `value` as the CLI's `--json` does and converts it to Python objects.
fn json<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let v = serde_json::to_value(value)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    to_py(py, &v)
}

/// A result for the Python classes: `(object, text, status, html)`, the object
/// `gfxkit <command> --json` prints, the text the command prints for the same answer (rendered
/// by `gfxkit-text`, as the command renders it), the exit status the command has for it (a
/// result is true exactly when that is 0), and for `size` the `--html` page.
fn answer<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
    status: u8,
    text: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    html: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut out = Vec::new();
    text(&mut out).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let text = String::from_utf8_lossy(&out).into_owned();
    (json(py, value)?, text, status, html).into_bound_py_any(py)
}

/// `gfxkit list`'s text and status for one file's listing (its errors and problems, which the
/// command writes to stderr, are left out).
fn list_answer<'py>(
    py: Python<'py>,
    listing: inv::list::FileListing,
) -> PyResult<Bound<'py, PyAny>> {
    let listing = inv::list::Listing {
        files: vec![listing],
        summary: None,
    };
    let status = if listing.failed() {
        2
    } else if listing.bad_hash() {
        1
    } else {
        0
    };
    answer(
        py,
        &listing.files[0],
        status,
        |w| gfxkit_text::list::listing(&listing, w, &mut std::io::sink()),
        None,
    )
}

/// `gfxkit select`'s text and status for one file.
fn select_answer<'py>(
    py: Python<'py>,
    device: &str,
    cu_count: Option<u64>,
    sel: inv::select::Selection,
    rocm: Option<&inv::release::RocmRelease>,
) -> PyResult<Bound<'py, PyAny>> {
    let report = inv::select::SelectReport {
        device: device.to_owned(),
        cu_count,
        files: vec![sel],
        rocm: rocm.cloned(),
    };
    let status = report.files[0].status();
    answer(
        py,
        &report.files[0],
        status,
        |w| gfxkit_text::select::report(&report, w, &mut std::io::sink()),
        None,
    )
}

fn target_id(py: Python<'_>, s: &str) -> PyResult<gfxkit_target_id::TargetId> {
    gfxkit_target_id::TargetId::parse(s)
        .map_err(|e| Fail::Target(format!("'{s}' is not a target ID: {e}")).into_py(py, ""))
}

/// What [`per_file`] has for one file or package member.
enum Got<T> {
    /// The function's value.
    Value(T),
    /// A package without any member that may hold device code.
    NoDeviceCode,
    /// A damaged package member (the message, and the byte offset when known).
    Damaged(String, Option<u64>),
}

/// Each file's name and what [`per_file`] has for it, and whether the source is a package.
type PerFile<T> = (bool, Vec<(String, Got<T>)>);

/// Runs `one` on the source, or, when it is a package (wheel, conda, deb, rpm, tarball), on
/// each member that may hold device code, named `package!member` as the CLI names it. The
/// flag says whether the source is a package. `one` gets the name and the bytes.
fn per_file<T: Send>(
    py: Python<'_>,
    s: &Source<'_>,
    one: impl Fn(&Path, &[u8]) -> T + Sync,
) -> PyResult<PerFile<T>> {
    per_file_layered(py, s, |p, d, _| one(p, d))
}

/// [`per_file`], telling `one` the layer digest of a container image's file as well.
fn per_file_layered<T: Send>(
    py: Python<'_>,
    s: &Source<'_>,
    one: impl Fn(&Path, &[u8], Option<&str>) -> T + Sync,
) -> PyResult<PerFile<T>> {
    let bytes = s.data.bytes();
    let name = Path::new(&s.name);
    if !s.is_package() {
        return Ok((
            false,
            vec![(s.name.clone(), Got::Value(one(name, bytes, None)))],
        ));
    }
    use gfxkit_io::input::Failed;
    let visit =
        |m: gfxkit_io::Input| Ok::<_, std::convert::Infallible>(one(m.path(), &m, m.layer()));
    let image_dir = s.image_dir;
    let settings = settings();
    let items = py
        .allow_threads(|| {
            if image_dir {
                gfxkit_io::input::for_each_with(name, &(), &settings, visit)
            } else {
                gfxkit_io::input::members_with(name, bytes, &(), &settings, visit)
            }
        })
        .map_err(|e| io_error(py, &e))?;
    Ok((
        true,
        items
            .into_iter()
            .map(|(p, r)| {
                let got = match r {
                    Ok(v) => Got::Value(v),
                    Err(Failed::NoDeviceCode) => Got::NoDeviceCode,
                    Err(Failed::Package(e)) => Got::Damaged(chain(&e), e.offset),
                    Err(Failed::Visit(never)) => match never {},
                };
                (p.display().to_string(), got)
            })
            .collect(),
    ))
}

/// One value, or for a package a list of them.
fn one_or_list<'py>(
    py: Python<'py>,
    package: bool,
    mut values: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if !package && values.len() == 1 {
        if let Some(v) = values.pop() {
            return Ok(v);
        }
    }
    Ok(PyList::new(py, values)?.into_any())
}

/// What the module's functions read their inputs under: `GFXKIT_MAX_UNCOMPRESSED` as the
/// module is imported, then whatever [`max_uncompressed`] and [`image_platform`] set (their
/// Python API sets them for the process). Kept here, in the binding, and passed to the
/// libraries with every call; the libraries hold no such state.
static SETTINGS: std::sync::RwLock<gfxkit_io::Settings> =
    std::sync::RwLock::new(gfxkit_io::Settings {
        limits: gfxkit_bundle::limits::Limits {
            max_uncompressed: gfxkit_bundle::limits::MAX_UNCOMPRESSED_SIZE,
        },
        platform: None,
        members: None,
    });

/// The module's settings as they are now ([`SETTINGS`]).
fn settings() -> gfxkit_io::Settings {
    SETTINGS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// gfxkit's formats, reading under the module's [`settings`].
fn formats() -> Formats {
    Formats::standard().with_settings(settings())
}

/// One file (or package member) as the door reads it: what lies beside it is looked for only
/// for files on disk, whose directory is known.
fn door_file<'a>(path: &'a Path, data: &'a [u8], on_disk: bool) -> File<'a> {
    File {
        path,
        data,
        surroundings: on_disk,
        limits: settings().limits,
    }
}

/// `list` of one file as the CLI lists it ([`gfxkit_io::format`]): a `.kpack` archive by
/// kernel; a kernel database (a Tensile index resolved against its directory when on disk); a
/// split binary through the archives its markers name (only on disk); anything else as the
/// inventory lists it.
fn list_one(path: &Path, data: &[u8], check: bool, on_disk: bool) -> inv::list::FileListing {
    let file = door_file(path, data, on_disk);
    formats().of(&file).list(&file, check, &Around::new())
}

/// The listing of one file: the file object of `gfxkit list --json` (for a package, a list of
/// them, one per member that may hold device code). With `strict`, a file whose device code
/// cannot be read raises `FormatError` instead of carrying `error`.
#[pyfunction]
#[pyo3(signature = (src, check = false, strict = true))]
fn list<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    check: bool,
    strict: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (package, got) = listings(py, src, check)?;
    let mut out = Vec::new();
    for (name, g) in got {
        let listing = match g {
            Got::Value(l) => l,
            Got::NoDeviceCode => no_device_code(&name),
            Got::Damaged(msg, offset) if strict => {
                return Err(Fail::Format {
                    msg,
                    entry: None,
                    offset,
                }
                .into_py(py, &name))
            }
            Got::Damaged(msg, _) => inv::list::unreadable(&name, msg),
        };
        if strict {
            if let Some(msg) = &listing.error {
                let fail = match &listing.failure {
                    Some(e) => Fail::from_inventory(e, msg.clone()),
                    None => Fail::Format {
                        msg: msg.clone(),
                        entry: None,
                        offset: None,
                    },
                };
                return Err(fail.into_py(py, &name));
            }
        }
        out.push(list_answer(py, listing)?);
    }
    one_or_list(py, package, out)
}

/// A listing per file (or package member, or image layer's file) of `src`.
fn listings(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    check: bool,
) -> PyResult<PerFile<inv::list::FileListing>> {
    let s = source(src)?;
    let on_disk = s.path.is_some();
    per_file_layered(py, &s, |p, d, layer| {
        let mut l = list_one(p, d, check, on_disk);
        l.layer = layer.map(str::to_owned);
        l
    })
}

/// The listing of a file or member without device code.
fn no_device_code(name: &str) -> inv::list::FileListing {
    inv::list::FileListing {
        note: Some(gfxkit_io::NoDeviceCode.to_string()),
        ..inv::list::list_bytes(name, &[], false)
    }
}

/// Which GPU targets `src` ships, per package, container image, site-packages distribution or
/// file, with the bytes of code objects per target: `gfxkit list --summary --json`'s
/// `{"packages": [...], "without_device_code": [...]}`. Unreadable files are left out.
#[pyfunction]
#[pyo3(signature = (src))]
fn list_summary<'py>(py: Python<'py>, src: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(path) = src.extract::<PathBuf>() {
        // On disk: every file as `gfxkit list --summary` reads it (a directory searched).
        let opts = gfxkit_io::whole::ListOptions {
            every_file: true,
            ..Default::default()
        };
        let files = py
            .allow_threads(|| gfxkit_io::whole::list(&[path], opts, &formats(), &()))
            .map_err(|e| walk_error(py, e))?;
        return summary_answer(py, &files);
    }
    let (_, got) = listings(py, src, false)?;
    let files: Vec<inv::list::FileListing> = got
        .into_iter()
        .map(|(name, g)| match g {
            Got::Value(l) => l,
            Got::NoDeviceCode => no_device_code(&name),
            Got::Damaged(msg, _) => inv::list::unreadable(&name, msg),
        })
        .collect();
    summary_answer(py, &files)
}

/// `gfxkit list --summary`'s object, text and status for `files`.
fn summary_answer<'py>(
    py: Python<'py>,
    files: &[inv::list::FileListing],
) -> PyResult<Bound<'py, PyAny>> {
    let summary = gfxkit_io::summary::summary(files);
    let failed = files.iter().any(|f| f.error.is_some());
    answer(
        py,
        &summary,
        if failed { 2 } else { 0 },
        |w| gfxkit_text::list::summary(&summary, files, w, &mut std::io::sink()),
        None,
    )
}

/// What the HIP runtime would load on `device` from each unit: the file object of
/// `gfxkit select --json` (for a package, a list of them). Split binaries on disk are
/// resolved through their kpack archives with the `kpack_loader` (`current` or `old`). With
/// `rocm` (`"6.2"`, or `"auto"` for the installed release), the runtime of that release.
/// `cu_count`: the device's compute units, for kernel databases with rows per count.
#[pyfunction]
#[pyo3(signature = (src, device, kpack_loader = "current", rocm = None, cu_count = None))]
fn select<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    device: &str,
    kpack_loader: &str,
    rocm: Option<&str>,
    cu_count: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let loader = self::kpack_loader(kpack_loader)?;
    let rocm = rocm_release(rocm, None, false)?;
    let device = gfxkit_target_id::triple::parse_device(device)
        .map_err(|e| Fail::Target(format!("'{device}' is not a device: {e}")).into_py(py, ""))?;
    let rocm = rocm.map(|r| r.for_devices(std::slice::from_ref(&device)));
    // A path on disk as the CLI reads it: split binaries through their archives, a library
    // with the kernel databases beside it, a directory searched (one answer per file).
    let on_disk = |path: PathBuf| -> PyResult<Vec<Bound<'py, PyAny>>> {
        let report = py
            .allow_threads(|| {
                gfxkit_io::whole::select_on(
                    &[path],
                    &device,
                    cu_count,
                    loader,
                    rocm.as_ref(),
                    &formats(),
                    &(),
                )
            })
            .map_err(|e| io_error(py, &e))?;
        let device = report.device.clone();
        report
            .files
            .into_iter()
            .map(|f| select_answer(py, &device, cu_count, f, rocm.as_ref()))
            .collect()
    };
    if let Ok(dir) = src.extract::<PathBuf>() {
        if dir.is_dir() && !gfxkit_io::input::is_image_dir(&dir) {
            return Ok(PyList::new(py, on_disk(dir)?)?.into_any());
        }
    }
    let s = source(src)?;
    if let Some(path) = s.path.clone().filter(|_| !s.image_dir) {
        let package = s.is_package();
        return one_or_list(py, package, on_disk(path)?);
    }
    // Bytes: each file as its format selects from it (nothing beside it is read), a package's
    // members judged with the kernel databases among them, as a path's are.
    let formats = formats();
    let (package, got) = per_file(py, &s, |p, d| {
        let file = door_file(p, d, false);
        let format = formats.of(&file);
        let rules = rocm.as_ref().map(|r| &r.rules);
        match format.database_member(&file) {
            Some(m) => Err(Box::new(m)),
            None => Ok(format.select(&file, &device, loader, rules)),
        }
    })?;
    let (mut libraries, mut members) = (Vec::new(), Vec::new());
    for (name, g) in got {
        match g {
            Got::Value(Ok(v)) if package && v.is_empty() => {}
            Got::Value(Ok(v)) => libraries.push((name, v)),
            Got::Value(Err(m)) => members.push(*m),
            Got::NoDeviceCode => {}
            Got::Damaged(msg, _) => {
                libraries.push((name.clone(), inv::select::unreadable(&name, msg)))
            }
        }
    }
    let report = py.allow_threads(|| {
        gfxkit_io::whole::select_together(libraries, members, &device, cu_count, rocm.as_ref())
    });
    let out = report
        .files
        .into_iter()
        .map(|f| select_answer(py, &report.device, cu_count, f, rocm.as_ref()))
        .collect::<PyResult<Vec<_>>>()?;
    one_or_list(py, package, out)
}

/// The verification of one file: the file object of `gfxkit verify --json` (for a package, a
/// list of them, one per member with device code: members without any are left out, as the
/// CLI names them apart). rocBLAS or hipBLASLt without device code of its own is judged by the
/// kernel database beside it (on disk, or in the package). Raises `NoDeviceCodeError` for
/// another file, or a package, without device code, `FormatError` for a damaged package member.
#[pyfunction]
fn verify<'py>(py: Python<'py>, src: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
    let on_disk = s.path.is_some();
    let (formats, around) = (formats(), Around::new());
    let (package, got) = per_file(py, &s, |p, d| {
        gfxkit_io::whole::verify_kept(&formats, &door_file(p, d, on_disk), &around)
    })?;
    // A package's kernel-database members and its libraries' processors, for its judgment.
    let mut databases = gfxkit_io::whole::PackageDatabases::default();
    let mut results: Vec<(String, Result<inv::verify::Verification, Got<inv::Error>>)> = got
        .into_iter()
        .map(|(name, g)| match g {
            Got::Value((r, kept)) => {
                databases.add(&name, kept);
                match r {
                    Ok(v) => (name, Ok(v)),
                    Err(e) => (name, Err(Got::Value(e))),
                }
            }
            Got::NoDeviceCode => (name, Err(Got::NoDeviceCode)),
            Got::Damaged(m, o) => (name, Err(Got::Damaged(m, o))),
        })
        .collect();
    if package {
        // Judged as its files in a tree are: its databases by the members beside them, its
        // libraries by their databases.
        gfxkit_io::whole::judge_package(
            &mut results,
            databases,
            |g| matches!(g, Got::Value(e) if e.is_no_device_code()),
        );
    } else if let (Some(path), [(name, r)]) = (&s.path, &mut results[..]) {
        // rocBLAS or hipBLASLt on disk without device code of its own: judged by the kernel
        // database beside it, by the command line's own judgment of the file named alone.
        let lib_paths = gfxkit_io::whole::tensile_lib_paths();
        if matches!(r, Err(Got::Value(e)) if e.is_no_device_code())
            && inv::database::needs_database(name, &lib_paths).is_some()
        {
            let report = py
                .allow_threads(|| {
                    gfxkit_io::whole::verify(std::slice::from_ref(path), false, &formats, &())
                })
                .map_err(|e| walk_error(py, e))?;
            if let Some(v) = report.files.into_iter().next() {
                *r = Ok(v);
            }
        }
    }
    // Members without device code do not fail a package that has others (left out).
    let (results, _) = if package {
        inv::verify::package_members(
            results,
            |g| matches!(g, Got::Value(e) if e.is_no_device_code()),
        )
    } else {
        (results, Vec::new())
    };
    let mut out = Vec::new();
    for (name, r) in results {
        match r {
            Ok(v) => {
                let status = if v.ok { 0 } else { 1 };
                let text = |w: &mut dyn std::io::Write| {
                    gfxkit_text::verify::reports(std::slice::from_ref(&v), w)
                };
                out.push(answer(py, &v, status, text, None)?)
            }
            Err(Got::Value(e)) => {
                return Err(Fail::from_inventory(&e, format!("{name}: {e}")).into_py(py, &name))
            }
            Err(Got::NoDeviceCode) => {
                return Err(
                    Fail::NoDeviceCode(format!("{name}: {}", gfxkit_io::NoDeviceCode))
                        .into_py(py, &name),
                )
            }
            Err(Got::Damaged(msg, offset)) => {
                return Err(Fail::Format {
                    msg,
                    entry: None,
                    offset,
                }
                .into_py(py, &name))
            }
        }
    }
    one_or_list(py, package, out)
}

/// The ROCm release of a `rocm` argument: a release number, or `auto` (the installed one,
/// read under `root`, `/` by default); when not given and `default_auto`, the installed one.
fn rocm_release(
    rocm: Option<&str>,
    root: Option<&std::path::Path>,
    default_auto: bool,
) -> PyResult<Option<inv::release::RocmRelease>> {
    let root = root.unwrap_or(std::path::Path::new("/"));
    match rocm {
        Some("auto") => Ok(gfxkit_io::rocm::installed_from_environment(root)),
        Some(v) => gfxkit_spec::rocm::RocmVersion::parse(v)
            .map(|v| Some(inv::release::RocmRelease::new(v, "--rocm")))
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("rocm: {e}"))),
        None if default_auto => Ok(gfxkit_io::rocm::installed_from_environment(root)),
        None => Ok(None),
    }
}

fn kpack_loader(name: &str) -> PyResult<gfxkit_kpack::search::Loader> {
    match name {
        "current" => Ok(gfxkit_kpack::search::Loader::Current),
        "old" => Ok(gfxkit_kpack::search::Loader::Old),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown kpack loader {name:?} (expected 'current' or 'old')"
        ))),
    }
}

/// Whether each library under `paths` runs on each of `devices`: `gfxkit doctor --json`'s
/// whole report (`{"devices", "files"}`). A device `auto` reads this machine's GPUs from the
/// KFD topology under `sysfs_root` (`/`), honouring `HSA_OVERRIDE_GFX_VERSION` and
/// `HSA_XNACK`; no paths means `$ROCM_PATH/lib` (`/opt/rocm/lib`). Directories are searched
/// as the CLI searches them (the same walk), packages by member, split binaries through their
/// kpack archives. `rocm`: the ROCm release to answer for (`"6.2"`, `"auto"`); with a device
/// `auto` and no `rocm`, the release installed under `sysfs_root` is read.
#[pyfunction]
#[pyo3(signature = (paths, devices, sysfs_root = None, kpack_loader = "current", rocm = None, cu_count = None))]
fn doctor<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    devices: Vec<String>,
    sysfs_root: Option<PathBuf>,
    kpack_loader: &str,
    rocm: Option<&str>,
    cu_count: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let loader = self::kpack_loader(kpack_loader)?;
    let machine = devices.iter().any(|d| d == "auto");
    let rocm = rocm_release(rocm, sysfs_root.as_deref(), machine)?;
    let mut ids: Vec<gfxkit_target_id::TargetId> = Vec::new();
    let mut counts = inv::database::CuCounts::none();
    for d in &devices {
        let found = if d == "auto" {
            let root = sysfs_root.clone().unwrap_or_else(|| PathBuf::from("/"));
            let (found, found_counts) = gfxkit_io::kfd::machine(&root).map_err(|e| {
                Fail::Device(chain(&e), e.path().display().to_string()).into_py(py, "")
            })?;
            for id in &found {
                if let Some(n) = found_counts.of(id) {
                    counts.set(id, n);
                }
            }
            found
        } else {
            vec![gfxkit_target_id::triple::parse_device(d)
                .map_err(|e| Fail::Target(format!("device {d}: {e}")).into_py(py, ""))?]
        };
        for id in found {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let paths = if paths.is_empty() {
        let rocm = std::env::var_os("ROCM_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/opt/rocm"));
        vec![rocm.join("lib")]
    } else {
        paths
    };
    let report = py
        .allow_threads(|| {
            let counts = match cu_count {
                Some(n) => inv::database::CuCounts::all(&ids, n),
                None => counts,
            };
            gfxkit_io::whole::doctor_on(
                &paths,
                &ids,
                &counts,
                loader,
                rocm.as_ref(),
                &formats(),
                &(),
            )
        })
        .map_err(|e| io_error(py, &e))?;
    // The command's exit status: 2 for a file with errors, 1 for a library that cannot run.
    let status = report
        .files
        .iter()
        .map(|f| {
            if !f.errors.is_empty() {
                2
            } else {
                u8::from(f.fails())
            }
        })
        .max()
        .unwrap_or(0);
    answer(
        py,
        &report,
        status,
        |w| gfxkit_text::doctor::report(&report, &ids, w),
        None,
    )
}

/// Whether every file with device code under `paths` runs on every `require`d target (and,
/// with `exactly`, carries nothing beyond them): `gfxkit check --json`'s report
/// (`{"required", "exactly", "ok", "files", "summary"}`). Directories are searched as the CLI
/// searches them, packages by member, split binaries through their kpack archives. `rocm`:
/// the ROCm release to answer for (`"6.2"`, `"auto"`).
#[pyfunction]
#[pyo3(signature = (paths, require, exactly = false, kpack_loader = "current", rocm = None))]
fn check<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    require: Vec<String>,
    exactly: bool,
    kpack_loader: &str,
    rocm: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let loader = self::kpack_loader(kpack_loader)?;
    let rocm = rocm_release(rocm, None, false)?;
    let mut ids: Vec<gfxkit_target_id::TargetId> = Vec::new();
    for r in &require {
        let id = gfxkit_target_id::triple::parse_device(r.trim())
            .map_err(|e| Fail::Target(format!("require {r}: {e}")).into_py(py, ""))?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(Fail::Target("require names no target".into()).into_py(py, ""));
    }
    let report = py
        .allow_threads(|| {
            gfxkit_io::whole::check_on(
                &paths,
                &ids,
                exactly,
                loader,
                rocm.as_ref(),
                &formats(),
                &(),
            )
        })
        .map_err(|e| io_error(py, &e))?;
    // As the command: no file with device code at all is an error.
    let status = if report.files.is_empty() {
        2
    } else {
        report.status()
    };
    answer(
        py,
        &report,
        status,
        |w| gfxkit_text::check::report(&report, w),
        None,
    )
}

/// What changed in device code between two builds (files, trees or packages): `gfxkit diff
/// --json OLD NEW`'s report; a `FormatError` naming every file that cannot be read when
/// some cannot (no diff is given then).
#[pyfunction]
fn diff<'py>(py: Python<'py>, old: PathBuf, new: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let report = py
        .allow_threads(|| gfxkit_io::whole::diff(&old, &new, &formats(), &()))
        .map_err(|e| io_error(py, &e))?;
    // As the CLI: damaged device code has no digests to compare, so no diff is given.
    if let Some(first) = report.errors.first() {
        let file = if first.starts_with(&*new.to_string_lossy()) {
            new.display().to_string()
        } else {
            old.display().to_string()
        };
        return Err(Fail::format(report.errors.join("; ")).into_py(py, &file));
    }
    answer(
        py,
        &report,
        report.status(),
        |w| gfxkit_text::diff::report(&report, w),
        None,
    )
}

/// Device bytes per architecture, file and bundle: `gfxkit size --json`'s report, with what
/// keeping only `keep` would save. `src` is a file's bytes, or paths (files, directories,
/// packages, members `pkg!member`) sized together as the CLI sizes them
/// ([`gfxkit_io::whole::size`]); `by_library`, `duplicates` and `check` as `--by library`,
/// `--duplicates` and `--check` ask (without `check`, compressed bundles are counted from their
/// headers, not verified), and `html` the path of the page `--html` writes (paths only).
#[pyfunction]
#[pyo3(signature = (src, keep = Vec::new(), by_library = false, duplicates = false, html = None, check = false))]
fn size<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    keep: Vec<String>,
    by_library: bool,
    duplicates: bool,
    html: Option<PathBuf>,
    check: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let keep = inv::size::Keep::parse(&keep)
        .map_err(|e| Fail::from_inventory(&e, e.to_string()).into_py(py, ""))?;
    // Bytes, or bytes with their name (`name=`).
    if src.downcast::<PyBytes>().is_ok() || src.extract::<(String, Bound<'py, PyBytes>)>().is_ok() {
        if by_library || duplicates || html.is_some() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "by_library, duplicates and html size files and directories, not bytes",
            ));
        }
        return size_of_bytes(py, &source(src)?, keep.as_ref(), check);
    }
    let paths: Vec<PathBuf> = match src.extract::<PathBuf>() {
        Ok(p) => vec![p],
        Err(_) => src.extract()?,
    };
    let opts = gfxkit_io::whole::SizeOptions {
        keep,
        by_library,
        duplicates,
        check,
    };
    let report = py
        .allow_threads(|| {
            let report = gfxkit_io::whole::size(&paths, &opts, &formats(), &())?;
            if let Some(page) = &html {
                gfxkit_io::write::write_atomic(page, inv::size::html(&report).as_bytes())?;
            }
            Ok(report)
        })
        .map_err(|e| io_error(py, &e))?;
    let by = if by_library {
        gfxkit_text::size::By::Library
    } else {
        gfxkit_text::size::By::Arch
    };
    size_answer(py, &report, by)
}

/// `gfxkit size`'s object, text (`--by arch`, or `by`; the duplicates `--duplicates` lists,
/// the first 10 as `--top` has it), status and `--html` page.
fn size_answer<'py>(
    py: Python<'py>,
    report: &inv::size::SizeReport,
    by: gfxkit_text::size::By,
) -> PyResult<Bound<'py, PyAny>> {
    let text = |w: &mut dyn std::io::Write| {
        gfxkit_text::size::table(report, by, w)?;
        if let Some(d) = &report.duplicates {
            gfxkit_text::size::duplicates(d, 10, w)?;
        }
        Ok(())
    };
    let status = if report.errors.is_empty() { 0 } else { 2 };
    answer(py, report, status, text, Some(inv::size::html(report)))
}

/// [`size`] of bytes in memory: a file, or a package by member (with `check`, compressed
/// bundles decompressed and their hashes checked).
fn size_of_bytes<'py>(
    py: Python<'py>,
    s: &Source<'_>,
    keep: Option<&inv::size::Keep>,
    check: bool,
) -> PyResult<Bound<'py, PyAny>> {
    // As the CLI sizes each file: a `.kpack` file by its kernels, a kernel database or a raw
    // code object by architecture; nothing beside bytes in memory is looked for.
    let (formats, around) = (formats(), Around::new());
    let (package, got) = per_file(py, s, |p, d| {
        let file = File::alone(p, d).with_limits(settings().limits);
        formats.of(&file).size(&file, check, &around).survey
    })?;
    let mut errors = Vec::new();
    let mut surveyed = Vec::new();
    for (member, g) in got {
        match g {
            Got::Value(Ok(sv)) if sv.regions.iter().any(|r| !r.bundles.is_empty()) => {
                surveyed.push((member, sv))
            }
            Got::Value(Ok(_)) => {}
            // Package members that are not host binaries or bundles hold nothing to size.
            Got::Value(Err(e))
                if package && matches!(e.kind, gfxkit_shrink::ErrorKind::Unsupported(_)) => {}
            Got::Value(Err(e)) => errors.push(format!("{member}: {e}")),
            Got::NoDeviceCode => errors.push(format!("{member}: {}", gfxkit_io::NoDeviceCode)),
            Got::Damaged(msg, _) => errors.push(format!("{member}: {msg}")),
        }
    }
    let mut report = inv::size::build_report(&surveyed, keep);
    report.errors = errors;
    size_answer(py, &report, gfxkit_text::size::By::Arch)
}

/// One extracted entry, handed to Python as a tuple: id, data, offset, unit, entry, ext,
/// archive member, file.
type Extracted = (
    String,
    Vec<u8>,
    u64,
    usize,
    usize,
    &'static str,
    Option<String>,
    String,
);

/// [`Extracted`] with its data as Python `bytes`.
type PyEntry<'py> = (
    String,
    Bound<'py, PyBytes>,
    u64,
    usize,
    usize,
    &'static str,
    Option<String>,
    String,
);

/// The entries of one file (or package member) `path` that `wanted` selects
/// ([`gfxkit_io::extract`], as the CLI extracts them); none for a file found in a package
/// with nothing to extract.
fn extract_one(
    path: &Path,
    bytes: &[u8],
    explicit: bool,
    wanted: &mut gfxkit_io::extract::Wanted,
    hash: gfxkit_bundle::ccob::HashCheck,
) -> Result<Vec<Extracted>, gfxkit_io::extract::ExtractError> {
    let formats = formats();
    let file = formats.file(path, bytes);
    let Some(plan) = formats.of(&file).extract(&file, explicit, wanted)? else {
        return Ok(Vec::new());
    };
    let done = plan.produce(None, hash, &|_, data, _| Ok(data.to_vec()))?;
    let file = path.display().to_string();
    Ok(done
        .items
        .into_iter()
        .map(|(item, data, _)| {
            (
                item.id,
                data,
                item.offset,
                item.unit,
                item.entry,
                item.ext,
                item.key.or(item.member),
                file.clone(),
            )
        })
        .collect())
}

/// An extraction's error as Python raises it, naming `file`.
fn extract_error(py: Python<'_>, e: gfxkit_io::extract::ExtractError, file: &str) -> PyErr {
    use gfxkit_io::extract::ExtractError;
    match &e {
        // Damaged or missing device code where it was looked for (a `.kpack` archive, the
        // archives of a split binary): a format error with its offset, not a file error.
        ExtractError::Io(io) => match io.kind() {
            gfxkit_io::ErrorKind::Found(i) | gfxkit_io::ErrorKind::Locate(i) => Fail::Format {
                msg: chain(io),
                entry: None,
                offset: i.offset(),
            }
            .into_py(py, file),
            gfxkit_io::ErrorKind::Kpack(k) => Fail::Format {
                msg: chain(io),
                entry: None,
                offset: Some(k.offset),
            }
            .into_py(py, file),
            _ => io_error(py, io),
        },
        ExtractError::NoDeviceCode(_) => Fail::NoDeviceCode(e.to_string()).into_py(py, file),
        ExtractError::Format { offset, .. } => Fail::Format {
            msg: chain(&e),
            entry: None,
            offset: *offset,
        }
        .into_py(py, file),
    }
}

/// The entries `targets` select (every entry but empty host entries when none is given), as
/// `(id, data, offset, unit, entry, ext, member, file)` tuples, in file order; for a package,
/// those of every member (`file` is `package!member`), for a `.kpack` archive its kernels
/// (`member` is the TOC key). `gfxkit.extract` wraps them in `Entry` objects.
#[pyfunction]
#[pyo3(signature = (src, targets = Vec::new(), ignore_hash = false))]
fn extract<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    targets: Vec<String>,
    ignore_hash: bool,
) -> PyResult<Vec<PyEntry<'py>>> {
    let s = source(src)?;
    let name = s.name.clone();
    let mut ids = Vec::new();
    for t in &targets {
        ids.push(
            inv::extract::requested_id(t)
                .map_err(|e| Fail::from_inventory(&e, e.to_string()).into_py(py, &name))?,
        );
    }
    let wanted = gfxkit_io::extract::Wanted::new(ids);
    let hash = if ignore_hash {
        gfxkit_bundle::ccob::HashCheck::Warn
    } else {
        gfxkit_bundle::ccob::HashCheck::Error
    };
    // Each file (or package member) on its own, as the CLI reads it; a file on disk with
    // its path, so that a split binary reaches the archives beside it.
    let explicit = !s.is_package();
    let (_, got) = per_file(py, &s, |p, d| {
        let mut w = wanted.clone();
        extract_one(p, d, explicit, &mut w, hash)
    })?;
    let mut out = Vec::new();
    for (file, g) in got {
        match g {
            Got::Value(Ok(v)) => out.extend(v),
            Got::Value(Err(e)) => return Err(extract_error(py, e, &file)),
            Got::NoDeviceCode => {}
            Got::Damaged(msg, offset) => {
                return Err(Fail::Format {
                    msg,
                    entry: None,
                    offset,
                }
                .into_py(py, &file))
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|(id, data, offset, unit, entry, ext, member, file)| {
            (
                id,
                PyBytes::new(py, &data),
                offset,
                unit,
                entry,
                ext,
                member,
                file,
            )
        })
        .collect())
}

/// The kernels of one file in memory (`name`, bytes `d`), as the CLI lists a file's
/// ([`gfxkit_io::format`]); the error names the file.
fn kernels_one(
    p: &Path,
    d: &[u8],
    wanted: Option<&gfxkit_target_id::TargetId>,
    demangle: bool,
) -> Result<inv::kernels::KernelListing, String> {
    let file = File::alone(p, d).with_limits(settings().limits);
    formats()
        .of(&file)
        .kernels(&file, wanted, demangle, &Around::new())
        .map_err(|e| chain(&e))
}

/// Every kernel of every code object in a file (bundles, host binaries, archives, packages,
/// split binaries through their kpack archives, `.kpack` files): the object
/// `gfxkit kernels --json FILE` prints (`{"kernels", "errors"}`). With `target`, only code
/// objects whose target ID overlaps it; `demangle` as `--demangle`.
#[pyfunction]
#[pyo3(signature = (src, target = None, demangle = false))]
fn kernels<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    target: Option<&str>,
    demangle: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let wanted = match target {
        Some(t) => Some(target_id(py, t)?),
        None => None,
    };
    let s = source(src)?;
    if let Some(path) = &s.path {
        // On disk: as the CLI walks it (a directory searched, split binaries through their
        // archives, a Tensile index by solution).
        let listing = py
            .allow_threads(|| {
                gfxkit_io::whole::kernels(
                    std::slice::from_ref(path),
                    wanted.as_ref(),
                    demangle,
                    &formats(),
                    &(),
                )
            })
            .map_err(|e| io_error(py, &e))?;
        return kernels_answer(py, &listing);
    }
    let w = wanted.as_ref();
    let (package, got) = if s.is_package() {
        per_file(py, &s, |p, d| kernels_one(p, d, w, demangle))?
    } else {
        let bytes = s.data.bytes();
        let name = Path::new(&s.name);
        let one = py.allow_threads(|| kernels_one(name, bytes, w, demangle));
        (false, vec![(s.name.clone(), Got::Value(one))])
    };
    let names: Vec<String> = got.iter().map(|(n, _)| n.clone()).collect();
    let mut out = inv::kernels::KernelListing::default();
    for (name, g) in got {
        match g {
            Got::Value(Ok(l)) => {
                out.kernels.extend(l.kernels);
                out.solutions.extend(l.solutions);
                out.errors.extend(l.errors);
            }
            Got::Value(Err(e)) => out.errors.push(e),
            Got::NoDeviceCode => out
                .errors
                .push(format!("{name}: {}", gfxkit_io::NoDeviceCode)),
            Got::Damaged(msg, _) => out.errors.push(format!("{name}: {msg}")),
        }
    }
    // A Tensile index's solutions, found in the members beside it in a package.
    let packages: &[&[String]] = if package { &[&names] } else { &[] };
    gfxkit_io::whole::solutions_in_packages(&mut out, packages, w);
    kernels_answer(py, &out)
}

/// `gfxkit kernels`'s object, text and status (2 with errors, 1 when no kernel is found).
fn kernels_answer<'py>(
    py: Python<'py>,
    listing: &inv::kernels::KernelListing,
) -> PyResult<Bound<'py, PyAny>> {
    let status = if !listing.errors.is_empty() {
        2
    } else if listing.kernels.is_empty() && listing.solutions.is_empty() {
        1
    } else {
        0
    };
    let text = |w: &mut dyn std::io::Write| {
        gfxkit_text::kernels::listing(&listing.kernels, &listing.solutions, false, w)
    };
    answer(py, listing, status, text, None)
}

/// One code object as `gfxkit inspect --json` prints it (`demangle`: as `--demangle`).
#[pyfunction]
#[pyo3(signature = (src, demangle = false))]
fn inspect<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    demangle: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
    s.one_file()?;
    let co = gfxkit_code_object::CodeObject::parse(s.data.bytes()).map_err(|e| {
        Fail::format(format!(
            "{}: not a readable AMDGPU code object: {e}",
            s.name
        ))
        .into_py(py, &s.name)
    })?;
    let report = gfxkit_inventory::inspect::inspect(&s.name, &co, demangle);
    answer(
        py,
        &report,
        0,
        |w| gfxkit_text::inspect::code_object(&s.name, &co, demangle, w),
        None,
    )
}

fn patterns(py: Python<'_>, v: &[String]) -> PyResult<Vec<Pattern>> {
    v.iter()
        .map(|s| {
            Pattern::parse(s).map_err(|e| Fail::Target(format!("bad target: {e}")).into_py(py, ""))
        })
        .collect()
}

fn conversion(
    py: Python<'_>,
    uncompressed: bool,
    ccob_version: Option<u16>,
    method: Option<&str>,
    level: Option<i32>,
) -> PyResult<Conversion> {
    if uncompressed {
        return Ok(Conversion::Uncompressed);
    }
    if ccob_version.is_none() && method.is_none() && level.is_none() {
        return Ok(Conversion::Keep);
    }
    let method = match method {
        None | Some("zstd") => gfxkit_shrink::Method::Zstd,
        Some("zlib") => gfxkit_shrink::Method::Zlib,
        Some(m) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown method {m:?} (expected 'zstd' or 'zlib')"
            )))
        }
    };
    let _ = py;
    Ok(Conversion::Compressed {
        version: ccob_version.unwrap_or(2),
        method,
        level,
    })
}

/// Rewrites `src` with `t` and writes it to `output` (or over the input with `in_place`),
/// verified; returns the report `prune --json` prints, without its timing.
fn run_transform<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    t: &Transform,
    output: Option<PathBuf>,
    in_place: bool,
    allow_empty: bool,
    drop_signature: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
    s.one_file()?;
    let name = s.name.clone();
    let target = match (output, in_place) {
        (Some(_), true) => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "give output or in_place, not both",
            ))
        }
        (Some(o), false) => {
            if let Some(p) = &s.path {
                if std::fs::canonicalize(p).ok() == std::fs::canonicalize(&o).ok() && o.exists() {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "output {} names the input file; use in_place=True to replace it",
                        o.display()
                    )));
                }
            }
            Some(o)
        }
        (None, true) => match &s.path {
            Some(p) => Some(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
            None => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "in_place needs a path, not bytes",
                ))
            }
        },
        (None, false) => None,
    };
    let bytes = s.data.bytes();
    let original = match &s.data {
        Data::Input(i) => gfxkit_io::rewrite::Original::Input(i),
        Data::Bytes(_) => gfxkit_io::rewrite::Original::Bytes(bytes),
    };
    let like = s.path.clone();
    let durability = if in_place {
        gfxkit_io::Durability::Synced
    } else {
        gfxkit_io::Durability::Rename
    };
    if gfxkit_io::input::is_package(bytes) {
        // A package: each member with device code rewritten and verified, the package
        // written again (RECORD / paths.json updated), read back and checked.
        let started = std::time::Instant::now();
        let formats = formats();
        let opts = gfxkit_io::rewrite::RewriteOptions {
            target: target.as_deref(),
            like: like.as_deref(),
            durability,
            allow_empty,
            drop_signature: false,
            digests: true,
            formats: &formats,
            source: match &s.data {
                Data::Input(i) => Some(i),
                Data::Bytes(_) => None,
            },
        };
        let done = py.allow_threads(|| gfxkit_io::package::rewrite_package(&name, bytes, t, &opts));
        let done = done.map_err(|e| match e.kind() {
            gfxkit_io::ErrorKind::Rewrite(_)
            | gfxkit_io::ErrorKind::Prune(_)
            | gfxkit_io::ErrorKind::ReadBack(_)
            | gfxkit_io::ErrorKind::ReadBackDiffers
            | gfxkit_io::ErrorKind::Record(_) => Fail::format(chain(&e)).into_py(py, &name),
            _ => io_error(py, &e),
        })?;
        return answer(
            py,
            &inv::prune::PruneOutcome {
                input: &name,
                output: target.as_ref().map(|p| p.display().to_string()),
                dry_run: target.is_none(),
                seconds: started.elapsed().as_secs_f64(),
                done: inv::prune::Done::Package {
                    members: done.members(),
                    files: &done.files,
                },
            },
            0,
            |w| gfxkit_text::prune::package(&name, target.as_deref(), &done.changed, w),
            None,
        );
    }
    let started = std::time::Instant::now();
    let opts = gfxkit_io::rewrite::RewriteOptions {
        target: target.as_deref(),
        like: like.as_deref(),
        durability,
        allow_empty,
        drop_signature,
        digests: true,
        formats: &formats(),
        source: None,
    };
    let done = py.allow_threads(|| {
        gfxkit_io::rewrite::rewrite_file(Path::new(&name), original, t, &opts, &|_| {})
    });
    let report = done.map_err(|e| match e.kind() {
        gfxkit_io::ErrorKind::Prune(_)
        | gfxkit_io::ErrorKind::Empty(_)
        | gfxkit_io::ErrorKind::Whole(_)
        | gfxkit_io::ErrorKind::Signature(_)
        | gfxkit_io::ErrorKind::DryRunVerify(_)
        | gfxkit_io::ErrorKind::Digests(_)
        | gfxkit_io::ErrorKind::Verify(_)
        | gfxkit_io::ErrorKind::TempDiffers => Fail::format(chain(&e)).into_py(py, &name),
        _ => io_error(py, &e),
    })?;
    let elapsed = started.elapsed();
    answer(
        py,
        &inv::prune::PruneOutcome {
            input: &name,
            output: target.as_ref().map(|p| p.display().to_string()),
            dry_run: target.is_none(),
            seconds: elapsed.as_secs_f64(),
            done: inv::prune::Done::File(&report),
        },
        0,
        |w| {
            gfxkit_text::prune::file(
                &name,
                target.as_deref(),
                target.is_none(),
                &report,
                elapsed,
                w,
            )
        },
        None,
    )
}

/// Splits the fat binary `src` (a path) by kpack: its code objects go to
/// `<kpack_dir>/<group>_<arch>.kpack` (merged with archives already there), the host-only
/// binary to `output`; everything is written atomically, archives first. A signed Windows
/// image is refused unless `drop_signature` (the host image is then written unsigned).
/// With `recursive`, `src` is a tree and `output` a directory mirroring it (`kpack split -r`);
/// with `overlays` too, `output` gets `generic/` and one overlay per processor with its
/// archives and kernel-database files (`kpack split -r --overlays`).
/// Returns the report `gfxkit kpack split --json` prints.
#[pyfunction]
#[pyo3(signature = (src, output, group, kpack_dir = None, kernel_name = None,
    compression = "zstd", level = 3, drop_signature = false, recursive = false,
    overlays = false))]
#[allow(clippy::too_many_arguments)]
fn kpack_split<'py>(
    py: Python<'py>,
    src: PathBuf,
    output: PathBuf,
    group: &str,
    kpack_dir: Option<PathBuf>,
    kernel_name: Option<String>,
    compression: &str,
    level: i32,
    drop_signature: bool,
    recursive: bool,
    overlays: bool,
) -> PyResult<Bound<'py, PyAny>> {
    use gfxkit_kpack::write::Compression;
    let compression = match compression {
        "zstd" => Compression::Zstd { level },
        "none" => Compression::None,
        c => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown compression {c:?} (expected 'zstd' or 'none')"
            )))
        }
    };
    if overlays && !recursive {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "overlays needs recursive",
        ));
    }
    let inputs = [src];
    let formats = formats();
    let request = gfxkit_io::split_request::SplitRequest {
        formats: &formats,
        inputs: &inputs,
        output: &output,
        group,
        kpack_dir: kpack_dir.as_deref(),
        kernel_name: kernel_name.as_deref(),
        compression,
        options: gfxkit_io::split::SplitOptions {
            drop_signature,
            limits: settings().limits,
        },
        tree: recursive.then_some(if overlays {
            gfxkit_io::split::TreeLayout::Overlays
        } else {
            gfxkit_io::split::TreeLayout::Single
        }),
    };
    match py.allow_threads(|| gfxkit_io::split_request::split_request(&request)) {
        Ok(r) => answer(py, &r, 0, |w| gfxkit_text::kpack::split(&r, w), None),
        Err(e) => Err(kpack_error(py, &e)),
    }
}

/// Turns a binary split by kpack (`src`, a path) and its archives (found through its markers
/// as the loader finds them; `archives` are searched first) back into a fat binary at
/// `output`, written atomically. Returns the report `gfxkit kpack inline --json` prints.
#[pyfunction]
#[pyo3(signature = (src, output, archives = Vec::new()))]
fn kpack_inline<'py>(
    py: Python<'py>,
    src: PathBuf,
    output: PathBuf,
    archives: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let limits = settings().limits;
    match py.allow_threads(|| gfxkit_io::split::inline(&src, &output, &archives, &limits)) {
        Ok(r) => answer(py, &r, 0, |w| gfxkit_text::kpack::inline(&r, w), None),
        Err(e) => Err(kpack_error(py, &e)),
    }
}

/// A `kpack split`/`inline` error: `FormatError` for device code or archives that cannot be
/// read or rewritten, `ValueError` for bad arguments, else as [`io_error`].
fn kpack_error(py: Python<'_>, e: &gfxkit_io::Error) -> PyErr {
    use gfxkit_io::ErrorKind;
    let file = e.path().display().to_string();
    match e.kind() {
        ErrorKind::SameFile
        | ErrorKind::BadGroup(_)
        | ErrorKind::DuplicateKernelName(_)
        | ErrorKind::Request(_) => pyo3::exceptions::PyValueError::new_err(chain(e)),
        ErrorKind::Split(_)
        | ErrorKind::MergeArchive(_)
        | ErrorKind::NotSplit
        | ErrorKind::Inline { .. }
        | ErrorKind::Kpack(_) => Fail::format(chain(e)).into_py(py, &file),
        _ => io_error(py, e),
    }
}

/// Keeps (or drops) architectures: `gfxkit prune`. `src` may be a directory: its pruned copy is
/// written to the directory `output` (see `gfxkit prune --help`). A prune that would leave no device code is
/// refused (`FormatError`) unless `allow_empty`. Without `output` or `in_place`, nothing is
/// written (a dry run, verified in memory). A signed Windows image is refused unless
/// `drop_signature` (the output is then unsigned).
#[pyfunction]
#[pyo3(signature = (src, keep = Vec::new(), drop = Vec::new(), output = None, in_place = false,
    uncompressed = false, ccob_version = None, method = None, level = None, allow_empty = false,
    drop_signature = false))]
#[allow(clippy::too_many_arguments)]
fn prune<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    keep: Vec<String>,
    drop: Vec<String>,
    output: Option<PathBuf>,
    in_place: bool,
    uncompressed: bool,
    ccob_version: Option<u16>,
    method: Option<String>,
    level: Option<i32>,
    allow_empty: bool,
    drop_signature: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let selection = match (keep.is_empty(), drop.is_empty()) {
        (false, true) => EntryFilter::Keep(patterns(py, &keep)?),
        (true, false) => EntryFilter::Drop(patterns(py, &drop)?),
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "give keep or drop (one of them)",
            ))
        }
    };
    let t = Transform {
        selection,
        conversion: conversion(py, uncompressed, ccob_version, method.as_deref(), level)?,
        limits: settings().limits,
    };
    if let Ok(dir) = src.extract::<PathBuf>() {
        if gfxkit_io::tree::is_tree(&dir) {
            return prune_tree(py, &dir, &t, output, in_place, allow_empty);
        }
    }
    run_transform(py, src, &t, output, in_place, allow_empty, drop_signature)
}

/// `prune` of a directory tree (`gfxkit_io::tree`): `output` is the directory written, or the
/// tree is replaced (`in_place`); without either, a dry run.
fn prune_tree<'py>(
    py: Python<'py>,
    dir: &std::path::Path,
    t: &Transform,
    output: Option<PathBuf>,
    in_place: bool,
    allow_empty: bool,
) -> PyResult<Bound<'py, PyAny>> {
    if in_place && output.is_some() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "give output or in_place, not both",
        ));
    }
    let name = dir.display().to_string();
    let started = std::time::Instant::now();
    let output = if in_place {
        Some(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()))
    } else {
        output
    };
    let to = match &output {
        None => gfxkit_io::tree::TreeOutput::DryRun,
        Some(_) if in_place => gfxkit_io::tree::TreeOutput::InPlace,
        Some(out) => gfxkit_io::tree::TreeOutput::Dir(out),
    };
    let done = py
        .allow_threads(|| gfxkit_io::tree::prune_tree(&formats(), dir, t, to, allow_empty))
        .map_err(|e| match e.kind() {
            gfxkit_io::ErrorKind::Prune(_)
            | gfxkit_io::ErrorKind::Database(_)
            | gfxkit_io::ErrorKind::CodeObject(_)
            | gfxkit_io::ErrorKind::Verify(_) => Fail::format(chain(&e)).into_py(py, &name),
            _ => io_error(py, &e),
        })?;
    let elapsed = started.elapsed();
    answer(
        py,
        &inv::prune::PruneOutcome {
            input: &name,
            output: output.as_ref().map(|p| p.display().to_string()),
            dry_run: output.is_none(),
            seconds: elapsed.as_secs_f64(),
            done: inv::prune::Done::Tree {
                size_before: done.size_before,
                size_after: done.size_after,
                unmatched: &done.unmatched,
                files: &done.files,
            },
        },
        0,
        |w| {
            gfxkit_text::prune::tree(
                &name,
                output.as_deref(),
                output.is_none(),
                &done,
                elapsed,
                w,
            )
        },
        None,
    )
}

/// Converts the compression of every bundle: `gfxkit recompress` (CCOB v2 zstd by default).
#[pyfunction]
#[pyo3(signature = (src, output = None, in_place = false, uncompressed = false,
    ccob_version = None, method = None, level = None, drop_signature = false))]
#[allow(clippy::too_many_arguments)]
fn recompress<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    output: Option<PathBuf>,
    in_place: bool,
    uncompressed: bool,
    ccob_version: Option<u16>,
    method: Option<String>,
    level: Option<i32>,
    drop_signature: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let conversion = match conversion(py, uncompressed, ccob_version, method.as_deref(), level)? {
        Conversion::Keep => Conversion::Compressed {
            version: 2,
            method: gfxkit_shrink::Method::Zstd,
            level: None,
        },
        c => c,
    };
    let t = Transform {
        selection: EntryFilter::All,
        conversion,
        limits: settings().limits,
    };
    run_transform(py, src, &t, output, in_place, false, drop_signature)
}

/// An AMDGPU target ID (`gfx90a:sramecc+:xnack-`): processor and target-ID feature settings.
#[pyclass(name = "TargetId", module = "gfxkit", frozen)]
struct PyTargetId(gfxkit_target_id::TargetId);

#[pymethods]
impl PyTargetId {
    #[new]
    fn new(py: Python<'_>, text: &str) -> PyResult<PyTargetId> {
        Ok(PyTargetId(target_id(py, text)?))
    }

    /// The processor name (`gfx90a`; aliases are resolved).
    #[getter]
    fn processor(&self) -> &'static str {
        self.0.processor().name
    }

    /// The settings named: `{"sramecc": True, "xnack": False}` (features left out are absent).
    #[getter]
    fn features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (f, s) in self.0.features() {
            match s {
                FeatureSetting::On => d.set_item(f.name(), true)?,
                FeatureSetting::Off => d.set_item(f.name(), false)?,
                _ => {}
            }
        }
        Ok(d)
    }

    /// Whether code built for this target ID runs on `device`.
    fn is_compatible_with(&self, device: &PyTargetId) -> bool {
        self.0.check_compatible(&device.0).is_ok()
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("TargetId('{}')", self.0)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<PyTargetId>()
            .is_ok_and(|o| o.get().0 == self.0)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.0.to_string().hash(&mut h);
        h.finish()
    }
}

/// Whether a code object built for `code_object_id` runs on a device `device_id`.
#[pyfunction]
fn compatible(py: Python<'_>, code_object_id: &str, device_id: &str) -> PyResult<bool> {
    let co = target_id(py, code_object_id)?;
    let dev = target_id(py, device_id)?;
    Ok(co.check_compatible(&dev).is_ok())
}

/// The largest uncompressed size a compressed bundle may declare before it is refused
/// (`gfxkit --max-uncompressed`, `GFXKIT_MAX_UNCOMPRESSED` read when the module is imported):
/// `limit` sets it for the whole process; the current value is returned either way.
#[pyfunction]
#[pyo3(signature = (limit = None))]
fn max_uncompressed(limit: Option<u64>) -> u64 {
    let mut s = SETTINGS.write().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = limit {
        s.limits.max_uncompressed = n;
    }
    s.limits.max_uncompressed
}

/// The platform multi-platform container images are read as (`gfxkit --platform`), as
/// `OS/ARCH[/VARIANT]`, or `None` for the default (linux/amd64 when the image has it, else its
/// only platform). With `platform`, sets it first (`""` goes back to the default).
#[pyfunction]
#[pyo3(signature = (platform = None))]
fn image_platform(platform: Option<&str>) -> PyResult<Option<String>> {
    use gfxkit_package::image;
    let chosen = match platform {
        Some("") => Some(None),
        Some(p) => Some(Some(
            image::Platform::parse(p).map_err(pyo3::exceptions::PyValueError::new_err)?,
        )),
        None => None,
    };
    let mut s = SETTINGS.write().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = chosen {
        s.platform = p;
    }
    Ok(s.platform.as_ref().map(|p| p.to_string()))
}

/// The processor table, one dict per row: the objects `gfxkit target list --json` prints
/// (one serialisation, `gfxkit_spec::ProcessorRow`).
#[pyfunction]
fn processors(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    json(py, &gfxkit_spec::ProcessorRow::all())
}

/// The code sequence of a memory-model case (`load_atomic;as=global;ord=acquire;scope=agent`)
/// on `cpu`, one instruction per string.
#[pyfunction]
#[pyo3(signature = (cpu, case, cumode = false, tgsplit = false, os = "amdhsa",
    skip_cache_invalidations = false))]
fn memmodel(
    py: Python<'_>,
    cpu: &str,
    case: &str,
    cumode: bool,
    tgsplit: bool,
    os: &str,
    skip_cache_invalidations: bool,
) -> PyResult<Vec<String>> {
    use gfxkit_memory_model::{Case, Config, Os};
    let fail = |m: String| Fail::Usage(m).into_py(py, "");
    let os = Os::by_name(os).ok_or_else(|| {
        fail(format!(
            "unknown OS `{os}` (expected amdhsa, amdpal or mesa3d)"
        ))
    })?;
    let cfg = Config::for_processor(cpu)
        .and_then(|c| c.with_cumode(cumode))
        .and_then(|c| c.with_tgsplit(tgsplit))
        .map_err(|e| fail(e.to_string()))?
        .with_os(os)
        .with_skip_cache_invalidations(skip_cache_invalidations);
    let case: Case = case.parse().map_err(|e| fail(format!("{e}")))?;
    let seq = gfxkit_memory_model::sequence(&cfg, &case)
        .map_err(|e| fail(format!("{case} is not valid on {}: {e}", cfg.label())))?;
    Ok(seq.asm())
}

/// The inputs of a census under each of `paths`, each walked on its own, on every core without
/// the GIL ([`gfxkit_io::census::walk_each`]): files named, and under directories every file
/// that may hold device code, as `gfxkit list -r` walks them, sorted by path; `None` for a path
/// that cannot be walked (it does not exist).
#[pyfunction]
#[pyo3(signature = (paths))]
fn census_walk_each(py: Python<'_>, paths: Vec<PathBuf>) -> Vec<Option<Vec<String>>> {
    let found = py.allow_threads(|| gfxkit_io::census::walk_each(&paths));
    found
        .into_iter()
        .map(|r| {
            r.ok()
                .map(|v| v.iter().map(|p| p.display().to_string()).collect())
        })
        .collect()
}

/// The local inputs of a census given `paths`, found without the GIL
/// ([`gfxkit_io::census::local_inputs`]): their names (sorted, each once), absolute paths,
/// sizes (`None` for what is not a regular file), copies (`[(position, [positions of its
/// copies])]`) and whether each is a library read with the kernel databases beside it
/// ([`gfxkit_io::census::LocalInputs::beside`]).
/// With `threads`, the walk and its hashing run on that many threads ([`on_threads`]).
#[pyfunction]
#[pyo3(signature = (paths, threads = None))]
#[allow(clippy::type_complexity)]
fn census_local_inputs(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    threads: Option<usize>,
) -> PyResult<(
    Vec<String>,
    Vec<String>,
    Vec<Option<u64>>,
    Vec<(usize, Vec<usize>)>,
    Vec<bool>,
)> {
    let found =
        py.allow_threads(|| on_threads(threads, || gfxkit_io::census::local_inputs(&paths)))?;
    Ok((
        found.names,
        found.sources,
        found.sizes,
        found.copies,
        found.beside,
    ))
}

/// Runs `work` on a pool of `threads` threads, made once per count and kept for the process
/// (`None`: where it is called, on rayon's global pool of one thread per core). Every parallel
/// step inside runs on that pool, and with one thread nothing runs beside it (a stream
/// package's visits, a bundle's hash: they run in place), so that a census told to use N
/// workers uses N cores, and a Dask worker's tasks the worker's threads.
fn on_threads<R: Send>(threads: Option<usize>, work: impl FnOnce() -> R + Send) -> PyResult<R> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let Some(n) = threads else {
        return Ok(work());
    };
    if n == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "threads: at least 1",
        ));
    }
    let pool = {
        let mut pools = POOLS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match pools.get(&n) {
            Some(p) => Arc::clone(p),
            None => {
                let p = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("gfxkit-{i}"))
                    .build()
                    .map(Arc::new)
                    .map_err(|e| {
                        pyo3::exceptions::PyOSError::new_err(format!(
                            "cannot start {n} threads: {e}"
                        ))
                    })?;
                pools.insert(n, Arc::clone(&p));
                p
            }
        }
    };
    Ok(pool.install(work))
}

/// Renames `tmp`, a temporary file written beside `path` (a census's Parquet file or report),
/// over `path` with the permissions gfxkit's outputs get: those of the file it replaces, else
/// 0666 less the umask ([`gfxkit_io::write::publish`]).
#[pyfunction]
#[pyo3(signature = (tmp, path))]
fn census_publish(py: Python<'_>, tmp: PathBuf, path: PathBuf) -> PyResult<()> {
    py.allow_threads(|| gfxkit_io::write::publish(&tmp, &path))
        .map_err(|e| io_error(py, &e))
}

/// What the inputs of a census read together (a shard) share: each kernel-database directory
/// their indexes are resolved against is listed once for all of them, as it was when first
/// listed ([`Around`]).
#[pyclass(name = "CensusScope", module = "gfxkit", frozen)]
struct CensusScope(Around);

#[pymethods]
impl CensusScope {
    #[new]
    fn new() -> CensusScope {
        CensusScope(Around::new())
    }
}

/// The census rows of `items` (`(path, name, beside)`: each input, named `name` in its rows;
/// with `beside`, a library read with the kernel databases beside it, whose files join its
/// `database_files`: [`gfxkit_io::census::database_files_beside`]) as JSON
/// lines, `(inputs, code_objects)`: a line per input, and a line per code object, in the
/// order of the items; with `check`, each compressed bundle's own hash checked as it is
/// decoded; the directories around them listed through `scope` (default: a scope of these
/// inputs alone). Read and written without the GIL, released once for all of them, for
/// pyarrow's JSON reader to make a shard's tables without a Python object per row. Never
/// raises for a bad input: its row says `status` `error` or `damaged`, with `error`. With
/// `threads`, read on that many threads ([`on_threads`]).
#[pyfunction]
#[pyo3(signature = (items, check = false, scope = None, threads = None))]
fn census_rows_json<'py>(
    py: Python<'py>,
    items: Vec<(PathBuf, String, bool)>,
    check: bool,
    scope: Option<Bound<'py, CensusScope>>,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let alone;
    let around = match &scope {
        Some(s) => &s.get().0,
        None => {
            alone = Around::new();
            &alone
        }
    };
    let read = || -> serde_json::Result<(Vec<u8>, Vec<u8>)> {
        let formats = formats();
        let (mut inputs, mut code_objects) = (Vec::new(), Vec::new());
        for (path, name, beside) in &items {
            let mut rows = gfxkit_io::census::rows(path, name, &formats, check, around);
            if *beside {
                let files = gfxkit_io::census::database_files_beside(path, name, &formats);
                rows.input.database_files.extend(files);
            }
            serde_json::to_writer(&mut inputs, &rows.input)?;
            inputs.push(b'\n');
            for row in &rows.code_objects {
                serde_json::to_writer(&mut code_objects, row)?;
                code_objects.push(b'\n');
            }
        }
        Ok((inputs, code_objects))
    };
    let lines = py.allow_threads(|| on_threads(threads, read))?;
    let (inputs, code_objects) =
        lines.map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok((PyBytes::new(py, &inputs), PyBytes::new(py, &code_objects)))
}

/// What each file lacks of `required` (`[{"input", "path", "required", "why"}]`), by the rule
/// of `gfxkit check`, from the census's code-object columns (one list per column, a row per
/// code object) and its kernel-database files (`database_files`, the JSON documents of the
/// inputs' `database_files` column, each with the input in `database_inputs`) and the
/// libraries that load databases (`library_paths` and `library_found`, of the
/// `database_libraries` column, with theirs in `library_inputs`), and the bundles that load
/// nothing (`dead_paths`, `dead_units`, `dead_containers`, `dead_whys`, `dead_entries` and
/// `dead_header_bytes`, of the `dead_units` column, with theirs in `dead_inputs`; without
/// `dead_containers`, how they are stored is not known): each database judged as `check` judges it, with the library that
/// loads it
/// ([`gfxkit_inventory::census::lacks_on`]). With `rocm`
/// (`"6.2"`), by the rule of `gfxkit check --rocm`: the columns `containers`,
/// `ccob_versions` and `code_object_versions` then say what that release cannot load (absent:
/// nothing refused for that reason).
#[pyfunction]
#[pyo3(signature = (inputs, paths, units, archives, entry_ids, required, containers = None, ccob_versions = None, code_object_versions = None, rocm = None, database_inputs = None, database_files = None, library_inputs = None, library_paths = None, library_found = None, dead_inputs = None, dead_paths = None, dead_units = None, dead_whys = None, dead_entries = None, dead_header_bytes = None, dead_containers = None))]
#[allow(clippy::too_many_arguments)]
fn census_lacks<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    paths: Vec<String>,
    units: Vec<u32>,
    archives: Vec<Option<String>>,
    entry_ids: Vec<String>,
    required: Vec<String>,
    containers: Option<Vec<String>>,
    ccob_versions: Option<Vec<Option<u16>>>,
    code_object_versions: Option<Vec<Option<u8>>>,
    rocm: Option<&str>,
    database_inputs: Option<Vec<String>>,
    database_files: Option<Vec<String>>,
    library_inputs: Option<Vec<String>>,
    library_paths: Option<Vec<String>>,
    library_found: Option<Vec<bool>>,
    dead_inputs: Option<Vec<String>>,
    dead_paths: Option<Vec<String>>,
    dead_units: Option<Vec<u32>>,
    dead_whys: Option<Vec<String>>,
    dead_entries: Option<Vec<Vec<String>>>,
    dead_header_bytes: Option<Vec<Option<u64>>>,
    dead_containers: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = inputs.len();
    let database_inputs = database_inputs.unwrap_or_default();
    let database_files = database_files.unwrap_or_default();
    if database_inputs.len() != database_files.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "census_lacks: database_inputs and database_files differ in length",
        ));
    }
    let library_inputs = library_inputs.unwrap_or_default();
    let library_paths = library_paths.unwrap_or_default();
    let library_found = library_found.unwrap_or_default();
    if library_inputs.len() != library_paths.len() || library_paths.len() != library_found.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "census_lacks: library_inputs, library_paths and library_found differ in length",
        ));
    }
    let (dead_inputs, dead_paths, dead_units, dead_whys) = (
        dead_inputs.unwrap_or_default(),
        dead_paths.unwrap_or_default(),
        dead_units.unwrap_or_default(),
        dead_whys.unwrap_or_default(),
    );
    let (dead_entries, dead_header_bytes) = (
        dead_entries.unwrap_or_default(),
        dead_header_bytes.unwrap_or_default(),
    );
    let dead_containers = dead_containers.unwrap_or_else(|| vec![String::new(); dead_inputs.len()]);
    if [
        dead_paths.len(),
        dead_containers.len(),
        dead_units.len(),
        dead_whys.len(),
        dead_entries.len(),
        dead_header_bytes.len(),
    ]
    .iter()
    .any(|l| *l != dead_inputs.len())
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "census_lacks: the dead_* columns differ in length",
        ));
    }
    let files = database_inputs
        .into_iter()
        .zip(&database_files)
        .map(|(input, doc)| match serde_json::from_str(doc) {
            Ok(m) => Ok((input, m)),
            Err(e) => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{input}: a kernel-database file of the census that does not read ({e}): {}",
                doc.chars().take(200).collect::<String>()
            ))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let databases = inv::census::Databases {
        files,
        libraries: library_inputs
            .into_iter()
            .zip(library_paths.into_iter().zip(library_found))
            .map(|(input, (path, database_found))| {
                let l = inv::census::DatabaseLibrary {
                    path,
                    database_found,
                };
                (input, l)
            })
            .collect(),
        dead: dead_inputs
            .into_iter()
            .zip(
                dead_paths
                    .into_iter()
                    .zip(dead_units.into_iter().zip(dead_whys)),
            )
            .zip(dead_entries.into_iter().zip(dead_header_bytes))
            .zip(dead_containers)
            .map(
                |(((input, (path, (unit, why))), (entries, header_bytes)), container)| {
                    let d = inv::census::DeadUnit {
                        path,
                        unit,
                        container,
                        why,
                        entries,
                        header_bytes,
                    };
                    (input, d)
                },
            )
            .collect(),
    };
    let optional = [
        containers.as_ref().map(Vec::len),
        ccob_versions.as_ref().map(Vec::len),
        code_object_versions.as_ref().map(Vec::len),
    ];
    if [paths.len(), units.len(), archives.len(), entry_ids.len()]
        .iter()
        .chain(optional.iter().flatten())
        .any(|l| *l != n)
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "census_lacks: the columns differ in length",
        ));
    }
    let required = required
        .iter()
        .map(|r| target_id(py, r))
        .collect::<PyResult<Vec<_>>>()?;
    let rows: Vec<inv::census::CodeObjectRow> = (0..n)
        .map(|i| inv::census::CodeObjectRow {
            input: inputs[i].clone(),
            path: paths[i].clone(),
            member: None,
            layer: None,
            container: containers
                .as_ref()
                .map(|c| c[i].clone())
                .unwrap_or_default(),
            ccob_version: ccob_versions.as_ref().and_then(|c| c[i]),
            unit: units[i],
            unit_offset: 0,
            entry: 0,
            name: None,
            archive: archives[i].clone(),
            entry_id: entry_ids[i].clone(),
            target_id: None,
            processor: None,
            features: String::new(),
            xnack: None,
            sramecc: None,
            generic: false,
            code_object_version: code_object_versions.as_ref().and_then(|c| c[i]),
            stored_bytes: 0,
            uncompressed_bytes: 0,
            sha256: None,
            kernels: None,
        })
        .collect();
    let rocm = rocm_release(rocm, None, false)?;
    let lacks = py.allow_threads(|| {
        inv::census::lacks_on(
            &rows,
            &databases,
            &required,
            rocm.as_ref().map(|r| &r.rules),
        )
    });
    json(py, &lacks)
}

/// The native module.
/// The `gfxkit` command: [`gfxkit::main_with_args`] on `argv` (`argv[0]` the name it was
/// invoked under), the same program as the cargo-built binary, writing to the process's stdout
/// and stderr; returns the exit status. The GIL is released while it runs.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.allow_threads(|| gfxkit::exit_status(gfxkit::main_with_args(argv)))
}

#[pymodule]
fn _gfxkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // GFXKIT_MAX_UNCOMPRESSED applies to the package as to the command line.
    if let Some(n) = gfxkit_bundle::limits::max_uncompressed_from_env()
        .map_err(pyo3::exceptions::PyValueError::new_err)?
    {
        SETTINGS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .limits
            .max_uncompressed = n;
    }
    m.add_function(wrap_pyfunction!(list, m)?)?;
    m.add_function(wrap_pyfunction!(list_summary, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(doctor, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(size, m)?)?;
    m.add_function(wrap_pyfunction!(extract, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(kpack_split, m)?)?;
    m.add_function(wrap_pyfunction!(kpack_inline, m)?)?;
    m.add_function(wrap_pyfunction!(prune, m)?)?;
    m.add_function(wrap_pyfunction!(recompress, m)?)?;
    m.add_function(wrap_pyfunction!(compatible, m)?)?;
    m.add_function(wrap_pyfunction!(max_uncompressed, m)?)?;
    m.add_function(wrap_pyfunction!(image_platform, m)?)?;
    m.add_function(wrap_pyfunction!(processors, m)?)?;
    m.add_function(wrap_pyfunction!(memmodel, m)?)?;
    m.add_function(wrap_pyfunction!(census_walk_each, m)?)?;
    m.add_function(wrap_pyfunction!(census_local_inputs, m)?)?;
    m.add_function(wrap_pyfunction!(census_publish, m)?)?;
    m.add_function(wrap_pyfunction!(census_rows_json, m)?)?;
    m.add_function(wrap_pyfunction!(census_lacks, m)?)?;
    m.add_class::<PyTargetId>()?;
    m.add_class::<CensusScope>()?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__build__", gfxkit::VERSION)?;
    Ok(())
}
