//! `gfxkit list` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit list`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit list`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit list is not written yet")
}
