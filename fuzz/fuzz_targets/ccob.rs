//! Fuzz target `ccob`: the body `gfxkit_fuzzing::body("ccob")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/ccob/ and fuzz/seeds/ccob/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("ccob", data);
});
