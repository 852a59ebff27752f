//! Which bundle entry the HIP runtime loads on a device.
//!
//! The order follows ROCm clr (`hipamd/src/hip_fatbin.cpp`, `FatBinaryInfo::ExtractFatBinaryUsingCOMGR`):
//!
//! 1. a native entry: `hip`/`hipv4` kind, `amdgcn-amd-amdhsa` triple, target ID compatible with
//!    the device's ISA (same processor; every feature the entry sets equals the device's).
//!    Among several, the first in header order;
//! 2. the family's generic target (`gfx9-generic` for gfx906, ...), carrying the device's
//!    feature settings;
//! 3. SPIR-V: `spirv64-amd-amdhsa--amdgcnspirv` (or `spirv64-amd-amdhsa-unknown-amdgcnspirv`),
//!    compiled for the device at load time;
//! 4. otherwise the runtime reports `No compatible code objects found for: <target id>`.
//!
//! A device ID may leave `xnack` or `sramecc` at *any* when the setting cannot be known (no
//! GPU to ask). Then an entry that sets the feature still fits, and the [`Selection`] records
//! the setting the device must have ([`Selection::needs`]). [`select_each_setting`] evaluates
//! every concrete setting separately.

use crate::entries::{LoadView, HIP_HEADER_LIMIT};
use crate::unit::{is_hip_kind, is_spirv_entry};
use gfxkit_bundle::EntryId;
use gfxkit_spec::{Feature, Processor};
use gfxkit_target_id::{FeatureSetting, TargetId};
use serde::Serialize;
use std::fmt;

/// How an entry was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// A code object for the device's own processor.
    Native,
    /// A code object for the family's generic target.
    Generic,
    /// SPIR-V, compiled for the device when loaded.
    Spirv,
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Via::Native => "native",
            Via::Generic => "generic",
            Via::Spirv => "spirv",
        })
    }
}

/// The result of selecting an entry for a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Index of the chosen entry in the list given, or `None`.
    pub index: Option<usize>,
    /// How it was chosen.
    pub via: Option<Via>,
    /// Feature settings the choice relies on that the device ID left at any
    /// (`[(Xnack, On)]` for an `xnack+` entry chosen for a device of unknown xnack mode).
    pub needs: Vec<(Feature, FeatureSetting)>,
    /// Why: what was chosen and why earlier candidates were passed over, or why nothing fits.
    pub reason: String,
    /// When nothing fits: the targets present that come closest to the device, nearest first.
    pub nearest: Vec<String>,
}

impl Selection {
    /// Whether an entry was chosen.
    pub fn is_selected(&self) -> bool {
        self.index.is_some()
    }

    /// The needed settings as target-ID features (`xnack+`, `sramecc-`), joined with `:`.
    pub fn needs_text(&self) -> String {
        settings_text(&self.needs)
    }
}

/// `xnack+:sramecc-` style text for a list of settings.
pub fn settings_text(settings: &[(Feature, FeatureSetting)]) -> String {
    settings
        .iter()
        .map(|(f, s)| format!("{}{}", f.name(), s.sign().unwrap_or('?')))
        .collect::<Vec<_>>()
        .join(":")
}

/// Whether an entry is an AMDGPU HSA code object entry, and its target ID.
fn amdgcn_target(e: &EntryId) -> Option<&TargetId> {
    let t = e.triple();
    if !is_hip_kind(e.kind()) || !t.is_amdgpu() || !t.is_amdhsa() {
        return None;
    }
    e.target_id()
}

/// Whether code for `code` may run on `device`, where a device feature at any means "unknown":
/// `Ok(needs)` with the settings the device must have, or the first mismatch.
fn fits(code: &TargetId, device: &TargetId) -> Result<Vec<(Feature, FeatureSetting)>, String> {
    if code.processor().name != device.processor().name {
        return Err(format!(
            "code object is for {}, device is {}",
            code.processor().name,
            device.processor().name
        ));
    }
    // gfx1250/gfx1251: the runtime names the device without xnack (ROCr registers them with
    // xnack unsupported), so an entry naming xnack (LLVM 22's `gfx1250:xnack-`) never matches,
    // whatever the device ID given here says.
    if let Some(setting) = code.legacy_xnack() {
        return Err(format!(
            "code object names xnack{}, but {} has xnack always on and the runtime's ISA name \
             for it carries no xnack, so it never matches",
            setting.sign().unwrap_or('?'),
            code.processor().name
        ));
    }
    let mut needs = Vec::new();
    for (f, want) in code.features() {
        match device.setting(f) {
            FeatureSetting::Any => needs.push((f, want)),
            have if have == want => {}
            have => {
                return Err(format!(
                    "code object requires {}{}, device has {}{}",
                    f.name(),
                    want.sign().unwrap_or('?'),
                    f.name(),
                    have.sign().unwrap_or('?')
                ))
            }
        }
    }
    Ok(needs)
}

