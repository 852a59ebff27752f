//! The listing of a file's device code: units, their CCOB headers and entries, each entry's
//! ID parsed and its code object's header checked (what `gfxkit list` prints; `--json` is
//! the serialised [`Listing`]).

use crate::error::Result;
use crate::inventory::Inventory;
use crate::locate;
use gfxkit_bundle::{EntryId, EntryTarget};
use gfxkit_host::{Form, Unit};
use serde::Serialize;
use std::collections::BTreeSet;

/// The whole listing (`list --json`).
#[derive(Serialize, Debug, Clone)]
pub struct Listing {
    /// One per file, in the order given (by path within a directory).
    pub files: Vec<FileListing>,
    /// Totals over every file (with -r).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// Totals over a tree.
#[derive(Serialize, Default, Debug, Clone)]
pub struct Summary {
    /// Files holding device code.
    pub files_with_device_code: usize,
    /// Bundles (and other units of device code).
    pub bundles: usize,
    /// Entries.
    pub entries: usize,
    /// Bytes of device code as stored.
    pub device_bytes: u64,
    /// Processors named by entries, sorted.
    pub architectures: Vec<String>,
}

/// The listing of one file (the file object of `list --json`).
#[derive(Serialize, Debug, Clone)]
pub struct FileListing {
    /// The path as given.
    pub path: String,
    /// Bundles in file order (empty when the file holds none).
    pub bundles: Vec<BundleListing>,
    /// Why the file could not be listed (then `bundles` holds what was read before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Damage or oddities found in a host binary, with where.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<gfxkit_host::Problem>,
    /// A remark in place of bundles: set for a package in which no member holds device code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The typed error behind `error`, when the inventory produced one.
    #[serde(skip)]
    pub failure: Option<crate::Error>,
    /// For a kpack-split binary (`HIPK` wrappers): the archives found.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kpack_archives: Vec<String>,
    /// For a kpack-split binary: archive paths and patterns searched and not found.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kpack_not_found: Vec<String>,
    /// For a file of a container image (`IMAGE!/usr/lib/x.so`): the digest of the layer
    /// that holds it (`sha256:...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    /// For a Tensile index: its rows per processor and the files they resolve to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseListing>,
    /// Where the sections holding NVIDIA device code lie (CUDA fat binaries,
    /// [`Inventory::nvidia`]), which no AMD GPU runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvidia: Vec<gfxkit_host::Location>,
    /// The package file this listing is one member of, when it was read as a member of a
    /// package named or found (not set for a member named directly as `pkg!member`, which
    /// is an input of its own). Not in JSON: the path already starts with it.
    #[serde(skip)]
    pub package: Option<String>,
}

impl FileListing {
    /// Bytes of device code as stored.
    pub fn device_bytes(&self) -> u64 {
        self.bundles.iter().map(|b| b.size).sum()
    }

    /// Processors named by entries, sorted.
    pub fn architectures(&self) -> BTreeSet<String> {
        self.bundles
            .iter()
            .flat_map(|b| &b.entries)
            .filter_map(|e| e.processor.clone())
            .collect()
    }

    /// Entries over every unit.
    pub fn entries(&self) -> usize {
        self.bundles.iter().map(|b| b.entries.len()).sum()
    }

    /// Whether this is an input read in full that holds no device code and nothing else to
    /// report: no unit, no error, no problem, no kpack archive found or missing. (A package
    /// without any member that may hold device code carries a `note` instead.)
    pub fn without_device_code(&self) -> bool {
        self.bundles.is_empty()
            && self.database.is_none()
            && self.error.is_none()
            && self.problems.is_empty()
            && self.note.is_none()
            && self.kpack_archives.is_empty()
            && self.kpack_not_found.is_empty()
    }

