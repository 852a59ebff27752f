//! Writing a package with some members replaced.
//!
//! - **Zip and wheels**: members the function rewrites are compressed again with their
//!   original method, name, time and permissions; every other member is copied raw (local
//!   header and compressed bytes unchanged), in the original order. A wheel's
//!   `*.dist-info/RECORD` gets the new SHA-256 and size of each rewritten member (its other
//!   rows are kept byte for byte); a rewritten member without a row is refused.
//! - **`.conda`**: the `pkg-*.tar.zst` member is rewritten as a tarball (below) and the
//!   `info-*.tar.zst` member's `info/paths.json` gets the new `sha256` and `size_in_bytes`.
//! - **Tarballs** (`.tar`, `.tar.gz`, `.tar.xz`, `.tar.zst`, `.tar.bz2`, so `.tar.bz2` conda
//!   packages too): entries are copied header for header, rewritten ones with their new size;
//!   an `info/paths.json` in the tarball is updated; the stream is compressed again with the
//!   same codec.
//! - `.deb` and `.rpm` are refused with the reason (their control data and signatures would
//!   need rebuilding with the distribution's tools).

use crate::detect::read_prefix;
use crate::detect::{detect, is_tar, Compression, Format, PREFIX_LEN};
use crate::error::{Error, ErrorKind, Result};
use crate::members::{open_zip, read_member, Bytes, Member, Options, Spill};
use crate::record;
use std::io::{self, Cursor, Read, Seek, Write};

/// The function that rewrites one member: `Ok(None)` leaves it as it is, `Ok(Some(bytes))`
/// replaces it, `Err(reason)` stops the rewrite.
pub type RewriteFn<'a> =
    dyn Fn(Member<'_>) -> std::result::Result<Option<Vec<u8>>, String> + Sync + 'a;

/// What a rewrite does with the members of a package.
#[derive(Clone, Copy)]
pub struct Edits<'a> {
    /// The new bytes of a member read (`None`: unchanged), or why the rewrite stops.
    pub rewrite: &'a RewriteFn<'a>,
    /// Whether the member at a path (`package!member`) whose first bytes are these is read
    /// and handed to `rewrite`.
    pub read: &'a (dyn Fn(&str, &[u8]) -> bool + Sync),
    /// Whether the member at a path (`package!member`; a directory's without its final `/`)
    /// is left out of the package: its bytes are not read, and its row of a wheel's
    /// `RECORD` or entry of a conda package's `info/paths.json` goes with it.
    pub remove: &'a (dyn Fn(&str) -> bool + Sync),
}

impl<'a> Edits<'a> {
    /// Every member whose first bytes may start device code
    /// ([`gfxkit_host::InputKind::sniff`]) handed to `rewrite`; none left out.
    pub fn rewriting(rewrite: &'a RewriteFn<'a>) -> Edits<'a> {
        Edits {
            rewrite,
            read: &may_start_device_code,
            remove: &never,
        }
    }
}

fn may_start_device_code(_: &str, prefix: &[u8]) -> bool {
    gfxkit_host::InputKind::sniff(prefix.get(..64).unwrap_or(prefix)).may_hold_device_code()
}

fn never(_: &str) -> bool {
    false
}

/// A member that was replaced or left out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Changed {
    /// `package!member`.
    pub path: String,
    /// Bytes before.
    pub size_before: u64,
    /// Bytes after (0 for a member left out).
    pub size_after: u64,
    /// Whether the member was left out ([`Edits::remove`]).
    pub removed: bool,
}

/// A change a conda package's `info/paths.json` records: a member's path and its new SHA-256
/// (hex) and size, or `None` for a member left out.
type PathsChange = (String, Option<(String, u64)>);

/// Anything that can be written and sought (a temporary file, a `Cursor<Vec<u8>>`).
pub trait WriteSeek: Write + Seek {}
impl<T: Write + Seek> WriteSeek for T {}

