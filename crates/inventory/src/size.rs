//! Where device bytes go: per architecture, file and bundle, stored and uncompressed, and
//! what keeping only some targets would save (what `gfxkit size` prints; `--json` is the
//! serialised [`SizeReport`]). The stored bytes of an entry are its payload's where it is
//! stored as it is (uncompressed bundles, kernel-database records, kpack kernels, raw code
//! objects); the stored bytes of one compressed stream holding several entries (a CCOB bundle,
//! an AOTriton `.aks2` file) are shared out among them in proportion to their uncompressed
//! sizes (marked `estimated`, the shares adding up to the stream's bytes). The bytes of
//! bundle headers and of the padding between payloads are in no entry: `overhead` counts
//! them, so that the rows per architecture and the overhead add up to the total.

mod html;
pub use html::html;

use crate::error::{Error, ErrorKind, Result};
use gfxkit_bundle::limits::Limits;
use gfxkit_shrink::{EntryFilter, Pattern, Survey};
use serde::Serialize;
use std::collections::BTreeMap;

/// Surveys one file's bytes (its bundles, their entries and sizes) for [`build_report`],
/// reading each compressed bundle from its header alone ([`gfxkit_shrink::survey_headers`]):
/// its payloads and hash are not checked. An entry whose payload contradicts its ID
/// ([`crate::locate::contradictions`]) is an error: the sizes would be counted under a
/// damaged name.
pub fn survey(data: &[u8], limits: &Limits) -> std::result::Result<Survey, gfxkit_shrink::Error> {
    survey_with(data, false, limits)
}

/// [`survey`]; with `check`, every compressed bundle is decompressed in full and its hash
/// checked ([`gfxkit_shrink::survey_with`]), a bundle that does not decode or whose hash does
/// not match being the error. The sizes are the same either way for an undamaged file.
/// Bundles are read under `limits`.
pub fn survey_with(
    data: &[u8],
    check: bool,
    limits: &Limits,
) -> std::result::Result<Survey, gfxkit_shrink::Error> {
    let survey = if check {
        gfxkit_shrink::survey_with(data, false, limits)?
    } else {
        gfxkit_shrink::survey_headers(data, limits)?
    };
    if survey.regions.iter().any(|r| !r.bundles.is_empty()) {
        if let Ok(found) = crate::locate::locate_with(data, limits) {
            let contradiction = found.problems.iter().find(|p| {
                matches!(
                    p.kind,
                    gfxkit_host::ProblemKind::EntryContradiction { .. }
                        | gfxkit_host::ProblemKind::BadCodeObject(_)
                )
            });
            if let Some(p) = contradiction {
                return Err(gfxkit_shrink::Error::at(
                    p.location.offset,
                    gfxkit_shrink::ErrorKind::Damaged(p.to_string()),
                ));
            }
        }
    }
    Ok(survey)
}

/// Bytes attributed to one architecture.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArchRow {
    /// Target label (`gfx90a:xnack+`, `host`, ...).
    pub arch: String,
    /// Number of entries.
    pub entries: u64,
    /// Bytes stored in files: the payloads', or a share of a compressed stream holding
    /// several entries (then `estimated`).
    pub stored: u64,
    /// Uncompressed bytes.
    pub uncompressed: u64,
    /// Whether part of `stored` is a share of a compressed stream holding several entries.
    pub estimated: bool,
    /// Whether `--keep` keeps this architecture (absent without --keep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<bool>,
}

/// One file.
#[derive(Debug, Clone, Serialize)]
pub struct FileRow {
    /// Path.
    pub path: String,
    /// Kind of file.
    pub kind: gfxkit_shrink::FileKind,
    /// File size.
    pub file_size: u64,
    /// Units of device code, as `list` counts them: bundles, a kernel database file (however
    /// many records), a split binary's wrappers, a raw code object.
    pub bundles: u64,
    /// Device bytes stored.
    pub stored: u64,
    /// Device bytes uncompressed.
    pub uncompressed: u64,
    /// Stored bytes in no entry (bundle headers, padding between payloads): `stored` is the
    /// sum of `archs`' and this.
    pub overhead: u64,
    /// What `--keep` would save in stored bytes (estimated for compressed bundles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prune_saves: Option<u64>,
    /// Per architecture within this file.
    pub archs: Vec<ArchRow>,
}

/// One bundle.
#[derive(Debug, Clone, Serialize)]
pub struct BundleRow {
    /// File path.
    pub path: String,
    /// Archive member.
    pub member: Option<String>,
    /// File offset.
    pub offset: u64,
    /// Encoding.
    pub encoding: String,
    /// Stored bytes.
    pub stored: u64,
    /// Uncompressed bytes.
    pub uncompressed: u64,
    /// Targets, in entry order.
    pub targets: Vec<String>,
}

