//! `prune` of a directory tree (`gfxkit prune --keep gfx90a /usr/lib/x86_64-linux-gnu -o out`):
//! a pruned copy of the tree, with the kernel databases beside the libraries pruned too.
//!
//! Each file is decided by its content, never by a file-name pattern: the door
//! ([`crate::format::Formats::of`]) names its format, whose [`crate::format::Format::prune`]
//! says what becomes of it ([`crate::prune_file`] has gfxkit's formats' rules: raw code
//! objects and `.kpack` archives kept or dropped by their targets, host binaries rewritten,
//! Tensile indexes cut to the kept rows, other kernel-database files kept or dropped whole).
//! Then, over the whole tree:
//!
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

use crate::format::Formats;
use crate::input::Input;
use crate::prune_file::{index_bytes, keeps_target, tree_file, Pruned};
use crate::write::{copy_or_write, Durability};
use crate::{Error, ErrorKind};
use gfxkit_inventory::database::{self as db, DbKind};
use gfxkit_inventory::prune::{TreeAction, TreeFile};
use gfxkit_kernel_db::tensile::Index;
use gfxkit_shrink::{Pattern, Selection, Transform};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
    Dir {
        mode: u32,
    },
    Symlink {
        target: PathBuf,
    },
    /// A regular file, with its stamp when read from a directory (`None` in a package).
    File {
        mode: u32,
        len: u64,
        stamp: Option<Stamp>,
    },
    Special,
}

/// What tells whether a file changed between the plan of a prune and its write: device, inode,
/// length, and the times of the last change of the contents and of the inode. A rewrite kept
/// from the plan ([`Pruned::held`]) is put back only over a file with the same stamp; any other
/// is rewritten again from what it holds then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// Whether the file at `path` still has this stamp.
    fn holds_for(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| Stamp::of(&m) == *self)
    }
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

