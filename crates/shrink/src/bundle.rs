//! Offload bundles as the rewrite needs them, on top of `gfxkit-bundle`: find the bundles in a
//! region of bytes, read their entries (decompressing CCOB bundles), and write a bundle back with
//! chosen entries in a chosen encoding.
//!
//! Every format rule (layout, CCOB v1-v3 headers, v1 extent, codecs, hash, limits) lives in
//! `gfxkit-bundle`, whose [`BundleFormat`] is how a bundle is stored; this module turns that
//! crate's errors into this crate's, with offsets in the input file.

use crate::error::{Error, ErrorKind, Result};
use gfxkit_bundle::ccob::{self, CompressOptions};
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::{Bundle, BundleFormat};
use gfxkit_bytes::Cursor;
use gfxkit_host::Unit;
use std::borrow::Cow;

pub use gfxkit_bundle::Method;

/// `e` as this crate's error: at its own offset (absolute: the bundle readers are handed
/// cursors located in the input), or at `place` when it has none (an error about a compressed
/// payload, or about bytes being written, placed at the bundle concerned).
pub(crate) fn error_at(e: gfxkit_bundle::Error, place: u64) -> Error {
    let offset = e.offset.unwrap_or(place);
    let kind = match e.kind {
        gfxkit_bundle::ErrorKind::Garbage { .. } => ErrorKind::UnknownBytes { found: Vec::new() },
        kind => ErrorKind::Bundle {
            entry: e.entry,
            kind: Box::new(kind),
        },
    };
    Error::at(offset, kind)
}

/// How the bundle `u` is stored: CCOB (its header's version and method) or uncompressed. The
/// rewrite reads bundles only, whose storage the scans and discovery read (and whose unknown
/// methods they refuse).
pub(crate) fn encoding(u: &Unit<'_>) -> BundleFormat {
    u.format().unwrap_or(BundleFormat::Uncompressed)
}

/// Finds the bundles in `region` (bytes at `region.base()` of the input): bundles back to
/// back, separated by zero padding ([`gfxkit_bundle::scan_concatenated_at`]). Offsets in
/// errors are file offsets. The bundles are read under `limits`.
pub fn scan<'a>(region: Cursor<'a>, limits: &Limits) -> Result<Vec<Unit<'a>>> {
    let spans = gfxkit_bundle::scan_concatenated_at(region, limits).map_err(|e| {
        let mut err = error_at(e, region.base());
        if let ErrorKind::UnknownBytes { found } = &mut err.kind {
            let rest = region
                .tail(err.offset.saturating_sub(region.base()))
                .bytes();
            found.extend_from_slice(&rest[..rest.len().min(8)]);
        }
        err
    })?;
    spans
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Unit::of_span(i, region, s, limits).ok_or_else(|| {
                let why = "a bundle runs past the region holding it";
                Error::at(s.offset, ErrorKind::Damaged(why.into()))
            })
        })
        .collect()
}

/// The uncompressed bundle inside `found`: borrowed when it is stored uncompressed, else
/// decompressed (checked against the declared size and the MD5 hash). Errors are at file
/// offsets.
pub fn uncompressed<'a>(found: &Unit<'a>) -> Result<Cow<'a, [u8]>> {
    match encoding(found) {
        BundleFormat::Uncompressed => Ok(Cow::Borrowed(found.bytes)),
        BundleFormat::Compressed { .. } => {
            ccob::decompress_ccob_at(found.cursor(), &found.limits.decompress_options())
                .map(|d| Cow::Owned(d.data))
                .map_err(|e| error_at(e, found.offset))
        }
    }
}

/// Like [`uncompressed`] without computing the CCOB hash (sizes are still checked), decoding
/// into `buf` (reused from bundle to bundle): for a reader that compares every entry byte for
/// byte with data it trusts.
pub(crate) fn uncompressed_unhashed<'x>(
    found: &Unit<'x>,
    buf: &'x mut Vec<u8>,
) -> Result<&'x [u8]> {
    match encoding(found) {
        BundleFormat::Uncompressed => Ok(found.bytes),
        BundleFormat::Compressed { .. } => {
            ccob::decompress_ccob_unhashed_into(
                found.cursor(),
                &found.limits.decompress_options(),
                buf,
            )
            .map_err(|e| error_at(e, found.offset))?;
            Ok(&buf[..])
        }
    }
}

