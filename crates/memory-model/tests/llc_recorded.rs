//! Every case of every conformance configuration against the recorded outcomes of its
//! release's oracle (`expected/<config>.txt` for llc-19, `expected/llvm22/<config>.txt` for
//! ROCm's LLVM 22, written by `scripts/memmodel-sweep`). A disagreement fails the
//! test unless `disagreements.txt` lists it with its reason; a listed case that agrees fails
//! too, so the list stays exact.

mod common;

use gfxkit_memory_model::config::conformance_configs;
use gfxkit_memory_model::conformance::{
    merge_waits, normalize_strict, parse_strict, render_normal, render_strict,
};
use gfxkit_memory_model::{sequence, Case, Config, Invalid, Llvm};
use std::collections::BTreeMap;

/// The model's outcome in the harness's strict form.
pub fn model_outcome(cfg: &Config, case: &Case) -> Result<String, String> {
    match sequence(cfg, case) {
        Ok(seq) => {
            let lines = seq.asm();
            Ok(render_strict(&normalize_strict(
                lines.iter().map(String::as_str),
            )))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The agreement criterion's form (wait runs as counter sets) of a strict form.
fn criterion(strict: &str) -> String {
    render_normal(&merge_waits(&parse_strict(strict)))
}

fn listed() -> BTreeMap<(String, String), String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("disagreements.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut m = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut it = line.splitn(3, '\t');
        let (c, k, r) = (
            it.next().unwrap(),
            it.next().unwrap_or(""),
            it.next().unwrap_or(""),
        );
        assert!(
            !r.trim().is_empty(),
            "disagreements.txt: `{line}` has no reason"
        );
        m.insert((c.to_owned(), k.to_owned()), r.to_owned());
    }
    m
}

#[test]
fn model_agrees_with_recorded_llc_outcomes() {
    let listed = listed();
    let mut problems = Vec::new();
    let mut summary = String::new();
    let show = std::env::var("GFXKIT_MEMMODEL_SHOW").ok();
    let only = std::env::var("GFXKIT_MEMMODEL_ONLY").ok();
    for cfg in Llvm::ALL.into_iter().flat_map(conformance_configs) {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| x == cfg.recording()))
        {
            continue;
        }
        let cases = cfg.cases();
        let expected = common::read_expected(&cfg, &cases);
        // A configuration whose family has no rows for the release: the whole configuration is
        // a known disagreement (`<config> TAB * TAB <reason>`), and the model must refuse
        // every case. Once the family is modelled, the line must go.
        let whole = (cfg.recording(), "*".to_owned());
        if gfxkit_memory_model::family::rules(cfg.family, cfg.llvm).is_none() {
            let refused = cases
                .iter()
                .all(|c| matches!(sequence(&cfg, c), Err(Invalid::Unsupported(_))));
            if !listed.contains_key(&whole) {
                problems.push(format!(
                    "{}: not modelled; list it in disagreements.txt as `{}\t*\t<reason>`",
                    whole.0, whole.0
                ));
            }
            if !refused {
                problems.push(format!(
                    "{}: not modelled, yet a case has an answer",
                    whole.0
                ));
            }
            let valid = expected.iter().filter(|e| e.is_ok()).count();
            summary.push_str(&format!(
                "{:<24} valid {:>5}  agree {:>5}  exact {:>5}  known disagreements {:>5}  rejected by the oracle {:>5}  (not modelled)\n",
                cfg.recording(),
                valid,
                0,
                0,
                valid,
                expected.len() - valid
            ));
            continue;
        }
        if listed.contains_key(&whole) {
            problems.push(format!(
                "{}: listed as not modelled, but the family has rows",
                whole.0
            ));
        }
        let (mut agree, mut exact, mut valid, mut rejected, mut known) = (0, 0, 0, 0, 0);
        for (case, exp) in cases.iter().zip(&expected) {
            let got = model_outcome(&cfg, case);
            // Agreement is judged on the criterion's form; an exact match (every wait
            // instruction as llc prints it) is required as well.
            let same = match (&got, exp) {
                (Ok(a), Ok(b)) => {
                    if criterion(a) == criterion(b) {
                        agree += 1;
                    }
                    a == b
                }
                (Err(_), Err(_)) => true,
                _ => false,
            };
            if exp.is_ok() {
                valid += 1;
                if same {
                    exact += 1;
                }
            } else {
                rejected += 1;
            }
            let key = (cfg.recording(), case.to_string());
            if same {
                if listed.contains_key(&key) {
                    problems.push(format!(
                        "{} {}: listed as a disagreement but agrees",
                        key.0, key.1
                    ));
                }
            } else if listed.contains_key(&key) {
                known += 1;
            } else {
                if show.as_deref().map_or(true, |s| cfg.recording() == s) {
                    problems.push(format!(
                        "{}\t{}\n    llc:   {:?}\n    model: {:?}",
                        key.0, key.1, exp, got
                    ));
                } else {
                    problems.push(format!("{} {}", key.0, key.1));
                }
            }
        }
        summary.push_str(&format!(
            "{:<24} valid {:>5}  agree {:>5}  exact {:>5}  known disagreements {:>5}  rejected by the oracle {:>5}\n",
            cfg.recording(),
            valid,
            agree,
            exact,
            known,
            rejected
        ));
    }
    eprintln!("{summary}");
    // GFXKIT_MEMMODEL_PROBLEMS=<file> writes every problem there (the panic shows 60).
    if let Ok(path) = std::env::var("GFXKIT_MEMMODEL_PROBLEMS") {
        std::fs::write(path, problems.join("\n")).unwrap();
    }
    if !problems.is_empty() {
        let n = problems.len();
        problems.truncate(60);
        panic!("{n} problems:\n{}", problems.join("\n"));
    }
}

