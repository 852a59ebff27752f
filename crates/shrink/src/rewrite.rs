//! The layout rewrite: a new `.hip_fatbin`, every reference to it fixed, and the file made
//! smaller by moving what follows the device code down by whole alignment units.

use crate::edit::{self, Edit, Field, SectionTable};
use crate::elf::{self, Elf, Phdr, Shdr};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::layout;
use crate::output::Output;
use crate::patch::align_down;
use crate::plan::{self, BundleOutcome, NewRegion, Transform};
pub use crate::report::{FileKind, Layout, RegionReport, Report, Rewritten};
use crate::segment::{self, Placement, Request};
use crate::survey::SurveyRegion;

use gfxkit_bytes::Cursor;
use gfxkit_host::WrapperMagic;
use std::collections::HashMap;

/// Rewrites `data` (a standalone bundle file, relocatable object, shared object, executable or
/// `ar` archive): every bundle gets `t` applied, references are fixed and the layout shrinks.
///
/// Nothing is assembled in memory: the result holds the plan (new headers, compressed bundles,
/// patched fields) and borrows everything else from `data`.
///
/// Every kept entry's MD5 is in the report (`kept[].md5`): one more pass over the kept
/// payloads, which [`rewrite_without_digests`] leaves out.
pub fn rewrite<'a>(data: &'a [u8], t: &Transform) -> Result<Rewritten<'a>> {
    let mut r = rewrite_without_digests(data, t)?;
    r.report.add_digests(data, &t.limits)?;
    Ok(r)
}

/// Like [`rewrite`], with the kept entries' `md5` left empty: for a caller that does not
/// show them (or fills them in later with [`Report::add_digests`]). [`crate::verify()`]
/// compares the payloads themselves and needs no digests.
pub fn rewrite_without_digests<'a>(data: &'a [u8], t: &Transform) -> Result<Rewritten<'a>> {
    // The input is discovered once (an archive's members each once): the rewrite of a PE
    // image or COFF object reads its wrappers from this discovery, and the input check below
    // compares it with the plan.
    let (mut r, found) = if crate::archive::is_archive(data) {
        let (r, members) = crate::archive::rewrite_archive(data, t, rewrite_member)?;
        (r, Discoveries::Members(members))
    } else {
        let found = crate::discover(data, &t.limits);
        let (output, kind, region) = rewrite_found(data, t, Some(&found))?;
        let r = Rewritten {
            report: Report {
                kind,
                size_before: data.len() as u64,
                size_after: output.len(),
                regions: region.into_iter().collect(),
                unmatched: Vec::new(),
            },
            output,
        };
        (r, Discoveries::One(found))
    };
    check_input(data, &r.report, &t.limits, &found)?;
    r.report.find_unmatched(&t.selection);
    Ok(r)
}

/// What discovery found in the input: in the file, or in each ELF or COFF member of an
/// archive.
enum Discoveries<'a> {
    One(gfxkit_host::Discovery<'a>),
    Members(Vec<crate::archive::Discovered<'a>>),
}

/// Refuses an input that already breaks a rule its rewrite is checked against
/// ([`crate::verify()`]), or whose device code the plan `report` read differently: the same
/// discovery reads the input here and the output there (the bundles' entries aside, which the
/// rewrite has read itself), so whatever it finds wrong in the input, or finds where the plan
/// found nothing, the rewrite could not have made right. Run after the plan, whose own checks
/// name the place more precisely, on the discovery the rewrite made (`found`).
fn check_input(
    data: &[u8],
    report: &Report,
    limits: &gfxkit_bundle::limits::Limits,
    found: &Discoveries<'_>,
) -> Result<()> {
    let how = crate::survey::Reading {
        decode: false,
        digests: false,
        hash: false,
        headers: false,
        visit: None,
        base: 0,
        limits: *limits,
    };
    let s = match found {
        Discoveries::One(found) => crate::survey::survey_discovered(data, &how, found)?,
        Discoveries::Members(members) => crate::survey::survey_members(data, &how, members)?,
    };
    let place = |member: &Option<String>, e: Error| match member {
        Some(m) => e.in_member(m),
        None => e,
    };
    if let Some(e) = s
        .regions
        .iter()
        .find_map(|r| r.first_problem.clone().map(|e| place(&r.member, e)))
    {
        return Err(e);
    }
    // Region by region (an archive's members in order), the bundles discovery delimits and
    // the bundles the plan read.
    let found: Vec<&SurveyRegion> = s.regions.iter().filter(|r| r.found > 0).collect();
    let planned: Vec<&RegionReport> = report
        .regions
        .iter()
        .filter(|r| !r.bundles.is_empty())
        .collect();
    for k in 0..found.len().max(planned.len()) {
        let (f, p) = (found.get(k), planned.get(k));
        let same = match (f, p) {
            (Some(f), Some(p)) => f.member == p.member && f.found == p.bundles.len(),
            _ => false,
        };
        if same {
            continue;
        }
        let (member, at, discovered) = match f {
            Some(f) => (f.member.clone(), f.offset, f.found),
            None => (p.and_then(|p| p.member.clone()), 0, 0),
        };
        let read = p
            .filter(|p| p.member == member)
            .map_or(0, |p| p.bundles.len());
        return Err(place(
            &member,
            Error::at(
                at,
                ErrorKind::Unsupported(format!(
                    "discovery finds {discovered} bundle{} here where the rewrite reads {read} \
                     (a .hip_fatbin that is not one by its section type or layout)",
                    if discovered == 1 { "" } else { "s" }
                )),
            ),
        ));
    }
    Ok(())
}

/// Rewrites one member of an archive, given its discovery.
fn rewrite_member<'a>(
    data: &'a [u8],
    t: &Transform,
    found: &gfxkit_host::Discovery<'_>,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    rewrite_found(data, t, Some(found))
}

