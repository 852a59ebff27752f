//! Reading input files: memory-mapped, read-only, in one place.

use crate::guard::Guard;
use crate::{Error, ErrorKind, Settings};
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Told how a scan, or the reading of one input, advances (the CLI draws a progress bar or
/// a spinner; `()` ignores it).
pub trait Progress: Sync {
    /// Reading `path` starts: an input file, or a package member (`package!member`, also
    /// those skipped after their first bytes). Called from the threads that read, in
    /// parallel for a scan or the members of a zip.
    fn reading(&self, path: &str) {
        let _ = path;
    }
    /// The scan has `total` files to look at.
    fn start(&self, total: u64) {
        let _ = total;
    }
    /// One more file is done.
    fn advance(&self) {}
    /// The scan is over.
    fn finish(&self) {}
}

impl Progress for () {}

/// The bytes of an input file, memory-mapped when large ([`READ_BELOW`]), or of one member of a package
/// (`pkg.whl!lib/x.so`: in memory when small, else in a mapped temporary file).
pub struct Input {
    path: PathBuf,
    data: Data,
    layer: Option<String>,
}

enum Data {
    /// A mapped file (shared with the [`Watch`] of its reading).
    Mapped(Arc<Mapped>),
    Owned(Vec<u8>),
    Member(gfxkit_package::Bytes),
}

/// A mapped input file.
struct Mapped {
    /// The mapping's registration against the file being cut short while it is read;
    /// dropped (unregistered) before the map is unmapped.
    guard: Guard,
    map: memmap2::Mmap,
    /// The file, kept open for copies that stay in the kernel ([`Input::file_range`]) and to
    /// be asked again whether it changed ([`Input::unchanged`]).
    file: File,
    /// Its size and modification time when it was mapped.
    len: u64,
    modified: Option<std::time::SystemTime>,
}

/// What tells, once the reading of an input is done, whether its file changed under it
/// ([`Input::watch`]).
pub(crate) struct Watch(Option<Arc<Mapped>>);

impl Watch {
    /// Whether the file of the input stayed as it was mapped: not cut short under a read of
    /// its mapping, nor of another size or modification time now. The error names `path`.
    pub(crate) fn check(&self, path: &Path) -> Result<(), Error> {
        let Some(m) = &self.0 else {
            return Ok(());
        };
        let faulted = m.guard.faulted();
        let now = m
            .file
            .metadata()
            .map_err(|e| Error::new(path, ErrorKind::Stat(e)))?;
        if faulted || now.len() != m.len || now.modified().ok() != m.modified {
            return Err(Error::new(
                path,
                ErrorKind::Changed {
                    opened: m.len,
                    now: now.len(),
                    faulted,
                },
            ));
        }
        Ok(())
    }
}

/// Regular files of at least this many bytes are mapped ([`Input::open`]); smaller ones are
/// read.
pub const READ_BELOW: u64 = 256 * 1024;

/// Maps `file` read-only; the one place gfxkit maps a file it did not write itself.
fn map(file: &File, len: u64) -> std::io::Result<memmap2::Mmap> {
    let len = usize::try_from(len)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "file too large"))?;
    // SAFETY: the map is read-only and private to this process. gfxkit never writes to its
    // inputs while they are mapped: in-place rewrites go to a new file that is then renamed
    // over the input, which leaves the mapped inode unchanged. (Another process truncating
    // the file while it is mapped would make reads fault; that is the documented limit of
    // reading files by mapping them, as every tool that maps its inputs has.)
    #[allow(unsafe_code)]
    unsafe {
        // The length `fstat` gave the caller, not asked for again.
        memmap2::MmapOptions::new().len(len).map(file)
    }
}

/// The bytes of the regular file `file`, open at its start, which `fstat` said holds `len`:
/// read in one call where the file still holds them, fewer if it has shrunk since. (A
/// `File`'s `read_to_end` would ask the kernel again for the size and the position, and read
/// a small file in several calls.)
fn read_known(file: &File, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let len = usize::try_from(len)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "file too large"))?;
    let mut buf = vec![0u8; len];
    let mut n = 0;
    while n < len {
        match (&mut &*file).read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(n);
    Ok(buf)
}

