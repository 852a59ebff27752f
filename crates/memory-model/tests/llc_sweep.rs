//! The full oracle sweep: every case in every conformance configuration of each LLVM release
//! (llc-19, and ROCm's LLVM 22), written to `expected/<config>.txt` and
//! `expected/llvm22/<config>.txt`. Slow (minutes); run by `scripts/memmodel-sweep`.
//! `GFXKIT_MEMMODEL_LLVM=19` or `22` sweeps one release; `GFXKIT_MEMMODEL_ONLY` names
//! configurations; `GFXKIT_MEMMODEL_JOBS` sets how many run at once (2).

mod common;

use gfxkit_memory_model::config::conformance_configs;
use gfxkit_memory_model::{Case, Llvm};

#[test]
#[ignore = "full llc sweep; run scripts/memmodel-sweep"]
fn sweep_all_configurations() {
    let dir = tempfile_dir();
    std::fs::create_dir_all(common::expected_dir()).unwrap();
    let only = std::env::var("GFXKIT_MEMMODEL_ONLY").ok();
    let releases: Vec<Llvm> = match std::env::var("GFXKIT_MEMMODEL_LLVM") {
        Ok(r) => vec![r.parse().expect("GFXKIT_MEMMODEL_LLVM")],
        Err(_) => Llvm::ALL.to_vec(),
    };
    let configs: Vec<_> = releases
        .into_iter()
        .flat_map(conformance_configs)
        .filter(|c| {
            only.as_deref()
                .map_or(true, |o| o.split(',').any(|x| x == c.label()))
        })
        .collect();
    let jobs: usize = std::env::var("GFXKIT_MEMMODEL_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(config) = configs.get(k) else { break };
                let sub = dir.join(config.recording().replace('/', "_"));
                std::fs::create_dir_all(&sub).unwrap();
                let t = std::time::Instant::now();
                let cases = config.cases();
                let indexed: Vec<(usize, Case)> = cases.iter().copied().enumerate().collect();
                let outcomes = common::llc_outcomes(config, &indexed, &sub);
                let text = common::write_expected(config, &cases, &outcomes);
                let path = common::expected_path(config);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                // Written beside and renamed, so an interrupted sweep leaves the old recording.
                let tmp = path.with_extension("txt.tmp");
                std::fs::write(&tmp, text).unwrap();
                std::fs::rename(&tmp, &path).unwrap();
                let errors = outcomes.values().filter(|o| o.is_err()).count();
                eprintln!(
                    "{}: {} cases, {} rejected by the oracle, {:.1}s",
                    config.recording(),
                    outcomes.len(),
                    errors,
                    t.elapsed().as_secs_f64()
                );
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("gfxkit-memmodel-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
