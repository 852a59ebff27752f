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
//! - errors: [`Fail`], raised as `gfxkit.errors.*` with `file`, `entry` and `offset`;
//! - the functions `list`, `select`, `verify`, `doctor`, `size`, `extract`, `inspect`,
//!   `prune`, `recompress`, `compatible`, `processors`, `memmodel`, and the class `TargetId`.

use gfxkit_inventory as inv;
use gfxkit_inventory::{locate, Inventory};
use gfxkit_shrink::{Conversion, Pattern, Selection, Transform};
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
    /// A file that cannot be read or written.
    Io(std::io::Error),
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
            gfxkit_inventory::ErrorKind::NoDeviceCode => Fail::NoDeviceCode(msg),
            _ => Fail::Format {
                msg,
                entry: e.entry(),
                offset: e.offset(),
            },
        }
    }

    fn into_py(self, py: Python<'_>, file: &str) -> PyErr {
        let (class, msg, entry, offset) = match self {
            Fail::Io(e) => return PyErr::from(e),
            Fail::Format { msg, entry, offset } => ("FormatError", msg, entry, offset),
            Fail::Target(msg) => ("TargetError", msg, None, None),
            Fail::NoDeviceCode(msg) => ("NoDeviceCodeError", msg, None, None),
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

/// The bytes of an input: borrowed from a Python `bytes`, memory-mapped from a file, or copied
/// from another buffer.
enum Data<'py> {
    Bytes(Bound<'py, PyBytes>),
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Data<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Bytes(b) => b.as_bytes(),
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
        }
    }
}

/// An input and the name it goes by in reports (the path as given, or `<bytes>`).
struct Source<'py> {
    name: String,
    path: Option<PathBuf>,
    data: Data<'py>,
}

/// Maps `path` read-only (empty and non-regular files are read instead).
fn map_file(path: &Path) -> std::io::Result<Data<'static>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is a directory",
            path.display()
        )));
    }
    if meta.is_file() && meta.len() > 0 {
        // SAFETY: a private read-only map; gfxkit never writes to a mapped input (rewrites
        // go to a new file renamed over it, which leaves the mapped inode as it was).
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        Ok(Data::Mapped(map))
    } else {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut buf)?;
        Ok(Data::Owned(buf))
    }
}

fn source<'py>(src: &Bound<'py, PyAny>) -> PyResult<Source<'py>> {
    if let Ok(b) = src.downcast::<PyBytes>() {
        return Ok(Source {
            name: "<bytes>".to_owned(),
            path: None,
            data: Data::Bytes(b.clone()),
        });
    }
    if let Ok(path) = src.extract::<PathBuf>() {
        let data = map_file(&path)?;
        return Ok(Source {
            name: path.display().to_string(),
            path: Some(path),
            data,
        });
    }
    match src.extract::<Vec<u8>>() {
        Ok(v) => Ok(Source {
            name: "<bytes>".to_owned(),
            path: None,
            data: Data::Owned(v),
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

fn target_id(py: Python<'_>, s: &str) -> PyResult<gfxkit_target_id::TargetId> {
    gfxkit_target_id::TargetId::parse(s)
        .map_err(|e| Fail::Target(format!("'{s}' is not a target ID: {e}")).into_py(py, ""))
}

/// The listing of one file: the file object of `gfxkit list --json`. With `strict`, a file
/// whose device code cannot be read raises `FormatError` instead of carrying `error`.
#[pyfunction]
#[pyo3(signature = (src, check = false, strict = true))]
fn list<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    check: bool,
    strict: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
    let bytes = s.data.bytes();
    let name = s.name.as_str();
    let listing = py.allow_threads(|| inv::list::list(name, &Inventory::of(bytes), check));
    if strict {
        if let Some(msg) = &listing.error {
            let fail = match &listing.failure {
                Some(e) => Fail::from_inventory(e, msg.clone()),
                None => Fail::format(msg.clone()),
            };
            return Err(fail.into_py(py, name));
        }
    }
    json(py, &listing)
}

/// What the HIP runtime would load on `device` from each unit: the file object of
/// `gfxkit select --json`.
#[pyfunction]
fn select<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    device: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let device = target_id(py, device)?;
    let s = source(src)?;
    let bytes = s.data.bytes();
    let name = s.name.as_str();
    let sel = py.allow_threads(|| inv::select::select(name, &Inventory::of(bytes), &device));
    json(py, &sel)
}

/// The verification of one file: the file object of `gfxkit verify --json`. Raises
/// `NoDeviceCodeError` for a file without device code.
#[pyfunction]
fn verify<'py>(py: Python<'py>, src: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
    let bytes = s.data.bytes();
    let name = s.name.as_str();
    let r = py.allow_threads(|| inv::verify::verify_bytes(name, bytes));
    match r {
        Ok(v) => json(py, &v),
        Err(e) => Err(Fail::from_inventory(&e, format!("{name}: {e}")).into_py(py, name)),
    }
}

