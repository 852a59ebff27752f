//! Reading input files, through `gfxkit_io` (memory-mapped inputs, package members); this
//! module only turns its typed errors into the command's error chain.

use anyhow::Result;
use std::path::{Path, PathBuf};

pub use gfxkit_io::input::{is_package, Input, NoDeviceCode};

/// A failure of one input (or package member) `path` as the commands report it. Every such
/// error names its input once, so callers print it as it is: a package error names
/// `package!member` itself, a package without device code is a [`NoDeviceCode`] error in the
/// context of the package's path (callers test for it with `downcast_ref`), and an error of
/// the visit is the visitor's own.
pub fn failed(path: &Path, f: gfxkit_io::input::Failed<anyhow::Error>) -> anyhow::Error {
    use gfxkit_io::input::Failed;
    match f {
        Failed::Visit(e) => e,
        Failed::Package(e) => anyhow::Error::new(e),
        Failed::NoDeviceCode => {
            anyhow::Error::new(NoDeviceCode).context(path.display().to_string())
        }
    }
}

/// Runs `f` on an input: a file once, or for a package on every member that may hold device
/// code (named `package!member`), as [`gfxkit_io::input::for_each`] does. Errors are as
/// [`failed`] gives them, naming their input; the visitor's errors should name it too.
pub fn for_each<T, F>(path: &Path, f: F) -> Result<Vec<(PathBuf, Result<T>)>>
where
    T: Send,
    F: Fn(Input) -> Result<T> + Sync,
{
    Ok(gfxkit_io::input::for_each(path, f)?
        .into_iter()
        .map(|(p, r)| {
            let r = r.map_err(|f| failed(&p, f));
            (p, r)
        })
        .collect())
}
