//! The AMDGPU `e_flags` word: decoding for every code-object version, encoding from a target ID.
//!
//! Layouts (`ELF.h`, AMDGPUUsage "ELF Header"):
//!
//! | version       | processor | xnack                    | sramecc                  | other                 |
//! |---------------|-----------|--------------------------|--------------------------|-----------------------|
//! | V2 (LLVM 8+)  | `0xff`    | bit `0x100`              | bit `0x200`              |                       |
//! | V2 (LLVM ≤7)  | none      | bit `0x01`               |                          | trap handler `0x02`   |
//! | V3, PAL, Mesa | `0xff`    | bit `0x100`              | bit `0x200`              |                       |
//! | V4, V5        | `0xff`    | field `0x300`            | field `0xc00`            |                       |
//! | V6 and later  | `0xff`    | field `0x300`            | field `0xc00`            | generic version `0xff000000` |
//!
//! V4 fields: 0 unsupported, 1 any, 2 off, 3 on. In the V2/V3 layouts one bit says "on"; LLVM
//! sets it for *on* and for *any* (a V3 code object built without a setting assumes the feature
//! is enabled), so V2/V3 cannot record *any* and decode a set bit as *on*, a clear bit as *off*.
//! The first V2 layout (`EF_AMDGPU_FEATURE_XNACK_V2` = 0x01, `..._TRAP_HANDLER_V2` = 0x02) had no
//! processor field: its bits overlap `EF_AMDGPU_MACH`. LLVM 8 and later wrote V2 objects with the
//! V3 layout (as the original specification's table for ABI versions 0 and 1 says). gfxkit reads
//! flags holding nothing but bits 0x01/0x02 as the old layout and anything else as the V3 one,
//! and writes V2 flags like LLVM 8+.
//!
//! Decoding never fails: an unknown processor, a reserved bit or a field value that does not fit
//! the processor is kept and reported ([`EFlags::issues`]); only [`EFlags::target_id`] can fail.

use gfxkit_spec::elf::{
    EF_AMDGPU_FEATURE_SRAMECC_ANY_V4, EF_AMDGPU_FEATURE_SRAMECC_OFF_V4,
    EF_AMDGPU_FEATURE_SRAMECC_ON_V4, EF_AMDGPU_FEATURE_SRAMECC_V3, EF_AMDGPU_FEATURE_SRAMECC_V4,
    EF_AMDGPU_FEATURE_TRAP_HANDLER_V2, EF_AMDGPU_FEATURE_XNACK_ANY_V4,
    EF_AMDGPU_FEATURE_XNACK_OFF_V4, EF_AMDGPU_FEATURE_XNACK_ON_V4, EF_AMDGPU_FEATURE_XNACK_V2,
    EF_AMDGPU_FEATURE_XNACK_V3, EF_AMDGPU_FEATURE_XNACK_V4, EF_AMDGPU_GENERIC_VERSION,
    EF_AMDGPU_GENERIC_VERSION_OFFSET, EF_AMDGPU_MACH,
};
use gfxkit_spec::{Arch, CodeObjectVersion, EFlagsLayout, Feature, Processor};
use gfxkit_target_id::{FeatureSetting, TargetId};
use serde::Serialize;
use std::fmt;

/// An `EF_AMDGPU_MACH` value (`e_flags & 0xff`). Open: values no row of the processor table
/// has are kept and print as `unknown (0x..)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ElfMach(pub u8);

impl ElfMach {
    /// `EF_AMDGPU_MACH_NONE`: no processor given.
    pub const NONE: ElfMach = ElfMach(0);

    /// The processor with this value. Values below 0x20 are r600 processors, the others amdgcn.
    pub fn processor(self) -> Option<&'static Processor> {
        if self.0 < 0x20 {
            Processor::by_r600_mach(self.0)
        } else {
            Processor::by_mach(self.0)
        }
    }

    /// The value of `processor`.
    pub fn of(processor: &Processor) -> ElfMach {
        ElfMach(processor.mach)
    }
}

impl fmt::Display for ElfMach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.processor() {
            Some(p) => f.write_str(p.name),
            None if self.0 == 0 => f.write_str("none"),
            None => write!(f, "unknown (0x{:02x})", self.0),
        }
    }
}

