//! `gfxkit rocm list|show`: what each ROCm release's runtime loads, as gfxkit models it for
//! `--rocm`.

use crate::output;
use anyhow::{Context, Result};
use gfxkit_spec::rocm::RocmVersion;
use std::process::ExitCode;

/// What each ROCm release's runtime loads: code-object versions, generic targets, CCOB
/// versions, kpack-split binaries, each row with its first release and its source.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each row names the first release that has a capability and where that is \
written (the loader's source at a release tag, or a maintainer's statement). A first release \
only bracketed by its sources is marked \"first tag not pinned\"; a capability in the runtime's \
sources but in no release gfxkit lists is taken only by a release newer than all of them. \
select, doctor and check apply the rows with --rocm VERSION.\n\nExamples:\n  gfxkit rocm list\n  \
gfxkit rocm show 6.2\n  gfxkit rocm show 6.4.3 --json"
)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Every release gfxkit lists, with what its runtime loads.
    List {
        /// Print JSON: `{"releases": [{"version", "beyond_known", "code_object_max",
        /// "generics", "ccob", "kpack", "listed", "note"?}], "facts": [{"capability":
        /// {"kind", "value"}, "first", "pin", "source"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// What one release's runtime loads, row by row with the sources.
    Show {
        /// The release (`6.2`, `6.4.3`).
        #[arg(value_name = "VERSION")]
        version: String,
        /// Print JSON: `{"version", "beyond_known", "code_object_max", "generics", "ccob",
        /// "kpack", "listed", "note"?, "facts": [{"capability", "first", "pin", "source",
        /// "has"}]}`.
        #[arg(long)]
        json: bool,
    },
}

/// `rocm list --json`.
#[derive(serde::Serialize)]
struct ListJson {
    releases: Vec<gfxkit_inventory::release::ReleaseShow>,
    facts: &'static [gfxkit_spec::rocm::Fact],
}

/// Runs `gfxkit rocm`.
pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Command::List { json } => {
            let releases = gfxkit_inventory::release::list();
            if json {
                output::print_json(&ListJson {
                    releases,
                    facts: gfxkit_spec::rocm::FACTS,
                })?;
            } else {
                gfxkit_text::rocm::list(&releases, &mut std::io::stdout().lock())?;
            }
        }
        Command::Show { version, json } => {
            let v = RocmVersion::parse(&version)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("rocm show {version}"))?;
            let s = gfxkit_inventory::release::show(v);
            if json {
                output::print_json(&s)?;
            } else {
                gfxkit_text::rocm::show(&s, &mut std::io::stdout().lock())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