/// Files under `paths` (directories searched, sorted, symbolic links to directories not
/// followed), with whether each was named directly.
fn walk(paths: &[PathBuf]) -> std::io::Result<Vec<(PathBuf, bool)>> {
    fn dir(p: &Path, out: &mut Vec<(PathBuf, bool)>) -> std::io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            let Ok(m) = std::fs::symlink_metadata(&e) else {
                continue;
            };
            if m.is_dir() {
                dir(&e, out)?;
            } else if m.is_file() && m.len() > 0 {
                out.push((e, false));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if std::fs::metadata(p)?.is_dir() {
            dir(p, &mut out)?;
        } else {
            out.push((p.clone(), true));
        }
    }
    Ok(out)
}

/// Whether each library under `paths` runs on each of `devices`: `gfxkit doctor --json`'s
/// whole report (`{"devices", "files"}`).
#[pyfunction]
fn doctor<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    devices: Vec<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut ids: Vec<gfxkit_target_id::TargetId> = Vec::new();
    for d in &devices {
        let id = target_id(py, d)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let files = walk(&paths)?;
    let mut report = inv::doctor::DoctorReport {
        devices: ids.iter().map(|d| d.to_string()).collect(),
        files: Vec::new(),
    };
    for (path, _) in files {
        let name = path.display().to_string();
        let examined = match map_file(&path) {
            Ok(data) => {
                let bytes = data.bytes();
                py.allow_threads(|| inv::doctor::examine(&Inventory::of(bytes)))
            }
            Err(e) => inv::doctor::Examined {
                errors: vec![format!("cannot open {name}: {e}")],
                ..Default::default()
            },
        };
        if let Some(f) = inv::doctor::judge(&name, examined, &ids) {
            report.files.push(f);
        }
    }
    json(py, &report)
}

/// Device bytes of one file per architecture and bundle: `gfxkit size --json FILE`'s report,
/// with what keeping only `keep` would save.
#[pyfunction]
#[pyo3(signature = (src, keep = Vec::new()))]
fn size<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    keep: Vec<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
    let bytes = s.data.bytes();
    let name = s.name.clone();
    let mut errors = Vec::new();
    let mut surveyed = Vec::new();
    match py.allow_threads(|| inv::size::survey(bytes)) {
        Ok(sv) if sv.regions.iter().any(|r| !r.bundles.is_empty()) => {
            surveyed.push((name.clone(), sv))
        }
        Ok(_) => {}
        Err(e) => errors.push(format!("{name}: {e}")),
    }
    let mut report = inv::size::build_report(&surveyed, &keep)
        .map_err(|e| Fail::from_inventory(&e, e.to_string()).into_py(py, &name))?;
    report.errors = errors;
    json(py, &report)
}

/// One extracted entry, handed to Python as a tuple.
type Extracted = (
    String,
    Vec<u8>,
    u64,
    usize,
    usize,
    &'static str,
    Option<String>,
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
);

