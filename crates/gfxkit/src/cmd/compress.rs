//! `gfxkit compress` and `gfxkit decompress`: convert between uncompressed and CCOB bundles.

use crate::containers;
use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_inventory::locate;
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `gfxkit compress`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Defaults follow LLVM 19: CCOB v2 with zstd level 3, as clang 19's --offload-compress writes
and every HIP runtime in the field reads. LLVM 22 and main write v3 by default (and main can
no longer write v1); --ccob-version 3 gives that format, which ROCm 6 runtimes and LLVM 19's
tools cannot read. v3 is also written automatically when a size does not fit v2's 32-bit
fields. A compressed input is decompressed (hash checked) and compressed
again with the settings given. Every bundle of a file holding several back to back is
compressed in turn.

On a machine of 4 cores or more zstd uses all of them; with fewer it compresses on one thread
while the MD5 hash is computed on a second (faster there: the workers need larger tables to
stay no larger than clang's output, about 2.6 times one thread's CPU), which gives clang's
exact bytes. --threads 0 gives clang's bytes anywhere, --threads N always uses N workers.
With worker threads, long-distance matching and clang's window are kept, and zstd's jobs are
made large (32 MiB jobs overlapping by 8 MiB), so the output is no larger than clang's on
real bundles. The MD5 hash is computed on a second thread meanwhile.

Examples:
  gfxkit compress app.hipfb -o app.z.hipfb
  gfxkit compress app.hipfb -o app.z.hipfb --ccob-version 3 --level 19
  gfxkit compress app.hipfb -o app.zlib.hipfb --method zlib

Exit codes: 0 written; 2 an error.")]
pub struct CompressArgs {
    /// The bundle file.
    input: PathBuf,
    /// The compressed bundle to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// CCOB version (default 2, as LLVM 19; LLVM 22 writes 3).
    #[arg(long, value_name = "2|3", value_parser = clap::value_parser!(u16).range(2..=3))]
    ccob_version: Option<u16>,
    /// Compression method.
    #[arg(long, value_name = "zstd|zlib", default_value = "zstd", value_parser = ["zstd", "zlib"])]
    method: String,
    /// Level (zstd 1-22, default 3; zlib 0-9, default 6).
    #[arg(long, allow_hyphen_values = true)]
    level: Option<i32>,
    /// zstd worker threads (default: the number of cores from 4 cores up, else 0;
    /// 0 = single-threaded, clang's bytes).
    #[arg(long)]
    threads: Option<u32>,
}

/// Options of `gfxkit decompress`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every compressed bundle is decompressed, its declared size and hash checked; uncompressed
bundles are copied as they are. Bundles back to back stay back to back, in order. Each bundle
is streamed into the output as it is decoded (hashed on a second thread), so memory stays near
the size of one bundle; a size or hash mismatch removes the unfinished output.

Examples:
  gfxkit decompress app.z.hipfb -o app.hipfb

Exit codes: 0 written; 2 an error (a hash mismatch included, unless --ignore-hash).")]
pub struct DecompressArgs {
    /// The compressed bundle file.
    input: PathBuf,
    /// The uncompressed bundle to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Decompress even when the hash does not match (warns).
    #[arg(long)]
    ignore_hash: bool,
}

/// Runs `gfxkit compress`.
pub fn run_compress(args: CompressArgs, reading: &gfxkit_io::Settings) -> Result<ExitCode> {
    let settings = containers::compress_options(
        args.ccob_version,
        args.method == "zlib",
        args.level,
        args.threads
            .unwrap_or_else(gfxkit_bundle::codec::default_workers),
    );
    convert_all(&args.input, &args.output, "compressing", reading, |b, _| {
        let plain = locate::uncompressed(b, HashCheck::Error)?;
        gfxkit_bundle::Bundle::parse(&plain)?;
        let packed = gfxkit_bundle::ccob::compress(&plain, &settings)?;
        Ok((plain.len() as u64, Cow::Owned(packed)))
    })
}

