//! Hardware limits of each processor: the register files, LDS and wave slots that decide a
//! kernel's occupancy, and the generation that decides its kernel-descriptor layout.
//!
//! One [`HardwareLimits`] value per group of processors that share them; each row of the
//! processor table references one (the `hw` column). Sources: LLVM 19
//! `AMDGPUBaseInfo.cpp` (`IsaInfo::getMaxWavesPerEU`, `getTotalNumVGPRs`,
//! `getVGPRAllocGranule`, `getVGPREncodingGranule`, `getOccupancyWithNumSGPRs`,
//! `getMaxWorkGroupsPerCU`, `getEUsPerCU`), `GCNSubtarget` (LDS doubled in WGP mode),
//! `AMDGPU.td` (`FeatureLocalMemorySize*`, `Feature1_5xVGPRs`, `FeatureGFX90AInsts`,
//! `FeatureArchitectedFlatScratch`) and AMDGPUUsage "Kernel Descriptor"; every value used by
//! LLVM 19 processors is checked against llc-19's `; Occupancy:` comments by the code-object
//! conformance test. Rows unknown to LLVM 19 (gfx950, gfx1153, gfx125x) take the values of
//! later LLVM releases.

use serde::Serialize;

/// The ISA generation, as far as the kernel descriptor and the occupancy rules distinguish
/// them. Ordered oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Generation {
    /// R600 family (no HSA kernel descriptors).
    R600,
    /// GFX6 (Southern Islands).
    Gfx6,
    /// GFX7 (Sea Islands).
    Gfx7,
    /// GFX8 (Volcanic Islands).
    Gfx8,
    /// GFX9 (Vega, CDNA).
    Gfx9,
    /// GFX10 (RDNA 1, RDNA 2).
    Gfx10,
    /// GFX11 (RDNA 3).
    Gfx11,
    /// GFX12 (RDNA 4, GFX12.5).
    Gfx12,
}

impl Generation {
    /// Name as AMDGPUUsage writes it (`GFX9`).
    pub fn name(self) -> &'static str {
        match self {
            Generation::R600 => "R600",
            Generation::Gfx6 => "GFX6",
            Generation::Gfx7 => "GFX7",
            Generation::Gfx8 => "GFX8",
            Generation::Gfx9 => "GFX9",
            Generation::Gfx10 => "GFX10",
            Generation::Gfx11 => "GFX11",
            Generation::Gfx12 => "GFX12",
        }
    }
}

/// SGPR count at or below which a given number of waves fits on a SIMD:
/// `(max_sgprs, waves)` pairs in increasing SGPR order; more SGPRs than the last pair allow
/// give [`HardwareLimits::sgpr_waves_beyond`] waves.
pub type SgprOccupancy = &'static [(u32, u32)];

/// The limits of one kind of compute unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HardwareLimits {
    /// The ISA generation.
    pub generation: Generation,
    /// GFX90A-style unified VGPR/AGPR file (`accum_offset` and `tg_split` in the descriptor).
    pub unified_vgpr_file: bool,
    /// Flat scratch is architected (GFX940+, GFX11+): no private-segment-buffer or
    /// flat-scratch-init user SGPRs; `enable_private_segment` in the descriptor.
    pub architected_flat_scratch: bool,
    /// Wave slots per SIMD (EU): the largest possible occupancy.
    pub max_waves_per_eu: u32,
    /// SIMDs per compute unit (GFX10+ in CU mode: half of them, the WGP has twice as many).
    pub simds_per_cu: u32,
    /// Wave sizes the hardware runs (GFX10+: 32 and 64).
    pub supports_wave32: bool,
    /// VGPRs per SIMD lane available to wave64 waves (the register file, in registers).
    pub vgprs_wave64: u32,
    /// VGPRs available to wave32 waves (0 without wave32).
    pub vgprs_wave32: u32,
    /// VGPR allocation granule for wave64.
    pub vgpr_granule_wave64: u32,
    /// VGPR allocation granule for wave32 (0 without wave32).
    pub vgpr_granule_wave32: u32,
    /// VGPRs one wave can address (arch VGPRs; AGPRs come on top on GFX908/GFX90A).
    pub addressable_vgprs: u32,
    /// SGPR encoding granule of `GRANULATED_WAVEFRONT_SGPR_COUNT` (pre-GFX10).
    pub sgpr_granule: u32,
    /// SGPRs one wave can address, including VCC.
    pub addressable_sgprs: u32,
    /// Waves per SIMD by SGPR count; empty when SGPRs do not limit occupancy (GFX10+).
    pub sgpr_occupancy: SgprOccupancy,
    /// Waves per SIMD with more SGPRs than `sgpr_occupancy` lists.
    pub sgpr_waves_beyond: u32,
    /// LDS bytes of a compute unit (and the most one work-group may use).
    pub lds_per_cu: u32,
    /// LDS bytes shared by the waves of a work-group processor in WGP mode (GFX10+); 0 when
    /// there is no WGP mode.
    pub lds_per_wgp: u32,
    /// Work-group barriers per compute unit.
    pub barriers_per_cu: u32,
    /// Work-group barriers per work-group processor in WGP mode (0 without WGP mode).
    pub barriers_per_wgp: u32,
}

