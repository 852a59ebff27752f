//! `gfxkit extract` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit extract`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit extract`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit extract is not written yet")
}
