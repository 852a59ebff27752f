//! `prune` and `recompress` of packages (wheels, conda, deb, rpm, tarballs). A prune decides
//! each member as the prune of the tree the package's members make would ([`crate::tree`]:
//! the door's [`Format::prune`](crate::format::Format::prune) for each member read on its
//! own, then the directories named for a dropped processor, the empty check and the check of
//! the kernel databases over the whole package): a member dropped whole (a code object, a
//! `.kpack` archive or a kernel-database file of dropped targets only) is left out, with its
//! `RECORD` row or `paths.json` entry; a Tensile index cut to the kept rows is replaced; a
//! host binary or bundle is rewritten and verified by its format (`Format::rewrite`). A
//! recompress rewrites every member that holds device code. The package is written again
//! around them (wheels with their `RECORD`, conda packages with `info/paths.json` updated;
//! every other member copied as it was), to a temporary file that is read back and checked
//! before it is renamed into place. A package among the members (a wheel in a tarball) is
//! rewritten the same way as a package of its own and put in its place; so is a package
//! file in a tree ([`crate::tree`]).

use crate::format::{File, Formats};
use crate::input::{Input, TempSpill};
use crate::prune_file::{holds_no_bundles, Pruned, PACKAGE};
use crate::rewrite::RewriteOptions;
use crate::settle::Item;
use crate::write::{write_atomic_checked, WriteError};
use crate::{Error, ErrorKind};
use gfxkit_inventory::database::IndexRows;
use gfxkit_inventory::prune::{MemberOutcome, TreeAction, TreeFile};
use gfxkit_package::rewrite::{rewrite, Changed, Edits};
use gfxkit_shrink::{EntryFilter, Report, Transform};
use std::collections::{BTreeMap, HashMap};
use std::io::Seek;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// What a package rewrite changed.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// The members rewritten or left out (`package!member`), with their sizes, in package
    /// order; a package among them rewritten as one of its own is followed by its members
    /// changed (`package!inner.whl!member`).
    pub changed: Vec<Changed>,
    /// The shrink report of each member with bundles, by `package!member`: those rewritten
    /// and those the transform left as they were.
    pub reports: BTreeMap<String, Report>,
    /// For a prune: each member (and directory) it keeps or drops whole or cuts to the kept
    /// rows, as the prune of a tree reports it, in path order (host binaries rewritten are
    /// in `reports`).
    pub files: Vec<TreeFile>,
    /// For a prune of a package without archives inside it: the targets of the selection that
    /// match no device code of the package.
    pub unmatched: Option<Vec<String>>,
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
    let Staged {
        done,
        mut file,
        hashes,
        ..
    } = rewrite_staged(name, data, t, opts, 0)?;
    if let Some(path) = opts.target {
        write_atomic_checked(
            path,
            |w| {
                file.rewind()?;
                std::io::copy(&mut file, w)?;
                Ok::<(), std::io::Error>(())
            },
            |tmp| {
                // Nothing replaces anything when the package changed while it was rewritten.
                opts.source
                    .map_or(Ok(()), Input::unchanged)
                    .and_then(|()| Input::open(tmp))
                    .and_then(|back| check_written(&back, name, &done.changed, &hashes))
                    .map_err(std::io::Error::other)
            },
            opts.like,
            opts.durability,
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
    Ok(done)
}

/// A package rewritten into a temporary file, not yet written anywhere.
struct Staged {
    /// What changed.
    done: Rewritten,
    /// The rewritten package (the input's bytes when nothing changed are not copied there).
    file: std::fs::File,
    /// The SHA-256 of each rewritten member's new bytes, by `package!member`, for the
    /// read-back.
    hashes: BTreeMap<String, String>,
    /// For a prune: the device targets its members held, and whether it keeps any.
    targets: Vec<String>,
    /// For a prune: whether it keeps device code.
    keeps: bool,
}

/// How deep packages inside packages are rewritten (the package itself is depth 0); deeper
/// ones are copied as they are.
const NESTING: u32 = 4;

/// [`rewrite_package`] up to the write: the package `data` rewritten into a temporary file,
/// with the packages among its members rewritten as packages of their own (to [`NESTING`];
/// `depth` is this package's).
fn rewrite_staged(
    name: &str,
    data: &[u8],
    t: &Transform,
    opts: &RewriteOptions<'_>,
    depth: u32,
) -> Result<Staged, Error> {
    let RewriteOptions {
        target,
        allow_empty,
        formats,
        ..
    } = *opts;
    // A package that cannot be written again is refused before any member is read.
    gfxkit_package::rewrite::check_rewritable(name, data)
        .map_err(|e| Error::new(name, ErrorKind::Rewrite(e)))?;
    let planned = match t.selection {
        EntryFilter::All => None,
        _ => Some(plan(name, data, t, formats, allow_empty, depth)?),
    };
    let action = |path: &str| {
        planned
            .as_ref()
            .and_then(|p| p.by_path.get(path))
            .map(|p| p.file.action)
    };
    let members = Members {
        t,
        formats,
        depth,
        planned: planned.as_ref(),
        reports: Mutex::new(BTreeMap::new()),
        hashes: Mutex::new(BTreeMap::new()),
        inner: Mutex::new(HashMap::new()),
    };
    let f = |m: gfxkit_package::Member<'_>| members.rewrite(m);
    let walk = gfxkit_package::Options::default();
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
    // Planned: the members the plan rewrites. Otherwise (a recompress): every member the
    // formats would read as a file in a directory, as `gfxkit list` reads the package, and
    // the packages inside it.
    let choice = formats.member_choice();
    let by_plan = |path: &str, _: &[u8]| action(path) == Some(TreeAction::Rewritten);
    let by_formats = |path: &str, prefix: &[u8]| {
        let member = path.rsplit_once('!').map_or(path, |(_, m)| m);
        choice.wants(member, prefix) || gfxkit_package::detect(prefix).is_some()
    };
    let read: &(dyn Fn(&str, &[u8]) -> bool + Sync) = match planned {
        Some(_) => &by_plan,
        None => &by_formats,
    };
    let remove = |path: &str| action(path) == Some(TreeAction::Dropped);
    let edits = Edits {
        rewrite: &f,
        read,
        remove: &remove,
    };
    let outer = rewrite(name, data, &walk, &TempSpill, &edits, &mut staged)
        .map_err(|e| Error::new(name, ErrorKind::Rewrite(e)))?;
    let Members {
        reports,
        hashes,
        inner,
        ..
    } = members;
    let reports = reports.into_inner().unwrap_or_else(|e| e.into_inner());
    let hashes = hashes.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut inner = inner.into_inner().unwrap_or_else(|e| e.into_inner());
    if !allow_empty {
        gfxkit_shrink::refuse_empty(t, reports.values())
            .map_err(|e| Error::new(name, ErrorKind::Prune(e)))?;
    }
    // The members of a package inside this one follow it.
    let mut changed = Vec::with_capacity(outer.len());
    let mut inner_files = Vec::new();
    for c in outer {
        let within = inner.remove(&c.path);
        changed.push(c);
        if let Some((members, files)) = within {
            changed.extend(members);
            inner_files.push(files);
        }
    }
    let (targets, keeps) = planned
        .as_ref()
        .map(|p| (p.targets.clone(), p.keeps))
        .unwrap_or_default();
    let (files, unmatched) = match planned {
        Some(mut p) => {
            let unmatched = p.unmatched.take();
            let mut files = p.files();
            files.extend(inner_files.into_iter().flatten());
            files.sort_by(|a, b| a.path.split('!').cmp(b.path.split('!')));
            (files, unmatched)
        }
        None => (Vec::new(), None),
    };
    Ok(Staged {
        done: Rewritten {
            changed,
            reports,
            files,
            unmatched,
        },
        file: staged,
        hashes,
        targets,
        keeps,
    })
}

/// A package inside a package (`outer!inner.whl`) rewritten as a package of its own
/// ([`rewrite_staged`] at `depth`), checked as read back. `None` when it is not rewritten: a
/// package of a kind that cannot be written again, or nested deeper than [`NESTING`]; it is
/// then copied as it is.
fn rewrite_nested(
    path: &str,
    bytes: &[u8],
    t: &Transform,
    formats: &Formats,
    depth: u32,
) -> Result<Option<Nested>, Error> {
    if depth > NESTING || gfxkit_package::rewrite::check_rewritable(path, bytes).is_err() {
        return Ok(None);
    }
    let opts = RewriteOptions {
        target: None,
        like: None,
        durability: crate::write::Durability::Rename,
        // The package holding it answers for emptiness.
        allow_empty: true,
        drop_signature: false,
        digests: false,
        formats,
        source: None,
    };
    let Staged {
        done,
        mut file,
        hashes,
        targets,
        keeps,
    } = rewrite_staged(path, bytes, t, &opts, depth)?;
    let new = if done.changed.is_empty() {
        None
    } else {
        let new = read_staged(path, &mut file)?;
        check_written(&new, path, &done.changed, &hashes)?;
        Some((file, new.len() as u64))
    };
    Ok(Some(Nested {
        new,
        done,
        hashes,
        targets,
        keeps,
    }))
}

/// The whole of a staged rewrite (`path` names it in errors).
fn read_staged(path: &str, file: &mut std::fs::File) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    file.rewind()
        .and_then(|()| std::io::Read::read_to_end(file, &mut bytes))
        .map_err(|e| Error::new(path, ErrorKind::Read(e)))?;
    Ok(bytes)
}