/// Rewrites one non-archive file, given its discovery when the caller made it (else a PE
/// image or COFF object is discovered here).
fn rewrite_found<'a>(
    data: &'a [u8],
    t: &Transform,
    found: Option<&gfxkit_host::Discovery<'_>>,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    if elf::is_elf(data) {
        return rewrite_elf(data, t);
    }
    let kind = gfxkit_host::InputKind::sniff(data);
    if matches!(
        kind,
        gfxkit_host::InputKind::PeImage | gfxkit_host::InputKind::CoffObject
    ) {
        let made;
        let found = match found {
            Some(f) => f,
            None => {
                made = crate::discover(data, &t.limits);
                &made
            }
        };
        return if kind == gfxkit_host::InputKind::PeImage {
            crate::pe::rewrite_image(data, t, found)
        } else {
            let bigobj = data.starts_with(&[0, 0, 0xff, 0xff]);
            crate::pe::coff::rewrite_object(data, t, bigobj, found)
        };
    }
    if gfxkit_bundle::detect(data).is_some() {
        let region = plan::transform_region(Cursor::new(data), None, t)?;
        let NewRegion { out, outcomes, .. } = region;
        let layout = if out.equals(data) {
            Layout::Unchanged
        } else {
            Layout::Rebuilt
        };
        return Ok((
            out,
            FileKind::Bundle,
            Some(RegionReport {
                member: None,
                section: None,
                layout,
                wrappers: 0,
                relocations: 0,
                symbols: 0,
                bundles: outcomes,
            }),
        ));
    }
    fail(
        0,
        ErrorKind::Unsupported(
            "not an ELF file, an ar archive or an offload bundle (no known magic)".into(),
        ),
    )
}

fn unsupported(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Unsupported(msg.into()))
}

fn foreign_device_sections(e: &Elf) -> Option<&Shdr> {
    e.shdrs.iter().find(|s| {
        s.name == ".llvm.offloading" || s.name.starts_with(gfxkit_bundle::object::SECTION_PREFIX)
    })
}

fn rewrite_elf<'a>(
    data: &'a [u8],
    t: &Transform,
) -> Result<(Output<'a>, FileKind, Option<RegionReport>)> {
    let e = Elf::parse(data)?;
    let kind = rewritable_kind(&e, data)?;
    let Some(fb) = fatbin_to_rewrite(&e)? else {
        return Ok((Output::of(data), FileKind::NoDeviceCode, None));
    };
    let fsec = e.shdrs[fb].clone();
    if !fsec.has_file_bytes() {
        return Ok((Output::of(data), kind, None));
    }
    let fo = fsec.offset;
    let fs = fsec.size;
    let region_bytes = e.section_data(data, fb);
    // Bundles keep the section's alignment (at most 64 KiB; 4096 in files from the HIP driver).
    let located = Cursor::at(region_bytes, fo);
    let region = plan::transform_region(located, Some(fsec.addralign.clamp(1, 1 << 16)), t)?;
    let ns = region.out.len();
    let plan = if ns > fs {
        plan_growth(&e, data, fo, fs, ns, &fsec)?
    } else {
        plan_layout(&e, data, fo, fs, ns, &fsec)?
    };
    let relocatable = e.e_type == elf::ET_REL;
    // Addresses: section-relative in relocatable objects, virtual addresses otherwise.
    let base = if relocatable { 0 } else { fsec.addr };
    let map = FatbinMap {
        base,
        new_base: plan.relocated.as_ref().map_or(base, |r| r.vaddr),
        size: fs,
        relocatable,
        region: &region,
    };

    // The edit: fields at input offsets, then the layout.
    let moved = layout::Moved {
        fo,
        end: fo + fs,
        down: plan.delta,
        up: plan.grow,
    };
    let mut edit = Edit::new(&e, data, fb, Some(moved), SectionTable::InPlace);
    let (n_syms, new_sym_value) = patch_symbols(&e, data, fb, &map, &mut edit)?;
    let n_relocs = patch_relocations(&e, data, fb, &map, &new_sym_value, &mut edit)?;
    let n_wrappers = patch_wrappers(&e, data, fb, &map, &mut edit)?;
    let bundles = lay_out(&mut edit, data, &fsec, region, &plan)?;
    let layout = plan.layout;
    if let Some(phdrs) = plan.phdrs {
        edit.set_program_headers(phdrs, plan.phoff, plan.table_moved);
    }
    edit.set_section(fb, Field::Size, ns);
    if let Some(r) = &plan.relocated {
        edit.set_section(fb, Field::Addr, r.vaddr);
        edit.set_section(fb, Field::Offset, r.offset);
    }
    let out = edit.finish()?;
    Ok((
        out,
        kind,
        Some(RegionReport {
            member: None,
            section: Some(".hip_fatbin".into()),
            layout,
            wrappers: n_wrappers,
            relocations: n_relocs,
            symbols: n_syms,
            bundles,
        }),
    ))
}

