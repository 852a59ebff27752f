//! Clang offload bundles: read, write, compress, unbundle — byte-compatible with
//! `clang-offload-bundler` 19.
//!
//! An offload bundle packs one file per offload target (code objects for `gfx90a`, `gfx1100`,
//! ..., plus a host entry) behind a header of entry IDs such as
//! `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`. clang writes it uncompressed
//! (`__CLANG_OFFLOAD_BUNDLE__`) or, with `--offload-compress`, compressed (`CCOB`).
//!
//! Module map:
//! - [`entry_id`]: [`EntryId`] — parse, canonical form, unbundling compatibility.
//! - [`read`]: [`Bundle::parse`] — zero-copy, bounded reader of uncompressed bundles (strict
//!   and lenient), [`read::parse_header`] for header-only listing.
//! - [`write`]: [`write_bundle`], [`write_bundle_to`], [`BundleWriter`] — clang's layout,
//!   byte for byte.
//! - [`compressed`] (alias [`ccob`]): CCOB v1/v2/v3 headers, [`ccob::decompress`] (bounded,
//!   hash-checked), [`ccob::compress`] (v2/v3, zstd or zlib).
//! - [`codec`]: the zlib and zstd codecs and the MD5-based hash.
//! - [`any`]: [`AnyBundle`] (either format) and [`iter_concatenated`] / [`scan_concatenated`]
//!   for bundles laid back to back (a dumped `.hip_fatbin`).
//! - [`limits`]: bounds applied to untrusted counts and sizes.
//! - [`error`]: [`Error`] = [`ErrorKind`] + entry index + byte offset.
//!
//! ```
//! use gfxkit_bundle::{write_bundle, Bundle, AnyBundle, EntryId, ccob};
//!
//! let bytes = write_bundle(
//!     &[("host-x86_64-unknown-linux--", b""), ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"code")],
//!     4096,
//! )
//! .unwrap();
//! let bundle = Bundle::parse(&bytes).unwrap();
//! let e = &bundle.entries()[1];
//! assert_eq!((e.offset, e.payload), (4096, &b"code"[..]));
//! let id: EntryId = e.parse_id().unwrap();
//! assert_eq!(id.target_id().unwrap().to_string(), "gfx90a:xnack+");
//!
//! // Compress as clang --offload-compress does (CCOB v2, zstd level 3), and read it back.
//! let packed = ccob::compress(&bytes, &ccob::CompressOptions::default()).unwrap();
//! let any = AnyBundle::parse(&packed, &ccob::DecompressOptions::default()).unwrap();
//! assert_eq!(any.uncompressed(), &bytes[..]);
//! assert_eq!(any.extent, packed.len() as u64);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod any;
pub mod archive;
pub mod codec;
pub mod compressed;
pub mod entry_id;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod limits;
pub mod object;
pub mod read;
pub mod text;
pub mod unbundle;
pub mod write;

/// Short name for [`compressed`].
pub use compressed as ccob;

pub use any::{
    detect, iter_concatenated, scan_concatenated, AnyBundle, Concatenated, Format, Span,
};
pub use codec::Method;
pub use entry_id::{EntryId, EntryIdError, EntryIdErrorKind, EntryTarget, OffloadKind, Triple};
pub use error::{Error, ErrorKind, Result};
pub use read::{Bundle, Entry};
pub use write::{layout, write_bundle, write_bundle_to, BundleWriter, Layout};