/// What the prune of a tree makes of the package file at `path` (`rel` in the tree), `data`
/// its bytes: rewritten as a package of its own when anything inside it changes (planned
/// here, the result staged in a temporary file, [`Pruned::staged`]; [`prune_in_tree`] makes
/// it again when that was not kept), with the targets its members hold.
pub(crate) fn plan_in_tree(
    path: &Path,
    rel: &str,
    data: &[u8],
    t: &Transform,
    formats: &Formats,
) -> Result<Pruned, Error> {
    let name = path.display().to_string();
    let n = rewrite_nested(&name, data, t, formats, 0)?;
    let mut p = nested_plan(rel, data.len() as u64, n.as_ref());
    p.staged = n.and_then(|n| n.new);
    Ok(p)
}

/// Writes the package file at `src` (`data` its input), planned rewritten by
/// [`plan_in_tree`], pruned with `t` to `dst`: verified as read back, atomically.
pub(crate) fn prune_in_tree(
    src: &Path,
    data: &Input,
    dst: &Path,
    t: &Transform,
    formats: &Formats,
) -> Result<(), Error> {
    let opts = RewriteOptions {
        target: Some(dst),
        like: Some(src),
        durability: crate::write::Durability::Rename,
        // The tree answers for emptiness.
        allow_empty: true,
        drop_signature: false,
        digests: false,
        formats,
        source: Some(data),
    };
    rewrite_package(&src.display().to_string(), data, t, &opts).map(drop)
}

