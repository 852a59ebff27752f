//! AMDGPU ELF header constants (`EF_AMDGPU_*`, OS ABIs, ABI versions).
//! Source: `llvm/include/llvm/BinaryFormat/ELF.h`, AMDGPUUsage.rst "ELF Header".

/// `e_machine` of AMDGPU code objects.
pub const EM_AMDGPU: u16 = 224;
