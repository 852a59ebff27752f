//! `gfxkit verify` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit verify`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit verify`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit verify is not written yet")
}
