//! Tensile and TensileLite solution indexes (`TensileLibrary*.dat`, MessagePack; `.dat.zlib`,
//! a zlib stream of the same bytes).
//!
//! The index is a map `{solutions: [...], library: {...}}`. Each solution has an `index` (a
//! position the library nodes refer to) and a `name` (the kernel's symbol in a code object).
//! The library is a tree of typed nodes: `Hardware` rows select a processor (predicate
//! `AMDGPU` over `Processor`, `CUCount`, `And`, `TruePred`), then `ProblemMap`, `Problem`
//! rows, and leaves `Single {index}`, `Matching {table: [{key, index, speed}]}` and
//! `DecisionTree {trees: [{tree, value}], nullValue}`. A lazy per-architecture master holds
//! `Placeholder {value}` nodes naming the shard files loaded on first use.
//! `EqualityMatching` is a predicate of a `Problem` row (over a `Matching` whose distance is
//! `Equality`), read as [`PredicateKind::Other`]. A node of any other type is kept as
//! [`NodeKind::Unknown`] with its type name.
//!
//! The reader decodes in place ([`gfxkit_msgpack`]): strings borrow from the input, keys of
//! matching tables and predicate values stay undecoded ([`Raw`]), and the solutions keep only
//! their index and name. Every count and depth is bounded by [`Limits`]; an error names the
//! byte offset and the path (`library.rows[3].library.map["..."]`).
//!
//! Measured on Debian trixie's rocBLAS 5.5.1 `TensileLibrary.dat` (117 MB, 56,980
//! solutions, release build, an idle 2-core machine): parsed in 42 ms, peak resident memory
//! 145 MiB of which 112 MiB is the file itself; decoding the same file into one `rmpv::Value`
//! tree takes 0.55 s and peaks at 1.22 GiB (`examples/tensile_index.rs`). The reader steps
//! over what it does not keep without decoding it, and takes two exact shortcuts where
//! Tensile repeats itself: a matching table's entry is read by comparing its bytes with the
//! layout ([`Shape`]) of an entry before it, and a large solution field that differs from the
//! last solution's in a few places is jumped through where its bytes are the same
//! ([`Reader::skip_like`]).
//!
//! YAML indexes (Tensile before MessagePack, rocBLAS built with `TENSILE_YAML`) are read
//! through [`crate::tensile_yaml`], which transcodes them to these bytes ([`index_bytes`]).
//!
//! The indexed layout of 2026 (`format_version: 2`, hipBLASLt's TensileLite) replaces the
//! `solutions` array by `solutions_index`, a flat array of `[index, offset, length]` triples,
//! and `solutions_blob`, a binary holding each solution's map packed on its own at `offset`
//! for `length` bytes; the `library` tree is the same. It is read as the loader checks it:
//! the table a whole number of triples, no field negative, every index within the loader's
//! 32-bit `int` and listed once, every slice inside the blob and holding exactly one solution
//! map whose own `index` is the table's. A `format_version` other than 1 or 2 is refused (the
//! loader refuses a layout it does not know). [`Index::layout`] tells which layout was read;
//! [`Solution::offset`] is absolute in the input either way.

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
pub use gfxkit_msgpack::Raw;
use gfxkit_msgpack::{Head, Reader, Shape, Trace};
use std::collections::{BTreeSet, HashMap};

/// Solution positions by `index`, looked up once per leaf of the tree (millions of times in a
/// large index): a fast hash (seeded per process) while the solutions are listed, then, when
/// the indices are dense (every index seen: a run of consecutive numbers), a table over
/// their range.
#[derive(Debug, Clone, Default)]
struct ByIndex {
    map: HashMap<u64, usize, foldhash::fast::RandomState>,
    /// The lowest index and, from it, each index's position (`NONE` where none has it).
    dense: Option<(u64, Vec<usize>)>,
}

impl ByIndex {
    const NONE: usize = usize::MAX;

    /// Lists `index` at `position`; the position it had, if it was listed.
    fn insert(&mut self, index: u64, position: usize) -> Option<usize> {
        self.dense = None;
        self.map.insert(index, position)
    }

    fn clear(&mut self) {
        self.map.clear();
        self.dense = None;
    }

    /// Builds the table when the range of indices is at most four times their number.
    fn freeze(&mut self) {
        if self.dense.is_some() {
            return;
        }
        let (Some(&lo), Some(&hi)) = (self.map.keys().min(), self.map.keys().max()) else {
            return;
        };
        if hi - lo >= 4 * self.map.len() as u64 + 64 {
            return;
        }
        let mut table = vec![Self::NONE; (hi - lo) as usize + 1];
        for (&i, &at) in &self.map {
            table[(i - lo) as usize] = at;
        }
        self.dense = Some((lo, table));
    }

    #[inline]
    fn get(&self, index: u64) -> Option<usize> {
        match &self.dense {
            Some((lo, table)) => index
                .checked_sub(*lo)
                .and_then(|i| table.get(usize::try_from(i).ok()?))
                .copied()
                .filter(|&at| at != Self::NONE),
            None => self.map.get(&index).copied(),
        }
    }
}
use std::fmt;
use std::io::Read;

/// One solution of the index: what library nodes refer to by `index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Solution<'a> {
    /// The solution's `index`.
    pub index: u64,
    /// Its `name`: in rocBLAS's Tensile, the kernel's function symbol.
    pub name: &'a str,
    /// Its `kernelName`, when it has one (hipBLASLt's TensileLite: the kernel a solution runs
    /// is shared by solutions that differ in launch settings, so its name is not theirs).
    pub kernel_name: Option<&'a str>,
    /// Byte offset of the solution's map.
    pub offset: u64,
}

impl<'a> Solution<'a> {
    /// The function symbol of the kernel the solution runs: its `kernelName`, else its `name`.
    pub fn kernel(&self) -> &'a str {
        self.kernel_name.unwrap_or(self.name)
    }
}

/// A library node and the byte offset of its map.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<'a> {
    /// Byte offset of the node.
    pub offset: u64,
    /// What the node is.
    pub kind: NodeKind<'a>,
}

/// The node types gfxkit reads.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NodeKind<'a> {
    /// `Hardware`: rows selected by a hardware predicate.
    Hardware(Vec<Row<'a>>),
    /// `Problem`: rows selected by a problem predicate.
    Problem(Vec<Row<'a>>),
    /// `ProblemMap`: a library per key (the operation identifier, such as
    /// `Contraction_l_Alik_Bljk_Cijk_Dijk`).
    ProblemMap(Vec<(Raw<'a>, Node<'a>)>),
    /// `Single`: one solution.
    Single(u64),
    /// `Matching`: a table of problem sizes and the solution (or library) for each.
    Matching {
        /// The `distance` (`Euclidean`, `Equality`, ...), if present.
        distance: Option<&'a str>,
        /// The table.
        table: Vec<MatchEntry<'a>>,
    },
    /// `DecisionTree`: the library each tree leads to, and the one used when none matches.
    DecisionTree {
        /// The `value` of each tree.
        trees: Vec<Node<'a>>,
        /// `nullValue`, if it is a library node.
        null_value: Option<Box<Node<'a>>>,
    },
    /// `Placeholder`: a shard loaded on first use; `value` is its file prefix.
    Placeholder(&'a str),
    /// A node type gfxkit does not read, with its type name.
    Unknown(&'a str),
}

/// A row of a `Hardware` or `Problem` node.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    /// The row's predicate.
    pub predicate: Predicate<'a>,
    /// The library below it.
    pub library: Node<'a>,
}

/// An entry of a `Matching` table.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchEntry<'a> {
    /// The `key` (problem sizes), undecoded.
    pub key: Raw<'a>,
    /// What the entry leads to.
    pub value: Leaf<'a>,
    /// The `speed`, if present.
    pub speed: Option<f64>,
}

/// What a matching entry leads to: a solution `index` (Tensile) or a library node in
/// `value` (a `value` that is an integer is a solution index too).
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf<'a> {
    /// A solution index.
    Index(u64),
    /// A library node.
    Library(Box<Node<'a>>),
}

/// A predicate and its byte offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate<'a> {
    /// Byte offset of the predicate.
    pub offset: u64,
    /// What it tests.
    pub kind: PredicateKind<'a>,
}

