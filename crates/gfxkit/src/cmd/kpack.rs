//! `gfxkit kpack split|inline|list`: write and read ROCm's kpack split layout.

use crate::input::Input;
use crate::kpack_files;
use anyhow::{bail, Context, Result};
use gfxkit_inventory::kpack as inv_kpack;
use gfxkit_inventory::kpack::{ArchiveInspection, ArchiveListing, KernelListing};
use gfxkit_kpack::split;
use gfxkit_kpack::write::Compression;
use gfxkit_kpack::Archive;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
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
<kernel_name>#<N> (an archive that already exists there keeps its other kernels).

With one FILE, OUT is the output binary and the kpack dir defaults to <dir of OUT>/../.kpack;
with several FILEs, OUT is a directory receiving each binary by its file name. With -r DIR,
OUT mirrors the tree (files without device code copied, symbolic links kept) and the
archives go to OUT/.kpack. kernel_name is the binary's path relative to the parent of the
kpack dir (lib/libfoo.so), or --kernel-name.

Examples:
  gfxkit kpack split build/lib/libfoo.so --group foo -o dist/lib/libfoo.so
  gfxkit kpack split -r install/ --group rocm -o split/
  gfxkit kpack split libfoo.so --group foo -o out/libfoo.so --kpack-dir out/.kpack --compression none

Exit codes: 0 written; 2 an error (nothing is left half-written).")]
struct SplitArgs {
    /// Fat binaries (a directory with -r).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Archive group name (archives are <group>_<arch>.kpack).
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
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The archives are found through the binary's marker as the runtime would (every architecture
the @GFXARCH@ pattern matches in its directory; ROCM_KPACK_PATH and ROCM_KPACK_PATH_PREFIX
honoured), plus any --archive. Each HIPK wrapper gets magic HIPF and points to a bundle
(host-x86_64-unknown-linux-- plus hipv4-amdgcn-amd-amdhsa--<arch> for every architecture any
archive holds for its key) in a new .hip_fatbin, in a new read-only PT_LOAD at the end.

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

Exit codes: 0 listed; 1 --check found a kernel that does not decode; 2 an unreadable archive.")]
struct ListArgs {
    /// .kpack archives.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Decode every kernel and check its size.
    #[arg(long)]
    check: bool,
    /// JSON: {"archives":[{"path","group","family","arches","scheme","kernels":[{"key","arch","ordinal","size","stored_size"}]}]}.
    #[arg(long)]
    json: bool,
}

/// Runs `gfxkit kpack`.
pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Sub::Split(a) => run_split(a),
        Sub::Inline(a) => run_inline(a),
        Sub::List(a) => run_list(a),
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    Ok(gfxkit_kpack::search::resolve_path(
        Path::new("/"),
        &p.to_string_lossy(),
    ))
}

