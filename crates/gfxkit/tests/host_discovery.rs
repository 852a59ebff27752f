//! Discovery of device code in host binaries built by clang-19, checked against what
//! clang-offload-bundler-19 lists and unbundles from the dumped sections.

mod host_fixtures;

use gfxkit_bundle::compressed::DecompressOptions;
use gfxkit_bundle::AnyBundle;
use gfxkit_host::{
    discover, BundleFormat, CompressionMethod, Discovery, Form, InputKind, ProblemKind, Unit,
    WrapperMagic, WrapperTarget,
};
use gfxkit_testkit::{llvm_tool, run_ok};
use host_fixtures::{section, Fixture};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(host_fixtures::build)
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Entry IDs of a bundle file as clang-offload-bundler-19 lists them (hash order: sorted here).
fn clang_list(bundle: &Path) -> BTreeSet<String> {
    gfxkit_testkit::bundler_list(bundle).into_iter().collect()
}

use gfxkit_testkit::bundler_unbundle as clang_unbundle;

/// The offload bundles `found` holds, as units, in the order wrapper records name them.
fn bundles<'a>(found: &Discovery<'a>) -> Vec<Unit<'a>> {
    (0..found.bundle_count())
        .map(|i| found.bundle_unit(i).unwrap().unwrap())
        .collect()
}

/// The units of form `form` that `found` holds.
fn units_of<'a>(found: &Discovery<'a>, form: Form) -> Vec<Unit<'a>> {
    let all = found.units().units;
    all.into_iter().filter(|u| u.form == form).collect()
}

