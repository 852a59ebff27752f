//! `gfxkit select`'s text: per file, the code object each unit hands the device, or why none.

use gfxkit_inventory::error::{Error, ErrorKind};
use gfxkit_inventory::select::{SelectReport, UnitChoice};
use std::io::{Result, Write};

/// How many files of a kernel database the text names before "and N more".
pub const DATABASE_FILES_SHOWN: usize = 3;

/// Prints one line per unit (index, place, outcome) or, for more than
/// [`crate::group::GROUP_ABOVE`] units, one line per distinct outcome with the indices that have it.
fn unit_lines<P: std::fmt::Display>(
    out: &mut dyn Write,
    what: &str,
    units: impl Iterator<Item = (usize, P, String)>,
) -> Result<()> {
    let units: Vec<(usize, P, String)> = units.collect();
    if units.len() <= crate::group::GROUP_ABOVE {
        for (i, place, outcome) in &units {
            writeln!(out, "  [{i:>3}] {:<28} {outcome}", place.to_string())?;
        }
        return Ok(());
    }
    for (indices, outcome) in crate::group::group_by_text(units.into_iter().map(|(i, _, o)| (i, o)))
    {
        let n = indices.len();
        let what = if n == 1 {
            what.trim_end_matches('s')
        } else {
            what
        };
        writeln!(
            out,
            "  [{}] {n} {what}: {outcome}",
            crate::group::ranges(&indices)
        )?;
    }
    Ok(())
}

/// Prints the report on `out`, the files' problems on `err`.
pub fn report(r: &SelectReport, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    match r.cu_count {
        Some(n) => writeln!(out, "device {}, {n} CUs", r.device)?,
        None => writeln!(out, "device {}", r.device)?,
    }
    if let Some(rocm) = &r.rocm {
        crate::rocm::runtime_line(rocm, out)?;
    }
    for f in &r.files {
        if let Some(e) = &f.error {
            writeln!(out, "error: {}", crate::group::naming(&f.path, e))?;
            continue;
        }
        for p in &f.problems {
            writeln!(err, "gfxkit: {}: {}: {p}", p.severity, f.path)?;
        }
        let kpack: Vec<_> = f.kpack_units().collect();
        if !kpack.is_empty() {
            let chosen = kpack.iter().filter(|(b, _)| b.selected.is_some()).count();
            // A split binary's units are its HIPK wrappers; a `.kpack` file's, its TOC keys.
            let what = if f.kpack.is_empty() {
                "kernels of the archive"
            } else {
                "kpack wrappers"
            };
            writeln!(
                out,
                "{}: {chosen} of {} {what} have a code object for the device",
                f.path,
                kpack.len()
            )?;
            let lines = kpack.iter().map(|(b, u)| {
                let key = u.lookup.key.as_deref().unwrap_or("?");
                let outcome = match &b.selected {
                    Some(id) => {
                        let mut o = format!(
                            "{id} (kpack: {})",
                            u.lookup.archive.as_deref().unwrap_or("")
                        );
                        if let Some(n) = &b.needs {
                            o.push_str(&format!(", needs {n}"));
                        }
                        for d in &u.lookup.skipped {
                            o.push_str(&format!("; skipped, as the runtime does: damaged {d}"));
                        }
                        o
                    }
                    None => format!("none: {}", u.failure_text()),
                };
                (u.index as usize, key, outcome)
            });
            unit_lines(out, what, lines)?;
        }
        // A kernel database the library loads: after its bundles.
        let databases: Vec<String> = f
            .database_units()
            .map(|(b, d)| {
                let outcome = match &b.selected {
                    Some(_) if d.files.len() > DATABASE_FILES_SHOWN + 1 => {
                        let index = d
                            .files
                            .iter()
                            .filter(|f| f.contains("TensileLibrary") && f.ends_with(".dat"))
                            .min_by_key(|f| (!f.contains("_lazy_"), f.len()));
                        let first: Vec<&str> = index
                            .into_iter()
                            .chain(d.files.iter().filter(|f| Some(*f) != index))
                            .take(DATABASE_FILES_SHOWN)
                            .map(String::as_str)
                            .collect();
                        format!(
                            "loads {} files: {} and {} more (--json lists them)",
                            d.files.len(),
                            first.join(", "),
                            d.files.len() - first.len()
                        )
                    }
                    Some(_) => format!("loads {}", d.files.join(", ")),
                    None => format!(
                        "none: {}",
                        b.reason
                            .strip_prefix(&format!("{} ", d.database))
                            .unwrap_or(&b.reason)
                    ),
                };
                if f.path == d.database {
                    format!("{}: kernel database: {outcome}", f.path)
                } else {
                    format!("{}: kernel database {}: {outcome}", f.path, d.database)
                }
            })
            .collect();
        let units: Vec<_> = f
            .bundles
            .iter()
            .filter(|b| b.kpack.is_none() && b.database.is_none())
            .collect();
        if units.is_empty() {
            // Damage that hides the device code was said above (on stderr): not "none here".
            let damaged = f
                .problems
                .iter()
                .any(|p| p.severity == gfxkit_host::Severity::Error);
            if kpack.is_empty() && !damaged && databases.is_empty() {
                // Device code for other GPUs is said as `verify` says it.
                let kind = if !f.other_gpus.is_empty() {
                    Some(ErrorKind::OtherGpusOnly(f.other_gpus.clone()))
                } else if !f.nvidia.is_empty() {
                    Some(ErrorKind::NvidiaOnly(
                        f.nvidia
                            .iter()
                            .map(gfxkit_inventory::inventory::nvidia_label)
                            .collect(),
                    ))
                } else {
                    None
                };
                match kind {
                    Some(kind) => writeln!(out, "{}: {}", f.path, Error::new(kind))?,
                    None => writeln!(out, "{}: no device code", f.path)?,
                }
            }
            for line in &databases {
                writeln!(out, "{line}")?;
            }
            continue;
        }
        let chosen = units.iter().filter(|b| b.selected.is_some()).count();
        writeln!(
            out,
            "{}: {chosen} of {} {} a code object for the device",
            f.path,
            crate::plural(units.len() as u64, "bundle", "bundles"),
            if units.len() == 1 { "has" } else { "have" },
        )?;
        let lines = units.iter().map(|b| (b.index, place(b), outcome(b)));
        unit_lines(out, "bundles", lines)?;
        for line in &databases {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// Where a unit is: its member, section and file offset.
fn place(b: &UnitChoice) -> String {
    match (&b.member, &b.section) {
        (Some(m), Some(s)) => format!("{m} {s} @{:#x}", b.offset),
        (Some(m), None) => format!("{m} @{:#x}", b.offset),
        (None, Some(s)) => format!("{s} @{:#x}", b.offset),
        (None, None) => format!("@{:#x}", b.offset),
    }
}

/// What the runtime loads from a unit: the entry, how it was chosen, what the device must be
/// set to and whether the code object holds no kernels; or why nothing loads.
fn outcome(b: &UnitChoice) -> String {
    match (&b.selected, b.via) {
        (Some(id), Some(via)) => {
            let needs = b.needs.as_ref().map(|n| format!(", needs {n}"));
            // What loads but gives the device nothing to launch.
            let empty = (b.kernels == Some(0)).then_some(", holds no kernels");
            format!(
                "{id} ({via}){}{}",
                needs.unwrap_or_default(),
                empty.unwrap_or_default()
            )
        }
        // A bundle that cannot be read makes the command exit 2: said as an error.
        _ if b.unreadable => format!("error: {}", b.reason),
        _ => format!("none: {}", b.reason),
    }
}
