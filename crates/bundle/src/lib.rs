//! Clang offload bundles: read, write, compress, unbundle — byte-compatible with
//! `clang-offload-bundler` 19.
//!
//! An offload bundle packs one file per offload target (code objects for `gfx90a`, `gfx1100`,
//! ..., plus a host entry) behind a header of entry IDs such as
//! `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`. clang writes it uncompressed
//! (`__CLANG_OFFLOAD_BUNDLE__`) or, with `--offload-compress`, compressed (`CCOB`).
//!
//! Module map:
//! - [`entry_id`]: [`EntryId`] — parse (5-part, legacy 3-part triple, host spellings), canonical
//!   form, the form clang 19 writes ([`EntryId::clang_form`]), unbundling compatibility.
//! - [`read`]: [`Bundle::parse`] — zero-copy, bounded reader of uncompressed bundles (strict,
//!   and [`Bundle::parse_lenient`] listing what is readable plus the problems);
//!   [`read::parse_header`] for header-only listing from a prefix.
//! - [`write`](mod@write): [`write_bundle`], [`write_bundle_to`] (streaming), [`BundleWriter`], [`layout`]
//!   — clang-offload-bundler 19's layout, byte for byte; [`infer_alignment`] reads the
//!   alignment back from payload offsets.
//! - [`compressed`] (alias [`ccob`]): CCOB v1/v2/v3 headers ([`ccob::Header::parse`], no
//!   decompression), [`ccob::decompress_ccob`] / [`ccob::decompress`] (bounded by the declared
//!   size, exact length, MD5 hash checked), [`ccob::decompress_prefix`] (just the header),
//!   [`ccob::compress`] (v2 default, v3 on request or when sizes need it; zstd level 3 with
//!   long-distance matching like clang, or zlib), [`ccob::compress_all`] (rayon across bundles),
//!   [`ccob::version_from_env_value`] for `COMPRESSED_BUNDLE_FORMAT_VERSION`.
//! - [`codec`]: the zlib and zstd codecs, [`Method`], and the MD5-based hash.
//! - [`any`]: [`AnyBundle`] (either format), [`iter_concatenated`] / [`scan_concatenated`] /
//!   [`scan_concatenated_lenient`] (goes on after damage) for
//!   bundles laid back to back (a dumped `.hip_fatbin`), [`detect`].
//! - [`split`]: bundles back to back split leniently for discovery ([`split::split`]: the
//!   bundles before a damaged one and the [`split::Stop`] with its offset;
//!   [`split::stored_extent`]: a bundle's length from its headers, any CCOB method).
//! - [`unbundle`]: clang's rules — [`unbundle::check_targets`] (duplicates, host count,
//!   conflicts), [`unbundle::unbundle`] (one entry per requested target, missing bundles,
//!   host-only inputs).
//! - [`text`]: text bundles (`-type=i ii cui hipi d ll s`).
//! - [`object`]: object bundles (`-type=o`): read `__CLANG_OFFLOAD_BUNDLE__*` sections, write
//!   them into a host ELF object without llvm-objcopy, strip them for the host entry.
//! - [`archive`]: archives (`-type=a`): unbundle each member into one archive per target;
//!   a GNU `ar` writer byte-identical to clang 19's output.
//! - [`limits`]: bounds applied to untrusted counts and sizes.
//! - [`error`]: [`Error`] = [`ErrorKind`] + entry index + byte offset.
//!
//! Differences from clang-offload-bundler 19, on purpose: entries are listed in header order
//! (clang: hash order); truncated, overlapping, out-of-range or duplicate entries are errors
//! (clang: silently dropped); processors unknown to LLVM 19 are kept intact; CCOB v3 is read
//! and the hash is always verified; the host entry can be unbundled (clang 19 fails on IDs
//! ending in `-`).
//!
//! Compressed output is clang's byte for byte when the zstd library linked in is the release
//! clang links (see [`codec::zstd_version`]; build with `ZSTD_SYS_USE_PKG_CONFIG=1` to use the
//! system libzstd); with the zstd crate's bundled release the frame differs but decompresses
//! to the same bundle.
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
pub mod container;
pub mod entry_id;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod hash;
pub mod limits;
pub mod object;
pub mod read;
pub mod split;
pub mod text;
pub mod unbundle;
pub mod write;

/// Short name for [`compressed`].
pub use compressed as ccob;

pub use any::{
    detect, iter_concatenated, scan_concatenated, scan_concatenated_at, scan_concatenated_lenient,
    AnyBundle, BundleFormat, CompressionMethod, Concatenated, Format, Span,
};
pub use codec::Method;
pub use entry_id::{EntryId, EntryIdError, EntryIdErrorKind, EntryTarget, OffloadKind, Triple};
pub use error::{Error, ErrorKind, Result};
pub use read::{Bundle, Entry};
pub use write::{infer_alignment, layout, write_bundle, write_bundle_to, BundleWriter, Layout};