/// Checks every bundle gfxkit found in `file` against the dumped `.hip_fatbin` and clang's
/// listing and unbundling of each bundle on its own. Returns the number of bundles.
fn check_against_clang(file: &Path, tag: &str) -> usize {
    let data = read(file);
    let found = discover(&data);
    let dir = fixture().dir.path().join(format!("check-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let dumped = dir.join("fatbin.bin");
    let fatbin = gfxkit_testkit::dump_section(file, ".hip_fatbin", &dumped);
    let sec = section(&data, ".hip_fatbin");
    let mut covered = 0usize;
    for (i, b) in bundles(&found).iter().enumerate() {
        assert_eq!(b.section.as_deref(), Some(".hip_fatbin"));
        let at = (b.offset - sec.offset) as usize;
        assert_eq!(&fatbin[at..at + b.bytes.len()], b.bytes, "bundle {i} bytes");
        assert!(
            fatbin[covered..at].iter().all(|&x| x == 0),
            "gap before bundle {i} is padding"
        );
        covered = at + b.bytes.len();
        let path = dir.join(format!("b{i}.bin"));
        std::fs::write(&path, b.bytes).unwrap();
        let any = AnyBundle::parse(b.bytes, &DecompressOptions::default()).unwrap();
        let bundle = any.bundle().unwrap();
        let ours: BTreeSet<String> = bundle.entries().iter().map(|e| e.id.to_owned()).collect();
        assert_eq!(ours, clang_list(&path), "bundle {i} entry IDs");
        // The header-only reader agrees with the full reader, in header order.
        let header: Vec<String> =
            gfxkit_host::entries::header_entries(b.format().unwrap(), b.bytes, &Default::default())
                .unwrap()
                .into_iter()
                .map(|h| h.header.id)
                .collect();
        let full: Vec<String> = bundle.entries().iter().map(|e| e.id.to_owned()).collect();
        assert_eq!(header, full);
        for e in bundle.entries() {
            if e.id.starts_with("host-") {
                continue;
            }
            let theirs = clang_unbundle(&path, e.id, &dir.join(format!("b{i}-{}.co", e.index)));
            assert_eq!(e.payload, &theirs[..], "bundle {i} entry {}", e.id);
        }
    }
    assert!(
        fatbin[covered..].iter().all(|&x| x == 0),
        "tail of the section is padding"
    );
    // The bundle library delimits the dumped section the same way.
    let spans: Vec<(u64, u64)> = gfxkit_bundle::scan_concatenated(&fatbin, &Default::default())
        .unwrap()
        .iter()
        .map(|s| (s.offset, s.len))
        .collect();
    let ours: Vec<(u64, u64)> = bundles(&found)
        .iter()
        .map(|b| (b.offset - sec.offset, b.bytes.len() as u64))
        .collect();
    assert_eq!(ours, spans);
    found.bundle_count()
}

fn expected_formats() -> Vec<BundleFormat> {
    host_fixtures::TUS
        .iter()
        .map(|t| {
            if t.compress {
                BundleFormat::Compressed {
                    version: 2,
                    method: CompressionMethod::ZSTD,
                }
            } else {
                BundleFormat::Uncompressed
            }
        })
        .collect()
}

fn assert_wrappers_tie_every_bundle(found: &gfxkit_host::Discovery<'_>) {
    assert_eq!(found.wrappers.len(), found.bundle_count());
    let mut targets = BTreeSet::new();
    for w in &found.wrappers {
        assert_eq!(w.magic, WrapperMagic::Hipf);
        assert_eq!(w.version, 1);
        match &w.target {
            WrapperTarget::Bundle { index } => assert!(targets.insert(*index)),
            other => panic!("wrapper at {} points to {other:?}", w.location),
        }
    }
    for i in 0..found.bundle_count() {
        assert!(found.is_wrapped(i), "bundle {i}");
    }
}

#[test]
fn shared_object_every_bundle_matches_clang() {
    let f = fixture();
    let data = read(&f.shared);
    let found = discover(&data);
    assert_eq!(found.kind, InputKind::ElfSharedObject);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let formats: Vec<BundleFormat> = bundles(&found)
        .iter()
        .map(|b| b.format().unwrap())
        .collect();
    assert_eq!(formats, expected_formats());
    assert_wrappers_tie_every_bundle(&found);
    assert_eq!(
        check_against_clang(&f.shared, "so"),
        host_fixtures::TUS.len()
    );
}

#[test]
fn executables_pie_and_non_pie() {
    let f = fixture();
    for (path, kind) in [
        (&f.exe, InputKind::ElfExecutable),
        (&f.pie, InputKind::ElfSharedObject),
    ] {
        let data = read(path);
        let found = discover(&data);
        assert_eq!(found.kind, kind, "{}", path.display());
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        assert_eq!(found.bundle_count(), host_fixtures::TUS.len());
        assert_wrappers_tie_every_bundle(&found);
    }
    assert_eq!(check_against_clang(&f.exe, "exe"), host_fixtures::TUS.len());

    // Packed relative relocations (RELR): the addend stays in the wrapper's pointer slot.
    let mut objs = f.objects.clone();
    objs.push(f.dir.path().join("stub.o"));
    let relr = host_fixtures::link(
        f.dir.path(),
        "librelr.so",
        &["-shared", "-Wl,-z,pack-relative-relocs"],
        &objs,
    );
    let data = read(&relr);
    assert!(host_fixtures::sections(&data)
        .iter()
        .any(|s| s.name == ".relr.dyn"));
    let found = discover(&data);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(found.bundle_count(), host_fixtures::TUS.len());
    assert_wrappers_tie_every_bundle(&found);
}

#[test]
fn relocatable_objects_resolve_wrappers_through_symbols() {
    let f = fixture();
    for (obj, tu) in f.objects.iter().zip(host_fixtures::TUS) {
        let data = read(obj);
        let found = discover(&data);
        assert_eq!(found.kind, InputKind::ElfRelocatable);
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        assert_eq!(found.bundle_count(), 1);
        assert_wrappers_tie_every_bundle(&found);
        let ids = gfxkit_host::entries::entry_ids(
            bundles(&found)[0].format().unwrap(),
            bundles(&found)[0].bytes,
            &Default::default(),
        )
        .unwrap();
        let targets: BTreeSet<String> = ids
            .iter()
            .filter(|e| !e.is_host())
            .map(|e| e.target().to_string())
            .collect();
        let want: BTreeSet<String> = tu
            .archs
            .iter()
            .map(|a| gfxkit_target_id::TargetId::parse(a).unwrap().to_string())
            .collect();
        assert_eq!(targets, want);
    }
}

#[test]
fn archive_members_are_searched() {
    let f = fixture();
    let data = read(&f.archive);
    let found = discover(&data);
    assert_eq!(found.kind, InputKind::Archive);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let members: Vec<Option<String>> = bundles(&found).into_iter().map(|b| b.member).collect();
    assert_eq!(members, [Some("t0.o".into()), Some("t1.o".into())]);
    assert_wrappers_tie_every_bundle(&found);
    // An archive inside an archive: member paths name both levels.
    let outer = f.dir.path().join("outer.a");
    run_ok(
        Command::new(llvm_tool("llvm-ar"))
            .arg("rcs")
            .arg(&outer)
            .arg(&f.archive)
            .arg(&f.objects[2]),
    );
    let outer_data = read(&outer);
    let nested = discover(&outer_data);
    assert!(nested.problems.is_empty(), "{:?}", nested.problems);
    let members: Vec<Option<String>> = bundles(&nested).into_iter().map(|b| b.member).collect();
    assert_eq!(
        members,
        [
            Some("libt.a/t0.o".into()),
            Some("libt.a/t1.o".into()),
            Some("t2.o".into())
        ]
    );
    assert_wrappers_tie_every_bundle(&nested);
    // Each member's bundle equals the one found in the object file itself.
    for (b, obj) in bundles(&found).iter().zip(&f.objects) {
        let o = read(obj);
        let alone = discover(&o);
        assert_eq!(b.bytes, bundles(&alone)[0].bytes);
        assert_eq!(&data[b.offset as usize..][..b.bytes.len()], b.bytes);
    }
}

#[test]
fn new_driver_object_offloading_images() {
    let f = fixture();
    let d = f.dir.path();
    let obj = host_fixtures::new_driver_object(d, "nd", 2, &["gfx90a:xnack+", "gfx1030"], &[]);
    let data = read(&obj);
    let found = discover(&data);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let images = units_of(&found, Form::OffloadImage);
    assert_eq!(images.len(), 2);
    // An image's entry ID is made from its offload kind, triple and arch.
    let ids: BTreeSet<&str> = images.iter().map(|i| i.loose[0].id.as_str()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx1030"
        ])
    );
    for img in &images {
        assert_eq!(img.section.as_deref(), Some(".llvm.offloading"));
        // Bitcode: the new driver embeds `-fgpu-rdc` device code unlinked.
        assert_eq!((img.loose[0].offset, img.loose[0].ext), (0, "bc"));
        let arch = img.loose[0].id.split_once("--").unwrap().1;
        let out = d.join(format!("nd-{}.img", arch.replace(':', "_")));
        run_ok(
            Command::new(llvm_tool("clang-offload-packager"))
                .arg(&obj)
                .arg(format!("--image=file={},arch={arch}", out.display())),
        );
        assert_eq!(img.bytes, &read(&out)[..], "image for {arch}");
    }

    // Linked by the new driver: one bundle in `.hip_fatbin` (16-byte aligned), tied to its
    // wrapper, listing what clang lists.
    let stub = d.join("stub.o");
    let so = host_fixtures::link(
        d,
        "libnd.so",
        &[
            "--offload-new-driver",
            "-fgpu-rdc",
            "--offload-arch=gfx90a:xnack+",
            "--offload-arch=gfx1030",
            "-shared",
        ],
        &[obj.clone(), stub],
    );
    let data = read(&so);
    let found = discover(&data);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(found.bundle_count(), 1);
    assert_wrappers_tie_every_bundle(&found);
    assert_eq!(check_against_clang(&so, "nd"), 1);
    let ids = gfxkit_host::entries::entry_ids(
        bundles(&found)[0].format().unwrap(),
        bundles(&found)[0].bytes,
        &Default::default(),
    )
    .unwrap();
    let targets: BTreeSet<String> = ids
        .iter()
        .filter(|e| !e.is_host())
        .map(|e| e.target().to_string())
        .collect();
    assert_eq!(
        targets,
        BTreeSet::from(["gfx90a:xnack+".to_owned(), "gfx1030".to_owned()])
    );
}

