//! The processor row type and the lookups derived from the table.

use crate::hardware::HardwareLimits;
use serde::Serialize;

/// Target triple architecture of a processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// `r600`: the pre-GCN Radeon HD families.
    R600,
    /// `amdgcn`: GCN, CDNA and RDNA.
    Amdgcn,
}

impl Arch {
    /// The triple architecture component (`r600` or `amdgcn`).
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::R600 => "r600",
            Arch::Amdgcn => "amdgcn",
        }
    }
}

/// Whether a processor is found in discrete GPUs, APUs, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// Discrete GPU.
    Dgpu,
    /// Accelerated processing unit (GPU integrated with a CPU).
    Apu,
    /// Shipped both as dGPU and APU (for example gfx940 family parts).
    Both,
    /// A generic target: not a device, a code-object family.
    Generic,
}

impl DeviceKind {
    /// Short name: `dgpu`, `apu`, `both`, `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Dgpu => "dgpu",
            DeviceKind::Apu => "apu",
            DeviceKind::Both => "both",
            DeviceKind::Generic => "generic",
        }
    }
}

/// A target feature a processor may support (`-mattr` / target ID features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// `cumode`: compute-unit mode instead of workgroup-processor mode (GFX10+).
    Cumode,
    /// `sramecc`: SRAM ECC enabled. Takes part in target IDs.
    Sramecc,
    /// `tgsplit`: a work-group's waves may be split across compute units (GFX90A, GFX94x).
    Tgsplit,
    /// `wavefrontsize64`: run in wave64 mode (GFX10+ defaults to wave32).
    Wavefrontsize64,
    /// `xnack`: replay of memory accesses after a page fault. Takes part in target IDs.
    Xnack,
}

impl Feature {
    /// Every feature, in alphabetical order of its name (the canonical target-ID order).
    pub const ALL: [Feature; 5] = [
        Feature::Cumode,
        Feature::Sramecc,
        Feature::Tgsplit,
        Feature::Wavefrontsize64,
        Feature::Xnack,
    ];

    /// The feature's name as written in target IDs and `-mattr`.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Cumode => "cumode",
            Feature::Sramecc => "sramecc",
            Feature::Tgsplit => "tgsplit",
            Feature::Wavefrontsize64 => "wavefrontsize64",
            Feature::Xnack => "xnack",
        }
    }

    /// Looks a feature up by name. `sram-ecc` (the spelling of code-object V2/V3 era tools) is
    /// accepted as `sramecc`.
    pub fn by_name(name: &str) -> Option<Feature> {
        if name == "sram-ecc" {
            return Some(Feature::Sramecc);
        }
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The memory-model family whose code sequences a processor uses (AMDGPUUsage "Memory Model").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum MemoryModelFamily {
    /// R600 processors: no memory model is defined for them.
    R600,
    /// GFX6 (Southern Islands): no flat address space; `buffer_wbinvl1`.
    Gfx6,
    /// GFX7, GFX8 and GFX9 except GFX90A/GFX94x: `buffer_wbinvl1_vol`.
    Gfx7,
    /// GFX90A: coherent L2 across agents is not assumed; `tgsplit` mode.
    Gfx90a,
    /// GFX940 and GFX941: `sc0`/`sc1`/`nt` bits; stores forced to `sc0 sc1`.
    Gfx940,
    /// GFX942 and GFX950: `sc0`/`sc1`/`nt` bits.
    Gfx942,
    /// GFX10 (RDNA1/RDNA2): WGP and CU modes, `buffer_gl0_inv`/`buffer_gl1_inv`.
    Gfx10,
    /// GFX11 (RDNA3): as GFX10 with separate `vscnt`.
    Gfx11,
    /// GFX12 (RDNA4): `th`/`scope` bits, `s_wait_*cnt`, `global_inv`/`global_wb`.
    Gfx12,
    /// GFX12.5 (gfx1250, gfx1251): as GFX12 without WGP mode, BVH or sample counters;
    /// the `cluster` scope (LLVM 22).
    Gfx1250,
}

impl MemoryModelFamily {
    /// Every family, oldest first.
    pub const ALL: [MemoryModelFamily; 10] = [
        MemoryModelFamily::R600,
        MemoryModelFamily::Gfx6,
        MemoryModelFamily::Gfx7,
        MemoryModelFamily::Gfx90a,
        MemoryModelFamily::Gfx940,
        MemoryModelFamily::Gfx942,
        MemoryModelFamily::Gfx10,
        MemoryModelFamily::Gfx11,
        MemoryModelFamily::Gfx12,
        MemoryModelFamily::Gfx1250,
    ];

    /// The family's name as printed (`GFX90A`, `R600`).
    pub fn name(self) -> &'static str {
        match self {
            MemoryModelFamily::R600 => "R600",
            MemoryModelFamily::Gfx6 => "GFX6",
            MemoryModelFamily::Gfx7 => "GFX7",
            MemoryModelFamily::Gfx90a => "GFX90A",
            MemoryModelFamily::Gfx940 => "GFX940",
            MemoryModelFamily::Gfx942 => "GFX942",
            MemoryModelFamily::Gfx10 => "GFX10",
            MemoryModelFamily::Gfx11 => "GFX11",
            MemoryModelFamily::Gfx12 => "GFX12",
            MemoryModelFamily::Gfx1250 => "GFX1250",
        }
    }
}

