//! The `gfxkit` binary: [`gfxkit::main_with_args`] on the process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    gfxkit::main_with_args(std::env::args_os())
}
