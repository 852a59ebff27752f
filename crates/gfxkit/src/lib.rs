//! `gfxkit`: inspect, bundle, prune and explain AMD GPU device code.
//!
//! The command line over the gfxkit library crates (the answers come from
//! [`gfxkit_inventory`], the walks over paths from [`gfxkit_io`]): one module per subcommand
//! under `cmd`, opening one input in `input`, output helpers in `output`,
//! clang's `-list`, `-verbose` statistics and CCOB settings in `containers` (the containers
//! themselves are [`gfxkit_bundle::container`]).
//!
//! The program is this library's [`main_with_args`]: the `gfxkit` binary calls it with the
//! process's arguments, and the Python package's `gfxkit` command and `python -m gfxkit` call
//! the same function through the native module, so both are one program (options, output
//! bytes written by Rust to the process's stdout and stderr, exit codes).
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
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// The version `gfxkit --version` prints: the crate's version and the git commit it was built
/// from (`GFXKIT_BUILD_COMMIT` when set at build time, else `git rev-parse HEAD` of the source
/// tree; a build outside a git checkout says so).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GFXKIT_BUILT_FROM"),
    ")"
);

/// Runs gfxkit on a command line, `args[0]` being the name it was invoked under: invoked as
/// `clang-offload-bundler` (a link of that name), it is the drop-in bundler; otherwise the
/// `gfxkit` command. Output goes to the process's stdout and stderr (flushed before
/// returning); the result is the exit code (see [`exit_status`] for its number). Usage
/// errors, `--help` and `--version` are printed and returned as clap prints them; the
/// process is never exited from here.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let invoked_as = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("gfxkit")
        .to_owned();
    let result = if invoked_as.starts_with("clang-offload-bundler") {
        cmd::offload_bundler::run_raw(
            args.first().map(OsString::as_os_str),
            args.get(1..).unwrap_or_default(),
            // Invoked as clang's tool, gfxkit takes none of its own options (nor
            // GFXKIT_MAX_UNCOMPRESSED): the default settings.
            &gfxkit_io::Settings::default(),
        )
    } else {
        match cmd::Cli::try_parse_from(&args) {
            Ok(cli) => cmd::run(cli),
            Err(e) => {
                // As clap's own exit: help and version on stdout (0), errors on stderr (2).
                let _ = e.print();
                let _ = std::io::stdout().flush();
                return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
            }
        }
    };
    let code = match result {
        Ok(code) => code,
        Err(err) => output::report_error(&err),
    };
    if let Err(e) = std::io::stdout().flush() {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return output::report_error(&anyhow::Error::new(e).context("cannot write stdout"));
        }
    }
    code
}

/// The number of an exit code [`main_with_args`] returns (0 to 255).
pub fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(2)
}
