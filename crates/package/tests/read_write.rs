//! Walking and rewriting packages built here with the crates' writers: every format, nested
//! archives, and damaged or hostile ones (sizes that lie, zip bombs, depth, bad RPM headers).

use gfxkit_package::rewrite::{check_record, rewrite, Edits};
use gfxkit_package::{walk, ErrorKind, MemorySpill, Options};
use std::io::{Cursor, Write};

/// Bytes that sniff as an x86-64 shared object, then `n` bytes of filler.
fn elf(n: usize, fill: u8) -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0".to_vec();
    v.resize(20 + n, fill);
    v
}

fn zip_of(members: &[(&str, &[u8])], method: zip::CompressionMethod) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (n, b) in members {
        z.start_file(
            *n,
            zip::write::SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        z.write_all(b).unwrap();
    }
    z.finish().unwrap().into_inner()
}

fn tar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut t = tar::Builder::new(Vec::new());
    for (n, b) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, n, *b).unwrap();
    }
    t.into_inner().unwrap()
}

/// Every entry of the tarball `plain` by path, with its bytes.
fn tar_members(plain: &[u8]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut seen = std::collections::BTreeMap::new();
    for e in tar::Archive::new(plain).entries().unwrap() {
        let mut e = e.unwrap();
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut b).unwrap();
        seen.insert(e.path().unwrap().display().to_string(), b);
    }
    seen
}

fn paths(name: &str, data: &[u8], opts: &Options) -> Vec<Result<(String, usize), ErrorKind>> {
    walk(name, data, opts, &MemorySpill, &|m| m.bytes.len())
        .unwrap()
        .into_iter()
        .map(|r| r.map(|v| (v.path, v.value)).map_err(|e| e.kind))
        .collect()
}

fn cpio_newc(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut entry = |name: &str, mode: u32, data: &[u8]| {
        let fields = [
            1,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0,
        ];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out.extend_from_slice(data);
        while out.len() % 4 != 0 {
            out.push(0);
        }
    };
    entry("./usr", 0o040755, b"");
    for (n, d) in members {
        entry(n, 0o100644, d);
    }
    entry("TRAILER!!!", 0, b"");
    out
}

/// A minimal RPM v3 file: lead, an empty signature header, a main header with
/// PAYLOADFORMAT = "cpio", and a gzip-compressed cpio payload.
fn rpm_of(members: &[(&str, &[u8])], nindex_override: Option<u32>) -> Vec<u8> {
    let mut v = vec![0u8; 96];
    v[..4].copy_from_slice(&[0xed, 0xab, 0xee, 0xdb]);
    v[4] = 3;
    v[78..80].copy_from_slice(&5u16.to_be_bytes());
    // Signature header: no entries.
    v.extend_from_slice(&[0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0]);
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    // Main header: one string entry.
    let data = b"cpio\0";
    v.extend_from_slice(&[0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0]);
    v.extend_from_slice(&nindex_override.unwrap_or(1).to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    for x in [1124u32, 6, 0, 1] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v.extend_from_slice(data);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&cpio_newc(members)).unwrap();
    v.extend_from_slice(&gz.finish().unwrap());
    v
}

