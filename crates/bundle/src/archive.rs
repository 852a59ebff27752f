//! Archives of bundles (`-type=a`): unbundle each member of an `ar` archive into one archive
//! per requested target, and a deterministic GNU `ar` writer laid out like LLVM's
//! (`!<arch>`, symbol table `/`, long-name table `//`, members with zero dates and ids and mode
//! 644, two-byte alignment).

use crate::compressed::{self, DecompressOptions};
use crate::entry_id::EntryId;
use crate::error::{Error, ErrorKind, Result};
use crate::read::{self, Bundle};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol, SymbolKind};
use std::borrow::Cow;

fn ar_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Archive(msg.into()))
}

/// The members of an `ar` archive, in order: name and contents. A member name that is not
/// UTF-8 is an error at the offset of its first bad byte (unbundled archives would otherwise
/// hold renamed members).
pub fn read_members(data: &[u8]) -> Result<Vec<(String, &[u8])>> {
    let ar = ArchiveFile::parse(data).map_err(|e| ar_err(e.to_string()))?;
    let mut out = Vec::new();
    for (i, m) in ar.members().enumerate() {
        let m = m.map_err(|e| ar_err(e.to_string()))?;
        let name = match std::str::from_utf8(m.name()) {
            Ok(n) => n.to_owned(),
            Err(e) => {
                let err = ar_err(format!(
                    "member {i} name \"{}\" is not UTF-8",
                    m.name().escape_ascii()
                ));
                let at = (m.name().as_ptr() as usize)
                    .checked_sub(data.as_ptr() as usize)
                    .filter(|o| *o < data.len());
                return Err(match at {
                    Some(o) => Error::at(err.kind, (o + e.valid_up_to()) as u64),
                    None => err,
                });
            }
        };
        let body = m
            .data(data)
            .map_err(|e| ar_err(format!("member {name}: {e}")))?;
        out.push((name, body));
    }
    Ok(out)
}

/// Global defined symbols of an object member, in symbol-table order, as an archive index
/// lists them (none for a member that is not an object file).
fn archive_symbols(member: &[u8]) -> Vec<Vec<u8>> {
    let member = aligned(Cow::Borrowed(member));
    let Ok(file) = object::File::parse(&*member) else {
        return Vec::new();
    };
    file.symbols()
        .filter(|s| {
            s.is_global()
                && !s.is_undefined()
                && !matches!(s.kind(), SymbolKind::Section | SymbolKind::File)
        })
        .filter_map(|s| {
            s.name_bytes()
                .ok()
                .filter(|n| !n.is_empty())
                .map(<[u8]>::to_vec)
        })
        .collect()
}

/// ELF parsing needs 8-byte aligned data; archive members are only 2-byte aligned. Copies a
/// misaligned member (a fresh allocation is aligned for any primitive type in practice; if it
/// were not, parsing fails with an error, never undefined behaviour).
fn aligned(data: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    if data.as_ptr() as usize % 8 == 0 {
        data
    } else {
        Cow::Owned(data.to_vec())
    }
}

fn pad_field(out: &mut Vec<u8>, s: &str, width: usize) {
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + width.saturating_sub(s.len()), b' ');
}

