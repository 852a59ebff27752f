//! The GPUs of a Linux machine, as the ROCm runtime sees them, from text alone.
//!
//! - KFD topology: `/sys/class/kfd/kfd/topology/nodes/<n>/properties` holds `key value`
//!   lines. `gfx_target_version` is `major*10000 + minor*100 + stepping` (90010 = gfx90a,
//!   110000 = gfx1100; 0 for CPU nodes). Bit `0x04000000` of `capability`
//!   (`HSA_CAP_SRAM_EDCSUPPORTED`) tells whether SRAM ECC is on.
//! - `HSA_OVERRIDE_GFX_VERSION=11.0.0` makes every GPU report that version instead.
//! - `HSA_XNACK=1` asks for xnack on, `HSA_XNACK=0` for off; unset, the mode is up to the
//!   kernel driver and is left unknown here.
//!
//! File reading is the caller's job; these are pure functions over strings.

use gfxkit_spec::{Feature, Processor};
use gfxkit_target_id::{FeatureSetting, TargetId};

/// `HSA_CAP_SRAM_EDCSUPPORTED` in the node `capability` field.
pub const CAP_SRAM_EDC: u64 = 0x0400_0000;

/// What gfxkit reads from one KFD node's `properties` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeProperties {
    /// `gfx_target_version` (0 for CPU nodes).
    pub gfx_target_version: u64,
    /// `capability` bits.
    pub capability: u64,
    /// `simd_count` (0 for CPU nodes).
    pub simd_count: u64,
    /// `simd_per_cu` (0 when absent).
    pub simd_per_cu: u64,
    /// `vendor_id`.
    pub vendor_id: u64,
}

impl NodeProperties {
    /// Whether the node is a GPU (a non-zero target version and SIMDs).
    pub fn is_gpu(&self) -> bool {
        self.gfx_target_version != 0
    }

    /// The number of compute units, as the runtime counts them (`simd_count / simd_per_cu`:
    /// what `rocminfo` calls "Compute Unit" and HIP `multiProcessorCount`, which rocBLAS's
    /// kernel database selects rows by); `None` when the node does not say.
    pub fn cu_count(&self) -> Option<u64> {
        (self.simd_per_cu != 0 && self.simd_count != 0).then(|| self.simd_count / self.simd_per_cu)
    }
}

/// Parses a node's `properties` text. Unknown keys and malformed lines are ignored; numbers
/// that do not parse read as 0.
pub fn parse_properties(text: &str) -> NodeProperties {
    let mut p = NodeProperties::default();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let v = value.parse::<u64>().unwrap_or(0);
        match key {
            "gfx_target_version" => p.gfx_target_version = v,
            "capability" => p.capability = v,
            "simd_count" => p.simd_count = v,
            "simd_per_cu" => p.simd_per_cu = v,
            "vendor_id" => p.vendor_id = v,
            _ => {}
        }
    }
    p
}

/// Error for versions that name no processor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VersionError(pub String);

/// The processor name for a major/minor/stepping triple: `gfx` + major in decimal + minor and
/// stepping as one hex digit each (9.0.10 = `gfx90a`, 11.0.0 = `gfx1100`).
pub fn processor_name(major: u64, minor: u64, stepping: u64) -> Result<String, VersionError> {
    if minor > 15 || stepping > 15 || major == 0 || major > 99 {
        return Err(VersionError(format!(
            "version {major}.{minor}.{stepping} names no processor (minor and stepping must be 0..=15)"
        )));
    }
    Ok(format!("gfx{major}{minor:x}{stepping:x}"))
}

/// The processor for a KFD `gfx_target_version` (90010 = `gfx90a`).
pub fn processor_for_target_version(v: u64) -> Result<&'static Processor, VersionError> {
    let name = processor_name(v / 10000, (v / 100) % 100, v % 100)?;
    Processor::by_name(&name).ok_or_else(|| {
        VersionError(format!(
            "gfx_target_version {v} is {name}, which gfxkit does not know"
        ))
    })
}

