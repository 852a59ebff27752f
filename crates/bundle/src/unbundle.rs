//! Unbundling and bundling rules of clang-offload-bundler, as library functions the CLI maps
//! its options onto one to one.
//!
//! - [`check_targets`]: the checks clang applies to `-targets` before doing anything
//!   (duplicates, known kinds and triples, host count, conflicting target IDs).
//! - [`unbundle`]: one output per requested target; each entry of the input serves the first
//!   compatible request not yet served; missing targets are an error unless allowed; an input
//!   with no bundle at all is host-only (the host target gets the whole input, others nothing).

use crate::entry_id::{EntryId, EntryTarget, OffloadKind, Triple};
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

/// Parses and checks `-targets` as clang does: every ID parses (known kind and triple), no ID
/// is given twice, the host count fits the mode, and for each kind and triple the target IDs
/// do not conflict (`gfx90a` with `gfx90a:xnack+`). Returns the parsed IDs in order.
pub fn check_targets<S: AsRef<str>>(targets: &[S], mode: Mode) -> Result<Vec<EntryId>> {
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(targets.len());
    for t in targets {
        let t = t.as_ref();
        if !seen.insert(t) {
            return Err(Error::new(ErrorKind::Invalid(format!(
                "duplicate target '{t}': duplicate targets are not allowed"
            ))));
        }
        ids.push(EntryId::parse(t).map_err(|e| Error::new(ErrorKind::InvalidEntryId(e)))?);
    }
    let hosts = ids.iter().filter(|i| i.is_host()).count();
    let hip_only = ids
        .iter()
        .all(|i| matches!(i.kind(), OffloadKind::Hip | OffloadKind::HipV4));
    match mode {
        Mode::Unbundle if hosts > 1 => {
            return Err(Error::new(ErrorKind::Invalid(format!(
                "expecting exactly one host target but got {hosts}"
            ))))
        }
        Mode::Bundle if hosts != 1 && !hip_only => {
            return Err(Error::new(ErrorKind::Invalid(format!(
                "expecting exactly one host target but got {hosts}"
            ))))
        }
        _ => {}
    }
    check_conflicts(&ids)?;
    Ok(ids)
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

/// Whether the target part is a device target ID (used for output file naming).
pub fn is_device(id: &EntryId) -> bool {
    !matches!(id.target(), EntryTarget::None)
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
    fn target_checks() {
        assert!(check_targets(&[A, A], Mode::Bundle).is_err());
        assert!(check_targets(&[A, XP], Mode::Bundle).is_ok());
        let e = check_targets(&[XP, "hipv4-amdgcn-amd-amdhsa--gfx90a"], Mode::Bundle).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Conflict(_)), "{e}");
        assert!(check_targets(&["openmp-amdgcn-amd-amdhsa--gfx906"], Mode::Bundle).is_err());
        assert!(check_targets(&[H, "openmp-amdgcn-amd-amdhsa--gfx906"], Mode::Bundle).is_ok());
        assert!(check_targets(&[H, "host-x86_64-unknown-linux-gnu"], Mode::Unbundle).is_err());
        assert!(check_targets(&["hipx-amdgcn-amd-amdhsa--gfx906"], Mode::Unbundle).is_err());
    }
}
