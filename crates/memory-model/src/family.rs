//! Per-family facts as tables: which cache-policy bits an atomic at each scope sets, which
//! invalidates an acquire needs and which write-backs a release needs, how volatile and
//! nontemporal accesses are marked, and which instruction each access becomes.
//!
//! Source: LLVM `AMDGPUUsage.rst`, "Memory Model GFX6-GFX9", "GFX90A, GFX942",
//! "GFX10-GFX11" and "GFX12" code-sequence tables, as implemented by llc 19 and by ROCm
//! 7.2.2's LLVM 22 (`SIMemoryLegalizer.cpp`); where the releases differ, a family has one row
//! per release (measured by the two sweeps, see `docs/memory-model.md`). Where the 2020 tables differ from llc 19, llc is followed (for
//! example GFX10 acquire invalidates `buffer_gl1_inv` before `buffer_gl0_inv`, outer cache first).

use crate::case::{AddrSpace, Case, Invalid, Kind, Ops, ScopeLevel};
use crate::config::{Config, ConfigError};
use crate::release::Llvm;
use gfxkit_spec::MemoryModelFamily;

/// Cache-policy bits of a memory instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bits {
    glc: bool,
    slc: bool,
    dlc: bool,
    sc0: bool,
    sc1: bool,
    nt: bool,
    th: Option<&'static str>,
    scope: Option<&'static str>,
}

impl Bits {
    /// Sets a bit by its assembly name (`glc`, `sc1`, `th:TH_NT`, `scope:SCOPE_DEV`).
    pub fn set(&mut self, name: &'static str) {
        match name {
            "glc" => self.glc = true,
            "slc" => self.slc = true,
            "dlc" => self.dlc = true,
            "sc0" => self.sc0 = true,
            "sc1" => self.sc1 = true,
            "nt" => self.nt = true,
            _ if name.starts_with("th:") => self.th = Some(name),
            _ if name.starts_with("scope:") => self.scope = Some(name),
            _ => {}
        }
    }

    /// Whether a bit is set.
    pub fn has(&self, name: &str) -> bool {
        self.render().contains(&name)
    }

    /// The bits in the order llc prints them.
    pub fn render(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if let Some(t) = self.th {
            v.push(t);
        }
        if let Some(s) = self.scope {
            v.push(s);
        }
        for (on, n) in [
            (self.glc, "glc"),
            (self.sc0, "sc0"),
            (self.slc, "slc"),
            (self.nt, "nt"),
            (self.dlc, "dlc"),
            (self.sc1, "sc1"),
        ] {
            if on {
                v.push(n);
            }
        }
        v
    }
}

/// When a volatile store, which is a system-scope store, first waits for every counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemStoreWaits {
    /// Never (before GFX12).
    Never,
    /// Always, even an LDS store (GFX12 in LLVM 19).
    Always,
    /// When the store has a cache-policy operand to carry `scope:SCOPE_SYS` (GFX12 from
    /// LLVM 22: not LDS).
    WithCachePolicy,
}

