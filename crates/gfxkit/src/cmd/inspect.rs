//! `gfxkit inspect` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit inspect`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit inspect`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit inspect is not written yet")
}
