//! The ELF layout of ROCm's kpack split, both ways.
//!
//! [`split_elf`] turns a fat shared object or executable into the host-only binary TheRock's
//! splitter makes: every `.hipFatBinSegment` wrapper gets magic `HIPK`, its index N in the
//! u64 at +16 and a pointer (the `R_X86_64_RELATIVE` addend, or the in-place pointer of a
//! non-PIC file) to a new `.rocm_kpack_ref` section holding the marker. Unlike TheRock's
//! splitter, which zeroes `.hip_fatbin` page by page and leaves its bytes in the file, the
//! section is emptied (size 0 at its old address) and everything after it moves down in the
//! file by whole alignment units, as [`rewrite`](mod@crate::rewrite) does for pruning:
//!
//! ```text
//! before:  [ .. R segment: .rodata | .hip_fatbin ........ | .eh_frame .. ] [ RX ] [ RW ] ...
//! after:   [ .. R: .rodata ] [ R: .rocm_kpack_ref + phdrs ] [ R: .eh_frame .. ] [ RX ] ...
//! ```
//!
//! The segment holding `.hip_fatbin` is split: the part before it, a new read-only `PT_LOAD`
//! for the marker (at the addresses the old section had, so nothing after it moves in
//! memory), and the part after it, moved down in the file. The program header table, which
//! grows by two entries, moves into the marker's segment (`e_phoff` and `PT_PHDR` follow);
//! that segment keeps the offset-to-address difference of the segment that held
//! `.hip_fatbin`, which for executables must be the first segment's (older kernels compute
//! `AT_PHDR` from it). The section header table and `.shstrtab` are rewritten at the end of
//! the file with one more section; a binary inlined from a split, which still has its old
//! `.rocm_kpack_ref`, has that section's header reused for the new marker instead.
//!
//! [`inline_elf`] goes back: wrappers get `HIPF`, 0 at +16 and a pointer to their bundle in a
//! new `.hip_fatbin` placed in a new read-only `PT_LOAD` after the last segment (the program
//! header table moves there too).

use crate::elf::{self, Elf, Phdr};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::layout;
use crate::output::Output;
use crate::patch::Patch;
use crate::segment::{self, Placement, Request};
use gfxkit_bundle::le::Cursor;

/// Name of the marker section.
pub const MARKER_SECTION: &str = ".rocm_kpack_ref";

const SHT_PROGBITS: u32 = 1;
const PF_R: u32 = 4;

/// What [`split_elf`] produced.
#[derive(Debug, Clone)]
pub struct Split {
    /// The host-only binary.
    pub bytes: Vec<u8>,
    /// For each wrapper in `.hipFatBinSegment` order: the file offset (in the input) of the
    /// bundle it pointed to.
    pub wrapper_bundles: Vec<u64>,
    /// File offset of the marker in the output.
    pub marker_offset: u64,
    /// Address of the marker.
    pub marker_address: u64,
    /// Bytes everything after the old `.hip_fatbin` moved down in the file.
    pub shift: u64,
}

fn unsupported(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Unsupported(msg.into()))
}

