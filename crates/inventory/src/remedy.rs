//! What a user can do when a library does not run on a device (`gfxkit doctor`'s `remedies`),
//! each said with its standing:
//!
//! - **override** (unsupported by AMD): `HSA_OVERRIDE_GFX_VERSION=<major.minor.stepping>` makes
//!   the runtime take the device for another processor. gfxkit names it only where the
//!   library has code the runtime would then load *and* the device runs that code unchanged:
//!   the other processor is of the device's own instruction set
//!   ([`gfxkit_spec::isa::SAME_ISA`]: gfx1030 code on a gfx1031 is `10.3.0`). Never where the
//!   instruction sets differ, however close the names (gfx1100 code on a gfx1102, gfx906 code
//!   on a gfx900).
//! - **setting** (supported): where the library has code for the device's other xnack mode,
//!   `HSA_XNACK=1` or `HSA_XNACK=0` (the mode the runtime asks the driver for; sramecc cannot
//!   be switched so).
//! - **generic** (supported): rebuilding with the generic target the HIP runtime falls back to
//!   for the device ([`gfxkit_host::select::runtime_generic`]: `gfx11-generic` for gfx1101),
//!   which needs code-object version 6.
//! - **rebuild** (supported): for a device without such a generic target, rebuilding for the
//!   device itself.
//! - **package** (supported): for a binary split by kpack whose archive for the device is
//!   missing, the package that provides it, as the layout names it
//!   ([`gfxkit_kpack::view::package_hint`]).
//! - **database** (supported): for a library whose own code runs on the device but whose
//!   kernel database lacks the device's files, installing those files. A library whose
//!   database lacks the device is never told to rebuild for a generic target: kernel databases
//!   hold code per processor, and a generic build of the library makes none.
//! - **upgrade** (supported): with `--rocm`, for code the release cannot load (a code-object
//!   version, generic target, CCOB version or kpack split it predates), the first release
//!   that loads it; beside it the rebuild that release loads ([`crate::release::remedies`]).

use gfxkit_host::select::generic_device;
use gfxkit_spec::{Feature, Processor};
use gfxkit_target_id::{FeatureSetting, TargetId};
use serde::Serialize;

/// What kind of remedy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Run with `HSA_OVERRIDE_GFX_VERSION`.
    Override,
    /// Run with the device's xnack mode switched (`HSA_XNACK`).
    Setting,
    /// Rebuild with the device's generic target.
    Generic,
    /// Rebuild for the device itself.
    Rebuild,
    /// Install the package that provides the missing code.
    Package,
    /// Install the kernel-database files the library opens for the device.
    Database,
    /// Upgrade ROCm to a release that loads the code (`--rocm`: the code needs a newer
    /// runtime than the one judged).
    Upgrade,
}

/// How AMD stands on a remedy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// A supported way (a build option, a package).
    Supported,
    /// Works, but AMD does not support running so.
    UnsupportedByAmd,
}

impl Standing {
    /// `supported`, `unsupported by AMD`.
    pub fn text(self) -> &'static str {
        match self {
            Standing::Supported => "supported",
            Standing::UnsupportedByAmd => "unsupported by AMD",
        }
    }
}

/// One remedy for one device (an item of `doctor --json`'s `remedies`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remedy {
    /// The device (canonical target ID) it is for.
    pub device: String,
    /// What kind.
    pub kind: Kind,
    /// What to do, in a sentence.
    pub text: String,
    /// AMD's standing.
    pub standing: Standing,
}

/// The `HSA_OVERRIDE_GFX_VERSION` value that makes the runtime take a device for `p`
/// (`10.3.0` for gfx1030, `9.0.10` for gfx90a: major, minor and stepping in decimal), read
/// back through the runtime's reading of the variable ([`gfxkit_host::kfd`]) to name `p`.
pub fn override_value(p: &Processor) -> Option<String> {
    let (major, minor, stepping) = p.isa_version()?;
    if p.is_generic() {
        return None;
    }
    let v = format!("{major}.{minor}.{stepping}");
    let back = gfxkit_host::kfd::processor_for_override(&v).ok()?;
    (back.name == p.name).then_some(v)
}