/// The entries `targets` select (every entry but empty host entries when none is given), as
/// `(id, data, offset, unit, entry, ext, member)` tuples, in file order. `gfxkit.extract`
/// wraps them in `Entry` objects.
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
    let mut wanted = Vec::new();
    for t in &targets {
        wanted.push(
            inv::extract::requested_id(t)
                .map_err(|e| Fail::from_inventory(&e, e.to_string()).into_py(py, &name))?,
        );
    }
    let bytes = s.data.bytes();
    let hash = if ignore_hash {
        gfxkit_bundle::ccob::HashCheck::Warn
    } else {
        gfxkit_bundle::ccob::HashCheck::Error
    };
    let got: Result<Vec<Extracted>, Fail> = py.allow_threads(|| {
        let inv = Inventory::of(bytes);
        if let Some(e) = &inv.error {
            return Err(Fail::from_inventory(e, format!("{name}: {e}")));
        }
        let mut matched = vec![false; wanted.len()];
        let mut out = Vec::new();
        for u in &inv.units {
            let (entries, _, _) = locate::read_header(u, false)
                .map_err(|e| Fail::from_inventory(&e, format!("{name}: {}: {e}", u.describe())))?;
            let picked = inv::extract::pick(&entries, &wanted, &mut matched);
            if picked.is_empty() {
                continue;
            }
            let payloads = locate::with_payloads(u, hash, |list| {
                picked
                    .iter()
                    .filter_map(|&i| list.get(i).map(|p| (i, p.payload.to_vec(), p.ext)))
                    .collect::<Vec<_>>()
            })
            .map_err(|e| Fail::from_inventory(&e, format!("{name}: {}: {e}", u.describe())))?;
            for (i, data, ext) in payloads {
                out.push((
                    entries[i].id.clone(),
                    data,
                    entries[i].offset,
                    u.index,
                    i,
                    ext,
                    u.member.clone(),
                ));
            }
        }
        Ok(out)
    });
    let got = got.map_err(|f| f.into_py(py, &name))?;
    Ok(got
        .into_iter()
        .map(|(id, data, offset, unit, entry, ext, member)| {
            (
                id,
                PyBytes::new(py, &data),
                offset,
                unit,
                entry,
                ext,
                member,
            )
        })
        .collect())
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
    let co = gfxkit_code_object::CodeObject::parse(s.data.bytes()).map_err(|e| {
        Fail::format(format!(
            "{}: not a readable AMDGPU code object: {e}",
            s.name
        ))
        .into_py(py, &s.name)
    })?;
    json(
        py,
        &gfxkit_inventory::inspect::inspect(&s.name, &co, demangle),
    )
}

/// Writes `bytes` to `path` through a temporary file in its directory, which is read back and
/// verified against the original before it is renamed over `path`.
fn write_verified(
    path: &Path,
    like: Option<&Path>,
    original: &[u8],
    rewritten: &gfxkit_shrink::Rewritten,
) -> Result<(), Fail> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".gfxkit-")
        .tempfile_in(dir)
        .map_err(Fail::Io)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        rewritten
            .output
            .write_to(&mut w)
            .and_then(|_| w.flush())
            .map_err(Fail::Io)?;
    }
    tmp.as_file().sync_all().map_err(Fail::Io)?;
    let back = std::fs::read(tmp.path()).map_err(Fail::Io)?;
    if !rewritten.output.equals(&back) {
        return Err(Fail::format(format!(
            "{}: the temporary file does not read back as written",
            path.display()
        )));
    }
    gfxkit_shrink::verify_bytes(original, &back, &rewritten.report).map_err(|e| {
        Fail::format(format!(
            "{}: the written file failed verification; nothing replaced: {e}",
            path.display()
        ))
    })?;
    if let Some(meta) = std::fs::metadata(path)
        .ok()
        .or_else(|| like.and_then(|l| std::fs::metadata(l).ok()))
    {
        std::fs::set_permissions(tmp.path(), meta.permissions()).map_err(Fail::Io)?;
    }
    tmp.persist(path).map_err(|e| Fail::Io(e.error))?;
    Ok(())
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
) -> PyResult<Bound<'py, PyAny>> {
    let s = source(src)?;
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
    let like = s.path.clone();
    let done: Result<gfxkit_shrink::Report, Fail> = py.allow_threads(|| {
        let rewritten = gfxkit_shrink::rewrite(bytes, t)
            .map_err(|e| Fail::format(format!("cannot rewrite {name}: {e}")))?;
        match &target {
            Some(path) => write_verified(path, like.as_deref(), bytes, &rewritten)?,
            None => gfxkit_shrink::verify(bytes, &rewritten).map_err(|e| {
                Fail::format(format!(
                    "{name}: the rewritten file failed verification: {e}"
                ))
            })?,
        }
        Ok(rewritten.report)
    });
    let report = done.map_err(|f| f.into_py(py, &name))?;
    #[derive(serde::Serialize)]
    struct Out<'a> {
        input: &'a str,
        output: Option<String>,
        dry_run: bool,
        #[serde(flatten)]
        report: &'a gfxkit_shrink::Report,
    }
    json(
        py,
        &Out {
            input: &name,
            output: target.as_ref().map(|p| p.display().to_string()),
            dry_run: target.is_none(),
            report: &report,
        },
    )
}

