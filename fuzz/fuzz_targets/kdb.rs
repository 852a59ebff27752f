//! Fuzz target `kdb`: the body `gfxkit_fuzzing::body("kdb")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/kdb/ and fuzz/seeds/kdb/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("kdb", data);
});
