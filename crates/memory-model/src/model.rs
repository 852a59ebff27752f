//! The code-sequence rules: for a [`Config`] and a [`Case`], the ordered steps.
//!
//! Source: LLVM `AMDGPUUsage.rst` "Memory Model" sections and the memory legalizer of LLVM 19
//! and LLVM 22 (`SIMemoryLegalizer.cpp`), checked against llc-19 and ROCm's LLVM 22 by the
//! conformance harness. The rules never test the release: the family rows differ instead. The per-family
//! facts are the tables in [`crate::family`]; this module applies them the same way for
//! every family: cache bypass bits on the instruction, waits, invalidates before or after.

use crate::case::{AddrSpace, Case, Flags, Kind, Mmra, Ordering, ScopeLevel};
pub use crate::case::{Invalid, Ops};
use crate::config::{Config, Os};
use crate::family::{self, Bits, FamilyRules, SystemStoreWaits};
use std::fmt;

/// A set of the legalizer's address-space classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AsSet(u8);

impl AsSet {
    /// Global memory (and constant, as far as caches go).
    pub const GLOBAL: AsSet = AsSet(1);
    /// LDS.
    pub const LDS: AsSet = AsSet(2);
    /// Scratch.
    pub const SCRATCH: AsSet = AsSet(4);
    /// GDS.
    pub const GDS: AsSet = AsSet(8);
    /// Anything else (constant memory).
    pub const OTHER: AsSet = AsSet(16);
    /// The address spaces atomics can order.
    pub const ATOMIC: AsSet = AsSet(1 | 2 | 4 | 8);
    /// What a flat (generic) address may point to.
    pub const FLAT: AsSet = AsSet(1 | 2 | 4);
    /// Nothing.
    pub const NONE: AsSet = AsSet(0);

    /// Whether any class is shared.
    pub fn any(self, other: AsSet) -> bool {
        self.0 & other.0 != 0
    }
    /// Intersection.
    pub fn and(self, other: AsSet) -> AsSet {
        AsSet(self.0 & other.0)
    }
    /// Union.
    pub fn or(self, other: AsSet) -> AsSet {
        AsSet(self.0 | other.0)
    }
    /// Without `other`.
    pub fn minus(self, other: AsSet) -> AsSet {
        AsSet(self.0 & !other.0)
    }
    /// Whether empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn of(a: AddrSpace) -> AsSet {
        match a {
            AddrSpace::Global => AsSet::GLOBAL,
            AddrSpace::Local => AsSet::LDS,
            AddrSpace::Generic => AsSet::FLAT,
            AddrSpace::Private => AsSet::SCRATCH,
            AddrSpace::Region => AsSet::GDS,
            AddrSpace::Constant => AsSet::OTHER,
        }
    }
}

/// A hardware counter a wait brings to zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counter {
    /// Vector memory loads (and, before GFX10, stores).
    Vmcnt,
    /// LDS, GDS, scalar memory and messages.
    Lgkmcnt,
    /// Vector memory stores (GFX10, GFX11).
    Vscnt,
    /// GFX12: vector memory loads.
    Loadcnt,
    /// GFX12: image sample loads.
    Samplecnt,
    /// GFX12: BVH loads.
    Bvhcnt,
    /// GFX12: vector memory stores.
    Storecnt,
    /// GFX12: LDS.
    Dscnt,
    /// GFX12: scalar memory.
    Kmcnt,
    /// GFX12.5: memory instructions whose address translation is still outstanding.
    Xcnt,
}

impl Counter {
    /// The counter's name in assembly.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Vmcnt => "vmcnt",
            Counter::Lgkmcnt => "lgkmcnt",
            Counter::Vscnt => "vscnt",
            Counter::Loadcnt => "loadcnt",
            Counter::Samplecnt => "samplecnt",
            Counter::Bvhcnt => "bvhcnt",
            Counter::Storecnt => "storecnt",
            Counter::Dscnt => "dscnt",
            Counter::Kmcnt => "kmcnt",
            Counter::Xcnt => "xcnt",
        }
    }
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// The memory instruction itself (or one of the instructions it becomes).
    Memory {
        /// Mnemonic.
        mnemonic: String,
        /// Cache-policy modifiers, in assembly order.
        bits: Vec<&'static str>,
    },
    /// A wait instruction bringing these counters to zero.
    Wait(Vec<Counter>),
    /// A cache invalidate or write-back, with its modifiers.
    Cache {
        /// Mnemonic.
        mnemonic: &'static str,
        /// Modifiers (`sc1`, `scope:SCOPE_SYS`).
        modifiers: Vec<&'static str>,
    },
}

