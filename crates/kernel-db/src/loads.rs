//! What rocBLAS or hipBLASLt opens from its Tensile directory for one GPU, and what it lacks:
//! the index, the code objects loaded at start-up, and the shard files behind every row of the
//! index that the device can select. A pure function over a listing of the directory
//! ([`Listing`]) and the rows of the index it opens (read by the caller, who owns the files).
//!
//! Which library's rule applies is told by what the directory holds ([`Flavor::of`]), not by a
//! version: hipBLASLt's directory holds its `TensileLiteLibrary_lazy_*Mapping.dat`, its
//! extension-op library or its transform kernels; any other Tensile directory is rocBLAS's.
//!
//! The rules, from the libraries' sources (rocBLAS 6.4 `library/src/tensile_host.cpp`,
//! hipBLASLt 7.1 `rocblaslt/src/tensile_host.cpp`, Tensile's `ExactLogicLibrary.hpp`,
//! `PlaceholderLibrary.hpp` and `HipSolutionAdapter.cpp`):
//!
//! - **Directory**: `<dir>/<processor>` when it exists (both libraries), else `<dir>`.
//! - **Index**: rocBLAS opens `TensileLibrary_lazy_<P>.dat`, else `TensileLibrary_<P>.dat`,
//!   else `TensileLibrary.dat`, and **aborts** at start-up when none is there. hipBLASLt opens
//!   `TensileLibrary_lazy_<P>.dat` only; without it the library loads and **every GEMM call
//!   fails** ("rocblaslt error: Cannot read ...").
//! - **Rows** of the index's `Hardware` node are tried in file order; the first whose predicate
//!   holds and that has a solution for the problem wins, else the next: a device can select
//!   every row whose predicate may hold for it ([`DeviceTest::may_hold`]): its processor's
//!   rows, the rows of its CU count (all of them when the count is not known) and the
//!   catch-all `TruePred` row, which serves the problem types the others leave out.
//! - **Shards** (lazy indexes): a `Placeholder` with prefix `v` loads `v.dat` on first use.
//!   rocBLAS then loads its assembly kernels from `v.co` and its source kernels from
//!   `v.hsaco`, or `v_<P>.hsaco` when `v` names a fallback library (so the arch-neutral
//!   `..._fallback.dat` has its code in `..._fallback_gfx90a-xnack-.hsaco`); hipBLASLt loads
//!   `v.co` only. Every code-object name is also tried with `-xnack-`/`-xnack+` before the
//!   extension.
//! - **Start-up code objects**: a lazy index loads `Kernels.so-000-<P>.hsaco` (with its XNACK
//!   spellings) at once; one index of every processor loads every `*<P>*co` file.
//! - **hipBLASLt's other files**: `TensileLiteLibrary_lazy_Mapping.dat` (one for every
//!   processor; `TensileLiteLibrary_lazy_<P>_Mapping.dat` in the later layout) routes a
//!   solution index to its shard: without it the index APIs and tuning overrides fail, the
//!   rest works. `hipblasltExtOpLibrary.dat` names per processor its extension ops' code,
//!   `extop_<P>.co`.
//!
//! ```
//! use gfxkit_kernel_db::loads::{loads, Device, Flavor, Row, DeviceTest};
//! use gfxkit_kernel_db::resolve::{Listing, Xnack};
//! let names = ["TensileLibrary_lazy_gfx90a.dat", "Kernels.so-000-gfx90a.hsaco",
//!              "T_fallback.dat", "T_fallback_gfx90a-xnack-.hsaco"];
//! let listing = Listing::new(&names);
//! let rows = vec![Row { test: DeviceTest::True, placeholders: vec!["T_fallback".into()],
//!                       processor: None, cu_count: None, solutions: 0 }];
//! let device = Device { processor: "gfx90a", xnack: Xnack::Unspecified, cu_count: None };
//! let l = loads(&listing, Flavor::Rocblas, &device, false, &|_| Some(Ok(rows.clone())));
//! assert!(l.missing.is_empty());
//! assert_eq!(l.shards, ["T_fallback.dat", "T_fallback_gfx90a-xnack-.hsaco"]);
//! ```