/// A package inside a package, rewritten ([`rewrite_nested`]).
struct Nested {
    /// Its new bytes, staged in a temporary file, and their length (`None`: unchanged).
    new: Option<(std::fs::File, u64)>,
    /// What changed inside it, named `outer!inner.whl!member`.
    done: Rewritten,
    /// The SHA-256 of each of its rewritten members.
    hashes: BTreeMap<String, String>,
    /// For a prune: the device targets its members held.
    targets: Vec<String>,
    /// For a prune: whether it keeps device code.
    keeps: bool,
}

/// What changed inside a package among the members: its members changed, and for a prune its
/// files ([`Rewritten::changed`], [`Rewritten::files`]).
type Within = (Vec<Changed>, Vec<TreeFile>);

/// The rewrite of each member a package rewrite reads, with what it records.
struct Members<'a> {
    t: &'a Transform,
    formats: &'a Formats,
    /// How deep the package rewritten lies in others (0: the input itself).
    depth: u32,
    planned: Option<&'a Planned>,
    /// The shrink report of each member with bundles, by `package!member`.
    reports: Mutex<BTreeMap<String, Report>>,
    /// The SHA-256 of each member's new bytes, by `package!member`, for the read-back.
    hashes: Mutex<BTreeMap<String, String>>,
    /// What changed inside each package among the members (its members changed, and for a
    /// prune its files), by `package!member`.
    inner: Mutex<HashMap<String, Within>>,
}

