//! `gfxkit size`'s tables: one row per architecture, file, library or bundle, the totals, and
//! the duplicates found.

use gfxkit_inventory::size::SizeReport;
use gfxkit_inventory::units::{human_bytes as human, percent as pct, thousands};
use std::io::{Result, Write};

/// How the table is grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Prints the report as a table grouped `by` on `out`.
pub fn table(r: &SizeReport, by: By, out: &mut dyn Write) -> Result<()> {
    match by {
        By::Arch => arch_rows(r, out)?,
        By::File => file_rows(r, out)?,
        By::Library => library_rows(r, out)?,
        By::Bundle => bundle_rows(r, out)?,
    }
    totals(r, by, out)
}

/// The table by architecture: entries, stored bytes, share, uncompressed bytes (and whether
/// `prune --keep` keeps it).
fn arch_rows(r: &SizeReport, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{:<24} {:>8} {:>12} {:>7} {:>14}{}",
        "ARCH",
        "ENTRIES",
        "STORED",
        "SHARE",
        "UNCOMPRESSED",
        if r.keep.is_empty() { "" } else { "  KEEP" }
    )?;
    for a in &r.archs {
        writeln!(
            out,
            "{:<24} {:>8} {:>12} {:>7} {:>14}{}",
            a.arch,
            a.entries,
            format!("{}{}", human(a.stored), if a.estimated { "*" } else { "" }),
            pct(a.stored, r.stored),
            human(a.uncompressed),
            match a.kept {
                Some(true) => "  yes",
                Some(false) => "  no",
                None => "",
            }
        )?;
    }
    Ok(())
}

/// The table by file: its size, stored and uncompressed device bytes, bundles (and what a
/// prune saves).
fn file_rows(r: &SizeReport, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>8}{}  FILE",
        "FILE SIZE",
        "STORED",
        "UNCOMPRESSED",
        "BUNDLES",
        if r.keep.is_empty() {
            ""
        } else {
            "  PRUNE SAVES"
        }
    )?;
    for f in &r.files {
        writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>8}{}  {}",
            human(f.file_size),
            human(f.stored),
            human(f.uncompressed),
            f.bundles,
            match f.prune_saves {
                Some(s) => format!("  {:>11}", human(s)),
                None => String::new(),
            },
            f.path
        )?;
    }
    Ok(())
}

/// The table by library, with the kernel databases it loads.
fn library_rows(r: &SizeReport, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{:>12} {:>12} {:>6}{}  LIBRARY (+ DATABASE)",
        "STORED",
        "UNCOMPRESSED",
        "FILES",
        if r.keep.is_empty() {
            ""
        } else {
            "  PRUNE SAVES"
        }
    )?;
    for l in &r.libraries {
        let with: Vec<&str> = l
            .database
            .iter()
            .filter(|d| **d != l.path)
            .map(String::as_str)
            .collect();
        writeln!(
            out,
            "{:>12} {:>12} {:>6}{}  {}{}",
            human(l.stored),
            human(l.uncompressed),
            l.files,
            match l.prune_saves {
                Some(s) => format!("  {:>11}", human(s)),
                None => String::new(),
            },
            l.path,
            if with.is_empty() {
                String::new()
            } else {
                format!(" (+ {})", with.join(", "))
            }
        )?;
    }
    Ok(())
}

/// The table by bundle: offset, encoding, stored and uncompressed bytes, where and which
/// targets.
fn bundle_rows(r: &SizeReport, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{:>12} {:<14} {:>12} {:>12}  FILE / TARGETS",
        "OFFSET", "ENCODING", "STORED", "UNCOMPRESSED"
    )?;
    for b in &r.bundles {
        writeln!(
            out,
            "{:>#12x} {:<14} {:>12} {:>12}  {}{}: {}",
            b.offset,
            b.encoding,
            human(b.stored),
            human(b.uncompressed),
            b.path,
            b.member
                .as_ref()
                .map(|m| format!("({m})"))
                .unwrap_or_default(),
            b.targets.join(" ")
        )?;
    }
    Ok(())
}

/// The lines under the table: the totals, what no row counts, and what a prune saves.
fn totals(r: &SizeReport, by: By, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "total: {} device bytes stored ({} uncompressed) in {}, {}",
        human(r.stored),
        human(r.uncompressed),
        crate::plural(r.files.len() as u64, "file", "files"),
        crate::plural(
            r.files.iter().map(|f| f.bundles).sum::<u64>(),
            "bundle",
            "bundles"
        ),
    )?;
    // The rows add up to the total but for the bytes in no entry: said where they went.
    if r.overhead > 0 && by == By::Arch {
        writeln!(
            out,
            "of which {} bundle headers and padding between payloads, in no row above",
            human(r.overhead)
        )?;
    }
    if r.archs.iter().any(|a| a.estimated) {
        writeln!(
            out,
            "* a share of a compressed bundle's stored bytes, shared out among its entries in \
             proportion to their uncompressed sizes"
        )?;
    }
    if let Some(s) = r.prune_saves {
        writeln!(
            out,
            "prune --keep {} would save about {} ({} of device bytes)",
            r.keep.join(","),
            human(s),
            pct(s, r.stored)
        )?;
    }
    Ok(())
}

/// Prints the duplicates: the bytes a deduplication would save, then the `top` groups with
/// the largest saving, each with its places.
pub fn duplicates(
    d: &gfxkit_inventory::duplicates::Duplicates,
    top: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let copies: usize = d.groups.iter().map(|g| g.count - 1).sum();
    writeln!(
        out,
        "duplicates: {} code objects stored more than once ({copies} extra copies); keeping one copy of each would save {} ({} bytes)",
        d.groups.len(),
        human(d.bytes),
        thousands(d.bytes)
    )?;
    for g in d.groups.iter().take(top) {
        writeln!(
            out,
            "  {} x{}  saves {}  sha256 {}",
            human(g.size),
            g.count,
            human(g.saves()),
            &g.sha256[..16.min(g.sha256.len())]
        )?;
        for p in &g.places {
            writeln!(out, "      {}: {}: {}", p.path, p.unit, p.entry)?;
        }
    }
    if d.groups.len() > top {
        writeln!(
            out,
            "  ... and {} more groups (--top N, or --json)",
            d.groups.len() - top
        )?;
    }
    Ok(())
}
