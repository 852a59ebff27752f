//! A gate for builds (what `gfxkit check` prints; `--json` is the serialised [`CheckReport`]):
//! does every file with device code carry code that runs on every required target, and, with
//! `exactly`, nothing beyond them?
//!
//! "Runs" is the doctor's verdict ([`crate::doctor::verdict`], the HIP runtime's choice of
//! [`gfxkit_host::select`]): a native code object, the family's generic target, or SPIR-V, in
//! every unit the runtime loads, under one setting of the features a required ID leaves out
//! (`gfx90a` is met by `gfx90a:xnack-` code, and the file names the setting it needs;
//! `gfx90a:xnack+` asks for code that loads with xnack on). A target is *beyond the list*
//! when no required target would load it ([`gfxkit_host::select::select`] of that entry
//! alone): `gfx1100` with `--require gfx90a`, `gfx90a:xnack+` with `--require gfx90a:xnack-`,
//! SPIR-V (`amdgcnspirv`) always (it would serve any device, so it is named for what it is).

use crate::doctor::{self, Examined};
use gfxkit_bundle::EntryId;
use gfxkit_host::select::{select, Via};
use gfxkit_host::unit::is_spirv_entry;
use gfxkit_target_id::TargetId;
use serde::Serialize;
use std::collections::BTreeMap;

/// The result for one file (the file object of `check --json`).
#[derive(Debug, Clone, Serialize)]
pub struct CheckFile {
    /// The path as given (`package!member` for a member).
    pub path: String,
    /// Whether it passes: every required target runs, nothing beyond the list with
    /// `exactly`, no error.
    pub ok: bool,
    /// The device targets present, sorted.
    pub targets: Vec<String>,
    /// Required targets it has no code for, in the order required.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Per missing target: why (what is missing, the nearest targets present).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub why: BTreeMap<String, String>,
    /// Per required target left partly unknown: the setting the code needs (`xnack-`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub needs: BTreeMap<String, String>,
    /// Required targets served only through SPIR-V (compiled when loaded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spirv: Vec<String>,
    /// With `exactly`: the targets present that no required target would load.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
    /// Damage met (an error: the command exits 2).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The kernel databases judged with the file (the directories of the code objects a
    /// library loads itself, such as rocBLAS's `rocblas/<version>/library`), or, for a
    /// database no library loads, its own directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub database: Vec<String>,
}

impl CheckFile {
    /// The verdict of the runtime of `rules` on the required targets it does not know
    /// ([`gfxkit_host::release::device_refusal`]): each is missing, its reason leading `why`.
    /// A file whose device code could not be judged is left as it is; applying it again
    /// changes nothing.
    pub fn refuse_devices(&mut self, rules: &gfxkit_spec::rocm::Rules, required: &[TargetId]) {
        if !self.errors.is_empty() {
            return;
        }
        for r in required {
            let Some(x) = gfxkit_host::release::device_refusal(rules, r.processor().name) else {
                continue;
            };
            let key = r.to_string();
            if self.why.get(&key).is_some_and(|w| w.starts_with(&x.reason)) {
                continue;
            }
            let why = match self.why.remove(&key) {
                Some(old) => format!("{}; {old}", x.reason),
                None => x.reason.clone(),
            };
            self.why.insert(key.clone(), why);
            self.needs.remove(&key);
            self.spirv.retain(|s| *s != key);
            if !self.missing.contains(&key) {
                self.missing.push(key);
            }
            self.ok = false;
        }
        // In the order required.
        let order: Vec<String> = required.iter().map(ToString::to_string).collect();
        self.missing
            .sort_by_key(|m| order.iter().position(|o| o == m).unwrap_or(usize::MAX));
    }
}

/// Counts over the files.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckSummary {
    /// Files with device code.
    pub files: usize,
    /// Files that pass.
    pub passed: usize,
    /// Files that lack a required target or carry one beyond the list.
    pub failed: usize,
    /// Files with errors.
    pub errors: usize,
}

/// The whole report (`check --json`).
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The required targets, canonical, in the order given.
    pub required: Vec<String>,
    /// Whether targets beyond the list fail.
    pub exactly: bool,
    /// Whether every file passes.
    pub ok: bool,
    /// Files with device code, in path order.
    pub files: Vec<CheckFile>,
    /// Counts.
    pub summary: CheckSummary,
    /// Files named whose only device code is for other GPUs, in path order: not judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_gpus_only: Vec<crate::doctor::OtherGpusOnly>,
    /// The ROCm release whose runtime is modelled (`--rocm`), and where it was read; absent
    /// for the newest runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rocm: Option<crate::release::RocmRelease>,
}

impl CheckReport {
    /// The report over `files`, with the counts.
    pub fn new(required: &[TargetId], exactly: bool, files: Vec<CheckFile>) -> CheckReport {
        let mut summary = CheckSummary {
            files: files.len(),
            ..CheckSummary::default()
        };
        for f in &files {
            if !f.errors.is_empty() {
                summary.errors += 1;
            } else if f.ok {
                summary.passed += 1;
            } else {
                summary.failed += 1;
            }
        }
        CheckReport {
            required: required.iter().map(ToString::to_string).collect(),
            exactly,
            ok: files.iter().all(|f| f.ok),
            files,
            summary,
            other_gpus_only: Vec::new(),
            rocm: None,
        }
    }

