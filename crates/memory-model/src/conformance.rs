//! Text side of the llc conformance harness: LLVM IR for a batch of cases, and the
//! normalization of llc's assembly (or of a [`Sequence`](crate::Sequence) rendered as
//! assembly) into a comparable form.
//!
//! Each case becomes one `amdgpu_kernel` whose instruction sits between two side-effecting
//! inline-asm markers; the first takes every operand (so waits for kernel arguments fall
//! before it) and a loaded value is used only after the second. Compiled at `-O0`, stopped
//! after `si-memory-legalizer` and resumed after `si-insert-waitcnts`, what llc prints between
//! the markers is the memory instruction and the legalizer's own waits and cache operations.
//!
//! The normal form keeps, in order: each memory instruction as its mnemonic plus cache-policy
//! modifiers; each run of consecutive waits as the set of counters it brings to zero; each
//! cache invalidate or write-back with its modifiers. Register moves and other instructions are
//! dropped.

use crate::case::{Case, Kind, Mmra};
use crate::release::Llvm;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The marker comment that opens a case in the assembly (followed by the case index).
pub const BEGIN: &str = "MMBEGIN";
/// The marker comment that closes a case.
pub const END: &str = "MMEND";

/// LLVM IR for one module holding one kernel per `(index, case)`; kernel `k<index>`. The
/// fence restrictions are spelled with the release's MMRA tag.
pub fn ir_module(cases: &[(usize, Case)], llvm: Llvm) -> String {
    let mut m = String::new();
    for &(i, c) in cases {
        kernel(&mut m, i, &c);
    }
    // !0 nontemporal, !1 last use, !2-!4 the fence restrictions.
    let tag = llvm.mmra_tag();
    m.push_str("!0 = !{i32 1}\n!1 = !{}\n");
    let _ = writeln!(m, "!2 = !{{!\"{tag}\", !\"global\"}}");
    let _ = writeln!(m, "!3 = !{{!\"{tag}\", !\"local\"}}\n!4 = !{{!2, !3}}");
    m
}

fn kernel(m: &mut String, i: usize, c: &Case) {
    let ptr = match c.addr_space {
        None | Some(crate::AddrSpace::Generic) => "ptr".to_owned(),
        Some(a) => format!("ptr addrspace({})", a.number()),
    };
    let _ = writeln!(
        m,
        "define amdgpu_kernel void @k{i}({ptr} %p, i32 %v, i32 %c) {{"
    );
    let _ = writeln!(
        m,
        "  call void asm sideeffect \"; {BEGIN} {i}\", \"s,s,s\"({ptr} %p, i32 %v, i32 %c)"
    );
    let vol = if c.flags.volatile { " volatile" } else { "" };
    let mut md = String::new();
    if c.flags.nontemporal {
        md.push_str(", !nontemporal !0");
    }
    if c.flags.last_use {
        md.push_str(", !amdgpu.last.use !1");
    }
    let scope = c.scope.map(|s| s.llvm_syncscope()).unwrap_or_default();
    let ord = c.ordering.map(|o| o.name()).unwrap_or_default();
    let mut used = false;
    match c.kind {
        Kind::Load => {
            let _ = writeln!(m, "  %x = load{vol} i32, {ptr} %p, align 4{md}");
            used = true;
        }
        Kind::Store => {
            let _ = writeln!(m, "  store{vol} i32 %v, {ptr} %p, align 4{md}");
        }
        Kind::LoadAtomic => {
            let _ = writeln!(
                m,
                "  %x = load atomic{vol} i32, {ptr} %p{scope} {ord}, align 4{md}"
            );
            used = true;
        }
        Kind::StoreAtomic => {
            let _ = writeln!(
                m,
                "  store atomic{vol} i32 %v, {ptr} %p{scope} {ord}, align 4{md}"
            );
        }
        Kind::AtomicRmw => {
            let _ = writeln!(
                m,
                "  %x = atomicrmw{vol} add {ptr} %p, i32 %v{scope} {ord}, align 4{md}"
            );
            used = c.ret == Some(true);
        }
        Kind::Cmpxchg => {
            let ford = c.failure.map(|o| o.name()).unwrap_or_default();
            let _ = writeln!(
                m,
                "  %r = cmpxchg{vol} {ptr} %p, i32 %c, i32 %v{scope} {ord} {ford}, align 4{md}"
            );
            if c.ret == Some(true) {
                let _ = writeln!(m, "  %x = extractvalue {{ i32, i1 }} %r, 0");
                used = true;
            }
        }
        Kind::Fence => {
            let mmra = match c.mmra {
                None | Some(Mmra::None) => "",
                Some(Mmra::Global) => ", !mmra !2",
                Some(Mmra::Local) => ", !mmra !3",
                Some(Mmra::GlobalLocal) => ", !mmra !4",
            };
            let _ = writeln!(m, "  fence{scope} {ord}{mmra}");
        }
    }
    let _ = writeln!(m, "  call void asm sideeffect \"; {END} {i}\", \"\"()");
    if used {
        let _ = writeln!(m, "  call void asm sideeffect \"; USE\", \"v\"(i32 %x)");
    }
    m.push_str("  ret void\n}\n");
}

