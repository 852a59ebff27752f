//! Fuzz target `bundle_object`: the body `gfxkit_fuzzing::body("bundle_object")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle_object/ and fuzz/seeds/bundle_object/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("bundle_object").expect("a known fuzz target");
    body(data);
});
