//! The structural rules a rewrite relies on and keeps: every program header inside the file and
//! congruent to its address, every `.hipFatBinSegment` wrapper leading to the start of a bundle
//! and every bundle led to by a wrapper.
//!
//! Each rule has one implementation, used twice: [`rewrite()`](crate::rewrite()) refuses an
//! input that already breaks one (the rewrite could not produce a file that keeps it), and
//! [`verify()`](crate::verify()) checks every rewritten file against them.

use crate::elf::{self, Elf, Wrapper, PHENT};
use crate::error::{Error, ErrorKind, Result};
pub use crate::error::{SegmentProblem, WrapperProblem};

/// Checks the program headers of the ELF file `data` by the rules of `segments`: how
/// `gfxkit kpack split` and `inline` check what they made.
pub fn elf_segments(data: &[u8]) -> Result<()> {
    let e = Elf::parse(data)?;
    segments(&e, data.len() as u64)
}

/// Checks every program header of `e` (a file of `file_size` bytes): none runs past the end
/// of the file, and every loadable one stays below the top of the address space, maps no more
/// file bytes than memory and keeps `p_offset ≡ p_vaddr (mod p_align)`. The error is at the program header and names it.
pub(crate) fn segments(e: &Elf, file_size: u64) -> Result<()> {
    for (index, p) in e.phdrs.iter().enumerate() {
        let problem = if p.filesz > 0
            && p.offset
                .checked_add(p.filesz)
                .map_or(true, |end| end > file_size)
        {
            SegmentProblem::PastTheEnd {
                offset: p.offset,
                filesz: p.filesz,
                file_size,
            }
        } else if p.p_type != elf::PT_LOAD {
            continue;
        } else if p.vaddr.checked_add(p.memsz).is_none() {
            SegmentProblem::PastTheTop {
                vaddr: p.vaddr,
                memsz: p.memsz,
            }
        } else if p.align > 1 && p.offset % p.align != p.vaddr % p.align {
            SegmentProblem::Incongruent {
                offset: p.offset,
                vaddr: p.vaddr,
                align: p.align,
            }
        } else if p.filesz > p.memsz {
            SegmentProblem::FileszOverMemsz {
                filesz: p.filesz,
                memsz: p.memsz,
            }
        } else {
            continue;
        };
        let at = e.phoff.saturating_add((index * PHENT) as u64);
        return Err(Error::at(at, ErrorKind::Segment { index, problem }));
    }
    Ok(())
}

/// The bundle wrapper `index` (a `HIPF` one) leads to: `bundle_at` maps an offset in
/// `.hip_fatbin` to the index of the bundle starting there. `base` is the address of
/// `.hip_fatbin` (0 in relocatable objects, whose pointers are section-relative). The error is
/// at the wrapper.
pub(crate) fn wrapper_target(
    index: usize,
    w: &Wrapper,
    base: u64,
    bundle_at: impl Fn(u64) -> Option<usize>,
) -> Result<usize> {
    let problem = match w.target {
        None => WrapperProblem::Null,
        Some(t) => match t.checked_sub(base).and_then(&bundle_at) {
            Some(k) => return Ok(k),
            None => WrapperProblem::NoBundle { target: t },
        },
    };
    Err(Error::at(w.at, ErrorKind::Wrapper { index, problem }))
}

/// Checks that a wrapper leads to every bundle: `pointed[k]` says whether one leads to bundle
/// `k`, which starts at file offset `offset(k)`. The error is at the first bundle left out.
pub(crate) fn every_bundle_pointed(pointed: &[bool], offset: impl Fn(usize) -> u64) -> Result<()> {
    match pointed.iter().position(|p| !p) {
        None => Ok(()),
        Some(bundle) => Err(Error::at(
            offset(bundle),
            ErrorKind::UnreferencedBundle { bundle },
        )),
    }
}
