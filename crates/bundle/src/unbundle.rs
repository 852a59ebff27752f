//! Unbundling and bundling rules of clang-offload-bundler, as library functions the CLI maps
//! its options onto one to one.
//!
//! - [`check_targets`]: the checks clang applies to `-targets` before doing anything
//!   (duplicates, known kinds and triples, host count, conflicting target IDs).
//! - [`unbundle`]: one output per requested target; each entry of the input serves the first
//!   compatible request not yet served; missing targets are an error unless allowed; an input
//!   with no bundle at all is host-only (the host target gets the whole input, others nothing).

use crate::entry_id::{standardize, EntryId, EntryTarget, OffloadKind, StdTarget, Triple};
use crate::error::{Error, ErrorKind, Result};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Options of an unbundling run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnbundleOptions {
    /// `-allow-missing-bundles`: a requested target with no compatible entry gets an empty
    /// output instead of failing the run.
    pub allow_missing: bool,
    /// `-hip-openmp-compatible`: HIP kinds and `openmp` may serve each other.
    pub hip_openmp_compatible: bool,
}

/// What a requested target receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extracted<'a> {
    /// The payload of the entry at this index (in the order entries were given).
    Entry {
        /// Index of the entry.
        index: usize,
        /// Its payload.
        payload: &'a [u8],
    },
    /// The whole input (the host target of an input that holds no bundle).
    WholeInput(&'a [u8]),
    /// Nothing (an allowed missing bundle, or a device target of a host-only input).
    Empty,
}

impl<'a> Extracted<'a> {
    /// The bytes to write for this target.
    pub fn bytes(&self) -> &'a [u8] {
        match self {
            Extracted::Entry { payload, .. } => payload,
            Extracted::WholeInput(d) => d,
            Extracted::Empty => &[],
        }
    }
}

/// Whether the run bundles or unbundles (the host-count rule differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Bundling: exactly one host target unless every target is HIP.
    Bundle,
    /// Unbundling: at most one host target.
    Unbundle,
}

/// Why `-targets` is refused, in clang's words (`Display`), in the order clang checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetsError {
    /// No target at all.
    None,
    /// A target given twice, as written.
    Duplicate,
    /// A target whose offload kind or triple clang 19 does not know.
    Unknown {
        /// As given.
        given: String,
        /// The kind, when it is the unknown part.
        kind: Option<String>,
        /// The triple, when it is the unknown part.
        triple: Option<String>,
    },
    /// Two targets of one kind and triple that conflict (`gfx90a` and `gfx90a:xnack+`), as
    /// written, in clang's order.
    Conflict(String, String),
    /// The number of host targets does not fit the mode.
    HostCount(usize),
    /// A target clang would accept that is no entry ID (gfxkit parses every one up front:
    /// clang 19 fails later, or writes it into the bundle).
    BadId {
        /// As given.
        given: String,
        /// Why it does not parse.
        error: crate::entry_id::EntryIdError,
    },
}

impl std::fmt::Display for TargetsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetsError::None => write!(
                f,
                "for the --targets option: must be specified at least once!"
            ),
            TargetsError::Duplicate => write!(f, "Duplicate targets are not allowed"),
            TargetsError::Unknown {
                given,
                kind,
                triple,
            } => {
                write!(f, "invalid target '{given}'")?;
                if let Some(k) = kind {
                    write!(f, ", unknown offloading kind '{k}'")?;
                }
                if let Some(t) = triple {
                    write!(f, ", unknown target triple '{t}'")?;
                }
                Ok(())
            }
            TargetsError::Conflict(a, b) => {
                write!(
                    f,
                    "Cannot bundle inputs with conflicting targets: '{a}' and '{b}'"
                )
            }
            TargetsError::HostCount(n) => {
                write!(f, "expecting exactly one host target but got {n}")
            }
            TargetsError::BadId { given, error } => write!(f, "invalid target '{given}': {error}"),
        }
    }
}

impl std::error::Error for TargetsError {}

/// `-targets` checked: each target standardized as clang writes it, its entry ID, and the
/// index of the host target.
#[derive(Debug, Clone)]
pub struct Targets {
    /// The targets as given, standardized ([`standardize`]), in order.
    pub targets: Vec<StdTarget>,
    /// Their entry IDs (of what is written), in order.
    pub ids: Vec<EntryId>,
    /// The index of the (last) host target.
    pub host: Option<usize>,
}

