//! Per-kernel summaries: the metadata kernel, its kernel descriptor decoded for the object's
//! processor, its resources and occupancy, and its arguments, in one owned, serializable
//! record ([`KernelSummary`]) for listings.
//!
//! Resources come from the metadata (exact counts); without metadata (a stripped note) they
//! fall back to what the descriptor holds (granulated register counts, an upper bound).

use crate::code_object::CodeObject;
use crate::descriptor::KernelDescriptor;
use crate::resources::{occupancy, Limiter, OccupancyInput};
use gfxkit_spec::{Generation, HardwareLimits};
use serde::Serialize;
use std::collections::HashMap;

pub use crate::descriptor::DescriptorFields;

/// One kernel argument, from V3+ or V2 metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgSummary {
    /// Source-level name.
    pub name: Option<String>,
    /// Source-level type.
    pub type_name: Option<String>,
    /// Byte offset in the kernarg segment (V3+; V2 metadata has none).
    pub offset: Option<u64>,
    /// Size in bytes.
    pub size: Option<u64>,
    /// Value kind (`global_buffer`, `by_value`, `hidden_*`; V2: `GlobalBuffer`, ...).
    pub value_kind: Option<String>,
    /// Address space of pointers.
    pub address_space: Option<String>,
    /// Access qualifier.
    pub access: Option<String>,
}

/// Where a summary's kernel list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelSource {
    /// The `NT_AMDGPU_METADATA` note (code object V3+).
    Metadata,
    /// The V2 YAML `NT_AMD_HSA_METADATA` note.
    MetadataV2,
    /// Only the `.kd` symbols (no metadata note).
    Descriptor,
}

/// Everything gfxkit reports about one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelSummary {
    /// Kernel name (mangled, as in the metadata). Left empty, and then not written, where the
    /// row it is part of names the kernel (a Tensile solution's `kernel_name`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Demangled name, when asked for and the name is an Itanium C++ name.
    pub demangled: Option<String>,
    /// Descriptor symbol.
    pub symbol: Option<String>,
    /// Where the kernel was listed.
    pub source: KernelSource,
    /// The descriptor decoded for the object's processor (llvm-objdump's directive names and
    /// values), when there is one and it decodes.
    pub descriptor: Option<DescriptorFields>,
    /// Why the descriptor did not decode.
    pub descriptor_error: Option<String>,
    /// VGPRs counted against the register file (`.vgpr_count`, llc's `TotalNumVgprs`): arch
    /// VGPRs plus AGPRs on GFX90A-style unified files, the larger of the two on GFX908.
    pub vgpr_count: Option<u64>,
    /// AGPRs.
    pub agpr_count: Option<u64>,
    /// SGPRs (with VCC, FLAT_SCRATCH, XNACK_MASK).
    pub sgpr_count: Option<u64>,
    /// Static LDS bytes.
    pub lds_bytes: Option<u64>,
    /// Scratch bytes per work-item.
    pub scratch_bytes: Option<u64>,
    /// Kernel-argument bytes.
    pub kernarg_size: Option<u64>,
    /// SGPRs spilled.
    pub sgpr_spill_count: Option<u64>,
    /// VGPRs spilled.
    pub vgpr_spill_count: Option<u64>,
    /// Whether registers spill to scratch (either spill count above zero).
    pub spills: bool,
    /// Whether the kernel uses a dynamically sized stack.
    pub uses_dynamic_stack: bool,
    /// Wave size.
    pub wavefront_size: Option<u64>,
    /// Largest flat work-group size.
    pub max_flat_workgroup_size: Option<u64>,
    /// Whether the kernel runs in WGP mode (GFX10+).
    pub wgp_mode: Option<bool>,
    /// Waves per SIMD (llc's `; Occupancy:`), for the object's processor.
    pub occupancy: Option<u32>,
    /// What limits the occupancy.
    pub occupancy_limited_by: Option<Limiter>,
    /// Arguments.
    pub args: Vec<ArgSummary>,
}