#[test]
fn every_format_yields_its_device_code_members() {
    let lib = elf(3000, 7);
    let py: &[u8] = b"print('hi')\n";
    let members: &[(&str, &[u8])] = &[("pkg/lib.so", &lib), ("pkg/x.py", py)];
    let opts = Options::default();
    let want = vec![Ok(("p!pkg/lib.so".to_owned(), lib.len()))];
    for method in [
        zip::CompressionMethod::Stored,
        zip::CompressionMethod::Deflated,
    ] {
        assert_eq!(paths("p", &zip_of(members, method), &opts), want);
    }
    let tar = tar_of(members);
    assert_eq!(paths("p", &tar, &opts), want);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    assert_eq!(paths("p", &gz.finish().unwrap(), &opts), want);
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&tar).unwrap();
    assert_eq!(paths("p", &xz.finish().unwrap(), &opts), want);
    let zst = zstd::encode_all(&tar[..], 3).unwrap();
    assert_eq!(paths("p", &zst, &opts), want);
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&tar).unwrap();
    assert_eq!(paths("p", &bz.finish().unwrap(), &opts), want);
    // A .deb: ar with debian-binary, control.tar.zst, data.tar.zst.
    let mut deb = ar::Builder::new(Vec::new());
    for (n, d) in [
        ("debian-binary", b"2.0\n".to_vec()),
        (
            "control.tar.zst",
            zstd::encode_all(&tar_of(&[("control", b"x")])[..], 3).unwrap(),
        ),
        ("data.tar.zst", zst.clone()),
    ] {
        deb.append(
            &ar::Header::new(n.as_bytes().to_vec(), d.len() as u64),
            &d[..],
        )
        .unwrap();
    }
    assert_eq!(
        paths("p.deb", &deb.into_inner().unwrap(), &opts),
        vec![Ok(("p.deb!data.tar.zst!pkg/lib.so".to_owned(), lib.len()))]
    );
    // An RPM.
    assert_eq!(
        paths(
            "p.rpm",
            &rpm_of(&[("./usr/lib/lib.so", &lib), ("./usr/a.py", py)], None),
            &opts
        ),
        vec![Ok(("p.rpm!usr/lib/lib.so".to_owned(), lib.len()))]
    );
    // A .conda-like zip of a .tar.zst, inside a tar.
    let conda = zip_of(&[("pkg-x.tar.zst", &zst)], zip::CompressionMethod::Stored);
    let outer = tar_of(&[("x.conda", &conda)]);
    assert_eq!(
        paths("o.tar", &outer, &opts),
        vec![Ok((
            "o.tar!x.conda!pkg-x.tar.zst!pkg/lib.so".to_owned(),
            lib.len()
        ))]
    );
}

#[test]
fn large_members_spill_and_keep_their_bytes() {
    let lib = elf(3 << 20, 1);
    let z = zip_of(&[("big.so", &lib)], zip::CompressionMethod::Deflated);
    let opts = Options {
        memory_limit: 1 << 20,
        ..Options::default()
    };
    let got = walk("p", &z, &opts, &MemorySpill, &|m| {
        matches!(m.bytes, gfxkit_package::Bytes::Spilled(_)) && m.bytes[..] == lib[..]
    })
    .unwrap();
    assert!(got[0].as_ref().unwrap().value);
}

#[test]
fn member_larger_than_declared_is_refused() {
    let lib = elf(4000, 3);
    let mut z = zip_of(&[("lib.so", &lib)], zip::CompressionMethod::Deflated);
    // Declare 100 bytes in the local header (offset 22) and the central directory entry.
    let declared = 100u32.to_le_bytes();
    z[22..26].copy_from_slice(&declared);
    let cd = z.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
    z[cd + 24..cd + 28].copy_from_slice(&declared);
    let got = paths("p.whl", &z, &Options::default());
    assert_eq!(got.len(), 1);
    assert!(
        matches!(got[0], Err(ErrorKind::LargerThanDeclared { declared: 100 })),
        "{got:?}"
    );
}

#[test]
fn zip_bomb_stops_at_the_limit() {
    // 24 MiB that deflate to ~24 KiB, starting like a shared object.
    let lib = elf(24 << 20, 0);
    let z = zip_of(&[("bomb.so", &lib)], zip::CompressionMethod::Deflated);
    assert!(z.len() < 1 << 20);
    let opts = Options {
        max_member: 8 << 20,
        memory_limit: 1 << 20,
        ..Options::default()
    };
    let got = paths("bomb.whl", &z, &opts);
    assert!(
        matches!(got[0], Err(ErrorKind::TooLarge { limit }) if limit == 8 << 20),
        "{got:?}"
    );
    // Many members together: the total limit.
    let many: Vec<(String, Vec<u8>)> = (0..4)
        .map(|i| (format!("m{i}.so"), elf(3 << 20, 0)))
        .collect();
    let refs: Vec<(&str, &[u8])> = many.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
    let z = zip_of(&refs, zip::CompressionMethod::Deflated);
    let opts = Options {
        max_total: 8 << 20,
        ..Options::default()
    };
    let got = paths("many.whl", &z, &opts);
    assert!(
        got.iter()
            .any(|r| matches!(r, Err(ErrorKind::TooLarge { .. }))),
        "{got:?}"
    );
}

