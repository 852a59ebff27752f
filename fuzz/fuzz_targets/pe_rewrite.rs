//! Fuzz target `pe_rewrite`: the body `gfxkit_fuzzing::body("pe_rewrite")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/pe_rewrite/ and fuzz/seeds/pe_rewrite/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("pe_rewrite", data);
});
