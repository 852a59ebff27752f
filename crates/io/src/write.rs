//! Writing output files atomically: a temporary file in the target's directory, optionally
//! read back and checked, then renamed over the target (docs/durability.md).

use crate::input::FileRange;
use crate::{Error, ErrorKind};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether an atomic write waits for the data to reach the disk before it renames.
///
/// gfxkit's policy (docs/durability.md): every output is written to a temporary file beside
/// it and renamed into place, so a failed or interrupted command never leaves a half-written
/// output. Only the replacement of an input (`--in-place`) is also synced to disk, file and
/// directory, before and after the rename, since there a crash must not lose the only copy;
/// a fresh output is as durable as any file a compiler writes (the system flushes it soon).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Atomic rename only (fresh outputs).
    Rename,
    /// Synced to disk before the rename, directory synced after (in-place replacement).
    Synced,
}

/// Why an atomic write failed. In every case the target is as it was and the temporary file
/// is gone.
#[derive(Debug)]
pub enum WriteError<E> {
    /// A file operation failed (creating, writing, syncing or renaming the temporary file).
    Io(Error),
    /// The function filling the temporary file failed while writing `path`.
    Fill {
        /// The target being written.
        path: PathBuf,
        /// The function's error.
        error: E,
    },
    /// The check of the written temporary file failed.
    Check(E),
}

impl<E> From<Error> for WriteError<E> {
    fn from(e: Error) -> Self {
        WriteError::Io(e)
    }
}

/// Writes `bytes` to `path` atomically: into a temporary file in the same directory, then
/// renamed over `path` (not synced to disk: see [`Durability`]). An interrupted or failed write
/// leaves `path` as it was. A file being replaced keeps its permissions; a new file gets those
/// a plain create gives (0666 less the umask), not the private mode of the temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_atomic_with(path, |w| w.write_all(bytes)).map_err(|e| match e {
        WriteError::Io(e) => e,
        WriteError::Fill { path, error } => Error::new(path, ErrorKind::Write(error)),
        WriteError::Check(error) => Error::new(path, ErrorKind::Write(error)),
    })
}

/// Like [`write_atomic`], with the content produced by `fill` writing into the temporary file.
pub fn write_atomic_with<E>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), WriteError<E>> {
    write_atomic_checked(path, fill, |_| Ok(()), None, Durability::Rename)
}

/// The general atomic write: `fill` writes the temporary file (synced to disk when
/// `durability` says so); then `check` runs on it (to read it back and verify it before
/// anything is replaced); only then is it renamed over `path`. On any failure the temporary
/// file is removed and `path` is untouched. A symbolic link is written through (the file it
/// names is replaced); a path that is a device, FIFO or socket is written to directly, without
/// the check. A file being replaced keeps its permissions; a new file takes those of
/// `permissions_like` when given (a pruned executable stays executable), else 0666 less the
/// umask. Before writing, temporary files of `path` left by processes that are gone are
/// removed.
pub fn write_atomic_checked<E>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), E>,
    check: impl FnOnce(&Path) -> Result<(), E>,
    permissions_like: Option<&Path>,
    durability: Durability,
) -> Result<(), WriteError<E>> {
    let fill = |file: &mut File| {
        let mut w = std::io::BufWriter::with_capacity(WRITE_BUFFER, file);
        fill(&mut w).map_err(Filled::Fill)?;
        w.flush().map_err(Filled::Io)
    };
    write_file_checked(path, fill, check, permissions_like, durability)
}

/// Writes `bytes` to `path` atomically, as [`write_atomic`] does; when `source` says where a
/// file holds the same bytes ([`crate::Input::file_range`]: an entry stored uncompressed in
/// an input), they are copied from that file inside the kernel (`copy_file_range`: they never
/// pass through user space, and a file system that shares extents shares them), and written
/// from memory where the kernel does not copy (another file system on an old kernel, a device).
pub fn write_atomic_copy(
    path: &Path,
    bytes: &[u8],
    source: Option<FileRange<'_>>,
) -> Result<(), Error> {
    let fill = |file: &mut File| copy_or_write(file, bytes, source).map_err(Filled::Io);
    let check = |_: &Path| Ok::<(), std::convert::Infallible>(());
    write_file_checked(path, fill, check, None, Durability::Rename).map_err(|e| match e {
        WriteError::Io(e) => e,
        WriteError::Fill { error, .. } | WriteError::Check(error) => match error {},
    })
}