/// The processors the HIP runtime looks up a generic code object for, and that target. Source:
/// ROCm clr `hipamd/src/hip_fatbin.cpp` (`TargetGenericMap`, rocm-systems, 2026), which HIP
/// consults; ROCr's ISA registry (`isa.cpp`) agrees where both list a processor. It is
/// narrower than LLVM's generic families: gfx940 and gfx941 belong to `gfx9-4-generic` in
/// LLVM but not here; gfx1251 belongs to `gfx12-5-generic` in LLVM and in ROCr, but HIP's map
/// lists only gfx1250; gfx1154 (gfx11-generic), gfx1170, gfx1171, gfx1172 (gfx11-7-generic)
/// and gfx1310 (gfx13-generic) are in neither map (ROCr does not register them at all), so
/// HIP loads only their native code objects or SPIR-V.
pub const RUNTIME_GENERIC: &[(&str, &str)] = &[
    ("gfx900", "gfx9-generic"),
    ("gfx902", "gfx9-generic"),
    ("gfx904", "gfx9-generic"),
    ("gfx906", "gfx9-generic"),
    ("gfx909", "gfx9-generic"),
    ("gfx90c", "gfx9-generic"),
    ("gfx942", "gfx9-4-generic"),
    ("gfx950", "gfx9-4-generic"),
    ("gfx1010", "gfx10-1-generic"),
    ("gfx1011", "gfx10-1-generic"),
    ("gfx1012", "gfx10-1-generic"),
    ("gfx1013", "gfx10-1-generic"),
    ("gfx1030", "gfx10-3-generic"),
    ("gfx1031", "gfx10-3-generic"),
    ("gfx1032", "gfx10-3-generic"),
    ("gfx1033", "gfx10-3-generic"),
    ("gfx1034", "gfx10-3-generic"),
    ("gfx1035", "gfx10-3-generic"),
    ("gfx1036", "gfx10-3-generic"),
    ("gfx1100", "gfx11-generic"),
    ("gfx1101", "gfx11-generic"),
    ("gfx1102", "gfx11-generic"),
    ("gfx1103", "gfx11-generic"),
    ("gfx1150", "gfx11-generic"),
    ("gfx1151", "gfx11-generic"),
    ("gfx1152", "gfx11-generic"),
    ("gfx1153", "gfx11-generic"),
    ("gfx1200", "gfx12-generic"),
    ("gfx1201", "gfx12-generic"),
    ("gfx1250", "gfx12-5-generic"),
];

/// The generic target the HIP runtime falls back to for `processor` ([`RUNTIME_GENERIC`]).
pub fn runtime_generic(processor: &Processor) -> Option<&'static Processor> {
    RUNTIME_GENERIC
        .iter()
        .find(|(p, _)| *p == processor.name)
        .and_then(|(_, g)| Processor::by_name(g))
}

/// The generic target a device can also run, with the device's feature settings carried over
/// for the features the generic target takes (like the runtime appends `:sramecc±:xnack±`).
pub fn generic_device(device: &TargetId) -> Option<TargetId> {
    let g = runtime_generic(device.processor())?;
    let mut id = TargetId::new(g);
    for (f, s) in device.features() {
        if g.has_target_id_feature(f) {
            id = id.with_setting(f, s).ok()?;
        }
    }
    Some(id)
}

