//! `gfxkit verify`: check bundles, standalone or inside host binaries, for damage and for
//! what keeps the HIP runtime from loading them. The rules are [`gfxkit_inventory::verify`]'s.

use anyhow::{bail, Context, Result};
use gfxkit_inventory::verify::{self, Verification};
use std::io::Write;
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

In host binaries it also checks what host discovery finds: .hipFatBinSegment wrappers that
point nowhere, outside the file or not at a bundle, bundles no wrapper registers, bundles that
run past their section or leave unreadable bytes, damaged archives and .llvm.offloading images.

Examples:
  gfxkit verify app.hipfb
  gfxkit verify --json build/*.hipfb
  gfxkit verify /opt/rocm/lib/librocsparse.so
  gfxkit verify -r /opt/rocm/lib

Exit codes: 0 no problem; 1 a problem found; 2 a file that cannot be read or holds no bundle.")]
pub struct Args {
    /// Bundle files, host binaries (executables, shared objects, objects), archives, code
    /// objects; directories with -r.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path", "ok", "bundles", "entries", "problems":[...]}]}.
    #[arg(long)]
    json: bool,
    /// Search directories recursively (files without device code are skipped).
    #[arg(short = 'r', long)]
    recursive: bool,
}

/// Verifies one file's bytes: `.kpack` archives and split binaries through
/// `gfxkit_inventory::kpack`, everything else through the inventory's rules.
fn verify_any(path: &std::path::Path, data: &[u8]) -> gfxkit_inventory::Result<Verification> {
    let inv = gfxkit_inventory::Inventory::of(data);
    if let Some(v) = crate::cmd::kpack::verify_file_bytes(path, data, &inv) {
        return Ok(v);
    }
    verify::verify(&path.display().to_string(), &inv)
}

fn counts(r: &Verification) -> String {
    format!(
        "{} bundle{}, {} entr{}",
        r.bundles,
        if r.bundles == 1 { "" } else { "s" },
        r.entries,
        if r.entries == 1 { "y" } else { "ies" }
    )
}

/// Runs `gfxkit verify`.
pub fn run(args: Args) -> Result<ExitCode> {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    if args.recursive {
        for s in crate::scan::scan(&args.files, &crate::scan::Options::default(), |p, d| {
            // The only error is a file without device code: skipped when found in a directory.
            Ok(verify_any(p, d).ok())
        })? {
            match s.result {
                Ok(Some(r)) => reports.push(r),
                Ok(None) if s.explicit => errors.push(anyhow::anyhow!(
                    "cannot verify {}: no offload bundle in this file",
                    s.path.display()
                )),
                Ok(None) => {}
                // The error names the file (or `package!member`) itself.
                Err(e) => errors.push(e),
            }
        }
    } else {
        for f in &args.files {
            if f.is_dir() {
                bail!("{} is a directory (use -r to search it)", f.display());
            }
            // The inventory's error names no file; `cannot verify PATH` adds it, once. An
            // error of opening or walking the input (or a package member) names it itself.
            let each = crate::input::for_each(f, |data| {
                verify_any(data.path(), &data)
                    .with_context(|| format!("cannot verify {}", data.path().display()))
            });
            match each {
                Ok(items) => {
                    for (_, r) in items {
                        match r {
                            Ok(r) => reports.push(r),
                            Err(e) => errors.push(e),
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
    }
    if args.json {
        crate::output::print_json(&serde_json::json!({ "files": reports }))?;
    } else {
        print_text(&reports, &mut std::io::stdout().lock())?;
    }
    for e in &errors {
        eprintln!("gfxkit: error: {e:#}");
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if reports.iter().any(|r| !r.ok) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints verification reports as text on `out`.
pub fn print_text(reports: &[Verification], out: &mut dyn Write) -> Result<()> {
    for r in reports {
        if r.ok {
            writeln!(out, "{}: ok ({})", r.path, counts(r))?;
            continue;
        }
        writeln!(
            out,
            "{}: {} problem{} ({})",
            r.path,
            r.problems.len(),
            if r.problems.len() == 1 { "" } else { "s" },
            counts(r)
        )?;
        for p in &r.problems {
            let mut at = String::new();
            let mut place = String::new();
            if let Some(m) = &p.member {
                place.push_str(&format!(" in {m}"));
            }
            if let Some(s) = &p.section {
                let sep = if p.member.is_some() { "," } else { " in" };
                place.push_str(&format!("{sep} {s}"));
            }
            match (p.bundle, p.bundle_offset) {
                (Some(b), Some(o)) => at.push_str(&format!("bundle {b}{place} at {o:#x}: ")),
                (None, Some(o)) => {
                    at.push_str(format!("{} at {o:#x}: ", place.trim_start()).trim_start())
                }
                _ => {}
            }
            if let Some(e) = p.entry {
                at.push_str(&format!("entry {e}"));
                if let Some(id) = &p.id {
                    at.push_str(&format!(" ({id})"));
                }
                at.push_str(": ");
            }
            writeln!(out, "  {at}{}", p.message)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_report_names_bundle_place_and_entry() {
        let bundle = gfxkit_bundle::write_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"not elf"),
            ],
            4096,
        )
        .unwrap();
        let ok = verify::verify_bytes("a.hipfb", &bundle).unwrap();
        let mut out = Vec::new();
        print_text(&[ok], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a.hipfb: 1 problem (1 bundle, 2 entries)\n  bundle 0 at 0x0: entry 1 \
             (hipv4-amdgcn-amd-amdhsa--gfx90a): payload is not an AMDGPU code object: not an \
             ELF file (no \\x7fELF magic) (at offset 0x0)\n"
        );
    }
}
