//! `prune` and `recompress` of packages (wheels, conda, deb, rpm, tarballs): every member
//! that holds device code is rewritten and verified by its format (`Format::rewrite`; a member a
//! prune of a tree keeps or drops whole is kept as it is); the package is
//! written again around it (wheels with their `RECORD`, conda packages with
//! `info/paths.json` updated; every other member copied as it was), to a temporary file that
//! is read back and checked before it is renamed into place.

use crate::format::File;
use crate::input::{Input, TempSpill};
use crate::prune_file::holds_no_bundles;
use crate::rewrite::RewriteOptions;
use crate::write::{write_atomic_checked, WriteError};
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

/// Rewrites the package `data` (named `name`) with `t`, each member by the format of
/// `opts.formats` that claims it. With `opts.target`, the result is written there atomically
/// (a new file takes the permissions of `opts.like`), read back and checked first (every
/// rewritten member has the bytes produced; a wheel's `RECORD` matches); without, nothing is
/// written (a dry run, each member verified in memory). Unless `opts.allow_empty`, a prune
/// that would leave the package without any device code is refused before anything is written
/// ([`gfxkit_shrink::refuse_empty`]). The members' reports always carry their entries'
/// digests, and a signed image among them is refused (`opts.digests` and
/// `opts.drop_signature` are for one file).
pub fn rewrite_package(
    name: &str,
    data: &[u8],
    t: &Transform,
    opts: &RewriteOptions<'_>,
) -> Result<Rewritten, Error> {
    let RewriteOptions {
        target,
        like,
        durability,
        allow_empty,
        formats,
        ..
    } = *opts;
    let reports: Mutex<BTreeMap<String, Report>> = Mutex::new(BTreeMap::new());
    let hashes: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    let f = |m: gfxkit_package::Member<'_>| -> Result<Option<Vec<u8>>, String> {
        // Read as the file it is, without what lies beside it (a member's path finds nothing).
        let path = Path::new(&m.path);
        let file = File::alone(path, &m.bytes).with_limits(t.limits);
        let format = formats.of(&file);
        let mut rewritten = match format.rewrite(&file, t) {
            Ok(r) => r,
            // A file a prune keeps or drops whole: a package keeps every such member.
            Err(e) if matches!(e.kind(), ErrorKind::Whole(_)) => return Ok(None),
            Err(e) => match e.kind() {
                // A member with no bundles to rewrite (a host library without device code).
                ErrorKind::Prune(e) if holds_no_bundles(e, &m.bytes, &t.limits) => return Ok(None),
                ErrorKind::Prune(e) => return Err(e.to_string()),
                _ => {
                    // The error and what caused it, as one line.
                    let mut text = e.to_string();
                    let mut cause = std::error::Error::source(&e);
                    while let Some(c) = cause {
                        text.push_str(&format!(": {c}"));
                        cause = c.source();
                    }
                    return Err(text);
                }
            },
        };
        rewritten
            .report
            .add_digests(&m.bytes, &t.limits)
            .map_err(|e| e.to_string())?;
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
        let bytes = rewritten.bytes();
        format
            .verify_rewrite(&file, &bytes, &rewritten)
            .map_err(|e| format!("the rewritten member failed verification: {e}"))?;
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
