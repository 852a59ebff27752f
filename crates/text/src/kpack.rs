//! `gfxkit kpack`'s text: what a split and an inline wrote, and `.kpack` archives listed and
//! inspected kernel by kernel.

use gfxkit_inventory::kpack::{ArchiveInspection, ArchiveListing, KernelListing};
use gfxkit_io::split::{InlineReport, SplitReport};
use std::io::{Result, Write};

/// `kpack split`'s text: a line per binary written, per archive, and the files copied.
pub fn split(report: &SplitReport, o: &mut dyn Write) -> Result<()> {
    for b in &report.binaries {
        writeln!(
            o,
            "{}: {}, {}, {} -> {} bytes ({})",
            b.output,
            crate::plural(b.wrappers as u64, "wrapper", "wrappers"),
            crate::plural(b.code_objects as u64, "code object", "code objects"),
            b.size_before,
            b.size_after,
            b.kernel_name
        )?;
    }
    for r in &report.archives {
        writeln!(
            o,
            "{}: {}, {} bytes ({} uncompressed)",
            r.path,
            crate::plural(r.kernels as u64, "kernel", "kernels"),
            r.size,
            r.uncompressed
        )?;
    }
    if report.copied > 0 {
        writeln!(
            o,
            "{} without device code copied",
            crate::plural(report.copied as u64, "file", "files")
        )?;
    }
    if !report.overlay_files.is_empty() {
        let mut by: std::collections::BTreeMap<&str, (usize, u64)> = Default::default();
        for f in &report.overlay_files {
            for p in &f.overlays {
                let e = by.entry(p.as_str()).or_default();
                e.0 += 1;
                e.1 += f.size;
            }
        }
        for (p, (n, bytes)) in by {
            writeln!(
                o,
                "{p}: {} ({bytes} bytes) in its overlay",
                crate::plural(n as u64, "file", "files")
            )?;
        }
    }
    Ok(())
}

/// `kpack inline`'s line: the binary written, its bundles and archives, its sizes.
pub fn inline(report: &InlineReport, o: &mut dyn Write) -> Result<()> {
    writeln!(
        o,
        "{}: {} from {}, {} -> {} bytes",
        report.output,
        crate::plural(report.bundles.len() as u64, "bundle", "bundles"),
        crate::plural(report.archives.len() as u64, "archive", "archives"),
        report.size_before,
        report.size_after
    )
}

/// `kpack list`'s text: a line per archive, then one per kernel.
pub fn archives(archives: &[ArchiveListing], o: &mut dyn Write) -> Result<()> {
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
            kernel(o, k, "")?;
        }
    }
    Ok(())
}

/// `inspect`'s text for a `.kpack` file.
pub fn inspection(i: &ArchiveInspection, o: &mut dyn Write) -> Result<()> {
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
        kernel(o, k, &target)?;
    }
    Ok(())
}

/// One kernel's line: key, architecture, sizes, then `extra`, then its error if any.
fn kernel(o: &mut dyn Write, k: &KernelListing, extra: &str) -> Result<()> {
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

#[cfg(test)]
mod tests {
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
        archives(std::slice::from_ref(&l), &mut out).unwrap();
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