/// One step of a code sequence, with why it is there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Step {
    /// What the step is.
    pub kind: StepKind,
    /// Why it is there.
    pub reason: String,
}

impl Step {
    /// The step as llc prints it, operands left out but cache-policy modifiers kept.
    pub fn asm(&self, major: u8) -> String {
        match &self.kind {
            StepKind::Memory { mnemonic, bits } => join(mnemonic, bits),
            StepKind::Cache {
                mnemonic,
                modifiers,
            } => join(mnemonic, modifiers),
            StepKind::Wait(cs) => {
                if major >= 12 {
                    format!(
                        "s_wait_{} 0x0",
                        cs.first().map(|c| c.name()).unwrap_or("loadcnt")
                    )
                } else if cs == &[Counter::Vscnt] {
                    "s_waitcnt_vscnt null, 0x0".to_owned()
                } else {
                    let parts: Vec<String> =
                        cs.iter().map(|c| format!("{}(0)", c.name())).collect();
                    format!("s_waitcnt {}", parts.join(" "))
                }
            }
        }
    }
}

fn join(m: &str, bits: &[&str]) -> String {
    let mut s = m.to_owned();
    for b in bits {
        s.push(' ');
        s.push_str(b);
    }
    s
}

/// The code sequence of one case.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sequence {
    /// The steps in program order.
    pub steps: Vec<Step>,
    /// ISA major version the sequence is written for (decides wait syntax).
    pub major: u8,
}

impl Sequence {
    /// The steps as assembly lines.
    pub fn asm(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.asm(self.major)).collect()
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            writeln!(f, "{:<36} ; {}", s.asm(self.major), s.reason)?;
        }
        Ok(())
    }
}

/// Where a step goes relative to the memory instruction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pos {
    Before,
    After,
}

const LOAD: Ops = Ops::LOAD;
const STORE: Ops = Ops::STORE;
const LOAD_STORE: Ops = Ops::LOAD_STORE;

/// The sequence being built.
struct Builder<'a> {
    cfg: &'a Config,
    rules: &'static FamilyRules,
    before: Vec<Step>,
    after: Vec<Step>,
    bits: Bits,
}

