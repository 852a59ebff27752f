//! Fuzz smoke tests: every fixture truncated at every byte and with every single bit flipped
//! is fed to every reader (the bodies of the fuzz targets); none may panic. Plus property tests
//! (write(read(b)) == b, compress/decompress) and the typed errors with their offsets.

use gfxkit_bundle::{
    archive, ccob, fuzzing, object, read, text, write_bundle, AnyBundle, Bundle, ErrorKind, Method,
};
use gfxkit_testkit::{llvm_tool, run_ok};
use proptest::prelude::*;
use std::process::Command;

const H: &str = "host-x86_64-unknown-linux--";
const A: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
const B: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";

fn small_bundle(align: u64) -> Vec<u8> {
    write_bundle(
        &[(H, b""), (A, b"\x7fELF-gfx906-code"), (B, b"\x7fELF-90a")],
        align,
    )
    .unwrap()
}

/// `b` compressed with `method` and the other options at their defaults.
fn compress_with(b: &[u8], method: Method) -> Vec<u8> {
    ccob::compress(
        b,
        &ccob::CompressOptions {
            method,
            ..Default::default()
        },
    )
    .unwrap()
}

/// A CCOB v1 bundle (the clang 18 layout; gfxkit writes only v2 and v3).
fn v1(method: Method, data: &[u8]) -> Vec<u8> {
    let z = ccob::compress(
        data,
        &ccob::CompressOptions {
            method,
            ..Default::default()
        },
    )
    .unwrap();
    let h = ccob::Header::parse(&z).unwrap();
    let mut out = b"CCOB".to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&method.as_u16().to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&h.hash.to_le_bytes());
    out.extend_from_slice(h.payload(&z));
    out
}

fn host_object() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("h.c");
    std::fs::write(&src, "int g; int f(void) { return g; }\n").unwrap();
    let obj = dir.path().join("h.o");
    run_ok(
        Command::new(llvm_tool("clang"))
            .args(["-c", "-O1"])
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    std::fs::read(obj).unwrap()
}

fn fixtures() -> Vec<(&'static str, Vec<u8>)> {
    let b1 = small_bundle(1);
    let b16 = small_bundle(16);
    let v2 = ccob::compress(&b1, &Default::default()).unwrap();
    let v3 = ccob::compress(
        &b1,
        &ccob::CompressOptions {
            version: 3,
            ..Default::default()
        },
    )
    .unwrap();
    let zl = ccob::compress(
        &b1,
        &ccob::CompressOptions {
            method: Method::Zlib,
            ..Default::default()
        },
    )
    .unwrap();
    let mut cat = b1.clone();
    cat.resize(cat.len().next_multiple_of(64) + 64, 0);
    cat.extend_from_slice(&v3);
    cat.resize(cat.len().next_multiple_of(16), 0);
    cat.extend_from_slice(&v1(Method::Zstd, &b16));
    cat.extend_from_slice(&[0; 5]);
    cat.extend_from_slice(&zl);
    let txt = text::write_text(&[(H, b"host\n"), (A, b"dev")], "//");
    let host = host_object();
    let obj = object::write_object(&host, &[(H, &host), (A, b"\x7fELF-gfx906")], 0).unwrap();
    let ar = archive::write_gnu_archive(&[("a-long-member-name.o", &obj), ("b.o", &b1)]).unwrap();
    vec![
        ("bundle align 1", b1),
        ("bundle align 16", b16.clone()),
        ("ccob v2 zstd", v2),
        ("ccob v3 zstd", v3),
        ("ccob v2 zlib", zl),
        ("ccob v1 zstd", v1(Method::Zstd, &b16)),
        ("ccob v1 zlib", v1(Method::Zlib, &b16)),
        ("back to back", cat),
        ("text", txt),
        ("object", obj),
        ("archive", ar),
    ]
}

fn all_readers(data: &[u8]) {
    fuzzing::bundle(data);
    fuzzing::ccob(data);
    fuzzing::concatenated(data);
    fuzzing::other_formats(data);
}

