//! Reading a file's device code for `gfxkit size` and for verifying a rewrite: every bundle,
//! every entry with its MD5, and whether every wrapper leads to a bundle. A view over
//! [`discover`](mod@gfxkit_host::discover), which finds the bundles and wrappers.

use crate::archive;
use crate::bundle::{self, encoding};
use crate::check::{self, WrapperProblem};
use crate::elf::{self, Elf};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::plan::EntryRecord;
use crate::report::FileKind;
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::Bundle;
use gfxkit_bytes::{offset_within, Cursor};
use gfxkit_host::{
    Discovery, InputKind, Location, Problem, ProblemKind, Unit, WrapperMagic, WrapperTarget,
};
use rayon::prelude::*;
use serde::Serialize;

/// One bundle as found.
#[derive(Debug, Clone, Serialize)]
pub struct SurveyBundle {
    /// File offset.
    pub offset: u64,
    /// Bytes stored in the file.
    pub stored: u64,
    /// Encoding (`uncompressed`, `ccob-v2-zstd`, ...).
    pub encoding: String,
    /// Size of the uncompressed bundle.
    pub uncompressed: u64,
    /// Entries in header order.
    pub entries: Vec<EntryRecord>,
}

/// One region of bundles (a `.hip_fatbin` section, or a standalone bundle file).
#[derive(Debug, Clone, Serialize)]
pub struct SurveyRegion {
    /// Archive member, when inside one.
    pub member: Option<String>,
    /// ELF section name, when inside an ELF file.
    pub section: Option<String>,
    /// File offset of the region.
    pub offset: u64,
    /// Size of the region.
    pub size: u64,
    /// Bundles in order.
    pub bundles: Vec<SurveyBundle>,
    /// `HIPF` wrappers found.
    pub wrappers: usize,
    /// Wrappers that do not lead to a bundle, bundles no wrapper leads to.
    pub problems: Vec<String>,
    /// The first of `problems` as an error, at its file offset.
    #[serde(skip)]
    pub first_problem: Option<Error>,
    /// How many bundles discovery delimits here (as many as `bundles` when they were read).
    #[serde(skip)]
    pub found: usize,
}

/// A file's device code.
#[derive(Debug, Clone, Serialize)]
pub struct Survey {
    /// The kind of file.
    pub kind: FileKind,
    /// File size.
    pub size: u64,
    /// Regions in file order.
    pub regions: Vec<SurveyRegion>,
}

/// Called by [`survey_read`] with each bundle's file offset, its bytes as stored and the
/// uncompressed bundle parsed.
pub(crate) type Visit<'v> = dyn Fn(u64, &[u8], &Bundle<'_>) -> Result<()> + Sync + 'v;

/// How [`survey_read`] reads the bundles.
#[derive(Clone, Copy)]
pub(crate) struct Reading<'v> {
    /// Read every bundle's entries (decoding compressed bundles); without it only what
    /// discovery finds is checked and the regions list no bundles.
    pub decode: bool,
    /// Compute every entry's MD5.
    pub digests: bool,
    /// Check the CCOB hash of compressed bundles. Only a caller that compares every entry
    /// byte for byte with data it trusts (through `visit`) turns this off.
    pub hash: bool,
    /// Read compressed bundles from their header alone when it reads ([`survey_headers`]);
    /// only without `digests` and `visit`, which need the payloads.
    pub headers: bool,
    /// Called on every bundle, in parallel.
    pub visit: Option<&'v Visit<'v>>,
    /// Added to the offsets handed to `visit`. Offsets are file offsets already (an archive
    /// member's included), so callers pass 0.
    pub base: u64,
    /// The limits the input is read under.
    pub limits: Limits,
}

