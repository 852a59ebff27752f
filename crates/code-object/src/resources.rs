//! A kernel's resources (registers, LDS, scratch, spills) and the occupancy they allow: waves per
//! SIMD (execution unit), computed as LLVM 19 computes the `; Occupancy:` comment of its
//! assembly output, from the processor's [`HardwareLimits`].
//!
//! The rules (LLVM 19 `GCNSubtarget::computeOccupancy`, `AMDGPUSubtarget::
//! getOccupancyWithLocalMemSize`, `IsaInfo::getNumWavesPerEUWithNumVGPRs`,
//! `getOccupancyWithNumSGPRs`, `getMinNumVGPRs`): occupancy is the least of the wave slots per
//! SIMD, the waves the LDS lets in (work-groups that fit the LDS of a CU, or of a WGP in WGP
//! mode, bounded by the wave slots and barriers, times their waves, spread over the SIMDs), the
//! waves the VGPR file holds (VGPRs rounded up to the allocation granule) and, before GFX10,
//! the waves the SGPR count allows. An `amdgpu-waves-per-eu` maximum makes the compiler reserve
//! at least the registers of that occupancy; it is not recorded in code objects, so it is an
//! input here ([`OccupancyInput::waves_per_eu`]).

use gfxkit_spec::{Generation, HardwareLimits};
use serde::Serialize;

/// What limits a kernel's occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Limiter {
    /// Nothing but the wave slots of a SIMD.
    Waves,
    /// The work-group size (work-groups per CU, barriers).
    Workgroup,
    /// LDS.
    Lds,
    /// VGPRs (and AGPRs).
    Vgpr,
    /// SGPRs (before GFX10).
    Sgpr,
}

impl Limiter {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Limiter::Waves => "waves",
            Limiter::Workgroup => "workgroup",
            Limiter::Lds => "lds",
            Limiter::Vgpr => "vgpr",
            Limiter::Sgpr => "sgpr",
        }
    }
}

/// What occupancy depends on, for one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OccupancyInput {
    /// Architectural VGPRs (llc's `NumVgprs`). The metadata's `.vgpr_count` is llc's
    /// `TotalNumVgprs`, which already counts the AGPRs: pass it here with `agprs` 0.
    pub vgprs: u32,
    /// AGPRs (llc's `NumAgprs`, GFX908+).
    pub agprs: u32,
    /// SGPRs including VCC, FLAT_SCRATCH and XNACK_MASK (`.sgpr_count`).
    pub sgprs: u32,
    /// Static LDS bytes (`group_segment_fixed_size`).
    pub lds_bytes: u32,
    /// Wave size, 32 or 64.
    pub wavefront_size: u32,
    /// Largest flat work-group size the kernel accepts (`.max_flat_workgroup_size`; LLVM's
    /// default is 1024).
    pub max_flat_workgroup_size: u32,
    /// Whether the kernel runs in WGP mode (GFX10+, `workgroup_processor_mode`).
    pub wgp_mode: bool,
    /// The `amdgpu-waves-per-eu` bounds `(min, max)` the kernel was compiled with, if known.
    pub waves_per_eu: Option<(u32, u32)>,
}

/// A kernel's occupancy and what limits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    /// Waves per SIMD.
    pub waves_per_eu: u32,
    /// The tightest limit.
    pub limited_by: Limiter,
    /// VGPRs that count against the file: arch VGPRs, plus AGPRs after the arch VGPRs rounded
    /// to 4 on GFX90A-style register files (otherwise the larger of the two).
    pub total_vgprs: u32,
}

/// VGPRs a kernel occupies in the register file: with a unified VGPR/AGPR file the AGPRs
/// follow the arch VGPRs (aligned to 4); otherwise the two files are separate and the larger
/// counts.
pub fn total_vgprs(hw: &HardwareLimits, vgprs: u32, agprs: u32) -> u32 {
    if hw.unified_vgpr_file && agprs > 0 {
        vgprs.div_ceil(4).saturating_mul(4).saturating_add(agprs)
    } else {
        vgprs.max(agprs)
    }
}

/// SIMDs that share a work-group's resources: those of a CU, twice as many in WGP mode.
fn eus(hw: &HardwareLimits, wgp: bool) -> u32 {
    if hw.has_wgp_mode() && wgp {
        hw.simds_per_cu * 2
    } else {
        hw.simds_per_cu
    }
}

