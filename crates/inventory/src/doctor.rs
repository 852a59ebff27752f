//! The device verdict: whether a library can run on a GPU (what `gfxkit doctor` prints;
//! `--json` is the serialised [`DoctorReport`]). Every unit the runtime would load must have a
//! code object for the device under one common setting of the features the device leaves
//! unknown; the per-unit choice is [`gfxkit_host::select`]'s rule.

use crate::inventory::Inventory;
use gfxkit_host::entries::LoadView;
use gfxkit_host::select::{concrete_settings, nearest_targets, select_unit, settings_text};
use gfxkit_spec::Feature;
use gfxkit_target_id::{FeatureSetting, TargetId};
use serde::Serialize;
use std::collections::BTreeMap;

/// The verdict for one library on one device.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Whether it runs.
    pub runs: bool,
    /// Settings the device must have (when its own are unknown and only some work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// Why not, naming what is missing and the nearest targets present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// Some bundle has only SPIR-V for the device (compiled by the runtime when loaded).
    pub spirv: bool,
}

/// Whether a library whose bundles hold `bundles` entries can run on `device`. Every bundle
/// must have a selection under one common concrete setting of the device's unknown features.
pub fn verdict(device: &TargetId, bundles: &[LoadView]) -> Verdict {
    let settings = concrete_settings(device);
    let working: Vec<&TargetId> = settings
        .iter()
        .filter(|d| bundles.iter().all(|e| select_unit(d, e).is_selected()))
        .collect();
    if working.is_empty() {
        // Report against the first concrete setting that leaves the fewest bundles without
        // code, naming the targets present in one that fails.
        let failing = bundles
            .iter()
            .find(|e| settings.iter().all(|d| !select_unit(d, e).is_selected()))
            .or_else(|| bundles.first());
        let nearest = failing
            .map(|e| nearest_targets(device, &e.ids()))
            .unwrap_or_default();
        let total = bundles.len();
        let without = bundles
            .iter()
            .filter(|e| settings.iter().all(|d| !select_unit(d, e).is_selected()))
            .count();
        let mut msg = if without > 0 {
            format!(
                "no code object for {device} in {without} of {total} {}",
                if total == 1 { "bundle" } else { "bundles" }
            )
        } else {
            format!("no single xnack/sramecc setting of {device} has code in all {total} bundles")
        };
        if !nearest.is_empty() {
            msg.push_str(&format!("; nearest present: {}", nearest.join(", ")));
        }
        if let Some(e) = failing.filter(|e| !e.header_readable_by_hip()) {
            // Code there may be for the device: the runtime cannot read where it is.
            msg.push_str(&format!("; {}", select_unit(device, e).reason));
        }
        return Verdict {
            runs: false,
            needs: None,
            missing: Some(msg),
            spirv: false,
        };
    }
    let needs = needs(device, &working, settings.len());
    let spirv = bundles
        .iter()
        .any(|e| select_unit(working[0], e).via == Some(gfxkit_host::select::Via::Spirv));
    Verdict {
        runs: true,
        needs,
        missing: None,
        spirv,
    }
}

/// What `device` must be set to when only the concrete settings `working` (of `all` the
/// settings of the features it leaves unknown, at least one) run the code: the features
/// common to every working setting (`xnack-`), else the working settings themselves
/// (`gfx90a:xnack- or gfx90a:sramecc+`); `None` when every setting works.
pub fn needs(device: &TargetId, working: &[&TargetId], all: usize) -> Option<String> {
    if working.len() >= all {
        return None;
    }
    let mut needs: Vec<(Feature, FeatureSetting)> = Vec::new();
    for &f in device.processor().target_id_features {
        if device.setting(f) != FeatureSetting::Any {
            continue;
        }
        let first = working[0].setting(f);
        if working.iter().all(|w| w.setting(f) == first) {
            needs.push((f, first));
        }
    }
    if needs.is_empty() {
        Some(
            working
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
        )
    } else {
        Some(settings_text(&needs))
    }
}

