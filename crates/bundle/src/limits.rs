//! Bounds applied to every count and size read from a file.
//!
//! A bundle is untrusted input: a 40-byte file can claim a billion entries or a 4 GiB payload.
//! Every loop over a count read from a file, and every allocation sized from one, is bounded
//! by the constants here or by the length of the input itself.

/// Most entries one uncompressed bundle may declare. Real bundles hold tens; clang writes one
/// per `--offload-arch`. Each entry record needs at least 24 bytes, so the input length bounds
/// the count too.
pub const MAX_ENTRIES: u64 = 65_536;

/// Longest entry ID accepted, in bytes. Real IDs are under 100 bytes.
pub const MAX_ID_LEN: u64 = 4096;

/// Largest uncompressed size a CCOB header may declare before decompression is refused
/// (64 GiB); override it per call with
/// [`DecompressOptions::max_uncompressed`](crate::ccob::DecompressOptions::max_uncompressed).
/// Below it, memory follows the data actually produced, never the declared size alone (see
/// [`codec`](crate::codec)), so a header that lies costs what its payload holds.
pub const MAX_UNCOMPRESSED_SIZE: u64 = 64 << 30;

/// Size of the part of an uncompressed bundle that comgr reads when the HIP runtime looks a
/// code object up: a header (magic, count, entry records) longer than this cannot be loaded.
pub const HIP_HEADER_READ_LIMIT: u64 = 4096;

/// Most bundles [`iter_concatenated`](crate::iter_concatenated) yields from one input (a
/// ROCm library holds a few hundred).
pub const MAX_CONCATENATED: usize = 1 << 20;
