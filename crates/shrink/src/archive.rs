//! `ar` archives: each member holding device code is rewritten, the others are copied, and the
//! symbol index (GNU `/` or `/SYM64/`) is fixed to the members' new offsets.

use crate::error::{fail, Error, ErrorKind, Result};
use crate::output::Output;
use crate::plan::Transform;
use crate::report::{FileKind, RegionReport, Report, Rewritten};

const MAGIC: &[u8; 8] = b"!<arch>\n";
const THIN: &[u8; 8] = b"!<thin>\n";
const HDR: usize = 60;

/// Whether `data` is an `ar` archive (regular or thin).
pub fn is_archive(data: &[u8]) -> bool {
    data.starts_with(MAGIC) || data.starts_with(THIN)
}

/// A member of an archive.
#[derive(Debug, Clone)]
pub(crate) struct Member<'a> {
    /// Offset of the 60-byte header.
    pub header_at: usize,
    /// The raw header.
    pub header: &'a [u8],
    /// The member name (long names resolved).
    pub name: String,
    /// The member's contents.
    pub data: &'a [u8],
}

fn bad(at: usize, msg: impl Into<String>) -> Error {
    Error::at(at as u64, ErrorKind::BadArchive(msg.into()))
}

/// The bytes of the member whose header is at `at` and whose size is `size`.
fn member_body(data: &[u8], at: usize, size: usize) -> Result<&[u8]> {
    let start = at + HDR;
    start
        .checked_add(size)
        .and_then(|end| data.get(start..end))
        .ok_or_else(|| bad(at + 48, format!("member of {size} bytes runs past the end")))
}

/// Where the member after `m` starts (members are padded to an even length).
fn after(m: &Member<'_>) -> usize {
    m.header_at + HDR + m.data.len() + (m.data.len() & 1)
}

/// The special member at `at`, one that `object`'s member iterator skips (the symbol index
/// `/` or `/SYM64/`, the name table `//`, BSD's `__.SYMDEF`), read from its raw header.
fn special_member(data: &[u8], at: usize) -> Result<Member<'_>> {
    let header = data
        .get(at..at + HDR)
        .ok_or_else(|| bad(at, "member header runs past the end"))?;
    let h: &object::archive::Header = object::pod::from_bytes(header)
        .map_err(|()| bad(at, "member header runs past the end"))?
        .0;
    if h.terminator != object::archive::TERMINATOR {
        return Err(bad(at + 58, "member header does not end with `\\n"));
    }
    let size_txt = std::str::from_utf8(&h.size)
        .map_err(|_| bad(at + 48, "member size is not text"))?
        .trim();
    let size = size_txt
        .parse()
        .map_err(|_| bad(at + 48, format!("member size {size_txt:?} is not a number")))?;
    Ok(Member {
        header_at: at,
        header,
        name: String::from_utf8_lossy(&h.name).trim_end().to_owned(),
        data: member_body(data, at, size)?,
    })
}

/// Appends `m`, refusing more members than host discovery reads from one archive
/// ([`gfxkit_host::limits::MAX_ARCHIVE_MEMBERS`]).
fn push<'d>(out: &mut Vec<Member<'d>>, m: Member<'d>) -> Result<()> {
    if out.len() >= gfxkit_host::limits::MAX_ARCHIVE_MEMBERS {
        return Err(bad(m.header_at, "too many members"));
    }
    out.push(m);
    Ok(())
}

/// Reads the members of an archive, in file order: the regular ones through `object`'s
/// archive reader (long names resolved), the special ones before them from their headers.
pub(crate) fn members(data: &[u8]) -> Result<Vec<Member<'_>>> {
    if data.starts_with(THIN) {
        return fail(
            0,
            ErrorKind::Unsupported("thin archive: the members are separate files".into()),
        );
    }
    if !data.starts_with(MAGIC) {
        return Err(bad(0, "no !<arch> magic"));
    }
    // Where object's reader fails on a damaged header, the header's own reading names the
    // field and its offset.
    let damaged = |at: usize, e: object::read::Error| {
        special_member(data, at)
            .err()
            .unwrap_or_else(|| bad(at, format!("{e}")))
    };
    let ar =
        object::read::archive::ArchiveFile::parse(data).map_err(|e| damaged(MAGIC.len(), e))?;
    let mut out: Vec<Member<'_>> = Vec::new();
    let mut pos = MAGIC.len();
    for m in ar.members() {
        let m = m.map_err(|e| damaged(pos, e))?;
        let Some(h) = m.header() else {
            return Err(bad(pos, "not a common ar member header"));
        };
        if h.name.starts_with(b"#1/") {
            return fail(
                pos as u64,
                ErrorKind::Unsupported("BSD-style archive member names".into()),
            );
        }
        let (data_at, size) = m.file_range();
        let header_at = usize::try_from(data_at)
            .ok()
            .and_then(|d| d.checked_sub(HDR))
            .ok_or_else(|| bad(pos, "member header out of place"))?;
        // The special members object skips come before the first regular one.
        while pos < header_at {
            let s = special_member(data, pos)?;
            pos = after(&s);
            push(&mut out, s)?;
        }
        if pos != header_at {
            return Err(bad(pos, "member header out of place"));
        }
        let size = usize::try_from(size).map_err(|_| bad(pos + 48, "member too large"))?;
        let regular = Member {
            header_at,
            header: &data[header_at..header_at + HDR],
            name: String::from_utf8_lossy(m.name()).into_owned(),
            data: member_body(data, header_at, size)?,
        };
        pos = after(&regular);
        push(&mut out, regular)?;
    }
    // An archive of special members only (an empty library with an index).
    while pos < data.len() && !(data[pos] == b'\n' && pos + 1 == data.len()) {
        let s = special_member(data, pos)?;
        pos = after(&s);
        push(&mut out, s)?;
    }
    Ok(out)
}

