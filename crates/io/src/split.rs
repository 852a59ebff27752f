//! `kpack split` and `kpack inline` on files: reading the binaries, merging with archives
//! already on disk, and writing archives and binaries atomically (the byte rewriting is
//! `gfxkit_kpack::split`'s).

use crate::input::Input;
use crate::write::{write_atomic_file_checked, Durability, WriteError};
use crate::{Error, ErrorKind};
use gfxkit_kpack::split;
use gfxkit_kpack::write::Compression;
use gfxkit_kpack::Archive;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// One binary to split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The fat binary.
    pub input: PathBuf,
    /// Where the host-only binary goes (absolute).
    pub output: PathBuf,
    /// Its TOC name in the archives (`lib/libfoo.so`).
    pub kernel_name: String,
}

/// What a split wrote (`gfxkit kpack split --json`).
#[derive(Debug, Clone, Serialize)]
pub struct SplitReport {
    /// The binaries written.
    pub binaries: Vec<BinaryReport>,
    /// The archives written, one per architecture.
    pub archives: Vec<ArchiveReport>,
    /// Files without device code copied (`-r`).
    pub copied: usize,
    /// Kernel-database files (and raw code objects) placed in per-processor overlays (a tree
    /// split with [`TreeLayout::Overlays`]).
    pub overlay_files: Vec<OverlayFile>,
    /// Where the layout written fails under the old kpack loader (ROCm 7.0/7.1), which the
    /// current one loads: each names the binary, the archive and the kernel.
    pub old_loader_failures: Vec<String>,
}

/// How the output of a tree split is laid out ([`crate::split_tree`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TreeLayout {
    /// One tree: binaries host-only, archives in its kpack directory, other files copied.
    #[default]
    Single,
    /// `generic/` plus one overlay per processor with its archives and database files.
    Overlays,
}

/// A kernel-database file (or raw code object) placed in the overlays of its processors.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OverlayFile {
    /// Its path in the tree.
    pub path: String,
    /// What it is (`code-object`, `tensile-index`, `miopen-kdb`, `aks2`, ...).
    pub kind: &'static str,
    /// The targets its content names.
    pub targets: Vec<String>,
    /// The overlays (processors) it was copied into.
    pub overlays: Vec<String>,
    /// Its size in bytes.
    pub size: u64,
}

/// One split binary.
#[derive(Debug, Clone, Serialize)]
pub struct BinaryReport {
    /// The fat binary read.
    pub input: String,
    /// The host-only binary written.
    pub output: String,
    /// Its TOC name.
    pub kernel_name: String,
    /// HIPF wrappers turned into HIPK ones.
    pub wrappers: usize,
    /// Code objects moved to archives.
    pub code_objects: usize,
    /// Bytes before.
    pub size_before: u64,
    /// Bytes after.
    pub size_after: u64,
}

/// One archive written.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveReport {
    /// Path.
    pub path: String,
    /// Architecture.
    pub arch: String,
    /// Kernels it holds (those kept from an archive already there included).
    pub kernels: usize,
    /// Their uncompressed bytes.
    pub uncompressed: u64,
    /// The archive's size.
    pub size: u64,
}

/// `p` made absolute (against the current directory) and normalised (`..` resolved).
pub fn absolute(p: &Path) -> Result<PathBuf, Error> {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::new(p, ErrorKind::Stat(e)))?
            .join(p)
    };
    Ok(gfxkit_kpack::search::resolve_path(
        Path::new("/"),
        &p.to_string_lossy(),
    ))
}

/// `to` relative to directory `from` (both absolute, normalised).
pub fn relative(from: &Path, to: &Path) -> String {
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

/// Refuses an output that is the input file (inputs are never modified).
pub fn refuse_same(input: &Path, out: &Path) -> Result<(), Error> {
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(out)) {
        if a == b {
            return Err(Error::new(out, ErrorKind::SameFile));
        }
    }
    Ok(())
}

