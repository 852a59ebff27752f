//! `gfxkit unbundle`: split an offload bundle into files, one per requested target.

use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_bundle::unbundle::{unbundle, Extracted, UnbundleOptions};
use gfxkit_bundle::{Bundle, EntryId};
use gfxkit_inventory::locate;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit unbundle`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Targets and outputs come in pairs, in order: the first --target is written to the first
--output. Matching follows clang-offload-bundler: an entry serves a target when the kinds
(hip and hipv4 alike), triples and target IDs are compatible (gfx90a:xnack+ code serves a
gfx90a:sramecc+:xnack+ request; gfx90a:xnack+ code does not serve plain gfx90a); each entry
serves one target, the first compatible in header order. A bare target ID means a HIP entry.

A target without a compatible entry is an error (nothing is written) unless
--allow-missing, which writes an empty file for it. Compressed bundles are decompressed and
their hash checked. For files holding several bundles back to back, pick one with --bundle.

Examples:
  gfxkit unbundle app.hipfb -t gfx90a:xnack+ -o app-gfx90a.co
  gfxkit unbundle app.hipfb -t gfx906 -o a.co -t gfx1100 -o b.co --allow-missing

Exit codes: 0 written; 1 a target has no compatible entry; 2 an error.")]
pub struct Args {
    /// The bundle file.
    file: PathBuf,
    /// Target ID or entry ID to unbundle (repeatable, paired with --output).
    #[arg(long = "target", short = 't', value_name = "ID", required = true)]
    targets: Vec<String>,
    /// Output file for the target at the same position.
    #[arg(long = "output", short = 'o', value_name = "FILE", required = true)]
    outputs: Vec<PathBuf>,
    /// Write empty files for targets without a compatible entry.
    #[arg(long)]
    allow_missing: bool,
    /// Let hip/hipv4 entries serve openmp requests and the other way round.
    #[arg(long)]
    hip_openmp_compatible: bool,
    /// Which bundle of a file with several back to back (0-based).
    #[arg(long, value_name = "N")]
    bundle: Option<usize>,
}

/// Runs `gfxkit unbundle`.
pub fn run(args: Args) -> Result<ExitCode> {
    if args.targets.len() != args.outputs.len() {
        bail!(
            "--target and --output come in pairs: {} targets, {} outputs",
            args.targets.len(),
            args.outputs.len()
        );
    }
    let wanted: Vec<EntryId> = args
        .targets
        .iter()
        .map(|t| gfxkit_inventory::extract::requested_id(t))
        .collect::<gfxkit_inventory::Result<_>>()?;
    let data = crate::input::Input::open(&args.file)?;
    let name = data.path().display().to_string();
    let found = locate::find_bundles(&data).with_context(|| format!("cannot read {name}"))?;
    if found.is_empty() {
        bail!("{name}: no offload bundle in this file");
    }
    let b = match (args.bundle, found.len()) {
        (None, 1) => &found[0],
        (None, n) => bail!(
            "{name} holds {n} bundles back to back; choose one with --bundle (0-{})",
            n - 1
        ),
        (Some(i), n) => found
            .get(i)
            .with_context(|| format!("{name} holds {n} bundles; --bundle {i} is out of range"))?,
    };
    let ctx = || format!("{name}: bundle {} at offset {:#x}", b.index, b.offset);
    let contents = locate::uncompressed(b, HashCheck::Error).with_context(ctx)?;
    let bundle = Bundle::parse(&contents).with_context(ctx)?;
    // Every ID must parse (the error names the entry and where its ID lies).
    for e in bundle.entries() {
        e.parse_id().with_context(ctx)?;
    }
    // clang's matching rule; missing targets are reported here, so they are allowed there.
    let listed: Vec<(&str, &[u8])> = bundle.entries().iter().map(|e| (e.id, e.payload)).collect();
    let opts = UnbundleOptions {
        allow_missing: true,
        hip_openmp_compatible: args.hip_openmp_compatible,
    };
    let served: Vec<Option<usize>> = unbundle(&listed, &contents, &wanted, &opts)
        .with_context(ctx)?
        .into_iter()
        .map(|x| match x {
            Extracted::Entry { index, .. } => Some(index),
            _ => None,
        })
        .collect();
    let missing: Vec<&str> = (0..wanted.len())
        .filter(|&t| served[t].is_none())
        .map(|t| args.targets[t].as_str())
        .collect();
    if !missing.is_empty() && !args.allow_missing {
        eprintln!(
            "gfxkit: {name}: no compatible entry for {} (entries: {})",
            missing.join(", "),
            bundle
                .entries()
                .iter()
                .map(|e| e.id)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    for (t, out) in args.outputs.iter().enumerate() {
        let bytes: &[u8] = served[t].map_or(&[], |ei| bundle.entries()[ei].payload);
        crate::output::write_atomic(out, bytes)?;
    }
    Ok(ExitCode::SUCCESS)
}