/// The predicates gfxkit reads; any other keeps its type name and undecoded value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PredicateKind<'a> {
    /// `AMDGPU`: the hardware is an AMD GPU for which the inner predicate holds.
    Amdgpu(Box<Predicate<'a>>),
    /// `Processor`: the processor name (`gfx90a`).
    Processor(&'a str),
    /// `CUCount`: the number of compute units.
    CuCount(u64),
    /// `And` of the inner predicates.
    And(Vec<Predicate<'a>>),
    /// `Or` of the inner predicates.
    Or(Vec<Predicate<'a>>),
    /// `Not` of the inner predicate.
    Not(Box<Predicate<'a>>),
    /// `TruePred`: always true.
    True,
    /// Any other type (`TypesEqual`, `EqualityMatching`, `Fp16AltImpl`, ...).
    Other {
        /// The `type`.
        type_name: &'a str,
        /// The `value`, if present.
        value: Option<Raw<'a>>,
    },
}

impl<'a> Predicate<'a> {
    /// The first `Processor` under `AMDGPU` and `And` (not under `Or` or `Not`).
    pub fn processor(&self) -> Option<&'a str> {
        match &self.kind {
            PredicateKind::Processor(p) => Some(p),
            PredicateKind::Amdgpu(inner) => inner.processor(),
            PredicateKind::And(all) => all.iter().find_map(|p| p.processor()),
            _ => None,
        }
    }

    /// The first `CUCount` under `AMDGPU` and `And`.
    pub fn cu_count(&self) -> Option<u64> {
        match &self.kind {
            PredicateKind::CuCount(n) => Some(*n),
            PredicateKind::Amdgpu(inner) => inner.cu_count(),
            PredicateKind::And(all) => all.iter().find_map(|p| p.cu_count()),
            _ => None,
        }
    }

    /// Whether the predicate is `TruePred` (the catch-all row).
    pub fn is_true(&self) -> bool {
        matches!(self.kind, PredicateKind::True)
    }
}

impl fmt::Display for Predicate<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, op: &str, all: &[Predicate<'_>]| {
            write!(f, "{op}(")?;
            for (i, p) in all.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{p}")?;
            }
            write!(f, ")")
        };
        match &self.kind {
            PredicateKind::Amdgpu(inner) => write!(f, "AMDGPU({inner})"),
            PredicateKind::Processor(p) => write!(f, "Processor={p}"),
            PredicateKind::CuCount(n) => write!(f, "CUCount={n}"),
            PredicateKind::And(all) => list(f, "And", all),
            PredicateKind::Or(all) => list(f, "Or", all),
            PredicateKind::Not(inner) => write!(f, "Not({inner})"),
            PredicateKind::True => write!(f, "TruePred"),
            PredicateKind::Other { type_name, .. } => write!(f, "{type_name}"),
        }
    }
}

/// How an index holds its solutions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A `solutions` array of maps (`format_version` absent or 1).
    Array,
    /// `solutions_index` triples over a `solutions_blob` binary (`format_version: 2`).
    Indexed,
}

/// A parsed index: the solutions and the library tree, borrowing from the input bytes.
#[derive(Debug, Clone)]
pub struct Index<'a> {
    /// The solutions, in file order (for [`Layout::Indexed`], in the order of the table).
    pub solutions: Vec<Solution<'a>>,
    /// The root of the library tree.
    pub library: Node<'a>,
    by_index: ByIndex,
    /// Where each solution's map ends (it starts at its [`Solution::offset`]), which a rewrite
    /// copies without stepping over it again.
    ends: Vec<usize>,
    layout: Layout,
}

/// What one hardware row of the index reaches.
#[derive(Debug, Clone, PartialEq)]
pub struct RowSummary<'a> {
    /// Position of the row among the root's rows (0 when the root is not `Hardware`).
    pub position: usize,
    /// The row's predicate (`None` when the root is not `Hardware`: the whole tree is one row).
    pub predicate: Option<&'a Predicate<'a>>,
    /// The processor the predicate names ([`Predicate::processor`]).
    pub processor: Option<&'a str>,
    /// The CU count the predicate names ([`Predicate::cu_count`]).
    pub cu_count: Option<u64>,
    /// Every solution index reachable below the row.
    pub solutions: BTreeSet<u64>,
    /// The file prefixes of `Placeholder` nodes below the row (shards loaded on demand), in
    /// tree order, without repeats.
    pub placeholders: Vec<&'a str>,
    /// Type names of nodes below the row that gfxkit does not read (what they reach is
    /// unknown), without repeats.
    pub unknown: Vec<&'a str>,
}

impl<'a> Index<'a> {
    /// Parses an index with the default [`Limits`].
    pub fn parse(bytes: &'a [u8]) -> Result<Index<'a>> {
        Index::parse_with(bytes, &Limits::default())
    }

    /// Parses an index (the bytes of a `.dat` file, or of a `.dat.zlib` file after
    /// [`decompress_zlib`]).
    pub fn parse_with(bytes: &'a [u8], limits: &Limits) -> Result<Index<'a>> {
        let mut p = Parser {
            limits,
            nodes: 0,
            by_index: ByIndex::default(),
            ends: Vec::new(),
            library: 0,
            recorded: false,
        };
        let mut c = Reader::new(bytes);
        let root = Path::Root;
        // One pass over the top-level map: the solutions are read where they are (the library
        // refers to them, so one that comes first is read after them); other keys, and a key
        // repeated, are stepped over.
        let n = c
            .map("the index map {solutions, library}")
            .map_err(|e| Error::from(e).place(root.to_string()))?;
        let mut solutions = None;
        let mut version: Option<(u64, u64)> = None;
        let mut table_at = None;
        let mut blob: Option<Blob> = None;
        let mut library_at = None;
        let mut read_early = None;
        for _ in 0..n {
            let key = c
                .str()
                .map_err(|e| Error::from(e).place(root.to_string()))?;
            let here = Path::Key(&root, key);
            let placed = |e: gfxkit_msgpack::Error| Error::from(e).place(here.to_string());
            match key {
                "format_version" if version.is_none() => {
                    let at = c.offset();
                    version = Some((at, c.uint("a format version").map_err(placed)?));
                }
                // An indexed file's loader does not look at a `solutions` array.
                "solutions" if solutions.is_none() && !matches!(version, Some((_, 2))) => {
                    solutions = Some(p.solutions(&mut c, &here)?);
                }
                "solutions_index" if table_at.is_none() => {
                    table_at = Some(c.pos());
                    c.skip().map_err(placed)?;
                }
                "solutions_blob" if blob.is_none() => {
                    let at = c.pos();
                    match c.head().map_err(placed)? {
                        Head::Bin(len) => {
                            c.skip_bytes(len, at).map_err(placed)?;
                            blob = Some(Blob {
                                at,
                                start: c.pos() - len as usize,
                                len: len as usize,
                            });
                        }
                        other => {
                            return Err(placed(gfxkit_msgpack::unexpected(
                                at,
                                "a binary of solutions",
                                other,
                            )))
                        }
                    }
                }
                // Read where it lies when the solutions it refers to are known (an array
                // read before it, no version 2 so far: the common order), else stepped over
                // and read once they are. What it holds is judged after the map is read,
                // so errors come in the same order either way.
                "library" if library_at.is_none() => {
                    let at = c.pos();
                    library_at = Some(at);
                    if solutions.is_some() && !matches!(version, Some((_, 2))) {
                        p.by_index.freeze();
                        p.library = at;
                        let mut lc = c.clone();
                        let node = p.node(&mut lc, &Path::Key(&root, "library"), 0);
                        if node.is_ok() {
                            c = lc;
                        } else {
                            c.skip().map_err(placed)?;
                        }
                        read_early = Some(node);
                    } else {
                        c.skip().map_err(placed)?;
                    }
                }
                _ => {
                    c.skip().map_err(placed)?;
                }
            }
        }
        if c.remaining() > 0 {
            return Err(Error::at(
                c.offset(),
                ErrorKind::TrailingBytes(c.remaining() as u64),
            ));
        }
        let layout = match version {
            None | Some((_, 1)) => Layout::Array,
            Some((_, 2)) => Layout::Indexed,
            Some((at, v)) => {
                return Err(Error::at(at, ErrorKind::UnsupportedVersion(v)).place("format_version"))
            }
        };
        let (solutions, ends) = match layout {
            Layout::Array => {
                solutions.ok_or_else(|| Error::at(0, ErrorKind::MissingField("solutions")))?
            }
            Layout::Indexed => {
                // A `solutions` array read before `format_version` said 2 does not count.
                p.by_index.clear();
                let table = table_at
                    .ok_or_else(|| Error::at(0, ErrorKind::MissingField("solutions_index")))?;
                let blob =
                    blob.ok_or_else(|| Error::at(0, ErrorKind::MissingField("solutions_blob")))?;
                p.indexed_solutions(bytes, table, blob)?
            }
        };
        let lib_pos = library_at.ok_or_else(|| Error::at(0, ErrorKind::MissingField("library")))?;
        let library = match (layout, read_early) {
            (Layout::Array, Some(node)) => node?,
            _ => {
                p.nodes = 0;
                p.by_index.freeze();
                p.library = lib_pos;
                p.node(&mut c.at(lib_pos), &Path::Key(&root, "library"), 0)?
            }
        };
        Ok(Index {
            solutions,
            library,
            by_index: p.by_index,
            ends,
            layout,
        })
    }

    /// How the index holds its solutions.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The bytes of solution `i` (in file order) within `bytes`, the input the index was
    /// parsed from: its map alone.
    pub fn solution_bytes<'b>(&self, bytes: &'b [u8], i: usize) -> Option<&'b [u8]> {
        let start = self.solutions.get(i)?.offset as usize;
        bytes.get(start..*self.ends.get(i)?)
    }