/// Prunes the tree `input` with `t` into `output`, each file read as `formats` reads it (see
/// the module documentation and [`TreeOutput`]). Unless `allow_empty`, a result without
/// device code (where the tree had some) is refused before anything is written.
pub fn prune_tree(
    formats: &Formats,
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
    let held = AtomicU64::new(0);
    let mut plans: Vec<Option<Pruned>> = items
        .par_iter()
        .map(|(rel, item)| -> Result<Option<Pruned>, Error> {
            Ok(match item {
                Item::File { len, .. } => {
                    let mut p = classify(formats, &input.join(rel), rel, *len, t)?;
                    let write = matches!(output, TreeOutput::Dir(_));
                    hold_within(&mut p, &held, HELD_FOR_WRITING, write);
                    Some(p)
                }
                Item::Symlink { target } => Some(Pruned {
                    file: tree_file(rel, "symlink", TreeAction::Copied, 0),
                    keeps: false,
                    index_bytes: None,
                    index_rows: None,
                    held: None,
                })
                .map(|mut p| {
                    p.file.note = Some(format!("-> {}", target.display()));
                    p
                }),
                Item::Special => Some(Pruned {
                    file: TreeFile {
                        note: Some("a device, FIFO or socket: not copied".into()),
                        ..tree_file(rel, "file", TreeAction::Dropped, 0)
                    },
                    keeps: false,
                    index_bytes: None,
                    index_rows: None,
                    held: None,
                }),
                Item::Dir { .. } => None,
            })
        })
        .collect::<Result<_, _>>()?;
    let unplanned_rows = |rel: &str| -> Result<Result<db::IndexRows, String>, Error> {
        let path = input.join(rel);
        Ok(index_rows(&path, rel, &Input::open(&path)?))
    };
    let unmatched = settle(input, &items, &mut plans, t, allow_empty, &unplanned_rows)?;

    match output {
        TreeOutput::DryRun => update_records(Records::Planned(input), &items, &mut plans)?,
        TreeOutput::Dir(out) => {
            write_tree(formats, input, out, &items, &mut plans, t, meta_mode(&meta))?
        }
        TreeOutput::InPlace => {
            replace_tree(formats, input, &items, &mut plans, t, meta_mode(&meta))?
        }
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

/// What an index's rows are, for the check of the pruned databases: read at its planning, or
/// by the caller from the index at a path of the tree.
pub(crate) type UnplannedRows<'a> =
    dyn Fn(&str) -> Result<Result<db::IndexRows, String>, Error> + Sync + 'a;

/// The decisions over the whole tree, once each path (`items`, in path order, the input at
/// `input`) has its plan: directories named for a dropped processor dropped whole, links to
/// what is dropped dropped, a prune that leaves no device code refused (unless
/// `allow_empty`), the kernel databases checked ([`check_databases`]; `unplanned_rows` reads
/// the rows of an index whose plan did not). Returns the targets of the selection that match
/// no device code.
pub(crate) fn settle(
    input: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Pruned>],
    t: &Transform,
    allow_empty: bool,
    unplanned_rows: &UnplannedRows<'_>,
) -> Result<Vec<String>, Error> {
    drop_processor_dirs(items, plans, &t.selection);
    drop_links_to_dropped(items, plans);
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
    check_databases(input, items, plans, &t.selection, unplanned_rows)?;
    Ok(unmatched(&t.selection, plans))
}

/// The hardware rows of the Tensile index `bytes` found at `rel` (`path` on disk), or why it
/// does not read.
pub(crate) fn index_rows(path: &Path, rel: &str, bytes: &[u8]) -> Result<db::IndexRows, String> {
    let decoded = index_bytes(path, rel, bytes).map_err(|e| e.to_string())?;
    Index::parse(&decoded)
        .map(|i| db::IndexRows::of(&i))
        .map_err(|e| e.to_string())
}

/// The prune's own verdict on what it would write, before anything is written: every Tensile
/// directory the prune changes must still give each kept processor it gave before everything
/// its library opens for it ([`db::Database::serves`]: the index, the rows the processor can
/// select, their shards and code objects). A prune that would take any of that away is
/// refused, naming the processor and what it would lose.
fn check_databases(
    input: &Path,
    items: &[(String, Item)],
    plans: &[Option<Pruned>],
    sel: &Selection,
    unplanned_rows: &UnplannedRows<'_>,
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
            let rows_before = match (&plan.index_rows, is_index) {
                // Read when the index was planned.
                (Some(rows), _) => Some(Ok(rows.clone())),
                (None, true) => Some(unplanned_rows(rel)?),
                (None, false) => None,
            };
            let rows_after = match (&plan.index_bytes, plan.file.action) {
                (_, TreeAction::Dropped) => None,
                (Some(b), _) => Some(index_rows(&input.join(rel), rel, b)),
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
fn drop_links_to_dropped(items: &[(String, Item)], plans: &mut [Option<Pruned>]) {
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
    plans: &[Option<Pruned>],
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
                    stamp: Some(Stamp::of(&m)),
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

/// The most bytes of rewrites made while a tree is planned ([`Pruned::held`]: mostly the
/// bundles compressed again) kept until the files are written, in all. Rewrites past it are
/// made a second time when written, so that a tree of many large compressed libraries is never
/// held in memory whole.
pub(crate) const HELD_FOR_WRITING: u64 = 1 << 30;

/// Keeps the rewrite `p` made for writing (`write`: nothing is kept for a dry run) while the
/// bytes kept in all (`held`) stay within `bound` ([`HELD_FOR_WRITING`]); else lets it go.
pub(crate) fn hold_within(p: &mut Pruned, held: &AtomicU64, bound: u64, write: bool) {
    let Some(n) = p.held.as_ref().map(|h| h.owned_len()) else {
        return;
    };
    let before = held.fetch_add(n, Ordering::Relaxed);
    if !write || before + n > bound {
        held.fetch_sub(n, Ordering::Relaxed);
        p.held = None;
    }
}

/// Decides what becomes of one file (pass one: nothing is written): an empty file is copied,
/// any other goes to the format the door names.
fn classify(
    formats: &Formats,
    path: &Path,
    rel: &str,
    len: u64,
    t: &Transform,
) -> Result<Pruned, Error> {
    if len == 0 {
        return Ok(Pruned::copied(rel, "file", len));
    }
    let input = Input::open(path)?;
    let file = formats.file(path, &input).with_limits(t.limits);
    formats.of(&file).prune(&file, rel, t)
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
fn drop_processor_dirs(items: &[(String, Item)], plans: &mut [Option<Pruned>], sel: &Selection) {
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
            plans[i] = Some(Pruned {
                file: TreeFile {
                    note: Some(format!(
                        "a directory for {name}: dropped with what it holds"
                    )),
                    ..tree_file(rel, "directory", TreeAction::Dropped, 0)
                },
                keeps: false,
                index_bytes: None,
                index_rows: None,
                held: None,
            });
            i = end;
        } else {
            i += 1;
        }
    }
}

/// The targets of the selection no device code of the tree matches.
fn unmatched(sel: &Selection, plans: &[Option<Pruned>]) -> Vec<String> {
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
    formats: &Formats,
    input: &Path,
    beside: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Pruned>],
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
    fill(formats, input, stage.path(), items, plans, t)?;
    set_mode(stage.path(), root_mode)?;
    Ok(stage)
}

fn write_tree(
    formats: &Formats,
    input: &Path,
    out: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Pruned>],
    t: &Transform,
    root_mode: u32,
) -> Result<(), Error> {
    let stage = stage_tree(formats, input, out, items, plans, t, root_mode)?;
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
    formats: &Formats,
    input: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Pruned>],
    t: &Transform,
    root_mode: u32,
) -> Result<(), Error> {
    let input = std::fs::canonicalize(input).map_err(|e| Error::new(input, ErrorKind::Stat(e)))?;
    let stage = stage_tree(formats, &input, &input, items, plans, t, root_mode)?;
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
    formats: &Formats,
    input: &Path,
    root: &Path,
    items: &[(String, Item)],
    plans: &mut [Option<Pruned>],
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
            let (Item::File { mode, stamp, .. }, Some(plan)) = (item, plan) else {
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
                    let file = formats.file(&src, &mapped).with_limits(t.limits);
                    let format = formats.of(&file);
                    // The rewrite made when the file was planned, put back over the input
                    // read again; made again when it was not kept, or when the file changed
                    // since it was walked.
                    let planned = plan
                        .held
                        .take()
                        .filter(|_| stamp.is_some_and(|s| s.holds_for(&src)))
                        .and_then(|h| h.attach(&mapped));
                    let rewritten = match (planned, plan.file.report.clone()) {
                        (Some(output), Some(report)) => gfxkit_shrink::Rewritten { output, report },
                        _ => format.rewrite(&file, t)?,
                    };
                    crate::rewrite::write_verified(
                        &dst,
                        Some(&src),
                        crate::rewrite::Original::Input(&mapped),
                        &rewritten,
                        Durability::Rename,
                        &|back| format.verify_rewrite(&file, back, &rewritten),
                    )?;
                    set_mode(&dst, *mode)
                }
                _ => copy(&src, &dst, *mode),
            }
        })?;
    update_records(Records::Written(root), items, plans)?;
    // Directories last, deepest first: a read-only directory is filled before it is locked.
    for (dir, mode) in dirs.iter().rev() {
        set_mode(dir, *mode)?;
    }
    Ok(())
}

