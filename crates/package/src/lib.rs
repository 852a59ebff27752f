//! Packages that hold AMD GPU device code: Python wheels and other zip files, conda packages
//! (`.conda`, a zip of `.tar.zst` members, and `.tar.bz2`), Debian packages (`ar` holding
//! `data.tar.{gz,xz,zst}`), RPM packages (a cpio payload), and tarballs
//! (`.tar{,.gz,.xz,.zst,.bz2}`), with archives inside archives.
//!
//! Members are named by chains: `torch-2.5.whl!torch/lib/libtorch_hip.so`, and nested archives
//! chain further with `!` (`x.conda!pkg-x.tar.zst!lib/libfoo.so`).
//!
//! # Module map
//!
//! - [`detect`](mod@detect): formats by magic bytes ([`Format`], [`Compression`]).
//! - [`walk`](mod@walk): reading members lazily, decompressed once and streaming, held in memory
//!   when small and in a caller-provided [`Spill`] otherwise ([`walk()`], [`Options`]).
//! - [`rewrite`](mod@rewrite): writing a package with some members replaced: wheels with
//!   `RECORD` updated and every other member copied raw; tarballs and conda packages with
//!   `info/paths.json` updated.
//! - [`image`]: container images (`docker save` archives, OCI image layouts) read as the
//!   file system their layers unpack to, whiteouts applied.
//! - [`record`]: wheel `RECORD` files (hash and size of every member).
//! - [`rpm`]: the RPM lead and headers and the cpio payload.
//! - [`fuzzing`]: the body of the `package` fuzz target.
//!
//! This crate does no file I/O: packages are byte slices, large members go through [`Spill`],
//! outputs are written to a `Write + Seek` the caller opens.
//!
//! # Example
//!
//! ```
//! use gfxkit_package::{walk, MemorySpill, Options};
//! use std::io::Write;
//! let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
//! zip.start_file("pkg/lib.so", zip::write::SimpleFileOptions::default()).unwrap();
//! zip.write_all(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0").unwrap();
//! zip.start_file("pkg/__init__.py", zip::write::SimpleFileOptions::default()).unwrap();
//! zip.write_all(b"import os\n").unwrap();
//! let bytes = zip.finish().unwrap().into_inner();
//! let found = walk("p.whl", &bytes, &Options::default(), &MemorySpill, &|m| m.bytes.len()).unwrap();
//! let paths: Vec<_> = found.iter().map(|r| r.as_ref().unwrap().path.as_str()).collect();
//! assert_eq!(paths, ["p.whl!pkg/lib.so"]); // the Python file cannot hold device code
//! ```

#![forbid(unsafe_code)]

pub mod detect;
mod digest;
pub mod error;
pub mod fuzzing;
pub mod image;
mod members;
mod platform;
pub mod record;
pub mod rewrite;
pub mod rpm;
mod tar;
pub mod walk;
mod zipinfo;

pub use detect::{detect, Compression, Format};
pub use error::{Error, ErrorKind, Result};
pub use walk::{
    walk, walk_watched, Bytes, Member, MemberChoice, MemorySpill, Options, Spill, SpillWriter,
    Visited, Walk,
};

/// Whether a member named `name` whose first bytes are `prefix` may hold device code: a kind
/// of file [`gfxkit_host::InputKind::sniff`] says may, or a kernel database
/// ([`gfxkit_kernel_db::sniff`]: `.kdb`, `.aks2`, Tensile indexes): the members a walk reads
/// unless its caller says otherwise ([`Options::wanted`]).
pub fn may_hold_device_code(name: &str, prefix: &[u8]) -> bool {
    gfxkit_host::InputKind::sniff(prefix.get(..64).unwrap_or(prefix)).may_hold_device_code()
        || gfxkit_kernel_db::sniff::sniff(name, prefix).is_some()
}