/// Chooses the entry the HIP runtime would load on `device` from a bundle's `entries` (in
/// header order). See the [module documentation](self).
pub fn select(device: &TargetId, entries: &[EntryId]) -> Selection {
    let mut passed = Vec::new();
    // 1. Native.
    for (i, e) in entries.iter().enumerate() {
        let Some(t) = amdgcn_target(e) else { continue };
        if t.processor().name != device.processor().name {
            continue;
        }
        match fits(t, device) {
            Ok(needs) => {
                let mut reason = format!("{} is compatible with {device}", e.raw());
                if !needs.is_empty() {
                    reason.push_str(&format!(
                        " if the device runs with {}",
                        settings_text(&needs)
                    ));
                }
                if !passed.is_empty() {
                    reason.push_str(&format!(" (passed over: {})", passed.join("; ")));
                }
                return Selection {
                    index: Some(i),
                    via: Some(Via::Native),
                    needs,
                    reason,
                    nearest: Vec::new(),
                };
            }
            Err(why) => passed.push(format!("{}: {why}", e.raw())),
        }
    }
    // 2. Generic.
    if let Some(gdev) = generic_device(device) {
        for (i, e) in entries.iter().enumerate() {
            let Some(t) = amdgcn_target(e) else { continue };
            if t.processor().name != gdev.processor().name {
                continue;
            }
            match fits(t, &gdev) {
                Ok(needs) => {
                    let mut reason = format!(
                        "no native code object for {device}; {} is the generic target of its family",
                        e.raw()
                    );
                    if !needs.is_empty() {
                        reason.push_str(&format!(
                            ", if the device runs with {}",
                            settings_text(&needs)
                        ));
                    }
                    return Selection {
                        index: Some(i),
                        via: Some(Via::Generic),
                        needs,
                        reason,
                        nearest: Vec::new(),
                    };
                }
                Err(why) => passed.push(format!("{}: {why}", e.raw())),
            }
        }
    }
    // 3. SPIR-V.
    if let Some(i) = entries.iter().position(is_spirv_entry) {
        return Selection {
            index: Some(i),
            via: Some(Via::Spirv),
            needs: Vec::new(),
            reason: format!(
                "no native or generic code object for {device}; SPIR-V {} is compiled for it when loaded",
                entries[i].raw()
            ),
            nearest: Vec::new(),
        };
    }
    let nearest = nearest_targets(device, entries);
    let mut reason = format!("No compatible code objects found for: {device}");
    if !passed.is_empty() {
        reason.push_str(&format!(" ({})", passed.join("; ")));
    }
    if nearest.is_empty() {
        reason.push_str("; the bundle holds no AMDGPU code objects");
    } else {
        reason.push_str(&format!("; nearest present: {}", nearest.join(", ")));
    }
    Selection {
        index: None,
        via: None,
        needs: Vec::new(),
        reason,
        nearest,
    }
}

/// Why nothing of a bundle whose device entries are all empty loads
/// ([`crate::entries::LoadView::device_entries_all_empty`]).
pub const ENTRIES_ALL_EMPTY: &str = "a bundle whose device entries are all empty";

/// Why nothing of an uncompressed bundle whose header is `header_len` bytes, longer than
/// [`HIP_HEADER_LIMIT`], loads.
pub fn header_unread(header_len: u64) -> String {
    format!(
        "the bundle header is {header_len} bytes; the HIP runtime reads only the first {HIP_HEADER_LIMIT} bytes of an uncompressed bundle and cannot load any entry"
    )
}

/// [`select`] over a loadable unit, with the runtime's further rules: an uncompressed bundle
/// whose header is longer than the 4096 bytes the runtime reads cannot be loaded at all, and
/// empty entries are skipped. [`Selection::index`] indexes [`LoadView::entries`].
pub fn select_unit(device: &TargetId, unit: &LoadView) -> Selection {
    let none = |reason: String| Selection {
        index: None,
        via: None,
        needs: Vec::new(),
        reason,
        nearest: Vec::new(),
    };
    let entries = match &unit.entries {
        Ok(e) => e,
        Err(e) => return none(format!("cannot read the bundle's entries: {e}")),
    };
    if !unit.header_readable_by_hip() {
        let mut s = none(header_unread(unit.header_len.unwrap_or(0)));
        s.nearest = nearest_targets(device, &unit.ids());
        return s;
    }
    let kept: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].size > 0)
        .collect();
    let ids: Vec<EntryId> = kept.iter().map(|&i| entries[i].id.clone()).collect();
    let mut s = select(device, &ids);
    s.index = s.index.map(|i| kept[i]);
    s
}

