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

/// Writes `bytes` to `path` atomically, copied from `source` inside the kernel where it says
/// where a file holds them ([`gfxkit_io::write::write_atomic_copy`]).
pub fn write_atomic_copy(
    path: &Path,
    bytes: &[u8],
    source: Option<gfxkit_io::FileRange<'_>>,
) -> Result<()> {
    Ok(gfxkit_io::write::write_atomic_copy(path, bytes, source)?)
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

/// A spinner on stderr with `msg` and the time elapsed (hidden when stderr is not a
/// terminal), ticking on its own: for one long step of a command.
pub fn spinner(msg: String) -> indicatif::ProgressBar {
    spinner_since(msg, std::time::Duration::ZERO)
}

/// [`spinner`] for a step that started `elapsed` ago. The message is cut to the terminal's
/// width, so that a long path never wraps the line.
fn spinner_since(msg: String, elapsed: std::time::Duration) -> indicatif::ProgressBar {
    let pb =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr())
            .with_elapsed(elapsed);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} ({elapsed}) {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    pb.set_message(msg);
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

/// How long reading inputs goes on before [`Reading`] shows what it reads, unless
/// [`READING_DELAY_ENV`] says otherwise.
pub const READING_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// The environment variable that sets [`READING_DELAY`] in milliseconds (`0`: at once).
pub const READING_DELAY_ENV: &str = "GFXKIT_PROGRESS_DELAY_MS";

fn reading_delay() -> std::time::Duration {
    std::env::var(READING_DELAY_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map_or(READING_DELAY, std::time::Duration::from_millis)
}

/// Progress of reading inputs, on a terminal (stderr), nothing when stderr is not one or
/// when `quiet`: for a scan of several files a bar counting them, with the path being read;
/// otherwise, once reading has taken [`READING_DELAY`] ([`READING_DELAY_ENV`]), a spinner
/// naming the file or package
/// member being read (`reading p.deb!data.tar.xz!usr/lib/x.so`). The one progress display of
/// every command that reads files (handed to `gfxkit_io`'s walks as their
/// [`gfxkit_io::scan::Progress`], and [`crate::input::open`]); cleared by [`Reading::finish`]
/// or when dropped.
pub struct Reading {
    shown: Option<std::sync::Arc<Shown>>,
    timer: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    bar: std::sync::OnceLock<indicatif::ProgressBar>,
}

/// What a visible [`Reading`] shares with its timer thread.
struct Shown {
    state: std::sync::Mutex<ReadingState>,
    wake: std::sync::Condvar,
}

#[derive(Default)]
struct ReadingState {
    /// The last path whose reading started.
    path: String,
    /// Over: the timer shows nothing more.
    done: bool,
    /// The spinner, once shown.
    spinner: Option<indicatif::ProgressBar>,
}

impl Reading {
    /// Starts timing the reading (nothing is shown before [`READING_DELAY`]).
    pub fn new(quiet: bool) -> Reading {
        use std::io::IsTerminal;
        let idle = Reading {
            shown: None,
            timer: std::sync::Mutex::new(None),
            bar: std::sync::OnceLock::new(),
        };
        if quiet || !std::io::stderr().is_terminal() {
            return idle;
        }
        let shown = std::sync::Arc::new(Shown {
            state: std::sync::Mutex::new(ReadingState::default()),
            wake: std::sync::Condvar::new(),
        });
        let delay = reading_delay();
        if delay.is_zero() {
            shown
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .spinner = Some(spinner(String::from("reading")));
            return Reading {
                shown: Some(shown),
                timer: std::sync::Mutex::new(None),
                bar: std::sync::OnceLock::new(),
            };
        }
        let s = shown.clone();
        let started = std::time::Instant::now();
        let timer = std::thread::spawn(move || {
            let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
            while !st.done && started.elapsed() < delay {
                let left = delay.saturating_sub(started.elapsed());
                st = match s.wake.wait_timeout(st, left) {
                    Ok((g, _)) => g,
                    Err(e) => e.into_inner().0,
                };
            }
            if !st.done {
                let pb = spinner_since(reading_text(&st.path), started.elapsed());
                st.spinner = Some(pb);
            }
        });
        Reading {
            shown: Some(shown),
            timer: std::sync::Mutex::new(Some(timer)),
            bar: std::sync::OnceLock::new(),
        }
    }

    /// Clears what is shown; nothing more is shown after.
    pub fn finish(&self) {
        let Some(s) = &self.shown else {
            return;
        };
        let spinner = {
            let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
            st.done = true;
            st.spinner.take()
        };
        s.wake.notify_all();
        if let Some(t) = self.timer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
        // The timer may have shown the spinner before it saw `done`.
        let late = s
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spinner
            .take();
        for pb in spinner.into_iter().chain(late) {
            pb.finish_and_clear();
        }
        if let Some(b) = self.bar.get() {
            b.finish_and_clear();
        }
    }
}

/// `reading FILE` for a file, `reading MEMBER in PACKAGE` for a package member (the
/// innermost member's path first, the package's directory left out:
/// `reading usr/lib/x.so in p.deb`), so that a terminal line cut to its width keeps the
/// member's name.
fn reading_text(path: &str) -> String {
    let base = |f: &str| {
        Path::new(f)
            .file_name()
            .map_or_else(|| f.to_owned(), |n| n.to_string_lossy().into_owned())
    };
    match (path.split_once('!'), path.rsplit_once('!')) {
        (Some((file, _)), Some((_, member))) => format!("reading {member} in {}", base(file)),
        _ => format!("reading {}", base(path)),
    }
}

impl gfxkit_io::scan::Progress for Reading {
    fn start(&self, total: u64) {
        let Some(s) = &self.shown else {
            return;
        };
        if total < 2 {
            return;
        }
        // Several files: a bar counting them, in place of the spinner.
        s.state.lock().unwrap_or_else(|e| e.into_inner()).done = true;
        s.wake.notify_all();
        let pb = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "scanning [{bar:30}] {pos}/{len} {elapsed} {wide_msg}",
        ) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb.enable_steady_tick(std::time::Duration::from_millis(250));
        let _ = self.bar.set(pb);
    }
    fn reading(&self, path: &str) {
        let Some(s) = &self.shown else {
            return;
        };
        if let Some(b) = self.bar.get() {
            b.set_message(reading_text(path));
            return;
        }
        let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
        path.clone_into(&mut st.path);
        if let Some(pb) = &st.spinner {
            pb.set_message(reading_text(path));
        }
    }
    fn advance(&self) {
        if let Some(b) = self.bar.get() {
            b.inc(1);
        }
    }
    fn finish(&self) {
        Reading::finish(self);
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Standard output buffered, for a command that prints many lines (`list -r` of a tree
/// prints thousands: one `write` each otherwise), beside a standard error that writes what is
/// buffered first, so that the two keep their order where they meet (a terminal, `2>&1`).
/// [`Streams::out`] and [`Streams::err`] are the two writers; [`Streams::finish`] writes the
/// rest.
pub struct Streams {
    out: std::cell::RefCell<std::io::BufWriter<std::io::StdoutLock<'static>>>,
}

/// The standard output of a [`Streams`].
pub struct StreamOut<'s>(&'s Streams);

/// The standard error of a [`Streams`].
pub struct StreamErr<'s>(&'s Streams);

impl Streams {
    /// Buffers standard output (locked until [`Streams::finish`]).
    pub fn new() -> Streams {
        Streams {
            out: std::cell::RefCell::new(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout().lock(),
            )),
        }
    }

    /// The writer of standard output.
    pub fn out(&self) -> StreamOut<'_> {
        StreamOut(self)
    }

    /// The writer of standard error.
    pub fn err(&self) -> StreamErr<'_> {
        StreamErr(self)
    }

    /// Writes what is buffered.
    pub fn finish(self) -> std::io::Result<()> {
        self.out.into_inner().flush()
    }
}

