//! The processor table: one row per processor, everything else is derived from it.
//!
//! Sources: AMDGPUUsage.rst "Processors" and "Generic Processors" tables, `ELF.h`
//! (`EF_AMDGPU_MACH_*`), `AMDGPUTargetParser.def` / `GCNProcessors.td` (aliases, features) from
//! LLVM 19 to LLVM main (late 2026). The `llvm` column says which LLVM releases define a row:
//! rows LLVM 19 has are checked against `llc -mcpu=help` of LLVM 19.1 (`-mtriple=amdgcn` and
//! `-mtriple=r600`), rows LLVM 22 has against ROCm 7.2.2's LLVM 22 (`scripts/llvm22.py cpus`).
//! Rows added after LLVM 19 name the LLVM pull request that defined them; the release is the
//! first release branch cut after it was merged (LLVM branches in January and July).
//!
//! Where the original specification and today's LLVM differ, the table follows LLVM:
//! - `hainan` and `oland` are aliases of `gfx602` (the specification lists them under `gfx601`,
//!   which was split in LLVM 12); `tongapro` names `gfx805`.
//! - `sram-ecc` is spelled `sramecc`; `gfx908` and later also support `sramecc` in target IDs.
//! - The specification lists `xnack` for the dGPUs `gfx802`, `gfx803` (and `gfx805`); LLVM does not
//!   support it there (`llc -mattr=+xnack` warns and writes no xnack field), so neither does gfxkit.
//! - `gfx940` and `gfx941` were removed in LLVM 21 (their mach values 0x40 and 0x4b are reserved
//!   since); they are kept here, marked, so old code objects still decode.
//! - On GFX12.5 and later (`gfx1250`, `gfx1251`, `gfx1250-strict`, `gfx12-5-generic`, `gfx1310`,
//!   `gfx13-generic`) xnack is always on: LLVM main rejects `:xnack+`/`:xnack-` for them, so
//!   `xnack` is a supported feature but not a target-ID feature ([`Processor::xnack_always`]).
//!   ROCm 7.2.2's LLVM 22 still accepted the setting for gfx1250/gfx1251.

use crate::hardware::*;
use crate::processor::{Arch, DeviceKind, Feature, LlvmReleases, MemoryModelFamily, Processor};

use DeviceKind::{Apu, Both, Dgpu};
use Feature::{Cumode, Sramecc, Tgsplit, Wavefrontsize64, Xnack};
use MemoryModelFamily as Mm;

const NONE: &[Feature] = &[];
const XNACK: &[Feature] = &[Xnack];
const SRAMECC_XNACK: &[Feature] = &[Sramecc, Xnack];
const SRAMECC_TGSPLIT_XNACK: &[Feature] = &[Sramecc, Tgsplit, Xnack];
const SRAMECC: &[Feature] = &[Sramecc];
const GFX10_1: &[Feature] = &[Cumode, Wavefrontsize64, Xnack];
const RDNA: &[Feature] = &[Cumode, Wavefrontsize64];

const G9: Option<&str> = Some("gfx9-generic");
const G9_4: Option<&str> = Some("gfx9-4-generic");
const G10_1: Option<&str> = Some("gfx10-1-generic");
const G10_3: Option<&str> = Some("gfx10-3-generic");
const G11: Option<&str> = Some("gfx11-generic");
const G12: Option<&str> = Some("gfx12-generic");
const G11_7: Option<&str> = Some("gfx11-7-generic");
const G12_5: Option<&str> = Some("gfx12-5-generic");
const G13: Option<&str> = Some("gfx13-generic");

/// Defined by LLVM 19 (and, unless a row says otherwise, every release since).
const L19: LlvmReleases = LlvmReleases::since(19);
const L20: LlvmReleases = LlvmReleases::since(20);
const L21: LlvmReleases = LlvmReleases::since(21);
const L22: LlvmReleases = LlvmReleases::since(22);
const L23: LlvmReleases = LlvmReleases::since(23);
/// Only on LLVM main so far.
const MAIN: LlvmReleases = LlvmReleases::since(LlvmReleases::MAIN);
/// In LLVM 19 and 20, removed in LLVM 21 (llvm-project commit 8615f9a, February 2025).
const L19_TO_20: LlvmReleases = LlvmReleases::between(19, 21);

/// An r600 row: 32-bit ELF, no target features, no memory model.
const fn r600(name: &'static str, mach: u8) -> Processor {
    Processor {
        name,
        aliases: &[],
        arch: Arch::R600,
        kind: Dgpu,
        features: NONE,
        target_id_features: NONE,
        mach,
        generic_family: None,
        generic_version: 0,
        memory_model: Mm::R600,
        llvm: L19,
        hw: &HW_R600,
    }
}

