//! `gfxkit list`: the device code in files: offload bundles and their entries, in standalone
//! bundle files and inside host binaries (executables, shared objects, objects, archives).

use anyhow::Result;
use gfxkit_inventory::database::DatabaseListing;
use gfxkit_inventory::list::{self, BundleListing, FileListing, Listing};
use gfxkit_inventory::units::human_bytes as human;
use std::io::Write;
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
the bundle header needs, so listing stays fast and `hash_ok` is null. With --check every
compressed bundle is decompressed in full and its hash verified.

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
\"cu_count\", \"solutions\", \"files\", \"missing\"}]}, files resolved by rocBLAS's rule against
the index's directory (docs/kernel-databases.md).

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
package (the first eight, then \"and N more\"; --json lists each). A package without device
code says so (a note in JSON). --summary names every input without device code
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
    /// "entries":[{"id", ..., "code_object_version", "eflags_agree"}]}]}]}.
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
    /// "device_bytes"}], "without_device_code":["PATH"]}.
    #[arg(long)]
    summary: bool,
}

/// Runs `gfxkit list`.
pub fn run(args: Args) -> Result<ExitCode> {
    let opts = gfxkit_io::whole::ListOptions {
        recursive: args.recursive,
        check: args.check,
        every_file: args.summary,
    };
    let progress = crate::output::Reading::new(false);
    let files = gfxkit_io::whole::list(&args.files, opts, &progress);
    progress.finish();
    let files = files?;
    if args.summary {
        let failed = files.iter().any(|f| f.error.is_some());
        crate::cmd::list_summary::print(&files, args.json)?;
        return Ok(ExitCode::from(if failed { 2 } else { 0 }));
    }
    let summary = args.recursive.then(|| list::summarize(&files));
    let listing = Listing { files, summary };
    let (failed, bad_hash) = (listing.failed(), listing.bad_hash());
    if args.json {
        crate::output::print_json(&listing)?;
    } else {
        print_text(&listing, &mut std::io::stdout().lock())?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else if bad_hash {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Prints the listing as text on `out` (errors and problems go to stderr, after `out` is
/// flushed so they interleave in order). Members of a package without device code
/// ([`FileListing::without_device_code`]) are not listed one by one: one line after the
/// package's other members names them (`PKG: N members without device code: a.so, ...`,
/// the first [`list::NAMES_SHOWN`] names, then `and N more`); `--json` lists each.
pub fn print_text(listing: &Listing, out: &mut dyn Write) -> Result<()> {
    let mut first = true;
    let mut sep = |out: &mut dyn Write| -> Result<()> {
        if !std::mem::take(&mut first) {
            writeln!(out)?;
        }
        Ok(())
    };
    // Members without device code of the package being printed.
    let mut quiet: Vec<&str> = Vec::new();
    for (fi, f) in listing.files.iter().enumerate() {
        if let (Some(name), true) = (f.member_name(), f.without_device_code()) {
            quiet.push(name);
        } else {
            print_file(f, &mut sep, out)?;
        }
        let next_package = listing.files.get(fi + 1).and_then(|n| n.package.as_deref());
        if let Some(pkg) = f.package.as_deref().filter(|p| next_package != Some(*p)) {
            if !quiet.is_empty() {
                sep(out)?;
                writeln!(
                    out,
                    "{pkg}: {} without device code: {}",
                    plural(quiet.len(), "member", "members"),
                    list::short_names(&quiet)
                )?;
                quiet.clear();
            }
        }
    }
    if let Some(s) = &listing.summary {
        writeln!(
            out,
            "{}total: {} with device code, {}, {}, {}{}",
            if first { "" } else { "\n" },
            plural(s.files_with_device_code, "file", "files"),
            plural(s.bundles, "bundle", "bundles"),
            plural(s.entries, "entry", "entries"),
            human(s.device_bytes),
            if s.architectures.is_empty() {
                String::new()
            } else {
                format!("; {}", s.architectures.join(" "))
            }
        )?;
    }
    Ok(())
}

/// Prints one file's listing (after `sep`, the blank line between files).
fn print_file(
    f: &FileListing,
    sep: &mut dyn FnMut(&mut dyn Write) -> Result<()>,
    out: &mut dyn Write,
) -> Result<()> {
    sep(out)?;
    if let (Some(e), true) = (&f.error, f.bundles.is_empty()) {
        out.flush()?;
        eprintln!("gfxkit: error: {e}");
        return Ok(());
    }
    let archs = f.architectures();
    let arch_note = if archs.is_empty() {
        String::new()
    } else {
        format!("; {}", archs.into_iter().collect::<Vec<_>>().join(" "))
    };
    writeln!(
        out,
        "{}: {}, {}, {}{arch_note}",
        f.path,
        plural(f.bundles.len(), "bundle", "bundles"),
        plural(f.entries(), "entry", "entries"),
        human(f.device_bytes())
    )?;
    for (bi, b) in f.bundles.iter().enumerate() {
        print_bundle(out, bi, b)?;
    }
    if let Some(d) = &f.database {
        print_database(out, d)?;
    }
    if let Some(note) = &f.note {
        writeln!(out, "  ({note})")?;
    } else if f.bundles.is_empty() && f.error.is_none() && f.database.is_none() {
        writeln!(out, "  (no offload bundle)")?;
    }
    for a in &f.kpack_archives {
        writeln!(out, "  archive {a}")?;
    }
    for a in &f.kpack_not_found {
        writeln!(out, "  archive not found: {a}")?;
    }
    if !f.problems.is_empty() || f.error.is_some() {
        out.flush()?;
    }
    for p in &f.problems {
        eprintln!("gfxkit: {}: {}: {p}", p.severity, f.path);
    }
    if let Some(e) = &f.error {
        eprintln!("gfxkit: error: {e}");
    }
    Ok(())
}

/// A Tensile index's rows: processor, CU count, solutions, files opened and missing (for an
/// aiter kernel map, its number of kernels).
fn print_database(out: &mut dyn Write, d: &DatabaseListing) -> Result<()> {
    if d.kind == gfxkit_inventory::database::DbKind::AiterMap.name() {
        writeln!(
            out,
            "  aiter kernel map: {} (`verify` checks each against its code object)",
            plural(d.solutions, "kernel", "kernels")
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "  {} index: {}, {}{}",
        d.kind,
        plural(d.solutions, "solution", "solutions"),
        plural(d.rows.len(), "row", "rows"),
        if d.resolved {
            ""
        } else {
            " (files not resolved: the directory is not at hand)"
        }
    )?;
    for r in &d.rows {
        let who = match (&r.processor, r.cu_count) {
            (Some(p), Some(n)) => format!("{p} ({n} CUs)"),
            (Some(p), None) => p.clone(),
            (None, _) => "(any)".to_owned(),
        };
        let mut files = r.files.join(" ");
        if !r.missing.is_empty() {
            files.push_str(&format!("  MISSING: {}", r.missing.join(" ")));
        }
        writeln!(out, "    {who:<16} {:>6} solutions  {files}", r.solutions)?;
    }
    Ok(())
}

fn print_bundle(out: &mut dyn Write, bi: usize, b: &BundleListing) -> Result<()> {
    let form = match (&b.ccob, b.format) {
        (Some(c), _) => format!(
            "ccob v{} {}, {} -> {} ({:.2}x){}",
            c.version,
            c.method,
            human(b.size),
            human(c.uncompressed_size),
            c.ratio,
            match c.hash_ok {
                Some(true) => ", hash ok",
                Some(false) => ", HASH MISMATCH",
                None => "",
            }
        ),
        (None, "uncompressed") => format!("uncompressed, {}", human(b.size)),
        (None, _) => human(b.size),
    };
    let what = match b.format {
        "object-bundle" => "object bundle",
        "code-object" => "code object",
        "offload-image" => "offload image",
        "kpack" => "kpack",
        "miopen-kdb" => "MIOpen kernel database",
        "aks2" => "AOTriton kernel image",
        _ => "bundle",
    };
    let mut place = String::new();
    if let Some(m) = &b.member {
        place.push_str(&format!(" in {m}"));
    }
    if let Some(s) = &b.section {
        place.push_str(if b.member.is_some() { ", " } else { " in " });
        place.push_str(s);
    }
    if let Some(k) = &b.kpack_key {
        place.push_str(&format!(" key {k}"));
    }
    let header = if b.header_size > 0 {
        format!(", header {} bytes", b.header_size)
    } else {
        String::new()
    };
    writeln!(
        out,
        "  {what} {bi}{place} at {:#x}: {form}{header}",
        b.offset
    )?;
    let off_w = b
        .entries
        .iter()
        .map(|e| format!("{:#x}", e.offset).len())
        .max()
        .unwrap_or(0)
        .max(6);
    let size_w = b
        .entries
        .iter()
        .map(|e| e.size.to_string().len())
        .max()
        .unwrap_or(0)
        .max(4);
    writeln!(
        out,
        "    {:>3}  {:<off_w$}  {:>size_w$}  cov  e_flags  id",
        "#", "offset", "size"
    )?;
    for (i, e) in b.entries.iter().enumerate() {
        let mut note = match (&e.canonical_id, &e.id_error) {
            (_, Some(err)) => format!("  ({err})"),
            (Some(c), None) if *c != e.id => format!("  (= {c})"),
            _ => String::new(),
        };
        if let Some(n) = &e.id_note {
            note.push_str(&format!("  (note: {n})"));
        }
        if let Some(m) = &e.eflags_mismatch {
            note.push_str(&format!("  ({m})"));
        }
        if let Some(a) = &e.archive {
            note.push_str(&format!("  in {a}"));
        }
        if let Some(n) = &e.name {
            note.push_str(&format!("  {n}"));
        }
        let cov = e
            .code_object_version
            .map_or_else(|| "-".to_owned(), |v| format!("v{v}"));
        let agree = match e.eflags_agree {
            Some(true) => "ok",
            Some(false) => "DIFFER",
            None => "-",
        };
        writeln!(
            out,
            "    {i:>3}  {:<off_w$}  {:>size_w$}  {cov:>3}  {agree:<7}  {}{note}",
            format!("{:#x}", e.offset),
            e.size,
            e.id
        )?;
    }
    Ok(())
}
