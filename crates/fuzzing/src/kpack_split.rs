//! The body of the `kpack_split` fuzz target: `gfxkit kpack split` and `gfxkit kpack inline`
//! on arbitrary ELF and PE32+ input. The split either refuses or produces a host binary that re-reads
//! as split ([`check_split`]: every wrapper `HIPK`, numbered in order, leading to the marker
//! written); inlining it from archives of the code objects moved out gives a binary that
//! splits again to exactly those code objects.

use gfxkit_kpack::split::{
    check_inline, check_split, group_by_arch, inline_binary, split_binary, split_binary_framed,
    KernelOut,
};
use gfxkit_kpack::write::{
    encode_stored, write_archive, ArchiveMeta, Compression, KernelIn, StoredIn,
};
use gfxkit_kpack::Archive;

/// Why `gfxkit_shrink`'s placement of a new segment refuses (its messages).
const NO_ROOM: &[&str] = &[
    "too many program headers to add one",
    "no loadable segment",
    "segments reach the top of the address space",
    "unaligned address-offset difference",
    "more than 64 MiB of padding",
    // A PE image's .hip_fat keeps its addresses: bundles made again may not fit them.
    "bytes of address space (the addresses after it are fixed)",
];

/// The kernel name every split gets.
const NAME: &str = "fuzz";

/// (key, architecture, code object) of every kernel, in split order.
fn triples<'k>(kernels: &'k [KernelOut<'_>]) -> Vec<(&'k str, &'k str, &'k [u8])> {
    kernels
        .iter()
        .map(|k| (k.key.as_str(), k.arch.as_str(), &*k.bytes))
        .collect()
}

