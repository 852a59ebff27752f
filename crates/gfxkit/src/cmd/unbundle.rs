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
their hash checked. A file holding several bundles back to back (CCOB v2/v3 bounded by the
size in their header) is walked as LLVM main's bundler does: each target comes from the one
bundle that has code for it; a target several bundles hold (one per translation unit) is an
error naming them; --bundle N reads bundle N only.

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
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
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
    let data = crate::input::Input::open_with(&args.file, &(), settings)?;
    let name = data.path().display().to_string();
    let found = locate::find_bundles_with(&data, &settings.limits)
        .with_context(|| format!("cannot read {name}"))?;
    if found.is_empty() {
        bail!("{name}: no offload bundle in this file");
    }
    let chosen: Vec<&gfxkit_host::Unit<'_>> = match (args.bundle, found.len()) {
        (None, _) => found.iter().collect(),
        (Some(i), n) => vec![found
            .get(i)
            .with_context(|| format!("{name} holds {n} bundles; --bundle {i} is out of range"))?],
    };
    // Each bundle in turn (several back to back are walked, each compressed one bounded by the
    // size in its header, as LLVM main's bundler does): which entry serves which target.
    // Payloads of compressed bundles are copied out so that only one bundle is decompressed
    // at a time; those stored uncompressed are kept as their place in the input.
    let mut served: Vec<Option<(usize, Served)>> = vec![None; wanted.len()];
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); wanted.len()];
    let mut all_ids: Vec<String> = Vec::new();
    for b in &chosen {
        let ctx = || format!("{name}: bundle {} at offset {:#x}", b.index, b.offset);
        let contents = locate::uncompressed(b, HashCheck::Error).with_context(ctx)?;
        let bundle = Bundle::parse(&contents).with_context(ctx)?;
        // Every ID must parse (the error names the entry and where its ID lies).
        for e in bundle.entries() {
            e.parse_id().with_context(ctx)?;
        }
        for e in bundle.entries() {
            // Each ID once: bundles of one file usually hold the same targets.
            if !all_ids.iter().any(|i| i == e.id) {
                all_ids.push(e.id.to_owned());
            }
        }
        // clang's matching rule; missing targets are reported below, so they are allowed here.
        let listed: Vec<(&str, &[u8])> =
            bundle.entries().iter().map(|e| (e.id, e.payload)).collect();
        let opts = UnbundleOptions {
            allow_missing: true,
            hip_openmp_compatible: args.hip_openmp_compatible,
        };
        let got = unbundle(&listed, &contents, &wanted, &opts).with_context(ctx)?;
        for (t, x) in got.into_iter().enumerate() {
            if let Extracted::Entry { index, .. } = x {
                holders[t].push(b.index);
                if served[t].is_none() {
                    let payload = bundle.entries()[index].payload;
                    let kept = match data.file_range(payload) {
                        Some(r) => {
                            Served::Input(r.offset as usize..r.offset as usize + payload.len())
                        }
                        None => Served::Owned(payload.to_vec()),
                    };
                    served[t] = Some((b.index, kept));
                }
            }
        }
    }
    // A target several bundles hold (one per translation unit, usually) has no one answer.
    let ambiguous: Vec<String> = (0..wanted.len())
        .filter(|&t| holders[t].len() > 1)
        .map(|t| {
            let h = &holders[t];
            let mut list: Vec<String> = h.iter().take(8).map(usize::to_string).collect();
            if h.len() > 8 {
                list.push(format!("... {} in all", h.len()));
            }
            format!("{} (bundles {})", args.targets[t], list.join(", "))
        })
        .collect();
    if !ambiguous.is_empty() {
        bail!(
            "{name} holds {} bundles back to back and several have code for {}: choose one \
             with --bundle, or write them all with `gfxkit extract`",
            found.len(),
            ambiguous.join("; ")
        );
    }
    let missing: Vec<&str> = (0..wanted.len())
        .filter(|&t| served[t].is_none())
        .map(|t| args.targets[t].as_str())
        .collect();
    if !missing.is_empty() && !args.allow_missing {
        eprintln!(
            "gfxkit: {name}: no compatible entry for {} (entries: {})",
            missing.join(", "),
            all_ids.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    for (t, out) in args.outputs.iter().enumerate() {
        let bytes: &[u8] = match served[t].as_ref() {
            None => &[],
            Some((_, Served::Input(r))) => &data[r.clone()],
            Some((_, Served::Owned(v))) => v,
        };
        // Stored uncompressed: copied from the input inside the kernel.
        crate::output::write_atomic_copy(out, bytes, data.file_range(bytes))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The payload chosen for a target: where it lies in the input, or decoded.
#[derive(Clone)]
enum Served {
    /// Bytes of the input file, stored uncompressed.
    Input(std::ops::Range<usize>),
    /// Bytes decoded from a compressed bundle.
    Owned(Vec<u8>),
}