/// The bytes of a pipe or FIFO, open for reading: in memory up to [`READ_BELOW`], beyond it
/// written to an unnamed temporary file and mapped as a large package member is
/// ([`TempSpill`]), so that a stream of any length is read in bounded memory.
fn read_stream(file: &File) -> std::io::Result<Data> {
    use gfxkit_package::Spill;
    use std::io::{Read, Write};
    let mut head = Vec::new();
    (&mut &*file).take(READ_BELOW).read_to_end(&mut head)?;
    if (head.len() as u64) < READ_BELOW {
        return Ok(Data::Owned(head));
    }
    let mut w = TempSpill.create()?;
    w.write_all(&head)?;
    drop(head);
    std::io::copy(&mut &*file, &mut w)?;
    Ok(Data::Member(gfxkit_package::Bytes::Spilled(w.finish()?)))
}

/// Opens `path` for reading. On Linux without waiting for a writer: a FIFO nobody writes to
/// (a stray one named in a list of inputs) then reads as empty instead of blocking for ever.
/// The file's reads are blocking again once it is open, whatever it is: `O_NONBLOCK` is for the
/// open alone (what it would mean for a regular file's reads is left to the file system, and a
/// FUSE one such as CernVM-FS sees it).
fn open_for_reading(path: &Path) -> std::io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(OFlags::NONBLOCK.bits() as i32)
            .open(path)?;
        fcntl_setfl(&file, fcntl_getfl(&file)? - OFlags::NONBLOCK)?;
        Ok(file)
    }
    #[cfg(not(target_os = "linux"))]
    {
        File::open(path)
    }
}

/// The bytes of a device (`/dev/null`, which `clang-offload-bundler -input=/dev/null` names
/// for an empty host entry), open for reading: at most [`READ_BELOW`] of them, a device that
/// gives more refused (`/dev/zero` would be read for ever).
fn read_device(path: &Path, file: &File, t: std::fs::FileType) -> Result<Data, Error> {
    use std::io::Read;
    let mut bytes = Vec::new();
    (&mut &*file)
        .take(READ_BELOW + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::new(path, ErrorKind::Read(e)))?;
    if bytes.len() as u64 > READ_BELOW {
        return Err(Error::new(path, ErrorKind::LongDevice(special_kind(t))));
    }
    Ok(Data::Owned(bytes))
}

/// What a file that is neither a regular file, a directory nor a FIFO is, for the error
/// that refuses it.
fn special_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

impl Input {
    /// Opens and maps `path`. Files under [`READ_BELOW`] bytes are read instead (one read
    /// costs less than a map, its page faults and its unmapping, which interrupts every core
    /// the process runs on, as a directory of thousands of small files shows); pipes and
    /// FIFOs (`<(cmd)`, `/dev/stdin` from a pipe) are read as streams, in memory up to
    /// [`READ_BELOW`] and through an unnamed temporary file beyond. A device is read only as
    /// far as [`READ_BELOW`] (`/dev/null` reads as empty; `/dev/zero` is refused:
    /// [`ErrorKind::LongDevice`]). A path `pkg!member` (nested:
    /// `pkg!a.tar.zst!lib/x.so`) that is not itself a file opens that member of the package
    /// `pkg` when it may hold device code.
    pub fn open(path: &Path) -> Result<Input, Error> {
        Input::open_with(path, &(), &Settings::default())
    }

    /// [`Input::open`], telling `progress` which package member is being read while a
    /// `pkg!member` path is looked for in its package ([`Progress::reading`]), the package
    /// walked under `settings` (the platform of a container image).
    pub fn open_with(
        path: &Path,
        progress: &dyn Progress,
        settings: &Settings,
    ) -> Result<Input, Error> {
        // A path that does not open as a file may name a package member; looked for only
        // then, which spares every file of a tree a second lookup of its path.
        let file = match open_for_reading(path) {
            Ok(file) => file,
            Err(e) => {
                if !path.exists() {
                    if let Some(member) = open_member(path, progress, settings)? {
                        return Ok(member);
                    }
                }
                return Err(Error::new(path, ErrorKind::Open(e)));
            }
        };
        Input::from_file(path, file)
    }

