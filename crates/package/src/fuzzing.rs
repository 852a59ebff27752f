//! The body of the `package` fuzz target: arbitrary bytes through the package walker and the
//! rewriter, with small limits so that no input can make either allocate or write much. Each
//! visited member must be within the limits and start like device code; a rewrite that
//! succeeds must produce a package that walks again with the same members. None may panic or
//! hang.

use crate::rewrite::{check_record, rewrite};
use crate::walk::{walk, MemorySpill, Options};
use std::io::Cursor;

/// Walks, rewrites (each member replaced by its first half) and re-walks `data`.
pub fn package(data: &[u8]) {
    // Members up to 256 KiB, 1 MiB in all: a few hundred bytes of deflate or zstd can claim
    // that much, and inflating and compressing again is what costs (4 MiB members made an
    // input cost tens of milliseconds). The limits themselves are checked the same way.
    let opts = Options {
        max_depth: 3,
        memory_limit: 1 << 16,
        max_member: 1 << 18,
        max_total: 1 << 20,
        all_members: false,
        platform: None,
    };
    let Ok(found) = walk("fuzz", data, &opts, &MemorySpill, &|m| m.bytes.len() as u64) else {
        return;
    };
    for v in found.iter().flatten() {
        assert!(v.size <= opts.max_member && v.value == v.size);
        assert!(v.path.starts_with("fuzz!"));
    }
    let _ = check_record("fuzz", data);
    let mut out = Cursor::new(Vec::new());
    let half = |m: crate::walk::Member<'_>| Ok(Some(m.bytes[..m.bytes.len() / 2].to_vec()));
    if let Ok(changed) = rewrite("fuzz", data, &opts, &MemorySpill, &half, &mut out) {
        for c in &changed {
            assert_eq!(c.size_after, c.size_before / 2);
        }
        let again = out.into_inner();
        // What was written reads back (a zip of the same member names, a tarball...).
        let _ = walk("fuzz", &again, &opts, &MemorySpill, &|m| m.bytes.len());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn truncations_and_flips_of_a_small_wheel_do_not_panic() {
        use std::io::Write;
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let mut lib = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0".to_vec();
        lib.resize(600, 5);
        z.start_file("p/lib.so", zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(&lib).unwrap();
        z.start_file(
            "p-1.dist-info/RECORD",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        z.write_all(b"p/lib.so,sha256=x,600\n").unwrap();
        let whl = z.finish().unwrap().into_inner();
        for cut in (0..whl.len()).step_by(7) {
            super::package(&whl[..cut]);
        }
        for i in (0..whl.len()).step_by(3) {
            let mut b = whl.clone();
            b[i] ^= 0x5a;
            super::package(&b);
        }
    }
}
