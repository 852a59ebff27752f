//! Fuzz target `kpack`: the body `gfxkit_fuzzing::body("kpack")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/kpack/ and fuzz/seeds/kpack/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("kpack").expect("a known fuzz target");
    body(data);
});