/// Copies `bytes` into `out`, from `source` inside the kernel as far as it copies, the rest
/// (or all, without a source) written from memory.
pub(crate) fn copy_or_write(
    out: &mut File,
    bytes: &[u8],
    source: Option<FileRange<'_>>,
) -> std::io::Result<()> {
    let mut done = 0;
    #[cfg(target_os = "linux")]
    if let Some(src) = source {
        let mut offset = src.offset;
        while done < bytes.len() {
            match rustix::fs::copy_file_range(
                src.file,
                Some(&mut offset),
                &*out,
                None,
                bytes.len() - done,
            ) {
                // The file ends early (it changed since it was mapped): the rest from memory.
                Ok(0) => break,
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => {}
                // Not supported between these files: the rest from memory.
                Err(_) => break,
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = source;
    out.write_all(&bytes[done..])
}

/// [`write_atomic_checked`] with `fill` writing to the temporary file itself, unbuffered (to
/// copy into it inside the kernel as well as write).
pub fn write_atomic_file_checked<E>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<(), E>,
    check: impl FnOnce(&Path) -> Result<(), E>,
    permissions_like: Option<&Path>,
    durability: Durability,
) -> Result<(), WriteError<E>> {
    let fill = |file: &mut File| fill(file).map_err(Filled::Fill);
    write_file_checked(path, fill, check, permissions_like, durability)
}

/// The buffer [`write_atomic_checked`] writes through.
pub(crate) const fn write_buffer() -> usize {
    WRITE_BUFFER
}

/// Why filling a temporary file failed: the filling function's own error, or the file's.
enum Filled<E> {
    Fill(E),
    Io(std::io::Error),
}

/// The atomic write over the temporary file itself: [`write_atomic_checked`] with `fill`
/// writing to the open file.
fn write_file_checked<E>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<(), Filled<E>>,
    check: impl FnOnce(&Path) -> Result<(), E>,
    permissions_like: Option<&Path>,
    durability: Durability,
) -> Result<(), WriteError<E>> {
    stage_file(path, fill, check, permissions_like, durability)?
        .commit()
        .map_err(WriteError::Io)
}

/// An output written to its temporary file (and checked) but not yet in place: [`Staged::commit`]
/// renames it over its target; dropping it removes the temporary file and leaves the target
/// as it was. Several outputs that must appear together are staged, then committed.
#[derive(Debug)]
pub struct Staged {
    /// The target (a symbolic link resolved to the file it names).
    path: PathBuf,
    /// The temporary file; `None` when the target is a device, FIFO or socket, written to
    /// directly.
    tmp: Option<tempfile::NamedTempFile>,
    /// The permissions the output gets.
    permissions: Option<std::fs::Permissions>,
    /// Whether the rename is synced to disk.
    durability: Durability,
}

impl Staged {
    /// Renames the temporary file over the target (with the permissions planned), synced
    /// when the write asked for it.
    pub fn commit(self) -> Result<(), Error> {
        let Staged {
            path,
            tmp,
            permissions,
            durability,
        } = self;
        let Some(tmp) = tmp else { return Ok(()) };
        let write_err = |e| Error::new(&path, ErrorKind::Write(e));
        if let Some(p) = permissions {
            std::fs::set_permissions(tmp.path(), p)
                .map_err(|e| Error::new(&path, ErrorKind::SetPermissions(e)))?;
        }
        tmp.persist(&path).map_err(|e| write_err(e.error))?;
        if durability == Durability::Synced {
            // The rename itself reaches the disk with the directory.
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| Error::new(dir, ErrorKind::SyncDirectory(e)))?;
        }
        Ok(())
    }
}

/// Writes `bytes` to a temporary file beside `path`, as [`write_atomic`] does, without
/// renaming it yet: the [`Staged`] output is put in place by [`Staged::commit`].
pub fn stage_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<Staged, Error> {
    stage_atomic(path, fill, None)
}

/// [`stage_atomic_with`] of an output that, when new, takes the permissions of `like` (as
/// [`write_atomic_checked`] gives them).
pub fn stage_atomic_like(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    like: &Path,
) -> Result<Staged, Error> {
    stage_atomic(path, fill, Some(like))
}

