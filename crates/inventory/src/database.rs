//! Kernel databases as device code: MIOpen `.kdb` records and AOTriton `.aks2` kernels as
//! entries (`list`, `extract`, `size`, `verify`), and Tensile indexes as rows per processor
//! with the files rocBLAS's rule resolves them to ([`gfxkit_kernel_db`] reads the formats).
//!
//! A Tensile index names kernels, not bytes: its rows are listed under
//! [`FileListing::database`](crate::list::FileListing); the code objects it resolves to are
//! counted where they are (raw code objects beside it). The caller (the one crate that
//! touches files) lists the index's directory and opens the files resolved.
//!
//! Entry IDs: a `.kdb` record's target is the `-mcpu=` at the end of its `kernel_args`, else
//! the processor and features its file name says (`gfx90a_sramecc68.kdb`); an `.aks2`
//! kernel's is read from its code object's ELF header.

use crate::doctor::{DoctorFile, Examined};
use crate::list::{
    entry_listing, BundleListing, DatabaseListing, EntryListing, FileListing, TensileRow,
};
use crate::locate::{check_payload, ListedEntry};
use crate::release::refused_text;
use crate::verify::{Beside, BesideRow, Finding, FindingKind, ShardRow, Verification};
use gfxkit_kernel_db::aiter::KernelMap;
use gfxkit_kernel_db::kdb::{self, DbId, Kdb, Record};
use gfxkit_kernel_db::loads::{self, Device, Flavor, Loads};
use gfxkit_kernel_db::mapping::{self, Mapping};
use gfxkit_kernel_db::resolve::{self, Listing, Xnack};
use gfxkit_kernel_db::tensile::{self, Index};
use gfxkit_kernel_db::{aks2::Aks2, Limits};
use std::borrow::Cow;

pub use gfxkit_kernel_db::sniff::DbKind;

/// The entry ID of a code object for `target` (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`;
/// an empty target gives the ID without one).
pub fn entry_id(target: &str) -> String {
    format!("hipv4-amdgcn-amd-amdhsa--{target}")
}

/// The kind of kernel database a file is, from its name (a path or `pkg!member`) and bytes.
pub fn kind(name: &str, data: &[u8]) -> Option<DbKind> {
    let n = data.len().min(gfxkit_kernel_db::sniff::PREFIX_LEN);
    gfxkit_kernel_db::sniff::sniff(name, &data[..n])
}

/// The last component of a path or `pkg!member` name.
pub fn base_name(name: &str) -> &str {
    name.rsplit(['/', '!']).next().unwrap_or(name)
}

/// The target a `.kdb` record is for: its `-mcpu=`, else what the file name says.
pub fn kdb_target(record: &Record, file: Option<&DbId>) -> Option<String> {
    if let Some(m) = record.mcpu() {
        return Some(m.to_owned());
    }
    let id = file?;
    let mut t = id.processor.clone();
    match id.sramecc {
        Some(true) => t.push_str(":sramecc+"),
        Some(false) => t.push_str(":sramecc-"),
        None => {}
    }
    if id.xnack {
        t.push_str(":xnack+");
    }
    Some(t)
}

/// The target ID a code object's ELF header names, canonical, if it reads.
pub fn code_object_target(bytes: &[u8]) -> Option<String> {
    gfxkit_code_object::Header::parse(bytes)
        .ok()?
        .target_id()
        .ok()
        .map(|t| t.to_string())
}

/// One code object held by a database: a `.kdb` record or an `.aks2` kernel.
#[derive(Debug, Clone)]
pub struct DbEntry {
    /// The entry ID (`hipv4-amdgcn-amd-amdhsa--<target>`).
    pub id: String,
    /// The record's `kernel_name` or the kernel's directory name.
    pub name: String,
    /// Size of the code object.
    pub size: u64,
    /// Bytes stored for it (the `.kdb` blob; for `.aks2` the image, inside one xz stream).
    pub stored: u64,
    /// `kern_db id N` or `entry N`.
    pub place: String,
    /// The code object, when it was at hand (`.aks2` kernels; `.kdb` blobs only when decoded).
    pub bytes: Option<Vec<u8>>,
}

/// A `.kdb` or `.aks2` file read: its entries, and a handle to decode `.kdb` blobs.
pub struct Opened {
    /// `miopen-kdb` or `aks2`.
    pub kind: DbKind,
    /// Entries in file order (`.kdb`: by `id`).
    pub entries: Vec<DbEntry>,
    kdb: Option<(Kdb, Vec<Record>)>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("kind", &self.kind)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

impl Opened {
    /// The code object of entry `i`, decoded and checked (a `.kdb` blob against its
    /// `uncompressed_size` and MD5).
    pub fn code_object(&self, i: usize) -> Result<Cow<'_, [u8]>, gfxkit_kernel_db::Error> {
        let e = &self.entries[i];
        if let Some(b) = &e.bytes {
            return Ok(Cow::Borrowed(b));
        }
        match &self.kdb {
            Some((db, records)) => db.code_object(&records[i]).map(Cow::Owned),
            None => Ok(Cow::Borrowed(&[])),
        }
    }
}

/// Opens a `.kdb` or `.aks2` file named `name` (records and directory read, `.kdb` blobs not
/// decoded). `None` for other kinds.
pub fn open(
    name: &str,
    data: &[u8],
    kind: DbKind,
) -> Option<Result<Opened, gfxkit_kernel_db::Error>> {
    let limits = Limits::default();
    Some(match kind {
        DbKind::MiopenKdb => (|| {
            let db = Kdb::from_bytes(data, &limits)?;
            let records = db.records()?;
            let file_id = DbId::parse_file_name(base_name(name)).ok();
            let entries = records
                .iter()
                .map(|r| DbEntry {
                    id: entry_id(&kdb_target(r, file_id.as_ref()).unwrap_or_default()),
                    name: r.kernel_name.clone(),
                    size: if r.uncompressed_size == 0 {
                        r.blob_len
                    } else {
                        r.uncompressed_size
                    },
                    stored: r.blob_len,
                    place: format!("kern_db id {}", r.id),
                    bytes: None,
                })
                .collect();
            Ok(Opened {
                kind,
                entries,
                kdb: Some((db, records)),
            })
        })(),
        DbKind::Aks2 => Aks2::parse(data, &limits).map(|a| {
            let entries = a
                .entries
                .iter()
                .map(|e| {
                    let img = a.image(e);
                    DbEntry {
                        id: entry_id(&code_object_target(img).unwrap_or_default()),
                        name: e.name.clone(),
                        size: u64::from(e.image_size),
                        stored: u64::from(e.image_size),
                        place: format!("entry {}", e.position),
                        bytes: Some(img.to_vec()),
                    }
                })
                .collect();
            Opened {
                kind,
                entries,
                kdb: None,
            }
        }),
        DbKind::TensileIndex | DbKind::TensileMapping | DbKind::AiterMap => return None,
    })
}

/// The files one processor needs: those rocBLAS opens and those absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowFiles {
    /// Files opened (relative to the index's directory).
    pub files: Vec<String>,
    /// Files absent.
    pub missing: Vec<String>,
}

/// The files the library's rule ([`loads`]: rocBLAS's or hipBLASLt's, told by the
/// directory) opens for one row of `processor` in the directory listed by `listing`, and those
/// missing. For a lazy master, each placeholder's shard index and code objects
/// ([`loads::shard_files`]). For one index of every processor, Tensile's names for what a build
/// writes per processor: `TensileLibrary_<processor>.co` (assembly kernels) and, when the
/// directory holds source kernels for any processor, `Kernels.so-000-<processor>.hsaco`, each
/// also with its `-xnack±` spellings; missing when no spelling is present.
pub fn row_files(listing: &Listing, processor: &str, placeholders: &[&str]) -> RowFiles {
    let flavor = Flavor::of(listing);
    let (dir, index, lazy) = loads::index(listing, flavor, processor, false);
    let mut out = RowFiles::default();
    let Some(opened) = index.opened else {
        out.missing.extend(index.missed.last().cloned());
        return out;
    };
    let join = |name: &str| {
        if dir.is_empty() {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        }
    };
    if lazy {
        let suffix = loads::shard_suffix(&opened);
        for p in placeholders {
            let f = loads::shard_files(listing, flavor, &dir, p, processor, suffix);
            out.files.extend(f.files);
            out.missing.extend(f.missing);
        }
    } else {
        out.files = resolve::rocblas(listing, processor, Xnack::Unspecified).code_objects;
        let mut expected = vec![format!("TensileLibrary_{processor}.co")];
        if listing_has_prefix(listing, &dir, "Kernels.so-") {
            expected.push(format!("Kernels.so-000-{processor}.hsaco"));
        }
        for e in expected {
            let present = resolve::xnack_variants(&e)
                .iter()
                .any(|v| listing.exists(&join(v)));
            if !present {
                out.missing.push(join(&e));
            }
        }
    }
    out.files.sort();
    out.files.dedup();
    out.missing.sort();
    out.missing.dedup();
    out
}

fn listing_has_prefix(listing: &Listing, dir: &str, prefix: &str) -> bool {
    listing.files_in(dir).any(|n| n.starts_with(prefix))
}

/// A Tensile index read: its MessagePack bytes, inflated from a `.zlib` file or transcoded
/// from a `.yaml` one ([`tensile::index_bytes`], bounded).
pub struct TensileFile {
    /// The decoded bytes, when they are not the file's own.
    bytes: Option<Vec<u8>>,
}

impl TensileFile {
    /// Reads an index's bytes.
    pub fn new(name: &str, data: &[u8]) -> Result<TensileFile, gfxkit_kernel_db::Error> {
        let bytes = match tensile::index_bytes(name, data, &Limits::default())? {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(v) => Some(v),
        };
        Ok(TensileFile { bytes })
    }

    /// The index's MessagePack bytes.
    pub fn bytes<'a>(&'a self, data: &'a [u8]) -> &'a [u8] {
        self.bytes.as_deref().unwrap_or(data)
    }
}

/// The processor a per-processor index is for, from its name
/// (`TensileLibrary_lazy_gfx90a.dat`, `TensileLibrary_gfx90a.dat`, `.zlib`/`.yaml` too) or its
/// directory (`library/gfx942/`); `None` for an index of every processor (`TensileLibrary.dat`)
/// and for shards.
pub fn index_processor(name: &str) -> Option<String> {
    let processor = processor_named;
    let base = base_name(name);
    let stem = base.split('.').next().unwrap_or(base);
    let from_name = stem
        .strip_prefix("TensileLibrary_lazy_")
        .or_else(|| stem.strip_prefix("TensileLibrary_"))
        .and_then(processor);
    from_name.or_else(|| {
        let mut parts = name.rsplit(['/', '!']);
        parts.next();
        parts.next().and_then(processor)
    })
}

