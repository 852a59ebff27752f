//! The `.rocm_kpack_ref` marker a `HIPK` wrapper points to.
//!
//! One MessagePack map, no length prefix: `kpack_search_paths` (non-empty array of archive
//! paths, relative to the binary's directory or absolute, usually
//! `../.kpack/<group>_@GFXARCH@.kpack`) and `kernel_name` (the TOC key without `#N`). The
//! reader is [`gfxkit_host::discover::decode_kpack_ref`] (discovery decodes the marker of
//! every `HIPK` wrapper into [`KpackRef`]); this module writes markers and applies the
//! runtime's requirements to a decoded one. The index N is the u32 at +16 of each wrapper
//! ([`gfxkit_host::Wrapper::kpack_index`]).

pub use gfxkit_host::discover::decode_kpack_ref;
pub use gfxkit_host::KpackRef;
use rmpv::Value;

/// Name of the section holding the marker in ELF files.
pub const SECTION: &str = ".rocm_kpack_ref";

/// Name of the section holding the marker in PE images (8 bytes at most).
pub const PE_SECTION: &str = ".kpackrf";

/// The marker section's name in a file of this kind: [`PE_SECTION`] in a PE image,
/// [`SECTION`] otherwise.
pub fn section_for(kind: gfxkit_host::InputKind) -> &'static str {
    if kind == gfxkit_host::InputKind::PeImage {
        PE_SECTION
    } else {
        SECTION
    }
}

/// The search path TheRock writes: `<rel>/<group>_@GFXARCH@.kpack`.
pub fn search_pattern(rel_dir: &str, group: &str) -> String {
    let rel = rel_dir.trim_end_matches('/');
    if rel.is_empty() || rel == "." {
        format!("{group}_@GFXARCH@.kpack")
    } else {
        format!("{rel}/{group}_@GFXARCH@.kpack")
    }
}

/// Encodes a marker (keys in the order TheRock writes them).
pub fn encode(r: &KpackRef) -> Vec<u8> {
    let v = Value::Map(vec![
        (
            Value::from("kpack_search_paths"),
            Value::Array(
                r.search_paths
                    .iter()
                    .map(|p| Value::from(p.as_str()))
                    .collect(),
            ),
        ),
        (
            Value::from("kernel_name"),
            Value::from(r.kernel_name.as_deref().unwrap_or("")),
        ),
    ]);
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = rmpv::encode::write_value(&mut out, &v);
    out
}

/// Why the runtime would refuse this marker (`KPACK_ERROR_INVALID_METADATA`), if it would:
/// `kernel_name` must be a string and `kpack_search_paths` must hold at least one string.
pub fn runtime_problem(r: &KpackRef) -> Option<&'static str> {
    if r.kernel_name.is_none() {
        Some("marker has no kernel_name string")
    } else if r.search_paths.is_empty() {
        Some("marker has no kpack_search_paths")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode() {
        let r = KpackRef {
            kernel_name: Some("lib/libfoo.so".into()),
            search_paths: vec![search_pattern("../.kpack", "foo")],
        };
        let b = encode(&r);
        let back = decode_kpack_ref(&b).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.search_paths[0], "../.kpack/foo_@GFXARCH@.kpack");
        assert_eq!(runtime_problem(&back), None);
        assert!(runtime_problem(&KpackRef {
            kernel_name: None,
            search_paths: vec!["x".into()]
        })
        .is_some());
    }
}
