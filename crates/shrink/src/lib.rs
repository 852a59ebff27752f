//! Shrinking host binaries: prune GPU architectures from, and recompress, the offload bundles
//! inside standalone bundle files, relocatable objects, shared objects, executables and `ar`
//! archives, making the file smaller on disk while keeping every segment's address.
//!
//! # Module map
//!
//! - [`filter`]: entry IDs, target patterns, and the keep/drop rule ([`EntryFilter`]).
//! - [`plan`]: what happens to each bundle ([`Transform`], [`Conversion`]) and the outcomes.
//! - [`bundle`]: finding bundles in bytes, decompressing and writing them (via `gfxkit-bundle`).
//! - [`mod@rewrite`]: the file rewrite ([`rewrite()`]); [`report`]: what it produces
//!   ([`Rewritten`], its [`Report`]), shared with the archive rewrite.
//! - [`check`]: the segment and wrapper rules, checked on inputs and on rewritten files.
//! - [`mod@survey`]: a file's device code as `gfxkit_host::discover` finds it, read for a
//!   rewrite ([`survey()`]).
//! - [`mod@verify`]: checking a rewrite ([`verify()`]): the rewritten file read again (through
//!   the survey) and every kept entry compared byte for byte with the input.
//! - [`output`]: the rewritten file as pieces borrowed from the input plus patches, written
//!   out sequentially ([`Output`]); pieces made only when written ([`output::Deferred`]: the
//!   bundles of an inlined split).
//! - `elf`, `archive`: the ELF and `ar` views the rewrite works on; `patch`: writing
//!   little-endian fields into the output and aligning offsets (reads: `gfxkit_bytes`).
//! - [`kpack`]: the ELF layout of ROCm's kpack split and its inverse; [`pe::kpack`], the
//!   PE32+ one (TheRock's Windows layout: `.kpackrf`, `.hip_fat` without file bytes).
//! - [`pe`]: PE images and COFF objects, rewritten (prune, recompress, the kpack split and
//!   inline) through one edit model (`pe/edit.rs`: input ranges replaced, header fields written
//!   where their bytes went) and, for images, one image model (`pe/image.rs`).
//! - `layout`: the rules a rewrite of `.hip_fatbin` in a linked file keeps (the segment
//!   holding it, no other program header over it, where the program header table may move,
//!   how offsets after it move), checked in one place for prune, recompress, kpack split and
//!   inline.
//! - `segment`: where a new read-only segment goes after the last one (a grown `.hip_fatbin`,
//!   an inlined split), the one placement rule both share.
//!
//! # The ELF layout rewrite
//!
//! In a linked file every byte after `.hip_fatbin` has a fixed virtual address, and a loadable
//! segment maps its file bytes with one constant offset-to-address difference. Shrinking the
//! file therefore means moving everything after `.hip_fatbin` down in the *file* by `shift`
//! bytes while its addresses stay put. `shift` is a multiple of the largest alignment of every
//! later segment (and of 4096), so `p_offset ≡ p_vaddr (mod p_align)` keeps holding; it is the
//! freed space rounded down to that unit. When fewer bytes than one unit are freed, the section
//! is rewritten in place and zero-filled (the file length does not change; the report says so).
//!
//! - **`.hip_fatbin` last in its `PT_LOAD`** (nothing with file bytes after it in the segment):
//!   the segment's `p_filesz`/`p_memsz` end at the new end of the section; later segments,
//!   sections and the section header table move down by `shift`.
//! - **`.hip_fatbin` inside its `PT_LOAD`** (what GNU ld and lld both produce: `.eh_frame_hdr`
//!   and `.eh_frame` follow it in the read-only segment): the segment is split in two with the
//!   same addresses: `[start, new end of .hip_fatbin)` and `[old end of .hip_fatbin, end)`,
//!   the second moved down by `shift`. The address range between them is no longer mapped
//!   (the dynamic loader leaves holes between segments inaccessible); nothing refers to it,
//!   since every reference into `.hip_fatbin` is rewritten. The split needs one more program
//!   header:
//!   1. a `PT_NULL` entry (a spare slot some tools leave) is reused; else
//!   2. unused zero bytes right after the program header table, when the next section or
//!      segment starts far enough away and the table stays inside its segment; else
//!   3. the whole table moves to just after the new `.hip_fatbin`, inside the first half of
//!      the split segment (so it is mapped), `e_phoff` and `PT_PHDR` follow it and the old
//!      table is zeroed. glibc's loader reads the table at `e_phoff` and finds it in memory
//!      through the segment that covers it (or `PT_PHDR`); the kernel reads it at `e_phoff`
//!      too, but kernels before 5.18 pass `AT_PHDR` = first segment's load address +
//!      `e_phoff` to a program, which is right only when the segment holding the table has
//!      the first segment's offset-to-address difference. Executables (with `PT_INTERP`) where
//!      that does not hold are refused with that reason. Neither GNU ld nor lld leaves spare
//!      slots, and both put `.hip_fatbin` in a segment with the first segment's difference.
//!
//!   Non-essential headers (`PT_NOTE`) are never converted: moving the table loses nothing.
//! - Within the new section each bundle starts at an offset aligned to the section's
//!   alignment (4096 from the classic HIP driver), in the original order.
//! - References into `.hip_fatbin` are rewritten: `R_X86_64_RELATIVE` addends (PIC files), the
//!   8-byte pointers stored in `.hipFatBinSegment` wrappers (non-PIC files, RELR, applied
//!   relocations), symbol-relative relocations (`R_X86_64_64` against the section symbol or a
//!   symbol in the section, as relocatable objects have) and symbols in the section (`value`,
//!   and `size` when it covered a bundle or the whole section). A reference that does not land
//!   on the start of a bundle is refused rather than guessed.
//! - Relocatable objects have no segments: later sections move down by a multiple of the
//!   largest later section alignment. Archives are rewritten member by member and the GNU
//!   symbol index (`/`, `/SYM64/`) is updated to the new member offsets.
//! - **A section that grows** (`recompress --uncompressed` of compressed bundles, or a
//!   recompression that comes out larger): what follows `.hip_fatbin` has fixed addresses,
//!   so the new section goes into a new read-only `PT_LOAD` after the last segment, at the end
//!   of the file and of the address space; every reference is pointed there and the old bytes
//!   are zeroed (they stay in the file: the old segment is not split for them). The extra
//!   program header comes from slack after the table or by moving the table into the new
//!   segment, with the same executable rule as above (an executable's new segment takes the
//!   first segment's address-offset difference; the file is padded up to 64 MiB for it, else
//!   refused). Relocatable objects simply move later sections up.
//! - Refused with a reason: fully stripped files (no section headers), files whose device code
//!   is elsewhere (`.llvm.offloading`, object-bundle sections, `HIPK` pack wrappers), non-x86-64
//!   or big-endian or 32-bit ELF, thin and BSD archives, references into `.hip_fatbin` that
//!   do not land on a bundle start, and `.hip_fatbin` outside a loadable segment.
//! - Refused before anything is planned: inputs that already break a rule [`verify()`] checks
//!   the rewritten file against ([`check`]: a program header past the end of the file, a
//!   loadable segment with `p_filesz > p_memsz` or whose offset and address disagree modulo
//!   its alignment, a wrapper that leads to no bundle start, a bundle no wrapper leads to),
//!   with a typed error naming the program header, wrapper or bundle and its byte offset.
//!
//! # Example
//!
//! ```
//! use gfxkit_shrink::{bundle, rewrite, Conversion, Pattern, EntryFilter, Transform};
//! let a = vec![1u8; 64];
//! let b = vec![2u8; 64];
//! let input = bundle::write_uncompressed(
//!     &[
//!         ("host-x86_64-unknown-linux--", &[]),
//!         ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", &a),
//!         ("hipv4-amdgcn-amd-amdhsa--gfx1030", &b),
//!     ],
//!     4096,
//! )
//! .unwrap();
//! let t = Transform {
//!     selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
//!     conversion: Conversion::Keep,
//!     limits: Default::default(),
//! };
//! let out = rewrite(&input, &t).unwrap();
//! assert!(out.output.len() < input.len() as u64);
//! let kept = &out.report.regions[0].bundles[0].kept;
//! assert_eq!(kept.len(), 2);
//! assert_eq!(kept[1].target, "gfx90a:xnack+");
//! gfxkit_shrink::verify(&input, &out, &t.limits).unwrap();
//! ```
//!
//! Bundles are read, decompressed, compressed and written by `gfxkit-bundle`; [`bundle`] adapts
//! it to the rewrite (encodings, errors at file offsets).

