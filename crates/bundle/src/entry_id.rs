//! Bundle entry IDs: `<kind>-<arch>-<vendor>-<os>-<env>[-<target id>]`.
//!
//! Accepted spellings (the raw string is always kept exactly as stored):
//! - the 5-part form `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+` (canonical for AMD targets),
//! - the legacy 3-part triple `hip-amdgcn-amd-amdhsa-gfx906` (read as an empty environment),
//! - host IDs `host-x86_64-unknown-linux-gnu`, `host-x86_64-unknown-linux--` and the old
//!   `host-x86_64-unknown-linux`,
//! - LLVM main's `amdgpu` triples with a subarch naming the processor beside the legacy
//!   `amdgcn`: `hip-amdgpu12.00-amd-amdhsa--gfx1200`, `hipv4-amdgpu9.0a-amd-amdhsa-unknown-gfx90a`
//!   (the subarch must fit the target ID, see [`gfxkit_target_id::triple`]),
//! - SPIR-V for AMD GPUs: `hip-spirv64-amd-amdhsa--amdgcnspirv` (and the `-unknown-` form the
//!   runtime also accepts).
//!
//! The target part is a [`TargetId`] when its processor is in the processor table; otherwise it
//! is kept intact as text (`gfx1999:xnack+`, `sm_70`, `amdgcnspirv`), never truncated.

use gfxkit_target_id::triple::AmdArch;
use gfxkit_target_id::TargetId;
use std::fmt;
use std::str::FromStr;

/// The offload kind: the first component of an entry ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OffloadKind {
    /// `host`: the host object (usually empty in device-only bundles).
    Host,
    /// `hip`: HIP device code (code object V2/V3 era spelling).
    Hip,
    /// `hipv4`: HIP device code, code object V4 and later.
    HipV4,
    /// `openmp`: OpenMP offload device code.
    OpenMp,
}

impl OffloadKind {
    /// Every kind.
    pub const ALL: [OffloadKind; 4] = [
        OffloadKind::Host,
        OffloadKind::Hip,
        OffloadKind::HipV4,
        OffloadKind::OpenMp,
    ];

    /// The kind as written in entry IDs.
    pub fn as_str(self) -> &'static str {
        match self {
            OffloadKind::Host => "host",
            OffloadKind::Hip => "hip",
            OffloadKind::HipV4 => "hipv4",
            OffloadKind::OpenMp => "openmp",
        }
    }

    /// Looks a kind up by name (exact).
    pub fn by_name(s: &str) -> Option<OffloadKind> {
        OffloadKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether an entry of kind `self` may serve a request of kind `requested`: equal kinds,
    /// `hip` with `hipv4`, and (when `hip_openmp` is set, like `-hip-openmp-compatible`) a HIP
    /// kind with `openmp`.
    pub fn is_compatible(self, requested: OffloadKind, hip_openmp: bool) -> bool {
        use OffloadKind::*;
        match (self, requested) {
            (a, b) if a == b => true,
            (Hip, HipV4) | (HipV4, Hip) => true,
            (Hip | HipV4, OpenMp) | (OpenMp, Hip | HipV4) => hip_openmp,
            _ => false,
        }
    }
}

impl fmt::Display for OffloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Triple architectures accepted in entry IDs and `-targets`: the names LLVM's `Triple` parses
/// that an offload or host compile uses (with their aliases, such as `amd64` and `arm64`).
const KNOWN_ARCHES: &[&str] = &[
    "amdgcn",
    "r600",
    "spirv",
    "spirv32",
    "spirv64",
    "nvptx",
    "nvptx64",
    "x86_64",
    "i386",
    "i486",
    "i586",
    "i686",
    "aarch64",
    "aarch64_be",
    "arm",
    "armv7",
    "armv7l",
    "armv8",
    "powerpc64",
    "powerpc64le",
    "ppc64",
    "ppc64le",
    "riscv32",
    "riscv64",
    "s390x",
    "loongarch64",
    "mips64",
    "mips64el",
    "sparcv9",
    "wasm32",
    "wasm64",
    "amd64",
    "x86-64",
    "arm64",
    "armeb",
    "thumb",
    "powerpc",
    "ppc",
    "systemz",
    "loongarch32",
    "mips",
    "mipsel",
    "sparc",
    "ve",
    "hexagon",
    "bpf",
    "bpfel",
    "bpfeb",
];

/// Whether `arch` is a triple architecture entry IDs may name (see [`EntryId::parse`]): one of
/// the list, or `amdgpu` with or without a subarch (`amdgpu9.0a`, LLVM main).
pub fn is_known_arch(arch: &str) -> bool {
    is_llvm19_arch(arch) || AmdArch::parse(arch).is_some()
}

/// Whether LLVM 19's `Triple` knows `arch`: [`is_known_arch`] without the `amdgpu` triples,
/// which LLVM 19's tools (and gfxkit's drop-in `clang-offload-bundler`) refuse.
pub fn is_llvm19_arch(arch: &str) -> bool {
    KNOWN_ARCHES.contains(&arch)
}