/// An amdgcn processor row. Columns: name, aliases, dGPU/APU, supported features, target-ID
/// features, `EF_AMDGPU_MACH`, generic family, memory-model family, LLVM releases, hardware
/// limits.
#[allow(clippy::too_many_arguments)]
const fn gcn(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: DeviceKind,
    features: &'static [Feature],
    target_id_features: &'static [Feature],
    mach: u8,
    generic_family: Option<&'static str>,
    memory_model: MemoryModelFamily,
    llvm: LlvmReleases,
    hw: &'static HardwareLimits,
) -> Processor {
    Processor {
        name,
        aliases,
        arch: Arch::Amdgcn,
        kind,
        features,
        target_id_features,
        mach,
        generic_family,
        generic_version: 0,
        memory_model,
        llvm,
        hw,
    }
}

/// A generic target row (code object V6+). Columns: name, supported features, target-ID
/// features, `EF_AMDGPU_MACH`, generic version, memory-model family, LLVM releases, hardware
/// limits (those of its members).
#[allow(clippy::too_many_arguments)]
const fn generic(
    name: &'static str,
    features: &'static [Feature],
    target_id_features: &'static [Feature],
    mach: u8,
    generic_version: u8,
    memory_model: MemoryModelFamily,
    llvm: LlvmReleases,
    hw: &'static HardwareLimits,
) -> Processor {
    Processor {
        name,
        aliases: &[],
        arch: Arch::Amdgcn,
        kind: DeviceKind::Generic,
        features,
        target_id_features,
        mach,
        generic_family: None,
        generic_version,
        memory_model,
        llvm,
        hw,
    }
}