/// Decompresses and reads every bundle `found` in the input (in parallel), as `how` says.
fn survey_bundles(found: &[Unit<'_>], how: &Reading<'_>) -> Result<Vec<SurveyBundle>> {
    // Without the hash, bundles are decoded into one buffer per worker, reused.
    found
        .par_iter()
        .map_init(Vec::new, |buf, f| {
            let at = f.offset;
            if how.headers && !how.digests && how.visit.is_none() {
                if let Some(b) = from_header(f) {
                    return Ok(b);
                }
            }
            let owned;
            let raw: &[u8] = if how.hash {
                owned = bundle::uncompressed(f)?;
                &owned
            } else {
                bundle::uncompressed_unhashed(f, buf)?
            };
            let parsed = crate::plan::parse(raw, f)?;
            if let Some(visit) = how.visit {
                visit(how.base.saturating_add(at), f.bytes, &parsed)?;
            }
            let entries = parsed.entries();
            Ok(SurveyBundle {
                offset: at,
                stored: f.bytes.len() as u64,
                encoding: encoding(f).short_name(),
                uncompressed: raw.len() as u64,
                entries: EntryRecord::all_of(entries, how.digests),
            })
        })
        // Every result, then the first error in file order (not the first a thread met).
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}

/// The bundle `f` read from its header alone, when it is compressed and its header reads
/// (`None` otherwise: the caller decompresses it, and reports what is wrong as it always has).
fn from_header(f: &Unit<'_>) -> Option<SurveyBundle> {
    f.ccob.as_ref()?;
    let (header, entries, _) =
        gfxkit_bundle::read::ccob_header_checked_at(f.cursor(), &f.limits).ok()?;
    Some(SurveyBundle {
        offset: f.offset,
        stored: f.bytes.len() as u64,
        encoding: encoding(f).short_name(),
        uncompressed: header.uncompressed_size,
        entries: entries
            .iter()
            .map(|e| EntryRecord::of_header(&e.id, e.size))
            .collect(),
    })
}

/// Reads every bundle of `data`: a standalone bundle file, an ELF file, or an archive, with
/// the MD5 of every entry; bundles are read under `limits`.
pub fn survey(data: &[u8], limits: &Limits) -> Result<Survey> {
    survey_with(data, true, limits)
}

/// Like [`survey`]; without `digests` the entries' `md5` fields are left empty (much faster
/// over gigabytes when only sizes are wanted).
///
/// What device code the file holds is what [`discover`](mod@gfxkit_host::discover) finds (the one
/// discovery every gfxkit command reads): the bundles of the `.hip_fatbin` section of an ELF
/// file (or of each ELF member of an archive; more than one such section is refused, as the
/// rewrite refuses it) or of a standalone bundle file, and the `.hipFatBinSegment` wrappers
/// leading to them. This view adds what a rewrite needs: each bundle decompressed and its
/// entries read strictly, and damage that discovery reports in those places as an error.
pub fn survey_with(data: &[u8], digests: bool, limits: &Limits) -> Result<Survey> {
    survey_read(
        data,
        &Reading {
            decode: true,
            digests,
            hash: true,
            headers: false,
            visit: None,
            base: 0,
            limits: *limits,
        },
    )
}

/// Like [`survey_with`] without digests, reading each compressed (CCOB) bundle from its
/// header alone: the declared uncompressed size, and the entries of the uncompressed bundle
/// header found at the start of the decompressed stream, checked as the whole bundle's parse
/// checks them ([`gfxkit_bundle::read::ccob_header_checked_at`]). Only the first bytes are
/// decompressed, so neither the payloads nor the hash are checked: the answer is what the
/// headers say. A bundle whose header cannot be read so is decompressed in full and reported
/// as [`survey_with`] reports it. Uncompressed bundles are read as by [`survey_with`].
pub fn survey_headers(data: &[u8], limits: &Limits) -> Result<Survey> {
    survey_read(
        data,
        &Reading {
            decode: true,
            digests: false,
            hash: true,
            headers: true,
            visit: None,
            base: 0,
            limits: *limits,
        },
    )
}

/// Like [`survey_with`], reading each bundle as `how` says.
pub(crate) fn survey_read(data: &[u8], how: &Reading<'_>) -> Result<Survey> {
    if archive::is_archive(data) {
        let mut regions = Vec::new();
        for m in archive::members(data)? {
            if !elf::is_elf(m.data) && InputKind::sniff(m.data) != InputKind::CoffObject {
                continue;
            }
            let (_, rs) = survey_one(data, m.data, how).map_err(|e| e.in_member(&m.name))?;
            for mut r in rs {
                r.member = Some(m.name.clone());
                regions.push(r);
            }
        }
        return Ok(Survey {
            kind: FileKind::Archive,
            size: data.len() as u64,
            regions,
        });
    }
    let (kind, regions) = survey_one(data, data, how)?;
    Ok(Survey {
        kind,
        size: data.len() as u64,
        regions,
    })
}

/// [`survey_read`] of the archive `data`, whose ELF and COFF members the caller discovered
/// (`members`, in member order: the rewrite, which reads each member once).
pub(crate) fn survey_members(
    data: &[u8],
    how: &Reading<'_>,
    members: &[crate::archive::Discovered<'_>],
) -> Result<Survey> {
    let mut regions = Vec::new();
    for (name, member, found) in members {
        let (_, rs) = survey_found(data, member, how, found).map_err(|e| e.in_member(name))?;
        for mut r in rs {
            r.member = Some(name.clone());
            regions.push(r);
        }
    }
    Ok(Survey {
        kind: FileKind::Archive,
        size: data.len() as u64,
        regions,
    })
}

/// [`survey_read`] of `data`, which is not an archive, whose discovery `found` the caller
/// made (the rewrite, which reads the input once).
pub(crate) fn survey_discovered(
    data: &[u8],
    how: &Reading<'_>,
    found: &gfxkit_host::Discovery<'_>,
) -> Result<Survey> {
    let (kind, regions) = survey_found(data, data, how, found)?;
    Ok(Survey {
        kind,
        size: data.len() as u64,
        regions,
    })
}

/// The error for a problem discovery found where the rewrite reads (`base`: file offset of
/// the discovered bytes), or `None` for problems a survey leaves to `verify`.
fn fatal(p: &Problem, base: u64) -> Option<Error> {
    let at = base.saturating_add(p.location.offset);
    let kind = match &p.kind {
        ProblemKind::UnknownBytes { found } => ErrorKind::UnknownBytes {
            found: found.clone(),
        },
        ProblemKind::MalformedElf(m) => ErrorKind::BadElf(m.clone()),
        ProblemKind::MalformedPe(_) => ErrorKind::Damaged(p.kind.to_string()),
        ProblemKind::TruncatedElf(t) => ErrorKind::Damaged(t.to_string()),
        ProblemKind::BadBundle(_)
        | ProblemKind::BundlePastSection { .. }
        | ProblemKind::TooMany {
            what: "bundles in one section",
            ..
        } => ErrorKind::Damaged(p.kind.to_string()),
        ProblemKind::SectionOutsideFile { .. }
            if p.location
                .section
                .as_deref()
                .is_some_and(gfxkit_host::fatbin::is_fatbin_section) =>
        {
            ErrorKind::BadElf(p.kind.to_string())
        }
        _ => return None,
    };
    Some(Error::at(at, kind))
}

/// Bundle `i` of those `d` found, as the rewrite reads it: unit `index` of the region, at its
/// file offset (`base`: where the discovered bytes lie in the file). A compression method
/// gfxkit does not know is unsupported rather than damage.
fn found<'a>(d: &Discovery<'a>, i: usize, index: usize, base: u64) -> Result<Unit<'a>> {
    let at = d.bundle_location(i).map_or(0, |l| l.offset);
    let mut unit = match d.bundle_unit(i) {
        Some(Ok(unit)) => unit,
        Some(Err(e)) => {
            let mut e = match e.kind {
                gfxkit_bundle::ErrorKind::UnknownMethod(method) => Error::at(
                    e.offset.unwrap_or(at),
                    ErrorKind::Unsupported(format!("compression method {method}")),
                ),
                _ => bundle::error_at(e, at),
            };
            e.offset = e.offset.saturating_add(base);
            return Err(e);
        }
        // Not reached: the survey asks for bundles below `bundle_count`.
        None => {
            return fail(
                base.saturating_add(at),
                ErrorKind::Damaged(format!("no bundle {i}")),
            )
        }
    };
    unit.index = index;
    unit.offset = base.saturating_add(unit.offset);
    Ok(unit)
}

