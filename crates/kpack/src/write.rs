//! Writing `.kpack` archives, the mirror of [`crate::archive`].

use crate::archive::{HEADER_SIZE, MAGIC, VERSION};
use crate::error::{fail, ErrorKind, Result};
use rayon::prelude::*;
use rmpv::Value;
use std::collections::BTreeMap;

/// How kernels are stored in a written archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `zstd-per-kernel` at this level (3 is what TheRock writes).
    Zstd {
        /// zstd level.
        level: i32,
    },
    /// `none`: kernels stored as they are, each at a 64-byte aligned offset.
    None,
}

impl Default for Compression {
    fn default() -> Self {
        Compression::Zstd { level: 3 }
    }
}

/// One kernel to store.
#[derive(Debug, Clone, Copy)]
pub struct KernelIn<'a> {
    /// TOC key, `<kernel_name>#<N>`.
    pub key: &'a str,
    /// Architecture (target ID).
    pub arch: &'a str,
    /// The code object.
    pub bytes: &'a [u8],
}

/// What an archive describes besides its kernels.
#[derive(Debug, Clone)]
pub struct ArchiveMeta {
    /// `group_name`.
    pub group_name: String,
    /// `gfx_arch_family` (TheRock writes the single architecture of a production archive).
    pub arch_family: String,
    /// `gfx_arches`.
    pub arches: Vec<String>,
}

fn s(v: &str) -> Value {
    Value::from(v)
}

/// One zstd frame of `bytes` at `level`, with its content size and content checksum (the
/// XXH64 of the code object, checked by every zstd decoder, so that damage to the frame is
/// found when it is read; TheRock's frames carry no checksum).
fn compress_frame(bytes: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
    c.compress(bytes)
}

