//! Fuzz target `target_id`: the body `gfxkit_fuzzing::body("target_id")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/target_id/ and fuzz/seeds/target_id/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("target_id").expect("a known fuzz target");
    body(data);
});
