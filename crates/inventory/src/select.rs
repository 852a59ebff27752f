//! Which code object the HIP runtime would load on a device, per unit of a file (what
//! `gfxkit select` prints; `--json` is the serialised [`SelectReport`]). The runtime's rule
//! itself is [`gfxkit_host::select`]'s.

use crate::database::{self, Database};
use crate::inventory::Inventory;
use gfxkit_host::select::{select_unit, Via};
use gfxkit_host::Form;
use gfxkit_host::{KpackRef, Problem, Severity};
use gfxkit_target_id::TargetId;
use serde::Serialize;

/// The whole report (`select --json`).
#[derive(Serialize, Debug, Clone)]
pub struct SelectReport {
    /// The device, canonical.
    pub device: String,
    /// The device's number of compute units, when given (kernel-database rows for other
    /// counts are not selected); absent when not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cu_count: Option<u64>,
    /// One per file.
    pub files: Vec<Selection>,
    /// The ROCm release whose runtime is modelled (`--rocm`), and where it was read; absent
    /// for the newest runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rocm: Option<crate::release::RocmRelease>,
}

/// The choice for every unit of one file (the file object of `select --json`).
#[derive(Serialize, Debug, Clone)]
pub struct Selection {
    /// The path as given.
    pub path: String,
    /// Why the file could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One per loadable unit: the file's units in file order, then (for a split binary) one
    /// per `HIPK` wrapper, `format` `kpack` ([`Selection::add_kpack`]), as `list` lists them.
    pub bundles: Vec<UnitChoice>,
    /// Damage or oddities found while looking for device code.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// The markers of `HIPK` wrappers (device code moved out to kpack archives).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kpack: Vec<KpackRef>,
    /// The entry IDs of the file's object bundles for other GPUs (SYCL images for Intel
    /// GPUs, OpenMP offload to NVIDIA GPUs), which no AMD GPU is asked to run: `list` shows
    /// them, the choice passes over them ([`gfxkit_host::unit::holds_amd_gpu_code`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_gpus: Vec<String>,
    /// Where the sections holding NVIDIA device code lie (CUDA fat binaries,
    /// [`Inventory::nvidia`]), which no AMD GPU runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvidia: Vec<gfxkit_host::Location>,
}

/// The choice for one unit.
#[derive(Serialize, Debug, Clone)]
pub struct UnitChoice {
    /// Index among the file's loadable units.
    pub index: usize,
    /// What the unit is (null for a kpack unit).
    pub kind: Option<Form>,
    /// How it is stored, as `list` says: `uncompressed`, `ccob`, `object-bundle`,
    /// `code-object`, or `kpack` for a `HIPK` wrapper whose code objects are in kpack archives.
    pub format: &'static str,
    /// Archive member holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// ELF section holding it.
    pub section: Option<String>,
    /// File offset.
    pub offset: u64,
    /// The entry ID loaded, as stored; null when none fits.
    pub selected: Option<String>,
    /// How it was chosen (native, generic, SPIR-V).
    pub via: Option<Via>,
    /// The kernels of the code object loaded (its `amdhsa.kernels`), when it was read (the
    /// unit judged for damage, as every unit the runtime loads from a linked file is). 0 for a
    /// code object that loads but holds no kernel: a launch from it fails on the device (a
    /// translation unit built for an architecture its kernels are not compiled for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels: Option<usize>,
    /// Why this entry, or why none.
    pub reason: String,
    /// Feature settings the device must have for the choice (when it left them unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// The nearest targets present, when none fits.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nearest: Vec<String>,
    /// With `--rocm`: what the newest runtime would load here that the release cannot, in
    /// the order tried, each with why and what would make it load.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<PassedOver>,
    /// Whether the unit's entries could not be read, or (kpack) damage decides its answer.
    #[serde(skip)]
    pub unreadable: bool,
    /// For a kpack unit: the loader's look-up (`wrapper`, `kpack_key`, `outcome`, `archive`,
    /// `arch`, `error_code`, `missing`, `package`, `shadowed`, `damaged`, `skipped`).
    #[serde(flatten)]
    pub kpack: Option<crate::kpack::KpackUnit>,
    /// For a kernel-database unit (`format` `database`): the database and the files opened.
    #[serde(flatten)]
    pub database: Option<DatabaseChoice>,
}

