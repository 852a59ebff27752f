//! PE/COFF host files (Windows): PE32+ images for x86-64 (DLLs, EXEs) and x86-64 COFF objects
//! (regular and bigobj), read through the `object` crate's PE/COFF readers into the same
//! parts (`HostParts`) host discovery reads from ELF files.
//!
//! clang names the sections as on Linux (`.hip_fatbin`, `.hipFatBinSegment`); COFF objects
//! keep those names through their string table, while PE images hold 8 bytes per name, so
//! lld-link and link.exe write `.hip_fat` and `.hipFatB` (both spellings are read,
//! [`crate::fatbin::FATBIN_SECTIONS`], [`crate::fatbin::WRAPPER_SECTIONS`]). A wrapper's
//! pointer is resolved as the loader and linker see it:
//!
//! - in an image, the pointer holds an absolute virtual address (image base + RVA) that an
//!   `IMAGE_REL_BASED_DIR64` entry of the base relocation table fixes when the image is loaded
//!   elsewhere; a non-null pointer no such entry covers is a warning, unless the image says its
//!   relocations were stripped (it is then only ever loaded at its base);
//! - in an object, an `IMAGE_REL_AMD64_ADDR64` relocation against a symbol sets it: the
//!   symbol's section and value plus the addend stored in place (an undefined symbol is
//!   external, resolved when linking).
//!
//! A section's bytes in an image are the first `min(VirtualSize, SizeOfRawData)` bytes at
//! `PointerToRawData`: what the loader maps from the file (the rest is zero-filled, which is
//! how a kpack'ed image drops its `.hip_fat` bytes).

use crate::fatbin::{is_wrapper_section, FATBIN_SECTIONS};
use crate::limits;
use crate::parts::{HostParts, Item, RawWrapper, Slot, WrapperSection, OBJECT_BUNDLE_PREFIX};
use crate::problem::{Location, Problem, ProblemKind};
use crate::wrapper::{WrapperRecord, WRAPPER_SIZE};
use gfxkit_bytes::{offset_within, Cursor};
use object::pe::{self, ImageSectionHeader};
use object::read::coff::{CoffHeader, ImageSymbol, SectionTable};
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
use object::LittleEndian as LE;
use std::collections::{HashMap, HashSet};

/// Size of a section header in PE and COFF files.
const SECTION_HEADER_SIZE: u64 = std::mem::size_of::<ImageSectionHeader>() as u64;

/// Name of an OffloadBinary section (clang's new offload driver).
const OFFLOADING_SECTION: &[u8] = b".llvm.offloading";

/// What a PE/COFF file is, from its first bytes (`prefix`, at least the first 64 bytes of the
/// file for an image; an image's NT headers are checked when `prefix` reaches them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// A PE32+ image for x86-64, or an `MZ` file whose NT headers lie past `prefix`.
    Image,
    /// An x86-64 COFF object (regular or bigobj).
    Object,
    /// Another PE or COFF file: a 32-bit image, another machine.
    Other,
}

/// Tells a PE image or COFF object from its first bytes; `None` when it is neither.
pub(crate) fn sniff(prefix: &[u8]) -> Option<Sniffed> {
    // A prefix that ends before a field asked for is not read further (`None`).
    let c = Cursor::new(prefix);
    let u16_at = |at: u64| c.u16(at).ok();
    if prefix.starts_with(b"MZ") {
        let lfanew = u64::from(c.u32(0x3c).ok()?);
        // Signature, the file header (machine at +4) and the optional header's magic (+24).
        let Ok(sig) = c.slice(lfanew, 4) else {
            // Too short a prefix to see the NT headers: the whole file tells.
            return Some(Sniffed::Image);
        };
        if sig != b"PE\0\0" {
            return None;
        }
        let machine = u16_at(lfanew + 4);
        let magic = u16_at(lfanew + 24);
        return match (machine, magic) {
            (Some(pe::IMAGE_FILE_MACHINE_AMD64), Some(pe::IMAGE_NT_OPTIONAL_HDR64_MAGIC))
            | (Some(pe::IMAGE_FILE_MACHINE_AMD64), None) => Some(Sniffed::Image),
            _ => Some(Sniffed::Other),
        };
    }
    // A bigobj object: signatures 0 and 0xffff, version 2 or more, the machine, the class ID.
    if u16_at(0) == Some(0) && u16_at(2) == Some(0xffff) && u16_at(4).is_some_and(|v| v >= 2) {
        let class_id = c.slice(12, 16).ok()?;
        if class_id != pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0 {
            return None;
        }
        return Some(if u16_at(6) == Some(pe::IMAGE_FILE_MACHINE_AMD64) {
            Sniffed::Object
        } else {
            Sniffed::Other
        });
    }
    // A regular object: the machine, at least one section, no optional header.
    if u16_at(0) == Some(pe::IMAGE_FILE_MACHINE_AMD64)
        && u16_at(2).is_some_and(|n| n > 0)
        && u16_at(16) == Some(0)
    {
        return Some(Sniffed::Object);
    }
    None
}

