//! Damaged DLLs through `kpack split` and damaged split DLLs through `kpack inline`: the
//! `kpack_split` fuzz body on truncated and bit-flipped copies of a fat DLL (clang-19 and
//! lld-link-19), and the inline of truncated and bit-flipped copies of its split, from its own
//! archives: refused or read back, never a panic.

use gfxkit_kpack::split::{check_inline, check_split, group_by_arch, inline_binary, split_binary};
use gfxkit_kpack::write::{write_archive, ArchiveMeta, Compression, KernelIn};
use gfxkit_kpack::Archive;
use gfxkit_testkit::windows::{lld_link, Tu};

#[test]
fn damaged_dlls_split_and_inline_without_panics() {
    let dir = tempfile::tempdir().unwrap();
    let tus = [
        Tu {
            stem: "a",
            source: "extern \"C\" __global__ void a_k(int *p) { p[0] = 1; }\n",
            archs: &["gfx90a", "gfx1100"],
            compress: false,
        },
        Tu {
            stem: "b",
            source: "extern \"C\" __global__ void b_k(int *p) { p[0] = 2; }\n",
            archs: &["gfx942"],
            compress: true,
        },
    ];
    let objs: Vec<_> = tus.iter().map(|t| t.windows_object(dir.path())).collect();
    let dll = std::fs::read(lld_link(dir.path(), "d.dll", &objs, None)).unwrap();
    let flips = |data: &[u8], f: &mut dyn FnMut(&[u8])| {
        for cut in (0..data.len()).step_by(data.len() / 97) {
            f(&data[..cut]);
        }
        let mut d = data.to_vec();
        let head = 0x400.min(d.len());
        let spots = (0..head)
            .step_by(2)
            .chain((head..d.len()).step_by(d.len() / 83));
        for at in spots {
            let bit = at % 8;
            d[at] ^= 1 << bit;
            f(&d);
            d[at] ^= 1 << bit;
        }
    };
    flips(&dll, &mut |d| gfxkit_fuzzing::kpack_split::run(d));

    let search = ["d_@GFXARCH@.kpack".to_owned()];
    let split = split_binary(&dll, "d", &search).unwrap();
    check_split(&split).unwrap();
    let mut archives = Vec::new();
    for (arch, kernels) in group_by_arch(&split.kernels) {
        let meta = ArchiveMeta {
            group_name: "d".into(),
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
        archives.push(write_archive(&meta, &ins, Compression::None).unwrap());
    }
    let parsed: Vec<Archive<'_>> = archives
        .iter()
        .map(|b| Archive::parse(b).unwrap())
        .collect();
    let refs: Vec<&Archive<'_>> = parsed.iter().collect();
    let whole = inline_binary(&split.host, &refs).unwrap();
    check_inline(&whole, &whole.output.to_vec()).unwrap();
    let mut inlined = 0;
    flips(&split.host, &mut |d| {
        if let Ok(i) = inline_binary(d, &refs) {
            inlined += 1;
            let bytes = i.output.to_vec();
            if let Err(e) = check_inline(&i, &bytes) {
                panic!("an inline of a damaged split DLL that does not read back: {e}");
            }
        }
    });
    assert!(inlined > 0, "no damaged copy inlined at all");
}
