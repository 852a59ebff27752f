//! Bounds applied to every count and size the rewrite reads from a file, beyond those of the
//! readers it builds on: bundle counts and sizes are bounded by `gfxkit_bundle::limits` (whose
//! `Limits`, the one bound a caller may change, comes with the `Transform`), archive members
//! by `gfxkit_host::limits`, as host discovery reads them. These are structural bounds on
//! damaged input, fixed like those.

/// Most relocations, symbols or program headers walked in one ELF file.
pub const MAX_RECORDS: u64 = 1 << 28;

/// Largest section or segment alignment accepted (16 MiB; real files use up to 2 MiB). Every
/// layout unit derives from these, so this bounds the padding a rewrite can add.
pub const MAX_ALIGN: u64 = 1 << 24;