use crate::resolve::{self, Listing, Probe, Xnack};
use crate::tensile::{Predicate, PredicateKind, RowSummary};

/// Whose loading rule a Tensile directory follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// rocBLAS (Tensile).
    Rocblas,
    /// hipBLASLt (TensileLite).
    Hipblaslt,
}

impl Flavor {
    /// hipBLASLt when the listing (its top or a processor's subdirectory) holds a
    /// `TensileLiteLibrary_*` file, `hipblasltExtOpLibrary.dat`, an `extop_*.co` or
    /// `hipblasltTransform.hsaco`; rocBLAS otherwise.
    pub fn of(listing: &Listing) -> Flavor {
        let lite = |name: &str| {
            let base = name.rsplit('/').next().unwrap_or(name);
            base.starts_with("TensileLiteLibrary")
                || base.starts_with("hipblasltExtOpLibrary")
                || base.starts_with("hipblasltTransform")
                || (base.starts_with("extop_") && base.ends_with(".co"))
        };
        if listing.paths().any(lite) {
            Flavor::Hipblaslt
        } else {
            Flavor::Rocblas
        }
    }

    /// The library's name, as users know it.
    pub fn library(self) -> &'static str {
        match self {
            Flavor::Rocblas => "rocBLAS",
            Flavor::Hipblaslt => "hipBLASLt",
        }
    }

    /// What the library does when its index for a processor is missing.
    pub fn without_index(self) -> &'static str {
        match self {
            Flavor::Rocblas => "rocBLAS aborts at start-up",
            Flavor::Hipblaslt => "hipBLASLt loads, then every GEMM call fails",
        }
    }
}

/// A hardware predicate reduced to what tells devices apart, owned (kept beside a listing
/// after the index's bytes are gone).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DeviceTest {
    /// `Processor == name`.
    Processor(String),
    /// `CUCount == n`.
    CuCount(u64),
    /// Every one holds.
    And(Vec<DeviceTest>),
    /// Any one holds.
    Or(Vec<DeviceTest>),
    /// The inner one does not hold.
    Not(Box<DeviceTest>),
    /// `TruePred`.
    True,
    /// A predicate on something else than the device (or one gfxkit does not read): it may
    /// hold for any device.
    Other,
}

impl DeviceTest {
    /// The test of a predicate (`AMDGPU` unwrapped).
    pub fn of(p: &Predicate<'_>) -> DeviceTest {
        match &p.kind {
            PredicateKind::Amdgpu(inner) => DeviceTest::of(inner),
            PredicateKind::Processor(name) => DeviceTest::Processor((*name).to_owned()),
            PredicateKind::CuCount(n) => DeviceTest::CuCount(*n),
            PredicateKind::And(all) => DeviceTest::And(all.iter().map(DeviceTest::of).collect()),
            PredicateKind::Or(any) => DeviceTest::Or(any.iter().map(DeviceTest::of).collect()),
            PredicateKind::Not(inner) => DeviceTest::Not(Box::new(DeviceTest::of(inner))),
            PredicateKind::True => DeviceTest::True,
            _ => DeviceTest::Other,
        }
    }

    /// Whether the test may hold for a device of `processor` with `cu_count` compute units
    /// (any count when `None`).
    pub fn may_hold(&self, processor: &str, cu_count: Option<u64>) -> bool {
        match self {
            DeviceTest::Processor(p) => p == processor,
            DeviceTest::CuCount(n) => cu_count.map_or(true, |c| c == *n),
            DeviceTest::And(all) => all.iter().all(|t| t.may_hold(processor, cu_count)),
            DeviceTest::Or(any) => any.iter().any(|t| t.may_hold(processor, cu_count)),
            DeviceTest::Not(inner) => !inner.must_hold(processor, cu_count),
            DeviceTest::True | DeviceTest::Other => true,
        }
    }