/// One row of the processor table: everything gfxkit knows about one processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Processor {
    /// Primary name (`gfx90a`, `gfx9-generic`, `r600`).
    pub name: &'static str,
    /// Alternative names accepted as input (`carrizo` for `gfx801`).
    pub aliases: &'static [&'static str],
    /// Triple architecture.
    pub arch: Arch,
    /// dGPU, APU, both, or a generic target.
    pub kind: DeviceKind,
    /// Target features the processor supports (in [`Feature::ALL`] order).
    pub features: &'static [Feature],
    /// The subset of `features` that take part in target IDs (`xnack`, `sramecc`).
    pub target_id_features: &'static [Feature],
    /// `EF_AMDGPU_MACH` value in the ELF header (`e_flags & 0xff`); 0 for processors without one.
    pub mach: u8,
    /// For a member of a generic family, the generic target's name (`gfx9-generic` for `gfx906`).
    pub generic_family: Option<&'static str>,
    /// For a generic target itself, its `EF_AMDGPU_GENERIC_VERSION` (code object V6); 0 otherwise.
    pub generic_version: u8,
    /// The memory-model family used to pick code sequences.
    pub memory_model: MemoryModelFamily,
    /// The LLVM releases that define this processor (`llc -mcpu=help` lists it).
    pub llvm: LlvmReleases,
    /// Hardware limits: register files, LDS, wave slots, descriptor generation
    /// ([`crate::hardware`]).
    pub hw: &'static HardwareLimits,
}

/// The LLVM major releases that define a processor: from `added` up to, not including,
/// `removed`. Rows LLVM 19 already had say `added: 19`, the oldest release gfxkit checks
/// against, whatever release introduced them. [`LlvmReleases::MAIN`] stands for LLVM's main
/// branch past the last release gfxkit knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LlvmReleases {
    /// First release defining the processor ([`LlvmReleases::MAIN`]: only LLVM main so far).
    pub added: u16,
    /// First release no longer defining it (the processor was removed), if any.
    pub removed: Option<u16>,
}

impl LlvmReleases {
    /// LLVM's main branch: later than every numbered release.
    pub const MAIN: u16 = u16::MAX;

    /// Defined from release `added` on.
    pub const fn since(added: u16) -> LlvmReleases {
        LlvmReleases {
            added,
            removed: None,
        }
    }

    /// Defined from `added`, removed in `removed`.
    pub const fn between(added: u16, removed: u16) -> LlvmReleases {
        LlvmReleases {
            added,
            removed: Some(removed),
        }
    }