    /// The input of `file`, open at its start, read from `path`: mapped or read as
    /// [`Input::open`] does.
    pub(crate) fn from_file(path: &Path, file: File) -> Result<Input, Error> {
        let meta = file
            .metadata()
            .map_err(|e| Error::new(path, ErrorKind::Stat(e)))?;
        let data = if meta.is_file() && meta.len() >= READ_BELOW {
            let map = map(&file, meta.len()).map_err(|e| Error::new(path, ErrorKind::Map(e)))?;
            Data::Mapped(Arc::new(Mapped {
                guard: Guard::watch(map.as_ptr(), map.len()),
                map,
                file,
                len: meta.len(),
                modified: meta.modified().ok(),
            }))
        } else if meta.is_dir() {
            return Err(Error::new(path, ErrorKind::IsDirectory));
        } else if meta.is_file() {
            Data::Owned(
                read_known(&file, meta.len()).map_err(|e| Error::new(path, ErrorKind::Read(e)))?,
            )
        } else if std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()) {
            read_stream(&file).map_err(|e| Error::new(path, ErrorKind::Read(e)))?
        } else {
            read_device(path, &file, meta.file_type())?
        };
        Ok(Input {
            path: path.to_owned(),
            data,
            layer: None,
        })
    }

    /// Bytes that are already in memory, under the name `path` (for callers that hold a
    /// file's contents, such as a Python `bytearray`).
    pub fn from_vec(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Input {
        Input {
            path: path.into(),
            data: Data::Owned(bytes),
            layer: None,
        }
    }

    /// The path the input was opened from (`pkg!member` for a package member).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where `bytes` lie in the file this input maps, when they are a slice of it (an entry
    /// stored uncompressed, borrowed from the input): the open file and the offset, so that
    /// a writer can copy them file to file inside the kernel
    /// ([`crate::write::write_atomic_copy`]). `None` for bytes elsewhere (decoded, or of an
    /// input held in memory or read from a package).
    pub fn file_range(&self, bytes: &[u8]) -> Option<FileRange<'_>> {
        let Data::Mapped(m) = &self.data else {
            return None;
        };
        let (map, file) = (&m.map, &m.file);
        let start = (bytes.as_ptr() as usize).checked_sub(map.as_ptr() as usize)?;
        let end = start.checked_add(bytes.len())?;
        (end <= map.len()).then_some(FileRange {
            file,
            offset: start as u64,
        })
    }

    /// Whether the file this input maps stayed as it was when it was opened: not cut short
    /// under a read of its mapping (which reads zeros instead of ending the process:
    /// [`crate::guard`]), nor of another size or modification time now. Asked once the
    /// reading is done, before its result is used; an input read into memory (small files,
    /// package members, pipes) always is. The error ([`ErrorKind::Changed`]) names the input.
    pub fn unchanged(&self) -> Result<(), Error> {
        self.watch().check(&self.path)
    }

    /// What asks [`Input::unchanged`] after the input itself is gone (it was handed to a
    /// function that consumed it).
    pub(crate) fn watch(&self) -> Watch {
        match &self.data {
            Data::Mapped(m) => Watch(Some(Arc::clone(m))),
            _ => Watch(None),
        }
    }

    /// For a file of a container image (`IMAGE!/usr/lib/x.so`): the digest of the layer
    /// that holds it.
    pub fn layer(&self) -> Option<&str> {
        self.layer.as_deref()
    }
}

/// A place in an open file: the bytes of a slice of an [`Input`] as the file holds them
/// ([`Input::file_range`]).
#[derive(Debug, Clone, Copy)]
pub struct FileRange<'a> {
    /// The file.
    pub file: &'a File,
    /// The offset of the slice's first byte in the file.
    pub offset: u64,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("path", &self.path)
            .field("len", &self.len())
            .field("mapped", &matches!(self.data, Data::Mapped(_)))
            .finish()
    }
}

impl Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Mapped(m) => &m.map,
            Data::Owned(v) => v,
            Data::Member(b) => b,
        }
    }
}

/// Large package members go to unnamed temporary files (in `TMPDIR`), mapped once written.
#[derive(Debug, Default, Clone, Copy)]
pub struct TempSpill;

struct TempWriter(std::io::BufWriter<File>);

impl std::io::Write for TempWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl gfxkit_package::SpillWriter for TempWriter {
    fn finish(self: Box<Self>) -> std::io::Result<Box<dyn Deref<Target = [u8]> + Send + Sync>> {
        let file = self.0.into_inner().map_err(|e| e.into_error())?;
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(Box::new(Vec::new()));
        }
        // The file is unnamed (no other process can open it), written to completion above
        // and never written again: `map`'s argument holds.
        Ok(Box::new(map(&file, len)?))
    }
}

