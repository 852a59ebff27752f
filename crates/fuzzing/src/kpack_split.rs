//! The body of the `kpack_split` fuzz target: `gfxkit kpack split` and `gfxkit kpack inline`
//! on arbitrary ELF input. The split either refuses or produces a host binary that re-reads
//! as split ([`check_split`]: every wrapper `HIPK`, numbered in order, leading to the marker
//! written); inlining it from archives of the code objects moved out gives a binary that
//! splits again to exactly those code objects.

use gfxkit_kpack::split::{
    check_inline, check_split, group_by_arch, inline_binary, split_binary, KernelOut,
};
use gfxkit_kpack::write::{write_archive, ArchiveMeta, Compression, KernelIn};
use gfxkit_kpack::Archive;

/// Why `gfxkit_shrink`'s placement of a new segment refuses (its messages).
const NO_ROOM: &[&str] = &[
    "too many program headers to add one",
    "no loadable segment",
    "segments reach the top of the address space",
    "unaligned address-offset difference",
    "more than 64 MiB of padding",
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

/// Splits `data`; what splits must re-read as split and survive an inline and a second split.
pub fn run(data: &[u8]) {
    let search = ["fuzz_@GFXARCH@.kpack".to_owned()];
    let Ok(split) = split_binary(data, NAME, &search) else {
        return;
    };
    if let Err(e) = check_split(&split) {
        panic!("a split that does not read back: {e}");
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
    let bytes = match inlined.output.try_to_vec() {
        Ok(b) => b,
        // The inline reads each code object as `inspect` does when it makes the bundles; a
        // payload the split moved out as it was that is no readable code object is refused
        // there, as it should be.
        Err(_)
            if split
                .kernels
                .iter()
                .any(|k| gfxkit_code_object::CodeObject::parse(&k.bytes).is_err()) =>
        {
            return
        }
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
