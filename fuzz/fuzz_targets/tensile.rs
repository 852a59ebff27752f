//! Fuzz target `tensile`: the body `gfxkit_fuzzing::body("tensile")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/tensile/ and fuzz/seeds/tensile/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("tensile", data);
});