/// What kind of ELF file `e` is, when it is one the rewrite reads: a relocatable object, a
/// shared object or an executable, with a section table, that breaks no rule the rewritten
/// file is checked against.
fn rewritable_kind(e: &Elf, data: &[u8]) -> Result<FileKind> {
    // A file that already breaks a rule the rewritten file is checked against is refused.
    crate::check::segments(e, data.len() as u64)?;
    let kind = match e.e_type {
        elf::ET_REL => FileKind::Object,
        elf::ET_DYN => FileKind::SharedObject,
        elf::ET_EXEC => FileKind::Executable,
        other => {
            return fail(
                16,
                ErrorKind::Unsupported(format!(
                    "ELF type {other} (only relocatable objects, shared objects and executables)"
                )),
            )
        }
    };
    if e.shdrs.is_empty() {
        return fail(
            40,
            ErrorKind::Unsupported(
                "no section headers (stripped with --strip-sections): its bundles are found through \
                 the program headers, but a rewrite moves .hip_fatbin and what follows it, which \
                 needs the section table"
                    .into(),
            ),
        );
    }
    Ok(kind)
}

/// The index of `.hip_fatbin`, when `e` has one the rewrite can rewrite; `None` when the file
/// holds no device code. Device code in other sections, and machines other than x86-64, are
/// refused.
fn fatbin_to_rewrite(e: &Elf) -> Result<Option<usize>> {
    let fatbin = e.section_named(".hip_fatbin")?;
    if let Some(s) = foreign_device_sections(e) {
        let msg = match fatbin {
            None => format!(
                "device code in section {} is not rewritten (only .hip_fatbin is)",
                s.name
            ),
            Some(_) => format!(
                "device code in section {} besides .hip_fatbin is not rewritten",
                s.name
            ),
        };
        return fail(s.offset, ErrorKind::Unsupported(msg));
    }
    let Some(fb) = fatbin else {
        return Ok(None);
    };
    if e.machine != elf::EM_X86_64 {
        return fail(
            18,
            ErrorKind::Unsupported(format!(
                "machine {} (only x86-64 relocations are understood)",
                e.machine
            )),
        );
    }
    Ok(Some(fb))
}

/// How addresses in the old `.hip_fatbin` map to the new one.
struct FatbinMap<'r, 'a> {
    /// Where the old section is addressed from: 0 in relocatable objects (addresses are
    /// section-relative), its virtual address otherwise.
    base: u64,
    /// Where the new section's bytes are addressed from.
    new_base: u64,
    /// The old section's size.
    size: u64,
    /// Whether the file is a relocatable object.
    relocatable: bool,
    /// The rewritten bundles.
    region: &'r NewRegion<'a>,
}

impl FatbinMap<'_, '_> {
    /// The new address of `addr`, which must start a bundle (or be the section's end); `at`
    /// and `what` name the field that holds it.
    fn remap(&self, addr: u64, at: u64, what: &str) -> Result<u64> {
        let rel = addr.checked_sub(self.base).filter(|r| *r <= self.size);
        match rel.and_then(|r| self.region.map(r, self.size)) {
            Some(n) => Ok(self.new_base.wrapping_add(n)),
            None => Err(unsupported(
                at,
                format!(
                    "{what} refers to {addr:#x} in .hip_fatbin, which is not the start of a bundle"
                ),
            )),
        }
    }

