//! Fuzz target `host_pe`: the body `gfxkit_fuzzing::body("host_pe")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/host_pe/ and fuzz/seeds/host_pe/ in ordinary tests), run by
//! `gfxkit_fuzz::run` under its memory-bounded allocator.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gfxkit_fuzz::run("host_pe", data);
});
