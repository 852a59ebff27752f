//! `gfxkit extract`: bundle entries (code objects) to files with stable names.

use crate::bundles;
use anyhow::{bail, Context, Result};
use gfxkit_bundle::ccob::HashCheck;
use gfxkit_bundle::{Bundle, EntryId};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit extract`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Files are named <file stem>.<bundle index>.<entry id>.co, the entry ID with every character
other than letters, digits, '.', '_', '+' and '-' replaced by '_' (':' becomes '_'):
  app.0.hipv4-amdgcn-amd-amdhsa--gfx90a_xnack+.co
Empty host entries are skipped. With --target, each bundle gives the first entry compatible
with each target, following clang-offload-bundler's matching (a bare target ID such as
gfx90a:xnack+ means hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+).

Examples:
  gfxkit extract app.hipfb -o out/
  gfxkit extract app.hipfb --target gfx90a:xnack+ --target gfx1100
  gfxkit extract --json librocsparse.so.hip_fatbin -o co/

Exit codes: 0 written; 1 a --target matched no entry (nothing written); 2 an error.")]
pub struct Args {
    /// A bundle file (or several bundles back to back).
    file: PathBuf,
    /// Extract only entries compatible with this target ID or entry ID (repeatable).
    #[arg(long = "target", short = 't', value_name = "ID")]
    targets: Vec<String>,
    /// Output directory (created when missing).
    #[arg(
        short = 'o',
        long = "output-dir",
        value_name = "DIR",
        default_value = "."
    )]
    out_dir: PathBuf,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
    /// Extract even when a compressed bundle's hash does not match (warns).
    #[arg(long)]
    ignore_hash: bool,
}

/// JSON: one written file.
#[derive(Serialize)]
struct Written {
    path: String,
    bundle: usize,
    entry: usize,
    id: String,
    size: u64,
}

/// The entry ID a user wrote: a full entry ID, or a bare target ID meaning a HIP entry.
pub fn requested_id(s: &str) -> Result<EntryId> {
    if let Ok(id) = EntryId::parse(s) {
        return Ok(id);
    }
    let tid = gfxkit_target_id::TargetId::parse(s)
        .with_context(|| format!("'{s}' is neither an entry ID nor a target ID"))?;
    Ok(EntryId::hip(tid))
}

/// A file-name-safe form of an entry ID.
pub fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs `gfxkit extract`.
pub fn run(args: Args) -> Result<ExitCode> {
    let wanted: Vec<EntryId> = args
        .targets
        .iter()
        .map(|t| requested_id(t))
        .collect::<Result<_>>()?;
    let data = crate::input::Input::open(&args.file)?;
    let found = bundles::find_bundles(&data)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    if found.is_empty() {
        bail!("{}: no offload bundle in this file", data.path().display());
    }
    let stem = args
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".to_owned());
    let hash = if args.ignore_hash {
        HashCheck::Warn
    } else {
        HashCheck::Error
    };
    // Plan from the headers alone (no payload decompressed), so that nothing is written when
    // a target matches nothing; then write bundle by bundle.
    let mut plan: Vec<Vec<(usize, String, u64, u64)>> = Vec::with_capacity(found.len());
    let mut matched = vec![false; wanted.len()];
    for b in &found {
        let ctx = || {
            format!(
                "{}: bundle {} at offset {:#x}",
                args.file.display(),
                b.index,
                b.offset
            )
        };
        let (entries, _, _) = bundles::read_header(b, false).with_context(ctx)?;
        let mut picked: Vec<usize> = Vec::new();
        if wanted.is_empty() {
            picked = (0..entries.len())
                .filter(|&i| !(entries[i].size == 0 && entries[i].id.starts_with("host-")))
                .collect();
        } else {
            let ids: Vec<Option<EntryId>> =
                entries.iter().map(|e| EntryId::parse(&e.id).ok()).collect();
            for (wi, w) in wanted.iter().enumerate() {
                let hit = ids.iter().enumerate().find(|(i, id)| {
                    !picked.contains(i)
                        && id
                            .as_ref()
                            .is_some_and(|id| id.is_compatible_with(w, false))
                });
                if let Some((i, _)) = hit {
                    picked.push(i);
                    matched[wi] = true;
                }
            }
            picked.sort_unstable();
        }
        plan.push(
            picked
                .into_iter()
                .map(|i| (i, entries[i].id.clone(), entries[i].offset, entries[i].size))
                .collect(),
        );
    }
    if let Some(wi) = matched.iter().position(|m| !m) {
        eprintln!(
            "gfxkit: no entry of {} is compatible with {}",
            args.file.display(),
            args.targets[wi]
        );
        return Ok(ExitCode::from(1));
    }
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    let mut written = Vec::new();
    let bar = bundles::progress(plan.iter().map(|p| p.len() as u64).sum(), "extracting");
    for (b, picks) in found.iter().zip(&plan) {
        if picks.is_empty() {
            continue;
        }
        let ctx = || {
            format!(
                "{}: bundle {} at offset {:#x}",
                args.file.display(),
                b.index,
                b.offset
            )
        };
        let contents = bundles::uncompressed(b, hash).with_context(ctx)?;
        let bundle = Bundle::parse(&contents).with_context(ctx)?;
        let mut jobs = Vec::with_capacity(picks.len());
        for (i, id, _, size) in picks {
            let e = bundle
                .entries()
                .get(*i)
                .filter(|e| e.id == id)
                .with_context(|| format!("{}: entry {i} changed while reading", ctx()))?;
            let path = args
                .out_dir
                .join(format!("{stem}.{}.{}.co", b.index, sanitize(id)));
            jobs.push((path, e.payload, *i, id, *size));
        }
        // Distinct files: written in parallel, each atomically; errors in entry order.
        use rayon::prelude::*;
        let results: Vec<Result<()>> = jobs
            .par_iter()
            .map(|(path, payload, ..)| {
                let r = crate::bundles::write_file(path, payload);
                bar.inc(1);
                r
            })
            .collect();
        for ((path, _, i, id, size), r) in jobs.into_iter().zip(results) {
            r?;
            written.push(Written {
                path: path.display().to_string(),
                bundle: b.index,
                entry: i,
                id: id.clone(),
                size,
            });
        }
    }
    bar.finish_and_clear();
    if args.json {
        crate::bundles::print_json(&serde_json::json!({ "written": written }))?;
    } else {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for w in &written {
            writeln!(out, "{}  {} bytes  ({})", w.path, w.size, w.id)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