/// The checks both directions share; returns (the parsed file, `.hip_fatbin` index,
/// `.hipFatBinSegment` index).
fn linked_x86_64(data: &[u8]) -> Result<(Elf, Option<usize>, usize)> {
    if crate::rewrite::is_pe_or_coff(data) {
        return fail(
            0,
            ErrorKind::Unsupported(
                "a PE image or COFF object (Windows): kpack split and inline rewrite ELF files \
                 only (every command reads a kpack'ed PE image)"
                    .into(),
            ),
        );
    }
    if !elf::is_elf(data) {
        return fail(0, ErrorKind::Unsupported("not an ELF file".into()));
    }
    let e = Elf::parse(data)?;
    // The segment rules every rewrite keeps: a file that breaks one cannot be laid out again.
    crate::check::segments(&e, data.len() as u64)?;
    if e.e_type != elf::ET_DYN && e.e_type != elf::ET_EXEC {
        return fail(
            16,
            ErrorKind::Unsupported(format!(
                "ELF type {} (only shared objects and executables are split; objects and \
                 archives are linked first)",
                e.e_type
            )),
        );
    }
    if e.machine != elf::EM_X86_64 {
        return fail(
            18,
            ErrorKind::Unsupported(format!(
                "machine {} (only x86-64 relocations are understood)",
                e.machine
            )),
        );
    }
    if e.shdrs.is_empty() {
        return fail(
            40,
            ErrorKind::Unsupported(
                "no section headers (stripped with --strip-sections): its bundles are found \
                 through the program headers, but a split rewrites .hip_fatbin and adds a \
                 section, which needs the section table"
                    .into(),
            ),
        );
    }
    if e.phnum_raw == 0xffff || e.phdrs.len() + 2 >= 0xffff {
        return fail(
            56,
            ErrorKind::Unsupported("too many program headers".into()),
        );
    }
    if e.shdrs.len() + 1 >= 0xff00 {
        return fail(60, ErrorKind::Unsupported("too many sections".into()));
    }
    if let Some(s) = e
        .shdrs
        .iter()
        .find(|s| s.name == ".llvm.offloading" || s.name.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
    {
        return fail(
            s.offset,
            ErrorKind::Unsupported(format!(
                "device code in section {} is not handled (only .hip_fatbin is)",
                s.name
            )),
        );
    }
    let fb = e.section_named(".hip_fatbin")?;
    let Some(seg) = e.section_named(".hipFatBinSegment")? else {
        return fail(
            0,
            ErrorKind::Unsupported("no .hipFatBinSegment section (no HIP wrappers)".into()),
        );
    };
    Ok((e, fb, seg))
}

/// Reads the `e_shstrndx` and raw section header records.
fn raw_shdrs(e: &Elf, data: &[u8]) -> Result<(usize, Vec<[u8; elf::SHENT]>)> {
    let shstrndx = usize::from(Cursor::new(data).u16(62)?);
    if shstrndx == 0 || shstrndx >= e.shdrs.len() {
        return fail(
            62,
            ErrorKind::Unsupported(format!(
                "e_shstrndx {shstrndx} does not name a section (extended numbering is not handled)"
            )),
        );
    }
    // The names are written again with one more: they must be a string table with bytes.
    let names = &e.shdrs[shstrndx];
    if names.sh_type != elf::SHT_STRTAB || !names.has_file_bytes() {
        return fail(
            e.shoff + (shstrndx * elf::SHENT) as u64,
            ErrorKind::Unsupported(format!(
                "section {shstrndx} (e_shstrndx) is not a string table with contents (type {}, {} bytes)",
                names.sh_type, names.size
            )),
        );
    }
    let mut out = Vec::with_capacity(e.shdrs.len());
    for i in 0..e.shdrs.len() {
        let at = e.shoff as usize + i * elf::SHENT;
        let rec = data.get(at..at + elf::SHENT).ok_or_else(|| {
            Error::at(
                at as u64,
                ErrorKind::Truncated {
                    what: "section header",
                },
            )
        })?;
        let mut b = [0u8; elf::SHENT];
        b.copy_from_slice(rec);
        out.push(b);
    }
    Ok((shstrndx, out))
}

fn set_u64(rec: &mut [u8; elf::SHENT], field: usize, v: u64) {
    rec[field..field + 8].copy_from_slice(&v.to_le_bytes());
}

/// The end of a file whose section header table is written again at `at` (the end of what
/// precedes it): `.shstrtab` with `new`'s name added (when given), zero padding to 8 and the
/// table (with `new` added). Returns those bytes and the table's offset (`e_shoff`).
fn section_table(
    at: u64,
    data: &[u8],
    e: &Elf,
    shstrndx: usize,
    mut recs: Vec<[u8; elf::SHENT]>,
    new: Option<(&str, [u8; elf::SHENT])>,
) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    if let Some((name, mut rec)) = new {
        let old = e.section_data(data, shstrndx);
        let name_at = old.len() as u32;
        out.extend_from_slice(old);
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        set_u64(&mut recs[shstrndx], 24, at);
        set_u64(&mut recs[shstrndx], 32, out.len() as u64);
        rec[0..4].copy_from_slice(&name_at.to_le_bytes());
        recs.push(rec);
    }
    let shoff = (at + out.len() as u64).next_multiple_of(8);
    out.resize((shoff - at) as usize, 0);
    for r in &recs {
        out.extend_from_slice(r);
    }
    (out, shoff)
}

