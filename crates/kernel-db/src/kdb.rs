//! MIOpen kernel databases: `<DbId>.kdb`, SQLite files holding precompiled code objects.
//!
//! Table `kern_db(id INTEGER PRIMARY KEY, kernel_name TEXT, kernel_args TEXT, kernel_blob
//! BLOB, kernel_hash TEXT, uncompressed_size INT)` (MIOpen `kern_db.hpp`). A blob is bzip2
//! unless `uncompressed_size` is 0 (then stored as is); `kernel_hash` is the MD5, in hex, of
//! the code object.
//!
//! The database is read from bytes: [`Kdb::from_bytes`] hands SQLite a read-only in-memory
//! copy (`sqlite3_deserialize` through rusqlite's `deserialize_read_exact`). That keeps this
//! crate free of file I/O like every gfxkit library (the caller maps the file), leaves no
//! journal or lock file beside a file that may sit in a read-only system directory, and
//! makes SQLite's view exactly the bytes the caller checked. The cost is one copy of the
//! file in memory, bounded by [`Limits::max_kdb_size`](crate::Limits) (SQLite's in-memory
//! reader takes at most 2 GiB - 1).

use crate::error::{Error, ErrorKind, Result};
use crate::limits::{Limits, MAX_KDB_SIZE};
use md5::{Digest, Md5};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use std::io::Read;

/// The first 16 bytes of every SQLite 3 database.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// One record of `kern_db`, without its blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `id`.
    pub id: i64,
    /// `kernel_name` (the source or object file name, such as `MIOpenBatchNormFwdTrainSpatial.cl.o`).
    pub kernel_name: String,
    /// `kernel_args` (build options; tuning tools append ` -mcpu=<target id>`).
    pub kernel_args: String,
    /// `kernel_hash`: the MD5 of the code object, hex.
    pub kernel_hash: String,
    /// `uncompressed_size`: the code object's size, or 0 when the blob is stored as is.
    pub uncompressed_size: u64,
    /// Length of `kernel_blob` in bytes.
    pub blob_len: u64,
}

impl Record {
    /// The `-mcpu=` target ID at the end of `kernel_args`, if any.
    pub fn mcpu(&self) -> Option<&str> {
        let at = self.kernel_args.rfind("-mcpu=")?;
        self.kernel_args[at + 6..].split_whitespace().next()
    }
}

/// A `.kdb` database opened read-only from bytes.
pub struct Kdb {
    conn: Connection,
    limits: Limits,
}

impl std::fmt::Debug for Kdb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kdb").finish_non_exhaustive()
    }
}

fn sql(e: rusqlite::Error) -> Error {
    Error::new(ErrorKind::Sqlite(e.to_string()))
}

