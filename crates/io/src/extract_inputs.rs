//! The inputs of `gfxkit extract`: files named, and with `-r` those found below named
//! directories; each package member on its own, with the stem its outputs are named by.

use crate::input::Input;
use gfxkit_inventory::extract::sanitize;
use std::path::{Path, PathBuf};

/// The inputs of an extraction: files named, and with `recursive` those below named
/// directories that may hold device code; each package member on its own, each with the stem
/// its outputs are named by (the file's stem; a found file's path below its directory, a
/// member's after its package's, `/` becoming `_`). A package found in a directory without
/// device code is left out. The error names a directory given without `recursive`, or a file
/// that cannot be read. Packages are walked under `settings`.
pub fn inputs(
    paths: &[PathBuf],
    recursive: bool,
    progress: &dyn crate::input::Progress,
    settings: &crate::Settings,
) -> Result<Vec<Named>, InputsError> {
    let mut out = Vec::new();
    for root in paths {
        if !root.is_dir() || crate::input::is_image_dir(root) {
            let stem = root
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "bundle".to_owned());
            out.push((root.clone(), stem, true));
            continue;
        }
        if !recursive {
            return Err(InputsError::Directory(root.clone()));
        }
        for c in crate::scan::collect(std::slice::from_ref(root)).map_err(InputsError::Io)? {
            if !crate::scan::worth_reading(&c.path) {
                continue;
            }
            let rel = c.path.strip_prefix(root).unwrap_or(&c.path);
            let stem = sanitize(&rel.with_extension("").to_string_lossy().replace('/', "_"));
            out.push((c.path, stem, false));
        }
    }
    let mut named = Vec::new();
    for (path, stem, explicit) in out {
        let items = crate::input::for_each_with(
            &path,
            progress,
            settings,
            Ok::<_, std::convert::Infallible>,
        )
        .map_err(InputsError::Io)?;
        let package = items.len() > 1 || items.first().is_some_and(|(p, _)| *p != path);
        for (member, r) in items {
            let data = match r {
                Ok(d) => d,
                Err(crate::input::Failed::NoDeviceCode) if !explicit => continue,
                Err(f) => return Err(InputsError::Member(member, f)),
            };
            // Members of a package are named after the package and the member's path, the
            // same whether the package or the member (`IMAGE!/path`) was named.
            let stem = if package {
                member_stem(&member, &stem)
            } else if let Some((pkg, _)) = path.to_string_lossy().split_once('!') {
                let pkg_stem = Path::new(pkg)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "bundle".to_owned());
                member_stem(&member, &pkg_stem)
            } else {
                stem.clone()
            };
            named.push(Named {
                // A member found in a package is not named: one without device code (a
                // CPU-only library in a wheel) is skipped, as `list` skips it.
                explicit: explicit && !package,
                package: (explicit && package).then(|| path.clone()),
                path: member,
                stem,
                data,
            });
        }
    }
    Ok(named)
}

/// The stem the outputs of package member `member` (`package!inner`) are named by: `stem`
/// (the package's) and the member's path, `/` and `!` becoming `_`.
fn member_stem(member: &Path, stem: &str) -> String {
    let inner = member
        .to_string_lossy()
        .split_once('!')
        .map(|(_, m)| m.to_owned())
        .unwrap_or_default();
    sanitize(&format!("{stem}_{}", inner.replace(['/', '!'], "_")))
}

/// An input of an extraction ([`inputs`]).
pub struct Named {
    /// The path (`package!member` for a member).
    pub path: PathBuf,
    /// Named as it is rather than found in a directory or a package: a file named that
    /// holds no device code is an error, one found is skipped.
    pub explicit: bool,
    /// For a member of a package named as it is: that package (the caller reports a package
    /// none of whose members holds device code).
    pub package: Option<PathBuf>,
    /// What its outputs' names start with.
    pub stem: String,
    /// Its bytes.
    pub data: Input,
}

/// Why [`inputs`] failed.
#[derive(Debug)]
pub enum InputsError {
    /// A directory named without `recursive`.
    Directory(PathBuf),
    /// A path that cannot be read or walked.
    Io(crate::Error),
    /// A package (the path) whose member cannot be read, or one named without device code.
    Member(PathBuf, crate::input::Failed<std::convert::Infallible>),
}
