//! `prune` of a directory tree (`gfxkit prune --keep gfx90a /usr/lib/x86_64-linux-gnu -o out`):
//! a pruned copy of the tree, with the kernel databases beside the libraries pruned too.
//!
//! Each path is decided by its content, never by a file-name pattern:
//!
//! - a raw AMDGPU code object (`TensileLibrary_gfx90a.co`, `Kernels.so-000-gfx90a-xnack-.hsaco`,
//!   aiter's `hsa/gfx942/*.co`) is kept or dropped by the target its ELF header's `e_flags`
//!   name;
//! - a host binary or offload bundle with device code is rewritten as `prune` rewrites one file
//!   (written through a temporary file, read back and verified);
//! - a Tensile index opened for one processor alone (a lazy master
//!   `TensileLibrary_lazy_<P>.dat`, `TensileLibrary_<P>.dat`, any index in `library/<P>/`),
//!   and one without processor rows (a shard, a `_Mapping.dat`), is kept or dropped whole with
//!   the processor its name or directory gives (an arch-neutral one, such as rocBLAS's
//!   `..._fallback.dat` shards, is kept): every row of it, the catch-all `TruePred` row
//!   included, serves that processor;
//! - an index of every processor (`TensileLibrary.dat`, `.dat.zlib`) is cut to the rows a kept
//!   processor can select and the solutions they reach ([`gfxkit_kernel_db::tensile_write`],
//!   read back before it is written): rows are tried in file order and a problem type a
//!   device's own rows leave out falls through to the next row it can select, so the
//!   catch-all row (no processor required) is kept whenever anything is kept;
//! - a MIOpen `.kdb` is kept or dropped by its records' targets (a record's `-mcpu=`, else the
//!   `DbId` of the file name), the first record's code object decoded to confirm the name; an
//!   AOTriton `.aks2` by the targets its kernels' ELF headers name, and an AOTriton zip pack (a
//!   zip of `.aks2` images only) by those of all its images. A file holding both kept
//!   and dropped targets is kept whole (it is not split) and says so in its note;
//! - a directory named for a processor (`hsa/gfx950/`, `library/gfx942/`) that the selection
//!   drops, holding device code of dropped targets only, is dropped whole with its other files
//!   (aiter's CSV maps);
//! - every other file is copied unchanged (inside the kernel, `copy_file_range`), symbolic
//!   links are recreated as links with the same target, permissions are kept; a link that
//!   leads (through other links, inside the tree) to a path the prune drops is dropped with
//!   it, so that the output holds no dangling link.
//!
//! Writing is atomic for the whole tree: everything goes to a temporary directory
//! `.gfxkit-<pid>.<random>.<name>` beside the output, which is renamed to the output only when
//! every file is written (an output that exists must be an empty directory; it is replaced).
//! A failure removes the temporary directory; the input is only read. A prune that would leave
//! no device code is refused before anything is written, unless `allow_empty`.

use crate::input::Input;
use crate::write::{copy_or_write, Durability};
use crate::{Error, ErrorKind};
use gfxkit_inventory::database::{self as db, DbKind};
use gfxkit_inventory::prune::{IndexOutcome, IndexRow, TreeAction, TreeFile};
use gfxkit_kernel_db::tensile::{Index, NodeKind, RowSummary};
use gfxkit_kernel_db::Limits;
use gfxkit_shrink::{Pattern, Selection, Transform};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most paths read from one tree (a ROCm install holds some tens of thousands).
pub const MAX_PATHS: usize = 1 << 22;

/// A pruned tree: each path and what became of it, and where it went.
#[derive(Debug, Clone)]
pub struct PrunedTree {
    /// Each file and symbolic link, in path order (a directory is listed only when it is
    /// dropped whole).
    pub files: Vec<TreeFile>,
    /// Bytes of the input's files.
    pub size_before: u64,
    /// Bytes of the files written (or that would be, for a dry run).
    pub size_after: u64,
    /// The targets of the selection that match no device code of the tree.
    pub unmatched: Vec<String>,
}

/// One path of the input tree.
#[derive(Debug)]
pub(crate) enum Item {
    Dir { mode: u32 },
    Symlink { target: PathBuf },
    File { mode: u32, len: u64 },
    Special,
}

