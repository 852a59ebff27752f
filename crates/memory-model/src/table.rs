//! The whole table of one configuration: every [`Case`] with its sequence or the reason it
//! has none, and its rendering as a Markdown table in the layout of AMDGPUUsage's
//! code-sequence tables.

use crate::case::Case;
use crate::config::Config;
use crate::model::{sequence, Invalid, Sequence};
use std::fmt::Write as _;

/// Every case of a configuration with its answer, in case-enumeration order.
pub fn table(cfg: &Config) -> Vec<(Case, Result<Sequence, Invalid>)> {
    cfg.cases()
        .into_iter()
        .map(|c| (c, sequence(cfg, &c)))
        .collect()
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Renders the table as Markdown: one row per instruction, ordering, address space and
/// flags, with the scopes that share a sequence merged into one row. Invalid combinations
/// are left out; the note under the table says how many.
pub fn markdown(cfg: &Config) -> String {
    let rows = table(cfg);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "AMDGPU memory model code sequences for {} ({} conformant)\n",
        cfg.label(),
        cfg.llvm
    );
    out.push_str(
        "| LLVM instr | Ordering | Sync scope | Address space | Other | AMDGPU machine code |\n",
    );
    out.push_str("|---|---|---|---|---|---|\n");
    let mut invalid = 0usize;
    // Group the cases that differ only in scope and share the same sequence, keeping the
    // order in which each group first appears.
    let mut groups: Vec<(Case, Vec<Option<crate::Scope>>, Sequence)> = Vec::new();
    let mut index: std::collections::HashMap<(Case, Vec<String>), usize> =
        std::collections::HashMap::new();
    for (case, res) in rows {
        let Ok(seq) = res else {
            invalid += 1;
            continue;
        };
        let key = (
            Case {
                scope: None,
                ..case
            },
            seq.asm(),
        );
        match index.get(&key) {
            Some(&g) => groups[g].1.push(case.scope),
            None => {
                index.insert(key, groups.len());
                groups.push((case, vec![case.scope], seq));
            }
        }
    }
    for (case, scopes, seq) in &groups {
        let ord = match (case.ordering, case.failure) {
            (Some(o), Some(f)) => format!("{} / {}", o.name(), f.name()),
            (Some(o), None) => o.name().to_owned(),
            _ => "-".to_owned(),
        };
        let scope_text = if scopes.iter().all(Option::is_none) {
            "-".to_owned()
        } else {
            scopes
                .iter()
                .flatten()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut other = Vec::new();
        if let Some(r) = case.ret {
            other.push(if r { "returns" } else { "no return" }.to_owned());
        }
        if !case.flags.is_empty() {
            let t = case.to_string();
            if let Some(f) = t.split(';').find_map(|p| p.strip_prefix("flags=")) {
                other.push(f.to_owned());
            }
        }
        if let Some(m) = case.mmra {
            other.push(format!("amdgpu-as: {}", m.name()));
        }
        let asm = seq.asm();
        if asm.iter().any(|l| l == "buffer_gl1_inv") && asm.iter().any(|l| l == "buffer_gl0_inv") {
            other.push(
                "note: the 2020 spec table lists buffer_gl0_inv first; LLVM invalidates GL1 \
                 then GL0 (outer cache first), followed here"
                    .to_owned(),
            );
        }
        let code: Vec<String> = seq
            .steps
            .iter()
            .map(|s| format!("`{}` ({})", s.asm(seq.major), s.reason))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            case.kind.name(),
            ord,
            scope_text,
            case.addr_space.map(|a| a.name()).unwrap_or("-"),
            cell(&other.join(", ")),
            if code.is_empty() {
                "none".to_owned()
            } else {
                cell(&code.join("<br>"))
            }
        );
    }
    let _ = writeln!(
        out,
        "\n{invalid} combinations are not valid on {} and are not shown.",
        cfg.label()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{conformance_configs, families};
    use crate::model::StepKind;
    use crate::{AddrSpace, Kind};

    /// Every key of every family and mode has an answer: a sequence with the right number of
    /// memory instructions, or a reason.
    #[test]
    fn every_key_has_an_answer() {
        let mut configs: Vec<Config> = crate::Llvm::ALL
            .into_iter()
            .flat_map(conformance_configs)
            .collect();
        for f in families() {
            let c = Config::for_family(f).unwrap();
            configs.push(c);
            if let Ok(c2) = c.with_cumode(true) {
                configs.push(c2);
            }
            if let Ok(c2) = c.with_tgsplit(true) {
                configs.push(c2);
            }
        }
        let mut answered = 0;
        let mut want = 0;
        for cfg in &configs {
            want += cfg.cases().len();
            for (case, res) in table(cfg) {
                match res {
                    Ok(seq) => {
                        let mem = seq
                            .steps
                            .iter()
                            .filter(|s| matches!(s.kind, StepKind::Memory { .. }))
                            .count();
                        // An atomicrmw or cmpxchg on private memory is a load and a store,
                        // unless the family keeps it atomic (GFX12.5).
                        let split_private = !crate::family::rules(cfg.family, cfg.llvm)
                            .is_some_and(|r| r.private_atomics_are_flat);
                        let want = match (case.kind, case.addr_space) {
                            (Kind::Fence, _) => 0,
                            (Kind::AtomicRmw | Kind::Cmpxchg, Some(AddrSpace::Private))
                                if split_private =>
                            {
                                2
                            }
                            _ => 1,
                        };
                        assert_eq!(mem, want, "{} {case}", cfg.label());
                        assert!(seq.steps.iter().all(|s| !s.reason.is_empty()));
                    }
                    Err(e) => assert!(!e.to_string().is_empty(), "{} {case}", cfg.label()),
                }
                answered += 1;
            }
        }
        assert_eq!(answered, want);
    }

    #[test]
    fn markdown_has_a_row_per_valid_group() {
        let cfg = Config::for_family(gfxkit_spec::MemoryModelFamily::Gfx10).unwrap();
        let md = markdown(&cfg);
        assert!(md.contains("| LLVM instr | Ordering |"));
        assert!(md.contains("`buffer_gl1_inv`"));
        assert!(md.contains("`s_waitcnt_vscnt null, 0x0`"));
        assert!(md.lines().count() > 300);
    }
}