    /// The solution with this `index`.
    pub fn solution(&self, index: u64) -> Option<&Solution<'a>> {
        self.by_index.get(index).and_then(|i| self.solutions.get(i))
    }

    /// One summary per row of the root `Hardware` node (or one for the whole tree when the
    /// root is another node, as in a shard).
    pub fn rows(&'a self) -> Vec<RowSummary<'a>> {
        match &self.library.kind {
            NodeKind::Hardware(rows) => rows
                .iter()
                .enumerate()
                .map(|(i, row)| summarize(&self.by_index, i, Some(&row.predicate), &row.library))
                .collect(),
            _ => vec![summarize(&self.by_index, 0, None, &self.library)],
        }
    }

    /// The solution indices no node of the tree reaches, ascending (Debian's rocBLAS 5.5.1
    /// index lists 722 of its 56,980 solutions under no row).
    pub fn unreachable_solutions(&'a self) -> Vec<u64> {
        let reached = summarize(&self.by_index, 0, None, &self.library).solutions;
        let mut out: Vec<u64> = self
            .solutions
            .iter()
            .map(|s| s.index)
            .filter(|i| !reached.contains(i))
            .collect();
        out.sort_unstable();
        out
    }

    /// Every `Placeholder` file prefix in the tree, in tree order, without repeats.
    pub fn placeholders(&'a self) -> Vec<&'a str> {
        summarize(&self.by_index, 0, None, &self.library).placeholders
    }
}

fn summarize<'a>(
    by_index: &ByIndex,
    position: usize,
    predicate: Option<&'a Predicate<'a>>,
    node: &'a Node<'a>,
) -> RowSummary<'a> {
    let mut s = RowSummary {
        position,
        predicate,
        processor: predicate.and_then(|p| p.processor()),
        cu_count: predicate.and_then(|p| p.cu_count()),
        solutions: BTreeSet::new(),
        placeholders: Vec::new(),
        unknown: Vec::new(),
    };
    // The leaves repeat solutions many times over (a matching table of 131,380 entries over
    // 1,468 solutions): marked in a table over the range of the indices (every leaf names a
    // solution of the index, checked when it was read), then built into the set at once.
    let mut reached = Reached::new(by_index);
    // Depth was bounded when parsing; an explicit stack keeps the walk off the call stack.
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match &n.kind {
            NodeKind::Hardware(rows) | NodeKind::Problem(rows) => {
                stack.extend(rows.iter().rev().map(|r| &r.library))
            }
            NodeKind::ProblemMap(map) => stack.extend(map.iter().rev().map(|(_, n)| n)),
            NodeKind::Single(i) => reached.mark(*i),
            NodeKind::Matching { table, .. } => {
                for e in table.iter().rev() {
                    match &e.value {
                        Leaf::Index(i) => reached.mark(*i),
                        Leaf::Library(n) => stack.push(n),
                    }
                }
            }
            NodeKind::DecisionTree { trees, null_value } => {
                if let Some(n) = null_value {
                    stack.push(n);
                }
                stack.extend(trees.iter().rev());
            }
            NodeKind::Placeholder(p) => {
                if !s.placeholders.contains(p) {
                    s.placeholders.push(p);
                }
            }
            NodeKind::Unknown(t) => {
                if !s.unknown.contains(t) {
                    s.unknown.push(t);
                }
            }
        }
    }
    s.solutions = reached.into_set();
    s
}

/// The solution indices a walk of the tree reached: marks over the range of the index's
/// solutions when they are dense ([`ByIndex`]), else each one met, sorted at the end.
enum Reached {
    Marks { lo: u64, seen: Vec<bool> },
    Listed(Vec<u64>),
}

impl Reached {
    fn new(by_index: &ByIndex) -> Reached {
        match &by_index.dense {
            Some((lo, table)) => Reached::Marks {
                lo: *lo,
                seen: vec![false; table.len()],
            },
            None => Reached::Listed(Vec::new()),
        }
    }

    #[inline]
    fn mark(&mut self, index: u64) {
        match self {
            // An index outside the range is one the parse did not check: listed, not lost.
            Reached::Marks { lo, seen } => match index
                .checked_sub(*lo)
                .and_then(|i| seen.get_mut(usize::try_from(i).ok()?))
            {
                Some(slot) => *slot = true,
                None => {
                    let mut all = Reached::listed(*lo, seen);
                    all.push(index);
                    *self = Reached::Listed(all);
                }
            },
            Reached::Listed(all) => all.push(index),
        }
    }

    fn listed(lo: u64, seen: &[bool]) -> Vec<u64> {
        (lo..)
            .zip(seen)
            .filter(|&(_, &s)| s)
            .map(|(i, _)| i)
            .collect()
    }

    fn into_set(self) -> BTreeSet<u64> {
        match self {
            Reached::Marks { lo, seen } => Reached::listed(lo, &seen).into_iter().collect(),
            Reached::Listed(all) => distinct(all),
        }
    }
}

/// The distinct values of `all`: marked in a table over their range when that is not much
/// larger than their number (solution indices are dense), else sorted.
fn distinct(mut all: Vec<u64>) -> BTreeSet<u64> {
    let (Some(&lo), Some(&hi)) = (all.iter().min(), all.iter().max()) else {
        return BTreeSet::new();
    };
    if hi - lo <= 8 * all.len() as u64 + 1024 {
        let mut seen = vec![false; (hi - lo) as usize + 1];
        for &i in &all {
            seen[(i - lo) as usize] = true;
        }
        return (lo..=hi).filter(|i| seen[(i - lo) as usize]).collect();
    }
    all.sort_unstable();
    all.dedup();
    all.into_iter().collect()
}

/// The MessagePack bytes of the index file `name` holding `data`, as [`Index::parse`] reads
/// them: a `.dat` file's own bytes, a `.dat.zlib` file's inflated, a `.yaml` file's
/// transcoded ([`crate::tensile_yaml::to_msgpack`]); both bounded by
/// [`Limits::max_decompressed`].
pub fn index_bytes<'d>(
    name: &str,
    data: &'d [u8],
    limits: &Limits,
) -> Result<std::borrow::Cow<'d, [u8]>> {
    use crate::sniff::{tensile_name, Encoding};
    use std::borrow::Cow;
    match tensile_name(name).map(|(_, e)| e) {
        Some(Encoding::Zlib) => decompress_zlib(data, limits.max_decompressed).map(Cow::Owned),
        Some(Encoding::Yaml) => crate::tensile_yaml::to_msgpack(data, limits).map(Cow::Owned),
        Some(Encoding::MessagePack) | None => Ok(Cow::Borrowed(data)),
    }
}

/// Decompresses a `.dat.zlib` index into memory, refusing more than `limit` bytes.
pub fn decompress_zlib(bytes: &[u8], limit: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut dec = flate2::read::ZlibDecoder::new(bytes).take(limit.saturating_add(1));
    dec.read_to_end(&mut out).map_err(|e| {
        Error::new(ErrorKind::Decompress {
            codec: "zlib",
            why: e.to_string(),
        })
    })?;
    if out.len() as u64 > limit {
        return Err(Error::new(ErrorKind::LimitExceeded {
            what: "decompressed index size",
            limit,
        }));
    }
    Ok(out)
}

