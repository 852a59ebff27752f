//! Writing a rewritten host binary or bundle (`prune`, `recompress`): the bytes the shrink
//! library produced go to a temporary file, which is read back and verified against the
//! original before it replaces anything.

use crate::input::Input;
use crate::write::{
    copy_or_write, write_atomic_file_checked, write_buffer, Durability, WriteError,
};
use crate::{Error, ErrorKind};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes `rewritten` to `path` through a temporary file beside it, reads the temporary file
/// back and checks it with `check` (against the original: every kept entry, the layout;
/// [`crate::format::Format::verify_rewrite`]), then renames it over `path`. On any failure the temporary
/// file is removed and `path` is untouched. A new output takes the permissions of `like`.
/// When `original` is an [`Input`] mapping a file, the runs of bytes the rewrite keeps from it
/// are copied from that file inside the kernel.
pub fn write_verified(
    path: &Path,
    like: Option<&Path>,
    original: Original<'_>,
    rewritten: &gfxkit_shrink::Rewritten,
    durability: Durability,
    check: &dyn Fn(&[u8]) -> Result<(), gfxkit_shrink::Error>,
) -> Result<(), Error> {
    let mapped = match original {
        Original::Input(i) => Some(i),
        Original::Bytes(_) => None,
    };
    write_atomic_file_checked(
        path,
        |file| {
            write_output(file, &rewritten.output, mapped)
                .map_err(|e| Error::new(path, ErrorKind::Write(e)))
        },
        |tmp| {
            // Nothing replaces anything when the original changed while it was rewritten.
            if let Some(i) = mapped {
                i.unchanged()?;
            }
            let back = Input::open(tmp)?;
            if !rewritten.output.equals(&back) {
                return Err(Error::new(path, ErrorKind::TempDiffers));
            }
            check(&back).map_err(|e| Error::new(path, ErrorKind::Verify(e)))
        },
        like,
        durability,
    )
    .map_err(|e| match e {
        WriteError::Io(e) | WriteError::Fill { error: e, .. } | WriteError::Check(e) => e,
    })
}

/// Writes `output` to `file` (the temporary file of an atomic write) through a buffer, with the
/// long runs of bytes it borrows from `input` (when it maps a file) copied from that file inside
/// the kernel: the one way an [`gfxkit_shrink::Output`] reaches a file (`prune`, `recompress`,
/// `kpack inline`).
pub(crate) fn write_output(
    file: &mut File,
    output: &gfxkit_shrink::Output<'_>,
    input: Option<&Input>,
) -> std::io::Result<()> {
    let mut sink = CopySink {
        out: BufWriter::with_capacity(write_buffer(), file),
        input,
    };
    output.write_to_sink(&mut sink)?;
    sink.flush()
}

/// The file a rewrite was made from.
#[derive(Clone, Copy)]
pub enum Original<'a> {
    /// An opened input: what the rewrite keeps of a mapped file is copied from the file.
    Input(&'a Input),
    /// Bytes in memory.
    Bytes(&'a [u8]),
}

/// Runs at least this long that are slices of the input's file are copied inside the kernel;
/// shorter ones go through the buffer (a system call each would cost more than the copy).
const KERNEL_COPY_MIN: usize = 64 << 10;

/// Writes a rewrite to its temporary file: through a buffer, with the long runs of bytes it
/// keeps from a mapped input copied from that input's file inside the kernel.
struct CopySink<'a> {
    out: BufWriter<&'a mut File>,
    input: Option<&'a Input>,
}

impl Write for CopySink<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl gfxkit_shrink::output::Sink for CopySink<'_> {
    fn write_run(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let range = self.input.and_then(|i| i.file_range(bytes));
        match range {
            Some(range) if bytes.len() >= KERNEL_COPY_MIN => {
                self.out.flush()?;
                copy_or_write(self.out.get_mut(), bytes, Some(range))
            }
            _ => self.out.write_all(bytes),
        }
    }
}

