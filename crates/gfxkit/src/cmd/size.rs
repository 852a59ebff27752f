//! `gfxkit size` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit size`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit size`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit size is not written yet")
}