/// Every concrete setting of the target-ID features `device` leaves at any (at most four for
/// `sramecc` and `xnack`), in a fixed order (off before on); just `device` when all are known.
pub fn concrete_settings(device: &TargetId) -> Vec<TargetId> {
    let mut out = vec![*device];
    for &f in device.processor().target_id_features {
        if device.setting(f) != FeatureSetting::Any {
            continue;
        }
        let mut next = Vec::with_capacity(out.len() * 2);
        for d in &out {
            for s in [FeatureSetting::Off, FeatureSetting::On] {
                if let Ok(x) = d.with_setting(f, s) {
                    next.push(x);
                }
            }
        }
        out = next;
    }
    out
}

/// [`select`] for every concrete setting of the features `device` leaves unknown.
pub fn select_each_setting(device: &TargetId, entries: &[EntryId]) -> Vec<(TargetId, Selection)> {
    concrete_settings(device)
        .into_iter()
        .map(|d| {
            let s = select(&d, entries);
            (d, s)
        })
        .collect()
}

/// How close code for `other` comes to running on `device`, smaller is nearer (the rule of
/// [`nearest_targets`]):
///
/// 0. the same processor (only a target feature differs);
/// 1. the generic target of the device's family (`gfx11-generic` for gfx1151);
/// 2. another member of that family (gfx1150, gfx1100: a rebuild or an override away);
/// 3. the same ISA major version (gfx90a for gfx942);
/// 4. anything else;
///
/// then, within a tier, by the distance of the ISA versions read as one number (major, minor,
/// stepping: for gfx1151, gfx90a at 9.0.10 is nearer than gfx900), an older one before a newer
/// one at the same distance.
fn rank(device: &Processor, other: &Processor) -> (u8, u32, bool) {
    let tier = if device.name == other.name {
        0
    } else if device.generic_family == Some(other.name) {
        1
    } else if device.generic_family.is_some() && device.generic_family == other.generic_family {
        2
    } else if device.isa_version().map(|v| v.0) == other.isa_version().map(|v| v.0) {
        3
    } else {
        4
    };
    let linear = |v: Option<(u8, u8, u8)>| {
        v.map_or(u32::MAX, |(a, b, c)| {
            u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c)
        })
    };
    let (d, o) = (linear(device.isa_version()), linear(other.isa_version()));
    (tier, d.abs_diff(o), o > d)
}

