//! The outcome of `prune` and `recompress`, for one file, a package or a directory tree: what
//! `gfxkit prune --json` / `gfxkit recompress --json` print and Python's `gfxkit.prune` /
//! `gfxkit.recompress` return (one serialisation for both front ends).

use gfxkit_shrink::Report;
use serde::Serialize;

/// One rewrite: the input, where it went and what was done.
#[derive(Debug, Clone, Serialize)]
pub struct PruneOutcome<'a> {
    /// The input as named.
    pub input: &'a str,
    /// The file written, or null for a dry run.
    pub output: Option<String>,
    /// Whether nothing was written (the rewrite was verified in memory).
    pub dry_run: bool,
    /// Seconds the rewrite, its verification and the write took.
    pub seconds: f64,
    /// A file's report (its fields, flattened) or a package's members.
    #[serde(flatten)]
    pub done: Done<'a>,
}

/// What a rewrite did.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Done<'a> {
    /// One file: its report (`kind`, `size_before`, `size_after`, `unmatched`, `regions`).
    File(&'a Report),
    /// A package: its rewritten members.
    Package {
        /// The rewritten members, in package order.
        members: Vec<MemberOutcome<'a>>,
        /// For a prune, the members (and directories) kept or dropped whole or cut to the
        /// kept rows, as a tree's `files` (left out when there are none).
        #[serde(skip_serializing_if = "<[TreeFile]>::is_empty")]
        files: &'a [TreeFile],
    },
    /// A directory tree: every path under it and what became of it.
    Tree {
        /// Bytes of the tree's files before (symbolic links and directories not counted).
        size_before: u64,
        /// Bytes of the files written.
        size_after: u64,
        /// Targets of the selection that match no device code of the tree.
        unmatched: &'a [String],
        /// Each file and symbolic link, in path order (a directory only when it is dropped
        /// whole, with kind `directory`).
        files: &'a [TreeFile],
    },
}

/// One rewritten member of a package.
#[derive(Debug, Clone, Serialize)]
pub struct MemberOutcome<'a> {
    /// `package!member`.
    pub path: &'a str,
    /// Bytes before.
    pub size_before: u64,
    /// Bytes after.
    pub size_after: u64,
    /// What the rewrite did.
    #[serde(flatten)]
    pub report: &'a Report,
}

/// What became of one path of a pruned tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TreeAction {
    /// Device code kept: copied unchanged.
    Kept,
    /// Device code for other architectures only: not written.
    Dropped,
    /// Rewritten to the kept architectures (a host binary or bundle pruned, a Tensile index
    /// cut to the kept rows).
    Rewritten,
    /// No device code: copied unchanged (a symbolic link recreated as one, a directory
    /// created).
    Copied,
}

/// One path of a pruned tree (`prune TREE -o OUTDIR`).
#[derive(Debug, Clone, Serialize)]
pub struct TreeFile {
    /// The path relative to the tree, `/`-separated.
    pub path: String,
    /// `code-object`, `kpack`, `tensile-index`, `tensile-mapping`, `miopen-kdb`, `aks2`,
    /// `aotriton-pack`, `aiter-map`, `host` (a host binary or bundle with offload bundles, or a
    /// binary split by kpack), `package` (a wheel, tarball or other package, pruned as one of
    /// its own), `symlink`, `directory` (one dropped whole) or `file`.
    pub kind: &'static str,
    /// What became of it.
    pub action: TreeAction,
    /// The device targets it held (code objects' and records' target IDs, an index's row
    /// processors, a host file's bundle entries), sorted, without repeats.
    pub targets: Vec<String>,
    /// Bytes before.
    pub size_before: u64,
    /// Bytes after (0 when dropped).
    pub size_after: u64,
    /// Why, where the action is not evident (`in hsa/gfx950/, a directory for gfx950`,
    /// `holds kept and dropped targets; not split`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a rewritten Tensile index: the rows kept and dropped and the solutions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexOutcome>,
    /// For a rewritten host binary or bundle: the report of its rewrite, as for one file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
}

/// What the rewrite of a multi-architecture Tensile index kept.
#[derive(Debug, Clone, Serialize)]
pub struct IndexOutcome {
    /// Rows kept, in order.
    pub kept_rows: Vec<IndexRow>,
    /// Rows dropped, in order.
    pub dropped_rows: Vec<IndexRow>,
    /// Solutions listed before.
    pub solutions_before: usize,
    /// Solutions listed after (those the kept rows reach).
    pub solutions_after: usize,
}

/// A hardware row of a Tensile index.
#[derive(Debug, Clone, Serialize)]
pub struct IndexRow {
    /// The processor its predicate names (null for `TruePred`).
    pub processor: Option<String>,
    /// The CU count its predicate names.
    pub cu_count: Option<u64>,
    /// The predicate as text.
    pub predicate: String,
    /// Solutions the row reaches.
    pub solutions: usize,
}
