//! What a run reads its inputs under, chosen once by the caller (the command line from
//! `--max-uncompressed`, `GFXKIT_MAX_UNCOMPRESSED` and `--platform`; the Python package from
//! its own settings) and passed in to every reader: no reader consults process-wide state.

use gfxkit_bundle::limits::Limits;
use gfxkit_package::image::Platform;

/// The limits and choices every input of a run is read under.
///
/// ```
/// let s = gfxkit_io::Settings::default();
/// assert_eq!(s.limits, gfxkit_bundle::limits::Limits::default());
/// assert_eq!(s.package_options().platform, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The bounds bundles are read under (the largest uncompressed size a compressed bundle
    /// may declare).
    pub limits: Limits,
    /// The platform a multi-platform container image is read as (`None`: linux/amd64 when the
    /// image has it, else its only platform).
    pub platform: Option<Platform>,
}

impl Settings {
    /// How packages and container images are walked under these settings: the defaults of
    /// [`gfxkit_package::Options`] with [`Settings::platform`], members read when a directory
    /// walk would read the same file ([`crate::format::member_worth_reading`]).
    pub fn package_options(&self) -> gfxkit_package::Options {
        gfxkit_package::Options {
            platform: self.platform.clone(),
            wanted: crate::format::member_worth_reading,
            ..gfxkit_package::Options::default()
        }
    }
}
