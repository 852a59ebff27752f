//! `gfxkit compress` and `gfxkit decompress` (not written yet).

use anyhow::Result;
use std::process::ExitCode;

/// Options of `gfxkit compress`.
#[derive(clap::Args, Debug)]
pub struct CompressArgs {}

/// Options of `gfxkit decompress`.
#[derive(clap::Args, Debug)]
pub struct DecompressArgs {}

/// Runs `gfxkit compress`.
pub fn run_compress(_args: CompressArgs) -> Result<ExitCode> {
    anyhow::bail!("gfxkit compress is not written yet")
}

/// Runs `gfxkit decompress`.
pub fn run_decompress(_args: DecompressArgs) -> Result<ExitCode> {
    anyhow::bail!("gfxkit decompress is not written yet")
}