/// The TOC name of a binary written at `out`: its path below the parent of the kpack dir, or
/// `<dir name>/<file name>` when it is elsewhere.
pub fn kernel_name_for(out: &Path, kpack_dir: &Path) -> String {
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

/// The job of splitting one binary to `out`, and the kpack directory: `kpack_dir`, or
/// `<dir of out>/../.kpack`; the TOC name is `kernel_name` or the output's path below the
/// kpack directory's parent.
pub fn single_job(
    input: &Path,
    out: &Path,
    kpack_dir: Option<&Path>,
    kernel_name: Option<&str>,
) -> Result<(Job, PathBuf), Error> {
    let out_abs = absolute(out)?;
    let out_dir = out_abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    let dir = match kpack_dir {
        Some(d) => absolute(d)?,
        None => out_dir.join("../.kpack"),
    };
    let dir = gfxkit_kpack::search::resolve_path(Path::new("/"), &dir.to_string_lossy());
    let kernel_name = match kernel_name {
        Some(k) => k.to_owned(),
        None => kernel_name_for(&out_abs, &dir),
    };
    Ok((
        Job {
            input: input.to_path_buf(),
            output: out_abs,
            kernel_name,
        },
        dir,
    ))
}

/// Options of [`split_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SplitOptions {
    /// Split a signed Windows image (an Authenticode certificate table), which is otherwise
    /// refused: the host image written is unsigned (`--drop-signature`).
    pub drop_signature: bool,
    /// The limits the binaries' bundles are read under.
    pub limits: gfxkit_bundle::limits::Limits,
}

/// [`split_with`] with the default options (signed images refused).
pub fn split(
    jobs: &[Job],
    group: &str,
    kpack_dir: &Path,
    compression: Compression,
) -> Result<SplitReport, Error> {
    split_with(jobs, group, kpack_dir, compression, SplitOptions::default())
}

