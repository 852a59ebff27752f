//! A precise view of the parts of a 64-bit little-endian ELF file the rewrite touches: program
//! headers, section headers, symbols, RELA relocations and the `.hipFatBinSegment` wrappers.
//! Headers are read with `object`'s low-level ELF types; fields are written back at their
//! fixed ELF64 offsets.

use crate::error::{fail, Error, ErrorKind, Result};
use crate::limits;
use object::read::elf::{
    FileHeader as _, ProgramHeader as _, Rela as _, SectionHeader as _, Sym as _,
};
use object::LittleEndian as LE;
use object::{U32, U64};

pub(crate) use object::elf::{
    EM_X86_64, PT_INTERP, PT_LOAD, PT_NULL, PT_PHDR, R_X86_64_64, R_X86_64_RELATIVE, SHT_DYNSYM,
    SHT_NOBITS, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB,
};
pub use object::elf::{ET_DYN, ET_EXEC, ET_REL};
/// `SHF_ALLOC` as a 64-bit `sh_flags` holds it.
pub(crate) const SHF_ALLOC: u64 = object::elf::SHF_ALLOC as u64;
pub(crate) const PHENT: usize = 56;
pub(crate) const SHENT: usize = 64;

/// A program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phdr {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}

impl Phdr {
    /// The 56-byte little-endian record (`object`'s `ProgramHeader64`).
    pub fn encode(&self) -> [u8; PHENT] {
        let h = object::elf::ProgramHeader64::<LE> {
            p_type: U32::new(LE, self.p_type),
            p_flags: U32::new(LE, self.flags),
            p_offset: U64::new(LE, self.offset),
            p_vaddr: U64::new(LE, self.vaddr),
            p_paddr: U64::new(LE, self.paddr),
            p_filesz: U64::new(LE, self.filesz),
            p_memsz: U64::new(LE, self.memsz),
            p_align: U64::new(LE, self.align),
        };
        let mut b = [0u8; PHENT];
        b.copy_from_slice(object::pod::bytes_of(&h));
        b
    }
}

/// A section header with its name.
#[derive(Debug, Clone)]
pub(crate) struct Shdr {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
}

impl Shdr {
    /// Whether readers map addresses to the file through this section (`gfxkit_host`'s
    /// discovery does so before the segments): allocated, with bytes in the file.
    pub fn maps_addresses(&self) -> bool {
        self.flags & SHF_ALLOC != 0 && self.sh_type != SHT_NOBITS && self.size > 0
    }

    /// Whether the section occupies bytes in the file.
    pub fn has_file_bytes(&self) -> bool {
        self.sh_type != SHT_NOBITS && self.sh_type != 0 && self.size > 0
    }
}

/// The parsed headers of an ELF file.
#[derive(Debug, Clone)]
pub(crate) struct Elf {
    pub e_type: u16,
    pub machine: u16,
    pub phoff: u64,
    pub phnum_raw: u16,
    pub shoff: u64,
    pub phdrs: Vec<Phdr>,
    pub shdrs: Vec<Shdr>,
}

/// An alignment must be 0, 1 or a power of two up to [`limits::MAX_ALIGN`].
fn check_align(a: u64) -> std::result::Result<(), String> {
    if a > 1 && !a.is_power_of_two() {
        return Err(format!("alignment {a:#x} is not a power of two"));
    }
    if a > limits::MAX_ALIGN {
        return Err(format!(
            "alignment {a:#x} is larger than {:#x}",
            limits::MAX_ALIGN
        ));
    }
    Ok(())
}

/// Whether `data` starts like an ELF file.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

fn bad(msg: impl Into<String>) -> Error {
    Error::at(0, ErrorKind::BadElf(msg.into()))
}

impl Elf {
    /// Whether `p` is the `PT_PHDR` segment that describes this file's program header table
    /// (at `e_phoff`): the one a rewrite that moves or grows the table updates. Any other
    /// `PT_PHDR` (a damaged or odd file may have more) is left as it is.
    pub fn describes_table(&self, p: &Phdr) -> bool {
        p.p_type == PT_PHDR && p.offset == self.phoff
    }