/// What pass one decided for a file, with what pass two needs to write it.
struct Plan {
    file: TreeFile,
    /// Whether it holds device code that is kept.
    keeps: bool,
    /// The rewritten bytes of a Tensile index.
    index_bytes: Option<Vec<u8>>,
    /// A Tensile index's hardware rows as read when it was planned (for the check of the
    /// pruned databases, which then does not read the index again).
    index_rows: Option<db::IndexRows>,
}

/// Whether `path` is a directory (not a symbolic link to one): a tree to prune.
pub fn is_tree(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Where a pruned tree goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeOutput<'a> {
    /// Nothing is written: everything decided and every rewrite checked in memory.
    DryRun,
    /// A new directory (it must not exist, or be empty, and not be inside the input).
    Dir(&'a Path),
    /// The input itself (`--in-place`): the pruned tree is written beside it, synced to disk
    /// (`syncfs`), and exchanged with it in one step (`renameat2(RENAME_EXCHANGE)`; where the
    /// system lacks it, two renames), then the old tree is removed. File owners are not kept
    /// (the files are written by the user running the prune), modes and links are.
    InPlace,
}

/// Prunes the tree `input` with `t` into `output` (see the module documentation and
/// [`TreeOutput`]). Unless `allow_empty`, a result without device code (where the tree had
/// some) is refused before anything is written.
pub fn prune_tree(
    input: &Path,
    t: &Transform,
    output: TreeOutput<'_>,
    allow_empty: bool,
) -> Result<PrunedTree, Error> {
    let meta =
        std::fs::symlink_metadata(input).map_err(|e| Error::new(input, ErrorKind::Stat(e)))?;
    if !meta.is_dir() {
        return Err(Error::new(input, ErrorKind::Tree("not a directory".into())));
    }
    if let TreeOutput::Dir(out) = output {
        check_output(input, out)?;
    }
    let items = walk(input)?;
    // Each path decided on its own, several at a time (the index rewrite beside the library's).
    use rayon::prelude::*;
    let mut plans: Vec<Option<Plan>> = items
        .par_iter()
        .map(|(rel, item)| -> Result<Option<Plan>, Error> {
            Ok(match item {
                Item::File { len, .. } => Some(classify(&input.join(rel), rel, *len, t)?),
                Item::Symlink { target } => Some(Plan {
                    file: tree_file(rel, "symlink", TreeAction::Copied, 0),
                    keeps: false,
                    index_bytes: None,
                    index_rows: None,
                })
                .map(|mut p| {
                    p.file.note = Some(format!("-> {}", target.display()));
                    p
                }),
                Item::Special => Some(Plan {
                    file: TreeFile {
                        note: Some("a device, FIFO or socket: not copied".into()),
                        ..tree_file(rel, "file", TreeAction::Dropped, 0)
                    },
                    keeps: false,
                    index_bytes: None,
                    index_rows: None,
                }),
                Item::Dir { .. } => None,
            })
        })
        .collect::<Result<_, _>>()?;
    drop_processor_dirs(&items, &mut plans, &t.selection);
    drop_links_to_dropped(&items, &mut plans);

    let had = plans.iter().flatten().any(|p| !p.file.targets.is_empty());
    let keeps = plans.iter().flatten().any(|p| p.keeps);
    if had && !keeps && !allow_empty {
        let present = plans
            .iter()
            .flatten()
            .flat_map(|p| p.file.targets.iter().map(String::as_str));
        if let Some(e) = gfxkit_shrink::empty_error(&t.selection, present) {
            return Err(Error::new(input, ErrorKind::Prune(e)));
        }
    }
    check_databases(input, &items, &plans, &t.selection)?;
    let unmatched = unmatched(&t.selection, &plans);

    match output {
        TreeOutput::DryRun => {}
        TreeOutput::Dir(out) => write_tree(input, out, &items, &mut plans, t, meta_mode(&meta))?,
        TreeOutput::InPlace => replace_tree(input, &items, &mut plans, t, meta_mode(&meta))?,
    }
    let files: Vec<TreeFile> = plans.into_iter().flatten().map(|p| p.file).collect();
    let size_before = files.iter().map(|f| f.size_before).sum();
    let size_after = files.iter().map(|f| f.size_after).sum();
    Ok(PrunedTree {
        files,
        size_before,
        size_after,
        unmatched,
    })
}

/// The prune's own verdict on what it would write, before anything is written: every Tensile
/// directory the prune changes must still give each kept processor it gave before everything
/// its library opens for it ([`db::Database::serves`]: the index, the rows the processor can
/// select, their shards and code objects). A prune that would take any of that away is
/// refused, naming the processor and what it would lose.
fn check_databases(
    input: &Path,
    items: &[(String, Item)],
    plans: &[Option<Plan>],
    sel: &Selection,
) -> Result<(), Error> {
    use std::collections::BTreeMap;
    // Tensile directories by root, with their files' plans.
    let mut roots: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (rel, item)) in items.iter().enumerate() {
        if matches!(item, Item::File { .. }) && plans[i].is_some() {
            let root = db::database_root(rel);
            if root.ends_with("library") || root == "library" {
                roots.entry(root).or_default().push(i);
            }
        }
    }
    for (root, files) in roots {
        let changed = files.iter().any(|&i| {
            plans[i].as_ref().is_some_and(|p| {
                p.file.action != TreeAction::Copied && p.file.action != TreeAction::Kept
            })
        });
        if !changed {
            continue;
        }
        let mut before = Vec::new();
        let mut after = Vec::new();
        for &i in &files {
            let (rel, _) = &items[i];
            let Some(plan) = &plans[i] else { continue };
            let processors: Vec<String> = plan
                .file
                .targets
                .iter()
                .filter_map(|t| t.split(':').next())
                .map(str::to_owned)
                .collect();
            let member = |index_rows| db::DbMember {
                path: rel.clone(),
                processors: processors.clone(),
                index_rows,
                stored: Default::default(),
            };
            let is_index = gfxkit_kernel_db::sniff::tensile_name(rel)
                .is_some_and(|(k, _)| k == DbKind::TensileIndex);
            let rows_of = |bytes: &[u8]| -> Result<db::IndexRows, String> {
                let decoded =
                    index_bytes(&input.join(rel), rel, bytes).map_err(|e| e.to_string())?;
                Index::parse(&decoded)
                    .map(|i| db::IndexRows::of(&i))
                    .map_err(|e| e.to_string())
            };
            let rows_before = match (&plan.index_rows, is_index) {
                // Read when the index was planned.
                (Some(rows), _) => Some(Ok(rows.clone())),
                (None, true) => {
                    let data = Input::open(&input.join(rel))?;
                    Some(rows_of(&data))
                }
                (None, false) => None,
            };
            let rows_after = match (&plan.index_bytes, plan.file.action) {
                (_, TreeAction::Dropped) => None,
                (Some(b), _) => Some(rows_of(b)),
                (None, _) => rows_before.clone(),
            };
            if plan.file.action != TreeAction::Dropped {
                after.push(member(rows_after));
            }
            before.push(member(rows_before));
        }
        let before = db::Database {
            root: root.clone(),
            members: before,
            by_variable: false,
        };
        let after = db::Database {
            root: root.clone(),
            members: after,
            by_variable: false,
        };
        let mut processors: Vec<String> = before.processors();
        for m in &before.members {
            if let Some(Ok(r)) = &m.index_rows {
                processors.extend(r.processors());
            }
            processors.extend(db::index_processor(&m.path));
        }
        processors.sort();
        processors.dedup();
        for p in processors.iter().filter(|p| keeps_target(sel, p)) {
            let Ok(device) = gfxkit_target_id::TargetId::parse(p) else {
                continue;
            };
            if before.serves(&device, None).is_err() {
                continue;
            }
            if let Err(why) = after.serves(&device, None) {
                return Err(Error::new(
                    input.join(&root),
                    ErrorKind::Tree(format!(
                        "the pruned kernel database would not serve {p}, which the prune keeps \
                         and the input serves: {why}; nothing was written"
                    )),
                ));
            }
        }
    }
    Ok(())
}

