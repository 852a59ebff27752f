//! What `prune` of a tree does with one file, by its format ([`crate::format::Format::prune`]);
//! [`crate::tree`] walks the tree, asks the door for each file and writes the result.
//!
//! - A raw AMDGPU code object (`TensileLibrary_gfx90a.co`, `Kernels.so-000-gfx90a-xnack-.hsaco`,
//!   aiter's `hsa/gfx942/*.co`) is kept or dropped by the target its ELF header's `e_flags`
//!   name; a `.kpack` archive by the architectures of its table of contents.
//! - A host binary or offload bundle with device code is rewritten as `prune` rewrites one file
//!   (when the tree is written: through a temporary file, read back and verified). A binary
//!   already split by kpack holds no device code of its own: it is kept, its archives kept or
//!   dropped beside it.
//! - A Tensile index opened for one processor alone (a lazy master
//!   `TensileLibrary_lazy_<P>.dat`, `TensileLibrary_<P>.dat`, any index in `library/<P>/`),
//!   and one without processor rows (a shard, a `_Mapping.dat`), is kept or dropped whole with
//!   the processor its name or directory gives (an arch-neutral one, such as rocBLAS's
//!   `..._fallback.dat` shards, is kept): every row of it, the catch-all `TruePred` row
//!   included, serves that processor.
//! - An index of every processor (`TensileLibrary.dat`, `.dat.zlib`) is cut to the rows a kept
//!   processor can select and the solutions they reach ([`gfxkit_kernel_db::tensile_write`],
//!   read back before it is written): rows are tried in file order and a problem type a
//!   device's own rows leave out falls through to the next row it can select, so the
//!   catch-all row (no processor required) is kept whenever anything is kept.
//! - A MIOpen `.kdb` is kept or dropped by its records' targets (a record's `-mcpu=`, else the
//!   `DbId` of the file name), the first record's code object decoded to confirm the name; an
//!   AOTriton `.aks2` by the targets its kernels' ELF headers name, and an AOTriton zip pack (a
//!   zip of `.aks2` images only) by those of all its images.
//! - A file holding both kept and dropped targets is kept whole (it is not split) and says so
//!   in its note; any other file is copied.

use crate::{Error, ErrorKind};
use gfxkit_inventory::database::{self as db, DbKind};
use gfxkit_inventory::prune::{IndexOutcome, IndexRow, TreeAction, TreeFile};
use gfxkit_kernel_db::tensile::{Index, NodeKind, RowSummary};
use gfxkit_kernel_db::Limits;
use gfxkit_shrink::{EntryFilter, Transform};
use std::io::Write;
use std::path::Path;

/// What a prune does with one file of a tree ([`crate::format::Format::prune`]): its line of
/// the report, and what writing it needs. Nothing is written when it is decided.
#[derive(Debug)]
pub struct Pruned {
    /// The file's line of the report: its kind, what becomes of it, its targets and sizes.
    pub file: TreeFile,
    /// Whether it holds device code that is kept.
    pub keeps: bool,
    /// The rewritten bytes of a Tensile index, written as they are.
    pub index_bytes: Option<Vec<u8>>,
    /// A Tensile index's hardware rows as read when it was planned (for the check of the
    /// pruned databases, which then does not read the index again).
    pub index_rows: Option<db::IndexRows>,
    /// The rewrite of a host binary or bundle as it was made when the file was planned, apart
    /// from the input ([`gfxkit_shrink::Detached`]): put back over the input when the file is
    /// written, so that its bundles are not compressed a second time. `None` when it was not
    /// kept (a tree holds back only so many bytes: [`crate::tree`]); the file is then rewritten
    /// again when written.
    pub held: Option<gfxkit_shrink::Detached>,
    /// A package file of a tree, rewritten as a package of its own when it was planned, staged
    /// in a temporary file (read back and checked then), with its length: copied in its place
    /// when the file is written, so that it is not rewritten a second time. `None` when it was
    /// not kept (a tree holds back only so many bytes); the package is then rewritten again.
    pub staged: Option<(std::fs::File, u64)>,
}

impl Pruned {
    /// A file of `len` bytes at `rel`, of `kind`, with no device code the prune acts on:
    /// copied as it is.
    pub fn copied(rel: &str, kind: &'static str, len: u64) -> Pruned {
        Pruned {
            file: tree_file(rel, kind, TreeAction::Copied, len),
            keeps: false,
            index_bytes: None,
            index_rows: None,
            held: None,
            staged: None,
        }
    }