/// The whole report (`--json` prints this).
#[derive(Debug, Clone, Serialize)]
pub struct SizeReport {
    /// Totals per architecture, largest first.
    pub archs: Vec<ArchRow>,
    /// Per file.
    pub files: Vec<FileRow>,
    /// Per bundle.
    pub bundles: Vec<BundleRow>,
    /// Sum of device bytes stored.
    pub stored: u64,
    /// Sum of device bytes uncompressed.
    pub uncompressed: u64,
    /// Stored bytes in no entry (bundle headers, padding between payloads): `stored` is the
    /// sum of `archs`' and this.
    pub overhead: u64,
    /// `--keep` targets, when given.
    pub keep: Vec<String>,
    /// What `--keep` would save in total (stored bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prune_saves: Option<u64>,
    /// Files that could not be read, with the reason.
    pub errors: Vec<String>,
    /// With `--duplicates`: identical code objects stored more than once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<crate::duplicates::Duplicates>,
    /// With `--by library`: each library with the kernel databases it loads ([`libraries`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<LibraryRow>,
}

/// A library together with the kernel databases it loads, or a database no library loads
/// (`size --by library`).
#[derive(Debug, Clone, Serialize)]
pub struct LibraryRow {
    /// The library's path, or the database's root for a database alone.
    pub path: String,
    /// The roots of the databases counted with it.
    pub database: Vec<String>,
    /// Files counted (the library and its databases' files).
    pub files: usize,
    /// Device bytes stored.
    pub stored: u64,
    /// Device bytes uncompressed.
    pub uncompressed: u64,
    /// What `--keep` would save in stored bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prune_saves: Option<u64>,
}

/// The files of a report grouped as `doctor` judges them ([`crate::database::with_databases`]'s
/// rule): each library with the kernel databases it loads ([`crate::database::owner_of`]),
/// then each database (raw code objects, `.kdb`, `.aks2` files) no library loads, by its root;
/// largest first.
pub fn libraries(files: &[FileRow]) -> Vec<LibraryRow> {
    use crate::database::{group, owner_of, DbMember};
    use gfxkit_shrink::FileKind;
    let is_db = |f: &FileRow| matches!(f.kind, FileKind::CodeObject | FileKind::KernelDatabase);
    let by_path: BTreeMap<&str, &FileRow> = files.iter().map(|f| (f.path.as_str(), f)).collect();
    let members: Vec<DbMember> = files
        .iter()
        .filter(|f| is_db(f))
        .map(|f| DbMember {
            path: f.path.clone(),
            processors: f
                .archs
                .iter()
                .map(|a| a.arch.split(':').next().unwrap_or_default().to_owned())
                .collect(),
            index_rows: None,
            stored: Default::default(),
            map_files: Vec::new(),
        })
        .collect();
    let databases = group(members);
    let add = |row: &mut LibraryRow, f: &FileRow| {
        row.files += 1;
        row.stored += f.stored;
        row.uncompressed += f.uncompressed;
        if let Some(s) = f.prune_saves {
            *row.prune_saves.get_or_insert(0) += s;
        }
    };
    let empty = |path: &str| LibraryRow {
        path: path.to_owned(),
        database: Vec::new(),
        files: 0,
        stored: 0,
        uncompressed: 0,
        prune_saves: None,
    };
    let mut owned = vec![false; databases.len()];
    let mut out = Vec::new();
    for f in files.iter().filter(|f| !is_db(f) && f.bundles > 0) {
        let mut row = empty(&f.path);
        add(&mut row, f);
        // The layout, not the environment: the bytes of the tree read.
        for i in owner_of(&f.path, &databases, &crate::database::LibPaths::default()) {
            owned[i] = true;
            row.database.push(databases[i].root.clone());
            for m in &databases[i].members {
                add(&mut row, by_path[m.path.as_str()]);
            }
        }
        out.push(row);
    }
    for (db, _) in databases.iter().zip(&owned).filter(|(_, o)| !**o) {
        let mut row = empty(&db.root);
        row.database.push(db.root.clone());
        for m in &db.members {
            add(&mut row, by_path[m.path.as_str()]);
        }
        out.push(row);
    }
    out.sort_by(|a, b| b.stored.cmp(&a.stored).then_with(|| a.path.cmp(&b.path)));
    out
}

