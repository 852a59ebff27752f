//! The one edit model of an ELF file whose `.hip_fatbin` is rewritten: prune and recompress
//! ([`crate::rewrite`]), the kpack split and inline ([`crate::kpack`]).
//!
//! An edit is planned against the input, then written once:
//!
//! 1. the caller reserves the output's bytes in file order in [`Edit::out`]: input ranges
//!    kept, the new section's bytes, and zeros where a table is to go;
//! 2. it states the changes as input offsets and values: fields to patch
//!    ([`Edit::patch`]), section header fields ([`Edit::set_section`]), the new program
//!    header table and where it goes ([`Edit::set_program_headers`]);
//! 3. [`Edit::finish`] writes them: how every input offset after the section moves
//!    ([`Moved`]), which section may not overlap the rewritten one, the section header table in
//!    place or written again at the end with `.shstrtab` (and a new section), the program
//!    header table (the old one zeroed when it moves), the ELF header's table fields, and a
//!    last check of the new program headers against the output's length.
//!
//! The layout rules the plans share are in [`crate::layout`] (the segment holding the
//! section, where the table may move) and [`crate::segment`] (a new segment after the last).

use crate::elf::{self, Elf, Phdr};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::layout::Moved;
use crate::output::Output;
use crate::patch::Patch;
use gfxkit_bytes::Cursor;

/// Where the section header table goes.
#[derive(Debug, Clone)]
pub(crate) enum SectionTable {
    /// Where it was (moved with the bytes after the section), its records patched.
    InPlace,
    /// Written again at the end of the output with `.shstrtab` (which gains the new
    /// section's name when one is added): the caller's bytes end where the kept input ends
    /// ([`kept_end`]).
    AtEnd {
        /// A section added after the others: its name and record (whose name field is set
        /// here).
        new: Option<(&'static str, [u8; elf::SHENT])>,
    },
}

/// A field of a section header record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    /// `sh_type` (32 bits).
    Type,
    /// `sh_addr`.
    Addr,
    /// `sh_offset`.
    Offset,
    /// `sh_size`.
    Size,
    /// `sh_addralign`.
    Align,
}

impl Field {
    fn at(self) -> usize {
        match self {
            Field::Type => 4,
            Field::Addr => 16,
            Field::Offset => 24,
            Field::Size => 32,
            Field::Align => 48,
        }
    }

    fn bytes(self, v: u64) -> Vec<u8> {
        match self {
            Field::Type => (v as u32).to_le_bytes().to_vec(),
            _ => v.to_le_bytes().to_vec(),
        }
    }
}

/// The new program header table.
#[derive(Debug, Clone)]
struct ProgramHeaders {
    list: Vec<Phdr>,
    /// Its output offset.
    at: u64,
    /// Whether it left its old place (whose bytes are then zeroed).
    moved: bool,
}

/// One planned edit of an ELF file: see the [module documentation](self).
pub(crate) struct Edit<'a, 'e> {
    e: &'e Elf,
    data: &'a [u8],
    /// The section rewritten.
    section: usize,
    /// How input offsets after the section move; `None` when every kept input byte stays.
    moved: Option<Moved>,
    /// The output's bytes, reserved by the caller in file order.
    pub out: Output<'a>,
    /// Fields at input offsets, written in order.
    patches: Vec<(u64, Vec<u8>)>,
    /// Section header fields: (section, field, value bytes), after the moves.
    fields: Vec<(usize, Field, Vec<u8>)>,
    /// Whole records replacing a section's.
    records: Vec<(usize, [u8; elf::SHENT])>,
    phdrs: Option<ProgramHeaders>,
    table: SectionTable,
}

impl<'a, 'e> Edit<'a, 'e> {
    /// An edit of `data` (headers `e`) rewriting section `section`.
    pub fn new(
        e: &'e Elf,
        data: &'a [u8],
        section: usize,
        moved: Option<Moved>,
        table: SectionTable,
    ) -> Edit<'a, 'e> {
        Edit {
            e,
            data,
            section,
            moved,
            out: Output::new(),
            patches: Vec::new(),
            fields: Vec::new(),
            records: Vec::new(),
            phdrs: None,
            table,
        }
    }

