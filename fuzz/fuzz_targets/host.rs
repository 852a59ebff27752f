//! Fuzz target `host`: the body `gfxkit_fuzzing::body("host")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/host/ and fuzz/seeds/host/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("host", data);
});
