//! Host ELF files: sections holding device code, wrapper records and their relocations.

use crate::limits;
use crate::parts::{HostParts, Item, RawWrapper, Slot, WrapperSection, OBJECT_BUNDLE_PREFIX};
use crate::problem::{Location, Problem, ProblemKind};
use crate::wrapper::{WrapperRecord, WRAPPER_SIZE};
use gfxkit_bytes::{offset_within, u64_in, Cursor};
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, ProgramHeader, Rel, Rela, SectionHeader, Sym};
use object::LittleEndian as LE;
use std::collections::HashMap;

/// Section type of `.llvm.offloading` (`SHT_LLVM_OFFLOADING`).
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

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

/// Reads the parts of the ELF file `data` (at file offset `base` of the input, inside archive
/// member `member`) that hold or lead to device code; bundles found without a section table
/// are delimited under `limits`.
pub(crate) fn read_elf<'data>(
    data: &'data [u8],
    base: u64,
    member: Option<&str>,
    limits: &gfxkit_bundle::limits::Limits,
) -> HostParts<'data> {
    let mut out = HostParts::default();
    let file = InFile {
        data,
        base,
        member: member.map(str::to_owned),
    };
    let Some((header, sections)) = section_table(&file, &mut out) else {
        return out;
    };
    let endian = LE;
    if sections.is_empty() && header.e_type(endian) != elf::ET_REL {
        // No section table (`llvm-objcopy --strip-sections`): the loader needs none, and
        // neither does the HIP runtime, which gets the wrappers from the compiler's code.
        read_segments(data, header, base, member, limits, &mut out);
        return out;
    }
    let wrapper_sections = device_code_sections(&file, header, &sections, &mut out);
    for (ws_index, ws, contents) in wrapper_sections {
        let section = wrapper_section(&file, header, &sections, ws_index, ws, contents);
        out.wrapper_sections.push(section);
    }
    out
}

type Sections<'data> = object::read::elf::SectionTable<'data, FileHeader64<LE>>;

/// The ELF file being read: its bytes, where they start in the input, and the archive member
/// that holds them.
struct InFile<'data> {
    data: &'data [u8],
    base: u64,
    member: Option<String>,
}

impl InFile<'_> {
    /// The input offset of `inner`, a slice of the file's bytes.
    fn at(&self, inner: &[u8]) -> u64 {
        self.base
            .saturating_add(offset_within(self.data, inner).unwrap_or(0))
    }

    /// The file itself (its first `size` bytes).
    fn here(&self, size: u64) -> Location {
        self.place(None, self.base, size)
    }

    /// `size` bytes at input offset `offset`, in section `section`.
    fn place(&self, section: Option<&str>, offset: u64, size: u64) -> Location {
        Location {
            member: self.member.clone(),
            section: section.map(str::to_owned),
            offset,
            size,
        }
    }
}

/// The file's header and section table, when they can be read and the section names with
/// them; otherwise the problem is in `out`.
fn section_table<'data>(
    file: &InFile<'data>,
    out: &mut HostParts<'data>,
) -> Option<(&'data FileHeader64<LE>, Sections<'data>)> {
    let data = file.data;
    let whole = || file.here(data.len() as u64);
    // A cut file says so, with the sizes, before the ELF reader's own words.
    if let Some(t) = gfxkit_code_object::extent::truncation(data) {
        out.problem(Problem::error(whole(), ProblemKind::TruncatedElf(t)));
        return None;
    }
    let header = match FileHeader64::<LE>::parse(data) {
        Ok(h) => h,
        Err(e) => {
            out.problem(Problem::error(
                whole(),
                ProblemKind::MalformedElf(e.to_string()),
            ));
            return None;
        }
    };
    let endian = LE;
    let sections = match header.sections(endian, data) {
        Ok(s) => s,
        Err(e) => {
            out.problem(Problem::error(
                whole(),
                ProblemKind::MalformedElf(format!("section table: {e}")),
            ));
            return None;
        }
    };
    // Every section is found by its name: a name table that is no string table (a damaged
    // e_shstrndx) would make the file look as if it held no device code.
    if let Ok(index) = header.shstrndx(endian, data) {
        let strtab = sections.section(object::SectionIndex(index as usize));
        if let Ok(sh) = strtab {
            let sh_type = sh.sh_type(endian);
            if index != 0 && sh_type != elf::SHT_STRTAB {
                out.problem(Problem::error(
                    whole(),
                    ProblemKind::MalformedElf(format!(
                        "e_shstrndx (at offset 0x3e) names section {index}, of type {sh_type}, \
                         not a string table: no section name can be read"
                    )),
                ));
                return None;
            }
        }
    }
    Some((header, sections))
}

