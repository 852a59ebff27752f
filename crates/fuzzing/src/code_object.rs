//! AMDGPU code objects: what `gfxkit inspect` reads.

use gfxkit_code_object::{CodeObject, CodeObjectVersion, EFlags, Header, Metadata};

/// Parses the input as a code object (header, `e_flags`, notes, MessagePack metadata, kernel
/// descriptors and the consistency checks), as a bare metadata note descriptor, and decodes
/// its first word as `e_flags` of every code-object version. The identity check (what
/// `extract` asks before it writes a code object) agrees with the whole parse: a code object
/// that parses passes it with the same target verdict.
pub fn run(data: &[u8]) {
    let header = Header::parse(data);
    let identity = CodeObject::check_identity(data);
    if let Err(e) = &identity {
        assert!(e.offset() <= data.len() as u64, "{e}");
    }
    match CodeObject::parse(data) {
        Ok(co) => {
            match &identity {
                Ok(verdict) => assert_eq!(verdict, &co.target_mismatch()),
                Err(e) => panic!("the identity check refuses a code object that parses: {e}"),
            }
            assert!(header.is_ok(), "a code object whose header does not parse");
            let _ = co.target_id();
            if let (Some(m), Some(at)) = (co.metadata(), co.metadata_offset()) {
                assert!(at <= data.len() as u64);
                let _ = (m.version(), m.target(), m.target_id_str());
            }
            for k in co.kernels() {
                let _ = format!("{k:?}");
            }
            if let Ok(kds) = co.kernel_descriptors() {
                for kd in kds {
                    let _ = kd.kernel_name();
                }
            }
            for issue in co.issues() {
                let _ = format!("{issue:?}");
            }
        }
        Err(e) => {
            assert!(e.offset() <= data.len() as u64, "{e}");
            let _ = e.to_string();
        }
    }
    if let Ok(m) = Metadata::parse(data, 0) {
        for k in m.kernels() {
            let _ = format!("{k:?}");
        }
        let _ = m.to_json();
    }
    if let Some(w) = data.get(..4) {
        let raw = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        // Not V2: its layout is ambiguous (an old V2 object's xnack bit is r600's mach value).
        for cov in [
            CodeObjectVersion::V3,
            CodeObjectVersion::V4,
            CodeObjectVersion::V5,
            CodeObjectVersion::V6,
        ] {
            let flags = EFlags::decode(raw, cov);
            let _ = flags.issues();
            if let Ok(t) = flags.target_id() {
                // What decodes encodes back to the same target.
                if let Ok(again) = EFlags::encode(&t, cov) {
                    assert_eq!(EFlags::decode(again, cov).target_id().ok(), Some(t));
                }
            }
        }
    }
}