#[test]
fn nesting_stops_at_the_depth_limit() {
    let mut inner = zip_of(&[("lib.so", &elf(100, 1))], zip::CompressionMethod::Stored);
    for i in 0..6 {
        inner = zip_of(
            &[(&format!("l{i}.zip"), &inner)],
            zip::CompressionMethod::Stored,
        );
    }
    let got = paths("deep.zip", &inner, &Options::default());
    assert!(
        matches!(got[0], Err(ErrorKind::TooDeep { limit: 4 })),
        "{got:?}"
    );
}

#[test]
fn damaged_rpm_and_cpio_are_errors_with_the_place() {
    let lib = elf(500, 2);
    // An index count far past the limit.
    let bad = rpm_of(&[("./lib.so", &lib)], Some(u32::MAX));
    let e = walk("b.rpm", &bad, &Options::default(), &MemorySpill, &|_| ()).unwrap();
    let e = e[0].as_ref().unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::Corrupt(_)) && e.offset.is_some(),
        "{e}"
    );
    // A lead cut short.
    let cut = &rpm_of(&[], None)[..50];
    let e = walk("c.rpm", cut, &Options::default(), &MemorySpill, &|_| ()).unwrap();
    assert!(matches!(
        e[0].as_ref().unwrap_err().kind,
        ErrorKind::Truncated(_)
    ));
    // A cpio payload cut inside a member.
    let cpio = cpio_newc(&[("./lib.so", &lib)]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&cpio[..300]).unwrap();
    let mut rpm = rpm_of(&[], None);
    let payload_at = rpm.len() - {
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        g.write_all(&cpio_newc(&[])).unwrap();
        g.finish().unwrap().len()
    };
    rpm.truncate(payload_at);
    rpm.extend_from_slice(&gz.finish().unwrap());
    let got = paths("t.rpm", &rpm, &Options::default());
    assert!(
        got.iter().any(|r| matches!(
            r,
            Err(ErrorKind::SmallerThanDeclared { .. }) | Err(ErrorKind::Truncated(_))
        )),
        "{got:?}"
    );
}

