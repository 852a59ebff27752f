//! Bounds applied to every count and size read from a file.
//!
//! A bundle is untrusted input: a 40-byte file can claim a billion entries or a 4 GiB payload.
//! Every loop over a count read from a file, and every allocation sized from one, is bounded
//! by the constants here or by the length of the input itself.

use std::sync::atomic::{AtomicU64, Ordering};

/// Most entries one uncompressed bundle may declare. Real bundles hold tens; clang writes one
/// per `--offload-arch`. Each entry record needs at least 24 bytes, so the input length bounds
/// the count too.
pub const MAX_ENTRIES: u64 = 65_536;

/// Longest entry ID accepted, in bytes. Real IDs are under 100 bytes.
pub const MAX_ID_LEN: u64 = 4096;

/// Largest uncompressed size a CCOB header may declare before decompression is refused, by
/// default (64 GiB). Override it per call with
/// [`DecompressOptions::max_uncompressed`](crate::ccob::DecompressOptions::max_uncompressed),
/// or for the whole process with [`set_max_uncompressed`] (the command line's
/// `--max-uncompressed`). Below it, memory follows the data actually produced, never the
/// declared size alone (see [`codec`](crate::codec)), so a header that lies costs what its
/// payload holds.
pub const MAX_UNCOMPRESSED_SIZE: u64 = 64 << 30;

/// The process-wide limit behind [`max_uncompressed`].
static UNCOMPRESSED_LIMIT: AtomicU64 = AtomicU64::new(MAX_UNCOMPRESSED_SIZE);

/// The largest uncompressed size a CCOB header may declare where the caller gives no limit of
/// its own ([`DecompressOptions::default`](crate::ccob::DecompressOptions), and every reader
/// that uses it): [`MAX_UNCOMPRESSED_SIZE`] unless [`set_max_uncompressed`] changed it.
pub fn max_uncompressed() -> u64 {
    UNCOMPRESSED_LIMIT.load(Ordering::Relaxed)
}

/// Sets the limit [`max_uncompressed`] returns from now on, for the whole process: for a tool
/// that runs where memory or disk is short, so that no compressed bundle declaring more is
/// decoded. Options built before the call keep the limit they were built with.
pub fn set_max_uncompressed(limit: u64) {
    UNCOMPRESSED_LIMIT.store(limit, Ordering::Relaxed);
}

/// Size of the part of an uncompressed bundle that comgr reads when the HIP runtime looks a
/// code object up: a header (magic, count, entry records) longer than this cannot be loaded.
pub const HIP_HEADER_READ_LIMIT: u64 = 4096;

/// Most bundles [`iter_concatenated`](crate::iter_concatenated) yields from one input (a
/// ROCm library holds a few hundred).
pub const MAX_CONCATENATED: usize = 1 << 20;