    /// The member's name inside [`FileListing::package`] (`lib/x.so` of `p.whl!lib/x.so`),
    /// for a listing read as a member of a package.
    pub fn member_name(&self) -> Option<&str> {
        let p = self.package.as_deref()?;
        self.path.strip_prefix(p)?.strip_prefix('!')
    }
}

/// The names of inputs without device code in a listing ([`FileListing::without_device_code`],
/// and packages without any member that may hold device code), in listing order: what
/// `list --summary` reports under `without_device_code`.
pub fn without_device_code(files: &[FileListing]) -> Vec<&str> {
    files
        .iter()
        .filter(|f| f.without_device_code() || (f.note.is_some() && f.bundles.is_empty()))
        .map(|f| f.path.as_str())
        .collect()
}

/// How many names a one-line list of names shows before `and N more` (text output; JSON
/// lists every name).
pub const NAMES_SHOWN: usize = 8;

/// A one-line list of `names`: the first [`NAMES_SHOWN`] joined by `, `, then
/// `and N more` when there are more.
pub fn short_names<S: AsRef<str>>(names: &[S]) -> String {
    let names: Vec<&str> = names.iter().map(|n| n.as_ref()).collect();
    shortened(&names, NAMES_SHOWN)
}

/// `items` on one line: the first `most` joined by `, `, then `and N more` for the rest.
pub fn shortened<T: std::fmt::Display>(items: &[T], most: usize) -> String {
    let mut s = items
        .iter()
        .take(most)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > most {
        s.push_str(&format!(" and {} more", items.len() - most));
    }
    s
}

/// One bundle (or other unit of device code).
#[derive(Serialize, Debug, Clone)]
pub struct BundleListing {
    /// Archive member holding it, for archives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// ELF section holding it, or null (standalone files, and host files without a section
    /// table, whose bundles are found through the program headers).
    pub section: Option<String>,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes the bundle occupies in the file.
    pub size: u64,
    /// `uncompressed` or `ccob`; `object-bundle`, `code-object` or `offload-image` for the
    /// other units of device code.
    pub format: &'static str,
    /// The CCOB header, or null.
    pub ccob: Option<CcobListing>,
    /// Length of the uncompressed bundle header (0 for units that are not bundles).
    pub header_size: u64,
    /// Entries in header order.
    pub entries: Vec<EntryListing>,
    /// For `kpack` units: the TOC key (`<kernel_name>#<N>`) the wrapper looks up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kpack_key: Option<String>,
}

/// A CCOB header.
#[derive(Serialize, Debug, Clone)]
pub struct CcobListing {
    /// 1, 2 or 3.
    pub version: u16,
    /// `zlib` or `zstd`.
    pub method: &'static str,
    /// Declared size of the uncompressed bundle.
    pub uncompressed_size: u64,
    /// Uncompressed size over stored size.
    pub ratio: f64,
    /// Whether the stored hash matches; null unless the bundle was decompressed (--check).
    pub hash_ok: Option<bool>,
}

/// One entry.
#[derive(Serialize, Debug, Clone)]
pub struct EntryListing {
    /// The ID exactly as stored.
    pub id: String,
    /// Offload kind, or null when the ID does not parse.
    pub kind: Option<String>,
    /// Canonical triple (`amdgcn-amd-amdhsa-`), or null.
    pub triple: Option<String>,
    /// Canonical target ID (`gfx90a:xnack+`), null for host entries or unparsable IDs.
    pub target_id: Option<String>,
    /// Canonical entry ID, or null.
    pub canonical_id: Option<String>,
    /// What is worth knowing about an ID that parses (LLVM 22's `gfx1250:xnack-`: an xnack
    /// setting on a processor whose xnack is always on), when there is something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_note: Option<String>,
    /// Why the ID does not parse, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_error: Option<String>,
    /// Payload offset from the start of the uncompressed bundle.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
    /// The code-object version from the payload's ELF header; null when not read.
    pub code_object_version: Option<u8>,
    /// Whether the payload's `e_flags` fit the target ID of the entry ID; null when unknown
    /// (not read, not a code object, or no target ID).
    pub eflags_agree: Option<bool>,
    /// Why they do not fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eflags_mismatch: Option<String>,
    /// The processor its target ID names (for summaries; not printed).
    #[serde(skip)]
    pub processor: Option<String>,
    /// For code objects in kernel databases: the `.kdb` record's `kernel_name` or the `.aks2`
    /// kernel's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For entries in kpack archives: the archive holding the code object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// For entries in kpack archives: the bytes stored (compressed) in the archive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_size: Option<u64>,
}

pub(crate) fn entry_listing(e: locate::ListedEntry) -> EntryListing {
    let (code_object_version, eflags_agree, eflags_mismatch) = match &e.check {
        Some(c) => (
            c.version(),
            c.agrees(),
            match c {
                locate::PayloadCheck::Checked { mismatch, .. } => mismatch.clone(),
                _ => None,
            },
        ),
        None => (None, None, None),
    };
    match EntryId::parse(&e.id) {
        Ok(id) => EntryListing {
            kind: Some(id.kind().to_string()),
            triple: Some(id.triple().to_string()),
            target_id: match id.target() {
                EntryTarget::None => None,
                t => Some(t.to_string()),
            },
            // The summary line names SPIR-V (amdgcnspirv) beside the processors.
            processor: id
                .target_id()
                .map(|t| t.processor().name.to_owned())
                .or_else(|| {
                    gfxkit_host::unit::is_spirv_entry(&id).then(|| "amdgcnspirv".to_owned())
                }),
            canonical_id: Some(id.canonical()),
            id_note: id.target_id().and_then(|t| {
                let notes: Vec<String> = t.notes().iter().map(ToString::to_string).collect();
                (!notes.is_empty()).then(|| notes.join("; "))
            }),
            id_error: None,
            id: e.id,
            offset: e.offset,
            size: e.size,
            code_object_version,
            eflags_agree,
            eflags_mismatch,
            archive: None,
            stored_size: None,
            name: None,
        },
        Err(err) => EntryListing {
            kind: None,
            triple: None,
            target_id: None,
            processor: None,
            canonical_id: None,
            id_note: None,
            id_error: Some(err.to_string()),
            id: e.id,
            offset: e.offset,
            size: e.size,
            code_object_version,
            eflags_agree,
            eflags_mismatch,
            archive: None,
            stored_size: None,
            name: None,
        },
    }
}

/// How a unit of device code is stored, as `list` names it (`format` in its JSON, `container`
/// in the census): `ccob` (a compressed bundle), `uncompressed`, `object-bundle`,
/// `code-object` or `offload-image`.
pub fn storage_name(form: Form, compressed: bool) -> &'static str {
    match form {
        Form::Bundle if compressed => "ccob",
        Form::Bundle => "uncompressed",
        Form::ObjectBundle => "object-bundle",
        Form::CodeObject => "code-object",
        Form::OffloadImage => "offload-image",
    }
}

