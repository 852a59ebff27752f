//! Fuzz target `code_object`: the body `gfxkit_fuzzing::body("code_object")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/code_object/ and fuzz/seeds/code_object/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("code_object", data);
});
