//! The processor table. Source: LLVM `AMDGPUUsage.rst` "Processors" table and
//! `AMDGPUTargetParser.def` / `ELF.h` (`EF_AMDGPU_MACH_*`), LLVM 19/20.

use crate::processor::{Arch, DeviceKind, Feature, MemoryModelFamily, Processor};

use Feature::{Cumode, Sramecc, Tgsplit, Wavefrontsize64, Xnack};

const XNACK: &[Feature] = &[Xnack];
const XNACK_SRAMECC: &[Feature] = &[Sramecc, Xnack];

/// Every processor gfxkit knows, one row each. Order: families oldest first, generic targets last.
pub static PROCESSORS: &[Processor] = &[
    Processor {
        name: "gfx906",
        aliases: &["vega20"],
        arch: Arch::Amdgcn,
        kind: DeviceKind::Dgpu,
        features: XNACK_SRAMECC,
        target_id_features: XNACK_SRAMECC,
        mach: 0x2f,
        generic_family: Some("gfx9-generic"),
        generic_version: 0,
        memory_model: MemoryModelFamily::Gfx7,
        in_llvm19: true,
    },
    Processor {
        name: "gfx90a",
        aliases: &[],
        arch: Arch::Amdgcn,
        kind: DeviceKind::Dgpu,
        features: &[Sramecc, Tgsplit, Xnack],
        target_id_features: XNACK_SRAMECC,
        mach: 0x3f,
        generic_family: None,
        generic_version: 0,
        memory_model: MemoryModelFamily::Gfx90a,
        in_llvm19: true,
    },
    Processor {
        name: "gfx1030",
        aliases: &[],
        arch: Arch::Amdgcn,
        kind: DeviceKind::Dgpu,
        features: &[Cumode, Wavefrontsize64],
        target_id_features: &[],
        mach: 0x36,
        generic_family: Some("gfx10-3-generic"),
        generic_version: 0,
        memory_model: MemoryModelFamily::Gfx10,
        in_llvm19: true,
    },
    Processor {
        name: "gfx9-generic",
        aliases: &[],
        arch: Arch::Amdgcn,
        kind: DeviceKind::Generic,
        features: XNACK,
        target_id_features: XNACK,
        mach: 0x51,
        generic_family: None,
        generic_version: 1,
        memory_model: MemoryModelFamily::Gfx7,
        in_llvm19: true,
    },
];
