//! Target IDs: `<processor>(:<feature>(+|-))*`, as defined by LLVM's AMDGPU documentation
//! ("Target IDs") and used by clang, the offload bundler, comgr and the HIP runtime.
//!
//! A [`TargetId`] names a processor from the [processor table](gfxkit_spec::PROCESSORS) and the
//! setting of each target-ID feature it supports (`xnack`, `sramecc`): absent means *any*, `+`
//! means *on*, `-` means *off*. Parsing accepts alternative processor names and features in any
//! order; [`Display`](std::fmt::Display) always prints the canonical form (primary processor
//! name, features in alphabetical order).
//!
//! - [`TargetId::parse`] / [`FromStr`]: parse with errors that name the bad token and its byte
//!   position.
//! - [`TargetId::check_compatible`]: may a code object built for one ID run on a device with another.
//! - [`check_conflicts`]: the rule the bundler applies to the set of IDs it bundles together.
//! - [`triple`]: AMDGPU triple architectures (`amdgcn`, `amdgpu9.0a`) and ISA names
//!   (`amdgpu9.0a-amd-amdhsa--gfx90a`).
//!
//! ```
//! use gfxkit_target_id::{TargetId, FeatureSetting};
//! use gfxkit_spec::Feature;
//!
//! let id: TargetId = "gfx90a:xnack-:sramecc+".parse().unwrap();
//! assert_eq!(id.to_string(), "gfx90a:sramecc+:xnack-");
//! assert_eq!(id.setting(Feature::Xnack), FeatureSetting::Off);
//!
//! let device: TargetId = "gfx90a:sramecc+:xnack-".parse().unwrap();
//! let any: TargetId = "gfx90a".parse().unwrap();
//! assert!(any.is_compatible(&device));
//! assert!(id.is_compatible(&device));
//! ```

#![forbid(unsafe_code)]

pub mod triple;

use gfxkit_spec::{Feature, Processor};
use std::fmt;
use std::str::FromStr;

/// The setting of one target-ID feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FeatureSetting {
    /// Not named in the ID: code works with the feature on or off.
    #[default]
    Any,
    /// `feature+`.
    On,
    /// `feature-`.
    Off,
}

impl FeatureSetting {
    /// The sign written after the feature name, or `None` for [`FeatureSetting::Any`].
    pub fn sign(self) -> Option<char> {
        match self {
            FeatureSetting::Any => None,
            FeatureSetting::On => Some('+'),
            FeatureSetting::Off => Some('-'),
        }
    }

    /// A word for messages: `any`, `on`, `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            FeatureSetting::Any => "any",
            FeatureSetting::On => "on",
            FeatureSetting::Off => "off",
        }
    }
}

impl fmt::Display for FeatureSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

const NFEATURES: usize = Feature::ALL.len();

fn feature_index(feature: Feature) -> usize {
    Feature::ALL
        .iter()
        .position(|f| *f == feature)
        .expect("Feature::ALL lists every feature")
}

/// A processor and the settings of its target-ID features.
///
/// Equality and hashing are on the canonical form: `gfx801:xnack+` parsed from `carrizo:xnack+`
/// is equal to one parsed from `gfx906:xnack+`.
#[derive(Clone, Copy)]
pub struct TargetId {
    processor: &'static Processor,
    settings: [FeatureSetting; NFEATURES],
}

impl PartialEq for TargetId {
    fn eq(&self, other: &TargetId) -> bool {
        self.processor.name == other.processor.name && self.settings == other.settings
    }
}

impl Eq for TargetId {}

impl std::hash::Hash for TargetId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.processor.name.hash(state);
        self.settings.hash(state);
    }
}

impl fmt::Debug for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TargetId({self})")
    }
}

