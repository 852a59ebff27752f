//! Reading a package's members: each member is decompressed once, streaming; those whose
//! first bytes cannot start device code are skipped after reading those bytes, nested
//! archives (zip, tar, `ar`, RPM, compressed streams) are walked in turn (to
//! [`Options::max_depth`]), and the rest are handed to the caller's function one by one, held
//! in memory when small and otherwise in a [`Spill`] (a temporary file the caller maps). The
//! entry point is [`walk`](fn@crate::walk); container images are read by [`crate::image`]
//! through [`member`].

use crate::detect::{detect, is_tar, read_prefix, Format, PREFIX_LEN};
use crate::error::{Error, ErrorKind, Result};
use crate::rpm;
use crate::tar::{clean_name, tar_header_error, Counting};
use rayon::prelude::*;
use std::io::{self, Cursor, Read, Write};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

/// Limits and choices of a walk.
#[derive(Debug, Clone)]
pub struct Options {
    /// Archives inside archives are walked this deep (the package itself is depth 0).
    pub max_depth: u32,
    /// Members of at most this many bytes are held in memory; larger ones go to a [`Spill`].
    pub memory_limit: u64,
    /// The largest member accepted, in bytes.
    pub max_member: u64,
    /// The most bytes all members of one package may decompress to together (guards against
    /// zip bombs whose members overlap or repeat).
    pub max_total: u64,
    /// Hand every regular member to the function, not only those [`Options::wanted`] wants.
    pub all_members: bool,
    /// Which members (other than archives, which are walked) are read and handed to the
    /// function, by the member's name and first bytes (up to [`PREFIX_LEN`]): by default
    /// [`crate::may_hold_device_code`]. gfxkit's commands pass the choice their directory
    /// walks make (the formats of the run), so that a member is read when the same file in a
    /// directory would be.
    pub wanted: MemberChoice,
    /// The platform whose image a multi-platform container image is read as (`None`:
    /// linux/amd64 when the image has it, else its only platform). The caller passes its
    /// choice (`gfxkit --platform`); `None` by default.
    pub platform: Option<crate::platform::Platform>,
    /// Archives inside the package that this choice wants (by name and first bytes) are
    /// handed to the function whole, as members, instead of being walked (`None`: every
    /// archive is walked). A prune uses it to rewrite a wheel inside a tarball as a package
    /// of its own.
    pub whole_archives: Option<MemberChoice>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_depth: 4,
            memory_limit: 16 << 20,
            max_member: 64 << 30,
            max_total: 256 << 30,
            all_members: false,
            wanted: MemberChoice::default(),
            platform: None,
            whole_archives: None,
        }
    }
}

/// Which members of a package a walk reads ([`Options::wanted`]): a function of a member's
/// name (its path in the package) and its first bytes (up to [`PREFIX_LEN`]), shared by the
/// walk's threads. Cloning it shares the function.
///
/// ```
/// use gfxkit_package::MemberChoice;
/// let dat = MemberChoice::new(|name: &str, _: &[u8]| name.ends_with(".dat"));
/// assert!(dat.wants("lib/TensileLibrary.dat", b""));
/// assert!(!dat.wants("lib/README", b"# readme"));
/// // By default: what may hold device code.
/// assert!(MemberChoice::default().wants("x.hipfb", b"__CLANG_OFFLOAD_BUNDLE__"));
/// ```
#[derive(Clone)]
pub struct MemberChoice(std::sync::Arc<ChoiceFn>);

/// The function of a [`MemberChoice`]: a member's name and first bytes.
type ChoiceFn = dyn Fn(&str, &[u8]) -> bool + Send + Sync;

impl MemberChoice {
    /// The members `f` says yes to.
    pub fn new(f: impl Fn(&str, &[u8]) -> bool + Send + Sync + 'static) -> MemberChoice {
        MemberChoice(std::sync::Arc::new(f))
    }

    /// Whether the member named `name` whose first bytes are `prefix` is read.
    pub fn wants(&self, name: &str, prefix: &[u8]) -> bool {
        (self.0)(name, prefix)
    }
}

/// [`crate::may_hold_device_code`].
impl Default for MemberChoice {
    fn default() -> MemberChoice {
        MemberChoice::new(crate::may_hold_device_code)
    }
}