/// A cache operation: mnemonic, modifiers, and what it acts on.
pub type CacheOp = (&'static str, &'static [&'static str], &'static str);

/// The facts of one family, as the releases in `llvm` lower it.
pub struct FamilyRules {
    /// Family.
    pub family: MemoryModelFamily,
    /// The LLVM releases the row holds for.
    pub llvm: &'static [Llvm],
    /// Work-group scope reaches the per-CU L0 unless in CU mode (GFX10+ WGP mode).
    pub wgp_mode: bool,
    /// `tgsplit` turns work-group scope into agent scope for global memory and drops LDS.
    pub tgsplit_mode: bool,
    /// Stores have their own counter (`vscnt`, `storecnt`).
    pub split_store_counter: bool,
    /// GDS takes part in waits at agent and system scope.
    pub has_gds_waits: bool,
    /// Region (GDS) atomics are selected.
    pub gds: bool,
    /// A release does nothing unless global memory is ordered (GFX12 in LLVM 19).
    pub release_needs_global: bool,
    /// A release does nothing below work-group scope (GFX12).
    pub release_from_workgroup: bool,
    /// An acquire waits only for the counters atomics use: `loadcnt`, not `bvhcnt` or
    /// `samplecnt` (GFX12 from LLVM 22).
    pub acquire_waits_atomics_only: bool,
    /// When a volatile store (a system-scope store) first waits for every earlier access.
    pub system_store_waits: SystemStoreWaits,
    /// Every store to global, scratch or constant memory gets `sc0 sc1` (GFX940, GFX941).
    pub force_store_sc0_sc1: bool,
    /// The processors have clusters of work-groups: the `cluster` scope is their own
    /// (GFX12.5, LLVM 22). Elsewhere LLVM lowers `cluster` as `agent`, and gfxkit refuses it.
    pub cluster: bool,
    /// Work-group scope waits for global and scratch memory even without WGP mode (GFX12.5:
    /// the CU cache has two ports with no ordering between them).
    pub workgroup_waits: bool,
    /// The BVH and sample counters exist (GFX12 has image instructions; GFX12.5 has none).
    pub image_counters: bool,
    /// An atomic store, atomicrmw or cmpxchg on vector memory first waits for `xcnt` (GFX12.5:
    /// the access must not be replayed after a translation fault).
    pub xcnt_before_atomic_stores: bool,
    /// Atomics on private memory stay atomic: LLVM casts the pointer to a generic one and
    /// lowers them as flat atomics on a generic address (GFX12.5 in LLVM 22); elsewhere they
    /// become plain scratch accesses.
    pub private_atomics_are_flat: bool,
    /// Bits of an atomic load (monotonic or stronger) at a scope.
    pub load_bypass: fn(&mut Bits, ScopeLevel, &Config),
    /// Bits of an atomic store (monotonic or stronger) at a scope.
    pub store_bypass: fn(&mut Bits, ScopeLevel, &Config),
    /// Bits of an atomicrmw or cmpxchg at a scope.
    pub rmw_bypass: fn(&mut Bits, ScopeLevel, &Config),
    /// Bits of a non-atomic access: (is load, volatile, nontemporal, last use).
    pub volatile_nontemporal: fn(&mut Bits, bool, bool, bool, bool),
    /// Invalidates of an acquire at a scope (`pal`: amdpal/mesa3d OS).
    pub invalidate: fn(ScopeLevel, &Config, bool) -> &'static [CacheOp],
    /// Write-backs of a release at a scope.
    pub writeback: fn(ScopeLevel, &Config) -> &'static [CacheOp],
}

fn none(_: &mut Bits, _: ScopeLevel, _: &Config) {}

fn glc_at_agent(b: &mut Bits, s: ScopeLevel, _: &Config) {
    if matches!(s, ScopeLevel::System | ScopeLevel::Agent) {
        b.set("glc");
    }
}

fn glc_at_agent_or_tgsplit_wg(b: &mut Bits, s: ScopeLevel, c: &Config) {
    if matches!(s, ScopeLevel::System | ScopeLevel::Agent)
        || (s == ScopeLevel::Workgroup && c.tgsplit)
    {
        b.set("glc");
    }
}

fn sc_bits(b: &mut Bits, s: ScopeLevel, _: &Config) {
    match s {
        ScopeLevel::System => {
            b.set("sc0");
            b.set("sc1");
        }
        ScopeLevel::Agent => b.set("sc1"),
        ScopeLevel::Workgroup => b.set("sc0"),
        _ => {}
    }
}

fn sc1_at_system(b: &mut Bits, s: ScopeLevel, _: &Config) {
    if s == ScopeLevel::System {
        b.set("sc1");
    }
}

fn gfx10_load(b: &mut Bits, s: ScopeLevel, c: &Config) {
    match s {
        ScopeLevel::System | ScopeLevel::Agent => {
            b.set("glc");
            b.set("dlc");
        }
        ScopeLevel::Workgroup if !c.cumode => b.set("glc"),
        _ => {}
    }
}

fn gfx11_load(b: &mut Bits, s: ScopeLevel, c: &Config) {
    match s {
        ScopeLevel::System | ScopeLevel::Agent => b.set("glc"),
        ScopeLevel::Workgroup if !c.cumode => b.set("glc"),
        _ => {}
    }
}

fn gfx12_scope(b: &mut Bits, s: ScopeLevel, c: &Config) {
    match s {
        ScopeLevel::System => b.set("scope:SCOPE_SYS"),
        ScopeLevel::Agent => b.set("scope:SCOPE_DEV"),
        ScopeLevel::Workgroup if !c.cumode => b.set("scope:SCOPE_SE"),
        _ => {}
    }
}

fn vnt_gfx6(b: &mut Bits, load: bool, vol: bool, nt: bool, _lu: bool) {
    if vol {
        if load {
            b.set("glc");
        }
    } else if nt {
        b.set("glc");
        b.set("slc");
    }
}

fn vnt_gfx940(b: &mut Bits, _load: bool, vol: bool, nt: bool, _lu: bool) {
    if vol {
        b.set("sc0");
        b.set("sc1");
    } else if nt {
        b.set("nt");
    }
}

fn vnt_gfx10(b: &mut Bits, load: bool, vol: bool, nt: bool, _lu: bool) {
    if vol {
        if load {
            b.set("glc");
            b.set("dlc");
        }
    } else if nt {
        if !load {
            b.set("glc");
        }
        b.set("slc");
    }
}

fn vnt_gfx11(b: &mut Bits, load: bool, vol: bool, nt: bool, _lu: bool) {
    if vol {
        if load {
            b.set("glc");
        }
        b.set("dlc");
    } else if nt {
        if !load {
            b.set("glc");
        }
        b.set("slc");
        b.set("dlc");
    }
}

fn vnt_gfx12(b: &mut Bits, load: bool, vol: bool, nt: bool, lu: bool) {
    // Last use is a load hint: llc passes it for loads only.
    if lu && load {
        b.set("th:TH_LOAD_LU");
    } else if nt {
        b.set(if load {
            "th:TH_LOAD_NT"
        } else {
            "th:TH_STORE_NT"
        });
    }
    if vol {
        b.set("scope:SCOPE_SYS");
    }
}

fn no_ops(_: ScopeLevel, _: &Config) -> &'static [CacheOp] {
    &[]
}