/// What was wrong with a target ID string. Positions are byte offsets into the parsed string.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetIdErrorKind {
    /// The string is empty.
    Empty,
    /// The processor name is not in the processor table.
    UnknownProcessor {
        /// The name as written.
        name: String,
    },
    /// A `:` is followed by nothing, or by a lone sign.
    EmptyFeature,
    /// The feature has no `+` or `-` after its name.
    MissingSign {
        /// The feature as written.
        feature: String,
    },
    /// The feature name is not a known target feature.
    UnknownFeature {
        /// The feature as written.
        feature: String,
    },
    /// The feature exists but the processor does not support it in target IDs.
    UnsupportedFeature {
        /// Primary processor name.
        processor: &'static str,
        /// The feature.
        feature: Feature,
    },
    /// The feature is a target feature but never part of a target ID (`cumode`, `tgsplit`, ...).
    NotATargetIdFeature {
        /// The feature.
        feature: Feature,
    },
    /// `xnack+` or `xnack-` for a processor whose xnack is always on and that no LLVM release
    /// wrote an xnack setting for (gfx12-5-generic, gfx1250-strict, gfx1310, gfx13-generic:
    /// LLVM 23 and later refuse one). gfx1250 and gfx1251 take the setting ROCm 7.2.2's LLVM 22
    /// still wrote ([`TargetId::legacy_xnack`]).
    XnackAlwaysOn {
        /// Primary processor name.
        processor: &'static str,
    },
    /// The feature is named twice.
    DuplicateFeature {
        /// The feature.
        feature: Feature,
    },
}

/// An invalid target ID: the string, what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetIdError {
    /// The whole string that failed to parse (empty for [`TargetId::with_setting`] errors).
    pub input: String,
    /// Byte offset of the offending token in `input`.
    pub position: usize,
    /// What was wrong.
    pub kind: TargetIdErrorKind,
}

