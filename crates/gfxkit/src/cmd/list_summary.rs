//! `gfxkit list --summary`: the grouping is [`gfxkit_io::summary`]'s; this prints it.

use anyhow::Result;
use gfxkit_inventory::list::FileListing;
use gfxkit_inventory::units::human_bytes as human;
use std::io::Write;

/// Prints the summary (text or `{"packages": [...], "without_device_code": [...]}`): the
/// inputs without device code (files, package members, packages, files found in trees that
/// were read) are named, in JSON each, in text on one line (the first
/// [`gfxkit_inventory::list::NAMES_SHOWN`], then `and N more`); errors go to stderr.
pub fn print(files: &[FileListing], json: bool) -> Result<()> {
    let summary = gfxkit_io::summary::summary(files);
    if json {
        return crate::output::print_json(&summary);
    }
    let (shipped, empty) = (&summary.packages, &summary.without_device_code);
    let mut out = std::io::stdout().lock();
    for s in shipped {
        writeln!(
            out,
            "{} ({}, {} with device code): {}; {}",
            s.name,
            s.kind,
            if s.files == 1 {
                "1 file".to_owned()
            } else {
                format!("{} files", s.files)
            },
            s.architectures.join(" "),
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
        eprintln!("gfxkit: error: {f}");
    }
    Ok(())
}
