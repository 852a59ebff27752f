//! `gfxkit verify`'s text: each file's problems by bundle and entry, and the members of
//! packages without device code.

use gfxkit_inventory::verify::Verification;
use std::io::{Result, Write};

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
/// Prints verification reports as text on `out`.
pub fn reports(reports: &[Verification], out: &mut dyn Write) -> Result<()> {
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

/// One line per package member whose only device code is for other GPUs (a CUDA build, SYCL
/// object bundles): `PATH: what it holds`, as `verify` of the file alone says it (where that
/// is an error; a package's other members make it none).
pub fn other_gpus_only(
    members: &[gfxkit_inventory::doctor::OtherGpusOnly],
    out: &mut dyn Write,
) -> Result<()> {
    for m in members {
        writeln!(out, "{}: {}", m.path, m.reason)?;
    }
    Ok(())
}

/// One line per package naming its members without device code (the first
/// [`gfxkit_inventory::list::NAMES_SHOWN`], then `and N more`).
pub fn without_device_code(without: &[(String, Vec<String>)], out: &mut dyn Write) -> Result<()> {
    for (pkg, names) in without {
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
        let ok = gfxkit_inventory::verify::verify_bytes("a.hipfb", &bundle).unwrap();
        let mut out = Vec::new();
        reports(&[ok], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a.hipfb: 1 problem (1 bundle, 2 entries)\n  bundle 0 at 0x0: entry 1 \
             (hipv4-amdgcn-amd-amdhsa--gfx90a): payload is not an AMDGPU code object: not an \
             ELF file (no \\x7fELF magic) (at offset 0x0 of the code object)\n"
        );
    }
}