const L1: &str = "the L1 cache";
const L2: &str = "the L2 cache";

fn inv_gfx6(s: ScopeLevel, _: &Config, _pal: bool) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System | ScopeLevel::Agent => &[("buffer_wbinvl1", &[], L1)],
        _ => &[],
    }
}

fn inv_gfx7(s: ScopeLevel, _: &Config, pal: bool) -> &'static [CacheOp] {
    match (s, pal) {
        (ScopeLevel::System | ScopeLevel::Agent, false) => &[("buffer_wbinvl1_vol", &[], L1)],
        (ScopeLevel::System | ScopeLevel::Agent, true) => &[("buffer_wbinvl1", &[], L1)],
        _ => &[],
    }
}

fn inv_gfx90a(s: ScopeLevel, c: &Config, pal: bool) -> &'static [CacheOp] {
    match (s, pal) {
        (ScopeLevel::System, false) => {
            &[("buffer_invl2", &[], L2), ("buffer_wbinvl1_vol", &[], L1)]
        }
        (ScopeLevel::System, true) => &[("buffer_invl2", &[], L2), ("buffer_wbinvl1", &[], L1)],
        (ScopeLevel::Workgroup, _) if !c.tgsplit => &[],
        (ScopeLevel::Agent | ScopeLevel::Workgroup, false) => &[("buffer_wbinvl1_vol", &[], L1)],
        (ScopeLevel::Agent | ScopeLevel::Workgroup, true) => &[("buffer_wbinvl1", &[], L1)],
        _ => &[],
    }
}

fn inv_gfx940(s: ScopeLevel, c: &Config, _pal: bool) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[("buffer_inv", &["sc0", "sc1"], "the L1 and L2 caches")],
        ScopeLevel::Agent => &[("buffer_inv", &["sc1"], "the L1 and L2 caches (agent)")],
        ScopeLevel::Workgroup if c.tgsplit => &[("buffer_inv", &["sc0"], L1)],
        _ => &[],
    }
}

fn inv_gfx10(s: ScopeLevel, c: &Config, _pal: bool) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System | ScopeLevel::Agent => &[
            ("buffer_gl1_inv", &[], "the GL1 cache"),
            ("buffer_gl0_inv", &[], "the GL0 cache"),
        ],
        ScopeLevel::Workgroup if !c.cumode => &[("buffer_gl0_inv", &[], "the GL0 cache")],
        _ => &[],
    }
}

fn inv_gfx12(s: ScopeLevel, c: &Config, _pal: bool) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[(
            "global_inv",
            &["scope:SCOPE_SYS"],
            "caches up to system scope",
        )],
        ScopeLevel::Agent => &[(
            "global_inv",
            &["scope:SCOPE_DEV"],
            "caches up to device scope",
        )],
        ScopeLevel::Workgroup if !c.cumode => &[(
            "global_inv",
            &["scope:SCOPE_SE"],
            "the CU-local caches (WGP mode)",
        )],
        _ => &[],
    }
}

fn wb_gfx90a(s: ScopeLevel, _: &Config) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[("buffer_wbl2", &[], L2)],
        _ => &[],
    }
}

fn wb_gfx940(s: ScopeLevel, _: &Config) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[("buffer_wbl2", &["sc0", "sc1"], L2)],
        ScopeLevel::Agent => &[("buffer_wbl2", &["sc1"], L2)],
        _ => &[],
    }
}

