//! Which entries `gfxkit extract` writes, and their file names.
//!
//! An entry is selected by a requested ID when its kind and triple fit (a bare target ID means
//! a HIP entry) and its target ID can describe the same configuration
//! ([`gfxkit_target_id::TargetId::overlaps`]): `gfx90a` selects `gfx90a:xnack+` and
//! `gfx90a:xnack-`; `gfx90a:xnack+` selects `gfx90a:xnack+` and a plain `gfx90a`, not
//! `gfx90a:xnack-`. Without a request every entry is selected except empty host entries.

use crate::error::{Error, ErrorKind, Result};
use crate::locate::ListedEntry;
use gfxkit_bundle::{EntryId, EntryTarget};

/// The entry ID a user wrote: a full entry ID, or a bare target ID meaning a HIP entry.
///
/// `amdgcnspirv` (the name `--offload-arch` takes) means the SPIR-V entry for AMD GPUs. Text
/// that starts with an offload kind (`hip-`, `hipv4-`, ...) is an entry ID, and its parse error
/// is the one reported.
pub fn requested_id(s: &str) -> Result<EntryId> {
    if s == "amdgcnspirv" {
        return Ok(EntryId::parse("hipv4-spirv64-amd-amdhsa--amdgcnspirv")?);
    }
    match EntryId::parse(s) {
        Ok(id) => return Ok(id),
        Err(e)
            if gfxkit_bundle::OffloadKind::by_name(s.split('-').next().unwrap_or("")).is_some() =>
        {
            return Err(e.into())
        }
        Err(_) => {}
    }
    let tid = gfxkit_target_id::TargetId::parse(s).map_err(|error| {
        Error::new(ErrorKind::NotATarget {
            given: s.to_owned(),
            error,
        })
    })?;
    Ok(EntryId::hip(tid))
}

/// Whether the ID a user asked for selects an entry: compatible kinds and triples, and target
/// IDs that can describe the same configuration. Entries whose target gfxkit does not know
/// match only the same text.
pub fn selects(wanted: &EntryId, entry: &EntryId) -> bool {
    if !entry.kind().is_compatible(wanted.kind(), false)
        || !entry.triple().is_compatible(wanted.triple())
    {
        return false;
    }
    match (entry.target(), wanted.target()) {
        (EntryTarget::Known(a), EntryTarget::Known(b)) => a.overlaps(b),
        (a, b) => a == b,
    }
}

/// The indexes of the entries of one unit that `wanted` selects (every entry but empty host
/// entries when `wanted` is empty), in entry order; `matched[i]` is set for each request that
/// selected something.
pub fn pick(entries: &[ListedEntry], wanted: &[EntryId], matched: &mut [bool]) -> Vec<usize> {
    if wanted.is_empty() {
        return (0..entries.len())
            .filter(|&i| {
                let host = EntryId::parse(&entries[i].id).is_ok_and(|id| id.is_host());
                !(entries[i].size == 0 && host)
            })
            .collect();
    }
    let mut picked = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Ok(id) = EntryId::parse(&e.id) else {
            continue;
        };
        for (wi, w) in wanted.iter().enumerate() {
            if selects(w, &id) {
                if let Some(m) = matched.get_mut(wi) {
                    *m = true;
                }
                if !picked.contains(&i) {
                    picked.push(i);
                }
            }
        }
    }
    picked
}

/// Why the payload of an entry (ID `id`, file-name extension `ext`) must not be written as
/// the code object its ID names, if so: an AMDGPU payload (or an ELF payload under an AMDGPU
/// ID) that contradicts its ID ([`crate::locate::contradiction`]), whose ELF structure or
/// metadata does not read, or whose `e_flags` name another target than its metadata
/// ([`gfxkit_code_object::CodeObject::check_identity`]: the kernels' metadata is checked as
/// MessagePack only; `verify` and `inspect` read it whole). Bitcode,
/// SPIR-V and host payloads are written as they are.
pub fn unwritable(id: &str, payload: &[u8], ext: &str) -> Option<String> {
    if ext != "co" || !payload.starts_with(b"\x7fELF") {
        return None;
    }
    let amdgpu_id = EntryId::parse(id).is_ok_and(|e| e.triple().is_amdgpu());
    let amdgpu_payload =
        gfxkit_host::InputKind::sniff(payload) == gfxkit_host::InputKind::CodeObject;
    if !amdgpu_id && !amdgpu_payload {
        return None;
    }
    if let Some(c) = crate::locate::contradiction(id, payload) {
        return Some(c);
    }
    match gfxkit_code_object::CodeObject::check_identity(payload) {
        Err(e) => Some(format!("the code object cannot be read: {e}")),
        Ok(mismatch) => mismatch.map(|i| i.to_string()),
    }
}

/// A file-name-safe form of an entry ID: every character other than letters, digits, `.`,
/// `_`, `+` and `-` becomes `_`.
pub fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str, size: u64) -> ListedEntry {
        ListedEntry {
            id: id.to_owned(),
            offset: 0,
            size,
            check: None,
        }
    }

    #[test]
    fn a_bare_processor_selects_every_feature_variant_and_host_entries_are_skipped() {
        let entries = [
            listed("host-x86_64-unknown-linux--", 0),
            listed("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", 4),
            listed("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 4),
            listed("hipv4-amdgcn-amd-amdhsa--gfx1100", 4),
        ];
        let mut m = [false; 1];
        assert_eq!(pick(&entries, &[], &mut m), [1, 2, 3]);
        let want = [requested_id("gfx90a").unwrap()];
        assert_eq!(pick(&entries, &want, &mut m), [1, 2]);
        assert!(m[0]);
        let want = [
            requested_id("gfx90a:xnack+").unwrap(),
            requested_id("gfx942").unwrap(),
        ];
        let mut m = [false; 2];
        assert_eq!(pick(&entries, &want, &mut m), [1]);
        assert_eq!(m, [true, false]);
        assert!(requested_id("not-a-target").is_err());
        assert_eq!(
            sanitize("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "hipv4-amdgcn-amd-amdhsa--gfx90a_xnack+"
        );
    }
}