/// Surveys `data` (the whole input, or an archive member's contents within `file`).
fn survey_one(
    file: &[u8],
    data: &[u8],
    how: &Reading<'_>,
) -> Result<(FileKind, Vec<SurveyRegion>)> {
    survey_found(file, data, how, &crate::discover(data, &how.limits))
}

/// [`survey_one`] of `data`, whose discovery `d` the caller made.
fn survey_found(
    file: &[u8],
    data: &[u8],
    how: &Reading<'_>,
    d: &gfxkit_host::Discovery<'_>,
) -> Result<(FileKind, Vec<SurveyRegion>)> {
    let base = offset_within(file, data).unwrap_or(0);
    let Some(kind) = surveyed_kind(d, data, base)? else {
        return Ok((FileKind::NoDeviceCode, Vec::new()));
    };
    // The place the rewrite reads: the whole bundle file, or the first `.hip_fatbin` (in a
    // file without a section table, the span discovery read, which has no section name).
    let (section, region) = if kind == FileKind::Bundle {
        (None, Location::at(0, data.len() as u64))
    } else {
        match d.fatbin_sections.as_slice() {
            [l] => (l.section.clone(), l.clone()),
            [_, second, ..] => {
                return fail(
                    base.saturating_add(second.offset),
                    ErrorKind::Unsupported("more than one .hip_fatbin section".into()),
                );
            }
            [] => {
                if let Some(e) = d.problems.iter().find_map(|p| fatal(p, base)) {
                    return Err(e);
                }
                return Ok((FileKind::NoDeviceCode, Vec::new()));
            }
        }
    };
    let inside = |l: &Location| {
        l.section == section && l.offset >= region.offset && l.offset - region.offset <= region.size
    };
    if let Some(e) = d
        .problems
        .iter()
        .filter(|p| p.location.section.is_none() || inside(&p.location))
        .find_map(|p| fatal(p, base))
    {
        return Err(e);
    }
    let mine: Vec<usize> = (0..d.bundle_count())
        .filter(|&i| d.bundle_location(i).is_some_and(inside))
        .collect();
    let list = mine
        .iter()
        .enumerate()
        .map(|(k, &i)| found(d, i, k, base))
        .collect::<Result<Vec<_>>>()?;
    let bundles = if how.decode {
        survey_bundles(&list, how)?
    } else {
        Vec::new()
    };
    let (problems, wrappers) = wrapper_problems(d, &mine, &list, base);
    Ok((
        kind,
        vec![SurveyRegion {
            member: None,
            section,
            offset: base.saturating_add(region.offset),
            size: region.size,
            bundles,
            wrappers,
            first_problem: problems.first().cloned(),
            found: list.len(),
            problems: problems.iter().map(Error::to_string).collect(),
        }],
    ))
}