    /// A file of `len` bytes at `rel`, of `kind`, holding device code for `targets` (target
    /// IDs or processor names), kept or dropped whole by `sel`: kept when the selection keeps
    /// any of its targets (or it names none), with a note when it also holds dropped ones.
    pub fn whole(
        rel: &str,
        kind: &'static str,
        targets: Vec<String>,
        len: u64,
        sel: &EntryFilter,
    ) -> Pruned {
        let targets = sorted(targets);
        let kept = targets.iter().filter(|t| keeps_target(sel, t)).count();
        let action = if targets.is_empty() || kept > 0 {
            TreeAction::Kept
        } else {
            TreeAction::Dropped
        };
        let mut file = tree_file(rel, kind, action, len);
        if kept > 0 && kept < targets.len() {
            file.note = Some("holds kept and dropped targets: kept whole (not split)".into());
        }
        file.targets = targets;
        Pruned {
            keeps: kept > 0,
            file,
            index_bytes: None,
            index_rows: None,
            held: None,
            staged: None,
        }
    }
}

/// Whether `data` is a kind of file a prune rewrites (`gfxkit_shrink`): a host binary (ELF,
/// PE/COFF, an `ar` archive) or an offload bundle, by its first bytes.
pub fn rewritable(data: &[u8]) -> bool {
    use gfxkit_host::InputKind as K;
    matches!(
        K::sniff(data.get(..64).unwrap_or(data)),
        K::ElfExecutable
            | K::ElfSharedObject
            | K::ElfRelocatable
            | K::PeImage
            | K::CoffObject
            | K::Archive
            | K::Bundle
    )
}

/// The architectures of a `.kpack` archive: those its table of contents names (`gfx_arches`
/// and its kernels'); one that does not parse is the error.
pub(crate) fn archive_targets(path: &Path, data: &[u8]) -> Result<Vec<String>, Error> {
    let a =
        gfxkit_kpack::Archive::parse(data).map_err(|e| Error::new(path, ErrorKind::Kpack(e)))?;
    let mut targets = a.arches.clone();
    targets.extend(a.kernels.iter().map(|k| k.arch.clone()));
    Ok(sorted(targets))
}

/// A Tensile index of a tree: rewritten to the kept rows, or kept or dropped whole
/// ([`tensile_index`]); `None` for any other file.
pub(crate) fn index(
    path: &Path,
    rel: &str,
    data: &[u8],
    t: &Transform,
) -> Result<Option<Pruned>, Error> {
    if db::kind(&path.to_string_lossy(), data) != Some(DbKind::TensileIndex) {
        return Ok(None);
    }
    tensile_index(path, rel, data, data.len() as u64, t).map(Some)
}

/// A file of a tree that is no kernel database and goes whole with no targets: a host binary
/// or bundle with device code rewritten (its report kept, and its rewrite apart from the
/// input: [`Pruned::held`]), a binary split by kpack kept; anything else copied.
pub(crate) fn binary(path: &Path, rel: &str, data: &[u8], t: &Transform) -> Result<Pruned, Error> {
    let len = data.len() as u64;
    if !rewritable(data) {
        return Ok(Pruned::copied(rel, "file", len));
    }
    let rewritten = match gfxkit_shrink::rewrite_without_digests(data, t) {
        Ok(r) => r,
        Err(e) if matches!(e.kind, gfxkit_shrink::ErrorKind::AlreadySplit { .. }) => {
            let mut kept = Pruned::copied(rel, "host", len);
            kept.file.action = TreeAction::Kept;
            kept.file.note = Some(
                "split by kpack: its device code is in the .kpack archives its markers name, \
                 kept or dropped on their own"
                    .into(),
            );
            return Ok(kept);
        }
        Err(e) if holds_no_bundles(&e, data, &t.limits) => {
            return Ok(Pruned::copied(rel, "file", len))
        }
        Err(e) => return Err(Error::new(path, ErrorKind::Prune(e))),
    };
    let (output, report) = (rewritten.output, rewritten.report);
    if !report.had_device_code() {
        return Ok(Pruned::copied(rel, "file", len));
    }
    let targets = sorted(
        report
            .targets_before()
            .into_iter()
            .filter(|t| *t != "host")
            .map(str::to_owned)
            .collect(),
    );
    let changed = report.changed();
    let action = if changed {
        TreeAction::Rewritten
    } else {
        TreeAction::Kept
    };
    let mut file = tree_file(rel, "host", action, len);
    if changed {
        file.size_after = report.size_after;
    }
    file.targets = targets;
    let keeps = report.keeps_device_code();
    file.report = Some(report);
    Ok(Pruned {
        file,
        keeps,
        index_bytes: None,
        index_rows: None,
        held: changed.then(|| output.detach(data)).flatten(),
        staged: None,
    })
}

