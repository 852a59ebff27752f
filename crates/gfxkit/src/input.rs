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
/// code (named `package!member`), as [`gfxkit_io::input::for_each`] does.
pub fn for_each<T, F>(path: &Path, f: F) -> Result<Vec<(PathBuf, Result<T>)>>
where
    T: Send,
    F: Fn(Input) -> Result<T> + Sync,
{
    Ok(gfxkit_io::input::for_each(path, f)?
        .into_iter()
        .map(|(p, r)| (p, r.map_err(failed)))
        .collect())
}