/// `w` when it is a processor's name (`gfx1151`: no features).
fn processor_named(w: &str) -> Option<String> {
    gfxkit_target_id::TargetId::parse(w)
        .ok()
        .filter(|t| !t.has_features() && t.processor().name == w)
        .map(|_| w.to_owned())
}

/// The rows of a parsed index (named `name`) with their files resolved against `listing`
/// (none when it is `None`). A row without a processor of its own (`TruePred`) in a
/// per-processor index ([`index_processor`]) resolves for that processor: its fallback shards.
pub fn tensile_rows(name: &str, index: &Index<'_>, listing: Option<&Listing>) -> Vec<TensileRow> {
    let own = index_processor(name);
    index
        .rows()
        .into_iter()
        .map(|r| {
            let processor = r.processor.or(own.as_deref());
            let files = match (listing, processor) {
                (Some(l), Some(p)) if r.processor.is_some() || !r.placeholders.is_empty() => {
                    row_files(l, p, &r.placeholders)
                }
                _ => RowFiles::default(),
            };
            TensileRow {
                processor: r.processor.map(str::to_owned),
                cu_count: r.cu_count,
                solutions: r.solutions.len(),
                shards: r.placeholders.len(),
                files: files.files,
                missing: files.missing,
            }
        })
        .collect()
}

fn empty_listing(name: &str) -> FileListing {
    crate::list::unreadable(name, String::new())
}

/// Lists a kernel database: `.kdb` and `.aks2` as one unit (`format` `miopen-kdb`/`aks2`)
/// with an entry per code object; a Tensile index as [`DatabaseListing`] rows, its files
/// resolved against `dir` (the listing of the index's directory). Errors are kept in the
/// listing, naming the file.
pub fn list(name: &str, data: &[u8], kind: DbKind, dir: Option<&Listing>) -> FileListing {
    let mut out = empty_listing(name);
    out.error = None;
    match kind {
        DbKind::TensileIndex | DbKind::TensileMapping => {
            match tensile_listing(name, data, kind, dir) {
                Ok(d) => out.database = Some(d),
                Err(e) => out.error = Some(format!("{name}: {e}")),
            }
        }
        DbKind::MiopenKdb | DbKind::Aks2 => match open(name, data, kind) {
            Some(Ok(o)) => out.bundles.push(unit_listing(&o, data.len() as u64)),
            Some(Err(e)) => out.error = Some(format!("{name}: {e}")),
            None => {}
        },
        DbKind::AiterMap => match KernelMap::parse(data, &Limits::default()) {
            Ok(m) => {
                out.database = Some(DatabaseListing {
                    kind: kind.name(),
                    solutions: m.rows.len(),
                    rows: Vec::new(),
                    resolved: false,
                })
            }
            Err(e) => out.error = Some(format!("{name}: {e}")),
        },
    }
    out
}

fn tensile_listing(
    name: &str,
    data: &[u8],
    kind: DbKind,
    listing: Option<&Listing>,
) -> Result<DatabaseListing, gfxkit_kernel_db::Error> {
    let file = TensileFile::new(name, data)?;
    if kind == DbKind::TensileMapping {
        // Not a solution index: the solutions it maps to their kernel libraries.
        let m = Mapping::parse(file.bytes(data), &Limits::default())?;
        return Ok(DatabaseListing {
            kind: kind.name(),
            solutions: m.libraries.len(),
            rows: Vec::new(),
            resolved: listing.is_some(),
        });
    }
    let index = Index::parse(file.bytes(data))?;
    Ok(DatabaseListing {
        kind: kind.name(),
        solutions: index.solutions.len(),
        rows: tensile_rows(name, &index, listing),
        resolved: listing.is_some(),
    })
}

/// The unit listing of an opened `.kdb` or `.aks2` file of `size` bytes.
pub fn unit_listing(o: &Opened, size: u64) -> BundleListing {
    let mut offset = 0u64;
    let entries: Vec<EntryListing> = o
        .entries
        .iter()
        .map(|e| {
            let check = e.bytes.as_deref().map(|b| check_payload(&e.id, b));
            let mut l = entry_listing(ListedEntry {
                id: e.id.clone(),
                offset,
                size: e.size,
                check,
            });
            offset += e.size;
            l.name = Some(e.name.clone());
            l
        })
        .collect();
    BundleListing {
        member: None,
        section: None,
        offset: 0,
        size,
        format: o.kind.name(),
        ccob: None,
        header_size: 0,
        entries,
        kpack_key: None,
    }
}

/// For `size`: a `.kdb` or `.aks2` file as one bundle per entry (stored: the `.kdb` blob;
/// for `.aks2` the image's share of the file in proportion to its size); `None` for other
/// kinds. Kind `kernel-database`.
pub fn size_survey(
    name: &str,
    data: &[u8],
    kind: DbKind,
) -> Option<Result<gfxkit_shrink::Survey, gfxkit_shrink::Error>> {
    let o = match open(name, data, kind)? {
        Ok(o) => o,
        Err(e) => {
            return Some(Err(gfxkit_shrink::Error::at(
                e.offset.unwrap_or(0),
                gfxkit_shrink::ErrorKind::Damaged(format!("damaged {}: {e}", kind.name())),
            )))
        }
    };
    let total: u64 = o.entries.iter().map(|e| e.size).sum();
    let file = data.len() as u64;
    let bundles = o
        .entries
        .iter()
        .map(|e| {
            let stored = match kind {
                DbKind::Aks2 if total > 0 => {
                    (u128::from(file) * u128::from(e.size) / u128::from(total)) as u64
                }
                _ => e.stored,
            };
            gfxkit_shrink::SurveyBundle {
                offset: 0,
                stored,
                encoding: kind.name().to_owned(),
                uncompressed: e.size,
                entries: vec![gfxkit_shrink::EntryRecord {
                    target: gfxkit_shrink::label(&e.id),
                    id: e.id.clone(),
                    size: e.size,
                    md5: String::new(),
                }],
            }
        })
        .collect();
    Some(Ok(crate::kpack::one_region_survey(
        gfxkit_shrink::FileKind::KernelDatabase,
        file,
        None,
        0,
        bundles,
    )))
}

/// The target ID a raw code object's header names, or why it cannot be trusted: a code object
/// cut short (its sections or program headers run past the end) or whose header does not read.
pub fn raw_code_object_target(data: &[u8]) -> Result<String, String> {
    if let Some(t) = gfxkit_code_object::extent::truncation_with_sections(data) {
        return Err(format!("truncated code object: {t}"));
    }
    let header = gfxkit_code_object::Header::parse(data)
        .map_err(|e| format!("damaged code object header: {}", e.in_code_object()))?;
    header
        .target_id()
        .map(|t| t.to_string())
        .map_err(|e| format!("damaged code object header: {e}"))
}

/// For `size`: a raw AMDGPU code object (`.co`, `.hsaco`) as one entry of the target its
/// header names (file kind `code-object`); `None` when the bytes are not one. A code object
/// cut short or whose header does not read is an error (its bytes would be miscounted).
pub fn code_object_survey(
    data: &[u8],
) -> Option<Result<gfxkit_shrink::Survey, gfxkit_shrink::Error>> {
    if gfxkit_host::InputKind::sniff(data.get(..64).unwrap_or(data))
        != gfxkit_host::InputKind::CodeObject
    {
        return None;
    }
    let target = match raw_code_object_target(data) {
        Ok(t) => t,
        Err(why) => {
            return Some(Err(gfxkit_shrink::Error::at(
                0,
                gfxkit_shrink::ErrorKind::Damaged(why),
            )))
        }
    };
    let id = entry_id(&target);
    let size = data.len() as u64;
    let bundle = gfxkit_shrink::SurveyBundle {
        offset: 0,
        stored: size,
        encoding: "code-object".to_owned(),
        uncompressed: size,
        entries: vec![gfxkit_shrink::EntryRecord {
            target: gfxkit_shrink::label(&id),
            id,
            size,
            md5: String::new(),
        }],
    };
    Some(Ok(crate::kpack::one_region_survey(
        gfxkit_shrink::FileKind::CodeObject,
        size,
        None,
        0,
        vec![bundle],
    )))
}

/// `kdb::decode_blob` for callers holding a record and its blob.
pub use kdb::decode_blob;

/// The names of the function symbols (`STT_FUNC`) of a code object, borrowed from it: what a
/// Tensile solution's name must be found among.
pub fn function_symbols(data: &[u8]) -> Result<std::collections::HashSet<&str>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = object::File::parse(data).map_err(|e| format!("not a readable ELF file: {e}"))?;
    Ok(file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text)
        .filter_map(|s| s.name().ok())
        .filter(|n| !n.is_empty())
        .collect())
}

fn db_error(name: &str, e: gfxkit_kernel_db::Error) -> crate::Error {
    crate::Error::new(crate::ErrorKind::Database(format!("{name}: {e}")))
}

fn finding(entry: Option<usize>, id: Option<String>, message: String) -> Finding {
    Finding {
        bundle: None,
        bundle_offset: None,
        member: None,
        section: None,
        entry,
        id,
        message,
        kind: FindingKind::Database,
    }
}

fn verification(
    name: &str,
    bundles: usize,
    entries: usize,
    problems: Vec<Finding>,
) -> Verification {
    Verification {
        path: name.to_owned(),
        ok: problems.is_empty(),
        bundles,
        entries,
        problems,
        unresolved: Beside::Nothing,
    }
}

/// `verify` of a `.kdb` or `.aks2` file: every `.kdb` blob decoded to its
/// `uncompressed_size` and checked against its MD5, every `.aks2` directory entry in bounds
/// (checked when the file is read: an error) and every code object's `e_flags` against the
/// target its entry names. A file that cannot be opened at all is an error.
pub fn verify_opened(name: &str, data: &[u8], kind: DbKind) -> Option<crate::Result<Verification>> {
    let o = match open(name, data, kind)? {
        Ok(o) => o,
        Err(e) => return Some(Err(db_error(name, e))),
    };
    let problems: Vec<Finding> = (0..o.entries.len())
        .filter_map(|i| {
            let e = &o.entries[i];
            if e.size == 0 {
                return None; // An .aks2 kernel that did not compile, as AOTriton writes it.
            }
            let bad = |m: String| Some(finding(Some(i), Some(e.id.clone()), m));
            match o.code_object(i) {
                Err(err) => bad(format!("{} ({}): {}", e.place, e.name, err.kind)),
                Ok(bytes) => match check_payload(&e.id, &bytes) {
                    crate::locate::PayloadCheck::NotCodeObject(why) => bad(format!(
                        "{} ({}): not an AMDGPU code object: {why}",
                        e.place, e.name
                    )),
                    crate::locate::PayloadCheck::Checked {
                        mismatch: Some(m), ..
                    } => bad(format!("{} ({}): {m}", e.place, e.name)),
                    _ => None,
                },
            }
        })
        .collect();
    Some(Ok(verification(name, 1, o.entries.len(), problems)))
}

