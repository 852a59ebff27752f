//! Output helpers: atomic file writes, JSON printing, error reporting.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Writes `bytes` to `path` atomically: into a temporary file in the same directory, flushed to
/// disk, then renamed over `path`. An interrupted or failed write leaves `path` as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes).map_err(Into::into))
}

/// Like [`write_atomic`], with the content produced by `fill` writing into the temporary file.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
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
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot write {}", path.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        // Keep the permissions of a file being replaced (executables stay executable).
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
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