/// One item of the normal form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Item {
    /// A run of consecutive waits: the counters it brings to zero, sorted.
    Wait(BTreeSet<String>),
    /// Any other kept instruction: mnemonic and cache-policy modifiers, space separated.
    Insn(String),
}

/// Renders a normal form as one line: items separated by ` ; `, a wait run as
/// `wait(c1,c2)`. The empty sequence is `-`.
pub fn render_normal(items: &[Item]) -> String {
    if items.is_empty() {
        return "-".to_owned();
    }
    items
        .iter()
        .map(|i| match i {
            Item::Wait(s) => format!("wait({})", s.iter().cloned().collect::<Vec<_>>().join(",")),
            Item::Insn(s) => s.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ; ")
}

/// Modifiers that are cache policy (kept); every other operand is dropped.
fn is_policy(tok: &str) -> bool {
    matches!(
        tok,
        "glc" | "slc" | "dlc" | "sc0" | "sc1" | "nt" | "gds" | "scc"
    ) || tok.starts_with("th:")
        || tok.starts_with("scope:")
}

/// Whether a mnemonic is a memory instruction or cache operation to keep.
fn is_kept(mn: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "global_",
        "flat_",
        "buffer_",
        "ds_",
        "scratch_",
        "s_load",
        "s_buffer_load",
        "s_store",
        "s_dcache",
    ];
    PREFIXES.iter().any(|p| mn.starts_with(p)) || mn.starts_with("s_gl") || mn == "s_sleep"
}

/// Parses the counters a wait instruction brings to zero, in printed order; `None` if the
/// mnemonic is not a wait.
fn wait_counters(mn: &str, rest: &str) -> Option<Vec<String>> {
    if mn == "s_waitcnt" {
        // s_waitcnt vmcnt(0) expcnt(0) lgkmcnt(0)
        let mut out = Vec::new();
        for tok in rest.split(|c: char| c.is_whitespace() || c == '&') {
            if let Some((name, v)) = tok.split_once('(') {
                if v.trim_end_matches(')') == "0" {
                    out.push(name.to_owned());
                }
            }
        }
        return Some(out);
    }
    if let Some(cnt) = mn.strip_prefix("s_waitcnt_") {
        // s_waitcnt_vscnt null, 0x0
        let v = rest.rsplit(',').next().unwrap_or("").trim();
        let zero = v == "0" || v == "0x0";
        return Some(if zero {
            vec![cnt.to_owned()]
        } else {
            Vec::new()
        });
    }
    if let Some(cnt) = mn.strip_prefix("s_wait_") {
        // s_wait_loadcnt 0x0
        let v = rest.trim();
        let zero = v == "0" || v == "0x0";
        return Some(if zero {
            vec![cnt.to_owned()]
        } else {
            Vec::new()
        });
    }
    None
}

/// Normalizes assembly lines strictly: one token per kept instruction, in order. A wait is
/// `wait(c1,c2)` with the counters it zeroes in printed order (a wait that zeroes nothing is
/// dropped); other instructions are the mnemonic and cache-policy modifiers. Comments,
/// labels, directives and instructions that are neither waits, cache operations nor memory
/// instructions are dropped.
pub fn normalize_strict<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    for raw in lines {
        let line = raw.split(';').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with('.') || line.ends_with(':') {
            continue;
        }
        let (mn, rest) = match line.split_once(char::is_whitespace) {
            Some((a, b)) => (a, b.trim()),
            None => (line, ""),
        };
        if let Some(cnts) = wait_counters(mn, rest) {
            if !cnts.is_empty() {
                out.push(format!("wait({})", cnts.join(",")));
            }
            continue;
        }
        if !is_kept(mn) {
            continue;
        }
        let mut s = mn.to_owned();
        for tok in rest.split(|c: char| c.is_whitespace() || c == ',') {
            if is_policy(tok) {
                s.push(' ');
                s.push_str(tok);
            }
        }
        out.push(s);
    }
    out
}

