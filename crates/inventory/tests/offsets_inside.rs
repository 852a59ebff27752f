//! Every offset gfxkit reports for an input lies inside it: host discovery's problems and
//! bundles, `list`'s units, errors and their `(at offset 0x…)`, and the errors of the rewrite
//! (`prune`'s survey and rewrite), on random bytes and on
//! mutations of the fuzz seeds and regression inputs (a problem was once reported at offset
//! 0xa0000 of a 115-byte input: `fuzz/regressions/host/f5-host-problem-offset-outside-input.bin`).
//! Offsets inside an archive member or a decompressed bundle are theirs and are not checked
//! here.

use proptest::prelude::*;
use std::path::Path;

fn inputs() -> Vec<Vec<u8>> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut out = Vec::new();
    for dir in [
        "seeds/host",
        "seeds/bundle",
        "seeds/kpack_split",
        "regressions/host",
    ] {
        let Ok(rd) = std::fs::read_dir(fuzz.join(dir)) else {
            continue;
        };
        let mut files: Vec<_> = rd.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).unwrap();
            // Large seeds cost time per case and add no kind of damage the small ones lack.
            if data.len() <= 1 << 16 {
                out.push(data);
            }
        }
    }
    assert!(
        out.len() >= 5,
        "only {} inputs under {}",
        out.len(),
        fuzz.display()
    );
    out
}

/// The file offsets of `(at offset 0x…)` in a message: not those said to be of something
/// else (`(at offset 0x40 of the code object)`).
fn offsets_in(text: &str) -> Vec<u64> {
    text.match_indices("(at offset 0x")
        .filter_map(|(i, m)| {
            let hex: String = text[i + m.len()..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            let after = &text[i + m.len() + hex.len()..];
            if after.starts_with(" of ") {
                return None;
            }
            u64::from_str_radix(&hex, 16).ok()
        })
        .collect()
}

/// The offset of the bundle a message is about (`bundle 1 in section .hip_fatbin at offset
/// 0x19000: ...`): the first `at offset 0x…` that is not in parentheses.
fn bundle_offset_in(text: &str) -> Option<u64> {
    let (i, m) = text
        .match_indices("at offset 0x")
        .find(|(i, _)| !text[..*i].ends_with('('))?;
    let hex: String = text[i + m.len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    u64::from_str_radix(&hex, 16).ok()
}

/// Checks every offset reported for `data`.
fn check(data: &[u8]) -> Result<(), TestCaseError> {
    let len = data.len() as u64;
    let inside = |what: &str, offset: u64| -> Result<(), TestCaseError> {
        prop_assert!(
            offset < len || (len == 0 && offset == 0),
            "{what} at offset {offset:#x} of a {len}-byte input"
        );
        Ok(())
    };
    let found = gfxkit_host::discover(data);
    for p in found
        .problems
        .iter()
        .filter(|p| p.location.member.is_none())
    {
        inside(&format!("problem {p}"), p.location.offset)?;
    }
    for l in (0..found.bundle_count()).filter_map(|i| found.bundle_location(i)) {
        if l.member.is_none() {
            inside("bundle", l.offset)?;
        }
    }
    let listing = gfxkit_inventory::list::list_bytes("input", data, false);
    for b in &listing.bundles {
        if b.member.is_none() && b.format != "kpack" {
            inside("listed unit", b.offset)?;
        }
    }
    let problems = listing
        .problems
        .iter()
        .filter(|p| p.location.member.is_none())
        .map(|p| p.to_string());
    // Damage inside a compressed bundle is reported at offsets of the decompressed bundle,
    // which the message names ("inside the compressed bundle: ... decompressed bundle").
    let in_file = |m: &String| !m.contains("decompressed bundle");
    for m in listing
        .error
        .iter()
        .cloned()
        .chain(problems)
        .filter(in_file)
    {
        for o in offsets_in(&m) {
            inside(&m, o)?;
        }
    }
    if let Some(o) = listing.failure.as_ref().and_then(|e| e.offset()) {
        inside("listing error", o)?;
    }
    // A message about a bundle at offset A names places in it at file offsets, A or later
    // (not offsets from the bundle's start), unless they are in its decompressed bytes.
    for m in listing
        .error
        .iter()
        .filter(|m| !m.contains("compressed bundle"))
    {
        if let Some(a) = bundle_offset_in(m) {
            for o in offsets_in(m) {
                prop_assert!(o >= a, "{m}: offset {o:#x} before the bundle at {a:#x}");
            }
        }
    }
    // `verify`'s findings: the bundle's offset inside the input, and a place named in a
    // stored bundle at or after it.
    if let Ok(v) = gfxkit_inventory::verify::verify_bytes("input", data) {
        for f in v.problems.iter().filter(|f| f.member.is_none()) {
            if let Some(a) = f.bundle_offset {
                inside(&format!("finding {}", f.message), a)?;
                if !f.message.contains("decompressed bundle") {
                    for o in offsets_in(&f.message) {
                        inside(&f.message, o)?;
                        prop_assert!(
                            o >= a,
                            "{}: offset {o:#x} before the bundle at {a:#x}",
                            f.message
                        );
                    }
                }
            }
        }
    }
    // The rewrite's readers (prune's survey, its bundle scan, decompression and read-back):
    // errors at file offsets, also when the region that holds the bundles starts inside the
    // file.
    let prune = gfxkit_shrink::Transform {
        selection: gfxkit_shrink::EntryFilter::Keep(vec![
            gfxkit_shrink::Pattern::parse("gfx90a").unwrap()
        ]),
        conversion: gfxkit_shrink::Conversion::Keep,
        limits: Default::default(),
    };
    let errors = [
        gfxkit_shrink::survey(data, &Default::default()).err(),
        gfxkit_shrink::rewrite(data, &prune).err(),
    ];
    for e in errors.iter().flatten().filter(|e| e.member.is_none()) {
        inside(&format!("rewrite error {e}"), e.offset)?;
    }
    Ok(())
}

#[test]
fn f5_problem_offset_inside_the_input() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/host/f5-host-problem-offset-outside-input.bin");
    let data = std::fs::read(&path).unwrap();
    let found = gfxkit_host::discover(&data);
    assert!(!found.problems.is_empty(), "the damage is reported");
    check(&data).unwrap();
}

/// A mutation: flip a byte, write a 64-bit value (a size or an offset), or cut the input.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Word(usize, u64),
    Cut(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(
        prop_oneof![
            (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Edit::Flip(i, b)),
            (any::<usize>(), prop_oneof![any::<u64>(), 0..0x10_0000u64])
                .prop_map(|(i, v)| Edit::Word(i, v)),
            any::<usize>().prop_map(Edit::Cut),
        ],
        1..4,
    )
}

fn apply(mut d: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        if d.is_empty() {
            break;
        }
        match *e {
            Edit::Flip(i, b) => {
                let i = i % d.len();
                d[i] ^= b;
            }
            Edit::Word(i, v) => {
                let i = (i % d.len()) & !7;
                let end = (i + 8).min(d.len());
                d[i..end].copy_from_slice(&v.to_le_bytes()[..end - i]);
            }
            Edit::Cut(i) => d.truncate(i % (d.len() + 1)),
        }
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn offsets_of_mutated_inputs_lie_inside(pick in any::<usize>(), edits in edits()) {
        let all = inputs();
        let data = apply(all[pick % all.len()].clone(), &edits);
        check(&data)?;
    }

    #[test]
    fn offsets_of_random_inputs_lie_inside(data in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&data)?;
    }
}