/// Runs `gfxkit decompress`.
pub fn run_decompress(args: DecompressArgs, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let hash = if args.ignore_hash {
        HashCheck::Warn
    } else {
        HashCheck::Error
    };
    // Streamed: each compressed bundle is decoded chunk by chunk into the temporary output
    // (hashed on a second thread), never held whole in memory; a size or hash error found at
    // the end of a bundle removes the temporary file.
    let data = crate::input::Input::open_with(&args.input, &(), settings)?;
    let name = data.path().display().to_string();
    let found = locate::find_bundles_with(&data, &settings.limits)
        .with_context(|| format!("cannot read {name}"))?;
    if found.is_empty() {
        bail!("{name}: no offload bundle in this file");
    }
    let opts = settings.limits.decompress_options_hash(hash);
    let bar = crate::output::progress(found.len() as u64, "decompressing", false);
    let mut total_out = 0u64;
    // An error in the input is reported as such, not as a failure to write the output.
    let mut input_error = None;
    let written = crate::output::write_atomic_with(&args.output, |w| {
        for b in &found {
            bar.inc(1);
            let ctx = || format!("{name}: bundle {} at offset {:#x}", b.index, b.offset);
            if b.ccob.is_none() {
                w.write_all(b.bytes)?;
                total_out += b.bytes.len() as u64;
                continue;
            }
            let mut sink = |c: &[u8]| {
                total_out += c.len() as u64;
                w.write_all(c)
            };
            match gfxkit_bundle::ccob::decompress_ccob_to(b.bytes, &opts, &mut sink) {
                Ok(s) if !s.hash_ok() => eprintln!("gfxkit: warning: {}: hash mismatch", ctx()),
                Ok(_) => {}
                Err(e) if matches!(e.kind, gfxkit_bundle::ErrorKind::Output { .. }) => {
                    return Err(e.into())
                }
                Err(e) => {
                    input_error = Some(anyhow::Error::new(e).context(ctx()));
                    bail!("stopped");
                }
            }
        }
        Ok(())
    });
    if let Some(e) = input_error {
        return Err(e);
    }
    written?;
    bar.finish_and_clear();
    let total_in = found.iter().map(|b| b.bytes.len() as u64).sum();
    report(&args.output, total_in, total_out)?;
    Ok(ExitCode::SUCCESS)
}

/// Converts every bundle of `input` with `convert` (given the bundle and how errors name it;
/// returns the bytes counted as input and the converted bundle), all before anything is
/// written; then writes them back to back to `output` and reports the sizes.
fn convert_all(
    input: &Path,
    output: &Path,
    verb: &str,
    settings: &gfxkit_io::Settings,
    mut convert: impl for<'d> FnMut(&gfxkit_host::Unit<'d>, &str) -> Result<(u64, Cow<'d, [u8]>)>,
) -> Result<ExitCode> {
    let data = crate::input::Input::open_with(input, &(), settings)?;
    let name = data.path().display().to_string();
    let found = locate::find_bundles_with(&data, &settings.limits)
        .with_context(|| format!("cannot read {name}"))?;
    if found.is_empty() {
        bail!("{name}: no offload bundle in this file");
    }
    let mut out_all = Vec::with_capacity(found.len());
    let mut total_in = 0u64;
    let bar = crate::output::progress(found.len() as u64, verb, false);
    for b in &found {
        bar.inc(1);
        let ctx = format!("{name}: bundle {} at offset {:#x}", b.index, b.offset);
        let (counted, converted) = convert(b, &ctx).with_context(|| ctx.clone())?;
        total_in += counted;
        out_all.push(converted);
    }
    bar.finish_and_clear();
    let total_out: u64 = out_all.iter().map(|p| p.len() as u64).sum();
    crate::output::write_atomic_with(output, |w| {
        for p in &out_all {
            w.write_all(p)?;
        }
        Ok(())
    })?;
    report(output, total_in, total_out)?;
    Ok(ExitCode::SUCCESS)
}

fn report(out: &std::path::Path, before: u64, after: u64) -> Result<()> {
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "{}: {} -> {} bytes ({:.1}%)",
        out.display(),
        before,
        after,
        if before == 0 {
            0.0
        } else {
            100.0 * after as f64 / before as f64
        }
    )?;
    Ok(())
}
