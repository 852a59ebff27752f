//! aiter's kernel maps: CSV files beside the code objects under `aiter_meta/hsa/<arch>/`, one
//! row per kernel, that aiter reads to pick a kernel and then loads: `knl_name` (the kernel's
//! function symbol) and `knl_file` or `co_name` (its code object, relative to the CSV file's
//! directory), beside tuning columns (tile sizes, quantisation types) it matches on.
//! PyPI's `amd-aiter` 0.1.7.post2.dev18 has 75 such maps with 1,406 rows.
//!
//! ```
//! use gfxkit_kernel_db::aiter::{is_kernel_map, KernelMap};
//! let csv = b"knl_name,knl_file,tileM\n_ZN5aiter3k32E,k32.co,32\n";
//! assert!(is_kernel_map("hsa/gfx942/gemm/k.csv", csv));
//! let map = KernelMap::parse(csv, &Default::default()).unwrap();
//! assert_eq!((map.rows[0].name.as_str(), map.rows[0].file.as_str()), ("_ZN5aiter3k32E", "k32.co"));
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;

/// The column naming the kernel.
pub const NAME_COLUMN: &str = "knl_name";

/// The columns naming its code object, in the order they are looked for.
pub const FILE_COLUMNS: [&str; 2] = ["knl_file", "co_name"];

/// One row of a kernel map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRow {
    /// The line of the row in the file (the header is line 1).
    pub line: u64,
    /// Byte offset of the row in the file.
    pub offset: u64,
    /// `knl_name`: the kernel's function symbol.
    pub name: String,
    /// `knl_file` (or `co_name`): its code object, relative to the map's directory.
    pub file: String,
}

/// A parsed kernel map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelMap {
    /// The rows, in file order.
    pub rows: Vec<MapRow>,
}

/// How many first bytes of a file [`is_kernel_map`] is given to find the header line in: a
/// line that does not end within them is no kernel map's header. Kernel-database sniffing
/// reads at least this much ([`crate::sniff::PREFIX_LEN`]).
pub const HEADER_PREFIX_LEN: usize = 512;

/// The header's columns, when `prefix` (the first bytes of a file) starts with a header line
/// (ended by a newline, or by the end of a file shorter than [`HEADER_PREFIX_LEN`]: a map
/// with no row).
fn header_columns(prefix: &[u8]) -> Option<Vec<&str>> {
    let end = match prefix.iter().position(|&b| b == b'\n') {
        Some(end) => end,
        None if prefix.len() < HEADER_PREFIX_LEN => prefix.len(),
        None => return None,
    };
    let line = std::str::from_utf8(&prefix[..end]).ok()?;
    Some(
        line.trim_end_matches('\r')
            .split(',')
            .map(str::trim)
            .collect(),
    )
}

/// Whether a file named `name` whose first bytes are `prefix` is an aiter kernel map: a `.csv`
/// file under an `hsa/` directory whose header names `knl_name` and `knl_file` (or `co_name`).
pub fn is_kernel_map(name: &str, prefix: &[u8]) -> bool {
    let in_hsa = name.split(['/', '!']).any(|c| c == "hsa");
    if !in_hsa || !name.to_ascii_lowercase().ends_with(".csv") {
        return false;
    }
    header_columns(prefix).is_some_and(|cols| {
        cols.contains(&NAME_COLUMN) && FILE_COLUMNS.iter().any(|f| cols.contains(f))
    })
}