impl Builder<'_> {
    fn push(&mut self, pos: Pos, kind: StepKind, reason: String) {
        let s = Step { kind, reason };
        match pos {
            Pos::Before => self.before.push(s),
            Pos::After => self.after.push(s),
        }
    }

    /// Waits for the operations of `ops` on `aspace` to complete as far as `scope` needs:
    /// global and scratch at agent scope and above (and work-group scope in WGP mode), LDS
    /// and GDS only when ordering across address spaces (`cross`).
    #[allow(clippy::too_many_arguments)]
    fn wait(
        &mut self,
        mut scope: ScopeLevel,
        mut aspace: AsSet,
        ops: Ops,
        cross: bool,
        pos: Pos,
        why: &str,
        acquire: bool,
    ) {
        let r = self.rules;
        if r.tgsplit_mode && self.cfg.tgsplit {
            // The waves of a work-group may be on different CUs: work-group scope is agent
            // scope for global, scratch and GDS memory.
            if aspace.any(AsSet::GLOBAL.or(AsSet::SCRATCH).or(AsSet::GDS))
                && scope == ScopeLevel::Workgroup
            {
                scope = ScopeLevel::Agent;
            }
            // No LDS can be allocated in tgsplit mode.
            aspace = aspace.minus(AsSet::LDS);
        }
        let mut vm = false;
        let mut vs = false;
        let mut lgkm = false;
        if aspace.any(AsSet::GLOBAL.or(AsSet::SCRATCH)) {
            let reach = match scope {
                ScopeLevel::System | ScopeLevel::Agent | ScopeLevel::Cluster => true,
                ScopeLevel::Workgroup => (r.wgp_mode && !self.cfg.cumode) || r.workgroup_waits,
                _ => false,
            };
            if reach {
                if r.split_store_counter {
                    vm |= ops.load;
                    vs |= ops.store;
                } else {
                    vm = true;
                }
            }
        }
        if aspace.any(AsSet::LDS)
            && matches!(
                scope,
                ScopeLevel::System
                    | ScopeLevel::Agent
                    | ScopeLevel::Cluster
                    | ScopeLevel::Workgroup
            )
        {
            lgkm |= cross;
        }
        if r.has_gds_waits
            && aspace.any(AsSet::GDS)
            && matches!(scope, ScopeLevel::System | ScopeLevel::Agent)
        {
            lgkm |= cross;
        }
        let why = why.to_owned();
        if self.cfg.major >= 12 {
            if vm {
                // A plain acquire (not acq_rel or seq_cst, and for cmpxchg the success ordering)
                // orders atomics only, which never use the BVH or sample counters.
                let counters: &[Counter] =
                    if (acquire && r.acquire_waits_atomics_only) || !r.image_counters {
                        &[Counter::Loadcnt]
                    } else {
                        &[Counter::Bvhcnt, Counter::Samplecnt, Counter::Loadcnt]
                    };
                for &c in counters {
                    self.push(pos, StepKind::Wait(vec![c]), why.clone());
                }
            }
            if vs {
                self.push(pos, StepKind::Wait(vec![Counter::Storecnt]), why.clone());
            }
            if lgkm {
                self.push(pos, StepKind::Wait(vec![Counter::Dscnt]), why);
            }
            return;
        }
        if vm || lgkm {
            let mut cs = Vec::new();
            if vm {
                cs.push(Counter::Vmcnt);
            }
            if lgkm {
                cs.push(Counter::Lgkmcnt);
            }
            self.push(pos, StepKind::Wait(cs), why.clone());
        }
        if vs {
            self.push(pos, StepKind::Wait(vec![Counter::Vscnt]), why);
        }
    }

    /// GFX12.5: an atomic store or read-modify-write on vector memory (an instruction with a
    /// cache-policy operand, not LDS) must not be replayed, so it first waits for `xcnt`.
    fn xcnt_before_atomic_store(&mut self, vector_memory: bool) {
        if self.rules.xcnt_before_atomic_stores && vector_memory {
            self.push(
                Pos::Before,
                StepKind::Wait(vec![Counter::Xcnt]),
                "atomic store: earlier address translations complete, so it is never replayed"
                    .into(),
            );
        }
    }

    fn acquire(&mut self, scope: ScopeLevel, aspace: AsSet, pos: Pos) {
        if self.cfg.skip_cache_invalidations || !aspace.any(AsSet::GLOBAL) {
            return;
        }
        let pal = matches!(self.cfg.os, Os::Amdpal | Os::Mesa3d);
        for inv in (self.rules.invalidate)(scope, self.cfg, pal) {
            self.push(
                pos,
                StepKind::Cache {
                    mnemonic: inv.0,
                    modifiers: inv.1.to_vec(),
                },
                format!(
                    "acquire: invalidate {} so later loads see other waves' writes",
                    inv.2
                ),
            );
        }
    }

    fn release(&mut self, scope: ScopeLevel, aspace: AsSet, cross: bool, pos: Pos) {
        if self.rules.release_needs_global && !aspace.any(AsSet::GLOBAL) {
            return;
        }
        if self.rules.release_from_workgroup
            && matches!(scope, ScopeLevel::Wavefront | ScopeLevel::SingleThread)
        {
            return;
        }
        if aspace.any(AsSet::GLOBAL) {
            for wb in (self.rules.writeback)(scope, self.cfg) {
                self.push(
                    pos,
                    StepKind::Cache {
                        mnemonic: wb.0,
                        modifiers: wb.1.to_vec(),
                    },
                    format!("release: write back {} before the release", wb.2),
                );
            }
        }
        self.wait(
            scope,
            aspace,
            LOAD_STORE,
            cross,
            pos,
            "release: earlier memory operations complete before the release",
            false,
        );
    }
}

/// Facts about the memory operation, after the address space and scope are resolved.
struct Info {
    scope: ScopeLevel,
    instr_as: AsSet,
    order_as: AsSet,
    cross: bool,
}

