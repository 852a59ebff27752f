//! The verification rules: what `gfxkit verify` reports for a file, as typed findings.
//!
//! Checked for every unit of device code: the structure of each bundle (entry table, payload
//! ranges, overlaps, duplicate IDs), a compressed bundle's declared sizes and MD5 hash (it is
//! decompressed), the syntax of every entry ID (device entries must use the 5-part form comgr
//! reads), target IDs the bundler would refuse together (`gfx90a` with `gfx90a:xnack+`), a
//! header longer than the 4096 bytes the HIP runtime reads, and that each device payload is an
//! AMDGPU code object (read as `inspect` reads it: header, section headers, metadata note)
//! built for the target its ID names. In host binaries, what host discovery
//! found (wrappers pointing nowhere, bundles past their section, damaged archives, ...).
//! Object bundles holding no code for an AMD GPU (another toolchain's: SYCL images for Intel
//! GPUs, OpenMP offload to NVIDIA GPUs) are not AMD device code and are passed over; a file
//! with nothing else is [`ErrorKind::OtherGpusOnly`].

use crate::error::{Error, ErrorKind, Result};
use crate::inventory::Inventory;
use crate::locate::{self, PayloadCheck};
use gfxkit_bundle::ccob::{self, HashCheck};
use gfxkit_bundle::{Bundle, EntryId, EntryTarget};
use gfxkit_host::{Form, Unit};
use rayon::prelude::*;
use serde::Serialize;

/// What a finding is about, typed (the message says it in words).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindingKind {
    /// The file's device code cannot be located at all (a damaged standalone bundle).
    Unreadable,
    /// Host discovery found damage or an oddity (its own typed kind and severity).
    Host(gfxkit_host::ProblemKind, gfxkit_host::Severity),
    /// A compressed bundle whose stored hash differs from the hash of its contents.
    HashMismatch {
        /// Stored hash.
        stored: u64,
        /// Hash of the decompressed bytes.
        computed: u64,
    },
    /// A compressed bundle that cannot be decompressed.
    Decompress,
    /// Damage in a bundle's structure (entry table, payload ranges, overlaps, duplicates).
    Structure,
    /// A bundle header longer than the HIP runtime reads.
    HeaderTooLong {
        /// The header's length.
        len: u64,
        /// What the runtime reads.
        limit: u64,
    },
    /// An entry ID that does not parse.
    BadId,
    /// A device entry ID not in the 5-part form comgr matches.
    NotCanonical {
        /// Its canonical form.
        canonical: String,
    },
    /// A device payload that is not an AMDGPU code object.
    NotCodeObject {
        /// Whether the payload starts with the ELF magic: a code object damaged or cut short,
        /// rather than bytes of another kind under a device entry.
        elf: bool,
    },
    /// A code object whose `e_flags` do not fit the target ID its entry names.
    EflagsMismatch,
    /// Two entries whose target IDs the bundler refuses together.
    Conflict {
        /// The other entry's index.
        other: usize,
    },
    /// Two entries of different HIP kinds naming the same target: only one can be picked.
    SameTarget {
        /// The other entry's index.
        other: usize,
    },
    /// A problem of a `.kpack` archive or of a split binary against its archives
    /// ([`gfxkit_kpack::verify`]).
    Kpack,
    /// A problem of a kernel database: a `.kdb` record that does not decode or hash, an
    /// `.aks2` kernel that is not a code object, a Tensile row whose files are missing or
    /// lack solutions' symbols, a library's architecture its database lacks.
    Database,
}

/// One finding, with where it is (its JSON form is what `verify --json` prints).
#[derive(Serialize, Debug, Clone)]
pub struct Finding {
    /// Bundle index in the file.
    pub bundle: Option<usize>,
    /// Bundle offset in the file (for problems outside a bundle, where the problem is).
    pub bundle_offset: Option<u64>,
    /// Archive member, for archives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// ELF section, for host binaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Entry index in header order.
    pub entry: Option<usize>,
    /// Entry ID as stored.
    pub id: Option<String>,
    /// What is wrong.
    pub message: String,
    /// What is wrong, typed.
    #[serde(skip)]
    pub kind: FindingKind,
}