fn stage_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    like: Option<&Path>,
) -> Result<Staged, Error> {
    let fill = |file: &mut File| {
        let mut w = std::io::BufWriter::with_capacity(WRITE_BUFFER, file);
        fill(&mut w).map_err(Filled::Fill)?;
        w.flush().map_err(Filled::Io)
    };
    let check = |_: &Path| Ok(());
    stage_file(path, fill, check, like, Durability::Rename).map_err(|e| match e {
        WriteError::Io(e) => e,
        WriteError::Fill { path, error } => Error::new(path, ErrorKind::Write(error)),
        WriteError::Check(error) => Error::new(path, ErrorKind::Write(error)),
    })
}

/// The first half of [`write_file_checked`]: the temporary file filled, synced when asked,
/// checked, and its permissions planned.
fn stage_file<E>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<(), Filled<E>>,
    check: impl FnOnce(&Path) -> Result<(), E>,
    permissions_like: Option<&Path>,
    durability: Durability,
) -> Result<Staged, WriteError<E>> {
    let write_err = |e| Error::new(path, ErrorKind::Write(e));
    let fill_err = |filled| match filled {
        Filled::Fill(error) => WriteError::Fill {
            path: path.to_owned(),
            error,
        },
        Filled::Io(e) => WriteError::Io(write_err(e)),
    };
    // Through a symbolic link, replace the file it names, not the link.
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(p) => {
                resolved = p;
                resolved.as_path()
            }
            Err(_) => path,
        },
        _ => path,
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(Error::new(path, ErrorKind::WriteDirectory).into()),
        // A device, FIFO or socket (`-o /dev/null`, `-o /dev/stdout`) is written to, never
        // replaced by a renamed file; what was written cannot be read back to be checked.
        Ok(m) if !m.is_file() => {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(write_err)?;
            fill(&mut f).map_err(fill_err)?;
            return Ok(Staged {
                path: path.to_owned(),
                tmp: None,
                permissions: None,
                durability,
            });
        }
        _ => {}
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    remove_stale_temps(dir, path);
    let (prefix, suffix) = temp_affixes(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(TEMP_RANDOM)
        .suffix(&suffix)
        .tempfile_in(dir)
        .map_err(|e| Error::new(dir, ErrorKind::CreateTemp(e)))?;
    fill(tmp.as_file_mut()).map_err(fill_err)?;
    if durability == Durability::Synced {
        tmp.as_file().sync_all().map_err(write_err)?;
    }
    check(tmp.path()).map_err(WriteError::Check)?;
    Ok(Staged {
        path: path.to_owned(),
        tmp: Some(tmp),
        permissions: Some(planned_permissions(path, permissions_like)),
        durability,
    })
}

/// The permissions an output written to `path` gets: those of the file it replaces
/// (executables stay executable), else those of `like` when given, else 0666 less the umask.
fn planned_permissions(path: &Path, like: Option<&Path>) -> std::fs::Permissions {
    match std::fs::metadata(path).or_else(|e| like.map_or(Err(e), std::fs::metadata)) {
        Ok(meta) => meta.permissions(),
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o666 & !umask())
        }
    }
}

/// Renames `tmp`, a temporary file another writer filled beside `path` (pyarrow, for the
/// census's dataset), over `path` with the permissions gfxkit's own outputs get: those of the
/// file it replaces, else 0666 less the umask (a temporary file is made readable by its owner
/// alone).
pub fn publish(tmp: &Path, path: &Path) -> Result<(), Error> {
    std::fs::set_permissions(tmp, planned_permissions(path, None))
        .map_err(|e| Error::new(path, ErrorKind::SetPermissions(e)))?;
    std::fs::rename(tmp, path).map_err(|e| Error::new(path, ErrorKind::Write(e)))
}

/// The buffer between a writer's `fill` and the file. Small writes are gathered into it; a
/// write of at least this size goes straight to the file, without being copied into the
/// buffer first: the streaming decoders hand on 256 KiB chunks, which then reach the file in
/// one copy (the kernel's).
const WRITE_BUFFER: usize = 256 << 10;

