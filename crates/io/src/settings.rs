//! What a run reads its inputs under, chosen once by the caller (the command line from
//! `--max-uncompressed`, `GFXKIT_MAX_UNCOMPRESSED` and `--platform`; the Python package from
//! its own settings) and passed in to every reader: no reader consults process-wide state.

use gfxkit_bundle::limits::Limits;
use gfxkit_package::image::Platform;
use gfxkit_package::MemberChoice;

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
    /// Which members of a package are read (`None`: those the standard formats would read as
    /// files met in a directory walk, [`crate::format::member_worth_reading`]). The
    /// [`Formats`](crate::format::Formats) of a run set their own choice
    /// ([`Formats::member_choice`](crate::format::Formats::member_choice)), so that a format
    /// added to them reads its files inside packages too.
    pub members: Option<MemberChoice>,
}

impl Settings {
    /// How packages and container images are walked under these settings: the defaults of
    /// [`gfxkit_package::Options`] with [`Settings::platform`], members read when a directory
    /// walk would read the same file ([`Settings::members`]).
    pub fn package_options(&self) -> gfxkit_package::Options {
        gfxkit_package::Options {
            platform: self.platform.clone(),
            wanted: self.member_choice(),
            ..gfxkit_package::Options::default()
        }
    }

    /// Which members of a package are read under these settings ([`Settings::members`]).
    pub fn member_choice(&self) -> MemberChoice {
        self.members
            .clone()
            .unwrap_or_else(|| crate::format::Formats::shared_standard().member_choice())
    }
}
