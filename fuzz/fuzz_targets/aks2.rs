//! Fuzz target `aks2`: the body `gfxkit_fuzzing::body("aks2")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/aks2/ and fuzz/seeds/aks2/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("aks2", data);
});