/// Where an indexed file's `solutions_blob` lies: its head at `at`, its `len` bytes at `start`.
#[derive(Clone, Copy)]
struct Blob {
    at: usize,
    start: usize,
    len: usize,
}

/// The value each field of the solution maps read so far last held, by field name: a value
/// equal to it is stepped over in one comparison. Tensile writes the same `problemType`,
/// predicates and flags into most solutions of an index, and stepping over their many small
/// values one by one is much of the work of reading the solutions. Exact: a MessagePack value
/// is delimited by its own bytes, so bytes equal to a whole value read before are that value,
/// whatever follows them.
#[derive(Default)]
struct Repeats<'a> {
    /// Each field name met, in the order first met (at most [`Repeats::FIELDS`]).
    fields: Vec<Field<'a>>,
    /// Where the next field is looked for first: after the field last stepped over, since
    /// every solution of an index lists its fields in the same order, so that finding a field
    /// is one comparison rather than one per field met.
    next: usize,
    /// The bytes of the values traced now ([`Field::like`]), at most [`Repeats::TRACE_BUDGET`]:
    /// a trace takes up to twelve bytes for each byte of its value, and a file of many large
    /// fields must not make that many times its size.
    traced: usize,
}

/// What [`Repeats`] remembers of one field of the solution maps.
struct Field<'a> {
    name: &'a [u8],
    /// Its last value, when that was long enough to be worth comparing.
    last: Option<&'a [u8]>,
    /// A map or array it held, walked through: what values that differ from the last in a
    /// few places (the tile sizes inside a solution's `sizeMapping`) are compared against
    /// ([`Reader::skip_like`]). Taken anew when a value turns out not much like it.
    like: Option<Trace<'a>>,
    /// How many values were compared with [`Field::like`], the values they held, and those
    /// of them walked one by one. Where many are walked, comparing costs more than it saves
    /// and the field's values are walked whole from then on ([`Repeats::PAYS`]).
    compared: usize,
    held: usize,
    walked: usize,
}

impl<'a> Repeats<'a> {
    /// Values shorter than this are stepped over as cheaply as compared.
    const WORTH: usize = 32;

    /// Maps and arrays shorter than this are walked whole as cheaply as compared in parts
    /// with one before ([`Field::like`]).
    const TRACED: usize = 512;

    /// A field's values are compared with one before ([`Field::like`]) while, after its first
    /// [`Repeats::TRIAL`] values, at most one value in this many was walked one by one
    /// (Debian's hipBLASLt 7.1: one in thirty of a `problemPredicate`; rocBLAS 5.5: one in
    /// five, where comparing is slower than walking).
    const PAYS: usize = 8;

    /// How many values of a field are compared before [`Repeats::PAYS`] is judged.
    const TRIAL: usize = 16;

    /// The most bytes of values traced at once, over all fields (Debian's hipBLASLt 7.1 traces
    /// about 2 KB: a solution's `problemPredicate` and `sizeMapping`).
    const TRACE_BUDGET: usize = 1 << 20;

    /// The most field names remembered (Tensile's solutions have about 200): a file of
    /// ever new names is read without a search growing with it.
    const FIELDS: usize = 512;

    /// Steps `c` over the value of field `key`: at once when it repeats that field's last
    /// value, else walked (and remembered).
    fn skip(&mut self, key: &'a [u8], c: &mut Reader<'a>) -> gfxkit_msgpack::Result<()> {
        let found = match self.fields.get(self.next) {
            Some(f) if f.name == key => Some(self.next),
            _ => self.fields.iter().position(|f| f.name == key),
        };
        let slot = match found {
            Some(i) => i,
            None if self.fields.len() < Self::FIELDS => {
                self.fields.push(Field {
                    name: key,
                    last: None,
                    like: None,
                    compared: 0,
                    held: 0,
                    walked: 0,
                });
                self.fields.len() - 1
            }
            None => {
                c.skip()?;
                return Ok(());
            }
        };
        self.next = slot + 1;
        let field = &mut self.fields[slot];
        if field.last.is_some_and(|value| c.eat(value)) {
            return Ok(());
        }
        let (raw, walked) = match &field.like {
            Some(like) => {
                let (raw, walked) = c.skip_like(like)?;
                field.compared += 1;
                field.held += like.values();
                field.walked += walked;
                (raw, walked)
            }
            None => (c.skip()?, usize::MAX),
        };
        if raw.bytes.len() >= Self::WORTH {
            field.last = Some(raw.bytes);
            let container = matches!(raw.bytes[0], 0x80..=0x9f | 0xdc..=0xdf);
            let unlike =
                !matches!(&field.like, Some(like) if walked.saturating_mul(4) <= like.values());
            let pays = field.compared < Self::TRIAL
                || field.walked.saturating_mul(Self::PAYS) <= field.held;
            let held = field.like.as_ref().map_or(0, |like| like.bytes().len());
            if !pays {
                field.like = None;
                self.traced -= held;
            } else if container
                && unlike
                && raw.bytes.len() >= Self::TRACED
                && self.traced - held + raw.bytes.len() <= Self::TRACE_BUDGET
            {
                if let Some(trace) = Trace::of(raw.bytes) {
                    field.like = Some(trace);
                    self.traced = self.traced - held + raw.bytes.len();
                }
            }
        }
        Ok(())
    }
}

/// The layout of a matching table entry of the form [`Parser::plain_entry`] reads, taken from
/// one such entry: its [`Shape`] (the map's keys, the key's count and the width of each size
/// and of the index), with where the key and the index lie in it. Tensile writes the entries
/// of a table alike, so most entries after one share its layout and are read by one comparison
/// of their bytes, exactly as [`Parser::plain_entry`] would read them.
struct EntryForm {
    shape: Shape,
    /// The bytes of the key array, after the 5 of `\x82\xa3key`.
    key_len: usize,
    /// The bits of the entry's last eight bytes (big-endian) that hold the index's number:
    /// the last byte for a fixint (its own number), else the bytes after its marker.
    index_mask: u64,
}

impl EntryForm {
    /// The form of `entry`, the bytes of one entry [`Parser::plain_entry`] read.
    fn of(entry: &[u8]) -> Option<EntryForm> {
        const HEAD: &[u8] = b"\x82\xa3key";
        const INDEX: &[u8] = b"\xa5index";
        let shape = Shape::of(entry)?;
        let key = entry.strip_prefix(HEAD)?;
        let key_len = Reader::new(key).skip_scalar_array()?.bytes.len();
        let index_at = HEAD.len() + key_len + INDEX.len();
        let index_width = match *entry.get(index_at)? {
            0x00..=0x7f => 0,
            b @ 0xcc..=0xcf => 1usize << (b - 0xcc),
            _ => return None,
        };
        let index_mask = u64::MAX >> (64 - 8 * index_width.max(1));
        (entry.get(HEAD.len() + key_len..index_at)? == INDEX
            && index_at + 1 + index_width == entry.len()
            && entry.len() >= 8)
            .then_some(EntryForm {
                shape,
                key_len,
                index_mask,
            })
    }

    /// The entry at the reader when it has this form and names a listed solution, the reader
    /// moved past it; `None`, the reader unmoved, otherwise.
    #[inline]
    fn read<'a>(&self, c: &mut Reader<'a>, by_index: &ByIndex) -> Option<MatchEntry<'a>> {
        let mut f = c.clone();
        let raw = f.eat_shape(&self.shape)?;
        // The index ends the entry: its number is the last byte (a fixint) or the last bytes.
        let index = u64::from_be_bytes(*raw.bytes.last_chunk::<8>()?) & self.index_mask;
        by_index.get(index)?;
        let key = Raw {
            offset: raw.offset + 5,
            bytes: raw.bytes.get(5..5 + self.key_len)?,
        };
        *c = f;
        Some(MatchEntry {
            key,
            value: Leaf::Index(index),
            speed: None,
        })
    }
}

/// The last few [`EntryForm`]s met in a table, the one that last matched first: the sizes of
/// a table's keys change width from entry to entry (16, then 256: a fixint, then a uint 16),
/// so its entries take a handful of layouts in turn.
#[derive(Default)]
struct EntryForms {
    forms: Vec<EntryForm>,
}

impl EntryForms {
    /// The most layouts kept.
    const KEPT: usize = 8;

    /// Keeps `form`, tried first from now on, in place of the form tried last when
    /// [`EntryForms::KEPT`] are kept.
    fn add(&mut self, form: EntryForm) {
        if self.forms.len() == Self::KEPT {
            self.forms.pop();
        }
        self.forms.insert(0, form);
    }