#[test]
fn zip_rewrite_updates_record_and_copies_the_rest_raw() {
    let lib = elf(5000, 9);
    let init: &[u8] = b"x = 1\n";
    let rows = format!(
        "p/lib.so,{},{}\np/__init__.py,{},{}\np-1.dist-info/RECORD,,\n",
        gfxkit_package::record::hash_field(&lib),
        lib.len(),
        gfxkit_package::record::hash_field(init),
        init.len()
    );
    let whl = zip_of(
        &[
            ("p/lib.so", &lib),
            ("p/__init__.py", init),
            ("p-1.dist-info/RECORD", rows.as_bytes()),
        ],
        zip::CompressionMethod::Deflated,
    );
    check_record("in.whl", &whl).unwrap();
    let mut out = Cursor::new(Vec::new());
    let changed = rewrite(
        "in.whl",
        &whl,
        &Options::default(),
        &MemorySpill,
        &Edits::rewriting(&|m| Ok(Some(m.bytes[..100].to_vec()))),
        &mut out,
    )
    .unwrap();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].size_after, 100);
    let new = out.into_inner();
    check_record("out.whl", &new).unwrap();
    let mut a = zip::ZipArchive::new(Cursor::new(&whl[..])).unwrap();
    let mut b = zip::ZipArchive::new(Cursor::new(&new[..])).unwrap();
    let names =
        |z: &zip::ZipArchive<Cursor<&[u8]>>| z.file_names().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b));
    let raw = |z: &mut zip::ZipArchive<Cursor<&[u8]>>, n: &str| {
        let f = z.by_name(n).unwrap();
        (
            f.compression(),
            f.crc32(),
            f.compressed_size(),
            f.data_start(),
        )
    };
    let (ma, ca, sa, da) = raw(&mut a, "p/__init__.py");
    let (mb, cb, sb, db) = raw(&mut b, "p/__init__.py");
    assert_eq!((ma, ca, sa), (mb, cb, sb));
    assert_eq!(
        whl[da as usize..(da + sa) as usize],
        new[db as usize..(db + sb) as usize]
    );
    // A RECORD that lies is caught, naming the member.
    let lying = rows.replace(
        &gfxkit_package::record::hash_field(init),
        &gfxkit_package::record::hash_field(b"y"),
    );
    let bad = zip_of(
        &[
            ("p/lib.so", &lib),
            ("p/__init__.py", init),
            ("p-1.dist-info/RECORD", lying.as_bytes()),
        ],
        zip::CompressionMethod::Deflated,
    );
    let e = check_record("bad.whl", &bad).unwrap_err();
    assert_eq!(e.path, "bad.whl!p/__init__.py");
    assert!(matches!(e.kind, ErrorKind::Checksum(_)));
}

#[test]
fn tarball_rewrite_replaces_members_and_paths_json() {
    let lib = elf(2000, 4);
    let pj = format!(
        "{{\"paths\": [{{\"_path\": \"lib/lib.so\", \"sha256\": \"{}\", \"size_in_bytes\": {}}}], \"paths_version\": 1}}",
        gfxkit_package::record::sha256_hex(&lib),
        lib.len()
    );
    let tar = tar_of(&[
        ("info/paths.json", pj.as_bytes()),
        ("lib/lib.so", &lib),
        ("lib/a.py", b"x"),
    ]);
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&tar).unwrap();
    let pkg = bz.finish().unwrap();
    let mut out = Cursor::new(Vec::new());
    let changed = rewrite(
        "x.tar.bz2",
        &pkg,
        &Options::default(),
        &MemorySpill,
        &Edits::rewriting(&|m| Ok(Some(m.bytes[..64].to_vec()))),
        &mut out,
    )
    .unwrap();
    assert_eq!(changed.len(), 1);
    let new = out.into_inner();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut bzip2::read::BzDecoder::new(&new[..]), &mut plain).unwrap();
    let seen = tar_members(&plain);
    assert_eq!(seen["lib/lib.so"], lib[..64]);
    assert_eq!(seen["lib/a.py"], b"x");
    let json: serde_json::Value = serde_json::from_slice(&seen["info/paths.json"]).unwrap();
    assert_eq!(json["paths"][0]["size_in_bytes"], 64);
    assert_eq!(
        json["paths"][0]["sha256"],
        gfxkit_package::record::sha256_hex(&lib[..64])
    );
}

#[test]
fn rewritten_tar_zst_records_its_size_and_a_short_entry_is_refused() {
    // The tarball written is told to zstd in advance (its tables sized to it): the frame
    // records the exact length, and the rewritten tarball reads back.
    let lib = elf(3000, 7);
    let tar = tar_of(&[("lib/lib.so", &lib), ("lib/a.py", b"x")]);
    let pkg = zstd::encode_all(&tar[..], 3).unwrap();
    let mut out = Cursor::new(Vec::new());
    let half = |m: gfxkit_package::Member<'_>| Ok(Some(m.bytes[..m.bytes.len() / 2].to_vec()));
    let changed = rewrite(
        "t.tar.zst",
        &pkg,
        &Options::default(),
        &MemorySpill,
        &Edits::rewriting(&half),
        &mut out,
    )
    .unwrap();
    assert_eq!(changed.len(), 1);
    let new = out.into_inner();
    let plain = zstd::decode_all(&new[..]).unwrap();
    assert_eq!(
        zstd::zstd_safe::get_frame_content_size(&new).ok(),
        Some(Some(plain.len() as u64))
    );
    assert_eq!(plain.len(), 512 + 1536 + 512 + 512 + 1024);
    let got = paths("t.tar.zst", &new, &Options::default());
    assert_eq!(got, [Ok(("t.tar.zst!lib/lib.so".to_owned(), 1510))]);

    // The same tarball cut before the data of its last entry (copied, not rewritten): refused
    // as truncated, nothing written short.
    let cut = zstd::encode_all(&tar[..512 + 3072 + 512][..], 3).unwrap();
    let mut out = Cursor::new(Vec::new());
    let err = rewrite(
        "t.tar.zst",
        &cut,
        &Options::default(),
        &MemorySpill,
        &Edits::rewriting(&half),
        &mut out,
    )
    .unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Truncated(_)), "{err}");
}