/// Checks `-targets` as clang does, in its order: none given twice (as written), every kind
/// and triple known, no two of one kind and triple in conflict (`gfx90a` with
/// `gfx90a:xnack+`, compared in clang's order), the host count of the mode (one for bundling
/// unless every target is HIP, at most one for unbundling); then every target parses as an
/// entry ID.
pub fn check_targets<S: AsRef<str>>(
    targets: &[S],
    mode: Mode,
) -> std::result::Result<Targets, TargetsError> {
    if targets.is_empty() {
        return Err(TargetsError::None);
    }
    let mut seen = HashSet::new();
    let mut std_targets = Vec::with_capacity(targets.len());
    let mut host = None;
    let mut hosts = 0usize;
    let mut hip_only = true;
    for t in targets {
        let t = t.as_ref();
        if !seen.insert(t) {
            return Err(TargetsError::Duplicate);
        }
        let s = standardize(t);
        if !s.kind_valid || !s.triple_valid {
            return Err(TargetsError::Unknown {
                given: t.to_owned(),
                kind: (!s.kind_valid).then(|| s.kind.clone()),
                triple: (!s.triple_valid).then(|| s.triple.clone()),
            });
        }
        if s.kind == "host" {
            hosts += 1;
            host = Some(std_targets.len());
        }
        hip_only &= s.kind == "hip" || s.kind == "hipv4";
        std_targets.push(s);
    }
    // Conflicts, in clang's order (sorted by kind, triple and target ID).
    let parsed: Vec<(usize, EntryId)> = std_targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| EntryId::parse(&t.written).ok().map(|id| (i, id)))
        .collect();
    let mut order: Vec<(usize, &EntryId)> = parsed.iter().map(|(i, id)| (*i, id)).collect();
    order.sort_by(|(a, _), (b, _)| {
        let (a, b) = (&std_targets[*a], &std_targets[*b]);
        (&a.kind, &a.triple, &a.target_id).cmp(&(&b.kind, &b.triple, &b.target_id))
    });
    if let Some((a, b)) = find_conflict(order) {
        return Err(TargetsError::Conflict(
            std_targets[a].written.clone(),
            std_targets[b].written.clone(),
        ));
    }
    let fits = match mode {
        Mode::Unbundle => hosts <= 1,
        Mode::Bundle => hosts == 1 || hip_only,
    };
    if !fits {
        return Err(TargetsError::HostCount(hosts));
    }
    let mut ids = Vec::with_capacity(std_targets.len());
    for t in &std_targets {
        let id = EntryId::parse(&t.written).map_err(|error| TargetsError::BadId {
            given: t.given.clone(),
            error,
        })?;
        ids.push(id);
    }
    Ok(Targets {
        targets: std_targets,
        ids,
        host,
    })
}

/// The bundling conflict rule for two targets: the same processor, one naming target-ID
/// features and the other none (`gfx90a` with `gfx90a:xnack+`). Known target IDs follow
/// [`gfxkit_target_id::check_conflicts`]; targets whose processor gfxkit does not know are
/// compared by their text (the processor is what comes before the first `:`). Kinds and
/// triples are not compared: callers group by them.
pub fn targets_conflict(a: &EntryTarget, b: &EntryTarget) -> bool {
    match (a, b) {
        (EntryTarget::Known(x), EntryTarget::Known(y)) => {
            gfxkit_target_id::check_conflicts([x, y]).is_err()
        }
        (EntryTarget::None, _) | (_, EntryTarget::None) => false,
        _ => {
            processor_key(a) == processor_key(b)
                && a.to_string().contains(':') != b.to_string().contains(':')
        }
    }
}

/// Why two targets that [`targets_conflict`] conflict, in words: the target-ID rule's own
/// message for known processors (`earlier` first, as the bundler walks them), the general
/// rule otherwise.
pub fn conflict_reason(earlier: &EntryTarget, later: &EntryTarget) -> String {
    match (earlier, later) {
        (EntryTarget::Known(x), EntryTarget::Known(y)) => gfxkit_target_id::check_conflicts([x, y])
            .err()
            .map(|c| c.to_string()),
        _ => None,
    }
    .unwrap_or_else(|| "for one processor, either every ID names features or none does".to_owned())
}

