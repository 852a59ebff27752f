//! Host discovery in PE images and COFF objects (Windows DLLs, EXEs, `.obj`, `.lib`): what
//! every command sees in them, with the invariants of [`crate::host`] and those of the
//! PE/COFF reader.

use gfxkit_host::fatbin::{is_fatbin_section, is_wrapper_section};
use gfxkit_host::{discover, InputKind};

/// Discovers device code as [`crate::host::run`] does, then checks what the PE/COFF reader
/// promises: bundles lie in `.hip_fatbin`/`.hip_fat` (or are an archive's member of their
/// own), wrapper records are 24 bytes of `.hipFatBinSegment`/`.hipFatB`, the survey `gfxkit size` reads returns (an answer or an
/// error), and a PE image's or COFF object's rewrite (the `prune` and `pe_rewrite` bodies,
/// keeping gfx90a) is refused or verifies.
pub fn run(data: &[u8]) {
    crate::host::run(data);
    let found = discover(data);
    if !matches!(
        found.kind,
        InputKind::PeImage | InputKind::CoffObject | InputKind::Archive
    ) {
        return;
    }
    for l in (0..found.bundle_count()).filter_map(|i| found.bundle_location(i)) {
        match l.section.as_deref() {
            Some(section) => assert!(is_fatbin_section(section), "{l:?}"),
            // A bundle outside any section is a standalone bundle: an archive's member.
            None => assert!(
                found.kind == InputKind::Archive && l.member.is_some(),
                "{l:?}"
            ),
        }
    }
    for w in &found.wrappers {
        let section = w.location.section.as_deref();
        assert!(section.is_some_and(is_wrapper_section), "{:?}", w.location);
        assert_eq!(w.location.size, 24);
    }
    let _ = gfxkit_host::pe::is_dll(data);
    let _ = gfxkit_shrink::survey_with(data, false, &Default::default());
    if matches!(found.kind, InputKind::PeImage | InputKind::CoffObject) {
        let mut input = vec![1u8];
        input.extend_from_slice(data);
        crate::pe_rewrite::run(&input);
    }
}