fn wb_gfx12(s: ScopeLevel, c: &Config) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[(
            "global_wb",
            &["scope:SCOPE_SYS"],
            "dirty lines to system scope",
        )],
        ScopeLevel::Agent => &[(
            "global_wb",
            &["scope:SCOPE_DEV"],
            "dirty lines to device scope",
        )],
        ScopeLevel::Workgroup if !c.cumode => &[(
            "global_wb",
            &["scope:SCOPE_SE"],
            "dirty lines to the shared L1 (WGP mode)",
        )],
        _ => &[],
    }
}

/// Rows that hold for every release.
const ALL_RELEASES: &[Llvm] = &Llvm::ALL;

const GFX10: FamilyRules = FamilyRules {
    family: MemoryModelFamily::Gfx10,
    wgp_mode: true,
    split_store_counter: true,
    load_bypass: gfx10_load,
    volatile_nontemporal: vnt_gfx10,
    invalidate: inv_gfx10,
    ..BASE
};

const GFX11: FamilyRules = FamilyRules {
    family: MemoryModelFamily::Gfx11,
    wgp_mode: true,
    split_store_counter: true,
    load_bypass: gfx11_load,
    volatile_nontemporal: vnt_gfx11,
    invalidate: inv_gfx10,
    ..BASE
};

/// GFX12 release write-backs from LLVM 20 on: `global_wb scope:SCOPE_SYS` at system scope only
/// (LLVM 22 `SIGfx12CacheControl::insertRelease`; AMDGPUUsage.rst GFX12 table of release/22.x).
fn wb_gfx12_system(s: ScopeLevel, _: &Config) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[(
            "global_wb",
            &["scope:SCOPE_SYS"],
            "dirty lines to system scope",
        )],
        _ => &[],
    }
}

/// GFX12.5 scope bits: agent and system as GFX12, `cluster` is `SCOPE_SE`, and work-group
/// scope sets nothing (no WGP mode: the WGP cache is shared). LLVM 22
/// `SIGfx12CacheControl::setAtomicScope`.
fn gfx1250_scope(b: &mut Bits, s: ScopeLevel, _: &Config) {
    match s {
        ScopeLevel::System => b.set("scope:SCOPE_SYS"),
        ScopeLevel::Agent => b.set("scope:SCOPE_DEV"),
        ScopeLevel::Cluster => b.set("scope:SCOPE_SE"),
        _ => {}
    }
}

/// GFX12.5 acquire invalidates: `global_inv` at system, agent and cluster scope, none at
/// work-group scope (the WGP cache is shared).
fn inv_gfx1250(s: ScopeLevel, _: &Config, _pal: bool) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[(
            "global_inv",
            &["scope:SCOPE_SYS"],
            "caches up to system scope",
        )],
        ScopeLevel::Agent => &[(
            "global_inv",
            &["scope:SCOPE_DEV"],
            "caches up to device scope",
        )],
        ScopeLevel::Cluster => &[(
            "global_inv",
            &["scope:SCOPE_SE"],
            "caches up to the cluster's shader engine",
        )],
        _ => &[],
    }
}

/// GFX12.5 release write-backs: at system scope, and at agent scope too (a device may have
/// more than one L2); none at cluster or work-group scope.
fn wb_gfx1250(s: ScopeLevel, _: &Config) -> &'static [CacheOp] {
    match s {
        ScopeLevel::System => &[(
            "global_wb",
            &["scope:SCOPE_SYS"],
            "dirty lines to system scope",
        )],
        ScopeLevel::Agent => &[(
            "global_wb",
            &["scope:SCOPE_DEV"],
            "dirty lines to device scope (a device may have several L2 caches)",
        )],
        _ => &[],
    }
}

const BASE: FamilyRules = FamilyRules {
    family: MemoryModelFamily::Gfx6,
    llvm: ALL_RELEASES,
    wgp_mode: false,
    tgsplit_mode: false,
    split_store_counter: false,
    has_gds_waits: true,
    gds: true,
    release_needs_global: false,
    release_from_workgroup: false,
    acquire_waits_atomics_only: false,
    system_store_waits: SystemStoreWaits::Never,
    force_store_sc0_sc1: false,
    cluster: false,
    workgroup_waits: false,
    image_counters: false,
    xcnt_before_atomic_stores: false,
    private_atomics_are_flat: false,
    load_bypass: glc_at_agent,
    store_bypass: none,
    rmw_bypass: none,
    volatile_nontemporal: vnt_gfx6,
    invalidate: inv_gfx6,
    writeback: no_ops,
};