/// Renders a strict form as one line, tokens separated by ` ; ` (`-` when empty).
pub fn render_strict(tokens: &[String]) -> String {
    if tokens.is_empty() {
        "-".to_owned()
    } else {
        tokens.join(" ; ")
    }
}

/// The normal form of the agreement criterion from a strict form: each run of consecutive
/// waits becomes the set of counters it brings to zero.
pub fn merge_waits(tokens: &[String]) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    for t in tokens {
        if let Some(list) = t.strip_prefix("wait(").and_then(|r| r.strip_suffix(')')) {
            let set = list.split(',').map(str::to_owned);
            match out.last_mut() {
                Some(Item::Wait(s)) => s.extend(set),
                _ => out.push(Item::Wait(set.collect())),
            }
        } else {
            out.push(Item::Insn(t.clone()));
        }
    }
    out
}

/// Parses a rendered strict form back into tokens.
pub fn parse_strict(line: &str) -> Vec<String> {
    if line == "-" {
        Vec::new()
    } else {
        line.split(" ; ").map(str::to_owned).collect()
    }
}

/// Splits llc's assembly into the text between the markers of each case:
/// `(index, lines)` in the order found.
pub fn split_asm(asm: &str) -> Vec<(usize, Vec<&str>)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, Vec<&str>)> = None;
    for line in asm.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("; ").and_then(|r| r.strip_prefix(BEGIN)) {
            if let Ok(i) = rest.trim().parse() {
                cur = Some((i, Vec::new()));
                continue;
            }
        }
        if let Some(rest) = t.strip_prefix("; ").and_then(|r| r.strip_prefix(END)) {
            if let (Some((i, lines)), Ok(j)) = (cur.take(), rest.trim().parse::<usize>()) {
                if i == j {
                    out.push((i, lines));
                }
            }
            continue;
        }
        if let Some((_, lines)) = cur.as_mut() {
            if !t.starts_with(";;#ASM") {
                lines.push(t);
            }
        }
    }
    out
}

/// One instruction of the machine code the memory legalizer leaves between a case's markers
/// (LLVM's `-print-after=si-memory-legalizer` dump), as far as the comparison needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MirItem {
    /// A wait: the counters it brings to zero, in the order the assembly printer names them
    /// (empty for a wait that zeroes nothing).
    Wait(Vec<String>),
    /// A memory instruction or cache operation (one the assembly normalizer keeps): its opcode.
    Kept(String),
}

/// Splits a `-print-after=si-memory-legalizer` dump into the instructions between the markers
/// of each case: `(index, lines)` in the order found.
pub fn split_mir(text: &str) -> Vec<(usize, Vec<&str>)> {
    let marker = |line: &str, which: &str| -> Option<usize> {
        let rest = line.split_once(&format!("INLINEASM &\"; {which} "))?.1;
        rest.split('"').next()?.trim().parse().ok()
    };
    let mut out = Vec::new();
    let mut cur: Option<(usize, Vec<&str>)> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(i) = marker(t, BEGIN) {
            cur = Some((i, Vec::new()));
            continue;
        }
        if let Some(j) = marker(t, END) {
            if let Some((i, lines)) = cur.take() {
                if i == j {
                    out.push((i, lines));
                }
            }
            continue;
        }
        if let Some((_, lines)) = cur.as_mut() {
            lines.push(t);
        }
    }
    out
}

/// The opcode of a machine instruction line (`renamable $vgpr0 = GLOBAL_LOAD_DWORD_SADDR ...`
/// gives `GLOBAL_LOAD_DWORD_SADDR`): the first word after the definitions that starts with a
/// capital letter.
fn mir_opcode(line: &str) -> Option<&str> {
    let rest = line.split_once(" = ").map_or(line, |(_, r)| r);
    rest.split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|w| w.trim_end_matches(','))
}

