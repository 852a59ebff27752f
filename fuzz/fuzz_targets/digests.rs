//! Fuzz target `digests`: the body `gfxkit_fuzzing::body("digests")` (see crates/fuzzing; the
//! same body replays fuzz/regressions/digests/ and fuzz/seeds/digests/ in ordinary tests), run
//! by `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("digests", data);
});