/// The same function (one [`MemberChoice`] and its clones).
impl PartialEq for MemberChoice {
    fn eq(&self, other: &MemberChoice) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MemberChoice {}

impl std::fmt::Debug for MemberChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemberChoice(..)")
    }
}

/// Where members too large for memory go: a temporary file, typically, that the caller maps
/// once written (this crate does no file I/O of its own).
pub trait Spill: Sync {
    /// A new, empty writer for one member.
    fn create(&self) -> io::Result<Box<dyn SpillWriter>>;
}

/// A member being written out; [`SpillWriter::finish`] hands back its bytes.
pub trait SpillWriter: Write + Send {
    /// Ends the write and returns a view of everything written.
    fn finish(self: Box<Self>) -> io::Result<Box<dyn Deref<Target = [u8]> + Send + Sync>>;
}

/// A [`Spill`] that keeps everything in memory (for tests and small inputs).
#[derive(Debug, Default, Clone, Copy)]
pub struct MemorySpill;

struct VecWriter(Vec<u8>);

impl Write for VecWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl SpillWriter for VecWriter {
    fn finish(self: Box<Self>) -> io::Result<Box<dyn Deref<Target = [u8]> + Send + Sync>> {
        Ok(Box::new(self.0))
    }
}

impl Spill for MemorySpill {
    fn create(&self) -> io::Result<Box<dyn SpillWriter>> {
        Ok(Box::new(VecWriter(Vec::new())))
    }
}

/// The decompressed bytes of one member.
pub enum Bytes {
    /// Held in memory.
    Memory(Vec<u8>),
    /// Written to a [`Spill`].
    Spilled(Box<dyn Deref<Target = [u8]> + Send + Sync>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Memory(v) => v,
            Bytes::Spilled(s) => s,
        }
    }
}

/// One member handed to the walk's function (which may keep its bytes).
pub struct Member<'a> {
    /// `package!member`, nested archives chained with `!`.
    pub path: &'a str,
    /// The member's name inside its innermost archive.
    pub name: &'a str,
    /// Its decompressed bytes.
    pub bytes: Bytes,
    /// For a file of a container image: the digest of the layer that holds it
    /// (`sha256:...`).
    pub layer: Option<&'a str>,
}

/// What the function returned for one member.
#[derive(Debug)]
pub struct Visited<T> {
    /// `package!member`.
    pub path: String,
    /// The member's size in bytes.
    pub size: u64,
    /// The function's value.
    pub value: T,
    /// For a file of a container image: the digest of the layer that holds it.
    pub layer: Option<String>,
}

/// The outcome of a walk, in archive order: the members visited and, in place, the errors
/// met (a damaged member; a damaged stream ends the walk of that stream).
pub type Walk<T> = Vec<Result<Visited<T>>>;

/// What a walk shares with everything it reads (members, nested archives, image layers).
pub(crate) struct Ctx<'a, T> {
    pub(crate) opts: &'a Options,
    pub(crate) spill: &'a dyn Spill,
    pub(crate) visit: &'a (dyn Fn(Member<'_>) -> T + Sync),
    pub(crate) reading: &'a (dyn Fn(&str) + Sync),
    pub(crate) total: &'a AtomicU64,
    /// The layer digest given to the members read (files of a container image).
    pub(crate) layer: Option<&'a str>,
}

impl<T> Clone for Ctx<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Ctx<'_, T> {}

fn zip_error(path: &str, e: zip::result::ZipError) -> Error {
    use zip::result::ZipError as Z;
    match e {
        Z::Io(io) => Error::from_read(path, &io),
        Z::InvalidArchive(m) => Error::new(path, ErrorKind::Corrupt(format!("zip: {m}"))),
        Z::UnsupportedArchive(m) => Error::new(path, ErrorKind::Unsupported(format!("zip: {m}"))),
        other => Error::new(path, ErrorKind::Corrupt(format!("zip: {other}"))),
    }
}

