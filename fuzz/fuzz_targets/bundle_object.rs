//! Fuzz target `bundle_object`: the body `gfxkit_fuzzing::body("bundle_object")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle_object/ and fuzz/seeds/bundle_object/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("bundle_object", data);
});