/// The processor a target names, for grouping: the table's name, or the text before `:`.
fn processor_key(t: &EntryTarget) -> String {
    match t {
        EntryTarget::Known(x) => x.processor().name.to_owned(),
        EntryTarget::Unknown(s) => s.split(':').next().unwrap_or("").to_owned(),
        EntryTarget::None => String::new(),
    }
}

/// The triple as the conflict rule groups IDs: `amdgcn` and `amdgpu<subarch>` are one
/// architecture (LLVM main's triples name the same code objects), other triples as written.
fn triple_key(t: &Triple) -> String {
    if t.is_amdgpu() {
        format!("amdgpu-{}-{}-{}", t.vendor, t.os, t.env)
    } else {
        t.to_string()
    }
}

/// The first pair of IDs the bundler refuses together, walking `ids` in the order given: per
/// kind and triple, the first ID of each processor is compared with every later one
/// ([`targets_conflict`]). Returns the items' indexes as `(first, later)`. clang walks the
/// target IDs of each kind and triple in sorted text order; pass them so to report its pair.
pub fn find_conflict<'a>(
    ids: impl IntoIterator<Item = (usize, &'a EntryId)>,
) -> Option<(usize, usize)> {
    conflicts(ids).into_iter().next()
}

/// Every ID the bundler refuses beside an earlier one, walking `ids` in the order given: per
/// kind and triple ([`find_conflict`]'s groups), each ID paired with the first ID of its
/// processor it conflicts with ([`targets_conflict`]), as `(earlier, later)` indexes in the
/// order of the later ones. The first pair is [`find_conflict`]'s.
pub fn conflicts<'a>(ids: impl IntoIterator<Item = (usize, &'a EntryId)>) -> Vec<(usize, usize)> {
    type Key = (OffloadKind, String, String);
    let mut groups: HashMap<Key, Vec<(usize, &EntryId)>> = HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids {
        if id.target().is_none() {
            continue;
        }
        let key = (
            id.kind(),
            triple_key(id.triple()),
            processor_key(id.target()),
        );
        let group = groups.entry(key).or_default();
        if let Some(&(f, _)) = group
            .iter()
            .find(|(_, earlier)| targets_conflict(earlier.target(), id.target()))
        {
            out.push((f, i));
        }
        group.push((i, id));
    }
    out
}

/// The bundling conflict rule over a list of IDs ([`find_conflict`] in the order given).
pub fn check_conflicts(ids: &[EntryId]) -> Result<()> {
    match find_conflict(ids.iter().enumerate()) {
        None => Ok(()),
        Some((a, b)) => Err(Error::new(ErrorKind::Conflict(format!(
            "cannot bundle inputs with conflicting targets: '{}' and '{}' (for one processor, either every ID names a feature or none does)",
            ids[a].raw(),
            ids[b].raw()
        )))),
    }
}

/// clang's message for requested targets no entry serves: `Can't find bundles for a, b, and
/// c` (names sorted).
pub fn missing_message(names: &[&str]) -> String {
    format!("Can't find bundles for {}", join_sorted(names))
}

/// Joins names the way clang's "Can't find bundles for" message does: sorted, then `a and b`
/// or `a, b, and c`.
fn join_sorted(names: &[&str]) -> String {
    let sorted: BTreeSet<&str> = names.iter().copied().collect();
    let v: Vec<&str> = sorted.into_iter().collect();
    match v.len() {
        0 => String::new(),
        1 => v[0].to_owned(),
        2 => format!("{} and {}", v[0], v[1]),
        n => format!("{}, and {}", v[..n - 1].join(", "), v[n - 1]),
    }
}