/// The verification of one file (its JSON form is the file object of `verify --json`).
#[derive(Serialize, Debug, Clone)]
pub struct Verification {
    /// The path as given.
    pub path: String,
    /// No problem found.
    pub ok: bool,
    /// Bundles found.
    pub bundles: usize,
    /// Entries found.
    pub entries: usize,
    /// Problems found.
    pub problems: Vec<Finding>,
    /// For a kernel database read without its directory (a package member), what is checked
    /// once the names of the package's members are known ([`crate::database::names_beside`]).
    #[serde(skip)]
    pub unresolved: Beside,
}

/// What a kernel database read without its directory leaves to be checked against the names
/// beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Beside {
    /// Nothing: read with its directory, or not a database that looks beside itself.
    #[default]
    Nothing,
    /// A Tensile index's processor rows.
    TensileRows(Vec<BesideRow>),
    /// A hipBLASLt mapping, read.
    Mapping(gfxkit_kernel_db::mapping::Mapping),
    /// An aiter kernel map's rows: (row, line, the code object it names).
    AiterFiles(Vec<(usize, u64, String)>),
    /// A lazy library's shard index's rows, with the kernels their solutions run: checked
    /// against the function symbols of the package's members that are its code
    /// ([`crate::database::shard_findings`]).
    ShardKernels(Vec<ShardRow>),
}

/// One row of a lazy library's shard index (its rows name no processor) and the function
/// symbols of the kernels its solutions run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardRow {
    /// The row's position among the index's hardware rows.
    pub position: usize,
    /// The CU count the row asks for, when it asks for one.
    pub cu_count: Option<u64>,
    /// The kernels of the solutions it reaches, in their order.
    pub kernels: Vec<String>,
}

/// One processor row of a Tensile index, as the names it needs beside the index are found
/// from it ([`crate::database::row_files`]): kept for an index read without its directory (a
/// package member), and checked against the package's members once they are known
/// ([`crate::database::names_beside`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BesideRow {
    /// The row's position among the index's hardware rows.
    pub position: usize,
    /// The CU count the row asks for, when it asks for one.
    pub cu_count: Option<u64>,
    /// The processor it is for (the index's own for a catch-all row of a per-processor
    /// index).
    pub processor: String,
    /// A lazy master's placeholders (its shards' names).
    pub placeholders: Vec<String>,
}

struct Ctx<'p> {
    problems: &'p mut Vec<Finding>,
    /// The kernels of each entry whose code object reads, for the judging commands
    /// ([`judge`]).
    kernels: EntryKernels,
    bundle: usize,
    offset: u64,
    member: Option<String>,
    section: Option<String>,
}

impl Ctx<'_> {
    fn add(
        &mut self,
        entry: Option<usize>,
        id: Option<&str>,
        kind: FindingKind,
        message: impl Into<String>,
    ) {
        self.problems.push(Finding {
            bundle: Some(self.bundle),
            bundle_offset: Some(self.offset),
            member: self.member.clone(),
            section: self.section.clone(),
            entry,
            id: id.map(str::to_owned),
            message: message.into(),
            kind,
        });
    }
}

