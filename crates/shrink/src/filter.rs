//! Which entries a prune keeps: target patterns and the keep/drop rule over entry IDs
//! ([`gfxkit_bundle::EntryId`], the one reading of an ID: `amdgcn` and `amdgpu<subarch>`
//! triples, any vendor and environment, every offload kind).

use gfxkit_bundle::{EntryId, EntryTarget};
use gfxkit_target_id::TargetId;
use std::fmt;

/// A short label for an entry in reports: `host` for host entries, the canonical target ID, the
/// target as written when gfxkit does not know its processor (`amdgcnspirv`), the triple's
/// architecture for a device entry without a target, and the ID itself when it does not parse.
pub fn label(id: &str) -> String {
    match EntryId::parse(id) {
        Ok(e) => id_label(&e),
        Err(_) => id.to_owned(),
    }
}

/// [`label`] of a parsed ID.
pub fn id_label(e: &EntryId) -> String {
    if e.is_host() {
        return "host".to_owned();
    }
    match e.target() {
        EntryTarget::None => e.triple().arch.clone(),
        t => t.to_string(),
    }
}

/// A target named on the command line: a target ID (`gfx90a`, `gfx90a:xnack+`) or, for
/// non-AMDGPU entries, a raw target name such as `amdgcnspirv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// A target ID.
    Target(TargetId),
    /// A raw target name, matched exactly.
    Raw(String),
}

impl Pattern {
    /// Parses a pattern. Names that start with `gfx` must be valid target IDs.
    pub fn parse(s: &str) -> Result<Pattern, String> {
        match TargetId::parse(s) {
            Ok(t) => Ok(Pattern::Target(t)),
            Err(e) if s.starts_with("gfx") || s.is_empty() => Err(format!("{s:?}: {e}")),
            Err(_) => Ok(Pattern::Raw(s.to_owned())),
        }
    }

    /// Whether the pattern names the entry. A target-ID pattern names every entry whose
    /// processor is the same and whose features agree with each feature the pattern sets
    /// (`gfx90a` names `gfx90a`, `gfx90a:xnack+` and `gfx90a:xnack-`).
    /// A raw pattern names a device entry whose target is not a known target ID by its
    /// [`label`] (`amdgcnspirv`).
    pub fn names(&self, entry: &EntryId) -> bool {
        match (self, entry.target()) {
            _ if entry.is_host() => false,
            (Pattern::Target(p), EntryTarget::Known(t)) => p.is_compatible(t),
            (Pattern::Raw(p), EntryTarget::Unknown(_) | EntryTarget::None) => *p == id_label(entry),
            _ => false,
        }
    }

    /// Whether an entry may be needed on a device the pattern describes: the two target IDs
    /// can describe the same configuration ([`TargetId::overlaps`]: a `gfx90a` entry, with
    /// xnack left open, runs on a `gfx90a:xnack+` device; `gfx90a:sramecc+` keeps a
    /// `gfx90a:xnack+` entry, which runs on a `gfx90a:sramecc+:xnack+` device).
    pub fn serves(&self, entry: &EntryId) -> bool {
        match (self, entry.target()) {
            _ if entry.is_host() => false,
            (Pattern::Target(p), EntryTarget::Known(t)) => p.overlaps(t),
            _ => self.names(entry),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Target(t) => write!(f, "{t}"),
            Pattern::Raw(s) => f.write_str(s),
        }
    }
}

/// Which device entries to keep. The host entry is always kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryFilter {
    /// Keep every entry.
    All,
    /// Keep the entries some pattern [serves](Pattern::serves); drop the others.
    Keep(Vec<Pattern>),
    /// Drop the entries some pattern [names](Pattern::names); keep the others.
    Drop(Vec<Pattern>),
}

impl EntryFilter {
    /// Whether the entry with ID `id` is kept. An ID that does not parse names no target: a
    /// raw pattern equal to the whole ID keeps or drops it, nothing else does.
    pub fn keeps(&self, id: &str) -> bool {
        match EntryId::parse(id) {
            Ok(e) => self.keeps_id(&e),
            Err(_) => match self {
                EntryFilter::All => true,
                EntryFilter::Keep(ps) => ps.iter().any(|p| *p == Pattern::Raw(id.to_owned())),
                EntryFilter::Drop(ps) => !ps.iter().any(|p| *p == Pattern::Raw(id.to_owned())),
            },
        }
    }

    /// Whether the entry with the parsed ID `id` is kept.
    pub fn keeps_id(&self, id: &EntryId) -> bool {
        if id.is_host() {
            return true;
        }
        match self {
            EntryFilter::All => true,
            EntryFilter::Keep(ps) => ps.iter().any(|p| p.serves(id)),
            EntryFilter::Drop(ps) => !ps.iter().any(|p| p.names(id)),
        }
    }

    /// The patterns of the selection that no entry of `ids` matches (for
    /// [`EntryFilter::Keep`], serves; for [`EntryFilter::Drop`], names), in the order given.
    pub fn unmatched<'s>(&'s self, ids: &[EntryId]) -> Vec<&'s Pattern> {
        let (ps, keep) = match self {
            EntryFilter::All => return Vec::new(),
            EntryFilter::Keep(ps) => (ps, true),
            EntryFilter::Drop(ps) => (ps, false),
        };
        ps.iter()
            .filter(|p| {
                !ids.iter()
                    .any(|id| if keep { p.serves(id) } else { p.names(id) })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(label("host-x86_64-unknown-linux--"), "host");
        assert_eq!(label("host-x86_64-unknown-linux-gnu-"), "host");
        assert_eq!(
            label("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "gfx90a:xnack+"
        );
        assert_eq!(label("hip-amdgcn-amd-amdhsa-gfx906"), "gfx906");
        assert_eq!(label("hip-amdgpu12.00-amd-amdhsa--gfx1200"), "gfx1200");
        assert_eq!(
            label("hipv4-amdgcn-amd-amdhsa--gfx9-generic"),
            "gfx9-generic"
        );
        assert_eq!(
            label("hipv4-spirv64-amd-amdhsa--amdgcnspirv"),
            "amdgcnspirv"
        );
        assert_eq!(label("hipv4-amdgcn-amd-amdhsa--"), "amdgcn");
        assert_eq!(label("not an id"), "not an id");
    }

    #[test]
    fn keep_matches_feature_variants() {
        let keep = EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]);
        assert!(keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"));
        assert!(keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(keep.keeps("host-x86_64-unknown-linux--"));
        assert!(!keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx1030"));
        assert!(!keep.keeps("hipv4-spirv64-amd-amdhsa--amdgcnspirv"));
        let plus = EntryFilter::Keep(vec![Pattern::parse("gfx90a:xnack+").unwrap()]);
        assert!(plus.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(plus.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(!plus.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"));
        // Features the pattern leaves open may be set either way by the entry.
        let ecc = EntryFilter::Keep(vec![Pattern::parse("gfx90a:sramecc+").unwrap()]);
        assert!(ecc.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(!ecc.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"));
        let drop = EntryFilter::Drop(vec![Pattern::parse("gfx90a:xnack+").unwrap()]);
        assert!(!drop.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(drop.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(Pattern::parse("gfx90z").is_err());
        assert_eq!(
            Pattern::parse("amdgcnspirv").unwrap(),
            Pattern::Raw("amdgcnspirv".into())
        );
    }
}
