//! Object bundles (`-type=o` with a real host object): one ELF section per entry, named
//! `__CLANG_OFFLOAD_BUNDLE__<entry id>`, flags `SHF_EXCLUDE`, alignment 1. The host entry's
//! section holds a single zero byte: the host object is the file itself.
//!
//! clang 19 adds the sections by running `llvm-objcopy`; gfxkit writes them itself: the host
//! file's bytes are kept as they are and the payloads, a grown section-name table and a new
//! section header table are appended. Reading uses the `object` crate.

use crate::error::{Error, ErrorKind, Result};
use object::elf::{
    ET_DYN, ET_EXEC, ET_REL, SHF_EXCLUDE, SHF_INFO_LINK, SHN_LORESERVE, SHT_DYNSYM, SHT_GROUP,
    SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_SYMTAB, SHT_SYMTAB_SHNDX,
};
use object::{Object, ObjectSection};

/// Prefix of the section names that hold entries.
pub const SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

fn obj_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Object(msg.into()))
}

/// Whether `data` is an object file gfxkit reads as an object bundle: an ELF file (relocatable,
/// executable or shared object) with a section header table. Anything else is read in the
/// binary bundle format, as clang does with inputs that are not object files.
pub fn is_object(data: &[u8]) -> bool {
    matches!(
        object::FileKind::parse(data),
        Ok(object::FileKind::Elf32 | object::FileKind::Elf64)
    ) && Elf::parse(data).is_ok_and(|e| matches!(e.e_type, ET_REL | ET_EXEC | ET_DYN))
}

/// One entry found in an object file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectEntry<'data> {
    /// The ID (the section name after the prefix).
    pub id: &'data str,
    /// The section contents.
    pub payload: &'data [u8],
    /// Section index.
    pub section_index: usize,
}

impl ObjectEntry<'_> {
    /// Whether this is the host placeholder (a single zero byte).
    pub fn is_host_placeholder(&self) -> bool {
        self.payload == [0]
    }
}

/// Lists the bundle sections of an object file in section order.
pub fn read_object(data: &[u8]) -> Result<Vec<ObjectEntry<'_>>> {
    let file = object::File::parse(data).map_err(|e| obj_err(e.to_string()))?;
    let mut out = Vec::new();
    for s in file.sections() {
        let name_bytes = s.name_bytes().map_err(|e| obj_err(e.to_string()))?;
        if !name_bytes.starts_with(SECTION_PREFIX.as_bytes()) {
            continue;
        }
        let name = std::str::from_utf8(name_bytes).map_err(|e| {
            let at = offset_in(data, name_bytes).map(|o| o + e.valid_up_to() as u64);
            let err = ErrorKind::Object(format!(
                "section {} name \"{}\" is not UTF-8",
                s.index().0,
                name_bytes.escape_ascii()
            ));
            match at {
                Some(at) => Error::at(err, at),
                None => Error::new(err),
            }
        })?;
        if let Some(id) = name.strip_prefix(SECTION_PREFIX) {
            let payload = s
                .data()
                .map_err(|e| obj_err(format!("section {name}: {e}")))?;
            out.push(ObjectEntry {
                id,
                payload,
                section_index: s.index().0,
            });
        }
    }
    Ok(out)
}

#[derive(Clone, Copy)]
struct Elf {
    is64: bool,
    le: bool,
    e_type: u16,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
    shstrndx: u32,
}