/// Unbundles: for each requested target (in order), what it receives.
///
/// `entries` are the input's entries in file order as `(id, payload)`; pass an empty slice for
/// an input that holds no bundle. A requested target without a compatible entry is an error
/// (`Can't find bundles for ...`, names in clang's form) unless `allow_missing`; when nothing
/// at all was found, the host target receives `input` whole and every other target nothing, as
/// clang does. Each entry serves the first requested target, in request
/// order, that it is compatible with ([`EntryId::is_compatible_with`]) and that is not yet
/// served. Entry IDs that do not parse are an error naming the entry.
pub fn unbundle<'a>(
    entries: &[(&str, &'a [u8])],
    input: &'a [u8],
    requested: &[EntryId],
    opts: &UnbundleOptions,
) -> Result<Vec<Extracted<'a>>> {
    let mut out: Vec<Option<Extracted<'a>>> = vec![None; requested.len()];
    let mut found_host = false;
    for (index, (id, payload)) in entries.iter().enumerate() {
        let entry_id = EntryId::parse(id)
            .map_err(|e| Error::new(ErrorKind::InvalidEntryId(e)).in_entry(index))?;
        let slot = requested.iter().enumerate().position(|(i, r)| {
            out[i].is_none() && entry_id.is_compatible_with(r, opts.hip_openmp_compatible)
        });
        if let Some(i) = slot {
            out[i] = Some(Extracted::Entry { index, payload });
            if entry_id.is_host() {
                found_host = true;
            }
        }
    }
    let missing: Vec<String> = requested
        .iter()
        .zip(&out)
        .filter(|(_, o)| o.is_none())
        .map(|(r, _)| r.clang_form())
        .collect();
    let none_found = missing.len() == requested.len();
    if !opts.allow_missing && !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(String::as_str).collect();
        return Err(Error::new(ErrorKind::Missing(missing_message(&names))));
    }
    if none_found {
        return Ok(requested
            .iter()
            .map(|r| {
                if r.is_host() {
                    Extracted::WholeInput(input)
                } else {
                    Extracted::Empty
                }
            })
            .collect());
    }
    let host_requested = requested.iter().any(|r| r.is_host());
    if host_requested && !found_host && !opts.allow_missing {
        return Err(Error::new(ErrorKind::Missing(
            "Can't find bundle for the host target".into(),
        )));
    }
    Ok(out
        .into_iter()
        .map(|o| o.unwrap_or(Extracted::Empty))
        .collect())
}

