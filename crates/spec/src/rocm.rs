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
2024-10, present in the 6.4.3 release's source and in rocm-systems by 2025-08; composable_kernel waited for 6.4.1 to build generic \
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

/// The processors one release's runtime registers, as read from ROCr's ISA registry
/// (`ISAREG_ENTRY_GEN` in `core/runtime/isa.cpp`): a device whose processor is not there is not
/// usable at all, whatever the code object holds. Each list is given as the change from the
/// previous list read (processors added and removed); a release between two lists read is
/// judged by both ([`Rules::knows`]).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ProcessorList {
    /// The release (`major.minor`; every patch tag of a release read had the same list).
    pub release: RocmVersion,
    /// [`Pin::Pinned`] when read at the release's tag, [`Pin::Bracketed`] when read on its
    /// release branch before the tag.
    pub pin: Pin,
    /// Processors registered that the previous list read did not have.
    pub added: &'static [&'static str],
    /// Processors of the previous list read that are no longer registered.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub removed: &'static [&'static str],
    /// Where the list was read.
    pub source: &'static str,
    /// How it was read, where not at the release's tag: `on the release branch`, `in the 6.4.3
    /// release's source`. Empty for a list read at the tag.
    #[serde(skip)]
    pub read: &'static str,
}

impl ProcessorList {
    /// How the list was read, as said after "read": `at the tag`, `on the release branch`.
    pub fn read_at(&self) -> &'static str {
        if self.read.is_empty() {
            "at the tag"
        } else {
            self.read
        }
    }
}