/// Reads the sections that hold device code into `out` (bundles, object-bundle entries,
/// offloading sections, with the problems of each in section order) and returns the wrapper
/// sections, (index, header, contents), for [`wrapper_section`].
fn device_code_sections<'data>(
    file: &InFile<'data>,
    header: &'data FileHeader64<LE>,
    sections: &Sections<'data>,
    out: &mut HostParts<'data>,
) -> Vec<(usize, &'data Shdr, &'data [u8])> {
    let (data, endian) = (file.data, LE);
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
            || name_bytes == b".llvm.offloading"
            || crate::fatbin::is_nvidia_section(name_bytes);
        if !interesting || sh_type == elf::SHT_NOBITS {
            continue;
        }
        let name = match std::str::from_utf8(name_bytes) {
            Ok(n) => n,
            Err(e) => {
                // Never renamed (no lossy replacement) and never listed with an empty ID.
                let name_offset = file.at(name_bytes);
                out.problem(Problem::error(
                    file.place(None, name_offset, name_bytes.len() as u64),
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
                    file.place(Some(name), file.base.saturating_add(shdr_at), SHDR_SIZE),
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
            out.fatbins.push((".hip_fatbin", contents));
        } else if name == ".hipFatBinSegment" {
            wrapper_sections.push((index.0, sh, contents));
        } else if crate::fatbin::is_nvidia_section(name_bytes) {
            let location = file.place(Some(name), file.at(contents), contents.len() as u64);
            out.nvidia.push(location);
        } else if let Some(id) = name.strip_prefix(OBJECT_BUNDLE_PREFIX) {
            // The ID is borrowed from the section-name table, which lives in `data`.
            let location = file.place(Some(name), file.at(contents), contents.len() as u64);
            out.object_entries.push((id, location, contents));
        } else {
            out.items.push(Item::Offloading(name, contents));
        }
    }
    wrapper_sections
}

/// The `.hipFatBinSegment` section `ws_index` (header `ws`, bytes `contents`): its records,
/// each with where its pointer leads after relocation, and the problems with the section.
fn wrapper_section(
    file: &InFile<'_>,
    header: &FileHeader64<LE>,
    sections: &Sections<'_>,
    ws_index: usize,
    ws: &Shdr,
    contents: &[u8],
) -> WrapperSection {
    let (data, base, endian) = (file.data, file.base, LE);
    let e_type = header.e_type(endian);
    let machine = header.e_machine(endian);
    let mut section = WrapperSection::default();
    let ws_offset = file.at(contents);
    let size = contents.len() as u64;
    let loc = |offset: u64, size: u64| file.place(Some(".hipFatBinSegment"), offset, size);
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
    let slots = if e_type == elf::ET_REL {
        rel_slot_values(data, sections, ws_index, endian)
    } else {
        dyn_slot_values(data, sections, ws, machine, endian)
    };
    for (rec, record) in WrapperRecord::all(contents).take(limits::MAX_WRAPPERS) {
        let in_place = record.pointer;
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
                file_offset: vaddr_to_file(header, sections, data, a),
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
            record,
            slot,
        });
    }
    section
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

/// A `PT_LOAD` segment's file bytes: `[offset, offset + filesz)` in the ELF file (clipped to
/// it) at virtual address `vaddr`.
#[derive(Debug, Clone, Copy)]
struct Load {
    vaddr: u64,
    offset: u64,
    filesz: u64,
    writable: bool,
}

impl Load {
    /// The file offset of `addr`, when it lands in this segment's file bytes.
    fn file_offset(&self, addr: u64) -> Option<u64> {
        let d = addr.checked_sub(self.vaddr)?;
        (d < self.filesz).then(|| self.offset + d)
    }

    /// The end of the segment's file bytes.
    fn file_end(&self) -> u64 {
        self.offset + self.filesz
    }
}

/// The file offset of virtual address `addr` through the `PT_LOAD` segments, and the
/// segment's index.
fn load_at(loads: &[Load], addr: u64) -> Option<(usize, u64)> {
    loads
        .iter()
        .enumerate()
        .find_map(|(i, l)| l.file_offset(addr).map(|f| (i, f)))
}

/// A record with the `HIPF` or `HIPK` magic and version 1 found in a writable segment.
struct Candidate {
    /// File offset of the record (in the ELF file).
    at: u64,
    /// Virtual address of its pointer field.
    slot: u64,
    /// The pointer as stored, the `R_*_RELATIVE` addend when a relocation sets it.
    pointer: u64,
    /// The record's fields as stored.
    record: WrapperRecord,
    /// Whether a relocation sets the pointer.
    relocated: bool,
}

/// Reads a linked file without a section table (`llvm-objcopy --strip-sections`) as the loader
/// sees it: the `PT_LOAD` segments map addresses to file bytes, `PT_DYNAMIC` gives the
/// dynamic relocations (`DT_RELA`, `DT_RELASZ`, `DT_RELAENT`). Wrapper records are the 8-byte
/// aligned records of the writable segments with the `HIPF` or `HIPK` magic and version 1
/// whose pointer (its `R_*_RELATIVE` addend, or the value stored in place: non-PIE
/// executables, RELR) leads into a segment's file bytes, to the start of a bundle (`HIPF`) or
/// to a kpack marker that decodes (`HIPK`); a record a relocation points but that leads
/// elsewhere is reported (a warning: with no section table, it is not known to be a
/// wrapper). The bundles' spans (`fatbins`) go, per segment, from the first bundle a wrapper
/// leads to to the end of the last one, so the bundles between them are found too. Every
/// scan is linear in the segments' file bytes.
fn read_segments<'data>(
    data: &'data [u8],
    header: &FileHeader64<LE>,
    base: u64,
    member: Option<&str>,
    limits: &gfxkit_bundle::limits::Limits,
    out: &mut HostParts<'data>,
) {
    out.sectionless = true;
    let here = |offset: u64, size: u64| Location {
        member: member.map(str::to_owned),
        section: None,
        offset: base.saturating_add(offset),
        size,
    };
    let Some((loads, dynamic)) = segments(data, header, &here, out) else {
        return;
    };
    let mut candidates = wrapper_candidates(data, &loads, &here, out);
    if candidates.is_empty() {
        return;
    }
    relocate(data, header, &loads, dynamic, &mut candidates, &here, out);
    let (section, anchors) = accept_wrappers(data, base, &loads, &candidates, &here, out);
    for (s, e) in bundle_spans(data, &loads, anchors, limits) {
        if let Ok(bytes) = Cursor::new(data).slice(s, e - s) {
            out.fatbins.push((".hip_fatbin", bytes));
        }
    }
    out.wrapper_sections.push(section);
}

