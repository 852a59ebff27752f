//! Fuzz target `bundle_archive`: the body `gfxkit_fuzzing::body("bundle_archive")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle_archive/ and fuzz/seeds/bundle_archive/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("bundle_archive", data);
});
