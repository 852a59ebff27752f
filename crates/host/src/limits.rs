//! Limits on counts read from untrusted files, for what host discovery walks (archives,
//! sections, wrapper tables, OffloadBinaries). The limits of bundles themselves are
//! [`gfxkit_bundle::limits`]'s; the one on bundles back to back is shared from there.

/// Archives inside archives are read this deep.
pub const MAX_ARCHIVE_DEPTH: usize = 4;
/// Members read from one archive.
pub const MAX_ARCHIVE_MEMBERS: usize = 1 << 20;
/// Bundles read from one section: the bundle crate's limit on bundles laid back to back.
pub const MAX_BUNDLES_PER_SECTION: usize = gfxkit_bundle::limits::MAX_CONCATENATED;
/// Wrapper records read from one `.hipFatBinSegment` section.
pub const MAX_WRAPPERS: usize = 1 << 20;
/// `PT_LOAD` segments read from a file without a section table.
pub const MAX_LOAD_SEGMENTS: usize = 256;
/// OffloadBinary images read from one section.
pub const MAX_OFFLOAD_IMAGES: usize = 1 << 16;
/// Key/value strings read from one OffloadBinary entry.
pub const MAX_OFFLOAD_STRINGS: u64 = 4096;
/// Problems recorded for one input before further ones are dropped.
pub const MAX_PROBLEMS: usize = 10_000;