const GFX12: FamilyRules = FamilyRules {
    family: MemoryModelFamily::Gfx12,
    gds: false,
    wgp_mode: true,
    split_store_counter: true,
    has_gds_waits: false,
    release_needs_global: true,
    release_from_workgroup: true,
    system_store_waits: SystemStoreWaits::Always,
    image_counters: true,
    load_bypass: gfx12_scope,
    store_bypass: gfx12_scope,
    rmw_bypass: gfx12_scope,
    volatile_nontemporal: vnt_gfx12,
    invalidate: inv_gfx12,
    writeback: wb_gfx12,
    ..BASE
};

/// The table: one row per family and range of LLVM releases.
pub static FAMILY_RULES: [FamilyRules; 12] = [
    BASE,
    FamilyRules {
        family: MemoryModelFamily::Gfx7,
        invalidate: inv_gfx7,
        ..BASE
    },
    FamilyRules {
        family: MemoryModelFamily::Gfx90a,
        gds: false,
        tgsplit_mode: true,
        load_bypass: glc_at_agent_or_tgsplit_wg,
        invalidate: inv_gfx90a,
        writeback: wb_gfx90a,
        ..BASE
    },
    FamilyRules {
        family: MemoryModelFamily::Gfx940,
        gds: false,
        // gfx940 and gfx941 were removed in LLVM 21 (LLVM 22 is the next release modelled).
        llvm: &[Llvm::V19],
        tgsplit_mode: true,
        force_store_sc0_sc1: true,
        load_bypass: sc_bits,
        store_bypass: sc_bits,
        rmw_bypass: sc1_at_system,
        volatile_nontemporal: vnt_gfx940,
        invalidate: inv_gfx940,
        writeback: wb_gfx940,
        ..BASE
    },
    FamilyRules {
        family: MemoryModelFamily::Gfx942,
        gds: false,
        tgsplit_mode: true,
        load_bypass: sc_bits,
        store_bypass: sc_bits,
        rmw_bypass: sc1_at_system,
        volatile_nontemporal: vnt_gfx940,
        invalidate: inv_gfx940,
        writeback: wb_gfx940,
        ..BASE
    },
    FamilyRules {
        llvm: &[Llvm::V19],
        ..GFX10
    },
    // LLVM 22 selects no GDS atomics on GFX10.
    FamilyRules {
        llvm: &[Llvm::V22],
        gds: false,
        ..GFX10
    },
    FamilyRules {
        llvm: &[Llvm::V19],
        ..GFX11
    },
    // LLVM 22 selects no GDS atomics on GFX11 either.
    FamilyRules {
        llvm: &[Llvm::V22],
        gds: false,
        ..GFX11
    },
    // LLVM 19 writes back at device and work-group scope as well.
    FamilyRules {
        llvm: &[Llvm::V19],
        ..GFX12
    },
    // LLVM 22: a release writes back only at system scope (from LLVM 20) and orders LDS alone
    // too; an acquire waits for loadcnt only; a volatile LDS store does not wait first.
    FamilyRules {
        llvm: &[Llvm::V22],
        writeback: wb_gfx12_system,
        release_needs_global: false,
        acquire_waits_atomics_only: true,
        system_store_waits: SystemStoreWaits::WithCachePolicy,
        ..GFX12
    },
    // GFX12.5 (gfx1250, gfx1251), new in LLVM 21, as LLVM 22 lowers it: GFX12's LLVM 22 rules
    // with the cluster scope (`SCOPE_SE`), no WGP mode (work-group scope sets no scope bits
    // and invalidates nothing, but still waits), a device-scope write-back at agent scope,
    // no BVH or sample counters, `s_wait_xcnt` before atomic stores and read-modify-writes,
    // no waits before a volatile store, and atomics on private memory as flat atomics.
    FamilyRules {
        family: MemoryModelFamily::Gfx1250,
        llvm: &[Llvm::V22],
        wgp_mode: false,
        cluster: true,
        workgroup_waits: true,
        image_counters: false,
        xcnt_before_atomic_stores: true,
        private_atomics_are_flat: true,
        release_needs_global: false,
        acquire_waits_atomics_only: true,
        system_store_waits: SystemStoreWaits::Never,
        load_bypass: gfx1250_scope,
        store_bypass: gfx1250_scope,
        rmw_bypass: gfx1250_scope,
        invalidate: inv_gfx1250,
        writeback: wb_gfx1250,
        ..GFX12
    },
];

