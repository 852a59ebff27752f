//! `gfxkit offload-bundler`: clang-offload-bundler's command line (not written yet).

use anyhow::Result;
use std::ffi::OsString;
use std::process::ExitCode;

/// Arguments of `gfxkit offload-bundler`, passed through unparsed to clang's option syntax.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// clang-offload-bundler options.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// Runs `gfxkit offload-bundler`.
pub fn run(args: Args) -> Result<ExitCode> {
    run_raw(&args.args)
}

/// Runs clang-offload-bundler's command line on `args` (without the program name).
pub fn run_raw(_args: &[OsString]) -> Result<ExitCode> {
    anyhow::bail!("gfxkit offload-bundler is not written yet")
}
