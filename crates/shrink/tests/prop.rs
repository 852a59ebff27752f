//! Property tests: random keep-sets on generated multi-bundle inputs (standalone bundle
//! regions in every encoding, and relocatable objects built once by clang-19). Invariants:
//! the rewrite verifies, every bundle keeps exactly the entries the selection keeps, in order
//! and byte-identical, in its original encoding; the file does not grow (uncompressed) and
//! llvm-readelf reads rewritten objects cleanly.

use gfxkit_shrink::bundle::{self, Method};
use gfxkit_shrink::{rewrite, survey, verify, Conversion, EntryFilter, Pattern, Transform};
use gfxkit_testkit::{llvm_tool, run_ok};
use proptest::prelude::*;
use std::process::Command;
use std::sync::OnceLock;

const POOL: [&str; 6] = [
    "gfx90a:xnack+",
    "gfx90a:xnack-",
    "gfx1030",
    "gfx906",
    "gfx942:sramecc+",
    "gfx1100",
];

#[derive(Debug, Clone)]
struct GenBundle {
    targets: Vec<usize>,
    sizes: Vec<usize>,
    encoding: u8,
}

fn gen_bundle() -> impl Strategy<Value = GenBundle> {
    (
        proptest::sample::subsequence((0..POOL.len()).collect::<Vec<_>>(), 1..=POOL.len()),
        proptest::collection::vec(0usize..3000, POOL.len()),
        0u8..6,
    )
        .prop_map(|(targets, sizes, encoding)| GenBundle {
            targets,
            sizes,
            encoding,
        })
}

fn payload(seed: usize, len: usize) -> Vec<u8> {
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly small values so compression has something to do.
            (x % 7) as u8
        })
        .collect()
}

fn build_region(bundles: &[GenBundle], align: usize) -> Vec<u8> {
    let mut region = Vec::new();
    for (bi, b) in bundles.iter().enumerate() {
        let payloads: Vec<Vec<u8>> = b
            .targets
            .iter()
            .map(|&t| payload(bi * 31 + t, b.sizes[t]))
            .collect();
        let ids: Vec<String> = b
            .targets
            .iter()
            .map(|&t| format!("hipv4-amdgcn-amd-amdhsa--{}", POOL[t]))
            .collect();
        let mut entries: Vec<(&str, &[u8])> = vec![("host-x86_64-unknown-linux--", &[])];
        for (id, p) in ids.iter().zip(&payloads) {
            entries.push((id, p));
        }
        let plain = bundle::write_uncompressed(&entries, 4096).unwrap();
        let bytes = match b.encoding {
            0 | 1 => plain,
            2 => bundle::compress(&plain, 1, Method::Zstd, 3, 0).unwrap(),
            3 => bundle::compress(&plain, 2, Method::Zstd, 3, 0).unwrap(),
            4 => bundle::compress(&plain, 2, Method::Zlib, 6, 0).unwrap(),
            _ => bundle::compress(&plain, 3, Method::Zstd, 3, 0).unwrap(),
        };
        let at = region.len().div_ceil(align) * align;
        region.resize(at, 0);
        region.extend_from_slice(&bytes);
    }
    region
}

fn selection(keep: &[usize]) -> EntryFilter {
    EntryFilter::Keep(
        keep.iter()
            .map(|&k| Pattern::parse(POOL[k]).unwrap())
            .collect(),
    )
}

