//! Fuzz target `concatenated`: the body `gfxkit_fuzzing::body("concatenated")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/concatenated/ and fuzz/seeds/concatenated/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("concatenated").expect("a known fuzz target");
    body(data);
});
