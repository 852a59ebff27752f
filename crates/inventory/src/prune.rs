//! The outcome of `prune` and `recompress`, for one file or a package: what
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
