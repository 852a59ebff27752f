//! The bodies of gfxkit's fuzz targets: one per reader, each calling the library entry point
//! the `gfxkit` command uses and checking the invariants of whatever it accepts. None may
//! panic, hang or allocate without bound on any input.
//!
//! `fuzz/fuzz_targets/<name>.rs` runs [`TARGETS`]`[name]` under libFuzzer (`scripts/fuzz`,
//! nightly); `tests/replay.rs` runs every file under `fuzz/regressions/<name>/` and
//! `fuzz/seeds/<name>/` through the same body in ordinary `cargo test` on stable.
//!
//! | target | reads |
//! |---|---|
//! | `bundle` | uncompressed offload bundles, strict and lenient, header only |
//! | `ccob` | CCOB v1/v2/v3 (zlib, zstd): header, extent, bounded decompression |
//! | `concatenated` | either format, bundles back to back (a dumped `.hip_fatbin`) |
//! | `bundle_text` | text bundles (`-type=i ii hipi ll s ...`) |
//! | `bundle_object` | object bundles (`-type=o`): list, strip, write |
//! | `bundle_archive` | archive bundles (`-type=a`): members, unbundling |
//! | `host` | host discovery: ELF, `.hip_fatbin`, wrappers and relocations, `.llvm.offloading`, `ar` |
//! | `host_pe` | host discovery in PE images and COFF objects: `.hip_fat(bin)`, wrappers, base relocations and `ADDR64` relocations, `.lib` |
//! | `code_object` | code objects: ELF header, `e_flags`, notes, MessagePack metadata, descriptors |
//! | `digests` | what the census reads of a file: its listing and code-object digests from one inventory, equal to those of the file's own reading of its units |
//! | `target_id` | target IDs and bundle entry IDs |
//! | `prune` | the prune/recompress planner: refuse, or produce a file that verifies |
//! | `pe_rewrite` | prune/recompress of PE32+ images (signed ones without their signature) and COFF objects: refuse, or a file that verifies, keeps its addresses, base relocations and a right `CheckSum` |
//! | `kpack` | `.kpack` archives: header, TOC, frames and blobs, kernels decoded within bounds, written back |
//! | `kpack_split` | `kpack split` and `kpack inline` on ELF and PE32+ input: refuse, or a split that re-reads (a PE image keeping its sections' addresses and `CheckSum`), inlines and splits again alike |
//! | `package` | packages (zip/wheel, tar.*, conda, deb, rpm): walked, rewritten and walked again under small limits |
//! | `tensile` | Tensile indexes (MessagePack, `.dat.zlib`): rows, solutions, placeholders under small limits |
//! | `kdb` | MIOpen `.kdb` files (SQLite from memory): records, blobs decoded within their declared sizes |
//! | `aks2` | AOTriton `.aks2` images: header, xz stream, directory, kernel images in bounds |
//! | `image` | container images: archives as given, and layers described by the input (files, links, whiteouts, opaque directories) in an OCI layout, against a model that unpacks them |

#![forbid(unsafe_code)]

pub mod code_object;
pub mod digests;
pub mod host;
pub mod host_pe;
pub mod kernel_db;
pub mod kpack;
pub mod kpack_split;
pub mod pe_rewrite;
pub mod prune;
pub mod target_id;

/// A fuzz target body.
pub type Body = fn(&[u8]);

/// Every fuzz target by name (the names of `fuzz/fuzz_targets/*.rs` and of the directories
/// under `fuzz/regressions/` and `fuzz/seeds/`).
pub const TARGETS: &[(&str, Body)] = &[
    ("bundle", gfxkit_bundle::fuzzing::bundle),
    ("ccob", gfxkit_bundle::fuzzing::ccob),
    ("concatenated", gfxkit_bundle::fuzzing::concatenated),
    ("bundle_text", gfxkit_bundle::fuzzing::text),
    ("bundle_object", gfxkit_bundle::fuzzing::object),
    ("bundle_archive", gfxkit_bundle::fuzzing::archive),
    ("host", host::run),
    ("host_pe", host_pe::run),
    ("code_object", code_object::run),
    ("digests", digests::run),
    ("target_id", target_id::run),
    ("prune", prune::run),
    ("pe_rewrite", pe_rewrite::run),
    ("kpack", kpack::run),
    ("kpack_split", kpack_split::run),
    ("package", gfxkit_package::fuzzing::package),
    ("image", gfxkit_package::fuzzing::image),
    ("tensile", kernel_db::tensile),
    ("kdb", kernel_db::kdb),
    ("aks2", kernel_db::aks2),
];

/// The body of the target called `name`.
pub fn body(name: &str) -> Option<Body> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}
