//! The rows of a census (`gfxkit census`): one row per code object of an input and one row
//! per input, built from the listings ([`crate::list`]) and digests ([`crate::digest`]) of
//! the files an input holds, so that the CLI, the Python package and the census's workers
//! share one rule. The census writes these rows as Parquet (docs/census.md); this module does
//! no I/O.
//!
//! A code object is an entry of a unit that is neither a host entry nor empty. Its stored
//! bytes are what it occupies in the file: its payload for an uncompressed unit, its share of
//! a compressed bundle (the bundle's bytes split in proportion to the uncompressed payloads,
//! the last entry taking the rounding, so that the shares add up to the bundle), the bytes a
//! `.kpack` archive stores for it.

use crate::digest::Digest;
use crate::list::FileListing;
use gfxkit_bundle::EntryId;
use gfxkit_host::select::{concrete_settings, nearest_targets, select};
use gfxkit_target_id::TargetId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The version of the census schema: written in every Parquet file's metadata, raised when a
/// column changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// One code object of an input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeObjectRow {
    /// The input as the census was given it (a path or a URL).
    pub input: String,
    /// The file holding it: the input itself, `PACKAGE!MEMBER` for a package member
    /// (nested archives chained with `!`), `IMAGE!/path` for a file of a container image.
    pub path: String,
    /// The member inside the package or image (`lib/x.so`), when it is one.
    pub member: Option<String>,
    /// For a file of a container image: the digest of the layer holding it.
    pub layer: Option<String>,
    /// What holds it: `uncompressed` or `ccob` (a bundle), `object-bundle`, `code-object`,
    /// `offload-image`, `kpack` (a split binary's wrapper or a `.kpack` key), `miopen-kdb`,
    /// `aks2`.
    pub container: String,
    /// For a compressed bundle (`ccob`): its format version (1, 2 or 3).
    pub ccob_version: Option<u16>,
    /// The unit's index in its file (bundle, object bundle, ...; for a kernel database, 0).
    pub unit: u32,
    /// The unit's byte offset in its file.
    pub unit_offset: u64,
    /// The entry's index in its unit (for a kernel database, the record's row).
    pub entry: u32,
    /// For a `.kpack` unit: the TOC key; for a kernel database record: its kernel's name.
    pub name: Option<String>,
    /// For a code object stored in a kpack archive: the archive.
    pub archive: Option<String>,
    /// The entry ID exactly as stored.
    pub entry_id: String,
    /// The canonical target ID (`gfx90a:sramecc+:xnack-`), `amdgcnspirv` for SPIR-V; null
    /// when the ID does not parse.
    pub target_id: Option<String>,
    /// The processor (`gfx90a`, `gfx9-generic`, `amdgcnspirv`).
    pub processor: Option<String>,
    /// The feature settings of the target ID (`sramecc+:xnack-`), empty when none is set.
    pub features: String,
    /// `+`, `-` or null (any) for xnack.
    pub xnack: Option<String>,
    /// `+`, `-` or null (any) for sramecc.
    pub sramecc: Option<String>,
    /// Whether the processor is a generic target (`gfx9-generic`).
    pub generic: bool,
    /// The code-object version from the code object's ELF header; null when not read.
    pub code_object_version: Option<u8>,
    /// Bytes it occupies in its file (see the module documentation).
    pub stored_bytes: u64,
    /// Bytes of the code object itself, uncompressed.
    pub uncompressed_bytes: u64,
    /// SHA-256 of the uncompressed code object; null when it could not be read.
    pub sha256: Option<String>,
    /// The kernels its metadata lists; null when it does not parse as a code object.
    pub kernels: Option<u32>,
}

/// One input of a census: what it is and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRow {
    /// The input as the census was given it (a path or a URL).
    pub input: String,
    /// Its size in bytes (of a file or a downloaded URL; for a directory, of its files read).
    pub size: u64,
    /// SHA-256 of the file; null for a directory (an image layout) or a file not read.
    pub sha256: Option<String>,
    /// `wheel`, `conda`, `deb`, `rpm`, `zip`, `tar`, `compressed` (a package); `image` (a
    /// container image); `elf-shared-object`, `bundle`, `code-object`, ... (one file, as
    /// its first bytes say); `unreadable`.
    pub kind: String,
    /// Files read: the input, or the members of a package or image that may hold device code.
    pub files: u32,
    /// Files (or members) holding device code.
    pub files_with_device_code: u32,
    /// Code objects (rows of the code-object table).
    pub code_objects: u32,
    /// Bytes of device code as stored (the sum of the code objects' `stored_bytes`).
    pub device_bytes: u64,
    /// Bytes of device code uncompressed.
    pub uncompressed_bytes: u64,
    /// Bytes of NVIDIA device code in its files: the sections holding CUDA fat binaries
    /// (`.nv_fatbin`, `__nv_relfatbin`; `.nv_fatb` in PE/COFF files), which no AMD GPU runs. A
    /// file with these and no AMD code objects is a CUDA build.
    pub nvidia_bytes: u64,
    /// Target IDs present, sorted.
    pub targets: Vec<String>,
    /// Processors present, sorted.
    pub processors: Vec<String>,
    /// `ok`; `damaged` (read, with errors in some file or unit: see `error`); `error` (could
    /// not be read at all).
    pub status: String,
    /// What went wrong, one message per line, each naming its file and place; null when
    /// nothing did.
    pub error: Option<String>,
    /// Seconds the scan of this input took.
    pub seconds: f64,
    /// The files of kernel databases among the input's files, each as `check` reads it
    /// ([`crate::database::member_of`]: its path as the rows name it, the processors it holds
    /// code for, a Tensile index's rows, how its code is stored, the files an aiter map names),
    /// one JSON document each: what the `lacks` table judges databases by.
    #[serde(serialize_with = "as_json_documents")]
    pub database_files: Vec<crate::database::DbMember>,
    /// Its files that load a kernel database, known by name and place
    /// ([`crate::database::databases_dir`]: `librocblas.so*`, `libhipblaslt.so*`), with device
    /// code of their own or without (hipBLASLt 7.1's has none): the `lacks` table judges each
    /// with the databases it loads.
    pub database_libraries: Vec<DatabaseLibrary>,
    /// Its bundles from which the HIP runtime loads nothing on any device ([`dead_units`]):
    /// each fails every required target, as `check` says, whether or not it has code-object
    /// rows.
    pub dead_units: Vec<DeadUnit>,
}