/// Links followed from one symbolic link before giving up (Linux's own limit).
const MAX_LINK_HOPS: usize = 40;

/// Drops every symbolic link that leads to a path the prune drops (a file, or anything inside
/// a directory dropped whole), following links to links inside the tree. Targets are resolved
/// by their text from the link's directory; an absolute target, one that leaves the tree, and
/// one that names nothing in the input are left as they are (copied).
fn drop_links_to_dropped(items: &[(String, Item)], plans: &mut [Option<Plan>]) {
    let at = path_index(items);
    let drops: Vec<(usize, String)> = (0..items.len())
        .filter_map(|i| {
            follow_link(items, &at, i, |path| {
                dropped_within(&at, plans, path).map(str::to_owned)
            })
            .map(|gone| (i, gone))
        })
        .collect();
    for (i, gone) in drops {
        if let Some(plan) = plans[i].as_mut() {
            plan.file.action = TreeAction::Dropped;
            plan.file.size_after = 0;
            let target = plan.file.note.take().unwrap_or_default();
            plan.file.note = Some(format!("{target}: leads to {gone}, which is dropped"));
        }
    }
}

/// Each path of `items` and its position.
pub(crate) fn path_index(items: &[(String, Item)]) -> std::collections::HashMap<&str, usize> {
    items
        .iter()
        .enumerate()
        .map(|(i, (rel, _))| (rel.as_str(), i))
        .collect()
}