/// Rewrites the package `data` named `name` into `out` with `edits`: members left out, and
/// members read and replaced. Returns the members replaced or left out (none: `out` still gets
/// a valid copy; a tarball with nothing changed is copied byte for byte, not compressed
/// again).
pub fn rewrite(
    name: &str,
    data: &[u8],
    opts: &Options,
    spill: &dyn Spill,
    edits: &Edits<'_>,
    out: &mut dyn WriteSeek,
) -> Result<Vec<Changed>> {
    let compression = match rewritable(name, data)? {
        Rewritable::Zip => return rewrite_zip(name, data, opts, spill, edits, out),
        Rewritable::Tar(c) => c,
    };
    let open = || -> io::Result<Box<dyn Read + '_>> {
        match compression {
            Some(c) => c.decoder(data),
            None => Ok(Box::new(data)),
        }
    };
    let mut changed = Vec::new();
    let wrote = rewrite_tar(
        name,
        &open,
        opts,
        spill,
        edits,
        &[],
        compression,
        out,
        &mut changed,
        &mut Vec::new(),
    )?;
    if !wrote {
        out.write_all(data).map_err(|e| write_err(name, &e))?;
    }
    Ok(changed)
}

/// How a package is rewritten.
enum Rewritable {
    /// As a zip (wheels, `.conda`).
    Zip,
    /// As a tarball, compressed with this codec.
    Tar(Option<Compression>),
}

/// Whether [`rewrite`] can write the package `data` (named `name`) again: the error it would
/// refuse it with, before anything is read (`.deb`, `.rpm`, a container image, a compressed
/// file that is not a tarball, a file that is no package).
pub fn check_rewritable(name: &str, data: &[u8]) -> Result<()> {
    rewritable(name, data).map(drop)
}

fn rewritable(name: &str, data: &[u8]) -> Result<Rewritable> {
    let refuse = |why: &str| Err(Error::new(name, ErrorKind::CannotRewrite(why.into())));
    let prefix = data.get(..PREFIX_LEN).unwrap_or(data);
    match detect(prefix) {
        Some(Format::Zip) => Ok(Rewritable::Zip),
        Some(Format::Tar) if crate::image::TarLayout::index(name, data).is_image() => refuse(
            "a container image: its layers' digests, manifests and configuration would have \
             to be rebuilt (prune the files before building the image)",
        ),
        Some(Format::Tar) => Ok(Rewritable::Tar(None)),
        Some(Format::Compressed(c)) => {
            let head = read_prefix(
                &mut c.decoder(data).map_err(|e| Error::from_read(name, &e))?,
                PREFIX_LEN,
            )
            .map_err(|e| Error::from_read(name, &e))?;
            if !is_tar(&head) {
                return refuse(&format!(
                    "a {}-compressed file that is not a tarball",
                    c.suffix()
                ));
            }
            Ok(Rewritable::Tar(Some(c)))
        }
        Some(Format::Deb) => refuse(
            "Debian packages are not rewritten (md5sums and signatures would need \
             rebuilding): extract, rewrite the libraries and rebuild with dpkg-deb",
        ),
        Some(Format::Rpm) => refuse(
            "RPM packages are not rewritten (header digests and signatures would need \
             rebuilding): rebuild with rpmbuild",
        ),
        None => Err(Error::new(name, ErrorKind::NotAPackage)),
    }
}

fn zip_err(path: &str, e: zip::result::ZipError) -> Error {
    match e {
        zip::result::ZipError::Io(io) => Error::from_read(path, &io),
        other => Error::new(path, ErrorKind::Corrupt(format!("zip: {other}"))),
    }
}

fn keep_bytes(v: Vec<u8>, opts: &Options, spill: &dyn Spill, path: &str) -> Result<Bytes> {
    if v.len() as u64 <= opts.memory_limit {
        return Ok(Bytes::Memory(v));
    }
    let io = |e: io::Error| Error::new(path, ErrorKind::Io(format!("temporary file: {e}")));
    let mut w = spill.create().map_err(io)?;
    w.write_all(&v).map_err(io)?;
    drop(v);
    Ok(Bytes::Spilled(w.finish().map_err(io)?))
}

/// Hands one member read from `r` to the rewrite if [`Edits::read`] wants it.
fn transform(
    path: &str,
    name: &str,
    declared: Option<u64>,
    r: &mut dyn Read,
    opts: &Options,
    spill: &dyn Spill,
    edits: &Edits<'_>,
) -> Result<Option<(Bytes, u64)>> {
    let prefix = read_prefix(r, PREFIX_LEN).map_err(|e| Error::from_read(path, &e))?;
    if !(edits.read)(path, &prefix) {
        return Ok(None);
    }
    let mut whole = Cursor::new(&prefix[..]).chain(r);
    let bytes = read_member(path, declared, &mut whole, opts, spill, None)?;
    let before = bytes.len() as u64;
    let new = (edits.rewrite)(Member {
        path,
        name,
        bytes,
        layer: None,
    })
    .map_err(|why| Error::new(path, ErrorKind::Rewrite(why)))?;
    match new {
        None => Ok(None),
        Some(v) => Ok(Some((keep_bytes(v, opts, spill, path)?, before))),
    }
}

