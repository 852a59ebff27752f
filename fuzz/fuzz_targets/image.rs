//! Fuzz target `image`: the body `gfxkit_fuzzing::body("image")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/image/ and fuzz/seeds/image/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("image", data);
});