/// Writes a GNU archive of `(name, contents)` members, deterministic like `llvm-ar D`: a
/// symbol table of the members' global defined symbols, long names in a `//` table.
pub fn write_gnu_archive(members: &[(&str, &[u8])]) -> Result<Vec<u8>> {
    let mut out = b"!<arch>\n".to_vec();
    if members.is_empty() {
        return Ok(out);
    }
    // Long-name table and each member's name field.
    let mut strtab = Vec::new();
    let mut name_fields = Vec::with_capacity(members.len());
    for (name, _) in members {
        if name.len() < 16 && !name.contains('/') {
            name_fields.push(format!("{name}/"));
        } else {
            name_fields.push(format!("/{}", strtab.len()));
            strtab.extend_from_slice(name.as_bytes());
            strtab.extend_from_slice(b"/\n");
        }
    }
    if strtab.len() % 2 == 1 {
        strtab.push(b'\n');
    }
    let syms: Vec<Vec<Vec<u8>>> = members.iter().map(|(_, d)| archive_symbols(d)).collect();
    let nsyms: usize = syms.iter().map(Vec::len).sum();
    let names_len: usize = syms.iter().flatten().map(|n| n.len() + 1).sum();
    let mut symtab_size = 4 + 4 * nsyms + names_len;
    let sym_pad = symtab_size % 2;
    symtab_size += sym_pad;
    let header = 60usize;
    // Offsets of member headers.
    let mut pos = 8 + if nsyms > 0 { header + symtab_size } else { 0 };
    if !strtab.is_empty() {
        pos += header + strtab.len();
    }
    let mut offsets = Vec::with_capacity(members.len());
    for (_, d) in members {
        offsets.push(pos);
        pos += header + d.len() + d.len() % 2;
    }
    if pos > u32::MAX as usize {
        return Err(ar_err(
            "archive larger than 4 GiB needs a 64-bit symbol table",
        ));
    }
    let member_header = |out: &mut Vec<u8>, name: &str, size: usize, mode: &str| {
        pad_field(out, name, 16);
        pad_field(out, "0", 12);
        pad_field(out, "0", 6);
        pad_field(out, "0", 6);
        pad_field(out, mode, 8);
        pad_field(out, &size.to_string(), 10);
        out.extend_from_slice(b"`\n");
    };
    if nsyms > 0 {
        member_header(&mut out, "/", symtab_size, "0");
        out.extend_from_slice(&(nsyms as u32).to_be_bytes());
        for (i, s) in syms.iter().enumerate() {
            for _ in s {
                out.extend_from_slice(&(offsets[i] as u32).to_be_bytes());
            }
        }
        for n in syms.iter().flatten() {
            out.extend_from_slice(n);
            out.push(0);
        }
        out.resize(out.len() + sym_pad, 0);
    }
    if !strtab.is_empty() {
        pad_field(&mut out, "//", 48);
        pad_field(&mut out, &strtab.len().to_string(), 10);
        out.extend_from_slice(b"`\n");
        out.extend_from_slice(&strtab);
    }
    for ((_, d), nf) in members.iter().zip(&name_fields) {
        member_header(&mut out, nf, d.len(), "644");
        out.extend_from_slice(d);
        if d.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// Options of [`unbundle_archive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArchiveOptions {
    /// `-allow-missing-bundles`: a target with no code object gets an empty archive.
    pub allow_missing: bool,
    /// `-hip-openmp-compatible`.
    pub hip_openmp_compatible: bool,
    /// `-check-input-archive`: each member's IDs must not conflict.
    pub check_input: bool,
    /// Decompression options for compressed members.
    pub decompress: DecompressOptions,
}

/// The entries of one archive member: `(id, payload)`; payloads borrow the member or its
/// decompressed copy.
fn member_entries<'m>(data: &'m [u8]) -> Result<Vec<(String, Cow<'m, [u8]>)>> {
    if crate::object::is_object(data) {
        let mut out = Vec::new();
        for e in crate::object::read_object(data)? {
            let payload = if e.is_host_placeholder() {
                Cow::Owned(crate::object::strip_bundle_sections(data)?)
            } else {
                Cow::Borrowed(e.payload)
            };
            out.push((e.id.to_owned(), payload));
        }
        return Ok(out);
    }
    if read::is_bundle(data) {
        let b = Bundle::parse(data)?;
        return Ok(b
            .entries()
            .iter()
            .map(|e| (e.id.to_owned(), Cow::Borrowed(e.payload)))
            .collect());
    }
    Ok(Vec::new())
}

fn file_stem(name: &str) -> &str {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rfind('.') {
        Some(0) | None => base,
        Some(i) => &base[..i],
    }
}

fn file_ext(name: &str) -> &str {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rfind('.') {
        Some(0) | None => "",
        Some(i) => &base[i..],
    }
}

/// The name clang gives an unbundled code object inside a device archive:
/// `<member stem>-<entry id><member stem><ext>`, where ext is `.bc` for a `gfx` target,
/// `.cubin` for an `sm_` target and the member's own extension otherwise, with every `:`
/// replaced by `_`.
pub fn device_member_name(member: &str, entry_id: &EntryId) -> String {
    let stem = file_stem(member);
    let target = entry_id.target_text();
    let ext = if target.contains("gfx") {
        ".bc"
    } else if target.contains("sm_") {
        ".cubin"
    } else {
        file_ext(member)
    };
    format!("{stem}-{}{stem}{ext}", entry_id.raw()).replace(':', "_")
}

/// Unbundles an archive of bundles: for each requested target (in order), a GNU archive of
/// every compatible code object found in the members (an entry goes to every target it is
/// compatible with). A target with nothing is an error naming it unless `allow_missing`
/// (then it gets an empty archive). Members that hold no bundle are skipped.
pub fn unbundle_archive(
    data: &[u8],
    requested: &[EntryId],
    archive_name: &str,
    opts: &ArchiveOptions,
) -> Result<Vec<Vec<u8>>> {
    let members = read_members(data)?;
    let mut per_target: Vec<Vec<(String, Vec<u8>)>> = vec![Vec::new(); requested.len()];
    for (mname, mdata) in &members {
        let content = aligned(compressed::decompress(mdata, &opts.decompress)?);
        let entries =
            member_entries(&content).map_err(|e| ar_err(format!("member {mname}: {e}")))?;
        let mut ids = Vec::with_capacity(entries.len());
        for (id, _) in &entries {
            ids.push(EntryId::parse(id).map_err(|e| ar_err(format!("member {mname}: {e}")))?);
        }
        if opts.check_input {
            crate::unbundle::check_conflicts(&ids)
                .map_err(|e| ar_err(format!("{e} in {mname} of {archive_name}")))?;
        }
        for ((_, payload), id) in entries.iter().zip(&ids) {
            for (ti, target) in requested.iter().enumerate() {
                if id.is_compatible_with(target, opts.hip_openmp_compatible) {
                    per_target[ti].push((device_member_name(mname, id), payload.to_vec()));
                }
            }
        }
    }
    let mut out = Vec::with_capacity(requested.len());
    for (target, members) in requested.iter().zip(&per_target) {
        if members.is_empty() && !opts.allow_missing {
            return Err(Error::new(ErrorKind::Missing(format!(
                "no compatible code object found for the target '{}' in heterogeneous archive library: {archive_name}",
                target.raw()
            ))));
        }
        let refs: Vec<(&str, &[u8])> = members
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        out.push(write_gnu_archive(&refs)?);
    }
    Ok(out)
}