/// Adds an entry of target label `arch` to its row; `kept` is whether `--keep` keeps the entry
/// (a row is kept when one of its entries is).
fn add(
    map: &mut BTreeMap<String, ArchRow>,
    arch: &str,
    (stored, unc, est): (u64, u64, bool),
    kept: Option<bool>,
) {
    let r = map.entry(arch.to_owned()).or_insert_with(|| ArchRow {
        arch: arch.to_owned(),
        ..ArchRow::default()
    });
    r.kept = match (r.kept, kept) {
        (Some(a), Some(b)) => Some(a || b),
        (a, b) => a.or(b),
    };
    r.entries += 1;
    r.stored += stored;
    r.uncompressed += unc;
    r.estimated |= est;
}

fn sorted(map: BTreeMap<String, ArchRow>) -> Vec<ArchRow> {
    let mut v: Vec<ArchRow> = map.into_values().collect();
    v.sort_by(|a, b| b.stored.cmp(&a.stored).then(a.arch.cmp(&b.arch)));
    v
}

/// The targets `size --keep` keeps, as given and as the selection they make.
#[derive(Debug, Clone)]
pub struct Keep {
    names: Vec<String>,
    sel: EntryFilter,
}

impl Keep {
    /// Parses `--keep` items; `None` when there are none. The error names the first item
    /// that is not a target.
    pub fn parse(keep: &[String]) -> Result<Option<Keep>> {
        if keep.is_empty() {
            return Ok(None);
        }
        let patterns = keep
            .iter()
            .map(|k| {
                Pattern::parse(k)
                    .map_err(|e| Error::new(ErrorKind::BadTarget(format!("bad target: {e}"))))
            })
            .collect::<Result<_>>()?;
        Ok(Some(Keep {
            names: keep.to_vec(),
            sel: EntryFilter::Keep(patterns),
        }))
    }
}

/// The stored bytes of each entry of bundle `b` (in entry order), whether they are shares of
/// one compressed stream, and the bytes in no entry. Payloads stored as they are count
/// exactly (an uncompressed bundle's header and padding are the rest); the bytes of a
/// compressed stream holding several non-empty entries are shared out in proportion to their
/// uncompressed sizes, largest remainders first, so that the shares add up to the stream's
/// bytes; a stream with one non-empty entry is that entry's.
fn entry_bytes(b: &gfxkit_shrink::SurveyBundle, shared_file: bool) -> (Vec<u64>, bool, u64) {
    let sizes: Vec<u64> = b.entries.iter().map(|e| e.size).collect();
    let payload: u64 = sizes.iter().sum();
    if b.encoding == "uncompressed" {
        return (sizes, false, b.stored.saturating_sub(payload));
    }
    let non_empty = sizes.iter().filter(|&&s| s > 0).count();
    if payload == 0 {
        return (vec![0; sizes.len()], false, b.stored);
    }
    if non_empty == 1 {
        let out = sizes
            .iter()
            .map(|&s| if s > 0 { b.stored } else { 0 })
            .collect();
        return (out, shared_file, 0);
    }
    let (stored, total) = (u128::from(b.stored), u128::from(payload));
    let mut out: Vec<u64> = sizes
        .iter()
        .map(|&s| (stored * u128::from(s) / total) as u64)
        .collect();
    let mut left = b.stored - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((stored * u128::from(sizes[i])) % total));
    for i in order {
        if left == 0 {
            break;
        }
        if sizes[i] > 0 {
            out[i] += 1;
            left -= 1;
        }
    }
    (out, true, 0)
}