/// How one member is rewritten, given its discovery: its new bytes, its kind and the report
/// of its region.
pub(crate) type MemberRewrite = for<'m> fn(
    &'m [u8],
    &Transform,
    &gfxkit_host::Discovery<'_>,
) -> Result<(Output<'m>, FileKind, Option<RegionReport>)>;

/// A member of an archive and its discovery, made once for its rewrite and the check of the
/// input: (its name, its contents, what discovery found in them).
pub(crate) type Discovered<'a> = (String, &'a [u8], gfxkit_host::Discovery<'a>);

/// Rewrites an archive member by member, each through `rewrite_member`. Also returns the
/// discovery of every ELF file and COFF object among the members, in member order (what the
/// check of the input surveys).
pub(crate) fn rewrite_archive<'a>(
    data: &'a [u8],
    t: &Transform,
    rewrite_member: MemberRewrite,
) -> Result<(Rewritten<'a>, Vec<Discovered<'a>>)> {
    let ms = members(data)?;
    let mut discovered = Vec::new();
    let mut regions = Vec::new();
    // New bodies.
    let mut bodies: Vec<Option<Output<'a>>> = Vec::with_capacity(ms.len());
    let mut pending = Vec::new();
    for m in &ms {
        if m.name == "/" || m.name == "/SYM64/" || m.name == "//" || m.name == "__.SYMDEF" {
            bodies.push(None);
            continue;
        }
        // COFF members go to `rewrite_member` too, which refuses them with the reason.
        if !crate::elf::is_elf(m.data) && !crate::pe::is_pe_or_coff(m.data) {
            bodies.push(None);
            continue;
        }
        let base = (m.header_at + HDR) as u64;
        let found = crate::discover(m.data, &t.limits);
        let (bytes, kind, region) =
            rewrite_member(m.data, t, &found).map_err(|e| e.of_member(&m.name, base))?;
        if crate::elf::is_elf(m.data)
            || gfxkit_host::InputKind::sniff(m.data) == gfxkit_host::InputKind::CoffObject
        {
            discovered.push((m.name.clone(), m.data, found));
        }
        if let Some(mut r) = region {
            r.member = Some(m.name.clone());
            // Offsets within the member become offsets in the archive (old and new layout).
            pending.push((regions.len(), base));
            regions.push(r);
        }
        bodies.push(if kind == FileKind::NoDeviceCode || bytes.equals(m.data) {
            None
        } else {
            Some(bytes)
        });
    }
    // Lay out again and map old header offsets to new ones.
    let mut out = Output::new();
    out.push(&MAGIC[..]);
    let mut moved = std::collections::HashMap::new();
    let mut index_at = Vec::new();
    for (m, body) in ms.iter().zip(bodies) {
        moved.insert(m.header_at as u64, out.len());
        let body_len = body.as_ref().map_or(m.data.len() as u64, |b| b.len());
        let mut header = m.header.to_vec();
        if body_len != m.data.len() as u64 {
            let size = format!("{body_len:<10}");
            if size.len() > 10 {
                return Err(bad(m.header_at, "member too large for an ar header"));
            }
            header[48..58].copy_from_slice(size.as_bytes());
        }
        if m.name == "/" || m.name == "/SYM64/" {
            // A second `/` right after the first is the Microsoft linker member of a COFF
            // library (`.lib`).
            let kind = if m.name == "/SYM64/" {
                Index::Gnu64
            } else if index_at.last().is_some_and(|(_, k, _)| *k == Index::Gnu32) {
                Index::Microsoft
            } else {
                Index::Gnu32
            };
            index_at.push((out.len() + HDR as u64, kind, m.header_at + HDR));
        }
        out.push(header);
        match body {
            Some(b) => out.append(b),
            None => out.push(m.data),
        }
        if body_len % 2 == 1 {
            out.push(&b"\n"[..]);
        }
    }
    for (ri, base) in pending {
        let new_base = moved
            .get(&(base - HDR as u64))
            .map_or(base, |h| h + HDR as u64);
        for b in &mut regions[ri].bundles {
            b.offset += base;
            b.new_offset += new_base;
        }
    }
    if ms.iter().any(|m| m.name == "__.SYMDEF") && out.len() != data.len() as u64 {
        return fail(
            0,
            ErrorKind::Unsupported("BSD symbol index (__.SYMDEF) cannot be updated".into()),
        );
    }
    for (at, kind, old_at) in index_at {
        fix_index(data, &mut out, &moved, at, kind, old_at)?;
    }
    let rewritten = Rewritten {
        report: Report {
            kind: FileKind::Archive,
            size_before: data.len() as u64,
            size_after: out.len(),
            regions,
            unmatched: Vec::new(),
        },
        output: out,
    };
    Ok((rewritten, discovered))
}

