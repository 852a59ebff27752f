//! Reading a file's device code for `gfxkit size` and for verifying a rewrite: every bundle,
//! every entry with its MD5, and whether every wrapper leads to a bundle.

use crate::archive;
use crate::bundle;
use crate::check;
use crate::elf::{self, Elf};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::plan::EntryRecord;
use crate::rewrite::{FileKind, Report, Rewritten};
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

fn survey_bundles(region: &[u8], base: u64, digests: bool) -> Result<Vec<SurveyBundle>> {
    let found = bundle::scan(region).map_err(|e| e.shifted(base))?;
    found
        .par_iter()
        .map(|f| {
            let at = base + f.offset as u64;
            let raw = bundle::uncompressed(f).map_err(|e| e.shifted(at))?;
            let parsed = crate::plan::parse(&raw, f, at)?;
            let entries = parsed.entries();
            Ok(SurveyBundle {
                offset: at,
                stored: f.bytes.len() as u64,
                encoding: f.encoding.to_string(),
                uncompressed: raw.len() as u64,
                entries: entries
                    .iter()
                    .map(|e| EntryRecord::of_with(e, digests))
                    .collect(),
            })
        })
        .collect()
}

/// Reads every bundle of `data`: a standalone bundle file, an ELF file, or an archive, with
/// the MD5 of every entry.
pub fn survey(data: &[u8]) -> Result<Survey> {
    survey_with(data, true)
}

/// Like [`survey`]; without `digests` the entries' `md5` fields are left empty (much faster
/// over gigabytes when only sizes are wanted).
pub fn survey_with(data: &[u8], digests: bool) -> Result<Survey> {
    if archive::is_archive(data) {
        let mut regions = Vec::new();
        for m in archive::members(data)? {
            if !elf::is_elf(m.data) {
                continue;
            }
            let base = (m.header_at + 60) as u64;
            let (_, rs) =
                survey_one(m.data, digests).map_err(|e| e.shifted(base).in_member(&m.name))?;
            for mut r in rs {
                r.member = Some(m.name.clone());
                r.offset += base;
                for b in &mut r.bundles {
                    b.offset += base;
                }
                regions.push(r);
            }
        }
        return Ok(Survey {
            kind: FileKind::Archive,
            size: data.len() as u64,
            regions,
        });
    }
    let (kind, regions) = survey_one(data, digests)?;
    Ok(Survey {
        kind,
        size: data.len() as u64,
        regions,
    })
}

fn survey_one(data: &[u8], digests: bool) -> Result<(FileKind, Vec<SurveyRegion>)> {
    if gfxkit_bundle::detect(data).is_some() {
        let bundles = survey_bundles(data, 0, digests)?;
        return Ok((
            FileKind::Bundle,
            vec![SurveyRegion {
                member: None,
                section: None,
                offset: 0,
                size: data.len() as u64,
                bundles,
                wrappers: 0,
                problems: Vec::new(),
            }],
        ));
    }
    if !elf::is_elf(data) {
        return fail(
            0,
            ErrorKind::Unsupported(
                "not an ELF file, an ar archive or an offload bundle (no known magic)".into(),
            ),
        );
    }
    let e = Elf::parse(data)?;
    let kind = match e.e_type {
        elf::ET_REL => FileKind::Object,
        elf::ET_DYN => FileKind::SharedObject,
        _ => FileKind::Executable,
    };
    let Some(fb) = e.section_named(".hip_fatbin")? else {
        return Ok((FileKind::NoDeviceCode, Vec::new()));
    };
    let s = e.shdrs[fb].clone();
    let region = e.section_data(data, fb);
    let bundles = survey_bundles(region, s.offset, digests)?;
    let mut problems = Vec::new();
    let mut wrappers = 0;
    if let Some(seg) = e.section_named(".hipFatBinSegment")? {
        let base = if e.e_type == elf::ET_REL { 0 } else { s.addr };
        let mut pointed = vec![false; bundles.len()];
        for (i, w) in elf::wrappers(&e, data, seg, fb)?.iter().enumerate() {
            if w.magic != elf::HIPF {
                problems.push(format!(
                    "wrapper {i} (at {:#x}) has magic {:#010x}, not HIPF",
                    w.at, w.magic
                ));
                continue;
            }
            wrappers += 1;
            let bundle_at = |rel: u64| {
                let off = rel.checked_add(s.offset)?;
                bundles.iter().position(|b| b.offset == off)
            };
            match check::wrapper_target(i, w, base, bundle_at) {
                Ok(k) => pointed[k] = true,
                Err(e) => problems.push(e.to_string()),
            }
        }
        if let Err(e) = check::every_bundle_pointed(&pointed, |k| bundles[k].offset) {
            problems.push(e.to_string());
        }
    }
    Ok((
        kind,
        vec![SurveyRegion {
            member: None,
            section: Some(".hip_fatbin".into()),
            offset: s.offset,
            size: s.size,
            bundles,
            wrappers,
            problems,
        }],
    ))
}

