//! `gfxkit kernels`'s tables: each kernel's resources and occupancy, and a Tensile index's
//! solutions with the code objects holding them.

use gfxkit_code_object::KernelSummary;
use gfxkit_inventory::kernels::{KernelRow, SolutionRow};
use std::io::{Result, Write};

/// The kernels (one row each, with its file when `with_file`) and a Tensile index's solutions
/// with their count: `gfxkit kernels`'s text.
pub fn listing(
    rows: &[KernelRow],
    solutions: &[SolutionRow],
    with_file: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let with_file = with_file || rows_span_files(rows);
    if !rows.is_empty() || solutions.is_empty() {
        table(rows, with_file, out)?;
    }
    if !solutions.is_empty() {
        if !rows.is_empty() {
            writeln!(out)?;
        }
        solution_table(solutions, out)?;
        let absent = solutions.iter().filter(|s| !s.present).count();
        writeln!(
            out,
            "{}{}",
            crate::plural(solutions.len() as u64, "solution", "solutions"),
            if absent > 0 {
                format!(", {absent} without their kernel in the files loaded for their processor")
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

fn rows_span_files(rows: &[KernelRow]) -> bool {
    rows.windows(2).any(|w| w[0].file != w[1].file)
}

/// The cells of a kernel's resources: OCC, LIMIT, VGPR, AGPR, SGPR, LDS, SCRATCH, SPILLS, WAVE.
fn resource_cells(k: &KernelSummary) -> Vec<String> {
    let num = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let spills = match (k.sgpr_spill_count, k.vgpr_spill_count) {
        (None, None) => "-".to_owned(),
        (s, v) => format!("{}s/{}v", s.unwrap_or(0), v.unwrap_or(0)),
    };
    vec![
        k.occupancy
            .map_or_else(|| "-".to_owned(), |o| o.to_string()),
        k.occupancy_limited_by
            .map_or("-", |l| l.as_str())
            .to_owned(),
        num(k.vgpr_count),
        num(k.agpr_count),
        num(k.sgpr_count),
        num(k.lds_bytes),
        num(k.scratch_bytes),
        spills,
        num(k.wavefront_size),
    ]
}

const RESOURCES: [&str; 9] = [
    "OCC", "LIMIT", "VGPR", "AGPR", "SGPR", "LDS", "SCRATCH", "SPILLS", "WAVE",
];

fn table(rows: &[KernelRow], with_file: bool, out: &mut dyn Write) -> Result<()> {
    let mut header = vec!["TARGET"];
    header.extend(RESOURCES);
    header.push("NAME");
    let mut left = vec![true];
    left.extend([false; RESOURCES.len()]);
    left.push(true);
    if with_file {
        header.insert(0, "FILE");
        left.insert(0, true);
    }
    let cells = |r: &KernelRow| {
        let k = &r.kernel;
        let mut cells = vec![r.target_id.clone().unwrap_or_else(|| r.entry.clone())];
        cells.extend(resource_cells(k));
        cells.push(k.demangled.clone().unwrap_or_else(|| k.name.clone()));
        if with_file {
            cells.insert(0, r.file.clone());
        }
        cells
    };
    aligned(&header, &left, rows, cells, out)
}

/// The solutions of a Tensile index: per row and solution, the code object holding its
/// kernel and the kernel's resources.
fn solution_table(rows: &[SolutionRow], out: &mut dyn Write) -> Result<()> {
    let mut header = vec!["PROCESSOR", "ROW"];
    header.extend(RESOURCES);
    header.extend(["CODE OBJECT", "NAME"]);
    let mut left = vec![true, false];
    left.extend([false; RESOURCES.len()]);
    left.extend([true, true]);
    let cells = |r: &SolutionRow| {
        let mut cells = vec![
            match r.cu_count {
                Some(n) => format!("{} ({n} CUs)", r.processor),
                None => r.processor.clone(),
            },
            r.row.to_string(),
        ];
        match &r.kernel {
            Some(k) => cells.extend(resource_cells(k)),
            None => cells.extend(vec!["-".to_owned(); RESOURCES.len()]),
        }
        cells.push(
            r.code_object
                .clone()
                .unwrap_or_else(|| "(absent)".to_owned()),
        );
        cells.push(
            r.kernel
                .as_ref()
                .and_then(|k| k.demangled.clone())
                .unwrap_or_else(|| r.kernel_name.clone()),
        );
        cells
    };
    aligned(&header, &left, rows, cells, out)
}

/// Writes the `cells` of each of `rows` under `header`, columns padded to their widest cell:
/// left-aligned where `left` says so (the last column is not padded), else right-aligned. The
/// cells are made twice, for the widths and for the lines, and never held for every row at
/// once: a table of 400,000 kernels costs no more memory than its rows.
fn aligned<R>(
    header: &[&str],
    left: &[bool],
    rows: &[R],
    cells: impl Fn(&R) -> Vec<String>,
    out: &mut dyn Write,
) -> Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(cells(r)) {
            *w = (*w).max(c.len());
        }
    }
    let last = header.len() - 1;
    let line = |out: &mut dyn Write, cells: &[&str]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == last {
                s.push_str(c);
            } else if left[i] {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(out, header)?;
    for r in rows {
        let r = cells(r);
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(out, &cells)?;
    }
    out.flush()
}
