//! Reading `llvm-readelf -h --notes` output: the reference view of code objects' headers and
//! metadata notes that conformance tests compare gfxkit with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What llvm-readelf says about one file.
#[derive(Default, Debug)]
pub struct Readelf {
    /// `e_flags` from the header.
    pub flags: Option<u32>,
    /// `EI_ABIVERSION`.
    pub abi_version: Option<u8>,
    /// Kernel name -> top-level kernel keys (`.sgpr_count` -> `12`).
    pub kernels: BTreeMap<String, BTreeMap<String, String>>,
}

/// Parses `llvm-readelf -h --notes f1 f2 ...` output into one record per file (with one file,
/// readelf prints no "File:" line, so the record is keyed by `files[0]`).
pub fn parse_readelf(text: &str, files: &[&Path]) -> BTreeMap<PathBuf, Readelf> {
    let mut out: BTreeMap<PathBuf, Readelf> = BTreeMap::new();
    let mut current: Option<PathBuf> = if files.len() == 1 {
        Some(files[0].to_path_buf())
    } else {
        None
    };
    let mut kernel: Option<BTreeMap<String, String>> = None;
    let mut in_kernels = false;
    let flush = |out: &mut BTreeMap<PathBuf, Readelf>,
                 cur: &Option<PathBuf>,
                 k: &mut Option<BTreeMap<String, String>>| {
        if let (Some(c), Some(k)) = (cur, k.take()) {
            let name = k
                .get(".name")
                .cloned()
                .expect("kernel without .name in readelf output");
            out.entry(c.clone()).or_default().kernels.insert(name, k);
        }
    };
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("File: ") {
            flush(&mut out, &current, &mut kernel);
            current = Some(PathBuf::from(f.trim()));
            in_kernels = false;
            continue;
        }
        let Some(cur) = current.clone() else { continue };
        let rec = out.entry(cur.clone()).or_default();
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Flags:") {
            let hex = v.trim().split(',').next().unwrap().trim();
            rec.flags = Some(u32::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap());
        } else if let Some(v) = t.strip_prefix("ABI Version:") {
            rec.abi_version = Some(v.trim().parse().unwrap());
        } else if line.starts_with("amdhsa.kernels:") {
            in_kernels = true;
        } else if in_kernels && !line.starts_with(' ') {
            flush(&mut out, &current, &mut kernel);
            in_kernels = false;
        } else if in_kernels {
            // Kernel-level keys are at indent 4 (the first one after "  - ").
            let key_line = if let Some(rest) = line.strip_prefix("  - ") {
                flush(&mut out, &current, &mut kernel);
                kernel = Some(BTreeMap::new());
                Some(rest)
            } else if line.starts_with("    .") {
                Some(&line[4..])
            } else {
                None
            };
            if let (Some(kl), Some(k)) = (key_line, kernel.as_mut()) {
                if let Some((key, value)) = kl.split_once(':') {
                    k.insert(key.trim().to_owned(), value.trim().to_owned());
                }
            }
        }
    }
    flush(&mut out, &current, &mut kernel);
    out
}
