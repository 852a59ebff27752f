//! What a prune decides over a whole tree of files, once each file has its own decision
//! ([`crate::format::Format::prune`]): shared by the prune of a directory ([`crate::tree`]) and
//! of a package, whose members make a tree ([`crate::package`]).
//!
//! - a directory named for a processor (`hsa/gfx950/`, `library/gfx942/`) that the selection
//!   drops, holding device code of dropped targets only, is dropped whole with its other files
//!   (aiter's CSV maps);
//! - a symbolic link that leads (through other links, inside the tree) to a path the prune
//!   drops is dropped with it;
//! - a prune that would leave no device code is refused, unless allowed;
//! - every Tensile directory the prune changes must still serve each kept processor.

use crate::prune_file::{index_bytes, keeps_target, tree_file, Pruned};
use crate::{Error, ErrorKind};
use gfxkit_inventory::database::{self as db, DbKind};
use gfxkit_inventory::prune::{TreeAction, TreeFile};
use gfxkit_kernel_db::tensile::Index;
use gfxkit_shrink::{EntryFilter, Pattern, Transform};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
    pub(crate) fn of(m: &std::fs::Metadata) -> Stamp {
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
    pub(crate) fn holds_for(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| Stamp::of(&m) == *self)
    }
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
    sel: &EntryFilter,
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
                map_files: Vec::new(),
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

/// The most bytes of rewrites made while a tree is planned ([`Pruned::held`]: mostly the
/// bundles compressed again) kept until the files are written, in all. Rewrites past it are
/// made a second time when written, so that a tree of many large compressed libraries is never
/// held in memory whole.
pub(crate) const HELD_FOR_WRITING: u64 = 1 << 30;

/// What a package staged in a temporary file counts for against [`HELD_FOR_WRITING`] at the
/// least: its file stays open until it is written, so that small ones count enough to keep
/// the open files few (256 in the bound).
const STAGED_AT_LEAST: u64 = 4 << 20;

/// Keeps the rewrite `p` made for writing (`write`: nothing is kept for a dry run) while the
/// bytes kept in all (`held`) stay within `bound` ([`HELD_FOR_WRITING`]); else lets it go: a
/// host binary's rewrite held in memory ([`Pruned::held`]) or a package staged on disk
/// ([`Pruned::staged`], counted as [`STAGED_AT_LEAST`] bytes at the least).
pub(crate) fn hold_within(p: &mut Pruned, held: &AtomicU64, bound: u64, write: bool) {
    let n = match (&p.held, &p.staged) {
        (Some(h), _) => h.owned_len(),
        (None, Some((_, len))) => (*len).max(STAGED_AT_LEAST),
        (None, None) => return,
    };
    let before = held.fetch_add(n, Ordering::Relaxed);
    if !write || before + n > bound {
        held.fetch_sub(n, Ordering::Relaxed);
        p.held = None;
        p.staged = None;
    }
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
fn drop_processor_dirs(items: &[(String, Item)], plans: &mut [Option<Pruned>], sel: &EntryFilter) {
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
                staged: None,
            });
            i = end;
        } else {
            i += 1;
        }
    }
}

/// The targets of the selection no device code of the tree matches.
fn unmatched(sel: &EntryFilter, plans: &[Option<Pruned>]) -> Vec<String> {
    let ps: &[Pattern] = match sel {
        EntryFilter::Keep(ps) | EntryFilter::Drop(ps) => ps,
        EntryFilter::All => return Vec::new(),
    };
    let targets: Vec<&str> = plans
        .iter()
        .flatten()
        .flat_map(|p| p.file.targets.iter().map(String::as_str))
        .collect();
    ps.iter()
        .filter(|p| {
            let one = EntryFilter::Keep(vec![(*p).clone()]);
            let hit = |t: &&str| match sel {
                EntryFilter::Keep(_) => keeps_target(&one, t),
                _ => !keeps_target(&EntryFilter::Drop(vec![(*p).clone()]), t),
            };
            !targets.iter().any(hit)
        })
        .map(|p| p.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Input;

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
    fn staged_packages_count_at_least_their_floor_against_the_bound() {
        let staged = |len: u64| {
            let mut p = Pruned::copied("w/x.whl", crate::prune_file::PACKAGE, 10);
            p.file.action = TreeAction::Rewritten;
            p.staged = Some((tempfile::tempfile().unwrap(), len));
            p
        };
        let held = AtomicU64::new(0);
        let bound = 2 * STAGED_AT_LEAST + 10;
        // A dry run keeps none.
        let mut dry = staged(1);
        hold_within(&mut dry, &held, bound, false);
        assert!(dry.staged.is_none());
        assert_eq!(held.load(Ordering::Relaxed), 0);
        // Small packages count as STAGED_AT_LEAST each: two fit, the third does not.
        let (mut a, mut b, mut c) = (staged(1), staged(5), staged(1));
        for p in [&mut a, &mut b, &mut c] {
            hold_within(p, &held, bound, true);
        }
        assert!(a.staged.is_some() && b.staged.is_some() && c.staged.is_none());
        assert_eq!(held.load(Ordering::Relaxed), 2 * STAGED_AT_LEAST);
        // A large one counts its length.
        let held = AtomicU64::new(0);
        let mut big = staged(STAGED_AT_LEAST * 2);
        hold_within(&mut big, &held, bound, true);
        assert_eq!(held.load(Ordering::Relaxed), STAGED_AT_LEAST * 2);
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
