//! Fuzz target `bundle_archive`: the body `gfxkit_fuzzing::body("bundle_archive")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/bundle_archive/ and fuzz/seeds/bundle_archive/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("bundle_archive").expect("a known fuzz target");
    body(data);
});
