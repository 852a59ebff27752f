//! TheRock's own test archives (`tests/data/kpack/` in the repository, copied from
//! ROCm/rocm-kpack `runtime/tests/test_assets/`) read to exactly the keys, sizes and SHA-256 its
//! README lists.

use gfxkit_kpack::{Archive, Scheme};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// A file of `tests/data/kpack` in the repository.
fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/kpack")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "kpack fixture {} is missing ({e}): TheRock's test archives are kept in the \
             repository's tests/data/kpack",
            p.display()
        )
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// (key, arch, size, sha256 prefix, sha256 suffix) as the fixture README lists them.
type Row = (
    &'static str,
    &'static str,
    usize,
    &'static str,
    &'static str,
);

fn check(name: &str, group: &str, family: &str, arches: &[&str], none: bool, rows: &[Row]) {
    let bytes = fixture(name);
    let a = Archive::parse(&bytes).unwrap();
    assert_eq!(a.group_name.as_deref(), Some(group));
    assert_eq!(a.arch_family.as_deref(), Some(family));
    assert_eq!(a.arches, arches);
    assert_eq!(matches!(a.scheme, Scheme::None), none);
    assert_eq!(a.kernels.len(), rows.len(), "{name}: kernel count");
    for &(key, arch, size, pre, suf) in rows {
        let k = a
            .kernel(key, arch)
            .unwrap_or_else(|| panic!("{name}: {key} {arch} missing"));
        let p = a.payload(k).unwrap();
        assert_eq!(p.len(), size, "{name}: {key} {arch}");
        let h = hex(&Sha256::digest(&p));
        assert!(
            h.starts_with(pre) && h.ends_with(suf),
            "{name}: {key} {arch}: sha256 {h}"
        );
        assert_eq!(a.size_of(k), Some(size as u64));
    }
}

#[test]
fn therock_noop_archive() {
    check(
        "test_noop.kpack",
        "test",
        "gfx900X",
        &["gfx900", "gfx906"],
        true,
        &[
            ("lib/libtest.so#0", "gfx900", 119, "df6b1ab7", "44963e6"),
            ("lib/libtest.so#0", "gfx906", 219, "12b6177c", "fa521a3"),
            ("bin/testapp#0", "gfx900", 168, "77033f54", "08c3c54"),
        ],
    );
}

#[test]
fn therock_zstd_archive() {
    check(
        "test_zstd.kpack",
        "test",
        "gfx110X",
        &["gfx1100", "gfx1101"],
        false,
        &[
            ("lib/libhip.so#0", "gfx1100", 1019, "11590faf", "ee8f10141"),
            ("lib/libhip.so#0", "gfx1101", 619, "9f8e7294", "373aa97"),
            ("bin/hiptest#0", "gfx1100", 1018, "cb26f71d", "e6e8db7"),
        ],
    );
}

#[test]
fn therock_archives_survive_every_truncation_and_bit_flip() {
    for name in ["test_noop.kpack", "test_zstd.kpack"] {
        let good = fixture(name);
        for cut in 0..good.len() {
            let a = Archive::parse(&good[..cut]);
            if let Ok(a) = a {
                for k in &a.kernels {
                    let _ = a.payload(k);
                }
            }
        }
        for i in 0..good.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = good.clone();
                b[i] ^= bit;
                if let Ok(a) = Archive::parse(&b) {
                    for k in &a.kernels {
                        let _ = a.payload(k);
                    }
                }
            }
        }
    }
}

/// TheRock's frames carry no content checksum, so what can be checked is checked after
/// decoding: these test kernels are placeholder bytes, not code objects, and
/// `Archive::code_object` says so, naming the kernel, where `payload` reads them as stored.
#[test]
fn therock_frames_have_no_checksum_and_their_placeholders_are_not_code_objects() {
    for name in ["test_zstd.kpack", "test_noop.kpack"] {
        let bytes = fixture(name);
        let a = Archive::parse(&bytes).unwrap();
        for k in &a.kernels {
            assert!(!a.has_checksum(k), "{name}: {} {}", k.key, k.arch);
            assert!(a.payload(k).is_ok());
            let e = a.code_object(k).unwrap_err();
            assert_eq!(e.offset, k.stored_offset);
            assert!(
                matches!(&e.kind, gfxkit_kpack::ErrorKind::NotCodeObject { key, arch, .. }
                    if *key == k.key && *arch == k.arch),
                "{name}: {e}"
            );
        }
    }
}
