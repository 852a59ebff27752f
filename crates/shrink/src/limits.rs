//! Bounds applied to every count and size read from a file.

/// Most entries one bundle may declare.
pub const MAX_ENTRIES: u64 = 65_536;

/// Longest entry ID accepted, in bytes.
pub const MAX_ID_LEN: u64 = 4096;

/// Largest uncompressed size a CCOB header may declare (64 GiB). Decompression output grows
/// with the data actually produced, so this bounds memory even when a header lies.
pub const MAX_UNCOMPRESSED: u64 = 64 << 30;

/// Most bundles read from one region (a ROCm library holds a few thousand).
pub const MAX_BUNDLES: usize = 1 << 20;

/// Most members read from one archive.
pub const MAX_MEMBERS: usize = 1 << 20;

/// Most relocations, symbols or program headers walked in one ELF file.
pub const MAX_RECORDS: u64 = 1 << 28;

/// Largest section or segment alignment accepted (16 MiB; real files use up to 2 MiB). Every
/// layout unit derives from these, so this bounds the padding a rewrite can add.
pub const MAX_ALIGN: u64 = 1 << 24;
