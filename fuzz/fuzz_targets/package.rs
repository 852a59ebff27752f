//! Fuzz target `package`: the body `gfxkit_fuzzing::body("package")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/package/ and fuzz/seeds/package/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("package").expect("a known fuzz target");
    body(data);
});