    /// Whether LLVM major release `release` (or [`LlvmReleases::MAIN`]) defines the processor.
    pub fn contains(self, release: u16) -> bool {
        release >= self.added && self.removed.map_or(true, |r| release < r)
    }
}

/// `19+` (from 19 on), `19-20` (19 through 20, removed in 21), `main` (LLVM main only).
impl std::fmt::Display for LlvmReleases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.added, self.removed) {
            (LlvmReleases::MAIN, _) => f.write_str("main"),
            (a, None) => write!(f, "{a}+"),
            (a, Some(r)) => write!(f, "{a}-{}", r.saturating_sub(1)),
        }
    }
}

impl Processor {
    /// The ISA version `(major, minor, stepping)` a processor's name spells, as the HSA
    /// runtime numbers it (`gfx90a` is 9.0.10, `gfx1151` is 11.5.1: the last two characters
    /// are the minor version and stepping, in hex; `HSA_OVERRIDE_GFX_VERSION` takes this
    /// form). A generic target has the major (and, for `gfx9-4-generic`, minor) version of
    /// its family and stepping 0; a variant (`gfx1250-strict`) that of its processor. `None` for
    /// r600 processors.
    pub fn isa_version(&self) -> Option<(u8, u8, u8)> {
        if self.arch != Arch::Amdgcn {
            return None;
        }
        let rest = self.name.strip_prefix("gfx")?;
        if let Some(family) = rest.strip_suffix("-generic") {
            let mut parts = family.split('-').map(|p| p.parse::<u8>().ok());
            let major = parts.next()??;
            let minor = parts.next().unwrap_or(Some(0))?;
            return Some((major, minor, 0));
        }
        // A variant of a processor (`gfx1250-strict`) has its ISA.
        let rest = rest.split('-').next().unwrap_or(rest);
        let n = rest.len();
        if n < 3 || !rest.is_ascii() {
            return None;
        }
        let major = rest[..n - 2].parse::<u8>().ok()?;
        let hex = |i: usize| u8::from_str_radix(&rest[i..i + 1], 16).ok();
        Some((major, hex(n - 2)?, hex(n - 1)?))
    }

    /// Every name the processor answers to: its primary name, then its aliases.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }

    /// Whether the processor supports `feature`.
    pub fn supports(&self, feature: Feature) -> bool {
        self.features.contains(&feature)
    }

    /// Whether LLVM major release `release` defines this processor (19 is the release gfxkit's
    /// conformance tests run; [`LlvmReleases::MAIN`] asks for LLVM main).
    pub fn in_llvm(&self, release: u16) -> bool {
        self.llvm.contains(release)
    }

    /// Whether LLVM 19 (the reference tools gfxkit is tested against) knows this processor.
    pub fn in_llvm19(&self) -> bool {
        self.in_llvm(19)
    }

    /// Whether xnack is always on (GFX12.5 and later): the processor supports `xnack` but its
    /// target IDs do not carry it (LLVM 23 and later refuse it; ROCm 7.2.2's LLVM 22 still
    /// wrote `gfx1250:xnack-` and `gfx1250:xnack+`, which gfxkit keeps as written). Code
    /// objects still encode the xnack field (LLVM 22 writes "any", LLVM main since late 2026
    /// "on"; both decode to the bare processor, "off" to LLVM 22's `gfx1250:xnack-`).
    pub fn xnack_always(&self) -> bool {
        self.supports(Feature::Xnack) && !self.has_target_id_feature(Feature::Xnack)
    }

    /// Whether `feature` takes part in this processor's target IDs.
    pub fn has_target_id_feature(&self, feature: Feature) -> bool {
        self.target_id_features.contains(&feature)
    }

    /// Whether this row is a generic target (`gfx9-generic`, ...).
    pub fn is_generic(&self) -> bool {
        self.kind == DeviceKind::Generic
    }
}
