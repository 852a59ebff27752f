//! Target configurations: processor (or family), mode, OS and options.

use crate::release::Llvm;
use gfxkit_spec::{MemoryModelFamily, Processor};
use std::fmt;

/// The OS component of the target triple, which selects the memory model's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Os {
    /// `amdhsa` (ROCm).
    Amdhsa,
    /// `amdpal` (graphics PAL).
    Amdpal,
    /// `mesa3d`.
    Mesa3d,
}

impl Os {
    /// Every OS.
    pub const ALL: [Os; 3] = [Os::Amdhsa, Os::Amdpal, Os::Mesa3d];

    /// The triple component.
    pub fn name(self) -> &'static str {
        match self {
            Os::Amdhsa => "amdhsa",
            Os::Amdpal => "amdpal",
            Os::Mesa3d => "mesa3d",
        }
    }

    /// Looks an OS up by triple component.
    pub fn by_name(s: &str) -> Option<Os> {
        Os::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// A configuration that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The processor is not in the processor table.
    #[error("unknown processor `{0}`")]
    UnknownProcessor(String),
    /// The processor has no memory model (R600) or is not a name gfxkit can place in a
    /// generation.
    #[error("processor `{0}` has no AMDGPU memory model")]
    NoMemoryModel(String),
    /// The processor's family has no rows for the chosen LLVM release.
    #[error("{cpu} is not modelled for {llvm}: {why}")]
    NotInRelease {
        /// Processor.
        cpu: String,
        /// The release.
        llvm: Llvm,
        /// Why (removed from the release, newer than it, not modelled yet).
        why: &'static str,
    },
    /// A mode the family does not have.
    #[error("{family} has no `{mode}` mode")]
    NoSuchMode {
        /// Family name.
        family: String,
        /// `cumode` or `tgsplit`.
        mode: &'static str,
    },
    /// A family name that is not known.
    #[error("unknown memory-model family `{0}` (expected one of gfx6, gfx7, gfx90a, gfx940, gfx942, gfx10, gfx11, gfx12, gfx1250)")]
    UnknownFamily(String),
}

/// Short name of a family, as accepted by [`family_by_name`]: its printed name in lower case
/// (`gfx90a`).
pub fn family_name(f: MemoryModelFamily) -> String {
    f.name().to_ascii_lowercase()
}

/// The families that have a memory model (every family but R600), oldest first.
pub fn families() -> impl Iterator<Item = MemoryModelFamily> {
    MemoryModelFamily::ALL
        .into_iter()
        .filter(|f| *f != MemoryModelFamily::R600)
}

/// Looks a family up by its short name (`gfx6`, `gfx7` (GFX7-GFX9), `gfx90a`, `gfx940`,
/// `gfx942`, `gfx10`, `gfx11`, `gfx12`; `gfx9` is accepted for `gfx7`).
pub fn family_by_name(s: &str) -> Result<MemoryModelFamily, ConfigError> {
    let s = s.to_ascii_lowercase();
    if s == "gfx9" || s == "gfx8" {
        return Ok(MemoryModelFamily::Gfx7);
    }
    families()
        .find(|f| family_name(*f) == s)
        .ok_or(ConfigError::UnknownFamily(s))
}

/// A target configuration: everything besides the case that decides a code sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    /// Processor name (`gfx90a`); for a family configuration, the family's representative.
    pub cpu: &'static str,
    /// Memory-model family.
    pub family: MemoryModelFamily,
    /// ISA major version (6..=12), which decides instruction names.
    pub major: u8,
    /// `cumode` (GFX10+): work-groups run on one CU; otherwise WGP mode.
    pub cumode: bool,
    /// `tgsplit` (GFX90A, GFX94x): a work-group's waves may be on different CUs.
    pub tgsplit: bool,
    /// The OS of the triple.
    pub os: Os,
    /// llc's `-amdgcn-skip-cache-invalidations`: no acquire invalidates.
    pub skip_cache_invalidations: bool,
    /// The LLVM release whose lowering is reproduced.
    pub llvm: Llvm,
}

/// ISA major version from a processor name (`gfx90a` -> 9, `gfx1030` -> 10, `gfx9-generic` -> 9).
fn isa_major(name: &str) -> Option<u8> {
    let digits = name.strip_prefix("gfx")?;
    if let Some((m, _)) = digits.split_once('-') {
        return m.parse().ok();
    }
    match digits.len() {
        3 => digits[..1].parse().ok(),
        4 => digits[..2].parse().ok(),
        _ => None,
    }
}

impl Config {
    /// The configuration of a processor from the processor table, in its default mode on
    /// `amdhsa`.
    pub fn for_processor(name: &str) -> Result<Config, ConfigError> {
        let p =
            Processor::by_name(name).ok_or_else(|| ConfigError::UnknownProcessor(name.into()))?;
        let major = isa_major(p.name).ok_or_else(|| ConfigError::NoMemoryModel(p.name.into()))?;
        if p.memory_model == MemoryModelFamily::R600 {
            return Err(ConfigError::NoMemoryModel(p.name.into()));
        }
        Ok(Config::new(p.name, p.memory_model, major))
    }

