//! One processor row as gfxkit serialises it: the object `gfxkit target list --json` prints
//! per processor (and `target show --json` extends), and Python's `Processor.to_dict()`.

use crate::{HardwareLimits, Processor};
use serde::Serialize;

/// The serialised view of a [`Processor`] row (a stable JSON shape; documented in
/// `gfxkit target show --help`).
#[derive(Debug, Clone, Serialize)]
pub struct ProcessorRow {
    /// Primary name (`gfx90a`).
    pub name: &'static str,
    /// Alternative names (`tonga` for `gfx802`).
    pub aliases: &'static [&'static str],
    /// `amdgcn` or `r600`.
    pub arch: &'static str,
    /// `dgpu`, `apu`, `both` or `generic`.
    pub kind: &'static str,
    /// Every feature the processor has.
    pub features: Vec<&'static str>,
    /// Those that take part in target IDs (`sramecc`, `xnack`).
    pub target_id_features: Vec<&'static str>,
    /// `EF_AMDGPU_MACH_*` value.
    pub mach: u8,
    /// The generic processor this one belongs to (`gfx9-generic`).
    pub generic_family: Option<&'static str>,
    /// Generic version (generic processors only; 0 otherwise).
    pub generic_version: u8,
    /// Members of a generic processor.
    pub generic_members: Vec<&'static str>,
    /// Memory-model family.
    pub memory_model: &'static str,
    /// Whether LLVM 19 knows the processor.
    pub in_llvm19: bool,
    /// The LLVM releases that define it (`19+`, `19-20`, `main`).
    pub llvm: String,
    /// xnack is always on (no xnack feature to set).
    pub xnack_always: bool,
    /// Register files, LDS, wave slots (the hardware-limit columns).
    pub hardware: &'static HardwareLimits,
}

impl ProcessorRow {
    /// The row of `p`.
    pub fn of(p: &'static Processor) -> ProcessorRow {
        ProcessorRow {
            name: p.name,
            aliases: p.aliases,
            arch: p.arch.as_str(),
            kind: p.kind.as_str(),
            features: p.features.iter().map(|f| f.name()).collect(),
            target_id_features: p.target_id_features.iter().map(|f| f.name()).collect(),
            mach: p.mach,
            generic_family: p.generic_family,
            generic_version: p.generic_version,
            generic_members: p.generic_members().map(|m| m.name).collect(),
            memory_model: p.memory_model.name(),
            in_llvm19: p.in_llvm19(),
            llvm: p.llvm.to_string(),
            xnack_always: p.xnack_always(),
            hardware: p.hw,
        }
    }

    /// Every row of the processor table, in table order.
    pub fn all() -> Vec<ProcessorRow> {
        crate::PROCESSORS.iter().map(ProcessorRow::of).collect()
    }
}