/// Reads the uncompressed bundle `raw` of the bundle at file offset `at`: the stored bytes
/// themselves (`stored`), whose errors name their file offset, or the content decompressed
/// from a CCOB bundle, whose errors name the compressed bundle's offset (their own offsets are
/// in bytes that are not in the file).
pub(crate) fn parse_uncompressed(raw: &[u8], stored: bool, at: u64) -> Result<Bundle<'_>> {
    if stored {
        Bundle::parse_at(Cursor::at(raw, at)).map_err(|e| error_at(e, at))
    } else {
        Bundle::parse(raw).map_err(|e| Error::at(at, error_at(e, 0).kind))
    }
}

/// Decompresses the CCOB bundle `b` (exactly its bytes) under `limits`, size and hash checked.
pub fn decompress(b: &[u8], limits: &Limits) -> Result<Vec<u8>> {
    ccob::decompress_ccob(b, &limits.decompress_options())
        .map(|d| d.data)
        .map_err(|e| error_at(e, 0))
}

/// Compresses the uncompressed bundle `data` into a CCOB bundle, exactly as `gfxkit compress`
/// does with the same version, method, level and zstd worker threads (zstd with long-distance
/// matching; 0 threads gives clang's bytes; a v2 request whose sizes do not fit 32 bits is
/// written as v3).
pub fn compress(
    data: &[u8],
    version: u16,
    method: Method,
    level: i32,
    threads: u32,
) -> Result<Vec<u8>> {
    compress_hashed(data, None, version, method, level, threads)
}

/// Like [`compress`], with the CCOB hash of `data` given when it is already known (computed
/// side by side with other bundles', or the checked hash of the CCOB bundle `data` came from).
pub fn compress_hashed(
    data: &[u8],
    hash: Option<u64>,
    version: u16,
    method: Method,
    level: i32,
    threads: u32,
) -> Result<Vec<u8>> {
    let opts = CompressOptions {
        method,
        level: Some(level),
        version,
        threads,
    };
    match hash {
        Some(h) => ccob::compress_hashed(data, h, &opts),
        None => ccob::compress(data, &opts),
    }
    .map_err(|e| {
        let message = e.to_string();
        let kind = match e.kind {
            gfxkit_bundle::ErrorKind::UnwritableVersion(v) => {
                ErrorKind::Unsupported(format!("CCOB version {v} (1, 2 or 3 are known)"))
            }
            gfxkit_bundle::ErrorKind::SizeExceedsVersion { .. } => {
                ErrorKind::TooLarge(format!("{message}; use --ccob-version 3"))
            }
            _ => ErrorKind::Compress(message),
        };
        Error::at(0, kind)
    })
}

/// How the CCOB bundle `b` is stored as written (a v2 request may have become v3).
pub(crate) fn encoding_of(b: &[u8]) -> BundleFormat {
    match ccob::Header::parse(b) {
        Ok(h) => BundleFormat::of_header(&h),
        Err(_) => BundleFormat::Uncompressed,
    }
}

