//! `gfxkit verify`: check bundles, standalone or inside host binaries, for damage and for
//! what keeps the HIP runtime from loading them. The rules are [`gfxkit_inventory::verify`]'s.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Checks, for every bundle in each file: the structure (entry table, payload ranges, overlaps,
duplicate IDs), the compressed bundle's declared sizes and MD5 hash (decompressing it), the
syntax of every entry ID (device entries must use the 5-part form comgr reads), target IDs
the bundler would refuse together (gfx90a with gfx90a:xnack+), a header larger than the 4096
bytes the HIP runtime reads, and that each device payload is an AMDGPU code object built for
the target its ID names (its e_flags read with the rules of its own code-object version) and
reads as inspect reads it (section headers, metadata note): a truncated one is a problem.

For kpack: a .kpack archive is checked for a known version, a readable TOC and frame index,
every kernel decoding to its original_size (the frame's content checksum checked when it has
one, as the frames gfxkit writes do) and to an AMDGPU code object for its architecture, and
TOC architectures missing from gfx_arches. A
binary split by kpack (HIPK wrappers) is checked against the archives its marker finds: the
marker parses and names a kernel and paths, every wrapper's key <kernel_name>#<index at +16>
is in some archive, no archive lacks a kernel the binary asks for, no TOC key of the binary
matches no wrapper index, no variant archive (gfx90a:xnack-) shadows the plain one under the
old first-match loader, and every archive passes the archive checks.

Kernel databases: every MIOpen .kdb blob decodes to its uncompressed_size with its MD5 and is a
code object for its target; every AOTriton .aks2 kernel is a code object for the target its
header names; for a Tensile index (TensileLibrary*.dat), every file a row needs exists beside it
and every solution of a row is a function symbol of the files rocBLAS opens for that processor.

In host binaries it also checks what host discovery finds: .hipFatBinSegment wrappers that
point nowhere, outside the file or not at a bundle, bundles no wrapper registers, bundles that
run past their section or leave unreadable bytes, damaged archives and .llvm.offloading images.

Examples:
  gfxkit verify app.hipfb
  gfxkit verify --json build/*.hipfb
  gfxkit verify /opt/rocm/lib/librocsparse.so
  gfxkit verify -r /opt/rocm/lib

Packages are verified member by member (PACKAGE!MEMBER); members without device code (CPU-only
libraries) are named on one line per package and do not fail it when other members hold device
code (JSON: \"without_device_code\"); members whose only device code is for other GPUs (a CUDA
build, SYCL object bundles) do not fail it either, and are named each on its own line with what
they hold (JSON: \"other_gpus_only\", path and reason). A package is judged as its files in a
tree: rocBLAS or hipBLASLt by the kernel database beside it in the package, a Tensile index,
hipBLASLt mapping or aiter kernel map by the members beside it (the files each row loads, each
mapped library, each code object named); the function symbols of those members are checked on
disk only (verify -r of the unpacked tree).

Exit codes: 0 no problem; 1 a problem found; 2 a file that cannot be read or holds no bundle.")]
pub struct Args {
    /// Bundle files, host binaries (executables, shared objects, objects), archives, code
    /// objects; directories with -r.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path", "ok", "bundles", "entries", "problems":[...]}],
    /// "without_device_code":["PACKAGE!MEMBER"]}.
    #[arg(long)]
    json: bool,
    /// Search directories recursively (files without device code are skipped).
    #[arg(short = 'r', long)]
    recursive: bool,
}

pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let progress = crate::output::Reading::new(false);
    let report = gfxkit_io::whole::verify(
        &args.files,
        args.recursive,
        &gfxkit_io::format::Formats::standard().with_settings(settings.clone()),
        &progress,
    );
    progress.finish();
    let gfxkit_io::whole::VerifyReport {
        files: reports,
        without_device_code: without,
        other_gpus_only,
        errors,
    } = report?;
    if args.json {
        let names: Vec<&String> = without.iter().flat_map(|(_, n)| n).collect();
        let mut json = serde_json::json!({
            "files": reports,
            "without_device_code": names,
        });
        if !other_gpus_only.is_empty() {
            json["other_gpus_only"] = serde_json::to_value(&other_gpus_only)?;
        }
        crate::output::print_json(&json)?;
    } else {
        let streams = crate::output::Streams::new();
        let mut out = streams.out();
        gfxkit_text::verify::reports(&reports, &mut out)?;
        gfxkit_text::verify::other_gpus_only(&other_gpus_only, &mut out)?;
        gfxkit_text::verify::without_device_code(&without, &mut out)?;
        streams.finish()?;
    }
    for e in &errors {
        eprintln!("gfxkit: error: {e}");
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if reports.iter().any(|r| !r.ok) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
