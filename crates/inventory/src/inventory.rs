//! [`Inventory`]: everything the commands report about one file, found once.

use crate::error::Error;
use crate::locate;
use gfxkit_host::Unit;
use gfxkit_host::{Discovery, InputKind, KpackRef, Problem, Severity, Wrapper};

/// Everything found in one file's bytes: what the file is, its units of device code (bundles,
/// object bundles, code objects, offload images) with where they are, the wrapper records
/// that register them, kpack references, and the problems found on the way. `list`,
/// `extract`, `verify`, `select` and `doctor` all read their answers from it.
///
/// Nothing is decompressed or copied: units borrow from the input.
#[derive(Debug, Clone)]
pub struct Inventory<'a> {
    /// What kind of file it is, judged from its first bytes.
    pub kind: InputKind,
    /// Units of device code: bundles in file order, then object bundles, code objects and
    /// offload images (see [`locate::locate`]).
    pub units: Vec<Unit<'a>>,
    /// Damage or oddities found beside the units, with where (empty for a standalone bundle
    /// file, whose damage is [`error`](Self::error)).
    pub problems: Vec<Problem>,
    /// Why the device code of a standalone bundle file cannot be read (then `units` is empty).
    pub error: Option<Error>,
    /// The host discovery the units come from: the wrappers, kpack references and
    /// `.hip_fatbin` sections a rewrite or a split binary's reader needs.
    pub discovery: Discovery<'a>,
}

impl<'a> Inventory<'a> {
    /// Takes the inventory of `data` (a whole file: a host binary, an archive, a bundle, a
    /// code object, an OffloadBinary, or anything else, which holds nothing).
    pub fn of(data: &'a [u8]) -> Inventory<'a> {
        Inventory::of_with(data, &gfxkit_bundle::limits::Limits::default())
    }

    /// [`of`](Self::of) under `limits`, which the units found keep (their headers and
    /// payloads are read under them).
    pub fn of_with(data: &'a [u8], limits: &gfxkit_bundle::limits::Limits) -> Inventory<'a> {
        let discovery = gfxkit_host::discover_with(data, limits);
        let mut discovery = discovery;
        let (units, mut problems, error) = if discovery.kind == InputKind::Bundle {
            // A bundle file is read strictly: its damage is an error, not a problem beside.
            match locate::find_bundles_with(data, limits) {
                Ok(units) => (units, Vec::new(), None),
                Err(e) => (Vec::new(), Vec::new(), Some(e)),
            }
        } else {
            let found = discovery.units();
            (found.units, found.problems, None)
        };
        // Entries whose payload contradicts their ID are damage for every command that reads
        // its answer from the IDs (list, select, doctor, extract): one problem each, also
        // among discovery's, which select and doctor report.
        let contradictions = locate::contradictions(&units);
        discovery.problems.extend(contradictions.iter().cloned());
        problems.extend(contradictions);
        Inventory {
            kind: discovery.kind,
            units,
            problems,
            error,
            discovery,
        }
    }

    /// The `.hipFatBinSegment` wrapper records.
    pub fn wrappers(&self) -> &[Wrapper] {
        &self.discovery.wrappers
    }

    /// The kpack references of `HIPK` wrappers (device code moved out to kpack archives).
    pub fn kpack(&self) -> Vec<KpackRef> {
        self.discovery
            .wrappers
            .iter()
            .filter_map(|w| w.kpack.clone())
            .collect()
    }

    /// Where the sections holding NVIDIA device code (CUDA fat binaries) lie: what a CUDA
    /// build of a library holds where a ROCm build holds offload bundles.
    pub fn nvidia(&self) -> Vec<gfxkit_host::Location> {
        self.discovery.nvidia.clone()
    }

    /// What the HIP runtime reads of each unit it would consider loading, with their parsed
    /// entry IDs (for choosing a code object per device): one view per unit, in the order of
    /// [`units`](Self::units), which holds the loadable units first.
    pub fn loadable(&self) -> Vec<gfxkit_host::entries::LoadView> {
        gfxkit_host::entries::load_views(&self.units)
    }

    /// The problems, with why a standalone bundle file cannot be read ([`error`](Self::error))
    /// as one more at the offset it names: what `select` and `doctor` report beside their
    /// answers.
    pub fn all_problems(&self) -> Vec<Problem> {
        let mut all = self.problems.clone();
        if let Some(e) = &self.error {
            all.push(Problem::error(
                gfxkit_host::Location::at(e.offset().unwrap_or(0), 0),
                gfxkit_host::ProblemKind::BadBundle(e.to_string()),
            ));
        }
        all
    }

    /// Whether some problem is an error (damaged data) rather than a warning.
    pub fn has_errors(&self) -> bool {
        self.error.is_some() || self.problems.iter().any(|p| p.severity == Severity::Error)
    }

    /// Whether the runtime loads files of this kind: shared objects and executables (their
    /// `.hip_fatbin`), Windows DLLs and EXEs (their `.hip_fat`), and bundles or code objects
    /// given to `hipModuleLoad`. Relocatable objects (ELF or COFF) and archives are build
    /// inputs, not loaded.
    pub fn loaded_at_run_time(&self) -> bool {
        matches!(
            self.kind,
            InputKind::ElfSharedObject
                | InputKind::ElfExecutable
                | InputKind::PeImage
                | InputKind::Bundle
                | InputKind::CodeObject
        )
    }
}

/// A section holding NVIDIA device code as reports say it: `.nv_fatbin (1.5 MiB)`, with its
/// archive member before it (`cuda.o: __nv_relfatbin (12.0 KiB)`).
pub fn nvidia_label(l: &gfxkit_host::Location) -> String {
    let section = l.section.as_deref().unwrap_or("?");
    let size = crate::units::human_bytes(l.size);
    match &l.member {
        Some(m) => format!("{m}: {section} ({size})"),
        None => format!("{section} ({size})"),
    }
}
