//! Output helpers: atomic file writes, JSON printing, progress bars, error reporting.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

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

/// Writes `bytes` to `path` atomically: into a temporary file in the same directory, then
/// renamed over `path` (not synced to disk: see [`Durability`]). An interrupted or failed write
/// leaves `path` as it was. A file being replaced keeps its permissions; a new file gets those
/// a plain create gives (0666 less the umask), not the private mode of the temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes).map_err(Into::into))
}

/// Like [`write_atomic`], with the content produced by `fill` writing into the temporary file.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    write_atomic_checked(path, fill, |_| Ok(()), None, Durability::Rename)
}

/// The general atomic write: `fill` writes the temporary file (synced to disk when
/// `durability` says so); then `check` runs on it (to read it back and verify it before
/// anything is replaced); only then is it renamed over `path`. On any failure the temporary
/// file is removed and `path` is untouched. A file being replaced keeps its permissions; a new
/// file takes those of `permissions_like` when given (a pruned executable stays executable),
/// else 0666 less the umask.
pub fn write_atomic_checked(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
    check: impl FnOnce(&Path) -> Result<()>,
    permissions_like: Option<&Path>,
    durability: Durability,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".gfxkit-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        fill(&mut w).with_context(|| format!("cannot write {}", path.display()))?;
        w.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if durability == Durability::Synced {
        tmp.as_file()
            .sync_all()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    check(tmp.path())?;
    let permissions = match std::fs::metadata(path)
        .or_else(|e| permissions_like.map_or(Err(e), std::fs::metadata))
    {
        // Keep the permissions of a file being replaced (executables stay executable).
        Ok(meta) => meta.permissions(),
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o666 & !umask())
        }
    };
    std::fs::set_permissions(tmp.path(), permissions)
        .with_context(|| format!("cannot set the permissions of {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    if durability == Durability::Synced {
        // The rename itself reaches the disk with the directory.
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("cannot sync {}", dir.display()))?;
    }
    Ok(())
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

/// A progress bar over `len` steps on a terminal, labelled `what`; hidden when stderr is not
/// a terminal, when `quiet`, or for fewer than two steps.
pub fn progress(len: u64, what: &str, quiet: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if quiet || !std::io::stderr().is_terminal() || len < 2 {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what.to_owned());
    pb
}

/// Prints `value` as pretty JSON on stdout followed by a newline.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    // Serialize first: an I/O error inside serde_json would hide a broken pipe from
    // `report_error`, which must see the plain `std::io::Error`.
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// Prints an error with its cause chain to stderr and returns exit code 2. A broken pipe on
/// stdout (`gfxkit list | head`) ends quietly with code 0.
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    for cause in err.chain() {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
        }
    }
    let mut msg = format!("gfxkit: error: {err}");
    for cause in err.chain().skip(1) {
        msg.push_str(&format!("\n  caused by: {cause}"));
    }
    eprintln!("{msg}");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
        write_atomic_with(&exe, |w| w.write_all(b"new").map_err(Into::into)).unwrap();
        let mode = std::fs::metadata(&exe).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751);
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");

        // A failed fill leaves the old file and no temporary behind.
        let err = write_atomic_with(&exe, |_| Err(anyhow::anyhow!("stop")));
        assert!(err.is_err());
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