    /// The `PT_LOAD` program headers with their indices, in table order.
    pub fn loads(&self) -> Vec<(usize, &Phdr)> {
        self.phdrs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.p_type == object::elf::PT_LOAD)
            .collect()
    }

    pub fn parse(data: &[u8]) -> Result<Elf> {
        if data.get(4) != Some(&2) || data.get(5) != Some(&1) {
            // At EI_CLASS, or the last byte of a file that ends before it.
            return fail(
                gfxkit_bytes::Cursor::new(data).inside(4),
                ErrorKind::Unsupported("only 64-bit little-endian ELF files are handled".into()),
            );
        }
        // A cut file says so, with the sizes (at the header field that places the part).
        if let Some(t) = gfxkit_code_object::extent::truncation(data) {
            return fail(t.claim, ErrorKind::Damaged(t.to_string()));
        }
        let hdr = object::elf::FileHeader64::<LE>::parse(data).map_err(|e| bad(e.to_string()))?;
        let e = LE;
        if hdr.e_phnum.get(e) != 0 && usize::from(hdr.e_phentsize.get(e)) != PHENT {
            return fail(54, ErrorKind::BadElf("e_phentsize is not 56".into()));
        }
        if hdr.e_shnum.get(e) != 0 && usize::from(hdr.e_shentsize.get(e)) != SHENT {
            return fail(58, ErrorKind::BadElf("e_shentsize is not 64".into()));
        }
        let phdrs: Vec<Phdr> = hdr
            .program_headers(e, data)
            .map_err(|err| Error::at(32, ErrorKind::BadElf(format!("program headers: {err}"))))?
            .iter()
            .map(|p| Phdr {
                p_type: p.p_type(e),
                flags: p.p_flags(e),
                offset: p.p_offset(e),
                vaddr: p.p_vaddr(e),
                paddr: p.p_paddr(e),
                filesz: p.p_filesz(e),
                memsz: p.p_memsz(e),
                align: p.p_align(e),
            })
            .collect();
        for (i, p) in phdrs.iter().enumerate() {
            check_align(p.align).map_err(|m| {
                Error::at(
                    hdr.e_phoff.get(e).saturating_add((i * PHENT) as u64),
                    ErrorKind::BadElf(format!("program header {i}: {m}")),
                )
            })?;
        }
        let table = hdr
            .sections(e, data)
            .map_err(|err| Error::at(40, ErrorKind::BadElf(format!("section headers: {err}"))))?;
        let mut shdrs = Vec::with_capacity(table.len());
        for (i, s) in table.iter().enumerate() {
            let name = table
                .section_name(e, s)
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .map_err(|err| {
                    Error::at(
                        hdr.e_shoff.get(e).saturating_add((i * SHENT) as u64),
                        ErrorKind::BadElf(format!("section {i} name: {err}")),
                    )
                })?;
            let sh = Shdr {
                name,
                sh_type: s.sh_type(e),
                flags: s.sh_flags(e),
                addr: s.sh_addr(e),
                offset: s.sh_offset(e),
                size: s.sh_size(e),
                link: s.sh_link(e),
                info: s.sh_info(e),
                addralign: s.sh_addralign(e),
            };
            check_align(sh.addralign).map_err(|m| {
                Error::at(
                    hdr.e_shoff.get(e).saturating_add((i * SHENT) as u64),
                    ErrorKind::BadElf(format!("section {i} ({}): {m}", sh.name)),
                )
            })?;
            if sh.has_file_bytes()
                && sh
                    .offset
                    .checked_add(sh.size)
                    .map_or(true, |end| end > data.len() as u64)
            {
                // At the section header that makes the claim (inside the file).
                return fail(
                    hdr.e_shoff.get(e).saturating_add((i * SHENT) as u64),
                    ErrorKind::BadElf(format!(
                        "section {i} ({}): {} bytes at offset {:#x} run past the end of the \
                         file ({} bytes)",
                        sh.name,
                        sh.size,
                        sh.offset,
                        data.len()
                    )),
                );
            }
            shdrs.push(sh);
        }
        Ok(Elf {
            e_type: hdr.e_type.get(e),
            machine: hdr.e_machine.get(e),
            phoff: hdr.e_phoff.get(e),
            phnum_raw: hdr.e_phnum.get(e),
            shoff: hdr.e_shoff.get(e),
            phdrs,
            shdrs,
        })
    }

    /// Index of the one section called `name`; an error when there are several.
    pub fn section_named(&self, name: &str) -> Result<Option<usize>> {
        let mut found = None;
        for (i, s) in self.shdrs.iter().enumerate() {
            if s.name == name {
                if found.is_some() {
                    return fail(
                        self.shoff,
                        ErrorKind::Unsupported(format!("more than one {name} section")),
                    );
                }
                found = Some(i);
            }
        }
        Ok(found)
    }

    /// The bytes of section `i`.
    pub fn section_data<'a>(&self, data: &'a [u8], i: usize) -> &'a [u8] {
        let s = &self.shdrs[i];
        if !s.has_file_bytes() {
            return &[];
        }
        // Bounds were checked in `parse`.
        &data[s.offset as usize..(s.offset + s.size) as usize]
    }
}

/// A symbol table entry and where it sits in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sym {
    /// File offset of the 24-byte record.
    pub at: u64,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