/// Checks the invariants of a rewrite of `input` that keeps `keep`.
fn check<'a>(input: &'a [u8], keep: &[usize]) -> gfxkit_shrink::Rewritten<'a> {
    let sel = selection(keep);
    let t = Transform {
        selection: sel.clone(),
        conversion: Conversion::Keep,
        limits: Default::default(),
    };
    let out = rewrite(input, &t).unwrap();
    verify(input, &out, &Default::default()).unwrap();
    let before = survey(input, &Default::default()).unwrap();
    let after = survey(&out.bytes(), &Default::default()).unwrap();
    let old: Vec<_> = before.regions.iter().flat_map(|r| &r.bundles).collect();
    let new: Vec<_> = after.regions.iter().flat_map(|r| &r.bundles).collect();
    assert_eq!(old.len(), new.len());
    for (o, n) in old.iter().zip(&new) {
        // Every pool target carries its features, so a kept entry is one named exactly.
        let expect: Vec<_> = o
            .entries
            .iter()
            .filter(|e| {
                e.id.starts_with("host-")
                    || keep
                        .iter()
                        .any(|&k| e.id.rsplit("--").next() == Some(POOL[k]))
            })
            .collect();
        assert_eq!(expect, n.entries.iter().collect::<Vec<_>>());
        assert_eq!(o.encoding, n.encoding);
        for e in &n.entries {
            let target = e.id.rsplit("--").next().unwrap();
            assert!(
                e.id.starts_with("host-") || keep.iter().any(|&k| POOL[k] == target),
                "{} kept",
                e.id
            );
        }
    }
    if old.iter().all(|b| b.encoding == "uncompressed") {
        assert!(out.output.len() <= input.len() as u64);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn standalone_regions_keep_exactly_the_selection(
        bundles in proptest::collection::vec(gen_bundle(), 1..5),
        align in prop_oneof![Just(1usize), Just(8), Just(4096)],
        keep in proptest::sample::subsequence((0..POOL.len()).collect::<Vec<_>>(), 0..=3),
    ) {
        let region = build_region(&bundles, align);
        check(&region, &keep);
    }
}

struct Objects {
    _dir: tempfile::TempDir,
    plain: Vec<u8>,
    compressed: Vec<u8>,
    /// A shared library linked by lld from both objects.
    shared: Vec<u8>,
    /// An archive of both objects (llvm-ar, with a symbol index).
    archive: Vec<u8>,
}