/// Start of the name of every temporary file gfxkit writes: `.gfxkit-<pid>.<random>.<name>`
/// beside the file `<name>` it becomes. Directory scans skip such files ([`is_temp_name`]),
/// and the next write of `<name>` removes those whose process is gone (a run killed before
/// its rename).
pub const TEMP_PREFIX: &str = ".gfxkit-";

/// Random characters in a temporary file's name.
const TEMP_RANDOM: usize = 6;

/// Whether `name` is that of a gfxkit temporary file (see [`TEMP_PREFIX`]).
pub fn is_temp_name(name: &std::ffi::OsStr) -> bool {
    temp_parts(name).is_some()
}

/// The process ID and target name of a temporary file's name.
fn temp_parts(name: &std::ffi::OsStr) -> Option<(u32, &[u8])> {
    use std::os::unix::ffi::OsStrExt;
    let rest = name.as_bytes().strip_prefix(TEMP_PREFIX.as_bytes())?;
    let dot = rest.iter().position(|&b| b == b'.')?;
    let pid = std::str::from_utf8(rest.get(..dot)?).ok()?.parse().ok()?;
    let rest = rest.get(dot + 1..)?;
    if rest.get(TEMP_RANDOM) != Some(&b'.') {
        return None;
    }
    Some((pid, rest.get(TEMP_RANDOM + 1..)?))
}

/// Longest part of the target's name kept in a temporary file's name (names are limited to
/// 255 bytes).
const TEMP_NAME_MAX: usize = 200;

fn target_name(path: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    let name = path.file_name().map_or(&b""[..], |n| n.as_bytes());
    &name[..name.len().min(TEMP_NAME_MAX)]
}

