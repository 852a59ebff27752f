//! Fuzz target `target_id`: the body `gfxkit_fuzzing::body("target_id")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/target_id/ and fuzz/seeds/target_id/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("target_id", data);
});
