//! `prune` and `recompress` of packages (wheels, conda, deb, rpm, tarballs): every member
//! that holds device code is rewritten with the shrink library and verified; the package is
//! written again around it (wheels with their `RECORD`, conda packages with
//! `info/paths.json` updated; every other member copied as it was), to a temporary file that
//! is read back and checked before it is renamed into place.

use crate::input::{Input, TempSpill};
use crate::write::{write_atomic_checked, Durability, WriteError};
use crate::{Error, ErrorKind};
use gfxkit_inventory::prune::MemberOutcome;
use gfxkit_package::rewrite::{rewrite, Changed};
use gfxkit_shrink::{Report, Transform};
use std::collections::BTreeMap;
use std::io::Seek;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What a package rewrite changed.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// The members rewritten (`package!member`), with their sizes, in package order.
    pub changed: Vec<Changed>,
    /// The shrink report of each member with bundles, by `package!member`: those rewritten
    /// and those the transform left as they were.
    pub reports: BTreeMap<String, Report>,
}

impl Rewritten {
    /// The rewritten members with their reports, in package order.
    pub fn members(&self) -> Vec<MemberOutcome<'_>> {
        self.changed
            .iter()
            .filter_map(|c| {
                self.reports.get(&c.path).map(|r| MemberOutcome {
                    path: &c.path,
                    size_before: c.size_before,
                    size_after: c.size_after,
                    report: r,
                })
            })
            .collect()
    }
}

/// Rewrites the package `data` (named `name`) with `t`. With `target`, the result is
/// written there atomically (a new file takes the permissions of `like`), read back and
/// checked first (every rewritten member has the bytes produced; a wheel's `RECORD` matches);
/// without, nothing is written (a dry run, each member verified in memory). Unless
/// `allow_empty`, a prune that would leave the package without any device code is refused
/// before anything is written ([`gfxkit_shrink::refuse_empty`]).
pub fn rewrite_package(
    name: &str,
    data: &[u8],
    t: &Transform,
    target: Option<&Path>,
    like: Option<&Path>,
    durability: Durability,
    allow_empty: bool,
) -> Result<Rewritten, Error> {
    let reports: Mutex<BTreeMap<String, Report>> = Mutex::new(BTreeMap::new());
    let hashes: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    let f = |m: gfxkit_package::Member<'_>| -> Result<Option<Vec<u8>>, String> {
        let rewritten = match gfxkit_shrink::rewrite(&m.bytes, t) {
            Ok(r) => r,
            // A member with no bundles to rewrite (a host library without device code).
            Err(e)
                if matches!(e.kind, gfxkit_shrink::ErrorKind::Unsupported(_))
                    && gfxkit_shrink::survey_with(&m.bytes, false, &t.limits)
                        .map(|s| s.regions.iter().all(|r| r.bundles.is_empty()))
                        .unwrap_or(true) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e.to_string()),
        };
        if !rewritten.report.changed() {
            // Kept for the package-wide answers (nothing emptied, targets unmatched).
            if rewritten.report.had_device_code() {
                reports
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(m.path.to_owned(), rewritten.report);
            }
            return Ok(None);
        }
        gfxkit_shrink::verify(&m.bytes, &rewritten, &t.limits)
            .map_err(|e| format!("the rewritten member failed verification: {e}"))?;
        let bytes = rewritten.bytes();
        hashes.lock().unwrap_or_else(|e| e.into_inner()).insert(
            m.path.to_owned(),
            gfxkit_package::record::sha256_hex(&bytes),
        );
        reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(m.path.to_owned(), rewritten.report);
        Ok(Some(bytes))
    };
    let opts = gfxkit_package::Options::default();
    let dir = target
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let mut staged = match target {
        None => tempfile::tempfile(),
        Some(_) => tempfile::tempfile_in(&dir),
    }
    .map_err(|e| Error::new(&dir, ErrorKind::CreateTemp(e)))?;
    let changed = rewrite(name, data, &opts, &TempSpill, &f, &mut staged)
        .map_err(|e| Error::new(name, ErrorKind::Rewrite(e)))?;
    let hashes = hashes.into_inner().unwrap_or_else(|e| e.into_inner());
    let reports = reports.into_inner().unwrap_or_else(|e| e.into_inner());
    if !allow_empty {
        gfxkit_shrink::refuse_empty(t, reports.values())
            .map_err(|e| Error::new(name, ErrorKind::Prune(e)))?;
    }
    if let Some(path) = target {
        write_atomic_checked(
            path,
            |w| {
                staged.rewind()?;
                std::io::copy(&mut staged, w)?;
                Ok::<(), std::io::Error>(())
            },
            |tmp| check_written(tmp, name, &changed, &hashes).map_err(std::io::Error::other),
            like,
            durability,
        )
        .map_err(|e| match e {
            WriteError::Io(e) => e,
            WriteError::Fill { path, error } => Error::new(path, ErrorKind::Write(error)),
            WriteError::Check(error) => match error.downcast::<Error>() {
                Ok(e) => e,
                Err(error) => Error::new(path, ErrorKind::Write(error)),
            },
        })?;
    }
    Ok(Rewritten { changed, reports })
}

/// Reads the written package back: every rewritten member must be there with the bytes
/// produced, and a wheel's `RECORD` must give each of them its hash and size.
fn check_written(
    tmp: &Path,
    name: &str,
    changed: &[Changed],
    hashes: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let back = Input::open(tmp)?;
    let unreadable = |e| Error::new(name, ErrorKind::ReadBack(e));
    let seen = gfxkit_package::walk(
        name,
        &back,
        &gfxkit_package::Options::default(),
        &TempSpill,
        &|m| gfxkit_package::record::sha256_hex(&m.bytes),
    )
    .map_err(unreadable)?;
    let mut got = BTreeMap::new();
    for r in seen {
        let v = r.map_err(unreadable)?;
        got.insert(v.path, v.value);
    }
    for c in changed {
        let want = hashes.get(&c.path);
        if want.is_some() && got.get(&c.path) != want {
            return Err(Error::new(
                PathBuf::from(&c.path),
                ErrorKind::ReadBackDiffers,
            ));
        }
    }
    if gfxkit_package::detect(back.get(..4).unwrap_or(&back)) == Some(gfxkit_package::Format::Zip) {
        gfxkit_package::rewrite::check_record(name, &back)
            .map_err(|e| Error::new(name, ErrorKind::Record(e)))?;
    }
    Ok(())
}