    /// Whether `addr` lies in the old section. In a linked file an address equal to the end of
    /// .hip_fatbin belongs to what follows, whose address does not change.
    fn contains(&self, addr: u64) -> bool {
        addr >= self.base
            && (if self.relocatable {
                addr <= self.base.saturating_add(self.size)
            } else {
                addr < self.base.saturating_add(self.size)
            })
    }
}

/// The new value of each symbol moved, by (symbol table's section index, symbol index).
type NewSymbolValues = HashMap<(usize, usize), u64>;

/// New values of the symbols in `.hip_fatbin` (section `fb`): the number patched, and each
/// symbol's new value by (symbol table, index).
fn patch_symbols(
    e: &Elf,
    data: &[u8],
    fb: usize,
    map: &FatbinMap<'_, '_>,
    edit: &mut Edit<'_, '_>,
) -> Result<(usize, NewSymbolValues)> {
    let mut n_syms = 0usize;
    let mut new_sym_value = HashMap::new();
    for (si, k, sym) in elf::symbols_in(e, data, fb)? {
        let what = format!("symbol {k} of {}", e.shdrs[si].name);
        let nv = map.remap(sym.value, sym.at, &what)?;
        let rel = sym.value - map.base;
        let new_size = if sym.size == 0 {
            0
        } else if rel == 0 && sym.size == map.size {
            map.region.out.len()
        } else {
            match map
                .region
                .moves
                .iter()
                .find(|m| m.0 == rel && m.2 == sym.size)
            {
                Some(m) => m.3,
                None => {
                    return Err(unsupported(
                        sym.at,
                        format!("{what} covers part of .hip_fatbin that is rewritten"),
                    ))
                }
            }
        };
        new_sym_value.insert((si, k), nv);
        if nv != sym.value || new_size != sym.size {
            edit.patch_u64(sym.at + 8, nv);
            edit.patch_u64(sym.at + 16, new_size);
            n_syms += 1;
        }
    }
    Ok((n_syms, new_sym_value))
}

/// New addends of the relocations whose target lies in `.hip_fatbin` (section `fb`), given the
/// symbols' new values: the number patched.
fn patch_relocations(
    e: &Elf,
    data: &[u8],
    fb: usize,
    map: &FatbinMap<'_, '_>,
    new_sym_value: &NewSymbolValues,
    edit: &mut Edit<'_, '_>,
) -> Result<usize> {
    let relocatable = map.relocatable;
    let mut n_relocs = 0usize;
    for (ri, r) in e.shdrs.iter().enumerate() {
        if r.sh_type == elf::SHT_REL {
            if relocatable && r.info as usize == fb {
                return Err(unsupported(r.offset, "relocations apply to .hip_fatbin"));
            }
            continue;
        }
        if r.sh_type != elf::SHT_RELA {
            continue;
        }
        if relocatable && r.info as usize == fb {
            return Err(unsupported(r.offset, "relocations apply to .hip_fatbin"));
        }
        let symtab = r.link as usize;
        let table = elf::linked_symbols(e, data, r)?;
        let syms = table.as_deref().unwrap_or_default();
        for rel in elf::relas(e, data, ri)? {
            let what = format!("relocation {} of {}", rel.index, r.name);
            if !relocatable && rel.r_type == elf::R_X86_64_RELATIVE {
                let a = rel.addend as u64;
                if map.contains(a) {
                    let n = map.remap(a, rel.at, &what)?;
                    if n != a {
                        edit.patch_u64(rel.at + 16, n);
                        n_relocs += 1;
                    }
                }
                continue;
            }
            if rel.r_sym == 0 {
                continue;
            }
            let Some(sym) = syms.get(rel.r_sym as usize) else {
                let problem = if table.is_some() {
                    format!(
                        "{what} names symbol {} past the end of its table",
                        rel.r_sym
                    )
                } else {
                    format!(
                        "{what} names symbol {}, but {} links to section {}, which is not a \
                         symbol table",
                        rel.r_sym, r.name, r.link
                    )
                };
                return Err(Error::at(rel.at, ErrorKind::BadElf(problem)));
            };
            if sym.shndx as usize != fb {
                continue;
            }
            let target = sym.value.wrapping_add(rel.addend as u64);
            let n = map.remap(target, rel.at, &what)?;
            let s_new = new_sym_value
                .get(&(symtab, rel.r_sym as usize))
                .copied()
                .unwrap_or(sym.value);
            let addend = n.wrapping_sub(s_new);
            if addend != rel.addend as u64 {
                edit.patch_u64(rel.at + 16, addend);
                n_relocs += 1;
            }
        }
    }
    Ok(n_relocs)
}