    /// The exit status: 2 when some file has an error, 1 when some file fails, else 0.
    pub fn status(&self) -> u8 {
        if self.summary.errors > 0 {
            2
        } else if self.summary.failed > 0 {
            1
        } else {
            0
        }
    }
}

/// Whether some required target would load the code of entry `id` on its own (native or
/// generic; SPIR-V is never counted as within the list).
fn within(required: &[TargetId], id: &EntryId) -> bool {
    let one = std::slice::from_ref(id);
    required
        .iter()
        .any(|r| matches!(select(r, one).via, Some(Via::Native) | Some(Via::Generic)))
}

/// The targets of `ids` (AMDGPU code objects and SPIR-V; host entries and empty ones are
/// left out) that no required target would load, named by target (`gfx1100`, `amdgcnspirv`),
/// sorted.
pub fn beyond(required: &[TargetId], ids: &[EntryId]) -> Vec<String> {
    let mut out: Vec<String> = ids
        .iter()
        .filter(|e| e.target_id().is_some() || is_spirv_entry(e))
        .filter(|e| !within(required, e))
        .map(|e| e.target().to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The result for a file named `name` on the `required` targets, from what the runtime would
/// load of it ([`doctor::examine`], with a split binary's kpack verdicts for the required
/// targets); `None` for a file without device code the runtime loads.
pub fn judge(
    name: &str,
    examined: Examined,
    required: &[TargetId],
    exactly: bool,
) -> Option<CheckFile> {
    judge_with(
        name,
        examined,
        required,
        exactly,
        &|_| None,
        Vec::new(),
        None,
    )
}

/// [`judge`], for a library together with what it loads beside its own device code (its
/// kernel databases): `lacks` says why a required target cannot run that ([`doctor::judge_with`]),
/// `more` are the entry IDs found there (counted by `exactly`).
pub fn judge_with(
    name: &str,
    examined: Examined,
    required: &[TargetId],
    exactly: bool,
    lacks: &dyn Fn(&TargetId) -> Option<String>,
    more: Vec<EntryId>,
    database: Option<Vec<String>>,
) -> Option<CheckFile> {
    let mut ids: Vec<EntryId> = examined
        .units
        .iter()
        .filter_map(|u| u.entries.as_ref().ok())
        .flatten()
        .filter(|e| e.size > 0)
        .map(|e| e.id.clone())
        .collect();
    ids.extend(
        examined
            .kpack_targets
            .iter()
            .filter_map(|a| EntryId::parse(&crate::kpack::entry_id(a)).ok()),
    );
    ids.extend(more);
    let d = doctor::judge_with(name, examined, required, lacks, database)?;
    // A file whose device code could not be judged at all (damage, or a split binary
    // without its verdicts) passes nothing.
    let judged = !d.runs_on.is_empty();
    Some(outcome(
        d.path,
        d.targets,
        required,
        exactly,
        judged,
        &d.runs_on,
        &d.missing,
        &ids,
        |f| {
            f.needs = d.needs;
            f.spirv = d.spirv;
            f.errors = d.errors;
        },
    ))
}

/// The result for a kernel database no library loads ([`crate::database::Database`]): a
/// required target passes when the database has the code its processor needs
/// ([`crate::database::Database::lacks`]).
pub fn judge_database(
    db: &crate::database::Database,
    required: &[TargetId],
    exactly: bool,
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> CheckFile {
    let mut runs_on = BTreeMap::new();
    let mut missing = BTreeMap::new();
    for r in required {
        let why = db.lacks_on(r, None, rules);
        runs_on.insert(r.to_string(), why.is_none());
        if let Some(w) = why {
            missing.insert(r.to_string(), w);
        }
    }
    outcome(
        db.root.clone(),
        db.processors(),
        required,
        exactly,
        true,
        &runs_on,
        &missing,
        &db.entry_ids(),
        |f| f.database = vec![db.root.clone()],
    )
}

/// A file's result from its verdicts per required target (`runs_on`, with why in `missing`)
/// and the entry IDs present; `rest` fills what the verdicts do not say.
#[allow(clippy::too_many_arguments)]
fn outcome(
    path: String,
    targets: Vec<String>,
    required: &[TargetId],
    exactly: bool,
    judged: bool,
    runs_on: &BTreeMap<String, bool>,
    why_not: &BTreeMap<String, String>,
    ids: &[EntryId],
    rest: impl FnOnce(&mut CheckFile),
) -> CheckFile {
    let mut missing = Vec::new();
    let mut why = BTreeMap::new();
    for r in required {
        let key = r.to_string();
        if runs_on.get(&key) == Some(&false) {
            if let Some(w) = why_not.get(&key) {
                why.insert(key.clone(), w.clone());
            }
            missing.push(key);
        }
    }
    let extra = if exactly && judged {
        beyond(required, ids)
    } else {
        Vec::new()
    };
    let mut f = CheckFile {
        ok: false,
        path,
        targets,
        missing,
        why,
        needs: BTreeMap::new(),
        spirv: Vec::new(),
        extra,
        errors: Vec::new(),
        database: Vec::new(),
    };
    rest(&mut f);
    f.ok = judged && f.missing.is_empty() && f.extra.is_empty() && f.errors.is_empty();
    f
}

/// `check`'s results over a tree ([`crate::database::with_databases`]): each library with
/// the kernel databases it loads ([`judge_with`]), each database no library loads on its own
/// ([`judge_database`]); in path order.
pub fn judge_with_databases(
    libraries: Vec<(String, Examined)>,
    members: Vec<crate::database::DbMember>,
    required: &[TargetId],
    exactly: bool,
    paths: &crate::database::LibPaths,
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> Vec<CheckFile> {
    let mut out = crate::database::with_databases(
        libraries,
        members,
        paths,
        |path, examined, loaded| {
            let mut f = judge_with(
                path,
                examined,
                required,
                exactly,
                &|d| loaded.lacks_on(d, None, rules),
                loaded.entry_ids(),
                loaded.any().then(|| loaded.processors()),
            )?;
            f.database = loaded.roots();
            Some(f)
        },
        |db| judge_database(db, required, exactly, rules),
    );
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<EntryId> {
        list.iter()
            .map(|s| EntryId::parse(&format!("hipv4-amdgcn-amd-amdhsa--{s}")).unwrap())
            .collect()
    }

    fn req(list: &[&str]) -> Vec<TargetId> {
        list.iter().map(|s| TargetId::parse(s).unwrap()).collect()
    }

    #[test]
    fn a_database_alone_is_judged_by_the_processors_it_has_code_for() {
        let member = |name: &str, p: &str| crate::database::DbMember {
            path: format!("/d/k/{name}"),
            processors: vec![p.to_owned()],
            index_rows: None,
            stored: Default::default(),
            map_files: Vec::new(),
        };
        let db = crate::database::group(vec![
            member("a_gfx942.co", "gfx942"),
            member("a_gfx950.co", "gfx950"),
        ])
        .remove(0);
        let f = judge_database(&db, &req(&["gfx942:xnack-"]), false, None);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.database, ["/d/k"]);
        let f = judge_database(&db, &req(&["gfx942"]), true, None);
        assert!(!f.ok);
        assert_eq!(f.extra, ["gfx950"]);
        assert!(judge_database(&db, &req(&["gfx950", "gfx942"]), true, None).ok);
        let f = judge_database(&db, &req(&["gfx90a", "gfx942"]), false, None);
        assert_eq!(f.missing, ["gfx90a"]);
        assert!(
            f.why["gfx90a"].contains("no code object for gfx90a"),
            "{:?}",
            f.why
        );
    }

    /// A database no library loads, on a release whose runtime does not know the device:
    /// missing, the reason first, once however often it is applied.
    #[test]
    fn a_database_alone_on_a_release_without_the_device() {
        let member = |name: &str, p: &str| crate::database::DbMember {
            path: format!("/d/k/{name}"),
            processors: vec![p.to_owned()],
            index_rows: None,
            stored: Default::default(),
            map_files: Vec::new(),
        };
        let db = crate::database::group(vec![
            member("a_gfx942.co", "gfx942"),
            member("a_gfx90a.co", "gfx90a"),
        ])
        .remove(0);
        let required = req(&["gfx942", "gfx90a"]);
        let rules = |v: &str| {
            gfxkit_spec::rocm::Rules::of(gfxkit_spec::rocm::RocmVersion::parse(v).unwrap())
        };
        let mut f = judge_database(&db, &required, false, None);
        assert!(f.ok);
        f.refuse_devices(&rules("5.7"), &required);
        assert!(f.ok, "{f:?}");
        f.refuse_devices(&rules("5.6"), &required);
        let again = f.clone();
        f.refuse_devices(&rules("5.6"), &required);
        assert_eq!(format!("{f:?}"), format!("{again:?}"));
        assert!(!f.ok);
        assert_eq!(f.missing, ["gfx942"]);
        assert!(f.why["gfx942"]
            .starts_with("gfx942: ROCm 5.6's runtime does not know this processor (first in 5.7"));
    }

    #[test]
    fn targets_beyond_the_list() {
        let present = ids(&["gfx90a:xnack+", "gfx90a:xnack-", "gfx1100", "gfx11-generic"]);
        assert_eq!(beyond(&req(&["gfx90a", "gfx1101"]), &present), ["gfx1100"]);
        assert_eq!(
            beyond(&req(&["gfx90a:xnack-", "gfx1100"]), &present),
            ["gfx90a:xnack+"]
        );
        let mut spirv = present.clone();
        spirv.push(EntryId::parse("hipv4-spirv64-amd-amdhsa--amdgcnspirv").unwrap());
        spirv.push(EntryId::parse("host-x86_64-unknown-linux--").unwrap());
        assert_eq!(
            beyond(&req(&["gfx90a", "gfx1100"]), &spirv),
            ["amdgcnspirv"]
        );
    }
}
