//! Output helpers: atomic file writes, JSON printing, progress bars, error reporting.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Writes `bytes` to `path` atomically: into a temporary file in the same directory, flushed to
/// disk, then renamed over `path`. An interrupted or failed write leaves `path` as it was. A
/// file being replaced keeps its permissions; a new file gets those a plain create gives
/// (0666 less the umask), not the private mode of the temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes).map_err(Into::into))
}

/// Like [`write_atomic`], with the content produced by `fill` writing into the temporary file.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    write_atomic_checked(path, fill, |_| Ok(()), None)
}

/// The general atomic write: `fill` writes the temporary file, which is synced to disk; then
/// `check` runs on it (to read it back and verify it before anything is replaced); only then
/// is it renamed over `path`. On any failure the temporary file is removed and `path` is
/// untouched. A file being replaced keeps its permissions; a new file takes those of
/// `permissions_like` when given (a pruned executable stays executable), else 0666 less the
/// umask.
pub fn write_atomic_checked(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
    check: impl FnOnce(&Path) -> Result<()>,
    permissions_like: Option<&Path>,
) -> Result<()> {
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
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        fill(&mut w).with_context(|| format!("cannot write {}", path.display()))?;
        w.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot write {}", path.display()))?;
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
    Ok(())
}

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
    let pid = std::str::from_utf8(&rest[..dot]).ok()?.parse().ok()?;
    let rest = &rest[dot + 1..];
    if rest.len() <= TEMP_RANDOM || rest[TEMP_RANDOM] != b'.' {
        return None;
    }
    Some((pid, &rest[TEMP_RANDOM + 1..]))
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
}