/// Checks the unit `b` by verify's rules, adding what is wrong to `problems`. Returns its
/// number of entries and the kernels of each entry whose code object reads.
fn check_bundle(b: &Unit<'_>, problems: &mut Vec<Finding>) -> (usize, EntryKernels) {
    let mut cx = Ctx {
        problems,
        kernels: Vec::new(),
        bundle: b.index,
        offset: b.offset,
        member: b.member.clone(),
        section: b.section.clone(),
    };
    if b.form != Form::Bundle {
        let entries: Vec<(usize, &str, Option<&[u8]>)> = b
            .loose
            .iter()
            .enumerate()
            // Bitcode and SPIR-V images are not code objects: nothing to check in their payload.
            .map(|(i, e)| (i, e.id.as_str(), (e.ext == "co").then_some(e.payload)))
            .collect();
        check_entries(&mut cx, &entries);
        return (entries.len(), cx.kernels);
    }
    let contents: std::borrow::Cow<'_, [u8]> = match &b.ccob {
        None => std::borrow::Cow::Borrowed(b.bytes),
        Some(_) => {
            let opts = b.limits.decompress_options_hash(HashCheck::Warn);
            match ccob::decompress_ccob_at(b.cursor(), &opts) {
                Ok(d) => {
                    if !d.hash_ok() {
                        cx.add(
                            None,
                            None,
                            FindingKind::HashMismatch {
                                stored: d.header.hash,
                                computed: d.computed_hash,
                            },
                            format!(
                                "compressed bundle hash mismatch: stored {:#018x}, computed {:#018x}",
                                d.header.hash, d.computed_hash
                            ),
                        );
                    }
                    std::borrow::Cow::Owned(d.data)
                }
                Err(e) => {
                    cx.add(
                        None,
                        None,
                        FindingKind::Decompress,
                        format!("cannot decompress: {e}"),
                    );
                    return (0, Vec::new());
                }
            }
        }
    };
    // A stored bundle's damage is named at file offsets; a compressed one's at offsets of its
    // decompressed bytes, and said so.
    let stored = b.ccob.is_none();
    let read = if stored {
        Bundle::parse_lenient_at(b.cursor())
    } else {
        Bundle::parse_lenient(&contents)
    };
    let said = |d: &gfxkit_bundle::Error| match d.offset {
        Some(o) if stored => format!("{} (at offset {o:#x})", d.kind),
        Some(o) => format!("{} (at offset {o:#x} of the decompressed bundle)", d.kind),
        None => d.kind.to_string(),
    };
    let (bundle, damage) = match read {
        Ok(x) => x,
        Err(e) => {
            cx.add(e.entry, None, FindingKind::Structure, said(&e));
            return (0, Vec::new());
        }
    };
    for d in damage {
        cx.add(d.entry, None, FindingKind::Structure, said(&d));
    }
    if bundle.header_exceeds_hip_limit() {
        cx.add(
            None,
            None,
            FindingKind::HeaderTooLong {
                len: bundle.header_len(),
                limit: gfxkit_bundle::limits::HIP_HEADER_READ_LIMIT,
            },
            format!(
                "header is {} bytes; the HIP runtime reads only the first {} bytes of a bundle and cannot load it",
                bundle.header_len(),
                gfxkit_bundle::limits::HIP_HEADER_READ_LIMIT
            ),
        );
    }
    let entries: Vec<(usize, &str, Option<&[u8]>)> = bundle
        .entries()
        .iter()
        .map(|e| (e.index, e.id, Some(e.payload)))
        .collect();
    check_entries(&mut cx, &entries);
    (bundle.entries().len(), cx.kernels)
}

