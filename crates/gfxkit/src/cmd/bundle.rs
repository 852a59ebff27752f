//! `gfxkit bundle` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit bundle`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit bundle`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit bundle is not written yet")
}
