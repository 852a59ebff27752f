//! `inline_binary` plans the fat binary and makes its bundles only as the output is written,
//! one at a time: the guard against `kpack inline` going back to holding every bundle and the
//! whole output in memory (2.5 GB for Debian's librocsparse, whose output is 1.3 GB).

use gfxkit_kpack::error::ErrorKind;
use gfxkit_kpack::split::{check_inline, inline_binary, inline_error, split_binary, SplitBinary};
use gfxkit_kpack::write::{write_archive, ArchiveMeta, Compression, KernelIn};
use gfxkit_kpack::Archive;

/// A small library from the fuzz regressions that splits and inlines (one wrapper, code
/// objects for two architectures).
fn library() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/regressions/kpack_split/relocation-above-every-segment.bin"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One archive per architecture of what `split` moved out.
fn archives(split: &SplitBinary<'_>, compression: Compression) -> Vec<Vec<u8>> {
    gfxkit_kpack::split::group_by_arch(&split.kernels)
        .into_iter()
        .map(|(arch, kernels)| {
            let ins: Vec<_> = kernels
                .iter()
                .map(|k| KernelIn {
                    key: &k.key,
                    arch: &k.arch,
                    bytes: &k.bytes,
                })
                .collect();
            let meta = ArchiveMeta {
                group_name: "lib".into(),
                arch_family: arch.clone(),
                arches: vec![arch],
            };
            write_archive(&meta, &ins, compression).unwrap()
        })
        .collect()
}

#[test]
fn inline_holds_no_bundle_until_written() {
    let data = library();
    let split = split_binary(&data, "lib", &["lib_@GFXARCH@.kpack".into()]).unwrap();
    for compression in [Compression::None, Compression::default()] {
        let archives = archives(&split, compression);
        let parsed: Vec<Archive<'_>> = archives
            .iter()
            .map(|a| Archive::parse(a).unwrap())
            .collect();
        let refs: Vec<&Archive<'_>> = parsed.iter().collect();
        let inlined = inline_binary(&split.host, &refs).unwrap();
        let written = inlined.output.try_to_vec().unwrap();
        check_inline(&inlined, &written).unwrap();
        // Every bundle is a host entry and, 4096-aligned, its code objects: this much at least
        // is in the output and none of it may be held by the plan, which owns only headers and
        // patched fields.
        let code: u64 = split.kernels.iter().map(|k| k.bytes.len() as u64).sum();
        let bundles = 4096 * split.wrappers as u64 + code;
        assert!(written.len() as u64 >= split.host.len() as u64 + bundles);
        let owned = inlined.output.owned_len();
        assert!(
            owned < bundles,
            "the planned inline holds {owned} bytes, as much as its {bundles} bytes of bundles"
        );
        // Written twice, the same bytes (each bundle is made again).
        assert_eq!(inlined.output.try_to_vec().unwrap(), written);
        let again = split_binary(&written, "lib", &["lib_@GFXARCH@.kpack".into()]).unwrap();
        assert_eq!(again.kernels.len(), split.kernels.len());
    }
}

#[test]
fn a_damaged_code_object_stops_the_write_with_its_error() {
    let data = library();
    let split = split_binary(&data, "lib", &["lib_@GFXARCH@.kpack".into()]).unwrap();
    let mut archives = archives(&split, Compression::None);
    // The first code object of the first archive loses its ELF magic: its size still reads
    // from the TOC, so the inline is planned, and the bundle holding it cannot be made.
    let (at, key) = {
        let a = Archive::parse(&archives[0]).unwrap();
        (
            a.kernels[0].stored_offset as usize,
            a.kernels[0].key.clone(),
        )
    };
    archives[0][at] ^= 0xff;
    let parsed: Vec<Archive<'_>> = archives
        .iter()
        .map(|a| Archive::parse(a).unwrap())
        .collect();
    let refs: Vec<&Archive<'_>> = parsed.iter().collect();
    let inlined = inline_binary(&split.host, &refs).unwrap();
    let e = inlined.output.try_to_vec().unwrap_err();
    let k = inline_error(&e).unwrap_or_else(|| panic!("not the kernel's error: {e}"));
    assert_eq!(k.offset, at as u64, "{k}");
    assert!(matches!(k.kind, ErrorKind::NotCodeObject { .. }), "{k:?}");
    assert!(k.to_string().contains(&key), "{k}");
}
