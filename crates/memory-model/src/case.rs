//! The dimensions of a memory-model case and its text form
//! (`kind;as=<as>;ord=<ord>;ford=<ord>;scope=<scope>;ret=<ret|noret>;op=add;flags=<f>;mmra=<m>`).

use std::fmt;
use std::str::FromStr;

/// The LLVM memory instruction of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Non-atomic `load`.
    Load,
    /// Non-atomic `store`.
    Store,
    /// `load atomic`.
    LoadAtomic,
    /// `store atomic`.
    StoreAtomic,
    /// `atomicrmw add`.
    AtomicRmw,
    /// `cmpxchg`.
    Cmpxchg,
    /// `fence`.
    Fence,
}

impl Kind {
    /// Every kind, in case-enumeration order.
    pub const ALL: [Kind; 7] = [
        Kind::Load,
        Kind::Store,
        Kind::LoadAtomic,
        Kind::StoreAtomic,
        Kind::AtomicRmw,
        Kind::Cmpxchg,
        Kind::Fence,
    ];

    /// The name used in case text.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Load => "load",
            Kind::Store => "store",
            Kind::LoadAtomic => "load_atomic",
            Kind::StoreAtomic => "store_atomic",
            Kind::AtomicRmw => "atomicrmw",
            Kind::Cmpxchg => "cmpxchg",
            Kind::Fence => "fence",
        }
    }

    /// Whether the instruction is atomic (carries an ordering and a scope).
    pub fn is_atomic(self) -> bool {
        !matches!(self, Kind::Load | Kind::Store)
    }

    /// The orderings LLVM IR accepts for this kind (success ordering for `cmpxchg`).
    pub fn orderings(self) -> &'static [Ordering] {
        use Ordering::*;
        match self {
            Kind::Load | Kind::Store => &[],
            Kind::LoadAtomic => &[Unordered, Monotonic, Acquire, SeqCst],
            Kind::StoreAtomic => &[Unordered, Monotonic, Release, SeqCst],
            Kind::AtomicRmw | Kind::Cmpxchg => &[Monotonic, Acquire, Release, AcqRel, SeqCst],
            Kind::Fence => &[Acquire, Release, AcqRel, SeqCst],
        }
    }
}

/// An LLVM address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddrSpace {
    /// `addrspace(1)`: global memory.
    Global,
    /// `addrspace(3)`: LDS, shared by a work-group.
    Local,
    /// `addrspace(0)`: flat addresses that may point to global, local or private memory.
    Generic,
    /// `addrspace(5)`: scratch, private to a work-item.
    Private,
    /// `addrspace(4)`: read-only global memory.
    Constant,
    /// `addrspace(2)`: GDS, shared by all work-groups of a dispatch.
    Region,
}

impl AddrSpace {
    /// Every address space, in case-enumeration order.
    pub const ALL: [AddrSpace; 6] = [
        AddrSpace::Global,
        AddrSpace::Local,
        AddrSpace::Generic,
        AddrSpace::Private,
        AddrSpace::Constant,
        AddrSpace::Region,
    ];

    /// The name used in case text.
    pub fn name(self) -> &'static str {
        match self {
            AddrSpace::Global => "global",
            AddrSpace::Local => "local",
            AddrSpace::Generic => "generic",
            AddrSpace::Private => "private",
            AddrSpace::Constant => "constant",
            AddrSpace::Region => "region",
        }
    }

    /// The LLVM AMDGPU address-space number.
    pub fn number(self) -> u32 {
        match self {
            AddrSpace::Generic => 0,
            AddrSpace::Global => 1,
            AddrSpace::Region => 2,
            AddrSpace::Local => 3,
            AddrSpace::Constant => 4,
            AddrSpace::Private => 5,
        }
    }
}

/// An LLVM atomic ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ordering {
    /// `unordered`.
    Unordered,
    /// `monotonic`.
    Monotonic,
    /// `acquire`.
    Acquire,
    /// `release`.
    Release,
    /// `acq_rel`.
    AcqRel,
    /// `seq_cst`.
    SeqCst,
}