/// Whether the PE image `data` is a DLL (`IMAGE_FILE_DLL`); `None` when its headers cannot be
/// read.
pub fn is_dll(data: &[u8]) -> Option<bool> {
    let pe = PeFile64::parse(data).ok()?;
    Some(pe.nt_headers().file_header().characteristics.get(LE) & pe::IMAGE_FILE_DLL != 0)
}

/// Where things are in the PE/COFF file being read.
struct Places<'a, 'data> {
    data: &'data [u8],
    base: u64,
    member: Option<&'a str>,
}

impl Places<'_, '_> {
    /// A location in the file: `offset` from its start (the input's offset is added).
    fn at(&self, section: Option<&str>, offset: u64, size: u64) -> Location {
        Location {
            member: self.member.map(str::to_owned),
            section: section.map(str::to_owned),
            offset: self.base.saturating_add(offset),
            size,
        }
    }

    /// The location of the whole file.
    fn whole(&self) -> Location {
        self.at(None, 0, self.data.len() as u64)
    }

    /// File offset (within the file) of bytes borrowed from it.
    fn offset_of(&self, inner: &[u8]) -> u64 {
        offset_within(self.data, inner).unwrap_or(0)
    }

    /// The problem of a section whose contents lie outside the file (at its section header).
    fn outside(&self, name: &str, sh: &ImageSectionHeader, size: u64) -> Problem {
        let header_at = self.offset_of(object::pod::bytes_of(sh));
        Problem::error(
            self.at(Some(name), header_at, SECTION_HEADER_SIZE),
            ProblemKind::SectionOutsideFile {
                offset: u64::from(sh.pointer_to_raw_data.get(LE)),
                size,
                file_size: self.data.len() as u64,
            },
        )
    }
}

/// A section that holds or leads to device code, by name.
enum Role {
    Fatbin(&'static str),
    Wrappers,
    ObjectBundle,
    Offloading,
    Nvidia,
}

/// The role of a section named `name` (bytes), if any.
fn role(name: &[u8]) -> Option<Role> {
    let s = std::str::from_utf8(name).ok();
    if let Some(f) = FATBIN_SECTIONS.iter().find(|f| Some(**f) == s) {
        return Some(Role::Fatbin(f));
    }
    if s.is_some_and(is_wrapper_section) {
        return Some(Role::Wrappers);
    }
    if name.starts_with(OBJECT_BUNDLE_PREFIX.as_bytes()) {
        return Some(Role::ObjectBundle);
    }
    if crate::fatbin::is_nvidia_section(name) {
        return Some(Role::Nvidia);
    }
    (name == OFFLOADING_SECTION).then_some(Role::Offloading)
}

/// The sections of interest: files the contents and problems in `out`, returns the wrapper
/// sections (name, header, contents). `contents` gives a section's bytes as the file's kind
/// reads them (an image: what the loader maps; an object: the raw data).
fn sections_of<'data>(
    p: &Places<'_, 'data>,
    names: &[(&'data [u8], &'data ImageSectionHeader)],
    contents: &dyn Fn(&ImageSectionHeader) -> Result<&'data [u8], u64>,
    out: &mut HostParts<'data>,
) -> Vec<(&'data str, &'data ImageSectionHeader, &'data [u8])> {
    let mut wrappers = Vec::new();
    for &(name_bytes, sh) in names {
        let Some(role) = role(name_bytes) else {
            continue;
        };
        if sh.characteristics.get(LE) & pe::IMAGE_SCN_CNT_UNINITIALIZED_DATA != 0 {
            continue;
        }
        let name = match std::str::from_utf8(name_bytes) {
            Ok(n) => n,
            Err(e) => {
                // An object-bundle section whose entry ID is not UTF-8 is not read.
                let at = p.offset_of(name_bytes);
                out.items.push(Item::Problem(Problem::error(
                    p.at(None, at, name_bytes.len() as u64),
                    ProblemKind::SectionNameNotUtf8 {
                        index: names
                            .iter()
                            .position(|(_, h)| std::ptr::eq(*h, sh))
                            .map_or(0, |i| i + 1),
                        name: name_bytes.escape_ascii().to_string(),
                        bad_byte_offset: p.base.saturating_add(at) + e.valid_up_to() as u64,
                    },
                )));
                continue;
            }
        };
        let bytes = match contents(sh) {
            Ok(b) => b,
            Err(size) => {
                out.items.push(Item::Problem(p.outside(name, sh, size)));
                continue;
            }
        };
        match role {
            Role::Fatbin(spelling) => out.fatbins.push((spelling, bytes)),
            Role::Wrappers => wrappers.push((name, sh, bytes)),
            Role::ObjectBundle => {
                let id = &name[OBJECT_BUNDLE_PREFIX.len()..];
                let location = p.at(Some(name), p.offset_of(bytes), bytes.len() as u64);
                out.object_entries.push((id, location, bytes));
            }
            Role::Offloading => out.items.push(Item::Offloading(name, bytes)),
            Role::Nvidia => {
                let location = p.at(Some(name), p.offset_of(bytes), bytes.len() as u64);
                out.nvidia.push(location);
            }
        }
    }
    wrappers
}