/// An entry the release of `--rocm` cannot load (a unit's `passed_over`).
#[derive(Serialize, Debug, Clone)]
pub struct PassedOver {
    /// The entry ID (empty when a compressed bundle is refused before any entry is read; for
    /// a kernel database, the file refused, relative to the database).
    pub entry: String,
    /// Why, the rebuild the release loads, and the first release that loads it.
    #[serde(flatten)]
    pub refusal: gfxkit_host::release::Refusal,
}

/// What a kernel database gives the device: a unit of `format` `database` in the selection of
/// the library that loads it ([`Selection::add_database`]), or of the database alone
/// ([`database_alone`]).
#[derive(Serialize, Debug, Clone)]
pub struct DatabaseChoice {
    /// The database's directory, or the package holding it ([`database::database_root`]).
    pub database: String,
    /// The files its library opens on the device, relative to `database` (empty when it has
    /// none for the device: `reason` names what is missing).
    pub files: Vec<String>,
}

impl Selection {
    /// Whether the file holds nothing to report (no unit, problem or kpack reference).
    pub fn is_empty(&self) -> bool {
        self.bundles.is_empty() && self.problems.is_empty() && self.kpack.is_empty()
    }

    /// The exit status this file asks for: 2 damaged or unreadable (a kpack archive tried
    /// that is damaged included), 1 some unit without a selection, 0 otherwise.
    pub fn status(&self) -> u8 {
        let damaged = self.error.is_some()
            || self.problems.iter().any(|p| p.severity == Severity::Error)
            || self.bundles.iter().any(|b| b.unreadable);
        if damaged {
            2
        } else if self.bundles.iter().any(|b| b.selected.is_none()) {
            1
        } else {
            0
        }
    }

    /// Adds the kpack loader's answer for each `HIPK` wrapper ([`crate::kpack::select_units`])
    /// as units of `format` `kpack` after the file's others; `needs`, the setting of its
    /// unknown features the device must have for them, goes with each unit that loads.
    pub fn add_kpack(&mut self, units: Vec<crate::kpack::KpackUnit>, needs: Option<String>) {
        for u in units {
            self.bundles.push(UnitChoice {
                index: self.bundles.len(),
                kind: None,
                format: "kpack",
                member: None,
                section: Some(u.section.to_owned()),
                offset: u.offset,
                selected: u.selected.clone(),
                via: None,
                kernels: None,
                reason: u.lookup.reason.clone(),
                needs: u.selected.as_ref().and(needs.clone()),
                nearest: Vec::new(),
                passed_over: Vec::new(),
                unreadable: u.met_damage(),
                kpack: Some(u),
                database: None,
            });
        }
    }

    /// Adds what the kernel database `db`, which this file's library loads, gives `device`, as
    /// a unit of `format` `database` after the file's others: selected (the processor's entry
    /// ID) with the files the library opens, or none, naming the files missing. `cu_count`:
    /// the device's compute units, when known ([`Database::serves`]).
    pub fn add_database(
        &mut self,
        db: &Database,
        device: &TargetId,
        cu_count: Option<u64>,
        rules: Option<&gfxkit_spec::rocm::Rules>,
    ) {
        let processor = device.processor().name;
        let refused = match rules {
            Some(r) => db.refused(device, cu_count, r),
            None => Vec::new(),
        };
        // Each file the release refuses, passed over with its reason.
        let passed_over: Vec<PassedOver> = refused
            .iter()
            .flat_map(|(r, files)| {
                files.iter().map(|f| PassedOver {
                    entry: f.clone(),
                    refusal: r.clone(),
                })
            })
            .collect();
        let (selected, files, reason) = match db.serves(device, cu_count) {
            Ok(files) if !refused.is_empty() => (
                None,
                files,
                crate::release::refused_text(&db.rooted(refused)).unwrap_or_default(),
            ),
            Ok(files) => (
                Some(database::entry_id(processor)),
                files,
                match cu_count {
                    Some(n) => format!("the kernel database has code for {processor} with {n} CUs"),
                    None => format!("the kernel database has code for {processor}"),
                },
            ),
            Err(why) => (None, Vec::new(), why),
        };
        self.bundles.push(UnitChoice {
            index: self.bundles.len(),
            kind: None,
            format: "database",
            member: None,
            section: None,
            offset: 0,
            selected,
            via: None,
            kernels: None,
            reason,
            needs: None,
            nearest: Vec::new(),
            passed_over,
            unreadable: false,
            kpack: None,
            database: Some(DatabaseChoice {
                database: db.root.clone(),
                files,
            }),
        });
    }

