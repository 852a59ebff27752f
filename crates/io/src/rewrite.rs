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
/// back and verifies it against `original` (every kept entry, the layout:
/// `gfxkit_shrink::verify_bytes`), then renames it over `path`. On any failure the temporary
/// file is removed and `path` is untouched. A new output takes the permissions of `like`.
/// When `original` is an [`Input`] mapping a file, the runs of bytes the rewrite keeps from it
/// are copied from that file inside the kernel.
pub fn write_verified(
    path: &Path,
    like: Option<&Path>,
    original: Original<'_>,
    rewritten: &gfxkit_shrink::Rewritten,
    durability: Durability,
) -> Result<(), Error> {
    let (original, mapped) = match original {
        Original::Input(i) => (&i[..], Some(i)),
        Original::Bytes(b) => (b, None),
    };
    write_atomic_file_checked(
        path,
        |file| {
            write_output(file, &rewritten.output, mapped)
                .map_err(|e| Error::new(path, ErrorKind::Write(e)))
        },
        |tmp| {
            let back = Input::open(tmp)?;
            if !rewritten.output.equals(&back) {
                return Err(Error::new(path, ErrorKind::TempDiffers));
            }
            gfxkit_shrink::verify_bytes(original, &back, &rewritten.report)
                .map_err(|e| Error::new(path, ErrorKind::Verify(e)))
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