#[test]
fn tarball_with_nothing_to_rewrite_is_copied_byte_for_byte() {
    // No member may hold device code: the tarball is not compressed again.
    let tar = tar_of(&[("lib/a.py", b"x = 1\n"), ("README", b"hello\n")]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    let pkg = gz.finish().unwrap();
    for (name, data) in [("t.tar", &tar), ("t.tar.gz", &pkg)] {
        let mut out = Cursor::new(Vec::new());
        let changed = rewrite(
            name,
            data,
            &Options::default(),
            &MemorySpill,
            &Edits::rewriting(&|_| Ok(None)),
            &mut out,
        )
        .unwrap();
        assert!(changed.is_empty());
        assert_eq!(&out.into_inner(), data, "{name}");
    }
}

/// The error of walking `data` (named `name`) that the walk returns, in whole or for a member.
fn first_error(name: &str, data: &[u8]) -> gfxkit_package::Error {
    match walk(name, data, &Options::default(), &MemorySpill, &|_| ()) {
        Err(e) => e,
        Ok(members) => members.into_iter().find_map(|r| r.err()).expect("an error"),
    }
}

#[test]
fn damaged_zip_and_tar_say_where_and_what_was_expected() {
    let member = elf(3000, 7);
    let z = zip_of(&[("lib/a.so", &member)], zip::CompressionMethod::Deflated);
    // Cut inside the end-of-central-directory record (was "failed to fill whole buffer").
    let cut = &z[..z.len() - 10];
    let e = first_error("p.whl", cut);
    assert!(matches!(e.kind, ErrorKind::Truncated(_)), "{e}");
    assert!(
        e.to_string().contains(&format!(
            "need 22 bytes at offset {:#x} for the end-of-central-directory record, the \
             package has {}",
            z.len() - 22,
            cut.len()
        )),
        "{e}"
    );
    // Cut before it (was "Could not find EOCD").
    let e = first_error("p.whl", &z[..z.len() / 2]);
    assert!(
        e.to_string().contains("no end-of-central-directory record"),
        "{e}"
    );
    // A member's compressed bytes flipped: the member, its local header, its data and the
    // expectation (was "Invalid checksum" or "corrupt deflate stream" alone).
    let mut bad = z.clone();
    let data_at = 30 + "lib/a.so".len();
    for b in &mut bad[data_at + 5..data_at + 15] {
        *b ^= 0x5a;
    }
    let e = first_error("p.whl", &bad);
    assert_eq!(e.path, "p.whl!lib/a.so");
    assert_eq!(e.offset, Some(0), "the local header");
    assert!(
        e.to_string()
            .contains(&format!("at offset {data_at:#x}, 3020 bytes decompressed")),
        "{e}"
    );
    // A local header overwritten: where the central directory says it is.
    let two = zip_of(
        &[("a.txt", b"hi"), ("lib/a.so", &member)],
        zip::CompressionMethod::Deflated,
    );
    let at = zip::ZipArchive::new(Cursor::new(&two[..]))
        .unwrap()
        .by_index(1)
        .unwrap()
        .header_start();
    let mut bad = two.clone();
    bad[at as usize..at as usize + 4].copy_from_slice(b"XXXX");
    let e = first_error("p.whl", &bad);
    assert_eq!(
        (e.path.as_str(), e.offset),
        ("p.whl!lib/a.so", Some(at)),
        "{e}"
    );
    assert!(e.to_string().contains("no local file header"), "{e}");

    // A tar cut inside its second header (was "tar: failed to read entire block").
    let t = tar_of(&[("a.txt", b"hi"), ("lib/a.so", &member)]);
    let e = first_error("p.tar", &t[..1024 + 100]);
    assert_eq!(e.offset, Some(1024));
    assert!(
        e.to_string()
            .contains("need 512 bytes at offset 0x400 for a tar header, the tar stream has 1124"),
        "{e}"
    );
    // A tar cut inside a member: one error, the member's (no second "EOF during skip").
    let cut = &t[..1024 + 512 + 100];
    let errors: Vec<_> = walk("p.tar", cut, &Options::default(), &MemorySpill, &|_| ())
        .unwrap()
        .into_iter()
        .filter_map(|r| r.err())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "p.tar!lib/a.so");

    // A .deb cut inside its first member header.
    let mut deb = ar::Builder::new(Vec::new());
    deb.append(
        &ar::Header::new(b"debian-binary".to_vec(), 4),
        &b"2.0\n"[..],
    )
    .unwrap();
    let deb = deb.into_inner().unwrap();
    let e = first_error("p.deb", &deb[..40]);
    assert_eq!(e.offset, Some(8));
    assert!(
        e.to_string()
            .contains("need 60 bytes at offset 0x8 for an ar member header, the archive has 40"),
        "{e}"
    );
}