/// The verdict for one file on every device (the file object of `doctor --json`).
#[derive(Serialize, Debug, Clone)]
pub struct DoctorFile {
    /// The path as given.
    pub path: String,
    /// Per device (canonical target ID): whether the file runs on it.
    pub runs_on: BTreeMap<String, bool>,
    /// The device targets present, sorted.
    pub targets: Vec<String>,
    /// Units judged.
    pub bundles: usize,
    /// Per device: settings it must have.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub needs: BTreeMap<String, String>,
    /// Per device: why it does not run.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub missing: BTreeMap<String, String>,
    /// Devices some bundle serves only through SPIR-V (amdgcnspirv, compiled when loaded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spirv: Vec<String>,
    /// Damage found (units whose entries cannot be read, damaged data).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The search paths of the file's kpack markers (`HIPK` wrappers), when it is split.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kpack: Vec<String>,
    /// For each device it does not run on: what could be done, each with its standing
    /// ([`crate::remedy`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remedies: Vec<crate::remedy::Remedy>,
    /// The kernel databases judged with the library (`rocblas/2.47.0/library`); for a database
    /// judged on its own (no library loads it), its own directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub database: Vec<String>,
    /// Per device: what the library looks for without needing it for its kernels and does not
    /// find, with what follows (hipBLASLt's extension ops and transform kernels).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, Vec<String>>,
}

impl DoctorFile {
    /// The verdict of the runtime of `rules` on the devices it does not know
    /// ([`gfxkit_host::release::device_refusal`]): such a device runs nothing, the reason
    /// leads its `missing` (what else stands in the way stays said after it), and the remedy
    /// is the upgrade. Only devices with a verdict are judged; applying it again changes
    /// nothing.
    pub fn refuse_devices(&mut self, rules: &gfxkit_spec::rocm::Rules, devices: &[TargetId]) {
        self.refuse_devices_as(rules, devices, &|_| false, &|_| Vec::new());
    }

    /// [`DoctorFile::refuse_devices`], where `runs_as(d)` tells whether the file would run
    /// on a device the runtime takes for `d`: a device the release does not know is then also
    /// offered `HSA_OVERRIDE_GFX_VERSION` to a processor of its instruction set that the
    /// release knows and the file runs on; `refused(d)` is what else the release refuses on
    /// `d` (the upgrade offered is to the first release that has everything needed).
    pub fn refuse_devices_as(
        &mut self,
        rules: &gfxkit_spec::rocm::Rules,
        devices: &[TargetId],
        runs_as: &dyn Fn(&TargetId) -> bool,
        refused: &dyn Fn(&TargetId) -> Vec<gfxkit_host::release::Refusal>,
    ) {
        for d in devices {
            let key = d.to_string();
            if !self.runs_on.contains_key(&key) {
                continue;
            }
            let Some(x) = gfxkit_host::release::device_refusal(rules, d.processor().name) else {
                continue;
            };
            if self
                .missing
                .get(&key)
                .is_some_and(|m| m.starts_with(&x.reason))
            {
                continue;
            }
            self.runs_on.insert(key.clone(), false);
            self.needs.remove(&key);
            self.spirv.retain(|s| *s != key);
            let m = match self.missing.remove(&key) {
                Some(old) => format!("{}; {old}", x.reason),
                None => x.reason.clone(),
            };
            self.missing.insert(key.clone(), m);
            self.remedies.retain(|m| m.device != key);
            let known_runs =
                |c: &TargetId| rules.knows(c.processor().name).known == Some(true) && runs_as(c);
            let lack = crate::remedy::Lack::default();
            self.remedies.extend(
                crate::remedy::remedies(d, lack, &known_runs, None)
                    .into_iter()
                    .filter(|m| m.kind == crate::remedy::Kind::Override),
            );
            let others = refused(d);
            let mut needed: Vec<&gfxkit_host::release::Refusal> = vec![&x];
            needed.extend(&others);
            // No rebuild helps a device the runtime does not know: the upgrade only.
            self.remedies.extend(
                crate::release::remedies(d, &needed)
                    .into_iter()
                    .filter(|m| m.kind == crate::remedy::Kind::Upgrade),
            );
        }
    }

