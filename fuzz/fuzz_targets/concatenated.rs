//! Fuzz target `concatenated`: the body `gfxkit_fuzzing::body("concatenated")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/concatenated/ and fuzz/seeds/concatenated/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("concatenated", data);
});
