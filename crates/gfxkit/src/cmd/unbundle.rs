//! `gfxkit unbundle` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit unbundle`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit unbundle`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit unbundle is not written yet")
}