const SGPR_GFX6: SgprOccupancy = &[(48, 10), (56, 9), (64, 8), (72, 7), (80, 6)];
const SGPR_GFX8: SgprOccupancy = &[(80, 10), (88, 9), (100, 8)];

/// R600 processors: no HSA kernels; the limits are placeholders gfxkit does not use.
pub const HW_R600: HardwareLimits = HardwareLimits {
    generation: Generation::R600,
    unified_vgpr_file: false,
    architected_flat_scratch: false,
    max_waves_per_eu: 0,
    simds_per_cu: 0,
    supports_wave32: false,
    vgprs_wave64: 0,
    vgprs_wave32: 0,
    vgpr_granule_wave64: 0,
    vgpr_granule_wave32: 0,
    addressable_vgprs: 0,
    sgpr_granule: 0,
    addressable_sgprs: 0,
    sgpr_occupancy: &[],
    sgpr_waves_beyond: 0,
    lds_per_cu: 0,
    lds_per_wgp: 0,
    barriers_per_cu: 0,
    barriers_per_wgp: 0,
};

/// GFX6: 32 KiB LDS, the GFX6/7 SGPR table.
pub const HW_GFX6: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx6,
    unified_vgpr_file: false,
    architected_flat_scratch: false,
    max_waves_per_eu: 10,
    simds_per_cu: 4,
    supports_wave32: false,
    vgprs_wave64: 256,
    vgprs_wave32: 0,
    vgpr_granule_wave64: 4,
    vgpr_granule_wave32: 0,
    addressable_vgprs: 256,
    sgpr_granule: 8,
    addressable_sgprs: 104,
    sgpr_occupancy: SGPR_GFX6,
    sgpr_waves_beyond: 5,
    lds_per_cu: 32768,
    lds_per_wgp: 0,
    barriers_per_cu: 16,
    barriers_per_wgp: 0,
};

/// GFX7: as GFX6 with 64 KiB LDS.
pub const HW_GFX7: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx7,
    lds_per_cu: 65536,
    ..HW_GFX6
};

/// GFX8: 102 addressable SGPRs, the GFX8+ SGPR table.
pub const HW_GFX8: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx8,
    addressable_sgprs: 102,
    sgpr_occupancy: SGPR_GFX8,
    sgpr_waves_beyond: 7,
    ..HW_GFX7
};

/// GFX9 without the unified register file (gfx900 ... gfx908, gfx90c).
pub const HW_GFX9: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx9,
    ..HW_GFX8
};

/// GFX90A: 512 unified VGPRs/AGPRs per lane in granules of 8, 8 waves per SIMD.
pub const HW_GFX90A: HardwareLimits = HardwareLimits {
    unified_vgpr_file: true,
    max_waves_per_eu: 8,
    vgprs_wave64: 512,
    vgpr_granule_wave64: 8,
    ..HW_GFX9
};

/// GFX940, GFX941, GFX942: GFX90A with architected flat scratch.
pub const HW_GFX940: HardwareLimits = HardwareLimits {
    architected_flat_scratch: true,
    ..HW_GFX90A
};

/// GFX950: GFX942 with 160 KiB LDS (LLVM 20+).
pub const HW_GFX950: HardwareLimits = HardwareLimits {
    lds_per_cu: 163840,
    ..HW_GFX940
};