/// Opens a zip archive over bytes, with a clear error.
pub(crate) fn open_zip<'d>(
    name: &str,
    data: &'d [u8],
) -> Result<zip::ZipArchive<Cursor<&'d [u8]>>> {
    if let Some(e) = crate::zipinfo::check_end(name, data) {
        return Err(e);
    }
    zip::ZipArchive::new(Cursor::new(data)).map_err(|e| zip_error(name, e))
}

/// Walks the members of the zip `data` (named by `chain`), in parallel.
pub(crate) fn walk_zip<T: Send>(
    ctx: &Ctx<'_, T>,
    chain: &str,
    data: &[u8],
    depth: u32,
) -> Result<Walk<T>> {
    let archive = open_zip(chain, data)?;
    let out: Vec<Walk<T>> = (0..archive.len())
        .into_par_iter()
        .map(|i| {
            let mut a = archive.clone();
            let name = archive.name_for_index(i).unwrap_or("?").to_owned();
            let path = format!("{chain}!{name}");
            let mut f = match a.by_index(i) {
                Ok(f) => f,
                Err(e) => {
                    let e = zip_error(&path, e);
                    let cd = archive.central_directory_start();
                    return vec![Err(crate::zipinfo::opening_member(e, data, cd, i))];
                }
            };
            if f.is_dir() || f.is_symlink() {
                return Vec::new();
            }
            if let Some(e) =
                crate::zipinfo::check_local_name(&path, data, f.header_start(), f.name_raw())
            {
                return vec![Err(e)];
            }
            let size = f.size();
            let place = crate::zipinfo::MemberPlace::of(&f);
            let mut out = member(ctx, chain, &name, Some(size), &mut f, depth);
            for r in &mut out {
                if let Err(e) = r {
                    *e = crate::zipinfo::in_member(e.clone(), &path, &place);
                }
            }
            out
        })
        .collect();
    Ok(out.into_iter().flatten().collect())
}

/// Walks a stream-format container (`format` was detected from its first bytes).
pub(crate) fn walk_stream<T: Send>(
    ctx: &Ctx<'_, T>,
    chain: &str,
    r: &mut dyn Read,
    format: Format,
    depth: u32,
) -> Walk<T> {
    match format {
        Format::Zip => match materialize(ctx, chain, None, r) {
            Ok(bytes) => walk_zip(ctx, chain, &bytes, depth).unwrap_or_else(|e| vec![Err(e)]),
            Err(e) => vec![Err(e)],
        },
        Format::Tar => walk_tar(ctx, chain, r, None, depth),
        Format::Deb => walk_ar(ctx, chain, r, depth),
        Format::Rpm => match rpm::payload(chain, r) {
            Ok(payload) => {
                let body = Cursor::new(payload.prefix).chain(r);
                let mut dec = match payload.compression.decoder(body) {
                    Ok(d) => d,
                    Err(e) => return vec![Err(Error::from_read(chain, &e))],
                };
                rpm::walk_cpio(chain, &mut dec, &mut |name, size, body| {
                    member(ctx, chain, name, Some(size), body, depth)
                })
            }
            Err(e) => vec![Err(e)],
        },
        Format::Compressed(c) => {
            let mut dec = match c.decoder(r) {
                Ok(d) => d,
                Err(e) => return vec![Err(Error::from_read(chain, &e))],
            };
            let prefix = match read_prefix(&mut dec, PREFIX_LEN) {
                Ok(p) => p,
                Err(e) => {
                    let mut e = Error::from_read(chain, &e);
                    if let ErrorKind::Truncated(m) | ErrorKind::Corrupt(m) = &mut e.kind {
                        *m = format!(
                            "{m} (decompressing the first bytes of its .{} stream)",
                            c.suffix()
                        );
                    }
                    return vec![Err(e.at(0))];
                }
            };
            let mut whole = Cursor::new(&prefix[..]).chain(dec);
            if is_tar(&prefix) {
                walk_tar(ctx, chain, &mut whole, Some(c), depth)
            } else {
                // One compressed file: its member is named after the package without the
                // compression suffix.
                let last = chain.rsplit('!').next().unwrap_or(chain);
                let base = last.rsplit('/').next().unwrap_or(last);
                let stem = base
                    .strip_suffix(&format!(".{}", c.suffix()))
                    .unwrap_or(base)
                    .to_owned();
                let mut out = member(ctx, chain, &stem, None, &mut whole, depth);
                // To the end of the stream, whether the member was read or passed over: the
                // decompressor's check runs there (a damaged tar header makes a tarball look
                // like one compressed file).
                if out.iter().all(|r| r.is_ok()) {
                    if let Err(e) = io::copy(&mut whole, &mut io::sink()) {
                        let mut e = Error::from_read(chain, &e);
                        if let ErrorKind::Truncated(m)
                        | ErrorKind::Corrupt(m)
                        | ErrorKind::Checksum(m) = &mut e.kind
                        {
                            *m = format!("{m} (at the end of its .{} stream)", c.suffix());
                        }
                        out.push(Err(e));
                    }
                }
                out
            }
        }
    }
}