    /// Writes `bytes` at input offset `at` (which must not lie inside the rewritten section's
    /// old bytes).
    pub fn patch(&mut self, at: u64, bytes: &[u8]) {
        self.patches.push((at, bytes.to_vec()));
    }

    /// Writes a little-endian `u64` at input offset `at`.
    pub fn patch_u64(&mut self, at: u64, v: u64) {
        self.patch(at, &v.to_le_bytes());
    }

    /// Adds a section after the others (with [`SectionTable::AtEnd`]): `name` joins
    /// `.shstrtab`, `rec` is its record but for the name.
    pub fn set_new_section(&mut self, name: &'static str, rec: [u8; elf::SHENT]) {
        self.table = SectionTable::AtEnd {
            new: Some((name, rec)),
        };
    }

    /// Sets a field of section `i`'s header.
    pub fn set_section(&mut self, i: usize, field: Field, v: u64) {
        self.fields.push((i, field, field.bytes(v)));
    }

    /// Replaces section `i`'s header record (with [`SectionTable::AtEnd`]).
    pub fn replace_section(&mut self, i: usize, rec: [u8; elf::SHENT]) {
        self.records.push((i, rec));
    }

    /// The program header table becomes `list` at output offset `at`; `moved` when it leaves
    /// its old place (whose bytes are zeroed). Where it moves, the caller reserved its bytes.
    pub fn set_program_headers(&mut self, list: Vec<Phdr>, at: u64, moved: bool) {
        self.phdrs = Some(ProgramHeaders { list, at, moved });
    }

    /// Where input offset `x` is in the output.
    fn map(&self, x: u64) -> Result<u64> {
        match &self.moved {
            Some(m) => m.map(x),
            None => Ok(x),
        }
    }

    /// The section header records as they will be written: every section after the rewritten
    /// one moved with the bytes after it, none reaching into it, then the stated fields and
    /// records.
    fn records(&self, mut recs: Vec<[u8; elf::SHENT]>) -> Result<Vec<[u8; elf::SHENT]>> {
        if let Some(m) = self.moved {
            for (i, s) in self.e.shdrs.iter().enumerate() {
                if i == self.section {
                    continue;
                }
                if s.offset >= m.end {
                    // A section without file bytes may name any offset: it moves with the
                    // rest, or the edit is refused where it would pass the end of the offsets.
                    let moved = (s.offset - m.down).checked_add(m.up).ok_or_else(|| {
                        unsupported(
                            self.e.shoff + (i * elf::SHENT) as u64,
                            format!(
                                "section {i} ({}) at offset {:#x} cannot move {} bytes up",
                                s.name, s.offset, m.up
                            ),
                        )
                    })?;
                    recs[i][24..32].copy_from_slice(&moved.to_le_bytes());
                } else if s.has_file_bytes() && s.offset + s.size > m.fo {
                    return Err(unsupported(
                        s.offset,
                        format!("section {} overlaps .hip_fatbin", s.name),
                    ));
                }
            }
        }
        for (i, f, v) in &self.fields {
            recs[*i][f.at()..f.at() + v.len()].copy_from_slice(v);
        }
        for (i, rec) in &self.records {
            recs[*i] = *rec;
        }
        Ok(recs)
    }

