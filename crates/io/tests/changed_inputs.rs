//! A rewrite whose input changed while it was read (another process wrote to the file, as `cp`
//! over it does) replaces nothing: `prune` of a bundle file and of a package, in place and to a
//! new file. (`gfxkit_io::input`'s own tests cut a mapped file short under its reading.)

use gfxkit_io::format::Formats;
use gfxkit_io::rewrite::{rewrite_file, Original, RewriteOptions};
use gfxkit_io::{Durability, ErrorKind, Input};
use gfxkit_shrink::{Conversion, EntryFilter, Pattern, Transform};
use gfxkit_testkit::HipBuild;
use std::path::Path;

fn keep_gfx90a() -> Transform {
    Transform {
        selection: EntryFilter::Keep(vec![Pattern::parse("gfx90a").unwrap()]),
        conversion: Conversion::Keep,
        limits: Default::default(),
    }
}

fn to<'p>(out: &'p Path, formats: &'p Formats, source: Option<&'p Input>) -> RewriteOptions<'p> {
    RewriteOptions {
        target: Some(out),
        like: None,
        durability: Durability::Rename,
        allow_empty: false,
        drop_signature: false,
        digests: false,
        formats,
        source,
    }
}

/// Marks `path` modified since it was opened (its size kept, as a rewrite in place of the same
/// length would).
fn touch(path: &Path) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let was = f.metadata().unwrap().modified().unwrap();
    f.set_modified(was + std::time::Duration::from_secs(1))
        .unwrap();
}

fn changed(e: &gfxkit_io::Error) -> bool {
    matches!(e.kind(), ErrorKind::Changed { .. })
}

#[test]
fn a_rewrite_of_an_input_changed_under_it_replaces_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // Large enough to be mapped (inputs under 256 KiB are read in one call).
    let source = gfxkit_testkit::hip_kernels(400);
    let built = HipBuild::new(&source, &["gfx906", "gfx90a"]).build(tmp.path(), "k");
    let bytes = std::fs::read(&built).unwrap();
    assert!(
        bytes.len() as u64 >= gfxkit_io::input::READ_BELOW,
        "{}",
        bytes.len()
    );
    let formats = Formats::standard();
    let t = keep_gfx90a();

    // A bundle file, in place: refused, the file as the other process left it.
    let file = tmp.path().join("lib.hipfb");
    std::fs::write(&file, &bytes).unwrap();
    let input = Input::open(&file).unwrap();
    touch(&file);
    let opts = to(&file, &formats, None);
    let e = rewrite_file(&file, Original::Input(&input), &t, &opts, &|_| {}).unwrap_err();
    assert!(changed(&e), "{e}");
    drop(input);
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    // Left alone, the same rewrite goes through.
    let input = Input::open(&file).unwrap();
    let out = tmp.path().join("pruned.hipfb");
    rewrite_file(
        &file,
        Original::Input(&input),
        &t,
        &to(&out, &formats, None),
        &|_| {},
    )
    .unwrap();
    assert!(std::fs::metadata(&out).unwrap().len() < bytes.len() as u64);

    // A package whose bytes the rewrite maps: refused when asked about its input, to a new
    // file (nothing written) and in place.
    let pkg = tmp.path().join("kernels.tar");
    let mut tar = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(bytes.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    tar.append_data(&mut h, "lib/k.hipfb", &bytes[..]).unwrap();
    let tarball = tar.into_inner().unwrap();
    std::fs::write(&pkg, &tarball).unwrap();
    let rewrite = |target: &Path| {
        let input = Input::open(&pkg).unwrap();
        touch(&pkg);
        let opts = to(target, &formats, Some(&input));
        gfxkit_io::package::rewrite_package("kernels.tar", &input, &t, &opts)
    };
    let out = tmp.path().join("pruned.tar");
    let e = rewrite(&out).unwrap_err();
    assert!(changed(&e), "{e}");
    assert!(!out.exists());
    let e = rewrite(&pkg).unwrap_err();
    assert!(changed(&e), "{e}");
    assert_eq!(std::fs::read(&pkg).unwrap(), tarball);
    let input = Input::open(&pkg).unwrap();
    let done = gfxkit_io::package::rewrite_package(
        "kernels.tar",
        &input,
        &t,
        &to(&out, &formats, Some(&input)),
    )
    .unwrap();
    assert_eq!(done.changed.len(), 1);
}