/// Walks a tar stream; `compressed` is the compression it was read through, if any (said
/// when an image is found inside it).
fn walk_tar<T: Send>(
    ctx: &Ctx<'_, T>,
    chain: &str,
    r: &mut dyn Read,
    compressed: Option<crate::detect::Compression>,
    depth: u32,
) -> Walk<T> {
    let mut out = Vec::new();
    let pos = std::cell::Cell::new(0u64);
    let mut archive = tar::Archive::new(Counting {
        inner: r,
        pos: &pos,
    });
    let at_header = |e: &io::Error| tar_header_error(chain, e, pos.get());
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => return vec![Err(at_header(&e))],
    };
    let mut first_file = true;
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.push(Err(at_header(&e)));
                break;
            }
        };
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let name = clean_name(&name).to_owned();
        // A container image inside a stream (`docker save | gzip`, an image in another
        // archive) cannot be read as its file system without unpacking it: say so rather
        // than list its layers as tarballs (with the files they delete).
        if first_file && crate::digest::looks_like_image_entry(&name) {
            use crate::detect::Compression;
            let what = match compressed {
                Some(c) => {
                    let tool = match c {
                        Compression::Gzip => "gunzip -k",
                        Compression::Xz => "unxz -k",
                        Compression::Zstd => "unzstd",
                        Compression::Bzip2 => "bunzip2 -k",
                    };
                    format!(
                        "a container image inside a compressed stream (.{}): gfxkit reads images \
                         in place from an uncompressed archive or a layout directory (decompress \
                         it first, e.g. `{tool}`)",
                        c.suffix()
                    )
                }
                None => "a container image inside another archive: gfxkit reads images in place \
                         from an archive or a layout directory of its own (extract the image's \
                         archive from the one holding it first)"
                    .to_owned(),
            };
            out.push(Err(Error::new(chain, ErrorKind::Unsupported(what))));
            return out;
        }
        first_file = false;
        let size = entry.size();
        let offset = entry.raw_header_position();
        let data_at = entry.raw_file_position();
        let path = format!("{chain}!{name}");
        let mut got = member(ctx, chain, &name, Some(size), &mut entry, depth);
        for r in &mut got {
            if let Err(e) = r {
                if e.path == path {
                    if let ErrorKind::Truncated(m)
                    | ErrorKind::Corrupt(m)
                    | ErrorKind::Checksum(m) = &mut e.kind
                    {
                        *m = format!(
                            "{m} (reading its {size} bytes from offset {data_at:#x} of the tar \
                             stream)"
                        );
                    }
                }
            }
        }
        // A member cut short ends the stream: nothing after it can be read.
        let fatal = got.iter().any(|r| {
            matches!(r, Err(e) if e.path == format!("{chain}!{name}")
                && matches!(e.kind, ErrorKind::Truncated(_) | ErrorKind::Io(_)
                    | ErrorKind::SmallerThanDeclared { .. }))
        });
        for r in &mut got {
            if let Err(e) = r {
                if e.offset.is_none() && e.path == format!("{chain}!{name}") {
                    e.offset = Some(offset);
                }
            }
        }
        out.extend(got);
        if fatal {
            return out;
        }
    }
    // Read what follows the last member to the end of the stream, so that a decompressor
    // below checks its trailer (gzip's CRC-32 and length, xz's check): without it, damage
    // that decodes to other bytes would go unseen.
    if out.iter().all(|r| r.is_ok()) {
        if let Err(e) = io::copy(&mut archive.into_inner(), &mut io::sink()) {
            let end = pos.get();
            let mut e = Error::from_read(chain, &e);
            if let ErrorKind::Truncated(m) | ErrorKind::Corrupt(m) | ErrorKind::Checksum(m) =
                &mut e.kind
            {
                *m = format!(
                    "{m} (at the end of the stream, after the tar stream's {end} bytes: what was \
                     read before may be damaged too)"
                );
            }
            out.push(Err(e.at(end)));
        }
    }
    out
}

