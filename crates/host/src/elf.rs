//! Host ELF files: sections holding device code, wrapper records and their relocations.

use crate::limits;
use crate::problem::{Location, Problem, ProblemKind};
use gfxkit_bundle::le::{offset_within, u32_at, u64_at};
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, ProgramHeader, Rel, Rela, SectionHeader, Sym};
use object::LittleEndian as LE;
use std::collections::HashMap;

/// Section type of `.llvm.offloading` (`SHT_LLVM_OFFLOADING`).
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;
/// Prefix of object-bundle sections.
pub const OBJECT_BUNDLE_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";
/// Size of a `.hipFatBinSegment` record.
pub const WRAPPER_SIZE: u64 = 24;

type Shdr = elf::SectionHeader64<LE>;

/// Size of a 64-bit section header.
const SHDR_SIZE: u64 = std::mem::size_of::<Shdr>() as u64;

/// How a wrapper's pointer slot is relocated.
#[derive(Debug, Clone)]
enum SlotValue {
    /// An address (virtual address in linked files).
    Address(u64),
    /// A section-relative offset in a relocatable object: (section index, offset).
    SectionOffset(usize, u64),
    /// Relocated against an absolute symbol, or unreadable relocation data.
    Unresolved(u64),
    /// Relocated against an undefined symbol (resolved when linking or loading).
    External(String),
}

/// A `.hipFatBinSegment` record as the ELF file gives it: its fields and where its pointer
/// leads after relocation, before it is matched to a bundle.
#[derive(Debug, Clone)]
pub(crate) struct RawWrapper {
    /// Where the 24-byte record is (offsets in the file).
    pub location: Location,
    /// The magic as stored.
    pub magic: u32,
    /// The version field.
    pub version: u32,
    /// The u64 at +16.
    pub reserved: u64,
    /// Where the pointer leads.
    pub slot: Slot,
}

/// Where a wrapper's pointer leads after relocation.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A null pointer with no relocation.
    Null,
    /// A relocation against an undefined symbol.
    External(String),
    /// An address (a section-relative offset in relocatable objects) and its file offset.
    At {
        address: u64,
        file_offset: Option<u64>,
    },
}

/// A `.hipFatBinSegment` section: the problems with the section itself, then its records.
#[derive(Debug, Clone, Default)]
pub(crate) struct WrapperSection {
    pub problems: Vec<Problem>,
    pub records: Vec<RawWrapper>,
}

/// A problem, or an `.llvm.offloading` section (name, contents), in section order.
#[derive(Debug)]
pub(crate) enum Item<'data> {
    Problem(Problem),
    Offloading(&'data str, &'data [u8]),
}

/// What a host ELF file holds for device-code discovery, read from its section table and
/// relocations; offsets are file offsets (`base` added). Matching wrappers to bundles and
/// splitting sections is discovery's ([`crate::discover`]).
#[derive(Debug, Default)]
pub(crate) struct ElfParts<'data> {
    /// Problems with the file and its sections, and offloading sections, in section order.
    pub items: Vec<Item<'data>>,
    /// Contents of each `.hip_fatbin` section.
    pub fatbins: Vec<&'data [u8]>,
    /// `__CLANG_OFFLOAD_BUNDLE__<id>` sections: (ID, where, contents).
    pub object_entries: Vec<(&'data str, Location, &'data [u8])>,
    /// `.hipFatBinSegment` sections.
    pub wrapper_sections: Vec<WrapperSection>,
}

impl ElfParts<'_> {
    fn problem(&mut self, p: Problem) {
        self.items.push(Item::Problem(p));
    }
}

