//! Fuzz target `ccob`: the body `gfxkit_fuzzing::body("ccob")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/ccob/ and fuzz/seeds/ccob/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("ccob").expect("a known fuzz target");
    body(data);
});
