//! `gfxkit check`'s text: the targets each file has, lacks and has beyond the list.

use gfxkit_inventory::check::{CheckFile, CheckReport};
use std::io::{Result, Write};

fn file_line(f: &CheckFile, out: &mut dyn Write) -> Result<()> {
    for e in &f.errors {
        writeln!(out, "ERROR {}", crate::group::naming(&f.path, e))?;
    }
    if !f.errors.is_empty() {
        return Ok(());
    }
    if f.ok {
        let mut notes: Vec<String> = f
            .needs
            .iter()
            .map(|(t, n)| format!("{t} needs {n}"))
            .collect();
        notes.extend(
            f.database
                .iter()
                .filter(|d| **d != f.path)
                .map(|d| format!("with {d}")),
        );
        if notes.is_empty() {
            writeln!(out, "ok    {}", f.path)?;
        } else {
            writeln!(out, "ok    {} ({})", f.path, notes.join(", "))?;
        }
        return Ok(());
    }
    for m in &f.missing {
        let why = f.why.get(m).map(String::as_str).unwrap_or("no code for it");
        writeln!(out, "FAIL  {}: lacks {m}: {why}", f.path)?;
    }
    if !f.extra.is_empty() {
        writeln!(
            out,
            "FAIL  {}: beyond the list: {}",
            f.path,
            f.extra.join(" ")
        )?;
    }
    if f.missing.is_empty() && f.extra.is_empty() {
        writeln!(out, "FAIL  {}: its device code could not be judged", f.path)?;
    }
    Ok(())
}

/// Prints a line per file and the summary line on `out`.
pub fn report(r: &CheckReport, out: &mut dyn Write) -> Result<()> {
    if let Some(rocm) = &r.rocm {
        crate::rocm::runtime_line(rocm, out)?;
    }
    for f in &r.files {
        file_line(f, out)?;
    }
    for o in &r.other_gpus_only {
        writeln!(out, "NOTE  {}: {}", o.path, o.reason)?;
    }
    let s = &r.summary;
    write!(
        out,
        "check {}{}: {} with device code, {} {}, {} {}",
        r.required.join(","),
        if r.exactly { " (exactly)" } else { "" },
        crate::plural(s.files as u64, "file", "files"),
        s.passed,
        if s.passed == 1 { "passes" } else { "pass" },
        s.failed,
        if s.failed == 1 { "fails" } else { "fail" },
    )?;
    if s.errors > 0 {
        write!(out, ", {} with errors", s.errors)?;
    }
    writeln!(out)?;
    Ok(())
}