    /// Whether the test holds for every such device.
    pub fn must_hold(&self, processor: &str, cu_count: Option<u64>) -> bool {
        match self {
            DeviceTest::Processor(p) => p == processor,
            DeviceTest::CuCount(n) => cu_count == Some(*n),
            DeviceTest::And(all) => all.iter().all(|t| t.must_hold(processor, cu_count)),
            DeviceTest::Or(any) => any.iter().any(|t| t.must_hold(processor, cu_count)),
            DeviceTest::Not(inner) => !inner.may_hold(processor, cu_count),
            DeviceTest::True => true,
            DeviceTest::Other => false,
        }
    }

    /// Whether the test names no processor that it requires: it may hold for processors
    /// whatever their name (`TruePred`, a CU count alone, an `Or` with such a branch).
    pub fn any_processor(&self) -> bool {
        match self {
            DeviceTest::Processor(_) => false,
            DeviceTest::And(all) => all.iter().all(DeviceTest::any_processor),
            DeviceTest::Or(any) => any.iter().any(DeviceTest::any_processor),
            DeviceTest::CuCount(_) | DeviceTest::Not(_) | DeviceTest::True | DeviceTest::Other => {
                true
            }
        }
    }

    /// The processors the test may name and hold for (`Processor` leaves outside `Not`).
    pub fn processors(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(t) = stack.pop() {
            match t {
                DeviceTest::Processor(p) => out.push(p.as_str()),
                DeviceTest::And(v) | DeviceTest::Or(v) => stack.extend(v.iter()),
                _ => {}
            }
        }
        out
    }
}

/// One hardware row of an index, owned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// What selects the row (`True` for an index whose root is not `Hardware`).
    pub test: DeviceTest,
    /// The processor the predicate names ([`Predicate::processor`]).
    pub processor: Option<String>,
    /// The CU count the predicate names.
    pub cu_count: Option<u64>,
    /// The shard prefixes below the row, in tree order.
    pub placeholders: Vec<String>,
    /// How many solutions the row reaches in the index itself.
    pub solutions: usize,
}

impl Row {
    /// The owned row of a summary.
    pub fn of(r: &RowSummary<'_>) -> Row {
        Row {
            test: r.predicate.map_or(DeviceTest::True, DeviceTest::of),
            processor: r.processor.map(str::to_owned),
            cu_count: r.cu_count,
            placeholders: r.placeholders.iter().map(|p| (*p).to_owned()).collect(),
            solutions: r.solutions.len(),
        }
    }

    /// Whether a device of `processor` (with `cu_count` CUs, any when `None`) can select it.
    pub fn selectable(&self, processor: &str, cu_count: Option<u64>) -> bool {
        self.test.may_hold(processor, cu_count)
    }
}

/// A GPU as the library sees it.
#[derive(Debug, Clone, Copy)]
pub struct Device<'a> {
    /// The processor (`gcnArchName` up to the first `:`).
    pub processor: &'a str,
    /// The XNACK mode.
    pub xnack: Xnack,
    /// The number of compute units, when known: rows for another count are not selected.
    pub cu_count: Option<u64>,
}

/// What the library opens for a device, and what it lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loads {
    /// Whose rule.
    pub flavor: Flavor,
    /// The directory used, relative to the listing (`""` or the processor).
    pub dir: String,
    /// The index search.
    pub index: Probe,
    /// Whether the index is a lazy master.
    pub lazy: bool,
    /// Positions of the index's rows the device can select.
    pub rows: Vec<usize>,
    /// Files opened at start-up: the index and the code objects loaded at once, sorted.
    pub start: Vec<String>,
    /// Files opened on first use: each selectable row's shard indexes and code objects,
    /// sorted.
    pub shards: Vec<String>,
    /// Files the device needs that are absent, sorted (a shard's first spelling tried).
    pub missing: Vec<String>,
    /// Why the index's rows are not known (it does not read), when they are not.
    pub unreadable: Option<String>,
    /// Files the library looks for without needing them for its kernels, absent, each with
    /// what follows.
    pub notes: Vec<String>,
    /// Why the files missing are needed, when it is not plain (a processor without a row of
    /// its own runs the catch-all row's source kernels).
    pub context: Option<String>,
}