/// The layout of a symbol index member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Index {
    /// GNU `/` (and a COFF library's first linker member): a big-endian 32-bit count, then that
    /// many 32-bit member header offsets.
    Gnu32,
    /// GNU `/SYM64/`: the same with 64-bit fields.
    Gnu64,
    /// A COFF library's second linker member: a little-endian 32-bit member count, then that
    /// many 32-bit member header offsets (symbols, their member indices and names follow).
    Microsoft,
}

/// Rewrites the member offsets of the symbol index whose body starts at `old_at` in `data` and
/// at `at` in `out`, through `moved` (old member header offset -> new).
fn fix_index(
    data: &[u8],
    out: &mut Output<'_>,
    moved: &std::collections::HashMap<u64, u64>,
    at: u64,
    kind: Index,
    old_at: usize,
) -> Result<()> {
    let w = if kind == Index::Gnu64 { 8 } else { 4 };
    let rd = |o: usize| -> Result<u64> {
        let b = data
            .get(o..o + w)
            .ok_or_else(|| bad(o, "symbol index truncated"))?;
        Ok(if kind == Index::Microsoft {
            b.iter()
                .rev()
                .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
        } else {
            b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
        })
    };
    let count = rd(old_at)?;
    if count.saturating_mul(w as u64) > data.len() as u64 {
        let what = if kind == Index::Microsoft {
            "members"
        } else {
            "symbols"
        };
        return Err(bad(old_at, format!("symbol index claims {count} {what}")));
    }
    for k in 0..count as usize {
        let o = old_at + w + k * w;
        let old = rd(o)?;
        let new = *moved.get(&old).ok_or_else(|| {
            bad(
                o,
                format!("symbol index entry {k} points to {old:#x}, not a member"),
            )
        })?;
        if w == 4 && new > u64::from(u32::MAX) {
            return Err(bad(
                o,
                "archive grew past 4 GiB; a 32-bit index cannot hold it",
            ));
        }
        let n = at + (w + k * w) as u64;
        if kind == Index::Microsoft {
            out.put(n, &(new as u32).to_le_bytes())?;
        } else {
            out.put(n, &new.to_be_bytes()[8 - w..])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An archive with a symbol index naming no symbols, then members `a.txt` (odd size) and
    /// `b.txt`.
    fn archive() -> Vec<u8> {
        let mut a = MAGIC.to_vec();
        let mut member = |name: &str, body: &[u8]| {
            a.extend_from_slice(
                format!(
                    "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                    0,
                    0,
                    0,
                    644,
                    body.len()
                )
                .as_bytes(),
            );
            a.extend_from_slice(body);
            if body.len() % 2 == 1 {
                a.push(b'\n');
            }
        };
        member("/", &[0, 0, 0, 0]);
        member("a.txt/", b"abc");
        member("b.txt/", b"defg");
        a
    }

    #[test]
    fn members_come_in_file_order_with_the_special_ones() {
        let a = archive();
        let ms = members(&a).unwrap();
        let names: Vec<&str> = ms.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["/", "a.txt", "b.txt"]);
        assert_eq!(ms[1].data, b"abc");
        assert_eq!(ms[2].header_at, 8 + 64 + 64);
        assert_eq!(ms[2].data, b"defg");
    }

    #[test]
    fn damaged_headers_are_named_with_their_offsets() {
        let a = archive();
        // The symbol index's terminator (which object's reader checks while opening).
        let mut d = a.clone();
        d[8 + 58] = b'A';
        let e = members(&d).unwrap_err();
        assert_eq!(e.offset, 8 + 58, "{e}");
        // The size of the last member.
        let mut d = a.clone();
        let at = 8 + 64 + 64;
        d[at + 48..at + 50].copy_from_slice(b"zz");
        let e = members(&d).unwrap_err();
        assert_eq!(e.offset, at as u64 + 48, "{e}");
        assert!(e.to_string().contains("is not a number"), "{e}");
        // A size running past the end.
        let e = members(&a[..a.len() - 1]).unwrap_err();
        assert_eq!(e.offset, at as u64 + 48, "{e}");
        assert!(e.to_string().contains("runs past the end"), "{e}");
    }
}