impl Default for Streams {
    fn default() -> Streams {
        Streams::new()
    }
}

impl Write for StreamOut<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.out.borrow_mut().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.out.borrow_mut().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.out.borrow_mut().flush()
    }
}

impl Write for StreamErr<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.out.borrow_mut().flush()?;
        std::io::stderr().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.out.borrow_mut().flush()?;
        std::io::stderr().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Prints `value` as pretty JSON on stdout followed by a newline, written as it is
/// serialized: a listing of a million kernels is never held as one string beside its rows.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    write_json(std::io::stdout().lock(), value)?;
    Ok(())
}

/// `value` as pretty JSON and a newline into `out`, through a buffer. A failed write is
/// returned as the plain `std::io::Error` it was (serde_json wraps it), so that
/// `report_error` still knows a broken pipe.
fn write_json<W: Write, T: serde::Serialize>(out: W, value: &T) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut out, value).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
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

pub use gfxkit_text::group::shortened;

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes `left` bytes and then fails as a closed pipe does.
    struct ClosesAfter {
        left: usize,
        took: Vec<u8>,
    }

    impl Write for ClosesAfter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.left == 0 {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            let n = buf.len().min(self.left);
            self.left -= n;
            self.took.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn rows(n: usize) -> serde_json::Value {
        serde_json::json!({
            "kernels": (0..n).map(|i| serde_json::json!({"name": format!("k{i}"), "vgpr_count": i}))
                .collect::<Vec<_>>(),
            "errors": [],
        })
    }

    /// What is written streamed is the pretty JSON of the whole value and a newline.
    #[test]
    fn json_written_as_it_is_serialized_is_the_whole_document() {
        let value = rows(20_000);
        let mut out = ClosesAfter {
            left: usize::MAX,
            took: Vec::new(),
        };
        write_json(&mut out, &value).unwrap();
        let mut want = serde_json::to_string_pretty(&value).unwrap();
        want.push('\n');
        assert!(out.took.len() > 1 << 16, "more than one buffer written");
        assert_eq!(String::from_utf8(out.took).unwrap(), want);
    }

    /// A reader that goes away (`gfxkit kernels --json | head`) is a broken pipe to
    /// `report_error`, which ends quietly, not an error inside serde_json.
    #[test]
    fn a_closed_pipe_under_json_ends_quietly() {
        let mut out = ClosesAfter {
            left: 100_000,
            took: Vec::new(),
        };
        let e = write_json(&mut out, &rows(20_000)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(out.took.len(), 100_000);
        assert_eq!(report_error(&anyhow::Error::from(e)), ExitCode::SUCCESS);
    }
}
