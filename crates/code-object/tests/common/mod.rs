//! Shared by the descriptor conformance tests: llvm-objdump-19's view of `.kd` symbols.
#![allow(dead_code)]

use gfxkit_code_object::{FieldValue, KernelDescriptor, ReservedBits};
use gfxkit_spec::HardwareLimits;
use gfxkit_testkit::{llvm_tool, run_ok};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// gfxkit's view of a descriptor in llvm-objdump-19's words: the line each decoded field
/// prints as, in table order (the lines between `.amdhsa_kernel <name>` and
/// `.end_amdhsa_kernel`), or the reserved bits that make llvm-objdump refuse it.
pub fn objdump_lines(
    d: &KernelDescriptor<'_>,
    hw: &HardwareLimits,
) -> Result<Vec<String>, ReservedBits> {
    Ok(d.fields(hw)?
        .iter()
        .filter_map(FieldValue::objdump_line)
        .collect())
}

/// llvm-objdump's output per `.kd` symbol: `Ok(lines between .amdhsa_kernel and
/// .end_amdhsa_kernel)` or `Err(error text)`.
pub fn objdump_kds(obj: &Path) -> BTreeMap<String, Result<Vec<String>, String>> {
    let out = run_ok(
        Command::new(llvm_tool("llvm-objdump"))
            .args(["-d", "-j", ".rodata"])
            .arg(obj),
    );
    parse_objdump(&String::from_utf8(out.stdout).expect("objdump prints UTF-8"))
}

/// As [`objdump_kds`], disassembling only the named symbols (in batches: llvm-objdump-19
/// crashes on some non-descriptor data of linked objects' `.rodata`).
pub fn objdump_symbols(
    obj: &Path,
    symbols: &[&str],
) -> BTreeMap<String, Result<Vec<String>, String>> {
    let mut all = BTreeMap::new();
    for batch in symbols.chunks(200) {
        let out = run_ok(
            Command::new(llvm_tool("llvm-objdump"))
                .args(["-d", "-j", ".rodata"])
                .arg(format!("--disassemble-symbols={}", batch.join(",")))
                .arg(obj),
        );
        all.extend(parse_objdump(
            &String::from_utf8(out.stdout).expect("objdump prints UTF-8"),
        ));
    }
    all
}

fn parse_objdump(text: &str) -> BTreeMap<String, Result<Vec<String>, String>> {
    let mut blocks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(sym) = line
            .split_once(" <")
            .and_then(|(addr, rest)| {
                (addr.len() == 16 && addr.chars().all(|c| c.is_ascii_hexdigit())).then_some(rest)
            })
            .and_then(|rest| rest.strip_suffix(">:"))
        {
            current = Some(sym.to_owned());
            blocks.entry(sym.to_owned()).or_default();
            continue;
        }
        if let Some(c) = &current {
            blocks.get_mut(c).unwrap().push(line.trim().to_owned());
        }
    }
    blocks
        .into_iter()
        .filter(|(s, _)| s.ends_with(".kd"))
        .map(|(s, lines)| {
            if let Some(e) = lines.iter().find(|l| l.starts_with("; error decoding")) {
                return (s, Err(e.clone()));
            }
            let body: Vec<String> = lines
                .iter()
                .skip_while(|l| !l.starts_with(".amdhsa_kernel"))
                .skip(1)
                .take_while(|l| *l != ".end_amdhsa_kernel")
                .cloned()
                .collect();
            (s, Ok(body))
        })
        .collect()
}