/// Follows the symbolic link `items[i]` (through links to links, inside the tree, at most
/// [`MAX_LINK_HOPS`]) and returns the first value `visit` gives for a path reached; `None`
/// when `items[i]` is no link, or the chain leaves the tree or reaches something `visit`
/// passes over. `at` is [`path_index`] of `items`.
pub(crate) fn follow_link<T>(
    items: &[(String, Item)],
    at: &std::collections::HashMap<&str, usize>,
    i: usize,
    mut visit: impl FnMut(&str) -> Option<T>,
) -> Option<T> {
    let (rel, Item::Symlink { target }) = &items[i] else {
        return None;
    };
    let (mut from, mut to) = (rel.clone(), target);
    for _ in 0..MAX_LINK_HOPS {
        let path = resolve_link(&from, to)?;
        if let Some(v) = visit(&path) {
            return Some(v);
        }
        match at.get(path.as_str()).map(|&j| &items[j].1) {
            Some(Item::Symlink { target }) => (from, to) = (path, target),
            _ => return None,
        }
    }
    None
}

/// `path` itself or the directory it is in that the prune drops, if any.
fn dropped_within<'p>(
    at: &std::collections::HashMap<&str, usize>,
    plans: &[Option<Plan>],
    path: &'p str,
) -> Option<&'p str> {
    std::iter::successors(Some(path), |p| p.rsplit_once('/').map(|(d, _)| d)).find(|p| {
        at.get(p).is_some_and(|&i| {
            plans[i]
                .as_ref()
                .is_some_and(|plan| plan.file.action == TreeAction::Dropped)
        })
    })
}

/// The tree-relative path a link at `link` with target `target` names, resolved by its text;
/// `None` for an absolute target or one that leaves the tree.
fn resolve_link(link: &str, target: &Path) -> Option<String> {
    if target.is_absolute() {
        return None;
    }
    let mut parts: Vec<&str> = link.split('/').collect();
    parts.pop();
    for c in target.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::Normal(n) => parts.push(n.to_str()?),
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

fn meta_mode(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode()
}

fn tree_file(rel: &str, kind: &'static str, action: TreeAction, size: u64) -> TreeFile {
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

/// The output must not exist or be an empty directory, and must not be inside the input.
fn check_output(input: &Path, out: &Path) -> Result<(), Error> {
    let refuse = |why: &str| Err(Error::new(out, ErrorKind::Tree(why.to_owned())));
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => {
            let mut rd = std::fs::read_dir(out).map_err(|e| Error::new(out, ErrorKind::Read(e)))?;
            if rd.next().is_some() {
                return refuse("the output exists and is not empty");
            }
        }
        Ok(_) => return refuse("the output exists and is not a directory"),
        Err(_) => {}
    }
    let canon_in =
        std::fs::canonicalize(input).map_err(|e| Error::new(input, ErrorKind::Stat(e)))?;
    // The output's place once made: its nearest existing ancestor, resolved, and the rest.
    let mut base = out.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let canon_out = loop {
        if let Ok(p) = std::fs::canonicalize(&base) {
            break rest.iter().rev().fold(p, |p, n| p.join(n));
        }
        match (base.file_name(), base.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n.to_owned());
                base = if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                };
            }
            _ => return refuse("the output names no directory"),
        }
    };
    if canon_out.starts_with(&canon_in) {
        return refuse("the output is inside the input tree");
    }
    Ok(())
}