/// The kind of file discovery `d` found in `data` (at `base` in the file), when the survey
/// reads it; `None` for a code object (no bundle to survey).
fn surveyed_kind(d: &Discovery<'_>, data: &[u8], base: u64) -> Result<Option<FileKind>> {
    let kind = match d.kind {
        InputKind::Bundle => FileKind::Bundle,
        InputKind::ElfRelocatable => FileKind::Object,
        InputKind::ElfSharedObject => FileKind::SharedObject,
        InputKind::ElfExecutable => FileKind::Executable,
        InputKind::CoffObject => FileKind::Object,
        InputKind::PeImage => match gfxkit_host::pe::is_dll(data) {
            Some(false) => FileKind::Executable,
            _ => FileKind::SharedObject,
        },
        InputKind::CodeObject => return Ok(None),
        InputKind::PeOther => {
            return fail(
                base,
                ErrorKind::Unsupported(
                    "only PE32+ images and COFF objects for x86-64 are handled".into(),
                ),
            )
        }
        InputKind::ElfOther => {
            // At EI_CLASS, or the last byte of a file that ends before it.
            return fail(
                Cursor::at(data, base).inside(4),
                ErrorKind::Unsupported("only 64-bit little-endian ELF files are handled".into()),
            );
        }
        _ => {
            return fail(
                0,
                ErrorKind::Unsupported(
                    "not an ELF file, an ar archive or an offload bundle (no known magic)".into(),
                ),
            )
        }
    };
    Ok(Some(kind))
}

