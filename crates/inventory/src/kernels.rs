//! The kernels of a file, one row per kernel (what `gfxkit kernels` lists and Python's
//! `gfxkit.kernels` returns): each code object's kernels with the unit and entry they come
//! from, their resources and occupancy ([`gfxkit_code_object::summaries`]).

use crate::locate;
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
    /// For a Tensile index (`TensileLibrary.dat`): one row per solution of each processor row
    /// ([`solution_rows`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub solutions: Vec<SolutionRow>,
    /// Code objects or units that could not be read, each naming the file.
    pub errors: Vec<String>,
}

/// One solution of one processor row of a Tensile index: the kernel rocBLAS (or hipBLASLt)
/// would launch for it on that processor, and the code object it is found in.
#[derive(Debug, Clone, Serialize)]
pub struct SolutionRow {
    /// The index file.
    pub index: String,
    /// The row's position among the index's hardware rows.
    pub row: usize,
    /// The processor the row is for (empty, only until its package's members are known, for
    /// a lazy library's shard read as a package member: [`solution_rows`]).
    pub processor: String,
    /// The CU count the row asks for, when it asks for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cu_count: Option<u64>,
    /// The solution's `index` in the index file.
    pub solution: u64,
    /// The solution's name (in rocBLAS's Tensile, its kernel's function symbol).
    pub name: String,
    /// The function symbol of the kernel it runs: its `kernelName` (hipBLASLt), else its name.
    pub kernel_name: String,
    /// The file (relative to the index's directory) holding that symbol, among those the
    /// library loads for the processor; `None` when none does.
    pub code_object: Option<String>,
    /// Whether a function symbol of that name is there.
    pub present: bool,
    /// The kernel's resources and occupancy, read from that code object's metadata and
    /// descriptor (absent when the kernel is not there, or is a function the metadata does not
    /// list as a kernel).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelSummary>,
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
    let co = CodeObject::parse(payload)
        .map_err(|err| format!("{name}: {unit}: entry {id}: {}", err.in_code_object()))?;
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
    limits: &gfxkit_bundle::limits::Limits,
) -> crate::Result<(Vec<KernelRow>, Vec<String>)> {
    let found = locate::locate_with(data, limits)?;
    Ok(locate::each_entry(
        name,
        &found.units,
        &found.problems,
        locate::Decoding::Checked,
        |where_, e| {
            if e.payload.is_empty() || !e.payload.starts_with(b"\x7fELF") {
                return Ok(Vec::new());
            }
            entry_rows(name, where_, e.id, e.payload, wanted, demangle)
        },
    ))
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
    crate::kpack::each_pick(name, archive_name, archive, picks, |unit, p, payload| {
        entry_rows(name, unit, &p.id, payload, wanted, demangle)
    })
}