impl Members<'_> {
    /// The new bytes of member `m` (`None`: unchanged), or why the rewrite stops: a Tensile
    /// index's as cut when it was planned, anything else's as its format rewrites it,
    /// verified.
    fn rewrite(&self, m: gfxkit_package::Member<'_>) -> Result<Option<Vec<u8>>, String> {
        // Read as the file it is, without what lies beside it (a member's path finds nothing).
        let path = Path::new(&m.path);
        let file = File::alone(path, &m.bytes).with_limits(self.t.limits);
        // A package among the members whose members are its device code: rewritten as one of
        // its own when it was planned (a prune), or now (a recompress).
        let nested = match self.planned {
            Some(p) => p
                .nested
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(m.path)
                .map(Some),
            None => {
                let rel = m.path.rsplit_once('!').map_or(m.path, |(_, r)| r);
                match self.formats.is_plain_package(&file, rel) {
                    Ok(true) => Some(
                        rewrite_nested(m.path, &m.bytes, self.t, self.formats, self.depth + 1)
                            .map_err(|e| chain_text(&e))?,
                    ),
                    Ok(false) => None,
                    Err(e) => return Err(chain_text(&e)),
                }
            }
        };
        if let Some(n) = nested {
            return match n {
                Some(n) => self.take_nested(m.path, n),
                None => Ok(None),
            };
        }
        // A Tensile index cut to the kept rows when it was planned (and read back then).
        let cut = self
            .planned
            .and_then(|p| p.by_path.get(m.path))
            .and_then(|p| p.index_bytes.clone());
        if let Some(bytes) = cut {
            self.hashes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(
                    m.path.to_owned(),
                    gfxkit_package::record::sha256_hex(&bytes),
                );
            return Ok(Some(bytes));
        }
        let format = self.formats.of(&file);
        // The rewrite made when the member was planned, put back over its bytes read again;
        // made again when it was not kept.
        let planned = self
            .planned
            .and_then(|p| {
                p.held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(m.path)
            })
            .and_then(|(h, report)| Some((h.attach(&m.bytes)?, report)));
        let made = match planned {
            Some((output, report)) => Ok(gfxkit_shrink::Rewritten { output, report }),
            None => format.rewrite(&file, self.t),
        };
        let mut rewritten = match made {
            Ok(r) => r,
            // A file a prune keeps or drops whole: a package keeps every such member.
            Err(e) if matches!(e.kind(), ErrorKind::Whole(_)) => return Ok(None),
            Err(e) => match e.kind() {
                // A member with no bundles to rewrite (a host library without device code).
                ErrorKind::Prune(e) if holds_no_bundles(e, &m.bytes, &self.t.limits) => {
                    return Ok(None)
                }
                ErrorKind::Prune(e) => return Err(e.to_string()),
                _ => return Err(chain_text(&e)),
            },
        };
        rewritten
            .report
            .add_digests(&m.bytes, &self.t.limits)
            .map_err(|e| e.to_string())?;
        if !rewritten.report.changed() {
            // Kept for the package-wide answers (nothing emptied, targets unmatched).
            if rewritten.report.had_device_code() {
                self.reports
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
        self.hashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                m.path.to_owned(),
                gfxkit_package::record::sha256_hex(&bytes),
            );
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(m.path.to_owned(), rewritten.report);
        Ok(Some(bytes))
    }
    /// The new bytes of the package member at `path` rewritten as `n`, with what changed
    /// inside it kept for the package's answers (its members' reports and hashes, which the
    /// read-back checks through it).
    fn take_nested(&self, path: &str, n: Nested) -> Result<Option<Vec<u8>>, String> {
        let Some((mut file, _)) = n.new else {
            return Ok(None);
        };
        let new = read_staged(path, &mut file).map_err(|e| chain_text(&e))?;
        let Rewritten {
            changed,
            reports,
            files,
            ..
        } = n.done;
        self.hashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(n.hashes);
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(reports);
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_owned(), (changed, files));
        Ok(Some(new))
    }
}

