//! Fuzz target: `gfxkit_bundle::fuzzing::ccob` (the same body runs as a smoke test in
//! crates/bundle/tests/robustness.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_bundle::fuzzing::ccob(data);
});