/// The solutions of each processor row of the Tensile `index` (named `name`; `listing` the
/// names in its directory, `open` a file's bytes by such a name), only rows for `wanted`'s
/// processor when given: per solution, the file among those the library's rule loads for the
/// row's processor ([`crate::database::row_files`]) whose code for that processor has a
/// function symbol of its kernel's name, and the kernel's resources and occupancy from that
/// file's code objects. A lazy master's rows (their solutions kept in shard files) are left to
/// the shards; a shard's rows are listed for each processor with a lazy master beside it, with
/// the code the library has loaded for it ([`crate::database::shard_rows_code`]). An index
/// read without its directory (`listing` `None`: a package member) lists its rows as not
/// present, a shard's with no processor yet ([`SolutionRow::processor`] empty): the package's
/// members beside it tell which. The second value holds the errors met (files that cannot be
/// read), each naming the file.
pub fn solution_rows<'d>(
    name: &str,
    index: &gfxkit_kernel_db::tensile::Index<'_>,
    listing: Option<&gfxkit_kernel_db::resolve::Listing>,
    open: &(dyn Fn(&str) -> Option<&'d [u8]> + Sync),
    wanted: Option<&TargetId>,
    demangle: bool,
) -> (Vec<SolutionRow>, Vec<String>) {
    use std::collections::{HashMap, HashSet};
    let summaries = index.rows();
    let none = gfxkit_kernel_db::resolve::Listing::new::<&str>(&[]);
    // Per row and processor, the files to look in, in the order the library's rule gives.
    let mut rows: Vec<(
        String,
        &gfxkit_kernel_db::tensile::RowSummary<'_>,
        Vec<String>,
    )> = Vec::new();
    let shard_code = match listing {
        Some(listing) => crate::database::shard_rows_code(name, index, listing),
        // Its processors are those of the lazy masters beside it, not known here.
        None if crate::database::is_shard(index) => vec![(String::new(), Vec::new())],
        None => Vec::new(),
    };
    for (processor, files) in shard_code {
        rows.extend(
            summaries
                .iter()
                .map(|r| (processor.clone(), r, files.clone())),
        );
    }
    for r in summaries.iter().filter(|r| r.placeholders.is_empty()) {
        if let Some(p) = r.processor {
            rows.push((
                p.to_owned(),
                r,
                crate::database::row_files(listing.unwrap_or(&none), p, &[]).files,
            ));
        }
    }
    rows.retain(|(p, _, _)| p.is_empty() || wanted.map_or(true, |w| w.processor().name == *p));
    let mut needed: Vec<(String, String)> = rows
        .iter()
        .flat_map(|(p, _, files)| files.iter().map(|f| (f.clone(), p.clone())))
        .collect();
    needed.sort();
    needed.dedup();
    // Per file and processor: its code's function symbols and kernels by name, read once, in
    // parallel.
    type Read = Result<(HashSet<String>, HashMap<String, KernelSummary>), String>;
    let limits = gfxkit_bundle::limits::Limits::default();
    let read: HashMap<(&str, &str), Read> = needed
        .par_iter()
        .map(|(f, p)| {
            let got = match open(f) {
                None => Err(format!("{name}: {f} cannot be opened")),
                Some(bytes) => crate::database::code_function_symbols(f, bytes, p, &limits)
                    .map_err(|e| format!("{name}: {f}: {e}"))
                    .map(|symbols| {
                        let target = TargetId::parse(p).ok();
                        let kernels = file_rows(f, bytes, target.as_ref(), demangle, &limits)
                            .map(|(rows, _)| rows)
                            .unwrap_or_default()
                            .into_iter()
                            .map(|r| (r.kernel.name.clone(), r.kernel))
                            .collect();
                        (symbols, kernels)
                    }),
            };
            ((f.as_str(), p.as_str()), got)
        })
        .collect();
    let mut errors: Vec<String> = read
        .values()
        .filter_map(|r| r.as_ref().err().cloned())
        .collect();
    errors.sort();
    errors.dedup();
    let mut out = Vec::new();
    for (processor, r, files) in &rows {
        for i in &r.solutions {
            let Some(sol) = index.solution(*i) else {
                continue;
            };
            let holder =
                files
                    .iter()
                    .find_map(|f| match &read[&(f.as_str(), processor.as_str())] {
                        Ok((symbols, kernels)) if symbols.contains(sol.kernel()) => {
                            Some((f.clone(), kernels.get(sol.kernel()).cloned()))
                        }
                        _ => None,
                    });
            out.push(SolutionRow {
                index: name.to_owned(),
                row: r.position,
                processor: processor.clone(),
                cu_count: r.cu_count,
                solution: sol.index,
                name: sol.name.to_owned(),
                kernel_name: sol.kernel().to_owned(),
                present: holder.is_some(),
                kernel: holder.as_ref().and_then(|(_, k)| k.clone()).map(|mut k| {
                    // Named once, by the row's `kernel_name`.
                    k.name.clear();
                    k
                }),
                code_object: holder.map(|(f, _)| f),
            });
        }
    }
    (out, errors)
}

/// What [`sort`] orders kernels by, the most constrained first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// Lowest occupancy first.
    Occupancy,
    /// Most VGPRs (arch + AGPR) first.
    Vgpr,
    /// Most LDS first.
    Lds,
    /// Most scratch first.
    Scratch,
}

/// Orders `rows` by `key` of each row's kernel (`kernel` gives it; rows without one last),
/// stably: `gfxkit kernels --sort`.
pub fn sort<T>(rows: &mut [T], kernel: impl Fn(&T) -> Option<&KernelSummary>, key: SortBy) {
    let vgprs = |k: &KernelSummary| k.vgpr_count.unwrap_or(0) + k.agpr_count.unwrap_or(0);
    match key {
        SortBy::Occupancy => {
            rows.sort_by_key(|r| kernel(r).and_then(|k| k.occupancy).unwrap_or(u32::MAX))
        }
        SortBy::Vgpr => rows.sort_by_key(|r| std::cmp::Reverse(kernel(r).map_or(0, vgprs))),
        SortBy::Lds => rows
            .sort_by_key(|r| std::cmp::Reverse(kernel(r).and_then(|k| k.lds_bytes).unwrap_or(0))),
        SortBy::Scratch => rows.sort_by_key(|r| {
            std::cmp::Reverse(kernel(r).and_then(|k| k.scratch_bytes).unwrap_or(0))
        }),
    }
}
