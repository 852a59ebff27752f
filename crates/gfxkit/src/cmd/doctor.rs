//! `gfxkit doctor` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit doctor`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit doctor`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit doctor is not written yet")
}
