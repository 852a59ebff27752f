//! Reads a Tensile index and prints its hardware rows: a check by hand on real files, and the
//! measure of time and memory (run under `/usr/bin/time -v`).
//!
//! ```text
//! cargo run --release -p gfxkit-kernel-db --example tensile_index -- TensileLibrary.dat
//! cargo run --release -p gfxkit-kernel-db --example tensile_index -- TensileLibrary.dat --names 1
//! cargo run --release -p gfxkit-kernel-db --example tensile_index -- TensileLibrary.dat --rmpv
//! ```
//!
//! `--names N` prints the solution names of row N, one a line; `--rmpv` decodes the file into
//! one `rmpv::Value` tree instead, to compare the memory that costs; `--resolve gfx90a[:xnack+]`
//! lists the file's directory and prints what rocBLAS would open there for that processor.

use gfxkit_kernel_db::resolve::{rocblas, Listing, Xnack};
use gfxkit_kernel_db::tensile::{decompress_zlib, Index};
use gfxkit_kernel_db::Limits;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: tensile_index FILE [--names ROW | --rmpv]");
        std::process::exit(2);
    };
    let raw = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let bytes = if path.ends_with(".zlib") {
        match decompress_zlib(&raw, Limits::default().max_decompressed) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        }
    } else {
        raw
    };
    if let Some(pos) = args.iter().position(|a| a == "--resolve") {
        let target = args.get(pos + 1).map_or("gfx90a", String::as_str);
        let (processor, xnack) = match target.split_once(':') {
            Some((p, "xnack+")) => (p, Xnack::On),
            Some((p, "xnack-")) => (p, Xnack::Off),
            _ => (target, Xnack::Unspecified),
        };
        let dir = std::path::Path::new(path)
            .parent()
            .unwrap_or(std::path::Path::new("."));
        let mut names = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            names.push(if is_dir { format!("{name}/") } else { name });
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let r = rocblas(&Listing::new(&refs), processor, xnack);
        println!("{target}: {r:#?}");
        return;
    }
    let start = Instant::now();
    if args.iter().any(|a| a == "--rmpv") {
        let mut rd = &bytes[..];
        match rmpv::decode::read_value(&mut rd) {
            Ok(v) => eprintln!(
                "rmpv::Value tree built in {:.2?} ({} top-level keys)",
                start.elapsed(),
                v.as_map().map_or(0, |m| m.len())
            ),
            Err(e) => eprintln!("{path}: {e}"),
        }
        return;
    }
    let index = match Index::parse(&bytes) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let parsed = start.elapsed();
    let rows = index.rows();
    if let Some(pos) = args.iter().position(|a| a == "--names") {
        let n: usize = args.get(pos + 1).and_then(|s| s.parse().ok()).unwrap_or(0);
        if let Some(row) = rows.get(n) {
            for i in &row.solutions {
                if let Some(s) = index.solution(*i) {
                    println!("{}", s.name);
                }
            }
        }
        return;
    }
    println!(
        "{path}: {} solutions ({} under no row), parsed in {parsed:.2?}",
        index.solutions.len(),
        index.unreachable_solutions().len()
    );
    for row in &rows {
        println!(
            "row {:>2}  {:<10} cu {:<5} {:>6} solutions  {} placeholders{}  {}",
            row.position,
            row.processor.unwrap_or("-"),
            row.cu_count.map_or("-".to_string(), |c| c.to_string()),
            row.solutions.len(),
            row.placeholders.len(),
            if row.unknown.is_empty() {
                String::new()
            } else {
                format!("  unknown: {}", row.unknown.join(", "))
            },
            row.predicate.map_or(String::new(), |p| p.to_string()),
        );
    }
}