fn info(case: &Case) -> Result<Info, Invalid> {
    let instr_as = case.addr_space.map(AsSet::of).unwrap_or(AsSet::ATOMIC);
    let scope = case
        .scope
        .ok_or_else(|| Invalid::BadCase("atomic without scope".into()))?;
    let (order_as, mut cross) = if scope.one_as {
        (AsSet::ATOMIC.and(instr_as), false)
    } else {
        (AsSet::ATOMIC, true)
    };
    if order_as.is_empty() || !instr_as.any(AsSet::ATOMIC) {
        return Err(Invalid::Unsupported(format!(
            "atomics on the {} address space are not supported (Unsupported atomic address space)",
            case.addr_space.map(|a| a.name()).unwrap_or("?")
        )));
    }
    // Ordering one address space with an instruction on that same single address space is
    // never cross-address-space ordering.
    if order_as == instr_as && instr_as.0.is_power_of_two() {
        cross = false;
    }
    // The scope is limited to what the instruction's address spaces can be shared with:
    // scratch with no one, LDS with the work-group, GDS with the agent.
    let mut level = scope.level;
    let cap = if instr_as.minus(AsSet::SCRATCH).is_empty() {
        Some(ScopeLevel::SingleThread)
    } else if instr_as.minus(AsSet::SCRATCH.or(AsSet::LDS)).is_empty() {
        Some(ScopeLevel::Workgroup)
    } else if instr_as
        .minus(AsSet::SCRATCH.or(AsSet::LDS).or(AsSet::GDS))
        .is_empty()
    {
        Some(ScopeLevel::Agent)
    } else {
        None
    };
    if let Some(c) = cap {
        level = level.min(c);
    }
    Ok(Info {
        scope: level,
        instr_as,
        order_as,
        cross,
    })
}

/// The code sequence for `case` on `cfg`, or why there is none.
pub fn sequence(cfg: &Config, case: &Case) -> Result<Sequence, Invalid> {
    let case = lowered_case(cfg, case);
    build(cfg, &case).map(|s| explain(&case, s))
}

/// The case as the memory legalizer sees it: where a family keeps atomics on private memory
/// atomic ([`FamilyRules::private_atomics_are_flat`]), LLVM has cast the pointer to a
/// generic one, so the atomic is a generic-address atomic.
fn lowered_case(cfg: &Config, case: &Case) -> Case {
    let flat = family::rules(cfg.family, cfg.llvm).is_some_and(|r| r.private_atomics_are_flat);
    if flat && case.kind.is_atomic() && case.addr_space == Some(AddrSpace::Private) {
        Case {
            addr_space: Some(AddrSpace::Generic),
            ..*case
        }
    } else {
        *case
    }
}

fn build(cfg: &Config, case: &Case) -> Result<Sequence, Invalid> {
    case.validate().map_err(Invalid::BadCase)?;
    let rules = family::rules(cfg.family, cfg.llvm).ok_or_else(|| {
        Invalid::Unsupported(format!(
            "{} is not modelled for {}: {}",
            cfg.cpu,
            cfg.llvm,
            family::unmodelled(cfg.family, cfg.llvm).unwrap_or("no memory model")
        ))
    })?;
    if case.scope.is_some_and(|s| s.level == ScopeLevel::Cluster) && !rules.cluster {
        return Err(Invalid::Unsupported(format!(
            "{} has no clusters of work-groups: the cluster scope belongs to GFX12.5 (gfx1250, \
             gfx1251); {} lowers syncscope(\"cluster\") as agent scope here (ask for scope=agent)",
            cfg.cpu, cfg.llvm
        )));
    }
    let b = Builder {
        cfg,
        rules,
        before: Vec::new(),
        after: Vec::new(),
        bits: Bits::default(),
    };
    match family::select(cfg, case)? {
        family::Selected::Plain { ops } => Ok(plain_sequence(cfg, rules, case, ops)),
        family::Selected::Atomic {
            mnemonic,
            cpol,
            ret_bit,
        } => atomic_sequence(b, case, mnemonic, cpol, ret_bit),
        family::Selected::Fence => fence_sequence(b, case),
    }
}

/// The sequence of non-atomic instructions `ops` (or of an atomic on private memory, which
/// LLVM makes non-atomic): each with the waits and bits its volatile or nontemporal marks
/// ask for.
fn plain_sequence(
    cfg: &Config,
    rules: &'static FamilyRules,
    case: &Case,
    ops: Vec<(Ops, String, bool)>,
) -> Sequence {
    let a = case.addr_space;
    let mut steps = Vec::new();
    for (op, mnemonic, cpol) in ops {
        let mut bb = Builder {
            cfg,
            rules,
            before: Vec::new(),
            after: Vec::new(),
            bits: Bits::default(),
        };
        let aspace = a.map(AsSet::of).unwrap_or(AsSet::NONE);
        // An atomicrmw or cmpxchg on private memory becomes a plain load and store
        // without its volatile or nontemporal marks; loads and stores keep theirs.
        let mut plain = *case;
        if matches!(case.kind, Kind::AtomicRmw | Kind::Cmpxchg) {
            plain.flags = Flags::default();
        }
        volatile_nontemporal(&mut bb, aspace, op, &plain, cpol);
        if !cpol {
            // No cache-policy operand: the waits stay, the bits have nowhere to go.
            bb.bits = Bits::default();
        }
        // (A volatile store already waited as a system-scope store: llc 19 does not
        // wait twice.)
        if op == STORE && cpol {
            force_store_bits(&mut bb, aspace);
        }
        steps.extend(bb.before);
        steps.push(Step {
            kind: StepKind::Memory {
                mnemonic: mnemonic.clone(),
                bits: bb.bits.render(),
            },
            reason: String::new(),
        });
        steps.extend(bb.after);
    }
    Sequence {
        steps,
        major: cfg.major,
    }
}