/// A gzip stream whose deflate data decodes to other bytes: the CRC-32 at its end says so,
/// though the tar members read before it decoded without a word.
#[test]
fn a_tar_gz_that_decodes_to_other_bytes_fails_its_crc() {
    // Incompressible filler, stored by deflate: a flipped bit changes one byte of output.
    let mut body = elf(60_000, 0);
    let mut x: u32 = 12345;
    for b in body.iter_mut().skip(64) {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *b = (x >> 16) as u8;
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(&tar_of(&[("lib/a.so", &body)])).unwrap();
    let mut data = gz.finish().unwrap();
    assert!(paths("t.tar.gz", &data, &Options::default())
        .iter()
        .all(|r| r.is_ok()));
    data[20_000] ^= 0x01;
    let got = paths("t.tar.gz", &data, &Options::default());
    assert!(
        got.iter()
            .any(|r| matches!(r, Err(ErrorKind::Checksum(m)) if m.contains("end of the stream"))),
        "{got:?}"
    );
}

/// A member whose local header names it otherwise than the central directory: an error at
/// the local header, not a member read under a name it does not have.
#[test]
fn a_zip_member_whose_two_names_disagree_is_an_error() {
    let data = zip_of(
        &[("lib/a.so", &elf(100, 1)), ("lib/b.so", &elf(100, 2))],
        zip::CompressionMethod::Stored,
    );
    let mut bad = data.clone();
    // The first local header's name starts at 30: "lib/a.so" -> "lib.a.so".
    bad[33] ^= b'/' ^ b'.';
    let got = paths("w.whl", &bad, &Options::default());
    assert!(
        got.iter().any(|r| matches!(r, Err(ErrorKind::Corrupt(m))
            if m.contains(r#"the local header names the member "lib.a.so", the central directory "lib/a.so""#))),
        "{got:?}"
    );
    assert_eq!(paths("w.whl", &data, &Options::default()).len(), 2);
}

#[test]
fn a_library_whose_magic_was_damaged_fails_its_crc() {
    // A stored wheel: a library whose ELF magic was flipped sniffs as a file without device
    // code, and used to be passed over unread (its CRC-32 never checked), as if the wheel held
    // no device code at all. Members named as code are read to their end when passed over.
    let lib = elf(4000, 7);
    let text = b"not code. ".repeat(1000);
    let z = zip_of(
        &[("k/lib/libk.so.1", &lib[..]), ("k/data.txt", &text[..])],
        zip::CompressionMethod::Stored,
    );
    let at = z.windows(4).position(|w| w == b"\x7fELF").unwrap();
    let mut bad = z.clone();
    bad[at + 1] ^= 0x04;
    let got = walk("k.whl", &bad, &Options::default(), &MemorySpill, &|_| ()).unwrap();
    let errors: Vec<String> = got
        .iter()
        .filter_map(|r| r.as_ref().err())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("k.whl!k/lib/libk.so.1: checksum mismatch")
            && errors[0].contains("at offset 0x0"),
        "{errors:?}"
    );
    // A member not named as code is still passed over unread: damage there cannot change
    // an answer about device code.
    let at = z.windows(8).position(|w| w == b"not code").unwrap();
    let mut other = z.clone();
    other[at + 9000] ^= 0x01;
    let got = walk("k.whl", &other, &Options::default(), &MemorySpill, &|_| ()).unwrap();
    assert!(
        got.iter().all(|r| r.is_ok()),
        "{:?}",
        got.iter()
            .filter_map(|r| r.as_ref().err())
            .collect::<Vec<_>>()
    );
    assert_eq!(got.len(), 1);
}

#[test]
fn members_left_out_take_their_record_rows_and_paths_entries_with_them() {
    let (a, b) = (elf(3000, 1), elf(2000, 2));
    let init: &[u8] = b"x = 1\n";
    let row = |n: &str, d: &[u8]| {
        format!(
            "{n},{},{}\n",
            gfxkit_package::record::hash_field(d),
            d.len()
        )
    };
    let rows = row("p/hsa/gfx90a/a.co", &a)
        + &row("p/hsa/gfx942/b.co", &b)
        + &row("p/__init__.py", init)
        + "p-1.dist-info/RECORD,,\n";
    let whl = zip_of(
        &[
            ("p/hsa/gfx90a/a.co", &a),
            ("p/hsa/gfx942/b.co", &b),
            ("p/__init__.py", init),
            ("p-1.dist-info/RECORD", rows.as_bytes()),
        ],
        zip::CompressionMethod::Deflated,
    );
    let gone = |p: &str| p.contains("/gfx90a");
    let edits = Edits {
        rewrite: &|_| Ok(None),
        read: &|_, _| false,
        remove: &gone,
    };
    // The package rewritten with `edits`: what changed, and the bytes written.
    let run = |name: &str, data: &[u8]| {
        let mut out = Cursor::new(Vec::new());
        let changed = rewrite(
            name,
            data,
            &Options::default(),
            &MemorySpill,
            &edits,
            &mut out,
        )
        .unwrap();
        (changed, out.into_inner())
    };
    let (changed, new) = run("in.whl", &whl);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].path, "in.whl!p/hsa/gfx90a/a.co");
    assert!(changed[0].removed);
    assert_eq!((changed[0].size_before, changed[0].size_after), (3020, 0));
    check_record("out.whl", &new).unwrap();
    let z = zip::ZipArchive::new(Cursor::new(&new[..])).unwrap();
    let names: Vec<&str> = z.file_names().collect();
    assert_eq!(
        names,
        ["p/hsa/gfx942/b.co", "p/__init__.py", "p-1.dist-info/RECORD"]
    );
    let mut record = String::new();
    std::io::Read::read_to_string(
        &mut zip::ZipArchive::new(Cursor::new(&new[..]))
            .unwrap()
            .by_name("p-1.dist-info/RECORD")
            .unwrap(),
        &mut record,
    )
    .unwrap();
    assert!(!record.contains("gfx90a"), "{record}");

    // A tarball: the member left out is one with a GNU long name (its header entry goes with
    // it), its `info/paths.json` entry is removed, and the members after it keep their names.
    let long = format!("lib/hsa/gfx90a/{}.co", "k".repeat(120));
    let pj = format!(
        "{{\"paths\": [{{\"_path\": \"{long}\", \"sha256\": \"{}\", \"size_in_bytes\": {}}}, \
         {{\"_path\": \"lib/a.py\", \"sha256\": \"{}\", \"size_in_bytes\": 1}}], \
         \"paths_version\": 1}}",
        gfxkit_package::record::sha256_hex(&a),
        a.len(),
        gfxkit_package::record::sha256_hex(b"x"),
    );
    let tar = tar_of(&[
        ("info/paths.json", pj.as_bytes()),
        (&long, &a),
        ("lib/hsa/gfx942/b.co", &b),
        ("lib/a.py", b"x"),
    ]);
    let (changed, new) = run("t.tar", &tar);
    assert_eq!(changed.len(), 1);
    assert!(changed[0].removed && changed[0].path.ends_with(&long));
    let seen = tar_members(&new);
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        ["info/paths.json", "lib/a.py", "lib/hsa/gfx942/b.co"]
    );
    assert_eq!(seen["lib/hsa/gfx942/b.co"], b);
    let json: serde_json::Value = serde_json::from_slice(&seen["info/paths.json"]).unwrap();
    assert_eq!(json["paths"].as_array().unwrap().len(), 1);
    assert_eq!(json["paths"][0]["_path"], "lib/a.py");
}