/// The rewrite of one file by `prune` or `recompress` ([`crate::format::Format::rewrite`]) for
/// the files gfxkit rewrites as host binaries and bundles: a file a prune would keep or drop
/// whole (a raw code object, a `.kpack` archive, a kernel-database file), by the decision
/// `decided` makes for it ([`crate::format::Format::prune`]), is refused with what it holds and
/// that the prune of its directory decides it; anything else (files a prune rewrites, files
/// without device code, any file under a recompress) is rewritten by `gfxkit_shrink`.
pub fn rewrite<'d>(
    path: &Path,
    data: &'d [u8],
    t: &Transform,
    decided: impl FnOnce() -> Result<Pruned, Error>,
) -> Result<gfxkit_shrink::Rewritten<'d>, Error> {
    if !rewritable(data) && !matches!(t.selection, EntryFilter::All) {
        let decided = decided()?;
        let f = &decided.file;
        if !f.targets.is_empty() {
            let would = match f.action {
                TreeAction::Dropped => "drop it",
                TreeAction::Rewritten => "rewrite it against the files beside it",
                _ => "keep it",
            };
            return Err(Error::new(
                path,
                ErrorKind::Whole(format!(
                    "a {} file for {}. A prune keeps or drops such a file whole (or cuts a \
                     Tensile index to the kept rows) as part of the directory that holds it \
                     (`gfxkit prune --keep ... DIR -o OUT`), where this selection would {would}; \
                     nothing written",
                    f.kind,
                    f.targets.join(", ")
                )),
            ));
        }
    }
    gfxkit_shrink::rewrite_without_digests(data, t)
        .map_err(|e| Error::new(path, ErrorKind::Prune(e)))
}

/// Whether `e`, the rewrite's refusal of `data`, only says there is nothing to rewrite: a
/// layout the rewrite does not handle, in a file where the survey finds no bundle (a host
/// library without device code, a file of no format the rewrite knows). The prune of a tree
/// or a package then leaves the file as it is.
pub fn holds_no_bundles(
    e: &gfxkit_shrink::Error,
    data: &[u8],
    limits: &gfxkit_bundle::limits::Limits,
) -> bool {
    matches!(e.kind, gfxkit_shrink::ErrorKind::Unsupported(_))
        && gfxkit_shrink::survey_with(data, false, limits)
            .map(|s| s.regions.iter().all(|r| r.bundles.is_empty()))
            .unwrap_or(true)
}

/// The kind of a package file or member in a prune's report ([`TreeFile::kind`]): a package
/// rewritten as one of its own.
pub(crate) const PACKAGE: &str = "package";

pub(crate) fn tree_file(rel: &str, kind: &'static str, action: TreeAction, size: u64) -> TreeFile {
    TreeFile {
        path: rel.to_owned(),
        kind,
        action,
        targets: Vec::new(),
        size_before: size,
        size_after: if action == TreeAction::Dropped {
            0
        } else {
            size
        },
        note: None,
        index: None,
        report: None,
    }
}

pub(crate) fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// Whether the selection keeps code for `target` (a target ID or processor name).
pub(crate) fn keeps_target(sel: &EntryFilter, target: &str) -> bool {
    sel.keeps(&db::entry_id(target))
}

