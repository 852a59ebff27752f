//! Compressed-bundle inputs found by fuzzing (kept under `fuzz/regressions/ccob/`), each with
//! the answer gfxkit must give for it.

use gfxkit_bundle::ccob::{self, DecompressOptions, HashCheck, Header};
use gfxkit_bundle::ErrorKind;
use gfxkit_bundle::Method;

fn regression(name: &str) -> Vec<u8> {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/regressions/ccob/").to_owned() + name;
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Decompresses `data` in memory and streamed, which must refuse it alike: the error kind, and
/// the bytes the streamed path handed on before refusing.
fn refused_alike(data: &[u8], opts: &DecompressOptions) -> (ErrorKind, usize) {
    let whole = ccob::decompress_ccob(data, opts).unwrap_err();
    let mut got = 0usize;
    let streamed = ccob::decompress_ccob_to(data, opts, &mut |c| {
        got += c.len();
        Ok(())
    })
    .unwrap_err();
    assert_eq!(whole.kind, streamed.kind);
    (whole.kind, got)
}

#[test]
fn f3_ccob_v1_zlib_claims_huge_size() {
    // 31 bytes: a v1 zlib header declaring 0xf0000000 bytes over a stream of a few. Finding
    // where it ends decodes what the stream holds into a small scratch buffer (it used to
    // zero a 128 MiB buffer first) and refuses the size.
    let data = regression("f3-ccob-v1-zlib-claims-huge-size.ccob");
    assert_eq!(data.len(), 31);
    let h = Header::parse(&data).unwrap();
    assert_eq!((h.version, h.uncompressed_size), (1, 0xf000_0000));
    let e = h
        .extent(&data, gfxkit_bundle::limits::MAX_UNCOMPRESSED_SIZE)
        .unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::SizeMismatch {
                declared: 0xf000_0000,
                more: false,
                produced,
            } if produced < 64
        ),
        "{e}"
    );
    // Decompressing refuses it the same way, in memory and streamed.
    let opts = DecompressOptions {
        hash: HashCheck::Warn,
        ..DecompressOptions::default()
    };
    let (kind, got) = refused_alike(&data, &opts);
    assert_eq!(kind, e.kind);
    assert!(got < 64);
}

