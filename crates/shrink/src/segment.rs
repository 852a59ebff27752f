//! Placing a new read-only `PT_LOAD` after the last segment of a linked file: the one rule
//! shared by a `.hip_fatbin` that grows in a rewrite ([`crate::rewrite`]) and by the
//! `.hip_fatbin` an inlined kpack split gets back ([`crate::kpack::inline_elf`]).
//!
//! The segment starts at the end of the file's kept bytes and above every address a segment or
//! a section claims (readers map an address to the file through the section holding it before
//! the segments, so a new segment must not reuse addresses a section still names) or a
//! `RELATIVE` relocation stores. Both are
//! rounded to the segment's alignment: 4096, the new section's, and every `PT_LOAD`'s. When the
//! program header table moves into the new segment of an executable, kernels before 5.18 find
//! it as the first segment's load address + `e_phoff`, so the new segment must have the first
//! segment's address-offset difference; the file is padded (up to [`MAX_RELOCATION_PAD`]) to
//! reach an offset where that holds.

use crate::elf::{self, Elf};
use crate::error::{Error, ErrorKind, Result};
use crate::patch::align_up;

/// Most zero bytes a new segment may pad the file with to satisfy an executable's
/// address-offset rule.
pub(crate) const MAX_RELOCATION_PAD: u64 = 64 << 20;

/// Where a new segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Its file offset, a multiple of `align`.
    pub offset: u64,
    /// Its address, congruent to `offset` modulo `align`.
    pub vaddr: u64,
    /// Its `p_align`.
    pub align: u64,
    /// Index in the program header table of the last `PT_LOAD`: the new header goes after it.
    pub after: usize,
}

/// What the new segment must satisfy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'s> {
    /// Where the bytes the output keeps from the input end (the segment starts after them).
    pub body_end: u64,
    /// The new section's alignment.
    pub section_align: u64,
    /// The segment's length (file and memory).
    pub len: u64,
    /// Whether the program header table of an executable moves into the segment, which then
    /// needs the first segment's address-offset difference.
    pub holds_table: bool,
    /// What needs the segment, for messages ("the grown .hip_fatbin").
    pub what: &'s str,
}

fn unsupported(msg: impl Into<String>) -> Error {
    Error::at(32, ErrorKind::Unsupported(msg.into()))
}

/// Places a new read-only segment in `e` (the headers of `data`), or refuses with the reason: a program header table
/// that cannot take one more entry, no loadable segment, addresses that would pass the top of the address
/// space, or an executable whose table cannot be kept where older kernels look for it.
pub(crate) fn place(e: &Elf, data: &[u8], r: &Request) -> Result<Placement> {
    if e.phnum_raw == 0xffff || e.phdrs.len() + 1 >= 0xffff {
        return Err(unsupported("too many program headers to add one (PN_XNUM)"));
    }
    let loads = e.loads();
    let (Some(&(_, first)), Some(&(after, _))) = (loads.first(), loads.last()) else {
        return Err(unsupported("no loadable segment"));
    };
    let top = || unsupported("segments reach the top of the address space");
    let mut align = 4096u64.max(r.section_align);
    let mut max_end = 0u64;
    for (_, p) in &loads {
        align = align.max(p.align);
        max_end = max_end.max(p.vaddr.saturating_add(p.memsz));
    }
    for sh in &e.shdrs {
        if sh.addr != 0 {
            max_end = max_end.max(sh.addr.saturating_add(sh.size));
        }
    }
    // And above every address a RELATIVE relocation stores: rewriting and splitting tell a
    // pointer into `.hip_fatbin` by its addend, so none may come to lie in the new section
    // (a pointer to one past the end, `_end`, included). Negative addends point nowhere.
    for (i, sh) in e.shdrs.iter().enumerate() {
        if sh.sh_type != elf::SHT_RELA {
            continue;
        }
        for rel in elf::relas(e, data, i)? {
            if rel.r_type == elf::R_X86_64_RELATIVE && rel.addend >= 0 {
                max_end = max_end.max((rel.addend as u64).saturating_add(1));
            }
        }
    }
    let file_end = align_up(r.body_end, align).ok_or_else(top)?;
    let mut offset = file_end;
    let mut vaddr = align_up(max_end, align).ok_or_else(top)?;
    let interp = e.phdrs.iter().any(|p| p.p_type == elf::PT_INTERP);
    if interp && r.holds_table {
        let d0 = first.vaddr.wrapping_sub(first.offset);
        if d0 % align != 0 {
            return Err(unsupported(format!(
                "{} needs a new segment and the program header table must move into it, but \
                 this executable's first segment has an unaligned address-offset difference",
                r.what
            )));
        }
        if offset.wrapping_add(d0) < vaddr {
            offset = align_up(vaddr.wrapping_sub(d0), align).ok_or_else(top)?;
        }
        vaddr = offset.wrapping_add(d0);
        if !offset
            .checked_sub(file_end)
            .is_some_and(|pad| pad <= MAX_RELOCATION_PAD)
        {
            return Err(unsupported(format!(
                "{} would need more than 64 MiB of padding to keep this executable's program \
                 headers where older kernels look for them",
                r.what
            )));
        }
    }
    if vaddr.checked_add(r.len).is_none() || offset.checked_add(r.len).is_none() {
        return Err(top());
    }
    Ok(Placement {
        offset,
        vaddr,
        align,
        after,
    })
}
