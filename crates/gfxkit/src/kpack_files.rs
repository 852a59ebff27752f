//! The `.kpack` archives of split binaries are found and opened by `gfxkit_io::kpack`; this
//! module holds the loader choice of the command line.
use gfxkit_kpack::search::Loader;

/// The loader chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LoaderArg {
    /// Every candidate archive tried in turn (ROCm after the fix for TheRock#7081).
    #[default]
    Current,
    /// The first archive listing a matching architecture decides (earlier ROCm 7 releases).
    Old,
}

impl From<LoaderArg> for Loader {
    fn from(l: LoaderArg) -> Loader {
        match l {
            LoaderArg::Current => Loader::Current,
            LoaderArg::Old => Loader::Old,
        }
    }
}