/// Appends `.shstrtab` with `new`'s name added and the section header table (with `new`
/// added when given) at the end of `out`; updates the ELF header.
fn write_section_table(
    out: &mut Vec<u8>,
    data: &[u8],
    e: &Elf,
    shstrndx: usize,
    recs: Vec<[u8; elf::SHENT]>,
    new: Option<(&str, [u8; elf::SHENT])>,
) -> Result<()> {
    let count = recs.len() + usize::from(new.is_some());
    let (bytes, shoff) = section_table(out.len() as u64, data, e, shstrndx, recs, new);
    out.extend_from_slice(&bytes);
    out.put_u64(40, shoff)?;
    out.put_u16(60, count as u16)?;
    Ok(())
}

/// Where the bytes kept from `data` end when its section header table is written again at
/// the end of the output: at the old table, when it ends the file, starts at or after `from`
/// and no section's or segment's bytes reach into it (then it is dropped); else at the end of
/// the file (the old table stays, unused).
fn kept_end(e: &Elf, data: &[u8], from: u64) -> u64 {
    let len = data.len() as u64;
    let table_end = e.shoff.saturating_add((e.shdrs.len() * elf::SHENT) as u64);
    let reaches = |offset: u64, size: u64| offset.saturating_add(size) > e.shoff;
    let used = e
        .shdrs
        .iter()
        .any(|s| s.has_file_bytes() && reaches(s.offset, s.size))
        || e.phdrs
            .iter()
            .any(|p| p.filesz > 0 && reaches(p.offset, p.filesz));
    if table_end == len && e.shoff >= from && !used {
        e.shoff
    } else {
        len
    }
}

/// The wrapper slots (address of each wrapper's pointer field) of section `seg`.
fn wrapper_slot(e: &Elf, seg: usize, addr: u64) -> Option<usize> {
    let s = &e.shdrs[seg];
    let rel = addr.checked_sub(s.addr)?;
    (rel < s.size && rel % 24 == 8).then_some((rel / 24) as usize)
}

