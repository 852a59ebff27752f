//! Fuzz target `host`: the body `gfxkit_fuzzing::body("host")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/host/ and fuzz/seeds/host/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("host").expect("a known fuzz target");
    body(data);
});
