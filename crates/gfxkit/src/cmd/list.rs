//! `gfxkit list`: the device code in files: offload bundles and their entries, in standalone
//! bundle files and inside host binaries (executables, shared objects, objects, archives).

use anyhow::Result;
use gfxkit_inventory::list::{self, Listing};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit list`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs: standalone bundles (one, or several back to back like a dumped .hip_fatbin), ELF
executables, shared objects and relocatable objects (every bundle of .hip_fatbin, the
__CLANG_OFFLOAD_BUNDLE__* sections, .llvm.offloading images), ar archives (each member), and
AMDGPU code objects. With -r, directories are searched and files without device code skipped.

Compressed (CCOB) bundles are listed from their header alone: only as much is decompressed as
the bundle header needs, so listing stays fast and `hash_ok` is null. Without --check, list
does not verify: a damaged payload or a hash mismatch is not seen (`gfxkit verify`, `check`,
`doctor` and `select` decode and check it). With --check every compressed bundle is
decompressed in full and its hash verified.

For each entry, `cov` is the code-object version and `e_flags` whether the code object's
e_flags fit the target ID its entry ID names, both read from the code object's ELF header:
always for uncompressed bundles, for compressed ones only with --check ('-' when unknown).

Entry offsets are relative to the start of the (uncompressed) bundle; bundle offsets are
relative to the file.

Binaries split by kpack (HIPK wrappers) list one unit per wrapper, \"format\": \"kpack\", with
\"kpack_key\" and the code objects that key finds in the archives the marker names (each entry
with \"archive\" and \"stored_size\"; the file with \"kpack_archives\" and \"kpack_not_found\":
archives found, and paths or patterns that match no file). Only the archives' headers and
tables of contents are read. A .kpack file lists one unit per TOC key.

Kernel databases: a MIOpen .kdb file lists as one unit, \"format\": \"miopen-kdb\", with an
entry per kern_db record (id hipv4-amdgcn-amd-amdhsa--<target>, \"name\": its kernel_name,
size: uncompressed_size); an AOTriton .aks2 file as one unit, \"format\": \"aks2\", an entry per
kernel (target read from its code object). A Tensile index (TensileLibrary*.dat, .dat.zlib)
lists \"database\": {\"kind\": \"tensile\", \"solutions\", \"resolved\", \"rows\": [{\"processor\",
\"cu_count\", \"solutions\", \"shards\", \"files\", \"missing\"}]}, files resolved by the rule of
the library whose directory it is (rocBLAS or hipBLASLt, told by the directory's files) against
the index's directory (docs/kernel-databases.md). The text names a row's first few files;
--files names all.

Examples:
  gfxkit list app.hipfb
  gfxkit list /opt/rocm/lib/librocsparse.so
  gfxkit list --json librocsparse.so.hip_fatbin
  gfxkit list -r /opt/rocm/lib
  gfxkit list --check *.hipfb
  gfxkit list torch-2.5.1+rocm6.2-cp312-cp312-linux_x86_64.whl
  gfxkit list --summary --json venv/lib/python3.12/site-packages

Packages (wheels and zip files, .conda and .tar.bz2 conda packages, .deb, .rpm, .tar{,.gz,.xz,
.zst,.bz2}, archives inside archives) are read in place, detected by their magic bytes: each
member that holds device code is listed as its own file, path PACKAGE!MEMBER (nested
archives chain with '!'); members without device code are named together on one line per
package (the first eight, then \"and N more\"; --json lists each), except a CUDA build, listed
with the NVIDIA device code it holds. A package without device code says so (a note in JSON). --summary names every input without device code
(\"without_device_code\").

Container images (docker save archives, OCI image layouts as a tar or a directory) are read as the
file system their layers unpack to, whiteouts applied: each file with device code is listed as
IMAGE!/path/in/the/image, with \"layer\" (the digest of the layer holding it) in JSON; a
multi-platform image is read as linux/amd64 unless --platform says otherwise.
  gfxkit list --summary rocm.tar
  gfxkit list --platform linux/arm64 --json oci-layout-dir/

Exit codes: 0 listed; 1 a --check hash mismatch; 2 an unreadable or damaged file.")]
pub struct Args {
    /// Files (bundles, host binaries, archives, code objects); directories with -r.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path", "bundles":[{"offset", "section", "format", "ccob",
    /// "entries":[{"id", ..., "code_object_version", "eflags_agree"}]}], "nvidia":[{"member",
    /// "section", "offset", "size"}]}]}; `nvidia`, when present, is where a CUDA build's fat
    /// binaries lie.
    #[arg(long)]
    json: bool,
    /// Decompress compressed bundles in full, verify their hash and read their code objects'
    /// headers.
    #[arg(long)]
    check: bool,
    /// Search directories recursively (files that cannot hold device code are skipped).
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Print per package (or per site-packages distribution, from its *.dist-info/RECORD,
    /// or per file) the targets it ships and the bytes of each; searches directories. JSON:
    /// {"packages":[{"name", "kind", "files", "targets":{TARGET: BYTES}, "architectures",
    /// "device_bytes", "code_object_bytes"}], "without_device_code":["PATH"]}: targets and
    /// code_object_bytes count code objects uncompressed, device_bytes the bytes stored (as
    /// in list -r --json and diff).
    #[arg(long)]
    summary: bool,
    /// Name every file a kernel-database row opens or lacks (the text names the first few).
    #[arg(long = "files")]
    all_files: bool,
}

/// Runs `gfxkit list`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let opts = gfxkit_io::whole::ListOptions {
        recursive: args.recursive,
        check: args.check,
        every_file: args.summary,
    };
    let progress = crate::output::Reading::new(false);
    let files = gfxkit_io::whole::list(
        &args.files,
        opts,
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let files = files?;
    if args.summary {
        let failed = files.iter().any(|f| f.error.is_some());
        let summary = gfxkit_io::summary::summary(&files);
        if args.json {
            crate::output::print_json(&summary)?;
        } else {
            gfxkit_text::list::summary(
                &summary,
                &files,
                &mut std::io::stdout().lock(),
                &mut std::io::stderr(),
            )?;
        }
        return Ok(ExitCode::from(if failed { 2 } else { 0 }));
    }
    let summary = args.recursive.then(|| list::summarize(&files));
    let listing = Listing { files, summary };
    let (failed, bad_hash) = (listing.failed(), listing.bad_hash());
    if args.json {
        crate::output::print_json(&listing)?;
    } else {
        let streams = crate::output::Streams::new();
        gfxkit_text::list::listing_with(
            &listing,
            &gfxkit_text::list::Options {
                all_files: args.all_files,
            },
            &mut streams.out(),
            &mut streams.err(),
        )?;
        streams.finish()?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else if bad_hash {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