    /// The configuration of a family, using a representative processor for instruction names
    /// (`gfx600`, `gfx900`, `gfx90a`, `gfx940`, `gfx942`, `gfx1030`, `gfx1100`, `gfx1200`).
    pub fn for_family(family: MemoryModelFamily) -> Result<Config, ConfigError> {
        let (cpu, major) = match family {
            MemoryModelFamily::R600 => return Err(ConfigError::NoMemoryModel("r600".into())),
            MemoryModelFamily::Gfx6 => ("gfx600", 6),
            MemoryModelFamily::Gfx7 => ("gfx900", 9),
            MemoryModelFamily::Gfx90a => ("gfx90a", 9),
            MemoryModelFamily::Gfx940 => ("gfx940", 9),
            MemoryModelFamily::Gfx942 => ("gfx942", 9),
            MemoryModelFamily::Gfx10 => ("gfx1030", 10),
            MemoryModelFamily::Gfx11 => ("gfx1100", 11),
            MemoryModelFamily::Gfx12 => ("gfx1200", 12),
            MemoryModelFamily::Gfx1250 => ("gfx1250", 12),
        };
        Ok(Config::new(cpu, family, major))
    }

    /// A configuration from its parts, in the default mode on `amdhsa`, for the newest LLVM
    /// release.
    pub fn new(cpu: &'static str, family: MemoryModelFamily, major: u8) -> Config {
        Config {
            cpu,
            family,
            major,
            cumode: false,
            tgsplit: false,
            os: Os::Amdhsa,
            skip_cache_invalidations: false,
            llvm: Llvm::LATEST,
        }
    }

    /// Chooses the LLVM release whose lowering is reproduced.
    pub fn with_llvm(mut self, llvm: Llvm) -> Config {
        self.llvm = llvm;
        self
    }

    /// The name of the configuration's recorded oracle outcomes: the label for LLVM 19
    /// (`gfx90a+tgsplit`), under the release's directory for later ones
    /// (`llvm22/gfx90a+tgsplit`).
    pub fn recording(&self) -> String {
        match self.llvm {
            Llvm::V19 => self.label(),
            r => format!("llvm{}/{}", r.name(), self.label()),
        }
    }

    /// Sets `cumode`; an error for families without the `cumode` attribute. GFX12.5 takes it,
    /// as LLVM 22 does, though it has no WGP mode: its sequences are the same either way.
    pub fn with_cumode(mut self, on: bool) -> Result<Config, ConfigError> {
        if on
            && !matches!(
                self.family,
                MemoryModelFamily::Gfx10
                    | MemoryModelFamily::Gfx11
                    | MemoryModelFamily::Gfx12
                    | MemoryModelFamily::Gfx1250
            )
        {
            return Err(ConfigError::NoSuchMode {
                family: family_name(self.family),
                mode: "cumode",
            });
        }
        self.cumode = on;
        Ok(self)
    }

    /// Sets `tgsplit`; an error for families without it.
    pub fn with_tgsplit(mut self, on: bool) -> Result<Config, ConfigError> {
        if on
            && !matches!(
                self.family,
                MemoryModelFamily::Gfx90a | MemoryModelFamily::Gfx940 | MemoryModelFamily::Gfx942
            )
        {
            return Err(ConfigError::NoSuchMode {
                family: family_name(self.family),
                mode: "tgsplit",
            });
        }
        self.tgsplit = on;
        Ok(self)
    }

    /// Sets the OS.
    pub fn with_os(mut self, os: Os) -> Config {
        self.os = os;
        self
    }

    /// Sets the "skip cache invalidations" option.
    pub fn with_skip_cache_invalidations(mut self, on: bool) -> Config {
        self.skip_cache_invalidations = on;
        self
    }

    /// A short label: `gfx90a`, `gfx90a+tgsplit`, `gfx1030+cumode`, `gfx700-amdpal`,
    /// `gfx700-skipinv`.
    pub fn label(&self) -> String {
        let mut s = self.cpu.to_owned();
        if self.cumode {
            s.push_str("+cumode");
        }
        if self.tgsplit {
            s.push_str("+tgsplit");
        }
        if self.os != Os::Amdhsa {
            s.push('-');
            s.push_str(self.os.name());
        }
        if self.skip_cache_invalidations {
            s.push_str("-skipinv");
        }
        s
    }

