//! `gfxkit memmodel` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit memmodel`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit memmodel`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit memmodel is not written yet")
}