/// The 24-byte records (symbols, relocations) of section `i`: its size must be a whole number
/// of them (what `gfxkit_host`'s discovery, which reads the same tables, requires too), and
/// at most [`limits::MAX_RECORDS`].
fn records<'d, T: object::pod::Pod>(
    elf: &Elf,
    data: &'d [u8],
    i: usize,
    what: &str,
) -> Result<&'d [T]> {
    let s = &elf.shdrs[i];
    let d = elf.section_data(data, i);
    if d.len() % 24 != 0 {
        return fail(
            s.offset,
            ErrorKind::BadElf(format!(
                "section {} holds {} bytes, not a whole number of 24-byte {what} records",
                s.name,
                d.len()
            )),
        );
    }
    let n = d.len() / 24;
    if n as u64 > limits::MAX_RECORDS {
        return fail(
            s.offset,
            ErrorKind::BadElf(format!("too many {what} records")),
        );
    }
    object::pod::slice_from_bytes::<T>(d, n)
        .map(|(r, _)| r)
        .map_err(|()| Error::at(s.offset, ErrorKind::BadElf(format!("{what} records"))))
}

/// The symbols of symbol table section `i`.
pub(crate) fn symbols(elf: &Elf, data: &[u8], i: usize) -> Result<Vec<Sym>> {
    let s = &elf.shdrs[i];
    Ok(records::<object::elf::Sym64<LE>>(elf, data, i, "symbol")?
        .iter()
        .enumerate()
        .map(|(k, r)| Sym {
            at: s.offset + (k * 24) as u64,
            shndx: r.st_shndx(LE),
            value: r.st_value(LE),
            size: r.st_size(LE),
        })
        .collect())
}

/// Every symbol defined in section `sec`, from every symbol table (`SHT_SYMTAB`, `SHT_DYNSYM`)
/// in section order: (table index, index in the table, symbol). The symbols a rewrite of
/// `.hip_fatbin` (prune, recompress, kpack split and inline) moves with the section.
pub(crate) fn symbols_in(elf: &Elf, data: &[u8], sec: usize) -> Result<Vec<(usize, usize, Sym)>> {
    let mut out = Vec::new();
    for (t, s) in elf.shdrs.iter().enumerate() {
        if s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM {
            continue;
        }
        for (k, sym) in symbols(elf, data, t)?.into_iter().enumerate() {
            if sym.shndx as usize == sec {
                out.push((t, k, sym));
            }
        }
    }
    Ok(out)
}

/// The symbols of the table relocation section `rel` links to, or `None` when the link names
/// no section or a section that is not a symbol table (`SHT_SYMTAB` or `SHT_DYNSYM`): such
/// relocations resolve nothing, for the rewrite as for host discovery, which reads them through
/// `object`'s symbol-table lookup.
pub(crate) fn linked_symbols(elf: &Elf, data: &[u8], rel: &Shdr) -> Result<Option<Vec<Sym>>> {
    let i = rel.link as usize;
    match elf.shdrs.get(i) {
        Some(t) if i != 0 && (t.sh_type == SHT_SYMTAB || t.sh_type == SHT_DYNSYM) => {
            symbols(elf, data, i).map(Some)
        }
        _ => Ok(None),
    }
}

/// A RELA relocation and where it sits in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rela {
    /// File offset of the 24-byte record.
    pub at: u64,
    /// Index of the relocation in its section.
    pub index: usize,
    pub r_offset: u64,
    pub r_type: u32,
    pub r_sym: u32,
    pub addend: i64,
}

/// The relocations of RELA section `i`.
pub(crate) fn relas(elf: &Elf, data: &[u8], i: usize) -> Result<Vec<Rela>> {
    let s = &elf.shdrs[i];
    Ok(
        records::<object::elf::Rela64<LE>>(elf, data, i, "relocation")?
            .iter()
            .enumerate()
            .map(|(k, r)| Rela {
                at: s.offset + (k * 24) as u64,
                index: k,
                r_offset: r.r_offset(LE),
                r_type: r.r_type(LE, false),
                r_sym: r.r_sym(LE, false),
                addend: r.r_addend(LE),
            })
            .collect(),
    )
}

/// Where a wrapper's bundle pointer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PointerSource {
    /// The 8 bytes in the wrapper itself (non-PIC files, RELR, or applied relocations).
    InPlace,
    /// A RELA relocation: its file offset.
    Rela {
        at: u64,
        /// The symbol's value when the relocation names one (0 for RELATIVE).
        sym_value: u64,
        /// Whether it is `R_X86_64_RELATIVE` (its addend is the pointer).
        relative: bool,
    },
}

