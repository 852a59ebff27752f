//! `gfxkit kpack split|inline|list`: write and read ROCm's kpack split layout.

use anyhow::{Context, Result};
use gfxkit_inventory::kpack as inv_kpack;
use gfxkit_inventory::kpack::ArchiveListing;
use gfxkit_kpack::write::Compression;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `gfxkit kpack`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Split fat binaries into host-only binaries and one .kpack archive per architecture.
    Split(SplitArgs),
    /// Turn a split binary and its archives back into a fat binary.
    Inline(InlineArgs),
    /// List the kernels of .kpack archives (key, architecture, sizes).
    List(ListArgs),
}

/// How kernels are stored in written archives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CompressionArg {
    /// `zstd-per-kernel`, level 3 (what TheRock writes).
    Zstd,
    /// `none`: stored as they are.
    None,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Each input (an x86-64 shared object or executable with .hip_fatbin) becomes a host-only binary:
its .hipFatBinSegment wrappers get magic HIPK, their index N at +16 and a pointer to a new
.rocm_kpack_ref section (its own read-only PT_LOAD) holding the marker
{kpack_search_paths: [\"<rel>/<group>_@GFXARCH@.kpack\"], kernel_name}; .hip_fatbin is emptied
and the file shrinks. Every code object goes to <kpack dir>/<group>_<arch>.kpack under the key
<kernel_name>#<N> (an archive that already exists there keeps its other kernels). The split
binary is read back (its segments, and its wrappers as the runtime reads them) before
anything is written.

A Windows DLL or EXE (PE32+) is laid out as TheRock's Windows splitter does: the marker goes to
a new last section .kpackrf, the .hipFatB wrappers get HIPK and point to it (their base
relocations stay), and .hip_fat keeps its addresses but no file bytes (SizeOfRawData 0); the
sections after it move down in the file, SizeOfImage, SizeOfInitializedData and a non-zero
CheckSum follow. A signed image is refused unless --drop-signature. COFF objects and static
libraries (.obj, .lib, .o, .a) are refused: link them first.

With one FILE, OUT is the output binary and the kpack dir defaults to <dir of OUT>/../.kpack;
with several FILEs, OUT is a directory receiving each binary by its file name. With -r DIR,
OUT mirrors the tree (files without device code copied, symbolic links kept) and the
archives go to OUT/.kpack. kernel_name is the binary's path relative to the parent of the
kpack dir (lib/libfoo.so), or --kernel-name.

With -r DIR --overlays, OUT takes the layout of TheRock's artifact splitter: OUT/generic/
holds what every GPU needs (host-only binaries, files without device code, indexes serving
several processors) and OUT/<processor>/ what one needs: its archives (OUT/gfx942/.kpack/
<group>_gfx942.kpack, beside <group>_gfx942:xnack-.kpack and the like) and its kernel-database
files at their paths in the tree (rocBLAS/hipBLASLt code objects and per-architecture indexes,
MIOpen .kdb files, AOTriton .aks2 images, aiter's hsa/<arch>/ files). Which processor a
database file serves is read from its content (e_flags, kdb records, aks2 kernels, index rows),
not its name; links follow the file they lead to. Copy generic/ and the overlays of your GPUs
into one prefix to install.

After writing, the layout is read as the old kpack loader (ROCm 7 releases before the fix) reads
it: where an archive of a feature variant (t_gfx90a:xnack-.kpack) lacks a kernel of a binary
whose code is in the plain archive (t_gfx90a.kpack), that loader fails on such devices; each such
case is a warning on stderr and in --json's old_loader_failures.

Examples:
  gfxkit kpack split build/lib/libfoo.so --group foo -o dist/lib/libfoo.so
  gfxkit kpack split -r install/ --group rocm -o split/
  gfxkit kpack split -r install/ --group rocm --overlays -o artifacts/
  gfxkit kpack split libfoo.so --group foo -o out/libfoo.so --kpack-dir out/.kpack --compression none

Exit codes: 0 written; 2 an error (nothing is left half-written).")]
struct SplitArgs {
    /// Fat binaries (a directory with -r).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Archive group name (archives are `<group>_<arch>.kpack`).
    #[arg(long)]
    group: String,
    /// Output binary (one FILE) or directory (several FILEs, -r).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    out: PathBuf,
    /// Where the archives go.
    #[arg(long, value_name = "DIR")]
    kpack_dir: Option<PathBuf>,
    /// Split every binary under the directory given, mirroring the tree at OUT.
    #[arg(short = 'r', long)]
    recursive: bool,
    /// With -r: write OUT/generic/ and one overlay per processor, OUT/PROCESSOR/, with its
    /// archives and kernel-database files.
    #[arg(long, requires = "recursive")]
    overlays: bool,
    /// How kernels are stored.
    #[arg(long, value_enum, default_value = "zstd")]
    compression: CompressionArg,
    /// zstd level.
    #[arg(long, default_value_t = 3)]
    level: i32,
    /// The TOC key name (one FILE only).
    #[arg(long)]
    kernel_name: Option<String>,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    /// Split a signed Windows image (a DLL or EXE with an Authenticode certificate table),
    /// which is otherwise refused: the host image written is unsigned (sign it again).
    #[arg(long)]
    drop_signature: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The archives are found through the binary's marker as the runtime would (every architecture
the @GFXARCH@ pattern matches in its directory; ROCM_KPACK_PATH and ROCM_KPACK_PATH_PREFIX
honoured), plus any --archive. Each HIPK wrapper gets magic HIPF and points to a bundle
(host-x86_64-unknown-linux-- plus hipv4-amdgcn-amd-amdhsa--<arch> for every architecture any
archive holds for its key) in a new .hip_fatbin, in a new read-only PT_LOAD at the end (in a
DLL or EXE: back in .hip_fat, which keeps its addresses, compressed when the bundles would not
fit them otherwise; a last .kpackrf section is removed). The result is read back (segments, wrappers and their bundles) before it is written; a binary
inlined so can be split again.

Examples:
  gfxkit kpack inline dist/lib/libfoo.so -o libfoo-fat.so

Exit codes: 0 written; 2 an error (a key no archive holds is named).")]
struct InlineArgs {
    /// A split binary.
    file: PathBuf,
    /// The fat binary to write.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    out: PathBuf,
    /// More archives to take kernels from (searched first).
    #[arg(long = "archive", value_name = "KPACK")]
    archives: Vec<PathBuf>,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  gfxkit kpack list .kpack/foo_gfx942.kpack
  gfxkit kpack list --json .kpack/*.kpack --check

Exit codes: 0 listed; 1 --check found a kernel that does not decode (size, content checksum) or
is not a code object for its architecture; 2 an unreadable archive.")]
struct ListArgs {
    /// .kpack archives.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Decode every kernel: its size, its frame's content checksum (when it has one) and that
    /// it is a code object for its architecture.
    #[arg(long)]
    check: bool,
    /// JSON: {"archives":[{"path","group","family","arches","scheme","kernels":[{"key","arch","ordinal","size","stored_size"}]}]}.
    #[arg(long)]
    json: bool,
}

/// Runs `gfxkit kpack`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    match args.command {
        Sub::Split(a) => run_split(a, settings),
        Sub::Inline(a) => run_inline(a, settings),
        Sub::List(a) => run_list(a, settings),
    }
}

fn run_split(a: SplitArgs, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let compression = match a.compression {
        CompressionArg::Zstd => Compression::Zstd { level: a.level },
        CompressionArg::None => Compression::None,
    };
    let options = gfxkit_io::split::SplitOptions {
        drop_signature: a.drop_signature,
        limits: settings.limits,
    };
    let formats = gfxkit_io::format::Formats::standard().with_settings(settings.clone());
    let report =
        gfxkit_io::split_request::split_request(&gfxkit_io::split_request::SplitRequest {
            formats: &formats,
            inputs: &a.files,
            output: &a.out,
            group: &a.group,
            kpack_dir: a.kpack_dir.as_deref(),
            kernel_name: a.kernel_name.as_deref(),
            compression,
            options,
            tree: a.recursive.then_some(if a.overlays {
                gfxkit_io::split::TreeLayout::Overlays
            } else {
                gfxkit_io::split::TreeLayout::Single
            }),
        })?;
    for w in &report.old_loader_failures {
        eprintln!("gfxkit: warning: {w}");
    }
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        gfxkit_text::kpack::split(&report, &mut std::io::stdout().lock())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_inline(a: InlineArgs, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let report = gfxkit_io::split::inline(&a.file, &a.out, &a.archives, &settings.limits)?;
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        gfxkit_text::kpack::inline(&report, &mut std::io::stdout().lock())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists one archive's bytes (`gfxkit_inventory::kpack::archive_listing`).
fn list_archive(path: &str, data: &[u8], check: bool) -> Result<ArchiveListing> {
    inv_kpack::archive_listing(path, data, check)
        .with_context(|| format!("{path}: not a readable kpack archive"))
}

fn run_list(a: ListArgs, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let mut out = Vec::new();
    for p in &a.files {
        let data = crate::input::open(p, settings)?;
        out.push(list_archive(&p.display().to_string(), &data, a.check)?);
    }
    let bad = out.iter().any(ArchiveListing::has_bad_kernel);
    if a.json {
        crate::output::print_json(&serde_json::json!({ "archives": out }))?;
    } else {
        gfxkit_text::kpack::archives(&out, &mut std::io::stdout().lock())?;
    }
    Ok(if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `inspect` of a `.kpack` file: the header, the TOC fields and every kernel, each decoded
/// (its size checked) and its code object's target read from its ELF header.
pub fn inspect_archive(path: &Path, data: &[u8], json: bool) -> Result<ExitCode> {
    let name = path.display().to_string();
    let i = inv_kpack::inspect_archive(&name, data)
        .with_context(|| format!("{name}: not a readable kpack archive"))?;
    if json {
        crate::output::print_json(&i)?;
    } else {
        gfxkit_text::kpack::inspection(&i, &mut std::io::stdout().lock())?;
    }
    Ok(if i.listing.has_bad_kernel() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