/// How many solution names a finding quotes.
const NAMES_QUOTED: usize = 2;

impl BesideRow {
    /// How findings name the row: `row 0 (gfx90a, 104 CUs)`.
    fn who(&self) -> String {
        match self.cu_count {
            Some(n) => format!("row {} ({}, {n} CUs)", self.position, self.processor),
            None => format!("row {} ({})", self.position, self.processor),
        }
    }

    /// The files this row loads beside the index ([`row_files`]).
    fn files(&self, listing: &Listing) -> RowFiles {
        let placeholders: Vec<&str> = self.placeholders.iter().map(String::as_str).collect();
        row_files(listing, &self.processor, &placeholders)
    }

    /// A finding about this row.
    fn finding(&self, message: String) -> Finding {
        finding(
            Some(self.position),
            Some(entry_id(&self.processor)),
            format!("{}: {message}", self.who()),
        )
    }
}

/// The processor rows of Tensile index `index` (named `name`): those naming a processor, and
/// a per-processor index's catch-all row.
pub fn beside_rows(name: &str, index: &Index<'_>) -> Vec<BesideRow> {
    let own = index_processor(name);
    index
        .rows()
        .iter()
        .filter_map(|r| beside_row(r, own.as_deref()))
        .collect()
}

/// Row `r` of an index, when it is for a processor (its own, else `own`: the index's).
fn beside_row(
    r: &gfxkit_kernel_db::tensile::RowSummary<'_>,
    own: Option<&str>,
) -> Option<BesideRow> {
    Some(BesideRow {
        position: r.position,
        cu_count: r.cu_count,
        processor: r.processor.or(own)?.to_owned(),
        placeholders: r.placeholders.iter().map(|p| p.to_string()).collect(),
    })
}

/// What `verify` of kernel database `name`, read without its directory, finds from the names
/// of `beside` (the files of its directory and one level down, relative to it) and `exists`
/// (whether a path relative to its directory, at any depth, is there): for a Tensile index,
/// per row, the files it loads that are missing, and a lazy master its directory lacks; for a
/// hipBLASLt mapping, [`mapping::problems`]; for an aiter kernel map, the code objects its
/// rows name that are not there. On disk [`verify_tensile`] and [`verify_aiter_map`] also
/// read the files' symbols.
pub fn names_beside(
    name: &str,
    what: &Beside,
    beside: &[&str],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<Finding> {
    match what {
        Beside::Nothing => Vec::new(),
        Beside::TensileRows(rows) => rows_beside(name, rows, &Listing::new(beside)),
        // Judged by its code's symbols (`shard_findings`), by those who hold them.
        Beside::ShardKernels(_) => Vec::new(),
        Beside::Mapping(m) => mapping_problems(name, m, beside),
        Beside::AiterFiles(rows) => rows
            .iter()
            .filter(|(_, _, file)| !exists(file))
            .map(|(i, line, file)| aiter_finding(*i, *line, file, "is not there"))
            .collect(),
    }
}

/// The finding of an aiter map's row (`i`, at `line`) whose code object `file` cannot be read
/// (`why`).
fn aiter_finding(i: usize, line: u64, file: &str, why: &str) -> Finding {
    finding(
        Some(i),
        None,
        format!("line {line}: its code object {file} {why}"),
    )
}

/// A hipBLASLt mapping's [`mapping::problems`] in a directory holding `names`, as findings.
fn mapping_problems(name: &str, m: &Mapping, names: &[&str]) -> Vec<Finding> {
    mapping::problems(name, m, names)
        .into_iter()
        .map(|p| finding(None, None, p))
        .collect()
}

/// The files the `rows` of Tensile index `name` load that `listing` lacks, and a lazy master
/// it lacks.
fn rows_beside(name: &str, rows: &[BesideRow], listing: &Listing) -> Vec<Finding> {
    let mut problems: Vec<Finding> = rows
        .iter()
        .flat_map(|r| {
            r.files(listing)
                .missing
                .into_iter()
                .map(|m| r.finding(format!("{m} is missing")))
        })
        .collect();
    problems.extend(master_problem(name, listing));
    problems
}

/// The finding of a lazy index whose master its directory lacks.
fn master_problem(name: &str, listing: &Listing) -> Option<Finding> {
    let here: Vec<&str> = listing.files_in("").collect();
    mapping::master_problem(name, &here).map(|m| finding(None, None, m))
}

/// `verify` of a Tensile index against the directory it sits in (`listing`, names relative
/// to it; `open` gives a file's bytes by such a name): per row, the files the row needs exist
/// ([`row_files`]) and every solution's name is a function symbol of one of the files opened
/// for the row's processor. Read errors of the index are errors; the rest are findings. An
/// index read without its directory (`None`: a package member) keeps its rows
/// ([`Verification::unresolved`]) for the names of the package's members ([`names_beside`]).
pub fn verify_tensile<'d>(
    name: &str,
    index: &Index<'_>,
    listing: Option<&Listing>,
    open: &dyn Fn(&str) -> Option<&'d [u8]>,
) -> Verification {
    let summaries = index.rows();
    let own = index_processor(name);
    let rows: Vec<(BesideRow, _)> = summaries
        .iter()
        .filter_map(|s| Some((beside_row(s, own.as_deref())?, s)))
        .collect();
    let shard = is_shard(index).then(|| shard_rows(index, &summaries));
    let Some(listing) = listing else {
        let mut v = verification(name, 0, summaries.len(), Vec::new());
        v.unresolved = match shard {
            Some(rows) => Beside::ShardKernels(rows),
            None => Beside::TensileRows(rows.into_iter().map(|(r, _)| r).collect()),
        };
        return v;
    };
    if let Some(rows) = shard {
        let limits = gfxkit_bundle::limits::Limits::default();
        let mut narrow = |f: &str, processor: &str, absent: &mut Vec<&str>| match open(f) {
            Some(bytes) => code_function_symbols(f, bytes, processor, &limits)
                .map(|symbols| absent.retain(|n| !symbols.contains(*n))),
            None => Err("cannot be opened".to_owned()),
        };
        let problems = shard_findings(name, &rows, listing, &mut narrow);
        return verification(name, 0, summaries.len(), problems);
    }
    let mut problems = Vec::new();
    let mut symbols: std::collections::HashMap<
        String,
        Result<std::collections::HashSet<&'d str>, String>,
    > = std::collections::HashMap::new();
    for (r, summary) in &rows {
        let files = r.files(listing);
        for m in &files.missing {
            problems.push(r.finding(format!("{m} is missing")));
        }
        if !r.placeholders.is_empty() {
            continue; // A lazy master's solutions live in its shards, checked when listed.
        }
        for f in &files.files {
            symbols.entry(f.clone()).or_insert_with(|| match open(f) {
                Some(bytes) => function_symbols(bytes),
                None => Err("cannot be opened".to_owned()),
            });
        }
        let mut have: Vec<&std::collections::HashSet<&str>> = Vec::new();
        for f in &files.files {
            match &symbols[f] {
                Ok(s) => have.push(s),
                Err(e) => problems.push(r.finding(format!("{f}: {e}"))),
            }
        }
        let absent: Vec<&str> = summary
            .solutions
            .iter()
            .filter_map(|i| index.solution(*i))
            .map(|s| s.kernel())
            .filter(|n| !have.iter().any(|h| h.contains(n)))
            .collect();
        problems.extend(absent_finding(
            r,
            &absent,
            summary.solutions.len(),
            &files.files,
        ));
    }
    problems.extend(master_problem(name, listing));
    verification(name, 0, summaries.len(), problems)
}

/// The finding of a row's solutions (`absent` of `total`) that no function symbol of `files`
/// names; `None` when none is absent.
fn absent_finding(
    r: &BesideRow,
    absent: &[&str],
    total: usize,
    files: &[String],
) -> Option<Finding> {
    if absent.is_empty() {
        return None;
    }
    let mut quoted = absent
        .iter()
        .take(NAMES_QUOTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if absent.len() > NAMES_QUOTED {
        quoted.push_str(&format!(" and {} more", absent.len() - NAMES_QUOTED));
    }
    Some(r.finding(format!(
        "{} of {total} solutions have no function symbol in {}: {quoted}",
        absent.len(),
        if files.is_empty() {
            "any file (none is opened)".to_owned()
        } else {
            files.join(", ")
        }
    )))
}

/// Whether `index` is a lazy library's shard: it has rows, and none names a processor or
/// placeholders (a master's rows name both).
pub fn is_shard(index: &Index<'_>) -> bool {
    let rows = index.rows();
    !rows.is_empty()
        && rows
            .iter()
            .all(|r| r.processor.is_none() && r.placeholders.is_empty())
}

/// A shard's rows with the kernels their solutions run ([`Solution::kernel`](tensile::Solution::kernel)).
fn shard_rows(index: &Index<'_>, summaries: &[tensile::RowSummary<'_>]) -> Vec<ShardRow> {
    summaries
        .iter()
        .map(|r| ShardRow {
            position: r.position,
            cu_count: r.cu_count,
            kernels: r
                .solutions
                .iter()
                .filter_map(|i| index.solution(*i))
                .map(|s| s.kernel().to_owned())
                .collect(),
        })
        .collect()
}

/// For the shard index `name` of a lazy library, per processor with a lazy master beside it
/// in `listing`, the code the library has loaded when it runs one of the shard's solutions
/// ([`loads::shard_code`]): for the processor the shard's name ends in (`..._gfx1151.dat`),
/// else for every processor with a lazy master here (an arch-neutral fallback shard, whose
/// code is per processor).
fn shard_processors(name: &str, listing: &Listing) -> Vec<(String, loads::ShardFiles)> {
    let file = base_name(name);
    let stem = file.split('.').next().unwrap_or(file);
    let processors: Vec<String> = match stem.rsplit('_').next().and_then(processor_named) {
        Some(p) => vec![p],
        None => {
            let mut masters: Vec<String> = listing
                .files_in("")
                .filter_map(|n| n.strip_prefix("TensileLibrary_lazy_"))
                .filter_map(|rest| processor_named(rest.split('.').next()?))
                .collect();
            masters.sort();
            masters.dedup();
            masters
        }
    };
    let flavor = Flavor::of(listing);
    processors
        .into_iter()
        .filter_map(|p| {
            let code = loads::shard_code(listing, flavor, &p, file)?;
            Some((p, code))
        })
        .collect()
}

