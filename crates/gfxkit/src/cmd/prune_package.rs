//! `prune` and `recompress` of packages: every member that holds device code is rewritten with
//! the shrink library and verified; the package is written again around it (wheels with their
//! `RECORD`, conda packages with `info/paths.json` updated; every other member copied as it
//! was), to a temporary file that is read back and checked before it is renamed into place.

use crate::cmd::prune::IoArgs;
use crate::cmd::size::human;
use crate::input::{Input, TempSpill};
use anyhow::{bail, Context, Result};
use gfxkit_package::rewrite::{rewrite, Changed};
use gfxkit_shrink::{Report, Transform};
use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

/// One rewritten member in the JSON report.
#[derive(serde::Serialize)]
struct MemberReport<'a> {
    path: &'a str,
    size_before: u64,
    size_after: u64,
    #[serde(flatten)]
    report: &'a Report,
}

/// Rewrites the package `input` (named by `io.input`) with `t`.
pub fn execute(io: &IoArgs, t: &Transform, input: &Input) -> Result<ExitCode> {
    let name = io.input.display().to_string();
    let reports: Mutex<BTreeMap<String, Report>> = Mutex::new(BTreeMap::new());
    let hashes: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    let f = |m: gfxkit_package::Member<'_>| -> Result<Option<Vec<u8>>, String> {
        let rewritten = match gfxkit_shrink::rewrite(&m.bytes, t) {
            Ok(r) => r,
            // A member with no bundles to rewrite (a host library without device code).
            Err(e)
                if matches!(e.kind, gfxkit_shrink::ErrorKind::Unsupported(_))
                    && gfxkit_shrink::survey_with(&m.bytes, false)
                        .map(|s| s.regions.iter().all(|r| r.bundles.is_empty()))
                        .unwrap_or(true) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e.to_string()),
        };
        if !rewritten.report.changed() {
            return Ok(None);
        }
        gfxkit_shrink::verify(&m.bytes, &rewritten)
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
    let target = io.target();
    let dir = target
        .as_deref()
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let mut staged = if io.dry_run {
        tempfile::tempfile()
    } else {
        tempfile::tempfile_in(&dir)
    }
    .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    let changed = rewrite(&name, input, &opts, &TempSpill, &f, &mut staged)
        .with_context(|| format!("cannot rewrite {name}"))?;
    let hashes = hashes.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = &target {
        crate::output::write_atomic_checked(
            path,
            |w| {
                staged.rewind()?;
                std::io::copy(&mut staged, w)?;
                Ok(())
            },
            |tmp| check_written(tmp, &name, &changed, &hashes),
            Some(&io.input),
            // Only the replacement of an input must reach the disk before the rename.
            if io.in_place {
                crate::output::Durability::Synced
            } else {
                crate::output::Durability::Rename
            },
        )?;
    }
    let reports = reports.into_inner().unwrap_or_else(|e| e.into_inner());
    print_report(&name, target.as_deref(), io, &changed, &reports)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads the written package back: every rewritten member must be there with the bytes
/// produced, and a wheel's `RECORD` must give each of them its hash and size.
fn check_written(
    tmp: &Path,
    name: &str,
    changed: &[Changed],
    hashes: &BTreeMap<String, String>,
) -> Result<()> {
    let back = Input::open(tmp)?;
    let seen = gfxkit_package::walk(
        name,
        &back,
        &gfxkit_package::Options::default(),
        &TempSpill,
        &|m| gfxkit_package::record::sha256_hex(&m.bytes),
    )
    .with_context(|| format!("{name}: the written package does not read back"))?;
    let mut got = BTreeMap::new();
    for r in seen {
        let v = r.with_context(|| format!("{name}: the written package does not read back"))?;
        got.insert(v.path, v.value);
    }
    for c in changed {
        let want = hashes.get(&c.path);
        if want.is_some() && got.get(&c.path) != want {
            bail!("{}: reads back with other bytes than written", c.path);
        }
    }
    if gfxkit_package::detect(back.get(..4).unwrap_or(&back)) == Some(gfxkit_package::Format::Zip) {
        gfxkit_package::rewrite::check_record(name, &back)
            .with_context(|| format!("{name}: the written wheel's RECORD does not match"))?;
    }
    Ok(())
}

fn print_report(
    name: &str,
    written: Option<&Path>,
    io: &IoArgs,
    changed: &[Changed],
    reports: &BTreeMap<String, Report>,
) -> Result<()> {
    if io.json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            input: &'a str,
            output: Option<String>,
            dry_run: bool,
            members: Vec<MemberReport<'a>>,
        }
        let members = changed
            .iter()
            .filter_map(|c| {
                reports.get(&c.path).map(|r| MemberReport {
                    path: &c.path,
                    size_before: c.size_before,
                    size_after: c.size_after,
                    report: r,
                })
            })
            .collect();
        return crate::output::print_json(&Out {
            input: name,
            output: written.map(|p| p.display().to_string()),
            dry_run: io.dry_run,
            members,
        });
    }
    let mut out = std::io::stdout().lock();
    let before: u64 = changed.iter().map(|c| c.size_before).sum();
    let after: u64 = changed.iter().map(|c| c.size_after).sum();
    writeln!(
        out,
        "{name}: {} rewritten, {} -> {} uncompressed{}",
        if changed.len() == 1 {
            "1 member".to_owned()
        } else {
            format!("{} members", changed.len())
        },
        human(before),
        human(after),
        match written {
            Some(p) => format!(", written to {}", p.display()),
            None => " [dry run: nothing written]".to_owned(),
        }
    )?;
    for c in changed {
        writeln!(
            out,
            "  {}: {} -> {}",
            c.path,
            human(c.size_before),
            human(c.size_after)
        )?;
    }
    if changed.is_empty() {
        writeln!(out, "  no member changed")?;
    }
    Ok(())
}
