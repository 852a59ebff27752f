//! What `gfxkit inspect --json` prints for an AMDGPU code object: header, `e_flags`, target
//! ID, kernels and their descriptors, metadata (read by [`gfxkit_code_object`]).

use gfxkit_code_object::{CodeObject, FeatureFlag, Kernel, KernelDescriptor, MetadataJson};
use serde::Serialize;

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
    /// `kernels`.
    pub kernels: &'a [Kernel<'a>],
    /// `kernel_descriptors`.
    pub kernel_descriptors: Vec<KernelDescriptor<'a>>,
    /// `issues`.
    pub issues: Vec<String>,
    /// `metadata`.
    pub metadata: Option<MetadataJson<'a, 'a>>,
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

/// The inspection of a parsed code object, named `file` in the result.
pub fn inspect<'a>(file: &str, co: &'a CodeObject<'a>) -> Inspection<'a> {
    let meta = co.metadata();
    let flags = co.flags();
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
        kernels: co.kernels(),
        // A damaged symbol table is listed under issues; the descriptors are then left out.
        kernel_descriptors: co.kernel_descriptors().unwrap_or_default(),
        issues: co.issues().iter().map(ToString::to_string).collect(),
        metadata: meta.map(|m| m.to_json()),
    }
}
