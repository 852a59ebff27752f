//! Kernel databases: the device code ROCm's math and ML libraries keep beside themselves and
//! load at run time, per GPU.
//!
//! Module map:
//! - [`tensile`]: Tensile/TensileLite indexes (`TensileLibrary*.dat`, `.dat.zlib`): the
//!   solutions, the library tree, and per hardware row the processor, the CU count, the
//!   solutions reachable and the lazy shards named.
//! - [`tensile_write`]: a multi-architecture index rewritten to some of its rows and the
//!   solutions they reach, read back before it is returned (what `prune` of a tree writes).
//! - [`tensile_yaml`]: YAML indexes (`TensileLibrary*.yaml`) transcoded into the MessagePack
//!   tree [`tensile`] reads, and an index written back as YAML.
//! - [`mapping`]: hipBLASLt's `*_Mapping.dat` (solution index to kernel library) and the
//!   layout rules it must keep with the files beside it.
//! - [`resolve`]: which index and code-object files rocBLAS opens for a processor, over a
//!   listing of `library/` given by the caller.
//! - [`loads`]: everything rocBLAS or hipBLASLt opens for one GPU (index, start-up code
//!   objects, the shards of every row the device can select) and what it lacks.
//! - [`kdb`]: MIOpen `.kdb` kernel databases (SQLite): records, blobs decoded and checked
//!   against their MD5, and the `DbId` file names (`gfx90a68.kdb`).
//! - [`aks2`]: AOTriton `.aks2` images: the directory and each image's bytes.
//! - [`aiter`]: aiter's kernel maps (CSV: kernel name to code-object file).
//! - [`sniff`]: telling a kernel database by its name and first bytes (for directory walks).
//! - [`limits`]: bounds on every count, size and depth read.
//! - [`error`]: typed errors with the byte offset and the place in the structure.
//!
//! Like every gfxkit library it does no file I/O: readers take bytes (SQLite is handed an
//! in-memory copy) and the resolution rule takes a listing.
//!
//! ```
//! use gfxkit_kernel_db::kdb::DbId;
//! let id = DbId::parse_file_name("gfx90a68.kdb").unwrap();
//! assert_eq!((id.processor.as_str(), id.cu_count), ("gfx90a", Some(104)));
//! ```
#![forbid(unsafe_code)]

pub mod aiter;
pub mod aks2;
pub mod error;
pub mod kdb;
pub mod limits;
pub mod loads;
pub mod mapping;
pub mod resolve;
pub mod sniff;
pub mod tensile;
pub mod tensile_write;
pub mod tensile_yaml;

pub use error::{Error, ErrorKind, Result};
pub use limits::Limits;