#[derive(Clone, Copy, Debug)]
struct Shdr {
    name: u32,
    ty: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

fn rd(data: &[u8], off: u64, n: usize, le: bool) -> Result<u64> {
    let s = usize::try_from(off)
        .ok()
        .and_then(|o| data.get(o..o.checked_add(n)?))
        .ok_or_else(|| {
            obj_err(format!(
                "ELF field at {off:#x} lies past the end of the file"
            ))
        })?;
    let mut v = 0u64;
    if le {
        for (i, b) in s.iter().enumerate() {
            v |= (*b as u64) << (8 * i);
        }
    } else {
        for b in s {
            v = (v << 8) | *b as u64;
        }
    }
    Ok(v)
}

fn wr(out: &mut Vec<u8>, v: u64, n: usize, le: bool) {
    let b = v.to_le_bytes();
    if le {
        out.extend_from_slice(&b[..n]);
    } else {
        out.extend(b[..n].iter().rev());
    }
}

fn patch(out: &mut [u8], off: usize, v: u64, n: usize, le: bool) {
    let mut tmp = Vec::with_capacity(n);
    wr(&mut tmp, v, n, le);
    out[off..off + n].copy_from_slice(&tmp);
}

impl Elf {
    fn parse(data: &[u8]) -> Result<Elf> {
        if data.len() < 52 || &data[..4] != b"\x7fELF" {
            return Err(obj_err("not an ELF file"));
        }
        let is64 = match data[4] {
            1 => false,
            2 => true,
            c => return Err(obj_err(format!("unknown ELF class {c}"))),
        };
        let le = match data[5] {
            1 => true,
            2 => false,
            d => return Err(obj_err(format!("unknown ELF data encoding {d}"))),
        };
        let e_type = rd(data, 16, 2, le)? as u16;
        let (shoff, shentsize, shnum, shstrndx) = if is64 {
            (
                rd(data, 0x28, 8, le)?,
                rd(data, 0x3a, 2, le)?,
                rd(data, 0x3c, 2, le)?,
                rd(data, 0x3e, 2, le)?,
            )
        } else {
            (
                rd(data, 0x20, 4, le)?,
                rd(data, 0x2e, 2, le)?,
                rd(data, 0x30, 2, le)?,
                rd(data, 0x32, 2, le)?,
            )
        };
        let want = if is64 { 64 } else { 40 };
        if shnum == 0 || shentsize != want {
            return Err(obj_err(
                "ELF file without a regular section header table (extended numbering is not supported)",
            ));
        }
        if shstrndx as u32 >= u32::from(SHN_LORESERVE) {
            return Err(obj_err(
                "extended section-name table index is not supported",
            ));
        }
        let end = shnum
            .checked_mul(shentsize)
            .and_then(|n| n.checked_add(shoff))
            .ok_or_else(|| obj_err("section header table overflows"))?;
        if end > data.len() as u64 {
            return Err(obj_err(format!(
                "section header table ({shnum} entries at {shoff:#x}) runs past the end of the file"
            )));
        }
        Ok(Elf {
            is64,
            le,
            e_type,
            shoff,
            shentsize,
            shnum,
            shstrndx: shstrndx as u32,
        })
    }

    fn shdr(&self, data: &[u8], i: u64) -> Result<Shdr> {
        let b = self.shoff + i * self.shentsize;
        // (offset, width) of name, type, flags, addr, offset, size, link, info, align, entsize.
        const SHDR64: [(u64, usize); 10] = [
            (0, 4),
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 8),
            (32, 8),
            (40, 4),
            (44, 4),
            (48, 8),
            (56, 8),
        ];
        const SHDR32: [(u64, usize); 10] = [
            (0, 4),
            (4, 4),
            (8, 4),
            (12, 4),
            (16, 4),
            (20, 4),
            (24, 4),
            (28, 4),
            (32, 4),
            (36, 4),
        ];
        let fields = if self.is64 { &SHDR64 } else { &SHDR32 };
        let f = |k: usize| rd(data, b + fields[k].0, fields[k].1, self.le);
        Ok(Shdr {
            name: f(0)? as u32,
            ty: f(1)? as u32,
            flags: f(2)?,
            addr: f(3)?,
            offset: f(4)?,
            size: f(5)?,
            link: f(6)? as u32,
            info: f(7)? as u32,
            align: f(8)?,
            entsize: f(9)?,
        })
    }

    fn put_shdr(&self, out: &mut Vec<u8>, s: &Shdr) {
        let (le, w) = (self.le, if self.is64 { 8 } else { 4 });
        wr(out, s.name as u64, 4, le);
        wr(out, s.ty as u64, 4, le);
        wr(out, s.flags, w, le);
        wr(out, s.addr, w, le);
        wr(out, s.offset, w, le);
        wr(out, s.size, w, le);
        wr(out, s.link as u64, 4, le);
        wr(out, s.info as u64, 4, le);
        wr(out, s.align, w, le);
        wr(out, s.entsize, w, le);
    }

    fn headers(&self, data: &[u8]) -> Result<Vec<Shdr>> {
        (0..self.shnum).map(|i| self.shdr(data, i)).collect()
    }

    /// Rewrites the header fields that locate the section header table.
    fn patch_header(&self, out: &mut [u8], shoff: u64, shnum: u64, shstrndx: u32) {
        if self.is64 {
            patch(out, 0x28, shoff, 8, self.le);
            patch(out, 0x3c, shnum, 2, self.le);
            patch(out, 0x3e, shstrndx as u64, 2, self.le);
        } else {
            patch(out, 0x20, shoff, 4, self.le);
            patch(out, 0x30, shnum, 2, self.le);
            patch(out, 0x32, shstrndx as u64, 2, self.le);
        }
    }
}