// ---- Damaged inputs: typed problems with locations, never a panic. ----

fn set_u64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

use host_fixtures::wrapper_rela;

#[test]
fn wrapper_pointing_outside_or_inside_a_bundle() {
    let data = read(&fixture().shared);
    let found = discover(&data);
    let b1 = &bundles(&found)[1];
    let fatbin = section(&data, ".hip_fatbin");

    let mut outside = data.clone();
    let r = wrapper_rela(&outside, 0);
    set_u64(&mut outside, r + 16, 0x7fff_0000_0000);
    let got = discover(&outside);
    assert!(
        got.problems.iter().any(|p| matches!(
            p.kind,
            ProblemKind::WrapperPointsOutside {
                address: 0x7fff_0000_0000
            }
        ) && p.location.section.as_deref()
            == Some(".hipFatBinSegment")),
        "{:?}",
        got.problems
    );
    assert!(got
        .problems
        .iter()
        .any(|p| p.kind == ProblemKind::BundleWithoutWrapper));

    let mut inside = data.clone();
    let r = wrapper_rela(&inside, 1);
    let addr = fatbin.addr + (b1.offset - fatbin.offset) + 16;
    set_u64(&mut inside, r + 16, addr);
    let got = discover(&inside);
    let p = got
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::WrapperMissesBundle { .. }))
        .expect("misses bundle");
    assert_eq!(
        p.location.offset,
        section(&data, ".hipFatBinSegment").offset + 24
    );
    assert!(p.to_string().contains("where no bundle starts"), "{p}");

    // HIPK: the pointer leads to metadata, not necessarily a bundle; no problem is reported.
    let seg = section(&data, ".hipFatBinSegment");
    let mut hipk = inside.clone();
    hipk[(seg.offset + 24) as usize..][..4].copy_from_slice(&WrapperMagic::HIPK.to_le_bytes());
    let got = discover(&hipk);
    assert_eq!(got.wrappers[1].magic, WrapperMagic::Hipk);
    assert!(matches!(
        got.wrappers[1].target,
        WrapperTarget::Address {
            file_offset: Some(_),
            ..
        }
    ));
    assert!(!got
        .problems
        .iter()
        .any(|p| matches!(p.kind, ProblemKind::WrapperMissesBundle { .. })));

    // HIPK pointing to kpack metadata (MessagePack), placed in an allocated section.
    let mut kp = data.clone();
    let frame = section(&data, ".eh_frame");
    let msg = host_fixtures::kpack_metadata("../.kpack/rocm-gfx1100.kpack");
    assert!(msg.len() as u64 <= frame.size);
    kp[frame.offset as usize..][..msg.len()].copy_from_slice(&msg);
    kp[(seg.offset + 24) as usize..][..4].copy_from_slice(&WrapperMagic::HIPK.to_le_bytes());
    let r = wrapper_rela(&kp, 1);
    set_u64(&mut kp, r + 16, frame.addr);
    let got = discover(&kp);
    let k = got.wrappers[1].kpack.as_ref().expect("kpack metadata");
    assert_eq!(k.kernel_name.as_deref(), Some("lib/libt.so"));
    assert_eq!(k.search_paths, ["../.kpack/rocm-gfx1100.kpack"]);
    // Garbage where the metadata should be: a warning naming the wrapper.
    kp[frame.offset as usize] = 0xc1; // never used in MessagePack
    let got = discover(&kp);
    assert!(got.wrappers[1].kpack.is_none());
    let p = got
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::BadKpackMetadata(_)))
        .expect("bad kpack metadata");
    assert_eq!(p.location.offset, seg.offset + 24);

    let mut magic = data.clone();
    let seg = section(&data, ".hipFatBinSegment");
    magic[seg.offset as usize..][..4].copy_from_slice(b"XXXX");
    let got = discover(&magic);
    assert!(got
        .problems
        .iter()
        .any(|p| matches!(p.kind, ProblemKind::WrapperMagic { .. })));
}