/// The problems with the wrappers of `d`: each must be `HIPF` and lead to one of the bundles
/// of the region (`mine`, found as `list`), and every bundle must be led to. Returns them
/// with the number of `HIPF` wrappers.
fn wrapper_problems(
    d: &Discovery<'_>,
    mine: &[usize],
    list: &[Unit<'_>],
    base: u64,
) -> (Vec<Error>, usize) {
    let mut problems = Vec::new();
    let mut wrappers = 0;
    for (i, w) in d.wrappers.iter().enumerate() {
        let at = base.saturating_add(w.location.offset);
        if w.magic == WrapperMagic::Hipk {
            problems.push(Error::at(at, ErrorKind::AlreadySplit { wrapper: i }));
            continue;
        }
        if w.magic != WrapperMagic::Hipf {
            problems.push(Error::at(
                at,
                ErrorKind::Damaged(format!(
                    "wrapper {i} has magic {}, not HIPF",
                    w.magic.name()
                )),
            ));
            continue;
        }
        wrappers += 1;
        let problem = match &w.target {
            WrapperTarget::Bundle { index } if mine.contains(index) => continue,
            WrapperTarget::Nowhere => WrapperProblem::Null,
            WrapperTarget::Address { address, .. } => WrapperProblem::NoBundle { target: *address },
            WrapperTarget::Bundle { index } => {
                let b = d.bundle_location(*index).map_or(0, |l| l.offset);
                problems.push(Error::at(
                    at,
                    ErrorKind::Damaged(format!(
                        "wrapper {i}: points to the bundle at {:#x} in another .hip_fatbin",
                        base.saturating_add(b)
                    )),
                ));
                continue;
            }
            WrapperTarget::External { symbol } => {
                problems.push(Error::at(
                    at,
                    ErrorKind::Damaged(format!(
                        "wrapper {i}: points to the undefined symbol {symbol}, resolved only \
                         when linking"
                    )),
                ));
                continue;
            }
        };
        problems.push(Error::at(at, ErrorKind::Wrapper { index: i, problem }));
    }
    if !d.wrappers.is_empty() || has_wrapper_section(d) {
        let pointed: Vec<bool> = mine.iter().map(|&i| d.is_wrapped(i)).collect();
        if let Err(e) = check::every_bundle_pointed(&pointed, |k| list[k].offset) {
            problems.push(e);
        }
    }
    (problems, wrappers)
}

/// Whether the file has a `.hipFatBinSegment` section (discovery says so by reporting the
/// bundles no wrapper points to, or a damaged section, even when it holds no record).
fn has_wrapper_section(d: &Discovery<'_>) -> bool {
    d.problems.iter().any(|p| {
        matches!(p.kind, ProblemKind::BundleWithoutWrapper)
            || p.location
                .section
                .as_deref()
                .is_some_and(gfxkit_host::fatbin::is_wrapper_section)
    })
}

/// Pairs of consecutive loadable segments that share a 4 KiB page or are out of address order.
pub(crate) fn page_conflicts(data: &[u8]) -> usize {
    let Ok(e) = Elf::parse(data) else { return 0 };
    let page = 4096u64;
    let mut last_end = 0u64;
    let mut n = 0;
    for p in e.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD) {
        if p.vaddr / page * page < last_end {
            n += 1;
        }
        // Saturating: a segment reaching the top of the address space ends there.
        last_end = p
            .vaddr
            .saturating_add(p.memsz)
            .div_ceil(page)
            .saturating_mul(page);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::Method;

    /// Survey reads the bundles host discovery finds, at the same offsets, and fails where
    /// discovery reports the region damaged.
    #[test]
    fn survey_is_a_view_of_discovery() {
        let a = bundle::write_uncompressed(
            &[
                ("host-x86_64-unknown-linux--", &[]),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &[7u8; 100]),
            ],
            4096,
        )
        .unwrap();
        let mut file = a.clone();
        file.resize(a.len().div_ceil(4096) * 4096, 0);
        let c = bundle::compress(&a, 3, Method::Zstd, 3, 0).unwrap();
        file.extend_from_slice(&c);
        let d = gfxkit_host::discover(&file);
        let s = survey(&file, &Default::default()).unwrap();
        assert_eq!(s.kind, FileKind::Bundle);
        let offsets: Vec<u64> = s.regions[0].bundles.iter().map(|b| b.offset).collect();
        let found: Vec<u64> = (0..d.bundle_count())
            .map(|i| d.bundle_location(i).unwrap().offset)
            .collect();
        assert_eq!(offsets, found);
        assert_eq!(s.regions[0].bundles[1].encoding, "ccob-v3-zstd");
        assert_eq!(
            s.regions[0].bundles[1].entries,
            s.regions[0].bundles[0].entries
        );

        // Garbage after the bundles: discovery's stop is the survey's error, at its offset.
        let mut bad = file.clone();
        bad.extend_from_slice(b"junk");
        let e = survey(&bad, &Default::default()).unwrap_err();
        assert_eq!(e.offset, file.len() as u64);
        assert!(matches!(e.kind, ErrorKind::UnknownBytes { .. }), "{e}");
        // A cut-off bundle.
        let e = survey(&file[..file.len() - 1], &Default::default()).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Damaged(_)), "{e}");
    }
}