fn objects() -> &'static Objects {
    static O: OnceLock<Objects> = OnceLock::new();
    O.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let src = format!(
            "typedef struct {{ unsigned x, y, z; }} dim3;\n\
             extern \"C\" int hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long, void *);\n{}",
            gfxkit_testkit::hip_kernels(3)
        );
        let build = |compress: bool, stem: &str| {
            let src_path = dir.path().join(format!("{stem}.hip"));
            // Distinct kernel names per object, so both link into one library.
            let named = src.replace("void k", &format!("void {stem}_k"));
            std::fs::write(
                &src_path,
                format!("#define __global__ __attribute__((global))\n{named}"),
            )
            .unwrap();
            let out = dir.path().join(format!("{stem}.o"));
            let mut cmd = Command::new(llvm_tool("clang++"));
            cmd.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-fPIC", "-c"])
                .arg(format!("-cuid={stem}"));
            for a in POOL {
                cmd.arg(format!("--offload-arch={a}"));
            }
            if compress {
                cmd.arg("--offload-compress");
            }
            cmd.arg(&src_path).arg("-o").arg(&out);
            run_ok(&mut cmd);
            std::fs::read(out).unwrap()
        };
        let plain = build(false, "plain");
        let compressed = build(true, "packed");
        let lib = dir.path().join("lib.so");
        run_ok(
            Command::new(llvm_tool("clang++"))
                .args(["-shared", "-fuse-ld=lld", "-o"])
                .arg(&lib)
                .arg(dir.path().join("plain.o"))
                .arg(dir.path().join("packed.o")),
        );
        let ar = dir.path().join("libboth.a");
        run_ok(
            Command::new(llvm_tool("llvm-ar"))
                .arg("rcs")
                .arg(&ar)
                .arg(dir.path().join("plain.o"))
                .arg(dir.path().join("packed.o")),
        );
        Objects {
            plain,
            compressed,
            shared: std::fs::read(lib).unwrap(),
            archive: std::fs::read(ar).unwrap(),
            _dir: dir,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn objects_keep_exactly_the_selection_and_stay_valid(
        keep in proptest::sample::subsequence((0..POOL.len()).collect::<Vec<_>>(), 0..=4),
        compressed in any::<bool>(),
    ) {
        let o = objects();
        let input = if compressed { &o.compressed } else { &o.plain };
        let out = check(input, &keep);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.o");
        std::fs::write(&p, out.bytes()).unwrap();
        let r = Command::new(llvm_tool("llvm-readelf")).args(["-a", "-W"]).arg(&p).output().unwrap();
        prop_assert!(r.status.success());
        prop_assert!(r.stderr.is_empty(), "{}", String::from_utf8_lossy(&r.stderr));
        if !compressed && keep.len() < POOL.len() - 1 {
            prop_assert!(out.output.len() < input.len() as u64);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Damaged headers, tables and bundles give errors, never panics; whatever is rewritten
    /// still verifies or is reported as failing verification.
    #[test]
    fn damaged_files_are_errors_not_panics(
        which in 0usize..4,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let o = objects();
        let mut data = match which {
            0 => o.plain.clone(),
            1 => o.compressed.clone(),
            2 => o.shared.clone(),
            _ => o.archive.clone(),
        };
        for (at, v, place) in flips {
            // Most damage goes where it matters: the ELF and program headers at the start,
            // the section header table at the end.
            let len = data.len();
            let i = match place {
                0 => at.index(len.min(1024)),
                1 => len - 1 - at.index(len.min(2048)),
                _ => at.index(len),
            };
            data[i] ^= v | 1;
        }
        if let Some(c) = cut {
            let n = c.index(data.len());
            data.truncate(n);
        }
        let t = Transform {
            selection: selection(&[0, 2]),
            conversion: Conversion::Keep,
            limits: Default::default(),
        };
        let _ = survey(&data, &Default::default());
        if let Ok(out) = rewrite(&data, &t) {
            let _ = verify(&data, &out, &Default::default());
        }
        let t = Transform {
            selection: EntryFilter::All,
            conversion: Conversion::Uncompressed,
            limits: Default::default(),
        };
        // The rewrite borrows `data` and may hold bytes made when written, whose drop may
        // use the borrow: it is dropped here, before `data`.
        if let Ok(out) = rewrite(&data, &t) {
            let _ = verify(&data, &out, &Default::default());
        };
    }
}

/// Verification is what stands between a bad rewrite and a replaced input: it must notice
/// a changed payload, a damaged bundle and a wrapper that no longer leads to its bundle.
#[test]
fn verification_catches_damaged_output() {
    let o = objects();
    let t = Transform {
        selection: selection(&[0, 2]),
        conversion: Conversion::Keep,
        limits: Default::default(),
    };
    let out = rewrite(&o.shared, &t).unwrap();
    verify(&o.shared, &out, &Default::default()).unwrap();
    let b = &out.report.regions[0].bundles[1];
    // A byte of the last kept payload (uncompressed bundle: payloads are stored as is).
    let plain = &out.report.regions[0].bundles[0];
    assert_eq!(plain.encoding_after, "uncompressed");
    let bytes = out.bytes();
    let mut bad = out.clone();
    let at = (plain.new_offset + plain.size_after - 1) as usize;
    bad.output.put(at as u64, &[bytes[at] ^ 0x40]).unwrap();
    let e = verify(&o.shared, &bad, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("entries differ"), "{e}");
    // The second bundle's magic.
    let mut bad = out.clone();
    bad.output.put(b.new_offset, b"X").unwrap();
    assert!(verify(&o.shared, &bad, &Default::default()).is_err());
    // The relocation of the wrapper that leads to the second bundle: its addend is the
    // bundle's address, which in this lld layout (first segment at offset 0, address 0)
    // equals its file offset. Find the RELA record by value (r_info 8 = R_X86_64_RELATIVE).
    let addr_new = b.new_offset;
    let needle = addr_new.to_le_bytes();
    let pos = bytes
        .windows(8)
        .enumerate()
        .filter(|(i, w)| *w == needle && i % 8 == 0)
        .map(|(i, _)| i)
        .find(|&i| i >= 16 && u64::from_le_bytes(bytes[i - 8..i].try_into().unwrap()) == 8)
        .expect("R_X86_64_RELATIVE addend of the second wrapper");
    let mut bad = out.clone();
    bad.output
        .put(pos as u64, &(addr_new + 4096).to_le_bytes())
        .unwrap();
    let e = verify(&o.shared, &bad, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("wrapper"), "{e}");
}