fn rewrite_zip(
    name: &str,
    data: &[u8],
    opts: &Options,
    spill: &dyn Spill,
    edits: &Edits<'_>,
    out: &mut dyn WriteSeek,
) -> Result<Vec<Changed>> {
    let mut archive = open_zip(name, data)?;
    // The comment is written after the new end record: one holding an end record of its own
    // (or a zip64 one) would make readers of the rewritten zip take that one, and see members
    // this zip does not have.
    let comment = archive.comment();
    if let Some(at) = [&b"PK\x05\x06"[..], b"PK\x06\x06", b"PK\x06\x07"]
        .iter()
        .filter_map(|sig| comment.windows(4).position(|w| w == *sig))
        .min()
    {
        return Err(Error::new(
            name,
            ErrorKind::CannotRewrite(format!(
                "its comment ({} bytes) holds an end-of-central-directory signature at its byte \
                 {at}: written again, the zip would read as another",
                comment.len()
            )),
        ));
    }
    let names: Vec<String> = (0..archive.len())
        .map(|i| archive.name_for_index(i).unwrap_or("").to_owned())
        .collect();
    let mut order: Vec<usize> = (0..archive.len()).collect();
    let name_of = |i: usize| names[i].clone();
    let is_conda = names.iter().any(|n| n == "metadata.json")
        && names
            .iter()
            .any(|n| n.starts_with("pkg-") && n.ends_with(".tar.zst"));
    // A .conda's info tarball is rewritten after its pkg tarball (it needs the new hashes).
    if is_conda {
        order.sort_by_key(|&i| name_of(i).starts_with("info-"));
    }
    let record_idx = (0..archive.len()).find(|&i| {
        let n = name_of(i);
        n.ends_with(".dist-info/RECORD") && n.matches('/').count() == 1
    });
    let mut new: Vec<Option<Bytes>> = (0..archive.len()).map(|_| None).collect();
    let mut removed = vec![false; archive.len()];
    let mut removed_names = std::collections::HashSet::new();
    let mut changed = Vec::new();
    let mut inner_changes: Vec<PathsChange> = Vec::new();
    for &i in &order {
        let mname = name_of(i);
        let path = format!("{name}!{mname}");
        let cd = archive.central_directory_start();
        let mut file = archive
            .by_index(i)
            .map_err(|e| crate::zipinfo::opening_member(zip_err(&path, e), data, cd, i))?;
        if file.is_dir() {
            removed[i] = (edits.remove)(path.trim_end_matches('/'));
            continue;
        }
        if Some(i) == record_idx {
            continue;
        }
        let size = file.size();
        if is_conda && mname.ends_with(".tar.zst") {
            drop(file);
            let conda = CondaTarball {
                archive: &archive,
                data,
                index: i,
                path: &path,
                info: mname.starts_with("info-"),
            };
            if let Some(bytes) =
                conda.rewrite(opts, spill, edits, &mut inner_changes, &mut changed)?
            {
                new[i] = Some(bytes);
            }
            continue;
        }
        if (edits.remove)(&path) {
            removed[i] = true;
            removed_names.insert(mname);
            changed.push(Changed {
                path,
                size_before: size,
                size_after: 0,
                removed: true,
            });
            continue;
        }
        let place = crate::zipinfo::MemberPlace::of(&file);
        if let Some((b, before)) =
            transform(&path, &mname, Some(size), &mut file, opts, spill, edits)
                .map_err(|e| crate::zipinfo::in_member(e, &path, &place))?
        {
            changed.push(Changed {
                path: path.clone(),
                size_before: before,
                size_after: b.len() as u64,
                removed: false,
            });
            new[i] = Some(b);
        }
    }
    let new_record = match record_idx {
        Some(ri) => new_record(name, &mut archive, ri, &new, &removed_names)?,
        None => None,
    };
    write_zip(
        name,
        &mut archive,
        &new,
        &removed,
        record_idx,
        new_record,
        out,
    )?;
    Ok(changed)
}

/// One `pkg-*.tar.zst` or `info-*.tar.zst` member of a `.conda` (member `index` of
/// `archive`, over the package's bytes `data`).
struct CondaTarball<'z, 'd> {
    archive: &'z Zip<'d>,
    data: &'d [u8],
    index: usize,
    path: &'z str,
    /// Whether it is the `info-*` tarball (rewritten after the `pkg-*` one, for its
    /// `info/paths.json`).
    info: bool,
}