/// A target triple `<arch>-<vendor>-<os>-<env>` as written in an entry ID. The environment is
/// empty for AMD device code (`amdgcn-amd-amdhsa-`). `arch` keeps an `amdgpu` subarch
/// (`amdgpu9.0a`); [`Triple::amd_arch`] reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Triple {
    /// Architecture (`amdgcn`, `x86_64`).
    pub arch: String,
    /// Vendor (`amd`, `unknown`, `pc`).
    pub vendor: String,
    /// Operating system (`amdhsa`, `linux`).
    pub os: String,
    /// Environment (`gnu`, or empty).
    pub env: String,
}

impl Triple {
    /// Whether two triples may name the same target: equal architectures, and vendor, OS and
    /// environment equal or left unknown/empty on one side.
    /// `amdgcn` and `amdgpu` are one architecture; their subarches must be compatible
    /// ([`AmdArch::is_compatible`]).
    pub fn is_compatible(&self, other: &Triple) -> bool {
        fn loose(a: &str, b: &str) -> bool {
            a == b || a.is_empty() || b.is_empty() || a == "unknown" || b == "unknown"
        }
        let arch = match (self.amd_arch(), other.amd_arch()) {
            (Some(a), Some(b)) => a.is_compatible(&b),
            _ => self.arch == other.arch,
        };
        arch && loose(&self.vendor, &other.vendor)
            && loose(&self.os, &other.os)
            && loose(&self.env, &other.env)
    }

    /// Whether this is an AMD HSA triple (`*-*-amdhsa`).
    pub fn is_amdhsa(&self) -> bool {
        self.os == "amdhsa"
    }

    /// The architecture as an AMDGPU (GCN and later) one: `amdgcn`, `amdgpu`, `amdgpu9.0a`.
    pub fn amd_arch(&self) -> Option<AmdArch<'_>> {
        AmdArch::parse(&self.arch)
    }

    /// Whether the architecture is `amdgcn` or `amdgpu[<subarch>]`: AMDGPU code objects.
    pub fn is_amdgpu(&self) -> bool {
        self.amd_arch().is_some()
    }
}

impl fmt::Display for Triple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}-{}", self.arch, self.vendor, self.os, self.env)
    }
}

/// The target part of an entry ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntryTarget {
    /// No target part (host entries, or an empty last component).
    None,
    /// A target ID whose processor is in the processor table.
    Known(TargetId),
    /// A target whose processor gfxkit does not know, kept exactly as written.
    Unknown(String),
}

impl EntryTarget {
    /// The known target ID, if any.
    pub fn target_id(&self) -> Option<&TargetId> {
        match self {
            EntryTarget::Known(t) => Some(t),
            _ => None,
        }
    }

    /// Whether there is no target part.
    pub fn is_none(&self) -> bool {
        matches!(self, EntryTarget::None)
    }
}

impl fmt::Display for EntryTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryTarget::None => Ok(()),
            EntryTarget::Known(t) => write!(f, "{t}"),
            EntryTarget::Unknown(s) => f.write_str(s),
        }
    }
}

/// A parsed bundle entry ID. [`raw`](EntryId::raw) is the string exactly as stored;
/// [`Display`](fmt::Display) prints the canonical form.
#[derive(Debug, Clone)]
pub struct EntryId {
    raw: String,
    kind: OffloadKind,
    triple: Triple,
    target: EntryTarget,
    target_text: String,
}

/// Equality and hashing are on the canonical form ([`EntryId::canonical`]), not the raw
/// spelling: two IDs are equal exactly when their canonical strings are.
impl PartialEq for EntryId {
    fn eq(&self, other: &EntryId) -> bool {
        self.canonical_parts() == other.canonical_parts()
    }
}

impl Eq for EntryId {}

impl std::hash::Hash for EntryId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.canonical_parts().hash(state);
    }
}

/// Why an entry ID does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryIdErrorKind {
    /// The ID is empty.
    Empty,
    /// Too few `-`-separated components.
    TooFewComponents {
        /// Components found.
        found: usize,
    },
    /// The kind is not `host`, `hip`, `hipv4` or `openmp`.
    BadKind {
        /// The kind as written.
        kind: String,
    },
    /// The triple's architecture is unknown or a component is empty.
    BadTriple {
        /// The triple as written.
        triple: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The target part names a known processor but is not a valid target ID.
    BadTargetId(gfxkit_target_id::TargetIdError),
    /// The `amdgpu` triple's subarch names another processor than the target ID
    /// (`hip-amdgpu9.0a-amd-amdhsa--gfx908`).
    SubarchMismatch {
        /// The triple's architecture (`amdgpu9.0a`).
        arch: String,
        /// The target ID's processor.
        processor: &'static str,
    },
    /// The target part holds characters no target ID uses.
    BadTargetText {
        /// The text.
        text: String,
    },
}

/// An entry ID that does not parse: the ID and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryIdError {
    /// The ID as given.
    pub input: String,
    /// What was wrong.
    pub kind: EntryIdErrorKind,
}

