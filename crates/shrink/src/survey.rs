//! Reading a file's device code for `gfxkit size` and for verifying a rewrite: every bundle,
//! every entry with its MD5, and whether every wrapper leads to a bundle.

use crate::archive;
use crate::bundle;
use crate::elf::{self, Elf};
use crate::error::{fail, ErrorKind, Result};
use crate::plan::EntryRecord;
use crate::rewrite::FileKind;
use gfxkit_bundle::Bundle;
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

/// Called by [`survey_read`] with each bundle's file offset, its bytes as stored and the
/// uncompressed bundle parsed.
pub(crate) type Visit<'v> = dyn Fn(u64, &[u8], &Bundle<'_>) -> Result<()> + Sync + 'v;

/// How [`survey_read`] reads the bundles.
#[derive(Clone, Copy)]
pub(crate) struct Reading<'v> {
    /// Compute every entry's MD5.
    pub digests: bool,
    /// Check the CCOB hash of compressed bundles. Only a caller that compares every entry
    /// byte for byte with data it trusts (through `visit`) turns this off.
    pub hash: bool,
    /// Called on every bundle, in parallel.
    pub visit: Option<&'v Visit<'v>>,
    /// Added to the offsets handed to `visit` (an archive member's offset in the archive).
    pub base: u64,
}

fn survey_bundles(region: &[u8], base: u64, how: &Reading<'_>) -> Result<Vec<SurveyBundle>> {
    let found = bundle::scan(region).map_err(|e| e.shifted(base))?;
    // Without the hash, bundles are decoded into one buffer per worker, reused.
    found
        .par_iter()
        .map_init(Vec::new, |buf, f| {
            let at = base + f.offset as u64;
            let owned;
            let raw: &[u8] = if how.hash {
                owned = bundle::uncompressed(f).map_err(|e| e.shifted(at))?;
                &owned
            } else {
                bundle::uncompressed_unhashed(f, buf).map_err(|e| e.shifted(at))?
            };
            let parsed = crate::plan::parse(raw, f, at)?;
            if let Some(visit) = how.visit {
                visit(how.base + at, f.bytes, &parsed)?;
            }
            let entries = parsed.entries();
            let digests = how.digests;
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
    survey_read(
        data,
        &Reading {
            digests,
            hash: true,
            visit: None,
            base: 0,
        },
    )
}

/// Like [`survey_with`], reading each bundle as `how` says.
pub(crate) fn survey_read(data: &[u8], how: &Reading<'_>) -> Result<Survey> {
    if archive::is_archive(data) {
        let mut regions = Vec::new();
        for m in archive::members(data)? {
            if !elf::is_elf(m.data) {
                continue;
            }
            let base = (m.header_at + 60) as u64;
            let (_, rs) =
                survey_one(m.data, base, how).map_err(|e| e.shifted(base).in_member(&m.name))?;
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
    let (kind, regions) = survey_one(data, 0, how)?;
    Ok(Survey {
        kind,
        size: data.len() as u64,
        regions,
    })
}

/// One non-archive file; `member_base` is its offset in the file being surveyed (an archive
/// member's), which only the offsets handed to a visitor include.
fn survey_one(
    data: &[u8],
    member_base: u64,
    how: &Reading<'_>,
) -> Result<(FileKind, Vec<SurveyRegion>)> {
    if gfxkit_bundle::detect(data).is_some() {
        let how = Reading {
            base: member_base,
            ..*how
        };
        let bundles = survey_bundles(data, 0, &how)?;
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
    let how = Reading {
        base: member_base,
        ..*how
    };
    let bundles = survey_bundles(region, s.offset, &how)?;
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
            let hit = w
                .target
                .and_then(|t| t.checked_sub(base))
                .and_then(|r| r.checked_add(s.offset))
                .and_then(|off| bundles.iter().position(|b| b.offset == off));
            match hit {
                Some(k) => pointed[k] = true,
                None => problems.push(format!(
                    "wrapper {i} (at {:#x}) points to {:?}, where no bundle starts",
                    w.at, w.target
                )),
            }
        }
        for (k, p) in pointed.iter().enumerate() {
            if !p {
                problems.push(format!(
                    "no wrapper points to bundle {k} (at {:#x})",
                    bundles[k].offset
                ));
            }
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