impl Loads {
    /// Every file opened, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = self.start.iter().chain(&self.shards).cloned().collect();
        v.sort();
        v.dedup();
        v
    }

    /// Why the library cannot work on the device, with what it does then; `None` when every
    /// file it needs is there.
    pub fn failure(&self, processor: &str) -> Option<String> {
        if self.index.opened.is_none() {
            let tried = self.index.missed.join(", ");
            return Some(format!(
                "{}: no index for {processor} (tried {tried})",
                self.flavor.without_index()
            ));
        }
        if let Some(e) = &self.unreadable {
            return Some(format!(
                "{}: its index cannot be read: {e}",
                self.flavor.library()
            ));
        }
        if self.missing.is_empty() {
            return None;
        }
        Some(format!(
            "lacks {} ({}{} fails the problems that reach {})",
            quote_names(&self.missing),
            self.context
                .as_deref()
                .map(|c| format!("{c}; "))
                .unwrap_or_default(),
            self.flavor.library(),
            if self.missing.len() == 1 {
                "it"
            } else {
                "them"
            }
        ))
    }
}

/// How many names a message quotes before "and N more".
pub const NAMES_QUOTED: usize = 4;

/// `a, b, c and 5 more`.
pub fn quote_names(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(NAMES_QUOTED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_QUOTED {
        s.push_str(&format!(" and {} more", names.len() - NAMES_QUOTED));
    }
    s
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// The index the library opens for `processor`: the directory, the search, and whether it is
/// a lazy master. `by_variable`: the directory is the one the library's variable names
/// (`HIPBLASLT_TENSILE_LIBPATH`), which hipBLASLt uses as given, without looking for a
/// `<processor>/` subdirectory in it (rocBLAS looks either way).
pub fn index(
    listing: &Listing,
    flavor: Flavor,
    processor: &str,
    by_variable: bool,
) -> (String, Probe, bool) {
    match flavor {
        Flavor::Rocblas => {
            let r = resolve::rocblas(listing, processor, Xnack::Unspecified);
            (r.dir, r.index, r.lazy)
        }
        Flavor::Hipblaslt => {
            let dir = if !by_variable && listing.exists(processor) {
                processor.to_owned()
            } else {
                String::new()
            };
            let name = format!("TensileLibrary_lazy_{processor}.dat");
            let p = resolve::probe(
                listing,
                [join(&dir, &name), join(&dir, &format!("{name}.zlib"))],
            );
            let lazy = p.opened.is_some();
            (dir, p, lazy)
        }
    }
}

/// The rows of an index by its path in a listing: `None` when it cannot be had, an error when
/// it does not read.
pub type RowsOf<'f> = &'f dyn Fn(&str) -> Option<Result<Vec<Row>, String>>;

/// What the library whose rule is `flavor` opens for `device` in the directory `listing`
/// lists; `rows` gives the rows of an index by its path in the listing (`None` when it cannot
/// be had, an error when it does not read). `by_variable`: the library was sent to the
/// directory by its variable ([`index`]).
pub fn loads(
    listing: &Listing,
    flavor: Flavor,
    device: &Device<'_>,
    by_variable: bool,
    rows: RowsOf<'_>,
) -> Loads {
    let processor = device.processor;
    let (dir, index, lazy) = index(listing, flavor, processor, by_variable);
    let mut out = Loads {
        flavor,
        dir,
        index,
        lazy,
        rows: Vec::new(),
        start: Vec::new(),
        shards: Vec::new(),
        missing: Vec::new(),
        unreadable: None,
        notes: Vec::new(),
        context: None,
    };
    let Some(opened) = out.index.opened.clone() else {
        return out;
    };
    out.start.push(opened.clone());
    let index_rows = match rows(&opened) {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            out.unreadable = Some(e);
            None
        }
        None => None,
    };
    let dir = out.dir.clone();
    let has_source = listing.files_in(&dir).any(|n| n.starts_with("Kernels.so-"));
    let source_name = format!("Kernels.so-000-{processor}.hsaco");
    let first_present = |name: &str| -> Result<String, String> {
        let candidates = resolve::xnack_variants(name).map(|n| join(&dir, &n));
        let p = resolve::probe(listing, candidates.clone());
        p.opened.ok_or_else(|| candidates[0].clone())
    };
    if lazy {
        if has_source {
            match first_present(&source_name) {
                Ok(f) => out.start.push(f),
                Err(m) => out.missing.push(m),
            }
        }
        let suffix = shard_suffix(&opened);
        let mut seen = std::collections::HashSet::new();
        for (i, r) in index_rows.iter().flatten().enumerate() {
            if !r.selectable(processor, device.cu_count) {
                continue;
            }
            out.rows.push(i);
            for p in &r.placeholders {
                if !seen.insert(p.as_str()) {
                    continue;
                }
                let f = shard_files(listing, flavor, &dir, p, processor, suffix);
                out.shards.extend(f.files);
                out.missing.extend(f.missing);
            }
        }
        if flavor == Flavor::Hipblaslt {
            hipblaslt_notes(listing, &dir, processor, &mut out);
        }
    } else {
        let r = resolve::rocblas(listing, processor, device.xnack);
        out.start.extend(r.code_objects);
        // Tensile's names for what a build writes per processor with a row of its own; a
        // processor served by the catch-all row alone runs its source kernels only.
        let rows = index_rows.unwrap_or_default();
        out.rows = (0..rows.len())
            .filter(|&i| rows[i].selectable(processor, device.cu_count))
            .collect();
        let own_row = rows
            .iter()
            .any(|r| r.processor.as_deref() == Some(processor));
        let catch_all = rows.iter().any(|r| r.test.any_processor());
        let mut expected = Vec::new();
        if own_row || rows.is_empty() {
            expected.push(format!("TensileLibrary_{processor}.co"));
            if has_source {
                expected.push(source_name.clone());
            }
        } else if catch_all {
            expected.push(source_name.clone());
            out.context = Some(format!(
                "its index has no row for {processor}: the catch-all row it runs has source kernels"
            ));
        } else if out.unreadable.is_none() {
            let named: Vec<&str> = rows.iter().filter_map(|r| r.processor.as_deref()).collect();
            out.unreadable = Some(format!(
                "it has no row for {processor} (rows: {})",
                named.join(" ")
            ));
        }
        for e in expected {
            if let Err(m) = first_present(&e) {
                out.missing.push(m);
            }
        }
    }
    out.start.sort();
    out.start.dedup();
    out.shards.sort();
    out.shards.dedup();
    out.missing.sort();
    out.missing.dedup();
    out
}

/// The files one shard needs: those present and those absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardFiles {
    /// Files opened (relative to the listing).
    pub files: Vec<String>,
    /// Files absent (the first spelling tried).
    pub missing: Vec<String>,
}