/// GFX10.1 (RDNA 1): wave32 and wave64, WGP mode, 20 waves per SIMD.
pub const HW_GFX10_1: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx10,
    unified_vgpr_file: false,
    architected_flat_scratch: false,
    max_waves_per_eu: 20,
    simds_per_cu: 2,
    supports_wave32: true,
    vgprs_wave64: 512,
    vgprs_wave32: 1024,
    vgpr_granule_wave64: 4,
    vgpr_granule_wave32: 8,
    addressable_vgprs: 256,
    sgpr_granule: 8,
    addressable_sgprs: 106,
    sgpr_occupancy: &[],
    sgpr_waves_beyond: 20,
    lds_per_cu: 65536,
    lds_per_wgp: 131072,
    barriers_per_cu: 16,
    barriers_per_wgp: 32,
};

/// GFX10.3 (RDNA 2): 16 waves per SIMD, VGPR granules of 8 (wave64) and 16 (wave32).
pub const HW_GFX10_3: HardwareLimits = HardwareLimits {
    max_waves_per_eu: 16,
    sgpr_waves_beyond: 16,
    vgpr_granule_wave64: 8,
    vgpr_granule_wave32: 16,
    ..HW_GFX10_1
};

/// GFX11 with the GFX10.3 register file (gfx1102, gfx1103, gfx115x, gfx11-generic).
pub const HW_GFX11: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx11,
    architected_flat_scratch: true,
    ..HW_GFX10_3
};

/// GFX11 with 1.5x VGPRs (gfx1100, gfx1101, gfx1151): 768/1536 VGPRs, granules of 12/24.
pub const HW_GFX11_1_5X: HardwareLimits = HardwareLimits {
    vgprs_wave64: 768,
    vgprs_wave32: 1536,
    vgpr_granule_wave64: 12,
    vgpr_granule_wave32: 24,
    ..HW_GFX11
};

/// GFX12 (gfx1200, gfx1201, gfx12-generic): 1.5x VGPRs.
pub const HW_GFX12: HardwareLimits = HardwareLimits {
    generation: Generation::Gfx12,
    ..HW_GFX11_1_5X
};

/// GFX12.5 (gfx1250, gfx1251; LLVM 22): the GFX90A-style unified register file is not used;
/// wave32 only, 320 KiB LDS per WGP.
pub const HW_GFX1250: HardwareLimits = HardwareLimits {
    lds_per_cu: 327680,
    lds_per_wgp: 327680,
    ..HW_GFX12
};

impl HardwareLimits {
    /// VGPR file size (registers per lane) for `wave32` or wave64 waves.
    pub fn vgpr_file(&self, wave32: bool) -> u32 {
        if wave32 {
            self.vgprs_wave32
        } else {
            self.vgprs_wave64
        }
    }

    /// VGPR allocation granule for `wave32` or wave64 waves.
    pub fn vgpr_granule(&self, wave32: bool) -> u32 {
        if wave32 {
            self.vgpr_granule_wave32
        } else {
            self.vgpr_granule_wave64
        }
    }

    /// Granule of `GRANULATED_WORKITEM_VGPR_COUNT` in the kernel descriptor: 8 with the unified
    /// register file or for wave32, else 4.
    pub fn vgpr_encoding_granule(&self, wave32: bool) -> u32 {
        if self.unified_vgpr_file || wave32 {
            8
        } else {
            4
        }
    }

    /// Whether this generation has the WGP/CU mode switch.
    pub fn has_wgp_mode(&self) -> bool {
        self.lds_per_wgp != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_limits_keep_their_base() {
        let (gfx90a, gfx940) = (HW_GFX90A, HW_GFX940);
        assert_eq!(HW_GFX7.sgpr_occupancy, HW_GFX6.sgpr_occupancy);
        assert_eq!(gfx940.vgprs_wave64, 512);
        assert!(gfx940.architected_flat_scratch && !gfx90a.architected_flat_scratch);
        assert_eq!(HW_GFX12.vgpr_granule(true), 24);
        assert_eq!(HW_GFX10_1.vgpr_encoding_granule(true), 8);
        assert_eq!(HW_GFX10_1.vgpr_encoding_granule(false), 4);
        assert_eq!(HW_GFX90A.vgpr_encoding_granule(false), 8);
    }

    #[test]
    fn sgpr_tables_are_increasing() {
        for hw in [HW_GFX6, HW_GFX8] {
            assert!(hw
                .sgpr_occupancy
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 > w[1].1));
            assert!(hw.sgpr_occupancy.last().unwrap().1 > hw.sgpr_waves_beyond);
        }
    }
}