#[test]
fn truncated_sections_and_bad_ccob_sizes() {
    let data = read(&fixture().shared);
    let found = discover(&data);
    let fatbin = section(&data, ".hip_fatbin");

    // The section claims fewer bytes than its last bundle needs.
    let mut short = data.clone();
    let last = bundles(&found).last().cloned().unwrap();
    let new_size = last.offset - fatbin.offset + last.bytes.len() as u64 - 10;
    set_u64(&mut short, fatbin.header_at + 0x20, new_size);
    let got = discover(&short);
    assert_eq!(got.bundle_count(), found.bundle_count() - 1);
    let p = got
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::BundlePastSection { excess: 10, .. }))
        .unwrap_or_else(|| panic!("{:?}", got.problems));
    assert_eq!(p.location.offset, last.offset);

    // Section offsets and sizes near the top of the u64 range.
    for (off, size) in [(u64::MAX - 7, 16u64), (16, u64::MAX), (u64::MAX, u64::MAX)] {
        let mut huge = data.clone();
        set_u64(&mut huge, fatbin.header_at + 0x18, off);
        set_u64(&mut huge, fatbin.header_at + 0x20, size);
        let got = discover(&huge);
        assert!(
            got.problems
                .iter()
                .any(|p| matches!(p.kind, ProblemKind::SectionOutsideFile { offset: o, size: s, .. } if (o, s) == (off, size))
                    && p.location.section.as_deref() == Some(".hip_fatbin")
                    && p.location.offset < huge.len() as u64),
            "{:?}",
            got.problems
        );
    }

    // The file ends inside `.hip_fatbin`.
    let cut = &data[..(fatbin.offset + fatbin.size / 2) as usize];
    let got = discover(cut);
    assert!(
        got.problems.iter().any(|p| matches!(
            p.kind,
            ProblemKind::SectionOutsideFile { .. }
                | ProblemKind::MalformedElf(_)
                | ProblemKind::TruncatedElf(_)
        )),
        "{:?}",
        got.problems
    );

    // A CCOB v2 total size far past the section; then one smaller than its header.
    let ccob = &bundles(&found)[1];
    assert!(matches!(
        ccob.format(),
        Some(BundleFormat::Compressed { version: 2, .. })
    ));
    let at = ccob.offset as usize + 8;
    let mut big = data.clone();
    big[at..at + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let got = discover(&big);
    assert!(
        got.problems.iter().any(|p| matches!(
            p.kind,
            ProblemKind::BundlePastSection {
                size: 0x7fff_ffff,
                ..
            }
        ) && p.location.offset == ccob.offset),
        "{:?}",
        got.problems
    );
    let mut small = data.clone();
    small[at..at + 4].copy_from_slice(&5u32.to_le_bytes());
    let got = discover(&small);
    let p = got
        .problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::BadBundle(_)))
        .expect("bad bundle");
    // The bundle crate's reason: the declared total and the 24-byte v2 header.
    let msg = p.to_string();
    assert!(
        msg.contains("total size 5 ") && msg.contains("header 24 bytes"),
        "{p}"
    );

    // A wrong hash is not visible to discovery (nothing is decompressed) but decompressing
    // the found bundle reports it.
    let mut hash = data.clone();
    hash[ccob.offset as usize + 16] ^= 0xff;
    let got = discover(&hash);
    assert!(got.problems.is_empty());
    let err = AnyBundle::parse(bundles(&got)[1].bytes, &DecompressOptions::default()).unwrap_err();
    assert!(err.to_string().to_lowercase().contains("hash"), "{err}");
}

