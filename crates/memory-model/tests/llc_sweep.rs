//! The full llc-19 sweep: every case in every conformance configuration, written to
//! `expected/<config>.txt`. Slow (minutes); run by `scripts/memmodel-sweep`.

mod common;

use gfxkit_memory_model::config::conformance_configs;
use gfxkit_memory_model::Case;

#[test]
#[ignore = "full llc sweep; run scripts/memmodel-sweep"]
fn sweep_all_configurations() {
    let cases = Case::all();
    let indexed: Vec<(usize, Case)> = cases.iter().copied().enumerate().collect();
    let dir = tempfile_dir();
    std::fs::create_dir_all(common::expected_dir()).unwrap();
    let only = std::env::var("GFXKIT_MEMMODEL_ONLY").ok();
    let configs: Vec<_> = conformance_configs()
        .into_iter()
        .filter(|c| {
            only.as_deref()
                .map_or(true, |o| o.split(',').any(|x| x == c.label()))
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(config) = configs.get(k) else { break };
                let sub = dir.join(config.label());
                std::fs::create_dir_all(&sub).unwrap();
                let t = std::time::Instant::now();
                let outcomes = common::llc_outcomes(config, &indexed, &sub);
                let text = common::write_expected(config, &cases, &outcomes);
                let path = common::expected_dir().join(format!("{}.txt", config.label()));
                // Written beside and renamed, so an interrupted sweep leaves the old recording.
                let tmp = path.with_extension("txt.tmp");
                std::fs::write(&tmp, text).unwrap();
                std::fs::rename(&tmp, &path).unwrap();
                let errors = outcomes.values().filter(|o| o.is_err()).count();
                eprintln!(
                    "{}: {} cases, {} rejected by llc, {:.1}s",
                    config.label(),
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
