//! The kernels of a file, one row per kernel (what `gfxkit kernels` lists and Python's
//! `gfxkit.kernels` returns): each code object's kernels with the unit and entry they come
//! from, their resources and occupancy ([`gfxkit_code_object::summaries`]).

use crate::locate;
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_code_object::{summaries, CodeObject, Header, KernelSummary};
use gfxkit_target_id::TargetId;
use rayon::prelude::*;
use serde::Serialize;

/// One kernel of one code object.
#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    /// The file (`package!member` for a package member).
    pub file: String,
    /// Where the code object is: the unit (`bundle 0 in .hip_fatbin`), or for kpack the TOC
    /// key and the archive.
    pub unit: String,
    /// The entry ID.
    pub entry: String,
    /// The code object's target ID, when its header names one.
    pub target_id: Option<String>,
    /// The kernel.
    #[serde(flatten)]
    pub kernel: KernelSummary,
}

/// What `gfxkit kernels --json` prints: the rows and the errors met.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelListing {
    /// Every kernel found, in file order.
    pub kernels: Vec<KernelRow>,
    /// Code objects or units that could not be read, each naming the file.
    pub errors: Vec<String>,
}

/// The kernels of one code object (`payload`, entry `id` of `unit` in file `name`), or none
/// when it is not for `wanted`. The error names the file, unit and entry.
pub fn entry_rows(
    name: &str,
    unit: &str,
    id: &str,
    payload: &[u8],
    wanted: Option<&TargetId>,
    demangle: bool,
) -> Result<Vec<KernelRow>, String> {
    // Filter on the ELF header before reading notes and descriptors.
    if let (Some(w), Ok(h)) = (wanted, Header::parse(payload)) {
        if !h.target_id().is_ok_and(|t| t.overlaps(w)) {
            return Ok(Vec::new());
        }
    }
    let co =
        CodeObject::parse(payload).map_err(|err| format!("{name}: {unit}: entry {id}: {err}"))?;
    let target = co.target_id().ok();
    if let Some(w) = wanted {
        if !target.as_ref().is_some_and(|t| t.overlaps(w)) {
            return Ok(Vec::new());
        }
    }
    let target_id = target.map(|t| t.to_string());
    Ok(summaries(&co, demangle)
        .into_iter()
        .map(|k| KernelRow {
            file: name.to_owned(),
            unit: unit.to_owned(),
            entry: id.to_owned(),
            target_id: target_id.clone(),
            kernel: k,
        })
        .collect())
}

/// The kernels of every code object in the units of `data` (bundles, host binaries,
/// archives, code objects), decoding compressed bundles (hash checked); the second value
/// holds the errors met (damaged units, code objects that do not parse). The error is a file
/// whose device code cannot be located at all.
pub fn file_rows(
    name: &str,
    data: &[u8],
    wanted: Option<&TargetId>,
    demangle: bool,
) -> crate::Result<(Vec<KernelRow>, Vec<String>)> {
    let found = locate::locate(data)?;
    let mut errors = found.error_lines(name);
    let mut rows = Vec::new();
    for unit in &found.units {
        let where_ = unit.describe();
        let result = locate::with_payloads(unit, HashCheck::Error, |entries| {
            entries
                .par_iter()
                .filter(|e| !e.payload.is_empty() && e.payload.starts_with(b"\x7fELF"))
                .map(|e| entry_rows(name, &where_, e.id, e.payload, wanted, demangle))
                .collect::<Vec<_>>()
        });
        match result {
            Ok(per_entry) => {
                for r in per_entry {
                    match r {
                        Ok(r) => rows.extend(r),
                        Err(e) => errors.push(e),
                    }
                }
            }
            Err(e) => errors.push(format!("{name}: {where_}: {}", crate::error::chain(&e))),
        }
    }
    Ok((rows, errors))
}

/// The kernels of the code objects `picks` names in the kpack `archive` (at `archive_name`),
/// for the file `name`.
pub fn archive_rows(
    name: &str,
    archive_name: &str,
    archive: &gfxkit_kpack::Archive<'_>,
    picks: &[&crate::kpack::Pick],
    wanted: Option<&TargetId>,
    demangle: bool,
) -> (Vec<KernelRow>, Vec<String>) {
    let found: Vec<Result<Vec<KernelRow>, String>> = picks
        .par_iter()
        .map(|p| {
            let unit = format!("{} in {archive_name}", p.key);
            let k = archive
                .kernel(&p.key, &p.arch)
                .ok_or_else(|| format!("{name}: {unit}: {} is not in the archive", p.arch))?;
            let payload = archive
                .payload(k)
                .map_err(|e| format!("{name}: {unit}: {e}"))?;
            entry_rows(name, &unit, &p.id, &payload, wanted, demangle)
        })
        .collect();
    let (mut rows, mut errors) = (Vec::new(), Vec::new());
    for r in found {
        match r {
            Ok(r) => rows.extend(r),
            Err(e) => errors.push(e),
        }
    }
    (rows, errors)
}
