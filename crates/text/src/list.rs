//! `gfxkit list`'s text: each file with its bundles and entries, kernel-database rows, the
//! members of a package without device code on one line, and `--summary`'s packages.

use gfxkit_inventory::list::DatabaseListing;
use gfxkit_inventory::list::{self, BundleListing, FileListing, Listing};
use gfxkit_inventory::units::human_bytes as human;
use std::io::{Result, Write};

fn plural(n: usize, one: &str, many: &str) -> String {
    crate::plural(n as u64, one, many)
}

/// Prints the listing on `out`, its errors and problems on `err` (after `out` is flushed, so
/// that they interleave in order). Members of a package without device code
/// ([`FileListing::without_device_code`]) are not listed one by one: one line after the
/// package's other members names them (`PKG: N members without device code: a.so, ...`,
/// the first [`list::NAMES_SHOWN`] names, then `and N more`); `--json` lists each. A member
/// holding NVIDIA device code (a CUDA build) is listed on its own, saying so.
pub fn listing(listing: &Listing, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    listing_with(listing, &Options::default(), out, err)
}

/// How much [`listing_with`] prints.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Every file a kernel-database row opens and lacks, not the first few
    /// ([`FILES_SHOWN`]).
    pub all_files: bool,
}

/// How many of a kernel-database row's files the text names before "and N more".
pub const FILES_SHOWN: usize = 3;

/// [`listing`], as `opts` says.
pub fn listing_with(
    listing: &Listing,
    opts: &Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
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
        // A CUDA build is device code, for other GPUs: listed on its own line, saying so.
        let quiet_member = f.without_device_code() && f.nvidia.is_empty();
        if let (Some(name), true) = (f.member_name(), quiet_member) {
            quiet.push(name);
        } else {
            file(f, opts, &mut sep, out, err)?;
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
fn file(
    f: &FileListing,
    opts: &Options,
    sep: &mut dyn FnMut(&mut dyn Write) -> Result<()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    sep(out)?;
    if let (Some(e), true) = (&f.error, f.bundles.is_empty()) {
        out.flush()?;
        writeln!(err, "gfxkit: error: {e}")?;
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
        bundle(out, bi, b)?;
    }
    if let Some(d) = &f.database {
        database(out, d, opts)?;
    }
    if let Some(note) = &f.note {
        writeln!(out, "  ({note})")?;
    } else if f.bundles.is_empty() && f.error.is_none() && f.database.is_none() {
        if f.nvidia.is_empty() {
            writeln!(out, "  (no offload bundle)")?;
        } else {
            writeln!(
                out,
                "  (no offload bundle; NVIDIA device code, a CUDA build: {})",
                f.nvidia
                    .iter()
                    .map(gfxkit_inventory::inventory::nvidia_label)
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
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
        writeln!(err, "gfxkit: {}: {}: {p}", p.severity, f.path)?;
    }
    if let Some(e) = &f.error {
        writeln!(err, "gfxkit: error: {e}")?;
    }
    Ok(())
}

/// Names for a row's files: all of them when few (or `all`), else the first
/// [`FILES_SHOWN`] and how many more.
fn some_names(names: &[String], all: bool) -> String {
    if all || names.len() <= FILES_SHOWN + 1 {
        return names.join(" ");
    }
    format!(
        "{} files: {} and {} more",
        names.len(),
        names[..FILES_SHOWN].join(" "),
        names.len() - FILES_SHOWN
    )
}

/// A Tensile index's rows: processor, CU count, solutions (and shards, for a lazy master),
/// files opened and missing (the first few unless `opts.all_files`; for an aiter kernel map,
/// its number of kernels; for a hipBLASLt mapping, the kernel libraries it maps).
fn database(out: &mut dyn Write, d: &DatabaseListing, opts: &Options) -> Result<()> {
    if d.kind == gfxkit_inventory::database::DbKind::AiterMap.name() {
        writeln!(
            out,
            "  aiter kernel map: {} (`verify` checks each against its code object)",
            plural(d.solutions, "kernel", "kernels")
        )?;
        return Ok(());
    }
    if d.kind == gfxkit_inventory::database::DbKind::TensileMapping.name() {
        writeln!(
            out,
            "  tensile-mapping: {} mapped to the kernel libraries holding them (`verify` \
             checks each is there)",
            plural(d.solutions, "solution index", "solution indices")
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
    let shown = d
        .rows
        .iter()
        .any(|r| r.files.len() + r.missing.len() > FILES_SHOWN + 1);
    for r in &d.rows {
        let who = match (&r.processor, r.cu_count) {
            (Some(p), Some(n)) => format!("{p} ({n} CUs)"),
            (Some(p), None) => p.clone(),
            (None, _) => "(any)".to_owned(),
        };
        let shards = if r.shards > 0 {
            format!("  {}", plural(r.shards, "shard", "shards"))
        } else {
            String::new()
        };
        let mut files = some_names(&r.files, opts.all_files);
        if !r.missing.is_empty() {
            files.push_str(&format!(
                "  MISSING: {}",
                some_names(&r.missing, opts.all_files)
            ));
        }
        writeln!(
            out,
            "    {who:<16} {:>6} solutions{shards}  {files}",
            r.solutions
        )?;
    }
    if shown && !opts.all_files {
        writeln!(out, "    (--files names every file, --json lists them)")?;
    }
    Ok(())
}

fn bundle(out: &mut dyn Write, bi: usize, b: &BundleListing) -> Result<()> {
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

/// Prints `gfxkit list --summary` ([`gfxkit_io::summary::summary`] of `files`): the
/// inputs without device code (files, package members, packages, files found in trees that
/// were read) are named, in JSON each, in text on one line (the first
/// [`gfxkit_inventory::list::NAMES_SHOWN`], then `and N more`); the files' errors go to `err`.
pub fn summary(
    summary: &gfxkit_io::summary::Summary,
    files: &[FileListing],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    let (shipped, empty) = (&summary.packages, &summary.without_device_code);
    for s in shipped {
        writeln!(
            out,
            "{} ({}, {} with device code): {}; {} of code objects, {} stored",
            s.name,
            s.kind,
            if s.files == 1 {
                "1 file".to_owned()
            } else {
                format!("{} files", s.files)
            },
            s.architectures.join(" "),
            human(s.code_object_bytes),
            human(s.device_bytes)
        )?;
        let w = s.targets.keys().map(String::len).max().unwrap_or(0);
        for (t, n) in &s.targets {
            writeln!(out, "  {t:<w$}  {:>10}", human(*n))?;
        }
    }
    if !empty.is_empty() {
        writeln!(
            out,
            "without device code ({}): {}",
            empty.len(),
            gfxkit_inventory::list::short_names(empty)
        )?;
    }
    for f in files.iter().filter_map(|f| f.error.as_ref()) {
        out.flush()?;
        writeln!(err, "gfxkit: error: {f}")?;
    }
    Ok(())
}