/// Keeps (or drops) architectures: `gfxkit prune`. Without `output` or `in_place`, nothing is
/// written (a dry run, verified in memory).
#[pyfunction]
#[pyo3(signature = (src, keep = Vec::new(), drop = Vec::new(), output = None, in_place = false,
    uncompressed = false, ccob_version = None, method = None, level = None))]
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
) -> PyResult<Bound<'py, PyAny>> {
    let selection = match (keep.is_empty(), drop.is_empty()) {
        (false, true) => Selection::Keep(patterns(py, &keep)?),
        (true, false) => Selection::Drop(patterns(py, &drop)?),
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "give keep or drop (one of them)",
            ))
        }
    };
    let t = Transform {
        selection,
        conversion: conversion(py, uncompressed, ccob_version, method.as_deref(), level)?,
    };
    run_transform(py, src, &t, output, in_place)
}

/// Converts the compression of every bundle: `gfxkit recompress` (CCOB v2 zstd by default).
#[pyfunction]
#[pyo3(signature = (src, output = None, in_place = false, uncompressed = false,
    ccob_version = None, method = None, level = None))]
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
        selection: Selection::All,
        conversion,
    };
    run_transform(py, src, &t, output, in_place)
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

/// The processor table, one dict per row (the objects `gfxkit target list --json` prints).
#[pyfunction]
fn processors(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let rows: Vec<serde_json::Value> = gfxkit_spec::PROCESSORS
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "aliases": p.aliases,
                "arch": p.arch.as_str(),
                "kind": p.kind.as_str(),
                "features": p.features.iter().map(|f| f.name()).collect::<Vec<_>>(),
                "target_id_features": p.target_id_features.iter().map(|f| f.name()).collect::<Vec<_>>(),
                "mach": p.mach,
                "generic_family": p.generic_family,
                "generic_version": p.generic_version,
                "generic_members": p.generic_members().map(|m| m.name).collect::<Vec<_>>(),
                "memory_model": p.memory_model.name(),
                "in_llvm19": p.in_llvm19(),
                "llvm": p.llvm.to_string(),
                "xnack_always": p.xnack_always(),
            })
        })
        .collect();
    to_py(py, &serde_json::Value::Array(rows))
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
    let fail = |m: String| Fail::format(m).into_py(py, "");
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

/// The native module.
#[pymodule]
fn _gfxkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(list, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(doctor, m)?)?;
    m.add_function(wrap_pyfunction!(size, m)?)?;
    m.add_function(wrap_pyfunction!(extract, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(prune, m)?)?;
    m.add_function(wrap_pyfunction!(recompress, m)?)?;
    m.add_function(wrap_pyfunction!(compatible, m)?)?;
    m.add_function(wrap_pyfunction!(processors, m)?)?;
    m.add_function(wrap_pyfunction!(memmodel, m)?)?;
    m.add_class::<PyTargetId>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
