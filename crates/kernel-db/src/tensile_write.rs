//! Rewriting a multi-architecture Tensile index to some of its hardware rows: what `gfxkit
//! prune` of a rocBLAS tree writes for `TensileLibrary.dat`.
//!
//! [`prune_rows`] keeps the rows of the root `Hardware` node a caller's rule keeps (by
//! processor and CU count) and, of the solutions, exactly those the kept rows reach; every
//! other field of the index, of the root node and of each kept row and solution is copied byte
//! for byte. Only the container heads that change (the index map, the `solutions` and `rows`
//! arrays) are written, through [`rmp::encode`]: the 117 MB index of rocBLAS 5.5.1 is never
//! decoded into a value tree. Solutions keep their `index` (library nodes refer to solutions by
//! `index`, not by position), so the kept rows need no change. An indexed index
//! (`format_version: 2`) stays indexed: its `solutions_index` table and `solutions_blob` are
//! written anew for the kept solutions, packed in the input's order.
//!
//! The result is read back with [`Index::parse_with`] before it is returned: it must hold
//! exactly the kept rows, in order, with the same processors, CU counts and solution sets, and
//! every solution it lists must be reached by a row and carry the same name as before. A
//! failure of that check is an error; the caller writes nothing.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use gfxkit_kernel_db::tensile::Index;
//! use gfxkit_kernel_db::tensile_write::prune_rows;
//! use gfxkit_kernel_db::Limits;
//! use rmpv::Value;
//! let s = |t: &str| Value::from(t);
//! let map = |kv: Vec<(&str, Value)>| Value::Map(kv.into_iter().map(|(k, v)| (s(k), v)).collect());
//! let row = |p: &str, i: i64| map(vec![
//!     ("predicate", map(vec![("type", s("AMDGPU")),
//!         ("value", map(vec![("type", s("Processor")), ("value", s(p))]))])),
//!     ("library", map(vec![("type", s("Single")), ("index", Value::from(i))])),
//! ]);
//! let sol = |i: i64, n: &str| map(vec![("index", Value::from(i)), ("name", s(n))]);
//! let index = map(vec![
//!     ("solutions", Value::Array(vec![sol(0, "k_gfx90a"), sol(1, "k_gfx1030")])),
//!     ("library", map(vec![("type", s("Hardware")),
//!         ("rows", Value::Array(vec![row("gfx90a", 0), row("gfx1030", 1)]))])),
//! ]);
//! let mut bytes = Vec::new();
//! rmpv::encode::write_value(&mut bytes, &index)?;
//! let pruned = prune_rows(&bytes, |r| r.processor == Some("gfx90a"), &Limits::default())?;
//! assert_eq!((pruned.solutions_before, pruned.solutions_after), (2, 1));
//! let back = Index::parse(&pruned.bytes)?;
//! assert_eq!(back.rows()[0].processor, Some("gfx90a"));
//! assert_eq!(back.solutions[0].name, "k_gfx90a");
//! # Ok(()) }
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use crate::tensile::{Index, Layout, NodeKind, RowSummary};
use gfxkit_msgpack::Reader;
use std::collections::BTreeSet;

/// One hardware row of an index, as the report of a rewrite names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowInfo {
    /// Position among the root's rows in the input.
    pub position: usize,
    /// The processor its predicate names (`None` for `TruePred` and other predicates).
    pub processor: Option<String>,
    /// The CU count its predicate names.
    pub cu_count: Option<u64>,
    /// The predicate, as text (`AMDGPU(And(Processor=gfx90a, CUCount=104))`).
    pub predicate: String,
    /// How many solutions the row reaches.
    pub solutions: usize,
}

/// A rewritten index and what the rewrite kept.
#[derive(Debug, Clone)]
pub struct PrunedIndex {
    /// The new index (MessagePack), already read back and checked.
    pub bytes: Vec<u8>,
    /// The rows kept, in order.
    pub kept: Vec<RowInfo>,
    /// The rows dropped, in order.
    pub dropped: Vec<RowInfo>,
    /// Solutions listed before.
    pub solutions_before: usize,
    /// Solutions listed after: those the kept rows reach.
    pub solutions_after: usize,
}

fn info(r: &RowSummary<'_>) -> RowInfo {
    RowInfo {
        position: r.position,
        processor: r.processor.map(str::to_owned),
        cu_count: r.cu_count,
        predicate: r
            .predicate
            .map(|p| p.to_string())
            .unwrap_or_else(|| "none".to_owned()),
        solutions: r.solutions.len(),
    }
}