/// For a lazy library's shard index `name` (its rows name neither a processor nor
/// placeholders), per processor with a lazy master beside it (the one the shard's name ends
/// in, else every one: an arch-neutral fallback shard), the files holding the code the library
/// has loaded to run its solutions ([`loads::shard_code`]), the shard's own first; none for
/// other indexes and for processors the shard has no code of its own for.
pub fn shard_rows_code(
    name: &str,
    index: &Index<'_>,
    listing: &Listing,
) -> Vec<(String, Vec<String>)> {
    if !is_shard(index) {
        return Vec::new();
    }
    shard_code(name, listing)
}

/// The code of the shard index `name` (a shard: [`is_shard`]) per processor the library loads
/// it for in `listing` (its directory's names): as [`shard_rows_code`], for a shard whose
/// directory is known only after it was read (a package member, judged by the members beside
/// it).
pub fn shard_code(name: &str, listing: &Listing) -> Vec<(String, Vec<String>)> {
    own_code_first(shard_processors(name, listing))
}

/// [`shard_processors`]' files per processor, the shard's own before the source kernels loaded at
/// start; the processors for which the shard has no code of its own left out (their master
/// names what they lack).
fn own_code_first(shards: Vec<(String, loads::ShardFiles)>) -> Vec<(String, Vec<String>)> {
    shards
        .into_iter()
        .filter_map(|(processor, code)| {
            let (mut own, start): (Vec<String>, Vec<String>) = code
                .files
                .into_iter()
                .partition(|f| !base_name(f).starts_with("Kernels.so-"));
            if own.is_empty() {
                return None;
            }
            own.extend(start);
            Some((processor, own))
        })
        .collect()
}

/// How [`shard_findings`] learns which kernels a code file lacks: `(file, processor, absent)`
/// keeps in `absent` those the code for `processor` in `file` lacks, or says why it cannot be
/// read.
pub type Narrow<'n> = &'n mut dyn FnMut(&str, &str, &mut Vec<&str>) -> Result<(), String>;

/// What `verify` finds of the shard index `name` (its `rows`; `listing` the names in its
/// directory, on disk or in its package) on each processor with a lazy master beside it: the
/// solutions whose kernels no function symbol of the shard's code for that processor holds, nor
/// of the source kernels loaded at start (looked in only for what the shard's own code lacks).
/// `narrow(file, processor, absent)` keeps in `absent` the kernels the code for `processor` in
/// `file` lacks, or says why it cannot be read. A processor for which the shard has no code of
/// its own is left to its master, which names the files it lacks.
pub fn shard_findings(
    name: &str,
    rows: &[ShardRow],
    listing: &Listing,
    narrow: Narrow<'_>,
) -> Vec<Finding> {
    let mut problems = Vec::new();
    for (processor, files) in own_code_first(shard_processors(name, listing)) {
        for row in rows {
            let r = BesideRow {
                position: row.position,
                cu_count: row.cu_count,
                processor: processor.clone(),
                placeholders: Vec::new(),
            };
            let mut absent: Vec<&str> = row.kernels.iter().map(String::as_str).collect();
            for f in &files {
                if absent.is_empty() {
                    break;
                }
                if let Err(e) = narrow(f, &processor, &mut absent) {
                    problems.push(r.finding(format!("{f}: {e}")));
                }
            }
            problems.extend(absent_finding(&r, &absent, row.kernels.len(), &files));
        }
    }
    problems
}

/// The names of the function symbols of the code objects in `data` (file `name`) that can run
/// on `processor`: a code object's own, a bundle's entries for that processor or for a generic
/// target covering it (a compressed bundle decoded within `limits`). Owned, as a decoded
/// bundle's bytes do not outlive the call.
pub fn code_function_symbols(
    name: &str,
    data: &[u8],
    processor: &str,
    limits: &gfxkit_bundle::limits::Limits,
) -> Result<std::collections::HashSet<String>, String> {
    if data.starts_with(b"\x7fELF") {
        return function_symbols(data).map(|s| s.into_iter().map(str::to_owned).collect());
    }
    let device = gfxkit_target_id::TargetId::parse(processor).map_err(|e| e.to_string())?;
    let generic = device.processor().generic().map(|g| g.name);
    let for_device = |id: &str| {
        gfxkit_bundle::EntryId::parse(id)
            .ok()
            .and_then(|e| e.target_id().map(|t| t.processor().name))
            .is_some_and(|p| p == processor || Some(p) == generic)
    };
    let found = crate::locate::locate_with(data, limits).map_err(|e| crate::error::chain(&e))?;
    let (symbols, errors) = crate::locate::each_entry(
        name,
        &found.units,
        &found.problems,
        crate::locate::Decoding::Unchecked,
        |_, e| {
            if !for_device(e.id) || !e.payload.starts_with(b"\x7fELF") {
                return Ok(Vec::new());
            }
            function_symbols(e.payload)
                .map(|s| s.into_iter().map(str::to_owned).collect::<Vec<_>>())
                .map_err(|err| format!("{}: {err}", e.id))
        },
    );
    match errors.first() {
        Some(e) => Err(e.clone()),
        None => Ok(symbols.into_iter().collect()),
    }
}

/// `verify` of a hipBLASLt `*_Mapping.dat` `name` (`data`; `.zlib` decompressed) against
/// `names`, the files of its directory ([`mapping::problems`]: mapped libraries there and named
/// for its architecture, the master beside it, every fallback library mapped). Without
/// `names` (a package member) only that it reads.
pub fn verify_mapping(
    name: &str,
    data: &[u8],
    names: Option<&[&str]>,
) -> crate::Result<Verification> {
    let file = TensileFile::new(name, data).map_err(|e| db_error(name, e))?;
    let m = Mapping::parse(file.bytes(data), &Limits::default()).map_err(|e| db_error(name, e))?;
    let count = m.libraries.len();
    Ok(match names {
        Some(n) => verification(name, 0, count, mapping_problems(name, &m, n)),
        None => {
            let mut v = verification(name, 0, count, Vec::new());
            v.unresolved = Beside::Mapping(m);
            v
        }
    })
}

/// Gives the bytes of a file named relative to a database file's directory (`None` when it is
/// not there).
pub type OpenFile<'f, 'd> = &'f dyn Fn(&str) -> Option<&'d [u8]>;

/// `verify` of an aiter kernel map `name` (`data`, its bytes), its rows' files opened by
/// `open` (relative to the map's directory; `None` when absent): every row's code object is
/// there and has the row's kernel as a function symbol, as aiter looks it up. A map whose
/// directory is unknown (`open` is `None`: a package member) is checked only for reading.
pub fn verify_aiter_map<'d>(
    name: &str,
    data: &[u8],
    open: Option<OpenFile<'_, 'd>>,
) -> crate::Result<Verification> {
    let map = KernelMap::parse(data, &Limits::default()).map_err(|e| db_error(name, e))?;
    let mut problems = Vec::new();
    if let Some(open) = open {
        let mut symbols: std::collections::HashMap<
            &str,
            Result<std::collections::HashSet<&'d str>, String>,
        > = std::collections::HashMap::new();
        for (i, row) in map.rows.iter().enumerate() {
            let have = symbols
                .entry(row.file.as_str())
                .or_insert_with(|| match open(&row.file) {
                    Some(bytes) => function_symbols(bytes),
                    None => Err("is not there".to_owned()),
                });
            problems.push(match have {
                Err(e) => aiter_finding(i, row.line, &row.file, e),
                Ok(s) if !s.contains(row.name.as_str()) => finding(
                    Some(i),
                    None,
                    format!(
                        "line {}: {} has no function symbol {}",
                        row.line, row.file, row.name
                    ),
                ),
                Ok(_) => continue,
            });
        }
        return Ok(verification(name, 0, map.rows.len(), problems));
    }
    let mut v = verification(name, 0, map.rows.len(), problems);
    v.unresolved = Beside::AiterFiles(
        map.rows
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i, r.line, r.file))
            .collect(),
    );
    Ok(v)
}

/// Reads a Tensile index file (`.zlib` decompressed) and parses it; the error names `name`.
pub fn read_tensile<'a>(
    name: &str,
    data: &'a [u8],
    file: &'a mut Option<TensileFile>,
) -> crate::Result<Index<'a>> {
    let f = file.insert(TensileFile::new(name, data).map_err(|e| db_error(name, e))?);
    Index::parse(f.bytes(data)).map_err(|e| db_error(name, e))
}

/// Every file the rows of `index` (named `name`) open in the directory `listing` lists, and
/// the code a lazy library has loaded to run the solutions of a shard index (the files
/// [`verify_tensile`] reads symbols from).
pub fn needed_files(name: &str, index: &Index<'_>, listing: &Listing) -> Vec<String> {
    let mut names: Vec<String> = index
        .rows()
        .iter()
        .filter_map(|r| Some(row_files(listing, r.processor?, &r.placeholders).files))
        .flatten()
        .chain(
            shard_rows_code(name, index, listing)
                .into_iter()
                .flat_map(|(_, files)| files),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A file that belongs to a kernel database rather than being a library: a raw code object
/// (`.co`, `.hsaco`), an offload bundle in a Tensile directory (hipBLASLt's `.co` shards,
/// `hipblasltTransform.hsaco`), a `.kdb` or `.aks2` file, a Tensile index. `doctor` judges such
/// files with the library that loads them (or, without one, as one database), not one by one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DbMember {
    /// The path (`pkg!member` for a package member).
    pub path: String,
    /// The processors it holds code for (none for an index).
    pub processors: Vec<String>,
    /// For a Tensile index: its hardware rows, or why it cannot be read. `None` for other
    /// members.
    pub index_rows: Option<Result<IndexRows, String>>,
    /// How its code objects are stored, as a ROCm release's runtime sees them.
    pub stored: Stored,
    /// For an aiter kernel map: the files its rows name, as paths (beside the map, in the
    /// form of [`DbMember::path`]), sorted, once each. Empty for other members.
    pub map_files: Vec<String>,
}

/// How a member's code objects are stored, as far as the runtime of a ROCm release tells
/// them apart ([`Database::refused`]): the CCOB versions of its compressed bundles, the
/// versions of its code objects.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Stored {
    /// The CCOB versions of the compressed bundles it holds (none for an uncompressed bundle
    /// or a raw code object).
    pub ccob: Vec<u16>,
    /// The code-object versions of its code objects, as far as read (a compressed bundle's
    /// from the first bytes of each entry, decoded as a stream; its hash is not checked).
    pub code_object_versions: Vec<u8>,
}

impl Stored {
    /// The storage of the code objects of a raw code object, a bundle file or a host file.
    pub fn of(data: &[u8]) -> Stored {
        Stored::of_with(data, &gfxkit_bundle::limits::Limits::default())
    }