/// Checks the `.hipFatBinSegment` wrappers (every one `HIPF`, leading to a bundle, every bundle
/// led to) and moves the pointers stored in place (non-PIC files, RELR, applied relocations):
/// the number of wrappers.
fn patch_wrappers(
    e: &Elf,
    data: &[u8],
    fb: usize,
    map: &FatbinMap<'_, '_>,
    edit: &mut Edit<'_, '_>,
) -> Result<usize> {
    let Some(seg) = e.section_named(".hipFatBinSegment")? else {
        return Ok(0);
    };
    let moves = &map.region.moves;
    let mut n_wrappers = 0usize;
    let mut pointed = vec![false; moves.len()];
    for (i, w) in elf::wrappers(e, data, seg, fb)?.iter().enumerate() {
        if w.magic == WrapperMagic::HIPK {
            return fail(w.at, ErrorKind::AlreadySplit { wrapper: i });
        }
        if w.magic != WrapperMagic::HIPF {
            return fail(
                w.at,
                ErrorKind::BadElf(format!(
                    "wrapper magic {:#010x}, expected HIPF (0x48495046)",
                    w.magic
                )),
            );
        }
        n_wrappers += 1;
        let bundle_at = |rel: u64| moves.binary_search_by_key(&rel, |m| m.0).ok();
        pointed[crate::check::wrapper_target(i, w, map.base, bundle_at)?] = true;
        if map.relocatable {
            continue;
        }
        let in_place = w.pointer;
        if in_place != 0 && map.contains(in_place) {
            let n = map.remap(in_place, w.at + 8, "wrapper pointer")?;
            if n != in_place {
                edit.patch_u64(w.at + 8, n);
            }
        }
    }
    let fo = e.shdrs[fb].offset;
    crate::check::every_bundle_pointed(&pointed, |k| fo + moves[k].0)?;
    Ok(n_wrappers)
}

/// Lays the output's bytes out in file order, a moved program header table's place reserved:
/// the new `.hip_fatbin` (`fsec` rewritten as `region`) in place or in a new segment at the end
/// of the file, as `plan` says. Returns the bundles' outcomes with file offsets.
fn lay_out<'a>(
    edit: &mut Edit<'a, '_>,
    data: &'a [u8],
    fsec: &Shdr,
    region: NewRegion<'a>,
    plan: &LayoutPlan,
) -> Result<Vec<BundleOutcome>> {
    let fo = fsec.offset;
    let fs = fsec.size;
    let old_end = fo + fs;
    let new_fo = plan.relocated.as_ref().map_or(fo, |r| r.offset);
    let NewRegion {
        out: region_out,
        outcomes: mut bundles,
        ..
    } = region;
    let table_len = plan
        .phdrs
        .as_ref()
        .map_or(0, |p| (p.len() * elf::PHENT) as u64);
    if let Some(r) = &plan.relocated {
        // The old section's bytes are zeroed in place; the new section goes in a new segment
        // at the end of the file.
        edit.out.push(&data[..fo as usize]);
        edit.out.push_zeros(fs);
        edit.out.push(&data[old_end as usize..]);
        edit.out.pad_to(r.offset)?;
        edit.out.append(region_out);
        if plan.table_moved {
            edit.out.pad_to(plan.phoff + table_len)?;
        }
    } else {
        edit.out.push(&data[..fo as usize]);
        edit.out.append(region_out);
        if plan.table_moved {
            edit.out.pad_to(plan.phoff + table_len)?;
        }
        edit.out.pad_to(old_end - plan.delta + plan.grow)?;
        edit.out.push(&data[old_end as usize..]);
        debug_assert_eq!(edit.out.len(), data.len() as u64 - plan.delta + plan.grow);
    }
    for b in &mut bundles {
        b.offset += fo;
        b.new_offset += new_fo;
    }
    Ok(bundles)
}

struct LayoutPlan {
    /// Bytes everything after the old `.hip_fatbin` moves down.
    delta: u64,
    /// Bytes everything after the old `.hip_fatbin` moves up (a growing relocatable object).
    grow: u64,
    /// The new `.hip_fatbin` placed in a new segment at the end of the file.
    relocated: Option<Relocated>,
    /// New program header table, when it changes.
    phdrs: Option<Vec<Phdr>>,
    /// File offset of the program header table in the output.
    phoff: u64,
    /// Whether the program header table moves to `phoff`, after the new `.hip_fatbin`.
    table_moved: bool,
    layout: Layout,
}

