//! What the runtime loads for one `HIPK` wrapper on a device, and how to say why not.

use crate::marker::KpackRef;
use crate::search::{self, Env, Loader, Opened, Outcome};
use crate::view;
use gfxkit_target_id::TargetId;
use serde::Serialize;

/// The answer for one wrapper on one device.
#[derive(Debug, Clone, Serialize)]
pub struct Lookup {
    /// `<kernel_name>#<N>`, when the marker has a name (`kpack_key`, as `list` names it).
    #[serde(rename = "kpack_key")]
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
    /// One line on what happened (serialised by the unit that holds the look-up, as its
    /// `reason`).
    #[serde(skip)]
    pub reason: String,
    /// The file or key that is missing, when something is.
    pub missing: Option<String>,
    /// The package that would provide the missing archive, where the layout tells.
    pub package: Option<String>,
    /// With the old loader: an archive the current loader would take it from (shadowing).
    pub shadowed: Option<String>,
    /// Damage that decides the answer: the code object found does not decode or is not a
    /// code object for its architecture (`<archive>: <error>`), or nothing loads and some
    /// archive tried is present but damaged (the archives of `skipped`).
    pub damaged: Option<String>,
    /// Archives tried that are present but damaged (`<path>: <error> (at offset N)`): the
    /// runtime skips them as if they were absent. Omitted when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

impl Lookup {
    /// Whether the runtime gets a code object.
    pub fn loads(&self) -> bool {
        matches!(self.outcome, Outcome::Found { .. }) && self.damaged.is_none()
    }
}

/// Looks wrapper `index` with marker `marker` up on `device`. `opened` are the archives that
/// exist and parse, in the runtime's order ([`search::archive_paths`] filtered by
/// existence), `not_found` the paths tried that do not exist, and `damaged` the archives
/// tried that exist but do not parse (`<path>: <error>`), which the runtime skips: when
/// nothing loads without them, the answer is their damage, not a missing archive.
#[allow(clippy::too_many_arguments)]
pub fn lookup(
    loader: Loader,
    device: &TargetId,
    marker: Option<&KpackRef>,
    index: u32,
    env: &Env,
    opened: &[Opened<'_, '_>],
    not_found: &[String],
    damaged: &[String],
) -> Lookup {
    let mut out = lookup_present(loader, device, marker, index, env, opened, not_found);
    if damaged.is_empty() || matches!(out.outcome, Outcome::Disabled) || out.error_code == Some(12)
    {
        return out;
    }
    out.skipped = damaged.to_vec();
    if matches!(out.outcome, Outcome::Found { .. }) {
        if out.damaged.is_none() {
            out.reason.push_str(&format!(
                " (skipped, as the runtime does, the damaged {})",
                damaged.join("; ")
            ));
        }
        return out;
    }
    // Nothing loads, and an archive that might have held the kernel is damaged: that is
    // the answer, not a missing file to install.
    out.missing = None;
    out.package = None;
    out.damaged = Some(damaged.join("; "));
    out.reason = format!(
        "damaged archive {}: the runtime skips it, and finds nothing else (kpack error {})",
        damaged.join("; damaged archive "),
        out.error_code.unwrap_or(3)
    );
    out
}

fn lookup_present(
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
        skipped: Vec::new(),
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
                if let Err(e) = o.archive.code_object(k) {
                    out.error_code = e.runtime_code();
                    out.damaged = Some(format!("{}: {e}", o.path.display()));
                    out.reason = format!(
                        "{key} for {arch} in {} is damaged ({}): {e}",
                        o.path.display(),
                        e.runtime_note(6)
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
            // No archive tried has the kernel, though one carries this binary's group and
            // architecture. Where that archive holds other kernels of the binary, its TOC is
            // damaged or it belongs to another build of it: the answer is decided by an
            // archive that does not match the binary. Where it holds none, the binary has no
            // code for the architecture (a library of the group built for fewer targets than
            // the others, or an archive of another build of the group): a plain miss. (An
            // archive the old loader stops at while another has the kernel is a layout
            // question, said below.)
            let elsewhere = matches!(
                search::resolve(Loader::Current, &arches, &key, opened),
                Outcome::Found { .. }
            );
            let name = m.kernel_name.as_deref().unwrap_or("");
            let holds_binary = opened[*archive]
                .archive
                .kernels
                .iter()
                .any(|k| k.kernel_name() == name);
            if !elsewhere && holds_binary {
                out.damaged = Some(format!(
                    "{}: lists {arch} but has no kernel {key}: the archive is damaged or \
                     belongs to another build",
                    opened[*archive].path.display()
                ));
            } else if !elsewhere {
                out.reason.push_str(&format!(
                    ": it holds no code of {name} (built for other targets than the rest of \
                     its group, or the archive is another build's)"
                ));
            }
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