/// The files the shard `prefix` (a `Placeholder`'s value) leads to in `dir`, for `processor`,
/// under `flavor`'s rule; `suffix` is the master index's (`.dat`).
pub fn shard_files(
    listing: &Listing,
    flavor: Flavor,
    dir: &str,
    prefix: &str,
    processor: &str,
    suffix: &str,
) -> ShardFiles {
    let mut out = ShardFiles::default();
    match flavor {
        Flavor::Rocblas => {
            let f = resolve::placeholder(listing, dir, prefix, processor, suffix);
            match f.index.opened {
                Some(i) => out.files.push(i),
                None => out.missing.extend(f.index.missed.first().cloned()),
            }
            match (f.asm.opened, f.source.opened) {
                (None, None) => {
                    // Neither the assembly nor the source kernels' file: name the one the
                    // shard's name calls for (a fallback shard has source kernels only).
                    let want = if prefix.contains("fallback") {
                        f.source.missed.first()
                    } else {
                        f.asm.missed.first()
                    };
                    out.missing.extend(want.cloned());
                }
                (a, s) => out.files.extend(a.into_iter().chain(s)),
            }
        }
        Flavor::Hipblaslt => {
            let dat = format!("{prefix}{suffix}");
            let index = resolve::probe(
                listing,
                [join(dir, &dat), join(dir, &format!("{dat}.zlib"))],
            );
            match index.opened {
                Some(i) => out.files.push(i),
                None => out.missing.push(join(dir, &dat)),
            }
            let code = resolve::probe(
                listing,
                resolve::xnack_variants(&format!("{prefix}.co")).map(|n| join(dir, &n)),
            );
            match code.opened {
                Some(c) => out.files.push(c),
                None => out.missing.extend(code.missed.first().cloned()),
            }
        }
    }
    out
}