/// A unit from which the HIP runtime loads no code object on any device (a row of an
/// input's `dead_units`): a bundle whose uncompressed header is longer than the runtime
/// reads, or with no device entry that is not empty; a kpack wrapper none of whose code
/// objects is in an archive found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DeadUnit {
    /// The file holding it, as the code-object rows name it.
    pub path: String,
    /// Its index in the file, as the rows' `unit`.
    pub unit: u32,
    /// How it is stored, as the rows' `container` (`uncompressed`, `ccob`, `kpack`).
    pub container: String,
    /// Why nothing in it loads.
    pub why: String,
    /// The IDs of its entries as stored, empty ones and the host's included (the lacks name
    /// the nearest targets present from them, as `check` does).
    pub entries: Vec<String>,
    /// The length of its header, when that is why nothing loads (longer than the runtime
    /// reads); null for a bundle of empty entries.
    pub header_bytes: Option<u64>,
}

/// The units of `listing` from which the HIP runtime loads nothing on any device, by the
/// rules `check` selects by ([`gfxkit_host::select::select_unit`], the kpack loader's
/// look-up): an uncompressed bundle whose header is longer than
/// [`gfxkit_host::entries::HIP_HEADER_LIMIT`], a bundle whose device entries are all empty, a
/// kpack wrapper whose code objects no archive found holds (no code-object rows for these
/// two).
pub fn dead_units(listing: &FileListing) -> Vec<DeadUnit> {
    listing
        .bundles
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b.format, "uncompressed" | "ccob" | "kpack"))
        .filter_map(|(ui, b)| {
            let unread = !gfxkit_host::entries::header_readable_by_hip(
                b.format == "uncompressed",
                b.header_size,
            );
            let why = if unread {
                gfxkit_host::select::header_unread(b.header_size)
            } else if b.entries.iter().any(is_code_object) {
                return None;
            } else if b.format == "kpack" {
                "a kpack wrapper whose code objects are in no archive found".to_owned()
            } else {
                gfxkit_host::select::ENTRIES_ALL_EMPTY.to_owned()
            };
            Some(DeadUnit {
                path: listing.path.clone(),
                unit: ui as u32,
                container: b.format.to_owned(),
                why,
                entries: b.entries.iter().map(|e| e.id.clone()).collect(),
                header_bytes: unread.then_some(b.header_size),
            })
        })
        .collect()
}

/// A file that loads a kernel database, known by its name and place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DatabaseLibrary {
    /// Its path, as the rows name it.
    pub path: String,
    /// Whether the directory it loads its databases from was there when it was read (on disk
    /// beside it, or among its package's members). A library whose databases the census did
    /// not read (their directory is no input) is judged by its own code alone; one whose
    /// directory is absent lacks every target, as `check` says.
    pub database_found: bool,
}

/// Each of `members` as a JSON document of its own.
fn as_json_documents<S: serde::Serializer>(
    members: &[crate::database::DbMember],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::{Error, SerializeSeq};
    let mut seq = s.serialize_seq(Some(members.len()))?;
    for m in members {
        seq.serialize_element(&serde_json::to_string(m).map_err(S::Error::custom)?)?;
    }
    seq.end()
}

/// The code-object rows of one file's listing, each given its SHA-256, size and kernel count
/// from `digests` (the file's [`crate::digest`]s, matched to the entries in order by entry
/// ID). `input` names the census input the file belongs to; `package` is the package (or
/// image) path when the file is one of its members.
pub fn code_object_rows(
    input: &str,
    listing: &FileListing,
    package: Option<&str>,
    digests: &[Digest],
) -> Vec<CodeObjectRow> {
    let member = package
        .and_then(|p| listing.path.strip_prefix(p))
        .and_then(|m| m.strip_prefix('!'))
        .map(|m| m.to_owned());
    let mut out = Vec::new();
    let mut next = 0usize;
    for (ui, b) in listing.bundles.iter().enumerate() {
        let kept: Vec<_> = b
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| is_code_object(e))
            .collect();
        let total: u64 = kept.iter().map(|(_, e)| e.size).sum();
        let mut shared = 0u64;
        for (k, (ei, e)) in kept.iter().enumerate() {
            let stored = if let Some(s) = e.stored_size {
                s
            } else if b.format == "ccob" {
                // The bundle's bytes in proportion; the last entry takes what rounding left.
                let share = if k + 1 == kept.len() {
                    b.size.saturating_sub(shared)
                } else {
                    ((b.size as u128 * e.size as u128) / total.max(1) as u128) as u64
                };
                shared += share;
                share
            } else {
                e.size
            };
            let found = digests[next.min(digests.len())..]
                .iter()
                .position(|d| d.entry == e.id)
                .map(|i| next + i);
            let digest = found.map(|i| {
                next = i + 1;
                &digests[i]
            });
            let target = parsed_target(&e.id);
            out.push(CodeObjectRow {
                input: input.to_owned(),
                path: listing.path.clone(),
                member: member.clone(),
                layer: listing.layer.clone(),
                container: b.format.to_owned(),
                ccob_version: b.ccob.as_ref().map(|c| c.version),
                unit: ui as u32,
                unit_offset: b.offset,
                entry: *ei as u32,
                name: e.name.clone().or_else(|| b.kpack_key.clone()),
                archive: e.archive.clone(),
                entry_id: e.id.clone(),
                target_id: target.as_ref().map(|t| t.text.clone()),
                processor: target.as_ref().map(|t| t.processor.clone()),
                features: target
                    .as_ref()
                    .map(|t| t.features.clone())
                    .unwrap_or_default(),
                xnack: target.as_ref().and_then(|t| t.xnack.clone()),
                sramecc: target.as_ref().and_then(|t| t.sramecc.clone()),
                generic: target.as_ref().is_some_and(|t| t.generic),
                // Read from the code object itself where the listing read headers only.
                code_object_version: e
                    .code_object_version
                    .or(digest.and_then(|d| d.code_object_version)),
                stored_bytes: stored,
                uncompressed_bytes: digest.map_or(e.size, |d| d.size),
                sha256: digest.map(|d| d.sha256.clone()),
                kernels: digest.and_then(|d| d.kernels).map(|k| k as u32),
            });
        }
    }
    out
}

/// Whether an entry is a code object of the census (see the module documentation): neither
/// a host entry nor empty.
fn is_code_object(e: &crate::list::EntryListing) -> bool {
    e.size > 0 && e.kind.as_deref() != Some("host")
}

/// A target as the census's columns give it.
struct Target {
    text: String,
    processor: String,
    features: String,
    xnack: Option<String>,
    sramecc: Option<String>,
    generic: bool,
}