#[test]
fn fixtures_read_back() {
    for (name, data) in fixtures() {
        all_readers(&data);
        if name.starts_with("ccob") || name.starts_with("bundle") {
            let any = AnyBundle::parse(&data, &Default::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(any.extent, data.len() as u64, "{name}");
            assert_eq!(any.bundle().unwrap().len(), 3, "{name}");
        }
    }
    let (_, cat) = fixtures()
        .into_iter()
        .find(|(n, _)| *n == "back to back")
        .unwrap();
    let all: Vec<_> = gfxkit_bundle::iter_concatenated(&cat, 1, Default::default())
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(
        all.iter().map(|b| b.offset % 16).collect::<Vec<_>>(),
        [0, 0, 0, 5]
    );
    let spans = gfxkit_bundle::scan_concatenated(&cat, &Default::default()).unwrap();
    assert_eq!(
        spans.iter().map(|s| (s.offset, s.len)).collect::<Vec<_>>(),
        all.iter().map(|b| (b.offset, b.extent)).collect::<Vec<_>>()
    );
}

#[test]
fn lenient_scan_reports_damage_and_finds_the_bundles_after_it() {
    let (_, cat) = fixtures()
        .into_iter()
        .find(|(n, _)| *n == "back to back")
        .unwrap();
    let clean = gfxkit_bundle::scan_concatenated(&cat, &Default::default()).unwrap();
    // Damage the second bundle's CCOB version: strict scanning stops, lenient goes on.
    let mut bad = cat.clone();
    let second = clean[1].offset as usize;
    bad[second + 4] = 9;
    let e = gfxkit_bundle::scan_concatenated(&bad, &Default::default()).unwrap_err();
    assert_eq!(e.offset, Some(second as u64 + 4));
    let (spans, problems) = gfxkit_bundle::scan_concatenated_lenient(&bad, &Default::default());
    // The first problem is the damage; resynchronising inside the damaged compressed payload
    // may trip over more (its bytes can hold a bundle magic), but every intact bundle is found.
    assert_eq!(problems[0].kind, ErrorKind::UnsupportedCcobVersion(9));
    assert!(
        problems.iter().all(|p| p.offset.unwrap() < clean[2].offset),
        "{problems:?}"
    );
    assert_eq!(
        spans.iter().map(|s| s.offset).collect::<Vec<_>>(),
        [clean[0].offset, clean[2].offset, clean[3].offset]
    );
    // Garbage between bundles.
    let mut junk = cat.clone();
    junk[clean[0].len as usize + 3] = 0x55;
    let (spans, problems) = gfxkit_bundle::scan_concatenated_lenient(&junk, &Default::default());
    assert_eq!(spans.len(), 4);
    assert!(matches!(
        problems[0].kind,
        ErrorKind::Garbage { byte: 0x55 }
    ));
}

#[test]
fn every_truncation_is_an_error_or_a_valid_parse() {
    for (_, data) in fixtures() {
        for n in 0..data.len() {
            all_readers(&data[..n]);
        }
    }
}

#[test]
fn every_bit_flip_is_an_error_or_a_valid_parse() {
    for (name, data) in fixtures() {
        // The object and archive fixtures are large; flip every bit of their first 512 bytes
        // (headers) and every 7th bit beyond.
        let mut buf = data.clone();
        for bit in 0..data.len() * 8 {
            if (name == "object" || name == "archive") && bit >= 4096 && bit % 7 != 0 {
                continue;
            }
            buf[bit / 8] ^= 1 << (bit % 8);
            all_readers(&buf);
            buf[bit / 8] ^= 1 << (bit % 8);
        }
    }
}

#[test]
fn corrupted_ccob_is_rejected_by_hash_unless_downgraded() {
    let b = small_bundle(1);
    let mut z = ccob::compress(&b, &Default::default()).unwrap();
    z[16] ^= 1; // stored hash
    let e = ccob::decompress_ccob(&z, &Default::default()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::HashMismatch { .. }), "{e}");
    assert_eq!(e.offset, Some(16));
    let warn = ccob::DecompressOptions {
        hash: ccob::HashCheck::Warn,
        ..Default::default()
    };
    let d = ccob::decompress_ccob(&z, &warn).unwrap();
    assert!(!d.hash_ok());
    assert_eq!(d.data, b);
}

