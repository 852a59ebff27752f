//! gfxkit's file I/O, shared by the `gfxkit` binary and the Python package: the only crate of
//! the workspace that opens, maps, walks or writes files. The format crates take `&[u8]` and
//! never touch the file system; this crate hands them the bytes and writes their results.
//!
//! Module map:
//! - [`format`](mod@format): the one door every command reads a file through: [`format::Formats::of`]
//!   names the [`format::Format`] of a file (a `.kpack` archive, a kernel database, any other
//!   binary), in one documented order, and each format lists, sizes, verifies, extracts and
//!   digests its files, lists their kernels and says how `inspect` reads them;
//! - [`guard`]: a mapped input cut short by another process while it is read reads as zeros
//!   and is reported as changed ([`Input::unchanged`]) instead of ending the process;
//! - [`input`]: an input file memory-mapped read-only ([`Input`]), or one member of a package
//!   (`pkg.whl!lib/x.so`); [`input::for_each`] runs a function on a file or on every member of
//!   a package that may hold device code;
//! - [`write`](mod@write): atomic writes through a temporary file `.gfxkit-<pid>.<random>.<name>` in the
//!   target's directory, optionally read back and checked before the rename, synced to disk
//!   when the [`Durability`] asks for it (docs/durability.md); stale temporary files of killed
//!   runs are removed;
//! - [`scan`]: the parallel directory walk (symbolic links followed without loops, each inode
//!   once, gfxkit's temporary files skipped) and [`scan::scan`] over many inputs;
//! - [`census`]: one input of a census read into its rows (code objects, the input), and the
//!   walk that turns a census's paths into inputs;
//! - [`kpack`]: the `.kpack` archives a split binary's markers name, found and opened as the
//!   kpack loader searches (`ROCM_KPACK_PATH`...), and `doctor`'s verdicts through them;
//! - [`database`]: kernel databases on disk (a Tensile index's directory listed for
//!   rocBLAS's file rule; `.kdb`/`.aks2` files and raw code objects for `list` and `size`);
//! - [`package`]: `prune`/`recompress` of packages (each member rewritten and verified, the
//!   package written again and read back before it replaces anything);
//! - [`extract`](mod@extract): the code objects `extract` selects in a file, planned from headers
//!   by the file's format and then produced (written by the CLI, handed to Python as bytes);
//! - [`extract_inputs`]: the inputs of `extract` (files named or found, package members) with
//!   the stems their outputs are named by;
//! - [`rewrite`]: writing a rewritten host binary or bundle, read back and verified first;
//! - [`tree`]: `prune` of a directory tree: host binaries pruned, kernel databases of other
//!   architectures dropped (a multi-architecture Tensile index cut to the kept rows), the rest
//!   copied, all into a temporary directory renamed into place at the end;
//! - [`split_request`]: one `kpack split` as asked: a tree ([`split_tree`]) or files ([`split`]);
//! - [`split`]: `kpack split` and `kpack inline` on files (archives merged with those on
//!   disk, everything written atomically, archives before binaries);
//! - [`whole`]: `check` and `diff` over trees and packages (each file read once);
//! - [`kfd`]: the GPUs of this machine, read from the KFD topology in sysfs;
//! - [`rocm`]: the ROCm release installed on this machine (`--rocm auto`), and where it is
//!   written;
//! - [`settings`]: [`Settings`], the limits and choices (the image platform) every input of a
//!   run is read under, passed in by the caller;
//! - [`Error`]: what failed, on which path, with the system's error as its source.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("out.bin");
//! gfxkit_io::write::write_atomic(&out, b"device code")?;
//! let input = gfxkit_io::Input::open(&out)?;
//! assert_eq!(&*input, b"device code");
//! let found = gfxkit_io::scan::collect(&[dir.path().to_path_buf()])?;
//! assert_eq!(found.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod census;
pub mod database;
mod error;
pub mod extract;
pub mod extract_inputs;
pub mod format;
pub mod guard;
pub mod input;
pub mod kfd;
pub mod kpack;
pub mod package;
pub mod prune_file;
pub mod rewrite;
pub mod rocm;
pub mod scan;
pub mod settings;
pub(crate) mod settle;
pub mod split;
pub mod split_request;
pub mod split_tree;
pub mod summary;
pub mod tree;
pub mod whole;
pub mod write;

pub use error::{Error, ErrorKind};
pub use input::{FileRange, Input, NoDeviceCode};
pub use settings::Settings;
pub use write::{Durability, WriteError};