/// The archives of `kernels` (one per architecture, as `kpack split` groups them) written
/// with zstd at `level`, each kernel as the split holds it (plain, or as its frame).
fn zstd_archives(kernels: &[KernelOut<'_>], level: i32) -> Vec<Result<Vec<u8>, String>> {
    group_by_arch(kernels)
        .into_iter()
        .map(|(arch, ks)| {
            let meta = ArchiveMeta {
                group_name: NAME.to_owned(),
                arch_family: arch.clone(),
                arches: vec![arch],
            };
            let ins: Vec<StoredIn<'_>> = ks
                .iter()
                .map(|k| StoredIn {
                    key: &k.key,
                    arch: &k.arch,
                    stored: k.stored(),
                })
                .collect();
            encode_stored(&meta, &ins, Compression::Zstd { level })
                .map(|e| e.to_vec())
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// A split that holds the code objects of compressed bundles as zstd frames
/// (`split_binary_framed`, what `kpack split` does for zstd archives) is the plain split:
/// the same outcome, host binary and kernels, each framed one decoding to the plain code
/// object, and the same archives.
fn framed_is_plain(data: &[u8], search: &[String]) {
    const LEVEL: i32 = 1;
    let plain = split_binary(data, NAME, search);
    let framed = split_binary_framed(data, NAME, search, &Default::default(), LEVEL);
    let (plain, framed) = match (plain, framed) {
        (Ok(p), Ok(f)) => (p, f),
        (Err(p), Err(f)) => {
            assert_eq!(
                p.to_string(),
                f.to_string(),
                "the framed split fails otherwise"
            );
            return;
        }
        (p, f) => panic!(
            "one split fails and not the other: {:?} / {:?}",
            p.err(),
            f.err()
        ),
    };
    assert!(
        plain.host == framed.host,
        "the framed split's host binary differs"
    );
    assert_eq!(plain.kernels.len(), framed.kernels.len());
    for (p, f) in plain.kernels.iter().zip(&framed.kernels) {
        assert_eq!((&p.key, &p.arch), (&f.key, &f.arch));
        match f.compressed {
            None => assert!(
                p.bytes == f.bytes,
                "{} ({}): plain bytes differ",
                p.key,
                p.arch
            ),
            Some(c) => {
                assert_eq!(c.level, LEVEL);
                assert_eq!(c.size, p.bytes.len() as u64, "{} ({})", p.key, p.arch);
                let back = zstd::bulk::decompress(&f.bytes, p.bytes.len()).unwrap_or_else(|e| {
                    panic!("{} ({}): a frame that does not decode: {e}", p.key, p.arch)
                });
                assert!(
                    back == *p.bytes,
                    "{} ({}): the frame decodes to other bytes",
                    p.key,
                    p.arch
                );
            }
        }
    }
    assert!(
        zstd_archives(&plain.kernels, LEVEL) == zstd_archives(&framed.kernels, LEVEL),
        "archives of framed kernels differ from those of plain ones"
    );
}

/// Splits `data`; what splits must re-read as split and survive an inline and a second split.
pub fn run(data: &[u8]) {
    let search = ["fuzz_@GFXARCH@.kpack".to_owned()];
    framed_is_plain(data, &search);
    let Ok(split) = split_binary(data, NAME, &search) else {
        return;
    };
    if let Err(e) = check_split(&split) {
        panic!("a split that does not read back: {e}");
    }
    if gfxkit_host::InputKind::sniff(data) == gfxkit_host::InputKind::PeImage {
        pe_layout_kept(data, &split.host);
    }

    // Archives of what moved out, one per architecture, as `kpack split` writes them.
    let mut archives = Vec::new();
    for (arch, kernels) in group_by_arch(&split.kernels) {
        let meta = ArchiveMeta {
            group_name: NAME.to_owned(),
            arch_family: arch.clone(),
            arches: vec![arch.clone()],
        };
        let ins: Vec<KernelIn<'_>> = kernels
            .iter()
            .map(|k| KernelIn {
                key: &k.key,
                arch: &k.arch,
                bytes: &k.bytes,
            })
            .collect();
        let Ok(bytes) = write_archive(&meta, &ins, Compression::None) else {
            // Limits of the archive writer (sizes, counts) may refuse what a split moved out.
            return;
        };
        archives.push(bytes);
    }
    let parsed: Vec<Archive<'_>> = archives
        .iter()
        .map(|b| Archive::parse(b).expect("a written archive reads back"))
        .collect();
    let refs: Vec<&Archive<'_>> = parsed.iter().collect();
    let every_wrapper_has_code =
        (0..split.wrappers).all(|n| split.kernels.iter().any(|k| k.key == format!("{NAME}#{n}")));
    let inlined = match inline_binary(&split.host, &refs) {
        Ok(i) => i,
        // A wrapper whose bundle held no device code has nothing to inline.
        Err(_) if !every_wrapper_has_code => return,
        // The inline needs a new segment after the last one, which some layouts (addresses near
        // the top, tables too full to grow) have no room for; the split needs none.
        Err(e) if NO_ROOM.iter().any(|m| e.to_string().contains(m)) => return,
        Err(e) => panic!("a split binary does not inline from its own archives: {e}"),
    };
    // Every code object the split moved out reads, for its architecture (the split refuses
    // any other), so the inline writes.
    let bytes = match inlined.output.try_to_vec() {
        Ok(b) => b,
        Err(e) => panic!("an inline that cannot be written: {e}"),
    };
    if let Err(e) = check_inline(&inlined, &bytes) {
        panic!("an inline that does not read back: {e}");
    }
    let again = split_binary(&bytes, NAME, &search)
        .unwrap_or_else(|e| panic!("an inlined binary does not split again: {e}"));
    assert_eq!(
        again.wrappers, split.wrappers,
        "wrappers after inline and split"
    );
    let mut before = triples(&split.kernels);
    let mut after = triples(&again.kernels);
    before.sort_unstable();
    after.sort_unstable();
    assert!(
        before == after,
        "inline then split does not give back the code objects split out"
    );
}

/// A PE image split keeps every section's name and addresses and the file header's fields,
/// adds `.kpackrf` last (counted in `NumberOfSections`), and has a right `CheckSum` (zero when
/// it was zero).
fn pe_layout_kept(input: &[u8], host: &[u8]) {
    use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
    use object::LittleEndian as LE;
    let sections = |f: &PeFile64<'_>| -> Vec<([u8; 8], u32, u32)> {
        f.section_table()
            .iter()
            .map(|s| (s.name, s.virtual_address.get(LE), s.virtual_size.get(LE)))
            .collect()
    };
    let before = PeFile64::parse(input).expect("a split image's input parses");
    let after = PeFile64::parse(host).expect("a split image parses");
    let (old, mut new) = (sections(&before), sections(&after));
    let marker = new.pop().expect("the marker section");
    assert_eq!(&marker.0, b".kpackrf");
    assert_eq!(old, new, "sections keep their names and addresses");
    let header = |f: &PeFile64<'_>| {
        let h = f.nt_headers().file_header();
        (
            h.machine.get(LE),
            h.time_date_stamp.get(LE),
            h.size_of_optional_header.get(LE),
            h.characteristics.get(LE),
        )
    };
    assert_eq!(
        header(&before),
        header(&after),
        "the file header keeps its fields"
    );
    assert_eq!(
        usize::from(after.nt_headers().file_header().number_of_sections.get(LE)),
        old.len() + 1
    );
    let opt = after.nt_headers().optional_header();
    if before.nt_headers().optional_header().check_sum() == 0 {
        assert_eq!(opt.check_sum(), 0, "a zero CheckSum stays zero");
    } else {
        let field = gfxkit_bytes::offset_within(host, object::pod::bytes_of(opt))
            .expect("the optional header lies in the file") as usize
            + 64;
        assert_eq!(opt.check_sum(), gfxkit_shrink::pe::checksum(host, field));
    }
}