/// Every path under `root`, relative, depth first in name order (a directory before what it
/// holds); symbolic links are not followed.
pub(crate) fn walk(root: &Path) -> Result<Vec<(String, Item)>, Error> {
    let mut out = Vec::new();
    let mut stack: Vec<String> = vec![String::new()];
    while let Some(dir) = stack.pop() {
        let abs = root.join(&dir);
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&abs)
            .map_err(|e| Error::new(&abs, ErrorKind::Read(e)))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| Error::new(&abs, ErrorKind::Read(e)))?;
        names.sort();
        for name in names {
            let Some(name) = name.to_str().map(str::to_owned) else {
                return Err(Error::new(
                    abs.join(&name),
                    ErrorKind::Tree("a file name that is not UTF-8".into()),
                ));
            };
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            let path = root.join(&rel);
            let m = std::fs::symlink_metadata(&path)
                .map_err(|e| Error::new(&path, ErrorKind::Stat(e)))?;
            let ft = m.file_type();
            let item = if ft.is_symlink() {
                let target =
                    std::fs::read_link(&path).map_err(|e| Error::new(&path, ErrorKind::Read(e)))?;
                Item::Symlink { target }
            } else if ft.is_dir() {
                Item::Dir {
                    mode: meta_mode(&m),
                }
            } else if ft.is_file() {
                Item::File {
                    mode: meta_mode(&m),
                    len: m.len(),
                }
            } else {
                Item::Special
            };
            if matches!(item, Item::Dir { .. }) {
                stack.push(rel.clone());
            }
            out.push((rel, item));
            if out.len() > MAX_PATHS {
                return Err(Error::new(
                    root,
                    ErrorKind::Tree(format!("more than {MAX_PATHS} paths")),
                ));
            }
        }
    }
    // Order every path by its components, so a directory comes before its contents and the
    // contents of a directory stay together.
    out.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    Ok(out)
}

pub(crate) fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// Whether the selection keeps code for `target` (a target ID or processor name).
fn keeps_target(sel: &Selection, target: &str) -> bool {
    sel.keeps(&db::entry_id(target))
}