    /// [`EntryForm::read`] by the first layout that the entry at the reader has; that layout
    /// is tried first for the next entry.
    #[inline]
    fn read<'a>(&mut self, c: &mut Reader<'a>, by_index: &ByIndex) -> Option<MatchEntry<'a>> {
        let (i, entry) = self
            .forms
            .iter()
            .enumerate()
            .find_map(|(i, f)| Some((i, f.read(c, by_index)?)))?;
        if i > 0 {
            self.forms.swap(0, i);
        }
        Some(entry)
    }
}

/// One solution's map: its `name`, `kernelName` and `index` (the first of each) read where they are, every
/// other value stepped over (`repeats`: the values of the maps read before it); with where its
/// `index` value lies.
fn solution_map<'a>(
    c: &mut Reader<'a>,
    here: &Path<'_>,
    repeats: &mut Repeats<'a>,
) -> Result<(Solution<'a>, usize)> {
    let offset = c.offset();
    let fields = c
        .map("a solution map")
        .map_err(|e| Error::from(e).place(here.to_string()))?;
    let (mut name, mut kernel_name, mut index_at) = (None, None, None);
    for _ in 0..fields {
        let key = c
            .key()
            .map_err(|e| Error::from(e).place(here.to_string()))?;
        match key {
            b"name" if name.is_none() => {
                name = Some(
                    c.str()
                        .map_err(|e| Error::from(e).place(Path::Key(here, "name").to_string()))?,
                );
            }
            b"kernelName" if kernel_name.is_none() => {
                kernel_name = Some(c.str().map_err(|e| {
                    Error::from(e).place(Path::Key(here, "kernelName").to_string())
                })?);
            }
            b"index" if index_at.is_none() => {
                let at = c.pos();
                let v = c
                    .uint("a solution index")
                    .map_err(|e| Error::from(e).place(Path::Key(here, "index").to_string()))?;
                index_at = Some((at, v));
            }
            _ => {
                repeats.skip(key, c).map_err(|e| {
                    Error::from(e).place(Path::Key(here, key_name(key)).to_string())
                })?;
            }
        }
    }
    let name = name.ok_or_else(|| {
        Error::at(offset, ErrorKind::MissingField("name")).place(here.to_string())
    })?;
    let (index_pos, index) = index_at.ok_or_else(|| {
        Error::at(offset, ErrorKind::MissingField("index")).place(here.to_string())
    })?;
    Ok((
        Solution {
            index,
            name,
            kernel_name,
            offset,
        },
        index_pos,
    ))
}

/// A key read by [`Reader::key`] (UTF-8, checked there), for a message.
fn key_name(key: &[u8]) -> &str {
    std::str::from_utf8(key).unwrap_or("?")
}

/// A place in the tree, rendered only when an error needs it.
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Item(&'p Path<'p>, usize),
    MapKey(&'p Path<'p>, String),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => write!(f, "index"),
            Path::Key(Path::Root, k) => write!(f, "{k}"),
            Path::Key(p, k) => write!(f, "{p}.{k}"),
            Path::Item(p, i) => write!(f, "{p}[{i}]"),
            Path::MapKey(p, k) => write!(f, "{p}[{k:?}]"),
        }
    }
}

/// Maps of up to this many fields are read into [`Fields`] without a heap allocation (every
/// node, row and table entry of the indexes seen has fewer).
const INLINE_FIELDS: usize = 8;

/// The fields of one map: each key and its value, in file order.
struct Fields<'a> {
    inline: [(&'a [u8], Raw<'a>); INLINE_FIELDS],
    len: usize,
    more: Vec<(&'a [u8], Raw<'a>)>,
}

impl<'a> Fields<'a> {
    fn new() -> Fields<'a> {
        const EMPTY: (&[u8], Raw<'_>) = (
            b"",
            Raw {
                offset: 0,
                bytes: &[],
            },
        );
        Fields {
            inline: [EMPTY; INLINE_FIELDS],
            len: 0,
            more: Vec::new(),
        }
    }

    fn push(&mut self, key: &'a [u8], value: Raw<'a>) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = (key, value),
            None => self.more.push((key, value)),
        }
        self.len += 1;
    }

    /// Every field, in file order.
    fn iter(&self) -> impl Iterator<Item = &(&'a [u8], Raw<'a>)> {
        self.inline[..self.len.min(INLINE_FIELDS)]
            .iter()
            .chain(&self.more)
    }

    /// The value of the first field named `key`.
    fn value(&self, key: &str) -> Option<Raw<'a>> {
        self.iter()
            .find(|(k, _)| *k == key.as_bytes())
            .map(|&(_, v)| v)
    }

    /// Where the value of the first field named `key` starts.
    fn get(&self, key: &str) -> Option<usize> {
        self.value(key).map(|v| v.offset as usize)
    }
}

struct Parser<'l> {
    limits: &'l Limits,
    nodes: u64,
    by_index: ByIndex,
    /// Where the larger containers of the library tree end, by start
    /// ([`Reader::skip_recording`]): recorded the first time a node or predicate whose `type`
    /// is not its first key is met ([`Parser::typed`]). Such a map's fields are stepped over
    /// to find the type before any is read; each is then stepped over in one jump rather than
    /// walked again at every level.
    ends: Vec<(usize, usize)>,
    /// Where the library tree starts.
    library: usize,
    /// Whether `ends` holds the library's containers.
    recorded: bool,
}

/// Containers of the library tree at least this long are stepped over by [`Parser::ends`].
const RECORDED_CONTAINER: usize = 256;

/// The error for a field a node or predicate of type `type_name` at `offset` lacks.
fn missing(offset: u64, key: &'static str, path: &Path<'_>, type_name: &str) -> Error {
    Error::at(offset, ErrorKind::MissingField(key)).place(format!("{path} ({type_name})"))
}

/// The fields of a library node that its type reads (the first of each), as they are met.
#[derive(Default)]
struct NodeFields<'a> {
    rows: Option<Vec<Row<'a>>>,
    map: Option<Vec<(Raw<'a>, Node<'a>)>>,
    index: Option<u64>,
    distance: Option<&'a str>,
    table: Option<Vec<MatchEntry<'a>>>,
    trees: Option<Vec<Node<'a>>>,
    /// `nullValue`, `Some(None)` when it is not a library node.
    null_value: Option<Option<Box<Node<'a>>>>,
    value: Option<&'a str>,
}

impl<'a> NodeFields<'a> {
    /// The node of type `type_name` these fields make, or the field it lacks.
    fn kind(self, type_name: &'a str, offset: u64, path: &Path<'_>) -> Result<NodeKind<'a>> {
        let need = |key| missing(offset, key, path, type_name);
        Ok(match type_name {
            "Hardware" => NodeKind::Hardware(self.rows.ok_or_else(|| need("rows"))?),
            "Problem" => NodeKind::Problem(self.rows.ok_or_else(|| need("rows"))?),
            "ProblemMap" => NodeKind::ProblemMap(self.map.ok_or_else(|| need("map"))?),
            "Single" => NodeKind::Single(self.index.ok_or_else(|| need("index"))?),
            "Matching" => NodeKind::Matching {
                distance: self.distance,
                table: self.table.ok_or_else(|| need("table"))?,
            },
            "DecisionTree" => NodeKind::DecisionTree {
                trees: self.trees.ok_or_else(|| need("trees"))?,
                null_value: self.null_value.flatten(),
            },
            "Placeholder" => NodeKind::Placeholder(self.value.ok_or_else(|| need("value"))?),
            other => NodeKind::Unknown(other),
        })
    }
}