/// The `PT_DYNAMIC` segment: its file offset and size, and the file offset of its program
/// header.
type Dynamic = Option<(u64, u64, u64)>;

/// The `PT_LOAD` segments (their file bytes cut to the file) and the first `PT_DYNAMIC`;
/// `None` when the program headers cannot be read (the problem is in `out`).
fn segments(
    data: &[u8],
    header: &FileHeader64<LE>,
    here: &dyn Fn(u64, u64) -> Location,
    out: &mut HostParts<'_>,
) -> Option<(Vec<Load>, Dynamic)> {
    let endian = LE;
    let phdrs = match header.program_headers(endian, data) {
        Ok(p) => p,
        Err(e) => {
            let p = Problem::error(
                here(0, data.len() as u64),
                ProblemKind::MalformedElf(format!("program headers (no section table): {e}")),
            );
            out.problem(p);
            return None;
        }
    };
    let file_len = data.len() as u64;
    let mut loads = Vec::new();
    let mut dynamic = None;
    let phdr_at = |i: usize| {
        header
            .e_phoff(endian)
            .saturating_add((i as u64).saturating_mul(u64::from(header.e_phentsize(endian))))
    };
    for (i, ph) in phdrs.iter().enumerate() {
        match ph.p_type(endian) {
            elf::PT_LOAD => {
                if loads.len() >= limits::MAX_LOAD_SEGMENTS {
                    out.problem(Problem::warning(
                        here(header.e_phoff(endian), 0),
                        ProblemKind::TooMany {
                            what: "PT_LOAD segments",
                            limit: limits::MAX_LOAD_SEGMENTS,
                        },
                    ));
                    break;
                }
                let offset = ph.p_offset(endian).min(file_len);
                let filesz = ph.p_filesz(endian).min(file_len - offset);
                loads.push(Load {
                    vaddr: ph.p_vaddr(endian),
                    offset,
                    filesz,
                    writable: ph.p_flags(endian) & elf::PF_W != 0,
                });
            }
            elf::PT_DYNAMIC if dynamic.is_none() => {
                dynamic = Some((ph.p_offset(endian), ph.p_filesz(endian), phdr_at(i)));
            }
            _ => {}
        }
    }
    Some((loads, dynamic))
}

