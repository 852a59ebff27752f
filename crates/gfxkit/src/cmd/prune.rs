//! `gfxkit prune` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit prune`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit prune`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit prune is not written yet")
}