impl fmt::Display for TargetIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TargetIdErrorKind::*;
        if !self.input.is_empty() {
            write!(f, "invalid target ID '{}': ", self.input)?;
        }
        match &self.kind {
            Empty => write!(f, "empty target ID, expected a processor name such as gfx90a"),
            UnknownProcessor { name } => write!(
                f,
                "unknown processor '{name}' at position {} (see `gfxkit target list`)",
                self.position
            ),
            EmptyFeature => write!(
                f,
                "empty feature at position {}, expected a feature such as xnack+ after ':'",
                self.position
            ),
            MissingSign { feature } => write!(
                f,
                "feature '{feature}' at position {} has no sign, expected '{feature}+' or '{feature}-'",
                self.position
            ),
            UnknownFeature { feature } => write!(
                f,
                "unknown feature '{feature}' at position {}, expected xnack or sramecc",
                self.position
            ),
            UnsupportedFeature { processor, feature } => {
                let supported = Processor::by_name(processor)
                    .map(|p| {
                        p.target_id_features
                            .iter()
                            .map(|f| f.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                write!(
                    f,
                    "processor {processor} does not support feature '{}' (position {}); ",
                    feature.name(),
                    self.position
                )?;
                if supported.is_empty() {
                    write!(f, "it takes no target-ID features")
                } else {
                    write!(f, "its target-ID features are: {supported}")
                }
            }
            NotATargetIdFeature { feature } => write!(
                f,
                "feature '{}' at position {} is not a target-ID feature (only xnack and sramecc are)",
                feature.name(),
                self.position
            ),
            XnackAlwaysOn { processor } => write!(
                f,
                "processor {processor} has xnack always on (position {}): its target IDs carry \
                 no xnack setting (only gfx1250 and gfx1251 IDs written by LLVM 22 do)",
                self.position
            ),
            DuplicateFeature { feature } => write!(
                f,
                "feature '{}' given twice (second at position {})",
                feature.name(),
                self.position
            ),
        }
    }
}

impl std::error::Error for TargetIdError {}

impl TargetId {
    /// A target ID for `processor` with every feature set to [`FeatureSetting::Any`].
    pub fn new(processor: &'static Processor) -> TargetId {
        TargetId {
            processor,
            settings: [FeatureSetting::Any; NFEATURES],
        }
    }

    /// Every target ID `processor` can take: each combination of [`FeatureSetting::Any`],
    /// [`FeatureSetting::On`] and [`FeatureSetting::Off`] over its target-ID features
    /// (3^n IDs for n features; the first feature varies slowest, `Any` first).
    pub fn variants(processor: &'static Processor) -> Vec<TargetId> {
        let mut ids = vec![TargetId::new(processor)];
        for &feature in processor.target_id_features {
            ids = ids
                .into_iter()
                .flat_map(|id| {
                    [FeatureSetting::Any, FeatureSetting::On, FeatureSetting::Off].map(|s| {
                        let mut v = id;
                        v.settings[feature_index(feature)] = s;
                        v
                    })
                })
                .collect();
        }
        ids
    }

    /// Parses a target ID. The processor may be a primary or alternative name; features may come
    /// in any order; `sram-ecc` is accepted for `sramecc`.
    pub fn parse(input: &str) -> Result<TargetId, TargetIdError> {
        let err = |position: usize, kind: TargetIdErrorKind| TargetIdError {
            input: input.to_owned(),
            position,
            kind,
        };
        if input.is_empty() {
            return Err(err(0, TargetIdErrorKind::Empty));
        }
        let mut parts = input.split(':');
        let name = parts.next().unwrap_or_default();
        if name.is_empty() {
            return Err(err(0, TargetIdErrorKind::Empty));
        }
        let processor = Processor::by_name(name).ok_or_else(|| {
            err(
                0,
                TargetIdErrorKind::UnknownProcessor {
                    name: name.to_owned(),
                },
            )
        })?;
        let mut id = TargetId::new(processor);
        let mut position = name.len() + 1;
        for token in parts {
            let here = position;
            position += token.len() + 1;
            let (feature_name, setting) = match token.as_bytes().last() {
                None => return Err(err(here, TargetIdErrorKind::EmptyFeature)),
                Some(b'+') => (&token[..token.len() - 1], FeatureSetting::On),
                Some(b'-') => (&token[..token.len() - 1], FeatureSetting::Off),
                Some(_) => {
                    return Err(err(
                        here,
                        TargetIdErrorKind::MissingSign {
                            feature: token.to_owned(),
                        },
                    ))
                }
            };
            if feature_name.is_empty() {
                return Err(err(here, TargetIdErrorKind::EmptyFeature));
            }
            let feature = Feature::by_name(feature_name).ok_or_else(|| {
                err(
                    here,
                    TargetIdErrorKind::UnknownFeature {
                        feature: feature_name.to_owned(),
                    },
                )
            })?;
            if id.setting(feature) != FeatureSetting::Any {
                return Err(err(here, TargetIdErrorKind::DuplicateFeature { feature }));
            }
            id = id
                .with_setting(feature, setting)
                .map_err(|e| TargetIdError {
                    input: input.to_owned(),
                    position: here,
                    kind: e.kind,
                })?;
        }
        Ok(id)
    }

    /// Returns this ID with `feature` set to `setting`. Fails when the processor does not take
    /// `feature` in its target IDs (setting [`FeatureSetting::Any`] never fails for a known
    /// target-ID feature the processor supports, and is a no-op otherwise). Where xnack is
    /// always on ([`Processor::xnack_always`]) an xnack setting is kept only for processors
    /// LLVM 22 knows (gfx1250, gfx1251), which still wrote `:xnack+`/`:xnack-`
    /// ([`TargetId::legacy_xnack`]); for the others it is an error.
    pub fn with_setting(
        mut self,
        feature: Feature,
        setting: FeatureSetting,
    ) -> Result<TargetId, TargetIdError> {
        let fail = |kind| TargetIdError {
            input: String::new(),
            position: 0,
            kind,
        };
        if !matches!(feature, Feature::Xnack | Feature::Sramecc) {
            if setting == FeatureSetting::Any {
                return Ok(self);
            }
            return Err(fail(TargetIdErrorKind::NotATargetIdFeature { feature }));
        }
        if feature == Feature::Xnack && self.processor.xnack_always() {
            // ROCm 7.2.2's LLVM 22 still takes `+xnack`/`-xnack` for gfx1250 and gfx1251 and
            // names the code object `gfx1250:xnack+`/`gfx1250:xnack-`; the setting is kept as
            // written (it decides what the runtime matches). LLVM 23 and later refuse it.
            if setting != FeatureSetting::Any && !self.processor.in_llvm(22) {
                return Err(fail(TargetIdErrorKind::XnackAlwaysOn {
                    processor: self.processor.name,
                }));
            }
            self.settings[feature_index(feature)] = setting;
            return Ok(self);
        }
        if !self.processor.has_target_id_feature(feature) {
            if setting == FeatureSetting::Any {
                return Ok(self);
            }
            return Err(fail(TargetIdErrorKind::UnsupportedFeature {
                processor: self.processor.name,
                feature,
            }));
        }
        self.settings[feature_index(feature)] = setting;
        Ok(self)
    }

    /// The processor's table row.
    pub fn processor(&self) -> &'static Processor {
        self.processor
    }

    /// The setting of `feature` (Any for features the processor does not take).
    pub fn setting(&self, feature: Feature) -> FeatureSetting {
        self.settings[feature_index(feature)]
    }

    /// The features set to on or off, in canonical (alphabetical) order.
    pub fn features(&self) -> impl Iterator<Item = (Feature, FeatureSetting)> + '_ {
        Feature::ALL
            .iter()
            .map(|f| (*f, self.setting(*f)))
            .filter(|(_, s)| *s != FeatureSetting::Any)
    }

    /// The xnack setting of an ID for a processor whose xnack is always on (gfx1250,
    /// gfx1251), which only ROCm 7.2.2's LLVM 22 writes (`gfx1250:xnack-`); `None` when the
    /// ID has none or the processor takes xnack in its target IDs.
    pub fn legacy_xnack(&self) -> Option<FeatureSetting> {
        let s = self.setting(Feature::Xnack);
        (self.processor.xnack_always() && s != FeatureSetting::Any).then_some(s)
    }

    /// What is worth telling about an ID that parses: for now, an xnack setting on a processor
    /// whose xnack is always on ([`TargetId::legacy_xnack`]).
    pub fn notes(&self) -> Vec<TargetIdNote> {
        self.legacy_xnack()
            .map(|setting| TargetIdNote::XnackAlwaysOn {
                processor: self.processor.name,
                setting,
            })
            .into_iter()
            .collect()
    }

    /// Whether some feature is set to on or off.
    pub fn has_features(&self) -> bool {
        self.features().next().is_some()
    }

    /// The same processor with every feature set to any.
    pub fn without_features(&self) -> TargetId {
        TargetId::new(self.processor)
    }

    /// Whether the processor is a generic target (`gfx9-generic`, ...).
    pub fn is_generic(&self) -> bool {
        self.processor.is_generic()
    }

    /// Whether a code object built for `self` may run on a device whose ID is `device`; on
    /// failure, the reason. The rule of the offload bundler and comgr: the processors are the
    /// same, and every feature the code object sets to on or off has the same setting on the
    /// device (a device that leaves it at any does not match). Features the code object leaves
    /// at any match every device.
    pub fn check_compatible(&self, device: &TargetId) -> Result<(), Incompatibility> {
        if self.processor.name != device.processor.name {
            return Err(Incompatibility::Processor {
                code_object: self.processor.name,
                device: device.processor.name,
            });
        }
        for (feature, wanted) in self.features() {
            let have = device.setting(feature);
            if have != wanted && feature == Feature::Xnack && self.processor.xnack_always() {
                return Err(Incompatibility::XnackAlwaysOn {
                    processor: self.processor.name,
                    code_object: wanted,
                });
            }
            if have != wanted {
                return Err(Incompatibility::Feature {
                    feature,
                    code_object: wanted,
                    device: have,
                });
            }
        }
        Ok(())
    }

    /// Whether [`check_compatible`](Self::check_compatible) succeeds.
    pub fn is_compatible(&self, device: &TargetId) -> bool {
        self.check_compatible(device).is_ok()
    }

    /// Whether two IDs can describe the same configuration: the same processor, and no
    /// feature set to on in one and off in the other. This is the rule for IDs a user writes
    /// to *select* code objects (`gfxkit extract --target`, `gfxkit prune --keep`): `gfx90a`
    /// selects `gfx90a:xnack+` and `gfx90a:xnack-`; `gfx90a:xnack+` selects `gfx90a` and
    /// `gfx90a:sramecc+:xnack+` but not `gfx90a:xnack-`.
    pub fn overlaps(&self, other: &TargetId) -> bool {
        self.processor.name == other.processor.name
            && Feature::ALL.iter().all(|f| {
                let (a, b) = (self.setting(*f), other.setting(*f));
                a == FeatureSetting::Any || b == FeatureSetting::Any || a == b
            })
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.processor.name)?;
        for (feature, setting) in self.features() {
            let sign = setting.sign().unwrap_or('?');
            write!(f, ":{}{sign}", feature.name())?;
        }
        Ok(())
    }
}