#[test]
fn declared_sizes_are_checked_exactly_and_bounded() {
    let b = small_bundle(1);
    for method in [Method::Zstd, Method::Zlib] {
        let z = compress_with(&b, method);
        for (declared, more) in [(b.len() as u32 - 1, true), (b.len() as u32 + 1, false)] {
            let mut bad = z.clone();
            bad[12..16].copy_from_slice(&declared.to_le_bytes());
            let e = ccob::decompress_ccob(&bad, &Default::default()).unwrap_err();
            match method {
                // The zstd frame header states its own size: refused before decoding.
                Method::Zstd => assert_eq!(
                    e.kind,
                    ErrorKind::FrameSizeMismatch {
                        declared: declared as u64,
                        frame: b.len() as u64
                    },
                    "{method}: {e}"
                ),
                Method::Zlib => assert!(
                    matches!(e.kind, ErrorKind::SizeMismatch { more: m, .. } if m == more),
                    "{method}: {e}"
                ),
            }
        }
        // A huge declared size is refused before any allocation.
        let mut huge = ccob::compress(
            &b,
            &ccob::CompressOptions {
                method,
                version: 3,
                ..Default::default()
            },
        )
        .unwrap();
        huge[16..24].copy_from_slice(&(1u64 << 50).to_le_bytes());
        let e = ccob::decompress_ccob(&huge, &Default::default()).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::TooLarge { .. }), "{e}");
        // A total size beyond the data.
        let mut long = z.clone();
        long[8..12].copy_from_slice(&(z.len() as u32 + 1).to_le_bytes());
        let e = ccob::Header::parse(&long).unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::BadTotalSize { .. }) && e.offset == Some(8),
            "{e}"
        );
    }
    let mut v9 = ccob::compress(&b, &Default::default()).unwrap();
    v9[4] = 9;
    assert_eq!(
        ccob::Header::parse(&v9).unwrap_err().kind,
        ErrorKind::UnsupportedCcobVersion(9)
    );
    v9[4] = 2;
    v9[6] = 7;
    assert_eq!(
        ccob::Header::parse(&v9).unwrap_err().kind,
        ErrorKind::UnknownMethod(7)
    );
}

fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn uncompressed_errors_name_entry_and_offset() {
    let b = small_bundle(1);
    // Entry records: host at 32, then A, then B.
    let rec_a = 32 + 24 + H.len();
    let rec_b = rec_a + 24 + A.len();
    let mut bad = b.clone();
    put(&mut bad, rec_b + 8, 10_000);
    let e = Bundle::parse(&bad).unwrap_err();
    assert_eq!((e.entry, e.offset), (Some(2), Some(rec_b as u64)));
    assert!(matches!(e.kind, ErrorKind::PayloadOutOfRange { .. }));
    assert!(e.to_string().starts_with("entry 2: payload"), "{e}");
    let (lenient, problems) = Bundle::parse_lenient(&bad).unwrap();
    assert_eq!(lenient.len(), 2);
    assert_eq!(problems.len(), 1);
    // The same bundle lying at 0x4000 of a file: the offsets are the file's.
    let located = gfxkit_bytes::Cursor::at(&bad, 0x4000);
    let e = Bundle::parse_at(located).unwrap_err();
    assert_eq!(e.offset, Some(0x4000 + rec_b as u64));
    let (_, problems) = Bundle::parse_lenient_at(located).unwrap();
    assert_eq!(problems[0].offset, Some(0x4000 + rec_b as u64));
    let e = gfxkit_bundle::read::header_extent_at(gfxkit_bytes::Cursor::at(&bad[..rec_b], 0x4000))
        .unwrap_err();
    assert_eq!(
        e.offset,
        Some(0x4000 + rec_b as u64 - 1),
        "cut: the last byte"
    );

    let mut overlap = b.clone();
    let a_off = Bundle::parse(&b).unwrap().entries()[1].offset;
    put(&mut overlap, rec_b, a_off + 2);
    put(&mut overlap, rec_b + 8, 4);
    let e = Bundle::parse(&overlap).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Overlap { other: 1 });

    let mut in_header = b.clone();
    put(&mut in_header, rec_a, 8);
    assert!(matches!(
        Bundle::parse(&in_header).unwrap_err().kind,
        ErrorKind::PayloadInHeader { .. }
    ));

    let same = write_bundle(&[(A, b"x")], 1).unwrap();
    let mut twice = same[..32].to_vec();
    twice[24] = 2;
    let rec = &same[32..32 + 24 + A.len()];
    twice.extend_from_slice(rec);
    twice.extend_from_slice(rec);
    twice.push(b'x');
    let off = twice.len() as u64 - 1;
    put(&mut twice, 32, off);
    put(&mut twice, 32 + rec.len(), off);
    let e = Bundle::parse(&twice).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::DuplicateId {
            id: A.into(),
            first: 0
        }
    );

    let mut count = b.clone();
    put(&mut count, 24, 1 << 40);
    assert!(matches!(
        Bundle::parse(&count).unwrap_err().kind,
        ErrorKind::TooManyEntries { .. }
    ));
    let e = Bundle::parse(&b[..rec_b + 10]).unwrap_err();
    assert_eq!((e.entry, e.offset), (Some(2), Some(rec_b as u64)));
    assert!(matches!(
        Bundle::parse(b"__CLANG_OFFLOAD_BUNDLX__").unwrap_err().kind,
        ErrorKind::BadMagic { .. }
    ));
    // Header-only listing needs no payloads.
    let (hdr, len) = read::parse_header(&b[..rec_b + 24 + B.len()]).unwrap();
    assert_eq!(hdr.len(), 3);
    assert_eq!(len, Bundle::parse(&b).unwrap().header_len());
}

