//! Property tests: canonical form and round-trip laws over the whole processor table.

use gfxkit_spec::{Feature, PROCESSORS};
use gfxkit_target_id::{check_conflicts, FeatureSetting, TargetId};
use proptest::prelude::*;

/// Every processor with every combination of its target-ID feature settings.
fn all_ids() -> Vec<TargetId> {
    PROCESSORS.iter().flat_map(TargetId::variants).collect()
}

fn written(id: &TargetId, name: &str, order: &[usize]) -> String {
    let feats: Vec<(Feature, FeatureSetting)> = id.features().collect();
    let mut s = name.to_owned();
    for i in order {
        if let Some((f, v)) = feats.get(*i) {
            s.push(':');
            s.push_str(f.name());
            s.push(v.sign().unwrap());
        }
    }
    s
}

#[test]
fn display_parse_round_trip_for_every_processor_and_setting() {
    let ids = all_ids();
    assert!(ids.len() > PROCESSORS.len());
    for id in &ids {
        let text = id.to_string();
        let back = TargetId::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&back, id, "{text}");
        assert_eq!(back.to_string(), text);
        // Every alternative name parses to the same canonical ID.
        for alias in id.processor().aliases {
            let aliased = text.replacen(id.processor().name, alias, 1);
            assert_eq!(TargetId::parse(&aliased).unwrap(), *id, "{aliased}");
        }
    }
}

#[test]
fn compatibility_laws() {
    let ids = all_ids();
    for co in &ids {
        // A fully specified ID is compatible with itself; the featureless ID of a processor fits
        // every device of that processor.
        let full = co.features().count() == co.processor().target_id_features.len();
        if full {
            assert!(co.is_compatible(co), "{co}");
        }
        assert!(co.without_features().is_compatible(co), "{co}");
        for dev in &ids {
            if co.is_compatible(dev) {
                assert_eq!(co.processor().name, dev.processor().name);
                for (f, s) in co.features() {
                    assert_eq!(dev.setting(f), s, "{co} on {dev}");
                }
            }
        }
    }
}

#[test]
fn overlap_is_symmetric_and_implied_by_compatibility() {
    let ids = all_ids();
    for a in &ids {
        for b in ids
            .iter()
            .filter(|b| b.processor().name == a.processor().name)
        {
            assert_eq!(a.overlaps(b), b.overlaps(a), "{a} {b}");
            if a.is_compatible(b) {
                assert!(a.overlaps(b), "{a} runs on {b} but does not overlap it");
            }
        }
    }
}

proptest! {
    #[test]
    fn feature_order_does_not_matter(i in 0usize..10_000, rev in any::<bool>()) {
        let ids = all_ids();
        let id = ids[i % ids.len()];
        let n = id.features().count();
        let order: Vec<usize> = if rev { (0..n).rev().collect() } else { (0..n).collect() };
        let text = written(&id, id.processor().name, &order);
        prop_assert_eq!(TargetId::parse(&text).unwrap(), id);
    }

    #[test]
    fn arbitrary_strings_never_panic(s in "[a-z0-9:+\\-]{0,24}") {
        if let Ok(id) = TargetId::parse(&s) {
            prop_assert_eq!(TargetId::parse(&id.to_string()).unwrap(), id);
        }
    }

    #[test]
    fn conflict_rule_is_about_featured_versus_plain(i in 0usize..10_000, j in 0usize..10_000) {
        let ids = all_ids();
        let (a, b) = (ids[i % ids.len()], ids[j % ids.len()]);
        let conflict = check_conflicts([&a, &b]).is_err();
        let expected = a.processor().name == b.processor().name && a.has_features() != b.has_features();
        prop_assert_eq!(conflict, expected);
    }
}