/// An error and what caused it, as one line.
fn chain_text(e: &Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// A package's prune, planned as the prune of the tree its members make (each path in it the
/// member's path in the package: `lib/x.so`, `pkg-1.tar.zst!lib/x.so` in a `.conda`).
struct Planned {
    /// What becomes of each member and of each directory dropped whole, by `package!member`.
    by_path: HashMap<String, Pruned>,
    /// The keys of `by_path` in path order.
    order: Vec<String>,
    /// The targets of the selection that match no device code of the package (`None` when
    /// it holds archives whose members the prune does not read).
    unmatched: Option<Vec<String>>,
    /// The rewrites of host binaries and bundles made when they were planned, with their
    /// reports, by `package!member` ([`Pruned::held`]): taken when the member is written.
    held: Mutex<HashMap<String, (gfxkit_shrink::Detached, Report)>>,
    /// The packages among the members, rewritten as packages of their own when planned, by
    /// `package!member`: taken when the member is written.
    nested: Mutex<HashMap<String, Nested>>,
    /// The device targets the members held (sorted, without repeats).
    targets: Vec<String>,
    /// Whether the prune keeps device code.
    keeps: bool,
}

impl Planned {
    /// The members and directories kept or dropped whole or cut by the tree's rules, each
    /// named `package!member`.
    fn files(mut self) -> Vec<TreeFile> {
        self.order
            .iter()
            .filter_map(|path| self.by_path.remove(path).map(|p| (path, p)))
            .filter(|(_, p)| match p.file.action {
                TreeAction::Copied => false,
                TreeAction::Rewritten => p.index_bytes.is_some(),
                TreeAction::Kept | TreeAction::Dropped => true,
            })
            .map(|(path, p)| TreeFile {
                path: path.clone(),
                ..p.file
            })
            .collect()
    }
}

/// What one member is to the plan: its own decision and, for a Tensile index whose decision
/// did not read its rows, those rows.
type MemberPlan = (Pruned, Option<Result<IndexRows, String>>);

/// What the plan makes of one member: its [`MemberPlan`], and for a package among the members
/// its rewrite as a package of its own (`None` inside: copied as it is, unread).
type MemberDecision = (MemberPlan, Option<Option<Nested>>);

/// Plans the prune of the package `data` (named `name`) with `t`: every member the rewrite
/// can edit (a zip's or tarball's own members, a `.conda`'s `pkg-*.tar.zst` members) read and
/// decided by the door ([`Formats::of`], [`Format::prune`](crate::format::Format::prune),
/// each member on its own), then the whole package settled as a tree is
/// ([`crate::settle::settle`]).
fn plan(
    name: &str,
    data: &[u8],
    t: &Transform,
    formats: &Formats,
    allow_empty: bool,
    depth: u32,
) -> Result<Planned, Error> {
    let (members, nested) = decide_members(name, data, t, formats, depth)?;
    settle_members(name, members, nested, t, allow_empty)
}

/// One member of a package as [`decide_members`] read it: its path (`package!member`), size,
/// whether it lies in a tarball member (a `.conda`'s `pkg-*.tar.zst`), and its decision.
type DecidedMember = (String, u64, bool, MemberDecision);

/// Every member of the package `data` (named `name`) that its rewrite can edit, read and
/// decided by the door, each on its own; with whether anything inside was left unread (a
/// package among the members copied as it is, or lying too deep).
fn decide_members(
    name: &str,
    data: &[u8],
    t: &Transform,
    formats: &Formats,
    depth: u32,
) -> Result<(Vec<DecidedMember>, bool), Error> {
    let top = format!("{name}!");
    // Where a member lies: in the package itself, or in a tarball member of it (a `.conda`'s
    // `pkg-*.tar.zst`, which the rewrite edits when the package is a `.conda`).
    let placed = |path: &str, member: &str| -> Option<bool> {
        let rest = path.strip_prefix(&top)?;
        if rest == member {
            return Some(false);
        }
        let outer = rest.strip_suffix(member)?.strip_suffix('!')?;
        (outer.starts_with("pkg-") && outer.ends_with(".tar.zst") && !outer.contains('!'))
            .then_some(true)
    };
    let decide = |m: gfxkit_package::Member<'_>| -> Option<(bool, Result<MemberDecision, Error>)> {
        let inner = placed(m.path, m.name)?;
        let rel = &m.path[top.len()..];
        let path = Path::new(m.path);
        if m.bytes.is_empty() {
            return Some((inner, Ok(((Pruned::copied(rel, "file", 0), None), None))));
        }
        let file = File::alone(path, &m.bytes).with_limits(t.limits);
        let plain = match formats.is_plain_package(&file, rel) {
            Ok(plain) => plain,
            Err(e) => return Some((inner, Err(e))),
        };
        if plain {
            let nested = rewrite_nested(m.path, &m.bytes, t, formats, depth + 1).map(|n| {
                (
                    (nested_plan(rel, m.bytes.len() as u64, n.as_ref()), None),
                    Some(n),
                )
            });
            return Some((inner, nested));
        }
        let decided = formats.of(&file).prune(&file, rel, t).map(|p| {
            let is_index = gfxkit_kernel_db::sniff::tensile_name(rel)
                .is_some_and(|(k, _)| k == gfxkit_inventory::database::DbKind::TensileIndex);
            let rows = (p.index_rows.is_none() && is_index)
                .then(|| crate::settle::index_rows(path, rel, &m.bytes));
            ((p, rows), None)
        });
        Some((inner, decided))
    };
    // Packages among the members are read whole and rewritten as packages of their own,
    // except a `.conda`'s own tarballs, whose members are this package's.
    let conda_own = |name: &str| {
        (name.starts_with("pkg-") || name.starts_with("info-"))
            && name.ends_with(".tar.zst")
            && !name.contains('/')
    };
    let opts = gfxkit_package::Options {
        all_members: true,
        whole_archives: Some(gfxkit_package::MemberChoice::new(
            move |name: &str, prefix: &[u8]| {
                use gfxkit_package::Format;
                // What the rewrite can write again (a `.deb` or an RPM cannot: walked).
                let rewritable = matches!(
                    gfxkit_package::detect(prefix),
                    Some(Format::Zip | Format::Tar | Format::Compressed(_))
                );
                rewritable && !conda_own(name)
            },
        )),
        ..Default::default()
    };
    let walked = gfxkit_package::walk(name, data, &opts, &TempSpill, &decide)
        .map_err(|e| Error::new(name, ErrorKind::Rewrite(e)))?;
    let mut members = Vec::new();
    let mut nested = false;
    for v in walked {
        let v = match v {
            Ok(v) => v,
            // Inside an archive that is a member (not a `.conda`'s tarball): the rewrite copies
            // that member whole, as it is, so its damage or depth is not the prune's.
            Err(e)
                if e.path.strip_prefix(&top).is_some_and(|rest| {
                    rest.split_once('!').is_some_and(|(outer, _)| {
                        !(outer.starts_with("pkg-") && outer.ends_with(".tar.zst"))
                    })
                }) =>
            {
                nested = true;
                continue;
            }
            Err(e) => return Err(Error::new(name, ErrorKind::Rewrite(e))),
        };
        match v.value {
            Some((inner, decided)) => members.push((v.path, v.size, inner, decided?)),
            None => nested = true,
        }
    }
    Ok((members, nested))
}

