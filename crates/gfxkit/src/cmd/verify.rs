//! `gfxkit verify`: check bundles, standalone or inside host binaries, for damage and for
//! what keeps the HIP runtime from loading them. The rules are [`gfxkit_inventory::verify`]'s.

use anyhow::{bail, Context, Result};
use gfxkit_inventory::database;
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
code (JSON: \"without_device_code\").

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

/// Verifies one file's bytes: `.kpack` archives and split binaries through
/// `gfxkit_inventory::kpack`, everything else through the inventory's rules.
fn verify_any(
    path: &std::path::Path,
    data: &[u8],
    seen: &mut Seen,
) -> gfxkit_inventory::Result<Verification> {
    if let Some(v) = gfxkit_io::database::verify_file_bytes(path, data) {
        return v;
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    seen.processors = database::code_processors(&inv);
    if let Some(v) = crate::cmd::kpack::verify_file_bytes(path, data, &inv) {
        return Ok(v);
    }
    verify::verify(&path.display().to_string(), &inv)
}

/// What a file verified in a tree tells about the tree: the kernel-database file it is, or
/// the processors its own device code is built for (a library's, checked against the
/// database it loads: [`database::library_findings`]).
#[derive(Default)]
struct Seen {
    member: Option<database::DbMember>,
    processors: Vec<String>,
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

/// Whether `e` says the input holds no device code (no bundle, no kpack wrapper).
fn no_device_code(e: &anyhow::Error) -> bool {
    e.downcast_ref::<gfxkit_inventory::Error>()
        .is_some_and(|e| matches!(*e.kind, gfxkit_inventory::ErrorKind::NoDeviceCode))
}

/// One input's verification, or why there is none (typed: no device code is a
/// [`gfxkit_inventory::Error`] of kind `NoDeviceCode`). The inventory's error names no file;
/// `cannot verify PATH` adds it, once (an error of opening or walking the input, or a package
/// member, names it itself).
fn verify_one(path: &std::path::Path, data: &[u8]) -> Result<Verification> {
    verify_any(path, data, &mut Seen::default())
        .with_context(|| format!("cannot verify {}", path.display()))
}

/// [`verify_one`], with what the file tells about the tree it is found in.
fn verify_in_tree(path: &std::path::Path, data: &[u8]) -> (Result<Verification>, Seen) {
    let mut seen = Seen {
        member: database::member_of(&path.display().to_string(), data),
        ..Seen::default()
    };
    let r = verify_any(path, data, &mut seen)
        .with_context(|| format!("cannot verify {}", path.display()));
    if seen.member.is_some() {
        seen.processors.clear(); // A database file, not a library.
    }
    (r, seen)
}

/// The verifications of one input named or found: a file, or the members of one package.
struct Group {
    /// The package, for members of one.
    package: Option<PathBuf>,
    /// Named on the command line.
    explicit: bool,
    /// Each file or member, in order.
    results: Vec<(String, Result<Verification>)>,
}

/// Runs `gfxkit verify`.
pub fn run(args: Args) -> Result<ExitCode> {
    let mut groups: Vec<Group> = Vec::new();
    // In a tree: the kernel-database files found, and each library's processors.
    let mut members = Vec::new();
    let mut processors: Vec<(String, Vec<String>)> = Vec::new();
    if args.recursive {
        for s in crate::scan::scan(&args.files, &crate::scan::Options::default(), |p, d| {
            Ok(verify_in_tree(p, d))
        })? {
            let name = s.path.display().to_string();
            let r = s.result.and_then(|(r, seen)| {
                members.extend(seen.member);
                if !seen.processors.is_empty() {
                    processors.push((name.clone(), seen.processors));
                }
                r
            });
            match groups.last_mut() {
                Some(g) if g.package.is_some() && g.package == s.package => {
                    g.results.push((name, r))
                }
                _ => groups.push(Group {
                    package: s.package,
                    explicit: s.explicit,
                    results: vec![(name, r)],
                }),
            }
        }
    } else {
        for f in &args.files {
            if f.is_dir() && !gfxkit_io::input::is_image_dir(f) {
                bail!("{} is a directory (use -r to search it)", f.display());
            }
            match crate::input::for_each(f, |data| verify_one(data.path(), &data)) {
                Ok(items) => groups.push(Group {
                    package: items.iter().any(|(p, _)| p != f).then(|| f.clone()),
                    explicit: true,
                    results: items
                        .into_iter()
                        .map(|(p, r)| (p.display().to_string(), r))
                        .collect(),
                }),
                Err(e) => groups.push(Group {
                    package: None,
                    explicit: true,
                    results: vec![(f.display().to_string(), Err(e))],
                }),
            }
        }
    }
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    // Per package: the names of its members without device code.
    let mut without: Vec<(String, Vec<String>)> = Vec::new();
    for g in groups {
        let (results, none) = match &g.package {
            // Members without device code do not fail a package that has others.
            Some(_) => verify::package_members(g.results, no_device_code),
            None => (g.results, Vec::new()),
        };
        if let (Some(p), false) = (&g.package, none.is_empty()) {
            without.push((p.display().to_string(), none));
        }
        for (_, r) in results {
            match r {
                Ok(r) => reports.push(r),
                // Found in a directory without device code: not a library to verify.
                Err(e) if !g.explicit && no_device_code(&e) => {}
                Err(e) => errors.push(e),
            }
        }
    }
    // A library whose own device code is built for a processor its kernel database lacks.
    if !members.is_empty() && !processors.is_empty() {
        let databases = database::group(members);
        for (path, procs) in &processors {
            let found = database::library_findings(path, procs, &databases);
            if let (false, Some(r)) = (
                found.is_empty(),
                reports.iter_mut().find(|r| r.path == *path),
            ) {
                r.problems.extend(found);
                r.ok = false;
            }
        }
    }
    if args.json {
        let names: Vec<&String> = without.iter().flat_map(|(_, n)| n).collect();
        crate::output::print_json(&serde_json::json!({
            "files": reports,
            "without_device_code": names,
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        print_text(&reports, &mut out)?;
        for (pkg, names) in &without {
            let inner: Vec<&str> = names
                .iter()
                .map(|n| {
                    n.strip_prefix(pkg.as_str())
                        .and_then(|m| m.strip_prefix('!'))
                        .unwrap_or(n)
                })
                .collect();
            writeln!(
                out,
                "{pkg}: {} member{} without device code: {}",
                inner.len(),
                if inner.len() == 1 { "" } else { "s" },
                gfxkit_inventory::list::short_names(&inner)
            )?;
        }
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
