//! `select`, `doctor` and `check` for one ROCm release (`--rocm VERSION`): which release, where
//! it was read, and what it refuses in a file ([`gfxkit_host::release`]'s rules over the
//! [`gfxkit_spec::rocm`] table).

use crate::inventory::Inventory;
use crate::remedy::{Kind, Remedy, Standing};
use gfxkit_host::release::{code_object_versions_for, kpack_refusal, Refusal, UnitRefusals};
use gfxkit_spec::rocm::{RocmVersion, Rules};
use gfxkit_target_id::TargetId;
use serde::Serialize;

/// The release answers are given for (the `rocm` object of `select`, `doctor` and `check`
/// JSON): its number and where it was read.
#[derive(Debug, Clone, Serialize)]
pub struct RocmRelease {
    /// The release (`6.4.3`).
    pub version: RocmVersion,
    /// Where it comes from: `--rocm`, or the file or package it was read from
    /// (`/opt/rocm/.info/version`).
    pub from: String,
    /// What it loads.
    #[serde(skip)]
    pub rules: Rules,
    /// What the sources do not tell about the devices judged: whether its runtime knows a
    /// processor, where its ISA registry was not read ([`gfxkit_host::release::device_note`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RocmRelease {
    /// The release `version`, read from `from`.
    pub fn new(version: RocmVersion, from: impl Into<String>) -> RocmRelease {
        RocmRelease {
            version,
            from: from.into(),
            rules: Rules::of(version),
            notes: Vec::new(),
        }
    }

    /// This release with the notes on the devices `devices` ([`RocmRelease::notes`]).
    pub fn for_devices(&self, devices: &[TargetId]) -> RocmRelease {
        let mut r = self.clone();
        for d in devices {
            if let Some(n) = gfxkit_host::release::device_note(&self.rules, d.processor().name) {
                if !r.notes.contains(&n) {
                    r.notes.push(n);
                }
            }
        }
        r
    }

    /// `ROCm 6.4.3 from /opt/rocm/.info/version`, `ROCm 6.2 (--rocm)`.
    pub fn said(&self) -> String {
        if self.from == "--rocm" {
            format!("ROCm {} (--rocm)", self.version)
        } else {
            format!("ROCm {} from {}", self.version, self.from)
        }
    }
}

/// What `rules` refuses in each loadable unit of `inv`, whose views are `views`
/// ([`Inventory::loadable`], in its order).
pub fn refusals(
    rules: &Rules,
    inv: &Inventory<'_>,
    views: &[gfxkit_host::entries::LoadView],
) -> Vec<UnitRefusals> {
    let versions = code_object_versions_for(&inv.units, rules);
    views
        .iter()
        .enumerate()
        .map(|(i, u)| UnitRefusals::of(rules, u, versions.get(i).map_or(&[][..], Vec::as_slice)))
        .collect()
}

/// What a file holds that a release refuses, for the doctor and the check: per unit judged
/// (those of [`crate::doctor::Examined::units`], in order), and for a split binary.
#[derive(Debug, Clone)]
pub struct Refused {
    /// The release's rules.
    pub rules: Rules,
    /// Per unit judged.
    pub units: Vec<UnitRefusals>,
    /// Why a split binary's wrappers cannot load, when the release has no kpack loader.
    pub kpack: Option<Refusal>,
}

impl Refused {
    /// What `rules` refuses of the units [`crate::doctor::examine`] keeps of `inv` (those
    /// whose entries can be read).
    pub fn of(rules: &Rules, inv: &Inventory<'_>) -> Refused {
        let views = inv.loadable();
        let units = views
            .iter()
            .zip(refusals(rules, inv, &views))
            .filter(|(u, _)| u.entries.is_ok())
            .map(|(_, r)| r)
            .collect();
        Refused {
            rules: rules.clone(),
            units,
            kpack: kpack_refusal(rules),
        }
    }

    /// The units as the release sees them ([`UnitRefusals::view`]).
    pub fn view(
        &self,
        units: &[gfxkit_host::entries::LoadView],
    ) -> Vec<gfxkit_host::entries::LoadView> {
        units
            .iter()
            .enumerate()
            .map(|(i, u)| self.units.get(i).map_or_else(|| u.clone(), |r| r.view(u)))
            .collect()
    }

    /// What the newest runtime would load on `device` that this release refuses, once each:
    /// [`refused_on`] of the units and this release's refusals in them.
    pub fn on(
        &self,
        device: &TargetId,
        units: &[gfxkit_host::entries::LoadView],
    ) -> Vec<(String, Refusal)> {
        refused_on(device, units.iter().zip(&self.units))
    }
}