/// Checks entry IDs (syntax, the 5-part form, the bundler's conflict rule) and that each
/// device payload's `e_flags` fit the target ID its entry names.
/// A payload of `None` is not checked (bitcode images).
fn check_entries(cx: &mut Ctx<'_>, entries: &[(usize, &str, Option<&[u8]>)]) {
    // The header check, then (for AMDGPU code objects) the parse `inspect` and `kernels` do:
    // section headers and the metadata note, so that a truncated or damaged code object does
    // not pass. In parallel: this is most of verify's work on a large library.
    let checks: Vec<(PayloadCheck, Option<Result<usize, String>>)> = entries
        .par_iter()
        .map(|&(_, raw, payload)| {
            let check = payload.map_or(PayloadCheck::NotApplicable, |p| {
                locate::check_payload(raw, p)
            });
            // The kernels of a code object that reads, or why it does not.
            let parse = match (&check, payload) {
                (PayloadCheck::Checked { .. }, Some(p)) => Some(
                    gfxkit_code_object::CodeObject::parse(p)
                        .map(|co| co.kernels().len())
                        .map_err(|e| e.in_code_object()),
                ),
                _ => None,
            };
            (check, parse)
        })
        .collect();
    let mut known: Vec<(usize, EntryId)> = Vec::new();
    for (&(index, raw, payload), (check, parse)) in entries.iter().zip(checks) {
        let parse = match parse {
            Some(Ok(kernels)) => {
                cx.kernels.push((raw.to_owned(), kernels));
                None
            }
            Some(Err(e)) => Some(e),
            None => None,
        };
        let id = match EntryId::parse(raw) {
            Ok(id) => id,
            Err(err) => {
                cx.add(Some(index), Some(raw), FindingKind::BadId, err.to_string());
                if let Some(m) = payload.and_then(|p| locate::contradiction(raw, p)) {
                    cx.add(Some(index), Some(raw), FindingKind::EflagsMismatch, m);
                }
                continue;
            }
        };
        if !id.is_host() && !id.is_canonical() && id.triple().is_amdhsa() {
            cx.add(
                Some(index),
                Some(raw),
                FindingKind::NotCanonical {
                    canonical: id.canonical(),
                },
                format!(
                    "not in the 5-part form the HIP runtime (comgr) matches; canonical: {}",
                    id.canonical()
                ),
            );
        }
        let elf = payload.is_some_and(|p| p.starts_with(b"\x7fELF"));
        if let Some(err) = parse {
            cx.add(
                Some(index),
                Some(raw),
                FindingKind::NotCodeObject { elf },
                format!("payload is not a readable AMDGPU code object: {err}"),
            );
        }
        match check {
            // A code object under an ID that names no AMDGPU target.
            PayloadCheck::NotApplicable => {
                if let Some(m) = payload.and_then(|p| locate::contradiction(raw, p)) {
                    cx.add(Some(index), Some(raw), FindingKind::EflagsMismatch, m);
                }
            }
            PayloadCheck::Checked { mismatch: None, .. } => {}
            PayloadCheck::NotCodeObject(err) => cx.add(
                Some(index),
                Some(raw),
                FindingKind::NotCodeObject { elf },
                format!("payload is not an AMDGPU code object: {err}"),
            ),
            PayloadCheck::Checked {
                mismatch: Some(m), ..
            } => cx.add(Some(index), Some(raw), FindingKind::EflagsMismatch, m),
        }
        known.push((index, id));
    }
    // The bundler's conflict rule (per kind and triple, `amdgcn` and `amdgpu<subarch>` one).
    let pos = |i: usize| known.iter().position(|(k, _)| *k == i);
    for (ib, ia) in gfxkit_bundle::unbundle::conflicts(known.iter().map(|(i, id)| (*i, id))) {
        let (Some(pa), Some(pb)) = (pos(ia), pos(ib)) else {
            continue;
        };
        let (a, b) = (&known[pa].1, &known[pb].1);
        let why = gfxkit_bundle::unbundle::conflict_reason(b.target(), a.target());
        cx.add(
            Some(ia),
            Some(a.raw()),
            FindingKind::Conflict { other: ib },
            format!("conflicts with entry {ib} ({}): {why}", b.raw()),
        );
    }
    // Two entries for one target under the two HIP kinds (`hip` and `hipv4`, in either triple
    // spelling, `amdgcn` or `amdgpu9.0a`): the runtime picks one of them.
    for (i, (ia, a)) in known.iter().enumerate() {
        if let Some((ib, b)) = known[..i].iter().find(|(_, b)| {
            matches!(a.target(), EntryTarget::Known(_)) && a.kind() != b.kind() && a.same_target(b)
        }) {
            cx.add(
                Some(*ia),
                Some(a.raw()),
                FindingKind::SameTarget { other: *ib },
                format!(
                    "same target as entry {ib} ({}); only one can be picked",
                    b.raw()
                ),
            );
        }
    }
}

/// Verifies the device code of one file's bytes, named `name` in the report. The only error
/// is a file without device code.
pub fn verify_bytes(name: &str, data: &[u8]) -> Result<Verification> {
    verify(name, &Inventory::of(data))
}

/// The finding of a problem host discovery met, `None` for what is no finding here: an entry
/// that contradicts its payload (a finding of the entry checks) and a note (nothing wrong).
pub(crate) fn host_finding(p: &gfxkit_host::Problem) -> Option<Finding> {
    if matches!(p.kind, gfxkit_host::ProblemKind::EntryContradiction { .. })
        || p.severity == gfxkit_host::Severity::Note
    {
        return None;
    }
    Some(Finding {
        bundle: None,
        bundle_offset: Some(p.location.offset),
        member: p.location.member.clone(),
        section: p.location.section.clone(),
        entry: None,
        id: None,
        message: format!("{}: {}", p.severity, p.kind),
        kind: FindingKind::Host(p.kind.clone(), p.severity),
    })
}

