//! A live sample against each release's oracle: in every conformance configuration, a
//! spread of cases compiled now, compared with the recorded outcome and with the model.
//! Catches a recording that no longer matches the installed compiler, and a harness change
//! that no longer reproduces the recording. llc-19 takes about a minute on 2 cores; ROCm's
//! LLVM 22 (installed by `scripts/ensure-llvm22` when missing) about as long.

mod common;

use gfxkit_memory_model::config::conformance_configs;
use gfxkit_memory_model::conformance::{normalize_strict, render_strict};
use gfxkit_memory_model::{sequence, Case, Llvm};

/// Samples every `valid_stride`-th valid case and every 251st rejected one (whose reason text
/// depends on what else is in the batch, so only the rejection is compared), starting at a
/// different place in each configuration.
fn live_sample(llvm: Llvm, valid_stride: usize, min_checked: usize) {
    let dir = std::env::temp_dir().join(format!(
        "gfxkit-memmodel-live{}-{}",
        llvm.name(),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (n, cfg) in conformance_configs(llvm).into_iter().enumerate() {
        let cases = cfg.cases();
        let recorded = common::read_expected(&cfg, &cases);
        let sample: Vec<(usize, Case)> = cases
            .iter()
            .copied()
            .enumerate()
            .filter(|(i, _)| {
                let stride = if recorded[*i].is_ok() {
                    valid_stride
                } else {
                    251
                };
                (i + n * 7) % stride == 0
            })
            .collect();
        let live = common::llc_outcomes(&cfg, &sample, &dir);
        for (i, case) in &sample {
            checked += 1;
            let got = &live[i];
            let same = match (got, &recorded[*i]) {
                (Ok(a), Ok(b)) => a == b,
                (Err(_), Err(_)) => true,
                _ => false,
            };
            if !same {
                failures.push(format!(
                    "{} {case}: the oracle now gives {got:?}, recorded {:?}",
                    cfg.recording(),
                    recorded[*i]
                ));
            }
            if gfxkit_memory_model::family::rules(cfg.family, cfg.llvm).is_none() {
                // Not modelled (listed in disagreements.txt): the oracle against its
                // recording only.
                continue;
            }
            let model = sequence(&cfg, case).map(|s| {
                let lines = s.asm();
                render_strict(&normalize_strict(lines.iter().map(String::as_str)))
            });
            if model.as_ref().ok() != got.as_ref().ok() || model.is_err() != got.is_err() {
                failures.push(format!(
                    "{} {case}: model {model:?}, oracle {got:?}",
                    cfg.recording()
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked > min_checked, "only {checked} cases sampled");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn live_llc19_sample_matches_recording_and_model() {
    live_sample(Llvm::V19, 13, 5000);
}

#[test]
fn live_llvm22_sample_matches_recording_and_model() {
    live_sample(Llvm::V22, 29, 2500);
}
