//! What a split binary's wrappers resolve to in a set of archives (for listing, extracting,
//! sizing and verifying), without a device in mind.

use crate::archive::{Archive, Kernel};
use crate::marker::KpackRef;
use gfxkit_host::{Discovery, WrapperMagic};
use serde::Serialize;
use std::path::Path;

/// An archive file found for a binary, parsed or not.
#[derive(Debug)]
pub struct ArchiveFile<'a, 'data> {
    /// Its path.
    pub path: &'a Path,
    /// Its contents, or why they do not read.
    pub parsed: crate::Result<Archive<'data>>,
}

/// One code object a wrapper's key finds.
#[derive(Debug, Clone, Serialize)]
pub struct EntryView {
    /// Architecture (target ID).
    pub arch: String,
    /// Index into the archives.
    pub archive: usize,
    /// The TOC entry.
    pub kernel: Kernel,
}

/// One `HIPK` wrapper and what its key finds.
#[derive(Debug, Clone, Serialize)]
pub struct WrapperView {
    /// File offset of the 24-byte record.
    pub record_offset: u64,
    /// The index N at +16.
    pub index: u32,
    /// The decoded marker, when it decodes.
    pub marker: Option<KpackRef>,
    /// `<kernel_name>#<N>`, when the marker has a kernel name.
    pub key: Option<String>,
    /// Code objects for the key, one per architecture (the first archive holding it wins),
    /// sorted by architecture.
    pub entries: Vec<EntryView>,
}

/// The `HIPK` wrappers of a discovery, in file order.
pub fn hipk_wrappers<'f>(
    found: &'f Discovery<'_>,
) -> impl Iterator<Item = &'f gfxkit_host::Wrapper> {
    found
        .wrappers
        .iter()
        .filter(|w| w.magic == WrapperMagic::Hipk)
}

/// Every distinct marker of a discovery's `HIPK` wrappers.
pub fn markers(found: &Discovery<'_>) -> Vec<KpackRef> {
    let mut out: Vec<KpackRef> = Vec::new();
    for w in hipk_wrappers(found) {
        if let Some(k) = &w.kpack {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    out
}

/// Resolves every `HIPK` wrapper of `found` in `archives` (in the order given).
pub fn view(found: &Discovery<'_>, archives: &[ArchiveFile<'_, '_>]) -> Vec<WrapperView> {
    let mut out = Vec::new();
    for w in hipk_wrappers(found) {
        let index = w.kpack_index().unwrap_or(0);
        let key = w
            .kpack
            .as_ref()
            .and_then(|k| k.kernel_name.as_ref())
            .map(|n| format!("{n}#{index}"));
        let mut entries: Vec<EntryView> = Vec::new();
        if let Some(key) = &key {
            for (ai, a) in archives.iter().enumerate() {
                let Ok(a) = &a.parsed else { continue };
                for k in a.kernels.iter().filter(|k| &k.key == key) {
                    if entries.iter().any(|e| e.arch == k.arch) {
                        continue;
                    }
                    entries.push(EntryView {
                        arch: k.arch.clone(),
                        archive: ai,
                        kernel: k.clone(),
                    });
                }
            }
        }
        entries.sort_by(|a, b| a.arch.cmp(&b.arch));
        out.push(WrapperView {
            record_offset: w.location.offset,
            index,
            marker: w.kpack.clone(),
            key,
            entries,
        });
    }
    out
}

/// The package TheRock ships an archive in, from its file name `<group>_<arch>.kpack`:
/// `rocm-sdk-device-<processor>` for ROCm's own groups, `<group>-device-<processor>`
/// otherwise (e.g. `amd-torch-device-gfx1151` for group `torch`, as TheRock names them).
pub fn package_hint(group: &str, arch: &str) -> String {
    let processor = arch.split(':').next().unwrap_or(arch);
    match group {
        "torch" | "amd-torch" => format!("amd-torch-device-{processor}"),
        _ => format!("rocm-sdk-device-{processor}"),
    }
}

/// The group of a search pattern `.../<group>_@GFXARCH@.kpack`.
pub fn pattern_group(pattern: &str) -> Option<&str> {
    let name = pattern.rsplit('/').next()?;
    let (pre, _) = name.split_once(crate::search::GFXARCH)?;
    pre.strip_suffix('_').filter(|g| !g.is_empty())
}
