//! Fuzz target `bundle_text`: the body `gfxkit_fuzzing::body("bundle_text")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle_text/ and fuzz/seeds/bundle_text/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("bundle_text", data);
});