impl gfxkit_package::Spill for TempSpill {
    fn create(&self) -> std::io::Result<Box<dyn gfxkit_package::SpillWriter>> {
        let f = tempfile::tempfile()?;
        Ok(Box::new(TempWriter(std::io::BufWriter::with_capacity(
            1 << 20,
            f,
        ))))
    }
}

/// Whether `data` starts like a package (wheel/zip, conda, deb, rpm, tarball).
pub fn is_package(data: &[u8]) -> bool {
    let prefix = data
        .get(..gfxkit_package::detect::PREFIX_LEN)
        .unwrap_or(data);
    gfxkit_package::detect(prefix).is_some()
}

/// Whether `path` is a directory holding a container image layout: an OCI image layout
/// (`oci-layout` and `index.json`) or an unpacked `docker save` archive (`manifest.json`
/// listing layers). Such a directory is one input, read as the image's file system.
pub fn is_image_dir(path: &Path) -> bool {
    use gfxkit_package::image;
    if !path.is_dir() {
        return false;
    }
    if image::is_oci_layout(&|n| path.join(n).is_file()) {
        return true;
    }
    let manifest = path.join("manifest.json");
    manifest.is_file() && std::fs::read(&manifest).is_ok_and(|b| image::is_docker_manifest(&b))
}

/// The files of an image layout directory, each mapped when asked for.
struct DirLayout<'a> {
    root: &'a Path,
}

impl gfxkit_package::image::Layout for DirLayout<'_> {
    fn file(&self, path: &str) -> gfxkit_package::Result<Option<gfxkit_package::image::Blob<'_>>> {
        // `path` is relative without `..` (checked by the image reader).
        let p = self.root.join(path);
        if !p.is_file() {
            return Ok(None);
        }
        match Input::open(&p) {
            Ok(input) => Ok(Some(gfxkit_package::image::Blob::Owned(Box::new(input)))),
            Err(e) => Err(gfxkit_package::Error::new(
                p.display().to_string(),
                gfxkit_package::ErrorKind::Io(format!(
                    "{e}: {}",
                    std::error::Error::source(&e)
                        .map(|s| s.to_string())
                        .unwrap_or_default()
                )),
            )),
        }
    }
}

/// A package in which no member may hold device code: commands report it as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoDeviceCode;

impl std::fmt::Display for NoDeviceCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no device code in this package")
    }
}

impl std::error::Error for NoDeviceCode {}

/// Why [`for_each`] has no value for one input.
#[derive(Debug)]
pub enum Failed<E> {
    /// The function returned this error.
    Visit(E),
    /// The package member (or the rest of its stream) is damaged.
    Package(gfxkit_package::Error),
    /// The input is a package without any member that may hold device code (reported under
    /// the package's own path).
    NoDeviceCode,
}

/// The package file of a path `pkg!member` (nested: `pkg!a.tar.zst!lib/x.so`): the shortest
/// prefix before a `!` that is a file, when `path` itself does not exist. `None` for a path
/// that exists or names no package file. This is how every command tells a member path from
/// a missing file, before it opens the member with [`Input::open`] or [`for_each`].
pub fn member_package(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    // A path without a `!` names no member (and is not looked up).
    if !s.contains('!') || path.exists() {
        return None;
    }
    s.match_indices('!')
        .map(|(i, _)| &s[..i])
        .find(|p| Path::new(p).is_file() || is_image_dir(Path::new(p)))
}

/// Opens `pkg!member` (nested: `pkg!a.tar.zst!lib/x.so`) when `pkg` is a package file and the
/// member may hold device code. `None` when no prefix of `path` before a `!` is a file.
fn open_member(
    path: &Path,
    progress: &dyn Progress,
    settings: &Settings,
) -> Result<Option<Input>, Error> {
    let Some(pkg) = member_package(path) else {
        return Ok(None);
    };
    if let Some(found) = open_image_member(Path::new(pkg), path, progress, settings)? {
        return Ok(found);
    }
    let found = for_each_with(Path::new(pkg), progress, settings, |input| {
        Ok::<_, std::convert::Infallible>((input.path() == path).then_some(input))
    })?;
    for (p, r) in found {
        match r {
            Ok(Some(input)) => return Ok(Some(input)),
            Ok(None) | Err(Failed::NoDeviceCode) => {}
            Err(Failed::Package(e)) => return Err(Error::new(p, ErrorKind::Member(e))),
            Err(Failed::Visit(never)) => match never {},
        }
    }
    Err(Error::new(
        path,
        ErrorKind::NoSuchMember {
            package: pkg.to_owned(),
        },
    ))
}