/// The sequence of one atomic instruction (`mnemonic`, with a cache-policy operand when
/// `cpol`, `ret_bit` marking a returning one): the waits, cache maintenance and bits its
/// ordering and scope ask for, built on `b`.
fn atomic_sequence(
    mut b: Builder<'_>,
    case: &Case,
    mnemonic: String,
    cpol: bool,
    ret_bit: Option<&'static str>,
) -> Result<Sequence, Invalid> {
    let (cfg, rules) = (b.cfg, b.rules);
    let i = info(case)?;
    let ord = case.ordering.unwrap_or(Ordering::Monotonic);
    match case.kind {
        Kind::LoadAtomic => {
            if matches!(
                ord,
                Ordering::Monotonic | Ordering::Acquire | Ordering::SeqCst
            ) && cpol
                && i.order_as.any(AsSet::GLOBAL)
            {
                (rules.load_bypass)(&mut b.bits, i.scope, cfg);
            }
            if ord == Ordering::SeqCst {
                b.wait(
                    i.scope,
                    i.order_as,
                    LOAD_STORE,
                    i.cross,
                    Pos::Before,
                    "seq_cst: earlier memory operations complete first",
                    false,
                );
            }
            if ord.acquires() {
                b.wait(
                    i.scope,
                    i.instr_as,
                    LOAD,
                    i.cross,
                    Pos::After,
                    "acquire: the load completes before later accesses",
                    ord == Ordering::Acquire,
                );
                b.acquire(i.scope, i.order_as, Pos::After);
            }
        }
        Kind::StoreAtomic => {
            if matches!(
                ord,
                Ordering::Monotonic | Ordering::Release | Ordering::SeqCst
            ) && cpol
                && i.order_as.any(AsSet::GLOBAL)
            {
                (rules.store_bypass)(&mut b.bits, i.scope, cfg);
            }
            if ord.releases() {
                b.release(i.scope, i.order_as, i.cross, Pos::Before);
            }
            if cpol {
                force_store_bits(&mut b, i.instr_as);
            }
            b.xcnt_before_atomic_store(cpol);
        }
        Kind::AtomicRmw | Kind::Cmpxchg => {
            if cpol && i.instr_as.any(AsSet::GLOBAL) {
                (rules.rmw_bypass)(&mut b.bits, i.scope, cfg);
            }
            let fail = case.failure;
            if ord.releases() || fail == Some(Ordering::SeqCst) {
                b.release(i.scope, i.order_as, i.cross, Pos::Before);
            }
            b.xcnt_before_atomic_store(cpol);
            if ord.acquires() || matches!(fail, Some(Ordering::Acquire | Ordering::SeqCst)) {
                let ops = if case.ret == Some(true) { LOAD } else { STORE };
                b.wait(
                    i.scope,
                    i.instr_as,
                    ops,
                    i.cross,
                    Pos::After,
                    "acquire: the atomic completes before later accesses",
                    ord == Ordering::Acquire,
                );
                b.acquire(i.scope, i.order_as, Pos::After);
            }
            if case.ret == Some(true) {
                if let Some(rb) = ret_bit {
                    b.bits.set(rb);
                }
            }
        }
        _ => {}
    }
    let mut steps = std::mem::take(&mut b.before);
    steps.push(Step {
        kind: StepKind::Memory {
            mnemonic,
            bits: b.bits.render(),
        },
        reason: String::new(),
    });
    steps.extend(b.after);
    Ok(Sequence {
        steps,
        major: cfg.major,
    })
}