/// The targets a kernel-database file or raw code object serves, read from its content (see
/// the module documentation), with the file's kind; `None` for any other file. A Tensile index
/// gives the processors of its rows, or the architecture its name or directory gives when it
/// has none.
pub(crate) fn database_targets(
    path: &Path,
    rel: &str,
    data: &[u8],
) -> Result<Option<(&'static str, Vec<String>)>, Error> {
    if let Some(kind) = db::kind(&path.to_string_lossy(), data) {
        let name = db::base_name(rel);
        let targets = match kind {
            DbKind::TensileIndex => {
                let bytes = index_bytes(path, rel, data)?;
                let index = parse_index(path, &bytes)?;
                let mut processors: Vec<String> = match &index.library.kind {
                    NodeKind::Hardware(_) => index
                        .rows()
                        .iter()
                        .filter_map(|r| r.processor.map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                if processors.is_empty() {
                    processors.extend(arch_of_name(rel));
                }
                processors
            }
            // Files naming kernels of one architecture by its name or directory (aiter's maps
            // sit in `hsa/<arch>/`).
            DbKind::TensileMapping | DbKind::AiterMap => arch_of_name(rel).into_iter().collect(),
            DbKind::MiopenKdb | DbKind::Aks2 => {
                let Some(opened) = db::open(name, data, kind) else {
                    return Ok(None);
                };
                let opened = opened.map_err(|e| Error::new(path, ErrorKind::Database(e)))?;
                if kind == DbKind::MiopenKdb {
                    confirm_kdb_name(path, name, &opened)?;
                }
                opened
                    .entries
                    .iter()
                    .map(|e| gfxkit_shrink::label(&e.id))
                    .filter(|t| !t.is_empty())
                    .collect()
            }
        };
        return Ok(Some((kind.name(), sorted(targets))));
    }
    let sniffed = gfxkit_host::InputKind::sniff(data.get(..64).unwrap_or(data));
    if sniffed == gfxkit_host::InputKind::CodeObject {
        let target = db::raw_code_object_target(data)
            .map_err(|why| Error::new(path, ErrorKind::CodeObject(why)))?;
        return Ok(Some(("code-object", vec![target])));
    }
    Ok(aotriton_pack(rel, data).map(|targets| ("aotriton-pack", sorted(targets))))
}

/// The targets of an AOTriton zip pack (`aotriton.images/amd-<pack>/<family>/<kernel>.zip`): a
/// zip whose members that may hold device code are all `.aks2` images, at least one; `None` for
/// any other file (a wheel with libraries, a damaged zip: copied as files are).
fn aotriton_pack(rel: &str, data: &[u8]) -> Option<Vec<String>> {
    if gfxkit_package::detect(data.get(..4).unwrap_or(data)) != Some(gfxkit_package::Format::Zip) {
        return None;
    }
    let visit = |m: gfxkit_package::Member<'_>| -> Option<Vec<String>> {
        if db::kind(m.name, &m.bytes) != Some(DbKind::Aks2) {
            return None;
        }
        let opened = db::open(db::base_name(m.name), &m.bytes, DbKind::Aks2)?.ok()?;
        Some(
            opened
                .entries
                .iter()
                .map(|e| gfxkit_shrink::label(&e.id))
                .filter(|t| !t.is_empty())
                .collect(),
        )
    };
    let walked = gfxkit_package::walk(
        rel,
        data,
        &gfxkit_package::Options::default(),
        &crate::input::TempSpill,
        &visit,
    )
    .ok()?;
    let mut targets = Vec::new();
    for member in &walked {
        targets.extend(member.as_ref().ok()?.value.clone()?);
    }
    (!walked.is_empty()).then_some(targets)
}

/// A Tensile index's MessagePack bytes (inflated from a `.zlib` file, transcoded from a
/// `.yaml` one: [`gfxkit_kernel_db::tensile::index_bytes`]).
pub(crate) fn index_bytes<'d>(
    path: &Path,
    rel: &str,
    data: &'d [u8],
) -> Result<std::borrow::Cow<'d, [u8]>, Error> {
    gfxkit_kernel_db::tensile::index_bytes(rel, data, &Limits::default())
        .map_err(|e| Error::new(path, ErrorKind::Database(e)))
}

/// The Tensile index in `bytes` (of the file at `path`).
fn parse_index<'b>(path: &Path, bytes: &'b [u8]) -> Result<Index<'b>, Error> {
    Index::parse_with(bytes, &Limits::default())
        .map_err(|e| Error::new(path, ErrorKind::Database(e)))
}