/// Checks a rewritten file: every bundle re-read, every kept entry's MD5 equal to the
/// original's, every wrapper leading to a bundle, and (ELF) every loadable segment still
/// congruent to its address and in address order.
/// `original` is the input the rewrite was made from.
pub fn verify(original: &[u8], rewritten: &Rewritten) -> Result<()> {
    verify_bytes(original, &rewritten.bytes(), &rewritten.report)
}

/// Like [`verify`], for the bytes of a rewritten file read back from disk: `bytes` must hold
/// what `report` says (the report of the rewrite of `original`).
pub fn verify_bytes(original: &[u8], bytes: &[u8], report: &Report) -> Result<()> {
    let fail_v = |msg: String| Err(Error::at(0, ErrorKind::Verify(msg)));
    let s = survey(bytes)?;
    let want: Vec<_> = report
        .regions
        .iter()
        .filter(|r| !r.bundles.is_empty())
        .collect();
    let got: Vec<_> = s.regions.iter().filter(|r| !r.bundles.is_empty()).collect();
    if want.len() != got.len() {
        return fail_v(format!(
            "{} regions of bundles expected, {} found",
            want.len(),
            got.len()
        ));
    }
    for (w, g) in want.iter().zip(&got) {
        let place = w.member.clone().unwrap_or_default();
        if let Some(p) = g.problems.first() {
            return fail_v(format!("{place} {p}"));
        }
        if g.wrappers != w.wrappers {
            return fail_v(format!(
                "{place}: {} wrappers expected, {} found",
                w.wrappers, g.wrappers
            ));
        }
        if w.bundles.len() != g.bundles.len() {
            return fail_v(format!(
                "{place}: {} bundles expected, {} found",
                w.bundles.len(),
                g.bundles.len()
            ));
        }
        for (k, (wb, gb)) in w.bundles.iter().zip(&g.bundles).enumerate() {
            if wb.kept != gb.entries {
                return fail_v(format!(
                    "{place} bundle {k}: entries differ from the originals kept"
                ));
            }
            if wb.encoding_after != gb.encoding {
                return fail_v(format!(
                    "{place} bundle {k}: encoding {} expected, {} found",
                    wb.encoding_after, gb.encoding
                ));
            }
        }
    }
    if elf::is_elf(bytes) {
        check_segments(bytes)?;
        let before = page_conflicts(original);
        let after = page_conflicts(bytes);
        if after > before {
            return fail_v(format!(
                "{after} pairs of loadable segments share a page or are out of order (were {before})"
            ));
        }
    }
    Ok(())
}

fn check_segments(data: &[u8]) -> Result<()> {
    let e = Elf::parse(data)?;
    check::segments(&e, data.len() as u64)
        .map_err(|err| Error::at(err.offset, ErrorKind::Verify(err.kind.to_string())))
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
        last_end = p.vaddr.saturating_add(p.memsz).div_ceil(page) * page;
    }
    n
}
