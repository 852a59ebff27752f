//! `gfxkit census`: device code across a fleet of files on Dask, written as a Parquet dataset
//! with a report. The census is the Python package's (`gfxkit.census`, which calls this
//! project's libraries for every file through the native module); this subcommand runs it as
//! `python3 -m gfxkit census ARGS` in place of this process.

use anyhow::{bail, Result};
use std::ffi::OsString;
use std::process::ExitCode;

/// Options of `gfxkit census` (every argument goes to `python -m gfxkit census`).
#[derive(clap::Args, Debug)]
#[command(
    disable_help_flag = true,
    after_help = "\
Runs `python3 -m gfxkit census ARGS` (the interpreter named by GFXKIT_PYTHON, else python3): the
gfxkit Python package with its census extra is needed (pip install 'gfxkit[census]': dask,
distributed, pyarrow). `gfxkit census --help` prints the census's own options; docs/census.md
has the details."
)]
pub struct Args {
    /// The census's arguments: INPUT... -o OUT [--require T,...] [--scheduler ADDRESS] ...
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<OsString>,
}

/// Imports the census's command line, or says clearly what is missing.
const BOOTSTRAP: &str = "\
import sys
try:
    from gfxkit.census.cli import main
except ImportError as e:
    sys.stderr.write('gfxkit census: the gfxkit Python package is needed (%s); '
                     'install it with: pip install \"gfxkit[census]\"\\n' % e)
    sys.exit(2)
sys.exit(main(sys.argv[1:]))
";

/// Runs `gfxkit census`: replaces this process with the Python census.
pub fn run(args: Args) -> Result<ExitCode> {
    let python = std::env::var_os("GFXKIT_PYTHON").unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.arg("-c").arg(BOOTSTRAP).args(&args.args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = cmd.exec();
        bail!(
            "gfxkit census runs the gfxkit Python package: cannot run {}: {err}",
            python.to_string_lossy()
        );
    }
    #[cfg(not(unix))]
    {
        let status = cmd.status().map_err(|err| {
            anyhow::anyhow!(
                "gfxkit census runs the gfxkit Python package: cannot run {}: {err}",
                python.to_string_lossy()
            )
        })?;
        Ok(ExitCode::from(status.code().unwrap_or(2) as u8))
    }
}