impl CondaTarball<'_, '_> {
    /// The tarball rewritten with `edits` (`None` when nothing in it changed): the `pkg-*`
    /// one adds its members' changes to `inner_changes`, which the `info-*` one records in its
    /// `info/paths.json`; the members changed go to `changed`.
    fn rewrite(
        &self,
        opts: &Options,
        spill: &dyn Spill,
        edits: &Edits<'_>,
        inner_changes: &mut Vec<PathsChange>,
        changed: &mut Vec<Changed>,
    ) -> Result<Option<Bytes>> {
        let (i, path, data) = (self.index, self.path, self.data);
        let stored = self
            .archive
            .clone()
            .by_index_raw(i)
            .map(|f| f.compression() == zip::CompressionMethod::Stored)
            .unwrap_or(false);
        if !stored {
            return Err(Error::new(
                path,
                ErrorKind::CannotRewrite("a .conda tarball member that is not stored".into()),
            ));
        }
        let open = || -> io::Result<Box<dyn Read + '_>> {
            let mut a = self.archive.clone();
            // The .tar.zst members of a .conda are stored; read the raw bytes lazily.
            let file = a.by_index(i).map_err(io::Error::other)?;
            let start = file.data_start();
            let len = file.compressed_size();
            drop(file);
            let s = usize::try_from(start).map_err(io::Error::other)?;
            let e = usize::try_from(start.saturating_add(len)).map_err(io::Error::other)?;
            let raw = data
                .get(s..e)
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            Compression::Zstd.decoder(raw)
        };
        let temp = |e: io::Error| Error::new(path, ErrorKind::Io(format!("temporary file: {e}")));
        let mut w = spill.create().map_err(temp)?;
        let mut got = Vec::new();
        let mut hashes = Vec::new();
        let paths_json = if self.info {
            inner_changes.clone()
        } else {
            Vec::new()
        };
        let wrote = rewrite_tar(
            path,
            &open,
            opts,
            spill,
            edits,
            &paths_json,
            Some(Compression::Zstd),
            &mut w,
            &mut got,
            &mut hashes,
        )?;
        let bytes = Bytes::Spilled(w.finish().map_err(temp)?);
        if !wrote {
            return Ok(None);
        }
        if !self.info {
            inner_changes.extend(hashes);
        }
        changed.extend(
            got.into_iter()
                .filter(|c| !c.path.ends_with("!info/paths.json")),
        );
        Ok(Some(bytes))
    }
}

/// The zip archive a rewrite reads.
type Zip<'d> = zip::ZipArchive<Cursor<&'d [u8]>>;

/// The wheel's `RECORD` (member `ri` of `archive`, named `name`) with the rows of the members
/// replaced (`new`) updated and those of the members left out (`removed`, by name) gone;
/// `None` when no member was either.
fn new_record(
    name: &str,
    archive: &mut Zip<'_>,
    ri: usize,
    new: &[Option<Bytes>],
    removed: &std::collections::HashSet<String>,
) -> Result<Option<Vec<u8>>> {
    let name_of = |i: usize| archive.name_for_index(i).unwrap_or("").to_owned();
    let rows: Vec<(String, String, u64)> = (0..archive.len())
        .filter_map(|i| {
            new[i]
                .as_ref()
                .map(|b| (name_of(i), record::hash_field(b), b.len() as u64))
        })
        .collect();
    if rows.is_empty() && removed.is_empty() {
        return Ok(None);
    }
    let rpath = format!("{name}!{}", name_of(ri));
    let mut text = String::new();
    archive
        .by_index(ri)
        .map_err(|e| zip_err(&rpath, e))?
        .read_to_string(&mut text)
        .map_err(|e| Error::from_read(&rpath, &e))?;
    let (updated, missing) = record::update(&text, &rows, removed);
    if let Some(m) = missing.first() {
        return Err(Error::new(
            &rpath,
            ErrorKind::CannotRewrite(format!("RECORD has no row for {m}")),
        ));
    }
    Ok(Some(updated.into_bytes()))
}

