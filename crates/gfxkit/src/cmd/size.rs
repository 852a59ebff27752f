//! `gfxkit size`: where device bytes go, per architecture, file and bundle, and what a prune
//! would save.

use anyhow::Result;
use gfxkit_inventory::size;
use gfxkit_text::size as text;
use std::path::PathBuf;
use std::process::ExitCode;

/// Device bytes per architecture, per file and per bundle, compressed (stored) and
/// uncompressed, over files and directory trees. Stored bytes of a compressed bundle holding
/// several entries are shared out among them in proportion to their uncompressed sizes
/// (marked "estimated"); bundle headers and padding are counted apart ("overhead"). With
/// --keep, also what `gfxkit prune --keep ...` would save. Raw code objects (`.co`, `.hsaco`,
/// file kind `code-object`) and kernel databases (MIOpen `.kdb` records,
/// AOTriton `.aks2` kernels, file kind `kernel-database`) are counted by architecture too.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "size does not verify: it counts the sizes bundle headers give. Of a compressed \
(CCOB) bundle only the first bytes are decompressed, as many as the bundle header inside needs \
(its entries' IDs and sizes; the uncompressed size is the CCOB header's), so a damaged payload \
or a hash mismatch is not seen. With --check every compressed bundle is decompressed in full \
and its hash checked (one that does not decode, or whose hash does not match, is an error, exit \
2). No code object is read either way, so a damaged code object is counted as its header says \
(gfxkit verify, check, doctor and select decode and check every one).\n\n\
Examples:\n  \
gfxkit size /usr/lib/x86_64-linux-gnu/librocsparse.so\n  \
gfxkit size /opt/rocm/lib --by file --keep gfx90a\n  \
gfxkit size /usr/lib/x86_64-linux-gnu --by library\n  \
gfxkit size /opt/rocm/lib --html report.html\n  \
gfxkit size --duplicates /opt/rocm/lib venv/lib/python3.12/site-packages\n  \
gfxkit size --check /opt/rocm/lib\n\n\
--json prints {archs: [{arch, entries, stored, uncompressed, estimated, kept?}], \
files: [{path, kind, file_size, bundles, stored, uncompressed, overhead, prune_saves?, archs}], \
bundles: [{path, member, offset, encoding, stored, uncompressed, targets}], stored, \
uncompressed, overhead, keep, prune_saves?, errors, duplicates?}; sizes in bytes; an arch's \
stored bytes are its payloads' (estimated: a share of a compressed bundle holding several \
entries, the shares adding up to the bundle), overhead the stored bytes in no entry (bundle \
headers, padding), so that the archs' stored and overhead add up to stored; `?` fields only with --keep \
(prune_saves, kept) or --duplicates (duplicates: {bytes, groups: [{sha256, size, count, places: [{path, \
unit, entry}]}]}: identical code objects by the SHA-256 of the uncompressed code object, bytes the \
uncompressed size of every copy beyond the first, the largest saving first). --by library adds \
libraries: [{path, database, files, stored, uncompressed, prune_saves?}]: each library with the \
kernel databases it loads (rocBLAS's rocblas/<version>/library beside librocblas.so), then each \
database no library loads, by its directory or package."
)]
pub struct Args {
    #[command(flatten)]
    pub searched: super::AlwaysRecursive,
    /// Files or directories (searched recursively; files without device code are skipped).
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Group the table by architecture, file or bundle.
    #[arg(long, value_enum, default_value_t = By::Arch)]
    pub by: By,
    /// Show what keeping only these targets would save (repeatable, or comma-separated).
    #[arg(long, value_name = "TARGET_ID", value_delimiter = ',')]
    pub keep: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page (chart per architecture, sortable table per file).
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// Also find identical code objects (by SHA-256 of the uncompressed code object) stored
    /// more than once across the inputs, and what keeping one copy of each would save.
    #[arg(long)]
    pub duplicates: bool,
    /// With --duplicates: how many groups the text lists (JSON lists every one).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Decompress every compressed bundle in full and verify its hash (without it, compressed
    /// bundles are counted from their headers and not verified).
    #[arg(long)]
    pub check: bool,
}

/// How the table is grouped.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// One row per architecture (target ID).
    Arch,
    /// One row per file.
    File,
    /// One row per bundle.
    Bundle,
    /// One row per library, with the kernel databases it loads (and one per database no
    /// library loads).
    Library,
}

/// Runs `gfxkit size`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let opts = gfxkit_io::whole::SizeOptions {
        keep: size::Keep::parse(&args.keep)?,
        by_library: args.by == By::Library,
        duplicates: args.duplicates,
        check: args.check,
    };
    let progress = crate::output::Reading::new(args.json);
    let report = gfxkit_io::whole::size(
        &args.paths,
        &opts,
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let report = report?;
    if let Some(html) = &args.html {
        crate::output::write_atomic(html, size::html(&report).as_bytes())?;
    }
    if args.json {
        crate::output::print_json(&report)?;
    } else {
        let streams = crate::output::Streams::new();
        let out = &mut streams.out();
        let by = match args.by {
            By::Arch => text::By::Arch,
            By::File => text::By::File,
            By::Bundle => text::By::Bundle,
            By::Library => text::By::Library,
        };
        text::table(&report, by, out)?;
        if let Some(d) = &report.duplicates {
            text::duplicates(d, args.top, out)?;
        }
        streams.finish()?;
    }
    for e in &report.errors {
        // Each of these makes the command exit 2: an error, not a warning.
        eprintln!("gfxkit: error: {e}");
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