/// Every request that an entry with ID `entry` is compatible with (the archive rule: one
/// code object may go to several targets).
pub fn compatible_targets<'r>(
    entry: &EntryId,
    requested: &'r [EntryId],
    hip_openmp_compatible: bool,
) -> Vec<&'r EntryId> {
    requested
        .iter()
        .filter(|r| entry.is_compatible_with(r, hip_openmp_compatible))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<EntryId> {
        v.iter().map(|s| EntryId::parse(s).unwrap()).collect()
    }

    #[test]
    fn every_conflict_is_listed_across_triple_spellings() {
        let v = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack-",
            "hipv4-amdgcn-amd-amdhsa-unknown-gfx90a:xnack-",
            "hipv4-amdgcn-amd-amdhsa--gfx1030",
        ]);
        // `hip` and `hipv4` are grouped apart, as the bundler groups them.
        assert_eq!(conflicts(v.iter().enumerate()), [(0, 1)]);
        assert_eq!(find_conflict(v.iter().enumerate()), Some((0, 1)));
        let w = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
        ]);
        assert_eq!(conflicts(w.iter().enumerate()), [(0, 1), (0, 2)]);
    }

    const H: &str = "host-x86_64-unknown-linux--";
    const A: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
    const XP: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
    const XM: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-";

    #[test]
    fn the_conflict_rule_pairs_the_first_of_a_processor_with_a_later_one() {
        let v = ids(&[XM, XP, "hipv4-amdgcn-amd-amdhsa--gfx90a", A]);
        // In the order given: gfx90a:xnack- is the first gfx90a, the plain one conflicts.
        assert_eq!(find_conflict(v.iter().enumerate()), Some((0, 2)));
        // In clang's sorted order the plain gfx90a comes first and meets gfx90a:xnack+.
        let mut sorted: Vec<(usize, &EntryId)> = v.iter().enumerate().collect();
        sorted.sort_by(|a, b| a.1.target_text().cmp(b.1.target_text()));
        assert_eq!(find_conflict(sorted), Some((2, 1)));
        // Another kind or triple, or settings on both sides, never conflict.
        assert_eq!(find_conflict(ids(&[XP, XM, A]).iter().enumerate()), None);
        let other_kind = ids(&[XP, "openmp-amdgcn-amd-amdhsa--gfx90a"]);
        assert_eq!(find_conflict(other_kind.iter().enumerate()), None);
        // Processors gfxkit does not know are compared by their text.
        let unknown = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx1999:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx1999",
        ]);
        assert_eq!(find_conflict(unknown.iter().enumerate()), Some((0, 1)));
        assert!(check_conflicts(&unknown).is_err());
        assert_eq!(
            missing_message(&["c", "a", "b"]),
            "Can't find bundles for a, b, and c"
        );
    }

    #[test]
    fn each_entry_serves_one_request() {
        let entries: Vec<(&str, &[u8])> = vec![(H, b""), (A, b"a"), (XP, b"p"), (XM, b"m")];
        let req = ids(&[XM, A, "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"]);
        let r = unbundle(&entries, b"whole", &req, &UnbundleOptions::default()).unwrap();
        assert_eq!(
            r.iter().map(|e| e.bytes()).collect::<Vec<_>>(),
            [&b"m"[..], b"a", b"p"]
        );
    }

    #[test]
    fn missing_is_an_error_unless_allowed() {
        let entries: Vec<(&str, &[u8])> = vec![(H, b""), (A, b"a")];
        let req = ids(&[
            A,
            "hipv4-amdgcn-amd-amdhsa--gfx1100",
            "hipv4-amdgcn-amd-amdhsa--gfx1030",
        ]);
        let e = unbundle(&entries, b"", &req, &UnbundleOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Can't find bundles for hipv4-amdgcn-amd-amdhsa--gfx1030 and hipv4-amdgcn-amd-amdhsa--gfx1100"
        );
        let opts = UnbundleOptions {
            allow_missing: true,
            ..Default::default()
        };
        let r = unbundle(&entries, b"", &req, &opts).unwrap();
        assert_eq!(r[1], Extracted::Empty);
    }

    #[test]
    fn host_only_input() {
        let req = ids(&[H, A]);
        assert!(unbundle(&[], b"plain", &req, &UnbundleOptions::default()).is_err());
        let opts = UnbundleOptions {
            allow_missing: true,
            ..Default::default()
        };
        let r = unbundle(&[], b"plain", &req, &opts).unwrap();
        assert_eq!(r, [Extracted::WholeInput(b"plain"), Extracted::Empty]);
    }

    #[test]
    fn target_checks_in_clangs_order_and_words() {
        let err = |t: &[&str], m| check_targets(t, m).unwrap_err().to_string();
        assert_eq!(
            err(&[A, A], Mode::Bundle),
            "Duplicate targets are not allowed"
        );
        let ok = check_targets(&[H, A, XP], Mode::Bundle).unwrap();
        assert_eq!((ok.host, ok.ids.len()), (Some(0), 3));
        assert!(
            check_targets(&[A, XP], Mode::Bundle).is_ok(),
            "HIP alone needs no host"
        );
        assert_eq!(
            err(
                &[
                    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
                    "hip-amdgcn-amd-amdhsa--gfx90a"
                ],
                Mode::Bundle
            ),
            "Cannot bundle inputs with conflicting targets: 'hip-amdgcn-amd-amdhsa--gfx90a' and \
             'hip-amdgcn-amd-amdhsa--gfx90a:xnack+'"
        );
        assert!(check_targets(
            &[XP, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"],
            Mode::Bundle
        )
        .is_ok());
        assert!(
            check_targets(&[XP, "hip-amdgcn-amd-amdhsa--gfx90a"], Mode::Bundle).is_ok(),
            "kinds apart"
        );
        assert_eq!(
            err(&["openmp-amdgcn-amd-amdhsa--gfx906"], Mode::Bundle),
            "expecting exactly one host target but got 0"
        );
        assert!(check_targets(&[H, "openmp-amdgcn-amd-amdhsa--gfx906"], Mode::Bundle).is_ok());
        assert_eq!(
            err(&[H, "host-x86_64-unknown-linux-gnu"], Mode::Unbundle),
            "expecting exactly one host target but got 2"
        );
        assert_eq!(
            err(&["hipx-amdgcn-amd-amdhsa--gfx906"], Mode::Unbundle),
            "invalid target 'hipx-amdgcn-amd-amdhsa--gfx906', unknown offloading kind 'hipx'"
        );
        let none: [&str; 0] = [];
        assert!(err(&none, Mode::Unbundle).contains("at least once"));
    }
}
