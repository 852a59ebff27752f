//! Device code inside host files: finding it, and choosing what the HIP runtime would load.
//!
//! gfxkit-host reads any input as `&[u8]` (the binary memory-maps files) and reports every
//! piece of AMD GPU device code in it with where it was found, borrowing from the input:
//!
//! - ELF executables, shared objects and relocatable objects: every bundle in `.hip_fatbin`
//!   (uncompressed or CCOB, whatever the padding between them), the `.hipFatBinSegment`
//!   wrapper records (`HIPF`/`HIPK`) and the bundle each one points to after relocation
//!   (`R_X86_64_RELATIVE` addends in shared objects and PIE, absolute pointers in non-PIC
//!   executables, symbol relocations in relocatable objects; a relocation against an undefined
//!   symbol, as in `-fgpu-rdc` objects, is reported as external), `__CLANG_OFFLOAD_BUNDLE__*`
//!   object-bundle sections, `.llvm.offloading` OffloadBinary images; a linked file without a
//!   section table (`llvm-objcopy --strip-sections`) through its `PT_LOAD` segments and
//!   `PT_DYNAMIC` relocations, as the loader sees it (wrappers, their bundles, kpack markers;
//!   locations without a section name);
//! - PE32+ images for x86-64 (DLLs, EXEs) and x86-64 COFF objects ([`pe`]): `.hip_fat` and
//!   `.hipFatB` (the 8-byte names in images) or `.hip_fatbin` and `.hipFatBinSegment`, wrapper
//!   pointers through the base relocation table (`IMAGE_REL_BASED_DIR64`) or
//!   `IMAGE_REL_AMD64_ADDR64` relocations, kpack'ed images (`HIPK` wrappers, `.kpackrf`);
//! - `ar` archives (`.a`, and `.lib` of COFF objects), each member recursively;
//! - standalone bundles (one or several back to back), OffloadBinaries and code objects.
//!
//! It also models how the HIP runtime picks a code object for a device ([`select`]) and reads
//! the Linux KFD topology and HSA environment variables that name the GPUs ([`kfd`]).
//!
//! Module map:
//! - [`mod@discover`]: [`discover()`](discover::discover()) and the result types.
//! - [`entries`]: the entry list of a found bundle, from its header only.
//! - [`fatbin`]: how a found bundle is stored ([`BundleFormat`]); sections are split by
//!   `gfxkit_bundle::split`.
//! - [`offloading`]: OffloadBinary (`.llvm.offloading`) images.
//! - [`pe`]: PE images and COFF objects (Windows).
//! - [`problem`]: [`Location`] and typed [`Problem`]s.
//! - [`select`]: the runtime's choice of entry for a device.
//! - [`kfd`]: `gfx_target_version`, `HSA_OVERRIDE_GFX_VERSION`, `HSA_XNACK`.
//! - [`limits`]: bounds on counts read from files.
//!
//! ```
//! use gfxkit_host::{discover, InputKind};
//! // A tiny uncompressed bundle with one (fake) entry.
//! let id = b"hipv4-amdgcn-amd-amdhsa--gfx90a";
//! let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
//! b.extend_from_slice(&1u64.to_le_bytes());
//! let payload_at = 32 + 24 + id.len() as u64;
//! b.extend_from_slice(&payload_at.to_le_bytes());
//! b.extend_from_slice(&4u64.to_le_bytes());
//! b.extend_from_slice(&(id.len() as u64).to_le_bytes());
//! b.extend_from_slice(id);
//! b.extend_from_slice(b"\x7fELF");
//! let found = discover(&b);
//! assert_eq!(found.kind, InputKind::Bundle);
//! let units = found.units();
//! assert_eq!(units.units.len(), 1);
//! assert_eq!(units.units[0].bytes.len(), b.len());
//! assert!(units.problems.is_empty());
//!
//! // What the HIP runtime would load from it on a device.
//! let u = &units.units[0];
//! let entries = gfxkit_host::entries::entry_ids(u.format().unwrap(), u.bytes, &u.limits).unwrap();
//! let device = gfxkit_target_id::TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
//! let choice = gfxkit_host::select::select(&device, &entries);
//! assert_eq!(choice.index, Some(0));
//! assert_eq!(choice.via, Some(gfxkit_host::select::Via::Native));
//! ```
//!
//! For tools that list or extract: [`Discovery::units`] gives the units of device code found
//! ([`unit::Unit`]: bundle, object bundle, code object, OffloadImage), each with its
//! [`Location`] (archive member, section, file offset, size) and bytes, and
//! [`unit::Unit::load_view`] what the HIP runtime reads of one (the parsed entry IDs);
//! [`entries::header_entries`] lists a bundle's entries without decompressing more than its
//! header; [`Discovery::problems`] holds what `verify` should report. Tools that edit a file
//! follow its wrapper records ([`Discovery::wrappers`]) to the bundles they name
//! ([`Discovery::bundle_unit`]).
#![forbid(unsafe_code)]

pub mod discover;
mod elf;
pub mod entries;
pub mod fatbin;
pub mod kfd;
pub mod limits;
pub mod offloading;
mod parts;
pub mod pe;
pub mod problem;
pub mod release;
pub mod select;
pub mod unit;
mod wrapper;

pub use discover::{
    discover, discover_with, Discovery, InputKind, KpackRef, Wrapper, WrapperMagic, WrapperRecord,
    WrapperTarget,
};
pub use fatbin::{BundleFormat, CompressionMethod};
pub use problem::{Location, Problem, ProblemKind, Severity};
pub use unit::{error_lines, Form, LooseEntry, Unit, Units};