/// Removes from `dir` the temporary files of `path` whose process is gone.
fn remove_stale_temps(dir: &Path, path: &Path) {
    // Without /proc nothing tells a live writer from a dead one: leave everything alone.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let name = target_name(path);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file_name = e.file_name();
        if let Some((pid, target)) = temp_parts(&file_name) {
            if target == name && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Prefix and suffix of a new temporary file's name for `path`.
fn temp_affixes(path: &Path) -> (String, std::ffi::OsString) {
    use std::os::unix::ffi::OsStrExt;
    let mut suffix = std::ffi::OsString::from(".");
    suffix.push(std::ffi::OsStr::from_bytes(target_name(path)));
    (format!("{TEMP_PREFIX}{}.", std::process::id()), suffix)
}

/// The process umask, read from `/proc/self/status` (0o022 when unavailable).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A file another writer made is published with the permissions of a new output, or of
    /// the file it replaces.
    #[test]
    fn published_files_get_the_permissions_of_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let (tmp, out) = (dir.path().join(".t"), dir.path().join("out"));
        std::fs::write(&tmp, b"one").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).unwrap();
        publish(&tmp, &out).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out), 0o666 & !umask());
        assert!(!tmp.exists());
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o604)).unwrap();
        std::fs::write(&tmp, b"two").unwrap();
        publish(&tmp, &out).unwrap();
        assert_eq!(
            (mode(&out), std::fs::read(&out).unwrap()),
            (0o604, b"two".to_vec())
        );
    }

    #[test]
    fn new_files_get_default_permissions_and_replaced_files_keep_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.bin");
        write_atomic(&new, b"one").unwrap();
        let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode,
            0o666 & !umask(),
            "a plain create's mode, not the temporary 0600"
        );
        assert_eq!(std::fs::read(&new).unwrap(), b"one");

        let exe = dir.path().join("tool");
        std::fs::write(&exe, b"old").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic_with(&exe, |w| w.write_all(b"new")).unwrap();
        let mode = std::fs::metadata(&exe).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751);
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");

        // A failed fill leaves the old file and no temporary behind.
        let err = write_atomic_with(&exe, |_| Err("stop"));
        assert!(err.is_err());
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn staged_outputs_replace_their_targets_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.kpack");
        let b = dir.path().join("b.kpack");
        std::fs::write(&a, b"old").unwrap();
        let temps = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| is_temp_name(&e.as_ref().unwrap().file_name()))
                .count()
        };
        // Staged and dropped: the targets as they were, no temporary file left.
        let sa = stage_atomic_with(&a, |w| w.write_all(b"new a")).unwrap();
        let sb = stage_atomic_with(&b, |w| w.write_all(b"new b")).unwrap();
        assert_eq!(temps(), 2);
        drop((sa, sb));
        assert_eq!(std::fs::read(&a).unwrap(), b"old");
        assert!(!b.exists());
        assert_eq!(temps(), 0);
        // A fill that fails leaves nothing either.
        let err = stage_atomic_with(&a, |_| Err(std::io::Error::other("no room"))).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Write(e) if e.to_string() == "no room"),
            "{err:?}"
        );
        assert_eq!(err.path(), a.as_path());
        assert_eq!(temps(), 0);
        // Committed: in place.
        let sa = stage_atomic_with(&a, |w| w.write_all(b"new a")).unwrap();
        let sb = stage_atomic_with(&b, |w| w.write_all(b"new b")).unwrap();
        sa.commit().unwrap();
        sb.commit().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"new a");
        assert_eq!(std::fs::read(&b).unwrap(), b"new b");
        assert_eq!(temps(), 0);
    }

    #[test]
    fn stale_temporary_files_of_the_target_are_removed_and_scans_skip_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lib = d.join("libx.so");
        std::fs::write(&lib, b"old").unwrap();
        // Left by a killed run (no such process), by a live one (this process), and by a
        // killed run writing another file.
        let dead = d.join(format!("{TEMP_PREFIX}4294967295.AbCdEf.libx.so"));
        let live = d.join(format!(
            "{TEMP_PREFIX}{}.AbCdEf.libx.so",
            std::process::id()
        ));
        let other = d.join(format!("{TEMP_PREFIX}4294967295.AbCdEf.liby.so"));
        for p in [&dead, &live, &other] {
            std::fs::write(p, b"partial").unwrap();
            assert!(is_temp_name(p.file_name().unwrap()), "{}", p.display());
        }
        for n in [
            "libx.so",
            ".gfxkit-",
            ".gfxkit-12.short",
            ".gfxkit-x.AbCdEf.libx.so",
        ] {
            assert!(!is_temp_name(std::ffi::OsStr::new(n)), "{n}");
        }
        let scanned: Vec<_> = crate::scan::collect(&[d.to_path_buf()])
            .unwrap()
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(scanned, std::slice::from_ref(&lib));
        write_atomic(&lib, b"new").unwrap();
        assert_eq!(std::fs::read(&lib).unwrap(), b"new");
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn devices_and_fifos_are_written_to_and_links_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());

        let target = dir.path().join("real.bin");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");

        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn a_slice_of_an_input_is_copied_from_its_file_and_equals_the_slice() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("input.bin");
        let content: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i * 7 + i / 4096) as u8)
            .collect();
        std::fs::write(&src, &content).unwrap();
        let input = crate::Input::open(&src).unwrap();
        // Slices at odd offsets and lengths, the whole file, an empty one.
        for (start, end) in [(4097, 2_000_001), (0, content.len()), (17, 17), (1, 2)] {
            let slice = &input[start..end];
            let range = input.file_range(slice).expect("a slice of the mapped file");
            assert_eq!(range.offset, start as u64);
            let out = dir.path().join(format!("out-{start}-{end}"));
            write_atomic_copy(&out, slice, Some(range)).unwrap();
            assert_eq!(std::fs::read(&out).unwrap(), &content[start..end]);
        }
        // Bytes from elsewhere have no place in the file, and are written from memory.
        let copy = input[10..20].to_vec();
        assert!(input.file_range(&copy).is_none());
        let out = dir.path().join("from-memory");
        write_atomic_copy(&out, &copy, None).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), &content[10..20]);
    }

    #[test]
    fn a_copy_from_a_file_that_became_shorter_is_completed_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("input.bin");
        std::fs::write(&src, vec![5u8; 100_000]).unwrap();
        let file = File::open(&src).unwrap();
        let held = vec![5u8; 100_000];
        // The file holds only the first 60,000 bytes now: the kernel copies those, the rest
        // comes from the bytes in memory.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&src)
            .unwrap()
            .set_len(60_000)
            .unwrap();
        let out = dir.path().join("out");
        let range = FileRange {
            file: &file,
            offset: 0,
        };
        write_atomic_copy(&out, &held, Some(range)).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), held);
        // Into a device the kernel may not copy: written from memory, nothing lost.
        write_atomic_copy(Path::new("/dev/null"), &held, Some(range)).unwrap();
    }
}
