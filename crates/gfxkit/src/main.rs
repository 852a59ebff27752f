//! `gfxkit`: inspect, bundle, prune and explain AMD GPU device code.
//!
//! A thin command line over the gfxkit library crates: one module per subcommand under
//! [`cmd`], file access in [`input`], output helpers in [`output`].
//!
//! Exit codes: 0 success; 1 a negative answer (incompatible target, no code object selected,
//! a library that cannot run, a failed verification); 2 an error (bad input, bad usage).

mod bundler_cl;
mod bundles;
mod cmd;
mod input;
mod kpack_files;
mod output;
mod scan;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let invoked_as = std::path::Path::new(&argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("gfxkit")
        .to_owned();
    let result = if invoked_as.starts_with("clang-offload-bundler") {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        cmd::offload_bundler::run_raw(&args)
    } else {
        let cli = cmd::Cli::parse();
        cmd::run(cli)
    };
    match result {
        Ok(code) => code,
        Err(err) => output::report_error(&err),
    }
}
