//! Walking a package lazily: a tar that is a container image is read as the file system its
//! layers unpack to ([`crate::image`]); any other package member by member: each member is
//! decompressed once, streaming; those whose first bytes cannot start device code are
//! skipped after reading those bytes, nested archives are walked in turn (to
//! [`Options::max_depth`]), and the rest are handed to the caller's function one by one, held
//! in memory when small and otherwise in a [`Spill`] (a temporary file the caller maps).

use crate::detect::{detect, Format, PREFIX_LEN};
use crate::error::{Error, ErrorKind, Result};
use crate::members::{walk_stream, walk_zip, Ctx};
use std::sync::atomic::AtomicU64;

pub use crate::members::{Bytes, Member, MemorySpill, Options, Spill, SpillWriter, Visited, Walk};

/// Walks the package `data` named `name` (which starts every member path). Zip members are
/// read in parallel; stream formats in order. Errors for the package as a whole (not a
/// package, an unreadable directory) are returned; errors of members are in the list.
pub fn walk<T: Send>(
    name: &str,
    data: &[u8],
    opts: &Options,
    spill: &dyn Spill,
    visit: &(dyn Fn(Member<'_>) -> T + Sync),
) -> Result<Walk<T>> {
    walk_watched(name, data, opts, spill, visit, &|_| {})
}

/// [`walk`], telling `reading` the path (`package!member`) of each member as its reading
/// starts (before its first bytes are decompressed), for a progress display. Called from
/// the threads that read zip members in parallel.
pub fn walk_watched<T: Send>(
    name: &str,
    data: &[u8],
    opts: &Options,
    spill: &dyn Spill,
    visit: &(dyn Fn(Member<'_>) -> T + Sync),
    reading: &(dyn Fn(&str) + Sync),
) -> Result<Walk<T>> {
    let prefix = data.get(..PREFIX_LEN).unwrap_or(data);
    let format = detect(prefix).ok_or_else(|| Error::new(name, ErrorKind::NotAPackage))?;
    let total = AtomicU64::new(0);
    let ctx = Ctx {
        opts,
        spill,
        visit,
        reading,
        total: &total,
        layer: None,
    };
    if format == Format::Tar {
        // A `docker save` archive or an OCI image layout in a tar: the file system its
        // layers unpack to.
        let layout = crate::image::TarLayout::index(name, data);
        if layout.is_image() {
            return crate::image::walk_images(&ctx, name, &layout);
        }
    }
    match format {
        Format::Zip => walk_zip(&ctx, name, data, 0),
        _ => {
            let mut r: &[u8] = data;
            Ok(walk_stream(&ctx, name, &mut r, format, 0))
        }
    }
}