/// Opens the file `path` (`IMAGE!/usr/lib/x.so`) of the container image `pkg` (an image
/// archive or layout directory), following symbolic links as the image's file system does.
/// `None` when `pkg` is not an image.
fn open_image_member(
    pkg: &Path,
    path: &Path,
    progress: &dyn Progress,
    settings: &Settings,
) -> Result<Option<Option<Input>>, Error> {
    use gfxkit_package::image;
    let name = pkg.display().to_string();
    let member = path.display().to_string();
    let opts = settings.package_options();
    let reading = |p: &str| progress.reading(p);
    let found = if is_image_dir(pkg) {
        image::open_member(
            &name,
            &DirLayout { root: pkg },
            &opts,
            &TempSpill,
            &member,
            &reading,
        )
    } else {
        let input = Input::open(pkg)?;
        let layout = image::TarLayout::index(&name, &input);
        if !is_package(&input) || !layout.is_image() {
            return Ok(None);
        }
        image::open_member(&name, &layout, &opts, &TempSpill, &member, &reading)
    };
    match found {
        Ok(Some(f)) => Ok(Some(Some(Input {
            path: path.to_owned(),
            data: Data::Member(f.bytes),
            layer: f.layer,
        }))),
        Ok(None) => Err(Error::new(
            path,
            ErrorKind::NoSuchMember {
                package: name.clone(),
            },
        )),
        Err(e) => Err(Error::new(pkg, ErrorKind::Package(e))),
    }
}

/// Runs `f` on an input: a file once, or for a package on every member that may hold device
/// code (named `package!member`, nested archives chained with `!`), one member in memory or
/// mapped at a time per thread. A package without such members gives one
/// [`Failed::NoDeviceCode`] under the package's own path. The outer error is that of opening
/// the input, or of a package that cannot be walked at all.
#[allow(clippy::type_complexity)]
pub fn for_each<T, E, F>(path: &Path, f: F) -> Result<Vec<(PathBuf, Result<T, Failed<E>>)>, Error>
where
    T: Send,
    E: Send,
    F: Fn(Input) -> Result<T, E> + Sync,
{
    for_each_with(path, &(), &Settings::default(), f)
}

/// [`for_each`], telling `progress` what is being read: the input's path as it starts, then
/// each package member's (`package!member`) as its reading starts ([`Progress::reading`]);
/// packages are walked under `settings`.
#[allow(clippy::type_complexity)]
pub fn for_each_with<T, E, F>(
    path: &Path,
    progress: &dyn Progress,
    settings: &Settings,
    f: F,
) -> Result<Vec<(PathBuf, Result<T, Failed<E>>)>, Error>
where
    T: Send,
    E: Send,
    F: Fn(Input) -> Result<T, E> + Sync,
{
    progress.reading(&path.display().to_string());
    if is_image_dir(path) {
        return image_dir_with(path, progress, settings, f);
    }
    let input = Input::open_with(path, progress, settings)?;
    for_each_of(path, input, progress, settings, f)
}

/// [`for_each_with`] of the input opened from `path`, a file (not an image layout directory)
/// whose reading [`Progress::reading`] was told of.
#[allow(clippy::type_complexity)]
pub(crate) fn for_each_of<T, E, F>(
    path: &Path,
    input: Input,
    progress: &dyn Progress,
    settings: &Settings,
    f: F,
) -> Result<Vec<(PathBuf, Result<T, Failed<E>>)>, Error>
where
    T: Send,
    E: Send,
    F: Fn(Input) -> Result<T, E> + Sync,
{
    // What was read of a file that changed under the reading is thrown away: the input is
    // an error.
    if !is_package(&input) {
        let watch = input.watch();
        let r = f(input).map_err(Failed::Visit);
        watch.check(path)?;
        return Ok(vec![(path.to_owned(), r)]);
    }
    let out = members_with(path, &input, progress, settings, f);
    input.unchanged()?;
    out
}