/// Solution `i`'s map within `bytes`, as the parser found it.
fn solution_bytes<'b>(bytes: &'b [u8], index: &Index<'_>, i: usize) -> Result<&'b [u8]> {
    index.solution_bytes(bytes, i).ok_or_else(|| {
        let at = index.solutions.get(i).map_or(0, |s| s.offset);
        Error::at(at, ErrorKind::Inconsistent("solution extent".into()))
    })
}

fn encode_err(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Msgpack(format!("cannot encode: {e}")))
}

/// Rewrites the index `bytes` (MessagePack; decompress a `.dat.zlib` first) to the rows of its
/// root `Hardware` node for which `keep` holds and the solutions they reach, and reads the
/// result back (see the module documentation). An index whose root is not a `Hardware` node
/// (a lazy shard, a per-architecture index without rows) is an error: it has no rows to choose
/// from.
pub fn prune_rows(
    bytes: &[u8],
    keep: impl Fn(&RowSummary<'_>) -> bool,
    limits: &Limits,
) -> Result<PrunedIndex> {
    let index = Index::parse_with(bytes, limits)?;
    prune_parsed(bytes, &index, keep, limits)
}

/// [`prune_rows`] of an index already parsed from `bytes` (a caller that looked at its rows
/// first does not parse it twice).
pub fn prune_parsed(
    bytes: &[u8],
    index: &Index<'_>,
    keep: impl Fn(&RowSummary<'_>) -> bool,
    limits: &Limits,
) -> Result<PrunedIndex> {
    prune_summarized(bytes, index, &index.rows(), keep, limits)
}

/// [`prune_parsed`] with the index's rows already summarized ([`Index::rows`], which walks
/// the whole tree: a caller that has them does not walk it twice).
pub fn prune_summarized(
    bytes: &[u8],
    index: &Index<'_>,
    rows: &[RowSummary<'_>],
    keep: impl Fn(&RowSummary<'_>) -> bool,
    limits: &Limits,
) -> Result<PrunedIndex> {
    if !matches!(index.library.kind, NodeKind::Hardware(_)) {
        return Err(Error::at(
            index.library.offset,
            ErrorKind::Inconsistent(
                "the library is not a Hardware node: the index has no rows per processor".into(),
            ),
        )
        .place("library"));
    }
    let flags: Vec<bool> = rows.iter().map(&keep).collect();
    let mut wanted: BTreeSet<u64> = BTreeSet::new();
    for (r, _) in rows.iter().zip(&flags).filter(|(_, k)| **k) {
        wanted.extend(r.solutions.iter().copied());
    }
    let kept_solutions = index
        .solutions
        .iter()
        .filter(|s| wanted.contains(&s.index))
        .count();

    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() / 2);
    let mut c = Reader::new(bytes);
    let n = c.map("the index map {solutions, library}")?;
    rmp::encode::write_map_len(&mut out, n).map_err(encode_err)?;
    // The keys the parser read are the first of each name; a repeated key is copied as it is.
    let mut first = BTreeSet::new();
    let indexed = index.layout() == Layout::Indexed;
    for _ in 0..n {
        let key = c.skip()?;
        out.extend_from_slice(key.bytes);
        let name = key.as_str().filter(|k| first.insert(k.to_owned()));
        match name {
            Some("solutions") if !indexed => {
                // The parser read this array and knows where each solution lies: they are
                // copied without being stepped over again.
                let count = c.array("an array of solutions")?;
                if count as usize != index.solutions.len() {
                    return Err(Error::at(
                        c.offset(),
                        ErrorKind::Inconsistent("solution count".into()),
                    ));
                }
                rmp::encode::write_array_len(&mut out, kept_solutions as u32)
                    .map_err(encode_err)?;
                let mut end = c.pos();
                for (i, s) in index.solutions.iter().enumerate() {
                    let raw = solution_bytes(bytes, index, i)?;
                    end = s.offset as usize + raw.len();
                    if wanted.contains(&s.index) {
                        out.extend_from_slice(raw);
                    }
                }
                c = Reader::new(bytes).at(end);
            }
            Some("solutions_index") if indexed => {
                // The kept solutions, in the input's order, packed one after another.
                c.skip()?;
                let kept = || index.solutions.iter().enumerate();
                let kept = kept().filter(|(_, s)| wanted.contains(&s.index));
                rmp::encode::write_array_len(&mut out, 3 * kept_solutions as u32)
                    .map_err(encode_err)?;
                let mut offset = 0u64;
                for (i, s) in kept {
                    let len = solution_bytes(bytes, index, i)?.len() as u64;
                    for v in [s.index, offset, len] {
                        rmp::encode::write_uint(&mut out, v).map_err(encode_err)?;
                    }
                    offset += len;
                }
            }
            Some("solutions_blob") if indexed => {
                c.skip()?;
                let mut slices = Vec::with_capacity(kept_solutions);
                for (i, s) in index.solutions.iter().enumerate() {
                    if wanted.contains(&s.index) {
                        slices.push(solution_bytes(bytes, index, i)?);
                    }
                }
                let len: usize = slices.iter().map(|s| s.len()).sum();
                let len = u32::try_from(len).map_err(encode_err)?;
                rmp::encode::write_bin_len(&mut out, len).map_err(encode_err)?;
                for slice in slices {
                    out.extend_from_slice(slice);
                }
            }
            Some("library") => {
                let value = c.skip()?;
                let mut lc = Reader::new(bytes).at(value.offset as usize);
                let fields = lc.map("a library node (map)")?;
                rmp::encode::write_map_len(&mut out, fields).map_err(encode_err)?;
                for _ in 0..fields {
                    let k = lc.skip()?;
                    out.extend_from_slice(k.bytes);
                    let v = lc.skip()?;
                    if k.as_str() == Some("rows") {
                        let mut rc = Reader::new(bytes).at(v.offset as usize);
                        let count = rc.array("an array of rows")?;
                        let kept = flags.iter().filter(|k| **k).count();
                        rmp::encode::write_array_len(&mut out, kept as u32).map_err(encode_err)?;
                        for i in 0..count as usize {
                            let raw = rc.skip()?;
                            if flags.get(i).copied().unwrap_or(false) {
                                out.extend_from_slice(raw.bytes);
                            }
                        }
                    } else {
                        out.extend_from_slice(v.bytes);
                    }
                }
            }
            _ => out.extend_from_slice(c.skip()?.bytes),
        }
    }

    let kept: Vec<RowInfo> = rows
        .iter()
        .zip(&flags)
        .filter(|(_, k)| **k)
        .map(|(r, _)| info(r))
        .collect();
    let dropped: Vec<RowInfo> = rows
        .iter()
        .zip(&flags)
        .filter(|(_, k)| !**k)
        .map(|(r, _)| info(r))
        .collect();
    let kept_rows: Vec<&RowSummary<'_>> = rows
        .iter()
        .zip(&flags)
        .filter(|(_, k)| **k)
        .map(|(r, _)| r)
        .collect();
    check_read_back(index, &kept_rows, kept_solutions, &out, limits)?;
    Ok(PrunedIndex {
        bytes: out,
        kept,
        dropped,
        solutions_before: index.solutions.len(),
        solutions_after: kept_solutions,
    })
}

/// The read-back of a rewritten index: exactly the kept rows (processor, CU count, solution
/// set), every solution reached and named as in the input.
fn check_read_back(
    before: &Index<'_>,
    kept: &[&RowSummary<'_>],
    solutions: usize,
    bytes: &[u8],
    limits: &Limits,
) -> Result<()> {
    let bad = |why: String| {
        Error::new(ErrorKind::Inconsistent(format!(
            "the rewritten index read back differs: {why}"
        )))
    };
    let after =
        Index::parse_with(bytes, limits).map_err(|e| bad(format!("it does not read: {e}")))?;
    let rows = after.rows();
    if rows.len() != kept.len() {
        return Err(bad(format!(
            "{} rows instead of {}",
            rows.len(),
            kept.len()
        )));
    }
    for (i, (a, b)) in rows.iter().zip(kept).enumerate() {
        if a.processor != b.processor || a.cu_count != b.cu_count || a.solutions != b.solutions {
            return Err(bad(format!(
                "row {i} ({}) is not the input's row {}",
                a.predicate.map(|p| p.to_string()).unwrap_or_default(),
                b.position
            )));
        }
        for s in &a.solutions {
            let name_after = after.solution(*s).map(|s| s.name);
            let name_before = before.solution(*s).map(|s| s.name);
            if name_after.is_none() || name_after != name_before {
                return Err(bad(format!("solution {s} of row {i} does not resolve")));
            }
        }
    }
    if after.solutions.len() != solutions {
        return Err(bad(format!(
            "{} solutions instead of {solutions}",
            after.solutions.len()
        )));
    }
    // Every solution listed is reached: the rows reach exactly the kept solutions (checked
    // row by row above), as many as are listed, and indices are unique.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    fn s(t: &str) -> Value {
        Value::from(t)
    }

    fn map(kv: Vec<(&str, Value)>) -> Value {
        Value::Map(kv.into_iter().map(|(k, v)| (s(k), v)).collect())
    }

    fn processor(p: &str) -> Value {
        map(vec![("type", s("Processor")), ("value", s(p))])
    }

    fn row(pred: Value, lib: Value) -> Value {
        map(vec![("predicate", pred), ("library", lib)])
    }

    fn index() -> Vec<u8> {
        let amdgpu = |v: Value| map(vec![("type", s("AMDGPU")), ("value", v)]);
        let sol = |i: i64, n: &str| {
            map(vec![
                ("index", Value::from(i)),
                ("name", s(n)),
                ("extra", Value::Array(vec![Value::from(1.5), Value::Nil])),
            ])
        };
        let matching = |ids: &[i64]| {
            map(vec![
                ("type", s("Matching")),
                ("distance", s("Euclidean")),
                (
                    "table",
                    Value::Array(
                        ids.iter()
                            .map(|i| {
                                map(vec![
                                    ("key", Value::Array(vec![Value::from(*i), Value::from(2)])),
                                    ("index", Value::from(*i)),
                                    ("speed", Value::from(3.0)),
                                ])
                            })
                            .collect(),
                    ),
                ),
            ])
        };
        let v = map(vec![
            ("minimumRequiredVersion", s("4.33.0")),
            (
                "solutions",
                Value::Array(vec![
                    sol(7, "a90a"),
                    sol(3, "b90a"),
                    sol(5, "c1030"),
                    sol(9, "unused"),
                    sol(1, "d90a104"),
                ]),
            ),
            (
                "library",
                map(vec![
                    ("type", s("Hardware")),
                    (
                        "rows",
                        Value::Array(vec![
                            row(
                                amdgpu(map(vec![
                                    ("type", s("And")),
                                    (
                                        "value",
                                        Value::Array(vec![
                                            processor("gfx90a"),
                                            map(vec![
                                                ("type", s("CUCount")),
                                                ("value", Value::from(104)),
                                            ]),
                                        ]),
                                    ),
                                ])),
                                matching(&[1, 3]),
                            ),
                            row(amdgpu(processor("gfx1030")), matching(&[5])),
                            row(amdgpu(processor("gfx90a")), matching(&[7, 3])),
                            row(map(vec![("type", s("TruePred"))]), matching(&[5])),
                        ]),
                    ),
                ]),
            ),
        ]);
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, &v).unwrap();
        b
    }

    #[test]
    fn keeps_the_rows_asked_and_the_solutions_they_reach() {
        let b = index();
        let p = prune_rows(&b, |r| r.processor == Some("gfx90a"), &Limits::default()).unwrap();
        assert_eq!(p.kept.len(), 2);
        assert_eq!(p.kept[0].cu_count, Some(104));
        assert_eq!(p.dropped.len(), 2);
        assert_eq!((p.solutions_before, p.solutions_after), (5, 3));
        let back = Index::parse(&p.bytes).unwrap();
        let names: Vec<&str> = back.solutions.iter().map(|s| s.name).collect();
        assert_eq!(names, ["a90a", "b90a", "d90a104"]);
        let v = rmpv::decode::read_value(&mut &p.bytes[..]).unwrap();
        // Other fields are kept as they were.
        assert_eq!(v["minimumRequiredVersion"], s("4.33.0"));
        assert!(p.bytes.len() < b.len());
    }

    #[test]
    fn keeping_every_row_keeps_every_reached_solution() {
        let b = index();
        let p = prune_rows(&b, |_| true, &Limits::default()).unwrap();
        assert_eq!(p.kept.len(), 4);
        // The solution no row reaches goes.
        assert_eq!(p.solutions_after, 4);
    }

    #[test]
    fn keeping_no_row_leaves_an_empty_index_that_reads() {
        let p = prune_rows(&index(), |_| false, &Limits::default()).unwrap();
        let back = Index::parse(&p.bytes).unwrap();
        assert!(back.rows().is_empty() && back.solutions.is_empty());
    }

    #[test]
    fn an_index_without_hardware_rows_is_refused() {
        let v = map(vec![
            ("solutions", Value::Array(vec![])),
            (
                "library",
                map(vec![("type", s("Placeholder")), ("value", s("x"))]),
            ),
        ]);
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, &v).unwrap();
        let e = prune_rows(&b, |_| true, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("not a Hardware node"), "{e}");
    }

    #[test]
    fn a_truncated_index_is_an_error_not_a_panic() {
        let b = index();
        for cut in [1, b.len() / 3, b.len() - 1] {
            assert!(prune_rows(&b[..cut], |_| true, &Limits::default()).is_err());
        }
    }
}
