//! What each ROCm release's runtime can load, as data: one row ([`Fact`]) per capability with
//! the first release that has it, whether that first release is pinned (read at a release tag,
//! or stated by the runtime's maintainers) or only bracketed (known to lie between two points,
//! the row names the release gfxkit assumes), and the source of the row. Every lookup
//! ([`Rules::of`]) is derived from the rows.
//!
//! Sources: the ROCr loader (`src/loader/executable.cpp` of ROCm/ROCR-Runtime at release tags,
//! `core/runtime/isa.cpp`), CLR (`hipamd/src/hip_code_object.cpp`, `hip_fatbin.cpp`), and
//! the issues and pull requests each row names. The facts and their sources are collected in
//! `docs/rocm-releases.md`.

use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

/// A ROCm release number: `6.4`, `6.4.3`. Ordered by major, minor, patch (a missing patch
/// is 0); printed as given.
#[derive(Debug, Clone, Copy, Eq)]
pub struct RocmVersion {
    /// Major release (`6` of 6.4.3).
    pub major: u16,
    /// Minor release (`4` of 6.4.3).
    pub minor: u16,
    /// Patch release (`3` of 6.4.3), when given.
    pub patch: Option<u16>,
}

impl RocmVersion {
    /// `major.minor`.
    pub const fn new(major: u16, minor: u16) -> RocmVersion {
        RocmVersion {
            major,
            minor,
            patch: None,
        }
    }

    /// Parses `6`, `6.4`, `6.4.3`, also with a suffix after the numbers as release files write
    /// them (`6.4.3-128`, `7.10.0a20251020`, `5.7.1~rc1`: the suffix is dropped). The error
    /// says what was expected.
    pub fn parse(text: &str) -> Result<RocmVersion, String> {
        let t = text.trim();
        let bad = || {
            format!("{text:?} is not a ROCm release number (expected MAJOR.MINOR[.PATCH], such as 6.4 or 6.4.3)")
        };
        let mut parts = Vec::new();
        for piece in t.split('.') {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                break;
            }
            let n: u16 = digits.parse().map_err(|_| bad())?;
            parts.push(n);
            if digits.len() != piece.len() || parts.len() == 3 {
                break;
            }
        }
        match parts[..] {
            [major] => Ok(RocmVersion::new(major, 0)),
            [major, minor] => Ok(RocmVersion::new(major, minor)),
            [major, minor, patch] => Ok(RocmVersion {
                major,
                minor,
                patch: Some(patch),
            }),
            _ => Err(bad()),
        }
    }

    /// The `major.minor` release this version belongs to.
    pub fn release(self) -> RocmVersion {
        RocmVersion::new(self.major, self.minor)
    }

    fn key(self) -> (u16, u16, u16) {
        (self.major, self.minor, self.patch.unwrap_or(0))
    }
}

impl PartialEq for RocmVersion {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl PartialOrd for RocmVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RocmVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Display for RocmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.patch {
            Some(p) => write!(f, "{}.{}.{p}", self.major, self.minor),
            None => write!(f, "{}.{}", self.major, self.minor),
        }
    }
}