    /// Writes the planned headers and fields into the output: see the
    /// [module documentation](self).
    pub fn finish(mut self) -> Result<Output<'a>> {
        let e = self.e;
        if let Some(t) = self.phdrs.take() {
            if t.moved {
                self.out
                    .zero(self.map(e.phoff)?, e.phdrs.len() * elf::PHENT)?;
            }
            let mut table = Vec::with_capacity(t.list.len() * elf::PHENT);
            for p in &t.list {
                table.extend_from_slice(&p.encode());
            }
            self.out.put(t.at, &table)?;
            self.out.put_u64(32, t.at)?;
            self.out.put_u16(56, t.list.len() as u16)?;
            let planned = Elf {
                phdrs: t.list,
                phoff: t.at,
                ..e.clone()
            };
            crate::check::segments(&planned, self.out.len())?;
        }
        match &self.table {
            SectionTable::InPlace if e.shoff != 0 => {
                let old = raw_records(e, self.data)?;
                let new = self.records(old.clone())?;
                let shoff = self.map(e.shoff)?;
                self.out.put_u64(40, shoff)?;
                for (i, (a, b)) in old.iter().zip(&new).enumerate() {
                    // Only the fields that change are written.
                    for f in (0..elf::SHENT).step_by(8) {
                        if a[f..f + 8] != b[f..f + 8] {
                            self.out
                                .put(shoff + (i * elf::SHENT + f) as u64, &b[f..f + 8])?;
                        }
                    }
                }
            }
            SectionTable::InPlace => {}
            SectionTable::AtEnd { new } => {
                let shstrndx = string_table(e, self.data)?;
                let recs = self.records(raw_records(e, self.data)?)?;
                let count = recs.len() + usize::from(new.is_some());
                let (bytes, shoff) =
                    section_table(self.out.len(), self.data, e, shstrndx, recs, *new);
                self.out.push(bytes);
                self.out.put_u64(40, shoff)?;
                self.out.put_u16(60, count as u16)?;
            }
        }
        for (at, bytes) in std::mem::take(&mut self.patches) {
            let to = self.map(at)?;
            self.out.put(to, &bytes)?;
        }
        Ok(self.out)
    }
}

fn unsupported(at: u64, msg: impl Into<String>) -> Error {
    Error::at(at, ErrorKind::Unsupported(msg.into()))
}

/// Points the `PT_PHDR` entries of `phdrs` (those that described `e`'s table) at a table of
/// `phdrs.len()` entries: at `place` (offset, address, physical address) when the table
/// moves, else where they were.
pub(crate) fn describe_table(e: &Elf, phdrs: &mut [Phdr], place: Option<(u64, u64, u64)>) {
    let len = (phdrs.len() * elf::PHENT) as u64;
    for p in phdrs.iter_mut().filter(|p| e.describes_table(p)) {
        if let Some((offset, vaddr, paddr)) = place {
            p.offset = offset;
            p.vaddr = vaddr;
            p.paddr = paddr;
        }
        p.filesz = len;
        p.memsz = len;
    }
}

/// The section header records of `e` as stored in `data`.
fn raw_records(e: &Elf, data: &[u8]) -> Result<Vec<[u8; elf::SHENT]>> {
    let c = Cursor::new(data);
    (0..e.shdrs.len() as u64)
        .map(|i| {
            c.array(e.shoff + i * elf::SHENT as u64).map_err(|o| {
                Error::at(
                    o.offset(),
                    ErrorKind::Truncated {
                        what: "section header",
                    },
                )
            })
        })
        .collect()
}

/// `e_shstrndx`, checked to name a string table with bytes (it is written again, with one
/// more name when a section is added).
fn string_table(e: &Elf, data: &[u8]) -> Result<usize> {
    let shstrndx = usize::from(Cursor::new(data).u16(62)?);
    if shstrndx == 0 || shstrndx >= e.shdrs.len() {
        return fail(
            62,
            ErrorKind::Unsupported(format!(
                "e_shstrndx {shstrndx} does not name a section (extended numbering is not handled)"
            )),
        );
    }
    let names = &e.shdrs[shstrndx];
    if names.sh_type != elf::SHT_STRTAB || !names.has_file_bytes() {
        return fail(
            e.shoff + (shstrndx * elf::SHENT) as u64,
            ErrorKind::Unsupported(format!(
                "section {shstrndx} (e_shstrndx) is not a string table with contents (type {}, {} bytes)",
                names.sh_type, names.size
            )),
        );
    }
    Ok(shstrndx)
}

