//! Fuzz target `prune`: the body `gfxkit_fuzzing::body("prune")` (see crates/fuzzing; the same
//! body replays fuzz/regressions/prune/ and fuzz/seeds/prune/ in ordinary tests).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = gfxkit_fuzzing::body("prune").expect("a known fuzz target");
    body(data);
});