impl Serialize for ElfMach {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What `e_flags` says about one target-ID feature (`xnack` or `sramecc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureFlag {
    /// Not supported by the processor (V4+ field value 0), or not recordable in this layout.
    Unsupported,
    /// Any setting (V4+ only).
    Any,
    /// Off.
    Off,
    /// On.
    On,
}

impl FeatureFlag {
    /// The target-ID setting this flag stands for; `None` for [`FeatureFlag::Unsupported`].
    pub fn setting(self) -> Option<FeatureSetting> {
        match self {
            FeatureFlag::Unsupported => None,
            FeatureFlag::Any => Some(FeatureSetting::Any),
            FeatureFlag::Off => Some(FeatureSetting::Off),
            FeatureFlag::On => Some(FeatureSetting::On),
        }
    }

    /// Name as printed (`unsupported`, `any`, `off`, `on`).
    pub fn as_str(self) -> &'static str {
        match self {
            FeatureFlag::Unsupported => "unsupported",
            FeatureFlag::Any => "any",
            FeatureFlag::Off => "off",
            FeatureFlag::On => "on",
        }
    }
}

impl fmt::Display for FeatureFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decoded `e_flags` word. Every field is kept as found; [`EFlags::issues`] lists what does
/// not fit the processor table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EFlags {
    raw: u32,
    layout: EFlagsLayout,
    mach: ElfMach,
    xnack: FeatureFlag,
    sramecc: FeatureFlag,
    trap_handler: bool,
    generic_version: u8,
}

/// Something in an `e_flags` word that does not fit the processor table or the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EFlagsIssue {
    /// `EF_AMDGPU_MACH` is 0.
    NoProcessor,
    /// `EF_AMDGPU_MACH` names no known processor.
    UnknownMach(ElfMach),
    /// Bits outside the layout are set.
    ReservedBits(u32),
    /// A feature the processor does not support is recorded as any/on/off.
    FeatureNotSupported {
        /// The processor.
        processor: &'static str,
        /// The feature.
        feature: Feature,
        /// What the flags say.
        flag: FeatureFlag,
    },
    /// A feature the processor supports is recorded as unsupported (V4+).
    FeatureMissing {
        /// The processor.
        processor: &'static str,
        /// The feature.
        feature: Feature,
    },
    /// xnack recorded as off or unsupported for a processor whose xnack is always on (GFX12.5
    /// and later; LLVM 22 could still write `gfx1250:xnack-`).
    XnackAlwaysOn {
        /// The processor.
        processor: &'static str,
        /// The recorded value.
        flag: FeatureFlag,
    },
    /// A generic target without a generic version (V6), or below the one it needs.
    GenericVersionMissing {
        /// The generic processor.
        processor: &'static str,
    },
    /// A generic version on a processor that is not a generic target.
    GenericVersionOnNonGeneric {
        /// The processor.
        processor: &'static str,
        /// The version found.
        version: u8,
    },
    /// A generic target in a code object older than V6.
    GenericBeforeV6 {
        /// The generic processor.
        processor: &'static str,
    },
}

impl fmt::Display for EFlagsIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EFlagsIssue::NoProcessor => write!(f, "no processor (EF_AMDGPU_MACH is 0)"),
            EFlagsIssue::UnknownMach(m) => {
                write!(f, "unknown processor (EF_AMDGPU_MACH 0x{:02x})", m.0)
            }
            EFlagsIssue::ReservedBits(b) => write!(f, "reserved e_flags bits set: 0x{b:x}"),
            EFlagsIssue::FeatureNotSupported {
                processor,
                feature,
                flag,
            } => write!(
                f,
                "{processor} does not support {} but e_flags record it as {flag}",
                feature.name()
            ),
            EFlagsIssue::FeatureMissing { processor, feature } => write!(
                f,
                "{processor} supports {} but e_flags record it as unsupported",
                feature.name()
            ),
            EFlagsIssue::XnackAlwaysOn { processor, flag } => write!(
                f,
                "{processor} has xnack always on but e_flags record xnack as {flag}"
            ),
            EFlagsIssue::GenericVersionMissing { processor } => {
                write!(f, "generic target {processor} without a generic version")
            }
            EFlagsIssue::GenericVersionOnNonGeneric { processor, version } => write!(
                f,
                "generic version {version} on {processor}, which is not a generic target"
            ),
            EFlagsIssue::GenericBeforeV6 { processor } => write!(
                f,
                "generic target {processor} needs code object V6 or later"
            ),
        }
    }
}

/// Why `e_flags` cannot be turned into a target ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetIdFromFlagsError {
    /// `EF_AMDGPU_MACH` is 0 or unknown.
    #[error("e_flags 0x{raw:08x}: processor is {mach}")]
    UnknownProcessor {
        /// The raw flags.
        raw: u32,
        /// The mach value.
        mach: ElfMach,
    },
    /// A feature is recorded for a processor that does not take it in target IDs.
    #[error("e_flags 0x{raw:08x}: {processor} does not support {feature} but it is recorded as {flag}", feature = .feature.name())]
    UnsupportedFeature {
        /// The raw flags.
        raw: u32,
        /// The processor.
        processor: &'static str,
        /// The feature.
        feature: Feature,
        /// The recorded value.
        flag: FeatureFlag,
    },
}

/// Why a target ID cannot be written as `e_flags` of a code-object version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// Generic targets exist only in code object V6 and later.
    #[error("{processor} is a generic target: it needs code object V6 or later, not {version}")]
    GenericNeedsV6 {
        /// The generic processor.
        processor: &'static str,
        /// The version asked for.
        version: CodeObjectVersion,
    },
    /// Code-object versions before V2 do not exist.
    #[error("there is no code object {0}")]
    BadVersion(CodeObjectVersion),
}

impl EFlags {
    /// Decodes `raw` as found in an HSA code object of version `cov`. Never fails.
    pub fn decode(raw: u32, cov: CodeObjectVersion) -> EFlags {
        EFlags::decode_layout(raw, cov.eflags_layout())
    }

    /// Decodes `raw` in the given layout (PAL and Mesa objects use [`EFlagsLayout::V3`]).
    pub fn decode_layout(raw: u32, layout: EFlagsLayout) -> EFlags {
        let mach = ElfMach((raw & EF_AMDGPU_MACH) as u8);
        let processor = mach.processor();
        let supports = |f: Feature| processor.is_some_and(|p| p.has_target_id_feature(f));
        // V2/V3: a set bit is "on"; a clear bit is "off" where the feature exists.
        let bit = |set: bool, f: Feature| {
            if set {
                FeatureFlag::On
            } else if supports(f) {
                FeatureFlag::Off
            } else {
                FeatureFlag::Unsupported
            }
        };
        let field = |value: u32, any: u32, off: u32, on: u32| {
            if value == on {
                FeatureFlag::On
            } else if value == off {
                FeatureFlag::Off
            } else if value == any {
                FeatureFlag::Any
            } else {
                FeatureFlag::Unsupported
            }
        };
        let (xnack, sramecc, trap_handler, generic_version) = match layout {
            // Old V2 objects (LLVM 7 and before) carry only the xnack and trap-handler bits and
            // no processor; later V2 objects use the V3 bits next to the processor.
            EFlagsLayout::V2
                if raw & !(EF_AMDGPU_FEATURE_XNACK_V2 | EF_AMDGPU_FEATURE_TRAP_HANDLER_V2) == 0 =>
            {
                return EFlags {
                    raw,
                    layout,
                    mach: ElfMach::NONE,
                    xnack: if raw & EF_AMDGPU_FEATURE_XNACK_V2 != 0 {
                        FeatureFlag::On
                    } else {
                        FeatureFlag::Unsupported
                    },
                    sramecc: FeatureFlag::Unsupported,
                    trap_handler: raw & EF_AMDGPU_FEATURE_TRAP_HANDLER_V2 != 0,
                    generic_version: 0,
                };
            }
            EFlagsLayout::V2 | EFlagsLayout::V3 => (
                bit(raw & EF_AMDGPU_FEATURE_XNACK_V3 != 0, Feature::Xnack),
                bit(raw & EF_AMDGPU_FEATURE_SRAMECC_V3 != 0, Feature::Sramecc),
                false,
                0,
            ),
            EFlagsLayout::V4 | EFlagsLayout::V6 => (
                field(
                    raw & EF_AMDGPU_FEATURE_XNACK_V4,
                    EF_AMDGPU_FEATURE_XNACK_ANY_V4,
                    EF_AMDGPU_FEATURE_XNACK_OFF_V4,
                    EF_AMDGPU_FEATURE_XNACK_ON_V4,
                ),
                field(
                    raw & EF_AMDGPU_FEATURE_SRAMECC_V4,
                    EF_AMDGPU_FEATURE_SRAMECC_ANY_V4,
                    EF_AMDGPU_FEATURE_SRAMECC_OFF_V4,
                    EF_AMDGPU_FEATURE_SRAMECC_ON_V4,
                ),
                false,
                if layout == EFlagsLayout::V6 {
                    ((raw & EF_AMDGPU_GENERIC_VERSION) >> EF_AMDGPU_GENERIC_VERSION_OFFSET) as u8
                } else {
                    0
                },
            ),
        };
        EFlags {
            raw,
            layout,
            mach,
            xnack,
            sramecc,
            trap_handler,
            generic_version,
        }
    }

    /// Encodes `id` as the `e_flags` LLVM writes for code object `cov` (HSA). r600 processors
    /// have no feature bits: their flags are the mach value alone.
    pub fn encode(id: &TargetId, cov: CodeObjectVersion) -> Result<u32, EncodeError> {
        if cov.number() < 2 {
            return Err(EncodeError::BadVersion(cov));
        }
        EFlags::encode_layout(id, cov.eflags_layout()).map_err(|e| match e {
            EncodeError::GenericNeedsV6 { processor, .. } => EncodeError::GenericNeedsV6 {
                processor,
                version: cov,
            },
            other => other,
        })
    }

    /// Encodes `id` in the given layout (PAL and Mesa objects use [`EFlagsLayout::V3`]).
    pub fn encode_layout(id: &TargetId, layout: EFlagsLayout) -> Result<u32, EncodeError> {
        let p = id.processor();
        let mut raw = u32::from(p.mach);
        if p.arch == Arch::R600 {
            return Ok(raw);
        }
        if p.is_generic() && layout != EFlagsLayout::V6 {
            return Err(EncodeError::GenericNeedsV6 {
                processor: p.name,
                version: CodeObjectVersion::V5,
            });
        }
        let on_or_any = |f: Feature| {
            p.has_target_id_feature(f)
                && matches!(id.setting(f), FeatureSetting::On | FeatureSetting::Any)
        };
        match layout {
            EFlagsLayout::V2 | EFlagsLayout::V3 => {
                if on_or_any(Feature::Xnack) || p.xnack_always() {
                    raw |= EF_AMDGPU_FEATURE_XNACK_V3;
                }
                if on_or_any(Feature::Sramecc) {
                    raw |= EF_AMDGPU_FEATURE_SRAMECC_V3;
                }
            }
            EFlagsLayout::V4 | EFlagsLayout::V6 => {
                if p.has_target_id_feature(Feature::Xnack) {
                    raw |= match id.setting(Feature::Xnack) {
                        FeatureSetting::Any => EF_AMDGPU_FEATURE_XNACK_ANY_V4,
                        FeatureSetting::Off => EF_AMDGPU_FEATURE_XNACK_OFF_V4,
                        FeatureSetting::On => EF_AMDGPU_FEATURE_XNACK_ON_V4,
                    };
                }
                if p.xnack_always() {
                    // What LLVM 22 writes: "any" by default (LLVM main since late 2026 writes
                    // "on"), on or off for its `gfx1250:xnack+`/`gfx1250:xnack-`.
                    raw |= match id.setting(Feature::Xnack) {
                        FeatureSetting::Any => EF_AMDGPU_FEATURE_XNACK_ANY_V4,
                        FeatureSetting::Off => EF_AMDGPU_FEATURE_XNACK_OFF_V4,
                        FeatureSetting::On => EF_AMDGPU_FEATURE_XNACK_ON_V4,
                    };
                }
                if p.has_target_id_feature(Feature::Sramecc) {
                    raw |= match id.setting(Feature::Sramecc) {
                        FeatureSetting::Any => EF_AMDGPU_FEATURE_SRAMECC_ANY_V4,
                        FeatureSetting::Off => EF_AMDGPU_FEATURE_SRAMECC_OFF_V4,
                        FeatureSetting::On => EF_AMDGPU_FEATURE_SRAMECC_ON_V4,
                    };
                }
                if layout == EFlagsLayout::V6 && p.is_generic() {
                    raw |= u32::from(p.generic_version) << EF_AMDGPU_GENERIC_VERSION_OFFSET;
                }
            }
        }
        Ok(raw)
    }

    /// The raw word.
    pub fn raw(&self) -> u32 {
        self.raw
    }

    /// The layout it was decoded with.
    pub fn layout(&self) -> EFlagsLayout {
        self.layout
    }

    /// `EF_AMDGPU_MACH`.
    pub fn mach(&self) -> ElfMach {
        self.mach
    }

    /// The processor `EF_AMDGPU_MACH` names, if known.
    pub fn processor(&self) -> Option<&'static Processor> {
        self.mach.processor()
    }

    /// What the flags say about `xnack`.
    pub fn xnack(&self) -> FeatureFlag {
        self.xnack
    }

    /// What the flags say about `sramecc`.
    pub fn sramecc(&self) -> FeatureFlag {
        self.sramecc
    }

    /// What the flags say about `feature` (`Unsupported` for features e_flags do not record).
    pub fn feature(&self, feature: Feature) -> FeatureFlag {
        match feature {
            Feature::Xnack => self.xnack,
            Feature::Sramecc => self.sramecc,
            _ => FeatureFlag::Unsupported,
        }
    }

    /// V2 only: the trap handler is enabled.
    pub fn trap_handler(&self) -> bool {
        self.trap_handler
    }

    /// V6 and later: `EF_AMDGPU_GENERIC_VERSION` (0 for non-generic processors).
    pub fn generic_version(&self) -> u8 {
        self.generic_version
    }

    /// Bits set that the layout gives no meaning to.
    pub fn reserved_bits(&self) -> u32 {
        self.raw & !self.layout.known_bits()
    }

    /// Everything that does not fit the processor table or the layout; empty for flags LLVM
    /// writes.
    pub fn issues(&self) -> Vec<EFlagsIssue> {
        let mut out = Vec::new();
        let reserved = self.reserved_bits();
        if reserved != 0 {
            out.push(EFlagsIssue::ReservedBits(reserved));
        }
        let Some(p) = self.processor() else {
            out.push(if self.mach == ElfMach::NONE {
                EFlagsIssue::NoProcessor
            } else {
                EFlagsIssue::UnknownMach(self.mach)
            });
            return out;
        };
        let field_layout = matches!(self.layout, EFlagsLayout::V4 | EFlagsLayout::V6);
        if p.xnack_always() {
            let flag = self.xnack;
            if !matches!(flag, FeatureFlag::Any | FeatureFlag::On) {
                out.push(EFlagsIssue::XnackAlwaysOn {
                    processor: p.name,
                    flag,
                });
            }
        }
        for f in [Feature::Sramecc, Feature::Xnack] {
            if f == Feature::Xnack && p.xnack_always() {
                continue;
            }
            let flag = self.feature(f);
            let supported = p.has_target_id_feature(f);
            if !supported && flag != FeatureFlag::Unsupported {
                out.push(EFlagsIssue::FeatureNotSupported {
                    processor: p.name,
                    feature: f,
                    flag,
                });
            }
            if supported && flag == FeatureFlag::Unsupported && field_layout {
                out.push(EFlagsIssue::FeatureMissing {
                    processor: p.name,
                    feature: f,
                });
            }
        }
        match self.layout {
            EFlagsLayout::V6 => {
                if p.is_generic() && self.generic_version == 0 {
                    out.push(EFlagsIssue::GenericVersionMissing { processor: p.name });
                }
                if !p.is_generic() && self.generic_version != 0 {
                    out.push(EFlagsIssue::GenericVersionOnNonGeneric {
                        processor: p.name,
                        version: self.generic_version,
                    });
                }
            }
            _ if p.is_generic() => out.push(EFlagsIssue::GenericBeforeV6 { processor: p.name }),
            _ => {}
        }
        out
    }

    /// The target ID the flags describe. A feature recorded as unsupported for a processor that
    /// supports it is taken as *any* (and listed by [`EFlags::issues`]); a feature recorded for a
    /// processor that does not support it is an error. Where xnack is always on (GFX12.5 and
    /// later) the xnack field never reaches the target ID.
    pub fn target_id(&self) -> Result<TargetId, TargetIdFromFlagsError> {
        let p = self
            .processor()
            .ok_or(TargetIdFromFlagsError::UnknownProcessor {
                raw: self.raw,
                mach: self.mach,
            })?;
        let mut id = TargetId::new(p);
        for f in [Feature::Sramecc, Feature::Xnack] {
            let flag = self.feature(f);
            if f == Feature::Xnack && p.xnack_always() {
                // Any (LLVM 22) and on (LLVM main's default, and LLVM 22's `+xnack`) give the
                // bare processor; off is only ever LLVM 22's `-xnack` build, named
                // `gfx1250:xnack-` by LLVM and listed by `issues`.
                if flag == FeatureFlag::Off {
                    id = id.with_setting(f, FeatureSetting::Off).map_err(|_| {
                        TargetIdFromFlagsError::UnsupportedFeature {
                            raw: self.raw,
                            processor: p.name,
                            feature: f,
                            flag,
                        }
                    })?;
                }
                continue;
            }
            if p.has_target_id_feature(f) {
                let setting = flag.setting().unwrap_or(FeatureSetting::Any);
                id = id.with_setting(f, setting).map_err(|_| {
                    TargetIdFromFlagsError::UnsupportedFeature {
                        raw: self.raw,
                        processor: p.name,
                        feature: f,
                        flag,
                    }
                })?;
            } else if flag != FeatureFlag::Unsupported {
                return Err(TargetIdFromFlagsError::UnsupportedFeature {
                    raw: self.raw,
                    processor: p.name,
                    feature: f,
                    flag,
                });
            }
        }
        Ok(id)
    }
}

/// How `e_flags` disagree with a target ID (see [`EFlags::check_target`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetMismatch {
    /// The flags name another processor (or none gfxkit knows).
    #[error("e_flags name processor {flags}, the target ID names {id}")]
    Processor {
        /// What `EF_AMDGPU_MACH` names.
        flags: ElfMach,
        /// The target ID's processor.
        id: &'static str,
    },
    /// A feature setting differs.
    #[error("e_flags record {feature} {flags}, the target ID says {feature} {id}", feature = .feature.name())]
    Feature {
        /// The feature.
        feature: Feature,
        /// What the flags record.
        flags: FeatureFlag,
        /// What the target ID says (`any`, `on`, `off`).
        id: &'static str,
    },
}

impl EFlags {
    /// Whether these flags are what a code object built for `id` carries. V4 and later must
    /// match setting for setting (*any* included). V2/V3 flags cannot record *any* (LLVM writes
    /// the bit for *any* as for *on*), so there an *any* in `id` matches either value.
    pub fn check_target(&self, id: &TargetId) -> Result<(), TargetMismatch> {
        let p = id.processor();
        if self.processor() != Some(p) {
            return Err(TargetMismatch::Processor {
                flags: self.mach,
                id: p.name,
            });
        }
        let exact = matches!(self.layout, EFlagsLayout::V4 | EFlagsLayout::V6);
        if p.xnack_always() {
            // The bare ID fits "any" (LLVM 22), "on" (LLVM main) and a field recorded as
            // unsupported (read as any, listed by `issues`); LLVM 22's `gfx1250:xnack±` fits
            // only its own setting.
            let flag = self.xnack;
            let ok = match (id.setting(Feature::Xnack), flag.setting()) {
                (FeatureSetting::Any, s) => !matches!(s, Some(FeatureSetting::Off)) || !exact,
                (w, s) => s == Some(w),
            };
            if !ok {
                return Err(TargetMismatch::Feature {
                    feature: Feature::Xnack,
                    flags: flag,
                    id: id.setting(Feature::Xnack).as_str(),
                });
            }
        }
        for f in [Feature::Sramecc, Feature::Xnack] {
            if !p.has_target_id_feature(f) {
                continue;
            }
            let flag = self.feature(f);
            let want = id.setting(f);
            let ok = match (flag.setting(), want) {
                // Recorded as unsupported for a processor that has it: read as any.
                (None, w) => w == FeatureSetting::Any || !exact,
                (Some(_), FeatureSetting::Any) if !exact => true,
                (Some(s), w) => s == w,
            };
            if !ok {
                return Err(TargetMismatch::Feature {
                    feature: f,
                    flags: flag,
                    id: match want {
                        FeatureSetting::Any => "any",
                        FeatureSetting::On => "on",
                        FeatureSetting::Off => "off",
                    },
                });
            }
        }
        Ok(())
    }
}

impl fmt::Display for EFlags {
    /// `0x0000052f (gfx906, xnack any, sramecc any)`, in the style of `llvm-readelf -h`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x} ({}", self.raw, self.mach)?;
        for (name, flag) in [("xnack", self.xnack), ("sramecc", self.sramecc)] {
            if flag != FeatureFlag::Unsupported {
                write!(f, ", {name} {flag}")?;
            }
        }
        if self.trap_handler {
            f.write_str(", trap handler")?;
        }
        if self.generic_version != 0 {
            write!(f, ", generic v{}", self.generic_version)?;
        }
        let reserved = self.reserved_bits();
        if reserved != 0 {
            write!(f, ", reserved 0x{reserved:x}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gfxkit_spec::PROCESSORS;

    fn id(s: &str) -> TargetId {
        TargetId::parse(s).unwrap()
    }

    #[test]
    fn values_llvm19_writes() {
        // Seen from llc-19 (code object V5) and listed in formats.md.
        for (tid, raw) in [
            ("gfx900", 0x12c),
            ("gfx906", 0x52f),
            ("gfx908", 0x530),
            ("gfx90a", 0x53f),
            ("gfx942", 0x54c),
            ("gfx1030", 0x36),
            ("gfx1100", 0x41),
            ("gfx1151", 0x4a),
            ("gfx1201", 0x4e),
            ("gfx90a:sramecc+:xnack-", 0xe3f),
            ("gfx942:xnack+", 0x74c),
            ("gfx906:xnack+", 0x72f),
        ] {
            assert_eq!(
                EFlags::encode(&id(tid), CodeObjectVersion::V5),
                Ok(raw),
                "{tid}"
            );
            let d = EFlags::decode(raw, CodeObjectVersion::V5);
            assert_eq!(d.target_id().unwrap().to_string(), tid);
            assert!(d.issues().is_empty(), "{tid}: {:?}", d.issues());
        }
        assert_eq!(
            EFlags::encode(&id("gfx9-generic"), CodeObjectVersion::V6),
            Ok(0x0100_0151)
        );
        assert_eq!(
            EFlags::encode(&id("gfx10-3-generic"), CodeObjectVersion::V6),
            Ok(0x0100_0053)
        );
        assert!(matches!(
            EFlags::encode(&id("gfx9-generic"), CodeObjectVersion::V5),
            Err(EncodeError::GenericNeedsV6 { .. })
        ));
    }

    #[test]
    fn v2_v3_bits() {
        let v3 = CodeObjectVersion::V3;
        // LLVM sets the V3 bit for "on" and for "any".
        assert_eq!(EFlags::encode(&id("gfx906"), v3), Ok(0x32f));
        assert_eq!(EFlags::encode(&id("gfx906:xnack-"), v3), Ok(0x22f));
        assert_eq!(EFlags::encode(&id("gfx906:sramecc-:xnack-"), v3), Ok(0x2f));
        assert_eq!(EFlags::encode(&id("gfx1030"), v3), Ok(0x36));
        let d = EFlags::decode(0x12f, v3);
        assert_eq!(d.xnack(), FeatureFlag::On);
        assert_eq!(d.sramecc(), FeatureFlag::Off);
        assert_eq!(d.target_id().unwrap().to_string(), "gfx906:sramecc-:xnack+");
        let v2 = CodeObjectVersion::V2;
        // V2 as LLVM 8+ wrote it: the V3 bits next to the processor.
        assert_eq!(EFlags::encode(&id("gfx801:xnack+"), v2), Ok(0x128));
        let d = EFlags::decode(0x128, v2);
        assert_eq!(d.target_id().unwrap().to_string(), "gfx801:xnack+");
        assert!(!d.trap_handler());
        assert_eq!(EFlags::decode(0x28, v2).xnack(), FeatureFlag::Off);
        // The first V2 layout: xnack 0x01, trap handler 0x02, no processor.
        let d = EFlags::decode(0x03, v2);
        assert!(d.trap_handler());
        assert_eq!(d.xnack(), FeatureFlag::On);
        assert_eq!(d.mach(), ElfMach::NONE);
        assert_eq!(d.issues(), vec![EFlagsIssue::NoProcessor]);
        assert_eq!(d.to_string(), "0x00000003 (none, xnack on, trap handler)");
        let d = EFlags::decode(0x02, v2);
        assert!(d.trap_handler());
        assert_eq!(d.xnack(), FeatureFlag::Unsupported);
    }

    #[test]
    fn unknown_and_reserved_values_decode() {
        let d = EFlags::decode(0x0000_77fe, CodeObjectVersion::V5);
        assert_eq!(d.mach(), ElfMach(0xfe));
        assert_eq!(d.mach().to_string(), "unknown (0xfe)");
        assert_eq!(d.reserved_bits(), 0x7000);
        assert!(d.issues().contains(&EFlagsIssue::ReservedBits(0x7000)));
        assert!(d
            .issues()
            .contains(&EFlagsIssue::UnknownMach(ElfMach(0xfe))));
        assert!(matches!(
            d.target_id(),
            Err(TargetIdFromFlagsError::UnknownProcessor { .. })
        ));
        assert_eq!(ElfMach(0).to_string(), "none");
        assert_eq!(ElfMach(0x27).to_string(), "unknown (0x27)");
        assert_eq!(ElfMach(0x0f).to_string(), "cayman");
        // xnack recorded for a processor without it.
        let d = EFlags::decode(0x336, CodeObjectVersion::V5);
        assert!(d.target_id().is_err());
        assert_eq!(d.issues().len(), 1);
        // Generic version on a non-generic processor, and missing on a generic one.
        let d = EFlags::decode(0x0200_0036, CodeObjectVersion::V6);
        assert_eq!(d.generic_version(), 2);
        assert!(!d.issues().is_empty());
        let d = EFlags::decode(0x151, CodeObjectVersion::V6);
        assert_eq!(
            d.issues(),
            vec![EFlagsIssue::GenericVersionMissing {
                processor: "gfx9-generic"
            }]
        );
        // In V5 the generic-version byte is reserved.
        let d = EFlags::decode(0x0100_0151, CodeObjectVersion::V5);
        assert_eq!(d.reserved_bits(), 0x0100_0000);
        assert_eq!(d.generic_version(), 0);
    }

    #[test]
    fn check_target_is_exact_from_v4_and_lenient_for_any_before() {
        let v5 = EFlags::decode(0xe3f, CodeObjectVersion::V5);
        assert_eq!(v5.check_target(&id("gfx90a:sramecc+:xnack-")), Ok(()));
        assert!(matches!(
            v5.check_target(&id("gfx90a")),
            Err(TargetMismatch::Feature { .. })
        ));
        assert!(matches!(
            v5.check_target(&id("gfx906")),
            Err(TargetMismatch::Processor { .. })
        ));
        let e = v5.check_target(&id("gfx90a:xnack+")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "e_flags record sramecc on, the target ID says sramecc any"
        );
        // V3: "gfx906" (any) was written as both bits set.
        let v3 = EFlags::decode(0x32f, CodeObjectVersion::V3);
        assert_eq!(v3.check_target(&id("gfx906")), Ok(()));
        assert_eq!(v3.check_target(&id("gfx906:xnack+")), Ok(()));
        assert!(v3.check_target(&id("gfx906:xnack-")).is_err());
        for i in all_ids() {
            for cov in [
                CodeObjectVersion::V3,
                CodeObjectVersion::V5,
                CodeObjectVersion::V6,
            ] {
                if let Ok(raw) = EFlags::encode(&i, cov) {
                    assert_eq!(
                        EFlags::decode(raw, cov).check_target(&i),
                        Ok(()),
                        "{i} {cov}"
                    );
                }
            }
        }
    }

    #[test]
    fn display_reads_like_readelf() {
        let d = EFlags::decode(0xe3f, CodeObjectVersion::V5);
        assert_eq!(d.to_string(), "0x00000e3f (gfx90a, xnack off, sramecc on)");
        let d = EFlags::decode(0x0100_0151, CodeObjectVersion::V6);
        assert_eq!(
            d.to_string(),
            "0x01000151 (gfx9-generic, xnack any, generic v1)"
        );
    }

    /// Every row x every setting of its target-ID features.
    fn all_ids() -> Vec<TargetId> {
        PROCESSORS.iter().flat_map(TargetId::variants).collect()
    }

    #[test]
    fn encode_decode_round_trip_v4_v5_v6() {
        let ids = all_ids();
        assert!(ids.len() > PROCESSORS.len());
        let mut checked = 0;
        for cov in [
            CodeObjectVersion::V4,
            CodeObjectVersion::V5,
            CodeObjectVersion::V6,
        ] {
            for i in &ids {
                let raw = match EFlags::encode(i, cov) {
                    Ok(raw) => raw,
                    Err(EncodeError::GenericNeedsV6 { .. }) => {
                        assert!(i.processor().is_generic() && cov != CodeObjectVersion::V6);
                        continue;
                    }
                    Err(e) => panic!("{i}: {e}"),
                };
                let d = EFlags::decode(raw, cov);
                assert_eq!(d.raw(), raw);
                assert_eq!(d.target_id().as_ref(), Ok(i), "{i} {cov} {raw:#x}");
                assert!(d.issues().is_empty(), "{i} {cov}: {:?}", d.issues());
                checked += 1;
            }
        }
        assert!(checked > 3 * PROCESSORS.len());
    }

    #[test]
    fn v3_round_trip_where_representable() {
        // V3 cannot say "any": it reads back as "on".
        for i in all_ids() {
            if i.processor().is_generic() {
                continue;
            }
            let raw = EFlags::encode(&i, CodeObjectVersion::V3).unwrap();
            let back = EFlags::decode(raw, CodeObjectVersion::V3)
                .target_id()
                .unwrap();
            for f in i.processor().target_id_features {
                let want = match i.setting(*f) {
                    FeatureSetting::Off => FeatureSetting::Off,
                    _ => FeatureSetting::On,
                };
                assert_eq!(back.setting(*f), want, "{i}");
            }
            assert_eq!(back.processor(), i.processor());
        }
    }

    /// The words ROCm 7.2.2's LLVM 22 writes for gfx1250 (code object V6): xnack any by default,
    /// on/off when asked; LLVM main writes on. Off, which only LLVM 22's `-xnack` writes, is the
    /// `gfx1250:xnack-` LLVM names the object; any and on are the bare processor.
    #[test]
    fn gfx1250_xnack_field_reaches_the_target_id_only_when_off() {
        let gfx1250 = TargetId::parse("gfx1250").unwrap();
        assert_eq!(EFlags::encode(&gfx1250, CodeObjectVersion::V6), Ok(0x549));
        let ecc = TargetId::parse("gfx1250:sramecc+").unwrap();
        assert_eq!(EFlags::encode(&ecc, CodeObjectVersion::V6), Ok(0xd49));
        for (raw, want, clean) in [
            (0x549, "gfx1250", true),
            (0x749, "gfx1250", true),
            (0xf49, "gfx1250:sramecc+", true),
            (0x649, "gfx1250:xnack-", false),
            (0xe49, "gfx1250:sramecc+:xnack-", false),
            (0x049, "gfx1250", false),
            (0x95a, "gfx1251:sramecc-", true),
        ] {
            let d = EFlags::decode(raw, CodeObjectVersion::V6);
            assert_eq!(d.target_id().unwrap().to_string(), want, "{raw:#x}");
            assert_eq!(d.issues().is_empty(), clean, "{raw:#x}: {:?}", d.issues());
            assert!(d.check_target(&d.target_id().unwrap()).is_ok());
        }
        let issues = EFlags::decode(0x649, CodeObjectVersion::V6).issues();
        assert_eq!(
            issues,
            [EFlagsIssue::XnackAlwaysOn {
                processor: "gfx1250",
                flag: FeatureFlag::Off
            }]
        );
        assert!(issues[0].to_string().contains("always on"));
        // Round trips of LLVM 22's spellings, and what each fits.
        for (id, raw) in [
            ("gfx1250:xnack-", 0x649),
            ("gfx1250:xnack+", 0x749),
            ("gfx1251:sramecc+:xnack-", 0xe5a),
        ] {
            let id = TargetId::parse(id).unwrap();
            assert_eq!(EFlags::encode(&id, CodeObjectVersion::V6), Ok(raw), "{id}");
            assert!(EFlags::decode(raw, CodeObjectVersion::V6)
                .check_target(&id)
                .is_ok());
        }
        let off = EFlags::decode(0x649, CodeObjectVersion::V6);
        assert!(
            off.check_target(&gfx1250).is_err(),
            "bare gfx1250 is not an xnack- object"
        );
        let on = EFlags::decode(0x749, CodeObjectVersion::V6);
        assert!(on.check_target(&gfx1250).is_ok());
        assert!(on
            .check_target(&TargetId::parse("gfx1250:xnack-").unwrap())
            .is_err());
        // gfx12-5-generic: generic version 1 in the top byte.
        let g = TargetId::parse("gfx12-5-generic").unwrap();
        assert_eq!(EFlags::encode(&g, CodeObjectVersion::V6), Ok(0x0100_055b));
    }
}