fn parsed_target(id: &str) -> Option<Target> {
    let e = EntryId::parse(id).ok()?;
    if let Some(t) = e.target_id() {
        let text = t.to_string();
        let features = text
            .split_once(':')
            .map(|(_, f)| f.to_owned())
            .unwrap_or_default();
        let setting = |name: &str| {
            features
                .split(':')
                .find_map(|f| f.strip_prefix(name))
                .map(|s| s.to_owned())
        };
        return Some(Target {
            processor: t.processor().name.to_owned(),
            xnack: setting("xnack"),
            sramecc: setting("sramecc"),
            generic: t.is_generic(),
            features,
            text,
        });
    }
    gfxkit_host::unit::is_spirv_entry(&e).then(|| Target {
        text: "amdgcnspirv".to_owned(),
        processor: "amdgcnspirv".to_owned(),
        features: String::new(),
        xnack: None,
        sramecc: None,
        generic: false,
    })
}

/// The input row of an input whose files' code objects are `rows`: sizes, targets and
/// counts over them; `errors` (each naming its file and place) make it `damaged`, or `error`
/// when `unreadable`. Its `nvidia_bytes` is 0: the caller that read the files sets it.
#[allow(clippy::too_many_arguments)]
pub fn input_row(
    input: &str,
    size: u64,
    sha256: Option<String>,
    kind: &str,
    files: u32,
    rows: &[CodeObjectRow],
    errors: &[String],
    unreadable: bool,
    seconds: f64,
) -> InputRow {
    let with_code: BTreeSet<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    let targets: BTreeSet<String> = rows.iter().filter_map(|r| r.target_id.clone()).collect();
    let processors: BTreeSet<String> = rows.iter().filter_map(|r| r.processor.clone()).collect();
    InputRow {
        input: input.to_owned(),
        size,
        sha256,
        kind: kind.to_owned(),
        files,
        files_with_device_code: with_code.len() as u32,
        code_objects: rows.len() as u32,
        device_bytes: rows.iter().map(|r| r.stored_bytes).sum(),
        uncompressed_bytes: rows.iter().map(|r| r.uncompressed_bytes).sum(),
        nvidia_bytes: 0,
        targets: targets.into_iter().collect(),
        processors: processors.into_iter().collect(),
        status: if unreadable {
            "error"
        } else if errors.is_empty() {
            "ok"
        } else {
            "damaged"
        }
        .to_owned(),
        error: (!errors.is_empty()).then(|| errors.join("\n")),
        seconds,
        database_files: Vec::new(),
        database_libraries: Vec::new(),
        dead_units: Vec::new(),
    }
}

/// One required target a file lacks (a row of the census's `lacks` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lack {
    /// The census input.
    pub input: String,
    /// The file (or `PACKAGE!MEMBER`) that lacks it: a library that lacks it with the kernel
    /// databases it loads, or a kernel database's directory no library loads.
    pub path: String,
    /// The required target, as given canonically (`gfx90a`, `gfx942:xnack+`).
    pub required: String,
    /// Why: in how many of the file's units no code object would load, and the targets the
    /// file has; and what its kernel databases do not give it, as `check` words it.
    pub why: String,
}

/// A file's units (by index: a split binary's wrapper is one unit, whichever archives hold its
/// code objects) with their entry IDs.
type Units = BTreeMap<u32, Vec<EntryId>>;

/// One unit of a file as the census rows give it: how it is stored, and its entries with
/// their code-object versions.
#[derive(Default)]
struct RowUnit<'a> {
    container: &'a str,
    ccob_version: Option<u16>,
    entries: Vec<(EntryId, Option<u8>)>,
    /// For a unit that loads nothing ([`DeadUnit`]): its entries' IDs, and what `check` says
    /// of it (its header, its empty entries; nothing of a kpack wrapper).
    dead: Option<(Vec<EntryId>, Option<String>)>,
}

/// A unit as a release's runtime sees it: its view, and what the release refuses in it.
type Refusals = (
    gfxkit_host::entries::LoadView,
    gfxkit_host::release::UnitRefusals,
);

/// The entry IDs of `unit` that the runtime of `rules` loads (all without a release), and the
/// unit's view with what the release refuses in it (`None` without a release, or for a
/// kpack wrapper): the same refusals as `check --rocm`
/// ([`gfxkit_host::release::UnitRefusals`], [`gfxkit_host::release::kpack_refusal`]).
fn loaded_by(
    rules: Option<&gfxkit_spec::rocm::Rules>,
    unit: &RowUnit<'_>,
) -> (Vec<EntryId>, Option<Refusals>) {
    use gfxkit_host::entries::{LoadView, UnitEntry};
    use gfxkit_host::release::{kpack_refusal, UnitRefusals};
    let ids: Vec<EntryId> = unit.entries.iter().map(|(id, _)| id.clone()).collect();
    let Some(rules) = rules else {
        return (ids, None);
    };
    if unit.container == "kpack" {
        // A split binary's wrappers load all or nothing ([`Judged::split_refused`]).
        let kept = if kpack_refusal(rules).is_some() {
            Vec::new()
        } else {
            ids
        };
        return (kept, None);
    }
    let format = (unit.container == "ccob").then(|| gfxkit_host::BundleFormat::Compressed {
        // A version not recorded is taken as the oldest: refused only by a release that
        // unpacks no compressed bundle at all.
        version: unit.ccob_version.unwrap_or(1),
        method: gfxkit_host::CompressionMethod::ZSTD,
    });
    let u = LoadView {
        form: gfxkit_host::Form::Bundle,
        format,
        header_len: None,
        entries: Ok(ids
            .iter()
            .map(|id| UnitEntry {
                id: id.clone(),
                size: 1,
            })
            .collect()),
    };
    let versions: Vec<Option<u8>> = unit.entries.iter().map(|(_, v)| *v).collect();
    let refused = UnitRefusals::of(rules, &u, &versions);
    let kept = if refused.unit.is_some() {
        Vec::new()
    } else {
        ids.iter()
            .enumerate()
            .filter(|(i, _)| !refused.entries.iter().any(|(j, _)| j == i))
            .map(|(_, id)| id.clone())
            .collect()
    };
    (kept, Some((u, refused)))
}

/// What the inputs of a census hold of kernel databases, each with the input that holds it:
/// the databases' files ([`InputRow::database_files`]) and the libraries that load databases
/// ([`InputRow::database_libraries`]).
#[derive(Debug, Clone, Default)]
pub struct Databases {
    /// (input, file as `check` reads it).
    pub files: Vec<(String, crate::database::DbMember)>,
    /// (input, the library).
    pub libraries: Vec<(String, DatabaseLibrary)>,
    /// (input, a bundle that loads nothing: [`InputRow::dead_units`]). Not a database: the
    /// other fact beyond the rows that the lacks are judged by.
    pub dead: Vec<(String, DeadUnit)>,
}