/// The families a release lowers that have no row, and why: (family, release, reason).
pub static UNMODELLED: [(MemoryModelFamily, Llvm, &str); 2] = [
    (
        MemoryModelFamily::Gfx940,
        Llvm::V22,
        "gfx940 and gfx941 were removed in LLVM 21",
    ),
    (
        MemoryModelFamily::Gfx1250,
        Llvm::V19,
        "GFX12.5 is new in LLVM 21",
    ),
];

/// Why a family has no row for a release (`None` when it has one, or for R600).
pub fn unmodelled(f: MemoryModelFamily, llvm: Llvm) -> Option<&'static str> {
    UNMODELLED
        .iter()
        .find(|(uf, ul, _)| *uf == f && *ul == llvm)
        .map(|u| u.2)
}

/// The rules of a family as release `llvm` lowers it; `None` for R600 and for a family the
/// release no longer supports.
pub fn rules(f: MemoryModelFamily, llvm: Llvm) -> Option<&'static FamilyRules> {
    FAMILY_RULES
        .iter()
        .find(|r| r.family == f && r.llvm.contains(&llvm))
}

/// What a configuration's family rows decide: whether the processor has clusters, which
/// cases it has, and whether a release models it.
impl Config {
    /// Whether the processor has clusters of work-groups, so the `cluster` scope is its own
    /// (GFX12.5 in LLVM 22).
    pub fn has_cluster_scope(&self) -> bool {
        rules(self.family, self.llvm).is_some_and(|r| r.cluster)
    }

    /// Every case of the configuration: [`Case::all_with_cluster`] on a processor with
    /// clusters, [`Case::all`] elsewhere.
    pub fn cases(&self) -> Vec<Case> {
        if self.has_cluster_scope() {
            Case::all_with_cluster()
        } else {
            Case::all()
        }
    }

    /// Chooses the LLVM release, refusing a processor the release does not support (its
    /// family has no row for the release).
    pub fn for_llvm(self, llvm: Llvm) -> Result<Config, ConfigError> {
        if rules(self.family, llvm).is_none() {
            return Err(ConfigError::NotInRelease {
                cpu: self.cpu.to_owned(),
                llvm,
                why: unmodelled(self.family, llvm).unwrap_or("no memory model"),
            });
        }
        Ok(self.with_llvm(llvm))
    }
}

/// How an access is carried out.
pub enum Selected {
    /// Non-atomic instructions: (operation, mnemonic, has a cache-policy operand).
    Plain {
        /// The instructions in order.
        ops: Vec<(Ops, String, bool)>,
    },
    /// One atomic instruction.
    Atomic {
        /// Mnemonic.
        mnemonic: String,
        /// Whether it has a cache-policy operand.
        cpol: bool,
        /// The bit that marks a returning atomic.
        ret_bit: Option<&'static str>,
    },
    /// A fence: no memory instruction.
    Fence,
}

/// The instruction family used for an address space, or why there is none.
fn prefix(cfg: &Config, a: AddrSpace, scalar_ok: bool) -> Result<(&'static str, bool), Invalid> {
    let m = cfg.major;
    let f = cfg.family;
    Ok(match a {
        AddrSpace::Global => match m {
            // amdhsa on GFX7 uses flat instructions for global memory.
            7 if cfg.os == crate::config::Os::Amdhsa => ("flat", true),
            6 | 7 => ("buffer", true),
            8 => ("flat", true),
            _ => ("global", true),
        },
        AddrSpace::Generic => {
            if m < 7 {
                return Err(Invalid::NoInstruction(format!(
                    "{} has no flat instructions, so generic addresses cannot be accessed",
                    cfg.cpu
                )));
            }
            ("flat", true)
        }
        AddrSpace::Local => ("ds", false),
        AddrSpace::Region => {
            if !has_gds(cfg) {
                return Err(Invalid::NoInstruction(format!(
                    "{} has no GDS, so the region address space cannot be accessed",
                    cfg.cpu
                )));
            }
            ("ds_gds", false)
        }
        AddrSpace::Private => {
            if m >= 11 || matches!(f, MemoryModelFamily::Gfx940 | MemoryModelFamily::Gfx942) {
                ("scratch", true)
            } else {
                ("buffer", true)
            }
        }
        AddrSpace::Constant => {
            if scalar_ok {
                ("s", false)
            } else {
                match m {
                    6 | 7 => ("buffer", true),
                    8 => ("flat", true),
                    _ => ("global", true),
                }
            }
        }
    })
}

/// Whether the region address space (GDS, global data share) can be accessed: the family
/// has GDS in the configuration's release.
pub fn has_gds(cfg: &Config) -> bool {
    rules(cfg.family, cfg.llvm).is_some_and(|r| r.gds)
}

