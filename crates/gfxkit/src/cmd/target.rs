//! `gfxkit target` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit target`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit target`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit target is not written yet")
}
