//! The prune/recompress planner (`gfxkit prune`, `gfxkit recompress`) on arbitrary input.

use gfxkit_shrink::{rewrite, verify, Conversion, EntryFilter, Method, Pattern, Transform};

/// The transform the first input byte picks: a prune (keep or drop a target, or keep all) and
/// a conversion (as stored, uncompressed, CCOB v1-v3 with zstd or zlib).
pub fn transform(selector: u8) -> Transform {
    let pattern = |s: &str| vec![Pattern::parse(s).expect("a valid pattern")];
    let selection = match selector & 3 {
        0 => EntryFilter::All,
        1 => EntryFilter::Keep(pattern("gfx90a")),
        2 => EntryFilter::Drop(pattern("gfx906")),
        _ => EntryFilter::Keep(pattern("gfx1030")),
    };
    let conversion = match (selector >> 2) % 5 {
        0 => Conversion::Keep,
        1 => Conversion::Uncompressed,
        n => Conversion::Compressed {
            version: u16::from(n - 1),
            method: if selector & 0x80 != 0 {
                Method::Zlib
            } else {
                Method::Zstd
            },
            level: Some(1),
        },
    };
    Transform {
        selection,
        conversion,
        limits: Default::default(),
    }
}

/// Rewrites the input (after its first byte, which picks the [`transform`]) the way `gfxkit
/// prune` does: the planner either refuses with an error or produces a file that re-reads
/// and verifies against the input, as the command checks before it writes anything.
pub fn run(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let t = transform(selector);
    if let Ok(out) = rewrite(input, &t) {
        assert_eq!(out.report.size_before, input.len() as u64);
        assert_eq!(out.report.size_after, out.output.len());
        if let Err(e) = verify(input, &out, &t.limits) {
            panic!("a rewrite that does not verify: {e}");
        }
    }
}