    /// The llc arguments that select this configuration.
    pub fn llc_args(&self) -> Vec<String> {
        let mut v = vec![
            format!("-mtriple=amdgcn-amd-{}", self.os.name()),
            format!("-mcpu={}", self.cpu),
        ];
        let mut attrs = Vec::new();
        if self.cumode {
            attrs.push("+cumode");
        }
        if self.tgsplit {
            attrs.push("+tgsplit");
        }
        if !attrs.is_empty() {
            v.push(format!("-mattr={}", attrs.join(",")));
        }
        if self.skip_cache_invalidations {
            v.push("-amdgcn-skip-cache-invalidations".into());
        }
        v
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// The processors of the conformance configurations, with the releases that know them.
/// Source: LLVM 19 and LLVM 22 `AMDGPUUsage.rst` processor tables (gfx940 and gfx941 were
/// removed in LLVM 21; gfx950, gfx1201, gfx1250 and gfx1251 are checked from LLVM 22 on).
const CONFORMANCE_PROCESSORS: [(&str, MemoryModelFamily, u8, &[Llvm]); 19] = {
    use Llvm::*;
    use MemoryModelFamily as F;
    const BOTH: &[Llvm] = &[V19, V22];
    [
        ("gfx600", F::Gfx6, 6, BOTH),
        ("gfx700", F::Gfx7, 7, BOTH),
        ("gfx803", F::Gfx7, 8, BOTH),
        ("gfx900", F::Gfx7, 9, BOTH),
        ("gfx906", F::Gfx7, 9, BOTH),
        ("gfx908", F::Gfx7, 9, BOTH),
        ("gfx90a", F::Gfx90a, 9, BOTH),
        ("gfx940", F::Gfx940, 9, &[V19]),
        ("gfx941", F::Gfx940, 9, &[V19]),
        ("gfx942", F::Gfx942, 9, BOTH),
        ("gfx950", F::Gfx942, 9, &[V22]),
        ("gfx1010", F::Gfx10, 10, BOTH),
        ("gfx1030", F::Gfx10, 10, BOTH),
        ("gfx1100", F::Gfx11, 11, BOTH),
        ("gfx1151", F::Gfx11, 11, BOTH),
        ("gfx1200", F::Gfx12, 12, BOTH),
        ("gfx1201", F::Gfx12, 12, &[V22]),
        ("gfx1250", F::Gfx1250, 12, &[V22]),
        ("gfx1251", F::Gfx1250, 12, &[V22]),
    ]
};

/// The configurations checked against a release's compiler: each processor it knows in its
/// modes, three on `amdpal`, one on `mesa3d`, and one with cache invalidations skipped.
/// Built without the processor table, so they exist however far the table has been filled.
pub fn conformance_configs(llvm: Llvm) -> Vec<Config> {
    use MemoryModelFamily as F;
    let mut v = Vec::new();
    for (cpu, fam, major, releases) in CONFORMANCE_PROCESSORS {
        if !releases.contains(&llvm) {
            continue;
        }
        let c = Config::new(cpu, fam, major).with_llvm(llvm);
        v.push(c);
        if matches!(fam, F::Gfx90a | F::Gfx940 | F::Gfx942) {
            v.push(Config { tgsplit: true, ..c });
        }
        // GFX12.5 takes `cumode` without having a WGP mode: checked that LLVM agrees.
        if matches!(fam, F::Gfx10 | F::Gfx11 | F::Gfx12 | F::Gfx1250) {
            v.push(Config { cumode: true, ..c });
        }
    }
    for (cpu, fam, major, os) in [
        ("gfx700", F::Gfx7, 7, Os::Amdpal),
        ("gfx900", F::Gfx7, 9, Os::Amdpal),
        ("gfx1030", F::Gfx10, 10, Os::Amdpal),
        ("gfx700", F::Gfx7, 7, Os::Mesa3d),
    ] {
        v.push(Config::new(cpu, fam, major).with_os(os).with_llvm(llvm));
    }
    v.push(
        Config::new("gfx700", F::Gfx7, 7)
            .with_skip_cache_invalidations(true)
            .with_llvm(llvm),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_major_from_names() {
        assert_eq!(isa_major("gfx90a"), Some(9));
        assert_eq!(isa_major("gfx1030"), Some(10));
        assert_eq!(isa_major("gfx1200"), Some(12));
        assert_eq!(isa_major("gfx600"), Some(6));
        assert_eq!(isa_major("gfx10-3-generic"), Some(10));
        assert_eq!(isa_major("r600"), None);
    }

    #[test]
    fn labels_are_unique() {
        let mut all = std::collections::HashSet::new();
        for llvm in Llvm::ALL {
            let v = conformance_configs(llvm);
            let labels: std::collections::HashSet<_> = v.iter().map(|c| c.label()).collect();
            assert_eq!(labels.len(), v.len());
            all.extend(v.iter().map(|c| c.recording()));
        }
        assert_eq!(conformance_configs(Llvm::V19).len(), 29);
        assert_eq!(conformance_configs(Llvm::V22).len(), 33);
        assert_eq!(all.len(), 62);
    }

    #[test]
    fn conformance_configs_match_the_processor_table() {
        for c in Llvm::ALL.into_iter().flat_map(conformance_configs) {
            let from_table = Config::for_processor(c.cpu).unwrap();
            assert_eq!(from_table.family, c.family, "{}", c.cpu);
            assert_eq!(from_table.major, c.major, "{}", c.cpu);
        }
    }

    #[test]
    fn unknown_processor_is_an_error() {
        assert_eq!(
            Config::for_processor("gfx9999").unwrap_err(),
            ConfigError::UnknownProcessor("gfx9999".into())
        );
    }
}
