//! AMDGPU triple architectures: the legacy `amdgcn` and LLVM main's `amdgpu` with an optional
//! subarch naming the processor (`amdgpu9.0a-amd-amdhsa` is gfx90a, `amdgpu12.00` gfx1200,
//! `amdgpu9.4` the generic gfx9-4-generic), and ISA names `<triple>--<target ID>`.
//!
//! Source: LLVM main's AMDGPUUsage.rst "Target Triples" (llvm-project#206480, July 2026): the
//! subarch is the processor's version, `<major>.<minor><stepping>` for a processor (`9.0a`,
//! `10.30`, `12.50`), `<major>[.<minor>]` for a generic target (`9`, `9.4`, `11.7`, `13`);
//! `amdgcn` is the legacy alias of `amdgpu` without a subarch. A subarch is compatible with a
//! processor when it names that processor, or names the generic target that covers it (the
//! "major subarch of the family"). gfx1250-strict is `12.50s`.
//!
//! ```
//! use gfxkit_target_id::triple::{AmdArch, subarch_of};
//! use gfxkit_spec::Processor;
//! let a = AmdArch::parse("amdgpu9.0a").unwrap();
//! assert_eq!(a.processor().unwrap().name, "gfx90a");
//! assert!(a.fits(Processor::by_name("gfx90a").unwrap()));
//! assert!(!a.fits(Processor::by_name("gfx908").unwrap()));
//! assert_eq!(subarch_of(Processor::by_name("gfx1030").unwrap()).as_deref(), Some("10.30"));
//! ```

use crate::{TargetId, TargetIdError};
use gfxkit_spec::{Arch, Processor, PROCESSORS};
use std::fmt;

/// The subarch a processor is named by in an `amdgpu` triple (`9.0a` for gfx90a, `9.4` for
/// gfx9-4-generic, `12.50s` for gfx1250-strict); `None` for r600 processors.
pub fn subarch_of(p: &Processor) -> Option<String> {
    if p.arch != Arch::Amdgcn {
        return None;
    }
    let digits = p.name.strip_prefix("gfx")?;
    if p.is_generic() {
        // gfx9-generic -> 9, gfx10-3-generic -> 10.3.
        let parts: Vec<&str> = digits.strip_suffix("-generic")?.split('-').collect();
        return match parts.as_slice() {
            [major] => Some((*major).to_owned()),
            [major, minor] => Some(format!("{major}.{minor}")),
            _ => None,
        };
    }
    let (base, variant) = match digits.split_once('-') {
        Some((b, "strict")) => (b, "s"),
        Some(_) => return None,
        None => (digits, ""),
    };
    if base.len() < 3 || !base.is_ascii() {
        return None;
    }
    let (major, rest) = base.split_at(base.len() - 2);
    Some(format!("{major}.{rest}{variant}"))
}

/// The processor whose subarch is `subarch`.
pub fn processor_of_subarch(subarch: &str) -> Option<&'static Processor> {
    PROCESSORS
        .iter()
        .find(|p| subarch_of(p).as_deref() == Some(subarch))
}

/// The architecture component of an AMDGPU (GCN and later) triple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AmdArch<'a> {
    text: &'a str,
    subarch: Option<&'a str>,
}

/// Whether `s` is written like a subarch: a decimal major version, then optionally `.` and
/// one to three lowercase letters or digits (`9`, `9.4`, `9.0a`, `12.50s`).
fn subarch_syntax(s: &str) -> bool {
    let (major, minor) = match s.split_once('.') {
        Some((m, n)) => (m, Some(n)),
        None => (s, None),
    };
    let major_ok =
        !major.is_empty() && major.len() <= 3 && major.bytes().all(|b| b.is_ascii_digit());
    let minor_ok = minor.map_or(true, |n| {
        !n.is_empty()
            && n.len() <= 3
            && n.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    });
    major_ok && minor_ok
}

impl<'a> AmdArch<'a> {
    /// Reads `amdgcn`, `amdgpu` or `amdgpu<subarch>`. A subarch of the right shape that names
    /// no processor gfxkit knows is kept (a newer LLVM's); [`AmdArch::processor`] is then `None`.
    pub fn parse(arch: &'a str) -> Option<AmdArch<'a>> {
        if arch == "amdgcn" || arch == "amdgpu" {
            return Some(AmdArch {
                text: arch,
                subarch: None,
            });
        }
        let sub = arch.strip_prefix("amdgpu")?;
        subarch_syntax(sub).then_some(AmdArch {
            text: arch,
            subarch: Some(sub),
        })
    }

    /// The subarch (`9.0a`), if the triple has one.
    pub fn subarch(&self) -> Option<&'a str> {
        self.subarch
    }

