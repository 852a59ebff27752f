//! Host ELF files: sections holding device code, wrapper records and their relocations.

use crate::discover::{
    decode_kpack_ref, ObjectBundle, ObjectBundleEntry, Walker, Wrapper, WrapperMagic, WrapperTarget,
};
use crate::limits;
use crate::problem::{Location, Problem, ProblemKind};
use gfxkit_bundle::le::{u32_at, u64_at};
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

impl<'data> Walker<'data> {
    pub(crate) fn walk_elf(&mut self, data: &'data [u8], member: Option<String>) {
        let base = self.base(data);
        let here = |size: u64| Location {
            member: member.clone(),
            section: None,
            offset: base,
            size,
        };
        let header = match FileHeader64::<LE>::parse(data) {
            Ok(h) => h,
            Err(e) => {
                self.problem(Problem::error(
                    here(data.len() as u64),
                    ProblemKind::MalformedElf(e.to_string()),
                ));
                return;
            }
        };
        let endian = LE;
        let sections = match header.sections(endian, data) {
            Ok(s) => s,
            Err(e) => {
                self.problem(Problem::error(
                    here(data.len() as u64),
                    ProblemKind::MalformedElf(format!("section table: {e}")),
                ));
                return;
            }
        };
        let e_type = header.e_type(endian);
        let machine = header.e_machine(endian);

        // The sections that hold device code or wrappers, with their contents.
        let mut fatbins: Vec<(usize, &'data [u8])> = Vec::new();
        let mut wrapper_sections: Vec<(usize, &'data Shdr, &'data [u8])> = Vec::new();
        let mut object_entries: Vec<ObjectBundleEntry<'data>> = Vec::new();
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
                    let name_offset = self.base(name_bytes);
                    self.problem(Problem::error(
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
                    self.problem(Problem::error(
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
                self.out.fatbin_sections.push(Location {
                    member: member.clone(),
                    section: Some(name.to_owned()),
                    offset: self.base(contents),
                    size: contents.len() as u64,
                });
                fatbins.push((index.0, contents));
            } else if name == ".hipFatBinSegment" {
                wrapper_sections.push((index.0, sh, contents));
            } else if let Some(id) = name.strip_prefix(OBJECT_BUNDLE_PREFIX) {
                // The ID is borrowed from the section-name table, which lives in `data`.
                object_entries.push(ObjectBundleEntry {
                    id,
                    location: Location {
                        member: member.clone(),
                        section: Some(name.to_owned()),
                        offset: self.base(contents),
                        size: contents.len() as u64,
                    },
                    bytes: contents,
                });
            } else {
                self.read_offloading(contents, member.clone(), Some(name));
            }
        }
        if !object_entries.is_empty() {
            self.out.object_bundles.push(ObjectBundle {
                location: here(data.len() as u64),
                entries: object_entries,
            });
        }

        // Bundles in `.hip_fatbin`, indexed by file offset for wrapper matching.
        let mut fatbin_ranges = Vec::new();
        for (index, contents) in &fatbins {
            let r = self.split_section(contents, member.clone(), Some(".hip_fatbin"));
            fatbin_ranges.push((*index, r));
        }
        if wrapper_sections.is_empty() {
            return;
        }
        let first_bundle = fatbin_ranges
            .iter()
            .map(|(_, r)| r.start)
            .min()
            .unwrap_or(0);
        let by_offset: HashMap<u64, usize> = fatbin_ranges
            .iter()
            .flat_map(|(_, r)| r.clone())
            .map(|i| (self.out.bundles[i].location.offset, i))
            .collect();

        for (ws_index, ws, contents) in wrapper_sections {
            let ws_offset = self.base(contents);
            let size = contents.len() as u64;
            let loc = |offset: u64, size: u64| Location {
                member: member.clone(),
                section: Some(".hipFatBinSegment".to_owned()),
                offset,
                size,
            };
            if size % WRAPPER_SIZE != 0 {
                self.problem(Problem::error(
                    loc(ws_offset, size),
                    ProblemKind::WrapperSectionSize { size },
                ));
            }
            let count = size / WRAPPER_SIZE;
            if count > limits::MAX_WRAPPERS as u64 {
                self.problem(Problem::warning(
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
                let magic_v = u32_at(contents, rec).unwrap_or(0);
                let version = u32_at(contents, rec + 4).unwrap_or(0);
                let in_place = u64_at(contents, rec + 8).unwrap_or(0);
                let reserved = u64_at(contents, rec + 16).unwrap_or(0);
                let magic = Walker::wrapper_magic(magic_v);
                let record_loc = loc(ws_offset + rec, WRAPPER_SIZE);
                if let WrapperMagic::Other(m) = magic {
                    self.problem(Problem::error(
                        record_loc.clone(),
                        ProblemKind::WrapperMagic { magic: m },
                    ));
                }
                let slot = slots
                    .get(&(rec + 8))
                    .cloned()
                    .unwrap_or(if e_type == elf::ET_REL {
                        SlotValue::Unresolved(in_place)
                    } else {
                        SlotValue::Address(in_place)
                    });
                let (address, file_offset) = match slot {
                    SlotValue::Address(a) => (a, vaddr_to_file(header, &sections, data, a)),
                    SlotValue::SectionOffset(sec, off) => {
                        let fo = sections
                            .section(object::SectionIndex(sec))
                            .ok()
                            .and_then(|s| {
                                (s.sh_type(endian) != elf::SHT_NOBITS && off < s.sh_size(endian))
                                    .then(|| s.sh_offset(endian).checked_add(off))
                                    .flatten()
                                    .filter(|&fo| fo < data.len() as u64)
                            });
                        (off, fo)
                    }
                    SlotValue::Unresolved(a) => (a, None),
                    SlotValue::External(_) => (0, None),
                };
                let file_offset = file_offset.map(|f| base.saturating_add(f));
                let is_null = matches!(slot, SlotValue::Address(0) | SlotValue::Unresolved(0))
                    && !slots.contains_key(&(rec + 8));
                let target = if let SlotValue::External(symbol) = slot {
                    WrapperTarget::External { symbol }
                } else if is_null {
                    WrapperTarget::Nowhere
                } else if let Some(&b) = file_offset.as_ref().and_then(|f| by_offset.get(f)) {
                    WrapperTarget::Bundle { index: b }
                } else {
                    WrapperTarget::Address {
                        address,
                        file_offset,
                    }
                };
                // Problems only for HIPF: HIPK pointers lead to metadata, not bundles.
                if magic == WrapperMagic::Hipf {
                    match target {
                        WrapperTarget::Nowhere => self.problem(Problem::error(
                            record_loc.clone(),
                            ProblemKind::WrapperPointsNowhere,
                        )),
                        WrapperTarget::Address {
                            address,
                            file_offset: None,
                        } => self.problem(Problem::error(
                            record_loc.clone(),
                            ProblemKind::WrapperPointsOutside { address },
                        )),
                        WrapperTarget::Address {
                            address,
                            file_offset: Some(f),
                        } => self.problem(Problem::error(
                            record_loc.clone(),
                            ProblemKind::WrapperMissesBundle {
                                address,
                                file_offset: f,
                            },
                        )),
                        WrapperTarget::Bundle { .. } | WrapperTarget::External { .. } => {}
                    }
                }
                let wi = self.out.wrappers.len();
                if let WrapperTarget::Bundle { index } = &target {
                    let index = *index;
                    self.out.bundles[index].wrappers.push(wi);
                }
                let kpack = match (&magic, &target) {
                    (
                        WrapperMagic::Hipk,
                        WrapperTarget::Address {
                            file_offset: Some(f),
                            ..
                        },
                    ) => {
                        let at = usize::try_from(*f).ok();
                        match at.and_then(|a| self.file.get(a..)).map(decode_kpack_ref) {
                            Some(Ok(k)) => Some(k),
                            Some(Err(e)) => {
                                self.problem(Problem::warning(
                                    record_loc.clone(),
                                    ProblemKind::BadKpackMetadata(e),
                                ));
                                None
                            }
                            None => None,
                        }
                    }
                    _ => None,
                };
                self.out.wrappers.push(Wrapper {
                    location: record_loc,
                    magic,
                    version,
                    target,
                    reserved,
                    kpack,
                });
            }
        }
        // Bundles of this file that no wrapper points to are never registered by the runtime.
        for i in first_bundle..self.out.bundles.len() {
            if self.out.bundles[i].location.section.as_deref() == Some(".hip_fatbin")
                && self.out.bundles[i].wrappers.is_empty()
            {
                let mut l = self.out.bundles[i].location.clone();
                l.size = 0;
                self.problem(Problem::warning(l, ProblemKind::BundleWithoutWrapper));
            }
        }
    }
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