/// Decides what becomes of one file (pass one: nothing is written).
fn classify(path: &Path, rel: &str, len: u64, t: &Transform) -> Result<Plan, Error> {
    let sel = &t.selection;
    let plain = |kind| Plan {
        file: tree_file(rel, kind, TreeAction::Copied, len),
        keeps: false,
        index_bytes: None,
        index_rows: None,
    };
    if len == 0 {
        return Ok(plain("file"));
    }
    let input = Input::open(path)?;
    let data: &[u8] = &input;
    let by_targets = |kind: &'static str, targets: Vec<String>, note: Option<String>| {
        let targets = sorted(targets);
        let kept = targets.iter().filter(|t| keeps_target(sel, t)).count();
        let action = if targets.is_empty() || kept > 0 {
            TreeAction::Kept
        } else {
            TreeAction::Dropped
        };
        let mut file = tree_file(rel, kind, action, len);
        file.note = note;
        if kept > 0 && kept < targets.len() {
            file.note = Some("holds kept and dropped targets: kept whole (not split)".into());
        }
        file.targets = targets;
        Plan {
            keeps: kept > 0,
            file,
            index_bytes: None,
            index_rows: None,
        }
    };
    if db::kind(&path.to_string_lossy(), data) == Some(DbKind::TensileIndex) {
        return tensile_index(path, rel, data, len, t);
    }
    if let Some((kind, targets)) = database_targets(path, rel, data)? {
        return Ok(by_targets(kind, targets, None));
    }
    let sniffed = gfxkit_host::InputKind::sniff(data.get(..64).unwrap_or(data));
    use gfxkit_host::InputKind as K;
    match sniffed {
        K::ElfExecutable
        | K::ElfSharedObject
        | K::ElfRelocatable
        | K::PeImage
        | K::CoffObject
        | K::Archive
        | K::Bundle => {
            let rewritten = match gfxkit_shrink::rewrite_without_digests(data, t) {
                Ok(r) => r,
                Err(e)
                    if matches!(e.kind, gfxkit_shrink::ErrorKind::Unsupported(_))
                        && gfxkit_shrink::survey_with(data, false, &t.limits)
                            .map(|s| s.regions.iter().all(|r| r.bundles.is_empty()))
                            .unwrap_or(true) =>
                {
                    return Ok(plain("file"))
                }
                Err(e) => return Err(Error::new(path, ErrorKind::Prune(e))),
            };
            let report = rewritten.report;
            if !report.had_device_code() {
                return Ok(plain("file"));
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
            let mut file = tree_file(
                rel,
                "host",
                if changed {
                    TreeAction::Rewritten
                } else {
                    TreeAction::Kept
                },
                len,
            );
            if changed {
                file.size_after = report.size_after;
            }
            file.targets = targets;
            let keeps = report.keeps_device_code();
            file.report = Some(report);
            Ok(Plan {
                file,
                keeps,
                index_bytes: None,
                index_rows: None,
            })
        }
        _ => Ok(plain("file")),
    }
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
fn index_bytes<'d>(
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
) -> Result<Plan, Error> {
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
        return Ok(Plan {
            file,
            keeps: kept,
            index_bytes: None,
            index_rows: Some(rows_in),
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
                || matches!(sel, Selection::Keep(_));
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
        return Ok(Plan {
            file,
            keeps,
            index_bytes: None,
            index_rows: Some(rows_in),
        });
    }
    if kept_rows == 0 {
        file.action = TreeAction::Dropped;
        file.size_after = 0;
        return Ok(Plan {
            file,
            keeps,
            index_bytes: None,
            index_rows: Some(rows_in),
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
    Ok(Plan {
        file,
        keeps,
        index_bytes: Some(out),
        index_rows: Some(rows_in),
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

/// When `items[i]` is a directory named for a processor (`hsa/gfx942`, `library/gfx90a`; a
/// bare processor name, no features): the name, and the end of the run of `items` below it
/// (items are in path order, a directory's contents right after it).
pub(crate) fn processor_dir(items: &[(String, Item)], i: usize) -> Option<(&str, usize)> {
    let (rel, item) = &items[i];
    let name = db::base_name(rel);
    let is_proc = gfxkit_target_id::TargetId::parse(name)
        .is_ok_and(|t| !t.has_features() && t.processor().name == name);
    if !matches!(item, Item::Dir { .. }) || !is_proc {
        return None;
    }
    let prefix = format!("{rel}/");
    let end = items[i + 1..]
        .iter()
        .position(|(r, _)| !r.starts_with(&prefix))
        .map_or(items.len(), |n| i + 1 + n);
    Some((name, end))
}

/// Drops whole directories named for a processor the selection drops when they hold device
/// code of dropped targets only (aiter's `hsa/gfx950/` with its CSV maps).
fn drop_processor_dirs(items: &[(String, Item)], plans: &mut [Option<Plan>], sel: &Selection) {
    let mut i = 0;
    while i < items.len() {
        let rel = &items[i].0;
        let Some((name, end)) = processor_dir(items, i).filter(|(n, _)| !keeps_target(sel, n))
        else {
            i += 1;
            continue;
        };
        let under = &plans[i + 1..end];
        let keeps = under.iter().flatten().any(|p| p.keeps);
        let drops = under
            .iter()
            .flatten()
            .any(|p| p.file.action == TreeAction::Dropped && !p.file.targets.is_empty());
        if drops && !keeps {
            for p in plans[i + 1..end].iter_mut().flatten() {
                p.file.action = TreeAction::Dropped;
                p.file.size_after = 0;
                p.file.index = None;
                p.file.report = None;
                p.index_bytes = None;
                p.file.note = Some(format!("in {rel}/, a directory for {name}"));
            }
            plans[i] = Some(Plan {
                file: TreeFile {
                    note: Some(format!(
                        "a directory for {name}: dropped with what it holds"
                    )),
                    ..tree_file(rel, "directory", TreeAction::Dropped, 0)
                },
                keeps: false,
                index_bytes: None,
                index_rows: None,
            });
            i = end;
        } else {
            i += 1;
        }
    }
}

/// The targets of the selection no device code of the tree matches.
fn unmatched(sel: &Selection, plans: &[Option<Plan>]) -> Vec<String> {
    let ps: &[Pattern] = match sel {
        Selection::Keep(ps) | Selection::Drop(ps) => ps,
        Selection::All => return Vec::new(),
    };
    let targets: Vec<&str> = plans
        .iter()
        .flatten()
        .flat_map(|p| p.file.targets.iter().map(String::as_str))
        .collect();
    ps.iter()
        .filter(|p| {
            let one = Selection::Keep(vec![(*p).clone()]);
            let hit = |t: &&str| match sel {
                Selection::Keep(_) => keeps_target(&one, t),
                _ => !keeps_target(&Selection::Drop(vec![(*p).clone()]), t),
            };
            !targets.iter().any(hit)
        })
        .map(|p| p.to_string())
        .collect()
}

/// Pass two: everything into a temporary directory beside `out`, renamed to `out` at the end.
/// Writes the pruned tree into a new temporary directory beside `beside` (in its parent, on
/// its file system), named for it.
fn stage_tree(
    input: &Path,
    beside: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Plan>],
    t: &Transform,
    root_mode: u32,
) -> Result<tempfile::TempDir, Error> {
    let parent = beside
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = beside.file_name().ok_or_else(|| {
        Error::new(
            beside,
            ErrorKind::Tree("the output names no directory".into()),
        )
    })?;
    let stage = tempfile::Builder::new()
        .prefix(&format!(".gfxkit-{}.", std::process::id()))
        .suffix(&format!(".{}", name.to_string_lossy()))
        .rand_bytes(6)
        .tempdir_in(parent)
        .map_err(|e| Error::new(parent, ErrorKind::CreateTemp(e)))?;
    fill(input, stage.path(), items, plans, t)?;
    set_mode(stage.path(), root_mode)?;
    Ok(stage)
}

fn write_tree(
    input: &Path,
    out: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Plan>],
    t: &Transform,
    root_mode: u32,
) -> Result<(), Error> {
    let stage = stage_tree(input, out, items, plans, t, root_mode)?;
    // An empty directory there is replaced (checked empty before pass one).
    if std::fs::symlink_metadata(out).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir(out).map_err(|e| Error::new(out, ErrorKind::Write(e)))?;
    }
    let root = stage.keep();
    std::fs::rename(&root, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&root);
        Error::new(out, ErrorKind::Write(e))
    })
}

/// `--in-place`: the pruned tree staged beside the input, synced, exchanged with it, and the
/// old tree removed. Until the exchange the input is untouched; a failure removes the stage.
fn replace_tree(
    input: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Plan>],
    t: &Transform,
    root_mode: u32,
) -> Result<(), Error> {
    let input = std::fs::canonicalize(input).map_err(|e| Error::new(input, ErrorKind::Stat(e)))?;
    let stage = stage_tree(&input, &input, items, plans, t, root_mode)?;
    // Everything written reaches the disk before the tree replaces the input.
    let dir = std::fs::File::open(stage.path())
        .map_err(|e| Error::new(stage.path(), ErrorKind::Read(e)))?;
    rustix::fs::syncfs(&dir).map_err(|e| Error::new(stage.path(), ErrorKind::Write(e.into())))?;
    exchange(stage.path(), &input)?;
    // The stage now holds the old tree.
    let parent = input.parent().unwrap_or(Path::new("/"));
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::new(parent, ErrorKind::SyncDirectory(e)))?;
    let old = stage.keep();
    std::fs::remove_dir_all(&old).map_err(|e| {
        Error::new(
            &old,
            ErrorKind::Tree(format!(
                "the pruned tree is in place, but the old one could not be removed from here: {e}"
            )),
        )
    })
}

