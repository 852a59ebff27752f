//! Checks of `.kpack` archives and of split binaries against their archives: what makes the
//! runtime report "device kernel image is invalid".

use crate::archive::{split_key, Archive};
use crate::search::{self, Loader, Opened, Outcome};
use crate::view::ArchiveFile;
use gfxkit_host::{Discovery, WrapperMagic};
use gfxkit_target_id::{FeatureSetting, TargetId};
use rayon::prelude::*;
use serde::Serialize;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// File offset concerned (in the binary or the archive).
    pub offset: Option<u64>,
    /// The archive concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// The TOC key concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

fn finding(offset: Option<u64>, archive: Option<&str>, key: Option<&str>, m: String) -> Finding {
    Finding {
        offset,
        archive: archive.map(str::to_owned),
        key: key.map(str::to_owned),
        message: m,
    }
}

/// Checks one archive: it parses (header, known version, TOC, frame index), every kernel
/// decodes to its `original_size` (its frame's content checksum checked when it has one) and
/// to an AMDGPU code object built for its architecture (in parallel), and every TOC architecture is listed in
/// `gfx_arches` (the runtime looks archives up by `gfx_arches` only).
pub fn verify_archive(name: &str, data: &[u8]) -> Vec<Finding> {
    let a = match Archive::parse(data) {
        Ok(a) => a,
        Err(e) => {
            return vec![finding(
                Some(e.offset),
                Some(name),
                None,
                e.kind.to_string(),
            )]
        }
    };
    let mut out: Vec<Finding> = a
        .kernels
        .par_iter()
        .filter_map(|k| {
            a.code_object(k).err().map(|e| {
                finding(
                    Some(e.offset),
                    Some(name),
                    Some(&k.key),
                    format!("{} ({})", e.kind, e.runtime_note(6)),
                )
            })
        })
        .collect();
    let mut unlisted: Vec<&str> = a
        .kernels
        .iter()
        .map(|k| k.arch.as_str())
        .filter(|arch| !a.has_arch(arch))
        .collect();
    unlisted.sort_unstable();
    unlisted.dedup();
    for arch in unlisted {
        out.push(finding(
            Some(a.toc_offset),
            Some(name),
            None,
            format!(
                "the TOC holds kernels for {arch}, which gfx_arches ({}) does not list: the runtime never finds them",
                a.arches.join(" ")
            ),
        ));
    }
    if a.arches.is_empty() {
        out.push(finding(
            Some(a.toc_offset),
            Some(name),
            None,
            "gfx_arches is empty: the runtime finds no architecture in this archive".into(),
        ));
    }
    out
}

/// Every concrete device configuration (every target-ID feature on or off) of a processor.
fn concrete_devices(arch: &str) -> Vec<TargetId> {
    let Ok(t) = TargetId::parse(arch) else {
        return Vec::new();
    };
    let p = t.processor();
    TargetId::variants(p)
        .into_iter()
        .filter(|v| {
            p.target_id_features
                .iter()
                .all(|f| v.setting(*f) != FeatureSetting::Any)
        })
        .collect()
}

