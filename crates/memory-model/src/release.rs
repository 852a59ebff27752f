//! The LLVM releases whose lowering the model reproduces, and the facts about each release
//! that are not code sequences (the spelling of the fence address-space annotation, which
//! scopes exist, which processors it still knows).
//!
//! What changed between releases lives in the rows: the family table ([`crate::family`])
//! holds one row per family and range of releases, so a changed lowering is a second row,
//! never a test of the release in the rules.

use std::fmt;
use std::str::FromStr;

/// An LLVM release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Llvm {
    /// LLVM 19 (Debian's llc-19): the first release the model was checked against.
    V19,
    /// LLVM 22 (ROCm 7.2.2's `rocm-llvm-python` 7.2.2.562.46).
    V22,
}

/// One release's facts.
struct ReleaseRow {
    llvm: Llvm,
    name: &'static str,
    /// The MMRA tag that restricts a fence to some address spaces.
    mmra_tag: &'static str,
    /// Stores to the constant address space are selected as global stores (where global
    /// memory has buffer or global instructions; flat-only targets still select none).
    constant_stores: bool,
    /// Where the facts were read.
    source: &'static str,
}

/// Sources: LLVM 19 `AMDGPUUsage.rst` "Memory Model" (tag `amdgpu-as`); LLVM 22 renamed the
/// tag `amdgpu-synchronize-as` (AMDGPUUsage.rst "Memory Model" of release/22.x,
/// `SIMemoryLegalizer.cpp`). Constant-address-space stores: measured by the sweeps (llc 19
/// cannot select them; LLVM 22 selects `buffer_store_dword`/`global_store_dword` on GFX6 and
/// GFX9+, still nothing on the flat-only GFX7 amdhsa and GFX8).
static RELEASES: [ReleaseRow; 2] = [
    ReleaseRow {
        llvm: Llvm::V19,
        name: "19",
        mmra_tag: "amdgpu-as",
        constant_stores: false,
        source: "llc 19 (Debian llvm-19)",
    },
    ReleaseRow {
        llvm: Llvm::V22,
        name: "22",
        mmra_tag: "amdgpu-synchronize-as",
        constant_stores: true,
        source: "LLVM 22 (ROCm 7.2.2 rocm-llvm-python 7.2.2.562.46)",
    },
];

impl Llvm {
    /// Every release, oldest first.
    pub const ALL: [Llvm; 2] = [Llvm::V19, Llvm::V22];

    /// The newest release: the default.
    pub const LATEST: Llvm = Llvm::V22;

    fn row(self) -> &'static ReleaseRow {
        RELEASES
            .iter()
            .find(|r| r.llvm == self)
            .expect("every release has a row")
    }

    /// The major version as text (`19`, `22`).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The MMRA tag that restricts a fence to address spaces (`amdgpu-as` in LLVM 19,
    /// `amdgpu-synchronize-as` in LLVM 22).
    pub fn mmra_tag(self) -> &'static str {
        self.row().mmra_tag
    }

    /// Whether a store to the constant address space is selected (as a global store).
    pub fn selects_constant_stores(self) -> bool {
        self.row().constant_stores
    }

    /// The compiler the release's rows were checked against.
    pub fn source(self) -> &'static str {
        self.row().source
    }
}

impl fmt::Display for Llvm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LLVM {}", self.name())
    }
}

/// A release name that is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown LLVM release `{0}` (expected 19 or 22)")]
pub struct UnknownRelease(pub String);

impl FromStr for Llvm {
    type Err = UnknownRelease;

    fn from_str(s: &str) -> Result<Llvm, UnknownRelease> {
        let t = s.trim().to_ascii_lowercase();
        let t = t
            .strip_prefix("llvm")
            .unwrap_or(&t)
            .trim_start_matches(['-', ' ']);
        Llvm::ALL
            .into_iter()
            .find(|r| r.name() == t)
            .ok_or_else(|| UnknownRelease(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_one_row_and_parses_back() {
        for r in Llvm::ALL {
            assert_eq!(RELEASES.iter().filter(|x| x.llvm == r).count(), 1);
            assert_eq!(r.name().parse::<Llvm>().unwrap(), r);
            assert_eq!(format!("llvm{}", r.name()).parse::<Llvm>().unwrap(), r);
        }
        assert_eq!(Llvm::LATEST, *Llvm::ALL.iter().max().unwrap());
        assert!("20".parse::<Llvm>().is_err());
    }
}