impl fmt::Display for EntryIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid bundle entry ID '{}': ", self.input)?;
        match &self.kind {
            EntryIdErrorKind::Empty => write!(f, "empty, expected <kind>-<arch>-<vendor>-<os>-<env>[-<target id>]"),
            EntryIdErrorKind::TooFewComponents { found } => write!(
                f,
                "{found} '-'-separated components, expected <kind>-<arch>-<vendor>-<os>-<env>[-<target id>]"
            ),
            EntryIdErrorKind::BadKind { kind } => write!(
                f,
                "unknown offload kind '{kind}', expected host, hip, hipv4 or openmp"
            ),
            EntryIdErrorKind::BadTriple { triple, reason } => {
                write!(f, "bad triple '{triple}': {reason}")
            }
            EntryIdErrorKind::BadTargetId(e) => write!(f, "{e}"),
            EntryIdErrorKind::SubarchMismatch { arch, processor } => write!(
                f,
                "triple architecture {arch} does not name processor {processor}"
            ),
            EntryIdErrorKind::BadTargetText { text } => write!(
                f,
                "target '{text}' holds characters no target ID uses"
            ),
        }
    }
}

impl std::error::Error for EntryIdError {}

/// Whether the last component of an ID names a processor (with or without target features):
/// one of the table's, one shaped like an AMD (`gfx...`) or NVIDIA (`sm_...`) processor, or
/// SPIR-V's `amdgcnspirv` (so `hip-amdgcn-amd-amdhsa-amdgcnspirv` has a target, as for clang).
fn looks_like_processor(s: &str) -> bool {
    let name = s.split(':').next().unwrap_or("");
    gfxkit_spec::Processor::by_name(name).is_some()
        || (name.starts_with("gfx") && name.len() > 3)
        || name.starts_with("sm_")
        || name == "amdgcnspirv"
}

/// clang 19's test for the text after a `-targets` item's last `-`: an offload architecture
/// it knows (`OffloadArch`: AMD and NVIDIA processors, `amdgcnspirv`, OpenMP's `generic`).
/// Unlike [`looks_like_processor`] it sees only the last `-` component, which is why clang 19
/// splits `gfx9-generic` after `gfx9`.
fn clang19_offload_arch(s: &str) -> bool {
    gfxkit_spec::Processor::by_name(s).is_some()
        || (s.len() > 3 && s.starts_with("gfx"))
        || (s.len() > 3 && s.starts_with("sm_"))
        || s == "amdgcnspirv"
        || s == "generic"
}

/// A `-targets` item as clang 19 standardizes it before use.
#[derive(Debug, Clone)]
pub struct StdTarget {
    /// As given on the command line.
    pub given: String,
    /// What is written into bundles and compared against entries.
    pub written: String,
    /// Offload kind.
    pub kind: String,
    /// `<arch>-<vendor>-<os>-<env>`.
    pub triple: String,
    /// Target ID text (possibly empty).
    pub target_id: String,
    /// Whether the kind is one clang 19 accepts (`host`, `openmp`, `hip`, `hipv4`).
    pub kind_valid: bool,
    /// Whether the triple's architecture is one of LLVM 19's (`amdgcn`, `x86_64`, ...).
    pub triple_valid: bool,
}

/// Standardizes a `-targets` item like clang 19 (`<kind>-<arch>-<vendor>-<os>-<env>-<id>`,
/// legacy 3-part triples get an empty environment), except that an unknown processor keeps
/// its target ID (clang 19 turns `gfx1250:xnack+` into `gfx1250-`) and trailing empty
/// components are not doubled (clang 19 writes `host-x86_64-unknown-linux--` as
/// `host-x86_64-unknown-linux--host-x86_64-unknown-linux--`).
pub fn standardize(given: &str) -> StdTarget {
    let mut t = given;
    while t.len() > 1 && t.ends_with('-') && !t.contains(':') {
        t = &t[..t.len() - 1];
    }
    let head = t.split(':').next().unwrap_or("");
    let (pre, last) = head.rsplit_once('-').unwrap_or((head, ""));
    let (kind, triple_src, target_id) = if clang19_offload_arch(last) {
        let (kind, triple) = pre.split_once('-').unwrap_or((pre, ""));
        (kind, triple, &t[pre.len() + 1..])
    } else {
        let (kind, triple) = head.split_once('-').unwrap_or((head, ""));
        (kind, triple, "")
    };
    let mut parts = triple_src.splitn(4, '-');
    let arch = parts.next().unwrap_or("");
    let vendor = parts.next().unwrap_or("");
    let os = parts.next().unwrap_or("");
    let env = parts.next().unwrap_or("");
    let triple = format!("{arch}-{vendor}-{os}-{env}");
    StdTarget {
        given: given.to_owned(),
        written: format!("{kind}-{triple}-{target_id}"),
        kind: kind.to_owned(),
        kind_valid: matches!(kind, "host" | "openmp" | "hip" | "hipv4"),
        // LLVM 19's triples: the drop-in refuses LLVM main's `amdgpu` ones, as clang 19 does.
        triple_valid: is_llvm19_arch(arch),
        triple,
        target_id: target_id.to_owned(),
    }
}

fn valid_target_text(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'+' | b'-' | b'.'))
}