impl Parser<'_> {
    /// Counts one more node, table entry or predicate against [`Limits::max_nodes`].
    #[inline]
    fn count(&mut self, offset: u64, path: &Path<'_>) -> Result<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(self.too_many_nodes(offset, path));
        }
        Ok(())
    }

    #[cold]
    fn too_many_nodes(&self, offset: u64, path: &Path<'_>) -> Error {
        Error::at(
            offset,
            ErrorKind::LimitExceeded {
                what: "library nodes, table entries and predicates",
                limit: self.limits.max_nodes,
            },
        )
        .place(path.to_string())
    }

    /// Records where the library's containers end ([`Parser::ends`]), once.
    fn record(&mut self, c: &Reader<'_>) -> Result<()> {
        if !self.recorded {
            self.recorded = true;
            c.at(self.library)
                .skip_recording(RECORDED_CONTAINER, &mut self.ends)
                .map_err(|e| Error::from(e).place("library"))?;
            self.ends.sort_unstable();
        }
        Ok(())
    }

    /// Reads a map with string keys, recording where each value starts and skipping it.
    fn fields<'a>(
        &mut self,
        c: &mut Reader<'a>,
        path: &Path<'_>,
        expected: &'static str,
    ) -> Result<Fields<'a>> {
        let n = c
            .map(expected)
            .map_err(|e| Error::from(e).place(path.to_string()))?;
        let mut fields = Fields::new();
        for _ in 0..n {
            let key = c
                .key()
                .map_err(|e| Error::from(e).place(path.to_string()))?;
            let value = c
                .skip_known(&self.ends)
                .map_err(|e| Error::from(e).place(Path::Key(path, key_name(key)).to_string()))?;
            fields.push(key, value);
        }
        Ok(fields)
    }

    /// Reads a map with string keys in one pass: each key, with the reader at its value, goes
    /// to `visit`, which reads the value and says so, or leaves it to be stepped over.
    fn each_field<'a>(
        &mut self,
        c: &mut Reader<'a>,
        path: &Path<'_>,
        expected: &'static str,
        visit: impl FnMut(&mut Self, &'a [u8], &mut Reader<'a>) -> Result<bool>,
    ) -> Result<()> {
        let n = c
            .map(expected)
            .map_err(|e| Error::from(e).place(path.to_string()))?;
        self.next_fields(c, path, n, visit)
    }

    /// The next `n` fields of a map, as [`Parser::each_field`] reads them.
    fn next_fields<'a>(
        &mut self,
        c: &mut Reader<'a>,
        path: &Path<'_>,
        n: u32,
        mut visit: impl FnMut(&mut Self, &'a [u8], &mut Reader<'a>) -> Result<bool>,
    ) -> Result<()> {
        for _ in 0..n {
            let key = c
                .key()
                .map_err(|e| Error::from(e).place(path.to_string()))?;
            if !visit(self, key, c)? {
                c.skip_known(&self.ends).map_err(|e| {
                    Error::from(e).place(Path::Key(path, key_name(key)).to_string())
                })?;
            }
        }
        Ok(())
    }

    /// The `solutions` array: each solution and where its map ends.
    fn solutions<'a>(
        &mut self,
        c: &mut Reader<'a>,
        path: &Path<'_>,
    ) -> Result<(Vec<Solution<'a>>, Vec<usize>)> {
        let n = c
            .array("an array of solutions")
            .map_err(|e| Error::from(e).place(path.to_string()))?;
        self.solution_count(u64::from(n), c.offset(), path)?;
        // A count is checked against the bytes left, not against what an element costs here:
        // reserve little and let the vector grow with what is actually read.
        let mut out = Vec::with_capacity((n as usize).min(1 << 16));
        let mut ends = Vec::with_capacity(out.capacity());
        let mut repeats = Repeats::default();
        for i in 0..n as usize {
            let here = Path::Item(path, i);
            let (solution, index_pos) = solution_map(c, &here, &mut repeats)?;
            self.list(solution.index, index_pos, i, &here)?;
            out.push(solution);
            ends.push(c.pos());
        }
        Ok((out, ends))
    }

    /// The solutions of an indexed file: the `solutions_index` table at `table` read as the
    /// loader reads it, each slice of the blob holding one solution map.
    fn indexed_solutions<'a>(
        &mut self,
        bytes: &'a [u8],
        table: usize,
        blob: Blob,
    ) -> Result<(Vec<Solution<'a>>, Vec<usize>)> {
        let path = Path::Key(&Path::Root, "solutions_index");
        let placed = |e: gfxkit_msgpack::Error| Error::from(e).place(path.to_string());
        let mut c = Reader::new(bytes).at(table);
        let n = c
            .array("an array of [index, offset, length] triples")
            .map_err(placed)?;
        if n % 3 != 0 {
            return Err(Error::at(
                table as u64,
                ErrorKind::Inconsistent(format!(
                    "{n} integers, not [index, offset, length] triples"
                )),
            )
            .place(path.to_string()));
        }
        let count = n / 3;
        self.solution_count(u64::from(count), table as u64, &path)?;
        let mut out = Vec::with_capacity((count as usize).min(1 << 16));
        let mut ends = Vec::with_capacity(out.capacity());
        let mut repeats = Repeats::default();
        for i in 0..count as usize {
            let here = Path::Item(&path, i);
            let entry_at = c.offset();
            let mut field = |what: &'static str| {
                c.uint(what)
                    .map_err(|e| Error::from(e).place(here.to_string()))
            };
            let index = field("a solution index")?;
            let offset = field("a byte offset in solutions_blob")?;
            let length = field("a byte length")?;
            let bad = |why: String| Error::at(entry_at, ErrorKind::Inconsistent(why));
            if index > i32::MAX as u64 {
                return Err(bad(format!(
                    "solution index {index} is wider than the loader's 32-bit int"
                ))
                .place(here.to_string()));
            }
            let end = offset
                .checked_add(length)
                .filter(|&end| end <= blob.len as u64)
                .ok_or_else(|| {
                    bad(format!(
                        "bytes {offset}..{offset}+{length} run past the {}-byte solutions_blob \
                         (at offset {:#x})",
                        blob.len, blob.at
                    ))
                    .place(here.to_string())
                })?;
            let (start, end) = (blob.start + offset as usize, blob.start + end as usize);
            // The slice alone: a map that runs past it is truncated, not read into the next.
            let mut sc = Reader::new(&bytes[..end]).at(start);
            let item = Path::Key(&here, "solutions_blob");
            let (solution, index_pos) = solution_map(&mut sc, &item, &mut repeats)?;
            if sc.pos() != end {
                return Err(Error::at(
                    sc.offset(),
                    ErrorKind::Inconsistent(format!(
                        "{} bytes follow the solution map in its slice",
                        end - sc.pos()
                    )),
                )
                .place(item.to_string()));
            }
            if solution.index != index {
                return Err(Error::at(
                    index_pos as u64,
                    ErrorKind::Inconsistent(format!(
                        "the solution in the slice has index {}, the table says {index}",
                        solution.index
                    )),
                )
                .place(item.to_string()));
            }
            self.list(index, entry_at as usize, i, &here)?;
            out.push(solution);
            ends.push(end);
        }
        Ok((out, ends))
    }

    fn solution_count(&self, n: u64, offset: u64, path: &Path<'_>) -> Result<()> {
        if n > self.limits.max_solutions {
            return Err(Error::at(
                offset,
                ErrorKind::LimitExceeded {
                    what: "solutions",
                    limit: self.limits.max_solutions,
                },
            )
            .place(path.to_string()));
        }
        Ok(())
    }

    /// Lists solution `index` as the `i`-th; an index listed twice is an error at `at`.
    fn list(&mut self, index: u64, at: usize, i: usize, path: &Path<'_>) -> Result<()> {
        if self.by_index.insert(index, i).is_some() {
            return Err(Error::at(at as u64, ErrorKind::DuplicateSolution(index))
                .place(Path::Key(path, "index").to_string()));
        }
        Ok(())
    }

    fn index_ref(&self, c: &mut Reader<'_>, path: &Path<'_>) -> Result<u64> {
        let pos = c.offset();
        let i = c
            .uint("a solution index")
            .map_err(|e| Error::from(e).place(path.to_string()))?;
        if self.by_index.get(i).is_none() {
            return Err(Error::at(pos, ErrorKind::UnknownSolution(i)).place(path.to_string()));
        }
        Ok(i)
    }

    /// Reads a tree node or a predicate (a map with a `type`): the nesting depth and node
    /// count checked, then every field but the type handed to `visit` with the type, as
    /// [`Parser::each_field`] does. When `type` is the first key (in every index Tensile
    /// writes) the map is read in one pass; otherwise every field is stepped over first to
    /// find the type ([`Parser::record`] keeps that linear), then each is visited where it
    /// lies, in file order. Returns the type.
    fn typed<'a>(
        &mut self,
        c: &mut Reader<'a>,
        path: &Path<'_>,
        depth: usize,
        expected: &'static str,
        mut visit: impl FnMut(&mut Self, &'a str, &'a [u8], &mut Reader<'a>) -> Result<bool>,
    ) -> Result<&'a str> {
        let offset = c.offset();
        if depth > self.limits.max_depth {
            return Err(Error::at(
                offset,
                ErrorKind::LimitExceeded {
                    what: "nesting depth",
                    limit: self.limits.max_depth as u64,
                },
            )
            .place(path.to_string()));
        }
        self.count(offset, path)?;
        let type_of = |c: &mut Reader<'a>| {
            c.str()
                .map_err(|e| Error::from(e).place(Path::Key(path, "type").to_string()))
        };
        let mut first = c.clone();
        if let Ok(n @ 1..) = first.map(expected) {
            if first.key() == Ok(b"type") {
                let type_name = type_of(&mut first)?;
                *c = first;
                self.next_fields(c, path, n - 1, |p, key, c| visit(p, type_name, key, c))?;
                return Ok(type_name);
            }
        }
        self.record(c)?;
        let f = self.fields(c, path, expected)?;
        let type_pos = f.get("type").ok_or_else(|| {
            Error::at(offset, ErrorKind::MissingField("type")).place(path.to_string())
        })?;
        let type_name = type_of(&mut c.at(type_pos))?;
        for &(key, value) in f.iter() {
            visit(self, type_name, key, &mut c.at(value.offset as usize))?;
        }
        Ok(type_name)
    }

    fn node<'a>(&mut self, c: &mut Reader<'a>, path: &Path<'_>, depth: usize) -> Result<Node<'a>> {
        let offset = c.offset();
        let mut got = NodeFields::default();
        let type_name = self.typed(
            c,
            path,
            depth,
            "a library node (map)",
            |p, type_name, key, c| p.node_field(&mut got, type_name, key, c, path, depth),
        )?;
        let kind = got.kind(type_name, offset, path)?;
        Ok(Node { offset, kind })
    }

    /// Reads the value of field `key` of a node of type `type_name` at `path` into `got` when
    /// the type reads it (the first such field); whether it was read.
    fn node_field<'a>(
        &mut self,
        got: &mut NodeFields<'a>,
        type_name: &str,
        key: &[u8],
        c: &mut Reader<'a>,
        path: &Path<'_>,
        depth: usize,
    ) -> Result<bool> {
        match (type_name, key) {
            ("Hardware" | "Problem", b"rows") if got.rows.is_none() => {
                got.rows = Some(self.rows(c, &Path::Key(path, "rows"), depth)?);
            }
            ("ProblemMap", b"map") if got.map.is_none() => {
                got.map = Some(self.problem_map(c, &Path::Key(path, "map"), depth)?);
            }
            ("Single", b"index") if got.index.is_none() => {
                got.index = Some(self.index_ref(c, &Path::Key(path, "index"))?);
            }
            ("Matching", b"distance") if got.distance.is_none() => {
                got.distance =
                    Some(c.str().map_err(|e| {
                        Error::from(e).place(Path::Key(path, "distance").to_string())
                    })?);
            }
            ("Matching", b"table") if got.table.is_none() => {
                got.table = Some(self.matching_table(c, &Path::Key(path, "table"), depth)?);
            }
            ("DecisionTree", b"trees") if got.trees.is_none() => {
                got.trees = Some(self.trees(c, &Path::Key(path, "trees"), depth)?);
            }
            ("DecisionTree", b"nullValue") if got.null_value.is_none() => {
                // Anything but a map means no library.
                if !matches!(c.clone().head(), Ok(Head::Map(_))) {
                    got.null_value = Some(None);
                    return Ok(false);
                }
                let np = Path::Key(path, "nullValue");
                got.null_value = Some(Some(Box::new(self.node(c, &np, depth + 1)?)));
            }
            ("Placeholder", b"value") if got.value.is_none() => {
                got.value = Some(
                    c.str()
                        .map_err(|e| Error::from(e).place(Path::Key(path, "value").to_string()))?,
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The rows of a `Hardware` or `Problem` node: each a predicate and the library below it.
    fn rows<'a>(
        &mut self,
        c: &mut Reader<'a>,
        rows_path: &Path<'_>,
        depth: usize,
    ) -> Result<Vec<Row<'a>>> {
        let n = c
            .array("an array of rows")
            .map_err(|e| Error::from(e).place(rows_path.to_string()))?;
        let mut rows = Vec::with_capacity((n as usize).min(1024));
        for i in 0..n as usize {
            let rp = Path::Item(rows_path, i);
            let roff = c.offset();
            let (mut predicate, mut library) = (None, None);
            self.each_field(c, &rp, "a row map {predicate, library}", |p, key, c| {
                match key {
                    b"predicate" if predicate.is_none() => {
                        let pp = Path::Key(&rp, "predicate");
                        predicate = Some(p.predicate(c, &pp, depth + 1)?);
                    }
                    b"library" if library.is_none() => {
                        let lp = Path::Key(&rp, "library");
                        library = Some(p.node(c, &lp, depth + 1)?);
                    }
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            let lacks = |key| Error::at(roff, ErrorKind::MissingField(key)).place(rp.to_string());
            let predicate = predicate.ok_or_else(|| lacks("predicate"))?;
            let library = library.ok_or_else(|| lacks("library"))?;
            rows.push(Row { predicate, library });
        }
        Ok(rows)
    }

    /// The `map` of a `ProblemMap` node: a library per key.
    fn problem_map<'a>(
        &mut self,
        c: &mut Reader<'a>,
        map_path: &Path<'_>,
        depth: usize,
    ) -> Result<Vec<(Raw<'a>, Node<'a>)>> {
        let n = c
            .map("a map of libraries")
            .map_err(|e| Error::from(e).place(map_path.to_string()))?;
        let mut entries = Vec::with_capacity((n as usize).min(1024));
        for _ in 0..n {
            let key = c
                .skip()
                .map_err(|e| Error::from(e).place(map_path.to_string()))?;
            let label = key
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("key at {:#x}", key.offset));
            let node = self.node(c, &Path::MapKey(map_path, label), depth + 1)?;
            entries.push((key, node));
        }
        Ok(entries)
    }

    /// The `trees` of a `DecisionTree` node: the library in each tree's `value`.
    fn trees<'a>(
        &mut self,
        c: &mut Reader<'a>,
        tp: &Path<'_>,
        depth: usize,
    ) -> Result<Vec<Node<'a>>> {
        let n = c
            .array("an array of trees")
            .map_err(|e| Error::from(e).place(tp.to_string()))?;
        let mut trees = Vec::with_capacity((n as usize).min(1024));
        for i in 0..n as usize {
            let ep = Path::Item(tp, i);
            let eoff = c.offset();
            let mut value = None;
            self.each_field(c, &ep, "a tree {tree, value}", |p, key, c| {
                if key != b"value" || value.is_some() {
                    return Ok(false);
                }
                value = Some(p.node(c, &Path::Key(&ep, "value"), depth + 1)?);
                Ok(true)
            })?;
            trees.push(value.ok_or_else(|| {
                Error::at(eoff, ErrorKind::MissingField("value")).place(ep.to_string())
            })?);
        }
        Ok(trees)
    }

    /// The table of a `Matching` node: each entry a key (problem sizes) and a solution index
    /// or a library, with its speed; of each field the first is read, and `index` wins over
    /// `value`.
    fn matching_table<'a>(
        &mut self,
        c: &mut Reader<'a>,
        tp: &Path<'_>,
        depth: usize,
    ) -> Result<Vec<MatchEntry<'a>>> {
        let n = c
            .array("an array of table entries")
            .map_err(|e| Error::from(e).place(tp.to_string()))?;
        // Every entry that reads takes at least `{"key":[],"index":0}`'s 13 bytes: room for
        // every entry the bytes left can hold, so that a large table (a hundred thousand
        // entries) is not copied as it grows, and no more than the input can justify.
        let mut table = Vec::with_capacity((n as usize).min(c.remaining() / 13 + 1));
        // The layouts of the last entries read in the common form: the entries after them
        // that share one are read by their bytes in one comparison.
        let mut forms = EntryForms::default();
        for i in 0..n as usize {
            let ep = Path::Item(tp, i);
            let eoff = c.offset();
            self.count(eoff, &ep)?;
            if let Some(entry) = forms.read(c, &self.by_index) {
                table.push(entry);
                continue;
            }
            if let Some(entry) = self.plain_entry(c) {
                if let Some(form) = c.since(eoff as usize).and_then(EntryForm::of) {
                    forms.add(form);
                }
                table.push(entry);
                continue;
            }
            let (mut key, mut speed, mut index, mut value) = (None, None, None, None);
            let at = |name| Path::Key(&ep, name);
            self.each_field(c, &ep, "a table entry {key, index, speed}", |p, name, c| {
                match name {
                    b"key" if key.is_none() => {
                        key = Some(
                            c.skip_known(&p.ends)
                                .map_err(|e| Error::from(e).place(at("key").to_string()))?,
                        );
                    }
                    b"speed" if speed.is_none() => {
                        speed = Some(
                            c.number()
                                .map_err(|e| Error::from(e).place(at("speed").to_string()))?,
                        );
                    }
                    b"index" if index.is_none() => {
                        index = Some(p.index_ref(c, &at("index"))?);
                    }
                    b"value" if value.is_none() && index.is_none() => {
                        let vp = at("value");
                        let head = c
                            .clone()
                            .head()
                            .map_err(|e| Error::from(e).place(vp.to_string()))?;
                        value = Some(match head {
                            Head::Map(_) => Leaf::Library(Box::new(p.node(c, &vp, depth + 1)?)),
                            _ => Leaf::Index(p.index_ref(c, &vp)?),
                        });
                    }
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            let lacks = |key| Error::at(eoff, ErrorKind::MissingField(key)).place(ep.to_string());
            let key = key.ok_or_else(|| lacks("key"))?;
            let value = match (index, value) {
                (Some(i), _) => Leaf::Index(i),
                (None, Some(leaf)) => leaf,
                (None, None) => return Err(lacks("index")),
            };
            table.push(MatchEntry { key, value, speed });
        }
        Ok(table)
    }

    /// A table entry of the form Tensile writes for nearly every entry,
    /// `{"key": [sizes], "index": N}` (a fixmap of those two keys in that order, the key an
    /// array of at most 15 scalars, `N` a known solution), read by its bytes into what
    /// [`Parser::matching_table`] makes of it; `None`, the reader unmoved, for any other form
    /// (other keys or order, a speed, a library value, an unknown solution), which the general
    /// reader then reads and judges.
    #[inline]
    fn plain_entry<'a>(&self, c: &mut Reader<'a>) -> Option<MatchEntry<'a>> {
        let mut f = c.clone();
        if !f.eat(b"\x82\xa3key") {
            return None;
        }
        let key = f.skip_scalar_array()?;
        if !f.eat(b"\xa5index") {
            return None;
        }
        let index = f.uint("a solution index").ok()?;
        self.by_index.get(index)?;
        *c = f;
        Some(MatchEntry {
            key,
            value: Leaf::Index(index),
            speed: None,
        })
    }

    fn predicate<'a>(
        &mut self,
        c: &mut Reader<'a>,
        path: &Path<'_>,
        depth: usize,
    ) -> Result<Predicate<'a>> {
        let offset = c.offset();
        let vpath = Path::Key(path, "value");
        let mut value = None;
        let type_name = self.typed(
            c,
            path,
            depth,
            "a predicate (map)",
            |p, type_name, key, c| {
                if key != b"value" || value.is_some() || type_name == "TruePred" {
                    return Ok(false);
                }
                value = Some(p.predicate_value(type_name, c, &vpath, depth)?);
                Ok(true)
            },
        )?;
        let kind = match (type_name, value) {
            ("TruePred", _) => PredicateKind::True,
            (_, Some(kind)) => kind,
            ("AMDGPU" | "Not" | "And" | "Or" | "Processor" | "CUCount", None) => {
                return Err(missing(offset, "value", path, type_name))
            }
            (other, None) => PredicateKind::Other {
                type_name: other,
                value: None,
            },
        };
        Ok(Predicate { offset, kind })
    }

    /// What a predicate of type `type_name` tests, read from its `value` at `c`.
    fn predicate_value<'a>(
        &mut self,
        type_name: &'a str,
        c: &mut Reader<'a>,
        vpath: &Path<'_>,
        depth: usize,
    ) -> Result<PredicateKind<'a>> {
        let placed = |e: gfxkit_msgpack::Error| Error::from(e).place(vpath.to_string());
        Ok(match type_name {
            "AMDGPU" => PredicateKind::Amdgpu(Box::new(self.predicate(c, vpath, depth + 1)?)),
            "Not" => PredicateKind::Not(Box::new(self.predicate(c, vpath, depth + 1)?)),
            "And" | "Or" => {
                let n = c.array("an array of predicates").map_err(placed)?;
                let mut all = Vec::with_capacity((n as usize).min(64));
                for i in 0..n as usize {
                    all.push(self.predicate(c, &Path::Item(vpath, i), depth + 1)?);
                }
                if type_name == "And" {
                    PredicateKind::And(all)
                } else {
                    PredicateKind::Or(all)
                }
            }
            "Processor" => PredicateKind::Processor(c.str().map_err(placed)?),
            "CUCount" => PredicateKind::CuCount(c.uint("a CU count").map_err(placed)?),
            other => PredicateKind::Other {
                type_name: other,
                value: Some(c.skip().map_err(placed)?),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmp::encode::{write_map_len, write_str, write_uint};

    /// A solution map with `name`, `index` and `extra` fields of its own names, each a value
    /// long enough to be remembered.
    fn solution(index: u64, extra: usize) -> Vec<u8> {
        let mut b = Vec::new();
        write_map_len(&mut b, 2 + extra as u32).unwrap();
        write_str(&mut b, "name").unwrap();
        write_str(&mut b, &format!("Cijk_{index}")).unwrap();
        for i in 0..extra {
            write_str(&mut b, &format!("field{i:05}")).unwrap();
            write_str(&mut b, &"v".repeat(Repeats::WORTH + i % 7)).unwrap();
        }
        write_str(&mut b, "index").unwrap();
        write_uint(&mut b, index).unwrap();
        b
    }

    #[test]
    fn the_values_traced_stay_within_their_budget() {
        use rmp::encode::{write_array_len, write_sint};
        // Solutions of 300 fields, each an array of 5,000 numbers that differs from the one
        // before in one place: each would be traced, 1.5 MB in all, over the budget.
        let (fields, len) = (300usize, 5_000usize);
        let mut bytes = Vec::new();
        for index in 0..3u64 {
            write_map_len(&mut bytes, 2 + fields as u32).unwrap();
            write_str(&mut bytes, "name").unwrap();
            write_str(&mut bytes, &format!("Cijk_{index}")).unwrap();
            for f in 0..fields {
                write_str(&mut bytes, &format!("field{f:03}")).unwrap();
                write_array_len(&mut bytes, len as u32).unwrap();
                for i in 0..len {
                    let v = if i == 7 {
                        index as i64 + 100
                    } else {
                        (i % 100) as i64
                    };
                    write_sint(&mut bytes, v).unwrap();
                }
            }
            write_str(&mut bytes, "index").unwrap();
            write_uint(&mut bytes, index).unwrap();
        }
        let mut c = Reader::new(&bytes);
        let mut repeats = Repeats::default();
        for want in 0..3 {
            let (s, _) = solution_map(&mut c, &Path::Root, &mut repeats).unwrap();
            assert_eq!(s.index, want);
            let held: usize = repeats
                .fields
                .iter()
                .filter_map(|f| f.like.as_ref())
                .map(|like| like.bytes().len())
                .sum();
            assert_eq!(held, repeats.traced);
            assert!(
                repeats.traced <= Repeats::TRACE_BUDGET,
                "{}",
                repeats.traced
            );
            assert!(
                repeats.traced > Repeats::TRACE_BUDGET / 2,
                "{}",
                repeats.traced
            );
        }
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn repeated_fields_are_remembered_up_to_a_bound() {
        // Twice as many field names as are remembered: every solution still reads whole, and
        // the names searched stay bounded, so a file of ever new names reads in linear time.
        let extra = 2 * Repeats::FIELDS;
        let mut bytes = solution(7, extra);
        bytes.extend(solution(8, extra));
        let mut c = Reader::new(&bytes);
        let mut repeats = Repeats::default();
        for want in [7, 8] {
            let (s, _) = solution_map(&mut c, &Path::Root, &mut repeats).unwrap();
            assert_eq!((s.index, s.name), (want, format!("Cijk_{want}").as_str()));
            assert_eq!(repeats.fields.len(), Repeats::FIELDS);
        }
        assert_eq!(c.remaining(), 0);
        // The second solution's remembered fields were stepped over by comparison: each holds
        // the value it repeated.
        assert!(repeats.fields.iter().all(|f| f.last.is_some()));
    }
}