    /// The verdict of a ROCm release's runtime on what the file's kernel database gives
    /// `device`: `refused` is what it cannot load there, each refusal with the files it
    /// applies to ([`crate::database::Loaded::refused`]). A device the file runs on then
    /// does not: the reasons (with the first files and how many) become its `missing`, and the
    /// remedies follow the release (the rebuild it loads, the release to upgrade to). Nothing
    /// changes when `refused` is empty or the device does not run the file anyway.
    pub fn refuse_database(
        &mut self,
        device: &TargetId,
        refused: &[(gfxkit_host::release::Refusal, Vec<String>)],
    ) {
        let key = device.to_string();
        if refused.is_empty() || self.runs_on.get(&key) != Some(&true) {
            return;
        }
        let Some(why) = crate::release::refused_text(refused) else {
            return;
        };
        self.runs_on.insert(key.clone(), false);
        self.missing.insert(key.clone(), why);
        let needed: Vec<&gfxkit_host::release::Refusal> = refused.iter().map(|(r, _)| r).collect();
        self.remedies.retain(|m| m.device != key);
        self.remedies
            .extend(crate::release::remedies(device, &needed));
    }

    /// Whether the file cannot run on some device.
    pub fn fails(&self) -> bool {
        self.runs_on.values().any(|r| !r)
    }

    /// Whether the file is damaged: its `errors` name the damage, and it runs nowhere.
    pub fn damaged(&self) -> bool {
        !self.errors.is_empty()
    }

    /// A damaged file runs on no device: every device of `devices` it was not already
    /// judged not to run on (those it would otherwise run on, and those its damage left
    /// unjudged) is marked as not running, with [`DAMAGED`] and the first damage named as the
    /// reason. (The runtime refuses what it cannot decode; `doctor` judges as it does.)
    pub fn fail_damaged(&mut self, devices: &[TargetId]) {
        let Some(first) = self.errors.first() else {
            return;
        };
        let why = format!("{DAMAGED}{first}");
        for d in devices {
            let dev = d.to_string();
            if self.runs_on.get(&dev) != Some(&false) {
                self.runs_on.insert(dev.clone(), false);
                self.missing.insert(dev, why.clone());
            }
        }
    }
}

/// How `missing` begins for a device a file would run on were it not damaged
/// ([`DoctorFile::fail_damaged`]).
pub const DAMAGED: &str = "damaged: ";

/// The whole report (`doctor --json`).
#[derive(Serialize, Debug, Clone)]
pub struct DoctorReport {
    /// The devices, canonical.
    pub devices: Vec<String>,
    /// The devices' numbers of compute units where known (canonical device -> count); kernel
    /// databases are judged for those counts, the other devices for every count.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub cu_counts: std::collections::BTreeMap<String, u64>,
    /// Files with device code, in path order.
    pub files: Vec<DoctorFile>,
    /// Files named whose only device code is for other GPUs, in path order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_gpus_only: Vec<OtherGpusOnly>,
    /// The ROCm release whose runtime is modelled (`--rocm`), and where it was read; absent
    /// for the newest runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rocm: Option<crate::release::RocmRelease>,
}

/// What the runtime would load from a file: its readable units, the errors found, and the
/// kpack archives named (empty for files the runtime does not load, such as relocatable
/// objects and archives).
#[derive(Debug, Clone, Default)]
pub struct Examined {
    /// Units whose entries could be read.
    pub units: Vec<LoadView>,
    /// Damage, one line each.
    pub errors: Vec<String>,
    /// Kpack search paths of `HIPK` wrappers.
    pub kpack: Vec<String>,
    /// For a split binary: per device (canonical), `None` when every wrapper loads, else why
    /// not ([`crate::kpack::doctor_verdict`]).
    pub kpack_verdicts: Vec<(String, Option<String>)>,
    /// For a split binary: per device (canonical) where only some settings of its unknown
    /// features load every wrapper, what it must be set to.
    pub kpack_needs: Vec<(String, String)>,
    /// For a split binary: the architectures its archives hold.
    pub kpack_targets: Vec<String>,
    /// For a split binary: per device (canonical), the package that provides its missing
    /// archive, where the layout tells.
    pub kpack_packages: Vec<(String, String)>,
    /// With a ROCm release (`--rocm`): what it refuses of `units` and of a split binary
    /// ([`crate::release::Refused::of`]); `None` for the newest runtime.
    pub release: Option<crate::release::Refused>,
    /// For a file whose only device code is for other GPUs (object bundles of another
    /// toolchain, a CUDA build's fat binaries): why it holds none for an AMD GPU, as `verify`
    /// says it ([`crate::verify::not_for_amd_gpus`]).
    pub other_gpus_only: Option<String>,
}

