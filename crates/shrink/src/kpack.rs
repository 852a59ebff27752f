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

use crate::edit::{self, Edit, Field, SectionTable};
use crate::elf::{self, Elf, Phdr};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::layout;
use crate::output::Output;
use crate::segment::{self, Placement, Request};
use gfxkit_bytes::Cursor;
use gfxkit_host::WrapperMagic;

/// Name of the marker section.
pub const MARKER_SECTION: &str = ".rocm_kpack_ref";

use object::elf::{PF_R, SHT_PROGBITS};

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
    if crate::pe::is_pe_or_coff(data) {
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
    if let Some(s) = e.shdrs.iter().find(|s| {
        s.name == ".llvm.offloading" || s.name.starts_with(gfxkit_bundle::object::SECTION_PREFIX)
    }) {
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

fn set_u64(rec: &mut [u8; elf::SHENT], field: usize, v: u64) {
    rec[field..field + 8].copy_from_slice(&v.to_le_bytes());
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
        if let Some(i) = ws.iter().position(|w| w.magic == WrapperMagic::HIPK) {
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
    fatbin_addresses_free(&e, fb, fa, fend)?;
    let wrapper_bundles = wrapper_bundles(&ws, fo, fa, fend)?;
    // The segment holding .hip_fatbin, and where the marker and the program header table go.
    let (si, s) = layout::fatbin_segment(&e, fo, old_end, fa)?;
    let placed = place_marker(&e, &s, fo, fs, marker.len() as u64)?;
    let Placed {
        m_off,
        t_off,
        shift,
        ..
    } = placed;
    let m_va = s.vaddr.wrapping_add(m_off - s.offset);
    let moved = layout::Moved {
        fo,
        end: old_end,
        down: shift,
        up: 0,
    };

    // The section header table is written again at the end: the input is kept up to it.
    let tail_end = edit::kept_end(&e, data, old_end);
    let mut edit = Edit::new(&e, data, fb, Some(moved), SectionTable::AtEnd { new: None });
    for (k, w) in ws.iter().enumerate() {
        edit.patch(w.at, &WrapperMagic::HIPK.to_le_bytes());
        edit.patch_u64(w.at + 16, k as u64);
        let in_place = w.pointer;
        if in_place != 0 && in_fatbin(in_place) {
            edit.patch_u64(w.at + 8, m_va);
        }
    }
    patch_relocations(&e, data, seg, fb, (fa, fend), m_va, &mut edit)?;
    // Symbols in .hip_fatbin: at its (unchanged) address, now empty.
    for (_, _, sym) in elf::symbols_in(&e, data, fb)? {
        edit.patch_u64(sym.at + 8, fa);
        edit.patch_u64(sym.at + 16, 0);
    }

    // Program headers: the segment split around the marker and the table after it.
    let mut phdrs = split_program_headers(&e, (si, &s), fo, m_va, &placed);
    let t_va = m_va.wrapping_add(t_off - m_off);
    edit::describe_table(&e, &mut phdrs, Some((t_off, t_va, t_va)));
    edit.set_program_headers(phdrs, t_off, true);

    // Section headers: .hip_fatbin emptied, the marker added (or given the header of an old
    // marker, whose bytes stay where they are, unreferenced).
    edit.set_section(fb, Field::Size, 0);
    let marker_rec = marker_record(m_va, m_off, marker.len() as u64);
    match old_marker {
        Some(m) => {
            let mut rec = marker_rec;
            let name = Cursor::new(data).array::<4>(e.shoff + (m * elf::SHENT) as u64)?;
            rec[0..4].copy_from_slice(&name);
            edit.replace_section(m, rec);
        }
        None => edit.set_new_section(MARKER_SECTION, marker_rec),
    }

    // The bytes: the input up to .hip_fatbin, the marker, the table's place, the rest moved
    // down.
    edit.out.push(&data[..fo as usize]);
    edit.out.pad_to(m_off)?;
    edit.out.push(marker);
    edit.out.pad_to(old_end - shift)?;
    edit.out.push(&data[old_end as usize..tail_end as usize]);
    let out = edit.finish()?;
    Ok(Split {
        bytes: out.to_vec(),
        wrapper_bundles,
        marker_offset: m_off,
        marker_address: m_va,
        shift,
    })
}

/// Refuses a binary where another section claims `.hip_fatbin`'s addresses (`fa..fend`),
/// which the marker takes: readers mapping the marker's address through the sections would
/// land there.
fn fatbin_addresses_free(e: &Elf, fb: usize, fa: u64, fend: u64) -> Result<()> {
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
    Ok(())
}

/// For each wrapper (all `HIPF`, each pointer a RELATIVE relocation or in place), the file
/// offset of the bundle it points to inside `.hip_fatbin` (file offset `fo`, addresses
/// `fa..fend`).
fn wrapper_bundles(ws: &[elf::Wrapper], fo: u64, fa: u64, fend: u64) -> Result<Vec<u64>> {
    let in_fatbin = |a: u64| a >= fa && a < fend;
    let mut wrapper_bundles = Vec::with_capacity(ws.len());
    for w in ws {
        match w.magic {
            WrapperMagic::HIPF => {}
            WrapperMagic::HIPK => {
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
    Ok(wrapper_bundles)
}

/// Points every RELATIVE addend into `.hip_fatbin` (addresses `fatbin`) at the marker
/// (`m_va`); refuses one that does not come from a wrapper and a symbol relocation into
/// `.hip_fatbin`.
fn patch_relocations(
    e: &Elf,
    data: &[u8],
    seg: usize,
    fb: usize,
    fatbin: (u64, u64),
    m_va: u64,
    edit: &mut Edit<'_, '_>,
) -> Result<()> {
    let in_fatbin = |a: u64| a >= fatbin.0 && a < fatbin.1;
    // Relocations: RELATIVE addends into .hip_fatbin must be wrapper pointers.
    for (ri, r) in e.shdrs.iter().enumerate() {
        if r.sh_type != elf::SHT_RELA {
            continue;
        }
        let syms = elf::linked_symbols(e, data, r)?.unwrap_or_default();
        for rel in elf::relas(e, data, ri)? {
            let slot = wrapper_slot(e, seg, rel.r_offset);
            let what = format!("relocation {} of {}", rel.index, r.name);
            if rel.r_type == elf::R_X86_64_RELATIVE {
                if in_fatbin(rel.addend as u64) {
                    if slot.is_none() {
                        return Err(unsupported(
                            rel.at,
                            format!("{what} points into .hip_fatbin but not from a wrapper"),
                        ));
                    }
                    edit.patch_u64(rel.at + 16, m_va);
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
    Ok(())
}

/// The program headers after the split: segment `si` (`s`) cut around `.hip_fatbin` (file
/// offset `fo`) into the part before it, the marker's read-only segment at address `m_va`
/// (with the table after the marker) and the part after it; later segments moved down.
fn split_program_headers(
    e: &Elf,
    (si, s): (usize, &Phdr),
    fo: u64,
    m_va: u64,
    p: &Placed,
) -> Vec<Phdr> {
    let mut phdrs: Vec<Phdr> = Vec::with_capacity(e.phdrs.len() + 2);
    for (i, q) in e.phdrs.iter().enumerate() {
        if i == si {
            if p.has_head {
                phdrs.push(Phdr {
                    filesz: fo - s.offset,
                    memsz: fo - s.offset,
                    ..*s
                });
            }
            phdrs.push(Phdr {
                p_type: elf::PT_LOAD,
                flags: PF_R,
                offset: p.m_off,
                vaddr: m_va,
                paddr: s.paddr.wrapping_add(p.m_off - s.offset),
                filesz: p.t_end - p.m_off,
                memsz: p.t_end - p.m_off,
                align: s.align,
            });
            if p.has_tail {
                phdrs.push(Phdr {
                    offset: p.old_end - p.shift,
                    vaddr: s.vaddr.wrapping_add(p.head),
                    paddr: s.paddr.wrapping_add(p.head),
                    filesz: s.filesz.saturating_sub(p.head),
                    memsz: s.memsz.saturating_sub(p.head),
                    ..*s
                });
            }
            continue;
        }
        let mut q = *q;
        if !e.describes_table(&q) && q.offset >= p.old_end {
            q.offset -= p.shift;
        }
        phdrs.push(q);
    }
    phdrs
}

/// Where a split puts things in the segment `s` holding `.hip_fatbin` (file offset `fo`,
/// `fs` bytes): the marker (`marker_len` bytes), the program header table after it, and how
/// far everything after `.hip_fatbin` moves down. Refuses an executable whose table cannot
/// move there and a `.hip_fatbin` too small for both.
fn place_marker(e: &Elf, s: &Phdr, fo: u64, fs: u64, marker_len: u64) -> Result<Placed> {
    let old_end = fo + fs;
    if !layout::table_may_move_into(e, s) {
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
    let t_off = (m_off + marker_len).next_multiple_of(8);
    let t_end = t_off + table_len;
    if t_end > old_end {
        return Err(unsupported(
            fo,
            format!(
                ".hip_fatbin ({fs} bytes) is too small to hold the marker ({} bytes) and the \
                 program header table ({table_len} bytes)",
                marker_len
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
    Ok(Placed {
        old_end,
        head,
        has_head,
        has_tail,
        m_off,
        t_off,
        t_end,
        shift,
    })
}

/// Where [`place_marker`] puts the marker and the program header table.
#[derive(Debug, Clone, Copy)]
struct Placed {
    /// The end of `.hip_fatbin` in the input.
    old_end: u64,
    /// Bytes of the segment up to the end of `.hip_fatbin`.
    head: u64,
    /// Whether the segment has a part before `.hip_fatbin` to keep.
    has_head: bool,
    /// Whether it has a part after it.
    has_tail: bool,
    /// The marker's file offset.
    m_off: u64,
    /// The program header table's file offset.
    t_off: u64,
    /// Its end.
    t_end: u64,
    /// How far everything after `.hip_fatbin` moves down in the file.
    shift: u64,
}

/// The section header of the marker (`len` bytes at file offset `m_off`, address `m_va`),
/// its name left to the caller.
fn marker_record(m_va: u64, m_off: u64, len: u64) -> [u8; elf::SHENT] {
    let mut marker_rec = [0u8; elf::SHENT];
    marker_rec[4..8].copy_from_slice(&SHT_PROGBITS.to_le_bytes());
    set_u64(&mut marker_rec, 8, elf::SHF_ALLOC);
    set_u64(&mut marker_rec, 16, m_va);
    set_u64(&mut marker_rec, 24, m_off);
    set_u64(&mut marker_rec, 32, len);
    set_u64(&mut marker_rec, 48, 1);
    marker_rec
}

/// The `HIPK` wrappers of a split binary, in `.hipFatBinSegment` order: (file offset of the
/// record, its u32 index at +16, the marker's file offset when the pointer resolves).
pub fn hipk_wrappers(data: &[u8]) -> Result<Vec<(u64, u32, Option<u64>)>> {
    let (e, fb, seg) = linked_x86_64(data)?;
    let ws = elf::wrappers(&e, data, seg, fb.unwrap_or(usize::MAX))?;
    let mut out = Vec::new();
    for w in ws {
        if w.magic != WrapperMagic::HIPK {
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
    let body_end = edit::kept_end(&e, data, 0);
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
    let t_va = vaddr + (t_off - offset);
    edit::describe_table(&e, &mut phdrs, Some((t_off, t_va, t_va)));
    let marker = e.section_named(MARKER_SECTION)?;
    let marker_range = marker.map(|m| (e.shdrs[m].addr, e.shdrs[m].addr + e.shdrs[m].size.max(1)));
    let is_marker = |a: u64| marker_range.is_some_and(|(s, t)| a >= s && a < t);

    // Nothing the split binary holds moves: the new segment follows its bytes.
    let mut edit = Edit::new(&e, data, fb, None, SectionTable::AtEnd { new: None });
    edit.out.push(&data[..body_end as usize]);
    for (b, at) in bundles.into_iter().zip(&offsets) {
        edit.out.pad_to(offset + at)?;
        edit.out.append(b);
    }
    edit.out.pad_to(t_off + table_len)?;
    edit.set_program_headers(phdrs, t_off, true);
    for (k, w) in ws.iter().enumerate() {
        if w.magic != WrapperMagic::HIPK {
            return fail(
                w.at,
                ErrorKind::Unsupported(format!(
                    "wrapper magic {:#010x}, expected HIPK (not a split binary)",
                    w.magic
                )),
            );
        }
        let target = vaddr + offsets[k];
        edit.patch(w.at, &WrapperMagic::HIPF.to_le_bytes());
        edit.patch_u64(w.at + 16, 0);
        if w.pointer != 0 {
            edit.patch_u64(w.at + 8, target);
        }
        if let elf::PointerSource::Rela { at, relative, .. } = w.source {
            if !relative {
                return Err(unsupported(
                    at,
                    "a wrapper pointer is a symbol relocation (only RELATIVE is rewritten)",
                ));
            }
            edit.patch_u64(at + 16, target);
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
        edit.patch_u64(sym.at + 8, vaddr);
        edit.patch_u64(sym.at + 16, ns);
    }
    edit.set_section(fb, Field::Addr, vaddr);
    edit.set_section(fb, Field::Offset, offset);
    edit.set_section(fb, Field::Size, ns);
    edit.set_section(fb, Field::Align, align);
    // TheRock's splitter leaves .hip_fatbin as SHT_NOBITS: it holds bytes again.
    edit.set_section(fb, Field::Type, u64::from(SHT_PROGBITS));
    edit.finish()
}