/// Writes an archive holding `kernels` (ordinals in the order given; a `(key, arch)` pair
/// may appear once). Frames are compressed in parallel, each with zstd's content checksum;
/// the output is deterministic.
pub fn write_archive(
    meta: &ArchiveMeta,
    kernels: &[KernelIn<'_>],
    compression: Compression,
) -> Result<Vec<u8>> {
    let mut toc: BTreeMap<&str, BTreeMap<&str, Value>> = BTreeMap::new();
    for (ordinal, k) in kernels.iter().enumerate() {
        let entry = Value::Map(vec![
            (s("type"), s("hsaco")),
            (s("ordinal"), Value::from(ordinal as u64)),
            (s("original_size"), Value::from(k.bytes.len() as u64)),
        ]);
        if toc
            .entry(k.key)
            .or_default()
            .insert(k.arch, entry)
            .is_some()
        {
            return fail(
                0,
                ErrorKind::Unsupported(format!(
                    "kernel {} ({}) given twice for one archive",
                    k.key, k.arch
                )),
            );
        }
    }
    let mut out = Vec::with_capacity(HEADER_SIZE as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.resize(HEADER_SIZE as usize, 0);
    let mut top = vec![
        (s("format_version"), Value::from(u64::from(VERSION))),
        (s("group_name"), s(&meta.group_name)),
        (s("gfx_arch_family"), s(&meta.arch_family)),
        (
            s("gfx_arches"),
            Value::Array(meta.arches.iter().map(|a| s(a)).collect()),
        ),
        (
            s("toc"),
            Value::Map(
                toc.into_iter()
                    .map(|(k, m)| {
                        (
                            s(k),
                            Value::Map(m.into_iter().map(|(a, e)| (s(a), e)).collect()),
                        )
                    })
                    .collect(),
            ),
        ),
    ];
    match compression {
        Compression::Zstd { level } => {
            let frames: Vec<Vec<u8>> = kernels
                .par_iter()
                .map(|k| compress_frame(k.bytes, level))
                .collect::<std::io::Result<_>>()
                .map_err(|e| crate::Error::at(0, ErrorKind::Unsupported(format!("zstd: {e}"))))?;
            let start = out.len() as u64;
            let count = u32::try_from(frames.len()).map_err(|_| {
                crate::Error::at(0, ErrorKind::Unsupported("more than 2^32 kernels".into()))
            })?;
            out.extend_from_slice(&count.to_le_bytes());
            for f in &frames {
                let n = u32::try_from(f.len()).map_err(|_| {
                    crate::Error::at(
                        0,
                        ErrorKind::Unsupported("a compressed kernel of 4 GiB or more".into()),
                    )
                })?;
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(f);
            }
            let size = out.len() as u64 - start;
            top.push((s("compression_scheme"), s("zstd-per-kernel")));
            top.push((s("zstd_offset"), Value::from(start)));
            top.push((s("zstd_size"), Value::from(size)));
        }
        Compression::None => {
            let mut blobs = Vec::with_capacity(kernels.len());
            for k in kernels {
                out.resize(out.len().div_ceil(64) * 64, 0);
                blobs.push(Value::Map(vec![
                    (s("offset"), Value::from(out.len() as u64)),
                    (s("size"), Value::from(k.bytes.len() as u64)),
                ]));
                out.extend_from_slice(k.bytes);
            }
            top.push((s("compression_scheme"), s("none")));
            top.push((s("blobs"), Value::Array(blobs)));
        }
    }
    let toc_offset = out.len() as u64;
    out[8..16].copy_from_slice(&toc_offset.to_le_bytes());
    rmpv::encode::write_value(&mut out, &Value::Map(top))
        .map_err(|e| crate::Error::at(toc_offset, ErrorKind::BadToc(e.to_string())))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{Archive, Scheme};

    fn sample() -> (ArchiveMeta, Vec<Vec<u8>>) {
        (
            ArchiveMeta {
                group_name: "g".into(),
                arch_family: "gfx90a:xnack+".into(),
                arches: vec!["gfx90a:xnack+".into()],
            },
            vec![b"\x7fELF one".to_vec(), vec![7u8; 5000]],
        )
    }

    #[test]
    fn round_trips_both_schemes() {
        let (meta, bodies) = sample();
        let ks = [
            KernelIn {
                key: "lib/a.so#1",
                arch: "gfx90a:xnack+",
                bytes: &bodies[0],
            },
            KernelIn {
                key: "lib/a.so#0",
                arch: "gfx90a:xnack+",
                bytes: &bodies[1],
            },
        ];
        for c in [Compression::default(), Compression::None] {
            let bytes = write_archive(&meta, &ks, c).unwrap();
            let a = Archive::parse(&bytes).unwrap();
            assert_eq!(a.arches, ["gfx90a:xnack+"]);
            assert_eq!(a.group_name.as_deref(), Some("g"));
            assert_eq!(a.kernels.len(), 2);
            for k in &ks {
                let got = a.kernel(k.key, k.arch).unwrap();
                assert_eq!(&*a.payload(got).unwrap(), k.bytes);
            }
            assert_eq!(matches!(a.scheme, Scheme::None), c == Compression::None);
            // Deterministic.
            assert_eq!(bytes, write_archive(&meta, &ks, c).unwrap());
        }
    }

    /// Varied bytes, so that the frame holds literals a flipped bit changes silently.
    fn varied(n: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if i % 3 == 0 {
                    (x % 7) as u8
                } else {
                    x as u8
                }
            })
            .collect()
    }

    #[test]
    fn frames_carry_a_content_checksum_and_any_flip_in_them_is_found() {
        let (meta, _) = sample();
        let body = varied(3000);
        let k = KernelIn {
            key: "lib/a.so#0",
            arch: "gfx90a:xnack+",
            bytes: &body,
        };
        let bytes = write_archive(&meta, &[k], Compression::default()).unwrap();
        let a = Archive::parse(&bytes).unwrap();
        let got = a.kernel(k.key, k.arch).unwrap();
        assert!(a.has_checksum(got));
        // Four bytes (the XXH64's low half) more than the frame without it.
        let plain = zstd::bulk::compress(&body, 3).unwrap();
        assert!(!crate::archive::frame_has_checksum(&plain));
        assert_eq!(got.stored_size, plain.len() as u64 + 4);
        assert_eq!(&*a.payload(got).unwrap(), &body[..]);
        // Every bit of every byte of the frame: an error at the frame, or (a bit the format
        // leaves unused) the very bytes written; never other bytes.
        let (start, end) = (
            got.stored_offset as usize,
            (got.stored_offset + got.stored_size) as usize,
        );
        for at in start..end {
            for bit in 0..8 {
                let mut d = bytes.clone();
                d[at] ^= 1 << bit;
                let Ok(b) = Archive::parse(&d) else { continue };
                let k2 = b.kernel(k.key, k.arch).unwrap();
                match b.payload(k2) {
                    Err(e) => assert_eq!(e.offset, got.stored_offset, "{e}"),
                    Ok(p) => assert!(
                        *p == body[..],
                        "bit {bit} of byte {at:#x} flipped: decodes to other bytes without error"
                    ),
                }
            }
        }
    }

    #[test]
    fn duplicate_kernels_are_refused() {
        let (meta, bodies) = sample();
        let k = KernelIn {
            key: "k#0",
            arch: "gfx90a:xnack+",
            bytes: &bodies[0],
        };
        assert!(write_archive(&meta, &[k, k], Compression::None).is_err());
    }
}
