//! Fuzz target `package`: the body `gfxkit_fuzzing::body("package")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/package/ and fuzz/seeds/package/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("package", data);
});