    /// The processor the subarch names (a generic target for a family subarch).
    pub fn processor(&self) -> Option<&'static Processor> {
        self.subarch.and_then(processor_of_subarch)
    }

    /// Whether code for processor `p` may carry this triple: no subarch, the subarch of `p`,
    /// or the subarch of the generic target covering `p`. An unknown subarch fits nothing.
    pub fn fits(&self, p: &Processor) -> bool {
        let Some(sub) = self.subarch else {
            return true;
        };
        match processor_of_subarch(sub) {
            Some(q) => q.name == p.name || (q.is_generic() && p.generic_family == Some(q.name)),
            None => false,
        }
    }

    /// Whether two triples' architectures may name the same target: both without a subarch
    /// (`amdgcn` and `amdgpu` are one architecture), equal subarches, or one without a subarch
    /// or naming the generic family of the other's processor.
    pub fn is_compatible(&self, other: &AmdArch<'_>) -> bool {
        match (self.subarch, other.subarch) {
            (None, _) | (_, None) => true,
            (Some(a), Some(b)) if a == b => true,
            _ => {
                let (Some(p), Some(q)) = (self.processor(), other.processor()) else {
                    return false;
                };
                (p.is_generic() && q.generic_family == Some(p.name))
                    || (q.is_generic() && p.generic_family == Some(q.name))
            }
        }
    }

    /// The architecture as written.
    pub fn as_str(&self) -> &'a str {
        self.text
    }
}

impl fmt::Display for AmdArch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text)
    }
}

/// An ISA name as the HSA runtime and `amdhsa.target` spell it: `<arch>-<vendor>-<os>-<env>-
/// <target ID>`, such as `amdgcn-amd-amdhsa--gfx90a:xnack-` or `amdgpu9.0a-amd-amdhsa--gfx90a`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsaName {
    /// The triple, `<arch>-<vendor>-<os>-<env>` (the environment may be empty).
    pub triple: String,
    /// The target ID.
    pub target: TargetId,
}

/// Why an ISA name does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IsaNameError {
    /// Not `<arch>-<vendor>-<os>-<env>-<target ID>` with an AMDGPU architecture.
    NotAnIsaName(String),
    /// The target ID part is invalid.
    TargetId(TargetIdError),
    /// The triple's subarch names another processor than the target ID.
    SubarchMismatch {
        /// The ISA name.
        input: String,
        /// The subarch.
        subarch: String,
        /// The target ID's processor.
        processor: &'static str,
    },
}

impl fmt::Display for IsaNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IsaNameError::NotAnIsaName(s) => write!(
                f,
                "'{s}' is not an ISA name, expected <arch>-<vendor>-<os>-<env>-<target ID> \
                 such as amdgcn-amd-amdhsa--gfx90a or amdgpu9.0a-amd-amdhsa--gfx90a"
            ),
            IsaNameError::TargetId(e) => write!(f, "{e}"),
            IsaNameError::SubarchMismatch {
                input,
                subarch,
                processor,
            } => write!(
                f,
                "'{input}': subarch amdgpu{subarch} does not name processor {processor}"
            ),
        }
    }
}

impl std::error::Error for IsaNameError {}

impl IsaName {
    /// Parses an ISA name. The environment may be empty (`--`) or written (`-unknown-`); the
    /// target ID is checked against the subarch of an `amdgpu` triple.
    pub fn parse(input: &str) -> Result<IsaName, IsaNameError> {
        let bad = || IsaNameError::NotAnIsaName(input.to_owned());
        let parts: Vec<&str> = input.splitn(5, '-').collect();
        let [arch, vendor, os, env, target] = parts.as_slice() else {
            return Err(bad());
        };
        let arch = AmdArch::parse(arch).ok_or_else(bad)?;
        if vendor.is_empty() || os.is_empty() || target.is_empty() {
            return Err(bad());
        }
        let target = TargetId::parse(target).map_err(IsaNameError::TargetId)?;
        if !arch.fits(target.processor()) {
            return Err(IsaNameError::SubarchMismatch {
                input: input.to_owned(),
                subarch: arch.subarch().unwrap_or_default().to_owned(),
                processor: target.processor().name,
            });
        }
        Ok(IsaName {
            triple: format!("{arch}-{vendor}-{os}-{env}"),
            target,
        })
    }
}