#![forbid(unsafe_code)]

pub mod archive;
pub mod bundle;
pub mod check;
mod edit;
pub mod elf;
pub mod error;
pub mod filter;
pub mod kpack;
mod layout;
pub mod limits;
pub mod output;
mod patch;
pub mod pe;
pub mod plan;
pub mod report;
pub mod rewrite;
mod segment;
pub mod survey;
pub mod verify;

pub use bundle::Method;
pub use check::{SegmentProblem, WrapperProblem};
pub use error::{Error, ErrorKind};
pub use filter::{label, EntryFilter, Pattern};
pub use output::{Detached, Output};
pub use plan::{BundleOutcome, Conversion, EntryRecord, Transform};
pub use report::{empty_error, refuse_empty};
pub use rewrite::{
    rewrite, rewrite_without_digests, FileKind, Layout, RegionReport, Report, Rewritten,
};
pub use survey::{survey, survey_headers, survey_with, Survey, SurveyBundle, SurveyRegion};

/// Host discovery of `data` under `limits`: where the rewrite, its input check and
/// verification ask for it, so that a test can count how often an input is discovered.
pub(crate) fn discover<'d>(
    data: &'d [u8],
    limits: &gfxkit_bundle::limits::Limits,
) -> gfxkit_host::Discovery<'d> {
    #[cfg(test)]
    DISCOVERIES.with(|n| n.set(n.get() + 1));
    gfxkit_host::discover_with(data, limits)
}

#[cfg(test)]
thread_local! {
    /// How many times [`discover`] ran on this thread.
    pub(crate) static DISCOVERIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
pub use verify::{verify, verify_bytes};
