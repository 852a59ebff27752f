//! The layout rules every rewrite of `.hip_fatbin` in a linked file keeps, checked in one place
//! for prune and recompress ([`crate::rewrite`]) and for the kpack split and inline
//! ([`crate::kpack`]): the segment that holds the section, no other program header over it,
//! where the program header table may move, and how file offsets after the section move.
//! The new segment after the last one has its own rule ([`crate::segment::place`]); the plans
//! are written by [`crate::edit::Edit`].

use crate::elf::{self, Elf, Phdr};
use crate::error::{Error, ErrorKind, Result};

fn unsupported(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Unsupported(msg.into()))
}

/// The loadable segment holding `.hip_fatbin` (file bytes `fo..end` at address `addr`), with
/// its index. Refused when no `PT_LOAD` holds the section's bytes, when the section's address
/// and offset disagree with the segment's, or when another program header's file bytes meet
/// the section's (another segment first, then any other header).
pub(crate) fn fatbin_segment(e: &Elf, fo: u64, end: u64, addr: u64) -> Result<(usize, Phdr)> {
    let loads = e.loads();
    let Some(&(si, seg)) = loads
        .iter()
        .find(|(_, p)| p.offset <= fo && end <= p.offset.saturating_add(p.filesz))
    else {
        return Err(unsupported(
            fo,
            ".hip_fatbin is not inside a loadable segment (PT_LOAD)",
        ));
    };
    if addr.wrapping_sub(seg.vaddr) != fo - seg.offset {
        return Err(unsupported(
            fo,
            ".hip_fatbin's address and file offset disagree with its segment",
        ));
    }
    let meets = |p: &Phdr| p.filesz > 0 && p.offset < end && p.offset.saturating_add(p.filesz) > fo;
    if let Some((i, p)) = loads.iter().find(|(i, p)| *i != si && meets(p)) {
        return Err(unsupported(
            p.offset,
            format!("segment {i} overlaps the segment holding .hip_fatbin"),
        ));
    }
    if let Some((i, p)) = e
        .phdrs
        .iter()
        .enumerate()
        .find(|(i, p)| *i != si && p.p_type != elf::PT_LOAD && meets(p))
    {
        return Err(unsupported(
            p.offset,
            format!(
                "program header {i} (type {:#x}) overlaps .hip_fatbin",
                p.p_type
            ),
        ));
    }
    Ok((si, *seg))
}

/// Whether the program header table may move into a segment with `seg`'s address-offset
/// difference: always in a shared object; in an executable started by the kernel
/// (`PT_INTERP`) only when the first loadable segment has that difference too, since kernels
/// before 5.18 compute `AT_PHDR` as its load address plus `e_phoff`.
pub(crate) fn table_may_move_into(e: &Elf, seg: &Phdr) -> bool {
    let interp = e.phdrs.iter().any(|p| p.p_type == elf::PT_INTERP);
    !interp
        || e.loads().first().map_or(true, |(_, first)| {
            first.vaddr.wrapping_sub(first.offset) == seg.vaddr.wrapping_sub(seg.offset)
        })
}

/// How input file offsets map to the output when the bytes after `.hip_fatbin` (`fo..end`)
/// move down by `down` and up by `up`: offsets before the section stay, those after it move,
/// and a field inside it has no place (its bytes are rewritten).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moved {
    pub fo: u64,
    pub end: u64,
    pub down: u64,
    pub up: u64,
}

impl Moved {
    /// Where the field at input offset `x` is in the output.
    pub fn map(&self, x: u64) -> Result<u64> {
        if x < self.fo {
            Ok(x)
        } else if x >= self.end {
            Ok(x - self.down + self.up)
        } else {
            Err(unsupported(x, "a patched field lies inside .hip_fatbin"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_before_stay_after_move_and_inside_are_refused() {
        let m = Moved {
            fo: 0x1000,
            end: 0x5000,
            down: 0x3000,
            up: 0,
        };
        assert_eq!(m.map(0xfff).unwrap(), 0xfff);
        assert_eq!(m.map(0x5000).unwrap(), 0x2000);
        assert_eq!(m.map(0x6008).unwrap(), 0x3008);
        let e = m.map(0x1000).unwrap_err();
        assert_eq!(e.offset, 0x1000);
        assert!(e.to_string().contains("inside .hip_fatbin"), "{e}");
        assert!(m.map(0x4fff).is_err());
        // A relocatable object that grows moves what follows up.
        let up = Moved {
            fo: 0x40,
            end: 0x80,
            down: 0,
            up: 0x100,
        };
        assert_eq!(up.map(0x80).unwrap(), 0x180);
        assert_eq!(up.map(0x3f).unwrap(), 0x3f);
    }
}