/// The plan of the package named `name` from its decided `members`: the members whose place
/// the rewrite edits kept (a tarball's only inside a `.conda`), then settled together as a
/// tree is ([`crate::settle::settle`]). `nested`: something inside was left unread, so the
/// targets no member matched are not known.
fn settle_members(
    name: &str,
    mut members: Vec<DecidedMember>,
    mut nested: bool,
    t: &Transform,
    allow_empty: bool,
) -> Result<Planned, Error> {
    let top = format!("{name}!");
    // A tarball's members are edited only inside a `.conda`.
    let conda = members
        .iter()
        .any(|(p, ..)| *p == format!("{top}metadata.json"));
    let read = members.len();
    members.retain(|(_, _, inner, _)| !inner || conda);
    nested |= members.len() != read;

    let mut items: Vec<(String, Item)> = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    let mut decided = HashMap::new();
    let mut rows = HashMap::new();
    let (mut held, held_bytes) = (HashMap::new(), AtomicU64::new(0));
    let mut nested_done = HashMap::new();
    for (full, size, _, ((mut p, r), n)) in members {
        match n {
            Some(Some(n)) => {
                // What it could not read (a package nested too deep), this one did not either.
                nested |= n.done.unmatched.is_none();
                nested_done.insert(full.clone(), n);
            }
            Some(None) => nested = true,
            None => {}
        }
        crate::settle::hold_within(&mut p, &held_bytes, crate::settle::HELD_FOR_WRITING, true);
        if let (Some(h), Some(report)) = (p.held.take(), p.file.report.clone()) {
            held.insert(full.clone(), (h, report));
        }
        let path = full[top.len()..].to_owned();
        let mut at = path.as_str();
        while let Some((dir, _)) = at.rsplit_once('/') {
            dirs.insert(dir.to_owned());
            at = dir;
        }
        if let Some(r) = r {
            rows.insert(path.clone(), r);
        }
        items.push((
            path.clone(),
            Item::File {
                mode: 0o644,
                len: size,
                stamp: None,
            },
        ));
        decided.insert(path, p);
    }
    items.extend(dirs.into_iter().map(|d| (d, Item::Dir { mode: 0o755 })));
    items.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    let mut plans: Vec<Option<Pruned>> = items.iter().map(|(p, _)| decided.remove(p)).collect();
    let unplanned = |rel: &str| -> Result<Result<IndexRows, String>, Error> {
        Ok(rows
            .get(rel)
            .cloned()
            .unwrap_or_else(|| Err("the index was not read".to_owned())))
    };
    let unmatched = crate::settle::settle(
        Path::new(name),
        &items,
        &mut plans,
        t,
        allow_empty,
        &unplanned,
    )?;
    let mut targets: Vec<String> = plans
        .iter()
        .flatten()
        .flat_map(|p| p.file.targets.iter().cloned())
        .collect();
    targets.sort();
    targets.dedup();
    let keeps = plans.iter().flatten().any(|p| p.keeps);
    let order: Vec<String> = items
        .into_iter()
        .map(|(p, _)| format!("{top}{p}"))
        .collect();
    let by_path = order
        .iter()
        .zip(plans)
        .filter_map(|(p, plan)| plan.map(|plan| (p.clone(), plan)))
        .collect();
    Ok(Planned {
        by_path,
        order,
        unmatched: (!nested).then_some(unmatched),
        held: Mutex::new(held),
        nested: Mutex::new(nested_done),
        targets,
        keeps,
    })
}