/// The records with a wrapper's magic and version in the writable segments, each file byte
/// looked at once even where segments overlap.
fn wrapper_candidates(
    data: &[u8],
    loads: &[Load],
    here: &dyn Fn(u64, u64) -> Location,
    out: &mut HostParts<'_>,
) -> Vec<Candidate> {
    let mut writable: Vec<Load> = loads.iter().copied().filter(|l| l.writable).collect();
    writable.sort_by_key(|l| l.offset);
    let mut candidates = Vec::new();
    let mut scanned_to = 0u64;
    'scan: for l in &writable {
        // The first 8-byte aligned address at or after both the segment and what was scanned.
        let from = l.offset.max(scanned_to);
        let Some(mut addr) = l
            .vaddr
            .checked_add(from - l.offset)
            .and_then(|a| a.checked_next_multiple_of(8))
        else {
            continue;
        };
        while let Some(at) = l.file_offset(addr) {
            if at.saturating_add(WRAPPER_SIZE) > l.file_end() {
                break;
            }
            let Ok(record) = WrapperRecord::read(data, at) else {
                break; // Not reached: the record lies inside the segment's file bytes.
            };
            // A record whose pointer field's address passes the top of the address space
            // is no wrapper the loader could read.
            let slot = addr.checked_add(8);
            let magic = record.magic;
            if let (true, Some(slot)) = (
                (magic == crate::WrapperMagic::HIPF || magic == crate::WrapperMagic::HIPK)
                    && record.version == 1,
                slot,
            ) {
                if candidates.len() >= limits::MAX_WRAPPERS {
                    out.problem(Problem::warning(
                        here(at, 0),
                        ProblemKind::TooMany {
                            what: "wrapper records",
                            limit: limits::MAX_WRAPPERS,
                        },
                    ));
                    break 'scan;
                }
                candidates.push(Candidate {
                    at,
                    slot,
                    pointer: record.pointer,
                    record,
                    relocated: false,
                });
            }
            let Some(next) = addr.checked_add(8) else {
                break;
            };
            addr = next;
        }
        scanned_to = scanned_to.max(l.file_end());
    }
    candidates
}

/// The candidates whose pointer leads to what a wrapper's does (a bundle for `HIPF`, a kpack
/// marker for `HIPK`), as a wrapper section, with the (segment, file offset) of each bundle a
/// `HIPF` wrapper leads to; a relocated record that leads elsewhere is a warning in `out`.
fn accept_wrappers(
    data: &[u8],
    base: u64,
    loads: &[Load],
    candidates: &[Candidate],
    here: &dyn Fn(u64, u64) -> Location,
    out: &mut HostParts<'_>,
) -> (WrapperSection, Vec<(usize, u64)>) {
    let mut anchors: Vec<(usize, u64)> = Vec::new();
    let mut section = WrapperSection::default();
    for c in candidates {
        let magic = c.record.magic;
        let target = load_at(loads, c.pointer);
        let rest = target.and_then(|(_, f)| data.get(usize::try_from(f).ok()?..));
        let accepted = match rest {
            Some(rest) if magic == crate::WrapperMagic::HIPF => {
                crate::fatbin::starts_with_bundle(rest)
            }
            Some(rest) => crate::wrapper::decode_kpack_ref(rest).is_ok(),
            None => false,
        };
        if !accepted {
            if c.relocated {
                out.problem(Problem::warning(
                    here(c.at, WRAPPER_SIZE),
                    ProblemKind::UnmatchedWrapperRecord {
                        magic,
                        address: c.pointer,
                        file_offset: target.map(|(_, f)| base.saturating_add(f)),
                    },
                ));
            }
            continue;
        }
        let Some((seg, file_offset)) = target else {
            continue; // Not reached: accepted records have a target.
        };
        if magic == crate::WrapperMagic::HIPF {
            anchors.push((seg, file_offset));
        }
        section.records.push(RawWrapper {
            location: here(c.at, WRAPPER_SIZE),
            record: c.record,
            slot: Slot::At {
                address: c.pointer,
                file_offset: Some(base.saturating_add(file_offset)),
            },
        });
    }

    (section, anchors)
}

