//! Every code object of a file with its SHA-256 (of the uncompressed code object), size,
//! target and where it is: what `gfxkit diff` compares and `gfxkit size --duplicates` groups.
//!
//! Units are decompressed (CCOB hash checked); host entries and empty entries are left out,
//! SPIR-V entries are kept (they are device code too). Code objects in kpack archives are
//! decoded from the archive ([`archive_digests`]); the caller finds the archives.

use crate::locate;
use gfxkit_bundle::{EntryId, EntryTarget};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// One code object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Digest {
    /// Where it is in its file: the unit (`bundle 0 in section .hip_fatbin at offset 0x3000`),
    /// or for kpack `<key> in <archive>`.
    pub unit: String,
    /// The entry ID as stored.
    pub entry: String,
    /// Its target: the target ID (`gfx90a:xnack-`), `amdgcnspirv`, or the entry's target
    /// text for other entries.
    pub target: String,
    /// Uncompressed size.
    pub size: u64,
    /// SHA-256 of the uncompressed code object, lowercase hex.
    pub sha256: String,
    /// Kernels its metadata lists, when asked for and readable.
    pub kernels: Option<usize>,
    /// For a code object in a kpack archive: the archive (as the caller named it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// The code-object version its ELF header gives (`None` when it is no AMDGPU code
    /// object). Not serialised.
    #[serde(skip)]
    pub code_object_version: Option<u8>,
}

/// What the digests of a file's code objects take beside each one's SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digesting {
    /// Count each code object's kernels (from its metadata).
    pub kernels: bool,
    /// Check each compressed bundle's MD5 hash as it is decoded (a mismatch is an error).
    /// Without, the hash is not computed: the SHA-256 of what was decoded stands for the
    /// content, and damage the codec does not catch itself goes unnoticed.
    pub check: bool,
}

impl Digesting {
    /// Kernels counted (or not), every hash checked: what `diff` and `size --duplicates` take.
    pub fn checked(kernels: bool) -> Digesting {
        Digesting {
            kernels,
            check: true,
        }
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The target an entry ID names, as [`Digest::target`] gives it; `None` for host entries.
pub fn target_of(id: &str) -> Option<String> {
    match EntryId::parse(id) {
        Ok(e) if e.is_host() => None,
        Ok(e) => match e.target() {
            EntryTarget::None => Some(e.triple().to_string()),
            t => Some(t.to_string()),
        },
        Err(_) => Some(id.to_owned()),
    }
}

/// The kernels a code object's metadata lists (`None` when it does not parse as one).
fn kernel_count(payload: &[u8]) -> Option<usize> {
    gfxkit_code_object::CodeObject::parse(payload)
        .ok()
        .map(|c| c.kernels().len())
}

fn digest(unit: &str, id: &str, payload: &[u8], kernels: bool) -> Option<Digest> {
    if payload.is_empty() {
        return None;
    }
    let target = target_of(id)?;
    Some(Digest {
        unit: unit.to_owned(),
        entry: id.to_owned(),
        target,
        size: payload.len() as u64,
        sha256: sha256_hex(payload),
        kernels: if kernels { kernel_count(payload) } else { None },
        archive: None,
        code_object_version: locate::check_payload(id, payload).version(),
    })
}

/// The code objects of every unit of `data` (bundles, host binaries, archives, code objects),
/// in file order, with the errors met (damaged units, each naming `name` and the unit). With
/// `how.kernels`, each code object's kernels are counted; with `how.check`, each compressed
/// bundle's hash is checked as it is decoded ([`Digesting`]). The error is a file whose device
/// code cannot be located at all.
pub fn file_digests(
    name: &str,
    data: &[u8],
    how: Digesting,
    limits: &gfxkit_bundle::limits::Limits,
) -> crate::Result<(Vec<Digest>, Vec<String>)> {
    let found = locate::locate_with(data, limits)?;
    Ok(units_digests(name, &found.units, &found.problems, how))
}

/// [`file_digests`] of a file whose [`Inventory`](crate::Inventory) is at hand (its layout
/// not read again). The error is the inventory's: a bundle file whose device code cannot be
/// read.
pub fn inventory_digests(
    name: &str,
    inv: &crate::Inventory<'_>,
    how: Digesting,
) -> crate::Result<(Vec<Digest>, Vec<String>)> {
    if let Some(e) = &inv.error {
        return Err(e.clone());
    }
    Ok(units_digests(name, &inv.units, &inv.problems, how))
}

fn units_digests(
    name: &str,
    units: &[gfxkit_host::Unit<'_>],
    problems: &[gfxkit_host::Problem],
    how: Digesting,
) -> (Vec<Digest>, Vec<String>) {
    let decoding = if how.check {
        locate::Decoding::Checked
    } else {
        locate::Decoding::Unchecked
    };
    locate::each_entry(name, units, problems, decoding, |where_, e| {
        Ok(digest(where_, e.id, e.payload, how.kernels)
            .into_iter()
            .collect())
    })
}

/// The code objects `picks` names in the kpack `archive` (at `archive_name`), decoded, with
/// the errors met (each naming `name`, the key and the archive).
pub fn archive_digests(
    name: &str,
    archive_name: &str,
    archive: &gfxkit_kpack::Archive<'_>,
    picks: &[&crate::kpack::Pick],
    kernels: bool,
) -> (Vec<Digest>, Vec<String>) {
    crate::kpack::each_pick(name, archive_name, archive, picks, |unit, p, payload| {
        Ok(digest(unit, &p.id, payload, kernels)
            .map(|d| Digest {
                archive: Some(archive_name.to_owned()),
                ..d
            })
            .into_iter()
            .collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_targets() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(target_of("host-x86_64-unknown-linux--"), None);
        assert_eq!(
            target_of("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-").as_deref(),
            Some("gfx90a:xnack-")
        );
        assert_eq!(
            target_of("hipv4-spirv64-amd-amdhsa--amdgcnspirv").as_deref(),
            Some("amdgcnspirv")
        );
        let bundle = gfxkit_bundle::write_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"abc"),
            ],
            4096,
        )
        .unwrap();
        let (d, errors) = file_digests(
            "b.hipfb",
            &bundle,
            Digesting::checked(true),
            &Default::default(),
        )
        .unwrap();
        assert!(errors.is_empty());
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].target.as_str(), d[0].size), ("gfx1030", 3));
        assert_eq!(d[0].sha256, sha256_hex(b"abc"));
        assert_eq!(d[0].kernels, None, "not a code object");
    }
}