impl FromStr for TargetId {
    type Err = TargetIdError;
    fn from_str(s: &str) -> Result<TargetId, TargetIdError> {
        TargetId::parse(s)
    }
}

impl serde::Serialize for TargetId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a code object's target ID does not fit a device's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Incompatibility {
    /// Different processors.
    Processor {
        /// The code object's processor.
        code_object: &'static str,
        /// The device's processor.
        device: &'static str,
    },
    /// The code object names an xnack setting (LLVM 22's `gfx1250:xnack-`) for a processor
    /// whose xnack is always on: devices of it never name one (the runtime's ISA name is the
    /// bare `gfx1250`), so nothing matches it.
    XnackAlwaysOn {
        /// The processor.
        processor: &'static str,
        /// The setting the code object names (on or off).
        code_object: FeatureSetting,
    },
    /// A feature the code object requires on or off differs on the device.
    Feature {
        /// The feature.
        feature: Feature,
        /// What the code object requires (on or off).
        code_object: FeatureSetting,
        /// What the device has.
        device: FeatureSetting,
    },
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Incompatibility::Processor {
                code_object,
                device,
            } => write!(f, "code object is for {code_object}, device is {device}"),
            Incompatibility::XnackAlwaysOn {
                processor,
                code_object,
            } => write!(
                f,
                "code object names xnack{}, but {processor} has xnack always on and its devices \
                 name no xnack setting, so no device matches it",
                code_object.sign().unwrap_or('?')
            ),
            Incompatibility::Feature {
                feature,
                code_object,
                device,
            } => {
                let name = feature.name();
                let sign = code_object.sign().unwrap_or('?');
                match device.sign() {
                    Some(d) => write!(f, "code object requires {name}{sign}, device has {name}{d}"),
                    None => write!(
                        f,
                        "code object requires {name}{sign}, device does not specify {name}"
                    ),
                }
            }
        }
    }
}

