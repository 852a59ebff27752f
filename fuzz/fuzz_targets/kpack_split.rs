//! Fuzz target `kpack_split`: the body `gfxkit_fuzzing::body("kpack_split")` (see
//! crates/fuzzing; the same body replays fuzz/regressions/kpack_split/ and
//! fuzz/seeds/kpack_split/ in ordinary tests), run by `gfxkit_fuzz::run` under its
//! memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("kpack_split", data);
});
