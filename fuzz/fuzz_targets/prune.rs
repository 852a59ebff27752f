//! Fuzz target `prune`: the body `gfxkit_fuzzing::body("prune")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/prune/ and fuzz/seeds/prune/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("prune", data);
});
