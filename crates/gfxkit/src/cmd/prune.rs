//! `gfxkit prune`: keep or drop GPU architectures in host binaries and bundles, making the file
//! smaller.

use anyhow::{bail, Result};
use gfxkit_shrink::{Conversion, EntryFilter, Method, Pattern, Report, Transform};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Keep or drop architectures in an executable, shared object, relocatable object, archive or
/// standalone bundle. Every bundle is rewritten with only the kept entries (the host entry is
/// always kept), in its original format and compression unless a conversion is asked for;
/// wrappers, relocations and symbols are fixed, and what follows the device code moves down
/// by whole pages so the file gets smaller while every segment keeps its address.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
gfxkit prune --keep gfx90a librocsparse.so -o librocsparse-gfx90a.so\n  \
gfxkit prune --drop gfx906 --drop gfx908 libfoo.so --in-place\n  \
gfxkit prune --keep gfx1030 --dry-run app\n  \
gfxkit prune --keep gfx90a /usr/lib/x86_64-linux-gnu -o rocblas-gfx90a\n  \
gfxkit prune --keep gfx1151 amdhip_kernels.dll -o out/amdhip_kernels.dll --drop-signature\n  \
gfxkit prune --keep gfx942 torch-2.5.1+rocm6.2-cp312-cp312-linux_x86_64.whl -o out/\
torch-2.5.1+rocm6.2-cp312-cp312-linux_x86_64.whl\n\n\
Packages: a wheel, .conda, .tar.bz2 conda package or tarball is pruned as the tree of its \
members would be (see Trees): host libraries rewritten, members of dropped targets only left \
out, a multi-architecture TensileLibrary.dat cut to the kept rows; the package is written again \
with every other member copied as it was and *.dist-info/RECORD (wheels) or info/paths.json \
(conda) updated, read back and checked before the rename. .deb and .rpm packages are refused \
(their checksums and signatures need the distribution's tools). --json then prints {input, \
output, dry_run, members: [{path, size_before, size_after, ...the report of that member}], \
files: [the members kept, dropped or cut whole, as a tree's files]}.\n\n\
Trees: `prune --keep gfx90a DIR -o OUTDIR` writes a pruned copy of DIR. Host binaries are pruned as above; raw code objects (Tensile's TensileLibrary_gfx*.co and Kernels.so-*.hsaco, aiter's hsa/<arch>/*.co) are kept or dropped by the target their ELF header names; .kpack archives by the architectures of their table of contents (a binary split by kpack is kept); a multi-architecture TensileLibrary.dat (.dat.zlib) is rewritten to the kept processor rows and the solutions they reach, and read back before it is written; per-architecture Tensile indexes, MIOpen .kdb files and AOTriton .aks2 files of dropped targets are dropped, as are directories named for a dropped processor that hold only its device code (aiter's hsa/gfx950/). Every other file is copied unchanged, symbolic links stay links (a link to a dropped path is dropped with it), permissions are kept. The tree is written to a temporary directory beside OUTDIR and renamed at the end; with --in-place, beside DIR, synced to disk, and exchanged with DIR in one step, the old tree then removed. --json then prints {input, output, dry_run, seconds, size_before, size_after, unmatched, files: [{path, kind, action, targets, size_before, size_after, note, index: {kept_rows, dropped_rows, solutions_before, solutions_after}, report}]}.\n\n\
--keep gfx90a keeps gfx90a, gfx90a:xnack+ and gfx90a:xnack- entries; --keep gfx90a:xnack+ keeps \
gfx90a:xnack+ and gfx90a (which runs on such devices). --drop drops the entries a pattern names.\n\n\
A prune that would leave no device code at all (every GPU entry of the file or package dropped, \
as a mistyped target does) is refused with exit 2 and nothing written, unless --allow-empty. A \
target that matches no entry of a file is named on stderr and listed in the report's \
`unmatched`.\n\n\
--json prints {input, output, dry_run, seconds, kind, size_before, size_after, unmatched, regions: [{member, \
section, layout: {kind, ...}, wrappers, relocations, symbols, bundles: [{offset, new_offset, \
size_before, size_after, encoding_before, encoding_after, changed, kept: [{id, target, size, md5}], \
dropped: [{id, target, size}]}]}]}; for a package, {input, output, dry_run, seconds, members: \
[{path, size_before, size_after, kind, ...}]}. Python's gfxkit.prune returns the same object.")]
pub struct Args {
    /// Keep only entries for these targets (repeatable, or comma-separated).
    #[arg(
        long,
        value_name = "TARGET_ID",
        value_delimiter = ',',
        required_unless_present = "drop",
        conflicts_with = "drop"
    )]
    pub keep: Vec<String>,
    /// Drop entries for these targets (repeatable, or comma-separated).
    #[arg(long, value_name = "TARGET_ID", value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Write the result even when it would hold no device code at all (by default such a
    /// prune is refused: a mistyped or absent target would otherwise strip every GPU).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub convert: ConvertArgs,
    #[command(flatten)]
    pub io: IoArgs,
}

/// How bundles are stored after the rewrite.
#[derive(clap::Args, Debug, Default)]
pub struct ConvertArgs {
    /// Store every bundle uncompressed.
    #[arg(long, conflicts_with_all = ["ccob_version", "method", "level"])]
    pub uncompressed: bool,
    /// Compress every bundle as CCOB version 2 or 3 (1 is accepted for very old readers).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=3))]
    pub ccob_version: Option<u16>,
    /// Compression method.
    #[arg(long, value_enum)]
    pub method: Option<MethodArg>,
    /// Compression level (zstd 1-22, zlib 0-9).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
}

/// A compression method on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum MethodArg {
    /// zstd (CCOB method 1).
    Zstd,
    /// zlib (CCOB method 0).
    Zlib,
}

impl ConvertArgs {
    /// The conversion asked for; `Keep` when no option is given.
    pub fn conversion(&self) -> Result<Conversion> {
        if self.uncompressed {
            return Ok(Conversion::Uncompressed);
        }
        if self.ccob_version.is_none() && self.method.is_none() && self.level.is_none() {
            return Ok(Conversion::Keep);
        }
        let method = match self.method {
            Some(MethodArg::Zlib) => Method::Zlib,
            _ => Method::Zstd,
        };
        if let Some(l) = self.level {
            let ok = match method {
                Method::Zstd => (1..=22).contains(&l),
                Method::Zlib => (0..=9).contains(&l),
            };
            if !ok {
                bail!("--level {l} is out of range for {method:?} (zstd 1-22, zlib 0-9)");
            }
        }
        Ok(Conversion::Compressed {
            version: self.ccob_version.unwrap_or(2),
            method,
            level: self.level,
        })
    }
}

/// Input, output and safety options shared by `prune` and `recompress`.
#[derive(clap::Args, Debug)]
pub struct IoArgs {
    /// Input file, package, or (prune) directory tree.
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Output file (may not name the input; use --in-place for that); for a tree, a directory
    /// that does not exist or is empty, outside the tree.
    #[arg(short, long, value_name = "OUT", required_unless_present_any = ["in_place", "dry_run"])]
    pub output: Option<PathBuf>,
    /// Replace the input: written to a temporary file beside it, verified, then renamed (a
    /// tree: written beside it, synced, then exchanged with it).
    #[arg(long, conflicts_with = "output")]
    pub in_place: bool,
    /// Print what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Rewrite a signed Windows image (DLL, EXE with an Authenticode certificate table), which
    /// is otherwise refused: the output is unsigned (sign it again).
    #[arg(long)]
    pub drop_signature: bool,
}

impl IoArgs {
    /// The file to write: none for a dry run, the file the input names (through a symbolic
    /// link, the file it leads to, not the link) in place, else `--output`.
    pub fn target(&self) -> Option<PathBuf> {
        if self.dry_run {
            None
        } else if self.in_place {
            Some(std::fs::canonicalize(&self.input).unwrap_or_else(|_| self.input.clone()))
        } else {
            self.output.clone()
        }
    }
}

/// Runs `gfxkit prune`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let parse = |v: &[String]| -> Result<Vec<Pattern>> {
        v.iter()
            .map(|s| Pattern::parse(s).map_err(|e| anyhow::anyhow!("bad target: {e}")))
            .collect()
    };
    let selection = if !args.keep.is_empty() {
        EntryFilter::Keep(parse(&args.keep)?)
    } else {
        EntryFilter::Drop(parse(&args.drop)?)
    };
    let transform = Transform {
        selection,
        conversion: args.convert.conversion()?,
        limits: settings.limits,
    };
    execute(&args.io, &transform, args.allow_empty, settings)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => {
            if x == y {
                return true;
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                if let (Ok(m), Ok(n)) = (std::fs::metadata(&x), std::fs::metadata(&y)) {
                    return m.dev() == n.dev() && m.ino() == n.ino();
                }
            }
            false
        }
        _ => false,
    }
}

/// Rewrites `io.input` with `t`, verifies the result and writes it (or only reports it).
/// Unless `allow_empty`, a prune that leaves no device code is refused before anything is
/// written; targets of the selection that match nothing are named on stderr. A package input
/// is walked under `settings`.
pub fn execute(
    io: &IoArgs,
    t: &Transform,
    allow_empty: bool,
    settings: &gfxkit_io::Settings,
) -> Result<ExitCode> {
    if let Some(out) = &io.output {
        if same_file(&io.input, out) {
            bail!(
                "-o {} names the input file; use --in-place to replace it",
                out.display()
            );
        }
    }
    if gfxkit_io::tree::is_tree(&io.input) {
        return execute_tree(io, t, allow_empty, settings);
    }
    let mapped = crate::input::open(&io.input, settings)?;
    if crate::input::is_package(&mapped) {
        return execute_package(io, t, &mapped, allow_empty, settings);
    }
    let name = io.input.display().to_string();
    let started = std::time::Instant::now();
    // A spinner with the current phase on a terminal; nothing when stderr is not one.
    let progress = crate::output::spinner(format!("rewriting {name}"));
    let target = io.target();
    let formats = gfxkit_io::format::Formats::standard().with_settings(settings.clone());
    let opts = gfxkit_io::rewrite::RewriteOptions {
        target: target.as_deref(),
        like: Some(&io.input),
        durability: if io.in_place {
            crate::output::Durability::Synced
        } else {
            crate::output::Durability::Rename
        },
        allow_empty,
        drop_signature: io.drop_signature,
        // The entries' MD5 digests are only in the JSON report: computed for it alone.
        digests: io.json,
        formats: &formats,
        source: None,
    };
    let phase = |p: gfxkit_io::rewrite::Phase<'_>| {
        use gfxkit_io::rewrite::Phase;
        progress.set_message(match p {
            Phase::Rewriting => format!("rewriting {name}"),
            Phase::Verifying => format!("verifying the rewrite of {name}"),
            Phase::Writing(path) => format!("writing and re-verifying {}", path.display()),
        })
    };
    let original = gfxkit_io::rewrite::Original::Input(&mapped);
    let done = gfxkit_io::rewrite::rewrite_file(&io.input, original, t, &opts, &phase)?;
    progress.suspend(|| note_unmatched(&t.selection, [(name.as_str(), &done)]));
    progress.finish_and_clear();
    let elapsed = started.elapsed();
    report(&name, target.as_deref(), &done, io, elapsed)?;
    Ok(ExitCode::SUCCESS)
}

/// Names on stderr each target of `selection` that matches no entry of a file
/// ([`gfxkit_text::prune::unmatched`]).
pub fn note_unmatched<'r>(
    selection: &gfxkit_shrink::EntryFilter,
    reports: impl IntoIterator<Item = (&'r str, &'r Report)>,
) {
    for line in gfxkit_text::prune::unmatched(selection, reports) {
        eprintln!("{line}");
    }
}

fn report(
    name: &str,
    written: Option<&Path>,
    r: &Report,
    io: &IoArgs,
    elapsed: std::time::Duration,
) -> Result<()> {
    if io.json {
        return print_outcome(
            name,
            written,
            io,
            elapsed,
            gfxkit_inventory::prune::Done::File(r),
        );
    }
    gfxkit_text::prune::file(
        name,
        written,
        io.dry_run,
        r,
        elapsed,
        &mut std::io::stdout().lock(),
    )?;
    Ok(())
}

/// `prune` and `recompress` of a package: the rewrite, its verification and the checked
/// write are `gfxkit_io::package`'s.
///
/// Rewrites the package `input` (named by `io.input`) with `t` (`gfxkit_io::package`).
fn execute_package(
    io: &IoArgs,
    t: &Transform,
    input: &crate::input::Input,
    allow_empty: bool,
    settings: &gfxkit_io::Settings,
) -> Result<ExitCode> {
    let name = io.input.display().to_string();
    let target = io.target();
    // Only the replacement of an input must reach the disk before the rename.
    let durability = if io.in_place {
        crate::output::Durability::Synced
    } else {
        crate::output::Durability::Rename
    };
    let started = std::time::Instant::now();
    let formats = gfxkit_io::format::Formats::standard().with_settings(settings.clone());
    let opts = gfxkit_io::rewrite::RewriteOptions {
        target: target.as_deref(),
        like: Some(&io.input),
        durability,
        allow_empty,
        drop_signature: false,
        digests: true,
        formats: &formats,
        source: Some(input),
    };
    let done = gfxkit_io::package::rewrite_package(&name, input, t, &opts)?;
    match &done.unmatched {
        Some(unmatched) => note_unmatched_targets(&t.selection, unmatched, &name),
        None => note_unmatched(
            &t.selection,
            done.reports.iter().map(|(m, r)| (m.as_str(), r)),
        ),
    }
    print_report(&name, target.as_deref(), io, &done, started.elapsed())?;
    Ok(ExitCode::SUCCESS)
}

/// Notes each target of the selection that matches no device code of the tree or package
/// `name`.
fn note_unmatched_targets(selection: &EntryFilter, unmatched: &[String], name: &str) {
    let flag = match selection {
        EntryFilter::Keep(_) => "--keep",
        _ => "--drop",
    };
    for u in unmatched {
        eprintln!("gfxkit: note: {flag} {u} matches no device code of {name}");
    }
}

fn print_report(
    name: &str,
    written: Option<&Path>,
    io: &IoArgs,
    done: &gfxkit_io::package::Rewritten,
    elapsed: std::time::Duration,
) -> Result<()> {
    let changed = &done.changed;
    if io.json {
        let members = done.members();
        let done = gfxkit_inventory::prune::Done::Package {
            members,
            files: &done.files,
        };
        return print_outcome(name, written, io, elapsed, done);
    }
    gfxkit_text::prune::package(name, written, changed, &mut std::io::stdout().lock())?;
    Ok(())
}

/// `prune` of a directory tree: the pruning, its checks and the write are `gfxkit_io::tree`'s.
///
/// Prunes the tree `io.input` into `-o OUTDIR`, or in place (or only reports, with
/// `--dry-run`).
fn execute_tree(
    io: &IoArgs,
    t: &Transform,
    allow_empty: bool,
    settings: &gfxkit_io::Settings,
) -> Result<ExitCode> {
    if io.drop_signature {
        bail!("--drop-signature is for one Windows image, not a tree");
    }
    let name = io.input.display().to_string();
    let target = io.target();
    let started = std::time::Instant::now();
    let progress = crate::output::spinner(format!("pruning {name}"));
    let to = match (&target, io.in_place) {
        (None, _) => gfxkit_io::tree::TreeOutput::DryRun,
        (Some(_), true) => gfxkit_io::tree::TreeOutput::InPlace,
        (Some(out), false) => gfxkit_io::tree::TreeOutput::Dir(out),
    };
    let formats = gfxkit_io::format::Formats::standard().with_settings(settings.clone());
    let done = gfxkit_io::tree::prune_tree(&formats, &io.input, t, to, allow_empty)?;
    progress.finish_and_clear();
    note_unmatched_targets(&t.selection, &done.unmatched, &name);
    let elapsed = started.elapsed();
    if io.json {
        let tree = gfxkit_inventory::prune::Done::Tree {
            size_before: done.size_before,
            size_after: done.size_after,
            unmatched: &done.unmatched,
            files: &done.files,
        };
        print_outcome(&name, target.as_deref(), io, elapsed, tree)?;
        return Ok(ExitCode::SUCCESS);
    }
    gfxkit_text::prune::tree(
        &name,
        target.as_deref(),
        io.dry_run,
        &done,
        elapsed,
        &mut std::io::stdout().lock(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Prints `prune --json`'s outcome of `name` (written to `written`, or a dry run).
fn print_outcome(
    name: &str,
    written: Option<&Path>,
    io: &IoArgs,
    elapsed: std::time::Duration,
    done: gfxkit_inventory::prune::Done<'_>,
) -> Result<()> {
    crate::output::print_json(&gfxkit_inventory::prune::PruneOutcome {
        input: name,
        output: written.map(|p| p.display().to_string()),
        dry_run: io.dry_run,
        seconds: elapsed.as_secs_f64(),
        done,
    })
}
