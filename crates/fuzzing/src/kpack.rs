//! The body of the `kpack` fuzz target: a `.kpack` archive through the reader (header, TOC,
//! frames or blobs), every kernel decoded within its declared size, the archive checks
//! `gfxkit verify` runs, and a round trip through the writer of what decoded.

use gfxkit_kpack::write::{write_archive, ArchiveMeta, Compression, KernelIn};
use gfxkit_kpack::{Archive, Scheme};

/// Reads `data` as a `.kpack` archive; what reads must decode within bounds and write back
/// to an archive that reads to the same kernels.
pub fn run(data: &[u8]) {
    let _ = gfxkit_kpack::verify::verify_archive("fuzz.kpack", data);
    let Ok(a) = Archive::parse(data) else {
        return;
    };
    let mut decoded = Vec::new();
    for k in &a.kernels {
        let _ = a.size_of(k);
        let Ok(p) = a.payload(k) else {
            continue;
        };
        if let Some(s) = k.original_size {
            assert_eq!(
                p.len() as u64,
                s,
                "{}: decoded size differs from the TOC",
                k.key
            );
        }
        if a.scheme == Scheme::None {
            assert_eq!(p.len() as u64, k.stored_size);
        }
        decoded.push((k, p));
    }
    // Keys and arches are unique in a TOC map; the writer needs them so.
    decoded.dedup_by(|x, y| x.0.key == y.0.key && x.0.arch == y.0.arch);
    let meta = ArchiveMeta {
        group_name: a.group_name.clone().unwrap_or_default(),
        arch_family: a.arch_family.clone().unwrap_or_default(),
        arches: a.arches.clone(),
    };
    let ins: Vec<KernelIn<'_>> = decoded
        .iter()
        .map(|(k, p)| KernelIn {
            key: &k.key,
            arch: &k.arch,
            bytes: p,
        })
        .collect();
    let Ok(again) = write_archive(&meta, &ins, Compression::None) else {
        return;
    };
    let b = Archive::parse(&again).expect("a written archive reads back");
    for (k, p) in &decoded {
        let got = b
            .kernel(&k.key, &k.arch)
            .expect("every written kernel is listed");
        assert_eq!(&*b.payload(got).expect("a written kernel decodes"), &**p);
    }
}
