//! Whether an ELF file is cut short: its header, program header table, section header table
//! ([`truncation`]) or a section's bytes ([`truncation_with_sections`]) run past the end of
//! the data. Checked from the raw header fields
//! before a full parse, so that a truncated file reads as truncated, with the sizes, rather
//! than as an ELF reader's "invalid offset" (hosts, code objects and rewrites alike).
//!
//! ```
//! use gfxkit_code_object::extent::{truncation, Part};
//!
//! // A 64-bit ELF header that puts 3 section headers at offset 0x100 of a 0x120-byte file.
//! let mut elf = vec![0u8; 0x120];
//! elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
//! elf[0x28..0x30].copy_from_slice(&0x100u64.to_le_bytes()); // e_shoff
//! elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
//! elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes()); // e_shnum
//! let t = truncation(&elf).unwrap();
//! assert_eq!((t.part, t.offset, t.need, t.file_size), (Part::SectionHeaders, 0x100, 192, 0x120));
//! assert_eq!(
//!     t.to_string(),
//!     "truncated: need 192 bytes at offset 0x100 (the section header table), the file has 288"
//! );
//! ```

use gfxkit_bytes::Cursor;
use std::fmt;

/// Which part of the ELF file runs past the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Part {
    /// The ELF file header itself (52 or 64 bytes).
    FileHeader,
    /// The program header table (`e_phoff`, `e_phnum` entries of `e_phentsize`).
    ProgramHeaders,
    /// The section header table (`e_shoff`, `e_shnum` entries of `e_shentsize`).
    SectionHeaders,
    /// The bytes of section `index` (`sh_offset`, `sh_size`; not `SHT_NOBITS`).
    Section {
        /// The section's index in the section header table.
        index: usize,
    },
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::FileHeader => f.write_str("the ELF header"),
            Part::ProgramHeaders => f.write_str("the program header table"),
            Part::SectionHeaders => f.write_str("the section header table"),
            Part::Section { index } => write!(f, "section {index}"),
        }
    }
}

/// An ELF file cut short: `part` needs `need` bytes at `offset`, the data has `file_size`.
/// Printed `truncated: need N bytes at offset O (PART), the file has M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// What runs past the end.
    pub part: Part,
    /// Where it starts (from the start of the ELF data).
    pub offset: u64,
    /// Its size in bytes.
    pub need: u64,
    /// The size of the data.
    pub file_size: u64,
    /// Where the claim is made: the offset of the header field (`e_shoff`, `e_phoff`) or of
    /// the section header that places the part.
    pub claim: u64,
}

impl fmt::Display for Truncation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "truncated: need {} bytes at offset {:#x} ({}), the file has {}",
            self.need, self.offset, self.part, self.file_size
        )
    }
}

impl std::error::Error for Truncation {}

use object::elf::{PN_XNUM, SHT_NOBITS, SHT_NULL};

/// The layout of the header fields this check reads, per ELF class.
struct Layout {
    header: u64,
    phoff: u64,
    shoff: u64,
    phentsize: u64,
    phnum: u64,
    shentsize: u64,
    shnum: u64,
    /// Size of a section header, and where `sh_type`, `sh_offset`, `sh_size` sit in it.
    shdr: u64,
    sh_type: u64,
    sh_offset: u64,
    sh_size: u64,
    /// Size of a program header.
    phdr: u64,
    wide: bool,
}

const ELF64: Layout = Layout {
    header: 64,
    phoff: 0x20,
    shoff: 0x28,
    phentsize: 0x36,
    phnum: 0x38,
    shentsize: 0x3a,
    shnum: 0x3c,
    shdr: 64,
    sh_type: 4,
    sh_offset: 0x18,
    sh_size: 0x20,
    phdr: 56,
    wide: true,
};

const ELF32: Layout = Layout {
    header: 52,
    phoff: 0x1c,
    shoff: 0x20,
    phentsize: 0x2a,
    phnum: 0x2c,
    shentsize: 0x2e,
    shnum: 0x30,
    shdr: 40,
    sh_type: 4,
    sh_offset: 0x10,
    sh_size: 0x14,
    phdr: 32,
    wide: false,
};