/// Reads the parts of the ELF file `data` (at file offset `base` of the input, inside archive
/// member `member`) that hold or lead to device code.
pub(crate) fn read_elf<'data>(
    data: &'data [u8],
    base: u64,
    member: Option<&str>,
) -> ElfParts<'data> {
    let mut out = ElfParts::default();
    let member = member.map(str::to_owned);
    let at = |inner: &[u8]| base.saturating_add(offset_within(data, inner).unwrap_or(0));
    let here = |size: u64| Location {
        member: member.clone(),
        section: None,
        offset: base,
        size,
    };
    // A cut file says so, with the sizes, before the ELF reader's own words.
    if let Some(t) = gfxkit_code_object::extent::truncation(data) {
        out.problem(Problem::error(
            here(data.len() as u64),
            ProblemKind::TruncatedElf(t),
        ));
        return out;
    }
    let header = match FileHeader64::<LE>::parse(data) {
        Ok(h) => h,
        Err(e) => {
            out.problem(Problem::error(
                here(data.len() as u64),
                ProblemKind::MalformedElf(e.to_string()),
            ));
            return out;
        }
    };
    let endian = LE;
    let sections = match header.sections(endian, data) {
        Ok(s) => s,
        Err(e) => {
            out.problem(Problem::error(
                here(data.len() as u64),
                ProblemKind::MalformedElf(format!("section table: {e}")),
            ));
            return out;
        }
    };
    let e_type = header.e_type(endian);
    let machine = header.e_machine(endian);

    // The sections that hold device code or wrappers, with their contents.
    let mut wrapper_sections: Vec<(usize, &'data Shdr, &'data [u8])> = Vec::new();
    for (index, sh) in sections.enumerate() {
        // Names are compared as bytes; only a name that is UTF-8 is carried further.
        let name_bytes: &'data [u8] = sections.section_name(endian, sh).unwrap_or_default();
        let sh_type = sh.sh_type(endian);
        let bundle_section = name_bytes.starts_with(OBJECT_BUNDLE_PREFIX.as_bytes());
        let interesting = name_bytes == b".hip_fatbin"
            || name_bytes == b".hipFatBinSegment"
            || bundle_section
            || sh_type == SHT_LLVM_OFFLOADING
            || name_bytes == b".llvm.offloading";
        if !interesting || sh_type == elf::SHT_NOBITS {
            continue;
        }
        let name = match std::str::from_utf8(name_bytes) {
            Ok(n) => n,
            Err(e) => {
                // Never renamed (no lossy replacement) and never listed with an empty ID.
                let name_offset = at(name_bytes);
                out.problem(Problem::error(
                    Location {
                        member: member.clone(),
                        section: None,
                        offset: name_offset,
                        size: name_bytes.len() as u64,
                    },
                    ProblemKind::SectionNameNotUtf8 {
                        index: index.0,
                        name: name_bytes.escape_ascii().to_string(),
                        bad_byte_offset: name_offset + e.valid_up_to() as u64,
                    },
                ));
                continue;
            }
        };
        let contents = match sh.data(endian, data) {
            Ok(c) => c,
            Err(_) => {
                // The place is the section header that makes the claim (inside the file).
                let shdr_at = header
                    .e_shoff(endian)
                    .saturating_add((index.0 as u64).saturating_mul(SHDR_SIZE));
                out.problem(Problem::error(
                    Location {
                        member: member.clone(),
                        section: Some(name.to_owned()),
                        offset: base.saturating_add(shdr_at),
                        size: SHDR_SIZE,
                    },
                    ProblemKind::SectionOutsideFile {
                        offset: sh.sh_offset(endian),
                        size: sh.sh_size(endian),
                        file_size: data.len() as u64,
                    },
                ));
                continue;
            }
        };
        if name == ".hip_fatbin" {
            out.fatbins.push(contents);
        } else if name == ".hipFatBinSegment" {
            wrapper_sections.push((index.0, sh, contents));
        } else if let Some(id) = name.strip_prefix(OBJECT_BUNDLE_PREFIX) {
            // The ID is borrowed from the section-name table, which lives in `data`.
            let location = Location {
                member: member.clone(),
                section: Some(name.to_owned()),
                offset: at(contents),
                size: contents.len() as u64,
            };
            out.object_entries.push((id, location, contents));
        } else {
            out.items.push(Item::Offloading(name, contents));
        }
    }

    for (ws_index, ws, contents) in wrapper_sections {
        let mut section = WrapperSection::default();
        let ws_offset = at(contents);
        let size = contents.len() as u64;
        let loc = |offset: u64, size: u64| Location {
            member: member.clone(),
            section: Some(".hipFatBinSegment".to_owned()),
            offset,
            size,
        };
        if size % WRAPPER_SIZE != 0 {
            section.problems.push(Problem::error(
                loc(ws_offset, size),
                ProblemKind::WrapperSectionSize { size },
            ));
        }
        let count = size / WRAPPER_SIZE;
        if count > limits::MAX_WRAPPERS as u64 {
            section.problems.push(Problem::warning(
                loc(ws_offset, size),
                ProblemKind::TooMany {
                    what: "wrapper records",
                    limit: limits::MAX_WRAPPERS,
                },
            ));
        }
        let count = count.min(limits::MAX_WRAPPERS as u64);
        let slots = if e_type == elf::ET_REL {
            rel_slot_values(data, &sections, ws_index, endian)
        } else {
            dyn_slot_values(data, &sections, ws, machine, endian)
        };
        for i in 0..count {
            let rec = i * WRAPPER_SIZE;
            let in_place = u64_at(contents, rec + 8).unwrap_or(0);
            let slot = slots
                .get(&(rec + 8))
                .cloned()
                .unwrap_or(if e_type == elf::ET_REL {
                    SlotValue::Unresolved(in_place)
                } else {
                    SlotValue::Address(in_place)
                });
            let is_null = matches!(slot, SlotValue::Address(0) | SlotValue::Unresolved(0))
                && !slots.contains_key(&(rec + 8));
            let slot = match slot {
                SlotValue::External(symbol) => Slot::External(symbol),
                _ if is_null => Slot::Null,
                SlotValue::Address(a) => Slot::At {
                    address: a,
                    file_offset: vaddr_to_file(header, &sections, data, a),
                },
                SlotValue::SectionOffset(sec, off) => Slot::At {
                    address: off,
                    file_offset: sections
                        .section(object::SectionIndex(sec))
                        .ok()
                        .and_then(|s| {
                            (s.sh_type(endian) != elf::SHT_NOBITS && off < s.sh_size(endian))
                                .then(|| s.sh_offset(endian).checked_add(off))
                                .flatten()
                                .filter(|&fo| fo < data.len() as u64)
                        }),
                },
                SlotValue::Unresolved(a) => Slot::At {
                    address: a,
                    file_offset: None,
                },
            };
            let slot = match slot {
                Slot::At {
                    address,
                    file_offset,
                } => Slot::At {
                    address,
                    file_offset: file_offset.map(|f| base.saturating_add(f)),
                },
                s => s,
            };
            section.records.push(RawWrapper {
                location: loc(ws_offset + rec, WRAPPER_SIZE),
                magic: u32_at(contents, rec).unwrap_or(0),
                version: u32_at(contents, rec + 4).unwrap_or(0),
                reserved: u64_at(contents, rec + 16).unwrap_or(0),
                slot,
            });
        }
        out.wrapper_sections.push(section);
    }
    out
}