impl Kdb {
    /// Opens the database held in `bytes` (the whole `.kdb` file).
    pub fn from_bytes(bytes: &[u8], limits: &Limits) -> Result<Kdb> {
        if bytes.len() < SQLITE_MAGIC.len() || !bytes.starts_with(SQLITE_MAGIC) {
            return Err(Error::at(
                0,
                ErrorKind::BadMagic {
                    found: bytes.iter().take(16).copied().collect(),
                    expected: "SQLite format 3\\0",
                },
            ));
        }
        let limit = limits.max_kdb_size.min(MAX_KDB_SIZE);
        if bytes.len() as u64 > limit {
            return Err(Error::new(ErrorKind::LimitExceeded {
                what: "kernel database size",
                limit,
            }));
        }
        let mut conn = Connection::open_in_memory().map_err(sql)?;
        conn.deserialize_read_exact(rusqlite::MAIN_DB, bytes, bytes.len(), true)
            .map_err(sql)?;
        conn.execute_batch("PRAGMA query_only = ON; PRAGMA trusted_schema = OFF;")
            .map_err(sql)?;
        let has_table: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'kern_db'",
                [],
                |r| r.get(0),
            )
            .map_err(sql)?;
        if has_table == 0 {
            return Err(Error::new(ErrorKind::Inconsistent(
                "no table kern_db: not a MIOpen kernel database".into(),
            )));
        }
        Ok(Kdb {
            conn,
            limits: *limits,
        })
    }

    /// Every record, by `id`, without blobs.
    pub fn records(&self) -> Result<Vec<Record>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, kernel_name, kernel_args, kernel_hash, uncompressed_size, \
                 length(kernel_blob) FROM kern_db ORDER BY id",
            )
            .map_err(sql)?;
        let mut rows = st.query([]).map_err(sql)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(sql)? {
            if out.len() as u64 >= self.limits.max_records {
                return Err(Error::new(ErrorKind::LimitExceeded {
                    what: "kern_db records",
                    limit: self.limits.max_records,
                }));
            }
            let id: i64 = row.get(0).map_err(sql)?;
            let place = format!("kern_db id {id}");
            let text = |i: usize, col: &'static str| -> Result<String> {
                match row.get_ref(i).map_err(sql)? {
                    ValueRef::Text(t) => Ok(String::from_utf8_lossy(t).into_owned()),
                    other => Err(Error::new(ErrorKind::Unexpected {
                        expected: "text",
                        found: format!("{:?}", other.data_type()),
                    })
                    .place(format!("{place}, {col}"))),
                }
            };
            let uint = |i: usize, col: &'static str| -> Result<u64> {
                match row.get_ref(i).map_err(sql)? {
                    ValueRef::Integer(v) if v >= 0 => Ok(v as u64),
                    ValueRef::Null if col == "kernel_blob" => Ok(0),
                    other => Err(Error::new(ErrorKind::Unexpected {
                        expected: "a non-negative integer",
                        found: format!("{other:?}"),
                    })
                    .place(format!("{place}, {col}"))),
                }
            };
            out.push(Record {
                id,
                kernel_name: text(1, "kernel_name")?,
                kernel_args: text(2, "kernel_args")?,
                kernel_hash: text(3, "kernel_hash")?,
                uncompressed_size: uint(4, "uncompressed_size")?,
                blob_len: uint(5, "kernel_blob")?,
            });
        }
        Ok(out)
    }

    /// The stored blob of record `id`, as is.
    pub fn blob(&self, id: i64) -> Result<Vec<u8>> {
        self.conn
            .query_row("SELECT kernel_blob FROM kern_db WHERE id = ?1", [id], |r| {
                r.get::<_, Option<Vec<u8>>>(0)
            })
            .map(Option::unwrap_or_default)
            .map_err(|e| sql(e).place(format!("kern_db id {id}")))
    }

    /// The code object of `record`: the blob decoded (bzip2, bounded by
    /// `uncompressed_size`; as is when it is 0) and checked against `kernel_hash`.
    pub fn code_object(&self, record: &Record) -> Result<Vec<u8>> {
        let blob = self.blob(record.id)?;
        decode_blob(&blob, record, &self.limits)
            .map_err(|e| e.place(format!("kern_db id {} ({})", record.id, record.kernel_name)))
    }
}

/// Decodes a record's blob and checks its MD5 (the rule of [`Kdb::code_object`], for blobs
/// read elsewhere).
pub fn decode_blob(blob: &[u8], record: &Record, limits: &Limits) -> Result<Vec<u8>> {
    let bytes = if record.uncompressed_size == 0 {
        blob.to_vec()
    } else {
        if record.uncompressed_size > limits.max_decompressed {
            return Err(Error::new(ErrorKind::LimitExceeded {
                what: "uncompressed_size",
                limit: limits.max_decompressed,
            }));
        }
        let mut out = Vec::with_capacity(record.uncompressed_size.min(1 << 24) as usize);
        bzip2::read::BzDecoder::new(blob)
            .take(record.uncompressed_size + 1)
            .read_to_end(&mut out)
            .map_err(|e| {
                Error::new(ErrorKind::Decompress {
                    codec: "bzip2",
                    why: e.to_string(),
                })
            })?;
        if out.len() as u64 != record.uncompressed_size {
            return Err(Error::new(ErrorKind::SizeMismatch {
                expected: record.uncompressed_size,
                got: out.len() as u64,
            }));
        }
        out
    };
    let got = hex::encode(Md5::digest(&bytes));
    if !got.eq_ignore_ascii_case(record.kernel_hash.trim()) {
        return Err(Error::new(ErrorKind::HashMismatch {
            expected: record.kernel_hash.clone(),
            got,
        }));
    }
    Ok(bytes)
}