/// [`for_each_with`] for an image layout directory.
#[allow(clippy::type_complexity)]
fn image_dir_with<T, E, F>(
    path: &Path,
    progress: &dyn Progress,
    settings: &Settings,
    f: F,
) -> Result<Vec<(PathBuf, Result<T, Failed<E>>)>, Error>
where
    T: Send,
    E: Send,
    F: Fn(Input) -> Result<T, E> + Sync,
{
    let name = path.display().to_string();
    let walked = gfxkit_package::image::walk_layout(
        &name,
        &DirLayout { root: path },
        &settings.package_options(),
        &TempSpill,
        &|m| f(member_input(m)),
        &|p| progress.reading(p),
    )
    .map_err(|e| Error::new(path, ErrorKind::Package(e)))?;
    Ok(collect_walk(path, walked))
}

fn member_input(m: gfxkit_package::Member<'_>) -> Input {
    Input {
        path: PathBuf::from(m.path),
        data: Data::Member(m.bytes),
        layer: m.layer.map(str::to_owned),
    }
}

#[allow(clippy::type_complexity)]
fn collect_walk<T, E>(
    path: &Path,
    walked: gfxkit_package::Walk<Result<T, E>>,
) -> Vec<(PathBuf, Result<T, Failed<E>>)> {
    let mut out = Vec::new();
    for r in walked {
        match r {
            Ok(v) => out.push((PathBuf::from(v.path), v.value.map_err(Failed::Visit))),
            Err(e) => out.push((PathBuf::from(&e.path), Err(Failed::Package(e)))),
        }
    }
    if out.is_empty() {
        out.push((path.to_owned(), Err(Failed::NoDeviceCode)));
    }
    out
}

/// Runs `f` on every member of the package `data` (named `path`) that may hold device code,
/// as [`for_each`] does for a package file; for bytes already in memory.
#[allow(clippy::type_complexity)]
pub fn members<T, E, F>(
    path: &Path,
    data: &[u8],
    f: F,
) -> Result<Vec<(PathBuf, Result<T, Failed<E>>)>, Error>
where
    T: Send,
    E: Send,
    F: Fn(Input) -> Result<T, E> + Sync,
{
    members_with(path, data, &(), &Settings::default(), f)
}