/// How [`rewrite_file`] writes.
#[derive(Debug, Clone, Copy)]
pub struct RewriteOptions<'p> {
    /// Where the rewritten file goes (`None`: a dry run, the rewrite verified in memory).
    pub target: Option<&'p Path>,
    /// A new output takes this file's permissions.
    pub like: Option<&'p Path>,
    /// How the output reaches the disk.
    pub durability: Durability,
    /// Allow a prune that leaves no device code.
    pub allow_empty: bool,
    /// A signed Windows image loses its signature (else a signed image is refused).
    pub drop_signature: bool,
    /// Add each entry's MD5 to the report.
    pub digests: bool,
    /// How the file is read and rewritten: the format that claims it
    /// ([`crate::format::Format::rewrite`]).
    pub formats: &'p crate::format::Formats,
    /// The input a package's bytes are mapped from, asked whether it changed under the
    /// rewrite before the output replaces anything ([`Input::unchanged`]); `None` for bytes
    /// held in memory. (A file's rewrite asks the input of its [`Original`].)
    pub source: Option<&'p Input>,
}

/// What [`rewrite_file`] is doing, for a progress display.
#[derive(Debug, Clone, Copy)]
pub enum Phase<'p> {
    /// Rewriting the bytes.
    Rewriting,
    /// Verifying the rewrite in memory (a dry run).
    Verifying,
    /// Writing the output and verifying it as read back.
    Writing(&'p Path),
}

/// `prune` or `recompress` of one file named `name` (not a package or a tree), for the CLI and
/// Python: a signed image unsigned first when `drop_signature`, then the rewrite with `t` by
/// the format of `opts.formats` that claims the file ([`crate::format::Format::rewrite`],
/// which refuses a file a prune keeps or drops whole, saying what it holds), refused when it
/// would leave no device code (unless `allow_empty`), then written through [`write_verified`]
/// or, for a dry run, checked in memory, by that format
/// ([`crate::format::Format::verify_rewrite`]). `phase` hears what is being done. Returns the
/// rewrite's report.
pub fn rewrite_file(
    name: &Path,
    original: Original<'_>,
    t: &gfxkit_shrink::Transform,
    opts: &RewriteOptions<'_>,
    phase: &dyn Fn(Phase<'_>),
) -> Result<gfxkit_shrink::Report, Error> {
    let fail = |kind: fn(gfxkit_shrink::Error) -> ErrorKind| {
        move |e: gfxkit_shrink::Error| Error::new(name, kind(e))
    };
    let bytes = match original {
        Original::Input(i) => &i[..],
        Original::Bytes(b) => b,
    };
    // A signed Windows image, when its signature may go: the image without it is the input,
    // and the rewrite borrows from (and is checked against) that copy.
    let unsigned = if opts.drop_signature {
        gfxkit_shrink::pe::without_signature(bytes).map_err(fail(ErrorKind::Signature))?
    } else {
        None
    };
    let (bytes, original) = match &unsigned {
        Some(u) => (&u[..], Original::Bytes(u)),
        None => (bytes, original),
    };
    // Read, rewritten and checked under the transform's limits.
    let file = opts.formats.file(name, bytes).with_limits(t.limits);
    let format = opts.formats.of(&file);
    phase(Phase::Rewriting);
    let mut rewritten = format.rewrite(&file, t)?;
    if !opts.allow_empty {
        gfxkit_shrink::refuse_empty(t, [&rewritten.report]).map_err(fail(ErrorKind::Empty))?;
    }
    let check = |back: &[u8]| format.verify_rewrite(&file, back, &rewritten);
    match opts.target {
        Some(path) => {
            phase(Phase::Writing(path));
            write_verified(
                path,
                opts.like,
                original,
                &rewritten,
                opts.durability,
                &check,
            )?;
        }
        None => {
            phase(Phase::Verifying);
            check(&rewritten.bytes()).map_err(fail(ErrorKind::DryRunVerify))?;
        }
    }
    if opts.digests {
        rewritten
            .report
            .add_digests(bytes, &t.limits)
            .map_err(fail(ErrorKind::Digests))?;
    }
    Ok(rewritten.report)
}
