//! The `--rocm VERSION|auto` option of `select`, `doctor` and `check`: which ROCm release's
//! runtime to answer for (the rules are `gfxkit_host::release`'s, the installed release is
//! read by `gfxkit_io::rocm`).

use anyhow::{Context, Result};
use gfxkit_inventory::release::RocmRelease;
use gfxkit_spec::rocm::RocmVersion;
use std::path::{Path, PathBuf};

/// `--rocm` and where `auto` reads the installed release.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RocmArgs {
    /// Answer as the runtime of this ROCm release does (`6.2`, `6.4.3`): code objects of a
    /// version it does not load, generic targets it does not know, CCOB versions its HIP
    /// runtime does not unpack and kpack-split binaries before its kpack loader are passed
    /// over with the reason. `auto`: the release installed on this machine
    /// (`$ROCM_PATH` or `/opt/rocm`/.info/version, `/opt/rocm-*`, libamdhip64's file name,
    /// Debian's packages, `$VIRTUAL_ENV`'s rocm-sdk-core or torch). Without it: the newest
    /// runtime. `gfxkit rocm list` shows the table.
    #[arg(long, value_name = "VERSION|auto")]
    pub rocm: Option<String>,
    /// With `--rocm auto`: read the installed release under DIR (`DIR/opt/rocm/.info/version`,
    /// `DIR/var/lib/dpkg/status`, ...) instead of `/`.
    #[arg(long, value_name = "DIR")]
    pub rocm_root: Option<PathBuf>,
}

impl RocmArgs {
    /// The release to answer for: the one given, the one installed (`auto`, or when not given
    /// and `default_auto`), or none (the newest runtime). `default_root` is where `auto` reads
    /// when `--rocm-root` is not given (`/` when `None`). An explicit `auto` that finds nothing
    /// says so on stderr and answers for the newest runtime.
    pub fn resolve(
        &self,
        default_auto: bool,
        default_root: Option<&Path>,
    ) -> Result<Option<RocmRelease>> {
        let root = self
            .rocm_root
            .as_deref()
            .or(default_root)
            .unwrap_or(Path::new("/"));
        match self.rocm.as_deref() {
            Some("auto") => {
                let found = gfxkit_io::rocm::installed_from_environment(root);
                if found.is_none() {
                    eprintln!(
                        "gfxkit: --rocm auto: no installed ROCm release found under {}; answering for the newest runtime",
                        root.display()
                    );
                }
                Ok(found)
            }
            Some(v) => {
                let version = RocmVersion::parse(v)
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("--rocm {v}"))?;
                Ok(Some(RocmRelease::new(version, "--rocm")))
            }
            None if default_auto => Ok(gfxkit_io::rocm::installed_from_environment(root)),
            None => Ok(None),
        }
    }
}