fn walk_ar<T: Send>(ctx: &Ctx<'_, T>, chain: &str, r: &mut dyn Read, depth: u32) -> Walk<T> {
    /// An `ar` member header.
    const AR_HEADER: u64 = 60;
    let mut out = Vec::new();
    let pos = std::cell::Cell::new(0u64);
    let mut archive = ar::Archive::new(Counting {
        inner: r,
        pos: &pos,
    });
    // Where the next member header starts: after the magic, then after each member's data
    // (padded to an even offset).
    let mut header_at = 8u64;
    while let Some(entry) = archive.next_entry() {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let end = pos.get();
                let mut err = Error::from_read(chain, &e);
                if let ErrorKind::Truncated(m) | ErrorKind::Corrupt(m) = &mut err.kind {
                    *m = if end < header_at.saturating_add(AR_HEADER) {
                        format!(
                            "need {AR_HEADER} bytes at offset {header_at:#x} for an ar member \
                             header, the archive has {end} ({m})"
                        )
                    } else {
                        format!("{m} (the ar member header at offset {header_at:#x})")
                    };
                }
                out.push(Err(err.at(header_at)));
                break;
            }
        };
        let name = String::from_utf8_lossy(entry.header().identifier())
            .trim_end_matches('/')
            .to_owned();
        let size = entry.header().size();
        header_at = header_at
            .saturating_add(AR_HEADER)
            .saturating_add(size)
            .saturating_add(size % 2);
        let got = member(ctx, chain, &name, Some(size), &mut entry, depth);
        let fatal = got.iter().any(|r| {
            matches!(r, Err(e) if e.path == format!("{chain}!{name}") && matches!(e.kind, ErrorKind::Truncated(_)))
        });
        out.extend(got);
        if fatal {
            break;
        }
    }
    out
}

/// One member: read its first bytes, then walk it (a nested archive), skip it (cannot hold
/// device code) or read it whole and visit it.
pub(crate) fn member<T: Send>(
    ctx: &Ctx<'_, T>,
    chain: &str,
    name: &str,
    declared: Option<u64>,
    r: &mut dyn Read,
    depth: u32,
) -> Walk<T> {
    let path = format!("{chain}!{name}");
    (ctx.reading)(&path);
    let prefix = match read_prefix(r, PREFIX_LEN) {
        Ok(p) => p,
        Err(e) => return vec![Err(Error::from_read(&path, &e))],
    };
    let archive = detect(&prefix).filter(|_| {
        !ctx.opts
            .whole_archives
            .as_ref()
            .is_some_and(|c| c.wants(name, &prefix))
    });
    if let Some(format) = archive {
        if depth >= ctx.opts.max_depth {
            return vec![Err(Error::new(
                &path,
                ErrorKind::TooDeep {
                    limit: ctx.opts.max_depth,
                },
            ))];
        }
        let mut whole = Cursor::new(&prefix[..]).chain(r);
        return walk_stream(ctx, &path, &mut whole, format, depth + 1);
    }
    let whole_archive = detect(&prefix).is_some();
    if !whole_archive && !ctx.opts.all_members && !ctx.opts.wanted.wants(name, &prefix) {
        // A member named as native code whose first bytes say otherwise may be a library
        // whose magic was damaged: it is read to its end, so that the container's check
        // (a zip member's CRC-32) runs. Other members are passed over unread.
        if named_like_code(name) {
            let mut rest = Cursor::new(&prefix[..]).chain(r);
            if let Err(e) = io::copy(&mut rest, &mut io::sink()) {
                return vec![Err(Error::from_read(&path, &e))];
            }
        }
        return Vec::new();
    }
    let mut whole = Cursor::new(&prefix[..]).chain(r);
    match materialize(ctx, &path, declared, &mut whole) {
        Ok(bytes) => {
            let size = bytes.len() as u64;
            let value = (ctx.visit)(Member {
                path: &path,
                name,
                bytes,
                layer: ctx.layer,
            });
            vec![Ok(Visited {
                path,
                size,
                value,
                layer: ctx.layer.map(str::to_owned),
            })]
        }
        Err(e) => vec![Err(e)],
    }
}