/// The end of a file whose section header table is written again at `at` (the end of what
/// precedes it): `.shstrtab` with `new`'s name added (when given), zero padding to 8 and the
/// table (with `new` added). Returns those bytes and the table's offset (`e_shoff`).
fn section_table(
    at: u64,
    data: &[u8],
    e: &Elf,
    shstrndx: usize,
    mut recs: Vec<[u8; elf::SHENT]>,
    new: Option<(&str, [u8; elf::SHENT])>,
) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    if let Some((name, mut rec)) = new {
        let old = e.section_data(data, shstrndx);
        let name_at = old.len() as u32;
        out.extend_from_slice(old);
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        recs[shstrndx][24..32].copy_from_slice(&at.to_le_bytes());
        recs[shstrndx][32..40].copy_from_slice(&(out.len() as u64).to_le_bytes());
        rec[0..4].copy_from_slice(&name_at.to_le_bytes());
        recs.push(rec);
    }
    let shoff = (at + out.len() as u64).next_multiple_of(8);
    out.resize((shoff - at) as usize, 0);
    for r in &recs {
        out.extend_from_slice(r);
    }
    (out, shoff)
}

/// Where the bytes kept from `data` end when its section header table is written again at
/// the end of the output ([`SectionTable::AtEnd`]): at the old table, when it ends the file,
/// starts at or after `from` and no section's or segment's bytes reach into it (then it is
/// dropped); else at the end of the file (the old table stays, unused).
pub(crate) fn kept_end(e: &Elf, data: &[u8], from: u64) -> u64 {
    let len = data.len() as u64;
    let table_end = e.shoff.saturating_add((e.shdrs.len() * elf::SHENT) as u64);
    let reaches = |offset: u64, size: u64| offset.saturating_add(size) > e.shoff;
    let used = e
        .shdrs
        .iter()
        .any(|s| s.has_file_bytes() && reaches(s.offset, s.size))
        || e.phdrs
            .iter()
            .any(|p| p.filesz > 0 && reaches(p.offset, p.filesz));
    if table_end == len && e.shoff >= from && !used {
        e.shoff
    } else {
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shdr(name: &str, sh_type: u32, offset: u64, size: u64) -> elf::Shdr {
        elf::Shdr {
            name: name.into(),
            sh_type,
            flags: 0,
            addr: 0,
            offset,
            size,
            link: 0,
            info: 0,
            addralign: 1,
        }
    }

    /// A relocatable file: `.a` at 0x100 (reaching one byte into `.hip_fatbin` with
    /// `overlap`), `.hip_fatbin` at 0x200 (0x100 bytes), `.b` at 0x300 (0x100 bytes), and the
    /// section header table (4 records) at 0x400, ending the file.
    fn file(overlap: bool) -> (Elf, Vec<u8>) {
        let shdrs = vec![
            shdr("", 0, 0, 0),
            shdr(".a", 1, 0x100, if overlap { 0x101 } else { 0x100 }),
            shdr(".hip_fatbin", 1, 0x200, 0x100),
            shdr(".b", 1, 0x300, 0x100),
        ];
        let mut data = vec![0u8; 0x400 + 4 * elf::SHENT];
        for (i, s) in shdrs.iter().enumerate() {
            let at = 0x400 + i * elf::SHENT;
            data[at + 24..at + 32].copy_from_slice(&s.offset.to_le_bytes());
            data[at + 32..at + 40].copy_from_slice(&s.size.to_le_bytes());
        }
        let e = Elf {
            e_type: elf::ET_REL,
            machine: elf::EM_X86_64,
            phoff: 0,
            phnum_raw: 0,
            shoff: 0x400,
            phdrs: Vec::new(),
            shdrs,
        };
        (e, data)
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn sections_after_the_rewritten_one_move_and_only_changed_fields_are_written() {
        let (e, data) = file(false);
        let moved = Moved {
            fo: 0x200,
            end: 0x300,
            down: 0x80,
            up: 0,
        };
        let mut edit = Edit::new(&e, &data, 2, Some(moved), SectionTable::InPlace);
        edit.out.push(&data[..0x200]);
        edit.out.push_zeros(0x80);
        edit.out.push(&data[0x300..]);
        edit.set_section(2, Field::Size, 0x80);
        edit.patch_u64(0x300, 0xabcd);
        let out = edit.finish().unwrap().to_vec();
        assert_eq!(out.len(), data.len() - 0x80);
        let shoff = u64_at(&out, 40) as usize;
        assert_eq!(shoff, 0x380);
        let rec = |i: usize| shoff + i * elf::SHENT;
        assert_eq!(u64_at(&out, rec(1) + 24), 0x100, "before: stays");
        assert_eq!(
            u64_at(&out, rec(2) + 32),
            0x80,
            "the rewritten section's size"
        );
        assert_eq!(u64_at(&out, rec(3) + 24), 0x280, "after: moved down");
        assert_eq!(
            u64_at(&out, 0x280),
            0xabcd,
            "a patch at an input offset, moved"
        );
    }

    #[test]
    fn a_section_reaching_into_the_rewritten_one_is_refused_in_one_place() {
        let (e, data) = file(true);
        let moved = Moved {
            fo: 0x200,
            end: 0x300,
            down: 0,
            up: 0,
        };
        let mut edit = Edit::new(&e, &data, 2, Some(moved), SectionTable::InPlace);
        edit.out.push(&data[..]);
        let err = edit.finish().unwrap_err();
        assert_eq!(err.offset, 0x100);
        assert!(
            err.to_string().contains("section .a overlaps .hip_fatbin"),
            "{err}"
        );
        // A table written again needs its names: e_shstrndx must name a string table.
        let mut edit = Edit::new(&e, &data, 2, Some(moved), SectionTable::AtEnd { new: None });
        edit.out.push(&data[..]);
        let err = edit.finish().unwrap_err();
        assert_eq!(err.offset, 62);
        assert!(err.to_string().contains("e_shstrndx 0"), "{err}");
        // A patch inside the rewritten bytes has no place in the output.
        let (e, data) = file(false);
        let mut edit = Edit::new(&e, &data, 2, Some(moved), SectionTable::InPlace);
        edit.out.push(&data[..]);
        edit.patch_u64(0x208, 1);
        assert!(edit.finish().is_err());
    }

    #[test]
    fn the_table_entry_follows_the_table() {
        let e = Elf {
            phoff: 64,
            ..file(false).0
        };
        let entry = |p_type, offset| Phdr {
            p_type,
            flags: 4,
            offset,
            vaddr: offset,
            paddr: offset,
            filesz: 112,
            memsz: 112,
            align: 8,
        };
        let mut phdrs = vec![
            entry(elf::PT_PHDR, 64),
            entry(elf::PT_PHDR, 999),
            entry(1, 0),
        ];
        describe_table(&e, &mut phdrs, None);
        assert_eq!((phdrs[0].offset, phdrs[0].filesz), (64, 3 * 56));
        assert_eq!(phdrs[1].filesz, 112, "another PT_PHDR is left alone");
        let mut phdrs = vec![entry(elf::PT_PHDR, 64)];
        describe_table(&e, &mut phdrs, Some((0x5000, 0x9000, 0x9001)));
        let p = phdrs[0];
        assert_eq!(
            (p.offset, p.vaddr, p.paddr, p.memsz),
            (0x5000, 0x9000, 0x9001, 56)
        );
    }

    #[test]
    fn an_old_table_that_ends_the_file_is_dropped_when_written_again() {
        let (e, data) = file(false);
        assert_eq!(kept_end(&e, &data, 0x300), 0x400);
        assert_eq!(
            kept_end(&e, &data, 0x401),
            data.len() as u64,
            "before `from`"
        );
        let mut longer = data.clone();
        longer.push(0);
        assert_eq!(
            kept_end(&e, &longer, 0),
            longer.len() as u64,
            "not at the end"
        );
    }
}