/// The counters an `S_WAITCNT` immediate brings to zero on ISA major version `major`, in
/// printed order (vmcnt, expcnt, lgkmcnt). Field layout from AMDGPUBaseInfo: GFX6-GFX8 vmcnt
/// \[3:0\], expcnt \[6:4\], lgkmcnt \[11:8\]; GFX9 and GFX10 add vmcnt \[15:14\] and GFX10 widens
/// lgkmcnt to \[13:8\]; GFX11 vmcnt \[15:10\], expcnt \[2:0\], lgkmcnt \[9:4\].
pub fn waitcnt_zeroes(imm: u32, major: u8) -> Vec<String> {
    let field = |shift: u32, width: u32| (imm >> shift) & ((1 << width) - 1);
    let (vm, exp, lgkm) = if major >= 11 {
        (field(10, 6), field(0, 3), field(4, 6))
    } else {
        let hi = if major == 9 || major == 10 {
            field(14, 2)
        } else {
            0
        };
        let lgkm_width = if major >= 10 { 6 } else { 4 };
        (field(0, 4) | hi, field(4, 3), field(8, lgkm_width))
    };
    [(vm, "vmcnt"), (exp, "expcnt"), (lgkm, "lgkmcnt")]
        .into_iter()
        .filter(|(v, _)| *v == 0)
        .map(|(_, n)| n.to_owned())
        .collect()
}

/// Reads the legalizer's machine code of one case (lines from [`split_mir`]) on ISA major
/// version `major`: its waits and kept instructions, in order.
pub fn mir_items<'a>(lines: impl IntoIterator<Item = &'a str>, major: u8) -> Vec<MirItem> {
    let mut out = Vec::new();
    for line in lines {
        let Some(op) = mir_opcode(line) else { continue };
        let base = op.strip_suffix("_soft").unwrap_or(op);
        let operands = line.split_once(op).map_or("", |(_, r)| r);
        let last_imm = || -> Option<u32> {
            let t = operands.split(',').next_back()?.trim();
            t.parse().ok()
        };
        if base == "S_WAITCNT" {
            let imm = operands
                .split(',')
                .next()
                .and_then(|t| t.trim().parse().ok());
            out.push(MirItem::Wait(
                imm.map(|i| waitcnt_zeroes(i, major)).unwrap_or_default(),
            ));
            continue;
        }
        let counter = base
            .strip_prefix("S_WAITCNT_")
            .or_else(|| base.strip_prefix("S_WAIT_"));
        if let Some(cnt) = counter {
            let zero = last_imm() == Some(0);
            out.push(MirItem::Wait(if zero {
                vec![cnt.to_ascii_lowercase()]
            } else {
                Vec::new()
            }));
            continue;
        }
        if is_kept(&op.to_ascii_lowercase()) {
            out.push(MirItem::Kept(op.to_owned()));
        }
    }
    out
}

