//! Tensile indexes in the indexed layout of 2026 (`format_version: 2`), made from any index in
//! the `solutions`-array layout, as hipBLASLt's build writes them: each solution's map packed
//! on its own into `solutions_blob`, in the array's order, and a `solutions_index` table of
//! `[index, offset, length]` triples; `format_version` first, every other key as it was.
//!
//! Tests use it to read and prune the same index in both layouts (synthetic ones and Debian's
//! rocBLAS index); the solutions are sliced, not decoded, so a 117 MB index converts quickly.

use gfxkit_msgpack::Reader;

/// The indexed form of `bytes` (a MessagePack index with a `solutions` array). Panics on an
/// input that is not one: this is test support.
pub fn to_indexed(bytes: &[u8]) -> Vec<u8> {
    let mut c = Reader::new(bytes);
    let n = c.map("the index map").expect("an index map");
    let mut rest = Vec::new();
    let mut table = Vec::new();
    let mut blob = Vec::new();
    for _ in 0..n {
        let key = c.skip().expect("a key");
        if key.as_str() == Some("solutions") {
            let count = c.array("the solutions").expect("a solutions array");
            for _ in 0..count {
                let raw = c.skip().expect("a solution");
                let index = solution_index(raw.bytes);
                table.extend([index, blob.len() as u64, raw.bytes.len() as u64]);
                blob.extend_from_slice(raw.bytes);
            }
        } else {
            rest.extend_from_slice(key.bytes);
            rest.extend_from_slice(c.skip().expect("a value").bytes);
        }
    }
    let mut out = Vec::with_capacity(bytes.len() + table.len() * 5 + 64);
    // The `solutions` key is replaced by two keys, and `format_version` is added.
    rmp::encode::write_map_len(&mut out, n + 2).unwrap();
    rmp::encode::write_str(&mut out, "format_version").unwrap();
    rmp::encode::write_uint(&mut out, 2).unwrap();
    rmp::encode::write_str(&mut out, "solutions_index").unwrap();
    rmp::encode::write_array_len(&mut out, table.len() as u32).unwrap();
    for v in table {
        rmp::encode::write_uint(&mut out, v).unwrap();
    }
    rmp::encode::write_str(&mut out, "solutions_blob").unwrap();
    rmp::encode::write_bin_len(&mut out, blob.len() as u32).unwrap();
    out.extend_from_slice(&blob);
    out.extend_from_slice(&rest);
    out
}

/// The `index` field of one solution's map.
fn solution_index(map: &[u8]) -> u64 {
    let mut c = Reader::new(map);
    let fields = c.map("a solution map").expect("a solution map");
    for _ in 0..fields {
        if c.str().expect("a string key") == "index" {
            return c.uint("an index").expect("an integer index");
        }
        c.skip().expect("a value");
    }
    panic!("a solution without an index")
}
