//! MIOpen kernel databases written here with rusqlite (the schema of MIOpen's `kern_db.hpp`,
//! blobs through bzip2), then damaged; and DbId file names.

use gfxkit_kernel_db::kdb::{DbId, Kdb, Record};
use gfxkit_kernel_db::{ErrorKind, Limits};
use md5::{Digest, Md5};
use rusqlite::Connection;
use std::io::Write;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn bz2(b: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// (name, args, code object, compressed?)
fn kdb_bytes(
    rows: &[(&str, &str, &[u8], bool)],
    hash_of: impl Fn(usize, &[u8]) -> String,
) -> Vec<u8> {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE kern_db (id INTEGER PRIMARY KEY ASC, kernel_name TEXT NOT NULL, \
         kernel_args TEXT NOT NULL, kernel_blob BLOB NOT NULL, kernel_hash TEXT NOT NULL, \
         uncompressed_size INT NOT NULL); \
         CREATE UNIQUE INDEX idx_kern_db ON kern_db (kernel_name, kernel_args, kernel_hash, uncompressed_size);",
    )
    .unwrap();
    for (i, (name, args, code, compress)) in rows.iter().enumerate() {
        let (blob, size) = if *compress {
            (bz2(code), code.len() as i64)
        } else {
            (code.to_vec(), 0)
        };
        conn.execute(
            "INSERT INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![name, args, blob, hash_of(i, code), size],
        )
        .unwrap();
    }
    conn.serialize(rusqlite::MAIN_DB).unwrap().to_vec()
}

fn md5_hex(_: usize, code: &[u8]) -> String {
    hex(&Md5::digest(code))
}

fn code(n: usize, seed: u8) -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01\x40".to_vec();
    v.extend((0..n).map(|i| (i as u8).wrapping_mul(seed)));
    v
}

#[test]
fn records_list_and_blobs_decode_with_their_md5() {
    let a = code(5000, 7);
    let b = code(300, 3);
    let bytes = kdb_bytes(
        &[
            (
                "MIOpenBatchNormFwdTrainSpatial.cl.o",
                "-DMIO_BN_N=1 -mcpu=gfx90a:sramecc+:xnack-",
                &a,
                true,
            ),
            ("naive_conv.cpp.o", "-DFOO", &b, false),
        ],
        md5_hex,
    );
    let db = Kdb::from_bytes(&bytes, &Limits::default()).unwrap();
    let recs = db.records().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].kernel_name, "MIOpenBatchNormFwdTrainSpatial.cl.o");
    assert_eq!(recs[0].uncompressed_size, a.len() as u64);
    assert!(recs[0].blob_len < a.len() as u64);
    assert_eq!(recs[0].mcpu(), Some("gfx90a:sramecc+:xnack-"));
    assert_eq!(recs[1].uncompressed_size, 0);
    assert_eq!(recs[1].blob_len, b.len() as u64);
    assert_eq!(recs[1].mcpu(), None);
    assert_eq!(db.code_object(&recs[0]).unwrap(), a);
    assert_eq!(db.code_object(&recs[1]).unwrap(), b);
}

#[test]
fn a_wrong_hash_is_possible_corruption_named_by_record() {
    let a = code(1000, 5);
    let bytes = kdb_bytes(&[("k.o", "", &a, true)], |_, _| "0".repeat(32));
    let db = Kdb::from_bytes(&bytes, &Limits::default()).unwrap();
    let r = &db.records().unwrap()[0];
    let e = db.code_object(r).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::HashMismatch { .. }), "{e}");
    assert_eq!(e.at.as_deref(), Some("kern_db id 1 (k.o)"));
}

