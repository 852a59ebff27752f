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
//! solutions, release build, a loaded 2-core machine): parsed in 0.7-1.5 s, peak resident
//! memory 146 MB of which 117 MB is the file itself; decoding the same file into one
//! `rmpv::Value` tree takes 4.7 s and peaks at 1.28 GB (`examples/tensile_index.rs`).
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
use gfxkit_msgpack::{Cursor, Head};
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
    /// Its `name`: the kernel's function symbol.
    pub name: &'a str,
    /// Byte offset of the solution's map.
    pub offset: u64,
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
        };
        let mut c = Cursor::new(bytes);
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
                "library" if library_at.is_none() => {
                    library_at = Some(c.pos());
                    c.skip_recording(RECORDED_CONTAINER, &mut p.ends)
                        .map_err(placed)?;
                    p.ends.sort_unstable();
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
        p.by_index.freeze();
        let library = p.node(&mut c.at(lib_pos), &Path::Key(&root, "library"), 0)?;
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
                .map(|(i, row)| summarize(i, Some(&row.predicate), &row.library))
                .collect(),
            _ => vec![summarize(0, None, &self.library)],
        }
    }

    /// The solution indices no node of the tree reaches, ascending (Debian's rocBLAS 5.5.1
    /// index lists 722 of its 56,980 solutions under no row).
    pub fn unreachable_solutions(&'a self) -> Vec<u64> {
        let reached = summarize(0, None, &self.library).solutions;
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
        summarize(0, None, &self.library).placeholders
    }
}