/// Splits every job's binary: its code objects go to `<kpack_dir>/<group>_<arch>.kpack` (one
/// archive per architecture, merged with an archive already there: its kernels of other
/// binaries are kept), the host-only binary to the job's output. Each host-only binary is
/// written to its temporary file beside its output as soon as it is split (a tree of
/// gigabytes of host code is not held in memory), the kernels kept until the archives are
/// made; archives are put in place before binaries (a binary never names an archive not yet
/// there), each atomically. Nothing is written when any binary cannot be split (the temporary
/// files and the directories made for them are removed).
pub fn split_with(
    jobs: &[Job],
    group: &str,
    kpack_dir: &Path,
    compression: Compression,
    options: SplitOptions,
) -> Result<SplitReport, Error> {
    if group.is_empty() || group.contains('/') {
        return Err(Error::new(kpack_dir, ErrorKind::BadGroup(group.to_owned())));
    }
    let kpack_dir =
        gfxkit_kpack::search::resolve_path(Path::new("/"), &kpack_dir.to_string_lossy());
    let mut names = std::collections::HashSet::new();
    for j in jobs {
        refuse_same(&j.input, &j.output)?;
        if !names.insert(j.kernel_name.clone()) {
            return Err(Error::new(
                &j.input,
                ErrorKind::DuplicateKernelName(j.kernel_name.clone()),
            ));
        }
    }
    // Split every binary (kept in memory: the kernels borrow from the mapped inputs).
    let inputs: Vec<Input> = jobs
        .iter()
        .map(|j| Input::open(&j.input))
        .collect::<Result<_, _>>()?;
    // Signed Windows images without their signature, when it may go.
    let mut unsigned: Vec<Option<Vec<u8>>> = Vec::with_capacity(jobs.len());
    for (j, data) in jobs.iter().zip(&inputs) {
        unsigned.push(if options.drop_signature {
            split::without_signature(data).map_err(|e| Error::new(&j.input, ErrorKind::Split(e)))?
        } else {
            None
        });
    }
    // Declared before the staged binaries: dropped after them (on an error, the temporary
    // files go first, then the directories made for them).
    let mut made_dirs = MadeDirs::default();
    let mut splits = Vec::with_capacity(jobs.len());
    let mut hosts = Vec::with_capacity(jobs.len());
    for ((j, data), u) in jobs.iter().zip(&inputs).zip(&unsigned) {
        let data: &[u8] = u.as_deref().unwrap_or(data);
        let out_dir = j.output.parent().unwrap_or(Path::new("/"));
        let pattern = gfxkit_kpack::marker::search_pattern(&relative(out_dir, &kpack_dir), group);
        // For zstd archives, the code objects of compressed bundles are kept as the frames
        // the archives store, made as each bundle is decoded: the split of a binary holding
        // gigabytes of code objects in compressed bundles holds megabytes.
        let mut s = match compression {
            Compression::Zstd { level } => {
                split::split_binary_framed(data, &j.kernel_name, &[pattern], &options.limits, level)
            }
            Compression::None => {
                split::split_binary_with(data, &j.kernel_name, &[pattern], &options.limits)
            }
        }
        .and_then(|s| split::check_split(&s).map(|()| s))
        .map_err(|e| Error::new(&j.input, ErrorKind::Split(e)))?;
        // The host-only binary to its temporary file now, out of memory.
        if let Some(d) = j.output.parent() {
            made_dirs.create(d)?;
        }
        let host = std::mem::take(&mut s.host);
        let staged = crate::write::stage_atomic_like(&j.output, |w| w.write_all(&host), &j.input)?;
        hosts.push((staged, host.len() as u64));
        splits.push(s);
    }
    // Archives: one per architecture, merged with one already there.
    let by_arch = gfxkit_inventory::kpack::kernels_by_arch(&splits);
    std::fs::create_dir_all(&kpack_dir)
        .map_err(|e| Error::new(&kpack_dir, ErrorKind::CreateDir(e)))?;
    let new_names: std::collections::HashSet<&str> =
        jobs.iter().map(|j| j.kernel_name.as_str()).collect();
    // Made in parallel (each archive's frames are compressed in parallel too), each written
    // to its temporary file as soon as it is made, while the others are still being
    // compressed; renamed into place only once every archive is written, so that nothing
    // replaces anything when one fails (the error reported is the first in architecture
    // order, and the temporary files go with the archives staged).
    let by_arch: Vec<_> = by_arch.iter().collect();
    let made: Vec<Result<(ArchiveReport, crate::write::Staged), Error>> = by_arch
        .par_iter()
        .map(|&(arch, kernels)| {
            let path = kpack_dir.join(format!("{group}_{arch}.kpack"));
            let old = if path.is_file() {
                Some(Input::open(&path)?)
            } else {
                None
            };
            let m = gfxkit_inventory::kpack::merged_archive(
                group,
                arch,
                kernels,
                old.as_deref(),
                &new_names,
                compression,
            )
            .map_err(|e| Error::new(&path, ErrorKind::MergeArchive(e)))?;
            let staged = crate::write::stage_atomic_with(&path, |w| m.bytes.write_to(w))?;
            let report = ArchiveReport {
                path: path.display().to_string(),
                arch: arch.clone(),
                kernels: m.kernels,
                uncompressed: m.uncompressed,
                size: m.bytes.len(),
            };
            Ok((report, staged))
        })
        .collect();
    let made = made.into_iter().collect::<Result<Vec<_>, Error>>()?;
    // Archives first, then binaries (a binary never names an archive not yet there).
    let mut archives = Vec::with_capacity(made.len());
    for (report, staged) in made {
        staged.commit()?;
        archives.push(report);
    }
    let mut binaries = Vec::new();
    for (((j, s), data), (staged, size_after)) in jobs.iter().zip(&splits).zip(&inputs).zip(hosts) {
        staged.commit()?;
        binaries.push(BinaryReport {
            input: j.input.display().to_string(),
            output: j.output.display().to_string(),
            kernel_name: j.kernel_name.clone(),
            wrappers: s.wrappers,
            code_objects: s.kernels.len(),
            size_before: data.len() as u64,
            size_after,
        });
    }
    made_dirs.keep();
    // The layout as the old loader reads it, binary by binary, from the files just written.
    let mut old_loader_failures = Vec::new();
    for (j, s) in jobs.iter().zip(&splits) {
        let mut keys: Vec<String> = s.kernels.iter().map(|k| k.key.clone()).collect();
        keys.sort_unstable();
        keys.dedup();
        let written = Input::open(&j.output)?;
        let found = gfxkit_host::discover(&written);
        let opened = crate::kpack::all_archives(&j.output, &found, &crate::kpack::env());
        let archives = opened.archives();
        for f in gfxkit_kpack::verify::old_loader_shadowing(&keys, &archives.parse()) {
            old_loader_failures.push(format!(
                "{}: {}: {}",
                j.output.display(),
                f.key.unwrap_or_default(),
                f.message
            ));
        }
    }
    Ok(SplitReport {
        binaries,
        archives,
        copied: 0,
        overlay_files: Vec::new(),
        old_loader_failures,
    })
}