#[test]
fn header_larger_than_what_hip_reads_is_flagged() {
    let ids: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "hipv4-amdgcn-amd-amdhsa--gfx906:xnack+{}",
                "x".repeat(i + 60)
            )
        })
        .collect();
    let entries: Vec<(&str, &[u8])> = ids.iter().map(|s| (s.as_str(), &b"p"[..])).collect();
    let big = write_bundle(&entries, 1).unwrap();
    assert!(Bundle::parse(&big).unwrap().header_exceeds_hip_limit());
    assert!(!Bundle::parse(&small_bundle(4096))
        .unwrap()
        .header_exceeds_hip_limit());
}

#[test]
fn prefix_decompression_lists_without_decompressing_everything() {
    let payload = vec![7u8; 1 << 20];
    let b = write_bundle(&[(H, b""), (A, &payload), (B, &payload)], 4096).unwrap();
    for method in [Method::Zstd, Method::Zlib] {
        let z = compress_with(&b, method);
        let (h, prefix) = ccob::decompress_prefix(&z, 4096, &Default::default()).unwrap();
        assert_eq!(h.uncompressed_size, b.len() as u64);
        assert_eq!(prefix, &b[..4096]);
        let (entries, _) = read::parse_header(&prefix).unwrap();
        assert_eq!(
            entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
            [H, A, B]
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn write_read_round_trip(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..6),
        align in prop_oneof![Just(1u64), Just(4), Just(8), Just(3), Just(4096)],
    ) {
        let ids: Vec<String> = (0..payloads.len()).map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfx90{i}")).collect();
        let entries: Vec<(&str, &[u8])> = ids.iter().map(String::as_str).zip(payloads.iter().map(Vec::as_slice)).collect();
        let bytes = write_bundle(&entries, align).unwrap();
        let b = Bundle::parse(&bytes).unwrap();
        prop_assert_eq!(b.extent(), bytes.len() as u64);
        let back: Vec<(&str, &[u8])> = b.entries().iter().map(|e| (e.id, e.payload)).collect();
        prop_assert_eq!(&back, &entries);
        prop_assert_eq!(write_bundle(&back, align).unwrap(), bytes.clone());
        let mut streamed = Vec::new();
        gfxkit_bundle::write_bundle_to(&mut streamed, &back, align).unwrap();
        prop_assert_eq!(streamed, bytes);
    }

    #[test]
    fn compress_round_trip(
        data in proptest::collection::vec(any::<u8>(), 0..4000),
        zlib in any::<bool>(),
        v3 in any::<bool>(),
    ) {
        let opts = ccob::CompressOptions {
            method: if zlib { Method::Zlib } else { Method::Zstd },
            version: if v3 { 3 } else { 2 },
            ..Default::default()
        };
        let z = ccob::compress(&data, &opts).unwrap();
        let d = ccob::decompress_ccob(&z, &Default::default()).unwrap();
        prop_assert_eq!(d.extent, z.len() as u64);
        prop_assert_eq!(d.data, data);
    }
}

/// An entry's ID length flipped so that it takes in the zero padding after the ID: the ID
/// with NUL bytes used to be accepted (and listed, and no longer matched by any device).
#[test]
fn an_id_length_that_takes_in_padding_is_an_error() {
    let b = gfxkit_bundle::write_bundle(
        &[
            ("host-x86_64-unknown-linux--", &b""[..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx906", &b"\x7fELF"[..]),
        ],
        4096,
    )
    .unwrap();
    let id = b"hipv4-amdgcn-amd-amdhsa--gfx906";
    let at = b.windows(id.len()).position(|w| w == id).unwrap();
    // The u64 ID length just before the ID: 31 -> 33 (two bytes of padding).
    let mut d = b.clone();
    assert_eq!(d[at - 8] as usize, id.len());
    d[at - 8] = (id.len() + 2) as u8;
    let e = gfxkit_bundle::Bundle::parse(&d).unwrap_err();
    assert!(
        e.to_string().contains("control byte 0x00 at position 31"),
        "{e}"
    );
    let e = gfxkit_bundle::read::parse_header(&d).unwrap_err();
    assert!(e.to_string().contains("control byte 0x00"), "{e}");
}

#[test]
fn compressed_header_errors_name_file_offsets() {
    let b = small_bundle(1);
    let mut z = gfxkit_bundle::ccob::compress(&b, &Default::default()).unwrap();
    z[6] = 7; // an unknown method
    let located = gfxkit_bytes::Cursor::at(&z, 0x200);
    let e = gfxkit_bundle::ccob::Header::parse_at(located).unwrap_err();
    assert_eq!(
        (e.kind, e.offset),
        (ErrorKind::UnknownMethod(7), Some(0x206))
    );
    let e = gfxkit_bundle::ccob::decompress_ccob_at(located, &Default::default()).unwrap_err();
    assert_eq!(e.offset, Some(0x206));
    let e = gfxkit_bundle::split::stored_extent_at(
        gfxkit_bytes::Cursor::at(&z[..5], 0x200),
        &Default::default(),
    )
    .unwrap_err();
    assert_eq!(e.offset, Some(0x204), "cut in the version: the last byte");
}

/// The header read from a prefix and checked against the bundle's length says what the whole
/// bundle's parse says: the same entries, or the same error, for every single-bit flip of the
/// header (what `size` relies on when it reads a compressed bundle's header alone).
#[test]
fn checked_header_agrees_with_the_whole_parse() {
    let b = write_bundle(
        &[
            (H, b""),
            (A, b"\x7fELF-gfx906-code"),
            (B, b"\x7fELF-90a"),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx942",
                b"\x7fELF-942-code-object",
            ),
        ],
        1,
    )
    .unwrap();
    let header_len = Bundle::parse(&b).unwrap().header_len() as usize;
    let mut compared = (0, 0);
    for bit in 0..header_len * 8 {
        let mut d = b.clone();
        d[bit / 8] ^= 1 << (bit % 8);
        let whole = Bundle::parse(&d);
        // The header's own bytes, and all of them, as a growing prefix would give them.
        for cut in [header_len, d.len()] {
            let got = read::parse_header_checked(&d[..cut], d.len() as u64);
            match (&whole, got) {
                (Ok(w), Ok((entries, len))) => {
                    assert_eq!(len, w.header_len(), "bit {bit}");
                    let want: Vec<(&str, u64, u64)> = w
                        .entries()
                        .iter()
                        .map(|e| (e.id, e.offset, e.size))
                        .collect();
                    let got: Vec<(&str, u64, u64)> = entries
                        .iter()
                        .map(|e| (e.id.as_str(), e.offset, e.size))
                        .collect();
                    assert_eq!(got, want, "bit {bit}");
                    compared.0 += 1;
                }
                (Err(w), Err(g)) => {
                    // A record cut short by the prefix is read again from a longer one.
                    if cut < d.len() && matches!(g.kind, ErrorKind::Truncated { .. }) {
                        continue;
                    }
                    assert_eq!((&g.kind, g.entry), (&w.kind, w.entry), "bit {bit}");
                    compared.1 += 1;
                }
                (w, g) => panic!("bit {bit}, prefix {cut}: whole {w:?}, header {g:?}"),
            }
        }
    }
    assert!(compared.0 > 0 && compared.1 > 0, "{compared:?}");
}