/// Pointer slot values of the wrappers in section `ws_index` of a relocatable object, from the
/// RELA/REL sections that apply to it, keyed by offset in the wrapper section.
fn rel_slot_values(
    data: &[u8],
    sections: &object::read::elf::SectionTable<'_, FileHeader64<LE>>,
    ws_index: usize,
    endian: LE,
) -> HashMap<u64, SlotValue> {
    let mut out = HashMap::new();
    for (_, sh) in sections.enumerate() {
        if sh.sh_info(endian) as usize != ws_index {
            continue;
        }
        let t = sh.sh_type(endian);
        if t != elf::SHT_RELA && t != elf::SHT_REL {
            continue;
        }
        let symtab_index = object::SectionIndex(sh.sh_link(endian) as usize);
        let Ok(symtab) = sections.symbol_table_by_index(endian, data, symtab_index) else {
            continue;
        };
        let mut add = |offset: u64, sym: u32, addend: i64| {
            let value = match symtab.symbol(object::SymbolIndex(sym as usize)) {
                Ok(s) if sym != 0 => {
                    let shndx = s.st_shndx(endian);
                    let v = s.st_value(endian).wrapping_add_signed(addend);
                    if shndx == elf::SHN_UNDEF {
                        let name = symtab.symbol_name(endian, s).unwrap_or_default();
                        SlotValue::External(String::from_utf8_lossy(name).into_owned())
                    } else if shndx >= elf::SHN_LORESERVE {
                        SlotValue::Unresolved(v)
                    } else {
                        SlotValue::SectionOffset(shndx as usize, v)
                    }
                }
                _ => SlotValue::Unresolved(addend as u64),
            };
            out.insert(offset, value);
        };
        if t == elf::SHT_RELA {
            if let Ok(relas) = sh.data_as_array::<elf::Rela64<LE>, _>(endian, data) {
                for r in relas.iter().take(limits::MAX_WRAPPERS) {
                    add(
                        r.r_offset(endian),
                        r.r_sym(endian, false),
                        r.r_addend(endian),
                    );
                }
            }
        } else if let Ok(rels) = sh.data_as_array::<elf::Rel64<LE>, _>(endian, data) {
            for r in rels.iter().take(limits::MAX_WRAPPERS) {
                add(r.r_offset(endian), r.r_sym(endian), 0);
            }
        }
    }
    out
}

