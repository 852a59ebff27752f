//! AOTriton `.aks2` files written here with liblzma (the layout of AOTriton's `aks2.py`), then
//! damaged.

use gfxkit_kernel_db::aks2::Aks2;
use gfxkit_kernel_db::{ErrorKind, Limits};
use std::io::Write;

fn build(images: &[(&str, &[u8])], tweak: impl Fn(&mut Vec<u8>, &mut [u32; 3])) -> Vec<u8> {
    let mut dir = Vec::new();
    let mut area: Vec<u8> = Vec::new();
    for (name, img) in images {
        for v in [
            48u32,
            256,
            area.len() as u32,
            img.len() as u32,
            name.len() as u32 + 1,
        ] {
            dir.extend(v.to_le_bytes());
        }
        dir.extend(name.as_bytes());
        dir.push(0);
        area.extend(*img);
    }
    let mut head = [
        (dir.len() + area.len()) as u32,
        images.len() as u32,
        dir.len() as u32,
    ];
    let mut plain = dir;
    plain.extend(area);
    tweak(&mut plain, &mut head);
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(&plain).unwrap();
    let mut out = b"AKS2".to_vec();
    for v in head {
        out.extend(v.to_le_bytes());
    }
    out.extend(xz.finish().unwrap());
    out
}

const A: &[u8] = b"\x7fELF image a ....";
const B: &[u8] = b"\x7fELF image b, a little longer";

fn good() -> Vec<u8> {
    build(
        &[
            ("attn_fwd/FONLY__^bf16@16.hsaco", A),
            ("attn_fwd/failed.hsaco", b""),
            ("bwd.hsaco", B),
        ],
        |_, _| {},
    )
}

#[test]
fn entries_and_images() {
    let f = Aks2::parse(&good(), &Limits::default()).unwrap();
    assert_eq!(f.entries.len(), 3);
    let e = f.entry("bwd.hsaco").unwrap();
    assert_eq!((e.shared_memory_size, e.block_threads), (48, 256));
    assert_eq!(f.image(e), B);
    assert_eq!(f.image(&f.entries[0]), A);
    assert!(f.image(&f.entries[1]).is_empty());
}

#[test]
fn truncation_and_bit_flips_are_errors_never_panics() {
    let bytes = good();
    for cut in 0..bytes.len() {
        assert!(
            Aks2::parse(&bytes[..cut], &Limits::default()).is_err(),
            "cut {cut}"
        );
    }
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x04;
        if let Ok(f) = Aks2::parse(&b, &Limits::default()) {
            for e in &f.entries {
                let _ = f.image(e);
            }
        }
    }
    let mut long = bytes.clone();
    long.push(0);
    // Bytes after the stream: the decoder either stops at its end (trailing bytes) or
    // reads on and finds them corrupt; either way the file is refused.
    let e = Aks2::parse(&long, &Limits::default()).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::TrailingBytes(_) | ErrorKind::Decompress { .. }
        ),
        "{e}"
    );
}

#[test]
fn inconsistent_headers_and_entries_are_named() {
    let e = Aks2::parse(b"AKS1\0\0\0\0\0\0\0\0\0\0\0\0", &Limits::default()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::BadMagic { .. }), "{e}");
    // An image running past the image area.
    let bytes = build(&[("a", A)], |plain, _| plain[12] = 200);
    let e = Aks2::parse(&bytes, &Limits::default()).unwrap_err();
    assert_eq!(e.at.as_deref(), Some("entry 0 (a)"));
    assert!(e.to_string().contains("runs past the image area"), "{e}");
    // A total that the stream does not match.
    let bytes = build(&[("a", A)], |_, h| h[0] += 1);
    let e = Aks2::parse(&bytes, &Limits::default()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::SizeMismatch { .. }), "{e}");
    // A name without its NUL.
    let bytes = build(&[("abc", A)], |plain, _| plain[23] = b'x');
    let e = Aks2::parse(&bytes, &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("NUL"), "{e}");
    // A directory size that the entries do not fill.
    let bytes = build(&[("abc", A)], |_, h| h[2] += 1);
    let e = Aks2::parse(&bytes, &Limits::default()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Inconsistent(_)), "{e}");
    // More kernels than the directory can hold, and a total above the limit.
    let bytes = build(&[("abc", A)], |_, h| h[1] = 1000);
    assert!(Aks2::parse(&bytes, &Limits::default()).is_err());
    let small = Limits {
        max_decompressed: 10,
        ..Limits::default()
    };
    let e = Aks2::parse(&good(), &small).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::LimitExceeded { .. }), "{e}");
}