/// Writes `archive` (named `name`) to `out` with the members that have new bytes (`new`, and
/// `new_record` for the `RECORD` member `record_idx`) compressed again, those `removed` left
/// out, and every other member copied raw.
fn write_zip(
    name: &str,
    archive: &mut Zip<'_>,
    new: &[Option<Bytes>],
    removed: &[bool],
    record_idx: Option<usize>,
    new_record: Option<Vec<u8>>,
    out: &mut dyn WriteSeek,
) -> Result<()> {
    let mut w = zip::ZipWriter::new(out);
    let werr = |e: zip::result::ZipError| Error::new(name, ErrorKind::Io(format!("writing: {e}")));
    for (i, new_bytes) in new.iter().enumerate() {
        if removed[i] {
            continue;
        }
        let replacement: Option<&[u8]> = if Some(i) == record_idx {
            new_record.as_deref()
        } else {
            new_bytes.as_deref()
        };
        match replacement {
            None => {
                let file = archive.by_index_raw(i).map_err(|e| zip_err(name, e))?;
                w.raw_copy_file(file).map_err(werr)?;
            }
            Some(bytes) => {
                let file = archive.by_index_raw(i).map_err(|e| zip_err(name, e))?;
                let method = match file.compression() {
                    zip::CompressionMethod::Stored => zip::CompressionMethod::Stored,
                    _ => zip::CompressionMethod::Deflated,
                };
                let mut o = zip::write::SimpleFileOptions::default()
                    .compression_method(method)
                    .large_file(bytes.len() as u64 >= u32::MAX as u64);
                if let Some(t) = file.last_modified() {
                    o = o.last_modified_time(t);
                }
                if let Some(m) = file.unix_mode() {
                    o = o.unix_permissions(m);
                }
                let fname = file.name().to_owned();
                drop(file);
                w.start_file(fname, o).map_err(werr)?;
                w.write_all(bytes)
                    .map_err(|e| Error::new(name, ErrorKind::Io(format!("writing: {e}"))))?;
            }
        }
    }
    w.set_raw_comment(archive.comment().to_vec().into_boxed_slice());
    w.finish().map_err(werr)?;
    Ok(())
}

/// The compressing writer of codec `c` for a stream of exactly `len` bytes.
fn encoder<'w>(
    c: Option<Compression>,
    w: &'w mut dyn Write,
    len: u64,
) -> io::Result<Box<dyn Finish + 'w>> {
    Ok(match c {
        None => Box::new(Plain(w)),
        Some(Compression::Gzip) => Box::new(flate2::write::GzEncoder::new(
            w,
            flate2::Compression::default(),
        )),
        Some(Compression::Xz) => Box::new(liblzma::write::XzEncoder::new(w, 6)),
        Some(Compression::Bzip2) => {
            Box::new(bzip2::write::BzEncoder::new(w, bzip2::Compression::best()))
        }
        Some(Compression::Zstd) => {
            let mut e = zstd::stream::write::Encoder::new(w, 10)?;
            // Told the size, zstd sizes its tables to the data (without it, level 10 clears
            // tens of MiB of tables for any stream) and uses no workers for a small one; the
            // frame records the size. Writing another number of bytes is an error at the end.
            e.set_pledged_src_size(Some(len))?;
            let threads = u32::try_from(rayon::current_num_threads()).unwrap_or(1);
            if threads > 1 {
                e.multithread(threads)?;
            }
            Box::new(e)
        }
    })
}

/// A compressing writer that must be finished.
trait Finish: Write {
    fn done(self: Box<Self>) -> io::Result<()>;
}
struct Plain<'w>(&'w mut dyn Write);
impl Write for Plain<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
impl Finish for Plain<'_> {
    fn done(self: Box<Self>) -> io::Result<()> {
        Ok(())
    }
}
impl<W: Write> Finish for flate2::write::GzEncoder<W> {
    fn done(self: Box<Self>) -> io::Result<()> {
        self.finish().map(drop)
    }
}
impl<W: Write> Finish for liblzma::write::XzEncoder<W> {
    fn done(self: Box<Self>) -> io::Result<()> {
        self.finish().map(drop)
    }
}
impl<W: Write> Finish for bzip2::write::BzEncoder<W> {
    fn done(self: Box<Self>) -> io::Result<()> {
        self.finish().map(drop)
    }
}
impl<W: Write> Finish for zstd::stream::write::Encoder<'_, W> {
    fn done(self: Box<Self>) -> io::Result<()> {
        self.finish().map(drop)
    }
}