/// Demangles an Itanium C++ name; `None` for names that are not mangled C++.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    sym.demangle().ok()
}

/// The summaries of every kernel of `co`, in metadata order (descriptor order without
/// metadata). `demangle_names` fills [`KernelSummary::demangled`].
pub fn summaries(co: &CodeObject<'_>, demangle_names: bool) -> Vec<KernelSummary> {
    let hw: Option<&'static HardwareLimits> = co
        .processor()
        .map(|p| p.hw)
        .filter(|hw| hw.generation != Generation::R600);
    let (descriptors, desc_err) = match co.kernel_descriptors() {
        Ok(d) => (d, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let by_symbol: HashMap<&str, &KernelDescriptor<'_>> =
        descriptors.iter().map(|d| (d.symbol, d)).collect();
    let decode = |d: Option<&KernelDescriptor<'_>>| -> (Option<DescriptorFields>, Option<String>) {
        match (d, hw) {
            (Some(d), Some(hw)) => match d.decoded(hw) {
                Ok(f) => (Some(f), None),
                Err(e) => (None, Some(e.to_string())),
            },
            (Some(_), None) => (None, Some("unknown processor: layout unknown".into())),
            (None, _) => (None, desc_err.clone()),
        }
    };
    let mut out = Vec::new();
    if !co.kernels().is_empty() {
        for k in co.kernels() {
            let d = k.symbol.and_then(|s| by_symbol.get(s).copied());
            let (descriptor, descriptor_error) = decode(d);
            out.push(KernelSummary {
                name: k.name.to_owned(),
                demangled: None,
                symbol: k.symbol.map(str::to_owned),
                source: KernelSource::Metadata,
                descriptor,
                descriptor_error,
                vgpr_count: k.vgpr_count,
                agpr_count: k.agpr_count,
                sgpr_count: k.sgpr_count,
                lds_bytes: k.group_segment_fixed_size,
                scratch_bytes: k.private_segment_fixed_size,
                kernarg_size: k.kernarg_segment_size,
                sgpr_spill_count: k.sgpr_spill_count,
                vgpr_spill_count: k.vgpr_spill_count,
                spills: false,
                uses_dynamic_stack: k.uses_dynamic_stack.unwrap_or(false),
                wavefront_size: k.wavefront_size,
                max_flat_workgroup_size: k.max_flat_workgroup_size,
                wgp_mode: None,
                occupancy: None,
                occupancy_limited_by: None,
                args: k
                    .args
                    .iter()
                    .map(|a| ArgSummary {
                        name: a.name.map(str::to_owned),
                        type_name: a.type_name.map(str::to_owned),
                        offset: a.offset,
                        size: a.size,
                        value_kind: a.value_kind.map(str::to_owned),
                        address_space: a.address_space.map(str::to_owned),
                        access: a.access.map(str::to_owned),
                    })
                    .collect(),
            });
        }
    } else if !co.v2_kernels().is_empty() {
        for k in co.v2_kernels() {
            out.push(KernelSummary {
                name: k.name.clone(),
                demangled: None,
                symbol: k.symbol.clone(),
                source: KernelSource::MetadataV2,
                descriptor: None,
                descriptor_error: None,
                vgpr_count: k.vgpr_count,
                agpr_count: None,
                sgpr_count: k.sgpr_count,
                lds_bytes: k.group_segment_fixed_size,
                scratch_bytes: k.private_segment_fixed_size,
                kernarg_size: k.kernarg_segment_size,
                sgpr_spill_count: k.sgpr_spill_count,
                vgpr_spill_count: k.vgpr_spill_count,
                spills: false,
                uses_dynamic_stack: false,
                wavefront_size: k.wavefront_size,
                max_flat_workgroup_size: k.max_flat_workgroup_size,
                wgp_mode: None,
                occupancy: None,
                occupancy_limited_by: None,
                args: k
                    .args
                    .iter()
                    .map(|a| ArgSummary {
                        name: a.name.clone(),
                        type_name: a.type_name.clone(),
                        offset: None,
                        size: a.size,
                        value_kind: a.value_kind.clone(),
                        address_space: a.address_space.clone(),
                        access: a.access.clone(),
                    })
                    .collect(),
            });
        }
    } else {
        for d in &descriptors {
            let (descriptor, descriptor_error) = decode(Some(d));
            out.push(KernelSummary {
                name: d.kernel_name().to_owned(),
                demangled: None,
                symbol: Some(d.symbol.to_owned()),
                source: KernelSource::Descriptor,
                descriptor,
                descriptor_error,
                vgpr_count: None,
                agpr_count: None,
                sgpr_count: None,
                lds_bytes: Some(d.group_segment_fixed_size.into()),
                scratch_bytes: Some(d.private_segment_fixed_size.into()),
                kernarg_size: Some(d.kernarg_size.into()),
                sgpr_spill_count: None,
                vgpr_spill_count: None,
                spills: false,
                uses_dynamic_stack: false,
                wavefront_size: None,
                max_flat_workgroup_size: None,
                wgp_mode: None,
                occupancy: None,
                occupancy_limited_by: None,
                args: Vec::new(),
            });
        }
    }
    for s in &mut out {
        complete(s, hw);
        if demangle_names {
            s.demangled = demangle(&s.name);
        }
    }
    out
}

/// Fills what follows from the descriptor and the processor: register counts the metadata
/// lacks, wave size, WGP mode, spills, occupancy.
fn complete(s: &mut KernelSummary, hw: Option<&'static HardwareLimits>) {
    s.spills = s.sgpr_spill_count.unwrap_or(0) > 0 || s.vgpr_spill_count.unwrap_or(0) > 0;
    let Some(hw) = hw else { return };
    if let Some(d) = &s.descriptor {
        if s.wavefront_size.is_none() {
            let wave32 =
                d.get("wavefront_size32").unwrap_or(0) != 0 && hw.generation >= Generation::Gfx10;
            s.wavefront_size = Some(if wave32 { 32 } else { 64 });
        }
        if hw.has_wgp_mode() {
            s.wgp_mode = d.get("workgroup_processor_mode").map(|v| v != 0);
        }
        if s.vgpr_count.is_none() {
            // Granulated: an upper bound (for the unified file, the arch VGPRs end at
            // accum_offset).
            s.vgpr_count = d.get("accum_offset").or_else(|| d.get("next_free_vgpr"));
        }
        if s.sgpr_count.is_none() && hw.generation < Generation::Gfx10 {
            s.sgpr_count = d.get("next_free_sgpr");
        }
        if d.get("uses_dynamic_stack") == Some(1) {
            s.uses_dynamic_stack = true;
        }
    }
    let to32 = |v: Option<u64>| v.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX));
    // `.vgpr_count` already counts the AGPRs (LLVM's TotalNumVGPRs).
    let input = OccupancyInput {
        vgprs: to32(s.vgpr_count),
        agprs: 0,
        sgprs: to32(s.sgpr_count),
        lds_bytes: to32(s.lds_bytes),
        wavefront_size: to32(s.wavefront_size),
        max_flat_workgroup_size: to32(s.max_flat_workgroup_size),
        wgp_mode: s.wgp_mode.unwrap_or(false),
        waves_per_eu: None,
    };
    if let Some(o) = occupancy(hw, &input) {
        s.occupancy = Some(o.waves_per_eu);
        s.occupancy_limited_by = Some(o.limited_by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_itanium_names_only() {
        assert_eq!(
            demangle("_Z6vecaddPfS_i").as_deref(),
            Some("vecadd(float*, float*, int)")
        );
        assert_eq!(demangle("plain_c_kernel"), None);
        assert_eq!(demangle("_Z"), None);
    }
}