/// The records of a wrapper section (`contents`, named `name`): each record's fields, and its
/// pointer slot resolved by `resolve` (offset of the slot in the section, value in place).
fn records(
    p: &Places<'_, '_>,
    name: &str,
    contents: &[u8],
    resolve: &mut dyn FnMut(u64, u64) -> Slot,
) -> WrapperSection {
    let mut section = WrapperSection::default();
    let at = p.offset_of(contents);
    let size = contents.len() as u64;
    if size % WRAPPER_SIZE != 0 {
        section.problems.push(Problem::error(
            p.at(Some(name), at, size),
            ProblemKind::WrapperSectionSize { size },
        ));
    }
    let count = size / WRAPPER_SIZE;
    if count > limits::MAX_WRAPPERS as u64 {
        section.problems.push(Problem::warning(
            p.at(Some(name), at, size),
            ProblemKind::TooMany {
                what: "wrapper records",
                limit: limits::MAX_WRAPPERS,
            },
        ));
    }
    for (rec, record) in WrapperRecord::all(contents).take(limits::MAX_WRAPPERS) {
        let slot = match resolve(rec + 8, record.pointer) {
            Slot::At {
                address,
                file_offset,
            } => Slot::At {
                address,
                file_offset: file_offset.map(|f| p.base.saturating_add(f)),
            },
            s => s,
        };
        section.records.push(RawWrapper {
            location: p.at(Some(name), at + rec, WRAPPER_SIZE),
            record,
            slot,
        });
    }
    section
}

/// Reads the parts of the PE32+ image `data` (at file offset `base` of the input, inside
/// archive member `member`) that hold or lead to device code.
pub(crate) fn read_image<'data>(
    data: &'data [u8],
    base: u64,
    member: Option<&str>,
) -> HostParts<'data> {
    let mut out = HostParts::default();
    let p = Places { data, base, member };
    let file = match PeFile64::parse(data) {
        Ok(f) => f,
        Err(e) => {
            out.items.push(Item::Problem(Problem::error(
                p.whole(),
                ProblemKind::MalformedPe(format!("PE image: {e}")),
            )));
            return out;
        }
    };
    let nt = file.nt_headers();
    let image_base = nt.optional_header().image_base();
    let relocs_stripped =
        nt.file_header().characteristics.get(LE) & pe::IMAGE_FILE_RELOCS_STRIPPED != 0;
    let sections = file.section_table();
    // Long names (`/4`, written by GNU ld) live in the COFF string table, when there is one.
    let strings = nt.symbols(data).map(|s| s.strings()).unwrap_or_default();
    let names: Vec<_> = sections
        .iter()
        .map(|sh| (sh.name(strings).unwrap_or_else(|_| sh.raw_name()), sh))
        .collect();
    let contents = |sh: &ImageSectionHeader| {
        sh.pe_data(data)
            .map_err(|_| u64::from(sh.pe_file_range().1))
    };
    let wrappers = sections_of(&p, &names, &contents, &mut out);
    if wrappers.is_empty() {
        return out;
    }
    let dir64 = base_relocations(&p, &file, &wrappers, &mut out);
    for (name, sh, bytes) in wrappers {
        let rva = sh.virtual_address.get(LE);
        let mut resolve = |slot: u64, value: u64| {
            let slot_rva = u64::from(rva).saturating_add(slot);
            let relocated = dir64.contains(&slot_rva);
            if value == 0 && !relocated {
                return Slot::Null;
            }
            if !relocated && !relocs_stripped {
                let record = p.offset_of(bytes).saturating_add(slot - 8);
                out.items.push(Item::Problem(Problem::warning(
                    p.at(Some(name), record, WRAPPER_SIZE),
                    ProblemKind::WrapperWithoutBaseRelocation { address: value },
                )));
            }
            let file_offset = value
                .checked_sub(image_base)
                .and_then(|r| u32::try_from(r).ok())
                .and_then(|r| sections.iter().find_map(|s| s.pe_file_range_at(r)))
                .map(|(offset, _)| u64::from(offset))
                .filter(|&f| f < data.len() as u64);
            Slot::At {
                address: value,
                file_offset,
            }
        };
        let section = records(&p, name, bytes, &mut resolve);
        out.wrapper_sections.push(section);
    }
    out
}

