//! AMDGPU ELF header constants (`EF_AMDGPU_*`, OS ABIs, ABI versions) and code-object versions.
//!
//! Source: `llvm/include/llvm/BinaryFormat/ELF.h` (LLVM 19/20) and AMDGPUUsage.rst "ELF Header".
//! The original specification (AMDGPUUsage of the code-object V3 era) calls the ABI versions
//! `ELFABIVERSION_AMDGPU_HSA_V0..V2`; today they are named after the code-object version they
//! announce (`ELFABIVERSION_AMDGPU_HSA_V2` = 0 ... `_V6` = 4), which is what gfxkit follows.

use serde::Serialize;
use std::fmt;

/// `e_machine` of AMDGPU code objects (`EM_AMDGPU`), and `EI_OSABI` with no OS ABI (used by
/// some r600 and unknown-OS objects, `ELFOSABI_NONE`): generic ELF values, from `object`.
pub use object::elf::{ELFOSABI_NONE, EM_AMDGPU};
/// `EI_OSABI`: the HSA runtime (ROCm). The code-object version is in `EI_ABIVERSION`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_OSABI`: the PAL runtime (graphics drivers).
pub const ELFOSABI_AMDGPU_PAL: u8 = 65;
/// `EI_OSABI`: Mesa 3D.
pub const ELFOSABI_AMDGPU_MESA3D: u8 = 66;

/// `EI_ABIVERSION` of an HSA code object V2.
pub const ELFABIVERSION_AMDGPU_HSA_V2: u8 = 0;
/// `EI_ABIVERSION` of an HSA code object V3.
pub const ELFABIVERSION_AMDGPU_HSA_V3: u8 = 1;
/// `EI_ABIVERSION` of an HSA code object V4.
pub const ELFABIVERSION_AMDGPU_HSA_V4: u8 = 2;
/// `EI_ABIVERSION` of an HSA code object V5.
pub const ELFABIVERSION_AMDGPU_HSA_V5: u8 = 3;
/// `EI_ABIVERSION` of an HSA code object V6.
pub const ELFABIVERSION_AMDGPU_HSA_V6: u8 = 4;
/// `EI_ABIVERSION` of PAL code objects.
pub const ELFABIVERSION_AMDGPU_PAL: u8 = 0;
/// `EI_ABIVERSION` of Mesa 3D code objects.
pub const ELFABIVERSION_AMDGPU_MESA3D: u8 = 0;

/// `e_flags` mask of the processor (`EF_AMDGPU_MACH_*` values, see the processor table).
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// `EF_AMDGPU_MACH` value meaning "no processor specified".
pub const EF_AMDGPU_MACH_NONE: u8 = 0;
/// First and last `EF_AMDGPU_MACH` values reserved for r600 processors.
pub const EF_AMDGPU_MACH_R600_RANGE: (u8, u8) = (0x01, 0x1f);

/// Code object V2: `xnack` enabled for all code. Older LLVM releases wrote V2 objects with the
/// V3 layout instead ([`EF_AMDGPU_FEATURE_XNACK_V3`]); both are read.
pub const EF_AMDGPU_FEATURE_XNACK_V2: u32 = 0x01;
/// Code object V2: the trap handler is enabled for all code.
pub const EF_AMDGPU_FEATURE_TRAP_HANDLER_V2: u32 = 0x02;

/// Code object V3 (and PAL / Mesa objects of any version): `xnack` is on (or any).
pub const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
/// Code object V3 (and PAL / Mesa objects of any version): `sramecc` is on (or any).
pub const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;

/// Code object V4 and later: `xnack` selection field.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `xnack` field: the processor does not support `xnack`.
pub const EF_AMDGPU_FEATURE_XNACK_UNSUPPORTED_V4: u32 = 0x000;
/// `xnack` field: any (code runs with either setting).
pub const EF_AMDGPU_FEATURE_XNACK_ANY_V4: u32 = 0x100;
/// `xnack` field: off.
pub const EF_AMDGPU_FEATURE_XNACK_OFF_V4: u32 = 0x200;
/// `xnack` field: on.
pub const EF_AMDGPU_FEATURE_XNACK_ON_V4: u32 = 0x300;