/// The ISA registry of ROCr at each release whose sources (or, for 7.2, shipped runtime) were
/// read, oldest first. Lists not read (releases before 4.0, 7.1, TheRock's 7.13) are judged
/// from the lists around them, and said to be unknown where those disagree.
pub const PROCESSOR_LISTS: &[ProcessorList] = &[
    ProcessorList {
        release: v(4, 0),
        pin: Pin::Pinned,
        added: &[
            "gfx700", "gfx701", "gfx702", "gfx801", "gfx802", "gfx803", "gfx810", "gfx900",
            "gfx902", "gfx904", "gfx906", "gfx908", "gfx1010", "gfx1011", "gfx1012", "gfx1030",
            "gfx1031",
        ],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-4.0.0 (ceae52f3)",
        read: "",
    },
    ProcessorList {
        release: v(4, 1),
        pin: Pin::Pinned,
        added: &["gfx805", "gfx1032"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-4.1.0 (ac53207f)",
        read: "",
    },
    ProcessorList {
        release: v(4, 2),
        pin: Pin::Pinned,
        added: &["gfx1033"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-4.2.0 (337e3e55)",
        read: "",
    },
    ProcessorList {
        release: v(4, 3),
        pin: Pin::Pinned,
        added: &["gfx909", "gfx90a", "gfx90c"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-4.3.0 (71ef1489)",
        read: "",
    },
    ProcessorList {
        release: v(4, 5),
        pin: Pin::Pinned,
        added: &["gfx1034", "gfx1035"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-4.5.0 (f32dfa88)",
        read: "",
    },
    ProcessorList {
        release: v(5, 0),
        pin: Pin::Pinned,
        added: &["gfx1013"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.0.0 (635157ea)",
        read: "",
    },
    ProcessorList {
        release: v(5, 1),
        pin: Pin::Pinned,
        added: &[],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.1.0 (52d97e5c)",
        read: "",
    },
    ProcessorList {
        release: v(5, 2),
        pin: Pin::Pinned,
        added: &[],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.2.0 (dbc2f403)",
        read: "",
    },
    ProcessorList {
        release: v(5, 3),
        pin: Pin::Pinned,
        added: &["gfx1036", "gfx1100", "gfx1102", "gfx1103"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.3.0 (adae6c61)",
        read: "",
    },
    ProcessorList {
        release: v(5, 4),
        pin: Pin::Pinned,
        added: &[],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.4.0 (5e08dcc5)",
        read: "",
    },
    ProcessorList {
        release: v(5, 5),
        pin: Pin::Pinned,
        added: &["gfx1101"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.5.0 (3b939c39)",
        read: "",
    },
    ProcessorList {
        release: v(5, 6),
        pin: Pin::Pinned,
        added: &[],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.6.0 (34545547)",
        read: "",
    },
    ProcessorList {
        release: v(5, 7),
        pin: Pin::Pinned,
        added: &["gfx940", "gfx941", "gfx942"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-5.7.0 (b2b68115)",
        read: "",
    },
    ProcessorList {
        release: v(6, 0),
        pin: Pin::Pinned,
        added: &[],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-6.0.0 (22dc4638)",
        read: "",
    },
    ProcessorList {
        release: v(6, 1),
        pin: Pin::Pinned,
        added: &["gfx1150", "gfx1151"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-6.1.0 (a4ab29c5)",
        read: "",
    },
    ProcessorList {
        release: v(6, 2),
        pin: Pin::Pinned,
        added: &["gfx1200", "gfx1201"],
        removed: &[],
        source: "ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-6.2.0 (1d1b8456)",
        read: "",
    },
    ProcessorList {
        release: v(6, 3),
        pin: Pin::Bracketed,
        added: &["gfx1152"],
        removed: &[],
        source: "ROCm/ROCR-Runtime runtime/hsa-runtime/core/runtime/isa.cpp on the 6.3 release branch \
rocm-rel-6.3.0.1 (8b1ff280, 2024-09-25), before the 6.3.0 tag",
        read: "on the release branch",
    },
    ProcessorList {
        release: v(6, 4),
        pin: Pin::Bracketed,
        added: &["gfx950", "gfx1153"],
        removed: &[],
        source: "ROCR-Runtime runtime/hsa-runtime/core/runtime/isa.cpp of the 6.4.3 release \
(ROCm-ROCR-Runtime-1cd4eea, as Debian's rocr-runtime_6.4.3+dfsg.orig.tar.xz holds it); 6.4.0's \
list not read. Debian's own 6.4.3 build drops gfx940 and gfx941 by a patch \
(0011-remove-gfx940-and-gfx941-support.patch); the release keeps them",
        read: "in the 6.4.3 release's source",
    },
    ProcessorList {
        release: v(7, 0),
        pin: Pin::Bracketed,
        added: &[],
        removed: &["gfx940", "gfx941"],
        source: "ROCm/rocm-systems projects/rocr-runtime/runtime/hsa-runtime/core/runtime/isa.cpp on the \
7.0 release branch release/rocm-rel-7.0 (64cf36de, 2025-08-08), before the 7.0.0 tag; on the \
development branch gfx1153 came in 2024-12-30, gfx950 in 2025-01-26, gfx940 and gfx941 left in \
2025-02-19 (\"rocr: Remove gfx940 and gfx941 support\")",
        read: "on the release branch",
    },
    ProcessorList {
        release: v(7, 2),
        pin: Pin::Bracketed,
        added: &[],
        removed: &[],
        source: "libhsa-runtime64.so.1.18.0 of ROCm 7.2.4 as Debian builds it (libhsa-runtime64-1 \
7.2.4+dfsg-1~exp1): the ISA registry's target IDs among its strings and immediates are 7.0's \
list, no gfx1250; 7.2.0's list not read",
        read: "in 7.2.4's runtime library",
    },
];

/// The lists of [`PROCESSOR_LISTS`], each whole (the changes applied), oldest first.
pub fn processor_lists() -> Vec<(&'static ProcessorList, Vec<&'static str>)> {
    let mut out: Vec<(&'static ProcessorList, Vec<&'static str>)> = Vec::new();
    let mut now: Vec<&'static str> = Vec::new();
    for l in PROCESSOR_LISTS {
        now.retain(|p| !l.removed.contains(p));
        for p in l.added {
            if !now.contains(p) {
                now.push(p);
            }
        }
        // In ISA-version order, as the registry lists them.
        now.sort_by_key(|p| crate::Processor::by_name(p).and_then(|q| q.isa_version()));
        out.push((l, now.clone()));
    }
    out
}

/// The processors the runtime of `version`'s release registers, when its list was read, with
/// the list's row.
pub fn processors_of(version: RocmVersion) -> Option<(&'static ProcessorList, Vec<&'static str>)> {
    processor_lists()
        .into_iter()
        .find(|(l, _)| l.release == version.release())
}

/// Whether the runtime of a release knows a processor ([`Rules::knows`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessorStanding {
    /// Whether it registers the processor; `None` when the sources read do not tell.
    pub known: Option<bool>,
    /// Why not, or why it is not known (empty when it is known).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The first release whose list has it (`6.2`, `7.0, first tag not pinned`), when a
    /// later release would know it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<String>,
    /// That release as an order.
    #[serde(skip)]
    pub upgrade_order: Option<RocmVersion>,
}

impl ProcessorStanding {
    fn yes() -> ProcessorStanding {
        ProcessorStanding {
            known: Some(true),
            reason: String::new(),
            upgrade: None,
            upgrade_order: None,
        }
    }
}

/// Whether the list of `l` is the first read after an unread release gfxkit lists (so the
/// first release of what it adds is only bracketed).
fn after_gap(l: &ProcessorList) -> bool {
    let listed: Vec<RocmVersion> = RELEASES.iter().map(|r| r.version).collect();
    let Some(i) = listed.iter().position(|r| *r == l.release) else {
        return true;
    };
    i > 0 && !PROCESSOR_LISTS.iter().any(|p| p.release == listed[i - 1])
}

/// The standing of processor `name` at release `version` (see [`Rules::knows`]).
fn standing(version: RocmVersion, beyond_known: bool, name: &str) -> ProcessorStanding {
    let is_generic = crate::Processor::by_name(name).is_some_and(|p| p.is_generic());
    if beyond_known || is_generic {
        // The newest runtime; generic targets are judged by their own rows.
        return ProcessorStanding::yes();
    }
    let release = version.release();
    let lists = processor_lists();
    let has = |i: usize| lists[i].1.contains(&name);
    let first = (0..lists.len()).find(|&i| has(i));
    // The first list after `release` that has it (for the upgrade).
    let next_with = (0..lists.len()).find(|&i| lists[i].0.release > release && has(i));
    let first_text = |i: usize| {
        let l = lists[i].0;
        if l.pin == Pin::Pinned && !after_gap(l) {
            format!("{}", l.release)
        } else {
            format!("{}, first tag not pinned", l.release)
        }
    };
    let rocm = format!("ROCm {version}");
    if let Some(i) = lists.iter().position(|(l, _)| l.release == release) {
        if has(i) {
            return ProcessorStanding::yes();
        }
        let from = match (next_with, first) {
            (Some(n), _) => format!("first in {}: {}", first_text(n), lists[n].0.source),
            (None, Some(f)) => {
                let gone = (f..lists.len()).find(|&j| !has(j)).map_or(i, |j| j);
                format!(
                    "known from {} until {} removed it: {}",
                    lists[f].0.release, lists[gone].0.release, lists[gone].0.source
                )
            }
            (None, None) => format!(
                "in no ISA registry read, up to {}'s: {}",
                lists[lists.len() - 1].0.release,
                lists[lists.len() - 1].0.source
            ),
        };
        let read = if lists[i].0.read.is_empty() {
            String::new()
        } else {
            format!("; {release}'s list read {}", lists[i].0.read_at())
        };
        return ProcessorStanding {
            known: Some(false),
            reason: format!("{name}: {rocm}'s runtime does not know this processor ({from}{read})"),
            upgrade: next_with.map(first_text),
            upgrade_order: next_with.map(|n| lists[n].0.release),
        };
    }
    let before = lists.iter().rposition(|(l, _)| l.release < release);
    let after = lists.iter().position(|(l, _)| l.release > release);
    let unknown = |said: String| {
        ProcessorStanding {
        known: None,
        reason: format!(
            "{name}: whether {rocm}'s runtime knows this processor is not known ({release}'s ISA registry not read; {said})"
        ),
        upgrade: None,
        upgrade_order: None,
    }
    };
    let in_text = |i: usize| {
        if has(i) {
            format!("in {}'s", lists[i].0.release)
        } else {
            format!("not in {}'s", lists[i].0.release)
        }
    };
    match (before, after) {
        (None, _) => unknown(format!("lists read from {}", lists[0].0.release)),
        (Some(b), None) => {
            if has(b) {
                ProcessorStanding::yes()
            } else {
                unknown(format!("{}, the last read", in_text(b)))
            }
        }
        (Some(b), Some(a)) => match (has(b), has(a)) {
            (true, true) => ProcessorStanding::yes(),
            (false, false) => {
                let from = match (next_with, first) {
                    (Some(n), _) => format!("first in {}: {}", first_text(n), lists[n].0.source),
                    _ => format!("{}, {}", in_text(b), in_text(a)),
                };
                ProcessorStanding {
                    known: Some(false),
                    reason: format!(
                        "{name}: {rocm}'s runtime does not know this processor ({from}; {release}'s list not read, {} and {}'s lack it)",
                        lists[b].0.release, lists[a].0.release
                    ),
                    upgrade: next_with.map(first_text),
                    upgrade_order: next_with.map(|n| lists[n].0.release),
                }
            }
            _ => unknown(format!("{}, {}", in_text(b), in_text(a))),
        },
    }
}

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

    /// Whether its runtime knows the processor `name` (ROCr's ISA registry,
    /// [`PROCESSOR_LISTS`]): by the release's own list when it was read; between two lists
    /// read, known when both have it, not known when neither does, unknown otherwise; after
    /// the last list read, known when that list has it, else unknown; a release newer than
    /// every listed one (the newest runtime) and generic targets (their own rows) always.
    pub fn knows(&self, name: &str) -> ProcessorStanding {
        standing(self.version, self.beyond_known, name)
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

    /// The processors of ROCr's ISA registry as read at each tag (docs/rocm-releases.md):
    /// gfx1151 from 6.1.0, gfx1200/gfx1201 from 6.2.0, gfx1152 on the 6.3 branch, gfx950 and
    /// gfx1153 in 6.4.3's source, gfx940/gfx941 gone on the 7.0 branch; 7.2 read from its
    /// runtime library, 7.1 judged between.
    #[test]
    fn each_release_knows_the_processors_of_its_isa_registry() {
        let known = |rel: &str, p: &str| r(rel).knows(p).known;
        assert_eq!(known("6.0", "gfx1151"), Some(false));
        assert_eq!(known("6.1", "gfx1151"), Some(true));
        assert_eq!(known("6.1.2", "gfx1151"), Some(true));
        assert_eq!(known("6.1", "gfx1201"), Some(false));
        assert_eq!(known("6.2", "gfx1201"), Some(true));
        assert_eq!(known("5.2", "gfx1100"), Some(false));
        assert_eq!(known("5.3", "gfx1100"), Some(true));
        assert_eq!(known("5.4", "gfx1101"), Some(false));
        assert_eq!(known("4.0", "gfx90a"), Some(false));
        assert_eq!(known("4.3", "gfx90a"), Some(true));
        assert_eq!(known("6.3", "gfx950"), Some(false));
        assert_eq!(known("6.4", "gfx950"), Some(true));
        assert_eq!(known("6.4.1", "gfx1153"), Some(true));
        assert_eq!(known("7.0", "gfx950"), Some(true));
        assert_eq!(known("6.4", "gfx942"), Some(true));
        assert_eq!(known("6.4", "gfx940"), Some(true));
        assert_eq!(known("7.0", "gfx940"), Some(false));
        // After the last list read: what it has is known, the rest unknown.
        assert_eq!(known("7.2", "gfx1100"), Some(true));
        assert_eq!(known("7.13", "gfx1250"), None);
        assert_eq!(known("6.2", "gfx1250"), Some(false));
        // Before the first list read; the newest runtime; generic targets.
        assert_eq!(known("3.10", "gfx900"), None);
        assert_eq!(known("8.0", "gfx1250"), Some(true));
        assert_eq!(known("6.0", "gfx11-generic"), Some(true));
        let s = r("6.0").knows("gfx1151");
        assert_eq!(
            s.reason,
            "gfx1151: ROCm 6.0's runtime does not know this processor (first in 6.1: \
ROCm/ROCR-Runtime src/core/runtime/isa.cpp at tag rocm-6.1.0 (a4ab29c5))"
        );
        assert_eq!(s.upgrade.as_deref(), Some("6.1"));
        let s = r("6.3").knows("gfx950");
        assert_eq!(s.upgrade.as_deref(), Some("6.4, first tag not pinned"));
        assert!(
            s.reason.contains("6.3's list read on the release branch"),
            "{}",
            s.reason
        );
        let s = r("7.0").knows("gfx941");
        assert_eq!(s.upgrade, None);
        assert!(
            s.reason.contains("known from 5.7 until 7.0 removed it"),
            "{}",
            s.reason
        );
        // 7.1 lies between 7.0's and 7.2's lists, which agree.
        assert_eq!(known("7.1", "gfx950"), Some(true));
        assert_eq!(known("7.1", "gfx941"), Some(false));
        let s = r("7.1").knows("gfx1250");
        assert_eq!(s.known, Some(false));
        assert!(
            s.reason
                .contains("7.1's list not read, 7.0 and 7.2's lack it"),
            "{}",
            s.reason
        );
        let s = r("7.2.1").knows("gfx1250");
        assert_eq!(s.known, Some(false));
        assert!(
            s.reason
                .contains("7.2's list read in 7.2.4's runtime library"),
            "{}",
            s.reason
        );
        // Every processor named is one gfxkit knows; each list read is a listed release.
        for (l, all) in processor_lists() {
            assert!(
                RELEASES.iter().any(|x| x.version == l.release),
                "{}",
                l.release
            );
            for p in all {
                let q = crate::Processor::by_name(p).unwrap_or_else(|| panic!("{p}"));
                assert!(!q.is_generic(), "{p}");
            }
        }
        assert!(PROCESSOR_LISTS
            .windows(2)
            .all(|w| w[0].release < w[1].release));
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
