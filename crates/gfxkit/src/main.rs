//! `gfxkit`: inspect, bundle, prune and explain AMD GPU device code.
//!
//! A thin command line over the gfxkit library crates (the answers come from
//! [`gfxkit_inventory`], the walks over paths from [`gfxkit_io`]): one module per subcommand
//! under [`cmd`], opening one input in [`input`], output helpers in [`output`],
//! clang's `-list`, `-verbose` statistics and CCOB settings in [`containers`] (the containers
//! themselves are [`gfxkit_bundle::container`]).
//!
//! Exit codes: 0 success; 1 a negative answer (incompatible target, no code object selected,
//! a library that cannot run, a failed verification); 2 an error (bad input, bad usage).

mod bundler_cl;
mod cmd;
mod containers;
mod input;
mod kpack_files;
mod output;
mod rocm_release;

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