impl KernelMap {
    /// Reads a kernel map. Every row must have the header's number of fields and a non-empty
    /// kernel name and file; at most `limits.max_records` rows.
    pub fn parse(data: &[u8], limits: &Limits) -> Result<KernelMap> {
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(data);
        let headers = rd
            .byte_headers()
            .map_err(|e| csv_error(&e))?
            .iter()
            .map(|h| String::from_utf8_lossy(h).trim().to_owned())
            .collect::<Vec<_>>();
        let column = |n: &str| headers.iter().position(|h| h == n);
        let name_col = column(NAME_COLUMN)
            .ok_or_else(|| Error::at(0, ErrorKind::MissingField(NAME_COLUMN)))?;
        let file_col = FILE_COLUMNS
            .iter()
            .find_map(|c| column(c))
            .ok_or_else(|| Error::at(0, ErrorKind::MissingField(FILE_COLUMNS[0])))?;
        let mut rows = Vec::new();
        let mut record = csv::ByteRecord::new();
        // Lines counted up to `seen` (the reader's own count leaves out the header's).
        let (mut line, mut seen) = (1u64, 0usize);
        loop {
            match rd.read_byte_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => return Err(csv_error(&e)),
            }
            let offset = record.position().map_or(0, csv::Position::byte);
            if rows.len() as u64 >= limits.max_records {
                return Err(Error::at(
                    offset,
                    ErrorKind::LimitExceeded {
                        what: "kernel-map rows",
                        limit: limits.max_records,
                    },
                ));
            }
            // The record's start may be the `\n` of a `\r\n` ending the one before: counted
            // with the byte at the start.
            let start = usize::try_from(offset)
                .unwrap_or(data.len())
                .saturating_add(1)
                .min(data.len())
                .max(seen);
            line += data[seen..start].iter().filter(|&&b| b == b'\n').count() as u64;
            seen = start;
            let field = |i: usize, what: &'static str| -> Result<String> {
                let f = record.get(i).unwrap_or_default();
                let s = std::str::from_utf8(f).map_err(|_| {
                    Error::at(
                        offset,
                        ErrorKind::Inconsistent(format!("line {line}: {what} is not UTF-8")),
                    )
                })?;
                let s = s.trim();
                if s.is_empty() {
                    return Err(Error::at(
                        offset,
                        ErrorKind::Inconsistent(format!("line {line}: {what} is empty")),
                    ));
                }
                Ok(s.to_owned())
            };
            rows.push(MapRow {
                line,
                offset,
                name: field(name_col, NAME_COLUMN)?,
                file: field(file_col, "the code-object file")?,
            });
        }
        Ok(KernelMap { rows })
    }
}

/// A CSV error as a kernel-database error at its byte offset.
fn csv_error(e: &csv::Error) -> Error {
    let offset = e.position().map_or(0, csv::Position::byte);
    let why = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("a row has {len} fields, the header {expected_len}"),
        _ => e.to_string(),
    };
    Error::at(offset, ErrorKind::Inconsistent(format!("CSV: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_a_kernel_and_its_file_by_either_column() {
        let m = KernelMap::parse(
            b"tile_m,tile_n,knl_name,co_name\n32,64,_ZN5aiter1aE,a.co\r\n64,64,_ZN5aiter1bE,b.co\n",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.rows[1].name, "_ZN5aiter1bE");
        assert_eq!(m.rows[1].file, "b.co");
        assert_eq!(m.rows[1].line, 3);
        assert!(is_kernel_map(
            "w.whl!aiter_meta/hsa/gfx950/x/m.csv",
            b"tile_m,knl_name,co_name\n"
        ));
        assert!(!is_kernel_map("configs/m.csv", b"knl_name,knl_file\n"));
        // A map with a header and no row (aiter ships one), without a final newline.
        assert!(is_kernel_map(
            "hsa/gfx942/f4gemm/m.csv",
            b"tile_m,knl_name,co_name"
        ));
        let m = KernelMap::parse(b"tile_m,knl_name,co_name", &Limits::default()).unwrap();
        assert!(m.rows.is_empty());
        assert!(!is_kernel_map("hsa/gfx942/m.csv", b"cu_num,M,N,K\n"));
    }

    #[test]
    fn damage_is_an_error_at_its_place() {
        let l = Limits::default();
        let e = KernelMap::parse(b"knl_name,knl_file\na,a.co\nb\n", &l).unwrap_err();
        assert!(e.to_string().contains("1 fields, the header 2"), "{e}");
        let e = KernelMap::parse(b"knl_name,knl_file\na,\n", &l).unwrap_err();
        assert!(
            e.to_string()
                .contains("line 2: the code-object file is empty"),
            "{e}"
        );
        let e = KernelMap::parse(b"name,file\na,b\n", &l).unwrap_err();
        assert!(e.to_string().contains("knl_name"), "{e}");
        let few = Limits {
            max_records: 1,
            ..Limits::default()
        };
        assert!(KernelMap::parse(b"knl_name,knl_file\na,a.co\nb,b.co\n", &few).is_err());
    }
}