/// One `.hipFatBinSegment` wrapper.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wrapper {
    /// File offset of the 24-byte record.
    pub at: u64,
    pub magic: u32,
    /// The pointer as stored (0 where a relocation supplies it).
    pub pointer: u64,
    /// The u64 at +16 (a `HIPK` wrapper's code-object index).
    pub reserved: u64,
    /// The address the pointer resolves to (section-relative to `.hip_fatbin` in relocatable
    /// objects), or `None` when nothing sets it.
    pub target: Option<u64>,
    pub source: PointerSource,
}

/// The wrappers of `.hipFatBinSegment` (section `seg`), with their pointers resolved.
/// `fatbin` is the `.hip_fatbin` section index.
pub(crate) fn wrappers(elf: &Elf, data: &[u8], seg: usize, fatbin: usize) -> Result<Vec<Wrapper>> {
    let s = &elf.shdrs[seg];
    let d = elf.section_data(data, seg);
    if d.len() % 24 != 0 {
        return fail(
            s.offset,
            ErrorKind::BadElf(format!(
                ".hipFatBinSegment size {} is not a multiple of the 24-byte wrapper",
                d.len()
            )),
        );
    }
    let relocatable = elf.e_type == ET_REL;
    // Relocations that apply to the wrapper section: in a relocatable object the RELA section
    // whose sh_info names it; in a linked file every RELA section (r_offset is an address).
    let mut by_offset = std::collections::HashMap::new();
    for (ri, r) in elf.shdrs.iter().enumerate() {
        if r.sh_type != SHT_RELA {
            continue;
        }
        if relocatable && r.info as usize != seg {
            continue;
        }
        let syms = match linked_symbols(elf, data, r)? {
            Some(syms) => syms,
            // A relocatable object's relocations name symbols: without a table they set
            // nothing (the wrapper keeps its stored pointer).
            None if relocatable => continue,
            None => Vec::new(),
        };
        for rel in relas(elf, data, ri)? {
            let key = if relocatable {
                rel.r_offset
            } else {
                match rel.r_offset.checked_sub(s.addr) {
                    Some(k) if k < s.size => k,
                    _ => continue,
                }
            };
            if key % 24 != 8 {
                continue;
            }
            // In a linked file only these two write a wrapper's 64-bit pointer (the rule of
            // `gfxkit_host`'s discovery); any other type there sets nothing gfxkit reads.
            if !relocatable && rel.r_type != R_X86_64_RELATIVE && rel.r_type != R_X86_64_64 {
                continue;
            }
            if !relocatable && rel.r_type == R_X86_64_64 && rel.r_sym == 0 {
                // S + A with no symbol: an absolute address, wherever the file is loaded (host
                // discovery leaves it unresolved).
                return fail(
                    rel.at,
                    ErrorKind::Unsupported(format!(
                        "relocation {} sets wrapper {}'s pointer to the absolute address {:#x} \
                         (R_X86_64_64 against no symbol)",
                        rel.index,
                        key / 24,
                        rel.addend
                    )),
                );
            }
            let sym_value = if rel.r_type == R_X86_64_RELATIVE || rel.r_sym == 0 {
                0
            } else {
                let sym = syms.get(rel.r_sym as usize).ok_or_else(|| {
                    Error::at(
                        rel.at,
                        ErrorKind::BadElf(format!(
                            "relocation {} names symbol {} past the end of its table",
                            rel.index, rel.r_sym
                        )),
                    )
                })?;
                if relocatable && sym.shndx as usize != fatbin {
                    // Points at some other section: not a bundle.
                    by_offset.insert(key, (rel, None));
                    continue;
                }
                sym.value
            };
            by_offset.insert(key, (rel, Some(sym_value)));
        }
    }
    let mut out = Vec::with_capacity(d.len() / 24);
    for (o, record) in gfxkit_host::WrapperRecord::all(d) {
        let in_place = record.pointer;
        let (target, source) = match by_offset.get(&(o + 8)) {
            Some((rel, Some(sv))) => (
                Some(sv.wrapping_add(rel.addend as u64)),
                PointerSource::Rela {
                    at: rel.at,
                    sym_value: *sv,
                    relative: rel.r_type == R_X86_64_RELATIVE,
                },
            ),
            Some((rel, None)) => (
                None,
                PointerSource::Rela {
                    at: rel.at,
                    sym_value: 0,
                    relative: rel.r_type == R_X86_64_RELATIVE,
                },
            ),
            None if relocatable || in_place == 0 => (None, PointerSource::InPlace),
            None => (Some(in_place), PointerSource::InPlace),
        };
        out.push(Wrapper {
            at: s.offset + o,
            magic: record.magic,
            pointer: in_place,
            reserved: record.reserved,
            target,
            source,
        });
    }
    Ok(out)
}