fn plan_layout(e: &Elf, data: &[u8], fo: u64, fs: u64, ns: u64, fsec: &Shdr) -> Result<LayoutPlan> {
    let old_end = fo + fs;
    let unchanged = |layout| LayoutPlan::unchanged(e, layout);
    if ns == fs {
        return Ok(unchanged(Layout::Unchanged));
    }
    // The unit everything after the section may move by: it must keep every later segment's
    // offset congruent to its address modulo its alignment, and every later section aligned.
    let mut unit = 8u64;
    for s in &e.shdrs {
        if s.offset >= old_end {
            unit = unit.max(s.addralign);
        }
    }
    if e.e_type == elf::ET_REL {
        let delta = align_down(fs - ns, unit.max(1));
        if delta == 0 {
            return Ok(unchanged(Layout::ZeroFilled { unit }));
        }
        return Ok(LayoutPlan {
            delta,
            grow: 0,
            relocated: None,
            phdrs: None,
            phoff: e.phoff,
            table_moved: false,
            layout: Layout::Rebuilt,
        });
    }
    let (si, seg) = layout::fatbin_segment(e, fo, old_end, fsec.addr)?;
    unit = unit.max(4096).max(seg.align);
    for p in &e.phdrs {
        if p.offset >= old_end {
            unit = unit.max(p.align);
        }
    }
    let seg_end = seg.offset.saturating_add(seg.filesz);
    if seg_end == old_end {
        Ok(shorten_segment(e, si, fo, fs, ns, unit))
    } else {
        split_segment(e, data, si, &seg, fo, fs, ns, unit)
    }
}

impl LayoutPlan {
    /// Nothing moves: the file keeps its layout (`layout` says why).
    fn unchanged(e: &Elf, layout: Layout) -> LayoutPlan {
        LayoutPlan {
            delta: 0,
            grow: 0,
            relocated: None,
            phdrs: None,
            phoff: e.phoff,
            table_moved: false,
            layout,
        }
    }
}

/// Moves the program headers (but `skip`) of what lies after `old_end` down by `delta`.
fn shift_after(phdrs: &mut [Phdr], old_end: u64, delta: u64, skip: usize) {
    for (i, p) in phdrs.iter_mut().enumerate() {
        if i != skip && p.offset >= old_end {
            p.offset -= delta;
        }
    }
}

/// `.hip_fatbin` (`fs` bytes at `fo`, `ns` after the rewrite) is last in segment `si`: the
/// segment ends sooner and what follows moves down by whole `unit`s.
fn shorten_segment(e: &Elf, si: usize, fo: u64, fs: u64, ns: u64, unit: u64) -> LayoutPlan {
    let old_end = fo + fs;
    let delta = align_down(fs - ns, unit);
    if delta == 0 {
        return LayoutPlan::unchanged(e, Layout::ZeroFilled { unit });
    }
    let mut phdrs = e.phdrs.clone();
    shift_after(&mut phdrs, old_end, delta, si);
    let s = &mut phdrs[si];
    let new_filesz = fo + ns - s.offset;
    if s.memsz == s.filesz {
        s.memsz = new_filesz;
    }
    s.filesz = new_filesz;
    LayoutPlan {
        delta,
        grow: 0,
        relocated: None,
        phdrs: Some(phdrs),
        phoff: e.phoff,
        table_moved: false,
        layout: Layout::SegmentShortened { shift: delta },
    }
}