/// The records an installed package keeps of its files with their hashes: a wheel's
/// `<name>.dist-info/RECORD` (its paths relative to the directory holding the `.dist-info`
/// directory, as pip installs them) and a conda package's `conda-meta/<name>.json` (its
/// `paths_data` relative to the environment, the directory holding `conda-meta`). For the
/// path of a file in a tree: which record it is, and the directory its paths are relative to.
fn installed_record(rel: &str) -> Option<(InstalledRecord, &str)> {
    let (dir, name) = rel.rsplit_once('/')?;
    let base = dir.rsplit_once('/').map_or("", |(b, _)| b);
    let dir_name = db::base_name(dir);
    if name == "RECORD" && dir_name.ends_with(".dist-info") {
        Some((InstalledRecord::Wheel, base))
    } else if dir_name == "conda-meta" && name.ends_with(".json") {
        Some((InstalledRecord::Conda, base))
    } else {
        None
    }
}

/// The kinds of [`installed_record`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum InstalledRecord {
    Wheel,
    Conda,
}

/// Where [`update_records`] works.
#[derive(Clone, Copy)]
enum Records<'a> {
    /// A dry run: the records read from the input tree, nothing written; the new hash of a
    /// rewritten file is not known, its length is (so is the new record's size).
    Planned(&'a Path),
    /// The pruned tree written at this root: records and rewritten files read from it, the
    /// new records written there.
    Written(&'a Path),
}

/// The records of installed packages in the tree ([`installed_record`]) made to list the
/// pruned tree, as the prune of a wheel or a `.conda` makes its own: the entries of files
/// rewritten take their new hash and size, those of files left out (dropped, or in a
/// directory dropped whole) go. A record changed so is [`TreeAction::Rewritten`] in the
/// report, with its new size, in a dry run too. Entries of files not in the tree, and records
/// that do not read, are left as they are.
fn update_records(
    at: Records<'_>,
    items: &[(String, Item)],
    plans: &mut [Option<Pruned>],
) -> Result<(), Error> {
    use gfxkit_package::record;
    use std::collections::{HashMap, HashSet};
    // What is gone, and what was rewritten with its new size, by path in the tree.
    let (mut gone, mut rewritten) = (HashSet::new(), HashMap::new());
    let mut dropped_dir: Option<String> = None;
    for ((rel, item), plan) in items.iter().zip(plans.iter()) {
        if dropped_dir
            .as_ref()
            .is_some_and(|d| !rel.starts_with(d.as_str()))
        {
            dropped_dir = None;
        }
        let action = plan.as_ref().map(|p| p.file.action);
        if dropped_dir.is_some() || action == Some(TreeAction::Dropped) {
            match item {
                Item::Dir { .. } if dropped_dir.is_none() => dropped_dir = Some(format!("{rel}/")),
                Item::Dir { .. } | Item::Special => {}
                Item::File { .. } | Item::Symlink { .. } => {
                    gone.insert(rel.as_str());
                }
            }
        } else if let Some(p) = plan
            .as_ref()
            .filter(|_| action == Some(TreeAction::Rewritten))
        {
            rewritten.insert(rel.as_str(), p.file.size_after);
        }
    }
    if gone.is_empty() && rewritten.is_empty() {
        return Ok(());
    }
    let root = match at {
        Records::Planned(r) | Records::Written(r) => r,
    };
    for (i, (rel, item)) in items.iter().enumerate() {
        let (Item::File { mode, .. }, Some((kind, base))) = (item, installed_record(rel)) else {
            continue;
        };
        if gone.contains(rel.as_str()) {
            continue;
        }
        let dst = root.join(rel);
        let text = std::fs::read(&dst).map_err(|e| Error::new(&dst, ErrorKind::Read(e)))?;
        let listed: Vec<String> = match kind {
            InstalledRecord::Wheel => match std::str::from_utf8(&text) {
                Ok(t) => t
                    .lines()
                    .filter_map(|l| record::split_row(l).into_iter().next())
                    .collect(),
                Err(_) => continue,
            },
            InstalledRecord::Conda => match record::conda_meta_paths(&text) {
                Some(paths) => paths,
                None => continue,
            },
        };
        let in_tree = |p: &str| {
            if base.is_empty() {
                p.to_owned()
            } else {
                format!("{base}/{p}")
            }
        };
        let hash = |bytes: &[u8]| match kind {
            InstalledRecord::Wheel => record::hash_field(bytes),
            InstalledRecord::Conda => record::sha256_hex(bytes),
        };
        // Each listed path gone (no new hash) or rewritten (its new hash and size; planned:
        // a hash of the same length).
        let mut changes: Vec<(String, Option<(String, u64)>)> = Vec::new();
        for path in &listed {
            let at_path = in_tree(path);
            if gone.contains(at_path.as_str()) {
                changes.push((path.clone(), None));
            } else if let Some(&size) = rewritten.get(at_path.as_str()) {
                let now = match at {
                    Records::Planned(_) => (hash(&[]), size),
                    Records::Written(root) => {
                        let bytes = Input::open(&root.join(&at_path))?;
                        (hash(&bytes), bytes.len() as u64)
                    }
                };
                changes.push((path.clone(), Some(now)));
            }
        }
        if changes.is_empty() {
            continue;
        }
        let new = match kind {
            InstalledRecord::Wheel => {
                let text = String::from_utf8_lossy(&text);
                let changed: Vec<(String, String, u64)> = changes
                    .iter()
                    .filter_map(|(p, now)| now.clone().map(|(h, n)| (p.clone(), h, n)))
                    .collect();
                let removed: HashSet<String> = changes
                    .iter()
                    .filter(|(_, now)| now.is_none())
                    .map(|(p, _)| p.clone())
                    .collect();
                record::update(&text, &changed, &removed).0.into_bytes()
            }
            InstalledRecord::Conda => match record::update_conda_meta(&text, &changes) {
                Ok(new) => new,
                Err(_) => continue,
            },
        };
        if let Records::Written(_) = at {
            // Written anew (the copy may be read-only), with the mode it had.
            std::fs::remove_file(&dst).map_err(|e| Error::new(&dst, ErrorKind::Write(e)))?;
            std::fs::write(&dst, &new).map_err(|e| Error::new(&dst, ErrorKind::Write(e)))?;
            set_mode(&dst, *mode)?;
        }
        if let Some(p) = plans[i].as_mut() {
            let left_out = changes.iter().filter(|(_, now)| now.is_none()).count();
            p.file.action = TreeAction::Rewritten;
            p.file.size_after = new.len() as u64;
            p.file.note = Some(format!(
                "entries updated: {} files rewritten, {left_out} left out",
                changes.len() - left_out
            ));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_to_the_same_length_loses_its_stamp() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("libk.so");
        std::fs::write(&path, b"first bytes").unwrap();
        let stamp = Stamp::of(&std::fs::symlink_metadata(&path).unwrap());
        assert!(stamp.holds_for(&path));
        // Read, mapped, copied elsewhere: still the same file.
        let _ = Input::open(&path).unwrap();
        std::fs::copy(&path, d.path().join("copy")).unwrap();
        assert!(stamp.holds_for(&path));
        // The same length written in place, its time set back as a copy tool would keep it:
        // the inode's change time still tells.
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut &f, b"other bytes").unwrap();
        f.set_modified(modified).unwrap();
        drop(f);
        assert!(!stamp.holds_for(&path));
        // Replaced by another file of the same length (a new inode), or gone.
        let fresh = Stamp::of(&std::fs::symlink_metadata(&path).unwrap());
        std::fs::write(d.path().join("new"), b"third bytes").unwrap();
        std::fs::rename(d.path().join("new"), &path).unwrap();
        assert!(!fresh.holds_for(&path));
        std::fs::remove_file(&path).unwrap();
        assert!(!fresh.holds_for(&path));
    }

    /// A rewritten file whose planned rewrite holds `n` bytes of its own.
    fn rewritten(n: usize) -> Pruned {
        let mut p = Pruned::copied("lib/x.so", "host", 10);
        p.file.action = TreeAction::Rewritten;
        p.held = gfxkit_shrink::Output::of(vec![1u8; n]).detach(&[]);
        p
    }

    #[test]
    fn planned_rewrites_are_kept_for_writing_up_to_the_bound() {
        let held = AtomicU64::new(0);
        let bound = 1000;
        // A dry run keeps none.
        let mut dry = rewritten(10);
        hold_within(&mut dry, &held, bound, false);
        assert!(dry.held.is_none());
        assert_eq!(held.load(Ordering::Relaxed), 0);
        let (mut a, mut b, mut c) = (rewritten(400), rewritten(600), rewritten(1));
        hold_within(&mut a, &held, bound, true);
        hold_within(&mut b, &held, bound, true);
        assert!(a.held.is_some() && b.held.is_some());
        // Past the bound: made again when written.
        hold_within(&mut c, &held, bound, true);
        assert!(c.held.is_none());
        assert_eq!(held.load(Ordering::Relaxed), bound);
    }
}
