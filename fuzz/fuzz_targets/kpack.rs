//! Fuzz target `kpack`: the body `gfxkit_fuzzing::body("kpack")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/kpack/ and fuzz/seeds/kpack/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("kpack", data);
});