impl Layout {
    /// The address-sized word at `at`: 8 bytes in ELF64, 4 in ELF32.
    fn word(&self, c: Cursor<'_>, at: u64) -> Option<u64> {
        if self.wide {
            c.u64(at).ok()
        } else {
            c.u32(at).map(u64::from).ok()
        }
    }
}

/// Where the little-endian ELF file `data` (32- or 64-bit) is cut short, if it is: the file
/// header, the program header table or the section header table, the first that runs past the
/// end. `None` for data that is not a little-endian ELF file, for a file whose tables lie
/// inside it, and for tables whose entry size is smaller than an entry (malformed, not
/// truncated: the full parse says so). Every reader of a host file checks this first: without
/// its tables nothing of the file can be read.
pub fn truncation(data: &[u8]) -> Option<Truncation> {
    scan(data, false)
}

/// As [`truncation`], and then each section's bytes (except `SHT_NOBITS` and empty sections):
/// the first section that runs past the end. For code objects, which the loader reads whole;
/// a host file's unrelated section with a wrong offset does not keep its device code from
/// being read, so host discovery checks only the sections it reads.
pub fn truncation_with_sections(data: &[u8]) -> Option<Truncation> {
    scan(data, true)
}

fn scan(data: &[u8], sections: bool) -> Option<Truncation> {
    if data.get(..4)? != b"\x7fELF" {
        return None;
    }
    let layout = match (data.get(4), data.get(5)) {
        (Some(2), Some(1)) => &ELF64,
        (Some(1), Some(1)) => &ELF32,
        (None, _) | (_, None) => {
            return Some(Truncation {
                part: Part::FileHeader,
                offset: 0,
                need: ELF64.header,
                file_size: data.len() as u64,
                claim: 0,
            })
        }
        _ => return None,
    };
    let len = data.len() as u64;
    if len < layout.header {
        return Some(Truncation {
            part: Part::FileHeader,
            offset: 0,
            need: layout.header,
            file_size: len,
            claim: 0,
        });
    }
    let c = Cursor::new(data);
    let past = |offset: u64, need: u64| offset.checked_add(need).map_or(true, |end| end > len);
    let shoff = layout.word(c, layout.shoff)?;
    let shentsize = u64::from(c.u16(layout.shentsize).ok()?);
    let mut shnum = u64::from(c.u16(layout.shnum).ok()?);
    if shoff != 0 && shentsize < layout.shdr {
        return None;
    }
    // With more than 0xff00 sections, e_shnum is 0 and section 0's sh_size holds the count.
    if shoff != 0 && shnum == 0 {
        if past(shoff, layout.shdr) {
            return Some(Truncation {
                part: Part::SectionHeaders,
                offset: shoff,
                need: layout.shdr,
                file_size: len,
                claim: layout.shoff,
            });
        }
        shnum = layout.word(c, shoff.checked_add(layout.sh_size)?)?;
    }
    let phoff = layout.word(c, layout.phoff)?;
    let phentsize = u64::from(c.u16(layout.phentsize).ok()?);
    let phnum = c.u16(layout.phnum).ok()?;
    if phoff != 0 && phnum != 0 && phnum != PN_XNUM && phentsize >= layout.phdr {
        let need = phentsize.saturating_mul(u64::from(phnum));
        if past(phoff, need) {
            return Some(Truncation {
                part: Part::ProgramHeaders,
                offset: phoff,
                need,
                file_size: len,
                claim: layout.phoff,
            });
        }
    }
    if shoff == 0 || shnum == 0 {
        return None;
    }
    let need = shentsize.saturating_mul(shnum);
    if past(shoff, need) {
        return Some(Truncation {
            part: Part::SectionHeaders,
            offset: shoff,
            need,
            file_size: len,
            claim: layout.shoff,
        });
    }
    if !sections {
        return None;
    }
    // The table lies inside the data, so its count is bounded by the data's size.
    for index in 0..shnum {
        let at = shoff + index * shentsize;
        let sh_type = c.u32(at + layout.sh_type).ok()?;
        if sh_type == SHT_NULL || sh_type == SHT_NOBITS {
            continue;
        }
        let offset = layout.word(c, at + layout.sh_offset)?;
        let size = layout.word(c, at + layout.sh_size)?;
        // An empty section needs no bytes, wherever it claims to be.
        if size > 0 && past(offset, size) {
            return Some(Truncation {
                part: Part::Section {
                    index: usize::try_from(index).ok()?,
                },
                offset,
                need: size,
                file_size: len,
                claim: at,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit ELF header with `shnum` section headers at `shoff` and `phnum` program headers
    /// at 64, padded to `len` bytes.
    fn elf64(len: usize, shoff: u64, shnum: u16, phnum: u16) -> Vec<u8> {
        let mut d = vec![0u8; len.max(64)];
        d[..6].copy_from_slice(b"\x7fELF\x02\x01");
        d[0x20..0x28].copy_from_slice(&(if phnum > 0 { 64u64 } else { 0 }).to_le_bytes());
        d[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        d[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        d[0x38..0x3a].copy_from_slice(&phnum.to_le_bytes());
        d[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        d[0x3c..0x3e].copy_from_slice(&shnum.to_le_bytes());
        d.truncate(len);
        d
    }

    #[test]
    fn a_cut_header_or_table_is_truncation_with_its_sizes() {
        assert_eq!(truncation(b"not elf"), None);
        let t = truncation(b"\x7fELF\x02\x01\0\0").unwrap();
        assert_eq!((t.part, t.need, t.file_size), (Part::FileHeader, 64, 8));
        // Program headers: 2 x 56 bytes at 64, in a 100-byte file.
        let t = truncation(&elf64(100, 0, 0, 2)).unwrap();
        assert_eq!(
            (t.part, t.offset, t.need, t.file_size, t.claim),
            (Part::ProgramHeaders, 64, 112, 100, 0x20)
        );
        // Section headers past the end; an offset that overflows is past the end too.
        let t = truncation(&elf64(200, 0x100, 4, 0)).unwrap();
        assert_eq!(
            (t.part, t.offset, t.need),
            (Part::SectionHeaders, 0x100, 256)
        );
        let t = truncation(&elf64(200, u64::MAX - 8, 4, 0)).unwrap();
        assert_eq!(t.part, Part::SectionHeaders);
        // Everything inside: no truncation.
        assert_eq!(truncation(&elf64(64 + 56 + 128, 64 + 56, 2, 1)), None);
    }

    #[test]
    fn a_section_whose_bytes_run_past_the_end_is_truncation() {
        let mut d = elf64(64 + 3 * 64, 64, 3, 0);
        // Section 1: PROGBITS, 0x40 bytes at 0x20 (inside); section 2: 0x1000 bytes at 0x80.
        let sh = |i: usize| 64 + i * 64;
        for (i, (ty, off, size)) in [(1u32, 0x20u64, 0x40u64), (1, 0x80, 0x1000)]
            .into_iter()
            .enumerate()
        {
            let b = sh(i + 1);
            d[b + 4..b + 8].copy_from_slice(&ty.to_le_bytes());
            d[b + 0x18..b + 0x20].copy_from_slice(&off.to_le_bytes());
            d[b + 0x20..b + 0x28].copy_from_slice(&size.to_le_bytes());
        }
        assert_eq!(truncation(&d), None);
        let t = truncation_with_sections(&d).unwrap();
        assert_eq!(
            (t.part, t.offset, t.need, t.claim),
            (Part::Section { index: 2 }, 0x80, 0x1000, sh(2) as u64)
        );
        // NOBITS takes no file bytes.
        d[sh(2) + 4..sh(2) + 8].copy_from_slice(&SHT_NOBITS.to_le_bytes());
        assert_eq!(truncation_with_sections(&d), None);
    }

    #[test]
    fn entry_sizes_too_small_are_left_to_the_parser() {
        let mut d = elf64(64 + 128, 64, 2, 0);
        d[0x3a..0x3c].copy_from_slice(&8u16.to_le_bytes());
        assert_eq!(truncation(&d), None);
    }
}