/// What the lazy library whose rule is `flavor` has loaded on `processor` when it runs a
/// solution of the shard index `shard` (a name in `listing`'s root): the source kernels it
/// loads at start (`Kernels.so-000-<processor>.hsaco`, its first spelling present) and the
/// shard's own code files ([`shard_files`]), present and absent. `None` when `processor` has no
/// lazy master beside the shard (no master, one that is not lazy, or one in a `<processor>/`
/// directory, which names its shards there), or when `shard` is not named as its shards are.
pub fn shard_code(
    listing: &Listing,
    flavor: Flavor,
    processor: &str,
    shard: &str,
) -> Option<ShardFiles> {
    let (dir, index, lazy) = index(listing, flavor, processor, false);
    let master = index.opened.filter(|_| lazy && dir.is_empty())?;
    let suffix = shard_suffix(&master);
    let prefix = shard
        .strip_suffix(".zlib")
        .unwrap_or(shard)
        .strip_suffix(suffix)?;
    let is_index = |f: &String| f.ends_with(suffix) || f.ends_with(&format!("{suffix}.zlib"));
    let mut out = shard_files(listing, flavor, "", prefix, processor, suffix);
    out.files.retain(|f| !is_index(f));
    out.missing.retain(|f| !is_index(f));
    if listing.files_in("").any(|n| n.starts_with("Kernels.so-")) {
        let source = format!("Kernels.so-000-{processor}.hsaco");
        let p = resolve::probe(listing, resolve::xnack_variants(&source));
        match p.opened {
            Some(f) => out.files.push(f),
            None => out.missing.extend(p.missed.first().cloned()),
        }
    }
    Some(out)
}

/// The suffix of a master index's shards: `.yaml` for a YAML master, else `.dat`.
pub fn shard_suffix(master: &str) -> &'static str {
    if master.ends_with(".yaml") {
        ".yaml"
    } else {
        ".dat"
    }
}