impl Ordering {
    /// The LLVM IR keyword, also used in case text.
    pub fn name(self) -> &'static str {
        match self {
            Ordering::Unordered => "unordered",
            Ordering::Monotonic => "monotonic",
            Ordering::Acquire => "acquire",
            Ordering::Release => "release",
            Ordering::AcqRel => "acq_rel",
            Ordering::SeqCst => "seq_cst",
        }
    }

    /// Whether the ordering has acquire semantics.
    pub fn acquires(self) -> bool {
        matches!(
            self,
            Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst
        )
    }

    /// Whether the ordering has release semantics.
    pub fn releases(self) -> bool {
        matches!(
            self,
            Ordering::Release | Ordering::AcqRel | Ordering::SeqCst
        )
    }

    fn all() -> [Ordering; 6] {
        use Ordering::*;
        [Unordered, Monotonic, Acquire, Release, AcqRel, SeqCst]
    }
}

/// How far an atomic operation's ordering reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeLevel {
    /// `singlethread`.
    SingleThread,
    /// `wavefront`.
    Wavefront,
    /// `workgroup`.
    Workgroup,
    /// `cluster` (LLVM 22): the work-groups of a cluster, which GFX12.5 schedules on one shader
    /// engine. Only processors with clusters take it (see [`Case::all_with_cluster`]).
    Cluster,
    /// `agent`.
    Agent,
    /// `system` (LLVM's default scope).
    System,
}

/// An LLVM sync scope: a level plus whether it is the `one-as` form, which orders only the
/// address space of the instruction itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    /// The level.
    pub level: ScopeLevel,
    /// The `one-as` form.
    pub one_as: bool,
}

impl Scope {
    /// Every scope of a processor without clusters, in case-enumeration order.
    pub const ALL: [Scope; 10] = [
        Scope::of(ScopeLevel::SingleThread, false),
        Scope::of(ScopeLevel::Wavefront, false),
        Scope::of(ScopeLevel::Workgroup, false),
        Scope::of(ScopeLevel::Agent, false),
        Scope::of(ScopeLevel::System, false),
        Scope::of(ScopeLevel::SingleThread, true),
        Scope::of(ScopeLevel::Wavefront, true),
        Scope::of(ScopeLevel::Workgroup, true),
        Scope::of(ScopeLevel::Agent, true),
        Scope::of(ScopeLevel::System, true),
    ];

    /// Every scope of a processor with clusters (GFX12.5), in case-enumeration order: the
    /// scopes of [`Scope::ALL`] with `cluster` between `workgroup` and `agent`.
    pub const WITH_CLUSTER: [Scope; 12] = [
        Scope::of(ScopeLevel::SingleThread, false),
        Scope::of(ScopeLevel::Wavefront, false),
        Scope::of(ScopeLevel::Workgroup, false),
        Scope::of(ScopeLevel::Cluster, false),
        Scope::of(ScopeLevel::Agent, false),
        Scope::of(ScopeLevel::System, false),
        Scope::of(ScopeLevel::SingleThread, true),
        Scope::of(ScopeLevel::Wavefront, true),
        Scope::of(ScopeLevel::Workgroup, true),
        Scope::of(ScopeLevel::Cluster, true),
        Scope::of(ScopeLevel::Agent, true),
        Scope::of(ScopeLevel::System, true),
    ];

    /// The scope at `level`, `one_as` or not.
    pub const fn of(level: ScopeLevel, one_as: bool) -> Scope {
        Scope { level, one_as }
    }

    /// Looks a scope up by its name in case text and in LLVM IR (`cluster-one-as`; `one-as`
    /// is system's).
    pub fn by_name(name: &str) -> Option<Scope> {
        Scope::WITH_CLUSTER.into_iter().find(|s| s.name() == name)
    }

