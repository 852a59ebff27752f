//! Bounds applied to every count and size read from a file. Bundle counts and sizes are bounded
//! by `gfxkit_bundle::limits`, which reads the bundles.

/// Most members read from one archive.
pub const MAX_MEMBERS: usize = 1 << 20;

/// Most relocations, symbols or program headers walked in one ELF file.
pub const MAX_RECORDS: u64 = 1 << 28;

/// Largest section or segment alignment accepted (16 MiB; real files use up to 2 MiB). Every
/// layout unit derives from these, so this bounds the padding a rewrite can add.
pub const MAX_ALIGN: u64 = 1 << 24;