/// Verifies an inventory, named `name` in the report. The only error is a file without
/// device code.
pub fn verify(name: &str, inv: &Inventory<'_>) -> Result<Verification> {
    let name = name.to_owned();
    let mut problems = Vec::new();
    if let Some(e) = &inv.error {
        problems.push(Finding {
            bundle: None,
            bundle_offset: None,
            member: None,
            section: None,
            entry: None,
            id: None,
            message: e.to_string(),
            kind: FindingKind::Unreadable,
        });
        return Ok(Verification {
            path: name,
            ok: false,
            bundles: 0,
            entries: 0,
            problems,
            unresolved: Beside::Nothing,
        });
    }
    // Object bundles of other toolchains (SYCL images for Intel GPUs, OpenMP offload to
    // NVIDIA GPUs) hold no device code for an AMD GPU: their entry IDs follow another
    // toolchain's rules and no AMD GPU is asked to run them. Passed over, as `check` passes
    // over them ([`gfxkit_host::unit::holds_amd_gpu_code`]); `list` still shows them.
    let units: Vec<&Unit<'_>> = inv
        .units
        .iter()
        .filter(|u| u.holds_amd_gpu_code())
        .collect();
    if units.is_empty() && inv.problems.is_empty() {
        return Err(Error::new(
            not_for_amd_gpus(inv).unwrap_or(ErrorKind::NoDeviceCode),
        ));
    }
    // What host discovery found: wrappers pointing nowhere or outside the file, bundles
    // running past their section, bundles no wrapper registers, unreadable sections.
    problems.extend(inv.problems.iter().filter_map(host_finding));
    // Units in parallel (each decompressed and its code objects read), findings in file order.
    let per_unit: Vec<(Vec<Finding>, usize)> = units
        .par_iter()
        .map(|b| {
            let mut found = Vec::new();
            let (n, _) = check_bundle(b, &mut found);
            (found, n)
        })
        .collect();
    let mut entries = 0;
    for (found, n) in per_unit {
        problems.extend(found);
        entries += n;
    }
    Ok(Verification {
        path: name,
        ok: problems.is_empty(),
        bundles: units.len(),
        entries,
        problems,
        unresolved: Beside::Nothing,
    })
}

impl FindingKind {
    /// Whether the finding is damage to the bytes the runtime would load: a compressed bundle
    /// that does not decompress or whose hash does not match, a bundle whose structure is
    /// broken, a code object (ELF) that does not read, a code object built for another target
    /// than its entry names. Findings about form (an ID not in the 5-part form, a header
    /// longer than the runtime reads, conflicting IDs) and payloads of another kind than ELF
    /// under a device entry are not damage (`verify` still reports them).
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            FindingKind::HashMismatch { .. }
                | FindingKind::Decompress
                | FindingKind::Structure
                | FindingKind::NotCodeObject { elf: true }
                | FindingKind::EflagsMismatch
        )
    }
}

/// The damage ([`FindingKind::is_damage`]) in the units of device code of `inv`, found by the
/// rules `verify` applies (every compressed bundle decoded and its hash checked, every code
/// object read), as errors at each unit's place (member, section, bundle offset) naming the
/// entry and what failed. `doctor`, `check` and `select` judge a file with it, so that a file
/// `verify` finds damaged never runs for them. Units at `skip` (file offsets of units already
/// known to be unreadable) are not decoded again; object bundles of other GPUs are passed over,
/// as `verify` passes over them.
pub fn damage(inv: &Inventory<'_>, skip: &[u64]) -> Vec<gfxkit_host::Problem> {
    judge(inv, skip).damage
}

/// The kernels of each entry of a unit whose code object reads: (entry ID as stored, number of
/// its `amdhsa.kernels`).
pub type EntryKernels = Vec<(String, usize)>;

/// What [`judge`] finds in a file's units of device code.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    /// The damage, as [`damage`] returns it.
    pub damage: Vec<gfxkit_host::Problem>,
    /// Per unit of the file (its index among the inventory's units), the number of kernels
    /// (`amdhsa.kernels`) of each entry whose code object reads, by entry ID as stored: what
    /// a code object the runtime picks gives the device (a code object without kernels
    /// loads, and any launch from it fails). Units not read (skipped, of other GPUs) are
    /// absent.
    pub kernels: std::collections::BTreeMap<usize, EntryKernels>,
}