/// A file named whose only device code is for other GPUs: judged on no device, and said so
/// (`doctor --json` and `check --json`: `other_gpus_only`).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct OtherGpusOnly {
    /// The path as given.
    pub path: String,
    /// What it holds instead, as `verify` says it.
    pub reason: String,
}

impl OtherGpusOnly {
    /// The files of `examined` whose only device code is for other GPUs.
    pub fn of(examined: &[(String, Examined)]) -> Vec<OtherGpusOnly> {
        examined
            .iter()
            .filter_map(|(path, e)| {
                e.other_gpus_only.as_ref().map(|reason| OtherGpusOnly {
                    path: path.clone(),
                    reason: reason.clone(),
                })
            })
            .collect()
    }
}

/// What the kpack loader makes of a split binary on every device (from the archives the
/// caller found and opened), for [`Examined::set_kpack`]. The devices are those judged and
/// those an override could make of them ([`crate::remedy::override_devices`]).
#[derive(Debug, Clone, Default)]
pub struct KpackVerdicts {
    /// Per device (canonical), `None` when every wrapper loads under some concrete setting
    /// of the features the device leaves unknown, else why not (under the first setting).
    pub verdicts: Vec<(String, Option<String>)>,
    /// Per device (canonical) where only some settings load every wrapper: what the device
    /// must be set to ([`needs`]).
    pub needs: Vec<(String, String)>,
    /// Per device (canonical), the package that provides a missing archive, where the layout
    /// tells.
    pub packages: Vec<(String, String)>,
    /// The architectures its archives hold.
    pub targets: Vec<String>,
    /// Damage met: archives tried that are present but damaged, code objects that do not
    /// decode (`<archive>: <error>`), once each.
    pub damage: Vec<String>,
}

impl Examined {
    /// Takes the kpack loader's verdicts; damage met becomes an error of the file.
    pub fn set_kpack(&mut self, k: KpackVerdicts) {
        self.kpack_verdicts = k.verdicts;
        self.kpack_needs = k.needs;
        self.kpack_packages = k.packages;
        self.kpack_targets = k.targets;
        self.errors.extend(k.damage);
    }
}

/// What the runtime would load from the file of `inv`.
pub fn examine(inv: &Inventory<'_>) -> Examined {
    let mut out = Examined {
        other_gpus_only: crate::verify::not_for_amd_gpus(inv).map(|k| k.to_string()),
        ..Examined::default()
    };
    if !inv.loaded_at_run_time() {
        // A file whose ELF identification no ELF file has (sniffed as "another ELF") may be a
        // library whose header was damaged: that is damage to report, not a file to skip.
        if inv.kind == gfxkit_host::InputKind::ElfOther {
            out.errors = inv
                .problems
                .iter()
                .filter(|p| p.severity == gfxkit_host::Severity::Error)
                .map(|p| p.to_string())
                .collect();
        }
        return out;
    }
    out.errors = inv
        .all_problems()
        .iter()
        .filter(|p| p.severity == gfxkit_host::Severity::Error)
        .map(|p| p.to_string())
        .collect();
    let mut unreadable = Vec::new();
    for (u, at) in inv.loadable().into_iter().zip(&inv.units) {
        match &u.entries {
            Ok(_) => out.units.push(u),
            Err(e) => {
                unreadable.push(at.offset);
                out.errors.push(format!("{}: {e}", at.location()));
            }
        }
    }
    // What the runtime would load must decode: every compressed bundle decompressed and its
    // hash checked, every code object read, by verify's rules.
    out.errors.extend(
        crate::verify::damage(inv, &unreadable)
            .iter()
            .map(ToString::to_string),
    );
    out.kpack = inv
        .kpack()
        .into_iter()
        .flat_map(|k| k.search_paths)
        .collect();
    out
}

/// The verdict on `devices` for a file named `name`; `None` when the file holds no device
/// code the runtime loads (not a GPU library).
pub fn judge(name: &str, examined: Examined, devices: &[TargetId]) -> Option<DoctorFile> {
    let mut f = judge_with(name, examined, devices, &|_| None, None)?;
    f.fail_damaged(devices);
    Some(f)
}