impl EntryId {
    /// Parses an entry ID; see the [module documentation](self) for the accepted forms.
    pub fn parse(input: &str) -> Result<EntryId, EntryIdError> {
        let err = |kind| EntryIdError {
            input: input.to_owned(),
            kind,
        };
        if input.is_empty() {
            return Err(err(EntryIdErrorKind::Empty));
        }
        // At most six parts (the target keeps its own '-'s), without a vector per ID.
        let mut split = [""; 6];
        let mut n = 0;
        for (slot, part) in split.iter_mut().zip(input.splitn(6, '-')) {
            *slot = part;
            n += 1;
        }
        let parts = &split[..n];
        if parts.len() < 4 {
            return Err(err(EntryIdErrorKind::TooFewComponents {
                found: parts.len(),
            }));
        }
        let kind = OffloadKind::by_name(parts[0]).ok_or_else(|| {
            err(EntryIdErrorKind::BadKind {
                kind: parts[0].to_owned(),
            })
        })?;
        // Everything after the fourth '-' (the environment and target, or a legacy target).
        let after_os = parts[0].len() + parts[1].len() + parts[2].len() + parts[3].len() + 4;
        let rest = input.get(after_os..).unwrap_or("");
        let (env, target_text) = if parts.len() == 4 {
            // `host-x86_64-unknown-linux`: a 3-part triple and no target.
            ("", "")
        } else if kind != OffloadKind::Host && looks_like_processor(parts[4]) {
            // Legacy 3-part triple: `hip-amdgcn-amd-amdhsa-gfx906[:features]`.
            ("", rest)
        } else if parts.len() == 5 {
            (parts[4], "")
        } else {
            (parts[4], parts[5])
        };
        let triple = Triple {
            arch: parts[1].to_owned(),
            vendor: parts[2].to_owned(),
            os: parts[3].to_owned(),
            env: env.to_owned(),
        };
        let triple_text = || parts[1..4].join("-");
        if !is_known_arch(&triple.arch) {
            return Err(err(EntryIdErrorKind::BadTriple {
                triple: triple_text(),
                reason: "unknown architecture",
            }));
        }
        if triple.vendor.is_empty() || triple.os.is_empty() {
            return Err(err(EntryIdErrorKind::BadTriple {
                triple: triple_text(),
                reason: "empty vendor or OS",
            }));
        }
        let ok_component = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        };
        if !ok_component(&triple.vendor) || !ok_component(&triple.os) || !ok_component(&triple.env)
        {
            return Err(err(EntryIdErrorKind::BadTriple {
                triple: triple_text(),
                reason: "unexpected character in vendor, OS or environment",
            }));
        }
        let target = if target_text.is_empty() {
            EntryTarget::None
        } else {
            let name = target_text.split(':').next().unwrap_or("");
            if gfxkit_spec::Processor::by_name(name).is_some() {
                let id = TargetId::parse(target_text)
                    .map_err(|e| err(EntryIdErrorKind::BadTargetId(e)))?;
                if triple.amd_arch().is_some_and(|a| !a.fits(id.processor())) {
                    return Err(err(EntryIdErrorKind::SubarchMismatch {
                        arch: triple.arch.clone(),
                        processor: id.processor().name,
                    }));
                }
                EntryTarget::Known(id)
            } else if valid_target_text(target_text) {
                EntryTarget::Unknown(target_text.to_owned())
            } else {
                return Err(err(EntryIdErrorKind::BadTargetText {
                    text: target_text.to_owned(),
                }));
            }
        };
        Ok(EntryId {
            raw: input.to_owned(),
            kind,
            triple,
            target,
            target_text: target_text.to_owned(),
        })
    }

    /// Builds an ID from parts; its raw form is the canonical one.
    pub fn new(kind: OffloadKind, triple: Triple, target: EntryTarget) -> EntryId {
        let target_text = target.to_string();
        let mut id = EntryId {
            raw: String::new(),
            kind,
            triple,
            target,
            target_text,
        };
        id.raw = id.canonical();
        id
    }

    /// The HIP device ID clang 19 writes for `target`: `hipv4-amdgcn-amd-amdhsa--<target>`.
    pub fn hip(target: TargetId) -> EntryId {
        EntryId::new(
            OffloadKind::HipV4,
            Triple {
                arch: target.processor().arch.as_str().to_owned(),
                vendor: "amd".into(),
                os: "amdhsa".into(),
                env: String::new(),
            },
            EntryTarget::Known(target),
        )
    }

    /// The string exactly as stored in the bundle or given on input.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The offload kind.
    pub fn kind(&self) -> OffloadKind {
        self.kind
    }

    /// The triple.
    pub fn triple(&self) -> &Triple {
        &self.triple
    }

    /// The target part.
    pub fn target(&self) -> &EntryTarget {
        &self.target
    }

    /// The target ID, when the target part names a known processor.
    pub fn target_id(&self) -> Option<&TargetId> {
        self.target.target_id()
    }

    /// Whether this is a host entry.
    pub fn is_host(&self) -> bool {
        self.kind == OffloadKind::Host
    }

    /// The canonical form: `<kind>-<arch>-<vendor>-<os>-<env>-<target>` with the target ID in
    /// canonical form and, for `amdhsa` triples, an empty environment.
    pub fn canonical(&self) -> String {
        let (kind, arch, vendor, os, env, target) = self.canonical_parts();
        format!("{kind}-{arch}-{vendor}-{os}-{env}-{target}")
    }

    /// The parts the canonical form is made of; the one place the canonical rules live, used
    /// by [`canonical`](EntryId::canonical), equality and hashing alike.
    fn canonical_parts(&self) -> (OffloadKind, &str, &str, &str, &str, &EntryTarget) {
        let t = &self.triple;
        let env = if t.is_amdhsa() { "" } else { t.env.as_str() };
        (self.kind, &t.arch, &t.vendor, &t.os, env, &self.target)
    }

    /// The ID as clang-offload-bundler 19 writes it into a bundle when given this ID on its
    /// command line: kind, triple (a 3-part triple gains an empty environment) and the target
    /// exactly as written (feature order and processor
    /// alias kept). clang 19 mangles processors it does not know (`gfx1999:xnack+` becomes
    /// `gfx1999-`) and doubles a host ID that ends in `-` (writing
    /// `host-x86_64-unknown-linux--host-x86_64-unknown-linux--`); gfxkit does not copy that.
    pub fn clang_form(&self) -> String {
        format!(
            "{}-{}-{}-{}-{}-{}",
            self.kind,
            self.triple.arch,
            self.triple.vendor,
            self.triple.os,
            self.triple.env,
            self.target_text
        )
    }

    /// The target part exactly as written (empty when there is none).
    pub fn target_text(&self) -> &str {
        &self.target_text
    }

    /// Whether this ID is the canonical spelling.
    pub fn is_canonical(&self) -> bool {
        self.raw == self.canonical()
    }

    /// Whether two IDs name the same code object target, whatever their spelling: kinds that
    /// serve each other (`hip` and `hipv4`), compatible triples (`amdgcn` and `amdgpu9.0a` for
    /// gfx90a), equal targets. A bundle holding both is ambiguous; `gfxkit bundle` refuses it,
    /// as LLVM 22's bundler refuses duplicate targets.
    pub fn same_target(&self, other: &EntryId) -> bool {
        self.kind.is_compatible(other.kind, false)
            && self.triple.is_compatible(&other.triple)
            && self.target == other.target
    }

    /// Whether an entry with this ID (a code object) may be unbundled for the `requested` ID,
    /// following clang-offload-bundler: compatible kinds ([`OffloadKind::is_compatible`]),
    /// compatible triples ([`Triple::is_compatible`]) and compatible targets
    /// ([`TargetId::check_compatible`], the entry being the code object and the request the
    /// device). Targets unknown to gfxkit match only the same text; two IDs without a target
    /// match each other.
    pub fn is_compatible_with(&self, requested: &EntryId, hip_openmp: bool) -> bool {
        if self.kind == requested.kind
            && self.triple.is_compatible(&requested.triple)
            && self.target == requested.target
        {
            return true;
        }
        if !self.kind.is_compatible(requested.kind, hip_openmp)
            || !self.triple.is_compatible(&requested.triple)
        {
            return false;
        }
        match (&self.target, &requested.target) {
            (EntryTarget::Known(a), EntryTarget::Known(b)) => a.is_compatible(b),
            (EntryTarget::Unknown(a), EntryTarget::Unknown(b)) => a == b,
            (EntryTarget::None, EntryTarget::None) => true,
            _ => false,
        }
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// Serializes as the canonical string.
impl serde::Serialize for EntryId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Serializes as the kind's name (`hipv4`).
impl serde::Serialize for OffloadKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl FromStr for EntryId {
    type Err = EntryIdError;
    fn from_str(s: &str) -> Result<EntryId, EntryIdError> {
        EntryId::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_of_triple_architectures() {
        // The drop-in's `-targets` check and entry ID parsing share this list.
        for a in [
            "amdgcn", "x86_64", "amd64", "arm64", "armv7", "riscv64", "nvptx64",
        ] {
            assert!(is_known_arch(a), "{a}");
            assert!(
                EntryId::parse(&format!("host-{a}-unknown-linux-gnu")).is_ok(),
                "{a}"
            );
        }
        for a in ["", "gfx90a", "amdgpux", "x86"] {
            assert!(!is_known_arch(a), "{a}");
        }
        // LLVM main's amdgpu triples are read, but are not LLVM 19's.
        for a in ["amdgpu", "amdgpu9.0a", "amdgpu12.00"] {
            assert!(is_known_arch(a) && !is_llvm19_arch(a), "{a}");
        }
    }

    fn id(s: &str) -> EntryId {
        EntryId::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn five_part_form_is_canonical() {
        let e = id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        assert_eq!(e.kind(), OffloadKind::HipV4);
        assert_eq!(e.triple().to_string(), "amdgcn-amd-amdhsa-");
        assert_eq!(e.target_id().unwrap().to_string(), "gfx90a:xnack+");
        assert!(e.is_canonical());
    }

    #[test]
    fn legacy_three_part_triple_is_normalised() {
        let e = id("hip-amdgcn-amd-amdhsa-gfx906");
        assert_eq!(e.raw(), "hip-amdgcn-amd-amdhsa-gfx906");
        assert_eq!(e.to_string(), "hip-amdgcn-amd-amdhsa--gfx906");
        assert!(!e.is_canonical());
        let e = id("hipv4-amdgcn-amd-amdhsa-gfx906:sram-ecc+");
        assert_eq!(e.to_string(), "hipv4-amdgcn-amd-amdhsa--gfx906:sramecc+");
    }

    #[test]
    fn clang_form_matches_what_clang_19_writes() {
        // Observed with clang-offload-bundler 19.1.7 (bundling with these -targets).
        for (given, written) in [
            (
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu-",
            ),
            ("host-x86_64-unknown-linux", "host-x86_64-unknown-linux--"),
            (
                "hip-amdgcn-amd-amdhsa-gfx1030",
                "hip-amdgcn-amd-amdhsa--gfx1030",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx906",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
                "hipv4-amdgcn-amd-amdhsa-unknown-gfx906",
            ),
        ] {
            assert_eq!(id(given).clang_form(), written);
        }
        assert_eq!(
            id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-:sramecc+").clang_form(),
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-:sramecc+"
        );
    }

    #[test]
    fn host_spellings() {
        for s in [
            "host-x86_64-unknown-linux-gnu",
            "host-x86_64-unknown-linux--",
            "host-x86_64-unknown-linux-gnu-",
            "host-x86_64-unknown-linux",
        ] {
            let e = id(s);
            assert!(e.is_host(), "{s}");
            assert!(e.target().is_none(), "{s}");
            assert_eq!(e.raw(), s);
        }
        assert_eq!(
            id("host-x86_64-unknown-linux").to_string(),
            "host-x86_64-unknown-linux--"
        );
        assert_eq!(
            id("host-x86_64-unknown-linux-gnu").to_string(),
            "host-x86_64-unknown-linux-gnu-"
        );
    }

    #[test]
    fn unknown_processors_are_kept_intact() {
        let e = id("hipv4-amdgcn-amd-amdhsa--gfx1999:xnack+");
        assert_eq!(e.target(), &EntryTarget::Unknown("gfx1999:xnack+".into()));
        assert_eq!(e.to_string(), "hipv4-amdgcn-amd-amdhsa--gfx1999:xnack+");
        let e = id("hipv4-spirv64-amd-amdhsa--amdgcnspirv");
        assert_eq!(e.target(), &EntryTarget::Unknown("amdgcnspirv".into()));
        let e = id("hipv4-amdgcn-amd-amdhsa--gfx9-generic");
        assert_eq!(e.target_id().unwrap().to_string(), "gfx9-generic");
    }

    #[test]
    fn errors_name_the_bad_part() {
        let k = |s: &str| EntryId::parse(s).unwrap_err().kind;
        assert!(matches!(
            k("hipx-amdgcn-amd-amdhsa--gfx906"),
            EntryIdErrorKind::BadKind { .. }
        ));
        assert!(matches!(
            k("hip-foo-amd-amdhsa--gfx906"),
            EntryIdErrorKind::BadTriple { .. }
        ));
        assert!(matches!(
            k("hip-amdgcn--amdhsa--gfx906"),
            EntryIdErrorKind::BadTriple { .. }
        ));
        assert!(matches!(
            k("hip-amdgcn-amd-amdhsa--gfx906:foo+"),
            EntryIdErrorKind::BadTargetId(_)
        ));
        assert!(matches!(
            k("hip-amdgcn-amd-amdhsa--gfx1030:xnack+"),
            EntryIdErrorKind::BadTargetId(_)
        ));
        assert!(matches!(
            k("hip-amdgcn"),
            EntryIdErrorKind::TooFewComponents { found: 2 }
        ));
        assert!(matches!(k(""), EntryIdErrorKind::Empty));
        assert!(matches!(
            k("hip-amdgcn-amd-amdhsa--gfx 90a"),
            EntryIdErrorKind::BadTargetText { .. }
        ));
        let msg = EntryId::parse("hipx-amdgcn-amd-amdhsa--gfx906")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("unknown offload kind 'hipx'"), "{msg}");
    }

    fn hash_of(e: &EntryId) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(e)
    }

    #[test]
    fn f2_entry_id_env_equality() {
        // Found by fuzzing: `canonical()` drops the environment of amdhsa triples, so equality
        // and hashing must too (fuzz/regressions/target_id/f2-entry-id-env-equality.bin).
        for (a, b) in [
            (
                "hip-amdgcn-amd-amdhsa-gnu-gfx906",
                "hip-amdgcn-amd-amdhsa--gfx906",
            ),
            (
                "openmp-amdgcn-amd-amdhsa-gFxmec-:xnack+",
                "openmp-amdgcn-amd-amdhsa--:xnack+",
            ),
        ] {
            let (a, b) = (id(a), id(b));
            assert_eq!(a.canonical(), b.canonical());
            assert_eq!(a, b);
            assert_eq!(hash_of(&a), hash_of(&b));
            assert_eq!(id(&a.canonical()), a);
        }
        // Where the canonical form keeps the environment, so does equality.
        let (gnu, none) = (
            id("host-x86_64-unknown-linux-gnu"),
            id("host-x86_64-unknown-linux--"),
        );
        assert_ne!(gnu.canonical(), none.canonical());
        assert_ne!(gnu, none);
    }

    #[test]
    fn unbundle_compatibility() {
        let code = id("hipv4-amdgcn-amd-amdhsa--gfx90a");
        assert!(code.is_compatible_with(&id("hip-amdgcn-amd-amdhsa--gfx90a:xnack+"), false));
        let xp = id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        assert!(!xp.is_compatible_with(&id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"), false));
        assert!(!xp.is_compatible_with(&id("hipv4-amdgcn-amd-amdhsa--gfx90a"), false));
        assert!(!code.is_compatible_with(&id("openmp-amdgcn-amd-amdhsa--gfx90a"), false));
        assert!(code.is_compatible_with(&id("openmp-amdgcn-amd-amdhsa--gfx90a"), true));
        assert!(!code.is_compatible_with(&id("hipv4-amdgcn-amd-amdhsa--gfx908"), false));
        let host = id("host-x86_64-unknown-linux--");
        assert!(host.is_compatible_with(&id("host-x86_64-unknown-linux-gnu"), false));
        assert!(!host.is_compatible_with(&code, false));
        let unk = id("hipv4-amdgcn-amd-amdhsa--gfx1999");
        assert!(unk.is_compatible_with(&id("hipv4-amdgcn-amd-amdhsa--gfx1999"), false));
        assert!(!unk.is_compatible_with(&code, false));
    }

    #[test]
    fn amdgpu_triples_with_a_subarch() {
        let e = id("hip-amdgpu12.00-amd-amdhsa--gfx1200");
        assert_eq!(e.triple().arch, "amdgpu12.00");
        assert!(e.triple().is_amdgpu() && e.triple().is_amdhsa());
        assert_eq!(e.target_id().unwrap().to_string(), "gfx1200");
        assert!(e.is_canonical(), "the spelling is kept");
        let e = id("hipv4-amdgpu9.0a-amd-amdhsa-unknown-gfx90a:xnack-");
        assert_eq!(e.to_string(), "hipv4-amdgpu9.0a-amd-amdhsa--gfx90a:xnack-");
        let e = id("hipv4-amdgpu-amd-amdhsa--gfx1100");
        assert_eq!(e.triple().amd_arch().unwrap().subarch(), None);
        // A family subarch carries its members and the generic target.
        assert!(EntryId::parse("hipv4-amdgpu9.4-amd-amdhsa--gfx950").is_ok());
        assert!(EntryId::parse("hipv4-amdgpu9.4-amd-amdhsa--gfx9-4-generic").is_ok());
        let e = EntryId::parse("hipv4-amdgpu9.0a-amd-amdhsa--gfx908").unwrap_err();
        assert_eq!(
            e.kind,
            EntryIdErrorKind::SubarchMismatch {
                arch: "amdgpu9.0a".into(),
                processor: "gfx908"
            }
        );
        assert!(
            e.to_string()
                .contains("amdgpu9.0a does not name processor gfx908"),
            "{e}"
        );
        // A subarch of a newer LLVM with a processor gfxkit does not know stays readable.
        let e = id("hipv4-amdgpu14.00-amd-amdhsa--gfx1400");
        assert_eq!(e.target(), &EntryTarget::Unknown("gfx1400".into()));
        assert!(EntryId::parse("hipv4-amdgpu9.x.y-amd-amdhsa--gfx90a").is_err());
    }

    #[test]
    fn legacy_and_new_triples_name_the_same_target() {
        let legacy = id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
        let new = id("hip-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+");
        assert_ne!(legacy, new, "equality follows the canonical spelling");
        assert!(legacy.same_target(&new) && new.same_target(&legacy));
        assert!(!legacy.same_target(&id("hipv4-amdgcn-amd-amdhsa--gfx90a")));
        assert!(!legacy.same_target(&id("openmp-amdgcn-amd-amdhsa--gfx90a:xnack+")));
        // Unbundling: a request in either spelling finds the entry.
        assert!(new.is_compatible_with(&id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"), false));
        assert!(legacy.is_compatible_with(&id("hipv4-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+"), false));
        assert!(!id("hipv4-amdgpu9.00-amd-amdhsa--gfx900")
            .is_compatible_with(&id("hipv4-amdgpu9.06-amd-amdhsa--gfx906"), false));
        // SPIR-V, with an empty or `unknown` environment.
        let s = id("hip-spirv64-amd-amdhsa-unknown-amdgcnspirv");
        assert_eq!(s.to_string(), "hip-spirv64-amd-amdhsa--amdgcnspirv");
        assert!(s.same_target(&id("hipv4-spirv64-amd-amdhsa--amdgcnspirv")));
    }

    /// Where clang 19 has no quirk (processor names without `-`), the standard form of a parsed
    /// ID is clang 19's standardization of its text.
    #[test]
    fn clang_form_is_the_standardization_of_the_text() {
        let mut n = 0;
        for kind in ["hip", "hipv4", "openmp"] {
            for triple in [
                "amdgcn-amd-amdhsa",
                "amdgcn-amd-amdhsa-",
                "amdgcn-amd-amdhsa--",
                "amdgcn-amd-amdhsa-unknown",
                "amdgpu9.0a-amd-amdhsa-unknown",
                "spirv64-amd-amdhsa-",
            ] {
                for p in gfxkit_spec::Processor::all()
                    .iter()
                    .map(|p| p.name)
                    .filter(|p| !p.contains('-'))
                    .chain([
                        "gfx90a:xnack+",
                        "gfx90a:sramecc-:xnack+",
                        "gfx1250:xnack-",
                        "amdgcnspirv",
                    ])
                {
                    let text = format!("{kind}-{triple}-{p}");
                    if let Ok(id) = EntryId::parse(&text) {
                        assert_eq!(id.clang_form(), standardize(&text).written, "{text}");
                        n += 1;
                    }
                }
            }
        }
        for text in [
            "host-x86_64-unknown-linux-gnu",
            "host-x86_64-unknown-linux",
            "host-x86_64-unknown-linux--",
            "host-x86_64-unknown-linux-gnu-",
            "openmp-x86_64-pc-linux-gnu",
        ] {
            if let Ok(id) = EntryId::parse(text) {
                assert_eq!(id.clang_form(), standardize(text).written, "{text}");
                n += 1;
            }
        }
        assert!(n > 1000, "{n}");
    }
}

/// `-targets` as `clang-offload-bundler` 19 writes and checks them ([`standardize`]).
#[cfg(test)]
mod standardized {
    use super::standardize;

    fn w(s: &str) -> String {
        standardize(s).written
    }

    #[test]
    fn standard_forms_match_clang_19() {
        // Observed with clang-offload-bundler 19.1.7.
        assert_eq!(
            w("host-x86_64-unknown-linux"),
            "host-x86_64-unknown-linux--"
        );
        assert_eq!(
            w("host-x86_64-unknown-linux-gnu"),
            "host-x86_64-unknown-linux-gnu-"
        );
        assert_eq!(
            w("hip-amdgcn-amd-amdhsa-gfx906"),
            "hip-amdgcn-amd-amdhsa--gfx906"
        );
        assert_eq!(
            w("hip-amdgcn-amd-amdhsa--gfx906:xnack-:sramecc+"),
            "hip-amdgcn-amd-amdhsa--gfx906:xnack-:sramecc+"
        );
        assert_eq!(
            w("hip-amdgcn-amd-amdhsa-unknown-gfx906"),
            "hip-amdgcn-amd-amdhsa-unknown-gfx906"
        );
        assert_eq!(
            w("hipv4-amdgcn-amd-amdhsa--gfx9-generic"),
            "hipv4-amdgcn-amd-amdhsa--gfx9-generic"
        );
        assert_eq!(
            w("openmp-x86_64-pc-linux-gnu"),
            "openmp-x86_64-pc-linux-gnu-"
        );
        assert_eq!(
            w("hip-spirv64-amd-amdhsa--amdgcnspirv"),
            "hip-spirv64-amd-amdhsa--amdgcnspirv"
        );
        assert_eq!(
            w("hipv4-amdgcn--amdhsa--gfx906"),
            "hipv4-amdgcn--amdhsa--gfx906"
        );
        assert_eq!(w("hip-amdgcn"), "hip-amdgcn----");
        assert_eq!(
            standardize("hip-foo-amd-amdhsa--gfx906").triple,
            "foo-amd-amdhsa-"
        );
    }

    #[test]
    fn where_clang_19_mangles_gfxkit_keeps_the_id() {
        assert_eq!(
            w("hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+"),
            "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+"
        );
        assert_eq!(
            w("host-x86_64-unknown-linux--"),
            "host-x86_64-unknown-linux--"
        );
        assert_eq!(
            w("host-x86_64-unknown-linux-"),
            "host-x86_64-unknown-linux--"
        );
        assert_eq!(w("hipv4-amdgcn-amd-amdhsa-"), "hipv4-amdgcn-amd-amdhsa--");
        assert_eq!(
            w("hipv4-amdgcn-amd-amdhsa--carrizo"),
            "hipv4-amdgcn-amd-amdhsa--carrizo"
        );
    }

    /// clang-offload-bundler 19 says "invalid target 'hip-amdgpu9.0a-amd-amdhsa--gfx90a',
    /// unknown target triple 'amdgpu9.0a-amd-amdhsa-'": the drop-in keeps refusing LLVM main's
    /// amdgpu triples, which `gfxkit bundle` accepts.
    #[test]
    fn llvm19_refuses_amdgpu_triples() {
        for t in [
            "hip-amdgpu9.0a-amd-amdhsa--gfx90a",
            "hip-amdgpu-amd-amdhsa--gfx1100",
        ] {
            let s = standardize(t);
            assert!(!s.triple_valid, "{t}");
            assert!(s.kind_valid);
        }
        assert!(standardize("hip-amdgcn-amd-amdhsa--gfx90a").triple_valid);
    }
}