/// What the newest runtime would load on `device`, under any setting of the features it
/// leaves out, that a release refuses in `units` (each with the release's refusals in it),
/// once each, unit by unit: `(what, refusal)`, `what` the target of the entry (empty for a
/// whole bundle). Under each setting, a unit's entries are tried in the runtime's order as far
/// as the first it loads ([`UnitRefusals::select`]).
pub fn refused_on<'u>(
    device: &TargetId,
    units: impl IntoIterator<Item = (&'u gfxkit_host::entries::LoadView, &'u UnitRefusals)>,
) -> Vec<(String, Refusal)> {
    let settings = gfxkit_host::select::concrete_settings(device);
    let mut out: Vec<(String, Refusal)> = Vec::new();
    for (u, r) in units {
        if r.is_empty() {
            continue;
        }
        for d in &settings {
            for (id, refusal) in r.select(d, u).1 {
                let what = if r.unit.is_some() {
                    String::new()
                } else {
                    gfxkit_bundle::EntryId::parse(&id)
                        .map(|e| e.target().to_string())
                        .unwrap_or(id)
                };
                if !out
                    .iter()
                    .any(|(w, x)| *w == what && x.reason == refusal.reason)
                {
                    out.push((what, refusal));
                }
            }
        }
    }
    out
}