/// `.hip_fatbin` (`fs` bytes at `fo`, `ns` after the rewrite) is followed by other bytes of
/// its segment `si` (`seg`): the segment is split in two around the freed bytes, which takes
/// one more program header (a spare `PT_NULL`, unused bytes after the table, or the table
/// moved next to the new section), and what follows moves down by whole `unit`s.
#[allow(clippy::too_many_arguments)]
fn split_segment(
    e: &Elf,
    data: &[u8],
    si: usize,
    seg: &Phdr,
    fo: u64,
    fs: u64,
    ns: u64,
    unit: u64,
) -> Result<LayoutPlan> {
    let old_end = fo + fs;
    // Split: the segment becomes [start, new end of .hip_fatbin) and [old end, segment end),
    // both at their old addresses. That needs one more program header.
    if e.phnum_raw == 0xffff || e.phdrs.len() + 1 >= 0xffff {
        return Err(unsupported(
            32,
            "too many program headers to add one (PN_XNUM)",
        ));
    }
    let table_len = ((e.phdrs.len() + 1) * elf::PHENT) as u64;
    // (1) A PT_NULL entry (a spare slot some tools leave), else (2) unused bytes right after
    // the table.
    let null_slot = e.phdrs.iter().position(|p| p.p_type == elf::PT_NULL);
    let slack_ok = null_slot.is_some() || table_has_slack(e, data);
    let (tail_end, slot, table_at) = if slack_ok {
        (
            fo + ns,
            if null_slot.is_some() {
                "a spare PT_NULL program header".to_owned()
            } else {
                "unused bytes after the program header table".to_owned()
            },
            e.phoff,
        )
    } else {
        // (3) Move the table into the freed part of the segment, right after the new
        // .hip_fatbin. The kernel and ld.so read it at e_phoff; PT_PHDR is moved with it. An
        // executable started by the kernel needs AT_PHDR = first segment's load address +
        // e_phoff on older kernels, so the segment must share the first segment's
        // address-offset difference.
        if !layout::table_may_move_into(e, seg) {
            return Err(unsupported(
                seg.offset,
                ".hip_fatbin is not last in its segment, the program header table has \
                 no spare slot, and it cannot move next to .hip_fatbin in this \
                 executable (its segment's address-offset difference differs from the \
                 first segment's)",
            ));
        }
        let at = (fo + ns).div_ceil(8) * 8;
        (
            at + table_len,
            "program header table moved after .hip_fatbin".to_owned(),
            at,
        )
    };
    if tail_end > old_end {
        return Ok(LayoutPlan::unchanged(e, Layout::ZeroFilled { unit }));
    }
    let delta = align_down(old_end - tail_end, unit);
    if delta == 0 {
        return Ok(LayoutPlan::unchanged(e, Layout::ZeroFilled { unit }));
    }
    let mut phdrs = e.phdrs.clone();
    shift_after(&mut phdrs, old_end, delta, si);
    let s = e.phdrs[si];
    let head = old_end - s.offset;
    let first = Phdr {
        filesz: tail_end - s.offset,
        memsz: tail_end - s.offset,
        ..s
    };
    let second = Phdr {
        offset: old_end - delta,
        vaddr: s.vaddr.wrapping_add(head),
        paddr: s.paddr.wrapping_add(head),
        filesz: s.filesz - head,
        memsz: s.memsz.saturating_sub(head),
        ..s
    };
    phdrs[si] = first;
    phdrs.insert(si + 1, second);
    if let Some(ni) = null_slot {
        phdrs.remove(if ni > si { ni + 1 } else { ni });
    }
    let table_moved = table_at != e.phoff;
    let place = table_moved.then(|| {
        (
            table_at,
            s.vaddr.wrapping_add(table_at - s.offset),
            s.paddr.wrapping_add(table_at - s.offset),
        )
    });
    edit::describe_table(e, &mut phdrs, place);
    Ok(LayoutPlan {
        delta,
        grow: 0,
        relocated: None,
        phdrs: Some(phdrs),
        phoff: table_at,
        table_moved,
        layout: Layout::SegmentSplit {
            shift: delta,
            phdr_slot: slot,
        },
    })
}

/// Whether one more program header fits in zero bytes right after the table, inside the
/// segment that maps the table, before any section, segment or the section header table.
fn table_has_slack(e: &Elf, data: &[u8]) -> bool {
    let table_len = ((e.phdrs.len() + 1) * elf::PHENT) as u64;
    let phend = e.phoff + (e.phdrs.len() * elf::PHENT) as u64;
    let mut next_used = data.len() as u64;
    for s in &e.shdrs {
        if s.has_file_bytes() && s.offset >= phend {
            next_used = next_used.min(s.offset);
        }
    }
    for p in &e.phdrs {
        if p.filesz > 0 && p.offset >= phend {
            next_used = next_used.min(p.offset);
        }
    }
    if e.shoff >= phend {
        next_used = next_used.min(e.shoff);
    }
    let mapped = e.phdrs.iter().any(|p| {
        p.p_type == elf::PT_LOAD
            && p.offset <= e.phoff
            && e.phoff.saturating_add(table_len) <= p.offset.saturating_add(p.filesz)
    });
    phend + elf::PHENT as u64 <= next_used
        && mapped
        && data
            .get(phend as usize..phend as usize + elf::PHENT)
            .is_some_and(|b| b.iter().all(|&x| x == 0))
}

/// Where a growing `.hip_fatbin` goes in a linked file.
#[derive(Debug, Clone, Copy)]
struct Relocated {
    /// File offset of the new section.
    offset: u64,
    /// Its address.
    vaddr: u64,
}

