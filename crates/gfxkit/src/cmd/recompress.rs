//! `gfxkit recompress`: convert the compression of every bundle in a file.

use crate::cmd::prune::{execute, ConvertArgs, IoArgs};
use anyhow::{bail, Result};
use gfxkit_shrink::{Conversion, EntryFilter, Transform};
use std::process::ExitCode;

/// Convert every bundle of an executable, shared object, relocatable object, archive or
/// standalone bundle: compress (CCOB v2 or v3, zstd or zlib) or decompress. Bundles are
/// converted in parallel on all cores; the file layout is rewritten as for `prune`, so a
/// smaller result makes the file smaller. A bundle already in the asked encoding is left
/// alone unless --level is given.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
gfxkit recompress --ccob-version 2 --method zstd libfoo.so -o libfoo.z.so\n  \
gfxkit recompress --uncompressed libfoo.so -o libfoo.plain.so   # for runtimes without CCOB\n  \
gfxkit recompress --ccob-version 3 --level 19 --in-place libfoo.so\n\n\
Defaults: CCOB version 2, zstd, level 3 (zlib 6).")]
pub struct Args {
    #[command(flatten)]
    pub convert: ConvertArgs,
    #[command(flatten)]
    pub io: IoArgs,
}

/// Runs `gfxkit recompress`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let conversion = match args.convert.conversion()? {
        Conversion::Keep => Conversion::Compressed {
            version: 2,
            method: gfxkit_shrink::Method::Zstd,
            level: None,
        },
        c => c,
    };
    if matches!(conversion, Conversion::Keep) {
        bail!("nothing to do");
    }
    execute(
        &args.io,
        &Transform {
            selection: EntryFilter::All,
            conversion,
            limits: settings.limits,
        },
        false,
        settings,
    )
}