/// The directories a split made for its outputs: removed again (the deepest first, each only
/// when empty) when the split fails, unless kept.
#[derive(Default)]
struct MadeDirs {
    made: Vec<PathBuf>,
    kept: bool,
}

impl MadeDirs {
    /// Makes `dir` and its missing ancestors, remembering those it made.
    fn create(&mut self, dir: &Path) -> Result<(), Error> {
        let missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .collect();
        std::fs::create_dir_all(dir).map_err(|e| Error::new(dir, ErrorKind::CreateDir(e)))?;
        // Outermost first, so that removing in reverse takes the deepest first.
        self.made
            .extend(missing.into_iter().rev().map(Path::to_path_buf));
        Ok(())
    }

    /// The split is done: the directories stay.
    fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for MadeDirs {
    fn drop(&mut self) {
        if !self.kept {
            for d in self.made.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

/// What an inline wrote (`gfxkit kpack inline --json`).
#[derive(Debug, Clone, Serialize)]
pub struct InlineReport {
    /// The split binary read.
    pub input: String,
    /// The fat binary written.
    pub output: String,
    /// The archives read, in search order.
    pub archives: Vec<String>,
    /// Per wrapper, the bundle made for it.
    pub bundles: Vec<InlineBundle>,
    /// Bytes before.
    pub size_before: u64,
    /// Bytes after.
    pub size_after: u64,
}

/// The bundle of one wrapper.
#[derive(Debug, Clone, Serialize)]
pub struct InlineBundle {
    /// The TOC key.
    pub key: String,
    /// The architectures put in the bundle.
    pub arches: Vec<String>,
}

/// Turns the split binary `file` and its archives (found through its markers as the loader
/// finds them, after `archives`, which are searched first) back into a fat binary at `out`,
/// written atomically (its directory made when missing, as `split` makes its outputs').
/// Bundles are read (the written binary checked) under `limits`.
pub fn inline(
    file: &Path,
    out: &Path,
    archives: &[PathBuf],
    limits: &gfxkit_bundle::limits::Limits,
) -> Result<InlineReport, Error> {
    refuse_same(file, out)?;
    let data = Input::open(file)?;
    let found = gfxkit_host::discover_with(&data, limits);
    if gfxkit_kpack::view::hipk_wrappers(&found).next().is_none() {
        return Err(Error::new(file, ErrorKind::NotSplit));
    }
    let mut extra = Vec::new();
    for p in archives {
        extra.push((p.clone(), Input::open(p)?));
    }
    let opened = crate::kpack::all_archives(file, &found, &crate::kpack::env());
    let mut parsed = Vec::new();
    let mut used = Vec::new();
    for (p, i) in extra.iter().chain(&opened.files) {
        let ar = Archive::parse(i).map_err(|e| Error::new(p, ErrorKind::Kpack(e)))?;
        used.push(p.display().to_string());
        parsed.push(ar);
    }
    let refs: Vec<&Archive<'_>> = parsed.iter().collect();
    let inline_err = |source| {
        Error::new(
            file,
            ErrorKind::Inline {
                not_found: opened.not_found.clone(),
                source,
            },
        )
    };
    // Planned only: the bundles are made one at a time as the output is written, and the
    // written file is read back and checked before it replaces anything.
    let made = split::inline_binary_with(&data, &refs, limits).map_err(inline_err)?;
    if let Some(d) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| Error::new(d, ErrorKind::CreateDir(e)))?;
    }
    write_atomic_file_checked(
        out,
        |f| {
            crate::rewrite::write_output(f, &made.output, Some(&data)).map_err(|e| {
                match split::inline_error(&e) {
                    Some(k) => inline_err(k.clone()),
                    None => Error::new(out, ErrorKind::Write(e)),
                }
            })
        },
        |tmp| {
            data.unchanged()?;
            let back = Input::open(tmp)?;
            split::check_inline(&made, &back).map_err(inline_err)
        },
        Some(file),
        Durability::Rename,
    )
    .map_err(|e| match e {
        WriteError::Io(e) | WriteError::Fill { error: e, .. } | WriteError::Check(e) => e,
    })?;
    Ok(InlineReport {
        input: file.display().to_string(),
        output: out.display().to_string(),
        archives: used,
        bundles: made
            .bundles
            .into_iter()
            .map(|(key, arches)| InlineBundle { key, arches })
            .collect(),
        size_before: data.len() as u64,
        size_after: made.output.len(),
    })
}
