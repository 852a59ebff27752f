//! `gfxkit select` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit select`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit select`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit select is not written yet")
}
