//! Host discovery: what `gfxkit list`, `verify`, `select` and `extract` find in a file.

use gfxkit_host::{discover, entries, select, BundleFormat};
use gfxkit_target_id::TargetId;

/// Discovers device code in the input and reads what was found the way `gfxkit list` does:
/// every location lies inside the input, each bundle's entries are read from its header, code
/// objects are parsed, and the runtime's choice is made for a device.
pub fn run(data: &[u8]) {
    let found = discover(data);
    let len = data.len() as u64;
    let inside = |offset: u64, size: usize| {
        assert!(
            offset
                .checked_add(size as u64)
                .is_some_and(|end| end <= len),
            "{offset:#x}+{size} outside {len} bytes"
        );
    };
    let device = TargetId::parse("gfx90a:sramecc+:xnack-").expect("a valid target ID");
    for b in &found.bundles {
        inside(b.location.offset, b.bytes.len());
        if let Ok(ids) = entries::entry_ids(b.format, b.bytes, &found.limits) {
            let _ = select::select(&device, &ids);
            let _ = select::nearest_targets(&device, &ids);
        }
        if b.format == BundleFormat::Uncompressed {
            if let Ok((bundle, _)) = gfxkit_bundle::Bundle::parse_lenient(b.bytes) {
                for e in bundle.entries() {
                    let _ = gfxkit_code_object::Header::parse(e.payload);
                }
            }
        }
    }
    for o in &found.object_bundles {
        for e in &o.entries {
            inside(e.location.offset, e.bytes.len());
            assert!(!e.id.is_empty() || e.location.section.is_some());
        }
    }
    for c in &found.code_objects {
        inside(c.location.offset, c.bytes.len());
        let _ = gfxkit_code_object::CodeObject::parse(c.bytes).map(|co| co.issues());
    }
    for i in &found.offload_images {
        inside(i.location.offset, i.bytes.len());
    }
    let all = found.units();
    let units = entries::load_views(&all.units);
    for u in &units {
        let _ = u.header_readable_by_hip();
        let _ = select::select_unit(&device, u);
    }
    // What `--rocm` judges a release's loader on: the code-object version of each entry, read
    // from its first bytes (a compressed bundle decoded as a bounded stream), one list a unit.
    let versions = gfxkit_host::release::code_object_versions(&all.units);
    assert_eq!(
        versions.len(),
        units.len(),
        "one version list a loadable unit"
    );
    for v in versions.iter().flatten().flatten() {
        assert!(*v >= 2, "code-object version {v}");
    }
    for p in &found.problems {
        // Inside the input (or the archive member it names).
        assert!(
            p.location.member.is_some() || p.location.offset < len.max(1),
            "{p}"
        );
        let _ = p.to_string();
    }
    let _ = found.device_bytes();
}
