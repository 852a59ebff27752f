//! Kernel descriptors (code object V3 and later): the 64-byte records named `<kernel>.kd` that
//! the HSA runtime reads to launch a kernel. Source: AMDGPUUsage "Kernel Descriptor".
//!
//! | offset | size | field                            |
//! |--------|------|----------------------------------|
//! | 0      | 4    | `group_segment_fixed_size`       |
//! | 4      | 4    | `private_segment_fixed_size`     |
//! | 8      | 4    | `kernarg_size`                   |
//! | 16     | 8    | `kernel_code_entry_byte_offset`  |
//! | 44     | 4    | `compute_pgm_rsrc3`              |
//! | 48     | 4    | `compute_pgm_rsrc1`              |
//! | 52     | 4    | `compute_pgm_rsrc2`              |
//! | 56     | 2    | `kernel_code_properties`         |
//! | 58     | 2    | `kernarg_preload`                |

use crate::error::{Error, ErrorKind};
use object::elf::{
    FileHeader64, SHN_LORESERVE, SHN_UNDEF, SHT_DYNSYM, SHT_NOBITS, SHT_SYMTAB, STT_OBJECT,
};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;
use serde::Serialize;

/// Size of a kernel descriptor.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// One kernel descriptor, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelDescriptor<'data> {
    /// The symbol naming it (`<kernel>.kd`).
    pub symbol: &'data str,
    /// Byte offset of the descriptor in the code object.
    pub offset: u64,
    /// LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernel argument bytes.
    pub kernarg_size: u32,
    /// Offset of the kernel's code from the descriptor (before relocation in `.o` files).
    pub kernel_code_entry_byte_offset: i64,
    /// `COMPUTE_PGM_RSRC3`.
    pub compute_pgm_rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1` (granulated VGPR and SGPR counts in bits 0..5 and 6..9).
    pub compute_pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: u32,
    /// `KERNEL_CODE_PROPERTIES` bits.
    pub kernel_code_properties: u16,
    /// `KERNARG_PRELOAD`.
    pub kernarg_preload: u16,
}

impl<'data> KernelDescriptor<'data> {
    /// Decodes the 64 bytes `raw` found at `offset` for `symbol`.
    pub fn decode(
        symbol: &'data str,
        offset: u64,
        raw: &[u8; KERNEL_DESCRIPTOR_SIZE],
    ) -> KernelDescriptor<'data> {
        let u32_at = |i: usize| u32::from_le_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
        let u16_at = |i: usize| u16::from_le_bytes([raw[i], raw[i + 1]]);
        let mut entry = [0u8; 8];
        entry.copy_from_slice(&raw[16..24]);
        KernelDescriptor {
            symbol,
            offset,
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            kernel_code_entry_byte_offset: i64::from_le_bytes(entry),
            compute_pgm_rsrc3: u32_at(44),
            compute_pgm_rsrc1: u32_at(48),
            compute_pgm_rsrc2: u32_at(52),
            kernel_code_properties: u16_at(56),
            kernarg_preload: u16_at(58),
        }
    }

    /// The kernel's name: the symbol without `.kd`.
    pub fn kernel_name(&self) -> &'data str {
        self.symbol.strip_suffix(".kd").unwrap_or(self.symbol)
    }
}

/// The kernel descriptors of a 64-bit code object, in symbol-table order: `STT_OBJECT` symbols
/// named `*.kd` of `.symtab` (or `.dynsym` when there is no `.symtab`). Objects without section
/// headers have none.
pub(crate) fn find<'data>(
    data: &'data [u8],
    header: &'data FileHeader64<LittleEndian>,
) -> Result<Vec<KernelDescriptor<'data>>, Error> {
    let e = LittleEndian;
    let shoff = header.e_shoff(e);
    let sections = header
        .sections(e, data)
        .map_err(|err| bad(format!("section table: {err}"), shoff))?;
    let mut symbols = sections
        .symbols(e, data, SHT_SYMTAB)
        .map_err(|err| bad(format!("symbol table: {err}"), shoff))?;
    if symbols.is_empty() {
        symbols = sections
            .symbols(e, data, SHT_DYNSYM)
            .map_err(|err| bad(format!("dynamic symbol table: {err}"), shoff))?;
    }
    let symtab_offset = sections
        .section(symbols.section())
        .map_or(shoff, |s| s.sh_offset(e));
    let relocatable = header.e_type(e) == object::elf::ET_REL;
    let mut out = Vec::new();
    for (index, sym) in symbols.enumerate() {
        let at = symtab_offset.saturating_add((index.0 as u64).saturating_mul(24));
        if sym.st_type() != STT_OBJECT {
            continue;
        }
        let Ok(name) = sym.name(e, symbols.strings()) else {
            continue;
        };
        let Some(name) = std::str::from_utf8(name)
            .ok()
            .filter(|n| n.ends_with(".kd"))
        else {
            continue;
        };
        let shndx = sym.st_shndx(e);
        if shndx == SHN_UNDEF || shndx >= SHN_LORESERVE {
            continue;
        }
        let size = sym.st_size(e);
        if size != KERNEL_DESCRIPTOR_SIZE as u64 {
            return Err(bad(
                format!("kernel descriptor {name} has size {size}, expected 64"),
                at,
            ));
        }
        let section = sections
            .section(object::SectionIndex(usize::from(shndx)))
            .map_err(|err| bad(format!("kernel descriptor {name}: {err}"), at))?;
        if section.sh_type(e) == SHT_NOBITS {
            return Err(bad(
                format!("kernel descriptor {name} is in a NOBITS section"),
                at,
            ));
        }
        let value = sym.st_value(e);
        let sh_offset = section.sh_offset(e);
        let sh_size = section.sh_size(e);
        // In relocatable files a symbol's value is an offset in its section; in linked files
        // it is an address.
        let in_section = if relocatable {
            Some(value)
        } else {
            value.checked_sub(section.sh_addr(e))
        };
        let offset = in_section
            .filter(|o| o.checked_add(64).is_some_and(|end| end <= sh_size))
            .and_then(|o| sh_offset.checked_add(o))
            .filter(|o| {
                o.checked_add(64)
                    .is_some_and(|end| end <= data.len() as u64)
            })
            .ok_or_else(|| {
                bad(
                    format!("kernel descriptor {name} lies outside its section or the file"),
                    at,
                )
            })?;
        let start = offset as usize;
        let mut raw = [0u8; KERNEL_DESCRIPTOR_SIZE];
        raw.copy_from_slice(&data[start..start + KERNEL_DESCRIPTOR_SIZE]);
        out.push(KernelDescriptor::decode(name, offset, &raw));
    }
    Ok(out)
}

fn bad(detail: String, offset: u64) -> Error {
    Error::new(ErrorKind::BadElf { detail }, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_fields_at_their_offsets() {
        let mut raw = [0u8; 64];
        raw[0..4].copy_from_slice(&256u32.to_le_bytes());
        raw[4..8].copy_from_slice(&16u32.to_le_bytes());
        raw[8..12].copy_from_slice(&272u32.to_le_bytes());
        raw[16..24].copy_from_slice(&(-64i64).to_le_bytes());
        raw[44..48].copy_from_slice(&3u32.to_le_bytes());
        raw[48..52].copy_from_slice(&0x00af_0041u32.to_le_bytes());
        raw[52..56].copy_from_slice(&0x92u32.to_le_bytes());
        raw[56..58].copy_from_slice(&0x0409u16.to_le_bytes());
        raw[58..60].copy_from_slice(&2u16.to_le_bytes());
        let d = KernelDescriptor::decode("k.kd", 0x1000, &raw);
        assert_eq!(d.kernel_name(), "k");
        assert_eq!(d.group_segment_fixed_size, 256);
        assert_eq!(d.private_segment_fixed_size, 16);
        assert_eq!(d.kernarg_size, 272);
        assert_eq!(d.kernel_code_entry_byte_offset, -64);
        assert_eq!(d.compute_pgm_rsrc3, 3);
        assert_eq!(d.compute_pgm_rsrc1, 0x00af_0041);
        assert_eq!(d.compute_pgm_rsrc2, 0x92);
        assert_eq!(d.kernel_code_properties, 0x0409);
        assert_eq!(d.kernarg_preload, 2);
    }
}