/// ROCm 7.2.2's LLVM 22 never sets GFX12.5's `nv` (non-volatile) cache-policy bit: that came
/// with LLVM 23 (llvm-project#179413, constant-address-space accesses and invariant loads).
/// The model has no LLVM 23 rows, so it sets no `nv` either; a new recording that has one
/// fails here.
#[test]
fn gfx12_5_recordings_set_no_nv_bit() {
    let mut checked = 0;
    for cfg in conformance_configs(Llvm::V22) {
        if cfg.family != gfxkit_spec::MemoryModelFamily::Gfx1250 {
            continue;
        }
        let cases = cfg.cases();
        for (case, outcome) in cases.iter().zip(common::read_expected(&cfg, &cases)) {
            if let Ok(line) = outcome {
                checked += 1;
                assert!(
                    !line.split([' ', ';']).any(|t| t == "nv"),
                    "{} {case}: {line}",
                    cfg.recording()
                );
            }
        }
    }
    // gfx1250 and gfx1251, each with and without cumode.
    assert_eq!(checked, 4 * 4274);
}

/// GFX12.5 has no WGP mode: LLVM 22 takes `+cumode` there and emits the same sequences, and
/// so does gfxkit (the recordings of both modes agree line for line).
#[test]
fn gfx12_5_cumode_is_recorded_as_the_same_sequences() {
    let mut compared = 0;
    for cfg in conformance_configs(Llvm::V22) {
        if cfg.family != gfxkit_spec::MemoryModelFamily::Gfx1250 || !cfg.cumode {
            continue;
        }
        let plain = gfxkit_memory_model::config::Config {
            cumode: false,
            ..cfg
        };
        let cases = cfg.cases();
        let with = common::read_expected(&cfg, &cases);
        let without = common::read_expected(&plain, &cases);
        for ((case, a), b) in cases.iter().zip(with).zip(without) {
            assert_eq!(a, b, "{} {case}", cfg.recording());
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * 6300);
}