/// Plans a `.hip_fatbin` that grows (a conversion to a weaker encoding). A relocatable object
/// moves what follows up by a multiple of the later alignments. A linked file cannot grow the
/// section in place (what follows has fixed addresses): the new section goes into a new
/// read-only segment after the last one, at the end of the file and of the address space; the
/// old bytes are zeroed. The extra program header comes from slack after the table or by
/// moving the table into the new segment (after the section).
fn plan_growth(e: &Elf, data: &[u8], fo: u64, fs: u64, ns: u64, fsec: &Shdr) -> Result<LayoutPlan> {
    let old_end = fo + fs;
    if e.e_type == elf::ET_REL {
        let mut unit = 8u64;
        for s in &e.shdrs {
            if s.offset >= old_end {
                unit = unit.max(s.addralign);
            }
        }
        let grow = (ns - fs).div_ceil(unit) * unit;
        return Ok(LayoutPlan {
            delta: 0,
            grow,
            relocated: None,
            phdrs: None,
            phoff: e.phoff,
            table_moved: false,
            layout: Layout::Rebuilt,
        });
    }
    let null_slot = e.phdrs.iter().position(|p| p.p_type == elf::PT_NULL);
    let slack_ok = null_slot.is_some() || table_has_slack(e, data);
    // The table moves into the new segment (after the section) unless a header fits in place.
    let table_len = ((e.phdrs.len() + 1) * elf::PHENT) as u64;
    let seg_len = if slack_ok {
        ns
    } else {
        ns.div_ceil(8) * 8 + table_len
    };
    let Placement {
        offset,
        vaddr,
        align: unit,
        after: last_i,
    } = segment::place(
        e,
        data,
        &Request {
            body_end: data.len() as u64,
            section_align: fsec.addralign,
            len: seg_len,
            holds_table: !slack_ok,
            what: "the grown .hip_fatbin",
        },
    )?;
    // `offset` is a multiple of 4096: the table right after the section is 8-aligned.
    let table_at = if slack_ok {
        e.phoff
    } else {
        offset + ns.div_ceil(8) * 8
    };
    let seg_end = offset + seg_len;
    let seg = Phdr {
        p_type: elf::PT_LOAD,
        flags: 4, // PF_R
        offset,
        vaddr,
        paddr: vaddr,
        filesz: seg_end - offset,
        memsz: seg_end - offset,
        align: unit,
    };
    let mut phdrs = e.phdrs.clone();
    phdrs.insert(last_i + 1, seg);
    if let Some(ni) = null_slot {
        phdrs.remove(if ni > last_i { ni + 1 } else { ni });
    }
    let place = (!slack_ok).then(|| {
        let t_va = vaddr.wrapping_add(table_at - offset);
        (table_at, t_va, t_va)
    });
    edit::describe_table(e, &mut phdrs, place);
    Ok(LayoutPlan {
        delta: 0,
        grow: 0,
        relocated: Some(Relocated { offset, vaddr }),
        phdrs: Some(phdrs),
        phoff: table_at,
        table_moved: !slack_ok,
        layout: Layout::Relocated {
            offset,
            address: vaddr,
            phdr_slot: if null_slot.is_some() {
                "a spare PT_NULL program header".to_owned()
            } else if slack_ok {
                "unused bytes after the program header table".to_owned()
            } else {
                "program header table moved after .hip_fatbin".to_owned()
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{EntryFilter, Pattern};
    use crate::plan::Conversion;
    use gfxkit_testkit::windows::{linux_shared, lld_link, Tu};

    /// How many times the prune of `data` to gfx90a discovered a file.
    fn discoveries_of(data: &[u8]) -> usize {
        let t = Transform {
            selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
            conversion: Conversion::Keep,
            limits: Default::default(),
        };
        crate::DISCOVERIES.with(|n| n.set(0));
        let r = rewrite(data, &t).unwrap();
        assert!(!r.output.equals(data), "the prune changed nothing");
        crate::DISCOVERIES.with(|n| n.get())
    }

    /// The prune of a COFF object, a DLL, an ELF shared object (clang-19 and lld) and a
    /// static library of the object (llvm-lib) reads each input, and each member of the
    /// library, through host discovery once: the rewrite of a PE image or COFF object and the
    /// input check share it.
    #[test]
    fn prune_discovers_its_input_once() {
        let dir = tempfile::tempdir().unwrap();
        let tu = Tu {
            stem: "once",
            source: "extern \"C\" __global__ void once_k(int *p) { p[0] = 1; }\n",
            archs: &["gfx90a", "gfx1030"],
            compress: false,
        };
        let obj = tu.windows_object(dir.path());
        let dll = lld_link(dir.path(), "once.dll", std::slice::from_ref(&obj), None);
        let so = linux_shared(dir.path(), "libonce.so", &[tu.linux_object(dir.path())]);
        let lib =
            gfxkit_testkit::windows::llvm_lib(dir.path(), "once.lib", std::slice::from_ref(&obj));
        for path in [&obj, &dll, &so, &lib] {
            let data = std::fs::read(path).unwrap();
            assert_eq!(discoveries_of(&data), 1, "{}", path.display());
        }
    }
}