/// hipBLASLt's mapping and extension-op code, which its kernels do not need.
fn hipblaslt_notes(listing: &Listing, dir: &str, processor: &str, out: &mut Loads) {
    let mapping = resolve::probe(
        listing,
        [
            join(dir, "TensileLiteLibrary_lazy_Mapping.dat"),
            join(
                dir,
                &format!("TensileLiteLibrary_lazy_{processor}_Mapping.dat"),
            ),
            join(
                dir,
                &format!("TensileLiteLibrary_lazy_{processor}_Mapping.dat.zlib"),
            ),
        ],
    );
    match mapping.opened {
        Some(m) => out.start.push(m),
        None => out.notes.push(format!(
            "no {} (\"No library mapping found\"): solution-index APIs and tuning overrides \
             fail on {processor}, GEMM calls work",
            mapping.missed[0]
        )),
    }
    if listing.exists(&join(dir, "hipblasltExtOpLibrary.dat"))
        || listing.exists("hipblasltExtOpLibrary.dat")
    {
        let co = format!("extop_{processor}.co");
        if listing.exists(&join(dir, &co)) {
            out.shards.push(join(dir, &co));
        } else if listing.exists(&co) {
            out.shards.push(co);
        } else {
            out.notes.push(format!(
                "no {co}: the extension ops (AMax, softmax, layer norm) fail on {processor}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(test: DeviceTest, placeholders: &[&str]) -> Row {
        let processor = match &test {
            DeviceTest::Processor(p) => Some(p.clone()),
            DeviceTest::And(v) => v.iter().find_map(|t| match t {
                DeviceTest::Processor(p) => Some(p.clone()),
                _ => None,
            }),
            _ => None,
        };
        Row {
            test,
            processor,
            cu_count: None,
            placeholders: placeholders.iter().map(|p| (*p).to_owned()).collect(),
            solutions: 0,
        }
    }

    fn gfx90a_rows() -> Vec<Row> {
        use DeviceTest::*;
        vec![
            row(
                And(vec![Processor("gfx90a".into()), CuCount(104)]),
                &["T_Type_A_CU104_gfx90a"],
            ),
            row(Processor("gfx90a".into()), &["T_Type_A_gfx90a"]),
            row(True, &["T_Type_A_fallback"]),
        ]
    }

    const ROCBLAS_64: &[&str] = &[
        "Kernels.so-000-gfx90a-xnack+.hsaco",
        "Kernels.so-000-gfx90a-xnack-.hsaco",
        "TensileLibrary_lazy_gfx90a.dat",
        "T_Type_A_CU104_gfx90a.dat",
        "T_Type_A_CU104_gfx90a.co",
        "T_Type_A_gfx90a.dat",
        "T_Type_A_gfx90a-xnack-.hsaco",
        "T_Type_A_fallback.dat",
        "T_Type_A_fallback_gfx90a-xnack+.hsaco",
    ];

    #[test]
    fn rocblas_64_rows_in_order_with_the_cu_row_and_the_fallback() {
        let l = Listing::new(ROCBLAS_64);
        let rows = gfx90a_rows();
        let d = |cu| Device {
            processor: "gfx90a",
            xnack: Xnack::Unspecified,
            cu_count: cu,
        };
        let any = loads(&l, Flavor::Rocblas, &d(None), false, &|_| {
            Some(Ok(rows.clone()))
        });
        assert_eq!(any.rows, [0, 1, 2]);
        assert!(any.missing.is_empty(), "{:?}", any.missing);
        assert_eq!(
            any.start,
            [
                "Kernels.so-000-gfx90a-xnack-.hsaco",
                "TensileLibrary_lazy_gfx90a.dat"
            ]
        );
        assert_eq!(any.shards.len(), 6);
        assert!(any
            .shards
            .contains(&"T_Type_A_fallback_gfx90a-xnack+.hsaco".to_string()));
        // A 110-CU device skips the CU104 row.
        let cu110 = loads(&l, Flavor::Rocblas, &d(Some(110)), false, &|_| {
            Some(Ok(rows.clone()))
        });
        assert_eq!(cu110.rows, [1, 2]);
        assert!(!cu110.shards.iter().any(|s| s.contains("CU104")));
        // The fallback's code removed: named, the run fails those problems.
        let mut names = ROCBLAS_64.to_vec();
        names.retain(|n| !n.starts_with("T_Type_A_fallback_"));
        let l = Listing::new(&names);
        let broken = loads(&l, Flavor::Rocblas, &d(Some(110)), false, &|_| {
            Some(Ok(rows.clone()))
        });
        assert_eq!(broken.missing, ["T_Type_A_fallback_gfx90a.hsaco"]);
        assert!(broken
            .failure("gfx90a")
            .unwrap()
            .starts_with("lacks T_Type_A_fallback_gfx90a.hsaco (rocBLAS fails"));
    }

    #[test]
    fn a_missing_index_aborts_rocblas_and_fails_hipblaslt_calls() {
        let l = Listing::new(&["Kernels.so-000-gfx942.hsaco"]);
        let d = Device {
            processor: "gfx942",
            xnack: Xnack::Unspecified,
            cu_count: None,
        };
        let r = loads(&l, Flavor::Rocblas, &d, false, &|_| None);
        let why = r.failure("gfx942").unwrap();
        assert!(why.starts_with("rocBLAS aborts at start-up: no index for gfx942 (tried TensileLibrary_lazy_gfx942.dat, TensileLibrary_gfx942.dat, TensileLibrary.dat)"), "{why}");
        let l = Listing::new(&["TensileLiteLibrary_lazy_Mapping.dat", "TensileLibrary.dat"]);
        assert_eq!(Flavor::of(&l), Flavor::Hipblaslt);
        let h = loads(&l, Flavor::Hipblaslt, &d, false, &|_| None);
        let why = h.failure("gfx942").unwrap();
        assert!(
            why.starts_with("hipBLASLt loads, then every GEMM call fails: no index for gfx942"),
            "{why}"
        );
    }

    #[test]
    fn hipblaslt_71_shards_mapping_and_extension_ops() {
        let names = [
            "Kernels.so-000-gfx1151.hsaco",
            "TensileLibrary_lazy_gfx1151.dat",
            "TensileLiteLibrary_lazy_Mapping.dat",
            "TensileLibrary_HH_gfx1151.dat",
            "TensileLibrary_HH_gfx1151.co",
            "hipblasltExtOpLibrary.dat",
            "extop_gfx90a.co",
        ];
        let l = Listing::new(&names);
        assert_eq!(Flavor::of(&l), Flavor::Hipblaslt);
        let rows = vec![row(
            DeviceTest::Processor("gfx1151".into()),
            &["TensileLibrary_HH_gfx1151", "TensileLibrary_SS_gfx1151"],
        )];
        let d = Device {
            processor: "gfx1151",
            xnack: Xnack::Unspecified,
            cu_count: None,
        };
        let h = loads(&l, Flavor::Hipblaslt, &d, false, &|_| {
            Some(Ok(rows.clone()))
        });
        assert_eq!(
            h.start,
            [
                "Kernels.so-000-gfx1151.hsaco",
                "TensileLibrary_lazy_gfx1151.dat",
                "TensileLiteLibrary_lazy_Mapping.dat"
            ]
        );
        assert_eq!(
            h.shards,
            [
                "TensileLibrary_HH_gfx1151.co",
                "TensileLibrary_HH_gfx1151.dat"
            ]
        );
        assert_eq!(
            h.missing,
            [
                "TensileLibrary_SS_gfx1151.co",
                "TensileLibrary_SS_gfx1151.dat"
            ]
        );
        assert_eq!(h.notes.len(), 1);
        assert!(
            h.notes[0].starts_with("no extop_gfx1151.co"),
            "{:?}",
            h.notes
        );
    }

    #[test]
    fn device_tests() {
        use DeviceTest::*;
        let cu = And(vec![Processor("gfx90a".into()), CuCount(104)]);
        assert!(cu.may_hold("gfx90a", None));
        assert!(cu.may_hold("gfx90a", Some(104)));
        assert!(!cu.may_hold("gfx90a", Some(110)));
        assert!(!cu.may_hold("gfx942", None));
        assert!(!cu.any_processor());
        assert!(True.any_processor() && CuCount(3).any_processor());
        let not = Not(Box::new(Processor("gfx90a".into())));
        assert!(!not.may_hold("gfx90a", None));
        assert!(not.may_hold("gfx942", None));
        assert!(Or(vec![Processor("a".into()), True]).any_processor());
        assert_eq!(
            Or(vec![Processor("a".into()), cu.clone()]).processors(),
            ["gfx90a", "a"]
        );
    }
}