#[test]
fn a_64_byte_ccob_claiming_4_gib_is_refused_from_its_payload() {
    // v3 (64-bit sizes) and v2 (the 32-bit maximum), zstd and zlib, each 64 bytes or less.
    for method in [Method::Zstd, Method::Zlib] {
        for version in [2u16, 3] {
            let small = ccob::compress(
                b"sixteen bytes!!!",
                &ccob::CompressOptions {
                    method,
                    version,
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(small.len() <= 64, "{}", small.len());
            let mut lie = small.clone();
            let claim: u64 = if version == 3 {
                4 << 30
            } else {
                u32::MAX as u64
            };
            if version == 3 {
                lie[16..24].copy_from_slice(&claim.to_le_bytes());
            } else {
                lie[12..16].copy_from_slice(&(claim as u32).to_le_bytes());
            }
            let e = ccob::decompress_ccob(&lie, &DecompressOptions::default()).unwrap_err();
            // zstd's frame header states the 16 bytes (refused before decoding); zlib's
            // stream is decoded to its end.
            let want = match method {
                Method::Zstd => ErrorKind::FrameSizeMismatch {
                    declared: claim,
                    frame: 16,
                },
                Method::Zlib => ErrorKind::SizeMismatch {
                    declared: claim,
                    produced: 16,
                    more: false,
                },
            };
            assert_eq!(e.kind, want, "{method} v{version}");
            // Above the global limit, refused before decoding (the limit is an option).
            let strict = DecompressOptions {
                max_uncompressed: 1 << 20,
                ..DecompressOptions::default()
            };
            let e = ccob::decompress_ccob(&lie, &strict).unwrap_err();
            assert!(matches!(e.kind, ErrorKind::TooLarge { .. }), "{e}");
        }
    }
}

#[test]
fn zero_size_frame_claims_one_byte() {
    // 29 bytes: a v1 header declaring 0 bytes over a zstd frame whose header declares 1 byte
    // and which holds one empty raw block. Decoding in one call refused it; decoding in steps
    // (`decompress`, streamed) ended with the frame's blocks and accepted it, leaving only the
    // hash to refuse it. Now every path refuses it from the frame header, before decoding.
    let data = regression("zero-size-frame-claims-one-byte.bin");
    assert_eq!(data.len(), 29);
    let h = Header::parse(&data).unwrap();
    assert_eq!((h.version, h.uncompressed_size), (1, 0));
    let want = ErrorKind::FrameSizeMismatch {
        declared: 0,
        frame: 1,
    };
    // Where it ends comes from the frame's block headers, without decoding.
    assert_eq!(
        h.extent(&data, gfxkit_bundle::limits::MAX_UNCOMPRESSED_SIZE)
            .unwrap(),
        29
    );
    for hash in [HashCheck::Warn, HashCheck::Error] {
        let opts = DecompressOptions {
            hash,
            ..DecompressOptions::default()
        };
        assert_eq!(refused_alike(&data, &opts), (want.clone(), 0));
    }
    assert!(ccob::decompress_prefix(&data, 64, &DecompressOptions::default()).is_err());
}

#[test]
fn zero_size_frame_asks_for_2_gib_window() {
    // 30 bytes: a v1 header declaring 0 bytes over a zstd frame without a content size whose
    // window descriptor asks for a 2 GiB window, then one empty raw block. Decoded in one call
    // (the output is the window) it gave 0 bytes; decoded in steps, zstd refused the window.
    // Now every path refuses it from the frame header: no frame of 0 bytes needs that window.
    let data = regression("zero-size-frame-asks-for-2-gib-window.bin");
    assert_eq!(data.len(), 30);
    let h = Header::parse(&data).unwrap();
    assert_eq!((h.version, h.uncompressed_size), (1, 0));
    for hash in [HashCheck::Warn, HashCheck::Error] {
        let opts = DecompressOptions {
            hash,
            ..DecompressOptions::default()
        };
        let (kind, got) = refused_alike(&data, &opts);
        assert_eq!(got, 0);
        assert!(
            matches!(&kind, ErrorKind::Decompress { method: "zstd", message }
                if message.contains("window of 2147483648 bytes")),
            "{kind:?}"
        );
    }
}

#[test]
fn zero_size_frame_holds_one_raw_byte() {
    // 58 bytes: a v1 header declaring 0 bytes over a zstd frame that states 0 bytes of content
    // and holds a raw block of 1. Both paths refused it, with different messages: streamed, an
    // empty output buffer went to zstd ("Destination buffer is too small"); in memory, the
    // check that the frame ends did ("Data corruption detected"). The streamed path now checks
    // the end the same way.
    let data = regression("zero-size-frame-holds-one-raw-byte.bin");
    assert_eq!(data.len(), 58);
    let (kind, got) = refused_alike(&data, &DecompressOptions::default());
    assert_eq!(got, 0);
    assert_eq!(
        kind,
        ErrorKind::Decompress {
            method: "zstd",
            message: "Data corruption detected".into()
        }
    );
}

#[test]
fn a_frame_declared_to_decode_to_nothing_is_an_error_not_a_crash() {
    // 118 bytes found by fuzzing: a CCOB v2 bundle declaring an uncompressed size of 0 over a
    // damaged zstd frame. Handed to zstd's one-shot decoder with no destination, the system's
    // libzstd (1.5.4) read through the empty buffer and the process died (SIGSEGV) in `list`;
    // the streaming decoder now refuses it.
    let data = regression("empty-output-frame-crashed-zstd-one-shot.ccob");
    assert_eq!(Header::parse(&data).unwrap().uncompressed_size, 0);
    let limits = gfxkit_bundle::limits::Limits::default();
    assert!(gfxkit_bundle::read::ccob_header(&data, &limits).is_err());
    assert!(ccob::decompress_ccob(&data, &DecompressOptions::default()).is_err());
    let mut got = 0usize;
    let streamed = ccob::decompress_ccob_to(&data, &DecompressOptions::default(), &mut |c| {
        got += c.len();
        Ok(())
    });
    assert!(streamed.is_err());
}