/// Waves per SIMD that `vgprs` registers allow.
fn waves_with_vgprs(hw: &HardwareLimits, vgprs: u32, wave32: bool) -> u32 {
    let granule = hw.vgpr_granule(wave32).max(1);
    let rounded = vgprs.max(1).div_ceil(granule).saturating_mul(granule);
    (hw.vgpr_file(wave32) / rounded)
        .max(1)
        .min(hw.max_waves_per_eu)
}

/// Waves per SIMD that `sgprs` registers allow (no limit from GFX10 on).
fn waves_with_sgprs(hw: &HardwareLimits, sgprs: u32) -> u32 {
    if hw.sgpr_occupancy.is_empty() {
        return hw.max_waves_per_eu;
    }
    hw.sgpr_occupancy
        .iter()
        .find(|(max, _)| sgprs <= *max)
        .map_or(hw.sgpr_waves_beyond, |(_, waves)| *waves)
        .min(hw.max_waves_per_eu)
}

/// The fewest VGPRs the compiler gives a kernel whose occupancy may be at most `waves`
/// (LLVM's `getMinNumVGPRs`): 0 when `waves` does not restrict anything.
fn min_vgprs_for(hw: &HardwareLimits, waves: u32, wave32: bool) -> u32 {
    let max_waves = hw.max_waves_per_eu;
    if waves == 0 || waves >= max_waves {
        return 0;
    }
    let total = hw.vgpr_file(wave32);
    let granule = hw.vgpr_granule(wave32).max(1);
    let addressable = if hw.unified_vgpr_file {
        total
    } else {
        hw.addressable_vgprs
    };
    let align_down = |v: u32| v / granule * granule;
    let max_vgprs = align_down(total / waves);
    if max_vgprs == align_down(total / max_waves) {
        return 0;
    }
    let min_waves = waves_with_vgprs(hw, addressable, wave32);
    if waves < min_waves {
        return min_vgprs_for(hw, min_waves, wave32);
    }
    let next = align_down(total / (waves + 1));
    (1 + (max_vgprs - granule).min(next)).min(addressable)
}