/// Splits a fat shared object or executable: see the [module documentation](self). `marker`
/// is the MessagePack marker every wrapper will point to.
pub fn split_elf(data: &[u8], marker: &[u8]) -> Result<Split> {
    let (e, fb, seg) = linked_x86_64(data)?;
    let Some(fb) = fb else {
        return fail(0, ErrorKind::Unsupported("no .hip_fatbin section".into()));
    };
    // A binary inlined from a split keeps its marker section (a split binary itself is
    // refused below, by its HIPK wrappers).
    let old_marker = e.section_named(MARKER_SECTION)?;
    let fsec = e.shdrs[fb].clone();
    // A split binary says so first (its .hip_fatbin is empty because it is split).
    if let Ok(ws) = elf::wrappers(&e, data, seg, fb) {
        if let Some(i) = ws.iter().position(|w| w.magic == elf::HIPK) {
            return fail(ws[i].at, ErrorKind::AlreadySplit { wrapper: i });
        }
    }
    if !fsec.has_file_bytes() {
        return fail(
            fsec.offset,
            ErrorKind::Unsupported(".hip_fatbin is empty".into()),
        );
    }
    let (fo, fs, fa) = (fsec.offset, fsec.size, fsec.addr);
    let old_end = fo + fs;
    let ws = elf::wrappers(&e, data, seg, fb)?;
    if ws.is_empty() {
        return fail(
            e.shdrs[seg].offset,
            ErrorKind::Unsupported(".hipFatBinSegment holds no wrapper".into()),
        );
    }
    let Some(fend) = fa.checked_add(fs) else {
        return Err(unsupported(
            fo,
            ".hip_fatbin's addresses run past the top of the address space",
        ));
    };
    let in_fatbin = |a: u64| a >= fa && a < fend;
    // The marker takes .hip_fatbin's addresses: no other section may claim them, or readers
    // mapping the marker's address through the sections would land there.
    if let Some((i, sh)) = e.shdrs.iter().enumerate().find(|&(i, sh)| {
        i != fb && sh.maps_addresses() && sh.addr < fend && sh.addr.saturating_add(sh.size) > fa
    }) {
        return Err(unsupported(
            e.shoff + (i * elf::SHENT) as u64,
            format!(
                "section {i} ({}) claims addresses of .hip_fatbin ({:#x}..{:#x})",
                if sh.name.is_empty() {
                    "unnamed"
                } else {
                    &sh.name
                },
                fa,
                fend
            ),
        ));
    }
    let mut wrapper_bundles = Vec::with_capacity(ws.len());
    for w in &ws {
        match w.magic {
            elf::HIPF => {}
            elf::HIPK => {
                let wrapper = wrapper_bundles.len();
                return fail(w.at, ErrorKind::AlreadySplit { wrapper });
            }
            m => {
                return fail(
                    w.at,
                    ErrorKind::BadElf(format!("wrapper magic {m:#010x}, expected HIPF")),
                )
            }
        }
        if let elf::PointerSource::Rela {
            at,
            relative: false,
            ..
        } = w.source
        {
            return Err(unsupported(
                at,
                "a wrapper pointer is a symbol relocation (only RELATIVE is rewritten)",
            ));
        }
        match w.target {
            Some(t) if in_fatbin(t) => wrapper_bundles.push(fo + (t - fa)),
            Some(t) => {
                return Err(unsupported(
                    w.at,
                    format!("a wrapper points to {t:#x}, outside .hip_fatbin"),
                ))
            }
            None => {
                return Err(unsupported(
                    w.at,
                    "a wrapper's bundle pointer is null and no relocation sets it",
                ))
            }
        }
    }

    // The segment holding .hip_fatbin.
    let (si, s) = layout::fatbin_segment(&e, fo, old_end, fa)?;
    if !layout::table_may_move_into(&e, &s) {
        return Err(unsupported(
            s.offset,
            "the program header table must move next to the marker, but in this \
             executable the segment holding .hip_fatbin has another address-offset \
             difference than the first segment",
        ));
    }
    let head = old_end - s.offset;
    let has_tail = s.filesz > head || s.memsz > head;
    // A `.hip_fatbin` that starts its segment (as in a binary `inline_elf` made) leaves no
    // part before it to keep.
    let has_head = fo > s.offset;
    let n_phdrs = e.phdrs.len() + usize::from(has_head) + usize::from(has_tail);
    let table_len = (n_phdrs * elf::PHENT) as u64;
    // `.hip_fatbin` lies inside the file, so these stay far below `u64::MAX`.
    let m_off = fo.next_multiple_of(8);
    let t_off = (m_off + marker.len() as u64).next_multiple_of(8);
    let t_end = t_off + table_len;
    if t_end > old_end {
        return Err(unsupported(
            fo,
            format!(
                ".hip_fatbin ({fs} bytes) is too small to hold the marker ({} bytes) and the \
                 program header table ({table_len} bytes)",
                marker.len()
            ),
        ));
    }
    // Everything after .hip_fatbin moves down by a multiple of every later alignment.
    let mut unit = 4096u64.max(s.align);
    for sh in &e.shdrs {
        if sh.offset >= old_end {
            unit = unit.max(sh.addralign);
        }
    }
    for p in &e.phdrs {
        if p.offset >= old_end {
            unit = unit.max(p.align);
        }
    }
    let shift = (old_end - t_end) / unit * unit;
    let m_va = s.vaddr.wrapping_add(m_off - s.offset);
    let moved = layout::Moved {
        fo,
        end: old_end,
        down: shift,
        up: 0,
    };

    // Patches at input offsets.
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    for (k, w) in ws.iter().enumerate() {
        patches.push((w.at, elf::HIPK.to_le_bytes().to_vec()));
        patches.push((w.at + 16, (k as u64).to_le_bytes().to_vec()));
        let in_place = w.pointer;
        if in_place != 0 && in_fatbin(in_place) {
            patches.push((w.at + 8, m_va.to_le_bytes().to_vec()));
        }
    }
    // Relocations: RELATIVE addends into .hip_fatbin must be wrapper pointers.
    for (ri, r) in e.shdrs.iter().enumerate() {
        if r.sh_type != elf::SHT_RELA {
            continue;
        }
        let syms = elf::linked_symbols(&e, data, r)?.unwrap_or_default();
        for rel in elf::relas(&e, data, ri)? {
            let slot = wrapper_slot(&e, seg, rel.r_offset);
            let what = format!("relocation {} of {}", rel.index, r.name);
            if rel.r_type == elf::R_X86_64_RELATIVE {
                if in_fatbin(rel.addend as u64) {
                    if slot.is_none() {
                        return Err(unsupported(
                            rel.at,
                            format!("{what} points into .hip_fatbin but not from a wrapper"),
                        ));
                    }
                    patches.push((rel.at + 16, m_va.to_le_bytes().to_vec()));
                }
                continue;
            }
            if rel.r_sym == 0 {
                continue;
            }
            if let Some(sym) = syms.get(rel.r_sym as usize) {
                if sym.shndx as usize == fb {
                    return Err(unsupported(
                        rel.at,
                        format!("{what} refers to a symbol in .hip_fatbin (only RELATIVE relocations and in-place pointers are rewritten)"),
                    ));
                }
            }
        }
    }
    // Symbols in .hip_fatbin: at its (unchanged) address, now empty.
    for (_, _, sym) in elf::symbols_in(&e, data, fb)? {
        patches.push((sym.at + 8, fa.to_le_bytes().to_vec()));
        patches.push((sym.at + 16, 0u64.to_le_bytes().to_vec()));
    }

    // Program headers.
    let mut phdrs: Vec<Phdr> = Vec::with_capacity(n_phdrs);
    for (i, p) in e.phdrs.iter().enumerate() {
        if i == si {
            if has_head {
                phdrs.push(Phdr {
                    filesz: fo - s.offset,
                    memsz: fo - s.offset,
                    ..s
                });
            }
            phdrs.push(Phdr {
                p_type: elf::PT_LOAD,
                flags: PF_R,
                offset: m_off,
                vaddr: m_va,
                paddr: s.paddr.wrapping_add(m_off - s.offset),
                filesz: t_end - m_off,
                memsz: t_end - m_off,
                align: s.align,
            });
            if has_tail {
                phdrs.push(Phdr {
                    offset: old_end - shift,
                    vaddr: s.vaddr.wrapping_add(head),
                    paddr: s.paddr.wrapping_add(head),
                    filesz: s.filesz.saturating_sub(head),
                    memsz: s.memsz.saturating_sub(head),
                    ..s
                });
            }
            continue;
        }
        let mut q = *p;
        if e.describes_table(&q) {
            q.offset = t_off;
            q.vaddr = m_va.wrapping_add(t_off - m_off);
            q.paddr = q.vaddr;
            q.filesz = table_len;
            q.memsz = table_len;
        } else if q.offset >= old_end {
            q.offset -= shift;
        }
        phdrs.push(q);
    }

    // Section headers.
    let (shstrndx, mut recs) = raw_shdrs(&e, data)?;
    for (i, sh) in e.shdrs.iter().enumerate() {
        if i == fb {
            set_u64(&mut recs[i], 32, 0);
        } else if sh.offset >= old_end {
            set_u64(&mut recs[i], 24, sh.offset - shift);
        } else if sh.has_file_bytes() && sh.offset + sh.size > fo {
            return Err(unsupported(
                sh.offset,
                format!("section {} overlaps .hip_fatbin", sh.name),
            ));
        }
    }
    let mut marker_rec = [0u8; elf::SHENT];
    marker_rec[4..8].copy_from_slice(&SHT_PROGBITS.to_le_bytes());
    set_u64(&mut marker_rec, 8, elf::SHF_ALLOC);
    set_u64(&mut marker_rec, 16, m_va);
    set_u64(&mut marker_rec, 24, m_off);
    set_u64(&mut marker_rec, 32, marker.len() as u64);
    set_u64(&mut marker_rec, 48, 1);
    // An old marker section gives its header (and name) to the new marker; its bytes stay
    // where they are, unreferenced.
    let new_section = match old_marker {
        Some(m) => {
            marker_rec[0..4].copy_from_slice(&recs[m][0..4]);
            recs[m] = marker_rec;
            None
        }
        None => Some((MARKER_SECTION, marker_rec)),
    };

    // The section header table is written again at the end.
    let tail_end = kept_end(&e, data, old_end);
    let mut out = Vec::with_capacity((tail_end - shift) as usize + 4096);
    out.extend_from_slice(&data[..fo as usize]);
    out.resize(m_off as usize, 0);
    out.extend_from_slice(marker);
    out.resize(t_off as usize, 0);
    for p in &phdrs {
        out.extend_from_slice(&p.encode());
    }
    out.resize((old_end - shift) as usize, 0);
    out.extend_from_slice(&data[old_end as usize..tail_end as usize]);
    for (at, bytes) in &patches {
        out.put(moved.map(*at)?, bytes)?;
    }
    // The old program header table is no longer used.
    out.zero(moved.map(e.phoff)?, e.phdrs.len() * elf::PHENT)?;
    out.put_u64(32, t_off)?;
    out.put_u16(56, phdrs.len() as u16)?;
    write_section_table(&mut out, data, &e, shstrndx, recs, new_section)?;
    Ok(Split {
        bytes: out,
        wrapper_bundles,
        marker_offset: m_off,
        marker_address: m_va,
        shift,
    })
}

