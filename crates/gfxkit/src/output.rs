//! Output helpers: atomic file writes (through `gfxkit_io::write`, with the errors as the
//! command's error chain), JSON printing, progress bars, error reporting.

use anyhow::Result;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

pub use gfxkit_io::write::Durability;

/// Writes `bytes` to `path` atomically ([`gfxkit_io::write::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(gfxkit_io::write::write_atomic(path, bytes)?)
}

/// Like [`write_atomic`], with the content produced by `fill` writing into the temporary file.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    write_atomic_checked(path, fill, |_| Ok(()), None, Durability::Rename)
}

/// The general atomic write ([`gfxkit_io::write::write_atomic_checked`]): `fill` writes the
/// temporary file, `check` verifies it, then it is renamed over `path`; on any failure `path`
/// is untouched. A failure of `fill` reads `cannot write PATH`, caused by its error.
pub fn write_atomic_checked(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
    check: impl FnOnce(&Path) -> Result<()>,
    permissions_like: Option<&Path>,
    durability: Durability,
) -> Result<()> {
    use gfxkit_io::WriteError;
    gfxkit_io::write::write_atomic_checked(path, fill, check, permissions_like, durability).map_err(
        |e| match e {
            WriteError::Io(e) => anyhow::Error::new(e),
            WriteError::Fill { path, error } => {
                error.context(format!("cannot write {}", path.display()))
            }
            WriteError::Check(e) => e,
        },
    )
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