    /// The kernel-database units ([`Selection::add_database`]).
    pub fn database_units(&self) -> impl Iterator<Item = (&UnitChoice, &DatabaseChoice)> {
        self.bundles
            .iter()
            .filter_map(|b| b.database.as_ref().map(|d| (b, d)))
    }

    /// The kpack units as the runtime of `rules` sees them: without a kpack loader none
    /// loads, and the reason says so ([`gfxkit_host::release::kpack_refusal`]).
    pub fn refuse_kpack(&mut self, rules: &gfxkit_spec::rocm::Rules) {
        let Some(r) = gfxkit_host::release::kpack_refusal(rules) else {
            return;
        };
        for b in self.bundles.iter_mut().filter(|b| b.format == "kpack") {
            if let Some(k) = &mut b.kpack {
                k.selected = None;
                k.lookup.reason = r.reason.clone();
            }
            b.passed_over = vec![PassedOver {
                entry: b.selected.take().unwrap_or_default(),
                refusal: r.clone(),
            }];
            b.reason = r.reason.clone();
        }
    }

    /// Every unit as the runtime of `rules` sees it on `device`: where its ISA registry does
    /// not have the device's processor nothing loads, and the reason says so
    /// ([`gfxkit_host::release::device_refusal`]). Applying it again changes nothing.
    pub fn refuse_device(&mut self, rules: &gfxkit_spec::rocm::Rules, device: &TargetId) {
        let Some(r) = gfxkit_host::release::device_refusal(rules, device.processor().name) else {
            return;
        };
        for b in &mut self.bundles {
            if b.passed_over.iter().any(|p| p.refusal == r) {
                continue;
            }
            if let Some(k) = &mut b.kpack {
                k.selected = None;
                k.lookup.reason = r.reason.clone();
            }
            if let Some(d) = &mut b.database {
                d.files.clear();
            }
            b.kernels = None;
            // The device comes first; what else was passed over stays listed.
            b.passed_over.insert(
                0,
                PassedOver {
                    entry: b.selected.take().unwrap_or_default(),
                    refusal: r.clone(),
                },
            );
            b.via = None;
            b.needs = None;
            b.reason = r.reason.clone();
        }
    }

    /// The kpack units ([`Selection::add_kpack`]).
    pub fn kpack_units(&self) -> impl Iterator<Item = (&UnitChoice, &crate::kpack::KpackUnit)> {
        self.bundles
            .iter()
            .filter_map(|b| b.kpack.as_ref().map(|k| (b, k)))
    }
}

/// `list`'s name for how a unit is stored ([`crate::list::storage_name`]).
fn format_name(u: &gfxkit_host::entries::LoadView) -> &'static str {
    let compressed = matches!(u.format, Some(gfxkit_host::BundleFormat::Compressed { .. }));
    crate::list::storage_name(u.form, compressed)
}

/// What the HIP runtime would load from each unit of `inv` on `device`; the file is named
/// `name` in the report.
pub fn select(name: &str, inv: &Inventory<'_>, device: &TargetId) -> Selection {
    select_on(name, inv, device, None)
}

