//! Target IDs (`gfx90a:sramecc+:xnack-`) and bundle entry IDs.

use gfxkit_target_id::TargetId;

/// Parses the input (and, split at its first newline, two IDs) as target IDs and entry IDs:
/// what parses prints in a form that parses back to an equal value; equality agrees with the
/// canonical form.
pub fn run(data: &[u8]) {
    gfxkit_bundle::fuzzing::entry_ids(data);
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = |s: &str| {
        let t = TargetId::parse(s).ok()?;
        let again = TargetId::parse(&t.to_string()).expect("a printed target ID parses");
        assert_eq!(again, t, "{s:?}");
        assert_eq!(again.to_string(), t.to_string());
        assert!(t.is_compatible(&t) && t.overlaps(&t));
        Some(t)
    };
    let (a, b) = s.split_once('\n').unwrap_or((s, ""));
    if let (Some(x), Some(y)) = (parsed(a), parsed(b)) {
        assert_eq!(x == y, x.to_string() == y.to_string());
        let _ = x.check_compatible(&y);
        if x == y {
            assert!(x.overlaps(&y));
        }
        assert_eq!(x.overlaps(&y), y.overlaps(&x), "{a:?} vs {b:?}");
    }
}
