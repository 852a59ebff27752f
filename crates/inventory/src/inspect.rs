//! What `gfxkit inspect --json` prints for an AMDGPU code object: header, `e_flags`, target
//! ID, kernels and their descriptors, metadata (read by [`gfxkit_code_object`]).

use gfxkit_code_object::{
    summaries, CodeObject, DescriptorFields, FeatureFlag, Kernel, KernelDescriptor, Limiter,
    MetadataJson, V2Kernel,
};
use serde::Serialize;

/// A kernel's metadata: V3+ MessagePack or V2 YAML.
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum KernelMeta<'a> {
    /// From the MessagePack note (code object V3 and later).
    V3(&'a Kernel<'a>),
    /// From the YAML note of a V2 code object.
    V2(&'a V2Kernel),
}

/// One kernel in `inspect --json`: its metadata and what gfxkit derives from it.
#[derive(Serialize, Debug)]
pub struct InspectKernel<'a> {
    /// The metadata's fields, flattened.
    #[serde(flatten)]
    pub meta: KernelMeta<'a>,
    /// The kernel descriptor, keyed by llvm-objdump's directive names.
    pub descriptor: Option<DescriptorFields>,
    /// Why the descriptor could not be decoded.
    pub descriptor_error: Option<String>,
    /// Waves per SIMD (EU) on the object's processor.
    pub occupancy: Option<u32>,
    /// What limits the occupancy.
    pub occupancy_limited_by: Option<Limiter>,
    /// Whether the kernel spills registers.
    pub spills: bool,
    /// The demangled name (when asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
}

/// What `gfxkit inspect --json` prints for one code object.
#[derive(Serialize, Debug)]
pub struct Inspection<'a> {
    /// `file`.
    pub file: String,
    /// `elf_type`.
    pub elf_type: &'static str,
    /// `os_abi`.
    pub os_abi: String,
    /// `abi_version`.
    pub abi_version: u8,
    /// `code_object_version`.
    pub code_object_version: Option<u8>,
    /// `e_flags`.
    pub e_flags: u32,
    /// `e_flags_hex`.
    pub e_flags_hex: String,
    /// `mach`.
    pub mach: u8,
    /// `processor`.
    pub processor: String,
    /// `target_id`.
    pub target_id: Option<String>,
    /// `xnack`.
    pub xnack: FeatureFlag,
    /// `sramecc`.
    pub sramecc: FeatureFlag,
    /// `generic_version`.
    pub generic_version: u8,
    /// `metadata_version`.
    pub metadata_version: Option<[u64; 2]>,
    /// `metadata_target`.
    pub metadata_target: Option<&'a str>,
    /// `kernels`: metadata, descriptor, occupancy.
    pub kernels: Vec<InspectKernel<'a>>,
    /// `kernel_descriptors`.
    pub kernel_descriptors: Vec<KernelDescriptor<'a>>,
    /// `issues`.
    pub issues: Vec<String>,
    /// `metadata`.
    pub metadata: Option<MetadataJson<'a>>,
}

/// `rel`, `exec`, `dyn`, `core` or `other` for an ELF `e_type`.
pub fn elf_type_name(t: u16) -> &'static str {
    match t {
        1 => "rel",
        2 => "exec",
        3 => "dyn",
        4 => "core",
        _ => "other",
    }
}

/// The inspection of a parsed code object, named `file` in the result; kernel names demangled
/// when `demangle` is set.
pub fn inspect<'a>(file: &str, co: &'a CodeObject<'a>, demangle: bool) -> Inspection<'a> {
    let meta = co.metadata();
    let flags = co.flags();
    let metas: Vec<KernelMeta<'a>> = if co.kernels().is_empty() {
        co.v2_kernels().iter().map(KernelMeta::V2).collect()
    } else {
        co.kernels().iter().map(KernelMeta::V3).collect()
    };
    let kernels = metas
        .into_iter()
        .zip(summaries(co, demangle))
        .map(|(meta, s)| InspectKernel {
            meta,
            descriptor: s.descriptor,
            descriptor_error: s.descriptor_error,
            occupancy: s.occupancy,
            occupancy_limited_by: s.occupancy_limited_by,
            spills: s.spills,
            demangled: s.demangled,
        })
        .collect();
    Inspection {
        file: file.to_owned(),
        elf_type: elf_type_name(co.elf_type()),
        os_abi: co.os_abi().to_string(),
        abi_version: co.abi_version(),
        code_object_version: co.code_object_version().map(|v| v.number()),
        e_flags: co.e_flags(),
        e_flags_hex: format!("0x{:x}", co.e_flags()),
        mach: flags.mach().0,
        processor: flags.mach().to_string(),
        target_id: co.target_id().ok().map(|t| t.to_string()),
        xnack: flags.xnack(),
        sramecc: flags.sramecc(),
        generic_version: flags.generic_version(),
        metadata_version: meta.and_then(|m| m.version()),
        metadata_target: meta.and_then(|m| m.target()),
        kernels,
        // A damaged symbol table is listed under issues; the descriptors are then left out.
        kernel_descriptors: co.kernel_descriptors().unwrap_or_default(),
        issues: co.issues().iter().map(ToString::to_string).collect(),
        metadata: meta.map(|m| m.to_json()),
    }
}