/// [`judge`], with what else the library needs on a device beside its own device code:
/// `lacks` says why a device cannot run it for that (the kernel database it loads has no
/// file for the device), `None` when nothing else is lacking. Such a device does not run
/// the library, and the remedies offered are those that also satisfy `lacks`. `database`
/// holds the processors of the kernel databases the library loads, when it loads one: a
/// library without device code of its own (hipBLASLt) is then judged by them alone.
pub fn judge_with(
    name: &str,
    examined: Examined,
    devices: &[TargetId],
    lacks: &dyn Fn(&TargetId) -> Option<String>,
    database: Option<Vec<String>>,
) -> Option<DoctorFile> {
    let Examined {
        units,
        errors,
        mut kpack,
        mut kpack_verdicts,
        kpack_needs,
        kpack_targets,
        kpack_packages,
        release,
        other_gpus_only: _,
    } = examined;
    // The units as the release's runtime sees them (what it cannot load made empty).
    let seen: std::borrow::Cow<'_, [LoadView]> = match &release {
        Some(r) => std::borrow::Cow::Owned(r.view(&units)),
        None => std::borrow::Cow::Borrowed(&units),
    };
    // A split binary on a runtime without the kpack loader: no wrapper loads.
    let kpack_newest = kpack_verdicts.clone();
    if let Some(refusal) = release.as_ref().and_then(|r| r.kpack.as_ref()) {
        for (_, why) in &mut kpack_verdicts {
            *why = Some(refusal.reason.clone());
        }
    }
    if units.is_empty() && errors.is_empty() && kpack.is_empty() && database.is_none() {
        return None;
    }
    // A library whose device code is all in its kernel database (hipBLASLt): judged by it.
    let database_only = units.is_empty() && errors.is_empty() && kpack.is_empty();
    kpack.dedup();
    let mut targets: Vec<String> = units
        .iter()
        .flat_map(LoadView::ids)
        .filter(|e| !e.is_host())
        .map(|e| e.target().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    targets.sort();
    targets.dedup();
    let mut f = DoctorFile {
        path: name.to_owned(),
        runs_on: BTreeMap::new(),
        targets,
        bundles: units.len(),
        needs: BTreeMap::new(),
        missing: BTreeMap::new(),
        spirv: Vec::new(),
        errors,
        kpack,
        remedies: Vec::new(),
        database: Vec::new(),
        notes: BTreeMap::new(),
    };
    if database_only {
        f.targets = database.unwrap_or_default();
        for d in devices {
            f.runs_on.insert(d.to_string(), true);
        }
    }
    let j = Judging {
        units: &units,
        seen: &seen,
        kpack_verdicts: &kpack_verdicts,
        kpack_needs: &kpack_needs,
        kpack_newest: &kpack_newest,
        kpack_packages: &kpack_packages,
        release: release.as_ref(),
        lacks,
    };
    j.unit_verdicts(&mut f, devices);
    // A split binary: judged as the kpack loader resolves each wrapper.
    f.targets.extend(kpack_targets);
    f.targets.sort();
    f.targets.dedup();
    j.kpack_verdicts(&mut f, devices);
    j.database_verdicts(&mut f, devices);
    j.remedies(&mut f, devices);
    j.release_refusals(&mut f, devices);
    Some(f)
}

/// What [`judge_with`] judges a file's verdicts by, once its listing is made.
struct Judging<'j> {
    /// The file's units.
    units: &'j [LoadView],
    /// The units as the release's runtime sees them.
    seen: &'j [LoadView],
    /// A split binary's verdicts per device (`None`: it runs), as the release sees them.
    kpack_verdicts: &'j [(String, Option<String>)],
    /// A split binary's settings a device must have, where only some load it.
    kpack_needs: &'j [(String, String)],
    /// The same under the newest runtime.
    kpack_newest: &'j [(String, Option<String>)],
    /// The package that would hold a device's archive, per device.
    kpack_packages: &'j [(String, String)],
    /// What the release refuses, when one is given.
    release: Option<&'j crate::release::Refused>,
    /// Why a device lacks what else the library loads.
    lacks: &'j dyn Fn(&TargetId) -> Option<String>,
}