/// Writes an uncompressed bundle holding `entries` (ID, payload) in that order, each payload at
/// an offset aligned to `align`, the way clang's bundler lays it out
/// ([`gfxkit_bundle::write_bundle`]).
pub fn write_uncompressed(entries: &[(&str, &[u8])], align: u64) -> Result<Vec<u8>> {
    gfxkit_bundle::write_bundle(entries, align.max(1)).map_err(|e| error_at(e, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let a = vec![7u8; 100];
        let entries: Vec<(&str, &[u8])> = vec![
            ("host-x86_64-unknown-linux--", &[]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &a),
        ];
        let b = write_uncompressed(&entries, 4096).unwrap();
        assert_eq!(b.len(), 4096 + 100);
        for (version, method) in [(1, Method::Zstd), (2, Method::Zlib), (3, Method::Zstd)] {
            let c = compress(&b, version, method, 3, 0).unwrap();
            let method = method.into();
            assert_eq!(
                encoding_of(&c),
                BundleFormat::Compressed { version, method }
            );
            let mut region = c.clone();
            region.extend_from_slice(&[0; 13]);
            region.extend_from_slice(&b);
            let found = scan(Cursor::new(&region), &Default::default()).unwrap();
            assert_eq!(found.len(), 2);
            assert_eq!(found[0].bytes.len(), c.len());
            assert_eq!(found[1].offset, c.len() as u64 + 13);
            assert_eq!(encoding(&found[1]), BundleFormat::Uncompressed);
            assert_eq!(uncompressed(&found[0]).unwrap().as_ref(), &b[..]);
        }
    }

    #[test]
    fn compressed_like_gfxkit_compress() {
        let a: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let b = write_uncompressed(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &a)], 4096).unwrap();
        let opts = CompressOptions {
            threads: gfxkit_bundle::codec::all_cores(),
            ..CompressOptions::default()
        };
        assert_eq!(
            compress(&b, 2, Method::Zstd, 3, opts.threads).unwrap(),
            ccob::compress(&b, &opts).unwrap()
        );
    }

    #[test]
    fn damaged_headers_are_refused_with_the_entry_and_file_offset() {
        // Two entries whose IDs are made equal after writing: the bundle reader refuses it,
        // and the rewrite reports the entry and where its ID lies in the file.
        let a = [1u8; 16];
        let b = write_uncompressed(
            &[
                ("hipv4-amdgcn-amd-amdhsa--gfx906", &a),
                ("hipv4-amdgcn-amd-amdhsa--gfx908", &a),
            ],
            8,
        )
        .unwrap();
        let mut dup = vec![0u8; 64];
        dup.extend_from_slice(&b);
        let second_id = 64 + 32 + 24 + 31 + 24;
        dup[second_id + 30] = b'6';
        let t = crate::Transform {
            selection: crate::EntryFilter::All,
            conversion: crate::Conversion::Uncompressed,
            limits: Default::default(),
        };
        let e = crate::plan::transform_region(Cursor::new(&dup), Some(1), &t)
            .err()
            .unwrap();
        assert!(
            matches!(
                &e.kind,
                ErrorKind::Bundle { entry: Some(1), kind }
                    if matches!(**kind, gfxkit_bundle::ErrorKind::DuplicateId { first: 0, .. })
            ),
            "{e}"
        );
        assert_eq!(e.offset, second_id as u64);
        // The same region lying at 0x1000 of a file: the offset is the file's.
        let e = crate::plan::transform_region(Cursor::at(&dup, 0x1000), Some(1), &t)
            .err()
            .unwrap();
        assert_eq!(e.offset, 0x1000 + second_id as u64);
        let mut clean = vec![0u8; 64];
        clean.extend_from_slice(&b);
        let found = scan(Cursor::at(&clean, 0x1000), &Default::default()).unwrap();
        assert_eq!(found[0].offset, 0x1040);
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let a = vec![1u8; 10];
        let b = write_uncompressed(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &a)], 8).unwrap();
        for cut in 0..b.len() {
            let _ = scan(Cursor::new(&b[..cut]), &Default::default());
        }
        let c = compress(&b, 2, Method::Zstd, 3, 0).unwrap();
        for cut in 0..c.len() {
            if let Ok(f) = scan(Cursor::new(&c[..cut]), &Default::default()) {
                for x in f {
                    let _ = uncompressed(&x);
                }
            }
        }
        let mut huge = b.clone();
        huge[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(scan(Cursor::new(&huge), &Default::default()).is_err());
        let mut bad_hash = c.clone();
        bad_hash[16] ^= 1;
        let e = decompress(&bad_hash, &Default::default()).unwrap_err();
        assert!(e.to_string().contains("hash"), "{e}");
        let e = scan(Cursor::new(b"\0\0\0xyz"), &Default::default()).unwrap_err();
        assert_eq!(e.offset, 3);
        assert_eq!(
            e.kind,
            ErrorKind::UnknownBytes {
                found: b"xyz".to_vec()
            }
        );
        let e = compress(&b, 4, Method::Zstd, 3, 0).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Unsupported(_)), "{e}");
    }
}
