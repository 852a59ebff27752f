//! Host discovery: what `gfxkit list`, `verify`, `select` and `extract` find in a file.

use gfxkit_host::{discover, entries, select, BundleFormat, Form};
use gfxkit_target_id::TargetId;

/// Discovers device code in the input and reads what was found the way `gfxkit list` does:
/// every location lies inside the input (each bundle found, each unit and its entries), each
/// bundle's entries are read from its header, code objects are parsed, and the runtime's
/// choice is made for a device.
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
    for i in 0..found.bundle_count() {
        let l = found.bundle_location(i).expect("a bundle below the count");
        inside(l.offset, l.size as usize);
    }
    let all = found.units();
    for u in &all.units {
        inside(u.offset, u.bytes.len());
        for e in &u.loose {
            inside(u.offset.saturating_add(e.offset), e.payload.len());
        }
        match u.form {
            Form::Bundle => {
                let format = u.format().expect("a bundle's storage");
                if let Ok(ids) = entries::entry_ids(format, u.bytes, &u.limits) {
                    let _ = select::select(&device, &ids);
                    let _ = select::nearest_targets(&device, &ids);
                }
                if format == BundleFormat::Uncompressed {
                    if let Ok((bundle, _)) = gfxkit_bundle::Bundle::parse_lenient(u.bytes) {
                        for e in bundle.entries() {
                            let _ = gfxkit_code_object::Header::parse(e.payload);
                        }
                    }
                }
            }
            Form::CodeObject => {
                let _ = gfxkit_code_object::CodeObject::parse(u.bytes).map(|co| co.issues());
            }
            Form::ObjectBundle | Form::OffloadImage => {}
        }
    }
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