/// Occupancy of a kernel with resources `input` on a processor with limits `hw`; `None` for
/// R600 processors (no such rules) and for an unknown wave size.
pub fn occupancy(hw: &HardwareLimits, input: &OccupancyInput) -> Option<Occupancy> {
    if hw.generation == Generation::R600 || hw.max_waves_per_eu == 0 {
        return None;
    }
    let wave = input.wavefront_size;
    let wave32 = match wave {
        32 if hw.supports_wave32 => true,
        64 => false,
        _ => return None,
    };
    let max_waves = hw.max_waves_per_eu;
    let eus = eus(hw, input.wgp_mode);
    let wg = if input.max_flat_workgroup_size == 0 {
        1024
    } else {
        input.max_flat_workgroup_size
    };
    // Work-groups and LDS.
    let waves_per_group = wg.div_ceil(wave);
    let barriers = if hw.has_wgp_mode() && input.wgp_mode {
        hw.barriers_per_wgp
    } else {
        hw.barriers_per_cu
    };
    let slots = max_waves * eus;
    let groups_per_cu = if waves_per_group == 1 {
        slots
    } else {
        (slots / waves_per_group).min(barriers)
    };
    let lds_total = if hw.has_wgp_mode() && input.wgp_mode {
        hw.lds_per_wgp
    } else {
        hw.lds_per_cu
    };
    let (lds_waves, lds_limiter) = if groups_per_cu == 0 {
        (0, Limiter::Workgroup)
    } else {
        let by_lds = lds_total / input.lds_bytes.max(1);
        if by_lds == 0 {
            (1, Limiter::Lds)
        } else {
            let groups = groups_per_cu.min(by_lds);
            let limiter = if by_lds < groups_per_cu {
                Limiter::Lds
            } else {
                Limiter::Workgroup
            };
            let waves = (groups * waves_per_group).div_ceil(eus).min(max_waves);
            (waves, limiter)
        }
    };
    let mut best = (max_waves, Limiter::Waves);
    let mut tighten = |waves: u32, why: Limiter| {
        if waves < best.0 {
            best = (waves, why);
        }
    };
    tighten(lds_waves, lds_limiter);
    // Registers, with the floor a waves-per-eu maximum sets.
    let waves_request = input.waves_per_eu.and_then(|(min, max)| {
        let implied_min = waves_per_group.div_ceil(eus);
        let valid = min >= 1 && min <= max && max <= max_waves && min >= implied_min;
        valid.then_some(max)
    });
    let floor = waves_request.map_or(0, |w| min_vgprs_for(hw, w, wave32));
    let total = total_vgprs(hw, input.vgprs, input.agprs);
    tighten(waves_with_sgprs(hw, input.sgprs.max(1)), Limiter::Sgpr);
    tighten(
        waves_with_vgprs(hw, total.max(1).max(floor), wave32),
        Limiter::Vgpr,
    );
    Some(Occupancy {
        waves_per_eu: best.0,
        limited_by: best.1,
        total_vgprs: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gfxkit_spec::hardware::*;

    fn occ(hw: &HardwareLimits, input: OccupancyInput) -> u32 {
        occupancy(hw, &input).unwrap().waves_per_eu
    }

    fn k(vgprs: u32, lds: u32, wave: u32, wg: u32) -> OccupancyInput {
        OccupancyInput {
            vgprs,
            sgprs: 10,
            lds_bytes: lds,
            wavefront_size: wave,
            max_flat_workgroup_size: wg,
            wgp_mode: true,
            ..OccupancyInput::default()
        }
    }

    #[test]
    fn values_llc19_prints() {
        // Cases read from llc-19's `; Occupancy:` comments.
        assert_eq!(occ(&HW_GFX8, k(5, 0, 64, 1024)), 8);
        assert_eq!(occ(&HW_GFX8, k(43, 20000, 64, 1024)), 5);
        assert_eq!(occ(&HW_GFX6, k(42, 20000, 64, 1024)), 4);
        assert_eq!(occ(&HW_GFX8, k(7, 30000, 64, 64)), 1);
        assert_eq!(occ(&HW_GFX10_1, k(65, 0, 32, 256)), 14);
        assert_eq!(occ(&HW_GFX10_1, k(5, 30000, 32, 64)), 2);
        assert_eq!(occ(&HW_GFX10_3, k(102, 0, 32, 1024)), 9);
        assert_eq!(occ(&HW_GFX11_1_5X, k(102, 0, 32, 1024)), 12);
        assert_eq!(occ(&HW_GFX12, k(256, 0, 32, 256)), 5);
        assert_eq!(occ(&HW_GFX90A, k(102, 0, 64, 1024)), 4);
        let mut agprs = k(256, 0, 64, 256);
        agprs.agprs = 256;
        assert_eq!(occ(&HW_GFX90A, agprs), 1);
        // waves-per-eu "1,2" with 64-wide work-groups.
        let mut w = k(7, 0, 64, 64);
        w.waves_per_eu = Some((1, 2));
        assert_eq!(occ(&HW_GFX8, w), 2);
        let mut w = k(5, 0, 32, 64);
        w.waves_per_eu = Some((1, 2));
        assert_eq!(occ(&HW_GFX10_3, w), 4);
        // Ignored when the work-group size needs more waves.
        let mut w = k(7, 0, 64, 1024);
        w.waves_per_eu = Some((1, 2));
        assert_eq!(occ(&HW_GFX8, w), 8);
    }

    #[test]
    fn sgprs_limit_before_gfx10_only() {
        let mut i = k(4, 0, 64, 64);
        i.sgprs = 96;
        assert_eq!(occ(&HW_GFX9, i), 8);
        assert_eq!(occupancy(&HW_GFX9, &i).unwrap().limited_by, Limiter::Sgpr);
        i.sgprs = 104;
        assert_eq!(occ(&HW_GFX6, i), 5);
        i.wavefront_size = 32;
        assert_eq!(occ(&HW_GFX10_3, i), 16);
    }

    #[test]
    fn unknown_wave_sizes_and_r600_have_none() {
        assert!(occupancy(&HW_GFX9, &k(4, 0, 32, 64)).is_none());
        assert!(occupancy(&HW_R600, &k(4, 0, 64, 64)).is_none());
        assert!(occupancy(&HW_GFX9, &k(4, 0, 0, 64)).is_none());
    }
}