impl Judging<'_> {
    /// Whether the split binary's wrappers load on `d` (`None`: no verdict for it).
    fn kpack_runs(&self, d: &str) -> Option<bool> {
        self.kpack_verdicts
            .iter()
            .find(|(k, _)| k == d)
            .map(|(_, why)| why.is_none())
    }

    /// Whether the file's own device code (its units and its kpack wrappers) runs on `c`.
    fn code_runs(&self, c: &TargetId) -> bool {
        (self.units.is_empty() || verdict(c, self.seen).runs)
            && (self.kpack_verdicts.is_empty() || self.kpack_runs(&c.to_string()) == Some(true))
    }

    /// Whether the library runs on `c`: its device code and what else it loads.
    fn runs_as(&self, c: &TargetId) -> bool {
        self.code_runs(c) && (self.lacks)(c).is_none()
    }

    /// The verdict of the units on each device (none without readable units: errors or
    /// kpack only), with what the release refuses that the newest runtime would load.
    fn unit_verdicts(&self, f: &mut DoctorFile, devices: &[TargetId]) {
        let judged: &[TargetId] = if self.units.is_empty() { &[] } else { devices };
        for d in judged {
            let v = verdict(d, self.seen);
            let key = d.to_string();
            f.runs_on.insert(key.clone(), v.runs);
            if let Some(n) = v.needs {
                f.needs.insert(key.clone(), n);
            }
            if v.spirv {
                f.spirv.push(key.clone());
            }
            if let Some(mut m) = v.missing {
                // A bundle whose device entries are all empty fails every device: said, as the
                // nearest targets were named from its entries' IDs.
                if self.units.iter().any(LoadView::device_entries_all_empty) {
                    m.push_str(&format!("; {}", gfxkit_host::select::ENTRIES_ALL_EMPTY));
                }
                // What the newest runtime would have loaded, and why this release does not.
                let refused = self
                    .release
                    .map(|r| r.on(d, self.units))
                    .unwrap_or_default();
                if let (Some(r), false) = (self.release, refused.is_empty()) {
                    // Code the newest runtime would run, that this release does not load:
                    // said so from the first word.
                    let newest = format!("no code object for {d} ");
                    let code_runs = verdict(d, self.units).runs;
                    if let (true, Some(rest)) = (code_runs, m.strip_prefix(&newest)) {
                        m = format!(
                            "no code object ROCm {} loads for {d} {rest}",
                            r.rules.version
                        );
                    }
                    m.push_str(&format!("; {}", crate::release::refusals_text(&refused)));
                }
                f.missing.insert(key, m);
            }
        }
    }

    /// A split binary's verdict on each device given (those an override could make, for
    /// the remedies, are not judged).
    fn kpack_verdicts(&self, f: &mut DoctorFile, devices: &[TargetId]) {
        for d in devices {
            let dev = d.to_string();
            if let Some((_, why)) = self.kpack_verdicts.iter().find(|(k, _)| *k == dev) {
                f.runs_on.insert(dev.clone(), why.is_none());
                match why {
                    Some(w) => {
                        f.missing.insert(dev, w.clone());
                    }
                    None => {
                        if let Some((_, n)) = self.kpack_needs.iter().find(|(k, _)| *k == dev) {
                            f.needs.insert(dev, n.clone());
                        }
                    }
                }
            }
        }
    }

    /// What else the library loads (its kernel database): a device lacking it does not run
    /// the library.
    fn database_verdicts(&self, f: &mut DoctorFile, devices: &[TargetId]) {
        for d in devices {
            if let Some(why) = (self.lacks)(d) {
                let key = d.to_string();
                f.runs_on.insert(key.clone(), false);
                let m = f.missing.entry(key).or_default();
                if !m.is_empty() {
                    m.push_str("; ");
                }
                m.push_str(&why);
            }
        }
    }

    /// What could be done on each device where the library does not run.
    fn remedies(&self, f: &mut DoctorFile, devices: &[TargetId]) {
        for d in devices {
            if f.runs_on.get(&d.to_string()) != Some(&false) {
                continue;
            }
            let package = self
                .kpack_packages
                .iter()
                .find(|(k, _)| *k == d.to_string())
                .map(|(_, p)| p.as_str());
            let lack = crate::remedy::Lack {
                code_runs: self.code_runs(d),
                database: (self.lacks)(d).is_some(),
            };
            let mut remedies =
                crate::remedy::remedies(d, lack, &|c: &TargetId| self.runs_as(c), package);
            if let Some(r) = self.release {
                remedies = self.release_remedies(r, d, remedies);
            }
            f.remedies.extend(remedies);
        }
    }

    /// The remedies on `d` under release `r`: where the newest runtime runs the library, only
    /// the release stands in the way (its remedies alone); what the release refuses that the
    /// newest runtime loads: a rebuild it loads, or the release that loads it, a generic
    /// target only where the release loads it.
    fn release_remedies(
        &self,
        r: &crate::release::Refused,
        d: &TargetId,
        mut remedies: Vec<crate::remedy::Remedy>,
    ) -> Vec<crate::remedy::Remedy> {
        let dev = d.to_string();
        let newest_runs = (self.units.is_empty() || verdict(d, self.units).runs)
            && self
                .kpack_newest
                .iter()
                .all(|(k, why)| *k != dev || why.is_none())
            && (self.lacks)(d).is_none();
        if newest_runs {
            remedies.clear();
        }
        let refused = r.on(d, self.units);
        let mut needed: Vec<&gfxkit_host::release::Refusal> =
            refused.iter().map(|(_, x)| x).collect();
        if let (Some(k), false) = (&r.kpack, self.kpack_verdicts.is_empty()) {
            needed.push(k);
        }
        remedies = crate::release::follow_release(remedies, d, &r.rules);
        remedies.extend(crate::release::remedies(d, &needed));
        remedies
    }

    /// As the release sees the file (its units, its kpack verdicts, the database): the
    /// devices it refuses.
    fn release_refusals(&self, f: &mut DoctorFile, devices: &[TargetId]) {
        let Some(r) = self.release else {
            return;
        };
        let refused = |c: &TargetId| {
            let mut out: Vec<gfxkit_host::release::Refusal> =
                r.on(c, self.units).into_iter().map(|(_, x)| x).collect();
            if let (Some(k), false) = (&r.kpack, self.kpack_verdicts.is_empty()) {
                out.push(k.clone());
            }
            out
        };
        f.refuse_devices_as(&r.rules, devices, &|c: &TargetId| self.runs_as(c), &refused);
    }
}

