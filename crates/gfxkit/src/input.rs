//! Reading input files, through `gfxkit_io` (memory-mapped inputs, package members); this
//! module only turns its typed errors into the command's error chain.

use anyhow::Result;
use std::path::Path;

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

/// Opens one input ([`Input::open`]: a file, or a package member `pkg!member`), showing on a
/// terminal which member is being read when finding it takes long. A package is walked under
/// `settings`.
pub fn open(path: &Path, settings: &gfxkit_io::Settings) -> Result<Input> {
    let progress = crate::output::Reading::new(false);
    let input = Input::open_with(path, &progress, settings);
    progress.finish();
    Ok(input?)
}
