//! Bounds on sizes and counts read from files.

/// Deepest MessagePack nesting read in a TOC or marker.
pub const MAX_TOC_DEPTH: usize = 16;
/// Most kernels one TOC may list.
pub const MAX_KERNELS: usize = 1 << 20;
/// Largest kernel decoded (a code object; real ones are at most a few hundred MiB).
pub const MAX_KERNEL_SIZE: u64 = 4 << 30;
/// Most bytes read as a HIPK marker (the runtime parses at most 64 KiB).
pub const MAX_MARKER: usize = 64 * 1024;