/// The form a [`storage_name`] names; `None` for another name.
pub fn form_of_storage_name(name: &str) -> Option<Form> {
    [
        Form::Bundle,
        Form::ObjectBundle,
        Form::CodeObject,
        Form::OffloadImage,
    ]
    .into_iter()
    .find(|&f| storage_name(f, false) == name || storage_name(f, true) == name)
}

fn bundle_listing(b: &Unit<'_>, check: bool) -> Result<BundleListing> {
    let (entries, header_size, hash_ok) = locate::read_header(b, check)?;
    let entries: Vec<EntryListing> = entries.into_iter().map(entry_listing).collect();
    let size = match b.form {
        Form::ObjectBundle => b.loose.iter().map(|e| e.payload.len() as u64).sum(),
        _ => b.bytes.len() as u64,
    };
    Ok(BundleListing {
        member: b.member.clone(),
        section: b.section.clone(),
        offset: b.offset,
        size,
        format: storage_name(b.form, b.ccob.is_some()),
        ccob: b.ccob.map(|h| CcobListing {
            version: h.version,
            method: h.method.name(),
            uncompressed_size: h.uncompressed_size,
            ratio: ratio(h.uncompressed_size, size),
            hash_ok,
        }),
        header_size,
        entries,
        kpack_key: None,
    })
}

fn ratio(uncompressed: u64, stored: u64) -> f64 {
    let r = uncompressed as f64 / stored.max(1) as f64;
    (r * 100.0).round() / 100.0
}

/// Lists the device code in one file's bytes; errors are kept in the listing.
pub fn list_bytes(name: &str, data: &[u8], check: bool) -> FileListing {
    list(name, &Inventory::of(data), check)
}