/// The plan of a package of `size` bytes among the members, at `rel`, rewritten as `n`
/// (`None`: copied as it is): rewritten when anything inside it changes, with the targets its
/// members held.
fn nested_plan(rel: &str, size: u64, n: Option<&Nested>) -> Pruned {
    let mut p = Pruned::copied(rel, PACKAGE, size);
    let Some(n) = n else {
        p.file.note = Some(
            "a package not rewritten (a .deb, an RPM, a container image, or one nested more \
             than four deep): copied as it is"
                .to_owned(),
        );
        return p;
    };
    p.file.targets = n.targets.clone();
    p.keeps = n.keeps;
    if let Some((_, len)) = &n.new {
        let removed = n.done.changed.iter().filter(|c| c.removed).count();
        p.file.action = TreeAction::Rewritten;
        p.file.size_after = *len;
        p.file.note = Some(format!(
            "a package: {} members rewritten, {removed} left out",
            n.done.changed.len() - removed
        ));
    }
    p
}

/// Reads the written package back: every rewritten member must be there with the bytes
/// produced, every member left out must be gone, and a wheel's `RECORD` must give each member
/// its hash and size.
fn check_written(
    back: &[u8],
    name: &str,
    changed: &[Changed],
    hashes: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let unreadable = |e| Error::new(name, ErrorKind::ReadBack(e));
    let every = gfxkit_package::Options {
        all_members: true,
        ..Default::default()
    };
    let seen = gfxkit_package::walk(name, back, &every, &TempSpill, &|m| {
        gfxkit_package::record::sha256_hex(&m.bytes)
    })
    .map_err(unreadable)?;
    let mut got = BTreeMap::new();
    for r in seen {
        match r {
            Ok(v) => {
                got.insert(v.path, v.value);
            }
            // An archive nested deeper than a walk reads: nothing in it was rewritten (the
            // rewrite goes no deeper), it was copied as it was.
            Err(e) if matches!(e.kind, gfxkit_package::ErrorKind::TooDeep { .. }) => {}
            Err(e) => return Err(unreadable(e)),
        }
    }
    for c in changed {
        let want = hashes.get(&c.path);
        if (c.removed && got.contains_key(&c.path)) || (want.is_some() && got.get(&c.path) != want)
        {
            return Err(Error::new(
                PathBuf::from(&c.path),
                ErrorKind::ReadBackDiffers,
            ));
        }
    }
    if gfxkit_package::detect(back.get(..4).unwrap_or(back)) == Some(gfxkit_package::Format::Zip) {
        gfxkit_package::rewrite::check_record(name, back)
            .map_err(|e| Error::new(name, ErrorKind::Record(e)))?;
    }
    Ok(())
}
