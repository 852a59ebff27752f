//! ROCm's kpack layout: device code split out of host binaries into per-architecture
//! `.kpack` archives (TheRock, ROCm 7 and later).
//!
//! A split host binary keeps its `.hipFatBinSegment` wrappers with magic `HIPK`; each
//! pointer leads to a MessagePack marker in `.rocm_kpack_ref` naming the TOC key and the
//! archives to search, and the u32 at +16 of each wrapper is its index N (the code object is
//! `<kernel_name>#<N>` in an archive listing the device's architecture).
//!
//! Module map:
//! - [`archive`]: reading `.kpack` archives (header, TOC, `zstd-per-kernel` and `none`,
//!   kernels decoded on demand and bounded by `original_size`).
//! - [`write`](mod@write): writing archives.
//! - [`marker`]: the HIPK marker (read by `gfxkit-host` discovery, written here).
//! - [`search`]: the runtime's archive search and look-up, current and old loader.
//! - [`select`]: what the runtime loads for a wrapper on a device, and why not.
//! - [`split`]: splitting a fat binary into a host binary and archive contents, and inlining
//!   them back (the ELF layout work is `gfxkit_shrink::kpack`).
//! - [`verify`]: checks of archives and of split binaries against them.
//! - [`view`]: what the wrappers of a split binary find in a set of archives.
//! - [`limits`]: bounds on what is read from files.
//!
//! Like every gfxkit library it does no file I/O: callers pass bytes and the results of
//! opening files.
//!
//! ```
//! use gfxkit_kpack::{archive::Archive, write::{write_archive, ArchiveMeta, Compression, KernelIn}};
//! let meta = ArchiveMeta {
//!     group_name: "foo".into(),
//!     arch_family: "gfx942".into(),
//!     arches: vec!["gfx942".into()],
//! };
//! let code = b"\x7fELF...".to_vec();
//! let k = KernelIn { key: "lib/libfoo.so#0", arch: "gfx942", bytes: &code };
//! let bytes = write_archive(&meta, &[k], Compression::default()).unwrap();
//! let a = Archive::parse(&bytes).unwrap();
//! let got = a.kernel("lib/libfoo.so#0", "gfx942").unwrap();
//! assert_eq!(&*a.payload(got).unwrap(), &code[..]);
//! ```
#![forbid(unsafe_code)]

pub mod archive;
pub mod error;
pub mod limits;
pub mod marker;
pub mod search;
pub mod select;
pub mod split;
pub mod verify;
pub mod view;
pub mod write;

pub use archive::{Archive, Kernel, Scheme};
pub use error::{Error, ErrorKind, Result};