/// A zip inside a tarball: its members are read in parallel on rayon's pool and handed to the
/// thread that visits the tarball's members, whose own parallel work needs that pool. The
/// walk ends (it used to wait forever once every thread of the pool waited for the queue), and
/// thousands of members are no deeper on any thread's stack than a few.
#[test]
fn a_zip_inside_a_tarball_whose_visits_work_in_parallel_ends() {
    use rayon::prelude::*;
    for (count, size) in [(64usize, 64usize << 10), (5000, 256)] {
        let libs: Vec<(String, Vec<u8>)> = (0..count)
            .map(|i| (format!("pkg/lib{i}.so"), elf(size, i as u8)))
            .collect();
        let refs: Vec<(&str, &[u8])> = libs.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
        let wheel = zip_of(&refs, zip::CompressionMethod::Stored);
        let tarball = tar_of(&[("x-1.0-py3-none-any.whl", &wheel)]);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let sums = walk("t.tar", &tarball, &Options::default(), &MemorySpill, &|m| {
                m.bytes
                    .par_chunks(64)
                    .map(|c| c.iter().map(|&b| u64::from(b)).sum::<u64>())
                    .sum::<u64>()
            })
            .map(|w| w.into_iter().filter(Result::is_ok).count());
            let _ = tx.send(sums);
        });
        let visited = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the walk ended");
        assert_eq!(visited.unwrap(), count);
    }
}

/// With `whole_archives`, the archives it chooses are handed over as members; the others are
/// still walked.
#[test]
fn chosen_archives_are_handed_over_whole() {
    let inner = zip_of(
        &[("lib/a.so", &elf(16, 1))],
        zip::CompressionMethod::Deflated,
    );
    let other = tar_of(&[("lib/b.so", &elf(16, 2))]);
    let tarball = tar_of(&[("a.whl", &inner), ("b.tar", &other)]);
    let opts = Options {
        whole_archives: Some(gfxkit_package::MemberChoice::new(|name: &str, _: &[u8]| {
            name.ends_with(".whl")
        })),
        ..Options::default()
    };
    let got = paths("t.tar", &tarball, &opts);
    assert_eq!(
        got,
        vec![
            Ok(("t.tar!a.whl".to_owned(), inner.len())),
            Ok(("t.tar!b.tar!lib/b.so".to_owned(), 36)),
        ]
    );
    let walked = paths("t.tar", &tarball, &Options::default());
    assert_eq!(walked[0], Ok(("t.tar!a.whl!lib/a.so".to_owned(), 36)));
}