/// `to` relative to directory `from` (both absolute, normalised).
fn relative(from: &Path, to: &Path) -> String {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); f.len() - common];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// Refuses `-o` naming an input.
fn refuse_same(input: &Path, out: &Path) -> Result<()> {
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(out)) {
        if a == b {
            bail!(
                "-o {} names the input; write elsewhere (inputs are never modified)",
                out.display()
            );
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct SplitReport {
    binaries: Vec<BinaryReport>,
    archives: Vec<ArchiveReport>,
    copied: usize,
}

#[derive(Serialize)]
struct BinaryReport {
    input: String,
    output: String,
    kernel_name: String,
    wrappers: usize,
    code_objects: usize,
    size_before: u64,
    size_after: u64,
}

#[derive(Serialize)]
struct ArchiveReport {
    path: String,
    arch: String,
    kernels: usize,
    uncompressed: u64,
    size: u64,
}

struct Job {
    input: PathBuf,
    output: PathBuf,
    kernel_name: String,
}

fn run_split(a: SplitArgs) -> Result<ExitCode> {
    if a.group.is_empty() || a.group.contains('/') {
        bail!("--group {:?} must be a non-empty name without '/'", a.group);
    }
    let mut jobs = Vec::new();
    let mut copies: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    let kpack_dir;
    if a.recursive {
        let [root] = a.files.as_slice() else {
            bail!("-r takes one directory");
        };
        if !root.is_dir() {
            bail!("{} is not a directory", root.display());
        }
        let root_abs = absolute(root)?;
        let out_abs = absolute(&a.out)?;
        if out_abs.starts_with(&root_abs) {
            bail!(
                "-o {} lies inside the input tree {}",
                a.out.display(),
                root.display()
            );
        }
        kpack_dir = match &a.kpack_dir {
            Some(d) => absolute(d)?,
            None => out_abs.join(".kpack"),
        };
        let name_root = kpack_dir.parent().unwrap_or(&out_abs).to_path_buf();
        let mut stack = vec![root_abs.clone()];
        while let Some(d) = stack.pop() {
            let mut entries: Vec<_> = std::fs::read_dir(&d)
                .with_context(|| format!("cannot read {}", d.display()))?
                .flatten()
                .collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let p = e.path();
                let rel = p.strip_prefix(&root_abs).unwrap_or(&p).to_path_buf();
                let dst = out_abs.join(&rel);
                let ft = e.file_type()?;
                if ft.is_symlink() {
                    links.push((std::fs::read_link(&p)?, dst));
                } else if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file() {
                    if splittable(&p) {
                        let kernel_name = relative(&name_root, &dst);
                        jobs.push(Job {
                            input: p,
                            output: dst,
                            kernel_name,
                        });
                    } else {
                        copies.push((p, dst));
                    }
                }
            }
        }
    } else if a.files.len() == 1 {
        let out_abs = absolute(&a.out)?;
        let out_dir = out_abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        kpack_dir = match &a.kpack_dir {
            Some(d) => absolute(d)?,
            None => out_dir.join("../.kpack"),
        };
        let kpack_dir =
            gfxkit_kpack::search::resolve_path(Path::new("/"), &kpack_dir.to_string_lossy());
        let kernel_name = match &a.kernel_name {
            Some(k) => k.clone(),
            None => kernel_name_for(&out_abs, &kpack_dir),
        };
        jobs.push(Job {
            input: a.files[0].clone(),
            output: out_abs,
            kernel_name,
        });
    } else {
        if a.kernel_name.is_some() {
            bail!("--kernel-name takes one FILE");
        }
        let out_abs = absolute(&a.out)?;
        kpack_dir = match &a.kpack_dir {
            Some(d) => absolute(d)?,
            None => out_abs.join("../.kpack"),
        };
        for f in &a.files {
            let name = f
                .file_name()
                .with_context(|| format!("{} has no file name", f.display()))?;
            let dst = out_abs.join(name);
            let kernel_name = kernel_name_for(&dst, &kpack_dir);
            jobs.push(Job {
                input: f.clone(),
                output: dst,
                kernel_name,
            });
        }
    }
    let kpack_dir =
        gfxkit_kpack::search::resolve_path(Path::new("/"), &kpack_dir.to_string_lossy());
    let compression = match a.compression {
        CompressionArg::Zstd => Compression::Zstd { level: a.level },
        CompressionArg::None => Compression::None,
    };
    let mut names = std::collections::HashSet::new();
    for j in &jobs {
        refuse_same(&j.input, &j.output)?;
        if !names.insert(j.kernel_name.clone()) {
            bail!("two inputs would both be stored as {}", j.kernel_name);
        }
    }
    // Split every binary (kept in memory: the kernels borrow from the mapped inputs).
    let inputs: Vec<Input> = jobs
        .iter()
        .map(|j| Input::open(&j.input))
        .collect::<Result<_>>()?;
    let mut splits = Vec::with_capacity(jobs.len());
    for (j, data) in jobs.iter().zip(&inputs) {
        let out_dir = j.output.parent().unwrap_or(Path::new("/"));
        let pattern =
            gfxkit_kpack::marker::search_pattern(&relative(out_dir, &kpack_dir), &a.group);
        let s = split::split_binary(data, &j.kernel_name, &[pattern])
            .with_context(|| format!("cannot split {}", j.input.display()))?;
        splits.push(s);
    }
    // Archives: one per architecture, merged with one already there.
    let by_arch = inv_kpack::kernels_by_arch(&splits);
    std::fs::create_dir_all(&kpack_dir)
        .with_context(|| format!("cannot create {}", kpack_dir.display()))?;
    let new_names: std::collections::HashSet<&str> =
        jobs.iter().map(|j| j.kernel_name.as_str()).collect();
    let mut archives = Vec::new();
    let mut planned = Vec::new();
    for (arch, kernels) in &by_arch {
        let path = kpack_dir.join(format!("{}_{arch}.kpack", a.group));
        let old = if path.is_file() {
            Some(Input::open(&path)?)
        } else {
            None
        };
        let m = inv_kpack::merged_archive(
            &a.group,
            arch,
            kernels,
            old.as_deref(),
            &new_names,
            compression,
        )
        .with_context(|| path.display().to_string())?;
        archives.push(ArchiveReport {
            path: path.display().to_string(),
            arch: arch.clone(),
            kernels: m.kernels,
            uncompressed: m.uncompressed,
            size: m.bytes.len() as u64,
        });
        planned.push((path, m.bytes));
    }
    // Write: archives first, then binaries (a binary never names an archive not yet there).
    for (path, bytes) in &planned {
        crate::output::write_atomic(path, bytes)?;
    }
    let mut binaries = Vec::new();
    for ((j, s), data) in jobs.iter().zip(&splits).zip(&inputs) {
        if let Some(d) = j.output.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        crate::output::write_atomic_checked(
            &j.output,
            |w| w.write_all(&s.host).map_err(Into::into),
            |_| Ok(()),
            Some(&j.input),
            crate::output::Durability::Rename,
        )?;
        binaries.push(BinaryReport {
            input: j.input.display().to_string(),
            output: j.output.display().to_string(),
            kernel_name: j.kernel_name.clone(),
            wrappers: s.wrappers,
            code_objects: s.kernels.len(),
            size_before: data.len() as u64,
            size_after: s.host.len() as u64,
        });
    }
    for (src, dst) in &copies {
        if let Some(d) = dst.parent() {
            std::fs::create_dir_all(d)?;
        }
        let bytes = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
        crate::output::write_atomic_checked(
            dst,
            |w| w.write_all(&bytes).map_err(Into::into),
            |_| Ok(()),
            Some(src),
            crate::output::Durability::Rename,
        )?;
    }
    for (target, dst) in &links {
        if let Some(d) = dst.parent() {
            std::fs::create_dir_all(d)?;
        }
        let _ = std::fs::remove_file(dst);
        std::os::unix::fs::symlink(target, dst)
            .with_context(|| format!("cannot create the link {}", dst.display()))?;
    }
    let report = SplitReport {
        binaries,
        archives,
        copied: copies.len(),
    };
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        print_split(&mut std::io::stdout().lock(), &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `kpack split`'s text: a line per binary written, per archive, and the files copied.
fn print_split(o: &mut dyn Write, report: &SplitReport) -> std::io::Result<()> {
    for b in &report.binaries {
        writeln!(
            o,
            "{}: {} wrappers, {} code objects, {} -> {} bytes ({})",
            b.output, b.wrappers, b.code_objects, b.size_before, b.size_after, b.kernel_name
        )?;
    }
    for r in &report.archives {
        writeln!(
            o,
            "{}: {} kernels, {} bytes ({} uncompressed)",
            r.path, r.kernels, r.size, r.uncompressed
        )?;
    }
    if report.copied > 0 {
        writeln!(o, "{} files without device code copied", report.copied)?;
    }
    Ok(())
}

/// The TOC name of a binary written at `out`: its path below the parent of the kpack dir, or
/// `<dir name>/<file name>` when it is elsewhere.
fn kernel_name_for(out: &Path, kpack_dir: &Path) -> String {
    if let Some(root) = kpack_dir.parent() {
        if let Ok(rel) = out.strip_prefix(root) {
            return rel.to_string_lossy().into_owned();
        }
    }
    let file = out
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match out.parent().and_then(|p| p.file_name()) {
        Some(d) => format!("{}/{file}", d.to_string_lossy()),
        None => file,
    }
}

/// Whether a file is a fat ELF binary `split` should handle (HIPF wrappers and bundles).
fn splittable(p: &Path) -> bool {
    let Ok(data) = Input::open(p) else {
        return false;
    };
    let kind = gfxkit_host::InputKind::sniff(data.get(..64).unwrap_or(&data));
    if !matches!(
        kind,
        gfxkit_host::InputKind::ElfSharedObject | gfxkit_host::InputKind::ElfExecutable
    ) {
        return false;
    }
    let found = gfxkit_host::discover(&data);
    !found.bundles.is_empty()
        && found
            .wrappers
            .iter()
            .any(|w| w.magic == gfxkit_host::WrapperMagic::Hipf)
}

#[derive(Serialize)]
struct InlineReport {
    input: String,
    output: String,
    archives: Vec<String>,
    bundles: Vec<InlineBundle>,
    size_before: u64,
    size_after: u64,
}

#[derive(Serialize)]
struct InlineBundle {
    key: String,
    arches: Vec<String>,
}

fn run_inline(a: InlineArgs) -> Result<ExitCode> {
    refuse_same(&a.file, &a.out)?;
    let data = Input::open(&a.file)?;
    let found = gfxkit_host::discover(&data);
    if gfxkit_kpack::view::hipk_wrappers(&found).next().is_none() {
        bail!(
            "{}: no HIPK wrapper (not a kpack-split binary)",
            a.file.display()
        );
    }
    let mut extra = Vec::new();
    for p in &a.archives {
        extra.push((p.clone(), Input::open(p)?));
    }
    let opened = kpack_files::all_archives(&a.file, &found, &kpack_files::env());
    let mut parsed = Vec::new();
    let mut used = Vec::new();
    for (p, i) in extra.iter().chain(&opened.files) {
        let ar = Archive::parse(i).with_context(|| format!("cannot read {}", p.display()))?;
        used.push(p.display().to_string());
        parsed.push(ar);
    }
    let refs: Vec<&Archive<'_>> = parsed.iter().collect();
    let out = split::inline_binary(&data, &refs).with_context(|| {
        let mut m = format!("cannot inline {}", a.file.display());
        if !opened.not_found.is_empty() {
            m.push_str(&format!(" (not found: {})", opened.not_found.join(", ")));
        }
        m
    })?;
    crate::output::write_atomic_checked(
        &a.out,
        |w| w.write_all(&out.bytes).map_err(Into::into),
        |_| Ok(()),
        Some(&a.file),
        crate::output::Durability::Rename,
    )?;
    let report = InlineReport {
        input: a.file.display().to_string(),
        output: a.out.display().to_string(),
        archives: used,
        bundles: out
            .bundles
            .into_iter()
            .map(|(key, arches)| InlineBundle { key, arches })
            .collect(),
        size_before: data.len() as u64,
        size_after: out.bytes.len() as u64,
    };
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        println!(
            "{}: {} bundles from {} archives, {} -> {} bytes",
            report.output,
            report.bundles.len(),
            report.archives.len(),
            report.size_before,
            report.size_after
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists one archive's bytes (`gfxkit_inventory::kpack::archive_listing`).
fn list_archive(path: &str, data: &[u8], check: bool) -> Result<ArchiveListing> {
    inv_kpack::archive_listing(path, data, check)
        .with_context(|| format!("{path}: not a readable kpack archive"))
}

fn run_list(a: ListArgs) -> Result<ExitCode> {
    let mut out = Vec::new();
    for p in &a.files {
        let data = Input::open(p)?;
        out.push(list_archive(&p.display().to_string(), &data, a.check)?);
    }
    let bad = out.iter().any(ArchiveListing::has_bad_kernel);
    if a.json {
        crate::output::print_json(&serde_json::json!({ "archives": out }))?;
    } else {
        print_archives(&mut std::io::stdout().lock(), &out)?;
    }
    Ok(if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `kpack list`'s text: a line per archive, then one per kernel.
pub fn print_archives(o: &mut dyn Write, archives: &[ArchiveListing]) -> std::io::Result<()> {
    for l in archives {
        writeln!(
            o,
            "{}: group {}, arches {}, {}, {} kernels",
            l.path,
            l.group.as_deref().unwrap_or("-"),
            l.arches.join(" "),
            l.scheme,
            l.kernels.len()
        )?;
        for k in &l.kernels {
            write_kernel(o, k, "")?;
        }
    }
    Ok(())
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
        print_inspection(&mut std::io::stdout().lock(), &i)?;
    }
    Ok(if i.listing.has_bad_kernel() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `inspect`'s text for a `.kpack` file.
pub fn print_inspection(o: &mut dyn Write, i: &ArchiveInspection) -> std::io::Result<()> {
    let l = &i.listing;
    writeln!(
        o,
        "{}: kpack archive version {}, TOC at {:#x}",
        l.path, i.version, i.toc_offset
    )?;
    writeln!(o, "  group         {}", l.group.as_deref().unwrap_or("-"))?;
    writeln!(o, "  family        {}", l.family.as_deref().unwrap_or("-"))?;
    writeln!(o, "  arches        {}", l.arches.join(" "))?;
    writeln!(o, "  compression   {}", l.scheme)?;
    writeln!(o, "  kernels       {}", l.kernels.len())?;
    for (k, t) in l.kernels.iter().zip(&i.targets) {
        let target = format!("  code object {}", t.as_deref().unwrap_or("-"));
        write_kernel(o, k, &target)?;
    }
    Ok(())
}

/// One kernel's line: key, architecture, sizes, then `extra`, then its error if any.
fn write_kernel(o: &mut dyn Write, k: &KernelListing, extra: &str) -> std::io::Result<()> {
    let size = k.size.map_or("-".to_owned(), |s| s.to_string());
    write!(
        o,
        "  {:<40} {:<16} {:>10} bytes  stored {:>10}{extra}",
        k.key, k.arch, size, k.stored_size
    )?;
    if let Some(e) = &k.error {
        write!(o, "  ERROR {e}")?;
    }
    writeln!(o)
}

/// `list` of any file: a `.kpack` archive, a split binary seen through the archives its
/// markers find, or anything else as the inventory lists it.
pub fn list_file_bytes(
    path: &Path,
    data: &[u8],
    check: bool,
) -> gfxkit_inventory::list::FileListing {
    let name = path.display().to_string();
    if inv_kpack::is_archive(data) {
        return inv_kpack::list_archive(&name, data, check);
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    let mut l = gfxkit_inventory::list::list(&name, &inv, check);
    if inv_kpack::is_split(&inv) {
        let o = kpack_files::all_archives(path, &inv.discovery, &kpack_files::env());
        inv_kpack::list_split(&mut l, &inv, &o.archives(), check);
    }
    l
}

/// `select` of a split binary: what the kpack loader finds for each wrapper on `device`
/// (empty for other files).
pub fn select_units(
    path: &Path,
    inv: &gfxkit_inventory::Inventory<'_>,
    device: &gfxkit_target_id::TargetId,
    loader: gfxkit_kpack::search::Loader,
) -> Vec<inv_kpack::KpackUnit> {
    if !inv_kpack::is_split(inv) {
        return Vec::new();
    }
    let env = kpack_files::env();
    let dir = kpack_files::binary_dir(path);
    let paths = inv_kpack::select_paths(inv, &dir, std::slice::from_ref(device), &env);
    let files = kpack_files::open_existing(&paths);
    let open = |p: &Path| files.get(p).map(|i| &i[..]);
    inv_kpack::select_units(inv, &dir, device, loader, &env, &open)
}

/// `doctor` of a split binary: per device, `None` when every wrapper loads, else why not;
/// and the architectures its archives hold.
pub fn doctor_verdicts(
    path: &Path,
    inv: &gfxkit_inventory::Inventory<'_>,
    devices: &[gfxkit_target_id::TargetId],
    loader: gfxkit_kpack::search::Loader,
) -> (Vec<(String, Option<String>)>, Vec<String>) {
    if !inv_kpack::is_split(inv) || !inv.loaded_at_run_time() {
        return (Vec::new(), Vec::new());
    }
    let env = kpack_files::env();
    let dir = kpack_files::binary_dir(path);
    let paths = inv_kpack::select_paths(inv, &dir, devices, &env);
    let files = kpack_files::open_existing(&paths);
    let open = |p: &Path| files.get(p).map(|i| &i[..]);
    let verdicts = devices
        .iter()
        .map(|d| {
            let units = inv_kpack::select_units(inv, &dir, d, loader, &env, &open);
            (d.to_string(), inv_kpack::doctor_verdict(&units))
        })
        .collect();
    let o = kpack_files::all_archives(path, &inv.discovery, &env);
    (verdicts, inv_kpack::targets(&o.archives()))
}

/// `verify` of a `.kpack` file or a split binary; `None` for other files.
pub fn verify_file_bytes(
    path: &Path,
    data: &[u8],
    inv: &gfxkit_inventory::Inventory<'_>,
) -> Option<gfxkit_inventory::verify::Verification> {
    let name = path.display().to_string();
    if inv_kpack::is_archive(data) {
        return Some(inv_kpack::verify_archive(&name, data));
    }
    if !inv_kpack::is_split(inv) {
        return None;
    }
    let o = kpack_files::all_archives(path, &inv.discovery, &kpack_files::env());
    Some(inv_kpack::verify_split(&name, inv, &o.archives()))
}

/// `size` of a `.kpack` file or a split binary; `None` for other files.
pub fn size_survey(path: &Path, data: &[u8]) -> Option<gfxkit_shrink::Survey> {
    if inv_kpack::is_archive(data) {
        return inv_kpack::size_archive(data);
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    if !inv_kpack::is_split(&inv) {
        return None;
    }
    let o = kpack_files::all_archives(path, &inv.discovery, &kpack_files::env());
    Some(inv_kpack::size_split(
        &inv,
        data.len() as u64,
        &o.archives(),
    ))
}

/// Code objects `extract` takes from kpack archives: the picks and the archive files they
/// come from.
pub struct KpackExtract {
    /// What to write.
    pub picks: Vec<inv_kpack::Pick>,
    /// Archive paths, indexed by [`inv_kpack::Pick::archive`].
    pub archives: Vec<PathBuf>,
}

/// For `extract`: the code objects of a split binary (through its archives) or of a `.kpack`
/// file that `wanted` selects; `None` for other files.
pub fn extract_picks(
    path: &Path,
    data: &[u8],
    wanted: &mut dyn FnMut(&str) -> bool,
) -> Result<Option<KpackExtract>> {
    if inv_kpack::is_archive(data) {
        let picks = inv_kpack::extract_archive(data, wanted)
            .with_context(|| format!("{}", path.display()))?;
        return Ok(Some(KpackExtract {
            picks,
            archives: vec![path.to_path_buf()],
        }));
    }
    let inv = gfxkit_inventory::Inventory::of(data);
    if !inv_kpack::is_split(&inv) {
        return Ok(None);
    }
    let o = kpack_files::all_archives(path, &inv.discovery, &kpack_files::env());
    let picks = inv_kpack::extract_split(&inv, &o.archives(), wanted)
        .with_context(|| format!("{}", path.display()))?;
    Ok(Some(KpackExtract {
        picks,
        archives: o.files.iter().map(|(p, _)| p.clone()).collect(),
    }))
}

/// Writes each pick's code object to `dest(pick)`, decoding it from its archive.
pub fn extract_write(
    x: &KpackExtract,
    dest: &(dyn Fn(&inv_kpack::Pick) -> PathBuf + Sync),
) -> Result<()> {
    let mut by_archive: BTreeMap<usize, Vec<&inv_kpack::Pick>> = BTreeMap::new();
    for p in &x.picks {
        by_archive.entry(p.archive).or_default().push(p);
    }
    for (ai, ps) in by_archive {
        let path = &x.archives[ai];
        let data = Input::open(path)?;
        let a = Archive::parse(&data).with_context(|| format!("cannot read {}", path.display()))?;
        use rayon::prelude::*;
        ps.par_iter()
            .map(|p| {
                let k = a.kernel(&p.key, &p.arch).with_context(|| {
                    format!("{}: {} {} vanished", path.display(), p.key, p.arch)
                })?;
                let bytes = a.payload(k).with_context(|| {
                    format!("{}: kernel {} ({})", path.display(), p.key, p.arch)
                })?;
                crate::output::write_atomic(&dest(p), &bytes)
            })
            .collect::<Result<Vec<()>>>()?;
    }
    Ok(())
}

#[cfg(test)]
mod printer_tests {
    use super::*;

    #[test]
    fn archive_listing_prints_a_line_per_kernel_with_errors() {
        let l = ArchiveListing {
            path: "a.kpack".into(),
            group: Some("blas".into()),
            family: None,
            arches: vec!["gfx90a".into(), "gfx942".into()],
            scheme: "none",
            size: 100,
            kernels: vec![KernelListing {
                key: "lib.so#0".into(),
                arch: "gfx90a".into(),
                ordinal: 0,
                size: None,
                stored_size: 7,
                ok: Some(false),
                error: Some("cut short".into()),
            }],
        };
        assert!(l.has_bad_kernel());
        let mut out = Vec::new();
        print_archives(&mut out, std::slice::from_ref(&l)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "a.kpack: group blas, arches gfx90a gfx942, none, 1 kernels"
        );
        assert!(lines[1].starts_with("  lib.so#0"), "{text}");
        assert!(
            lines[1].ends_with("stored          7  ERROR cut short"),
            "{text}"
        );
    }
}
