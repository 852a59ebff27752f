//! Reading input files, through `gfxkit_io` (memory-mapped inputs, package members); this
//! module only turns its typed errors into the command's error chain.

use anyhow::Result;
use std::path::{Path, PathBuf};

pub use gfxkit_io::input::{is_package, Input, NoDeviceCode};

/// A failure of one input (or package member) as the commands report it; a package without
/// device code is a [`NoDeviceCode`] error, which callers test for with `downcast_ref`.
pub fn failed(f: gfxkit_io::input::Failed<anyhow::Error>) -> anyhow::Error {
    use gfxkit_io::input::Failed;
    match f {
        Failed::Visit(e) => e,
        Failed::Package(e) => anyhow::Error::new(e),
        Failed::NoDeviceCode => anyhow::Error::new(NoDeviceCode),
    }
}

/// Runs `f` on an input: a file once, or for a package on every member that may hold device
/// code (named `package!member`), as [`gfxkit_io::input::for_each`] does; what is being read
/// shows on a terminal when it takes long ([`crate::output::Reading`]).
pub fn for_each<T, F>(path: &Path, f: F) -> Result<Vec<(PathBuf, Result<T>)>>
where
    T: Send,
    F: Fn(Input) -> Result<T> + Sync,
{
    let progress = crate::output::Reading::new(false);
    let items = gfxkit_io::input::for_each_with(path, &progress, f);
    progress.finish();
    Ok(items?
        .into_iter()
        .map(|(p, r)| (p, r.map_err(failed)))
        .collect())
}

/// Opens one input ([`Input::open`]: a file, or a package member `pkg!member`), showing on a
/// terminal which member is being read when finding it takes long.
pub fn open(path: &Path) -> Result<Input> {
    let progress = crate::output::Reading::new(false);
    let input = Input::open_with(path, &progress);
    progress.finish();
    Ok(input?)
}