/// The `HIPK` wrappers of a split binary, in `.hipFatBinSegment` order: (file offset of the
/// record, its u32 index at +16, the marker's file offset when the pointer resolves).
pub fn hipk_wrappers(data: &[u8]) -> Result<Vec<(u64, u32, Option<u64>)>> {
    let (e, fb, seg) = linked_x86_64(data)?;
    let ws = elf::wrappers(&e, data, seg, fb.unwrap_or(usize::MAX))?;
    let mut out = Vec::new();
    for w in ws {
        if w.magic != elf::HIPK {
            return fail(
                w.at,
                ErrorKind::Unsupported(format!(
                    "wrapper magic {:#010x}, expected HIPK (not a split binary)",
                    w.magic
                )),
            );
        }
        let index = w.reserved as u32;
        let fo = w.target.and_then(|a| {
            e.shdrs.iter().find_map(|s| {
                (s.has_file_bytes() && s.addr != 0 && a >= s.addr && a < s.addr + s.size)
                    .then(|| s.offset + (a - s.addr))
            })
        });
        out.push((w.at, index, fo));
    }
    Ok(out)
}

/// Inlines a split binary: `bundles[k]` is the bundle wrapper `k` (in `.hipFatBinSegment`
/// order) will point to. Bundles are placed at `align`-aligned offsets in a new
/// `.hip_fatbin` inside a new read-only segment after the last one.
///
/// Only the bundles' lengths are needed to lay the file out: the result is an [`Output`] that
/// borrows the split binary and takes each bundle as given (a [`crate::output::Deferred`]
/// bundle is made only when the output is written).
pub fn inline_elf<'a>(data: &'a [u8], bundles: Vec<Output<'a>>, align: u64) -> Result<Output<'a>> {
    let (e, fb, seg) = linked_x86_64(data)?;
    let Some(fb) = fb else {
        return fail(
            0,
            ErrorKind::Unsupported("no .hip_fatbin section to refill".into()),
        );
    };
    let ws = elf::wrappers(&e, data, seg, fb)?;
    if ws.len() != bundles.len() {
        return fail(
            e.shdrs[seg].offset,
            ErrorKind::Unsupported(format!(
                "{} wrappers but {} bundles",
                ws.len(),
                bundles.len()
            )),
        );
    }
    let align = align.clamp(1, 1 << 16);
    // Where each bundle goes in the new section.
    let mut offsets = Vec::with_capacity(bundles.len());
    let mut ns = 0u64;
    for b in &bundles {
        let at = ns.next_multiple_of(align);
        offsets.push(at);
        ns = at
            .checked_add(b.len())
            .ok_or_else(|| unsupported(0, "the inlined bundles pass 2^64 bytes"))?;
    }
    let body_end = kept_end(&e, data, 0);
    let n_phdrs = e.phdrs.len() + 1;
    let table_len = (n_phdrs * elf::PHENT) as u64;
    let seg_len = ns.next_multiple_of(8) + table_len;
    let Placement {
        offset,
        vaddr,
        align: unit,
        after: last_i,
    } = segment::place(
        &e,
        data,
        &Request {
            body_end,
            section_align: align,
            len: seg_len,
            holds_table: true,
            what: "the inlined .hip_fatbin",
        },
    )?;
    // `offset` is a multiple of 4096: the table right after the section is 8-aligned.
    let t_off = offset + ns.next_multiple_of(8);
    let mut phdrs = e.phdrs.clone();
    phdrs.insert(
        last_i + 1,
        Phdr {
            p_type: elf::PT_LOAD,
            flags: PF_R,
            offset,
            vaddr,
            paddr: vaddr,
            filesz: seg_len,
            memsz: seg_len,
            align: unit,
        },
    );
    for p in phdrs.iter_mut() {
        if e.describes_table(p) {
            p.offset = t_off;
            p.vaddr = vaddr + (t_off - offset);
            p.paddr = p.vaddr;
            p.filesz = table_len;
            p.memsz = table_len;
        }
    }
    let marker = e.section_named(MARKER_SECTION)?;
    let marker_range = marker.map(|m| (e.shdrs[m].addr, e.shdrs[m].addr + e.shdrs[m].size.max(1)));
    let is_marker = |a: u64| marker_range.is_some_and(|(s, t)| a >= s && a < t);

    let mut out = Output::of(&data[..body_end as usize]);
    // Old program header table: no longer used.
    out.zero(e.phoff, e.phdrs.len() * elf::PHENT)?;
    for (b, at) in bundles.into_iter().zip(&offsets) {
        out.pad_to(offset + at)?;
        out.append(b);
    }
    out.pad_to(t_off)?;
    let mut table = Vec::with_capacity(table_len as usize);
    for p in &phdrs {
        table.extend_from_slice(&p.encode());
    }
    out.push(table);
    out.put_u64(32, t_off)?;
    out.put_u16(56, phdrs.len() as u16)?;
    for (k, w) in ws.iter().enumerate() {
        if w.magic != elf::HIPK {
            return fail(
                w.at,
                ErrorKind::Unsupported(format!(
                    "wrapper magic {:#010x}, expected HIPK (not a split binary)",
                    w.magic
                )),
            );
        }
        let target = vaddr + offsets[k];
        out.put(w.at, &elf::HIPF.to_le_bytes())?;
        out.put_u64(w.at + 16, 0)?;
        if w.pointer != 0 {
            out.put_u64(w.at + 8, target)?;
        }
        if let elf::PointerSource::Rela { at, relative, .. } = w.source {
            if !relative {
                return Err(unsupported(
                    at,
                    "a wrapper pointer is a symbol relocation (only RELATIVE is rewritten)",
                ));
            }
            out.put_u64(at + 16, target)?;
        } else if w.pointer == 0 {
            return Err(unsupported(
                w.at,
                "a wrapper pointer is null and not relocated",
            ));
        }
        if let Some(t) = w.target {
            if !is_marker(t) && marker.is_some() {
                return Err(unsupported(
                    w.at,
                    format!("a wrapper points to {t:#x}, not into {MARKER_SECTION}"),
                ));
            }
        }
    }
    // Symbols in .hip_fatbin cover the new section.
    for (_, _, sym) in elf::symbols_in(&e, data, fb)? {
        out.put_u64(sym.at + 8, vaddr)?;
        out.put_u64(sym.at + 16, ns)?;
    }
    let (shstrndx, mut recs) = raw_shdrs(&e, data)?;
    set_u64(&mut recs[fb], 16, vaddr);
    set_u64(&mut recs[fb], 24, offset);
    set_u64(&mut recs[fb], 32, ns);
    set_u64(&mut recs[fb], 48, align);
    // TheRock's splitter leaves .hip_fatbin as SHT_NOBITS: it holds bytes again.
    recs[fb][4..8].copy_from_slice(&SHT_PROGBITS.to_le_bytes());
    let count = recs.len() as u16;
    let (tail, shoff) = section_table(out.len(), data, &e, shstrndx, recs, None);
    out.push(tail);
    out.put_u64(40, shoff)?;
    out.put_u16(60, count)?;
    Ok(out)
}