/// What a `.kdb` file name says: MIOpen's `DbId` (processor and feature suffixes) and the CU
/// count (`handle.hpp`, `target_properties.cpp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbId {
    /// The processor (`gfx90a`).
    pub processor: String,
    /// `Some(false)` for `_nosramecc`, `Some(true)` for `_sramecc`, `None` when absent.
    pub sramecc: Option<bool>,
    /// Whether `_xnack` is present.
    pub xnack: bool,
    /// The CU count (decimal when at most 64, hex above); `None` for the name without one
    /// (MIOpen's fallback, `binary_cache.cpp`).
    pub cu_count: Option<u32>,
    /// For digits that read both ways (`41` to `64`: decimal 41-64 or hex 65-100), the hex
    /// reading; [`DbId::cu_count`] then holds the decimal one.
    pub cu_count_if_hex: Option<u32>,
}

impl DbId {
    /// The file name MIOpen looks for: `<processor>[_nosramecc|_sramecc][_xnack]<cu>.kdb`.
    pub fn file_name(&self) -> String {
        let mut s = self.processor.clone();
        match self.sramecc {
            Some(false) => s.push_str("_nosramecc"),
            Some(true) => s.push_str("_sramecc"),
            None => {}
        }
        if self.xnack {
            s.push_str("_xnack");
        }
        match self.cu_count {
            Some(n) if n <= 64 => s.push_str(&n.to_string()),
            Some(n) => s.push_str(&format!("{n:x}")),
            None => {}
        }
        s.push_str(".kdb");
        s
    }

    /// Parses a `.kdb` file name (without directories).
    pub fn parse_file_name(name: &str) -> Result<DbId> {
        let bad = |why: String| Error::new(ErrorKind::BadName(format!("{name:?}: {why}")));
        let base = name
            .strip_suffix(".kdb")
            .ok_or_else(|| bad("does not end in .kdb".into()))?;
        let mut parts = base.split('_');
        let first = parts.next().unwrap_or_default();
        let rest: Vec<&str> = parts.collect();
        // The processor: the longest known name the first part starts with.
        let processor = gfxkit_spec::PROCESSORS
            .iter()
            .map(|p| p.name)
            .filter(|n| first.starts_with(n))
            .max_by_key(|n| n.len())
            .ok_or_else(|| bad(format!("{first:?} does not start with a known processor")))?;
        let mut digits = &first[processor.len()..];
        let mut sramecc = None;
        let mut xnack = false;
        for (i, part) in rest.iter().enumerate() {
            if !digits.is_empty() {
                return Err(bad(format!("{digits:?} before a feature suffix")));
            }
            let (word, tail) = ["nosramecc", "sramecc", "xnack"]
                .iter()
                .find_map(|w| part.strip_prefix(w).map(|t| (*w, t)))
                .ok_or_else(|| bad(format!("unknown suffix _{part}")))?;
            match word {
                "nosramecc" | "sramecc" if sramecc.is_none() && !xnack => {
                    sramecc = Some(word == "sramecc")
                }
                "xnack" if !xnack => xnack = true,
                _ => return Err(bad(format!("suffix _{word} out of order or repeated"))),
            }
            if !tail.is_empty() && i + 1 != rest.len() {
                return Err(bad(format!("{tail:?} before a feature suffix")));
            }
            digits = tail;
        }
        let (cu_count, cu_count_if_hex) = if digits.is_empty() {
            (None, None)
        } else if digits.starts_with('0') {
            return Err(bad(format!(
                "CU count {digits:?} has a leading zero (MIOpen writes none)"
            )));
        } else {
            let hexv = u32::from_str_radix(digits, 16)
                .map_err(|_| bad(format!("CU count {digits:?} is not hex or decimal")))?;
            match digits.parse::<u32>() {
                Ok(d) if d <= 64 && hexv > 64 => (Some(d), Some(hexv)),
                Ok(d) if d <= 64 => (Some(d), None),
                _ if hexv > 64 => (Some(hexv), None),
                _ => {
                    return Err(bad(format!(
                        "CU count {digits:?} is not how MIOpen writes one"
                    )))
                }
            }
        };
        Ok(DbId {
            processor: processor.to_string(),
            sramecc,
            xnack,
            cu_count,
            cu_count_if_hex,
        })
    }
}