/// The strict form of a case from the full pipeline's assembly and the legalizer's machine
/// code: the assembly's memory instructions and cache operations (mnemonics and cache-policy
/// modifiers as printed) with the waits the legalizer itself placed, one token per wait
/// instruction, where it placed them. (The full pipeline's wait insertion merges and reorders
/// those waits; the llc-19 recordings were taken before it ran.) An error when the two do not
/// hold the same kept instructions.
pub fn with_legalizer_waits(asm_strict: &[String], mir: &[MirItem]) -> Result<Vec<String>, String> {
    let insns: Vec<&String> = asm_strict
        .iter()
        .filter(|t| !t.starts_with("wait("))
        .collect();
    let kept: Vec<&String> = mir
        .iter()
        .filter_map(|m| match m {
            MirItem::Kept(op) => Some(op),
            MirItem::Wait(_) => None,
        })
        .collect();
    if insns.len() != kept.len() {
        return Err(format!(
            "oracle: the legalizer left {} memory instructions ({}), the assembly has {} ({})",
            kept.len(),
            kept.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            insns.len(),
            render_strict(&insns.iter().map(|s| (*s).clone()).collect::<Vec<_>>())
        ));
    }
    let mut next = insns.into_iter();
    let mut out = Vec::new();
    for item in mir {
        match item {
            MirItem::Wait(cs) if cs.is_empty() => {}
            MirItem::Wait(cs) => out.push(format!("wait({})", cs.join(","))),
            MirItem::Kept(op) => {
                let insn = next.next().expect("counted above");
                let family = |s: &str| s.split('_').next().unwrap_or("").to_ascii_lowercase();
                if family(op) != family(insn) {
                    return Err(format!(
                        "oracle: legalizer instruction {op} does not match assembly `{insn}`"
                    ));
                }
                out.push(insn.clone());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_waits_and_policy_bits() {
        let asm = "\tv_mov_b32_e32 v1, s6\n\ts_waitcnt vmcnt(0) lgkmcnt(0)\n\ts_waitcnt_vscnt null, 0x0\n\
                   \tglobal_atomic_cmpswap v0, v[1:2], s[4:5] glc dlc offset:16\n\tbuffer_gl1_inv\n\
                   \ts_wait_loadcnt 0x0\n\ts_wait_dscnt 0x3f\n\tglobal_inv scope:SCOPE_SYS\n";
        let n = merge_waits(&normalize_strict(asm.lines()));
        assert_eq!(
            render_normal(&n),
            "wait(lgkmcnt,vmcnt,vscnt) ; global_atomic_cmpswap glc dlc ; buffer_gl1_inv ; \
             wait(loadcnt) ; global_inv scope:SCOPE_SYS"
        );
    }

    #[test]
    fn strict_form_keeps_each_wait() {
        let asm = "\ts_wait_loadcnt 0x0\n\ts_wait_loadcnt 0x0\n\tglobal_store_b32 v0, v1, s[0:1] scope:SCOPE_SYS\n";
        let strict = normalize_strict(asm.lines());
        assert_eq!(
            render_strict(&strict),
            "wait(loadcnt) ; wait(loadcnt) ; global_store_b32 scope:SCOPE_SYS"
        );
        assert_eq!(parse_strict(&render_strict(&strict)), strict);
        assert_eq!(
            render_normal(&merge_waits(&strict)),
            "wait(loadcnt) ; global_store_b32 scope:SCOPE_SYS"
        );
    }

    #[test]
    fn waitcnt_fields_per_generation() {
        // Immediates the GFX9, GFX10 and GFX11 legalizers write (from llc's machine code).
        assert_eq!(waitcnt_zeroes(112, 9), ["vmcnt", "lgkmcnt"]);
        assert_eq!(waitcnt_zeroes(3952, 9), ["vmcnt"]);
        assert_eq!(waitcnt_zeroes(16240, 10), ["vmcnt"]);
        assert_eq!(waitcnt_zeroes(7, 11), ["vmcnt", "lgkmcnt"]);
        assert_eq!(waitcnt_zeroes(1015, 11), ["vmcnt"]);
        // Bits 15:14 are vmcnt from GFX9 on only.
        assert_eq!(waitcnt_zeroes(0xc070, 8), ["vmcnt", "lgkmcnt"]);
        assert_eq!(waitcnt_zeroes(0xc070, 9), ["lgkmcnt"]);
    }

    #[test]
    fn legalizer_waits_replace_the_pipelines() {
        let mir = "  INLINEASM &\"; MMBEGIN 4\" [sideeffect] [attdialect], $0:[reguse:SGPR_64]\n\
                   \x20 S_WAIT_BVHCNT_soft 0\n  S_WAIT_LOADCNT_soft 0\n  S_WAIT_DSCNT_soft 0\n\
                   \x20 renamable $vgpr0 = GLOBAL_LOAD_DWORD_SADDR killed renamable $sgpr0_sgpr1, 0, 16, implicit $exec\n\
                   \x20 S_WAITCNT_VSCNT_soft undef $sgpr_null, 0\n  GLOBAL_INV 16, implicit $exec\n\
                   \x20 INLINEASM &\"; MMEND 4\" [sideeffect] [attdialect]\n";
        let regions = split_mir(mir);
        assert_eq!(regions.len(), 1);
        assert_eq!(regions[0].0, 4);
        let items = mir_items(regions[0].1.iter().copied(), 12);
        let asm = normalize_strict(
            "\ts_wait_bvhcnt 0x0\n\ts_wait_loadcnt_dscnt 0x0\n\tglobal_load_b32 v0, v0, s[0:1] scope:SCOPE_DEV\n\
             \ts_wait_storecnt 0x0\n\tglobal_inv scope:SCOPE_DEV\n"
                .lines(),
        );
        let merged = with_legalizer_waits(&asm, &items).unwrap();
        assert_eq!(
            render_strict(&merged),
            "wait(bvhcnt) ; wait(loadcnt) ; wait(dscnt) ; global_load_b32 scope:SCOPE_DEV ; \
             wait(vscnt) ; global_inv scope:SCOPE_DEV"
        );
        // A different instruction count is an error, not a guess.
        assert!(with_legalizer_waits(&asm[..2], &items).is_err());
    }

    #[test]
    fn splits_by_markers() {
        let asm = "\t;;#ASMSTART\n\t; MMBEGIN 7\n\t;;#ASMEND\n\tds_read_b32 v0, v0\n\t;;#ASMSTART\n\t; MMEND 7\n";
        let s = split_asm(asm);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, 7);
        assert_eq!(
            render_normal(&merge_waits(&normalize_strict(s[0].1.iter().copied()))),
            "ds_read_b32"
        );
    }
}