/// The verdict for the file of `inv` on `devices`, named `name`; `None` when it holds no device
/// code the runtime loads.
pub fn doctor(name: &str, inv: &Inventory<'_>, devices: &[TargetId]) -> Option<DoctorFile> {
    judge(name, examine(inv), devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    use gfxkit_bundle::EntryId;
    use gfxkit_host::entries::UnitEntry;

    fn ids(list: &[&str]) -> LoadView {
        let entries = list
            .iter()
            .map(|s| UnitEntry {
                id: EntryId::parse(s).unwrap(),
                size: 1,
            })
            .collect();
        LoadView {
            form: gfxkit_host::Form::Bundle,
            format: None,
            header_len: None,
            entries: Ok(entries),
        }
    }

    #[test]
    fn unknown_xnack_needs_the_setting_every_bundle_shares() {
        let d = TargetId::parse("gfx90a:sramecc+").unwrap();
        let b = vec![
            ids(&[
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
                "hipv4-amdgcn-amd-amdhsa--gfx906",
            ]),
            ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a"]),
        ];
        let v = verdict(&d, &b);
        assert!(v.runs);
        assert_eq!(v.needs.as_deref(), Some("xnack-"));
        // One bundle only xnack+, the other only xnack-: no common setting.
        let b2 = vec![
            ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"]),
            ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"]),
        ];
        let v = verdict(&d, &b2);
        assert!(!v.runs);
        assert!(v.missing.unwrap().contains("no single"));
        // Fully known device.
        let d = TargetId::parse("gfx1030").unwrap();
        let v = verdict(&d, &b);
        assert!(!v.runs);
        assert_eq!(
            v.missing.as_deref(),
            Some("no code object for gfx1030 in 2 of 2 bundles; nearest present: gfx90a, gfx906")
        );
    }
}