/// Exchanges the directories `a` and `b` (same file system): in one step where the system
/// can, else by moving `b` aside, `a` to `b`, and the old `b` to `a`.
fn exchange(a: &Path, b: &Path) -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(e) => return Err(Error::new(b, ErrorKind::Write(e.into()))),
        }
    }
    let aside = a.with_extension("old");
    std::fs::rename(b, &aside).map_err(|e| Error::new(b, ErrorKind::Write(e)))?;
    if let Err(e) = std::fs::rename(a, b) {
        let _ = std::fs::rename(&aside, b);
        return Err(Error::new(b, ErrorKind::Write(e)));
    }
    std::fs::rename(&aside, a).map_err(|e| Error::new(a, ErrorKind::Write(e)))
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::new(path, ErrorKind::SetPermissions(e)))
}

fn fill(
    input: &Path,
    root: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Plan>],
    t: &Transform,
) -> Result<(), Error> {
    use rayon::prelude::*;
    // Directories and links first, in path order (a directory before what it holds); the
    // contents of a directory dropped whole are passed over.
    let mut dirs: Vec<(PathBuf, u32)> = Vec::new();
    let mut write = vec![false; items.len()];
    let mut skipping: Option<String> = None;
    for (i, ((rel, item), plan)) in items.iter().zip(plans.iter()).enumerate() {
        if skipping
            .as_ref()
            .is_some_and(|p| rel.starts_with(p.as_str()))
        {
            continue;
        }
        if plan
            .as_ref()
            .is_some_and(|p| p.file.action == TreeAction::Dropped)
        {
            if matches!(item, Item::Dir { .. }) {
                skipping = Some(format!("{rel}/"));
            }
            continue;
        }
        let dst = root.join(rel);
        match item {
            Item::Dir { mode } => {
                std::fs::create_dir(&dst).map_err(|e| Error::new(&dst, ErrorKind::CreateDir(e)))?;
                dirs.push((dst, *mode));
            }
            Item::Symlink { target } => std::os::unix::fs::symlink(target, &dst)
                .map_err(|e| Error::new(&dst, ErrorKind::Write(e)))?,
            Item::Special => {}
            Item::File { .. } => write[i] = true,
        }
    }
    // Then the files, several at a time (copies inside the kernel beside a rewrite).
    items
        .par_iter()
        .zip(plans.par_iter_mut())
        .zip(write.par_iter())
        .filter(|(_, w)| **w)
        .try_for_each(|(((rel, item), plan), _)| {
            let (Item::File { mode, .. }, Some(plan)) = (item, plan) else {
                return Ok(());
            };
            let dst = root.join(rel);
            let src = input.join(rel);
            match (&plan.file.action, plan.index_bytes.take()) {
                (TreeAction::Rewritten, Some(bytes)) => {
                    std::fs::write(&dst, &bytes)
                        .map_err(|e| Error::new(&dst, ErrorKind::Write(e)))?;
                    set_mode(&dst, *mode)
                }
                (TreeAction::Rewritten, None) => {
                    let mapped = Input::open(&src)?;
                    let rewritten = gfxkit_shrink::rewrite_without_digests(&mapped, t)
                        .map_err(|e| Error::new(&src, ErrorKind::Prune(e)))?;
                    crate::rewrite::write_verified(
                        &dst,
                        Some(&src),
                        crate::rewrite::Original::Input(&mapped),
                        &rewritten,
                        Durability::Rename,
                        &t.limits,
                    )?;
                    set_mode(&dst, *mode)
                }
                _ => copy(&src, &dst, *mode),
            }
        })?;
    // Directories last, deepest first: a read-only directory is filled before it is locked.
    for (dir, mode) in dirs.iter().rev() {
        set_mode(dir, *mode)?;
    }
    Ok(())
}

/// Copies one file unchanged, inside the kernel where it can.
fn copy(src: &Path, dst: &Path, mode: u32) -> Result<(), Error> {
    let mut f = std::fs::File::create(dst).map_err(|e| Error::new(dst, ErrorKind::Write(e)))?;
    let len = std::fs::metadata(src)
        .map_err(|e| Error::new(src, ErrorKind::Stat(e)))?
        .len();
    if len > 0 {
        let mapped = Input::open(src)?;
        copy_or_write(&mut f, &mapped, mapped.file_range(&mapped))
            .map_err(|e| Error::new(dst, ErrorKind::Write(e)))?;
    }
    drop(f);
    set_mode(dst, mode)
}