/// MIOpen names a `.kdb` for its processor: the first record's code object must be for it.
fn confirm_kdb_name(path: &Path, name: &str, opened: &db::Opened) -> Result<(), Error> {
    let Ok(id) = gfxkit_kernel_db::kdb::DbId::parse_file_name(name) else {
        return Ok(());
    };
    let Some(first) = opened.entries.first() else {
        return Ok(());
    };
    let code = opened
        .code_object(0)
        .map_err(|e| Error::new(path, ErrorKind::Database(e.place(first.place.clone()))))?;
    match db::code_object_target(&code) {
        Some(t) if t.split(':').next() == Some(id.processor.as_str()) => Ok(()),
        found => Err(Error::new(
            path,
            ErrorKind::Database(gfxkit_kernel_db::Error::new(
                gfxkit_kernel_db::ErrorKind::Inconsistent(format!(
                    "the file name says {}, but the code object of {} is for {}",
                    id.processor,
                    first.place,
                    found.as_deref().unwrap_or("no readable target")
                )),
            )),
        )),
    }
}

/// The architecture a per-architecture Tensile file names: the last `_gfx...` word of its
/// name (`TensileLibrary_gfx90a.dat`, `TensileLibrary_lazy_gfx942_Mapping.dat`,
/// `..._fallback_gfx1100.dat`), else its directory (`library/gfx942/`).
fn arch_of_name(rel: &str) -> Option<String> {
    let processor = |w: &str| {
        gfxkit_target_id::TargetId::parse(w)
            .ok()
            .filter(|t| !t.has_features() && t.processor().name == w)
            .map(|_| w.to_owned())
    };
    let base = db::base_name(rel);
    let stem = base.split('.').next().unwrap_or(base);
    let from_name = stem.split(['_', '-']).rev().find_map(&processor);
    from_name.or_else(|| {
        let mut parts = rel.rsplit('/');
        parts.next();
        parts.next().and_then(processor)
    })
}