/// The AMDGPU targets present in `entries` that come nearest to running on `device`, nearest
/// first, at most 3, ranked by `rank`: the device's own processor first (each target ID
/// present, since only a feature setting stands in the way), then its generic target, the
/// other members of its generic family, the same ISA generation, the rest. Other processors'
/// feature variants are folded into the processor's name (`gfx90a` for `gfx90a:xnack+` and
/// `gfx90a:xnack-`), so that one processor takes one place.
pub fn nearest_targets(device: &TargetId, entries: &[EntryId]) -> Vec<String> {
    let mut present: Vec<((u8, u32, bool), String)> = entries
        .iter()
        .filter_map(amdgcn_target)
        .map(|t| {
            let r = rank(device.processor(), t.processor());
            let name = if r.0 == 0 {
                t.to_string()
            } else {
                t.processor().name.to_owned()
            };
            (r, name)
        })
        .collect();
    present.sort();
    present.dedup_by(|a, b| a.1 == b.1);
    present.into_iter().take(3).map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<EntryId> {
        list.iter().map(|s| EntryId::parse(s).unwrap()).collect()
    }

    fn dev(s: &str) -> TargetId {
        TargetId::parse(s).unwrap()
    }

    #[test]
    fn first_compatible_native_entry_in_header_order() {
        let e = ids(&[
            "host-x86_64-unknown-linux--",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
        ]);
        let s = select(&dev("gfx90a:sramecc+:xnack-"), &e);
        assert_eq!(s.index, Some(2));
        assert_eq!(s.via, Some(Via::Native));
        assert!(s.needs.is_empty());
        assert!(s.reason.contains("xnack+"), "{}", s.reason);
        let s = select(&dev("gfx90a:sramecc+:xnack+"), &e);
        assert_eq!(s.index, Some(1));
    }

    #[test]
    fn unknown_device_setting_is_recorded_as_a_need() {
        let e = ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"]);
        let s = select(&dev("gfx90a"), &e);
        assert_eq!(s.index, Some(0));
        assert_eq!(s.needs, vec![(Feature::Xnack, FeatureSetting::On)]);
        assert_eq!(s.needs_text(), "xnack+");
        let each = select_each_setting(&dev("gfx90a"), &e);
        assert_eq!(each.len(), 4);
        let ok: Vec<String> = each
            .iter()
            .filter(|(_, s)| s.is_selected())
            .map(|(d, _)| d.to_string())
            .collect();
        assert_eq!(ok, ["gfx90a:sramecc-:xnack+", "gfx90a:sramecc+:xnack+"]);
    }

    #[test]
    fn generic_then_spirv_then_nothing() {
        let e = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx9-generic:xnack-",
            "hipv4-amdgcn-amd-amdhsa--gfx1030",
            "hipv4-spirv64-amd-amdhsa--amdgcnspirv",
        ]);
        let s = select(&dev("gfx906:sramecc+:xnack-"), &e);
        assert_eq!((s.index, s.via), (Some(0), Some(Via::Generic)));
        // xnack+ device: the generic entry is xnack-, so SPIR-V.
        let s = select(&dev("gfx906:sramecc+:xnack+"), &e);
        assert_eq!((s.index, s.via), (Some(2), Some(Via::Spirv)));
        // gfx90a has no generic family.
        let e2 = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx9-generic",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
        ]);
        let s = select(&dev("gfx90a:sramecc+:xnack-"), &e2);
        assert_eq!(s.index, None);
        assert!(
            s.reason
                .starts_with("No compatible code objects found for: gfx90a:sramecc+:xnack-"),
            "{}",
            s.reason
        );
        assert_eq!(s.nearest[0], "gfx906");
    }

    #[test]
    fn nearest_targets_rank_by_what_could_run() {
        let present = |names: &[&str]| -> Vec<EntryId> {
            names
                .iter()
                .map(|n| EntryId::parse(&format!("hipv4-amdgcn-amd-amdhsa--{n}")).unwrap())
                .collect()
        };
        // Debian's librocrand: nothing of GFX11; the ISA generations nearest, variants folded.
        let rocrand = present(&[
            "gfx1030",
            "gfx803",
            "gfx900:xnack-",
            "gfx906:xnack-",
            "gfx908:xnack-",
            "gfx90a:xnack+",
            "gfx90a:xnack-",
        ]);
        assert_eq!(
            nearest_targets(&dev("gfx1151"), &rocrand),
            ["gfx1030", "gfx90a", "gfx908"]
        );
        assert_eq!(
            nearest_targets(&dev("gfx942"), &rocrand),
            ["gfx90a", "gfx908", "gfx906"]
        );
        // The family first: its generic target, then its members by ISA version.
        let wide = present(&[
            "gfx1030",
            "gfx1100",
            "gfx1150",
            "gfx1152",
            "gfx1200",
            "gfx11-generic",
        ]);
        assert_eq!(
            nearest_targets(&dev("gfx1151"), &wide),
            ["gfx11-generic", "gfx1150", "gfx1152"]
        );
        assert_eq!(
            nearest_targets(&dev("gfx1151"), &wide[..5]),
            ["gfx1150", "gfx1152", "gfx1100"]
        );
        // The device's own processor keeps its feature settings: they are what differs.
        assert_eq!(
            nearest_targets(
                &dev("gfx90a:xnack+"),
                &present(&["gfx908:xnack-", "gfx90a:xnack-"])
            ),
            ["gfx90a:xnack-", "gfx908"]
        );
    }

    #[test]
    fn mismatched_feature_names_nearest_same_processor() {
        let e = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx1030",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
        ]);
        let s = select(&dev("gfx90a:sramecc+:xnack-"), &e);
        assert_eq!(s.index, None);
        assert_eq!(s.nearest, ["gfx90a:xnack+", "gfx1030"]);
        assert!(s.reason.contains("requires xnack+"), "{}", s.reason);
    }

    #[test]
    fn runtime_generic_map_agrees_with_the_processor_table() {
        for (p, g) in RUNTIME_GENERIC {
            let proc = Processor::by_name(p).unwrap_or_else(|| panic!("{p} not in the table"));
            let gen = Processor::by_name(g).unwrap_or_else(|| panic!("{g} not in the table"));
            assert!(gen.is_generic());
            assert_eq!(proc.generic_family, Some(*g), "{p}");
        }
        // Members of LLVM's families the runtime does not map.
        let unmapped: Vec<&str> = gfxkit_spec::PROCESSORS
            .iter()
            .filter(|p| p.generic_family.is_some())
            .filter(|p| !RUNTIME_GENERIC.iter().any(|(n, _)| *n == p.name))
            .map(|p| p.name)
            .collect();
        // The runtime's map has not caught up with LLVM 23's families yet (gfx117x are added
        // by rocm-systems#11715, still open), nor with gfx1251.
        assert_eq!(
            unmapped,
            [
                "gfx940", "gfx941", "gfx1154", "gfx1170", "gfx1171", "gfx1172", "gfx1251",
                "gfx1310"
            ]
        );
        let e = ids(&["hipv4-amdgcn-amd-amdhsa--gfx9-4-generic"]);
        assert_eq!(select(&dev("gfx942"), &e).via, Some(Via::Generic));
        assert_eq!(select(&dev("gfx940"), &e).index, None);
    }

    #[test]
    fn legacy_hip_kind_and_openmp() {
        let e = ids(&[
            "openmp-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa-gfx906",
        ]);
        let s = select(&dev("gfx906"), &e);
        assert_eq!(s.index, Some(1));
    }

    /// Which generic code object HIP loads on the newer processors, when no native one is
    /// there: gfx1153 takes gfx11-generic and gfx1250 gfx12-5-generic; gfx1154, gfx1170-gfx1172,
    /// gfx1251 and gfx1310 have no generic fallback in the runtime (LLVM's families
    /// notwithstanding) and go to SPIR-V.
    #[test]
    fn generic_fallback_of_the_newer_processors() {
        let e = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx11-generic",
            "hipv4-amdgcn-amd-amdhsa--gfx11-7-generic",
            "hipv4-amdgcn-amd-amdhsa--gfx12-5-generic",
            "hipv4-amdgcn-amd-amdhsa--gfx13-generic",
            "hipv4-spirv64-amd-amdhsa--amdgcnspirv",
        ]);
        for (cpu, want) in [
            ("gfx1153", Some(0)),
            ("gfx1154", None),
            ("gfx1170", None),
            ("gfx1171", None),
            ("gfx1172", None),
            ("gfx1250", Some(2)),
            ("gfx1251", None),
            ("gfx1310", None),
        ] {
            let s = select(&dev(cpu), &e);
            match want {
                Some(i) => {
                    assert_eq!((s.index, s.via), (Some(i), Some(Via::Generic)), "{cpu}");
                    assert!(s.reason.contains("generic target of its family"), "{cpu}");
                }
                None => assert_eq!((s.index, s.via), (Some(4), Some(Via::Spirv)), "{cpu}"),
            }
            // Without SPIR-V: nothing for the unmapped ones.
            let s = select(&dev(cpu), &e[..4]);
            assert_eq!(s.index, want, "{cpu}: {}", s.reason);
        }
        // A native code object still comes first.
        let e = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx12-5-generic",
            "hipv4-amdgcn-amd-amdhsa--gfx1250",
        ]);
        let s = select(&dev("gfx1250"), &e);
        assert_eq!((s.index, s.via), (Some(1), Some(Via::Native)));
    }

    /// LLVM 22's `gfx1250:xnack-` (and `xnack+`) entries parse, but the runtime names a gfx1250
    /// device without xnack and never loads them; the bare or generic entry is taken instead.
    #[test]
    fn gfx1250_entries_naming_xnack_are_passed_over() {
        let e = ids(&[
            "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack-",
            "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx12-5-generic",
        ]);
        for device in ["gfx1250", "gfx1250:xnack-"] {
            let s = select(&dev(device), &e);
            assert_eq!((s.index, s.via), (Some(2), Some(Via::Generic)), "{device}");
        }
        let s = select(&dev("gfx1250"), &e[..2]);
        assert_eq!(s.index, None);
        assert!(s.reason.contains("xnack always on"), "{}", s.reason);
        assert!(s.reason.contains("gfx1250:xnack-"), "{}", s.reason);
    }
}
