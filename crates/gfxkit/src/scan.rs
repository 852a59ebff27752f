//! Finding and reading many input files through `gfxkit_io::scan` (the parallel directory
//! walk), with progress on a terminal (stderr: [`crate::output::Reading`]), nothing when
//! piped.
//!
//! ```ignore
//! let results = scan::scan(&paths, &scan::Options::default(), |path, bytes| {
//!     let found = gfxkit_host::discover(bytes);
//!     Ok(found.bundles.len())
//! })?;
//! ```

use anyhow::Result;
use std::path::{Path, PathBuf};

/// Options of a scan.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Never show a progress bar, even on a terminal.
    pub quiet: bool,
}

/// The outcome for one file.
#[derive(Debug)]
pub struct Scanned<T> {
    /// The path.
    pub path: PathBuf,
    /// Named on the command line rather than found in a directory.
    pub explicit: bool,
    /// The package this is one member of ([`gfxkit_io::scan::Scanned::package`]).
    pub package: Option<PathBuf>,
    /// For a file of a container image: the digest of the layer that holds it.
    pub layer: Option<String>,
    /// What `f` returned, or why the file could not be read.
    pub result: Result<T>,
}

/// Runs `f` over the bytes of every file under `paths` that may hold device code, as
/// [`gfxkit_io::scan::scan`] does (packages give one result per member, `package!member`).
pub fn scan<T, F>(paths: &[PathBuf], opts: &Options, f: F) -> Result<Vec<Scanned<T>>>
where
    T: Send,
    F: Fn(&Path, &[u8]) -> Result<T> + Sync,
{
    use gfxkit_io::scan::ScanError;
    let progress = crate::output::Reading::new(opts.quiet);
    let scanned = gfxkit_io::scan::scan(paths, &progress, f);
    progress.finish();
    Ok(scanned?
        .into_iter()
        .map(|s| {
            let result = s.result.map_err(|e| match e {
                ScanError::Input(e) => anyhow::Error::new(e),
                ScanError::Member(f) => crate::input::failed(&s.path, f),
            });
            Scanned {
                path: s.path,
                explicit: s.explicit,
                package: s.package,
                layer: s.layer,
                result,
            }
        })
        .collect())
}