#[test]
fn bit_flips_in_headers_and_sections_never_panic() {
    let data = read(&fixture().shared);
    let mut spots: Vec<usize> = (0..0x40).collect();
    let shoff = host_fixtures::u64le(&data, 0x28) as usize;
    spots.extend(shoff..data.len());
    for name in [".hipFatBinSegment", ".rela.dyn"] {
        let s = section(&data, name);
        spots.extend(s.offset as usize..(s.offset + s.size) as usize);
    }
    for b in &bundles(&discover(&data)) {
        let o = b.offset as usize;
        spots.extend(o..o + 64);
    }
    for &i in &spots {
        for bit in [0x01u8, 0x80] {
            let mut d = data.clone();
            d[i] ^= bit;
            let got = discover(&d);
            for p in &got.problems {
                let _ = p.to_string();
            }
        }
    }
    // Every prefix of the ELF header and section table region.
    for n in (0..data.len()).step_by(97) {
        let _ = discover(&data[..n]);
    }
}

#[test]
fn rdc_object_bundle_sections_and_external_wrapper() {
    let f = fixture();
    let d = f.dir.path();
    let src = d.join("rdc.hip");
    std::fs::write(&src, host_fixtures::kernels("rdc", 2)).unwrap();
    let obj = d.join("rdc.o");
    run_ok(
        Command::new(llvm_tool("clang++"))
            .args(["-x", "hip", "-fgpu-rdc", "-nogpulib", "-nogpuinc", "-fPIC"])
            .args(["--offload-arch=gfx906", "--offload-arch=gfx1030", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    let data = read(&obj);
    let found = discover(&data);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(found.bundle_count(), 0);
    let objects = units_of(&found, Form::ObjectBundle);
    assert_eq!(objects.len(), 1);
    let entries = &objects[0].loose;
    let ours: BTreeSet<String> = entries.iter().map(|e| e.id.to_owned()).collect();
    assert_eq!(ours, clang_list(&obj));
    for e in entries {
        let at = (objects[0].offset + e.offset) as usize;
        assert_eq!(&data[at..][..e.payload.len()], e.payload);
        if e.id.starts_with("host-") {
            continue;
        }
        let theirs = clang_unbundle(&obj, &e.id, &d.join(format!("rdc-{}.co", e.id.len())));
        assert_eq!(e.payload, &theirs[..], "{}", e.id);
    }
    // The wrapper points to `__hip_fatbin`, defined only when the device code is linked.
    assert_eq!(found.wrappers.len(), 1);
    match &found.wrappers[0].target {
        WrapperTarget::External { symbol } => {
            assert!(symbol.starts_with("__hip_fatbin"), "{symbol}")
        }
        other => panic!("{other:?}"),
    }
    let units = gfxkit_host::entries::load_views(&found.units().units);
    assert_eq!(units.len(), 1);
    assert_eq!(units[0].entries.as_ref().unwrap().len(), 3);
}

#[test]
fn bit_flips_in_archives_and_offloading_sections_never_panic() {
    let f = fixture();
    let archive = read(&f.archive);
    let baseline = discover(&archive).bundle_count();
    assert_eq!(baseline, 2);
    for i in (0..archive.len()).step_by(5) {
        let mut d = archive.clone();
        d[i] ^= 0x41;
        let got = discover(&d);
        assert!(got.bundle_count() <= baseline + 1, "flip at {i}");
        for p in &got.problems {
            let _ = p.to_string();
        }
    }
    // The `.llvm.offloading` section of a new-driver object.
    let d = f.dir.path();
    let obj = host_fixtures::new_driver_object(d, "flip", 1, &["gfx906"], &[]);
    let data = read(&obj);
    let sec = section(&data, ".llvm.offloading");
    for i in sec.offset as usize..(sec.offset as usize + 256).min(data.len()) {
        for bit in [0x01u8, 0x10, 0x80] {
            let mut c = data.clone();
            c[i] ^= bit;
            let got = discover(&c);
            if units_of(&got, Form::OffloadImage).is_empty() {
                assert!(
                    got.problems
                        .iter()
                        .any(|p| matches!(p.kind, ProblemKind::BadOffloadBinary(_))),
                    "flip at {i}: no image and no problem"
                );
            }
        }
    }
}

#[test]
fn rocm7_style_section_of_ccob_v3_bundles_back_to_back() {
    use gfxkit_bundle::codec::Method;
    use gfxkit_bundle::compressed::{compress, CompressOptions};
    // Three of the fixture's bundles, uncompressed, then recompressed as v3 (zstd and zlib)
    // and v2, laid out at 4096-byte offsets like a ROCm 7 `.hip_fatbin`.
    let data = read(&fixture().shared);
    let found = discover(&data);
    let plain: Vec<Vec<u8>> = bundles(&found)
        .iter()
        .map(|b| {
            AnyBundle::parse(b.bytes, &DecompressOptions::default())
                .unwrap()
                .uncompressed()
                .to_vec()
        })
        .collect();
    let opts = |method, version| CompressOptions {
        method,
        level: None,
        version,
        threads: 0,
    };
    let parts = [
        compress(&plain[0], &opts(Method::Zstd, 3)).unwrap(),
        compress(&plain[1], &opts(Method::Zlib, 3)).unwrap(),
        plain[2].clone(),
        compress(&plain[2], &opts(Method::Zstd, 2)).unwrap(),
    ];
    let mut section = Vec::new();
    let mut offsets = Vec::new();
    for p in &parts {
        section.resize(section.len().div_ceil(4096) * 4096, 0);
        offsets.push(section.len() as u64);
        section.extend_from_slice(p);
    }
    let got = discover(&section);
    assert!(got.problems.is_empty(), "{:?}", got.problems);
    let seen: Vec<(u64, BundleFormat)> = bundles(&got)
        .iter()
        .map(|b| (b.offset, b.format().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                offsets[0],
                BundleFormat::Compressed {
                    version: 3,
                    method: CompressionMethod::ZSTD
                }
            ),
            (
                offsets[1],
                BundleFormat::Compressed {
                    version: 3,
                    method: CompressionMethod::ZLIB
                }
            ),
            (offsets[2], BundleFormat::Uncompressed),
            (
                offsets[3],
                BundleFormat::Compressed {
                    version: 2,
                    method: CompressionMethod::ZSTD
                }
            ),
        ]
    );
    for (b, p) in bundles(&got).iter().zip(&parts) {
        assert_eq!(b.bytes, &p[..]);
    }
    // Header-only entry lists equal the full decompression's.
    for (b, full) in bundles(&got)
        .iter()
        .zip([&plain[0], &plain[1], &plain[2], &plain[2]])
    {
        let ours: Vec<String> =
            gfxkit_host::entries::header_entries(b.format().unwrap(), b.bytes, &Default::default())
                .unwrap()
                .into_iter()
                .map(|h| h.header.id)
                .collect();
        let theirs: Vec<String> = gfxkit_bundle::Bundle::parse(full)
            .unwrap()
            .entries()
            .iter()
            .map(|e| e.id.to_owned())
            .collect();
        assert_eq!(ours, theirs);
    }
}