#[test]
fn a_lying_uncompressed_size_and_a_damaged_blob_are_errors() {
    let a = code(1000, 5);
    let r = Record {
        id: 1,
        kernel_name: "k.o".into(),
        kernel_args: String::new(),
        kernel_hash: md5_hex(0, &a),
        uncompressed_size: 10,
        blob_len: 0,
    };
    let blob = bz2(&a);
    let e = gfxkit_kernel_db::kdb::decode_blob(&blob, &r, &Limits::default()).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::SizeMismatch {
                expected: 10,
                got: 11
            }
        ),
        "{e}"
    );
    let big = Record {
        uncompressed_size: 5000,
        ..r.clone()
    };
    let e = gfxkit_kernel_db::kdb::decode_blob(&blob, &big, &Limits::default()).unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::SizeMismatch { expected: 5000, got } if got == a.len() as u64),
        "{e}"
    );
    let mut bad = blob.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    let ok = Record {
        uncompressed_size: a.len() as u64,
        ..r.clone()
    };
    let e = gfxkit_kernel_db::kdb::decode_blob(&bad, &ok, &Limits::default()).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::Decompress { .. }
                | ErrorKind::HashMismatch { .. }
                | ErrorKind::SizeMismatch { .. }
        ),
        "{e}"
    );
    let small = Limits {
        max_decompressed: 100,
        ..Limits::default()
    };
    let e = gfxkit_kernel_db::kdb::decode_blob(&blob, &ok, &small).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::LimitExceeded { .. }), "{e}");
}

#[test]
fn not_sqlite_no_table_and_truncated_files_are_clear_errors() {
    let e = Kdb::from_bytes(b"\x7fELF not a database at all", &Limits::default()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::BadMagic { .. }), "{e}");
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE other (x INT); INSERT INTO other VALUES (1);")
        .unwrap();
    let other = conn.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
    let e = Kdb::from_bytes(&other, &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("kern_db"), "{e}");
    let a = code(20000, 9);
    let bytes = kdb_bytes(
        &[("k.o", "", &a, false), ("l.o", "", &a[..100], true)],
        md5_hex,
    );
    for cut in [16, 100, 512, bytes.len() / 2, bytes.len() - 1] {
        let r = Kdb::from_bytes(&bytes[..cut], &Limits::default()).and_then(|db| {
            let recs = db.records()?;
            for r in &recs {
                db.code_object(r)?;
            }
            Ok(recs.len())
        });
        assert!(r.is_err(), "cut {cut}: {r:?}");
    }
}

#[test]
fn bit_flips_never_panic() {
    let a = code(2000, 11);
    let bytes = kdb_bytes(&[("k.o", "-mcpu=gfx1030", &a, true)], md5_hex);
    for i in (0..bytes.len()).step_by(97) {
        let mut b = bytes.clone();
        b[i] ^= 0x20;
        if let Ok(db) = Kdb::from_bytes(&b, &Limits::default()) {
            if let Ok(recs) = db.records() {
                for r in &recs {
                    let _ = db.code_object(r);
                }
            }
        }
    }
}

#[test]
fn db_id_names_decimal_up_to_64_hex_above_and_suffixes() {
    let p = |n: &str| DbId::parse_file_name(n).unwrap();
    let id = p("gfx90a68.kdb");
    assert_eq!(
        (id.processor.as_str(), id.cu_count, id.cu_count_if_hex),
        ("gfx90a", Some(104), None)
    );
    assert_eq!(p("gfx942130.kdb").cu_count, Some(0x130));
    assert_eq!(p("gfx90878.kdb").cu_count, Some(120));
    assert_eq!(p("gfx103036.kdb").cu_count, Some(36));
    assert_eq!(p("gfx1030.kdb").cu_count, None);
    let amb = p("gfx110048.kdb");
    assert_eq!(
        (amb.processor.as_str(), amb.cu_count, amb.cu_count_if_hex),
        ("gfx1100", Some(48), Some(0x48))
    );
    let f = p("gfx90a_nosramecc_xnack6e.kdb");
    assert_eq!(f.sramecc, Some(false));
    assert!(f.xnack);
    assert_eq!(f.cu_count, Some(110));
    assert_eq!(p("gfx906_sramecc.kdb").sramecc, Some(true));
    for id in [p("gfx90a68.kdb"), f, p("gfx1030.kdb"), p("gfx90820.kdb")] {
        assert_eq!(DbId::parse_file_name(&id.file_name()).unwrap(), id);
    }
    for bad in [
        "gfx90a68.db",
        "gfx9zz.kdb",
        "navi21.kdb",
        "gfx90a_turbo68.kdb",
        "gfx90a68_xnack.kdb",
        "gfx90a_xnack_nosramecc.kdb",
        "gfx90a041.kdb",
        "gfx90azz.kdb",
    ] {
        let e = DbId::parse_file_name(bad).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::BadName(_)), "{bad}: {e}");
        assert!(e.to_string().contains(bad), "{e}");
    }
}