/// The listing of an inventory, named `name`: every unit and its entries (compressed bundles
/// read from their header only unless `check`, which decompresses them and checks their
/// hash). Errors are kept in the listing.
pub fn list(name: &str, inv: &Inventory<'_>, check: bool) -> FileListing {
    let mut out = FileListing {
        path: name.to_owned(),
        bundles: Vec::new(),
        error: None,
        problems: Vec::new(),
        note: None,
        failure: None,
        kpack_archives: Vec::new(),
        kpack_not_found: Vec::new(),
        layer: None,
        database: None,
        nvidia: inv.nvidia(),
        package: None,
    };
    if let Some(e) = &inv.error {
        out.error = Some(format!("{name}: {e}"));
        out.failure = Some(e.clone());
        return out;
    }
    out.problems = inv.problems.clone();
    for b in &inv.units {
        match bundle_listing(b, check) {
            Ok(l) => out.bundles.push(l),
            Err(e) => {
                // Every unit names the file first (the message stands alone on stderr).
                out.error = Some(format!("{name}: {}: {e}", b.describe()));
                out.failure = Some(e);
                break;
            }
        }
    }
    out
}

/// A listing for a file that could not be read at all.
pub fn unreadable(name: &str, error: String) -> FileListing {
    FileListing {
        path: name.to_owned(),
        bundles: Vec::new(),
        error: Some(error),
        problems: Vec::new(),
        note: None,
        failure: None,
        kpack_archives: Vec::new(),
        kpack_not_found: Vec::new(),
        layer: None,
        database: None,
        nvidia: Vec::new(),
        package: None,
    }
}

/// Totals over the listings of a tree (`list -r`).
pub fn summarize(files: &[FileListing]) -> Summary {
    let mut s = Summary::default();
    let mut archs = BTreeSet::new();
    for f in files.iter().filter(|f| !f.bundles.is_empty()) {
        s.files_with_device_code += 1;
        s.bundles += f.bundles.len();
        s.entries += f.entries();
        s.device_bytes += f.device_bytes();
        archs.extend(f.architectures());
    }
    s.architectures = archs.into_iter().collect();
    s
}

impl Listing {
    /// Whether some file could not be listed or holds damaged data.
    pub fn failed(&self) -> bool {
        self.files.iter().any(|f| {
            f.error.is_some()
                || f.problems
                    .iter()
                    .any(|p| p.severity == gfxkit_host::Severity::Error)
        })
    }

    /// Whether some compressed bundle's hash was checked and did not match.
    pub fn bad_hash(&self) -> bool {
        self.files
            .iter()
            .flat_map(|f| &f.bundles)
            .any(|b| b.ccob.as_ref().and_then(|c| c.hash_ok) == Some(false))
    }
}

/// A Tensile index as `list` shows it (`"database"` of a file listing).
#[derive(Serialize, Debug, Clone)]
pub struct DatabaseListing {
    /// `tensile` (or `tensile-mapping` for a TensileLite `_Mapping.dat`, `aiter-map` for an
    /// aiter kernel map).
    pub kind: &'static str,
    /// Solutions the index lists (the kernels of an aiter kernel map).
    pub solutions: usize,
    /// One per row of the root `Hardware` node (one for a shard without one).
    pub rows: Vec<TensileRow>,
    /// Whether the files were resolved (false when the index's directory could not be
    /// listed, as for a package member).
    pub resolved: bool,
}

/// One hardware row of a Tensile index.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct TensileRow {
    /// The processor the row's predicate names (null for the catch-all `TruePred` row).
    pub processor: Option<String>,
    /// The CU count the predicate names, if any.
    pub cu_count: Option<u64>,
    /// Solutions reachable below the row (in the index itself; a lazy master's are in its
    /// shards).
    pub solutions: usize,
    /// Shards (lazy placeholders) below the row.
    pub shards: usize,
    /// Files the library opens for the row's processor (relative to the index's directory).
    pub files: Vec<String>,
    /// Files the row needs that are absent.
    pub missing: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_storage_name_names_its_form_back() {
        for form in [
            Form::Bundle,
            Form::ObjectBundle,
            Form::CodeObject,
            Form::OffloadImage,
        ] {
            for compressed in [false, true] {
                let name = storage_name(form, compressed);
                assert_eq!(form_of_storage_name(name), Some(form), "{name}");
            }
        }
        assert_eq!(storage_name(Form::Bundle, true), "ccob");
        assert_eq!(form_of_storage_name("object bundle"), None);
    }
}
