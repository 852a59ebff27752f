//! PE32+ images (Windows DLLs and EXEs) and x86-64 COFF objects, rewritten.
//!
//! - `rewrite`: the prune and recompress of an image, its `.hip_fat`
//!   rewritten and the file made smaller by moving what follows by whole `FileAlignment` units,
//!   every address kept;
//! - [`coff`]: the same of an object (`.obj`, a member of a `.lib`);
//! - [`kpack`]: an image laid out as ROCm's kpack split does on Windows (`.kpackrf`, `HIPK`
//!   wrappers, `.hip_fat` without file bytes), and back;
//! - [`without_signature`]: an image without its Authenticode signature (`--drop-signature`);
//!   every other rewrite refuses a signed image.
//!
//! All of them edit through one model (`edit`: input ranges replaced, header fields written
//! where their bytes went, the output borrowing what it keeps); the image rewrites read the
//! image through one model (`image`: its sections, the layout rules a rewrite requires, how
//! the headers' file offsets follow the edit, the `CheckSum`), so they agree on every unusual
//! header.

pub mod coff;
mod edit;
mod image;
pub mod kpack;
mod rewrite;

pub use image::{checksum, without_signature};
pub(crate) use rewrite::rewrite_image;

/// Whether `data` is a PE image or COFF object for x86-64.
pub(crate) fn is_pe_or_coff(data: &[u8]) -> bool {
    matches!(
        gfxkit_host::InputKind::sniff(data),
        gfxkit_host::InputKind::PeImage | gfxkit_host::InputKind::CoffObject
    )
}
