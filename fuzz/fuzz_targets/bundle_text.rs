//! Fuzz target `bundle_text`: the body `gfxkit_fuzzing::body("bundle_text")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle_text/ and fuzz/seeds/bundle_text/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("bundle_text").expect("a known fuzz target");
    body(data);
});