/// The required targets each file of `rows` lacks, by the rule of `gfxkit check`: a file
/// meets a required target when, under one setting of the features the target leaves out,
/// every unit of the file holds a code object the HIP runtime would load on it (native code,
/// the family's generic target, or SPIR-V); every unit of a file with code objects counts.
/// The files of kernel databases (`databases`, whatever inputs hold them: a tree's files are
/// inputs of their own) are judged as `check` judges them
/// ([`crate::database::with_databases`], the layout without the libraries' variables): each
/// library together with the databases it loads (a Tensile directory by its library's rule:
/// the index a device selects and every file its rows load, present), each database no
/// library loads as its directory. Sorted by input and path.
pub fn lacks(rows: &[CodeObjectRow], databases: &Databases, required: &[TargetId]) -> Vec<Lack> {
    lacks_on(rows, databases, required, None)
}

/// [`lacks`] for the runtime of one ROCm release, when given (`gfxkit census --rocm`), by the
/// rule of `gfxkit check --rocm`: a device whose processor its runtime does not know lacks
/// everything, and what it cannot load (a code-object version above its loader's, a generic
/// target it does not load, a CCOB version its HIP runtime does not unpack, a kpack-split
/// binary without its kpack loader) does not count, and the reason says so.
pub fn lacks_on(
    rows: &[CodeObjectRow],
    databases: &Databases,
    required: &[TargetId],
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> Vec<Lack> {
    // (input, path) -> unit -> its entries.
    let mut files: BTreeMap<(&str, &str), BTreeMap<u32, RowUnit<'_>>> = BTreeMap::new();
    for r in rows {
        let Ok(id) = EntryId::parse(&r.entry_id) else {
            continue;
        };
        let u = files
            .entry((r.input.as_str(), r.path.as_str()))
            .or_default()
            .entry(r.unit)
            .or_default();
        u.container = r.container.as_str();
        u.ccob_version = u.ccob_version.or(r.ccob_version);
        u.entries.push((id, r.code_object_version));
    }
    // Object bundles of other GPUs (SYCL, OpenMP offload to NVIDIA) and offload images (an
    // object's, linked before anything loads it) are not judged, as `check` passes over them
    // ([`gfxkit_host::unit::is_loadable`]).
    for units in files.values_mut() {
        units.retain(|_, u| {
            let form =
                crate::list::form_of_storage_name(u.container).unwrap_or(gfxkit_host::Form::Bundle);
            gfxkit_host::unit::is_loadable(form, u.entries.iter().map(|(e, _)| e.raw()))
        });
    }
    files.retain(|_, units| !units.is_empty());
    // Bundles that load nothing: none of their entries counts, and a file of such bundles
    // alone (no rows) is judged too.
    for (input, d) in &databases.dead {
        let u = files
            .entry((input.as_str(), d.path.as_str()))
            .or_default()
            .entry(d.unit)
            .or_default();
        if u.container.is_empty() {
            u.container = d.container.as_str();
        }
        let ids = d
            .entries
            .iter()
            .filter_map(|e| EntryId::parse(e).ok())
            .collect();
        // What check says of it: its header the runtime cannot read, or its empty entries.
        let said = match d.header_bytes {
            Some(n) => Some(gfxkit_host::select::header_unread(n)),
            None if d.container != "kpack" => {
                Some(gfxkit_host::select::ENTRIES_ALL_EMPTY.to_owned())
            }
            None => None,
        };
        u.dead = Some((ids, said));
    }
    // The input of each database file; the files of databases are judged with them.
    let held_by: BTreeMap<&str, &str> = databases
        .files
        .iter()
        .map(|(input, m)| (m.path.as_str(), input.as_str()))
        .collect();
    // The other files with code, each as this release would load it: the libraries.
    let libraries: Vec<(String, (&str, Judged))> = files
        .iter()
        .filter(|((_, path), _)| !held_by.contains_key(path))
        .map(|(&(input, path), row_units)| {
            let mut refusals: Vec<Refusals> = Vec::new();
            let units: Units = row_units
                .iter()
                .map(|(i, u)| {
                    if u.dead.is_some() {
                        return (*i, Vec::new());
                    }
                    let (kept, refused) = loaded_by(rules, u);
                    refusals.extend(refused);
                    (*i, kept)
                })
                .collect();
            let mut dead: Vec<String> = row_units
                .values()
                .filter_map(|u| u.dead.as_ref().and_then(|(_, why)| why.clone()))
                .collect();
            dead.dedup();
            // A split binary (every unit a kpack wrapper) on a runtime without the kpack
            // loader: no wrapper loads, for that one reason (check's verdict on each device).
            let split_refused = rules
                .filter(|_| row_units.values().all(|u| u.container == "kpack"))
                .and_then(gfxkit_host::release::kpack_refusal)
                .map(|r| r.reason);
            // Each unit's entries as stored, and those the newest runtime loads (none of a
            // unit that loads nothing).
            let (mut named, mut newest) = (Units::new(), Units::new());
            for (i, u) in row_units {
                let ids: Vec<EntryId> = u.entries.iter().map(|(e, _)| e.clone()).collect();
                match &u.dead {
                    Some((stored, _)) => {
                        named.insert(*i, stored.clone());
                        newest.insert(*i, Vec::new());
                    }
                    None => {
                        named.insert(*i, ids.clone());
                        newest.insert(*i, ids);
                    }
                }
            }
            let j = Judged {
                named,
                newest,
                units,
                refusals,
                dead,
                split_refused,
            };
            (path.to_owned(), (input, j))
        })
        .collect();
    // A library that loads a database with no device code of its own: judged by what it
    // loads alone (its code lacks nothing).
    let mut libraries = libraries;
    for (input, l) in &databases.libraries {
        let path = &l.path;
        if !files.contains_key(&(input.as_str(), path.as_str())) {
            let none = Judged {
                named: Units::new(),
                newest: Units::new(),
                units: Units::new(),
                refusals: Vec::new(),
                dead: Vec::new(),
                split_refused: None,
            };
            libraries.push((path.clone(), (input.as_str(), none)));
        }
    }
    libraries.sort_by(|a, b| a.0.cmp(&b.0));
    libraries.dedup_by(|a, b| a.0 == b.0);
    // Whether each library's database directory was there (not known: taken as there).
    let found: BTreeMap<&str, bool> = databases
        .libraries
        .iter()
        .map(|(_, l)| (l.path.as_str(), l.database_found))
        .collect();
    let unknown = |req: &TargetId| {
        rules
            .and_then(|r| gfxkit_host::release::device_refusal(r, req.processor().name))
            .map(|r| r.reason)
    };
    let mut out: Vec<Lack> = crate::database::with_databases(
        libraries,
        databases.files.iter().map(|(_, m)| m.clone()).collect(),
        &crate::database::LibPaths::default(),
        |path, (input, j), loaded| {
            // A database there that no input holds was not read: not judged.
            let unread = loaded.roots().is_empty() && found.get(path).copied().unwrap_or(true);
            // A library with no device code of its own (every library's name is recorded, in
            // case it loads a database) that loads no database is no GPU library: check does
            // not judge it, whatever processors the release knows.
            let own_code = !j.named.is_empty();
            let lacks = required.iter().filter_map(|req| {
                let database = (!unread)
                    .then(|| loaded.lacks_on(req, None, rules))
                    .flatten();
                if !own_code && loaded.roots().is_empty() && database.is_none() {
                    return None;
                }
                // What its own code lacks, then what it loads lacks, as `check` says both;
                // a processor the release does not know before them.
                let why = joined(unknown(req), joined(file_lacks(&j, req, rules), database))?;
                Some(Lack::new(input, path, req, why))
            });
            Some(lacks.collect::<Vec<_>>())
        },
        |db| {
            // A database no library loads: as its directory, in the input of its first file.
            let input = db
                .members
                .first()
                .and_then(|m| held_by.get(m.path.as_str()))
                .copied()
                .unwrap_or_default();
            required
                .iter()
                .filter_map(|req| {
                    let why = joined(unknown(req), db.lacks_on(req, None, rules))?;
                    Some(Lack::new(input, &db.root, req, why))
                })
                .collect()
        },
    )
    .into_iter()
    .flatten()
    .collect();
    out.sort_by(|a, b| (&a.input, &a.path).cmp(&(&b.input, &b.path)));
    out
}

/// Two reasons in order, joined as `check` joins them (`first; then`), or the one there is.
fn joined(first: Option<String>, then: Option<String>) -> Option<String> {
    match (first, then) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// A file's code as a release would load it, for the lacks.
struct Judged {
    /// Each unit's entries (the nearest targets present are named from them).
    named: Units,
    /// Each unit's entries the newest runtime loads (none of a bundle that loads nothing).
    newest: Units,
    /// Each unit's entries the release loads.
    units: Units,
    /// Each unit of bundles as the release sees it, with what it refuses there.
    refusals: Vec<Refusals>,
    /// What `check` adds of its bundles that load nothing: the headers the runtime cannot
    /// read, the device entries all empty.
    dead: Vec<String>,
    /// For a split binary the release's runtime has no kpack loader for: why (every required
    /// target lacks it, for this reason alone, as `check` says).
    split_refused: Option<String>,
}

impl Lack {
    fn new(input: &str, path: &str, required: &TargetId, why: String) -> Lack {
        Lack {
            input: input.to_owned(),
            path: path.to_owned(),
            required: required.to_string(),
            why,
        }
    }
}

/// Why a release's runtime could not load code for `req` from every unit of a file (`None`
/// when it could), by the rule of `gfxkit check`: under one setting of the features `req`
/// leaves out, every unit holds a code object the HIP runtime would load on it (native code,
/// the family's generic target, or SPIR-V).
fn file_lacks(
    j: &Judged,
    req: &TargetId,
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> Option<String> {
    if let Some(why) = &j.split_refused {
        return Some(why.clone());
    }
    let settings = concrete_settings(req);
    let met = settings
        .iter()
        .any(|d| j.units.values().all(|ids| select(d, ids).via.is_some()));
    if met {
        return None;
    }
    let without = j
        .units
        .values()
        .filter(|ids| settings.iter().all(|d| select(d, ids).via.is_none()))
        .count();
    // What the release passed over that the newest runtime would load, as `check` says it.
    let said = crate::release::refused_on(req, j.refusals.iter().map(|(u, r)| (u, r)));
    // Code the newest runtime would load from every unit, that this release does not: said
    // so from the first word (as `check` says it).
    let newest_met = settings
        .iter()
        .any(|d| j.newest.values().all(|ids| select(d, ids).via.is_some()));
    let loaded = match rules {
        Some(r) if newest_met && !said.is_empty() => format!(" ROCm {} loads", r.version),
        _ => String::new(),
    };
    // In check's words (its verdict on a library's bundles): the count, then the targets
    // nearest to `req` in the first unit without code for it.
    let total = j.units.len();
    let mut why = if without > 0 {
        format!(
            "no code object{loaded} for {req} in {without} of {total} {}",
            if total == 1 { "bundle" } else { "bundles" }
        )
    } else {
        format!("no single xnack/sramecc setting of {req} has code in all {total} bundles")
    };
    let failing = j
        .units
        .iter()
        .find(|(_, ids)| settings.iter().all(|d| select(d, ids).via.is_none()))
        .or_else(|| j.units.iter().next())
        .and_then(|(i, _)| j.named.get(i));
    let nearest = failing
        .map(|ids| nearest_targets(req, ids))
        .unwrap_or_default();
    if !nearest.is_empty() {
        why.push_str(&format!("; nearest present: {}", nearest.join(", ")));
    }
    let why = j.dead.iter().fold(why, |w, d| format!("{w}; {d}"));
    if said.is_empty() {
        return Some(why);
    }
    Some(format!("{why}; {}", crate::release::refusals_text(&said)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing_of(bytes: &[u8], check: bool) -> FileListing {
        crate::list::list_bytes("b.hipfb", bytes, check)
    }

    /// The code-object rows of `b.hipfb`, an uncompressed bundle of `entries`.
    fn rows_of_bundle(entries: &[(&str, &[u8])]) -> Vec<CodeObjectRow> {
        let bundle = gfxkit_bundle::write_bundle(entries, 4096).unwrap();
        let l = listing_of(&bundle, false);
        let (d, _) = crate::digest::file_digests(
            "b.hipfb",
            &bundle,
            crate::digest::Digesting::checked(true),
            &Default::default(),
        )
        .unwrap();
        code_object_rows("b.hipfb", &l, None, &d)
    }

    #[test]
    fn object_bundles_of_other_gpus_lack_nothing() {
        let amd = rows_of_bundle(&[
            ("host-x86_64-unknown-linux--", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"abcd"),
        ])
        .remove(0);
        // The same file with OpenMP offload sections for NVIDIA GPUs as its second unit.
        let mut nvptx = amd.clone();
        nvptx.container = "object-bundle".to_owned();
        nvptx.entry_id = "openmp-nvptx64-nvidia-cuda".to_owned();
        nvptx.unit = 1;
        let req = |s: &str| TargetId::parse(s).unwrap();
        assert!(lacks(
            std::slice::from_ref(&nvptx),
            &Databases::default(),
            &[req("gfx942")]
        )
        .is_empty());
        let l = lacks(
            &[amd.clone(), nvptx.clone()],
            &Databases::default(),
            &[req("gfx942")],
        );
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(l[0].why.contains("in 1 of 1 bundle;"), "{}", l[0].why);
        // An object bundle with code for an AMD GPU is judged like any unit.
        let mut amd_sections = nvptx;
        amd_sections.entry_id = "hipv4-amdgcn-amd-amdhsa--gfx1100".to_owned();
        let l = lacks(
            &[amd, amd_sections],
            &Databases::default(),
            &[req("gfx942")],
        );
        assert!(l[0].why.contains("in 2 of 2 bundles"), "{}", l[0].why);
    }

    /// A bundle whose header is longer than the HIP runtime reads, or whose device entries are
    /// all empty, loads nothing ([`dead_units`]): its file lacks every target, code-object rows
    /// or none, and says why, as `check` selects.
    #[test]
    fn bundles_that_load_nothing_lack_every_target() {
        let req = |s: &str| TargetId::parse(s).unwrap();
        // 80 entries with the same code object: a header past 4096 bytes.
        let ids: Vec<String> = (0..80)
            .map(|i| format!("hip-amdgcn-amd-amdhsa--gfx{}", 1000 + i))
            .collect();
        let mut entries: Vec<(&str, &[u8])> = vec![("host-x86_64-unknown-linux--", b"")];
        entries.push(("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code"));
        entries.extend(ids.iter().map(|i| (i.as_str(), &b"code"[..])));
        let big = gfxkit_bundle::write_bundle(&entries, 4096).unwrap();
        let listing = listing_of(&big, false);
        let dead = dead_units(&listing);
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!(dead[0].unit, 0);
        assert!(
            dead[0]
                .why
                .contains("the HIP runtime reads only the first 4096"),
            "{}",
            dead[0].why
        );
        let rows = rows_of_bundle(&entries);
        assert!(rows.iter().any(|r| r.entry_id.ends_with("gfx90a")));
        let with = |dead: Vec<DeadUnit>| Databases {
            dead: dead
                .into_iter()
                .map(|d| ("b.hipfb".to_owned(), d))
                .collect(),
            ..Default::default()
        };
        // Without the fact, its gfx90a entry passes; with it, nothing does.
        assert!(lacks(&rows, &Databases::default(), &[req("gfx90a")]).is_empty());
        let l = lacks(&rows, &with(dead.clone()), &[req("gfx90a")]);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].why.contains("in 1 of 1 bundle;") && l[0].why.ends_with(&dead[0].why),
            "{}",
            l[0].why
        );
        // Device entries all empty: no rows, and still judged.
        let empty = gfxkit_bundle::write_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", b""),
            ],
            4096,
        )
        .unwrap();
        let dead = dead_units(&listing_of(&empty, false));
        assert_eq!(dead.len(), 1, "{dead:?}");
        let l = lacks(&[], &with(dead), &[req("gfx90a"), req("gfx942")]);
        assert_eq!(
            l.iter().map(|l| l.required.as_str()).collect::<Vec<_>>(),
            ["gfx90a", "gfx942"]
        );
        // As check says it: the nearest named from its empty entries, and that they are.
        assert!(
            l[0].why.ends_with(
                "in 1 of 1 bundle; nearest present: gfx90a; a bundle whose device entries are all empty"
            ),
            "{}",
            l[0].why
        );
        // A bundle with code in reach of the runtime is no such bundle.
        let fine = gfxkit_bundle::write_bundle(&entries[..3], 4096).unwrap();
        assert!(dead_units(&listing_of(&fine, false)).is_empty());
        // A split binary whose second wrapper's code is in no archive found: the first
        // wrapper's gfx90a does not make the file run there.
        let mut split = rows_of_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code")]);
        split[0].container = "kpack".to_owned();
        let wrapper = DeadUnit {
            path: split[0].path.clone(),
            unit: 1,
            container: "kpack".to_owned(),
            why: "a kpack wrapper whose code objects are in no archive found".to_owned(),
            entries: Vec::new(),
            header_bytes: None,
        };
        let at = |d: DeadUnit| Databases {
            dead: vec![(split[0].input.clone(), d)],
            ..Default::default()
        };
        assert!(lacks(&split, &Databases::default(), &[req("gfx90a")]).is_empty());
        let l = lacks(&split, &at(wrapper.clone()), &[req("gfx90a")]);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].why
                .starts_with("no code object for gfx90a in 1 of 2 bundles"),
            "{}",
            l[0].why
        );
        // On a release without the kpack loader: its reason alone, as for the other wrappers.
        let rules =
            gfxkit_spec::rocm::Rules::of(gfxkit_spec::rocm::RocmVersion::parse("7.2").unwrap());
        let l = lacks_on(&split, &at(wrapper), &[req("gfx90a")], Some(&rules));
        assert!(
            l[0].why.starts_with("kpack-split binary (HIPK wrapper)"),
            "{}",
            l[0].why
        );
    }

    /// A library and its kernel database in one package, and a database no library loads in
    /// a tree whose files are inputs of their own: each database's files are judged together,
    /// as `check` judges them ([`crate::database::Database::lacks_on`]: a processor's file does
    /// not lack the others'; a Tensile directory needs the index of the device's processor),
    /// with the library that loads them; no file of a database is judged alone.
    #[test]
    fn kernel_databases_are_judged_as_check_judges_them() {
        use crate::database::{DbMember, IndexRows};
        use gfxkit_kernel_db::loads::{DeviceTest, Row};
        let base = rows_of_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"abcd")]).remove(0);
        let row = |input: &str, path: &str, container: &str, target: &str| {
            let mut r = base.clone();
            r.input = input.to_owned();
            r.path = path.to_owned();
            r.container = container.to_owned();
            r.entry_id = format!("hipv4-amdgcn-amd-amdhsa--{target}");
            r
        };
        let file = |path: &str, processors: &[&str]| DbMember {
            path: path.to_owned(),
            processors: processors.iter().map(|p| p.to_string()).collect(),
            index_rows: None,
            stored: Default::default(),
            map_files: Vec::new(),
        };
        let deb = "r.deb";
        let lib = "r.deb!usr/lib/librocblas.so.4";
        let dir = "r.deb!usr/lib/rocblas/4.4.1/library";
        // rocBLAS's directory: a lazy index and its code objects for gfx90a, code objects
        // without an index for gfx942.
        let index = DbMember {
            index_rows: Some(Ok(IndexRows {
                rows: vec![Row {
                    test: DeviceTest::Processor("gfx90a".into()),
                    processor: Some("gfx90a".into()),
                    cu_count: None,
                    placeholders: Vec::new(),
                    solutions: 1,
                }],
            })),
            ..file(&format!("{dir}/TensileLibrary_lazy_gfx90a.dat"), &[])
        };
        let mut dbs: Vec<(String, DbMember)> = vec![
            (deb.into(), index),
            (
                deb.into(),
                file(&format!("{dir}/Kernels.so-000-gfx90a.hsaco"), &["gfx90a"]),
            ),
            (
                deb.into(),
                file(&format!("{dir}/Kernels.so-000-gfx942.hsaco"), &["gfx942"]),
            ),
        ];
        let mut rows = vec![
            row(deb, lib, "uncompressed", "gfx90a"),
            row(deb, lib, "uncompressed", "gfx1100"),
            row(
                deb,
                &format!("{dir}/Kernels.so-000-gfx90a.hsaco"),
                "code-object",
                "gfx90a",
            ),
            row(
                deb,
                &format!("{dir}/Kernels.so-000-gfx942.hsaco"),
                "code-object",
                "gfx942",
            ),
        ];
        // A database alone: MIOpen's kernel databases walked, each file an input.
        for p in ["gfx1151", "gfx1100"] {
            let f = format!("/t/share/miopen/db/{p}.kdb");
            rows.push(row(&f, &f, "miopen-kdb", p));
            dbs.push((f.clone(), file(&f, &[p])));
        }
        let req = |s: &str| TargetId::parse(s).unwrap();
        let judged = |rows: &[CodeObjectRow], files: &[(String, DbMember)], r: &str| {
            let dbs = Databases {
                files: files.to_vec(),
                ..Default::default()
            };
            let l = lacks(rows, &dbs, &[req(r)]);
            let got: Vec<(String, String)> = l
                .iter()
                .map(|x| (x.input.clone(), x.path.clone()))
                .collect();
            (got, l)
        };
        let miopen = "/t/share/miopen/db";
        let first = format!("{miopen}/gfx1100.kdb");
        // gfx90a: the library's code and its database's index and files serve it; MIOpen's
        // database lacks it, as its directory, in the input of its first file.
        let (got, l) = judged(&rows, &dbs, "gfx90a");
        assert_eq!(got, [(first.clone(), miopen.to_owned())], "{l:#?}");
        assert!(
            l[0].why.contains("no code object for gfx90a"),
            "{}",
            l[0].why
        );
        // gfx942: the library's own code lacks it, said first.
        let (got, l) = judged(&rows, &dbs, "gfx942");
        assert_eq!(got[1], (deb.to_owned(), lib.to_owned()), "{l:#?}");
        assert!(
            l[1].why.starts_with("no code object for gfx942"),
            "{}",
            l[1].why
        );
        // gfx1100: the library's code has it, its database has no index for it.
        let (got, l) = judged(&rows, &dbs, "gfx1100");
        assert_eq!(got, [(deb.to_owned(), lib.to_owned())], "{l:#?}");
        assert!(
            l[0].why.contains(dir) && l[0].why.contains("gfx1100"),
            "{}",
            l[0].why
        );
        // Without the library: the rocBLAS directory is a database alone, judged as one.
        let alone: Vec<CodeObjectRow> = rows.iter().filter(|r| r.path != lib).cloned().collect();
        let (got, l) = judged(&alone, &dbs, "gfx1151");
        assert_eq!(got, [(deb.to_owned(), dir.to_owned())], "{l:#?}");
        // The same rows without their databases' files: each file judged alone.
        let (got, _) = judged(&alone, &[], "gfx1151");
        assert_eq!(got.len(), 3, "{got:?}");
        // hipBLASLt's library has no device code of its own: known as a library that loads a
        // database, it is judged by its database and named for it, as `check` names it; with
        // no database where it looks, it lacks every target.
        let hip = "h.whl!lib/libhipblaslt.so.1";
        let hdir = "h.whl!lib/hipblaslt/library";
        let shard = format!("{hdir}/TensileLibrary_gfx942.co");
        let with_library = |files: Vec<(String, DbMember)>, found: bool| Databases {
            files,
            libraries: vec![(
                "h.whl".to_owned(),
                DatabaseLibrary {
                    path: hip.to_owned(),
                    database_found: found,
                },
            )],
            dead: Vec::new(),
        };
        let l = lacks(&[], &with_library(Vec::new(), false), &[req("gfx942")]);
        assert_eq!(l.len(), 1, "{l:#?}");
        assert_eq!((l[0].input.as_str(), l[0].path.as_str()), ("h.whl", hip));
        assert!(l[0].why.contains("no kernel database"), "{}", l[0].why);
        // Its directory there but read by no input: not judged.
        assert!(lacks(&[], &with_library(Vec::new(), true), &[req("gfx942")]).is_empty());
        let files = vec![("h.whl".to_owned(), file(&shard, &["gfx942"]))];
        let code = [row("h.whl", &shard, "code-object", "gfx942")];
        let l = lacks(&code, &with_library(files, true), &[req("gfx942")]);
        let got: Vec<&str> = l.iter().map(|x| x.path.as_str()).collect();
        assert_eq!(got, [hip], "{l:#?}");
    }

    #[test]
    fn rows_of_an_uncompressed_bundle() {
        let rows = rows_of_bundle(&[
            ("host-x86_64-unknown-linux--", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"abcd"),
            ("hipv4-amdgcn-amd-amdhsa--gfx9-generic", b"xy"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", b""),
        ]);
        assert_eq!(rows.len(), 2, "host and empty entries are no code objects");
        assert_eq!(rows[0].target_id.as_deref(), Some("gfx90a:xnack+"));
        assert_eq!(rows[0].xnack.as_deref(), Some("+"));
        assert_eq!(rows[0].sramecc, None);
        assert_eq!(rows[0].features, "xnack+");
        assert_eq!((rows[0].entry, rows[0].stored_bytes), (1, 4));
        assert_eq!(
            rows[0].sha256.as_deref(),
            Some(crate::digest::sha256_hex(b"abcd").as_str())
        );
        assert!(rows[1].generic);
        assert_eq!(rows[1].processor.as_deref(), Some("gfx9-generic"));
        let row = input_row("b.hipfb", 1, None, "bundle", 1, &rows, &[], false, 0.0);
        assert_eq!(row.targets, ["gfx9-generic", "gfx90a:xnack+"]);
        assert_eq!((row.device_bytes, row.status.as_str()), (6, "ok"));

        let req = |s: &str| TargetId::parse(s).unwrap();
        // gfx90a is met by xnack+ code; gfx906 by gfx9-generic; gfx1100 by nothing.
        let l = lacks(
            &rows,
            &Databases::default(),
            &[req("gfx90a"), req("gfx906"), req("gfx1100")],
        );
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(l[0].required, "gfx1100");
        assert!(l[0].why.contains("1 of 1 bundle"), "{}", l[0].why);

        // For one release: gfx906 was met by gfx9-generic, which 6.3 does not load; gfx90a
        // by native code (not V6 here: the payloads are no code objects); a processor the
        // release does not know lacks everything.
        let rules = |v: &str| {
            gfxkit_spec::rocm::Rules::of(gfxkit_spec::rocm::RocmVersion::parse(v).unwrap())
        };
        let l = lacks_on(
            &rows,
            &Databases::default(),
            &[req("gfx90a"), req("gfx906")],
            Some(&rules("6.3")),
        );
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(l[0].required, "gfx906");
        assert!(
            l[0].why
                .starts_with("no code object ROCm 6.3 loads for gfx906 in 1 of 1 bundle"),
            "{}",
            l[0].why
        );
        assert!(
            l[0].why.contains(
                "gfx9-generic passed over: gfx9-generic: ROCm 6.3 loads no generic code objects"
            ),
            "{}",
            l[0].why
        );
        assert!(lacks_on(
            &rows,
            &Databases::default(),
            &[req("gfx906")],
            Some(&rules("6.4"))
        )
        .is_empty());
        let l = lacks_on(
            &rows,
            &Databases::default(),
            &[req("gfx90a")],
            Some(&rules("4.2")),
        );
        assert!(
            l[0].why.starts_with(
                "gfx90a: ROCm 4.2's runtime does not know this processor (first in 4.3"
            ),
            "{}",
            l[0].why
        );
        // A native V6 code object on 6.2; CCOB v3 on 6.4; a kpack wrapper on 7.2.
        let mut v6 = rows.clone();
        v6[0].code_object_version = Some(6);
        let l = lacks_on(
            &v6,
            &Databases::default(),
            &[req("gfx90a")],
            Some(&rules("6.2")),
        );
        assert!(
            l[0].why
                .contains("gfx90a:xnack+ passed over: code object V6: ROCm 6.2 loads up to V5"),
            "{}",
            l[0].why
        );
        let mut c3 = rows.clone();
        for r in &mut c3 {
            r.container = "ccob".to_owned();
            r.ccob_version = Some(3);
        }
        let l = lacks_on(
            &c3,
            &Databases::default(),
            &[req("gfx90a")],
            Some(&rules("6.4")),
        );
        assert!(
            l[0].why
                .contains("CCOB v3: ROCm 6.4's HIP runtime unpacks CCOB v1, v2 only"),
            "{}",
            l[0].why
        );
        assert!(lacks_on(
            &c3,
            &Databases::default(),
            &[req("gfx90a")],
            Some(&rules("7.0"))
        )
        .is_empty());
        let mut k = rows.clone();
        for r in &mut k {
            r.container = "kpack".to_owned();
        }
        // In check's words: the loader's absence alone, for every target, code or none.
        let l = lacks_on(
            &k,
            &Databases::default(),
            &[req("gfx90a"), req("gfx1100")],
            Some(&rules("7.2")),
        );
        assert_eq!(l.len(), 2, "{l:?}");
        for x in &l {
            assert!(
                x.why.starts_with(
                    "kpack-split binary (HIPK wrapper): ROCm 7.2's HIP runtime has no kpack loader"
                ),
                "{}",
                x.why
            );
            assert!(!x.why.contains("nearest present"), "{}", x.why);
        }
        // The newest listed release changes nothing.
        for rs in [&rows, &v6, &c3, &k] {
            let all = [req("gfx90a"), req("gfx906"), req("gfx1100")];
            assert_eq!(
                lacks_on(rs, &Databases::default(), &all, Some(&rules("7.13"))),
                lacks(rs, &Databases::default(), &all)
            );
        }
    }

    /// A library without device code of its own that loads no kernel database (a CPU or CUDA
    /// build beside the ROCm ones in a wheel: every library's name is recorded) is no GPU
    /// library: it lacks nothing, even on a release that does not know the processor.
    #[test]
    fn a_library_without_device_code_lacks_nothing_on_any_release() {
        let req = TargetId::parse("gfx1100").unwrap();
        let databases = Databases {
            libraries: vec![(
                "w.whl".to_owned(),
                DatabaseLibrary {
                    path: "w.whl!pkg/libcpu.so".to_owned(),
                    database_found: false,
                },
            )],
            ..Default::default()
        };
        let rules =
            gfxkit_spec::rocm::Rules::of(gfxkit_spec::rocm::RocmVersion::parse("5.0").unwrap());
        assert!(lacks(&[], &databases, std::slice::from_ref(&req)).is_empty());
        let l = lacks_on(&[], &databases, std::slice::from_ref(&req), Some(&rules));
        assert!(l.is_empty(), "{l:?}");
    }

    #[test]
    fn compressed_shares_add_up_to_the_bundle() {
        let bundle = gfxkit_bundle::write_bundle(
            &[
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &[7u8; 3000][..]),
                ("hipv4-amdgcn-amd-amdhsa--gfx942", &[9u8; 1000][..]),
            ],
            4096,
        )
        .unwrap();
        let ccob = gfxkit_bundle::ccob::compress(
            &bundle,
            &gfxkit_bundle::ccob::CompressOptions::default(),
        )
        .unwrap();
        // Headers only: the digests decompress the bundle, once.
        let l = listing_of(&ccob, false);
        let (d, e) = crate::digest::file_digests(
            "b.hipfb",
            &ccob,
            crate::digest::Digesting::checked(true),
            &Default::default(),
        )
        .unwrap();
        assert!(e.is_empty(), "{e:?}");
        let rows = code_object_rows("b.hipfb", &l, None, &d);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].container, "ccob");
        let stored: u64 = rows.iter().map(|r| r.stored_bytes).sum();
        assert_eq!(stored, ccob.len() as u64);
        assert!(rows[0].stored_bytes > rows[1].stored_bytes);
        assert_eq!(rows[1].uncompressed_bytes, 1000);
        assert_eq!(
            rows[1].sha256.as_deref(),
            Some(crate::digest::sha256_hex(&[9u8; 1000]).as_str())
        );
    }
}