/// Per segment, the span from the first bundle a wrapper leads to (`anchors`) to the end of
/// the last (a bundle that cannot be delimited: the end of the segment, where the split
/// stops); segments overlapping in the file give one span.
fn bundle_spans(
    data: &[u8],
    loads: &[Load],
    mut anchors: Vec<(usize, u64)>,
    limits: &gfxkit_bundle::limits::Limits,
) -> Vec<(u64, u64)> {
    anchors.sort_unstable();
    anchors.dedup();
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for group in anchors.chunk_by(|a, b| a.0 == b.0) {
        let seg_end = loads[group[0].0].file_end();
        let start = group[0].1;
        let end = group
            .iter()
            .map(|&(_, at)| {
                let rest = Cursor::new(data).sub(at, seg_end - at);
                match rest.map(|r| gfxkit_bundle::split::stored_extent_at(r, limits)) {
                    Ok(Ok((_, len))) => at.saturating_add(len).min(seg_end),
                    _ => seg_end,
                }
            })
            .max()
            .unwrap_or(seg_end);
        spans.push((start, end));
    }
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Sets the pointers of `candidates` that a `R_*_RELATIVE` relocation of `DT_RELA` sets to its
/// addend. `dynamic` is the `PT_DYNAMIC` segment's (offset, size, file offset of its program
/// header); a table that cannot be read
/// is a problem, the pointers keeping their stored values.
fn relocate(
    data: &[u8],
    header: &FileHeader64<LE>,
    loads: &[Load],
    dynamic: Option<(u64, u64, u64)>,
    candidates: &mut [Candidate],
    here: &dyn Fn(u64, u64) -> Location,
    out: &mut HostParts<'_>,
) {
    let endian = LE;
    let relative = match header.e_machine(endian) {
        elf::EM_X86_64 => elf::R_X86_64_RELATIVE,
        elf::EM_AARCH64 => elf::R_AARCH64_RELATIVE,
        elf::EM_PPC64 => elf::R_PPC64_RELATIVE,
        _ => return,
    };
    let Some((dyn_at, dyn_size, phdr_at)) = dynamic else {
        return; // A static executable: pointers are stored in place.
    };
    let mut bad = |at: u64, size: u64, what: String| {
        out.problem(Problem::error(
            here(at, size),
            ProblemKind::MalformedElf(format!(
                "{what}; wrapper pointers set by dynamic relocations are not known"
            )),
        ))
    };
    let Ok(dynamic) = Cursor::new(data).slice(dyn_at, dyn_size) else {
        // The place is the program header that makes the claim (inside the file).
        bad(
            phdr_at,
            u64::from(header.e_phentsize(endian)),
            format!(
                "PT_DYNAMIC ({dyn_size} bytes at {dyn_at:#x}) runs past the end of the file \
                 ({} bytes)",
                data.len()
            ),
        );
        return;
    };
    let (mut rela, mut relasz, mut relaent) = (None, None, None);
    for e in dynamic
        .chunks_exact(16)
        .filter_map(<[u8]>::first_chunk::<16>)
    {
        let (tag, value) = (u64_in::<0, 16>(e), u64_in::<8, 16>(e));
        match tag as u32 {
            _ if tag > u64::from(u32::MAX) => {}
            elf::DT_NULL => break,
            elf::DT_RELA => rela = Some(value),
            elf::DT_RELASZ => relasz = Some(value),
            elf::DT_RELAENT => relaent = Some(value),
            _ => {}
        }
    }
    let Some(rela) = rela else {
        return; // No RELA table (RELR only, or nothing to relocate): pointers stored in place.
    };
    let size = relasz.unwrap_or(0);
    let entry = std::mem::size_of::<elf::Rela64<LE>>() as u64;
    if relaent.is_some_and(|e| e != entry) {
        bad(
            dyn_at,
            dyn_size,
            format!(
                "DT_RELAENT is {}, expected {entry}",
                relaent.unwrap_or_default()
            ),
        );
        return;
    }
    let table = load_at(loads, rela).and_then(|(i, at)| {
        (size <= loads[i].file_end() - at)
            .then(|| Cursor::new(data).slice(at, size).ok())
            .flatten()
    });
    let Some(table) = table else {
        bad(
            dyn_at,
            dyn_size,
            format!(
                "DT_RELA ({size} bytes at address {rela:#x}) is not in the file's loaded bytes"
            ),
        );
        return;
    };
    let by_slot: HashMap<u64, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.slot, i))
        .collect();
    for i in 0..size / entry {
        let at = i * entry;
        let Ok(r) = Cursor::new(table).array::<24>(at) else {
            break;
        };
        let (offset, info, addend) = (
            u64_in::<0, 24>(&r),
            u64_in::<8, 24>(&r),
            u64_in::<16, 24>(&r),
        );
        if info as u32 != relative {
            continue;
        }
        if let Some(&c) = by_slot.get(&offset) {
            candidates[c].pointer = addend;
            candidates[c].relocated = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::discover::{discover, WrapperTarget};
    use crate::problem::{ProblemKind, Severity};

    /// Where the pieces of [`bare`] are: the bundle in the read-only segment, the wrapper,
    /// dynamic section and relocation in the writable one (file offset + 0x1000 = address).
    const BUNDLE_AT: u64 = 0x100;
    const WRAPPER_AT: u64 = 0x200;
    const DYNAMIC_AT: u64 = 0x220;
    const RELA_AT: u64 = 0x280;

    /// How [`bare`] sets the wrapper's pointer.
    enum Pointer {
        /// A `R_X86_64_RELATIVE` relocation with this addend (0 stored in place).
        Relative(u64),
        /// No relocation; this value stored in place (a non-PIE executable).
        Stored(u64),
    }

    fn put(d: &mut [u8], at: u64, bytes: &[u8]) {
        d[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    }

    /// A shared object without a section table, like `llvm-objcopy --strip-sections` leaves:
    /// segments R [0, 0x200) at 0 holding a bundle at 0x100, RW [0x200, 0x300) at 0x1200
    /// holding one `HIPF` wrapper, `PT_DYNAMIC` and `DT_RELA`.
    fn bare(pointer: Pointer, rela_address: u64) -> Vec<u8> {
        let bundle = gfxkit_bundle::write_bundle(
            &[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"\x7fELF".as_slice())],
            1,
        )
        .unwrap();
        assert!(bundle.len() < 0x100);
        let mut d = vec![0u8; 0x300];
        put(&mut d, 0, b"\x7fELF\x02\x01\x01");
        put(&mut d, 16, &3u16.to_le_bytes()); // ET_DYN
        put(&mut d, 18, &62u16.to_le_bytes()); // EM_X86_64
        put(&mut d, 20, &1u32.to_le_bytes());
        put(&mut d, 32, &64u64.to_le_bytes()); // e_phoff
        put(&mut d, 52, &64u16.to_le_bytes()); // e_ehsize
        put(&mut d, 54, &56u16.to_le_bytes()); // e_phentsize
        put(&mut d, 56, &3u16.to_le_bytes()); // e_phnum
        let phdr = |d: &mut Vec<u8>, i: u64, ty: u32, flags: u32, off: u64, size: u64| {
            let at = 64 + i * 56;
            put(d, at, &ty.to_le_bytes());
            put(d, at + 4, &flags.to_le_bytes());
            put(d, at + 8, &off.to_le_bytes());
            let vaddr = if off >= 0x200 { off + 0x1000 } else { off };
            put(d, at + 16, &vaddr.to_le_bytes());
            put(d, at + 24, &vaddr.to_le_bytes());
            put(d, at + 32, &size.to_le_bytes());
            put(d, at + 40, &size.to_le_bytes());
            put(d, at + 48, &0x1000u64.to_le_bytes());
        };
        phdr(&mut d, 0, 1, 4, 0, 0x200); // PT_LOAD R
        phdr(&mut d, 1, 1, 6, 0x200, 0x100); // PT_LOAD RW
        phdr(&mut d, 2, 2, 6, DYNAMIC_AT, 64); // PT_DYNAMIC
        put(&mut d, BUNDLE_AT, &bundle);
        put(&mut d, WRAPPER_AT, &0x4849_5046u32.to_le_bytes());
        put(&mut d, WRAPPER_AT + 4, &1u32.to_le_bytes());
        let (stored, addend) = match pointer {
            Pointer::Relative(a) => (0, Some(a)),
            Pointer::Stored(v) => (v, None),
        };
        put(&mut d, WRAPPER_AT + 8, &stored.to_le_bytes());
        if let Some(addend) = addend {
            // DT_RELA, DT_RELASZ, DT_RELAENT, DT_NULL.
            for (i, (tag, value)) in [(7u64, rela_address), (8, 24), (9, 24)].iter().enumerate() {
                put(&mut d, DYNAMIC_AT + i as u64 * 16, &tag.to_le_bytes());
                put(&mut d, DYNAMIC_AT + i as u64 * 16 + 8, &value.to_le_bytes());
            }
            put(&mut d, RELA_AT, &(WRAPPER_AT + 0x1000 + 8).to_le_bytes());
            put(&mut d, RELA_AT + 8, &8u64.to_le_bytes()); // R_X86_64_RELATIVE
            put(&mut d, RELA_AT + 16, &addend.to_le_bytes());
        }
        d
    }

    /// The wrapper of a file without a section table leads, through its `R_X86_64_RELATIVE`
    /// addend or the pointer stored in place, to the bundle, found with its file offset.
    #[test]
    fn wrappers_without_a_section_table_lead_to_their_bundles() {
        for pointer in [Pointer::Relative(BUNDLE_AT), Pointer::Stored(BUNDLE_AT)] {
            let d = bare(pointer, RELA_AT + 0x1000);
            let found = discover(&d);
            assert!(found.problems.is_empty(), "{:?}", found.problems);
            assert_eq!(found.bundles.len(), 1);
            let b = &found.bundles[0];
            assert_eq!(
                (b.location.offset, b.location.section.as_deref()),
                (BUNDLE_AT, None)
            );
            assert_eq!(b.wrappers, [0]);
            let w = &found.wrappers[0];
            assert_eq!((w.location.offset, w.location.size), (WRAPPER_AT, 24));
            assert_eq!(w.location.section, None);
            assert_eq!(w.target, WrapperTarget::Bundle { index: 0 });
            assert_eq!(found.fatbin_sections.len(), 1);
            assert_eq!(found.fatbin_sections[0].offset, BUNDLE_AT);
            assert_eq!(found.fatbin_sections[0].size, b.bytes.len() as u64);
        }
    }

    /// A relocated record that leads to no bundle is a warning, not a wrapper; a table of
    /// relocations outside the loaded bytes is an error naming it.
    #[test]
    fn records_leading_nowhere_and_unreadable_relocations_are_reported() {
        let d = bare(Pointer::Relative(BUNDLE_AT + 8), RELA_AT + 0x1000);
        let found = discover(&d);
        assert!(found.bundles.is_empty() && found.wrappers.is_empty());
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        let p = &found.problems[0];
        assert_eq!(p.severity, Severity::Warning);
        assert_eq!(p.location.offset, WRAPPER_AT);
        assert!(matches!(
            p.kind,
            ProblemKind::UnmatchedWrapperRecord {
                address: 0x108,
                file_offset: Some(0x108),
                ..
            }
        ));
        assert!(p.to_string().contains("no bundle starts"), "{p}");

        let d = bare(Pointer::Relative(BUNDLE_AT), 0x9000);
        let found = discover(&d);
        assert!(found.bundles.is_empty() && found.wrappers.is_empty());
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert_eq!(found.problems[0].severity, Severity::Error);
        assert!(found.problems[0].to_string().contains("DT_RELA"));
    }

    /// Every prefix and every flipped byte of a file without a section table is read without a
    /// panic, everything found inside the input.
    #[test]
    fn damaged_files_without_a_section_table_never_panic() {
        let d = bare(Pointer::Relative(BUNDLE_AT), RELA_AT + 0x1000);
        let check = |d: &[u8]| {
            let found = discover(d);
            for b in &found.bundles {
                assert!(b.location.offset + b.bytes.len() as u64 <= d.len() as u64);
            }
            for p in &found.problems {
                assert!(p.location.offset <= d.len() as u64, "{p}");
            }
        };
        for n in 0..d.len() {
            check(&d[..n]);
        }
        for i in 0..d.len() {
            for bit in [0x01u8, 0x80] {
                let mut e = d.clone();
                e[i] ^= bit;
                check(&e);
            }
        }
    }
}