/// Whether a member's name says it holds native or device code: a shared library (`.so`,
/// `.so.N...`, `.dll`, `.dylib`, `.pyd`), an object or archive (`.o`, `.a`, `.lib`), a code
/// object (`.co`, `.hsaco`), a bundle (`.hipfb`) or a kpack archive (`.kpack`).
pub(crate) fn named_like_code(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let mut parts = base.split('.').skip(1).collect::<Vec<_>>();
    // `libx.so.1.2`: version numbers after `.so`.
    while parts.len() > 1
        && parts
            .last()
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        parts.pop();
    }
    matches!(
        parts.last().copied(),
        Some(
            "so" | "dll" | "dylib" | "pyd" | "o" | "a" | "lib" | "co" | "hsaco" | "hipfb" | "kpack"
        )
    )
}

/// Reads a whole member: into memory up to the memory limit, else into a spill; checks the
/// size against the declared one and the limits.
fn materialize<T>(
    ctx: &Ctx<'_, T>,
    path: &str,
    declared: Option<u64>,
    r: &mut dyn Read,
) -> Result<Bytes> {
    read_member(path, declared, r, ctx.opts, ctx.spill, Some(ctx.total))
}

/// Reads a whole member (see [`Options`] for the limits); `total`, when given, counts bytes
/// across members against [`Options::max_total`].
pub(crate) fn read_member(
    path: &str,
    declared: Option<u64>,
    r: &mut dyn Read,
    opts: &Options,
    spill: &dyn Spill,
    total: Option<&AtomicU64>,
) -> Result<Bytes> {
    let limit = opts.max_member;
    if let Some(d) = declared {
        if d > limit {
            return Err(Error::new(path, ErrorKind::TooLarge { limit }));
        }
    }
    let cap = declared.unwrap_or(limit);
    let mut buf = Vec::new();
    let in_memory = opts.memory_limit.min(cap);
    if let Some(d) = declared.filter(|d| *d <= opts.memory_limit) {
        buf.reserve_exact(usize::try_from(d).unwrap_or(0));
    }
    // One byte past the limit tells a member that runs past it.
    let mut r = r.take(cap.saturating_add(1));
    (&mut r)
        .take(in_memory.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Error::from_read(path, &e))?;
    let mut n = buf.len() as u64;
    let bytes = if n <= in_memory {
        Bytes::Memory(buf)
    } else {
        let io = |e: io::Error| Error::new(path, ErrorKind::Io(format!("temporary file: {e}")));
        let mut w = spill.create().map_err(io)?;
        w.write_all(&buf).map_err(io)?;
        drop(buf);
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let k = match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::from_read(path, &e)),
            };
            n += k as u64;
            if n > cap {
                break;
            }
            w.write_all(&chunk[..k]).map_err(io)?;
        }
        if n > cap {
            return Err(too_big(path, declared, limit));
        }
        Bytes::Spilled(w.finish().map_err(io)?)
    };
    if n > cap {
        return Err(too_big(path, declared, limit));
    }
    if let Some(d) = declared {
        if n < d {
            return Err(Error::new(
                path,
                ErrorKind::SmallerThanDeclared {
                    declared: d,
                    actual: n,
                },
            ));
        }
    }
    if let Some(t) = total {
        let sum = t.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if sum > opts.max_total {
            return Err(Error::new(
                path,
                ErrorKind::TooLarge {
                    limit: opts.max_total,
                },
            ));
        }
    }
    Ok(bytes)
}

fn too_big(path: &str, declared: Option<u64>, limit: u64) -> Error {
    match declared {
        Some(d) => Error::new(path, ErrorKind::LargerThanDeclared { declared: d }),
        None => Error::new(path, ErrorKind::TooLarge { limit }),
    }
}
