//! A package's members are read when the same files in a directory would be: the walk of a
//! package asks the formats' door ([`Formats::found_in_walk`]) as a directory walk does.

use gfxkit_io::format::{member_worth_reading, Formats, PREFIX_LEN};
use gfxkit_io::scan;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The first bytes of an AMDGPU code object's ELF header (64-bit, little-endian, EM_AMDGPU).
fn code_object_head() -> Vec<u8> {
    let mut b = vec![0u8; 64];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2;
    b[5] = 1;
    b[6] = 1;
    b[7] = 64;
    b[16] = 3;
    b[18] = 224;
    b
}

/// The files of a hipBLASLt-like library directory and what a walk of gfxkit reads of them.
fn library() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("library/Kernels.so-000-gfx1100.hsaco", code_object_head()),
        // The extension-op index hipBLASLt opens by name beside its code objects.
        (
            "library/hipblasltExtOpLibrary.dat",
            b"\x81\xa3abc\x01".to_vec(),
        ),
        (
            "library/TensileLibrary_HH_gfx1100.dat",
            b"\x82\xa9solutions\x90\xa7library\xc0".to_vec(),
        ),
        ("library/README", b"hipBLASLt kernels\n".to_vec()),
        ("library/notes.json", b"{\"a\": 1}\n".to_vec()),
    ]
}

/// The paths `scan` reads under `path`, relative to `strip`.
fn read(path: &Path, strip: &str) -> BTreeSet<String> {
    let found = scan::scan_with(&[path.to_path_buf()], &Formats::standard(), &(), |_, _| {
        Ok::<_, ()>(())
    })
    .unwrap();
    found
        .into_iter()
        .filter(|s| s.result.is_ok())
        .map(|s| {
            let p = s.path.display().to_string();
            p.strip_prefix(strip).unwrap_or(&p).to_owned()
        })
        .collect()
}

#[test]
fn a_package_reads_the_members_a_directory_walk_reads() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("tree");
    let mut tar = tar::Builder::new(Vec::new());
    for (name, bytes) in library() {
        let at = dir.join(name);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(&at, &bytes).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, name, &bytes[..]).unwrap();
    }
    let tarball: PathBuf = d.path().join("lib.tar");
    std::fs::write(&tarball, tar.into_inner().unwrap()).unwrap();

    let in_dir = read(&dir, &format!("{}/", dir.display()));
    let in_tar = read(&tarball, &format!("{}!", tarball.display()));
    let want: BTreeSet<String> = [
        "library/Kernels.so-000-gfx1100.hsaco",
        "library/TensileLibrary_HH_gfx1100.dat",
        "library/hipblasltExtOpLibrary.dat",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(in_dir, want);
    assert_eq!(in_tar, want);
    // The door a package walk is given answers as the directory walk's.
    for (name, bytes) in library() {
        let prefix = &bytes[..bytes.len().min(PREFIX_LEN)];
        assert_eq!(
            member_worth_reading(name, prefix),
            Formats::standard().found_in_walk(Path::new(name), prefix),
            "{name}"
        );
    }
}