/// [`members`], telling `progress` each member's path as its reading starts, the package
/// walked under `settings`.
#[allow(clippy::type_complexity)]
pub fn members_with<T, E, F>(
    path: &Path,
    data: &[u8],
    progress: &dyn Progress,
    settings: &Settings,
    f: F,
) -> Result<Vec<(PathBuf, Result<T, Failed<E>>)>, Error>
where
    T: Send,
    E: Send,
    F: Fn(Input) -> Result<T, E> + Sync,
{
    let name = path.display().to_string();
    let walked = gfxkit_package::walk_watched(
        &name,
        data,
        &settings.package_options(),
        &TempSpill,
        &|m| f(member_input(m)),
        &|p| progress.reading(p),
    )
    .map_err(|e| Error::new(path, ErrorKind::Package(e)))?;
    Ok(collect_walk(path, walked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_cut_short_or_rewritten_while_it_is_read_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lib.so");
        let len = 4 * READ_BELOW as usize;
        std::fs::write(&p, vec![0x5au8; len]).unwrap();
        let cut = |to: u64| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .unwrap()
                .set_len(to)
                .unwrap()
        };
        // Cut short as another process's `cp` over it would, between the open and the read.
        let input = Input::open(&p).unwrap();
        assert!(input.unchanged().is_ok());
        cut(READ_BELOW);
        let read = input.iter().filter(|&&b| b == 0x5a).count();
        assert_eq!(read, READ_BELOW as usize, "what is gone reads as zeros");
        let e = input.unchanged().unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Changed { faulted: true, .. }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{} was cut short while it was read (1048576 bytes when opened, 262144 now): \
                 another process wrote to it; read it again",
                p.display()
            )
        );
        drop(input);
        // Cut short inside a page: nothing faults, the size tells.
        std::fs::write(&p, vec![0x5au8; len]).unwrap();
        let input = Input::open(&p).unwrap();
        cut(len as u64 - 100);
        assert!(input[..len - 100].iter().all(|&b| b == 0x5a));
        let e = input.unchanged().unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Changed { faulted: false, now, .. } if *now == len as u64 - 100),
            "{e}"
        );
        drop(input);
        // Rewritten in place to the same size: the modification time tells.
        std::fs::write(&p, vec![0x5au8; len]).unwrap();
        let input = Input::open(&p).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        let e = input.unchanged().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{} changed while it was read (modified since it was opened): another process \
                 wrote to it; read it again",
                p.display()
            )
        );
        drop(input);
        // Through `for_each`: the visit's result is thrown away, the input is the error.
        std::fs::write(&p, vec![0x5au8; len]).unwrap();
        let e = for_each(&p, |i| {
            cut(0);
            Ok::<_, ()>(i.iter().map(|&b| b as u64).sum::<u64>())
        })
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Changed { faulted: true, .. }),
            "{e}"
        );
        // A file left alone reads as it is.
        std::fs::write(&p, vec![0x5au8; len]).unwrap();
        let r = for_each(&p, |i| Ok::<_, ()>(i.len())).unwrap();
        assert!(matches!(r[0].1, Ok(n) if n == len));
    }

    #[test]
    fn files_are_mapped_or_read_and_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.bin");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(&*Input::open(&p).unwrap(), b"abc");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(Input::open(&empty).unwrap().is_empty());
        let missing = dir.path().join("missing");
        let e = Input::open(&missing).err().unwrap();
        assert_eq!(e.to_string(), format!("cannot open {}", missing.display()));
        assert_eq!(
            e.io_error().map(|e| e.kind()),
            Some(std::io::ErrorKind::NotFound)
        );
        let e = Input::open(dir.path()).err().unwrap();
        assert!(matches!(e.kind(), ErrorKind::IsDirectory), "{e}");
        let plain = for_each(&p, |i| Ok::<_, ()>(i.len())).unwrap();
        assert_eq!(plain.len(), 1);
        assert!(matches!(plain[0].1, Ok(3)));
    }

    /// `Input::open` of `path` on a thread of its own, given ten seconds (a FIFO read
    /// wrongly would block the test for ever).
    #[cfg(target_os = "linux")]
    fn open_within_seconds(path: &Path) -> Result<Input, Error> {
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.to_owned();
        std::thread::spawn(move || tx.send(Input::open(&p)).unwrap());
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("opening the input did not return")
    }

    /// `/dev/null` reads as empty (`clang-offload-bundler -input=/dev/null`); a device that
    /// gives more than `READ_BELOW` is refused, saying what it is (`/dev/zero` would be read
    /// for ever); a FIFO nobody writes to reads as empty (not a wait for ever); a FIFO's
    /// stream is read whole, through a temporary file when longer than `READ_BELOW`.
    #[cfg(target_os = "linux")]
    #[test]
    fn devices_are_read_short_and_fifos_as_streams() {
        assert!(open_within_seconds(Path::new("/dev/null"))
            .unwrap()
            .is_empty());
        let e = open_within_seconds(Path::new("/dev/zero")).err().unwrap();
        assert!(
            matches!(e.kind(), ErrorKind::LongDevice("a character device")),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "/dev/zero is a character device that gives more than 256 KiB: gfxkit reads files, \
             pipes and FIFOs, and devices only as short as /dev/null"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert!(open_within_seconds(&fifo).unwrap().is_empty());
        for len in [1000, READ_BELOW as usize, READ_BELOW as usize * 4 + 17] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let (f, b) = (fifo.clone(), bytes.clone());
            // The writer's open waits for a reader. A reader that found no writer yet and
            // is closing leaves the writer a broken pipe: it writes again to the next one.
            let writer = std::thread::spawn(move || loop {
                let mut w = std::fs::OpenOptions::new().write(true).open(&f)?;
                match std::io::Write::write_all(&mut w, &b) {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => continue,
                    done => return done,
                }
            });
            let mut input = None;
            for _ in 0..1000 {
                // Opened before the writer, it would read as empty: wait until it is there.
                let got = open_within_seconds(&fifo).unwrap();
                if !got.is_empty() {
                    input = Some(got);
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            writer.join().unwrap().unwrap();
            assert!(
                input.is_some_and(|i| *i == bytes[..]),
                "a stream of {len} bytes"
            );
        }
    }
}