/// One raw tar entry as read: its header block, the logical name, and its index.
fn entry_name(pending: &mut Option<String>, header: &tar::Header) -> String {
    pending
        .take()
        .unwrap_or_else(|| String::from_utf8_lossy(&header.path_bytes()).into_owned())
}

fn pax_path(data: &[u8]) -> Option<String> {
    // Records are "<len> <key>=<value>\n".
    let mut rest = data;
    let mut found = None;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&b| b == b' ')?;
        let len: usize = std::str::from_utf8(&rest[..sp]).ok()?.parse().ok()?;
        let rec = rest.get(..len)?;
        let kv = rec.get(sp + 1..len.checked_sub(1)?)?;
        if let Some(v) = kv.strip_prefix(b"path=") {
            found = Some(String::from_utf8_lossy(v).into_owned());
        }
        rest = &rest[len..];
    }
    found
}

fn clean(name: &str) -> String {
    let mut n = name;
    while let Some(r) = n.strip_prefix("./") {
        n = r;
    }
    n.to_owned()
}

/// Rewrites a tarball read from `open()` (called twice: once to rewrite members, once to
/// write) into `out`, compressed with `compression`. `paths_json` holds the changes of
/// members changed elsewhere (a `.conda`'s pkg tarball) for this tarball's
/// `info/paths.json`; `hashes` gets those of the members replaced or left out here. Returns
/// `false`, having written nothing, when there is nothing to change.
#[allow(clippy::too_many_arguments)]
fn rewrite_tar<'d>(
    chain: &str,
    open: &dyn Fn() -> io::Result<Box<dyn Read + 'd>>,
    opts: &Options,
    spill: &dyn Spill,
    edits: &Edits<'_>,
    paths_json: &[PathsChange],
    compression: Option<Compression>,
    out: &mut dyn Write,
    changed: &mut Vec<Changed>,
    hashes: &mut Vec<PathsChange>,
) -> Result<bool> {
    let rd = |e: io::Error| Error::from_read(chain, &e);
    // Pass 1: the new bytes of each rewritten entry, by entry index, and the entries left
    // out (with the long-name and pax headers that precede them).
    let mut new: std::collections::HashMap<usize, (Bytes, String)> = Default::default();
    let mut removed: std::collections::HashSet<usize> = Default::default();
    let mut local_changes: Vec<PathsChange> = paths_json.to_vec();
    let mut paths_json_at = None;
    // The data size of every raw entry, by index: with the replacements, the exact length of
    // the tarball written (a compressor told it sizes its tables to it).
    let mut sizes = Vec::new();
    {
        let mut archive = tar::Archive::new(open().map_err(rd)?);
        let mut pending = None;
        let mut headers = Vec::new();
        for (i, entry) in archive.entries().map_err(rd)?.raw(true).enumerate() {
            let mut entry = entry.map_err(rd)?;
            sizes.push(entry.size());
            let kind = entry.header().entry_type();
            if kind == tar::EntryType::GNULongName || kind == tar::EntryType::XHeader {
                headers.push(i);
                let mut d = Vec::new();
                (&mut entry).take(1 << 20).read_to_end(&mut d).map_err(rd)?;
                pending = if kind == tar::EntryType::GNULongName {
                    Some(
                        String::from_utf8_lossy(d.split(|&b| b == 0).next().unwrap_or(&d))
                            .into_owned(),
                    )
                } else {
                    pax_path(&d).or(pending)
                };
                continue;
            }
            let name = clean(&entry_name(&mut pending, entry.header()));
            let headers = std::mem::take(&mut headers);
            let is_file = kind.is_file() || kind == tar::EntryType::Continuous;
            if !is_file && !kind.is_dir() {
                continue;
            }
            if name == "info/paths.json" {
                paths_json_at = Some(i);
                continue;
            }
            let path = format!("{chain}!{name}");
            if (edits.remove)(path.trim_end_matches('/')) {
                removed.extend(headers);
                removed.insert(i);
                if is_file {
                    local_changes.push((name.clone(), None));
                    hashes.push((name, None));
                    changed.push(Changed {
                        path,
                        size_before: entry.size(),
                        size_after: 0,
                        removed: true,
                    });
                }
                continue;
            }
            if !is_file {
                continue;
            }
            let size = entry.size();
            if let Some((b, before)) =
                transform(&path, &name, Some(size), &mut entry, opts, spill, edits)?
            {
                let hex = record::sha256_hex(&b);
                let now = Some((hex, b.len() as u64));
                local_changes.push((name.clone(), now.clone()));
                hashes.push((name.clone(), now));
                changed.push(Changed {
                    path,
                    size_before: before,
                    size_after: b.len() as u64,
                    removed: false,
                });
                new.insert(i, (b, name));
            }
        }
    }
    // info/paths.json, when this tarball has one and something changed.
    let mut new_paths_json: Option<Vec<u8>> = None;
    if let (Some(at), false) = (paths_json_at, local_changes.is_empty()) {
        new_paths_json = Some(updated_paths_json(chain, open, at, &local_changes)?);
    }
    // Nothing to change: nothing is written (the caller keeps the original bytes).
    if new.is_empty() && removed.is_empty() && new_paths_json.is_none() {
        return Ok(false);
    }
    // Pass 2: copy every entry, replacing the rewritten ones.
    let plan = TarPlan {
        new: &new,
        removed: &removed,
        paths_json: paths_json_at.zip(new_paths_json.as_deref()),
        sizes: &sizes,
    };
    plan.write(chain, open, compression, out)?;
    Ok(true)
}