/// The processor named by an `HSA_OVERRIDE_GFX_VERSION` value (`11.0.0` = `gfx1100`).
pub fn processor_for_override(value: &str) -> Result<&'static Processor, VersionError> {
    let parts: Vec<&str> = value.trim().split('.').collect();
    let nums: Option<Vec<u64>> = parts.iter().map(|p| p.parse::<u64>().ok()).collect();
    let Some([major, minor, stepping]) = nums.as_deref().and_then(|n| <[u64; 3]>::try_from(n).ok())
    else {
        return Err(VersionError(format!(
            "HSA_OVERRIDE_GFX_VERSION={value:?}: expected major.minor.stepping such as 11.0.0"
        )));
    };
    let name = processor_name(major, minor, stepping)?;
    Processor::by_name(&name).ok_or_else(|| {
        VersionError(format!(
            "HSA_OVERRIDE_GFX_VERSION={value} is {name}, which gfxkit does not know"
        ))
    })
}

/// The xnack setting asked for by an `HSA_XNACK` value: `1` on, `0` off, anything else (or
/// unset) unknown.
pub fn xnack_from_env(value: Option<&str>) -> FeatureSetting {
    match value.map(str::trim) {
        Some("1") => FeatureSetting::On,
        Some("0") => FeatureSetting::Off,
        _ => FeatureSetting::Any,
    }
}

/// The target ID of a GPU node: its processor (or the override), sramecc from the capability
/// bits when the processor takes sramecc, xnack from `HSA_XNACK` when set. Features that cannot
/// be known stay at any.
pub fn device_target_id(
    node: &NodeProperties,
    override_version: Option<&str>,
    hsa_xnack: Option<&str>,
) -> Result<TargetId, VersionError> {
    let processor = match override_version.filter(|v| !v.trim().is_empty()) {
        Some(v) => processor_for_override(v)?,
        None => processor_for_target_version(node.gfx_target_version)?,
    };
    let mut id = TargetId::new(processor);
    if processor.has_target_id_feature(Feature::Sramecc) {
        let s = if node.capability & CAP_SRAM_EDC != 0 {
            FeatureSetting::On
        } else {
            FeatureSetting::Off
        };
        id = id.with_setting(Feature::Sramecc, s).unwrap_or(id);
    }
    if processor.has_target_id_feature(Feature::Xnack) {
        let x = xnack_from_env(hsa_xnack);
        id = id.with_setting(Feature::Xnack, x).unwrap_or(id);
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_versions_name_processors() {
        assert_eq!(processor_for_target_version(90010).unwrap().name, "gfx90a");
        assert_eq!(processor_for_target_version(90006).unwrap().name, "gfx906");
        assert_eq!(
            processor_for_target_version(100300).unwrap().name,
            "gfx1030"
        );
        assert!(processor_for_target_version(0).is_err());
        assert!(processor_for_target_version(90099).is_err());
        assert_eq!(processor_name(9, 4, 2).unwrap(), "gfx942");
        assert_eq!(processor_name(12, 0, 1).unwrap(), "gfx1201");
    }

    #[test]
    fn override_and_xnack() {
        assert_eq!(processor_for_override("10.3.0").unwrap().name, "gfx1030");
        assert_eq!(processor_for_override(" 9.0.10 ").unwrap().name, "gfx90a");
        assert!(processor_for_override("11").is_err());
        assert!(processor_for_override("a.b.c").is_err());
        assert_eq!(xnack_from_env(Some("1")), FeatureSetting::On);
        assert_eq!(xnack_from_env(Some("0")), FeatureSetting::Off);
        assert_eq!(xnack_from_env(None), FeatureSetting::Any);
    }

    #[test]
    fn node_properties_to_target_id() {
        let text = "cpu_cores_count 0\nsimd_count 440\ngfx_target_version 90010\ncapability 738861696\nvendor_id 4098\n";
        let p = parse_properties(text);
        assert!(p.is_gpu());
        assert_eq!(p.capability & CAP_SRAM_EDC, CAP_SRAM_EDC);
        let id = device_target_id(&p, None, Some("0")).unwrap();
        assert_eq!(id.to_string(), "gfx90a:sramecc+:xnack-");
        let id = device_target_id(&p, None, None).unwrap();
        assert_eq!(id.to_string(), "gfx90a:sramecc+");
        let id = device_target_id(&p, Some("10.3.0"), Some("1")).unwrap();
        assert_eq!(id.to_string(), "gfx1030");
        let cpu = parse_properties("cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n");
        assert!(!cpu.is_gpu());
        assert_eq!(cpu.cu_count(), None);
        // No simd_per_cu: the count is not known.
        assert_eq!(p.cu_count(), None);
        let mi250x = parse_properties("simd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\n");
        assert_eq!(mi250x.cu_count(), Some(110));
    }
}