    /// The name used in case text (`agent`, `agent-one-as`, `system`, `one-as`).
    pub fn name(self) -> &'static str {
        use ScopeLevel::*;
        match (self.level, self.one_as) {
            (SingleThread, false) => "singlethread",
            (Wavefront, false) => "wavefront",
            (Workgroup, false) => "workgroup",
            (Cluster, false) => "cluster",
            (Agent, false) => "agent",
            (System, false) => "system",
            (SingleThread, true) => "singlethread-one-as",
            (Wavefront, true) => "wavefront-one-as",
            (Workgroup, true) => "workgroup-one-as",
            (Cluster, true) => "cluster-one-as",
            (Agent, true) => "agent-one-as",
            (System, true) => "one-as",
        }
    }

    /// The LLVM IR `syncscope("...")` clause (empty for `system`; `singlethread` is written
    /// `syncscope("singlethread")`).
    pub fn llvm_syncscope(self) -> String {
        match (self.level, self.one_as) {
            (ScopeLevel::System, false) => String::new(),
            _ => format!(" syncscope(\"{}\")", self.name()),
        }
    }
}

/// The `volatile`, `!nontemporal` and `!amdgpu.last.use` flags of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Flags {
    /// `volatile`.
    pub volatile: bool,
    /// `!nontemporal`.
    pub nontemporal: bool,
    /// `!amdgpu.last.use`.
    pub last_use: bool,
}

impl Flags {
    /// Flags from their three settings.
    const fn of(volatile: bool, nontemporal: bool, last_use: bool) -> Flags {
        Flags {
            volatile,
            nontemporal,
            last_use,
        }
    }

    /// The flag sets enumerated for non-atomic loads and stores.
    pub const PLAIN_SETS: [Flags; 5] = [
        Flags::of(false, false, false),
        Flags::of(true, false, false),
        Flags::of(false, true, false),
        Flags::of(true, true, false),
        Flags::of(false, false, true),
    ];

    /// The flag sets enumerated for atomic loads and stores: the plain sets without last use
    /// or volatile together with nontemporal.
    pub const ATOMIC_SETS: [Flags; 3] = [
        Flags::PLAIN_SETS[0],
        Flags::PLAIN_SETS[1],
        Flags::PLAIN_SETS[2],
    ];

    /// Whether no flag is set.
    pub fn is_empty(self) -> bool {
        !(self.volatile || self.nontemporal || self.last_use)
    }

    fn text(self) -> String {
        let mut parts = Vec::new();
        if self.volatile {
            parts.push("volatile");
        }
        if self.nontemporal {
            parts.push("nontemporal");
        }
        if self.last_use {
            parts.push("lastuse");
        }
        if parts.is_empty() {
            "plain".to_owned()
        } else {
            parts.join("+")
        }
    }
}

/// The `amdgpu-as` memory-model relaxation annotation of a fence: which address spaces the
/// fence orders. `None` means no annotation (all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mmra {
    /// No annotation.
    None,
    /// `amdgpu-as` = `global`.
    Global,
    /// `amdgpu-as` = `local`.
    Local,
    /// Both `global` and `local`.
    GlobalLocal,
}

impl Mmra {
    /// Every annotation, in case-enumeration order.
    pub const ALL: [Mmra; 4] = [Mmra::None, Mmra::Global, Mmra::Local, Mmra::GlobalLocal];

    /// The name used in case text.
    pub fn name(self) -> &'static str {
        match self {
            Mmra::None => "none",
            Mmra::Global => "global",
            Mmra::Local => "local",
            Mmra::GlobalLocal => "global+local",
        }
    }
}

/// One memory-model case: an instruction with all the dimensions that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Case {
    /// The instruction.
    pub kind: Kind,
    /// Address space (all kinds but fences).
    pub addr_space: Option<AddrSpace>,
    /// Ordering (atomics); the success ordering of `cmpxchg`.
    pub ordering: Option<Ordering>,
    /// Failure ordering (`cmpxchg` only).
    pub failure: Option<Ordering>,
    /// Sync scope (atomics).
    pub scope: Option<Scope>,
    /// Whether the old value is used (`atomicrmw`, `cmpxchg`).
    pub ret: Option<bool>,
    /// Flags.
    pub flags: Flags,
    /// Address-space restriction (fences only).
    pub mmra: Option<Mmra>,
}

/// A case text that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad case `{text}`: {why}")]
pub struct CaseParseError {
    /// The text given.
    pub text: String,
    /// What was wrong.
    pub why: String,
}