/// [`damage`], with the kernels of every code object read on the way (the judging reads every
/// one of them anyway).
pub fn judge(inv: &Inventory<'_>, skip: &[u64]) -> Judged {
    use gfxkit_host::{Location, Problem, ProblemKind};
    let per_unit: Vec<(usize, Vec<Problem>, EntryKernels)> = inv
        .units
        .par_iter()
        .enumerate()
        .filter(|(_, b)| !skip.contains(&b.offset) && b.holds_amd_gpu_code())
        .map(|(i, b)| {
            let mut found = Vec::new();
            let (_, kernels) = check_bundle(b, &mut found);
            // What the inventory already holds as a problem of the file (an entry that
            // contradicts its payload, where the payload is at hand undecoded; a standalone
            // code object that does not read) is not said twice.
            let known = |k: &FindingKind| match (b.form, b.ccob.is_some()) {
                (Form::Bundle, true) => false,
                (Form::CodeObject, _) => {
                    matches!(
                        k,
                        FindingKind::EflagsMismatch | FindingKind::NotCodeObject { .. }
                    )
                }
                _ => matches!(k, FindingKind::EflagsMismatch),
            };
            let problems = found
                .into_iter()
                .filter(|f| f.kind.is_damage() && !known(&f.kind))
                .map(|f| {
                    let what = match (f.entry, &f.id) {
                        (Some(i), Some(id)) => format!("entry {i} ({id}): {}", f.message),
                        (Some(i), None) => format!("entry {i}: {}", f.message),
                        _ => f.message,
                    };
                    Problem::error(
                        Location {
                            member: b.member.clone(),
                            section: b.section.clone(),
                            offset: b.offset,
                            size: b.bytes.len() as u64,
                        },
                        ProblemKind::BadBundle(what),
                    )
                })
                .collect::<Vec<_>>();
            (i, problems, kernels)
        })
        .collect();
    let mut judged = Judged::default();
    for (i, problems, kernels) in per_unit {
        judged.damage.extend(problems);
        judged.kernels.insert(i, kernels);
    }
    judged
}

/// The members of one package, verified one by one, sorted out: when some member holds
/// device code, the members without any (`no_device_code` tells their error: a CPU-only
/// library in a wheel) are not failures but named apart, in package order; when none does,
/// every result is kept as it is (the package holds no device code, as a file without a
/// bundle). Returns the results kept and the names of members without device code.
#[allow(clippy::type_complexity)]
pub fn package_members<T, E>(
    results: Vec<(String, std::result::Result<T, E>)>,
    no_device_code: impl Fn(&E) -> bool,
) -> (Vec<(String, std::result::Result<T, E>)>, Vec<String>) {
    if !results.iter().any(|(_, r)| r.is_ok()) {
        return (results, Vec::new());
    }
    let mut kept = Vec::new();
    let mut without = Vec::new();
    for (name, r) in results {
        match r {
            Err(e) if no_device_code(&e) => without.push(name),
            r => kept.push((name, r)),
        }
    }
    (kept, without)
}
/// The entry IDs of the file's object bundles for other GPUs than AMD's (those of units that
/// hold no AMD GPU code, [`Unit::holds_amd_gpu_code`]), host entries left out: they are no
/// GPU's.
pub fn other_gpu_entries(inv: &Inventory<'_>) -> Vec<String> {
    inv.units
        .iter()
        .filter(|u| !u.holds_amd_gpu_code())
        .flat_map(|u| u.loose.iter().map(|e| e.id.clone()))
        .filter(|id| !EntryId::parse(id).map_or(id.starts_with("host-"), |e| e.is_host()))
        .collect()
}

/// Why a file without device code for an AMD GPU holds device code all the same, when it
/// does: the entry IDs of its object bundles for other GPUs ([`ErrorKind::OtherGpusOnly`]; host
/// entries are no GPU's), else its CUDA fat binaries ([`ErrorKind::NvidiaOnly`]). `None` for a
/// file with device code for an AMD GPU (units or `HIPK` wrappers), with none at all, or with
/// damage found by host discovery (which may be what hides its AMD device code).
pub fn not_for_amd_gpus(inv: &Inventory<'_>) -> Option<ErrorKind> {
    if inv.units.iter().any(Unit::holds_amd_gpu_code)
        || !inv.kpack().is_empty()
        || !inv.problems.is_empty()
    {
        return None;
    }
    let ids = other_gpu_entries(inv);
    let nvidia: Vec<String> = inv
        .discovery
        .nvidia
        .iter()
        .map(crate::inventory::nvidia_label)
        .collect();
    if !ids.is_empty() {
        Some(ErrorKind::OtherGpusOnly(ids))
    } else if !nvidia.is_empty() {
        Some(ErrorKind::NvidiaOnly(nvidia))
    } else {
        None
    }
}