/// Every processor gfxkit knows, one row each. Order: families oldest first, generic targets last.
#[rustfmt::skip]
pub static PROCESSORS: &[Processor] = &[
    // Radeon HD 2000/3000 (R600), HD 4000 (R700), HD 5000 (Evergreen), HD 6000 (Northern Islands).
    r600("r600", 0x01),
    r600("r630", 0x02),
    r600("rs880", 0x03),
    r600("rv670", 0x04),
    r600("rv710", 0x05),
    r600("rv730", 0x06),
    r600("rv770", 0x07),
    r600("cedar", 0x08),
    r600("cypress", 0x09),
    r600("juniper", 0x0a),
    r600("redwood", 0x0b),
    r600("sumo", 0x0c),
    r600("barts", 0x0d),
    r600("caicos", 0x0e),
    r600("cayman", 0x0f),
    r600("turks", 0x10),
    // GCN GFX6 (Southern Islands).
    gcn("gfx600", &["tahiti"], Dgpu, NONE, NONE, 0x20, None, Mm::Gfx6, L19, &HW_GFX6),
    gcn("gfx601", &["pitcairn", "verde"], Dgpu, NONE, NONE, 0x21, None, Mm::Gfx6, L19, &HW_GFX6),
    gcn("gfx602", &["hainan", "oland"], Dgpu, NONE, NONE, 0x3a, None, Mm::Gfx6, L19, &HW_GFX6),
    // GCN GFX7 (Sea Islands).
    gcn("gfx700", &["kaveri"], Apu, NONE, NONE, 0x22, None, Mm::Gfx7, L19, &HW_GFX7),
    gcn("gfx701", &["hawaii"], Dgpu, NONE, NONE, 0x23, None, Mm::Gfx7, L19, &HW_GFX7),
    gcn("gfx702", &[], Dgpu, NONE, NONE, 0x24, None, Mm::Gfx7, L19, &HW_GFX7),
    gcn("gfx703", &["kabini", "mullins"], Apu, NONE, NONE, 0x25, None, Mm::Gfx7, L19, &HW_GFX7),
    gcn("gfx704", &["bonaire"], Dgpu, NONE, NONE, 0x26, None, Mm::Gfx7, L19, &HW_GFX7),
    gcn("gfx705", &[], Apu, NONE, NONE, 0x3b, None, Mm::Gfx7, L19, &HW_GFX7),
    // GCN GFX8 (Volcanic Islands).
    gcn("gfx801", &["carrizo"], Apu, XNACK, XNACK, 0x28, None, Mm::Gfx7, L19, &HW_GFX8),
    gcn("gfx802", &["iceland", "tonga"], Dgpu, NONE, NONE, 0x29, None, Mm::Gfx7, L19, &HW_GFX8),
    gcn("gfx803", &["fiji", "polaris10", "polaris11"], Dgpu, NONE, NONE, 0x2a, None, Mm::Gfx7, L19, &HW_GFX8),
    gcn("gfx805", &["tongapro"], Dgpu, NONE, NONE, 0x3c, None, Mm::Gfx7, L19, &HW_GFX8),
    gcn("gfx810", &["stoney"], Apu, XNACK, XNACK, 0x2b, None, Mm::Gfx7, L19, &HW_GFX8),
    // GCN GFX9 (Vega), CDNA 1-4.
    gcn("gfx900", &[], Dgpu, XNACK, XNACK, 0x2c, G9, Mm::Gfx7, L19, &HW_GFX9),
    gcn("gfx902", &[], Apu, XNACK, XNACK, 0x2d, G9, Mm::Gfx7, L19, &HW_GFX9),
    gcn("gfx904", &[], Dgpu, XNACK, XNACK, 0x2e, G9, Mm::Gfx7, L19, &HW_GFX9),
    gcn("gfx906", &[], Dgpu, SRAMECC_XNACK, SRAMECC_XNACK, 0x2f, G9, Mm::Gfx7, L19, &HW_GFX9),
    gcn("gfx908", &[], Dgpu, SRAMECC_XNACK, SRAMECC_XNACK, 0x30, None, Mm::Gfx7, L19, &HW_GFX9),
    gcn("gfx909", &[], Apu, XNACK, XNACK, 0x31, G9, Mm::Gfx7, L19, &HW_GFX9),
    gcn("gfx90a", &[], Dgpu, SRAMECC_TGSPLIT_XNACK, SRAMECC_XNACK, 0x3f, None, Mm::Gfx90a, L19, &HW_GFX90A),
    gcn("gfx90c", &[], Apu, XNACK, XNACK, 0x32, G9, Mm::Gfx7, L19, &HW_GFX9),
    // gfx940, gfx941: removed in LLVM 21, kept so their code objects decode.
    gcn("gfx940", &[], Dgpu, SRAMECC_TGSPLIT_XNACK, SRAMECC_XNACK, 0x40, G9_4, Mm::Gfx940, L19_TO_20, &HW_GFX940),
    gcn("gfx941", &[], Dgpu, SRAMECC_TGSPLIT_XNACK, SRAMECC_XNACK, 0x4b, G9_4, Mm::Gfx940, L19_TO_20, &HW_GFX940),
    gcn("gfx942", &[], Both, SRAMECC_TGSPLIT_XNACK, SRAMECC_XNACK, 0x4c, G9_4, Mm::Gfx942, L19, &HW_GFX940),
    // gfx950: LLVM 20 (release notes of LLVM 20).
    gcn("gfx950", &[], Dgpu, SRAMECC_TGSPLIT_XNACK, SRAMECC_XNACK, 0x4f, G9_4, Mm::Gfx942, L20, &HW_GFX950),
    // GCN GFX10.1 (RDNA 1).
    gcn("gfx1010", &[], Dgpu, GFX10_1, XNACK, 0x33, G10_1, Mm::Gfx10, L19, &HW_GFX10_1),
    gcn("gfx1011", &[], Dgpu, GFX10_1, XNACK, 0x34, G10_1, Mm::Gfx10, L19, &HW_GFX10_1),
    gcn("gfx1012", &[], Dgpu, GFX10_1, XNACK, 0x35, G10_1, Mm::Gfx10, L19, &HW_GFX10_1),
    gcn("gfx1013", &[], Apu, GFX10_1, XNACK, 0x42, G10_1, Mm::Gfx10, L19, &HW_GFX10_1),
    // GCN GFX10.3 (RDNA 2).
    gcn("gfx1030", &[], Dgpu, RDNA, NONE, 0x36, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    gcn("gfx1031", &[], Dgpu, RDNA, NONE, 0x37, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    gcn("gfx1032", &[], Dgpu, RDNA, NONE, 0x38, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    gcn("gfx1033", &[], Apu, RDNA, NONE, 0x39, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    gcn("gfx1034", &[], Dgpu, RDNA, NONE, 0x3e, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    gcn("gfx1035", &[], Apu, RDNA, NONE, 0x3d, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    gcn("gfx1036", &[], Apu, RDNA, NONE, 0x45, G10_3, Mm::Gfx10, L19, &HW_GFX10_3),
    // GCN GFX11 (RDNA 3, RDNA 3.5).
    gcn("gfx1100", &[], Dgpu, RDNA, NONE, 0x41, G11, Mm::Gfx11, L19, &HW_GFX11_1_5X),
    gcn("gfx1101", &[], Dgpu, RDNA, NONE, 0x46, G11, Mm::Gfx11, L19, &HW_GFX11_1_5X),
    gcn("gfx1102", &[], Dgpu, RDNA, NONE, 0x47, G11, Mm::Gfx11, L19, &HW_GFX11),
    gcn("gfx1103", &[], Apu, RDNA, NONE, 0x44, G11, Mm::Gfx11, L19, &HW_GFX11),
    gcn("gfx1150", &[], Apu, RDNA, NONE, 0x43, G11, Mm::Gfx11, L19, &HW_GFX11),
    gcn("gfx1151", &[], Apu, RDNA, NONE, 0x4a, G11, Mm::Gfx11, L19, &HW_GFX11_1_5X),
    gcn("gfx1152", &[], Apu, RDNA, NONE, 0x55, G11, Mm::Gfx11, L19, &HW_GFX11),
    // gfx1153: llvm-project#113138 (October 2024), LLVM 20.
    gcn("gfx1153", &[], Apu, RDNA, NONE, 0x58, G11, Mm::Gfx11, L20, &HW_GFX11),
    // gfx1154: llvm-project#204816 (June 2026), LLVM 23; an APU like the other gfx115x.
    gcn("gfx1154", &[], Apu, RDNA, NONE, 0x57, G11, Mm::Gfx11, L23, &HW_GFX11),
    // GCN GFX11.7 (RDNA 4m): gfx1170 llvm-project#180185 (February 2026), gfx1171 and gfx1172
    // llvm-project#187735 (March 2026), LLVM 23. AMDGPUUsage lists gfx1170 as an APU with
    // cumode and wavefrontsize64.
    gcn("gfx1170", &[], Apu, RDNA, NONE, 0x5d, G11_7, Mm::Gfx11, L23, &HW_GFX11),
    gcn("gfx1171", &[], Apu, RDNA, NONE, 0x5e, G11_7, Mm::Gfx11, L23, &HW_GFX11),
    gcn("gfx1172", &[], Apu, RDNA, NONE, 0x5c, G11_7, Mm::Gfx11, L23, &HW_GFX11),
    // GCN GFX12 (RDNA 4) and GFX12.5.
    gcn("gfx1200", &[], Dgpu, RDNA, NONE, 0x48, G12, Mm::Gfx12, L19, &HW_GFX12),
    gcn("gfx1201", &[], Dgpu, RDNA, NONE, 0x4e, G12, Mm::Gfx12, L19, &HW_GFX12),
    // GFX12.5: xnack always on (llvm-project#161457, #204523), so only sramecc takes part in
    // target IDs. gfx1250: llvm-project#144965 (June 2025), LLVM 21; gfx1251: LLVM 22 (in
    // ROCm 7.2.2's LLVM 22); gfx1250-strict (mach 0xeb): llvm-project#218543 (August 2026),
    // LLVM main only so far.
    gcn("gfx1250", &[], Apu, SRAMECC_XNACK, SRAMECC, 0x49, G12_5, Mm::Gfx1250, L21, &HW_GFX1250),
    gcn("gfx1251", &[], Apu, SRAMECC_XNACK, SRAMECC, 0x5a, G12_5, Mm::Gfx1250, L22, &HW_GFX1250),
    gcn("gfx1250-strict", &[], Apu, SRAMECC_XNACK, SRAMECC, 0xeb, None, Mm::Gfx1250, MAIN, &HW_GFX1250),
    // GCN GFX13: gfx1310 llvm-project#177355 (January 2026, after the LLVM 22 branch), LLVM 23;
    // "for now identical to gfx1250", so the same features and memory-model family.
    gcn("gfx1310", &[], Apu, SRAMECC_XNACK, SRAMECC, 0x50, G13, Mm::Gfx1250, L23, &HW_GFX1250),
    // Generic targets (code object V6 and later).
    generic("gfx9-generic", XNACK, XNACK, 0x51, 1, Mm::Gfx7, L19, &HW_GFX9),
    // gfx9-4-generic: LLVM 20.
    generic("gfx9-4-generic", SRAMECC_TGSPLIT_XNACK, SRAMECC_XNACK, 0x5f, 1, Mm::Gfx942, L20, &HW_GFX940),
    generic("gfx10-1-generic", GFX10_1, XNACK, 0x52, 1, Mm::Gfx10, L19, &HW_GFX10_1),
    generic("gfx10-3-generic", RDNA, NONE, 0x53, 1, Mm::Gfx10, L19, &HW_GFX10_3),
    generic("gfx11-generic", RDNA, NONE, 0x54, 1, Mm::Gfx11, L19, &HW_GFX11),
    // gfx11-7-generic (0x62): llvm-project#205363 (June 2026), LLVM 23.
    generic("gfx11-7-generic", RDNA, NONE, 0x62, 1, Mm::Gfx11, L23, &HW_GFX11),
    generic("gfx12-generic", RDNA, NONE, 0x59, 1, Mm::Gfx12, L19, &HW_GFX12),
    // gfx12-5-generic: llvm-project#183381 (February 2026), LLVM 23 (not in ROCm 7.2.2's
    // LLVM 22); xnack "any" only (llvm-project#198437).
    generic("gfx12-5-generic", SRAMECC_XNACK, SRAMECC, 0x5b, 1, Mm::Gfx1250, L23, &HW_GFX1250),
    // gfx13-generic (0x63), like gfx11-7-generic: llvm-project#205363 (June 2026), LLVM 23.
    generic("gfx13-generic", SRAMECC_XNACK, SRAMECC, 0x63, 1, Mm::Gfx1250, L23, &HW_GFX1250),
];

/// Lookups in the table.
impl Processor {
    /// Finds a processor by its primary or alternative name (exact, case-sensitive like LLVM).
    /// By hash: every target ID read looks its processor up, a census many per input.
    pub fn by_name(name: &str) -> Option<&'static Processor> {
        static BY_NAME: std::sync::LazyLock<std::collections::HashMap<&str, &Processor>> =
            std::sync::LazyLock::new(|| {
                let mut m = std::collections::HashMap::new();
                // The first row of a name wins, as a search of the table in order finds it.
                for p in PROCESSORS {
                    for n in std::iter::once(&p.name).chain(p.aliases) {
                        m.entry(*n).or_insert(p);
                    }
                }
                m
            });
        BY_NAME.get(name).copied()
    }

    /// Finds the amdgcn processor with the given `EF_AMDGPU_MACH` value. R600 processors share
    /// mach values with nothing in amdgcn code objects, so only `amdgcn` rows are searched.
    pub fn by_mach(mach: u8) -> Option<&'static Processor> {
        if mach == 0 {
            return None;
        }
        PROCESSORS
            .iter()
            .find(|p| p.arch == Arch::Amdgcn && p.mach == mach)
    }

    /// Finds the r600 processor with the given `EF_AMDGPU_MACH` value.
    pub fn by_r600_mach(mach: u8) -> Option<&'static Processor> {
        if mach == 0 {
            return None;
        }
        PROCESSORS
            .iter()
            .find(|p| p.arch == Arch::R600 && p.mach == mach)
    }

    /// Every row of the table, in table order.
    pub fn all() -> &'static [Processor] {
        PROCESSORS
    }

    /// The generic target whose code objects this processor can run, if any.
    pub fn generic(&self) -> Option<&'static Processor> {
        self.generic_family.and_then(Processor::by_name)
    }

    /// For a generic target, the processors it covers, in table order; empty otherwise.
    pub fn generic_members(&self) -> impl Iterator<Item = &'static Processor> + '_ {
        PROCESSORS
            .iter()
            .filter(move |p| self.is_generic() && p.generic_family == Some(self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup by hash answers as a search of the table in order: for every name and
    /// alias, and for names no row has.
    #[test]
    fn by_name_finds_the_first_row_of_each_name() {
        let names = PROCESSORS
            .iter()
            .flat_map(|p| std::iter::once(p.name).chain(p.aliases.iter().copied()));
        for n in names.chain(["gfx9999", "", "GFX90A", "gfx90a:xnack+"]) {
            let first = PROCESSORS
                .iter()
                .find(|p| p.name == n || p.aliases.contains(&n));
            assert_eq!(
                Processor::by_name(n).map(|p| p as *const Processor),
                first.map(|p| p as *const Processor),
                "{n}"
            );
        }
    }
    use std::collections::HashSet;

    #[test]
    fn isa_versions_follow_the_names() {
        let v = |n: &str| Processor::by_name(n).unwrap().isa_version();
        assert_eq!(v("gfx90a"), Some((9, 0, 10)));
        assert_eq!(v("gfx1151"), Some((11, 5, 1)));
        assert_eq!(v("gfx803"), Some((8, 0, 3)));
        assert_eq!(v("gfx9-4-generic"), Some((9, 4, 0)));
        assert_eq!(v("gfx11-generic"), Some((11, 0, 0)));
        assert_eq!(v("r600"), None);
        assert_eq!(v("gfx1250-strict"), v("gfx1250"));
        // Every amdgcn processor has one, and no two processors (variants aside) share it.
        let mut seen = HashSet::new();
        for p in PROCESSORS.iter().filter(|p| p.arch == Arch::Amdgcn) {
            let iv = p.isa_version().unwrap_or_else(|| panic!("{}", p.name));
            if !p.is_generic() && !p.name.contains('-') {
                assert!(seen.insert(iv), "{} repeats {iv:?}", p.name);
            }
        }
    }

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = HashSet::new();
        for p in PROCESSORS {
            for n in p.names() {
                assert!(seen.insert(n), "name {n} appears twice");
            }
        }
    }

    #[test]
    fn mach_values_are_unique_per_arch_and_in_range() {
        let mut gcn = HashSet::new();
        let mut r6 = HashSet::new();
        for p in PROCESSORS {
            assert_ne!(p.mach, 0, "{} has no mach value", p.name);
            match p.arch {
                Arch::Amdgcn => {
                    assert!(p.mach >= 0x20, "{}: amdgcn mach in r600 range", p.name);
                    assert!(gcn.insert(p.mach), "amdgcn mach {:#x} twice", p.mach);
                }
                Arch::R600 => {
                    assert!(p.mach < 0x20, "{}: r600 mach out of range", p.name);
                    assert!(r6.insert(p.mach), "r600 mach {:#x} twice", p.mach);
                }
            }
        }
    }

    #[test]
    fn every_lookup_finds_its_row() {
        for p in PROCESSORS {
            for n in p.names() {
                assert_eq!(Processor::by_name(n), Some(p), "by_name({n})");
            }
            match p.arch {
                Arch::Amdgcn => assert_eq!(Processor::by_mach(p.mach), Some(p)),
                Arch::R600 => {
                    assert_eq!(Processor::by_r600_mach(p.mach), Some(p));
                    assert!(Processor::by_mach(p.mach).map_or(true, |q| q.arch == Arch::Amdgcn));
                }
            }
        }
        assert!(Processor::by_name("gfx9999").is_none());
        assert!(
            Processor::by_name("GFX906").is_none(),
            "names are case-sensitive"
        );
        assert!(Processor::by_mach(0).is_none());
        assert!(Processor::by_mach(0x27).is_none(), "0x27 is reserved");
    }

    #[test]
    fn features_are_sorted_and_target_id_features_are_a_subset() {
        for p in PROCESSORS {
            assert!(p.features.windows(2).all(|w| w[0] < w[1]), "{}", p.name);
            assert!(p.target_id_features.windows(2).all(|w| w[0] < w[1]));
            for f in p.target_id_features {
                assert!(
                    p.supports(*f),
                    "{}: {f:?} in target ID but unsupported",
                    p.name
                );
                assert!(matches!(f, Feature::Xnack | Feature::Sramecc), "{}", p.name);
                assert!(p.has_target_id_feature(*f));
            }
            assert_eq!(
                p.supports(Feature::Sramecc),
                p.has_target_id_feature(Feature::Sramecc),
                "{}: sramecc",
                p.name
            );
            // xnack leaves target IDs only where it is always on: GFX12.5 and later.
            assert_eq!(
                p.xnack_always(),
                p.supports(Feature::Xnack) && !p.has_target_id_feature(Feature::Xnack)
            );
            if p.xnack_always() {
                assert!(p.mach >= 0x49, "{}", p.name);
                assert!(p.memory_model >= MemoryModelFamily::Gfx12, "{}", p.name);
            }
        }
    }

    #[test]
    fn generic_families_point_at_generic_rows() {
        for p in PROCESSORS {
            assert_eq!(p.is_generic(), p.kind == DeviceKind::Generic);
            assert_eq!(p.is_generic(), p.generic_version != 0, "{}", p.name);
            if let Some(family) = p.generic_family {
                let g = p
                    .generic()
                    .unwrap_or_else(|| panic!("{}: no row {family}", p.name));
                assert!(g.is_generic(), "{} -> {} is not generic", p.name, g.name);
                assert!(!p.is_generic());
                assert!(g.generic_members().any(|m| m == p));
                // A generic target supports only features all its members support.
                for f in g.target_id_features {
                    assert!(
                        p.has_target_id_feature(*f),
                        "{} lacks {f:?} of {}",
                        p.name,
                        g.name
                    );
                }
            }
            if p.is_generic() {
                // gfx13-generic has one member so far.
                assert!(
                    p.generic_members().count() >= 1,
                    "{} has no members",
                    p.name
                );
                assert!(p.generic_family.is_none());
                assert!(p.aliases.is_empty());
            } else {
                assert_eq!(p.generic_members().count(), 0);
            }
        }
    }

    #[test]
    fn every_row_has_hardware_limits_of_its_family() {
        use crate::hardware::Generation;
        for p in PROCESSORS {
            let hw = p.hw;
            match p.arch {
                Arch::R600 => assert_eq!(hw.generation, Generation::R600, "{}", p.name),
                Arch::Amdgcn => {
                    assert!(hw.generation >= Generation::Gfx6, "{}", p.name);
                    assert!(hw.max_waves_per_eu > 0 && hw.simds_per_cu > 0, "{}", p.name);
                    assert!(
                        hw.vgprs_wave64 > 0 && hw.vgpr_granule_wave64 > 0,
                        "{}",
                        p.name
                    );
                    assert_eq!(hw.vgprs_wave64 % hw.vgpr_granule_wave64, 0, "{}", p.name);
                    assert!(hw.lds_per_cu >= 32768, "{}", p.name);
                    assert!(
                        hw.addressable_sgprs > 0 && hw.sgpr_granule > 0,
                        "{}",
                        p.name
                    );
                    // Wave32 and the WGP mode come with GFX10, as do the cumode and
                    // wavefrontsize64 features.
                    let rdna = hw.generation >= Generation::Gfx10;
                    assert_eq!(hw.supports_wave32, rdna, "{}", p.name);
                    assert_eq!(hw.has_wgp_mode(), rdna, "{}", p.name);
                    if rdna {
                        assert!(hw.vgprs_wave32 > 0 && hw.vgpr_granule_wave32 > 0);
                        assert!(hw.sgpr_occupancy.is_empty(), "{}", p.name);
                    } else {
                        assert!(!p.supports(Feature::Cumode), "{}", p.name);
                    }
                    // The unified register file is exactly the processors with tgsplit.
                    assert_eq!(
                        hw.unified_vgpr_file,
                        p.supports(Feature::Tgsplit),
                        "{}",
                        p.name
                    );
                    let mm_generation = match p.memory_model {
                        Mm::Gfx6 => Generation::Gfx6,
                        Mm::Gfx7 => hw.generation.clamp(Generation::Gfx7, Generation::Gfx9),
                        Mm::Gfx90a | Mm::Gfx940 | Mm::Gfx942 => Generation::Gfx9,
                        Mm::Gfx10 => Generation::Gfx10,
                        Mm::Gfx11 => Generation::Gfx11,
                        Mm::Gfx12 | Mm::Gfx1250 => Generation::Gfx12,
                        Mm::R600 => Generation::R600,
                    };
                    assert_eq!(hw.generation, mm_generation, "{}", p.name);
                }
            }
            for m in p.generic_members() {
                assert_eq!(m.hw.generation, hw.generation, "{} in {}", m.name, p.name);
                assert_eq!(m.hw.unified_vgpr_file, hw.unified_vgpr_file);
                assert_eq!(m.hw.architected_flat_scratch, hw.architected_flat_scratch);
            }
        }
        let hw = |n: &str| Processor::by_name(n).unwrap().hw;
        assert_eq!(hw("gfx942").max_waves_per_eu, 8);
        assert_eq!(hw("gfx90a").vgprs_wave64, 512);
        assert_eq!(hw("gfx1100").vgprs_wave32, 1536);
        assert_eq!(hw("gfx1102").vgprs_wave32, 1024);
        assert_eq!(hw("gfx1010").max_waves_per_eu, 20);
        assert_eq!(hw("gfx601").lds_per_cu, 32768);
        assert!(hw("gfx1030").has_wgp_mode());
    }

    #[test]
    fn known_values() {
        let mach = |n: &str| Processor::by_name(n).unwrap().mach;
        for (name, value) in [
            ("r600", 0x01),
            ("turks", 0x10),
            ("gfx600", 0x20),
            ("gfx602", 0x3a),
            ("gfx801", 0x28),
            ("gfx900", 0x2c),
            ("gfx906", 0x2f),
            ("gfx908", 0x30),
            ("gfx90a", 0x3f),
            ("gfx90c", 0x32),
            ("gfx940", 0x40),
            ("gfx941", 0x4b),
            ("gfx942", 0x4c),
            ("gfx950", 0x4f),
            ("gfx1013", 0x42),
            ("gfx1030", 0x36),
            ("gfx1036", 0x45),
            ("gfx1100", 0x41),
            ("gfx1151", 0x4a),
            ("gfx1152", 0x55),
            ("gfx1153", 0x58),
            ("gfx1200", 0x48),
            ("gfx1201", 0x4e),
            ("gfx1250", 0x49),
            ("gfx9-generic", 0x51),
            ("gfx9-4-generic", 0x5f),
            ("gfx10-1-generic", 0x52),
            ("gfx10-3-generic", 0x53),
            ("gfx11-generic", 0x54),
            ("gfx12-generic", 0x59),
            ("gfx1154", 0x57),
            ("gfx1170", 0x5d),
            ("gfx1171", 0x5e),
            ("gfx1172", 0x5c),
            ("gfx11-7-generic", 0x62),
            ("gfx1251", 0x5a),
            ("gfx1250-strict", 0xeb),
            ("gfx12-5-generic", 0x5b),
            ("gfx1310", 0x50),
            ("gfx13-generic", 0x63),
        ] {
            assert_eq!(mach(name), value, "{name}");
        }
        let g9 = Processor::by_name("gfx9-generic").unwrap();
        assert_eq!(g9.generic_version, 1);
        let members: Vec<_> = g9.generic_members().map(|p| p.name).collect();
        assert_eq!(
            members,
            ["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"]
        );
        assert_eq!(Processor::by_name("tonga").unwrap().name, "gfx802");
        assert_eq!(Processor::by_name("oland").unwrap().name, "gfx602");
        assert_eq!(Processor::by_name("tongapro").unwrap().name, "gfx805");
        let mm = |n: &str| Processor::by_name(n).unwrap().memory_model;
        assert_eq!(mm("gfx601"), MemoryModelFamily::Gfx6);
        assert_eq!(mm("gfx803"), MemoryModelFamily::Gfx7);
        assert_eq!(mm("gfx9-generic"), MemoryModelFamily::Gfx7);
        assert_eq!(mm("gfx90a"), MemoryModelFamily::Gfx90a);
        assert_eq!(mm("gfx941"), MemoryModelFamily::Gfx940);
        assert_eq!(mm("gfx9-4-generic"), MemoryModelFamily::Gfx942);
        assert_eq!(mm("gfx1036"), MemoryModelFamily::Gfx10);
        assert_eq!(mm("gfx11-generic"), MemoryModelFamily::Gfx11);
        assert_eq!(mm("gfx1201"), MemoryModelFamily::Gfx12);
        assert_eq!(mm("gfx1250"), MemoryModelFamily::Gfx1250);
        assert_eq!(mm("gfx1251"), MemoryModelFamily::Gfx1250);
        assert_eq!(mm("cayman"), MemoryModelFamily::R600);
    }

    #[test]
    fn llvm_releases_of_rows() {
        let p = |n: &str| Processor::by_name(n).unwrap();
        // Removed from LLVM 21 on, kept for decoding.
        for n in ["gfx940", "gfx941"] {
            assert!(p(n).in_llvm19() && p(n).in_llvm(20), "{n}");
            assert!(
                !p(n).in_llvm(21) && !p(n).in_llvm(22) && p(n).llvm.removed.is_some(),
                "{n}"
            );
        }
        assert!(p("gfx942").in_llvm19() && p("gfx942").in_llvm(LlvmReleases::MAIN));
        assert!(!p("gfx950").in_llvm19() && p("gfx950").in_llvm(20));
        assert!(!p("gfx1251").in_llvm(21) && p("gfx1251").in_llvm(22));
        assert!(!p("gfx1310").in_llvm(22) && p("gfx1310").in_llvm(23));
        let strict = p("gfx1250-strict");
        assert!(!strict.in_llvm(23) && strict.in_llvm(LlvmReleases::MAIN));
        // Every row is either still in LLVM main or was removed after LLVM 19.
        for row in PROCESSORS {
            assert!(
                row.llvm.removed.map_or(true, |r| r > row.llvm.added),
                "{}",
                row.name
            );
            assert!(row.llvm.added >= 19, "{}", row.name);
        }
    }

    #[test]
    fn xnack_is_always_on_from_gfx12_5() {
        let always: Vec<_> = PROCESSORS
            .iter()
            .filter(|p| p.xnack_always())
            .map(|p| p.name)
            .collect();
        assert_eq!(
            always,
            [
                "gfx1250",
                "gfx1251",
                "gfx1250-strict",
                "gfx1310",
                "gfx12-5-generic",
                "gfx13-generic"
            ]
        );
        for name in ["gfx90a", "gfx942", "gfx950", "gfx1010", "gfx1100"] {
            let p = Processor::by_name(name).unwrap();
            assert!(!p.xnack_always(), "{name}");
        }
    }

    #[test]
    fn families_of_the_brief() {
        // Every processor of the original specification's table is present.
        for name in [
            "r600",
            "r630",
            "rs880",
            "rv670",
            "rv710",
            "rv730",
            "rv770",
            "cedar",
            "cypress",
            "juniper",
            "redwood",
            "sumo",
            "barts",
            "caicos",
            "cayman",
            "turks",
            "gfx600",
            "tahiti",
            "gfx601",
            "hainan",
            "oland",
            "pitcairn",
            "verde",
            "gfx700",
            "kaveri",
            "gfx701",
            "hawaii",
            "gfx702",
            "gfx703",
            "kabini",
            "mullins",
            "gfx704",
            "bonaire",
            "gfx801",
            "carrizo",
            "gfx802",
            "iceland",
            "tonga",
            "gfx803",
            "fiji",
            "polaris10",
            "polaris11",
            "gfx810",
            "stoney",
            "gfx900",
            "gfx902",
            "gfx904",
            "gfx906",
            "gfx908",
            "gfx909",
            "gfx1010",
            "gfx1011",
            "gfx1012",
            "gfx1030",
        ] {
            assert!(Processor::by_name(name).is_some(), "{name} missing");
        }
    }
}