/// Code object V4 and later: `sramecc` selection field.
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// `sramecc` field: the processor does not support `sramecc`.
pub const EF_AMDGPU_FEATURE_SRAMECC_UNSUPPORTED_V4: u32 = 0x000;
/// `sramecc` field: any.
pub const EF_AMDGPU_FEATURE_SRAMECC_ANY_V4: u32 = 0x400;
/// `sramecc` field: off.
pub const EF_AMDGPU_FEATURE_SRAMECC_OFF_V4: u32 = 0x800;
/// `sramecc` field: on.
pub const EF_AMDGPU_FEATURE_SRAMECC_ON_V4: u32 = 0xc00;

/// Code object V6: generic code-object version (bits 24..31; 0 for non-generic processors).
pub const EF_AMDGPU_GENERIC_VERSION: u32 = 0xff00_0000;
/// Bit offset of [`EF_AMDGPU_GENERIC_VERSION`].
pub const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// Note type of the AMDGPU MessagePack metadata note (code object V3 and later).
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Note owner name of AMDGPU notes (code object V3 and later).
pub const NOTE_OWNER_AMDGPU: &str = "AMDGPU";
/// Note owner name of code object V2 notes.
pub const NOTE_OWNER_AMD: &str = "AMD";

/// An HSA code-object version (2 to 6 today). Open: a version gfxkit does not know yet is kept
/// and printed as is, so newer files still decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct CodeObjectVersion(pub u8);

impl CodeObjectVersion {
    /// Code object V2.
    pub const V2: CodeObjectVersion = CodeObjectVersion(2);
    /// Code object V3.
    pub const V3: CodeObjectVersion = CodeObjectVersion(3);
    /// Code object V4.
    pub const V4: CodeObjectVersion = CodeObjectVersion(4);
    /// Code object V5.
    pub const V5: CodeObjectVersion = CodeObjectVersion(5);
    /// Code object V6.
    pub const V6: CodeObjectVersion = CodeObjectVersion(6);
    /// Every version gfxkit knows, oldest first.
    pub const KNOWN: [CodeObjectVersion; 5] = [Self::V2, Self::V3, Self::V4, Self::V5, Self::V6];

    /// The version an HSA code object's `EI_ABIVERSION` announces (0 = V2 ... 4 = V6). Values
    /// past V6 give an unknown, newer version; `None` only for values that overflow.
    pub fn from_abi_version(abi_version: u8) -> Option<CodeObjectVersion> {
        abi_version.checked_add(2).map(CodeObjectVersion)
    }

    /// The version given by number (`2..=6`); `None` for others.
    pub fn from_number(n: u32) -> Option<CodeObjectVersion> {
        Self::KNOWN.into_iter().find(|v| u32::from(v.0) == n)
    }

    /// `EI_ABIVERSION` of an HSA code object of this version.
    pub fn abi_version(self) -> u8 {
        self.0.saturating_sub(2)
    }

    /// The version number.
    pub fn number(self) -> u8 {
        self.0
    }

    /// Whether gfxkit knows this version (2 to 6).
    pub fn is_known(self) -> bool {
        Self::KNOWN.contains(&self)
    }

    /// The `e_flags` layout used by code objects of this version.
    pub fn eflags_layout(self) -> EFlagsLayout {
        match self.0 {
            0..=2 => EFlagsLayout::V2,
            3 => EFlagsLayout::V3,
            4 | 5 => EFlagsLayout::V4,
            _ => EFlagsLayout::V6,
        }
    }
}

impl fmt::Display for CodeObjectVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_known() {
            write!(f, "V{}", self.0)
        } else {
            write!(f, "V{} (unknown)", self.0)
        }
    }
}

/// The layouts of AMDGPU `e_flags`: which bits mean what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum EFlagsLayout {
    /// V2: xnack bit 0x01, trap-handler bit 0x02 (0x100/0x200 as in V3 also read).
    V2,
    /// V3, and PAL / Mesa objects: xnack bit 0x100, sramecc bit 0x200 (on or any).
    V3,
    /// V4 and V5: xnack field 0x300, sramecc field 0xc00 (unsupported/any/off/on).
    V4,
    /// V6 and later: as V4 plus the generic version in bits 24..31.
    V6,
}