/// What [`rewrite_tar`] writes: each entry (by index) replaced, left out or copied.
struct TarPlan<'a> {
    /// The new bytes of the entries rewritten.
    new: &'a std::collections::HashMap<usize, (Bytes, String)>,
    /// The entries left out.
    removed: &'a std::collections::HashSet<usize>,
    /// The `info/paths.json` entry and its new bytes.
    paths_json: Option<(usize, &'a [u8])>,
    /// The data size of every entry as read.
    sizes: &'a [u64],
}

impl TarPlan<'_> {
    /// The new bytes of entry `i`, if it is replaced.
    fn replacement(&self, i: usize) -> Option<&[u8]> {
        match self.paths_json {
            Some((at, bytes)) if at == i => Some(bytes),
            _ => self.new.get(&i).map(|(b, _)| &b[..]),
        }
    }

    /// Writes the tarball read from `open()` (named `chain`) to `out`, compressed with
    /// `compression`: every entry copied header for header, the replaced ones with their new
    /// size, those left out not at all.
    fn write<'d>(
        &self,
        chain: &str,
        open: &dyn Fn() -> io::Result<Box<dyn Read + 'd>>,
        compression: Option<Compression>,
        out: &mut dyn Write,
    ) -> Result<()> {
        let rd = |e: io::Error| Error::from_read(chain, &e);
        let werr = |e: io::Error| Error::new(chain, ErrorKind::Io(format!("writing: {e}")));
        let padded = |n: u64| n.div_ceil(512).saturating_mul(512);
        // The exact length of the tarball written (a compressor told it sizes its tables to it).
        let tar_len = self
            .sizes
            .iter()
            .enumerate()
            .fold(1024u64, |len, (i, &size)| {
                if self.removed.contains(&i) {
                    return len;
                }
                let data = self.replacement(i).map_or(size, |b| b.len() as u64);
                len.saturating_add(512).saturating_add(padded(data))
            });
        let mut enc = encoder(compression, out, tar_len).map_err(werr)?;
        let mut archive = tar::Archive::new(open().map_err(rd)?);
        for (i, entry) in archive.entries().map_err(rd)?.raw(true).enumerate() {
            let mut entry = entry.map_err(rd)?;
            if self.removed.contains(&i) {
                continue;
            }
            let mut header = entry.header().clone();
            match self.replacement(i) {
                Some(bytes) => {
                    header.set_size(bytes.len() as u64);
                    header.set_cksum();
                    enc.write_all(header.as_bytes()).map_err(werr)?;
                    enc.write_all(bytes).map_err(werr)?;
                    pad(&mut *enc, bytes.len() as u64).map_err(werr)?;
                }
                None => {
                    enc.write_all(header.as_bytes()).map_err(werr)?;
                    let n = io::copy(&mut entry, &mut *enc).map_err(rd)?;
                    if Some(&n) != self.sizes.get(i) {
                        return Err(Error::new(
                            chain,
                            ErrorKind::Truncated(format!("tar entry {i} ({n} bytes of its data)")),
                        ));
                    }
                    pad(&mut *enc, n).map_err(werr)?;
                }
            }
        }
        enc.write_all(&[0u8; 1024]).map_err(werr)?;
        enc.done().map_err(werr)
    }
}