/// The sequence of a fence: waits and cache maintenance only, built on `b`.
fn fence_sequence(mut b: Builder<'_>, case: &Case) -> Result<Sequence, Invalid> {
    let cfg = b.cfg;
    let i = info(case)?;
    let order_as = match case.mmra {
        Some(Mmra::Global) => AsSet::GLOBAL,
        Some(Mmra::Local) => AsSet::LDS,
        Some(Mmra::GlobalLocal) => AsSet::GLOBAL.or(AsSet::LDS),
        _ => i.order_as,
    };
    let ord = case.ordering.unwrap_or(Ordering::SeqCst);
    if ord == Ordering::Acquire {
        b.wait(
            i.scope,
            order_as,
            LOAD_STORE,
            i.cross,
            Pos::Before,
            "acquire fence: earlier atomics complete first",
            ord == Ordering::Acquire,
        );
    }
    if ord.releases() {
        b.release(i.scope, order_as, i.cross, Pos::Before);
    }
    if ord.acquires() {
        b.acquire(i.scope, order_as, Pos::Before);
    }
    Ok(Sequence {
        steps: b.before,
        major: cfg.major,
    })
}

fn memory_reason(case: &Case, bits: &[&'static str]) -> String {
    let s = format!("the {}", case.kind.name().replace('_', " "));
    if bits.is_empty() {
        return s;
    }
    let mut causes = Vec::new();
    if case.kind.is_atomic() && case.ordering != Some(Ordering::Unordered) {
        if case.addr_space == Some(AddrSpace::Private) {
            causes.push("private atomics become plain accesses".to_owned());
        } else {
            causes.push("cache policy for coherence at the scope".to_owned());
        }
    }
    if case.ret == Some(true) {
        causes.push("returns the old value".to_owned());
    }
    // Flags only matter where the access is not atomic (an atomic on private memory is a
    // plain access, but an atomicrmw or cmpxchg there drops its flags).
    let plain = !case.kind.is_atomic()
        || (case.addr_space == Some(AddrSpace::Private)
            && matches!(case.kind, Kind::LoadAtomic | Kind::StoreAtomic));
    if plain && case.flags.volatile {
        causes.push("volatile: bypass caches not coherent at system scope".to_owned());
    }
    if plain && case.flags.nontemporal {
        causes.push("nontemporal: streaming policy".to_owned());
    }
    if plain && case.flags.last_use {
        causes.push("last use: the line may be dropped after this access".to_owned());
    }
    if causes.is_empty() {
        causes.push("stores always write through to memory".to_owned());
    }
    format!("{s}; {}: {}", bits.join(" "), causes.join(", "))
}

/// Fills in the reason of each memory step from its bits.
fn explain(case: &Case, mut seq: Sequence) -> Sequence {
    for st in &mut seq.steps {
        if let StepKind::Memory { bits, .. } = &st.kind {
            st.reason = memory_reason(case, bits);
        }
    }
    seq
}

fn volatile_nontemporal(b: &mut Builder<'_>, aspace: AsSet, op: Ops, case: &Case, cpol: bool) {
    let f = case.flags;
    (b.rules.volatile_nontemporal)(
        &mut b.bits,
        op == LOAD,
        f.volatile,
        f.nontemporal,
        f.last_use,
    );
    if f.volatile {
        let waits = match b.rules.system_store_waits {
            SystemStoreWaits::Never => false,
            SystemStoreWaits::Always => true,
            SystemStoreWaits::WithCachePolicy => cpol,
        };
        if waits && op == STORE {
            system_scope_store_waits(b);
        }
        b.wait(
            ScopeLevel::System,
            aspace,
            op,
            false,
            Pos::After,
            "volatile: complete before going on",
            false,
        );
    }
}

fn system_scope_store_waits(b: &mut Builder<'_>) {
    for c in [
        Counter::Loadcnt,
        Counter::Samplecnt,
        Counter::Bvhcnt,
        Counter::Kmcnt,
        Counter::Storecnt,
    ] {
        if !b.rules.image_counters && matches!(c, Counter::Samplecnt | Counter::Bvhcnt) {
            continue;
        }
        b.push(
            Pos::Before,
            StepKind::Wait(vec![c]),
            "system-scope store: earlier loads and stores complete first".into(),
        );
    }
}

fn force_store_bits(b: &mut Builder<'_>, aspace: AsSet) {
    if b.rules.force_store_sc0_sc1 && aspace.any(AsSet::SCRATCH.or(AsSet::GLOBAL).or(AsSet::OTHER))
    {
        b.bits.set("sc0");
        b.bits.set("sc1");
    }
}