impl std::error::Error for Incompatibility {}

/// Something worth telling about a target ID that parses (shown by `list`, `select`,
/// `doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetIdNote {
    /// An xnack setting on a processor whose xnack is always on (`gfx1250:xnack-`, which
    /// ROCm 7.2.2's LLVM 22 writes for `-xnack`).
    XnackAlwaysOn {
        /// The processor.
        processor: &'static str,
        /// The setting the ID names.
        setting: FeatureSetting,
    },
}

impl fmt::Display for TargetIdNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetIdNote::XnackAlwaysOn { processor, setting } => write!(
                f,
                "{processor} has xnack always on, so its target IDs normally carry no xnack; \
                 xnack{} (written by LLVM 22) is kept, and the runtime, which names the device \
                 {processor} without xnack, does not load this code object",
                setting.sign().unwrap_or('?')
            ),
        }
    }
}

/// Two target IDs that may not be bundled together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    /// The first ID, in input order.
    pub first: TargetId,
    /// The ID that conflicts with it.
    pub second: TargetId,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conflicting target IDs {} and {}: for one processor, either every ID names features or none does",
            self.first, self.second
        )
    }
}

impl std::error::Error for Conflict {}

/// The bundler's conflict rule: for one processor, either every ID sets some feature or none
/// does (`gfx90a` with `gfx90a:xnack+` conflicts; `gfx90a:xnack+` with `gfx90a:xnack-` does
/// not). Returns the first conflicting pair in input order.
pub fn check_conflicts<'a>(ids: impl IntoIterator<Item = &'a TargetId>) -> Result<(), Conflict> {
    let mut seen: Vec<&TargetId> = Vec::new();
    for id in ids {
        if let Some(first) = seen.iter().find(|s| s.processor.name == id.processor.name) {
            if first.has_features() != id.has_features() {
                return Err(Conflict {
                    first: **first,
                    second: *id,
                });
            }
        } else {
            seen.push(id);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TargetId {
        TargetId::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn kind(s: &str) -> (usize, TargetIdErrorKind) {
        let e = TargetId::parse(s).unwrap_err();
        (e.position, e.kind)
    }

    #[test]
    fn variants_cover_every_setting_of_every_target_id_feature() {
        let ids = TargetId::variants(Processor::by_name("gfx90a").unwrap());
        let text: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        assert_eq!(
            text,
            [
                "gfx90a",
                "gfx90a:xnack+",
                "gfx90a:xnack-",
                "gfx90a:sramecc+",
                "gfx90a:sramecc+:xnack+",
                "gfx90a:sramecc+:xnack-",
                "gfx90a:sramecc-",
                "gfx90a:sramecc-:xnack+",
                "gfx90a:sramecc-:xnack-",
            ]
        );
        assert_eq!(
            TargetId::variants(Processor::by_name("gfx1030").unwrap()),
            [id("gfx1030")]
        );
        for p in gfxkit_spec::PROCESSORS {
            let ids = TargetId::variants(p);
            assert_eq!(ids.len(), 3usize.pow(p.target_id_features.len() as u32));
            for i in &ids {
                assert_eq!(&TargetId::parse(&i.to_string()).unwrap(), i);
            }
        }
    }

    #[test]
    fn canonical_form_sorts_features_and_uses_primary_name() {
        assert_eq!(
            id("gfx90a:xnack-:sramecc+").to_string(),
            "gfx90a:sramecc+:xnack-"
        );
        assert_eq!(id("carrizo:xnack+").to_string(), "gfx801:xnack+");
        assert_eq!(id("tonga"), id("gfx802"));
        assert_eq!(id("gfx906:sram-ecc-").to_string(), "gfx906:sramecc-");
        assert_eq!(id("gfx1030").to_string(), "gfx1030");
        assert_eq!(id("tahiti"), id("gfx600"));
        assert_eq!(id("carrizo"), id("gfx801"));
    }

    #[test]
    fn parse_errors_name_token_and_position() {
        assert_eq!(kind(""), (0, TargetIdErrorKind::Empty));
        assert_eq!(
            kind("gfx9999"),
            (
                0,
                TargetIdErrorKind::UnknownProcessor {
                    name: "gfx9999".into()
                }
            )
        );
        assert_eq!(
            kind("gfx90a:xnack"),
            (
                7,
                TargetIdErrorKind::MissingSign {
                    feature: "xnack".into()
                }
            )
        );
        assert_eq!(
            kind("gfx90a:xnack+:xnack-"),
            (
                14,
                TargetIdErrorKind::DuplicateFeature {
                    feature: Feature::Xnack
                }
            )
        );
        assert_eq!(
            kind("gfx90a:foo+"),
            (
                7,
                TargetIdErrorKind::UnknownFeature {
                    feature: "foo".into()
                }
            )
        );
        assert_eq!(
            kind("gfx1030:xnack+"),
            (
                8,
                TargetIdErrorKind::UnsupportedFeature {
                    processor: "gfx1030",
                    feature: Feature::Xnack
                }
            )
        );
        assert_eq!(
            kind("gfx1030:cumode+"),
            (
                8,
                TargetIdErrorKind::NotATargetIdFeature {
                    feature: Feature::Cumode
                }
            )
        );
        assert_eq!(kind("gfx90a:"), (7, TargetIdErrorKind::EmptyFeature));
        assert_eq!(kind("gfx90a:+"), (7, TargetIdErrorKind::EmptyFeature));
        assert_eq!(kind(":xnack+"), (0, TargetIdErrorKind::Empty));
        let msg = TargetId::parse("gfx90a:xnack").unwrap_err().to_string();
        assert!(
            msg.contains("'xnack'") && msg.contains("position 7"),
            "{msg}"
        );
    }

    #[test]
    fn compatibility_follows_the_bundler_rule() {
        let dev = id("gfx90a:sramecc+:xnack-");
        assert!(id("gfx90a").is_compatible(&dev));
        assert!(id("gfx90a:xnack-").is_compatible(&dev));
        assert!(id("gfx90a:sramecc+:xnack-").is_compatible(&dev));
        assert_eq!(
            id("gfx90a:xnack+").check_compatible(&dev),
            Err(Incompatibility::Feature {
                feature: Feature::Xnack,
                code_object: FeatureSetting::On,
                device: FeatureSetting::Off
            })
        );
        assert!(!id("gfx906").is_compatible(&dev));
        // A device that does not specify a feature does not satisfy a code object that does.
        assert!(!id("gfx90a:xnack+").is_compatible(&id("gfx90a")));
        let msg = id("gfx90a:xnack+")
            .check_compatible(&id("gfx90a"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "code object requires xnack+, device does not specify xnack"
        );
    }

    #[test]
    fn overlap_is_the_selection_rule() {
        assert!(id("gfx90a").overlaps(&id("gfx90a:xnack+")));
        assert!(id("gfx90a:xnack+").overlaps(&id("gfx90a")));
        assert!(id("gfx90a:sramecc+").overlaps(&id("gfx90a:xnack+")));
        assert!(!id("gfx90a:xnack+").overlaps(&id("gfx90a:sramecc-:xnack-")));
        assert!(!id("gfx90a").overlaps(&id("gfx906")));
    }

    #[test]
    fn conflicts() {
        let a = id("gfx90a");
        let b = id("gfx90a:xnack+");
        let c = id("gfx90a:xnack-");
        let d = id("gfx906:xnack+");
        assert!(check_conflicts([&b, &c, &d]).is_ok());
        assert!(check_conflicts([&a, &id("gfx906")]).is_ok());
        let e = check_conflicts([&d, &a, &b]).unwrap_err();
        assert_eq!((e.first, e.second), (a, b));
    }

    #[test]
    fn gfx12_5_xnack_settings_are_kept_where_llvm_22_wrote_them() {
        // What ROCm 7.2.2's LLVM 22 names a `-xnack` / `+xnack` gfx1250 code object.
        for (text, setting) in [
            ("gfx1250:xnack-", FeatureSetting::Off),
            ("gfx1250:xnack+", FeatureSetting::On),
            ("gfx1251:xnack-", FeatureSetting::Off),
        ] {
            let id: TargetId = text.parse().unwrap();
            assert_eq!(id.to_string(), text);
            assert_eq!(id.legacy_xnack(), Some(setting));
            let notes = id.notes();
            assert_eq!(notes.len(), 1, "{text}");
            assert!(
                notes[0].to_string().contains("xnack always on"),
                "{}",
                notes[0]
            );
            // The runtime names the device without xnack: nothing matches the entry.
            let device = TargetId::new(id.processor());
            let e = id.check_compatible(&device).unwrap_err();
            assert!(
                matches!(e, Incompatibility::XnackAlwaysOn { code_object, .. } if code_object == setting),
                "{e}"
            );
            assert!(e.to_string().contains("no device matches"), "{e}");
            assert_ne!(id, device);
        }
        let id: TargetId = "gfx1250:sramecc+:xnack-".parse().unwrap();
        assert_eq!(id.to_string(), "gfx1250:sramecc+:xnack-");
        // The bare processor has no note and fits its device.
        let bare: TargetId = "gfx1250".parse().unwrap();
        assert!(bare.notes().is_empty() && bare.legacy_xnack().is_none());
        assert!(bare.is_compatible(&bare));
        // Processors newer than LLVM 22 never had an xnack setting: a typed error.
        for text in [
            "gfx12-5-generic:xnack-",
            "gfx1310:xnack+",
            "gfx1250-strict:xnack-",
        ] {
            let e = TargetId::parse(text).unwrap_err();
            assert!(
                matches!(e.kind, TargetIdErrorKind::XnackAlwaysOn { .. }),
                "{text}: {e}"
            );
            assert!(e.to_string().contains("xnack always on"), "{e}");
        }
        let e = TargetId::parse("gfx1310:sramecc+:xnack-").unwrap_err();
        assert_eq!(e.position, 17);
        let id: TargetId = "gfx1310:sramecc-".parse().unwrap();
        assert_eq!(id.to_string(), "gfx1310:sramecc-");
        let p = Processor::by_name("gfx12-5-generic").unwrap();
        assert_eq!(TargetId::variants(p).len(), 3, "sramecc any/on/off only");
        // Earlier processors keep the xnack setting, without a note.
        let id: TargetId = "gfx950:xnack+".parse().unwrap();
        assert_eq!(id.to_string(), "gfx950:xnack+");
        assert!(id.notes().is_empty());
    }
}
