//! The text form of gfxkit's answers: the tables and reports `gfxkit` prints, one module per
//! command, each writing an answer of [`gfxkit_inventory`] or [`gfxkit_io`] (the same value
//! `--json` prints) to a writer. The command line only chooses between this and JSON.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod check;
pub mod diff;
pub mod doctor;
pub mod group;
pub mod inspect;
pub mod kernels;
pub mod kpack;
pub mod list;
pub mod prune;
pub mod rocm;
pub mod select;
pub mod size;
pub mod target;
pub mod verify;

/// `n` and the noun: `one` for exactly one, `many` otherwise ("1 file", "3 files", "0 files").
pub(crate) fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}