/// Builds the report from surveyed files, with what keeping only `keep` would save.
pub fn build_report(files: &[(String, Survey)], keep: Option<&Keep>) -> SizeReport {
    let sel = keep.map(|k| &k.sel);
    let mut total = BTreeMap::new();
    let mut file_rows = Vec::new();
    let mut bundle_rows = Vec::new();
    let (mut all_stored, mut all_unc, mut all_saves, mut all_over) = (0u64, 0u64, 0u64, 0u64);
    for (path, s) in files {
        let mut per = BTreeMap::new();
        let (mut stored, mut unc, mut saves, mut over) = (0u64, 0u64, 0u64, 0u64);
        let mut units = std::collections::BTreeSet::new();
        for r in &s.regions {
            // An `.aks2` file is one compressed stream: its survey shares its bytes out among
            // its kernels already (one per bundle).
            let shared_file = r.bundles.len() > 1 && r.bundles.iter().all(|b| b.encoding == "aks2");
            for b in &r.bundles {
                units.insert((r.member.clone(), b.offset));
                stored += b.stored;
                unc += b.uncompressed;
                let (bytes, estimated, rest) = entry_bytes(b, shared_file);
                over += rest;
                for (e, share) in b.entries.iter().zip(bytes) {
                    let kept = sel.map(|s| s.keeps(&e.id));
                    if kept == Some(false) {
                        saves += share;
                    }
                    let sizes = (share, e.size, estimated && e.size > 0);
                    add(&mut per, &e.target, sizes, kept);
                    add(&mut total, &e.target, sizes, kept);
                }
                bundle_rows.push(BundleRow {
                    path: path.clone(),
                    member: r.member.clone(),
                    offset: b.offset,
                    encoding: b.encoding.clone(),
                    stored: b.stored,
                    uncompressed: b.uncompressed,
                    targets: b.entries.iter().map(|e| e.target.clone()).collect(),
                });
            }
        }
        all_stored += stored;
        all_unc += unc;
        all_saves += saves;
        all_over += over;
        file_rows.push(FileRow {
            path: path.clone(),
            kind: s.kind,
            file_size: s.size,
            bundles: units.len() as u64,
            stored,
            uncompressed: unc,
            overhead: over,
            prune_saves: sel.map(|_| saves),
            archs: sorted(per),
        });
    }
    SizeReport {
        archs: sorted(total),
        files: file_rows,
        bundles: bundle_rows,
        stored: all_stored,
        uncompressed: all_unc,
        overhead: all_over,
        keep: keep.map(|k| k.names.clone()).unwrap_or_default(),
        prune_saves: sel.map(|_| all_saves),
        errors: Vec::new(),
        duplicates: None,
        libraries: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gfxkit_shrink::{EntryRecord, FileKind, SurveyBundle};

    fn bundle(offset: u64, encoding: &str, stored: u64, entries: &[(&str, u64)]) -> SurveyBundle {
        SurveyBundle {
            offset,
            stored,
            encoding: encoding.to_owned(),
            uncompressed: entries.iter().map(|e| e.1).sum::<u64>() + 64,
            entries: entries
                .iter()
                .map(|(t, size)| EntryRecord {
                    id: format!("hipv4-amdgcn-amd-amdhsa--{t}"),
                    target: (*t).to_owned(),
                    size: *size,
                    md5: String::new(),
                })
                .collect(),
        }
    }

    fn file(bundles: Vec<SurveyBundle>) -> Survey {
        crate::kpack::one_region_survey(
            FileKind::SharedObject,
            1 << 20,
            Some(".hip_fatbin".into()),
            1,
            bundles,
        )
    }

    /// Rows of an uncompressed bundle are its payloads, exact (no star); the header and
    /// padding are the overhead; the shares of a compressed bundle add up to its bytes and are
    /// starred; the rows and the overhead add up to the total.
    #[test]
    fn rows_and_overhead_add_up_and_only_shares_are_estimated() {
        let plain = bundle(
            0,
            "uncompressed",
            12288,
            &[("gfx90a", 4000), ("gfx906", 3000)],
        );
        let packed = bundle(
            0x4000,
            "ccob-v3-zstd",
            1001,
            &[("gfx90a", 3333), ("gfx1100", 3333), ("gfx1030", 3334)],
        );
        let r = build_report(&[("a.so".into(), file(vec![plain, packed]))], None);
        let row = |a: &str| r.archs.iter().find(|x| x.arch == a).unwrap().clone();
        assert_eq!(r.overhead, 12288 - 7000);
        let sum: u64 = r.archs.iter().map(|a| a.stored).sum();
        assert_eq!(sum + r.overhead, r.stored);
        assert_eq!(r.stored, 12288 + 1001);
        assert_eq!(row("gfx906").stored, 3000);
        assert!(!row("gfx906").estimated);
        assert!(row("gfx1100").estimated);
        assert_eq!(r.files[0].bundles, 2);
        assert_eq!(r.files[0].overhead, r.overhead);
        // A compressed bundle with one code object: its bytes are that code object's.
        let one = bundle(0, "ccob-v3-zstd", 500, &[("host", 0), ("gfx942", 9000)]);
        let r = build_report(&[("b.so".into(), file(vec![one]))], None);
        assert_eq!(r.archs[0].stored, 500);
        assert!(r.archs.iter().all(|a| !a.estimated));
        // Kernel-database records all at the file's start: one unit, as `list` counts it.
        let recs = (0..3)
            .map(|_| bundle(0, "miopen-kdb", 100, &[("gfx90a", 400)]))
            .collect();
        let r = build_report(&[("x.kdb".into(), file(recs))], None);
        assert_eq!(r.files[0].bundles, 1);
        assert!(r.archs.iter().all(|a| !a.estimated));
        assert_eq!(r.archs[0].stored, 300);
    }
}