impl EFlagsLayout {
    /// The bits this layout assigns a meaning to; any other set bit is reserved.
    pub fn known_bits(self) -> u32 {
        match self {
            EFlagsLayout::V2 => {
                EF_AMDGPU_MACH
                    | EF_AMDGPU_FEATURE_XNACK_V2
                    | EF_AMDGPU_FEATURE_TRAP_HANDLER_V2
                    | EF_AMDGPU_FEATURE_XNACK_V3
                    | EF_AMDGPU_FEATURE_SRAMECC_V3
            }
            EFlagsLayout::V3 => {
                EF_AMDGPU_MACH | EF_AMDGPU_FEATURE_XNACK_V3 | EF_AMDGPU_FEATURE_SRAMECC_V3
            }
            EFlagsLayout::V4 => {
                EF_AMDGPU_MACH | EF_AMDGPU_FEATURE_XNACK_V4 | EF_AMDGPU_FEATURE_SRAMECC_V4
            }
            EFlagsLayout::V6 => {
                EF_AMDGPU_MACH
                    | EF_AMDGPU_FEATURE_XNACK_V4
                    | EF_AMDGPU_FEATURE_SRAMECC_V4
                    | EF_AMDGPU_GENERIC_VERSION
            }
        }
    }
}

/// An `EI_OSABI` value. Open: unknown values are kept and printed with their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OsAbi(pub u8);

impl OsAbi {
    /// `ELFOSABI_NONE`.
    pub const NONE: OsAbi = OsAbi(ELFOSABI_NONE);
    /// `ELFOSABI_AMDGPU_HSA`.
    pub const HSA: OsAbi = OsAbi(ELFOSABI_AMDGPU_HSA);
    /// `ELFOSABI_AMDGPU_PAL`.
    pub const PAL: OsAbi = OsAbi(ELFOSABI_AMDGPU_PAL);
    /// `ELFOSABI_AMDGPU_MESA3D`.
    pub const MESA3D: OsAbi = OsAbi(ELFOSABI_AMDGPU_MESA3D);

    /// Short name (`hsa`, `pal`, `mesa3d`, `none`), `None` for an unknown value.
    pub fn name(self) -> Option<&'static str> {
        match self.0 {
            ELFOSABI_NONE => Some("none"),
            ELFOSABI_AMDGPU_HSA => Some("hsa"),
            ELFOSABI_AMDGPU_PAL => Some("pal"),
            ELFOSABI_AMDGPU_MESA3D => Some("mesa3d"),
            _ => None,
        }
    }
}

impl fmt::Display for OsAbi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "unknown ({})", self.0),
        }
    }
}

impl Serialize for OsAbi {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_versions_map_to_code_object_versions() {
        assert_eq!(
            CodeObjectVersion::from_abi_version(ELFABIVERSION_AMDGPU_HSA_V2),
            Some(CodeObjectVersion::V2)
        );
        assert_eq!(
            CodeObjectVersion::from_abi_version(ELFABIVERSION_AMDGPU_HSA_V6),
            Some(CodeObjectVersion::V6)
        );
        assert_eq!(CodeObjectVersion::from_abi_version(255), None);
        for v in CodeObjectVersion::KNOWN {
            assert_eq!(
                CodeObjectVersion::from_abi_version(v.abi_version()),
                Some(v)
            );
            assert_eq!(CodeObjectVersion::from_number(v.number().into()), Some(v));
        }
        let v7 = CodeObjectVersion::from_abi_version(5).unwrap();
        assert!(!v7.is_known());
        assert_eq!(v7.to_string(), "V7 (unknown)");
        assert_eq!(v7.eflags_layout(), EFlagsLayout::V6);
    }

    #[test]
    fn layouts_do_not_overlap_fields() {
        assert_eq!(EF_AMDGPU_FEATURE_XNACK_V4 & EF_AMDGPU_FEATURE_SRAMECC_V4, 0);
        assert_eq!(EF_AMDGPU_MACH & EF_AMDGPU_GENERIC_VERSION, 0);
        assert_eq!(EFlagsLayout::V4.known_bits(), 0xfff);
        assert_eq!(EFlagsLayout::V6.known_bits(), 0xff00_0fff);
        assert_eq!(EFlagsLayout::V3.known_bits(), 0x3ff);
    }

    #[test]
    fn os_abi_names() {
        assert_eq!(OsAbi::HSA.to_string(), "hsa");
        assert_eq!(OsAbi(7).to_string(), "unknown (7)");
    }
}