fn section_bytes<'d>(data: &'d [u8], s: &Shdr) -> Result<&'d [u8]> {
    usize::try_from(s.offset)
        .ok()
        .zip(usize::try_from(s.size).ok())
        .and_then(|(o, n)| data.get(o..o.checked_add(n)?))
        .ok_or_else(|| {
            obj_err(format!(
                "section data at {:#x} runs past the end of the file",
                s.offset
            ))
        })
}

/// Start of section `index`, whose contents `strip_bundle_sections` rewrites in place: it must
/// lie inside the file and clear of the ELF header.
fn patched_range(data: &[u8], h: &Shdr, index: usize, elf: &Elf) -> Result<usize> {
    let header_size = if elf.is64 { 64 } else { 52 };
    let bytes = section_bytes(data, h).map_err(|_| {
        obj_err(format!(
            "section {index} (type {}): {} bytes at {:#x} run past the end of the file",
            h.ty, h.size, h.offset
        ))
    })?;
    if h.offset < header_size && !bytes.is_empty() {
        return Err(obj_err(format!(
            "section {index} (type {}) at {:#x} overlaps the ELF header",
            h.ty, h.offset
        )));
    }
    // `section_bytes` checked that the offset fits in the file, hence in `usize`.
    Ok(h.offset as usize)
}

/// Offset of `inner` within `outer`, when `inner` is a sub-slice of it.
fn offset_in(outer: &[u8], inner: &[u8]) -> Option<u64> {
    let off = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (off.checked_add(inner.len())? <= outer.len()).then_some(off as u64)
}

fn align_vec(out: &mut Vec<u8>, align: usize) {
    while out.len() % align != 0 {
        out.push(0);
    }
}

/// Writes an object bundle: the host ELF file `host` (relocatable object, executable or shared
/// object; sections that are not loaded leave its program headers alone) with one section per
/// entry added (`entries` in order). The entry at `host_index` is the host's own: its section gets the
/// one-byte placeholder, as clang writes it (an index past the end means no host entry).
/// Sections are `SHT_PROGBITS`, flags `SHF_EXCLUDE`, alignment 1.
pub fn write_object(host: &[u8], entries: &[(&str, &[u8])], host_index: usize) -> Result<Vec<u8>> {
    let elf = Elf::parse(host)?;
    if !matches!(elf.e_type, ET_REL | ET_EXEC | ET_DYN) {
        return Err(obj_err(format!(
            "host input is not an object file (ELF type {})",
            elf.e_type
        )));
    }
    let mut headers = elf.headers(host)?;
    let strndx = elf.shstrndx as usize;
    let strhdr = *headers
        .get(strndx)
        .ok_or_else(|| obj_err("section-name table index is out of range"))?;
    let mut names = section_bytes(host, &strhdr)?.to_vec();
    let mut out = host.to_vec();
    for (i, (id, payload)) in entries.iter().enumerate() {
        let payload: &[u8] = if i == host_index { &[0] } else { payload };
        let name_off = names.len() as u64;
        names.extend_from_slice(SECTION_PREFIX.as_bytes());
        names.extend_from_slice(id.as_bytes());
        names.push(0);
        headers.push(Shdr {
            name: u32::try_from(name_off).map_err(|_| obj_err("section-name table too large"))?,
            ty: SHT_PROGBITS,
            flags: u64::from(SHF_EXCLUDE),
            addr: 0,
            offset: out.len() as u64,
            size: payload.len() as u64,
            link: 0,
            info: 0,
            align: 1,
            entsize: 0,
        });
        out.extend_from_slice(payload);
    }
    if headers.len() as u32 >= u32::from(SHN_LORESERVE) {
        return Err(obj_err(
            "too many sections for a regular section header table",
        ));
    }
    headers[strndx].offset = out.len() as u64;
    headers[strndx].size = names.len() as u64;
    out.extend_from_slice(&names);
    align_vec(&mut out, if elf.is64 { 8 } else { 4 });
    let shoff = out.len() as u64;
    if !elf.is64 && shoff > u32::MAX as u64 {
        return Err(obj_err("output too large for a 32-bit ELF file"));
    }
    for h in &headers {
        elf.put_shdr(&mut out, h);
    }
    elf.patch_header(&mut out, shoff, headers.len() as u64, elf.shstrndx);
    Ok(out)
}