/// The conda tarball's `info/paths.json` (its entry `at`; the tarball read anew with `open`)
/// with the hash and size of each changed file updated and the entry of each file left out
/// removed.
fn updated_paths_json<'d>(
    chain: &str,
    open: &dyn Fn() -> io::Result<Box<dyn Read + 'd>>,
    at: usize,
    changes: &[PathsChange],
) -> Result<Vec<u8>> {
    let rd = |e: io::Error| Error::from_read(chain, &e);
    let mut archive = tar::Archive::new(open().map_err(rd)?);
    let mut entry = archive
        .entries()
        .map_err(rd)?
        .raw(true)
        .nth(at)
        .ok_or_else(|| Error::new(chain, ErrorKind::Truncated("info/paths.json".into())))?
        .map_err(rd)?;
    let mut text = Vec::new();
    (&mut entry)
        .take(256 << 20)
        .read_to_end(&mut text)
        .map_err(rd)?;
    let pj = format!("{chain}!info/paths.json");
    let mut json: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| Error::new(&pj, ErrorKind::Corrupt(format!("JSON: {e}"))))?;
    let items = json
        .get_mut("paths")
        .and_then(|p| p.as_array_mut())
        .ok_or_else(|| Error::new(&pj, ErrorKind::Corrupt("no \"paths\" array".into())))?;
    crate::record::update_conda_paths(items, changes)
        .map_err(|why| Error::new(&pj, ErrorKind::CannotRewrite(why)))?;
    let mut s = serde_json::to_vec_pretty(&json)
        .map_err(|e| Error::new(&pj, ErrorKind::Io(e.to_string())))?;
    if text.ends_with(b"\n") {
        s.push(b'\n');
    }
    Ok(s)
}

fn write_err(name: &str, e: &io::Error) -> Error {
    Error::new(name, ErrorKind::Io(format!("writing: {e}")))
}

fn pad(w: &mut dyn Write, n: u64) -> io::Result<()> {
    let r = (512 - n % 512) % 512;
    w.write_all(&[0u8; 512][..r as usize])
}

/// Checks a wheel's `*.dist-info/RECORD` entry by entry: every row with a hash names a member
/// whose SHA-256 and size match it, and every member but `RECORD` itself (and signature
/// files) has a row. A zip without a `RECORD` passes.
pub fn check_record(name: &str, data: &[u8]) -> Result<()> {
    let mut archive = open_zip(name, data)?;
    let Some(ri) = (0..archive.len()).find(|&i| {
        archive
            .name_for_index(i)
            .is_some_and(|n| n.ends_with(".dist-info/RECORD") && n.matches('/').count() == 1)
    }) else {
        return Ok(());
    };
    let rname = archive.name_for_index(ri).unwrap_or("").to_owned();
    let rpath = format!("{name}!{rname}");
    let mut text = String::new();
    archive
        .by_index(ri)
        .map_err(|e| zip_err(&rpath, e))?
        .read_to_string(&mut text)
        .map_err(|e| Error::from_read(&rpath, &e))?;
    let mut rows = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let f = record::split_row(line);
        if f.len() != 3 {
            return Err(Error::new(
                &rpath,
                ErrorKind::Corrupt(format!("row {line:?}")),
            ));
        }
        rows.insert(f[0].clone(), (f[1].clone(), f[2].clone()));
    }
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).map_err(|e| zip_err(name, e))?;
        let mname = file.name().to_owned();
        if file.is_dir()
            || mname == rname
            || mname.ends_with(".dist-info/RECORD.jws")
            || mname.ends_with(".dist-info/RECORD.p7s")
        {
            continue;
        }
        let path = format!("{name}!{mname}");
        let (hash, size) = rows
            .get(&mname)
            .ok_or_else(|| Error::new(&rpath, ErrorKind::Corrupt(format!("no row for {mname}"))))?;
        if hash.is_empty() {
            continue;
        }
        let mut h = <sha2::Sha256 as sha2::Digest>::new();
        let mut n = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let k = file
                .read(&mut buf)
                .map_err(|e| Error::from_read(&path, &e))?;
            if k == 0 {
                break;
            }
            sha2::Digest::update(&mut h, &buf[..k]);
            n += k as u64;
        }
        let digest = sha2::Digest::finalize(h);
        use base64::Engine;
        let got = format!(
            "sha256={}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
        );
        if &got != hash || size.parse::<u64>().ok() != Some(n) {
            return Err(Error::new(
                &path,
                ErrorKind::Checksum(format!(
                    "RECORD says {hash},{size}; the member is {got},{n}"
                )),
            ));
        }
    }
    Ok(())
}