fn load_name(cfg: &Config, p: &str) -> String {
    let new = cfg.major >= 11;
    match p {
        "ds" => if new { "ds_load_b32" } else { "ds_read_b32" }.to_owned(),
        "ds_gds" => if new {
            "ds_load_b32 gds"
        } else {
            "ds_read_b32 gds"
        }
        .to_owned(),
        "s" => if new { "s_load_b32" } else { "s_load_dword" }.to_owned(),
        _ => format!("{p}_load_{}", if new { "b32" } else { "dword" }),
    }
}

fn store_name(cfg: &Config, p: &str) -> String {
    let new = cfg.major >= 11;
    match p {
        "ds" => if new { "ds_store_b32" } else { "ds_write_b32" }.to_owned(),
        "ds_gds" => if new {
            "ds_store_b32 gds"
        } else {
            "ds_write_b32 gds"
        }
        .to_owned(),
        _ => format!("{p}_store_{}", if new { "b32" } else { "dword" }),
    }
}

fn rmw_name(cfg: &Config, p: &str, cmpxchg: bool, ret: bool) -> String {
    let new = cfg.major >= 11;
    match (p, cmpxchg) {
        ("ds" | "ds_gds", false) => {
            let gds = if p == "ds_gds" { " gds" } else { "" };
            format!("ds_add{}_u32{gds}", if ret { "_rtn" } else { "" })
        }
        ("ds" | "ds_gds", true) => {
            let gds = if p == "ds_gds" { " gds" } else { "" };
            let base = if new { "ds_cmpstore" } else { "ds_cmpst" };
            format!("{base}{}_b32{gds}", if ret { "_rtn" } else { "" })
        }
        (_, false) => format!("{p}_atomic_add{}", if new { "_u32" } else { "" }),
        (_, true) => format!("{p}_atomic_cmpswap{}", if new { "_b32" } else { "" }),
    }
}