/// [`select`] as the runtime of the release `rules` makes it, when given
/// ([`gfxkit_host::release::select_unit_on`]): what it cannot load is passed over, with why.
pub fn select_on(
    name: &str,
    inv: &Inventory<'_>,
    device: &TargetId,
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> Selection {
    let views = inv.loadable();
    let refused = rules.map(|r| crate::release::refusals(r, inv, &views));
    let bundles: Vec<UnitChoice> = views
        .into_iter()
        .enumerate()
        .map(|(index, u)| {
            let (s, passed) = match refused.as_ref().and_then(|r| r.get(index)) {
                Some(r) => gfxkit_host::release::select_unit_passing(device, &u, r),
                None => (select_unit(device, &u), Vec::new()),
            };
            let selected = match (&u.entries, s.index) {
                (Ok(e), Some(i)) => e.get(i).map(|e| e.id.raw().to_owned()),
                _ => None,
            };
            let at = &inv.units[index];
            UnitChoice {
                index,
                kind: Some(u.form),
                format: format_name(&u),
                member: at.member.clone(),
                section: at.section.clone(),
                offset: at.offset,
                selected,
                via: s.via,
                kernels: None,
                needs: (!s.needs.is_empty()).then(|| s.needs_text()),
                reason: s.reason.clone(),
                nearest: s.nearest.clone(),
                passed_over: passed
                    .into_iter()
                    .map(|(entry, refusal)| PassedOver { entry, refusal })
                    .collect(),
                unreadable: u.entries.is_err(),
                kpack: None,
                database: None,
            }
        })
        .collect();
    // Damage in what the runtime would load (a compressed bundle that does not decode or
    // whose hash does not match, a code object that does not read), by verify's rules.
    let unreadable: Vec<u64> = bundles
        .iter()
        .filter(|b| b.unreadable)
        .map(|b| b.offset)
        .collect();
    let mut problems = inv.all_problems();
    let mut bundles = bundles;
    if inv.loaded_at_run_time() {
        let judged = crate::verify::judge(inv, &unreadable);
        for b in &mut bundles {
            let counts = judged.kernels.get(&b.index);
            b.kernels = b.selected.as_ref().and_then(|id| {
                counts?
                    .iter()
                    .find(|(e, _)| e == id)
                    .map(|(_, kernels)| *kernels)
            });
        }
        let damage = judged.damage;
        // A damaged unit gives the device nothing: its choice says why.
        for p in &damage {
            if let Some(b) = bundles.iter_mut().find(|b| {
                b.offset == p.location.offset
                    && b.member == p.location.member
                    && b.section == p.location.section
            }) {
                b.unreadable = true;
                b.selected = None;
                b.via = None;
                b.kernels = None;
                b.needs = None;
                b.reason = p.kind.to_string();
            }
        }
        problems.extend(damage);
    }
    let other_gpus = crate::verify::other_gpu_entries(inv);
    let mut s = Selection {
        path: name.to_owned(),
        error: None,
        bundles,
        problems,
        kpack: inv.kpack(),
        other_gpus,
        nvidia: inv.nvidia(),
    };
    if let Some(r) = rules {
        s.refuse_device(r, device);
    }
    s
}

/// The selection of a kernel database no library loads: named by its root, one unit
/// ([`Selection::add_database`]).
pub fn database_alone(
    db: &Database,
    device: &TargetId,
    cu_count: Option<u64>,
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> Selection {
    let mut s = Selection {
        path: db.root.clone(),
        error: None,
        bundles: Vec::new(),
        problems: Vec::new(),
        kpack: Vec::new(),
        other_gpus: Vec::new(),
        nvidia: Vec::new(),
    };
    s.add_database(db, device, cu_count, rules);
    s
}

/// The report for a file that could not be read.
pub fn unreadable(name: &str, error: String) -> Selection {
    Selection {
        path: name.to_owned(),
        error: Some(error),
        bundles: Vec::new(),
        problems: Vec::new(),
        kpack: Vec::new(),
        other_gpus: Vec::new(),
        nvidia: Vec::new(),
    }
}