/// Checks a split binary against the archives found for it (`archives`, in search order,
/// `not_found` the marker paths that match no file): markers that do not parse or that the
/// runtime refuses, wrapper versions, keys no archive holds, TOC keys of this binary that
/// match no wrapper's index, archives lacking a kernel the binary asks for, variant archives
/// that shadow the plain one under the old loader, and every archive's own checks.
pub fn verify_split(
    found: &Discovery<'_>,
    archives: &[ArchiveFile<'_, '_>],
    not_found: &[String],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in not_found {
        out.push(finding(
            None,
            Some(p),
            None,
            "archive not found (kpack error 13 on a device that needs it)".into(),
        ));
    }
    for a in archives {
        let name = a.path.display().to_string();
        match &a.parsed {
            Ok(ar) => out.extend(verify_archive(&name, ar.bytes())),
            Err(e) => out.push(finding(
                Some(e.offset),
                Some(&name),
                None,
                format!("{} ({})", e.kind, e.runtime_note(3)),
            )),
        }
    }
    let parsed: Vec<(&str, &Archive<'_>)> = archives
        .iter()
        .filter_map(|a| {
            a.parsed
                .as_ref()
                .ok()
                .map(|p| (a.path.to_str().unwrap_or(""), p))
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for w in found
        .wrappers
        .iter()
        .filter(|w| w.magic == WrapperMagic::Hipk)
    {
        let at = Some(w.location.offset);
        if w.version != 1 {
            out.push(finding(
                at,
                None,
                None,
                format!("HIPK wrapper version {} (only 1 is known)", w.version),
            ));
        }
        let Some(m) = &w.kpack else {
            out.push(finding(
                at,
                None,
                None,
                "the HIPK wrapper's marker does not parse (kpack error 12)".into(),
            ));
            continue;
        };
        if let Some(why) = crate::marker::runtime_problem(m) {
            out.push(finding(at, None, None, format!("{why} (kpack error 12)")));
            continue;
        }
        let name = m.kernel_name.clone().unwrap_or_default();
        let key = format!("{name}#{}", w.kpack_index().unwrap_or(0));
        if keys.contains(&key) {
            out.push(finding(
                at,
                None,
                Some(&key),
                "two wrappers have the same index: both load the same code object".into(),
            ));
        }
        if !parsed.iter().any(|(_, a)| a.has_key(&key)) && !parsed.is_empty() {
            out.push(finding(
                at,
                None,
                Some(&key),
                "no archive holds this kernel (kpack error 5 on every device)".into(),
            ));
        }
        if !names.contains(&name) {
            names.push(name);
        }
        keys.push(key);
    }
    // Per archive: kernels of this binary it lacks, and TOC keys no wrapper asks for.
    for (path, a) in &parsed {
        let ours: Vec<&str> = a
            .kernels
            .iter()
            .map(|k| k.key.as_str())
            .filter(|k| names.iter().any(|n| n == split_key(k).0))
            .collect();
        if ours.is_empty() {
            continue;
        }
        for k in &keys {
            if !a.has_key(k) {
                out.push(finding(
                    None,
                    Some(path),
                    Some(k),
                    format!(
                        "archive for {} lacks this kernel, which the binary asks for",
                        a.arches.join(" ")
                    ),
                ));
            }
        }
        let mut extra: Vec<&str> = ours
            .into_iter()
            .filter(|k| !keys.iter().any(|x| x == k))
            .collect();
        extra.dedup();
        for k in extra {
            out.push(finding(
                None,
                Some(path),
                Some(k),
                "TOC key matches no wrapper's index (the index at +16 of each HIPK wrapper is what the runtime looks up)".into(),
            ));
        }
    }
    out.extend(old_loader_shadowing(&keys, archives));
    out
}

/// Where the old kpack loader fails on a layout the current one loads: an archive for a
/// feature variant (`gfx90a:xnack+`) that lacks a kernel of `keys` (the TOC keys of a split
/// binary's wrappers) shadows the plain archive that has it, on a device with that setting
/// (TheRock#7081). One finding per (archive, key).
pub fn old_loader_shadowing(keys: &[String], archives: &[ArchiveFile<'_, '_>]) -> Vec<Finding> {
    let mut out = Vec::new();
    let opened: Vec<Opened<'_, '_>> = archives
        .iter()
        .filter_map(|a| {
            a.parsed.as_ref().ok().map(|archive| Opened {
                path: a.path,
                archive,
            })
        })
        .collect();
    let mut devices: Vec<TargetId> = Vec::new();
    for a in &opened {
        for arch in &a.archive.arches {
            if arch.contains(':') {
                for d in concrete_devices(arch) {
                    if !devices.contains(&d) {
                        devices.push(d);
                    }
                }
            }
        }
    }
    let mut reported: Vec<(String, String)> = Vec::new();
    for d in &devices {
        let arches = search::arch_list(d);
        for key in keys {
            let old = search::resolve(Loader::Old, &arches, key, &opened);
            let cur = search::resolve(Loader::Current, &arches, key, &opened);
            if let (
                Outcome::KernelNotFound { archive: a, arch },
                Outcome::Found {
                    archive: b,
                    arch: arch2,
                },
            ) = (old, cur)
            {
                let pair = (opened[a].path.display().to_string(), key.clone());
                if reported.contains(&pair) {
                    continue;
                }
                reported.push(pair);
                out.push(finding(
                    None,
                    Some(&opened[a].path.display().to_string()),
                    Some(key),
                    format!(
                        "under the old loader this {arch} archive shadows {} ({arch2}) on {d}: it lacks the kernel, so loading fails (TheRock#7081)",
                        opened[b].path.display()
                    ),
                ));
            }
        }
    }
    out
}