/// Chooses the instructions for a case.
pub fn select(cfg: &Config, case: &Case) -> Result<Selected, Invalid> {
    const OPS_LOAD: Ops = Ops::LOAD;
    const OPS_STORE: Ops = Ops::STORE;
    let Some(a) = case.addr_space else {
        return Ok(Selected::Fence);
    };
    let ret_bit = match (cfg.major, cfg.family) {
        (12, _) => Some("th:TH_ATOMIC_RETURN"),
        (_, MemoryModelFamily::Gfx940 | MemoryModelFamily::Gfx942) => Some("sc0"),
        _ => Some("glc"),
    };
    if a == AddrSpace::Constant && case.kind.is_atomic() {
        return Err(Invalid::Unsupported(
            "atomics on the constant address space are not supported (Unsupported atomic address space)"
                .into(),
        ));
    }
    let constant_store = a == AddrSpace::Constant && case.kind == Kind::Store;
    if constant_store
        && (!cfg.llvm.selects_constant_stores()
            || prefix(cfg, AddrSpace::Global, false)?.0 == "flat")
    {
        return Err(Invalid::NoInstruction(format!(
            "{} selects no store to the constant address space on {}",
            cfg.llvm, cfg.cpu
        )));
    }
    if a == AddrSpace::Region && !matches!(case.kind, Kind::AtomicRmw | Kind::Cmpxchg) {
        return Err(Invalid::NoInstruction(
            "llc 19 selects no GDS load or store for the region address space (only atomicrmw and cmpxchg)"
                .into(),
        ));
    }
    // A constant store is selected as a global store.
    let (p, cpol) = if constant_store {
        prefix(cfg, AddrSpace::Global, false)?
    } else {
        prefix(cfg, a, true)?
    };
    let private_atomic = a == AddrSpace::Private && case.kind.is_atomic();
    Ok(match case.kind {
        Kind::Load => Selected::Plain {
            ops: vec![(OPS_LOAD, load_name(cfg, p), cpol)],
        },
        Kind::Store => Selected::Plain {
            ops: vec![(OPS_STORE, store_name(cfg, p), cpol)],
        },
        Kind::LoadAtomic if private_atomic => Selected::Plain {
            ops: vec![(OPS_LOAD, load_name(cfg, p), cpol)],
        },
        Kind::StoreAtomic if private_atomic => Selected::Plain {
            ops: vec![(OPS_STORE, store_name(cfg, p), cpol)],
        },
        Kind::AtomicRmw | Kind::Cmpxchg if private_atomic => Selected::Plain {
            ops: vec![
                (OPS_LOAD, load_name(cfg, p), cpol),
                (OPS_STORE, store_name(cfg, p), cpol),
            ],
        },
        Kind::LoadAtomic => Selected::Atomic {
            mnemonic: load_name(cfg, p),
            cpol,
            ret_bit: None,
        },
        Kind::StoreAtomic => Selected::Atomic {
            mnemonic: store_name(cfg, p),
            cpol,
            ret_bit: None,
        },
        Kind::AtomicRmw | Kind::Cmpxchg => {
            let ret = case.ret == Some(true);
            Selected::Atomic {
                mnemonic: rmw_name(cfg, p, case.kind == Kind::Cmpxchg, ret),
                cpol,
                ret_bit: if cpol { ret_bit } else { None },
            }
        }
        Kind::Fence => Selected::Fence,
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn unmodelled_reasons_agree_with_the_processor_table() {
        for (family, _, why) in UNMODELLED.iter() {
            for p in gfxkit_spec::PROCESSORS
                .iter()
                .filter(|p| p.memory_model == *family)
            {
                if let Some(r) = p.llvm.removed {
                    assert!(
                        why.contains(&format!("removed in LLVM {r}")),
                        "{}: {why}",
                        p.name
                    );
                }
            }
        }
    }
    use super::*;

    /// `cluster` is GFX12.5's own scope (`SCOPE_SE`); other processors refuse it with the
    /// reason, and their case lists do not hold it.
    #[test]
    fn cluster_scope_only_on_gfx12_5() {
        use crate::{sequence, Case};
        let fence: Case = "fence;ord=acq_rel;scope=cluster;mmra=none".parse().unwrap();
        for cpu in ["gfx1250", "gfx1251"] {
            let c = Config::for_processor(cpu).unwrap();
            assert!(c.has_cluster_scope());
            assert_eq!(c.cases().len(), 6300);
            assert_eq!(
                sequence(&c, &fence).unwrap().asm(),
                [
                    "s_wait_loadcnt 0x0",
                    "s_wait_storecnt 0x0",
                    "s_wait_dscnt 0x0",
                    "global_inv scope:SCOPE_SE"
                ]
            );
        }
        for cpu in ["gfx90a", "gfx942", "gfx1100", "gfx1200"] {
            let c = Config::for_processor(cpu).unwrap();
            assert!(!c.has_cluster_scope());
            assert_eq!(c.cases().len(), 5260);
            let e = sequence(&c, &fence).unwrap_err();
            assert!(matches!(e, Invalid::Unsupported(_)), "{cpu}: {e}");
            assert!(e.to_string().contains("has no clusters"), "{cpu}: {e}");
        }
    }

    /// What GFX12.5 changes against GFX12 is data in its row, applied by the same rules.
    #[test]
    fn gfx12_5_differs_from_gfx12_in_its_row() {
        let g12 = rules(MemoryModelFamily::Gfx12, Llvm::V22).unwrap();
        let g125 = rules(MemoryModelFamily::Gfx1250, Llvm::V22).unwrap();
        assert!(g125.cluster && !g12.cluster);
        assert!(g125.xcnt_before_atomic_stores && !g12.xcnt_before_atomic_stores);
        assert!(g125.private_atomics_are_flat && !g12.private_atomics_are_flat);
        assert!(g125.workgroup_waits && !g125.wgp_mode && g12.wgp_mode);
        assert!(!g125.image_counters && g12.image_counters);
        let cfg = Config::for_processor("gfx1250").unwrap();
        assert_eq!(
            (g125.writeback)(ScopeLevel::Agent, &cfg)[0].1,
            ["scope:SCOPE_DEV"]
        );
        assert!((g12.writeback)(ScopeLevel::Agent, &cfg).is_empty());
        assert!((g125.writeback)(ScopeLevel::Cluster, &cfg).is_empty());
        assert!((g125.invalidate)(ScopeLevel::Workgroup, &cfg, false).is_empty());
    }

    /// Each family has exactly one row per release, or a reason in [`UNMODELLED`] (R600 has
    /// no memory model at all).
    #[test]
    fn one_row_per_family_and_release() {
        for f in MemoryModelFamily::ALL {
            for llvm in Llvm::ALL {
                let n = FAMILY_RULES
                    .iter()
                    .filter(|r| r.family == f && r.llvm.contains(&llvm))
                    .count();
                let want = match (f, llvm) {
                    (MemoryModelFamily::R600, _) => 0,
                    _ if unmodelled(f, llvm).is_some() => 0,
                    _ => 1,
                };
                assert_eq!(n, want, "{f:?} {llvm}");
                assert_eq!(rules(f, llvm).is_some(), want == 1);
            }
        }
    }
}
