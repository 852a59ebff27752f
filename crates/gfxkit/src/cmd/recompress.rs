//! `gfxkit recompress` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit recompress`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `gfxkit recompress`.
pub fn run(_args: Args) -> Result<ExitCode> {
    anyhow::bail!("gfxkit recompress is not written yet")
}
