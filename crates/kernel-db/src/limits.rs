//! Bounds on every count, size and depth read from a kernel database.
//!
//! Each reader takes a [`Limits`] (its `Default` holds the constants below), so a caller that
//! runs where memory is short can lower them. Real values are noted beside each constant.

/// Deepest nesting of library nodes and predicates in a Tensile index. Debian's rocBLAS 5.5.1
/// index nests library nodes 7 deep and predicates 3 deep.
pub const MAX_DEPTH: usize = 64;

/// Most library nodes, matching-table entries and predicates one Tensile index may hold.
/// Debian's rocBLAS 5.5.1 index: about 1,000 nodes and 470,516 table entries.
pub const MAX_NODES: u64 = 1 << 24;

/// Most solutions one Tensile index may list (Debian's rocBLAS 5.5.1: 56,980).
pub const MAX_SOLUTIONS: u64 = 1 << 22;

/// Largest decompressed size of a `.dat.zlib` index, of a `.kdb` blob and of an `.aks2`
/// stream (4 GiB; gfx942's uncompressed hipBLASLt index was 2.21 GB).
pub const MAX_DECOMPRESSED: u64 = 4 << 30;

/// Largest `.kdb` file read. SQLite reads a database from memory through one
/// `sqlite3_malloc` of an `int` size, so the bound cannot pass 2 GiB - 1 (TheRock once
/// shipped a 745 MB `gfx1030.kdb`).
pub const MAX_KDB_SIZE: u64 = i32::MAX as u64;

/// Most records listed from one `.kdb` file.
pub const MAX_RECORDS: u64 = 1 << 22;

/// Most entries one `.aks2` directory may declare.
pub const MAX_AKS2_ENTRIES: u64 = 1 << 20;

/// Longest entry name in an `.aks2` directory, in bytes, NUL included.
pub const MAX_NAME_LEN: u64 = 4096;

/// The bounds one reader applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// [`MAX_DEPTH`].
    pub max_depth: usize,
    /// [`MAX_NODES`].
    pub max_nodes: u64,
    /// [`MAX_SOLUTIONS`].
    pub max_solutions: u64,
    /// [`MAX_DECOMPRESSED`].
    pub max_decompressed: u64,
    /// [`MAX_KDB_SIZE`] (values above it are treated as it).
    pub max_kdb_size: u64,
    /// [`MAX_RECORDS`].
    pub max_records: u64,
    /// [`MAX_AKS2_ENTRIES`].
    pub max_aks2_entries: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: MAX_DEPTH,
            max_nodes: MAX_NODES,
            max_solutions: MAX_SOLUTIONS,
            max_decompressed: MAX_DECOMPRESSED,
            max_kdb_size: MAX_KDB_SIZE,
            max_records: MAX_RECORDS,
            max_aks2_entries: MAX_AKS2_ENTRIES,
        }
    }
}
