//! What the runtime loads for one `HIPK` wrapper on a device, and how to say why not.

use crate::marker::KpackRef;
use crate::search::{self, Env, Loader, Opened, Outcome};
use crate::view;
use gfxkit_target_id::TargetId;
use serde::Serialize;

/// The answer for one wrapper on one device.
#[derive(Debug, Clone, Serialize)]
pub struct Lookup {
    /// `<kernel_name>#<N>`, when the marker has a name.
    pub key: Option<String>,
    /// How the search ended.
    pub outcome: Outcome,
    /// The runtime's `kpack_error_t` (13 no archive, 14 arch not found, 5 kernel not found,
    /// 12 invalid marker, 8 disabled); `None` when found.
    pub error_code: Option<u32>,
    /// The archive the code object comes from (or the one that lacks it).
    pub archive: Option<String>,
    /// The architecture matched.
    pub arch: Option<String>,
    /// One line on what happened.
    pub reason: String,
    /// The file or key that is missing, when something is.
    pub missing: Option<String>,
    /// The package that would provide the missing archive, where the layout tells.
    pub package: Option<String>,
    /// With the old loader: an archive the current loader would take it from (shadowing).
    pub shadowed: Option<String>,
    /// The code object is found but does not decode (kpack error 6, or 3).
    pub damaged: Option<String>,
}

impl Lookup {
    /// Whether the runtime gets a code object.
    pub fn loads(&self) -> bool {
        matches!(self.outcome, Outcome::Found { .. }) && self.damaged.is_none()
    }
}

/// Looks wrapper `index` with marker `marker` up on `device`. `opened` are the archives that
/// exist, in the runtime's order ([`search::archive_paths`] filtered by existence), and
/// `not_found` the paths tried that do not exist.
pub fn lookup(
    loader: Loader,
    device: &TargetId,
    marker: Option<&KpackRef>,
    index: u32,
    env: &Env,
    opened: &[Opened<'_, '_>],
    not_found: &[String],
) -> Lookup {
    let mut out = Lookup {
        key: None,
        outcome: Outcome::NoArchive,
        error_code: None,
        archive: None,
        arch: None,
        reason: String::new(),
        missing: None,
        package: None,
        shadowed: None,
        damaged: None,
    };
    if env.disabled() {
        out.outcome = Outcome::Disabled;
        out.error_code = Some(8);
        out.reason = "ROCM_KPACK_DISABLE is set: kpack loading is off".into();
        return out;
    }
    let Some(m) = marker else {
        out.error_code = Some(12);
        out.reason = "the wrapper's marker does not decode (KPACK_ERROR_INVALID_METADATA)".into();
        return out;
    };
    if let Some(why) = crate::marker::runtime_problem(m) {
        out.error_code = Some(12);
        out.reason = format!("{why} (KPACK_ERROR_INVALID_METADATA)");
        return out;
    }
    let key = format!("{}#{index}", m.kernel_name.as_deref().unwrap_or(""));
    out.key = Some(key.clone());
    let arches = search::arch_list(device);
    let outcome = search::resolve(loader, &arches, &key, opened);
    out.error_code = outcome.runtime_code();
    let group = m.search_paths.iter().find_map(|p| view::pattern_group(p));
    let processor = device.processor().name;
    let pkg = group.map(|g| view::package_hint(g, processor));
    match &outcome {
        Outcome::Found { archive, arch } => {
            let o = &opened[*archive];
            out.archive = Some(o.path.display().to_string());
            out.arch = Some(arch.clone());
            out.reason = format!("{key} for {arch} in {}", o.path.display());
            if let Some(k) = o.archive.kernel(&key, arch) {
                if let Err(e) = o.archive.payload(k) {
                    let code = e.runtime_code().unwrap_or(6);
                    out.error_code = Some(code);
                    out.damaged = Some(e.to_string());
                    out.reason = format!(
                        "{key} for {arch} in {} does not decode (kpack error {code}): {e}",
                        o.path.display()
                    );
                }
            }
        }
        Outcome::NoArchive => {
            let want = group
                .map(|g| format!("{g}_{processor}.kpack"))
                .or_else(|| not_found.first().cloned());
            out.missing = want.clone();
            out.package = pkg.clone();
            out.reason = format!(
                "no kpack archive found (kpack error 13, reported by HIP as \"device kernel image is invalid\"); tried {}",
                if not_found.is_empty() {
                    "no path".to_owned()
                } else {
                    not_found.join(", ")
                }
            );
        }
        Outcome::ArchNotFound => {
            out.missing = group.map(|g| format!("{g}_{processor}.kpack"));
            out.package = pkg.clone();
            let have: Vec<String> = opened
                .iter()
                .map(|o| format!("{} ({})", o.path.display(), o.archive.arches.join(" ")))
                .collect();
            out.reason = format!(
                "no archive lists an architecture for {device} (kpack error 14): {}",
                have.join(", ")
            );
        }
        Outcome::KernelNotFound { archive, arch } => {
            out.archive = Some(opened[*archive].path.display().to_string());
            out.arch = Some(arch.clone());
            out.missing = Some(key.clone());
            out.reason = format!(
                "{} lists {arch} but has no kernel {key} (kpack error 5)",
                opened[*archive].path.display()
            );
            if loader == Loader::Old {
                if let Outcome::Found {
                    archive: a2,
                    arch: arch2,
                } = search::resolve(Loader::Current, &arches, &key, opened)
                {
                    out.shadowed = Some(opened[a2].path.display().to_string());
                    out.reason.push_str(&format!(
                        "; it shadows {} ({arch2}), which has it and which the current loader would use",
                        opened[a2].path.display()
                    ));
                }
            }
        }
        Outcome::Disabled => {}
    }
    out.outcome = outcome;
    out
}