/// The RVAs that `IMAGE_REL_BASED_DIR64` entries of the base relocation table fix, among those
/// of the wrapper sections. A table that cannot be read is a problem (the entries read before
/// the damage count).
fn base_relocations(
    p: &Places<'_, '_>,
    file: &PeFile64<'_>,
    wrappers: &[(&str, &ImageSectionHeader, &[u8])],
    out: &mut HostParts<'_>,
) -> HashSet<u64> {
    let ranges: Vec<(u64, u64)> = wrappers
        .iter()
        .map(|(_, sh, bytes)| {
            let start = u64::from(sh.virtual_address.get(LE));
            (start, start + bytes.len() as u64)
        })
        .collect();
    let mut found = HashSet::new();
    // The place of a damaged table: its data directory entry, which makes the claim.
    let here = || match file.data_directory(pe::IMAGE_DIRECTORY_ENTRY_BASERELOC) {
        Some(dir) => {
            let entry = object::pod::bytes_of(dir);
            p.at(None, p.offset_of(entry), entry.len() as u64)
        }
        None => p.whole(),
    };
    let blocks = match file
        .data_directories()
        .relocation_blocks(p.data, &file.section_table())
    {
        Ok(Some(b)) => b,
        Ok(None) => return found,
        Err(e) => {
            out.items.push(Item::Problem(Problem::error(
                here(),
                ProblemKind::MalformedPe(format!("base relocation table: {e}")),
            )));
            return found;
        }
    };
    for block in blocks {
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                out.items.push(Item::Problem(Problem::error(
                    here(),
                    ProblemKind::MalformedPe(format!("base relocation table: {e}")),
                )));
                break;
            }
        };
        for r in block {
            let va = u64::from(r.virtual_address);
            if r.typ == pe::IMAGE_REL_BASED_DIR64
                && ranges.iter().any(|&(s, e)| va >= s && va < e)
                && found.len() < limits::MAX_WRAPPERS
            {
                found.insert(va);
            }
        }
    }
    found
}

