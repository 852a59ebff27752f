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
use crate::prune_file::{tree_file, Pruned, PACKAGE};
use crate::settle::{hold_within, index_rows, settle, Item, Stamp, HELD_FOR_WRITING};
use crate::write::{copy_or_write, Durability};
use crate::{Error, ErrorKind};
use gfxkit_inventory::database as db;
use gfxkit_inventory::prune::{TreeAction, TreeFile};
use gfxkit_shrink::Transform;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

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
                    staged: None,
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
                    staged: None,
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
    if formats.is_plain_package(&file, rel)? {
        return crate::package::plan_in_tree(path, rel, &input, t, formats);
    }
    formats.of(&file).prune(&file, rel, t)
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
                (TreeAction::Rewritten, None) if plan.file.kind == PACKAGE => {
                    // The package staged when it was planned, when the file is still the one
                    // planned; rewritten again otherwise.
                    match plan
                        .staged
                        .take()
                        .filter(|_| stamp.is_some_and(|s| s.holds_for(&src)))
                    {
                        Some((staged, len)) => write_staged(staged, len, &dst)?,
                        None => {
                            let mapped = Input::open(&src)?;
                            crate::package::prune_in_tree(&src, &mapped, &dst, t, formats)?;
                        }
                    }
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
    use rayon::prelude::*;
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
        // a hash of the same length), the rewritten files hashed on every core.
        let changes: Vec<(String, Option<(String, u64)>)> = listed
            .par_iter()
            .filter_map(|path| {
                let at_path = in_tree(path);
                if gone.contains(at_path.as_str()) {
                    return Some(Ok((path.clone(), None)));
                }
                let &size = rewritten.get(at_path.as_str())?;
                let now = match at {
                    Records::Planned(_) => Ok((hash(&[]), size)),
                    Records::Written(root) => Input::open(&root.join(&at_path))
                        .map(|bytes| (hash(&bytes), bytes.len() as u64)),
                };
                Some(now.map(|now| (path.clone(), Some(now))))
            })
            .collect::<Result<_, Error>>()?;
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

/// Writes the package staged in `staged` (`len` bytes, checked when it was made) to `dst`,
/// inside the kernel where it can.
fn write_staged(mut staged: std::fs::File, len: u64, dst: &Path) -> Result<(), Error> {
    use std::io::Seek;
    let write = |e| Error::new(dst, ErrorKind::Write(e));
    staged.rewind().map_err(write)?;
    let mut out = std::fs::File::create(dst).map_err(write)?;
    let copied = std::io::copy(&mut staged, &mut out).map_err(write)?;
    if copied != len {
        return Err(write(std::io::Error::other(format!(
            "the staged package holds {copied} bytes, {len} were written to it"
        ))));
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