/// A device named by a target ID (`gfx90a:xnack-`) or by its ISA name as `rocminfo` and the
/// runtime print it (`amdgcn-amd-amdhsa--gfx90a:xnack-`, `amdgpu9.0a-amd-amdhsa--gfx90a`).
pub fn parse_device(s: &str) -> Result<TargetId, IsaNameError> {
    if s.contains("-amd-") || s.starts_with("amdgcn-") || s.starts_with("amdgpu") {
        return IsaName::parse(s).map(|i| i.target);
    }
    TargetId::parse(s).map_err(IsaNameError::TargetId)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: &str) -> &'static Processor {
        Processor::by_name(n).unwrap()
    }

    /// The triples LLVM main's clang driver passes for each processor (clang's amdgpu
    /// subarch-triple driver test).
    #[test]
    fn subarches_of_llvm_main() {
        for (name, sub) in [
            ("gfx600", "6.00"),
            ("gfx705", "7.05"),
            ("gfx810", "8.10"),
            ("gfx900", "9.00"),
            ("gfx90a", "9.0a"),
            ("gfx90c", "9.0c"),
            ("gfx942", "9.42"),
            ("gfx950", "9.50"),
            ("gfx1013", "10.13"),
            ("gfx1036", "10.36"),
            ("gfx1154", "11.54"),
            ("gfx1172", "11.72"),
            ("gfx1201", "12.01"),
            ("gfx1251", "12.51"),
            ("gfx1310", "13.10"),
            ("gfx1250-strict", "12.50s"),
            ("gfx9-generic", "9"),
            ("gfx9-4-generic", "9.4"),
            ("gfx10-1-generic", "10.1"),
            ("gfx10-3-generic", "10.3"),
            ("gfx11-generic", "11"),
            ("gfx11-7-generic", "11.7"),
            ("gfx12-generic", "12"),
            ("gfx12-5-generic", "12.5"),
            ("gfx13-generic", "13"),
        ] {
            assert_eq!(subarch_of(p(name)).as_deref(), Some(sub), "{name}");
            assert_eq!(processor_of_subarch(sub).map(|p| p.name), Some(name));
        }
        assert_eq!(subarch_of(p("cayman")), None);
        // Every amdgcn row has a subarch, and no two share one.
        let mut seen = std::collections::HashSet::new();
        for row in PROCESSORS.iter().filter(|r| r.arch == Arch::Amdgcn) {
            let s = subarch_of(row).unwrap_or_else(|| panic!("{}", row.name));
            assert!(subarch_syntax(&s), "{s}");
            assert!(seen.insert(s), "{}", row.name);
        }
    }

    #[test]
    fn arch_parsing_and_fit() {
        let plain = AmdArch::parse("amdgpu").unwrap();
        assert!(plain.subarch().is_none() && plain.fits(p("gfx1100")));
        for bad in [
            "amdgpu-",
            "amdgpu.",
            "amdgpu9.",
            "amdgpuX",
            "amdgpu9.0A",
            "amd",
            "x86_64",
            "amdgpu1234",
        ] {
            assert!(AmdArch::parse(bad).is_none(), "{bad}");
        }
        let a = AmdArch::parse("amdgpu9.0a").unwrap();
        assert!(a.fits(p("gfx90a")) && !a.fits(p("gfx90c")));
        // A family subarch covers its members, not other families.
        let g = AmdArch::parse("amdgpu9.4").unwrap();
        assert!(g.fits(p("gfx942")) && g.fits(p("gfx950")) && g.fits(p("gfx9-4-generic")));
        assert!(!g.fits(p("gfx90a")));
        // A subarch of a newer LLVM parses but fits nothing gfxkit knows.
        let future = AmdArch::parse("amdgpu14.00").unwrap();
        assert!(future.processor().is_none() && !future.fits(p("gfx1310")));
        let c = |x: &str, y: &str| {
            AmdArch::parse(x)
                .unwrap()
                .is_compatible(&AmdArch::parse(y).unwrap())
        };
        assert!(
            c("amdgcn", "amdgpu9.0a") && c("amdgpu", "amdgcn") && c("amdgpu9.0a", "amdgpu9.0a")
        );
        assert!(c("amdgpu9.4", "amdgpu9.42") && c("amdgpu9.42", "amdgpu9.4"));
        assert!(!c("amdgpu9.00", "amdgpu9.06") && !c("amdgpu9.0a", "amdgpu9.4"));
    }

    #[test]
    fn isa_names() {
        for (s, triple, target) in [
            (
                "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
                "amdgcn-amd-amdhsa-",
                "gfx90a:sramecc+:xnack-",
            ),
            (
                "amdgpu9.0a-amd-amdhsa-unknown-gfx90a",
                "amdgpu9.0a-amd-amdhsa-unknown",
                "gfx90a",
            ),
            (
                "amdgpu12.00-amd-amdhsa--gfx1200",
                "amdgpu12.00-amd-amdhsa-",
                "gfx1200",
            ),
            (
                "amdgpu9-amd-amdhsa--gfx906:xnack-",
                "amdgpu9-amd-amdhsa-",
                "gfx906:xnack-",
            ),
        ] {
            let i = IsaName::parse(s).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(i.triple, triple);
            assert_eq!(i.target.to_string(), target);
        }
        let e = IsaName::parse("amdgpu9.0a-amd-amdhsa--gfx908").unwrap_err();
        assert!(
            matches!(
                e,
                IsaNameError::SubarchMismatch {
                    processor: "gfx908",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("amdgpu9.0a"));
        assert!(IsaName::parse("gfx90a").is_err());
        for d in [
            "gfx90a:xnack-",
            "amdgcn-amd-amdhsa--gfx90a:xnack-",
            "amdgpu9.0a-amd-amdhsa--gfx90a:xnack-",
        ] {
            assert_eq!(parse_device(d).unwrap().to_string(), "gfx90a:xnack-", "{d}");
        }
        assert!(parse_device("gfx9-4-generic").is_ok());
        assert!(parse_device("amdgpu9.0a-amd-amdhsa--gfx942").is_err());
        assert!(IsaName::parse("x86_64-unknown-linux--gfx90a").is_err());
        assert!(matches!(
            IsaName::parse("amdgcn-amd-amdhsa--gfx90a:xnack"),
            Err(IsaNameError::TargetId(_))
        ));
    }
}
