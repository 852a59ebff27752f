//! Identical code objects stored more than once across the inputs (what `gfxkit size
//! --duplicates` adds to the size report, `"duplicates"` in `--json`): grouped by the SHA-256
//! of the uncompressed code object ([`crate::digest`]), with the bytes keeping one copy of
//! each would save.
//!
//! A place is counted once: a code object in a kpack archive is the same place whether it was
//! reached through a split binary's markers or through the `.kpack` file itself, provided the
//! caller names the archive the same way both times (the CLI names archives by their canonical
//! path).

use crate::digest::Digest;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where one copy is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Place {
    /// The file (`package!member` for a member), or the kpack archive holding it.
    pub path: String,
    /// The unit in the file (`bundle 3 in section .hip_fatbin at offset 0x5000`), or the TOC
    /// key for an archive.
    pub unit: String,
    /// The entry ID.
    pub entry: String,
}

/// One code object stored more than once.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// SHA-256 of the uncompressed code object, lowercase hex.
    pub sha256: String,
    /// Its uncompressed size.
    pub size: u64,
    /// How many times it is stored.
    pub count: usize,
    /// Where, sorted.
    pub places: Vec<Place>,
}

impl Group {
    /// Bytes that keeping one copy would save (uncompressed).
    pub fn saves(&self) -> u64 {
        self.size
            .saturating_mul(self.count.saturating_sub(1) as u64)
    }
}

/// The duplicates over every input.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Duplicates {
    /// Bytes a deduplication would save: the uncompressed size of every copy beyond the
    /// first.
    pub bytes: u64,
    /// Code objects stored more than once, the largest saving first.
    pub groups: Vec<Group>,
}

/// Groups the code objects of `files` (each file's name and digests) that are stored more
/// than once.
pub fn duplicates<'a>(files: impl IntoIterator<Item = (&'a str, &'a [Digest])>) -> Duplicates {
    let mut by_hash: BTreeMap<(&str, u64), BTreeSet<Place>> = BTreeMap::new();
    for (path, digests) in files {
        for d in digests {
            let place = match &d.archive {
                Some(a) => Place {
                    path: a.clone(),
                    unit: d.unit.split(" in ").next().unwrap_or(&d.unit).to_owned(),
                    entry: d.entry.clone(),
                },
                None => Place {
                    path: path.to_owned(),
                    unit: d.unit.clone(),
                    entry: d.entry.clone(),
                },
            };
            by_hash
                .entry((&d.sha256, d.size))
                .or_default()
                .insert(place);
        }
    }
    let mut groups: Vec<Group> = by_hash
        .into_iter()
        .filter(|(_, p)| p.len() > 1)
        .map(|((sha, size), places)| Group {
            sha256: sha.to_owned(),
            size,
            count: places.len(),
            places: places.into_iter().collect(),
        })
        .collect();
    groups.sort_by(|a, b| b.saves().cmp(&a.saves()).then(a.sha256.cmp(&b.sha256)));
    Duplicates {
        bytes: groups.iter().map(Group::saves).sum(),
        groups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(unit: &str, sha: &str, size: u64, archive: Option<&str>) -> Digest {
        Digest {
            unit: unit.into(),
            entry: "hipv4-amdgcn-amd-amdhsa--gfx1030".into(),
            target: "gfx1030".into(),
            size,
            sha256: sha.into(),
            kernels: None,
            archive: archive.map(Into::into),
            code_object_version: None,
        }
    }

    #[test]
    fn copies_beyond_the_first_are_counted_once_per_place() {
        let a = [
            d("bundle 0", "aa", 100, None),
            d("bundle 1", "bb", 10, None),
        ];
        let b = [
            d("bundle 0", "aa", 100, None),
            d(
                "lib#0 in /k/x_gfx1030.kpack",
                "bb",
                10,
                Some("/k/x_gfx1030.kpack"),
            ),
        ];
        // The archive read a second time, as a file of its own: the same place.
        let k = [d(
            "lib#0 in /k/x_gfx1030.kpack",
            "bb",
            10,
            Some("/k/x_gfx1030.kpack"),
        )];
        let r = duplicates([
            ("a.so", &a[..]),
            ("b.so", &b[..]),
            ("/k/x_gfx1030.kpack", &k[..]),
        ]);
        assert_eq!(r.groups.len(), 2);
        assert_eq!((r.groups[0].sha256.as_str(), r.groups[0].count), ("aa", 2));
        assert_eq!((r.groups[1].sha256.as_str(), r.groups[1].count), ("bb", 2));
        assert_eq!(r.bytes, 110);
        assert_eq!(r.groups[1].places[0].path, "/k/x_gfx1030.kpack");
        assert_eq!(r.groups[1].places[0].unit, "lib#0");
    }
}
