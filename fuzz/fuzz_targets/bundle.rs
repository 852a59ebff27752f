//! Fuzz target `bundle`: the body `gfxkit_fuzzing::body("bundle")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle/ and fuzz/seeds/bundle/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("bundle").expect("a known fuzz target");
    body(data);
});
