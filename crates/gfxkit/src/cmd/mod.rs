//! One module per subcommand. Each defines `Args` (clap derive, doc comment as help) and
//! `run(args) -> Result<ExitCode>`.

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod bundle;
pub mod census;
pub mod check;
pub mod completions;
pub mod compress;
pub mod diff;
pub mod doctor;
pub mod extract;
pub mod inspect;
pub mod kernels;
pub mod kpack;
pub mod list;
pub mod memmodel;
pub mod offload_bundler;
pub mod prune;
pub mod recompress;
pub mod rocm;
pub mod select;
pub mod size;
pub mod target;
pub mod unbundle;
pub mod verify;

/// Inspect, bundle, prune and explain AMD GPU device code.
#[derive(Parser, Debug)]
#[command(name = "gfxkit", version = crate::VERSION, about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 success; 1 a negative answer (incompatible, nothing selected, \
cannot run, verification failed); 2 an error."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Refuse any compressed bundle that declares more than SIZE uncompressed bytes, before
    /// decoding it [default: 64G, or GFXKIT_MAX_UNCOMPRESSED when set]. SIZE is bytes, or a
    /// number with K, M, G or T (powers of 1024, "KiB" etc. also accepted).
    #[arg(long, global = true, value_name = "SIZE", value_parser = gfxkit_bundle::limits::parse_size)]
    max_uncompressed: Option<u64>,
    /// Read multi-platform container images as the image of this platform (OS/ARCH or
    /// OS/ARCH/VARIANT) [default: linux/amd64 when the image has it, else its only one].
    #[arg(long, global = true, value_name = "OS/ARCH", value_parser = gfxkit_package::image::Platform::parse)]
    platform: Option<gfxkit_package::image::Platform>,
}

/// `-r`, accepted by the commands that always search the directories they are given, so that
/// a command line typed as `gfxkit list -r` is typed works with them too. Hidden from their
/// help and completions: it changes nothing.
#[derive(clap::Args, Debug, Default, Clone, Copy)]
pub struct AlwaysRecursive {
    /// Directories are always searched (recursively) by this command; accepted as with `list`.
    #[arg(short = 'r', long = "recursive", hide = true)]
    pub recursive: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Target IDs and the processor table.
    Target(target::Args),
    /// Show an AMDGPU code object: version, e_flags, target ID, kernels.
    Inspect(inspect::Args),
    /// Every kernel in files: registers, LDS, scratch, spills, occupancy.
    Kernels(kernels::Args),
    /// Print the code sequences of the AMDGPU memory model.
    Memmodel(memmodel::Args),
    /// List the offload bundles and entries in files.
    List(list::Args),
    /// Extract bundle entries (code objects) to files.
    Extract(extract::Args),
    /// Make an offload bundle from code objects.
    Bundle(bundle::Args),
    /// Split an offload bundle into its entries.
    Unbundle(unbundle::Args),
    /// Compress a bundle (CCOB).
    Compress(compress::CompressArgs),
    /// Decompress a CCOB bundle.
    Decompress(compress::DecompressArgs),
    /// Check bundles and host binaries for damage and loader problems.
    Verify(verify::Args),
    /// clang-offload-bundler, option for option.
    #[command(name = "offload-bundler", disable_help_flag = true)]
    OffloadBundler(offload_bundler::Args),
    /// Which code object the HIP runtime would load on a device.
    Select(select::Args),
    /// Which libraries can run on this machine's (or a named) GPU.
    Doctor(doctor::Args),
    /// Fail unless every file carries code for every required target (CI of builds).
    Check(check::Args),
    /// What changed in device code between two builds (files, trees or packages).
    Diff(diff::Args),
    /// Where device bytes go: per architecture, file and bundle.
    Size(size::Args),
    /// Keep or drop architectures in host binaries and bundles.
    Prune(prune::Args),
    /// Convert the compression of every bundle in a file.
    Recompress(recompress::Args),
    /// ROCm's kpack split layout: split, inline, list archives.
    Kpack(kpack::Args),
    /// What each ROCm release's runtime loads (the table behind --rocm).
    Rocm(rocm::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Print the manual page (roff, for `man -l -`).
    Manpage(completions::ManpageArgs),
    /// Device code across a fleet of files on Dask: a Parquet dataset and a report.
    Census(census::Args),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    // Read once, here, and passed to every command that reads inputs.
    let limits = match cli.max_uncompressed {
        Some(n) => gfxkit_bundle::limits::Limits {
            max_uncompressed: n,
        },
        None => gfxkit_bundle::limits::Limits::from_env().map_err(anyhow::Error::msg)?,
    };
    let s = &gfxkit_io::Settings {
        limits,
        platform: cli.platform,
        ..Default::default()
    };
    match cli.command {
        Command::Target(a) => target::run(a),
        Command::Inspect(a) => inspect::run(a, s),
        Command::Kernels(a) => kernels::run(a, s),
        Command::Memmodel(a) => memmodel::run(a),
        Command::List(a) => list::run(a, s),
        Command::Extract(a) => extract::run(a, s),
        Command::Bundle(a) => bundle::run(a, s),
        Command::Unbundle(a) => unbundle::run(a, s),
        Command::Compress(a) => compress::run_compress(a, s),
        Command::Decompress(a) => compress::run_decompress(a, s),
        Command::Verify(a) => verify::run(a, s),
        Command::OffloadBundler(a) => offload_bundler::run(a, s),
        Command::Select(a) => select::run(a, s),
        Command::Doctor(a) => doctor::run(a, s),
        Command::Check(a) => check::run(a, s),
        Command::Diff(a) => diff::run(a, s),
        Command::Size(a) => size::run(a, s),
        Command::Prune(a) => prune::run(a, s),
        Command::Recompress(a) => recompress::run(a, s),
        Command::Kpack(a) => kpack::run(a, s),
        Command::Rocm(a) => rocm::run(a),
        Command::Completions(a) => completions::run_completions(a),
        Command::Manpage(a) => completions::run_manpage(a),
        Command::Census(a) => census::run(a),
    }
}
