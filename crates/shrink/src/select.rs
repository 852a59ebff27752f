//! Which entries a prune keeps: entry IDs, target patterns and the keep/drop rule.

use gfxkit_target_id::TargetId;
use std::fmt;

/// What an entry ID says about its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryTarget {
    /// The host entry (`host-...`): always kept.
    Host,
    /// An AMD GPU entry with a target ID gfxkit knows.
    Amd(TargetId),
    /// Any other device entry (SPIR-V, an unknown processor): the target text after the triple.
    Other(String),
}

impl EntryTarget {
    /// A short label for reports: `host`, the canonical target ID, or the raw target.
    pub fn label(&self) -> String {
        match self {
            EntryTarget::Host => "host".to_owned(),
            EntryTarget::Amd(t) => t.to_string(),
            EntryTarget::Other(s) => s.clone(),
        }
    }
}

/// Classifies an entry ID: `<kind>-<arch>-<vendor>-<os>-<env>-<target>` (the 5-part triple AMD
/// IDs use, environment empty) or the legacy `<kind>-<arch>-<vendor>-<os>-<target>`.
pub fn classify(id: &str) -> EntryTarget {
    let mut parts = id.splitn(5, '-');
    let kind = parts.next().unwrap_or_default();
    if kind == "host" {
        return EntryTarget::Host;
    }
    let arch = parts.next().unwrap_or_default();
    let _vendor = parts.next();
    let _os = parts.next();
    let rest = parts.next().unwrap_or_default();
    // 5-part: "<env>-<target>"; AMD writes an empty environment, so rest starts with '-'.
    let target = match rest.strip_prefix('-') {
        Some(t) => t,
        None => match rest.split_once('-') {
            // A non-empty environment ("gnu-gfx90a") or a legacy target with a dash.
            Some((env, t)) if !env.starts_with("gfx") => t,
            _ => rest,
        },
    };
    if arch.starts_with("amdgcn") {
        if let Ok(t) = TargetId::parse(target) {
            return EntryTarget::Amd(t);
        }
    }
    EntryTarget::Other(if target.is_empty() {
        arch.to_owned()
    } else {
        target.to_owned()
    })
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
    pub fn names(&self, entry: &EntryTarget) -> bool {
        match (self, entry) {
            (Pattern::Target(p), EntryTarget::Amd(t)) => p.is_compatible(t),
            (Pattern::Raw(p), EntryTarget::Other(t)) => p == t,
            _ => false,
        }
    }

    /// Whether an entry may be needed on a device the pattern describes: the two target IDs
    /// can describe the same configuration ([`TargetId::overlaps`]: a `gfx90a` entry, with
    /// xnack left open, runs on a `gfx90a:xnack+` device; `gfx90a:sramecc+` keeps a
    /// `gfx90a:xnack+` entry, which runs on a `gfx90a:sramecc+:xnack+` device).
    pub fn serves(&self, entry: &EntryTarget) -> bool {
        match (self, entry) {
            (Pattern::Target(p), EntryTarget::Amd(t)) => p.overlaps(t),
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
pub enum Selection {
    /// Keep every entry.
    All,
    /// Keep the entries some pattern [serves](Pattern::serves); drop the others.
    Keep(Vec<Pattern>),
    /// Drop the entries some pattern [names](Pattern::names); keep the others.
    Drop(Vec<Pattern>),
}

impl Selection {
    /// Whether the entry with ID `id` is kept.
    pub fn keeps(&self, id: &str) -> bool {
        let t = classify(id);
        if t == EntryTarget::Host {
            return true;
        }
        match self {
            Selection::All => true,
            Selection::Keep(ps) => ps.iter().any(|p| p.serves(&t)),
            Selection::Drop(ps) => !ps.iter().any(|p| p.names(&t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_classify() {
        assert_eq!(classify("host-x86_64-unknown-linux--"), EntryTarget::Host);
        assert_eq!(
            classify("host-x86_64-unknown-linux-gnu-"),
            EntryTarget::Host
        );
        assert_eq!(
            classify("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+").label(),
            "gfx90a:xnack+"
        );
        assert_eq!(classify("hip-amdgcn-amd-amdhsa-gfx906").label(), "gfx906");
        assert_eq!(
            classify("hipv4-amdgcn-amd-amdhsa--gfx9-generic").label(),
            "gfx9-generic"
        );
        assert_eq!(
            classify("hipv4-spirv64-amd-amdhsa--amdgcnspirv"),
            EntryTarget::Other("amdgcnspirv".into())
        );
    }

    #[test]
    fn keep_matches_feature_variants() {
        let keep = Selection::Keep(vec![Pattern::parse("gfx90a").unwrap()]);
        assert!(keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"));
        assert!(keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(keep.keeps("host-x86_64-unknown-linux--"));
        assert!(!keep.keeps("hipv4-amdgcn-amd-amdhsa--gfx1030"));
        assert!(!keep.keeps("hipv4-spirv64-amd-amdhsa--amdgcnspirv"));
        let plus = Selection::Keep(vec![Pattern::parse("gfx90a:xnack+").unwrap()]);
        assert!(plus.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(plus.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(!plus.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"));
        // Features the pattern leaves open may be set either way by the entry.
        let ecc = Selection::Keep(vec![Pattern::parse("gfx90a:sramecc+").unwrap()]);
        assert!(ecc.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(!ecc.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"));
        let drop = Selection::Drop(vec![Pattern::parse("gfx90a:xnack+").unwrap()]);
        assert!(!drop.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert!(drop.keeps("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(Pattern::parse("gfx90z").is_err());
        assert_eq!(
            Pattern::parse("amdgcnspirv").unwrap(),
            Pattern::Raw("amdgcnspirv".into())
        );
    }
}