    /// [`Stored::of`], the bundles read under `limits`.
    pub fn of_with(data: &[u8], limits: &gfxkit_bundle::limits::Limits) -> Stored {
        if let Some(v) = gfxkit_host::release::code_object_version(data) {
            return Stored {
                ccob: Vec::new(),
                code_object_versions: vec![v],
            };
        }
        let units = gfxkit_host::discover_with(data, limits).units().units;
        let mut ccob: Vec<u16> = units
            .iter()
            .filter_map(|u| match u.format()? {
                gfxkit_host::BundleFormat::Compressed { version, .. } => Some(version),
                gfxkit_host::BundleFormat::Uncompressed => None,
            })
            .collect();
        ccob.sort_unstable();
        ccob.dedup();
        let mut code_object_versions: Vec<u8> = gfxkit_host::release::code_object_versions(&units)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        code_object_versions.sort_unstable();
        code_object_versions.dedup();
        Stored {
            ccob,
            code_object_versions,
        }
    }

    /// What the runtime of `rules` refuses of these code objects: every compressed bundle of
    /// a CCOB version it does not unpack; else every code object of a version above what its
    /// loader accepts.
    pub fn refusals(&self, rules: &gfxkit_spec::rocm::Rules) -> Vec<gfxkit_host::release::Refusal> {
        use gfxkit_host::release::{ccob_refusal, version_refusal};
        let unpacked: Vec<_> = self
            .ccob
            .iter()
            .filter_map(|&v| ccob_refusal(rules, v))
            .collect();
        if !unpacked.is_empty() {
            return unpacked;
        }
        self.code_object_versions
            .iter()
            .filter_map(|&v| version_refusal(rules, v))
            .collect()
    }
}

/// The hardware rows of a Tensile index, as rocBLAS and hipBLASLt select them for a device
/// ([`loads`]): in file order, the first whose predicate holds and that has a solution wins,
/// so a device can select its processor's rows and every catch-all (`TruePred`) row.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct IndexRows {
    /// The rows, in file order.
    pub rows: Vec<loads::Row>,
}

impl IndexRows {
    /// The rows of `index`.
    pub fn of(index: &Index<'_>) -> IndexRows {
        IndexRows {
            rows: index.rows().iter().map(loads::Row::of).collect(),
        }
    }