/// Pointer slot values of the wrappers in section `ws` of a linked file (shared object, PIE or
/// executable), from dynamic relocations that land in it (`R_*_RELATIVE` addends, absolute
/// relocations against defined dynamic symbols), keyed by offset in the wrapper section.
/// Slots without a relocation keep their in-place value (non-PIC executables, RELR).
fn dyn_slot_values(
    data: &[u8],
    sections: &object::read::elf::SectionTable<'_, FileHeader64<LE>>,
    ws: &Shdr,
    machine: u16,
    endian: LE,
) -> HashMap<u64, SlotValue> {
    let (relative, abs64) = match machine {
        elf::EM_X86_64 => (elf::R_X86_64_RELATIVE, elf::R_X86_64_64),
        elf::EM_AARCH64 => (elf::R_AARCH64_RELATIVE, elf::R_AARCH64_ABS64),
        elf::EM_PPC64 => (elf::R_PPC64_RELATIVE, elf::R_PPC64_ADDR64),
        _ => (u32::MAX, u32::MAX),
    };
    let start = ws.sh_addr(endian);
    let end = start.saturating_add(ws.sh_size(endian));
    let mut out = HashMap::new();
    for (_, sh) in sections.enumerate() {
        if sh.sh_type(endian) != elf::SHT_RELA {
            continue;
        }
        let Ok(relas) = sh.data_as_array::<elf::Rela64<LE>, _>(endian, data) else {
            continue;
        };
        let symtab = sections
            .symbol_table_by_index(
                endian,
                data,
                object::SectionIndex(sh.sh_link(endian) as usize),
            )
            .ok();
        for r in relas {
            let off = r.r_offset(endian);
            if off < start || off >= end {
                continue;
            }
            let ty = r.r_type(endian, false);
            let addend = r.r_addend(endian);
            let value = if ty == relative {
                SlotValue::Address(addend as u64)
            } else if ty == abs64 {
                let sym = r.r_sym(endian, false);
                match symtab
                    .as_ref()
                    .and_then(|t| t.symbol(object::SymbolIndex(sym as usize)).ok())
                {
                    Some(s) if sym != 0 && !s.is_undefined(endian) => {
                        SlotValue::Address(s.st_value(endian).wrapping_add_signed(addend))
                    }
                    Some(s) if sym != 0 => {
                        let name = symtab
                            .as_ref()
                            .and_then(|t| t.symbol_name(endian, s).ok())
                            .unwrap_or_default();
                        SlotValue::External(String::from_utf8_lossy(name).into_owned())
                    }
                    _ => SlotValue::Unresolved(addend as u64),
                }
            } else {
                continue;
            };
            out.insert(off - start, value);
        }
    }
    out
}

/// File offset of virtual address `addr`: through the section that holds it, or failing that
/// (stripped section table) the `PT_LOAD` segment.
fn vaddr_to_file(
    header: &FileHeader64<LE>,
    sections: &object::read::elf::SectionTable<'_, FileHeader64<LE>>,
    data: &[u8],
    addr: u64,
) -> Option<u64> {
    let endian = LE;
    for sh in sections.iter() {
        if sh.sh_flags(endian) & u64::from(elf::SHF_ALLOC) == 0
            || sh.sh_type(endian) == elf::SHT_NOBITS
        {
            continue;
        }
        let a = sh.sh_addr(endian);
        let s = sh.sh_size(endian);
        if addr >= a && addr - a < s {
            let fo = sh.sh_offset(endian).checked_add(addr - a)?;
            return (fo < data.len() as u64).then_some(fo);
        }
    }
    let segments = header.program_headers(endian, data).ok()?;
    for ph in segments {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let a = ph.p_vaddr(endian);
        if addr >= a && addr - a < ph.p_filesz(endian) {
            let fo = ph.p_offset(endian).checked_add(addr - a)?;
            return (fo < data.len() as u64).then_some(fo);
        }
    }
    None
}
