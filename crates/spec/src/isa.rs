//! Processors that run one instruction set: where code compiled for one runs unchanged on
//! another.
//!
//! Source: LLVM's `GCNProcessors.td` (LLVM 19 to LLVM main, late 2026), which gives every
//! processor its subtarget feature set. Only processors defined with the *same* feature set
//! form a group here: `gfx1030` ... `gfx1036` all take `FeatureISAVersion10_3_0`, `gfx1200` and
//! `gfx1201` both `FeatureISAVersion12`. LLVM compiles identical code for the members of a
//! group, so a code object built for one runs on the others. Processors that merely share a
//! generic family or an ISA major and minor version are *not* grouped: `gfx900` and `gfx906`
//! (9.0.0 and 9.0.6) differ in their dot-product instructions, `gfx1010` and `gfx1011` too,
//! `gfx1100` and `gfx1102` in their register files, `gfx1100` and `gfx1101` in the hardware
//! workarounds LLVM applies (`FeatureUserSGPRInit16Bug`). Every row a group names must agree
//! with the processor table on everything the table knows (generic family, ISA major and
//! minor version, features, memory model, hardware limits); the tests check it, and check
//! against clang-19 that the members' target features are one list.

use crate::processor::Processor;

/// Groups of processors LLVM defines with one subtarget feature set (see the [module
/// documentation](self)).
pub static SAME_ISA: &[&[&str]] = &[
    &[
        "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
    ],
    &["gfx1200", "gfx1201"],
];

impl Processor {
    /// The other processors whose code objects run unchanged on this one ([`SAME_ISA`]), in
    /// table order; empty for most processors.
    pub fn same_isa(&self) -> impl Iterator<Item = &'static Processor> + '_ {
        SAME_ISA
            .iter()
            .filter(move |g| g.contains(&self.name))
            .flat_map(|g| g.iter())
            .filter(move |n| **n != self.name)
            .filter_map(|n| Processor::by_name(n))
    }

    /// Whether a code object built for `code` runs unchanged on this processor: the same
    /// processor, or one of the same instruction set ([`SAME_ISA`]).
    pub fn runs_code_of(&self, code: &Processor) -> bool {
        self.name == code.name || self.same_isa().any(|p| p.name == code.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_agree_with_the_processor_table() {
        let mut seen = std::collections::HashSet::new();
        for g in SAME_ISA {
            assert!(g.len() >= 2);
            let first = Processor::by_name(g[0]).unwrap();
            for n in *g {
                assert!(seen.insert(*n), "{n} is in two groups");
                let p = Processor::by_name(n).unwrap_or_else(|| panic!("{n}: no row"));
                assert_eq!(p.name, *n, "groups name primary names");
                assert!(!p.is_generic(), "{n}");
                assert_eq!(p.generic_family, first.generic_family, "{n}");
                let (a, b) = (p.isa_version().unwrap(), first.isa_version().unwrap());
                assert_eq!((a.0, a.1), (b.0, b.1), "{n}: ISA major and minor");
                assert_eq!(p.features, first.features, "{n}");
                assert_eq!(p.target_id_features, first.target_id_features, "{n}");
                assert_eq!(p.memory_model, first.memory_model, "{n}");
                assert_eq!(p.hw, first.hw, "{n}");
            }
        }
    }

    #[test]
    fn code_runs_within_a_group_only() {
        let p = |n: &str| Processor::by_name(n).unwrap();
        assert!(p("gfx1031").runs_code_of(p("gfx1030")));
        assert!(p("gfx1030").runs_code_of(p("gfx1036")));
        assert!(p("gfx1201").runs_code_of(p("gfx1200")));
        assert!(p("gfx906").runs_code_of(p("gfx906")));
        for (device, code) in [
            ("gfx900", "gfx906"),
            ("gfx906", "gfx900"),
            ("gfx1011", "gfx1010"),
            ("gfx1101", "gfx1100"),
            ("gfx1102", "gfx1100"),
            ("gfx1151", "gfx1150"),
            ("gfx942", "gfx90a"),
            ("gfx1030", "gfx10-3-generic"),
        ] {
            assert!(!p(device).runs_code_of(p(code)), "{device} {code}");
        }
        let names: Vec<&str> = p("gfx1031").same_isa().map(|q| q.name).collect();
        assert_eq!(
            names,
            ["gfx1030", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"]
        );
        assert_eq!(p("gfx90a").same_isa().count(), 0);
    }
}