    /// The processors with a row of their own, sorted.
    pub fn processors(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.processor.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The database member a file is, from its name and bytes; `None` for other files. Bundles
/// are read under `limits`.
pub fn member_of(
    path: &str,
    data: &[u8],
    limits: &gfxkit_bundle::limits::Limits,
) -> Option<DbMember> {
    let mut index_rows = None;
    let mut map_files = Vec::new();
    let processors = match kind(path, data) {
        Some(DbKind::TensileIndex) => {
            let mut file = None;
            index_rows = Some(match read_tensile(path, data, &mut file) {
                Ok(index) => Ok(IndexRows::of(&index)),
                Err(e) => Err(crate::error::chain(&e)),
            });
            Vec::new()
        }
        Some(DbKind::AiterMap) => {
            map_files = aiter_map_files(path, data);
            Vec::new()
        }
        Some(DbKind::TensileMapping) => Vec::new(),
        Some(DbKind::MiopenKdb) => DbId::parse_file_name(base_name(path))
            .map(|id| vec![id.processor])
            .unwrap_or_default(),
        Some(k @ DbKind::Aks2) => match open(path, data, k) {
            Some(Ok(o)) => o
                .entries
                .iter()
                .filter_map(|e| e.id.rsplit("--").next())
                .filter_map(|t| t.split(':').next())
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        },
        // hipBLASLt's extension-op library: which `extop_<P>.co` it opens is judged with the
        // directory ([`loads`]).
        None if gfxkit_kernel_db::sniff::tensile_companion(path) => Vec::new(),
        None => {
            let sniffed = gfxkit_host::InputKind::sniff(data.get(..64).unwrap_or(data));
            if sniffed == gfxkit_host::InputKind::Bundle {
                return tensile_bundle(path, data, limits);
            }
            if sniffed != gfxkit_host::InputKind::CodeObject {
                return None;
            }
            // A damaged code object is judged as a file, where its damage is reported: a
            // header that does not read, or one the code object contradicts (its e_flags
            // against its metadata's amdhsa.target).
            let target = raw_code_object_target(data).ok()?;
            if crate::locate::locate_with(data, limits).map_or(true, |f| f.has_errors()) {
                return None;
            }
            target
                .split(':')
                .next()
                .map(str::to_owned)
                .into_iter()
                .collect()
        }
    };
    let mut processors = processors;
    processors.sort();
    processors.dedup();
    // The code objects of a raw code object; databases of other kinds are read by their
    // libraries from their own records.
    let stored = if kind(path, data).is_none() {
        Stored::of_with(data, limits)
    } else {
        Stored::default()
    };
    Some(DbMember {
        path: path.to_owned(),
        processors,
        index_rows,
        stored,
        map_files,
    })
}

/// The files the rows of the aiter kernel map at `path` name, as paths beside it (aiter
/// opens a row's code object from the map's directory); none for a map that does not read
/// (its listing says why) and for names that climb out of its directory, which `verify` names.
fn aiter_map_files(path: &str, data: &[u8]) -> Vec<String> {
    let Ok(map) = KernelMap::parse(data, &Limits::default()) else {
        return Vec::new();
    };
    let dir = path.rsplit_once(['/', '!']).map_or("", |(d, _)| d);
    let mut files: Vec<String> = map
        .rows
        .into_iter()
        .filter(|r| !r.file.starts_with('/') && !r.file.split('/').any(|c| c == ".."))
        .map(|r| match path[dir.len()..].chars().next() {
            Some(sep) if !dir.is_empty() => format!("{dir}{sep}{}", r.file),
            _ => r.file,
        })
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Whether `path` names a file of a Tensile directory by its name: an index, a mapping, a
/// shard's code (`TensileLibrary_*.co`, `*.hsaco`), `Kernels.so-*`, hipBLASLt's `extop_*.co`
/// and `hipblasltTransform.hsaco`, or any file whose directory is `library` or a processor's
/// directory below one.
pub fn tensile_file_name(path: &str) -> bool {
    let base = base_name(path);
    let coded = base.ends_with(".co") || base.ends_with(".hsaco");
    let named = base.starts_with("TensileLibrary")
        || base.starts_with("TensileLiteLibrary")
        || base.starts_with("Kernels.so-")
        || base.starts_with("extop_")
        || base.starts_with("hipblaslt");
    let mut dirs = path.rsplit(['/', '!']).skip(1);
    let in_library = match (dirs.next(), dirs.next()) {
        (Some("library"), _) => true,
        (Some(d), Some("library")) => d.starts_with("gfx"),
        _ => false,
    };
    coded && (named || in_library)
}

/// An offload bundle that is a file of a Tensile directory ([`tensile_file_name`]): hipBLASLt's
/// shards are compressed bundles. Its processors come from its entries' IDs, read from the
/// bundle headers (a compressed bundle decoded only as far as its header). A bundle whose
/// header does not read is judged as a file, where its damage is reported.
fn tensile_bundle(
    path: &str,
    data: &[u8],
    limits: &gfxkit_bundle::limits::Limits,
) -> Option<DbMember> {
    if !tensile_file_name(path) {
        return None;
    }
    let bundles = crate::locate::find_bundles_with(data, limits).ok()?;
    let mut processors = Vec::new();
    for b in &bundles {
        let (entries, _, _) = crate::locate::read_header(b, false).ok()?;
        for e in entries {
            let Ok(id) = gfxkit_bundle::EntryId::parse(&e.id) else {
                continue;
            };
            if let Some(t) = id.target_id() {
                processors.push(t.processor().name.to_owned());
            }
        }
    }
    processors.sort();
    processors.dedup();
    Some(DbMember {
        path: path.to_owned(),
        processors,
        index_rows: None,
        stored: Stored::of_with(data, limits),
        map_files: Vec::new(),
    })
}

/// The unit a database member belongs to: up to and including the last `library` component
/// (rocBLAS, hipBLASLt: `rocblas/2.47.0/library`, also above `library/<arch>/`) or
/// `aotriton.images` component (AOTriton's images of every family, loose `.aks2` files and the
/// zip packs holding them alike); else the package it is a member of (aiter's wheel:
/// `x.whl`); else aiter's `aiter_meta` (its `hsa/<arch>/` and, named so, the Triton AOT kernels of
/// the `aiter` package beside it; unpacked or installed alike); else the Python
/// package below `site-packages`/`dist-packages` (`site-packages/aiter_meta`); else the
/// member's directory (for a file named without one, the file itself).
pub fn database_root(path: &str) -> String {
    let parts: Vec<&str> = path.split(['/', '!']).collect();
    let dir_len = parts.len().saturating_sub(1);
    let dirs = &parts[..dir_len];
    let cut = if let Some(i) = dirs
        .iter()
        .rposition(|p| *p == "library" || *p == "aotriton.images")
    {
        i + 1
    } else if let Some(pkg) = path.find('!') {
        return path[..pkg].to_owned();
    } else if let Some(i) = dirs.iter().rposition(|p| *p == "aiter_meta") {
        // aiter's `aiter_meta/hsa/<arch>/`: one database of every processor, as aiter loads per
        // op what the device's processor has (unpacked as installed).
        i + 1
    } else if let Some(i) = dirs
        .windows(2)
        .rposition(|w| w[0] == "aiter" && w[1] == "ops")
    {
        // aiter's Triton AOT kernels (`aiter/ops/...`, built for the processors whose ops use
        // them) belong to the same database as `aiter_meta` beside the `aiter` package.
        let mut end = 0;
        for (k, p) in parts.iter().enumerate().take(i) {
            end += p.len() + usize::from(k > 0);
        }
        return if end == 0 {
            "aiter_meta".to_owned()
        } else {
            format!("{}/aiter_meta", &path[..end])
        };
    } else if let Some(i) = dirs
        .iter()
        .rposition(|p| *p == "site-packages" || *p == "dist-packages")
        .filter(|i| i + 1 < dir_len)
    {
        i + 2
    } else {
        dir_len
    };
    // The separators of the original path up to the cut.
    let mut end = 0;
    for (i, p) in parts.iter().enumerate().take(cut) {
        end += p.len() + usize::from(i > 0);
    }
    if end == 0 {
        // A file named alone, without a directory (`gfx90a68.kdb` in the current one): the
        // database is named by it, not `.`.
        return if dir_len == 0 {
            path.to_owned()
        } else {
            ".".to_owned()
        };
    }
    path[..end].to_owned()
}

/// A kernel database as `doctor` judges it: its directory and the files found in it.
#[derive(Debug, Clone, Default)]
pub struct Database {
    /// [`database_root`] of its members.
    pub root: String,
    /// Its files, in path order.
    pub members: Vec<DbMember>,
    /// The library was sent to this directory by its variable (`HIPBLASLT_TENSILE_LIBPATH`),
    /// which hipBLASLt uses as given: no `<processor>/` subdirectory is looked for in it.
    pub by_variable: bool,
}

impl Database {
    /// The names of the members relative to the root.
    pub fn names(&self) -> Vec<&str> {
        self.members
            .iter()
            .filter_map(|m| m.path.strip_prefix(&self.root))
            .map(|n| n.trim_start_matches(['/', '!']))
            .collect()
    }

    /// A member's name relative to the root.
    fn name_of<'m>(&self, m: &'m DbMember) -> &'m str {
        m.path
            .strip_prefix(&self.root)
            .map_or(m.path.as_str(), |n| n.trim_start_matches(['/', '!']))
    }

    /// Whether the database is a Tensile directory (rocBLAS's or hipBLASLt's): it holds an
    /// index, a mapping, `Kernels.so-*` or `TensileLibrary*` code objects, or hipBLASLt's
    /// extension-op library. Such a directory is judged by its library's rule, also when its
    /// index is gone.
    pub fn is_tensile(&self) -> bool {
        self.names().iter().any(|n| {
            let base = base_name(n);
            gfxkit_kernel_db::sniff::tensile_name(n).is_some()
                || base.starts_with("Kernels.so-")
                || base.starts_with("TensileLibrary")
                || base.starts_with("hipblasltExtOpLibrary")
        })
    }

    /// What the library of this Tensile directory opens for `device` (with `cu_count`
    /// compute units, any when `None`), and what it lacks ([`loads::loads`]); `None` when the
    /// database is not a Tensile directory.
    pub fn tensile_loads(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
    ) -> Option<Loads> {
        if !self.is_tensile() {
            return None;
        }
        let names = self.names();
        let listing = Listing::new(&names);
        use gfxkit_spec::Feature;
        use gfxkit_target_id::FeatureSetting;
        let xnack = match device.setting(Feature::Xnack) {
            FeatureSetting::On => Xnack::On,
            FeatureSetting::Off => Xnack::Off,
            FeatureSetting::Any => Xnack::Unspecified,
        };
        let d = Device {
            processor: device.processor().name,
            xnack,
            cu_count,
        };
        let rows = |path: &str| {
            let m = self.members.iter().find(|m| self.name_of(m) == path)?;
            m.index_rows.clone().map(|r| r.map(|r| r.rows))
        };
        Some(loads::loads(
            &listing,
            Flavor::of(&listing),
            &d,
            self.by_variable,
            &rows,
        ))
    }

    /// What the library of this database looks for on `device` without needing it for its
    /// kernels, absent, each with what follows: hipBLASLt's mapping, extension ops and transform
    /// kernels (`hipblasltTransform.hsaco` holding no code for the device's processor).
    pub fn notes(&self, device: &gfxkit_target_id::TargetId, cu_count: Option<u64>) -> Vec<String> {
        let Some(l) = self.tensile_loads(device, cu_count) else {
            return Vec::new();
        };
        let mut out = l.notes;
        if l.flavor == Flavor::Hipblaslt {
            let processor = device.processor().name;
            for m in &self.members {
                let name = self.name_of(m);
                if base_name(name) == "hipblasltTransform.hsaco"
                    && !m.processors.iter().any(|p| p == processor)
                {
                    out.push(format!(
                        "{name} has no code for {processor} (present: {}): matrix transforms \
                         (hipblasLtMatrixTransform) fail on {processor}",
                        m.processors.join(" ")
                    ));
                }
            }
        }
        out
    }

    /// The processors the database has an index for: those its per-processor indexes are
    /// named or placed for, and those its indexes have rows for; sorted.
    pub fn index_processors(&self) -> Vec<String> {
        let mut p: Vec<String> = Vec::new();
        for m in &self.members {
            if let Some(Ok(rows)) = &m.index_rows {
                p.extend(rows.processors());
                p.extend(index_processor(self.name_of(m)));
            }
        }
        p.sort();
        p.dedup();
        p
    }

    /// Processors some member holds code for, sorted.
    pub fn processors(&self) -> Vec<String> {
        let mut p: Vec<String> = self
            .members
            .iter()
            .flat_map(|m| m.processors.iter().cloned())
            .collect();
        p.sort();
        p.dedup();
        p
    }

    /// The files that the aiter kernel maps for `processor` (those in a directory named for
    /// it, aiter's `hsa/<processor>/`) name and the database lacks, relative to the root, in
    /// order; empty when every one is there.
    pub fn maps_lack(&self, processor: &str) -> Vec<String> {
        let present: std::collections::HashSet<&str> =
            self.members.iter().map(|m| m.path.as_str()).collect();
        let mut out: Vec<String> = self
            .members
            .iter()
            .filter(|m| {
                !m.map_files.is_empty() && self.name_of(m).split('/').any(|c| c == processor)
            })
            .flat_map(|m| &m.map_files)
            .filter(|f| !present.contains(f.as_str()))
            .map(|f| {
                f.strip_prefix(&self.root)
                    .map_or(f.as_str(), |n| n.trim_start_matches(['/', '!']))
                    .to_owned()
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Why the database has nothing for `device` (with `cu_count` compute units, any when
    /// `None`), naming what is missing; `None` when it has ([`Database::serves`]).
    pub fn lacks(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
    ) -> Option<String> {
        self.serves(device, cu_count).err()
    }

    /// What the runtime of `rules` cannot load of what the database gives `device`
    /// ([`Database::serves`]): each refusal with the files (relative to the root) it applies
    /// to, in the order met. Empty when it loads everything, and when the database gives the
    /// device nothing ([`Database::lacks`] says why).
    pub fn refused(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
        rules: &gfxkit_spec::rocm::Rules,
    ) -> Vec<(gfxkit_host::release::Refusal, Vec<String>)> {
        let mut out: Vec<(gfxkit_host::release::Refusal, Vec<String>)> = Vec::new();
        let Ok(files) = self.serves(device, cu_count) else {
            return out;
        };
        for name in files {
            let Some(m) = self.members.iter().find(|m| self.name_of(m) == name) else {
                continue;
            };
            for r in m.stored.refusals(rules) {
                match out.iter_mut().find(|(x, _)| x.reason == r.reason) {
                    Some((_, f)) => f.push(name.clone()),
                    None => out.push((r, vec![name.clone()])),
                }
            }
        }
        out
    }

    /// The files of `refused` named from the directory above the root, as verdicts name them.
    pub fn rooted(
        &self,
        refused: Vec<(gfxkit_host::release::Refusal, Vec<String>)>,
    ) -> Vec<(gfxkit_host::release::Refusal, Vec<String>)> {
        refused
            .into_iter()
            .map(|(r, files)| {
                let files = files
                    .into_iter()
                    .map(|f| format!("{}/{f}", self.root))
                    .collect();
                (r, files)
            })
            .collect()
    }

    /// [`Database::lacks`], and under the runtime of `rules` (when given) also what it cannot
    /// load of what the database gives ([`refused_text`]).
    pub fn lacks_on(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
        rules: Option<&gfxkit_spec::rocm::Rules>,
    ) -> Option<String> {
        self.lacks(device, cu_count).or_else(|| {
            let r = rules?;
            refused_text(&self.rooted(self.refused(device, cu_count, r)))
        })
    }

    /// What the database gives a GPU `device`: the files its library opens for the device's
    /// processor, relative to the root; or why it has nothing, naming what is missing and what
    /// the library does then. A Tensile directory is judged by its library's rule
    /// ([`Database::tensile_loads`]: the index, the start-up code objects and the shards of every
    /// row the device can select, every one present); any other by which members hold code for
    /// the device's processor. `cu_count` is the device's number of compute units: a device
    /// can select only the rows for its own count among those naming one; `None` (not known)
    /// judges every row the processor can select, whatever its count.
    pub fn serves(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
    ) -> Result<Vec<String>, String> {
        let processor = device.processor().name;
        if let Some(l) = self.tensile_loads(device, cu_count) {
            return match l.failure(processor) {
                None => Ok(l.files()),
                Some(why) if why.starts_with("lacks ") => Err(format!("{} {why}", self.root)),
                Some(why) => Err(format!("{}: {why}", self.root)),
            };
        }
        let lacking = self.maps_lack(processor);
        if !lacking.is_empty() {
            return Err(format!(
                "{} lacks {} (aiter fails the kernels its maps for {processor} name in them)",
                self.root,
                gfxkit_kernel_db::loads::quote_names(&lacking)
            ));
        }
        let holding: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.processors.iter().any(|p| p == processor))
            .map(|m| self.name_of(m).to_owned())
            .collect();
        if !holding.is_empty() {
            return Ok(holding);
        }
        Err(format!(
            "{} has no code object for {processor} (present: {})",
            self.root,
            self.processors().join(" ")
        ))
    }
}

/// The number of compute units of each device judged, where it is known (`--cu-count`, or
/// the KFD topology). Kernel databases with rows per CU count (rocBLAS's Tensile indexes)
/// are judged for a device's own count; a device without one is judged for every count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CuCounts(Vec<(gfxkit_target_id::TargetId, u64)>);

impl CuCounts {
    /// No count known for any device.
    pub fn none() -> Self {
        Self::default()
    }

    /// `count` for every one of `devices`.
    pub fn all(devices: &[gfxkit_target_id::TargetId], count: u64) -> Self {
        Self(devices.iter().map(|d| (*d, count)).collect())
    }

    /// Sets the count of `device`.
    pub fn set(&mut self, device: &gfxkit_target_id::TargetId, count: u64) {
        match self.0.iter_mut().find(|(d, _)| d == device) {
            Some(e) => e.1 = count,
            None => self.0.push((*device, count)),
        }
    }

    /// The count of `device`, when known.
    pub fn of(&self, device: &gfxkit_target_id::TargetId) -> Option<u64> {
        self.0.iter().find(|(d, _)| d == device).map(|e| e.1)
    }

    /// Whether no count is known.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The known counts by canonical device target ID.
    pub fn by_device(&self) -> std::collections::BTreeMap<String, u64> {
        self.0.iter().map(|(d, n)| (d.to_string(), *n)).collect()
    }
}

/// Groups database members by [`database_root`], in root order.
pub fn group(members: Vec<DbMember>) -> Vec<Database> {
    let mut map: std::collections::BTreeMap<String, Vec<DbMember>> = Default::default();
    for m in members {
        map.entry(database_root(&m.path)).or_default().push(m);
    }
    map.into_iter()
        .map(|(root, mut members)| {
            members.sort_by(|a, b| a.path.cmp(&b.path));
            Database {
                root,
                members,
                by_variable: false,
            }
        })
        .collect()
}

/// The directory under which the library at `library` (`lib<name>.so*`) keeps the kernel
/// databases it loads: `<its directory>/<name>` (rocBLAS: `rocblas`, holding
/// `<version>/library`; hipBLASLt: `hipblaslt`); `None` for another file name.
pub fn databases_dir(library: &str) -> Option<String> {
    let base = base_name(library);
    let name = base
        .strip_prefix("lib")
        .and_then(|n| n.split(".so").next())
        .filter(|n| !n.is_empty())?;
    let dir = &library[..library.len() - base.len()];
    Some(format!("{dir}{name}"))
}

/// Where the libraries' own environment variables send them for their kernel databases
/// instead: rocBLAS's `ROCBLAS_TENSILE_LIBPATH` and hipBLASLt's `HIPBLASLT_TENSILE_LIBPATH`,
/// each the directory that replaces `rocblas/<version>/library` (`hipblaslt/library`). The
/// caller reads them (`gfxkit_io` from the environment); [`LibPaths::default`] is the layout
/// alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LibPaths {
    /// `ROCBLAS_TENSILE_LIBPATH`.
    pub rocblas: Option<String>,
    /// `HIPBLASLT_TENSILE_LIBPATH`.
    pub hipblaslt: Option<String>,
}

impl LibPaths {
    /// The directory the library at `library` loads its kernel databases from: the override
    /// its variable names, else [`databases_dir`]'s place beside it.
    pub fn dir_for(&self, library: &str) -> Option<String> {
        let dir = databases_dir(library)?;
        let over = match dir.rsplit('/').next() {
            Some("rocblas") => self.rocblas.as_ref(),
            Some("hipblaslt") => self.hipblaslt.as_ref(),
            _ => None,
        };
        Some(match over {
            Some(o) => o.trim_end_matches('/').to_owned(),
            None => dir,
        })
    }

    /// Whether the library at `library` is hipBLASLt sent elsewhere by
    /// `HIPBLASLT_TENSILE_LIBPATH`: it then loads from that directory only, as given (not from
    /// its subdirectories, which it looks into only without the variable).
    pub fn as_given(&self, library: &str) -> bool {
        self.hipblaslt.is_some()
            && databases_dir(library).is_some_and(|d| d.rsplit('/').next() == Some("hipblaslt"))
    }

    /// The overrides set, as `NAME=value` (for reports).
    pub fn describe(&self) -> Vec<String> {
        [
            ("ROCBLAS_TENSILE_LIBPATH", &self.rocblas),
            ("HIPBLASLT_TENSILE_LIBPATH", &self.hipblaslt),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.as_ref().map(|v| format!("{n}={v}")))
        .collect()
    }
}

/// Which of `databases` the library at `library` loads: for `lib<name>.so*`, a database whose
/// root is or lies under [`LibPaths::dir_for`] (rocBLAS: `rocblas/<version>/library` beside it,
/// or `ROCBLAS_TENSILE_LIBPATH`; hipBLASLt: `hipblaslt/library`). MIOpen's `.kdb` files sit
/// under `share/miopen/db`, not beside the library, and are judged as databases of their own.
/// hipBLASLt sent by its variable loads the database of that directory only
/// ([`LibPaths::as_given`]).
pub fn owner_of(library: &str, databases: &[Database], paths: &LibPaths) -> Vec<usize> {
    let Some(dir) = paths.dir_for(library) else {
        return Vec::new();
    };
    let prefix = format!("{dir}/");
    let as_given = paths.as_given(library);
    databases
        .iter()
        .enumerate()
        .filter(|(_, d)| d.root == dir || (!as_given && d.root.starts_with(&prefix)))
        .map(|(i, _)| i)
        .collect()
}

/// The processors a library's own device code is built for (native code objects of the
/// units the runtime loads from `inv`; generic targets and SPIR-V left out), sorted: the
/// processors on which it loads its kernel database.
pub fn code_processors(inv: &crate::Inventory<'_>) -> Vec<String> {
    let mut out: Vec<String> = inv
        .loadable()
        .iter()
        .flat_map(|u| u.ids())
        .filter_map(|id| id.target_id().map(|t| t.processor()))
        .filter(|p| !p.is_generic())
        .map(|p| p.name.to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `verify`'s check of a library (at `path`, its own device code built for `processors`:
/// [`code_processors`]) against the kernel databases it loads ([`owner_of`]): on a GPU of
/// such a processor the library runs, loads its database, and fails when the database lacks
/// that processor's files (rocBLAS cannot initialise: the start-up abort PyTorch users meet).
/// One finding per processor and database that lacks it.
pub fn library_findings(
    path: &str,
    processors: &[String],
    databases: &[Database],
    paths: &LibPaths,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for i in owner_of(path, databases, paths) {
        for p in processors {
            let Ok(t) = gfxkit_target_id::TargetId::parse(p) else {
                continue;
            };
            if let Some(why) = databases[i].lacks(&t, None) {
                out.push(finding(
                    None,
                    Some(entry_id(p)),
                    format!(
                        "its device code is built for {p}, but its kernel database {why}: on \
                         such a GPU the library runs and then fails to load its kernels"
                    ),
                ));
            }
        }
    }
    out
}

/// The library that cannot work without a Tensile kernel database, and where it looks for
/// one: rocBLAS (`librocblas.so*`) and hipBLASLt (`libhipblaslt.so*`), at
/// [`LibPaths::dir_for`]; `None` for other files.
pub fn needs_database(library: &str, paths: &LibPaths) -> Option<(Flavor, String)> {
    let base = base_name(library);
    let flavor = if base.starts_with("librocblas.so") {
        Flavor::Rocblas
    } else if base.starts_with("libhipblaslt.so") {
        Flavor::Hipblaslt
    } else {
        return None;
    };
    Some((flavor, paths.dir_for(library)?))
}

/// `verify` of rocBLAS or hipBLASLt when its device code is all in its kernel database
/// (hipBLASLt 7.1 has no fat binary): for every processor the database has an index for,
/// every file the library opens for it ([`Database::lacks`]); no database where the library
/// looks is a finding too. `None` for another library.
pub fn verify_database_library(
    path: &str,
    databases: &[Database],
    paths: &LibPaths,
) -> Option<Verification> {
    let (flavor, dir) = needs_database(path, paths)?;
    let owned = owner_of(path, databases, paths);
    let mut problems = Vec::new();
    if owned.is_empty() {
        problems.push(finding(
            None,
            None,
            format!("{}: no kernel database in {dir}", flavor.without_index()),
        ));
    }
    let mut entries = 0;
    for &i in &owned {
        let db = &databases[i];
        for p in db.index_processors() {
            entries += 1;
            let Ok(t) = gfxkit_target_id::TargetId::parse(&p) else {
                continue;
            };
            if let Some(why) = db.lacks(&t, None) {
                problems.push(finding(None, Some(entry_id(&p)), why));
            }
        }
    }
    Some(verification(path, 0, entries, problems))
}

/// The kernel databases one library loads ([`owner_of`]), and the one it needs when it is
/// rocBLAS or hipBLASLt ([`needs_database`]).
#[derive(Debug, Clone, Copy)]
pub struct Loaded<'a> {
    databases: &'a [Database],
    loads: &'a [usize],
    needs: Option<(Flavor, &'a str)>,
}

impl Loaded<'_> {
    /// Why these databases cannot serve `device` (with `cu_count` compute units, any when
    /// `None`), naming what is missing and what the library does then (joined with `; `); `None` when each has what the device needs (or there is
    /// none and the library needs none). rocBLAS or hipBLASLt with no database at all where it
    /// looks lacks it for every device.
    pub fn lacks(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
    ) -> Option<String> {
        if self.loads.is_empty() {
            let (flavor, dir) = self.needs?;
            return Some(format!(
                "{}: no kernel database in {dir} (no Tensile index for {})",
                flavor.without_index(),
                device.processor().name
            ));
        }
        let why: Vec<String> = self
            .loads
            .iter()
            .filter_map(|&i| self.databases[i].lacks(device, cu_count))
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// What the runtime of `rules` cannot load of what these databases give `device`
    /// ([`Database::refused`]), each refusal with the files it applies to (named from the
    /// database's root).
    pub fn refused(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
        rules: &gfxkit_spec::rocm::Rules,
    ) -> Vec<(gfxkit_host::release::Refusal, Vec<String>)> {
        self.databases()
            .flat_map(|d| d.rooted(d.refused(device, cu_count, rules)))
            .collect()
    }

    /// [`Loaded::lacks`], and under the runtime of `rules` (when given) also what it cannot
    /// load of what the databases give ([`refused_text`]).
    pub fn lacks_on(
        &self,
        device: &gfxkit_target_id::TargetId,
        cu_count: Option<u64>,
        rules: Option<&gfxkit_spec::rocm::Rules>,
    ) -> Option<String> {
        self.lacks(device, cu_count).or_else(|| {
            let r = rules?;
            refused_text(&self.refused(device, cu_count, r))
        })
    }

    /// What the databases' libraries look for on `device` without needing it for their
    /// kernels, absent, with what follows ([`Database::notes`]).
    pub fn notes(&self, device: &gfxkit_target_id::TargetId, cu_count: Option<u64>) -> Vec<String> {
        self.databases()
            .flat_map(|d| d.notes(device, cu_count))
            .collect()
    }

    /// Whether the library loads or needs a kernel database.
    pub fn any(&self) -> bool {
        !self.loads.is_empty() || self.needs.is_some()
    }

    /// The databases, in root order.
    pub fn databases(&self) -> impl Iterator<Item = &Database> {
        self.loads.iter().map(|&i| &self.databases[i])
    }

    /// The databases' roots, in root order.
    pub fn roots(&self) -> Vec<String> {
        self.loads
            .iter()
            .map(|&i| self.databases[i].root.clone())
            .collect()
    }

    /// The processors the databases hold code for, sorted.
    pub fn processors(&self) -> Vec<String> {
        let mut v: Vec<String> = self.databases().flat_map(|d| d.processors()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The entry IDs of the processors the databases hold code for ([`entry_id`]).
    pub fn entry_ids(&self) -> Vec<gfxkit_bundle::EntryId> {
        self.loads
            .iter()
            .flat_map(|&i| self.databases[i].entry_ids())
            .collect()
    }
}

impl Database {
    /// The entry IDs of the processors its members hold code for ([`entry_id`]).
    pub fn entry_ids(&self) -> Vec<gfxkit_bundle::EntryId> {
        self.processors()
            .iter()
            .filter_map(|p| gfxkit_bundle::EntryId::parse(&entry_id(p)).ok())
            .collect()
    }
}

/// The units a tree is judged by (`doctor`, `check`): each library together with the
/// databases it loads ([`owner_of`]), through `library` (its name, what the runtime would
/// load of it, the databases; `None` for a file that is no GPU library), then each database
/// no library loads as a unit of its own, through `alone`. `libraries` are the files
/// examined, `members` the database files found ([`member_of`]).
pub fn with_databases<L, T>(
    libraries: Vec<(String, L)>,
    members: Vec<DbMember>,
    paths: &LibPaths,
    mut library: impl FnMut(&str, L, Loaded<'_>) -> Option<T>,
    mut alone: impl FnMut(&Database) -> T,
) -> Vec<T> {
    let mut databases = group(members);
    let mut owned = vec![false; databases.len()];
    let mut out = Vec::new();
    for (path, examined) in libraries {
        let loads = owner_of(&path, &databases, paths);
        if paths.as_given(&path) {
            for &i in &loads {
                databases[i].by_variable = true;
            }
        }
        let needs = needs_database(&path, paths);
        let loaded = Loaded {
            databases: &databases,
            loads: &loads,
            needs: needs.as_ref().map(|(f, d)| (*f, d.as_str())),
        };
        if let Some(f) = library(&path, examined, loaded) {
            for &i in &loads {
                owned[i] = true;
            }
            out.push(f);
        }
    }
    for (db, _) in databases.iter().zip(&owned).filter(|(_, o)| !**o) {
        out.push(alone(db));
    }
    out
}

/// `doctor`'s verdicts over a tree ([`with_databases`]): a library by
/// [`crate::doctor::judge_with`], failing on a device its databases lack; a database alone
/// by whether it has code for the device. In path order.
pub fn judge_with_databases(
    libraries: Vec<(String, Examined)>,
    members: Vec<DbMember>,
    devices: &[gfxkit_target_id::TargetId],
    cu_counts: &CuCounts,
    paths: &LibPaths,
    rules: Option<&gfxkit_spec::rocm::Rules>,
) -> Vec<DoctorFile> {
    let mut out = with_databases(
        libraries,
        members,
        paths,
        |path, examined, loaded| {
            let mut f = crate::doctor::judge_with(
                path,
                examined,
                devices,
                &|d| loaded.lacks(d, cu_counts.of(d)),
                loaded.any().then(|| loaded.processors()),
            )?;
            f.database = loaded.roots();
            if let Some(r) = rules {
                for d in devices {
                    f.refuse_database(d, &loaded.refused(d, cu_counts.of(d), r));
                }
            }
            f.fail_damaged(devices);
            for d in devices {
                let notes = loaded.notes(d, cu_counts.of(d));
                if !notes.is_empty() {
                    f.notes.insert(d.to_string(), notes);
                }
            }
            Some(f)
        },
        |db| {
            let mut f = DoctorFile {
                path: db.root.clone(),
                runs_on: Default::default(),
                targets: db.processors(),
                bundles: db.members.len(),
                needs: Default::default(),
                missing: Default::default(),
                spirv: Vec::new(),
                errors: Vec::new(),
                kpack: Vec::new(),
                remedies: Vec::new(),
                database: vec![db.root.clone()],
                notes: Default::default(),
            };
            for d in devices {
                let key = d.to_string();
                let why = db.lacks(d, cu_counts.of(d));
                f.runs_on.insert(key.clone(), why.is_none());
                let notes = db.notes(d, cu_counts.of(d));
                if !notes.is_empty() {
                    f.notes.insert(key.clone(), notes);
                }
                if let Some(why) = why {
                    f.missing.insert(key, why);
                }
                if let Some(r) = rules {
                    f.refuse_database(d, &db.rooted(db.refused(d, cu_counts.of(d), r)));
                }
            }
            f
        },
    );
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_processor_without_a_row_runs_the_fallback_rows_source_kernels() {
        let tree = |fallback: bool| {
            let member = |name: &str, p: Option<&str>, rows: Option<IndexRows>| DbMember {
                path: format!("/l/rocblas/2.47.0/library/{name}"),
                processors: p.into_iter().map(str::to_owned).collect(),
                index_rows: rows.map(Ok),
                stored: Stored::default(),
                map_files: Vec::new(),
            };
            let row = |p: Option<&str>| loads::Row {
                test: match p {
                    Some(p) => loads::DeviceTest::Processor(p.into()),
                    None => loads::DeviceTest::True,
                },
                processor: p.map(str::to_owned),
                cu_count: None,
                placeholders: Vec::new(),
                solutions: 1,
            };
            let mut rows = IndexRows {
                rows: vec![row(Some("gfx1030")), row(Some("gfx90a"))],
            };
            if fallback {
                rows.rows.push(row(None));
            }
            group(vec![
                member("TensileLibrary.dat", None, Some(rows)),
                member("TensileLibrary_gfx1030.co", Some("gfx1030"), None),
                member("Kernels.so-000-gfx1030.hsaco", Some("gfx1030"), None),
                member("Kernels.so-000-gfx1010.hsaco", Some("gfx1010"), None),
            ])
            .remove(0)
        };
        let t = |s: &str| gfxkit_target_id::TargetId::parse(s).unwrap();
        let db = tree(true);
        assert_eq!(
            db.serves(&t("gfx1030"), None).unwrap(),
            [
                "Kernels.so-000-gfx1030.hsaco",
                "TensileLibrary.dat",
                "TensileLibrary_gfx1030.co"
            ]
        );
        // gfx1010 has no row: the fallback row's source kernels, no assembly file needed.
        assert_eq!(
            db.serves(&t("gfx1010"), None).unwrap(),
            ["Kernels.so-000-gfx1010.hsaco", "TensileLibrary.dat"]
        );
        // gfx90a has a row: its assembly kernels are missing.
        let why = db.lacks(&t("gfx90a"), None).unwrap();
        assert!(
            why.contains(
                "lacks Kernels.so-000-gfx90a.hsaco, TensileLibrary_gfx90a.co (rocBLAS fails"
            ),
            "{why}"
        );
        let why = db.lacks(&t("gfx1100"), None).unwrap();
        assert!(why.contains("lacks Kernels.so-000-gfx1100.hsaco"), "{why}");
        // Without a fallback row, a processor without a row of its own has nothing.
        let why = tree(false).lacks(&t("gfx1010"), None).unwrap();
        assert!(
            why.contains("no row for gfx1010 (rows: gfx1030 gfx90a)"),
            "{why}"
        );
    }

    #[test]
    fn database_roots_by_layout() {
        let r = database_root;
        assert_eq!(
            r("/usr/lib/rocblas/2.47.0/library/TensileLibrary_gfx90a.co"),
            "/usr/lib/rocblas/2.47.0/library"
        );
        assert_eq!(
            r("/opt/rocm/lib/hipblaslt/library/gfx942/x_gfx942.co"),
            "/opt/rocm/lib/hipblaslt/library"
        );
        assert_eq!(
            r("x.deb!./usr/lib/rocblas/2.47.0/library/a.co"),
            "x.deb!./usr/lib/rocblas/2.47.0/library"
        );
        assert_eq!(r("aiter.whl!aiter_meta/hsa/gfx942/fmha/a.co"), "aiter.whl");
        assert_eq!(
            r("/venv/lib/python3.12/site-packages/aiter_meta/hsa/gfx942/a.co"),
            "/venv/lib/python3.12/site-packages/aiter_meta"
        );
        // AOTriton: every family's images and zip packs are one database.
        assert_eq!(
            r("/t/torch/lib/aotriton.images/amd-gfx90a/flash/attn_fwd.zip!a.aks2"),
            "/t/torch/lib/aotriton.images"
        );
        assert_eq!(
            r("t.whl!torch/lib/aotriton.images/amd-gfx11xx/flash/attn_fwd.aks2"),
            "t.whl!torch/lib/aotriton.images"
        );
        assert_eq!(r("/tmp/k/a.co"), "/tmp/k");
        // aiter unpacked anywhere: one database for every processor's maps and code.
        assert_eq!(
            r("/tmp/aiter/aiter_meta/hsa/gfx950/pa/a.co"),
            "/tmp/aiter/aiter_meta"
        );
        assert_eq!(
            r("/tmp/aiter/aiter/ops/triton/configs/gemm/aot/k/a.co"),
            "/tmp/aiter/aiter_meta"
        );
        assert_eq!(
            r("/venv/lib/python3.12/site-packages/aiter/ops/triton/a.co"),
            "/venv/lib/python3.12/site-packages/aiter_meta"
        );
        assert_eq!(r("a.co"), "a.co");
        assert_eq!(r("./a.co"), ".");
    }

    #[test]
    fn a_library_owns_the_database_in_its_named_directory() {
        let dbs = group(vec![
            DbMember {
                path: "/l/rocblas/2.47.0/library/TensileLibrary_gfx90a.co".into(),
                processors: vec!["gfx90a".into()],
                index_rows: None,
                stored: Stored::default(),
                map_files: Vec::new(),
            },
            DbMember {
                path: "/l/other/k.co".into(),
                processors: vec!["gfx90a".into()],
                index_rows: None,
                stored: Stored::default(),
                map_files: Vec::new(),
            },
        ]);
        // Grouped in root order: /l/other, then /l/rocblas/...
        let layout = LibPaths::default();
        assert_eq!(owner_of("/l/librocblas.so.0", &dbs, &layout), [1]);
        assert!(owner_of("/l/libhipblas.so.0", &dbs, &layout).is_empty());
        // ROCBLAS_TENSILE_LIBPATH: the database there, not the one beside the library.
        let over = LibPaths {
            rocblas: Some("/l/other/".into()),
            hipblaslt: None,
        };
        assert_eq!(
            over.dir_for("/l/librocblas.so.0").as_deref(),
            Some("/l/other")
        );
        assert_eq!(
            over.dir_for("/l/libhipblaslt.so").as_deref(),
            Some("/l/hipblaslt")
        );
        assert_eq!(over.describe(), ["ROCBLAS_TENSILE_LIBPATH=/l/other/"]);
        assert_eq!(owner_of("/l/librocblas.so.0", &dbs, &over), [0]);
        let d = gfxkit_target_id::TargetId::parse("gfx1030").unwrap();
        // A Tensile directory without its index: rocBLAS aborts.
        assert_eq!(
            dbs[1].lacks(&d, None).as_deref(),
            Some(
                "/l/rocblas/2.47.0/library: rocBLAS aborts at start-up: no index for gfx1030 \
                 (tried TensileLibrary_lazy_gfx1030.dat, TensileLibrary_gfx1030.dat, \
                 TensileLibrary.dat)"
            )
        );
        // Any other directory: by the code objects it holds.
        assert_eq!(
            dbs[0].lacks(&d, None).as_deref(),
            Some("/l/other has no code object for gfx1030 (present: gfx90a)")
        );
    }
}
