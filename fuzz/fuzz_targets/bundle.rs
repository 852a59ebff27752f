//! Fuzz target `bundle`: the body `gfxkit_fuzzing::body("bundle")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle/ and fuzz/seeds/bundle/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("bundle", data);
});