impl Case {
    /// Every case of a processor without clusters, in a fixed order: kind, address space,
    /// ordering, failure ordering, scope, returned value, flags, fence restriction.
    pub fn all() -> Vec<Case> {
        Case::enumerate(&Scope::ALL)
    }

    /// Every case of a processor with clusters (GFX12.5): as [`Case::all`] with the
    /// `cluster` scopes too.
    pub fn all_with_cluster() -> Vec<Case> {
        Case::enumerate(&Scope::WITH_CLUSTER)
    }

    fn enumerate(scopes: &[Scope]) -> Vec<Case> {
        let mut out = Vec::new();
        for kind in Kind::ALL {
            match kind {
                Kind::Load | Kind::Store => {
                    for a in AddrSpace::ALL {
                        for f in Flags::PLAIN_SETS {
                            out.push(Case::base(kind, Some(a), None, None, f));
                        }
                    }
                }
                Kind::LoadAtomic | Kind::StoreAtomic => {
                    for a in AddrSpace::ALL {
                        for &o in kind.orderings() {
                            for &s in scopes {
                                for f in Flags::ATOMIC_SETS {
                                    out.push(Case::base(kind, Some(a), Some(o), Some(s), f));
                                }
                            }
                        }
                    }
                }
                Kind::AtomicRmw | Kind::Cmpxchg => {
                    let fords: &[Option<Ordering>] = if kind == Kind::Cmpxchg {
                        &[
                            Some(Ordering::Monotonic),
                            Some(Ordering::Acquire),
                            Some(Ordering::SeqCst),
                        ]
                    } else {
                        &[None]
                    };
                    for a in AddrSpace::ALL {
                        for &o in kind.orderings() {
                            for &fo in fords {
                                for &s in scopes {
                                    for ret in [true, false] {
                                        // atomicrmw also with each flag; cmpxchg plain only
                                        // (the flags do the same to both).
                                        let flag_sets: &[Flags] = if kind == Kind::AtomicRmw {
                                            &Flags::ATOMIC_SETS
                                        } else {
                                            &Flags::ATOMIC_SETS[..1]
                                        };
                                        for &f in flag_sets {
                                            let mut c =
                                                Case::base(kind, Some(a), Some(o), Some(s), f);
                                            c.failure = fo;
                                            c.ret = Some(ret);
                                            out.push(c);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                Kind::Fence => {
                    for &o in kind.orderings() {
                        for &s in scopes {
                            for m in Mmra::ALL {
                                let mut c =
                                    Case::base(kind, None, Some(o), Some(s), Flags::default());
                                c.mmra = Some(m);
                                out.push(c);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn base(
        kind: Kind,
        addr_space: Option<AddrSpace>,
        ordering: Option<Ordering>,
        scope: Option<Scope>,
        flags: Flags,
    ) -> Case {
        Case {
            kind,
            addr_space,
            ordering,
            failure: None,
            scope,
            ret: None,
            flags,
            mmra: None,
        }
    }

    /// Checks that exactly the dimensions that apply to the kind are present and that the
    /// orderings are ones LLVM IR accepts for it.
    pub fn validate(&self) -> Result<(), String> {
        let k = self.kind;
        let need = |present: bool, wanted: bool, key: &str| -> Result<(), String> {
            match (present, wanted) {
                (true, false) => Err(format!("`{key}` does not apply to {}", k.name())),
                (false, true) => Err(format!("{} needs `{key}`", k.name())),
                _ => Ok(()),
            }
        };
        need(self.addr_space.is_some(), k != Kind::Fence, "as")?;
        need(self.ordering.is_some(), k.is_atomic(), "ord")?;
        need(self.failure.is_some(), k == Kind::Cmpxchg, "ford")?;
        need(self.scope.is_some(), k.is_atomic(), "scope")?;
        need(
            self.ret.is_some(),
            matches!(k, Kind::AtomicRmw | Kind::Cmpxchg),
            "ret",
        )?;
        need(self.mmra.is_some(), k == Kind::Fence, "mmra")?;
        if let Some(o) = self.ordering {
            if !k.orderings().contains(&o) {
                return Err(format!("{} cannot have ordering {}", k.name(), o.name()));
            }
        }
        if let Some(f) = self.failure {
            if !matches!(
                f,
                Ordering::Monotonic | Ordering::Acquire | Ordering::SeqCst
            ) {
                return Err(format!("cmpxchg cannot have failure ordering {}", f.name()));
            }
        }
        if self.flags.last_use && k != Kind::Load && k != Kind::Store {
            return Err("lastuse applies to non-atomic loads and stores only".into());
        }
        if !self.flags.is_empty() && k == Kind::Fence {
            return Err("fence takes no flags".into());
        }
        Ok(())
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(a) = self.addr_space {
            write!(f, ";as={}", a.name())?;
        }
        if let Some(o) = self.ordering {
            write!(f, ";ord={}", o.name())?;
        }
        if let Some(o) = self.failure {
            write!(f, ";ford={}", o.name())?;
        }
        if let Some(s) = self.scope {
            write!(f, ";scope={}", s.name())?;
        }
        if let Some(r) = self.ret {
            write!(f, ";ret={}", if r { "ret" } else { "noret" })?;
        }
        if self.kind == Kind::AtomicRmw {
            f.write_str(";op=add")?;
        }
        if matches!(self.kind, Kind::Load | Kind::Store) || !self.flags.is_empty() {
            write!(f, ";flags={}", self.flags.text())?;
        }
        if let Some(m) = self.mmra {
            write!(f, ";mmra={}", m.name())?;
        }
        Ok(())
    }
}

fn parse_ordering(v: &str) -> Option<Ordering> {
    Ordering::all().into_iter().find(|o| o.name() == v)
}

impl FromStr for Case {
    type Err = CaseParseError;

    fn from_str(text: &str) -> Result<Case, CaseParseError> {
        let err = |why: String| CaseParseError {
            text: text.to_owned(),
            why,
        };
        let mut parts = text.split(';');
        let kind_name = parts.next().unwrap_or_default();
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.name() == kind_name)
            .ok_or_else(|| {
                err(format!(
                    "unknown kind `{kind_name}` (expected one of load, store, load_atomic, \
                     store_atomic, atomicrmw, cmpxchg, fence)"
                ))
            })?;
        let mut case = Case::base(kind, None, None, None, Flags::default());
        const ORDER: [&str; 8] = ["as", "ord", "ford", "scope", "ret", "op", "flags", "mmra"];
        let mut last = None;
        let mut saw_flags = false;
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| err(format!("`{part}` is not key=value")))?;
            let pos = ORDER
                .iter()
                .position(|k| *k == key)
                .ok_or_else(|| err(format!("unknown key `{key}`")))?;
            if last.is_some_and(|l| l >= pos) {
                return Err(err(format!(
                    "key `{key}` out of order or repeated (order: {})",
                    ORDER.join(", ")
                )));
            }
            last = Some(pos);
            match key {
                "as" => {
                    case.addr_space = Some(
                        AddrSpace::ALL
                            .into_iter()
                            .find(|a| a.name() == value)
                            .ok_or_else(|| err(format!("unknown address space `{value}`")))?,
                    )
                }
                "ord" | "ford" => {
                    let o = parse_ordering(value)
                        .ok_or_else(|| err(format!("unknown ordering `{value}`")))?;
                    if key == "ord" {
                        case.ordering = Some(o);
                    } else {
                        case.failure = Some(o);
                    }
                }
                "scope" => {
                    case.scope = Some(
                        Scope::by_name(value)
                            .ok_or_else(|| err(format!("unknown scope `{value}`")))?,
                    )
                }
                "ret" => {
                    case.ret = Some(match value {
                        "ret" => true,
                        "noret" => false,
                        _ => return Err(err(format!("ret must be ret or noret, not `{value}`"))),
                    })
                }
                "op" => {
                    if kind != Kind::AtomicRmw {
                        return Err(err("`op` applies to atomicrmw only".into()));
                    }
                    if value != "add" {
                        return Err(err(format!(
                            "unsupported atomicrmw operation `{value}` (add)"
                        )));
                    }
                }
                "flags" => {
                    saw_flags = true;
                    if value != "plain" {
                        for flag in value.split('+') {
                            match flag {
                                "volatile" => case.flags.volatile = true,
                                "nontemporal" => case.flags.nontemporal = true,
                                "lastuse" => case.flags.last_use = true,
                                _ => return Err(err(format!("unknown flag `{flag}`"))),
                            }
                        }
                    }
                }
                "mmra" => {
                    case.mmra = Some(
                        Mmra::ALL
                            .into_iter()
                            .find(|m| m.name() == value)
                            .ok_or_else(|| err(format!("unknown mmra `{value}`")))?,
                    )
                }
                _ => unreachable!("key list checked above"),
            }
        }
        if matches!(kind, Kind::Load | Kind::Store) && !saw_flags {
            return Err(err(
                "non-atomic load/store needs `flags=` (plain if none)".into()
            ));
        }
        case.validate().map_err(err)?;
        Ok(case)
    }
}

/// Why a case has no code sequence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    /// The processor has no instruction for the access.
    #[error("{0}")]
    NoInstruction(String),
    /// The memory model does not support the combination.
    #[error("{0}")]
    Unsupported(String),
    /// The case itself is malformed.
    #[error("{0}")]
    BadCase(String),
}

/// The memory operations a wait must cover (loads, stores or both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ops {
    pub(crate) load: bool,
    pub(crate) store: bool,
}

impl Ops {
    /// Loads.
    pub const LOAD: Ops = Ops {
        load: true,
        store: false,
    };
    /// Stores.
    pub const STORE: Ops = Ops {
        load: false,
        store: true,
    };
    /// Loads and stores.
    pub const LOAD_STORE: Ops = Ops {
        load: true,
        store: true,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_round_trips_through_text() {
        let all = Case::all();
        let mut seen = std::collections::HashSet::new();
        for c in &all {
            c.validate().unwrap();
            let t = c.to_string();
            assert_eq!(t.parse::<Case>().unwrap(), *c, "{t}");
            assert!(seen.insert(t));
        }
        assert_eq!(all.len(), 60 + 720 * 2 + 600 * 3 + 1800 + 160);
        // With the two cluster scopes: every atomic count grows by 12/10.
        let cl = Case::all_with_cluster();
        assert_eq!(cl.len(), 60 + 864 * 2 + 720 * 3 + 2160 + 192);
        for c in &cl {
            let t = c.to_string();
            assert_eq!(t.parse::<Case>().unwrap(), *c, "{t}");
        }
        // The cases without a cluster scope, in the same order.
        let without: Vec<Case> = cl
            .into_iter()
            .filter(|c| c.scope.map_or(true, |s| s.level != ScopeLevel::Cluster))
            .collect();
        assert_eq!(without, all);
    }

    #[test]
    fn brief_examples_parse() {
        for t in [
            "load_atomic;as=global;ord=acquire;scope=agent",
            "atomicrmw;as=generic;ord=acq_rel;scope=workgroup-one-as;ret=noret;op=add",
            "fence;ord=release;scope=agent;mmra=local",
            "load;as=global;flags=nontemporal",
            "store;as=local;flags=plain",
        ] {
            assert_eq!(t.parse::<Case>().unwrap().to_string(), t);
        }
    }

    #[test]
    fn bad_cases_are_rejected_with_reason() {
        for (t, want) in [
            ("load;as=global", "needs `flags=`"),
            ("fence;ord=acquire;scope=agent", "needs `mmra`"),
            (
                "load_atomic;as=global;ord=release;scope=agent",
                "cannot have ordering",
            ),
            ("store;flags=plain;as=global", "out of order"),
            (
                "cmpxchg;as=global;ord=acquire;ford=release;scope=agent;ret=ret",
                "failure ordering",
            ),
            ("bogus", "unknown kind"),
        ] {
            let e = t.parse::<Case>().unwrap_err().to_string();
            assert!(e.contains(want), "{t}: {e}");
        }
    }
}
