//! `extract`, shared by the CLI (which writes each code object to a file) and Python (which
//! hands over its bytes): the code objects a request selects in one file, planned from
//! headers alone by the file's format ([`crate::format::Format::extract`], through
//! [`Plan::database`], [`Plan::archive`], [`Plan::split`] or [`Plan::bundles`]: nothing is produced when a
//! wanted target matches nothing), then produced ([`Plan::produce`]). A file's code objects come from where the runtime would
//! load them: the bundles of a host binary or bundle file, the archives a binary split by
//! kpack names (and a `.kpack` file's kernels), a kernel database's records.

use crate::input::{FileRange, Input};
use crate::kpack::KpackExtract;
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_bundle::EntryId;
use gfxkit_host::{Form, Unit};
use gfxkit_host::{ProblemKind, Severity};
use gfxkit_inventory::database::Opened;
use gfxkit_inventory::extract::{pick, sanitize, selects, unwritable};
use gfxkit_inventory::locate;
use gfxkit_inventory::Inventory;
use std::path::{Path, PathBuf};

/// Why an extraction failed.
#[derive(Debug)]
pub enum ExtractError {
    /// A file (an input, a kpack archive) cannot be read, or an output cannot be written.
    Io(crate::Error),
    /// A file named to extract from holds no device code (no offload bundle, no kpack
    /// wrapper, no database record).
    NoDeviceCode(PathBuf),
    /// The device code is damaged or cannot be extracted: the message names the file (and the
    /// unit and entry), `offset` is the byte offset of the damage when one is known, `cause`
    /// the reader's error behind it.
    Format {
        /// What went wrong, or where, naming the file.
        message: String,
        /// The byte offset of the damage.
        offset: Option<u64>,
        /// The error found there.
        cause: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::Io(e) => e.fmt(f),
            ExtractError::NoDeviceCode(p) => {
                write!(f, "{}: no offload bundle in this file", p.display())
            }
            ExtractError::Format { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for ExtractError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // The file error itself, its cause after it.
            ExtractError::Io(e) => e.source(),
            ExtractError::NoDeviceCode(_) => None,
            ExtractError::Format { cause, .. } => cause
                .as_deref()
                .map(|c| c as &(dyn std::error::Error + 'static)),
        }
    }
}

impl From<crate::Error> for ExtractError {
    fn from(e: crate::Error) -> Self {
        ExtractError::Io(e)
    }
}

fn format_error(message: String, offset: Option<u64>) -> ExtractError {
    ExtractError::Format {
        message,
        offset,
        cause: None,
    }
}

/// `message` (where), caused by `cause` (what).
fn caused(
    message: String,
    offset: Option<u64>,
    cause: impl std::error::Error + Send + Sync + 'static,
) -> ExtractError {
    ExtractError::Format {
        message,
        offset,
        cause: Some(Box::new(cause)),
    }
}

/// The targets an extraction wants (none: every entry but empty host entries), and which of
/// them selected an entry so far.
#[derive(Debug, Clone)]
pub struct Wanted {
    ids: Vec<EntryId>,
    matched: Vec<bool>,
}

impl Wanted {
    /// Wants the entries these IDs select ([`gfxkit_inventory::extract::selects`]).
    pub fn new(ids: Vec<EntryId>) -> Wanted {
        let matched = vec![false; ids.len()];
        Wanted { ids, matched }
    }

    /// Whether an entry with this ID is wanted (and which wanted IDs it matches).
    fn select(&mut self, id: &str) -> bool {
        let Ok(id) = EntryId::parse(id) else {
            return false;
        };
        if self.ids.is_empty() {
            return true;
        }
        let mut any = false;
        for (w, m) in self.ids.iter().zip(&mut self.matched) {
            if selects(w, &id) {
                *m = true;
                any = true;
            }
        }
        any
    }

    /// The index of the first wanted ID that selected nothing in the files planned so far.
    pub fn unmatched(&self) -> Option<usize> {
        self.matched.iter().position(|m| !m)
    }
}

/// Where a code object comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A bundle of the file (its unit index is the bundle index).
    Bundle,
    /// A kpack archive (the unit is the wrapper's index, or the key's position in a `.kpack`
    /// file).
    Kpack,
    /// A kernel-database record (the entry is its index).
    Database,
}

/// One code object a plan produces.
#[derive(Debug, Clone)]
pub struct Item {
    /// Where it comes from.
    pub origin: Origin,
    /// The bundle (unit) index; 0 for a database record.
    pub unit: usize,
    /// The archive member holding the unit, for a member of an `ar` archive.
    pub member: Option<String>,
    /// The section holding the unit; for a kpack code object, the archive's path.
    pub section: Option<String>,
    /// For a kpack code object, its key in the archive's table of contents.
    pub key: Option<String>,
    /// The entry's index in its unit (a database's record index).
    pub entry: usize,
    /// The entry ID as stored.
    pub id: String,
    /// Its size in bytes.
    pub size: u64,
    /// Offset of the payload in its (uncompressed) unit.
    pub offset: u64,
    /// The file-name extension of the payload (`co`, `bc`, `spv`).
    pub ext: &'static str,
}

impl Item {
    /// The file name `gfxkit extract` writes it to, after the input's `stem`:
    /// `<stem>.<bundle index>.<entry id>.<ext>` (a database record's index in place of the
    /// bundle index), the entry ID with [`sanitize`]'s rule.
    pub fn file_name(&self, stem: &str) -> String {
        let index = match self.origin {
            Origin::Database => self.entry,
            Origin::Bundle | Origin::Kpack => self.unit,
        };
        format!("{stem}.{index}.{}.{}", sanitize(&self.id), self.ext)
    }
}

/// An entry of a bundle to produce.
struct Pick {
    entry: usize,
    id: String,
    size: u64,
    offset: u64,
    end: u64,
}

enum Source<'d> {
    Database(Opened, Vec<usize>),
    /// The picks, and the archive's bytes when the file is itself the `.kpack` archive.
    Kpack(KpackExtract, Option<&'d [u8]>),
    Bundles(Inventory<'d>, Vec<Vec<Pick>>),
}

/// What one file gives an extraction, planned from its headers.
pub struct Plan<'d> {
    name: String,
    source: Source<'d>,
    /// Problems of the file that do not stop the extraction (a member that does not read is
    /// skipped): each says what is lost; an error among them makes the run exit 2.
    pub problems: Vec<gfxkit_host::Problem>,
}

/// What producing a plan gave.
#[derive(Debug)]
pub struct Produced<T> {
    /// Each code object with what the sink returned for it, and for one of a compressed
    /// bundle whether the bundle's hash was checked (false when only the part up to the last
    /// wanted entry was decoded).
    pub items: Vec<(Item, T, Option<bool>)>,
    /// Entries refused (not handed to the sink), each with why, naming the file and unit;
    /// those the plan's problems already named are counted, not repeated.
    pub refused: Vec<String>,
    /// How many entries were refused.
    pub refused_count: usize,
    /// The compressed bundles decoded only in part ([`Unit::describe`]).
    pub unchecked: Vec<String>,
}

/// How a unit is named in messages: `bundle 0 at offset 0x0` for standalone bundles, with
/// member and section for host binaries.
pub fn describe(b: &Unit<'_>) -> String {
    if b.form == Form::Bundle && b.member.is_none() && b.section.is_none() {
        format!("bundle {} at offset {:#x}", b.index, b.offset)
    } else {
        b.describe()
    }
}

impl<'d> Plan<'d> {
    fn new(path: &Path, source: Source<'d>) -> Plan<'d> {
        Plan {
            name: path.display().to_string(),
            source,
            problems: Vec::new(),
        }
    }

    /// Plans the extraction of kernel database `path` (`data` its bytes, `kind` what
    /// [`crate::database::kind`] found): every `.kdb` record or `.aks2` kernel `wanted`
    /// selects is a code object. A Tensile index holds none: `None`, or an error when it was
    /// named `explicit`ly.
    pub fn database(
        path: &Path,
        data: &'d [u8],
        kind: gfxkit_inventory::database::DbKind,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        let name = path.display().to_string();
        match gfxkit_inventory::database::open(&name, data, kind) {
            Some(opened) => {
                let o = opened.map_err(|e| caused(format!("cannot read {name}"), e.offset, e))?;
                let picks = (0..o.entries.len())
                    .filter(|&i| o.entries[i].size > 0 && wanted.select(&o.entries[i].id))
                    .collect();
                Ok(Some(Plan::new(path, Source::Database(o, picks))))
            }
            None if explicit => Err(format_error(
                format!(
                    "{name}: a Tensile index names kernels but holds no code object (extract \
                     the code-object files beside it)"
                ),
                None,
            )),
            None => Ok(None),
        }
    }

    /// Plans the extraction of the code objects the `.kpack` archive `data` (the file `path`)
    /// holds that `wanted` selects; an archive that does not parse is the error, with its
    /// offset.
    pub fn archive(
        path: &Path,
        data: &'d [u8],
        wanted: &mut Wanted,
    ) -> Result<Plan<'d>, ExtractError> {
        let x = crate::kpack::archive_picks(path, data, &mut |id| wanted.select(id))?;
        Ok(Plan::new(path, Source::Kpack(x, Some(data))))
    }