/// The host object without its bundle sections (what unbundling the host entry of an object
/// bundle yields). Section data stays in place; the section header table is rewritten without
/// the bundle sections, with section indices (links, infos, symbol section indices, groups)
/// renumbered.
pub fn strip_bundle_sections(data: &[u8]) -> Result<Vec<u8>> {
    let elf = Elf::parse(data)?;
    let headers = elf.headers(data)?;
    let strhdr = *headers
        .get(elf.shstrndx as usize)
        .ok_or_else(|| obj_err("section-name table index is out of range"))?;
    let names = section_bytes(data, &strhdr)?;
    let name_of = |h: &Shdr| -> &[u8] {
        let s = names.get(h.name as usize..).unwrap_or(&[]);
        &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
    };
    let removed: Vec<bool> = headers
        .iter()
        .map(|h| name_of(h).starts_with(SECTION_PREFIX.as_bytes()))
        .collect();
    // New index of every kept section.
    let mut map = vec![0u32; headers.len()];
    let mut next = 0u32;
    for (i, r) in removed.iter().enumerate() {
        if !r {
            map[i] = next;
            next += 1;
        }
    }
    let remap = |i: u32| -> u32 {
        if i == 0 || i >= u32::from(SHN_LORESERVE) {
            i
        } else {
            map.get(i as usize).copied().unwrap_or(i)
        }
    };
    let mut out = data.to_vec();
    let mut kept = Vec::new();
    for (i, h) in headers.iter().enumerate() {
        if removed[i] {
            continue;
        }
        let mut h = *h;
        h.link = remap(h.link);
        if matches!(h.ty, SHT_REL | SHT_RELA) || h.flags & u64::from(SHF_INFO_LINK) != 0 {
            h.info = remap(h.info);
        }
        // Section indices stored in section contents, rewritten in place: (entry size, offset of
        // the index in an entry, its width, first entry).
        let fields = match h.ty {
            SHT_SYMTAB | SHT_DYNSYM if elf.is64 => Some((24, 6, 2, 0)),
            SHT_SYMTAB | SHT_DYNSYM => Some((16, 14, 2, 0)),
            // The first word of a group is its flags.
            SHT_GROUP => Some((4, 0, 4, 1)),
            SHT_SYMTAB_SHNDX => Some((4, 0, 4, 0)),
            _ => None,
        };
        if let Some((entsize, field, width, first)) = fields {
            let start = patched_range(data, &h, i, &elf)?;
            let bytes = section_bytes(data, &h)?;
            for (k, entry) in bytes.chunks_exact(entsize).enumerate().skip(first) {
                let v = rd(entry, field as u64, width, elf.le)? as u32;
                let nv = remap(v);
                if nv != v {
                    // In range: `entry` lies inside `data`, which `out` copies.
                    patch(
                        &mut out,
                        start + k * entsize + field,
                        nv as u64,
                        width,
                        elf.le,
                    );
                }
            }
        }
        kept.push(h);
    }
    // Names of the removed sections at the end of the name table (where gfxkit's writer puts
    // them) are dropped when nothing kept refers past them.
    let cutoff = headers
        .iter()
        .zip(&removed)
        .filter(|(_, r)| **r)
        .map(|(h, _)| h.name as u64)
        .min();
    if let Some(cut) = cutoff {
        let mut used_past = kept.iter().any(|h| h.name as u64 >= cut);
        for h in headers
            .iter()
            .filter(|h| h.ty == SHT_SYMTAB && h.link == elf.shstrndx)
        {
            let entsize = if elf.is64 { 24 } else { 16 };
            for sym in section_bytes(data, h)?.chunks_exact(entsize) {
                if rd(sym, 0, 4, elf.le)? >= cut {
                    used_past = true;
                }
            }
        }
        let new_strndx = remap(elf.shstrndx) as usize;
        if !used_past {
            if let Some(h) = kept.get_mut(new_strndx) {
                if cut < h.size {
                    h.size = cut;
                }
            }
        }
    }
    align_vec(&mut out, if elf.is64 { 8 } else { 4 });
    let shoff = out.len() as u64;
    for h in &kept {
        elf.put_shdr(&mut out, h);
    }
    elf.patch_header(&mut out, shoff, kept.len() as u64, remap(elf.shstrndx));
    Ok(out)
}