/// Reads the parts of the x86-64 COFF object `data` (regular or, with `Coff` =
/// `AnonObjectHeaderBigobj`, bigobj) that hold or lead to device code.
pub(crate) fn read_object<'data, Coff: CoffHeader>(
    data: &'data [u8],
    base: u64,
    member: Option<&str>,
) -> HostParts<'data> {
    let mut out = HostParts::default();
    let p = Places { data, base, member };
    let malformed = |e: object::read::Error, what: &str| {
        Item::Problem(Problem::error(
            p.whole(),
            ProblemKind::MalformedPe(format!("COFF object: {what}{e}")),
        ))
    };
    let mut offset = 0;
    let header = match Coff::parse(data, &mut offset) {
        Ok(h) => h,
        Err(e) => {
            out.items.push(malformed(e, ""));
            return out;
        }
    };
    let sections: SectionTable<'data> = match header.sections(data, offset) {
        Ok(s) => s,
        Err(e) => {
            out.items.push(malformed(e, "section table: "));
            return out;
        }
    };
    let symbols = match header.symbols(data) {
        Ok(s) => Some(s),
        Err(e) => {
            out.items.push(malformed(e, "symbol table: "));
            None
        }
    };
    let strings = symbols.as_ref().map(|s| s.strings()).unwrap_or_default();
    let names: Vec<_> = sections
        .iter()
        .map(|sh| (sh.name(strings).unwrap_or_else(|_| sh.raw_name()), sh))
        .collect();
    let contents = |sh: &ImageSectionHeader| {
        sh.coff_data(data)
            .map_err(|_| u64::from(sh.size_of_raw_data.get(LE)))
    };
    let wrappers = sections_of(&p, &names, &contents, &mut out);
    for (name, sh, bytes) in wrappers {
        // Relocations of the pointer slots: (symbol index, type) by offset in the section.
        let mut relocs: HashMap<u64, (u32, u16)> = HashMap::new();
        match sh.coff_relocations(data) {
            Ok(rs) => {
                for r in rs.iter().take(limits::MAX_WRAPPERS) {
                    let at = u64::from(r.virtual_address.get(LE));
                    relocs.insert(at, (r.symbol_table_index.get(LE), r.typ.get(LE)));
                }
            }
            Err(e) => out
                .items
                .push(malformed(e, &format!("relocations of {name}: "))),
        }
        let mut resolve = |slot: u64, value: u64| {
            let Some(&(index, typ)) = relocs.get(&slot) else {
                return if value == 0 {
                    Slot::Null
                } else {
                    Slot::At {
                        address: value,
                        file_offset: None,
                    }
                };
            };
            let unresolved = Slot::At {
                address: value,
                file_offset: None,
            };
            if typ != pe::IMAGE_REL_AMD64_ADDR64 {
                return unresolved;
            }
            let Some(symbol) = symbols
                .as_ref()
                .and_then(|s| s.symbol(object::SymbolIndex(index as usize)).ok())
            else {
                return unresolved;
            };
            let number = symbol.section_number();
            if number == pe::IMAGE_SYM_UNDEFINED {
                let name = symbol.name(strings).unwrap_or_default();
                return Slot::External(String::from_utf8_lossy(name).into_owned());
            }
            let address = u64::from(symbol.value()).wrapping_add(value);
            let file_offset = usize::try_from(number)
                .ok()
                .and_then(|n| sections.section(object::SectionIndex(n)).ok())
                .and_then(|target| {
                    let (start, size) = target.coff_file_range()?;
                    (address < u64::from(size))
                        .then(|| u64::from(start) + address)
                        .filter(|&f| f < data.len() as u64)
                });
            Slot::At {
                address,
                file_offset,
            }
        };
        let section = records(&p, name, bytes, &mut resolve);
        out.wrapper_sections.push(section);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_are_fatbin_and_wrapper_sections() {
        for n in [".hip_fatbin", ".hip_fat"] {
            assert!(matches!(role(n.as_bytes()), Some(Role::Fatbin(_))));
        }
        for n in [".hipFatBinSegment", ".hipFatB"] {
            assert!(matches!(role(n.as_bytes()), Some(Role::Wrappers)));
        }
        assert!(role(b".hip_fa").is_none());
        assert!(crate::fatbin::is_fatbin_section(".hip_fat"));
    }

    #[test]
    fn sniffing_tells_images_objects_and_others() {
        let mut img = vec![0u8; 0x100];
        img[..2].copy_from_slice(b"MZ");
        img[0x3c] = 0x80;
        img[0x80..0x84].copy_from_slice(b"PE\0\0");
        img[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
        img[0x98..0x9a].copy_from_slice(&0x20bu16.to_le_bytes());
        assert_eq!(sniff(&img), Some(Sniffed::Image));
        // The NT headers past the prefix: a candidate.
        assert_eq!(sniff(&img[..0x70]), Some(Sniffed::Image));
        let mut i386 = img.clone();
        i386[0x84..0x86].copy_from_slice(&0x14cu16.to_le_bytes());
        assert_eq!(sniff(&i386), Some(Sniffed::Other));
        let mut dos = img.clone();
        dos[0x80] = b'N';
        assert_eq!(sniff(&dos), None);
        let mut obj = vec![0u8; 20];
        obj[..2].copy_from_slice(&0x8664u16.to_le_bytes());
        obj[2] = 3;
        assert_eq!(sniff(&obj), Some(Sniffed::Object));
        obj[16] = 0xf0;
        assert_eq!(sniff(&obj), None);
        let mut big = vec![0u8; 56];
        big[2..4].copy_from_slice(&0xffffu16.to_le_bytes());
        big[4] = 2;
        big[6..8].copy_from_slice(&0x8664u16.to_le_bytes());
        big[12..28].copy_from_slice(&pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0);
        assert_eq!(sniff(&big), Some(Sniffed::Object));
        // A short import object (`.lib` import libraries) is no object.
        big[4] = 0;
        assert_eq!(sniff(&big), None);
    }
}