    /// Plans the extraction of the code objects of a binary split by kpack (HIPK wrappers,
    /// its archives found from `path`) that `wanted` selects; `None` for a binary that is not
    /// split. The binary's bundles are read under `limits`.
    pub fn split(
        path: &Path,
        data: &'d [u8],
        wanted: &mut Wanted,
        limits: &gfxkit_bundle::limits::Limits,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        let x = crate::kpack::split_picks(path, data, &mut |id| wanted.select(id), limits)?;
        Ok(x.map(|x| Plan::new(path, Source::Kpack(x, None))))
    }

    /// Plans the extraction of the entries `wanted` selects in the bundles `found` holds
    /// (those of file `path`), read from their headers alone. A file whose damage leaves
    /// nothing readable is that damage's error; `None` for a file without device code that
    /// was not named `explicit`ly, an error for one that was.
    pub fn bundles(
        path: &Path,
        found: Inventory<'d>,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        let name = path.display().to_string();
        if let Some(e) = &found.error {
            return Err(caused(format!("cannot read {name}"), e.offset(), e.clone()));
        }
        // Nothing readable because of damage: the damage is the error, not a missing bundle.
        if found.units.is_empty() {
            if let Some(p) = found
                .problems
                .iter()
                .find(|p| p.severity == Severity::Error)
            {
                return Err(format_error(
                    format!("{name}: {p}"),
                    Some(p.location.offset),
                ));
            }
            if explicit {
                return Err(ExtractError::NoDeviceCode(path.to_path_buf()));
            }
            return Ok(None);
        }
        let mut picks = Vec::with_capacity(found.units.len());
        for b in &found.units {
            let (entries, _, _) = locate::read_header(b, false)
                .map_err(|e| caused(format!("{name}: {}", describe(b)), e.offset(), e))?;
            let picked = pick(&entries, &wanted.ids, &mut wanted.matched);
            picks.push(
                picked
                    .into_iter()
                    .map(|i| Pick {
                        entry: i,
                        id: entries[i].id.clone(),
                        size: entries[i].size,
                        offset: entries[i].offset,
                        end: entries[i].offset.saturating_add(entries[i].size),
                    })
                    .collect(),
            );
        }
        let problems = found.problems.clone();
        Ok(Some(Plan {
            problems,
            ..Plan::new(path, Source::Bundles(found, picks))
        }))
    }
}

/// What a sink gets: the item, its bytes, and where the input file holds them unchanged
/// (when it does: a sink may copy them inside the kernel).
pub type Sink<'s, T> =
    dyn Fn(&Item, &[u8], Option<FileRange<'_>>) -> Result<T, crate::Error> + Sync + 's;

impl Plan<'_> {
    /// How many code objects the plan produces.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Database(_, p) => p.len(),
            Source::Kpack(x, _) => x.picks.len(),
            Source::Bundles(_, p) => p.iter().map(Vec::len).sum(),
        }
    }

    /// Whether the plan produces nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands each planned code object to `sink` (in parallel within a bundle or archive), in
    /// plan order: decompressed with the hash checked by `hash` (a compressed bundle decoded
    /// only up to its last wanted entry when that is shorter: its hash is then not checked,
    /// [`Produced::unchecked`]), a kpack kernel decoded from its archive, a database record
    /// decoded and checked. Every bundle entry is checked as far as it can be before it is
    /// handed on ([`unwritable`]: refused ones are [`Produced::refused`]). `input` gives the
    /// file ranges of payloads stored as they are.
    pub fn produce<T: Send>(
        &self,
        input: Option<&Input>,
        hash: HashCheck,
        sink: &Sink<'_, T>,
    ) -> Result<Produced<T>, ExtractError> {
        let mut out = Produced {
            items: Vec::new(),
            refused: Vec::new(),
            refused_count: 0,
            unchecked: Vec::new(),
        };
        let name = &self.name;
        match &self.source {
            Source::Database(o, picks) => {
                for &i in picks {
                    let e = &o.entries[i];
                    let bytes = o
                        .code_object(i)
                        .map_err(|err| caused(format!("{name}: {}", e.place), err.offset, err))?;
                    let item = Item {
                        origin: Origin::Database,
                        unit: 0,
                        member: None,
                        section: None,
                        key: None,
                        entry: i,
                        id: e.id.clone(),
                        size: bytes.len() as u64,
                        offset: 0,
                        ext: "co",
                    };
                    let v = sink(&item, &bytes, None)?;
                    out.items.push((item, v, None));
                }
            }
            Source::Kpack(x, own) => self.produce_kpack(x, *own, sink, &mut out)?,
            Source::Bundles(found, picks) => {
                for (b, picks) in found.units.iter().zip(picks) {
                    if !picks.is_empty() {
                        self.produce_bundle(found, b, picks, input, hash, sink, &mut out)?;
                    }
                }
            }
        }
        Ok(out)
    }

    fn produce_kpack<T: Send>(
        &self,
        x: &KpackExtract,
        own: Option<&[u8]>,
        sink: &Sink<'_, T>,
        out: &mut Produced<T>,
    ) -> Result<(), ExtractError> {
        use rayon::prelude::*;
        let mut by_archive: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (i, p) in x.picks.iter().enumerate() {
            by_archive.entry(p.archive).or_default().push(i);
        }
        let mut results: Vec<Option<(Item, T)>> = (0..x.picks.len()).map(|_| None).collect();
        for (ai, ps) in by_archive {
            let path = &x.archives[ai];
            // A `.kpack` file's own bytes (which may be in memory only), else the archive
            // on disk.
            let opened;
            let data = match own {
                Some(d) => d,
                None => {
                    opened = Input::open(path)?;
                    &opened[..]
                }
            };
            let a = gfxkit_kpack::Archive::parse(data)
                .map_err(|e| crate::Error::new(path, crate::ErrorKind::Kpack(e)))?;
            let made: Vec<Result<(usize, Item, T), ExtractError>> = ps
                .par_iter()
                .map(|&i| {
                    let p = &x.picks[i];
                    let k = a.kernel(&p.key, &p.arch).ok_or_else(|| {
                        format_error(
                            format!("{}: {} {} vanished", path.display(), p.key, p.arch),
                            None,
                        )
                    })?;
                    let bytes = a.code_object(k).map_err(|e| {
                        caused(format!("{} is damaged", path.display()), Some(e.offset), e)
                    })?;
                    let item = Item {
                        origin: Origin::Kpack,
                        unit: p.bundle,
                        member: None,
                        section: Some(path.display().to_string()),
                        key: Some(p.key.clone()),
                        entry: p.entry,
                        id: p.id.clone(),
                        size: p.size,
                        offset: 0,
                        ext: "co",
                    };
                    let v = sink(&item, &bytes, None)?;
                    Ok((i, item, v))
                })
                .collect();
            // Every result, then the first error in pick order: the same answer each run.
            for r in made {
                let (i, item, v) = r?;
                results[i] = Some((item, v));
            }
        }
        out.items
            .extend(results.into_iter().flatten().map(|(i, v)| (i, v, None)));
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn produce_bundle<T: Send>(
        &self,
        found: &Inventory<'_>,
        b: &Unit<'_>,
        picks: &[Pick],
        input: Option<&Input>,
        hash: HashCheck,
        sink: &Sink<'_, T>,
        out: &mut Produced<T>,
    ) -> Result<(), ExtractError> {
        let at = |e: &gfxkit_inventory::Error| {
            caused(
                format!("{}: {}", self.name, describe(b)),
                e.offset(),
                e.clone(),
            )
        };
        // Decoded only up to the end of the last wanted entry.
        let upto = picks.iter().map(|p| p.end).max().unwrap_or(0);
        let (made, hash_checked) = locate::with_payloads_upto(b, hash, upto, |entries| {
            use rayon::prelude::*;
            picks
                .par_iter()
                .map(|p| {
                    let Some(e) = entries.get(p.entry).filter(|e| e.id == p.id) else {
                        return Ok(Err(format!("entry {} changed while reading", p.entry)));
                    };
                    if let Some(why) = unwritable(e.id, e.payload, e.ext) {
                        let unit = if b.ccob.is_some() {
                            "decompressed bundle"
                        } else {
                            "unit"
                        };
                        return Ok(Err(format!(
                            "entry {} ({}, payload at offset {:#x} of the {unit}): {why}; not \
                             written",
                            p.entry, p.id, p.offset
                        )));
                    }
                    let item = Item {
                        origin: Origin::Bundle,
                        unit: b.index,
                        member: b.member.clone(),
                        section: b.section.clone(),
                        key: None,
                        entry: p.entry,
                        id: p.id.clone(),
                        size: p.size,
                        offset: p.offset,
                        ext: e.ext,
                    };
                    // Stored uncompressed: the sink may copy it from the input in the kernel.
                    let range = input.and_then(|i| i.file_range(e.payload));
                    let v = sink(&item, e.payload, range)?;
                    Ok(Ok((item, v)))
                })
                .collect::<Vec<Result<Result<(Item, T), String>, crate::Error>>>()
        })
        .map_err(|e| at(&e))?;
        // An entry refused for damage the plan's problems already name is not named twice.
        let said = |entry: usize| {
            found.problems.iter().any(|p| {
                let inside = p.location.offset >= b.offset
                    && p.location.offset - b.offset <= b.bytes.len() as u64;
                inside
                    && match &p.kind {
                        ProblemKind::EntryContradiction { index, .. } => *index == entry,
                        ProblemKind::BadCodeObject(_) => true,
                        _ => false,
                    }
            })
        };
        for (p, r) in picks.iter().zip(made) {
            match r? {
                Ok((item, v)) => out.items.push((item, v, hash_checked)),
                Err(why) => {
                    out.refused_count += 1;
                    if !said(p.entry) {
                        out.refused
                            .push(format!("{}: {}: {why}", self.name, describe(b)));
                    }
                }
            }
        }
        if hash_checked == Some(false) {
            out.unchecked.push(describe(b));
        }
        Ok(())
    }
}