/// How refusals read after a verdict: `gfx11-generic passed over: code object V6: ...`, a
/// refused bundle by its reason; joined with `; `.
pub fn refusals_text(refused: &[(String, Refusal)]) -> String {
    refused
        .iter()
        .map(|(what, r)| {
            if what.is_empty() {
                r.reason.clone()
            } else {
                format!("{what} passed over: {}", r.reason)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The remedies of `refused` for `device`: each rebuild the release loads, then the upgrade
/// to the first release that loads everything refused (once each).
pub fn remedies(device: &TargetId, refused: &[&Refusal]) -> Vec<Remedy> {
    let key = device.to_string();
    let mut out: Vec<Remedy> = Vec::new();
    for r in refused {
        if let Some(text) = &r.rebuild {
            let text = text.replace("<processor>", device.processor().name);
            if !out.iter().any(|x| x.text == text) {
                out.push(Remedy {
                    device: key.clone(),
                    kind: Kind::Rebuild,
                    text,
                    standing: Standing::Supported,
                });
            }
        }
    }
    // The latest first release among those needed (a bracketed one says so).
    let upgrade = refused
        .iter()
        .filter_map(|r| r.upgrade_order.map(|o| (o, r.upgrade.as_str())))
        .max_by_key(|(o, _)| *o);
    if let Some(((unreleased, _), u)) = upgrade {
        out.push(Remedy {
            device: key,
            kind: Kind::Upgrade,
            text: if unreleased {
                format!("upgrade ROCm to {u}")
            } else {
                format!("upgrade ROCm to at least {u}")
            },
            standing: Standing::Supported,
        });
    }
    out
}

/// The generic-target remedy of the newest rules is no remedy on a release that does not
/// load that generic target: there, rebuild for the device itself.
pub fn follow_release(remedies: Vec<Remedy>, device: &TargetId, rules: &Rules) -> Vec<Remedy> {
    let generic = gfxkit_host::select::runtime_generic(device.processor());
    remedies
        .into_iter()
        .map(|r| match generic {
            Some(g) if r.kind == Kind::Generic && !rules.loads_generic(g.name) => Remedy {
                kind: Kind::Rebuild,
                text: format!(
                    "rebuild with --offload-arch={device} (ROCm {} does not load {})",
                    rules.version, g.name
                ),
                ..r
            },
            _ => r,
        })
        .collect()
}

/// One row of the table as a release stands to it (`gfxkit rocm show --json`'s `facts`).
#[derive(Debug, Clone, Serialize)]
pub struct FactStanding {
    /// The row.
    #[serde(flatten)]
    pub fact: gfxkit_spec::rocm::Fact,
    /// Whether the release has the capability.
    pub has: bool,
}

/// What one release loads, with every row of the table and whether it has it (`gfxkit rocm
/// show VERSION`).
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseShow {
    /// What it loads.
    #[serde(flatten)]
    pub rules: Rules,
    /// Whether `version` is a release gfxkit lists ([`gfxkit_spec::rocm::RELEASES`]).
    pub listed: bool,
    /// What it is, where that matters.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub note: &'static str,
    /// Every row, with whether the release has it (left out of `rocm list`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<FactStanding>,
    /// The processors its runtime registers (ROCr's ISA registry).
    pub processors: ProcessorsShow,
}

/// The processors a release's runtime registers, as far as read (`rocm show`'s
/// `processors`).
#[derive(Debug, Clone, Serialize)]
pub struct ProcessorsShow {
    /// The list, when the release's own was read (or the release is judged by the last list
    /// read); `None` when it was not.
    pub list: Option<Vec<&'static str>>,
    /// Where it was read, or what is known instead.
    pub source: String,
    /// How well: `pinned` (read at the tag), `bracketed` (read on the release branch, or
    /// taken from the last list read), `unknown`.
    pub pin: &'static str,
}

/// The processors of the release of `rules` ([`ProcessorsShow`]).
pub fn processors_show(rules: &Rules) -> ProcessorsShow {
    use gfxkit_spec::rocm::{processor_lists, processors_of, Pin};
    if rules.beyond_known {
        return ProcessorsShow {
            list: None,
            source: "the newest runtime: every processor gfxkit knows".to_owned(),
            pin: "unknown",
        };
    }
    if let Some((l, list)) = processors_of(rules.version) {
        return ProcessorsShow {
            list: Some(list),
            source: l.source.to_owned(),
            pin: if l.pin == Pin::Pinned {
                "pinned"
            } else {
                "bracketed"
            },
        };
    }
    let lists = processor_lists();
    let release = rules.version.release();
    let before = lists.iter().rev().find(|(l, _)| l.release < release);
    let after = lists.iter().find(|(l, _)| l.release > release);
    match (before, after) {
        (Some((b, _)), Some((a, _))) => ProcessorsShow {
            list: None,
            source: format!(
                "{release}'s ISA registry not read: processors in both {}'s and {}'s lists are taken as known, those in one only as unknown",
                b.release, a.release
            ),
            pin: "unknown",
        },
        (Some((b, list)), None) => ProcessorsShow {
            list: Some(list.clone()),
            source: format!(
                "{release}'s ISA registry not read: {}'s list (the last read) is taken as known, other processors as unknown ({})",
                b.release, b.source
            ),
            pin: "bracketed",
        },
        _ => ProcessorsShow {
            list: None,
            source: format!(
                "{release}'s ISA registry not read (lists read from {})",
                lists[0].0.release
            ),
            pin: "unknown",
        },
    }
}

/// What the release `version` loads, row by row.
pub fn show(version: RocmVersion) -> ReleaseShow {
    let rules = Rules::of(version);
    let listed = gfxkit_spec::rocm::RELEASES
        .iter()
        .find(|r| r.version == version.release());
    let facts = gfxkit_spec::rocm::FACTS
        .iter()
        .map(|f| FactStanding {
            fact: *f,
            has: match f.capability {
                gfxkit_spec::rocm::Capability::CodeObjectVersion(n) => n <= rules.code_object_max,
                gfxkit_spec::rocm::Capability::Generic(g) => rules.loads_generic(g),
                gfxkit_spec::rocm::Capability::Ccob(n) => rules.unpacks_ccob(n),
                gfxkit_spec::rocm::Capability::Kpack => rules.kpack,
            },
        })
        .collect();
    let processors = processors_show(&rules);
    ReleaseShow {
        rules,
        listed: listed.is_some(),
        note: listed.map_or("", |r| r.note),
        facts,
        processors,
    }
}

/// Every release gfxkit lists, oldest first, with what it loads (`gfxkit rocm list --json`'s
/// `releases`); the rows themselves are [`gfxkit_spec::rocm::FACTS`].
pub fn list() -> Vec<ReleaseShow> {
    gfxkit_spec::rocm::RELEASES
        .iter()
        .map(|r| {
            let mut s = show(r.version);
            s.facts.clear();
            s
        })
        .collect()
}

/// What a ROCm release's runtime refuses of the files a kernel database gives a device (each
/// refusal with the files it applies to: [`crate::database::Loaded::refused`]), as said in a verdict: `its
/// kernel database does not load: CCOB v2: ROCm 6.1's HIP runtime unpacks no compressed
/// bundles (v2 from 6.2): lib/x_gfx1151.co and 45 more files`; `None` when nothing is refused.
pub fn refused_text(refused: &[(gfxkit_host::release::Refusal, Vec<String>)]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    let why: Vec<String> = refused
        .iter()
        .map(|(r, files)| {
            let first = files.first().map(String::as_str).unwrap_or_default();
            let more = match files.len() {
                0 | 1 => String::new(),
                2 => " and 1 more file".to_owned(),
                n => format!(" and {} more files", n - 1),
            };
            format!("{}: {first}{more}", r.reason)
        })
        .collect();
    Some(format!(
        "its kernel database does not load: {}",
        why.join("; ")
    ))
}