impl Serialize for RocmVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a runtime can load, one kind per row of [`FACTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Capability {
    /// The ROCr loader accepts code objects up to this version.
    CodeObjectVersion(u8),
    /// The runtime loads code objects of this generic target.
    Generic(&'static str),
    /// The HIP runtime (CLR) unpacks compressed bundles (CCOB) of this format version.
    Ccob(u16),
    /// The HIP runtime resolves kpack-split binaries (`HIPK` wrappers) through their `.kpack`
    /// archives.
    Kpack,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::CodeObjectVersion(v) => write!(f, "code objects up to V{v}"),
            Capability::Generic(g) => write!(f, "{g} code objects"),
            Capability::Ccob(v) => write!(f, "CCOB v{v}"),
            Capability::Kpack => f.write_str("kpack-split binaries (HIPK wrappers)"),
        }
    }
}

/// How well the first release of a row is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pin {
    /// Read at the release's tag, or stated for that release by the runtime's maintainers.
    Pinned,
    /// Known only to lie between two points: the release named is the one gfxkit assumes.
    Bracketed,
    /// In the runtime's sources after the newest release gfxkit knows; only a release newer
    /// than every one in [`RELEASES`] is taken to have it.
    Unreleased,
}

/// One row: a capability, the first release that has it, and where that is written.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Fact {
    /// What the runtime can load.
    pub capability: Capability,
    /// The first release that can (for [`Pin::Unreleased`], the newest release known not to).
    pub first: RocmVersion,
    /// How well `first` is known.
    pub pin: Pin,
    /// Where the row comes from.
    pub source: &'static str,
}

const fn fact(capability: Capability, first: RocmVersion, pin: Pin, source: &'static str) -> Fact {
    Fact {
        capability,
        first,
        pin,
        source,
    }
}

const fn v(major: u16, minor: u16) -> RocmVersion {
    RocmVersion::new(major, minor)
}

/// Sources shared by several rows.
const GENERIC_SOURCE: &str = "ROCr maps gfx9/gfx10-1/gfx10-3/gfx11-generic from 6.2.0 \
(amd_hsa_code.cpp), but the loader's check needs the ISA registry's generic entries \
(core/runtime/isa.cpp ISAREG_ENTRY_GEN): absent in the 6.3 branch (2024-09) and amd-staging of \
2024-10, present in rocm-systems by 2025-08; composable_kernel waited for 6.4.1 to build generic \
targets; first tag not pinned";

/// The capability rows. Code-object versions and compressed bundles from the runtimes' sources
/// at release tags and the maintainers' statements; generic targets and kpack bracketed.
pub const FACTS: &[Fact] = &[
    fact(
        Capability::CodeObjectVersion(3),
        v(0, 0),
        Pin::Pinned,
        "ROCr loader (src/loader/executable.cpp): up to 4.0 code objects V1-V3, anything else an error",
    ),
    fact(
        Capability::CodeObjectVersion(4),
        v(4, 1),
        Pin::Pinned,
        "ROCr loader (src/loader/executable.cpp) at 4.1 to 5.1: up to V4, \"unsupported code object version\" above",
    ),
    fact(
        Capability::CodeObjectVersion(5),
        v(5, 2),
        Pin::Pinned,
        "ROCr loader: ELFABIVERSION_AMDGPU_HSA_V5 appears in 5.2.0",
    ),
    fact(
        Capability::CodeObjectVersion(6),
        v(6, 3),
        Pin::Pinned,
        "ROCR-Runtime#321 (a V6 object on ROCm before 6.3 fails with HSA_STATUS_ERROR_INVALID_CODE_OBJECT), \
intel/llvm#18294, IREE#20423 (\"only supported by ROCm 6.3 and above\"); 6.2's loader source accepts V6 \
(\"Support COV6/Generic Targets\", 2024-02) but 6.2 fails in practice",
    ),
    fact(
        Capability::Generic("gfx9-generic"),
        v(6, 4),
        Pin::Bracketed,
        GENERIC_SOURCE,
    ),
    fact(
        Capability::Generic("gfx9-4-generic"),
        v(6, 4),
        Pin::Bracketed,
        GENERIC_SOURCE,
    ),
    fact(
        Capability::Generic("gfx10-1-generic"),
        v(6, 4),
        Pin::Bracketed,
        GENERIC_SOURCE,
    ),
    fact(
        Capability::Generic("gfx10-3-generic"),
        v(6, 4),
        Pin::Bracketed,
        GENERIC_SOURCE,
    ),
    fact(
        Capability::Generic("gfx11-generic"),
        v(6, 4),
        Pin::Bracketed,
        GENERIC_SOURCE,
    ),
    fact(
        Capability::Generic("gfx12-generic"),
        v(6, 4),
        Pin::Bracketed,
        GENERIC_SOURCE,
    ),
    fact(
        Capability::Generic("gfx12-5-generic"),
        v(7, 13),
        Pin::Unreleased,
        "ROCr rocm-systems#7300 (2026-06) and CLR+ROCr rocm-systems#9741 (2026-08: before it \"a \
gfx12-5-generic code object cannot load on gfx1250\"; adds gfx1250 -> gfx12-5-generic to hip_fatbin.cpp); \
no release gfxkit knows is pinned to have it",
    ),
    fact(
        Capability::Ccob(1),
        v(6, 2),
        Pin::Pinned,
        "CLR hipamd/src/hip_code_object.cpp: no CCOB in 6.1, 6.2.0 reads the compressed bundle header \
(6.2.3 misreads V1: ROCm/clr#99)",
    ),
    fact(
        Capability::Ccob(2),
        v(6, 2),
        Pin::Pinned,
        "CLR hipamd/src/hip_code_object.cpp: no CCOB in 6.1, 6.2.0 reads the V2 header",
    ),
    fact(
        Capability::Ccob(3),
        v(7, 0),
        Pin::Bracketed,
        "CLR reads V3 before Aug 2025 (llvm#152600 made V3 clang's default: \"HIP runtime support for \
compressed bundle format v3 is in place\"; COMPRESSED_BUNDLE_FORMAT_VERSION=2 for older runtimes); \
first tag not pinned (about 7.0)",
    ),
    fact(
        Capability::Kpack,
        v(7, 13),
        Pin::Bracketed,
        "CLR's kpack loader: rocm-systems#2622 (merged 2026-01-15 behind ROCM_KPACK_ENABLED, without it \
a HIPK wrapper gives hipErrorNotSupported), enabled unconditionally in TheRock by 2026-03-31 \
(TheRock#4257), split artifacts by default from 2026-04-17 (TheRock#4652, 7.13 development releases); \
releases up to 7.1 predate the loader, classic 7.2.0 packages contain no .kpack; first tag not pinned",
    ),
];

/// A release gfxkit lists (`gfxkit rocm list`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Release {
    /// Its number.
    pub version: RocmVersion,
    /// What it is, where that matters (TheRock's development releases).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub note: &'static str,
}

const fn release(major: u16, minor: u16) -> Release {
    Release {
        version: v(major, minor),
        note: "",
    }
}

/// The ROCm releases gfxkit lists, oldest first. Any other number is judged by the rows too
/// ([`Rules::of`]); one newer than all of these is taken to be the newest runtime, which
/// gfxkit models without `--rocm`.
pub const RELEASES: &[Release] = &[
    release(4, 0),
    release(4, 1),
    release(4, 2),
    release(4, 3),
    release(4, 5),
    release(5, 0),
    release(5, 1),
    release(5, 2),
    release(5, 3),
    release(5, 4),
    release(5, 5),
    release(5, 6),
    release(5, 7),
    release(6, 0),
    release(6, 1),
    release(6, 2),
    release(6, 3),
    release(6, 4),
    release(7, 0),
    release(7, 1),
    release(7, 2),
    Release {
        version: v(7, 13),
        note: "TheRock development releases (multi-arch, kpack-split)",
    },
];

/// The newest release in [`RELEASES`].
pub fn newest_release() -> RocmVersion {
    RELEASES[RELEASES.len() - 1].version
}

/// Whether the release of `version` has the capability of `fact`.
fn has(fact: &Fact, version: RocmVersion) -> bool {
    let release = version.release();
    match fact.pin {
        Pin::Unreleased => release > newest_release(),
        Pin::Pinned | Pin::Bracketed => release >= fact.first,
    }
}

/// What the runtime of one release loads, derived from [`FACTS`].
#[derive(Debug, Clone, Serialize)]
pub struct Rules {
    /// The release, as asked.
    pub version: RocmVersion,
    /// Whether `version` is newer than every release in [`RELEASES`] (judged as the newest
    /// runtime).
    pub beyond_known: bool,
    /// The highest code-object version the loader accepts.
    pub code_object_max: u8,
    /// The generic targets it loads.
    pub generics: Vec<&'static str>,
    /// The CCOB versions its HIP runtime unpacks (empty: no compressed bundles).
    pub ccob: Vec<u16>,
    /// Whether its HIP runtime resolves kpack-split binaries.
    pub kpack: bool,
}

impl Rules {
    /// The rules of the release `version`: every row whose first release is at or before its
    /// `major.minor` (an unreleased row only for a release newer than every known one).
    pub fn of(version: RocmVersion) -> Rules {
        let mut r = Rules {
            version,
            beyond_known: version.release() > newest_release(),
            code_object_max: 0,
            generics: Vec::new(),
            ccob: Vec::new(),
            kpack: false,
        };
        for f in FACTS.iter().filter(|f| has(f, version)) {
            match f.capability {
                Capability::CodeObjectVersion(n) => r.code_object_max = r.code_object_max.max(n),
                Capability::Generic(g) => r.generics.push(g),
                Capability::Ccob(n) => r.ccob.push(n),
                Capability::Kpack => r.kpack = true,
            }
        }
        r
    }

    /// Whether it loads code objects of the generic target `name`.
    pub fn loads_generic(&self, name: &str) -> bool {
        self.generics.contains(&name)
    }

    /// Whether its HIP runtime unpacks CCOB `version`.
    pub fn unpacks_ccob(&self, version: u16) -> bool {
        self.ccob.contains(&version)
    }
}

/// The row that gives `capability` (`None` for one no row gives).
pub fn fact_for(capability: Capability) -> Option<&'static Fact> {
    FACTS.iter().find(|f| f.capability == capability)
}

/// When a capability arrives, as said in reasons and remedies: `6.3`, `6.4, first tag not
/// pinned`, `a release after 7.13, not pinned`.
pub fn first_text(fact: &Fact) -> String {
    match fact.pin {
        Pin::Pinned if fact.first == RocmVersion::new(0, 0) => "every release".to_owned(),
        Pin::Pinned => fact.first.to_string(),
        Pin::Bracketed => format!("{}, first tag not pinned", fact.first),
        Pin::Unreleased => format!("a release after {}, not pinned", fact.first),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Rules {
        Rules::of(RocmVersion::parse(s).unwrap())
    }

    #[test]
    fn versions_parse_as_release_files_write_them() {
        for (text, want) in [
            ("6.4", "6.4"),
            ("6.4.3", "6.4.3"),
            ("6.4.3-128\n", "6.4.3"),
            ("7.10.0a20251020", "7.10.0"),
            ("5.7.1~rc1", "5.7.1"),
            ("7", "7.0"),
        ] {
            assert_eq!(
                RocmVersion::parse(text).unwrap().to_string(),
                want,
                "{text}"
            );
        }
        for bad in ["", "x6.4", "latest", "99999999.1"] {
            let e = RocmVersion::parse(bad).unwrap_err();
            assert!(e.contains("not a ROCm release number"), "{e}");
        }
        assert!(RocmVersion::parse("6.10").unwrap() > RocmVersion::parse("6.9.9").unwrap());
        assert_eq!(
            RocmVersion::parse("6.4.0").unwrap(),
            RocmVersion::parse("6.4").unwrap()
        );
    }

    /// The rows say what their sources state (docs/rocm-releases.md): V4 from 4.1, V5 from
    /// 5.2 (ELFABIVERSION_AMDGPU_HSA_V5 in 5.2.0), V6 from 6.3 (ROCR-Runtime#321, IREE#20423),
    /// generic targets from 6.4 (bracketed), CCOB from 6.2.0 and v3 from 7.0 (bracketed),
    /// kpack from TheRock's 7.13 (bracketed), gfx12-5-generic in no known release.
    #[test]
    fn each_release_loads_what_its_sources_say() {
        let cov: Vec<(&str, u8)> = ["4.0", "4.1", "5.1", "5.2", "6.1", "6.2", "6.3", "7.2"]
            .iter()
            .map(|s| (*s, r(s).code_object_max))
            .collect();
        assert_eq!(
            cov,
            [
                ("4.0", 3),
                ("4.1", 4),
                ("5.1", 4),
                ("5.2", 5),
                ("6.1", 5),
                ("6.2", 5),
                ("6.3", 6),
                ("7.2", 6)
            ]
        );
        assert!(r("6.3").generics.is_empty());
        assert!(r("6.4.1").loads_generic("gfx11-generic"));
        assert!(r("6.4").loads_generic("gfx9-4-generic"));
        assert!(!r("7.13").loads_generic("gfx12-5-generic"));
        assert!(r("8.0").loads_generic("gfx12-5-generic"));
        assert!(r("6.1").ccob.is_empty());
        assert_eq!(r("6.2").ccob, [1, 2]);
        assert_eq!(r("7.0").ccob, [1, 2, 3]);
        assert!(!r("7.2").kpack && r("7.13").kpack);
        assert!(!r("7.13").beyond_known && r("8.0").beyond_known);
    }

    #[test]
    fn rows_are_unique_and_name_a_source() {
        for (i, f) in FACTS.iter().enumerate() {
            assert!(!f.source.is_empty());
            assert!(
                FACTS[..i].iter().all(|g| g.capability != f.capability),
                "{:?} twice",
                f.capability
            );
            if let Capability::Generic(g) = f.capability {
                let p = crate::Processor::by_name(g).unwrap_or_else(|| panic!("{g}"));
                assert!(p.is_generic(), "{g}");
            }
            if f.pin == Pin::Unreleased {
                assert_eq!(f.first, newest_release());
            }
        }
        assert!(RELEASES.windows(2).all(|w| w[0].version < w[1].version));
        assert_eq!(
            first_text(fact_for(Capability::Generic("gfx11-generic")).unwrap()),
            "6.4, first tag not pinned"
        );
    }
}