fn summarize<'a>(
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
    // 1,468 solutions): gathered, sorted and deduplicated, then built into the set at once.
    let mut solutions = Vec::new();
    // Depth was bounded when parsing; an explicit stack keeps the walk off the call stack.
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match &n.kind {
            NodeKind::Hardware(rows) | NodeKind::Problem(rows) => {
                stack.extend(rows.iter().rev().map(|r| &r.library))
            }
            NodeKind::ProblemMap(map) => stack.extend(map.iter().rev().map(|(_, n)| n)),
            NodeKind::Single(i) => solutions.push(*i),
            NodeKind::Matching { table, .. } => {
                for e in table.iter().rev() {
                    match &e.value {
                        Leaf::Index(i) => solutions.push(*i),
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
    solutions.sort_unstable();
    solutions.dedup();
    s.solutions = solutions.into_iter().collect();
    s
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

/// One solution's map: its `name` and `index` (the first of each) read where they are, every
/// other value stepped over; with where its `index` value lies.
fn solution_map<'a>(c: &mut Cursor<'a>, here: &Path<'_>) -> Result<(Solution<'a>, usize)> {
    let offset = c.offset();
    let fields = c
        .map("a solution map")
        .map_err(|e| Error::from(e).place(here.to_string()))?;
    let (mut name, mut index_at) = (None, None);
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
            b"index" if index_at.is_none() => {
                let at = c.pos();
                let v = c
                    .uint("a solution index")
                    .map_err(|e| Error::from(e).place(Path::Key(here, "index").to_string()))?;
                index_at = Some((at, v));
            }
            _ => {
                c.skip().map_err(|e| {
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
            offset,
        },
        index_pos,
    ))
}

/// A key read by [`Cursor::key`] (UTF-8, checked there), for a message.
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

    /// The value of the first field named `key`.
    fn value(&self, key: &str) -> Option<Raw<'a>> {
        let inline = &self.inline[..self.len.min(INLINE_FIELDS)];
        inline
            .iter()
            .chain(&self.more)
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
    /// ([`Cursor::skip_recording`]): a node's fields are looked at before its children are
    /// read, and each child is stepped over in one jump rather than walked at every level.
    ends: Vec<(usize, usize)>,
}

/// Containers of the library tree at least this long are stepped over by [`Parser::ends`].
const RECORDED_CONTAINER: usize = 256;

impl Parser<'_> {
    fn count(&mut self, offset: u64, path: &Path<'_>) -> Result<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(Error::at(
                offset,
                ErrorKind::LimitExceeded {
                    what: "library nodes, table entries and predicates",
                    limit: self.limits.max_nodes,
                },
            )
            .place(path.to_string()));
        }
        Ok(())
    }

    /// Reads a map with string keys, recording where each value starts and skipping it.
    fn fields<'a>(
        &mut self,
        c: &mut Cursor<'a>,
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

    /// Reads a map with string keys as [`Parser::fields`] does (every value stepped over, so
    /// the same damage is refused), keeping only the first value of each of `names`: for the
    /// many small maps of a matching table, without gathering every field.
    fn pick<'a, const N: usize>(
        &mut self,
        c: &mut Cursor<'a>,
        path: &Path<'_>,
        expected: &'static str,
        names: [&str; N],
    ) -> Result<[Option<Raw<'a>>; N]> {
        let n = c
            .map(expected)
            .map_err(|e| Error::from(e).place(path.to_string()))?;
        let mut out = [None; N];
        for _ in 0..n {
            let key = c
                .key()
                .map_err(|e| Error::from(e).place(path.to_string()))?;
            let value = c
                .skip_known(&self.ends)
                .map_err(|e| Error::from(e).place(Path::Key(path, key_name(key)).to_string()))?;
            if let Some(slot) = names
                .iter()
                .position(|name| name.as_bytes() == key)
                .and_then(|i| out.get_mut(i))
            {
                slot.get_or_insert(value);
            }
        }
        Ok(out)
    }

    /// The `solutions` array: each solution and where its map ends.
    fn solutions<'a>(
        &mut self,
        c: &mut Cursor<'a>,
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
        for i in 0..n as usize {
            let here = Path::Item(path, i);
            let (solution, index_pos) = solution_map(c, &here)?;
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
        let mut c = Cursor::new(bytes).at(table);
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
            let mut sc = Cursor::new(&bytes[..end]).at(start);
            let item = Path::Key(&here, "solutions_blob");
            let (solution, index_pos) = solution_map(&mut sc, &item)?;
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

    fn index_ref(&self, c: &mut Cursor<'_>, path: &Path<'_>) -> Result<u64> {
        let pos = c.offset();
        let i = c
            .uint("a solution index")
            .map_err(|e| Error::from(e).place(path.to_string()))?;
        if self.by_index.get(i).is_none() {
            return Err(Error::at(pos, ErrorKind::UnknownSolution(i)).place(path.to_string()));
        }
        Ok(i)
    }

    /// The opening of a tree node (a library node or a predicate): the nesting depth and node
    /// count checked, its map's fields, and its `type`.
    fn typed_map<'a>(
        &mut self,
        c: &mut Cursor<'a>,
        path: &Path<'_>,
        depth: usize,
        offset: u64,
        expected: &'static str,
    ) -> Result<(Fields<'a>, &'a str)> {
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
        let f = self.fields(c, path, expected)?;
        let type_pos = f.get("type").ok_or_else(|| {
            Error::at(offset, ErrorKind::MissingField("type")).place(path.to_string())
        })?;
        let type_name = c
            .at(type_pos)
            .str()
            .map_err(|e| Error::from(e).place(Path::Key(path, "type").to_string()))?;
        Ok((f, type_name))
    }

    fn node<'a>(&mut self, c: &mut Cursor<'a>, path: &Path<'_>, depth: usize) -> Result<Node<'a>> {
        let offset = c.offset();
        let (f, type_name) = self.typed_map(c, path, depth, offset, "a library node (map)")?;
        let need = |key: &'static str| {
            f.get(key).ok_or_else(|| {
                Error::at(offset, ErrorKind::MissingField(key))
                    .place(format!("{path} ({type_name})"))
            })
        };
        let kind = match type_name {
            "Hardware" | "Problem" => {
                let rows = self.rows(c, path, depth, need("rows")?)?;
                if type_name == "Hardware" {
                    NodeKind::Hardware(rows)
                } else {
                    NodeKind::Problem(rows)
                }
            }
            "ProblemMap" => {
                let map_path = Path::Key(path, "map");
                let mut mc = c.at(need("map")?);
                let n = mc
                    .map("a map of libraries")
                    .map_err(|e| Error::from(e).place(map_path.to_string()))?;
                let mut entries = Vec::with_capacity((n as usize).min(1024));
                for _ in 0..n {
                    let key = mc
                        .skip()
                        .map_err(|e| Error::from(e).place(map_path.to_string()))?;
                    let label = key
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("key at {:#x}", key.offset));
                    let np = Path::MapKey(&map_path, label);
                    let node = self.node(&mut mc, &np, depth + 1)?;
                    entries.push((key, node));
                }
                NodeKind::ProblemMap(entries)
            }
            "Single" => {
                let i = self.index_ref(&mut c.at(need("index")?), &Path::Key(path, "index"))?;
                NodeKind::Single(i)
            }
            "Matching" => {
                let distance = match f.get("distance") {
                    Some(p) => Some(c.at(p).str().map_err(|e| {
                        Error::from(e).place(Path::Key(path, "distance").to_string())
                    })?),
                    None => None,
                };
                let table = self.matching_table(c, path, depth, need("table")?)?;
                NodeKind::Matching { distance, table }
            }
            "DecisionTree" => {
                let tp = Path::Key(path, "trees");
                let mut tc = c.at(need("trees")?);
                let n = tc
                    .array("an array of trees")
                    .map_err(|e| Error::from(e).place(tp.to_string()))?;
                let mut trees = Vec::with_capacity((n as usize).min(1024));
                for i in 0..n as usize {
                    let ep = Path::Item(&tp, i);
                    let eoff = tc.offset();
                    let ef = self.fields(&mut tc, &ep, "a tree {tree, value}")?;
                    let vp = ef.get("value").ok_or_else(|| {
                        Error::at(eoff, ErrorKind::MissingField("value")).place(ep.to_string())
                    })?;
                    trees.push(self.node(&mut c.at(vp), &Path::Key(&ep, "value"), depth + 1)?);
                }
                let null_value = match f.get("nullValue") {
                    Some(p) => {
                        let mut nc = c.at(p);
                        match nc.clone().head() {
                            Ok(Head::Map(_)) => Some(Box::new(self.node(
                                &mut nc,
                                &Path::Key(path, "nullValue"),
                                depth + 1,
                            )?)),
                            _ => None,
                        }
                    }
                    None => None,
                };
                NodeKind::DecisionTree { trees, null_value }
            }
            "Placeholder" => NodeKind::Placeholder(
                c.at(need("value")?)
                    .str()
                    .map_err(|e| Error::from(e).place(Path::Key(path, "value").to_string()))?,
            ),
            other => NodeKind::Unknown(other),
        };
        Ok(Node { offset, kind })
    }

    /// The rows of a `Hardware` or `Problem` node (at `at`): each a predicate and the library
    /// below it.
    fn rows<'a>(
        &mut self,
        c: &Cursor<'a>,
        path: &Path<'_>,
        depth: usize,
        at: usize,
    ) -> Result<Vec<Row<'a>>> {
        let rows_path = Path::Key(path, "rows");
        let mut rc = c.at(at);
        let n = rc
            .array("an array of rows")
            .map_err(|e| Error::from(e).place(rows_path.to_string()))?;
        let mut rows = Vec::with_capacity((n as usize).min(1024));
        for i in 0..n as usize {
            let rp = Path::Item(&rows_path, i);
            let roff = rc.offset();
            let rf = self.fields(&mut rc, &rp, "a row map {predicate, library}")?;
            let pp = rf.get("predicate").ok_or_else(|| {
                Error::at(roff, ErrorKind::MissingField("predicate")).place(rp.to_string())
            })?;
            let lp = rf.get("library").ok_or_else(|| {
                Error::at(roff, ErrorKind::MissingField("library")).place(rp.to_string())
            })?;
            let predicate =
                self.predicate(&mut c.at(pp), &Path::Key(&rp, "predicate"), depth + 1)?;
            let library = self.node(&mut c.at(lp), &Path::Key(&rp, "library"), depth + 1)?;
            rows.push(Row { predicate, library });
        }
        Ok(rows)
    }

    /// The table of a `Matching` node (at `at`): each entry a key (problem sizes) and a
    /// solution index or a library, with its speed.
    fn matching_table<'a>(
        &mut self,
        c: &Cursor<'a>,
        path: &Path<'_>,
        depth: usize,
        at: usize,
    ) -> Result<Vec<MatchEntry<'a>>> {
        let tp = Path::Key(path, "table");
        let mut tc = c.at(at);
        let n = tc
            .array("an array of table entries")
            .map_err(|e| Error::from(e).place(tp.to_string()))?;
        let mut table = Vec::with_capacity((n as usize).min(4096));
        for i in 0..n as usize {
            let ep = Path::Item(&tp, i);
            let eoff = tc.offset();
            self.count(eoff, &ep)?;
            let [key, speed, index, value] = self.pick(
                &mut tc,
                &ep,
                "a table entry {key, index, speed}",
                ["key", "speed", "index", "value"],
            )?;
            // Stepped over when the entry's fields were read.
            let key = key.ok_or_else(|| {
                Error::at(eoff, ErrorKind::MissingField("key")).place(ep.to_string())
            })?;
            let speed = match speed {
                Some(p) => Some(
                    c.at(p.offset as usize)
                        .number()
                        .map_err(|e| Error::from(e).place(Path::Key(&ep, "speed").to_string()))?,
                ),
                None => None,
            };
            let value = if let Some(p) = index {
                Leaf::Index(self.index_ref(&mut c.at(p.offset as usize), &Path::Key(&ep, "index"))?)
            } else if let Some(p) = value {
                let vp = Path::Key(&ep, "value");
                let mut vc = c.at(p.offset as usize);
                match vc
                    .clone()
                    .head()
                    .map_err(|e| Error::from(e).place(vp.to_string()))?
                {
                    Head::Map(_) => Leaf::Library(Box::new(self.node(&mut vc, &vp, depth + 1)?)),
                    _ => Leaf::Index(self.index_ref(&mut vc, &vp)?),
                }
            } else {
                return Err(Error::at(eoff, ErrorKind::MissingField("index")).place(ep.to_string()));
            };
            table.push(MatchEntry { key, value, speed });
        }
        Ok(table)
    }

    fn predicate<'a>(
        &mut self,
        c: &mut Cursor<'a>,
        path: &Path<'_>,
        depth: usize,
    ) -> Result<Predicate<'a>> {
        let offset = c.offset();
        let (f, type_name) = self.typed_map(c, path, depth, offset, "a predicate (map)")?;
        let vpath = Path::Key(path, "value");
        let value = || {
            f.get("value").ok_or_else(|| {
                Error::at(offset, ErrorKind::MissingField("value"))
                    .place(format!("{path} ({type_name})"))
            })
        };
        let kind = match type_name {
            "AMDGPU" | "Not" => {
                let inner = Box::new(self.predicate(&mut c.at(value()?), &vpath, depth + 1)?);
                if type_name == "Not" {
                    PredicateKind::Not(inner)
                } else {
                    PredicateKind::Amdgpu(inner)
                }
            }
            "And" | "Or" => {
                let mut vc = c.at(value()?);
                let n = vc
                    .array("an array of predicates")
                    .map_err(|e| Error::from(e).place(vpath.to_string()))?;
                let mut all = Vec::with_capacity((n as usize).min(64));
                for i in 0..n as usize {
                    all.push(self.predicate(&mut vc, &Path::Item(&vpath, i), depth + 1)?);
                }
                if type_name == "And" {
                    PredicateKind::And(all)
                } else {
                    PredicateKind::Or(all)
                }
            }
            "Processor" => PredicateKind::Processor(
                c.at(value()?)
                    .str()
                    .map_err(|e| Error::from(e).place(vpath.to_string()))?,
            ),
            "CUCount" => PredicateKind::CuCount(
                c.at(value()?)
                    .uint("a CU count")
                    .map_err(|e| Error::from(e).place(vpath.to_string()))?,
            ),
            "TruePred" => PredicateKind::True,
            other => PredicateKind::Other {
                type_name: other,
                value: match f.get("value") {
                    Some(p) => Some(
                        c.at(p)
                            .skip()
                            .map_err(|e| Error::from(e).place(vpath.to_string()))?,
                    ),
                    None => None,
                },
            },
        };
        Ok(Predicate { offset, kind })
    }
}