/// A Tensile index: rewritten to the kept rows when it has processor rows, else kept or
/// dropped with the architecture its name or directory gives.
fn tensile_index(
    path: &Path,
    rel: &str,
    data: &[u8],
    len: u64,
    t: &Transform,
) -> Result<Pruned, Error> {
    let sel = &t.selection;
    let limits = Limits::default();
    let zlib = rel.ends_with(".zlib");
    let yaml = rel.ends_with(".yaml");
    let bytes = index_bytes(path, rel, data)?;
    let bytes: &[u8] = &bytes;
    let index = parse_index(path, bytes)?;
    let rows_in = db::IndexRows::of(&index);
    let rows = match &index.library.kind {
        NodeKind::Hardware(_) => index.rows(),
        _ => Vec::new(),
    };
    let processors: Vec<&str> = rows.iter().filter_map(|r| r.processor).collect();
    // An index opened for one processor alone (a lazy master `TensileLibrary_lazy_<P>.dat`,
    // `TensileLibrary_<P>.dat`, or any index in `library/<P>/`), and an index without
    // processor rows (a shard, a mapping), goes with the processor its name or directory
    // gives, whole: every row of it, the catch-all one included, serves that processor.
    let own = db::index_processor(rel)
        .or_else(|| processors.is_empty().then(|| arch_of_name(rel)).flatten());
    if own.is_some() || processors.is_empty() {
        let arch: Vec<String> = own.into_iter().collect();
        let kept = arch.iter().any(|a| keeps_target(sel, a));
        let mut file = tree_file(
            rel,
            "tensile-index",
            if arch.is_empty() || kept {
                TreeAction::Kept
            } else {
                TreeAction::Dropped
            },
            len,
        );
        file.targets = arch;
        return Ok(Pruned {
            file,
            keeps: kept,
            index_bytes: None,
            index_rows: Some(rows_in),
            held: None,
            staged: None,
        });
    }
    // One index of every processor: rows are tried in file order and a problem type the
    // device's own rows leave out falls through to the next row it can select, so a row is
    // kept when a kept processor can select it. A row that requires no processor (`TruePred`,
    // a CU count alone) can be selected by every processor: it is kept unless everything is
    // dropped.
    let tests: Vec<gfxkit_kernel_db::loads::DeviceTest> = rows
        .iter()
        .map(|r| {
            r.predicate.map_or(
                gfxkit_kernel_db::loads::DeviceTest::True,
                gfxkit_kernel_db::loads::DeviceTest::of,
            )
        })
        .collect();
    let kept_processor = |p: &str| keeps_target(sel, p);
    let keep_row = |i: usize| {
        let t = &tests[i];
        if t.any_processor() {
            return processors.iter().any(|p| kept_processor(p))
                || matches!(sel, EntryFilter::Keep(_));
        }
        t.processors().iter().any(|p| kept_processor(p))
    };
    let keep_flags: Vec<bool> = (0..rows.len()).map(keep_row).collect();
    let keep = |r: &RowSummary<'_>| keep_flags[r.position];
    let targets = sorted(processors.iter().map(|p| p.to_string()).collect());
    let kept_rows = rows.iter().filter(|r| keep(r)).count();
    // Device code kept: a kept processor's own rows (the catch-all row alone is the index a
    // kept processor without rows opens, not code of its own).
    let keeps = rows.iter().any(|r| r.processor.is_some() && keep(r));
    let mut file = tree_file(rel, "tensile-index", TreeAction::Kept, len);
    file.targets = targets;
    if kept_rows == rows.len() {
        return Ok(Pruned {
            file,
            keeps,
            index_bytes: None,
            index_rows: Some(rows_in),
            held: None,
            staged: None,
        });
    }
    if kept_rows == 0 {
        file.action = TreeAction::Dropped;
        file.size_after = 0;
        return Ok(Pruned {
            file,
            keeps,
            index_bytes: None,
            index_rows: Some(rows_in),
            held: None,
            staged: None,
        });
    }
    let pruned =
        gfxkit_kernel_db::tensile_write::prune_summarized(bytes, &index, &rows, keep, &limits)
            .map_err(|e| Error::new(path, ErrorKind::Database(e)))?;
    let out = if zlib {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&pruned.bytes)
            .and_then(|_| e.finish())
            .map_err(|e| Error::new(path, ErrorKind::Write(e)))?
    } else if yaml {
        yaml_index(&pruned.bytes, &limits).map_err(|e| Error::new(path, ErrorKind::Database(e)))?
    } else {
        pruned.bytes
    };
    let row = |r: &gfxkit_kernel_db::tensile_write::RowInfo| IndexRow {
        processor: r.processor.clone(),
        cu_count: r.cu_count,
        predicate: r.predicate.clone(),
        solutions: r.solutions,
    };
    file.action = TreeAction::Rewritten;
    file.size_after = out.len() as u64;
    file.index = Some(IndexOutcome {
        kept_rows: pruned.kept.iter().map(row).collect(),
        dropped_rows: pruned.dropped.iter().map(row).collect(),
        solutions_before: pruned.solutions_before,
        solutions_after: pruned.solutions_after,
    });
    Ok(Pruned {
        file,
        keeps,
        index_bytes: Some(out),
        index_rows: Some(rows_in),
        held: None,
        staged: None,
    })
}

/// The pruned MessagePack index `bytes` written as YAML (for a `.yaml` index), read back
/// before it is returned: the transcoded YAML must parse to the same solutions (index and
/// name) and rows (processor, CU count, solutions reached).
fn yaml_index(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>, gfxkit_kernel_db::Error> {
    use gfxkit_kernel_db::tensile::Index;
    use gfxkit_kernel_db::tensile_yaml::{from_msgpack, to_msgpack};
    let yaml = from_msgpack(bytes, limits)?;
    let back = to_msgpack(&yaml, limits)?;
    let (a, b) = (
        Index::parse_with(bytes, limits)?,
        Index::parse_with(&back, limits)?,
    );
    let solutions = |i: &Index<'_>| -> Vec<(u64, String)> {
        i.solutions
            .iter()
            .map(|s| (s.index, s.name.to_owned()))
            .collect()
    };
    let rows = |i: &Index<'_>| -> Vec<(Option<String>, Option<u64>, Vec<u64>)> {
        i.rows()
            .iter()
            .map(|r| {
                let procs = r.processor.map(str::to_owned);
                (procs, r.cu_count, r.solutions.iter().copied().collect())
            })
            .collect()
    };
    if solutions(&a) != solutions(&b) || rows(&a) != rows(&b) {
        return Err(gfxkit_kernel_db::Error::new(
            gfxkit_kernel_db::error::ErrorKind::Inconsistent(
                "the pruned index written as YAML does not read back as written".into(),
            ),
        ));
    }
    Ok(yaml)
}
