//! `gfxkit inspect`'s text: a code object's header fields, its kernels' resources and each
//! kernel descriptor decoded.

use gfxkit_code_object::descriptor_table::Word;
use gfxkit_code_object::{summaries, CodeObject, KernelDescriptor, KernelSummary};
use gfxkit_inventory::inspect::elf_type_name;
use std::io::{Result, Write};

/// The code object `co` (read from `file`): its header fields, then its kernels' table and
/// descriptors (names demangled with `demangle`).
pub fn code_object(
    file: &str,
    co: &CodeObject<'_>,
    demangle: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let target_id = co.target_id();
    let flags = co.flags();
    let sums = summaries(co, demangle);
    let mut rows: Vec<(&str, String)> = vec![
        ("file", file.to_owned()),
        (
            "elf type",
            format!(
                "{} ({}-bit)",
                elf_type_name(co.elf_type()),
                match co.arch() {
                    gfxkit_spec::Arch::Amdgcn => 64,
                    gfxkit_spec::Arch::R600 => 32,
                }
            ),
        ),
        (
            "os abi",
            format!("{} (abi version {})", co.os_abi(), co.abi_version()),
        ),
        (
            "code object",
            co.code_object_version()
                .map_or_else(|| "- (not HSA)".to_owned(), |v| v.to_string()),
        ),
        ("e_flags", flags.to_string()),
        ("processor", flags.mach().to_string()),
        (
            "target id",
            match &target_id {
                Ok(id) => id.to_string(),
                Err(e) => format!("- ({e})"),
            },
        ),
    ];
    if let Some(meta) = co.metadata() {
        if let Some([major, minor]) = meta.version() {
            rows.push(("amdhsa.version", format!("{major}.{minor}")));
        }
        if let Some(t) = meta.target() {
            rows.push(("amdhsa.target", t.to_owned()));
        }
    } else {
        rows.push(("metadata", "- (no NT_AMDGPU_METADATA note)".to_owned()));
    }
    rows.push(("kernels", sums.len().to_string()));
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;

    for (k, v) in &rows {
        writeln!(out, "{:<width$} {v}", format!("{k}:"))?;
    }
    if !sums.is_empty() {
        writeln!(out)?;
        kernel_table(out, &sums)?;
        descriptors(out, co, &sums)?;
    }
    out.flush()?;
    Ok(())
}

fn kernel_table(out: &mut dyn Write, kernels: &[KernelSummary]) -> Result<()> {
    let header = [
        "NAME", "KERNARG", "SGPR", "VGPR", "AGPR", "LDS", "SCRATCH", "WAVE", "OCC",
    ];
    let num = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let rows: Vec<[String; 9]> = kernels
        .iter()
        .map(|k| {
            [
                k.demangled.clone().unwrap_or_else(|| k.name.clone()),
                num(k.kernarg_size),
                num(k.sgpr_count),
                num(k.vgpr_count),
                num(k.agpr_count),
                num(k.lds_bytes),
                num(k.scratch_bytes),
                num(k.wavefront_size),
                num(k.occupancy.map(u64::from)),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |out: &mut dyn Write, cells: [&str; 9]| -> Result<()> {
        // Name left-aligned, numbers right-aligned.
        let mut s = format!("{:<w$}", cells[0], w = widths[0]);
        for (c, w) in cells.iter().zip(widths).skip(1) {
            s.push_str(&format!("  {c:>w$}"));
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(out, header)?;
    for r in &rows {
        line(out, r.each_ref().map(String::as_str))?;
    }
    Ok(())
}

/// Each kernel's descriptor, one line per group (sizes, each register word), `name=value`.
fn descriptors(out: &mut dyn Write, co: &CodeObject<'_>, sums: &[KernelSummary]) -> Result<()> {
    let Some(hw) = co.processor().map(|p| p.hw) else {
        return Ok(());
    };
    let descriptors: Vec<KernelDescriptor<'_>> = co.kernel_descriptors().unwrap_or_default();
    for s in sums {
        let Some(d) = s
            .symbol
            .as_deref()
            .and_then(|sym| descriptors.iter().find(|d| d.symbol == sym))
        else {
            continue;
        };
        writeln!(out)?;
        writeln!(out, "{} (at offset 0x{:x}):", d.symbol, d.offset)?;
        let fields = match d.fields(hw) {
            Ok(f) => f,
            Err(e) => {
                writeln!(out, "  cannot decode: {e}")?;
                continue;
            }
        };
        let groups: [(&str, &[Word]); 5] = [
            (
                "sizes",
                &[
                    Word::GroupSegmentFixedSize,
                    Word::PrivateSegmentFixedSize,
                    Word::KernargSize,
                ],
            ),
            ("rsrc3", &[Word::Rsrc3]),
            ("rsrc1", &[Word::Rsrc1, Word::None]),
            ("rsrc2", &[Word::Rsrc2]),
            (
                "properties",
                &[Word::KernelCodeProperties, Word::KernargPreload],
            ),
        ];
        for (label, words) in groups {
            let items: Vec<String> = fields
                .iter()
                .filter(|f| words.contains(&f.field.word))
                .map(|f| format!("{}={}", f.field.name, f.value))
                .collect();
            if !items.is_empty() {
                writeln!(out, "  {label:<10} {}", items.join(" "))?;
            }
        }
    }
    Ok(())
}