/// The devices an override could make of `device`: the other processors of its instruction
/// set ([`Processor::same_isa`]), with the device's feature settings where they apply.
pub fn override_devices(device: &TargetId) -> Vec<TargetId> {
    device
        .processor()
        .same_isa()
        .filter(|p| override_value(p).is_some())
        .map(|p| {
            let mut id = TargetId::new(p);
            for (f, s) in device.features() {
                if p.has_target_id_feature(f) {
                    id = id.with_setting(f, s).unwrap_or(id);
                }
            }
            id
        })
        .collect()
}

/// `device` with its xnack mode switched, when the mode is known.
fn xnack_flipped(device: &TargetId) -> Option<TargetId> {
    let other = match device.setting(Feature::Xnack) {
        FeatureSetting::On => FeatureSetting::Off,
        FeatureSetting::Off => FeatureSetting::On,
        _ => return None,
    };
    device.with_setting(Feature::Xnack, other).ok()
}

/// Why a library does not run on a device, as far as its remedies depend on it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lack {
    /// The library's own device code runs on the device (only what it loads lacks it).
    pub code_runs: bool,
    /// The kernel database the library loads lacks the device's files.
    pub database: bool,
}

/// The remedies for a library that does not run on `device`, for the reasons `lack` gives.
/// `runs_as(d)` tells whether the library would run on a device the runtime takes for `d`
/// (asked for each of [`override_devices`]); `package` is the package that provides the
/// missing code, when the layout tells.
pub fn remedies(
    device: &TargetId,
    lack: Lack,
    runs_as: &dyn Fn(&TargetId) -> bool,
    package: Option<&str>,
) -> Vec<Remedy> {
    let key = device.to_string();
    let mut out = Vec::new();
    if let Some(as_) = override_devices(device).into_iter().find(|d| runs_as(d)) {
        if let Some(v) = override_value(as_.processor()) {
            out.push(Remedy {
                device: key.clone(),
                kind: Kind::Override,
                text: format!(
                    "run with HSA_OVERRIDE_GFX_VERSION={v}: the runtime then loads the {} code \
                     object, which {} runs unchanged (one instruction set); it applies to \
                     every library the process loads",
                    as_.processor().name,
                    device.processor().name
                ),
                standing: Standing::UnsupportedByAmd,
            });
        }
    }
    if let Some(flipped) = xnack_flipped(device).filter(|d| runs_as(d)) {
        let on = flipped.setting(Feature::Xnack) == FeatureSetting::On;
        out.push(Remedy {
            device: key.clone(),
            kind: Kind::Setting,
            text: format!(
                "run with HSA_XNACK={}: the library has code for xnack {} ({flipped})",
                u8::from(on),
                if on { "on" } else { "off" }
            ),
            standing: Standing::Supported,
        });
    }
    let name = device.processor().name;
    match generic_device(device) {
        // Only the database lacks the device: its files, not a rebuild of the library.
        _ if lack.database && lack.code_runs => out.push(Remedy {
            device: key.clone(),
            kind: Kind::Database,
            text: format!(
                "install the kernel-database files the library opens for {name} (they ship \
                 with the library's package; a build of the library for {name} makes them)"
            ),
            standing: Standing::Supported,
        }),
        // Kernel databases hold code per processor: a generic target makes none.
        _ if lack.database => out.push(Remedy {
            device: key.clone(),
            kind: Kind::Rebuild,
            text: format!(
                "rebuild the library and its kernel database with --offload-arch={device} \
                 (kernel databases hold code per processor; a generic target makes none)"
            ),
            standing: Standing::Supported,
        }),
        Some(g) => out.push(Remedy {
            device: key.clone(),
            kind: Kind::Generic,
            text: format!(
                "rebuild with --offload-arch={g} -mcode-object-version=6: the HIP runtime \
                 loads that generic target on {} when no native code object is present",
                device.processor().name
            ),
            standing: Standing::Supported,
        }),
        None => out.push(Remedy {
            device: key.clone(),
            kind: Kind::Rebuild,
            text: format!(
                "rebuild with --offload-arch={device} (the HIP runtime has no generic target \
                 for {})",
                device.processor().name
            ),
            standing: Standing::Supported,
        }),
    }
    if let Some(p) = package {
        out.push(Remedy {
            device: key,
            kind: Kind::Package,
            text: format!("install {p}, which provides the kpack archive for the device"),
            standing: Standing::Supported,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(s: &str) -> TargetId {
        TargetId::parse(s).unwrap()
    }

    #[test]
    fn override_values_name_their_processor() {
        let p = |n: &str| Processor::by_name(n).unwrap();
        assert_eq!(override_value(p("gfx1030")).as_deref(), Some("10.3.0"));
        assert_eq!(override_value(p("gfx90a")).as_deref(), Some("9.0.10"));
        assert_eq!(override_value(p("gfx1200")).as_deref(), Some("12.0.0"));
        assert_eq!(override_value(p("gfx11-generic")), None);
        assert_eq!(override_value(p("r600")), None);
    }

    #[test]
    fn an_override_only_within_an_instruction_set() {
        let names = |d: &str| -> Vec<String> {
            override_devices(&dev(d))
                .iter()
                .map(|t| t.to_string())
                .collect()
        };
        assert_eq!(names("gfx1031")[0], "gfx1030");
        assert_eq!(names("gfx1201"), ["gfx1200"]);
        assert!(names("gfx1101").is_empty());
        assert!(names("gfx900").is_empty());
        let r = remedies(
            &dev("gfx1031"),
            Lack::default(),
            &|d| d.processor().name == "gfx1030",
            None,
        );
        assert_eq!(r[0].kind, Kind::Override);
        assert!(
            r[0].text.contains("HSA_OVERRIDE_GFX_VERSION=10.3.0"),
            "{}",
            r[0].text
        );
        assert_eq!(r[0].standing, Standing::UnsupportedByAmd);
        assert_eq!(r[1].kind, Kind::Generic);
        assert!(
            r[1].text.contains("--offload-arch=gfx10-3-generic"),
            "{}",
            r[1].text
        );
        // Nothing the override would load: no override.
        let r = remedies(
            &dev("gfx1031"),
            Lack::default(),
            &|_| false,
            Some("rocm-sdk-device-gfx1031"),
        );
        assert_eq!(
            r.iter().map(|r| r.kind).collect::<Vec<_>>(),
            [Kind::Generic, Kind::Package]
        );
        let r = remedies(&dev("gfx90a:xnack-"), Lack::default(), &|_| false, None);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, Kind::Rebuild);
        assert!(
            r[0].text.contains("--offload-arch=gfx90a:xnack-"),
            "{}",
            r[0].text
        );
        // Code for the other xnack mode: switch it.
        let r = remedies(
            &dev("gfx90a:xnack-"),
            Lack::default(),
            &|d| d.to_string() == "gfx90a:xnack+",
            None,
        );
        assert_eq!(r[0].kind, Kind::Setting);
        assert!(
            r[0].text.starts_with("run with HSA_XNACK=1"),
            "{}",
            r[0].text
        );
    }

    #[test]
    fn a_database_that_lacks_the_device_is_never_fixed_by_a_generic_rebuild() {
        // The library's code runs, its database lacks the device's files: install them.
        let only_db = Lack {
            code_runs: true,
            database: true,
        };
        let r = remedies(&dev("gfx1030"), only_db, &|_| false, None);
        assert_eq!(
            r.iter().map(|r| r.kind).collect::<Vec<_>>(),
            [Kind::Database]
        );
        assert!(r[0].text.contains("kernel-database files"), "{}", r[0].text);
        // Neither the library's code nor its database: rebuild both for the device itself,
        // though gfx1031 has a generic target; an override stays where it would run.
        let both = Lack {
            code_runs: false,
            database: true,
        };
        let r = remedies(
            &dev("gfx1031"),
            both,
            &|d| d.processor().name == "gfx1030",
            None,
        );
        assert_eq!(
            r.iter().map(|r| r.kind).collect::<Vec<_>>(),
            [Kind::Override, Kind::Rebuild]
        );
        assert!(
            r[1].text.contains("--offload-arch=gfx1031 "),
            "{}",
            r[1].text
        );
        assert!(!r[1].text.contains("generic target the"), "{}", r[1].text);
    }
}
