//! Writing a rewritten host binary or bundle (`prune`, `recompress`): the bytes the shrink
//! library produced go to a temporary file, which is read back and verified against the
//! original before it replaces anything.

use crate::input::Input;
use crate::write::{write_atomic_checked, Durability, WriteError};
use crate::{Error, ErrorKind};
use std::path::Path;

/// Writes `rewritten` to `path` through a temporary file beside it, reads the temporary file
/// back and verifies it against `original` (every kept entry, the layout:
/// `gfxkit_shrink::verify_bytes`), then renames it over `path`. On any failure the temporary
/// file is removed and `path` is untouched. A new output takes the permissions of `like`.
pub fn write_verified(
    path: &Path,
    like: Option<&Path>,
    original: &[u8],
    rewritten: &gfxkit_shrink::Rewritten,
    durability: Durability,
) -> Result<(), Error> {
    write_atomic_checked(
        path,
        |w| {
            rewritten
                .output
                .write_to(w)
                .map(drop)
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
