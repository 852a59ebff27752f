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

/// A kernel's code object as it is handed to an archive: plain, or already compressed into
/// the zstd frame `zstd-per-kernel` stores (a split of compressed bundles makes each frame as
/// soon as its bundle is decoded, so that it never holds the decoded code objects).
#[derive(Debug, Clone, Copy)]
pub enum Stored<'a> {
    /// The code object.
    Plain(&'a [u8]),
    /// The code object's zstd frame at `level` ([`zstd_frame`]).
    Frame {
        /// The frame.
        frame: &'a [u8],
        /// The code object's size in bytes.
        size: u64,
        /// The zstd level it was compressed at.
        level: i32,
    },
}

impl Stored<'_> {
    /// The code object's size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Stored::Plain(b) => b.len() as u64,
            Stored::Frame { size, .. } => *size,
        }
    }
}

/// One kernel to store, plain or already compressed ([`encode_stored`]).
#[derive(Debug, Clone, Copy)]
pub struct StoredIn<'a> {
    /// TOC key, `<kernel_name>#<N>`.
    pub key: &'a str,
    /// Architecture (target ID).
    pub arch: &'a str,
    /// The code object.
    pub stored: Stored<'a>,
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

std::thread_local! {
    /// This thread's zstd compressor and the level it is set to: made once per thread and
    /// reused for every frame (a frame depends only on its bytes and the parameters, never on
    /// the frames compressed before it), so that its tables are not allocated and cleared
    /// again for each kernel.
    static COMPRESSOR: std::cell::RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

/// One zstd frame of `bytes` at `level`, with its content size and content checksum (the
/// XXH64 of the code object, checked by every zstd decoder, so that damage to the frame is
/// found when it is read; TheRock's frames carry no checksum).
fn compress_frame(bytes: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with_borrow_mut(|slot| {
        let c = match slot {
            Some((l, c)) if *l == level => c,
            _ => {
                let mut c = zstd::bulk::Compressor::new(level)?;
                c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
                &mut slot.insert((level, c)).1
            }
        };
        let frame = c.compress(bytes);
        if frame.is_err() {
            // Not kept after a failure: the next frame starts from a fresh context.
            *slot = None;
        }
        frame
    })
}

/// The zstd frame of `bytes` at `level` that a `zstd-per-kernel` archive stores for them (its
/// content size and checksum included): the same bytes [`encode_archive`] writes for them.
pub fn zstd_frame(bytes: &[u8], level: i32) -> Result<Vec<u8>> {
    compress_frame(bytes, level)
        .map_err(|e| crate::Error::at(0, ErrorKind::Unsupported(format!("zstd: {e}"))))
}

/// An archive made and not yet laid out in one buffer: its head (the header, and for
/// `zstd-per-kernel` the frame count; for `none` every kernel), the compressed frames and the
/// TOC. [`Encoded::write_to`] writes it without gathering it first, so that a large archive's
/// frames are copied once, into the file.
#[derive(Debug, Clone)]
pub struct Encoded {
    head: Vec<u8>,
    frames: Vec<Vec<u8>>,
    toc: Vec<u8>,
}

impl Encoded {
    /// The archive's length in bytes.
    pub fn len(&self) -> u64 {
        let frames: usize = self.frames.iter().map(|f| 4 + f.len()).sum();
        (self.head.len() + frames + self.toc.len()) as u64
    }

    /// Whether the archive has no bytes (never: it has a header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the archive's bytes to `w`.
    pub fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        w.write_all(&self.head)?;
        for f in &self.frames {
            // Lengths were checked to fit when the archive was made.
            w.write_all(&(f.len() as u32).to_le_bytes())?;
            w.write_all(f)?;
        }
        w.write_all(&self.toc)
    }

    /// The archive's bytes in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        out.extend_from_slice(&self.head);
        for f in &self.frames {
            out.extend_from_slice(&(f.len() as u32).to_le_bytes());
            out.extend_from_slice(f);
        }
        out.extend_from_slice(&self.toc);
        out
    }
}

/// Writes an archive holding `kernels` (ordinals in the order given; a `(key, arch)` pair
/// may appear once). Frames are compressed in parallel, each with zstd's content checksum;
/// the output is deterministic. [`encode_archive`] makes the same bytes without gathering them.
pub fn write_archive(
    meta: &ArchiveMeta,
    kernels: &[KernelIn<'_>],
    compression: Compression,
) -> Result<Vec<u8>> {
    encode_archive(meta, kernels, compression).map(|e| e.to_vec())
}

/// The archive [`write_archive`] writes, its parts not yet gathered into one buffer.
pub fn encode_archive(
    meta: &ArchiveMeta,
    kernels: &[KernelIn<'_>],
    compression: Compression,
) -> Result<Encoded> {
    let stored: Vec<StoredIn<'_>> = kernels
        .iter()
        .map(|k| StoredIn {
            key: k.key,
            arch: k.arch,
            stored: Stored::Plain(k.bytes),
        })
        .collect();
    encode_stored(meta, &stored, compression)
}

/// [`encode_archive`] of kernels some of which are already compressed: a frame made at the
/// archive's level is stored as it is (the same bytes the archive would make of the code
/// object). A frame is refused by an archive of another level or one that stores kernels
/// uncompressed.
pub fn encode_stored(
    meta: &ArchiveMeta,
    kernels: &[StoredIn<'_>],
    compression: Compression,
) -> Result<Encoded> {
    let mut toc: BTreeMap<&str, BTreeMap<&str, Value>> = BTreeMap::new();
    for (ordinal, k) in kernels.iter().enumerate() {
        let entry = Value::Map(vec![
            (s("type"), s("hsaco")),
            (s("ordinal"), Value::from(ordinal as u64)),
            (s("original_size"), Value::from(k.stored.size())),
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
    let mut head = Vec::with_capacity(HEADER_SIZE as usize);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.resize(HEADER_SIZE as usize, 0);
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
    let mut frames = Vec::new();
    // Where the TOC starts.
    let toc_offset = match compression {
        Compression::Zstd { level } => {
            frames = kernels
                .par_iter()
                .map(|k| match k.stored {
                    Stored::Plain(b) => zstd_frame(b, level),
                    Stored::Frame {
                        frame, level: l, ..
                    } if l == level => Ok(frame.to_vec()),
                    Stored::Frame { level: l, .. } => fail(
                        0,
                        ErrorKind::Unsupported(format!(
                            "kernel {} ({}) was compressed at zstd level {l}, the archive is \
                             written at {level}",
                            k.key, k.arch
                        )),
                    ),
                })
                .collect::<Result<_>>()?;
            let start = head.len() as u64;
            let count = u32::try_from(frames.len()).map_err(|_| {
                crate::Error::at(0, ErrorKind::Unsupported("more than 2^32 kernels".into()))
            })?;
            head.extend_from_slice(&count.to_le_bytes());
            let mut size = 4u64;
            for f in &frames {
                if u32::try_from(f.len()).is_err() {
                    return fail(
                        0,
                        ErrorKind::Unsupported("a compressed kernel of 4 GiB or more".into()),
                    );
                }
                size += 4 + f.len() as u64;
            }
            top.push((s("compression_scheme"), s("zstd-per-kernel")));
            top.push((s("zstd_offset"), Value::from(start)));
            top.push((s("zstd_size"), Value::from(size)));
            start + size
        }
        Compression::None => {
            let mut blobs = Vec::with_capacity(kernels.len());
            for k in kernels {
                let Stored::Plain(bytes) = k.stored else {
                    return fail(
                        0,
                        ErrorKind::Unsupported(format!(
                            "kernel {} ({}) is compressed: an archive that stores kernels \
                             uncompressed takes them plain",
                            k.key, k.arch
                        )),
                    );
                };
                head.resize(head.len().div_ceil(64) * 64, 0);
                blobs.push(Value::Map(vec![
                    (s("offset"), Value::from(head.len() as u64)),
                    (s("size"), Value::from(bytes.len() as u64)),
                ]));
                head.extend_from_slice(bytes);
            }
            top.push((s("compression_scheme"), s("none")));
            top.push((s("blobs"), Value::Array(blobs)));
            head.len() as u64
        }
    };
    head[8..16].copy_from_slice(&toc_offset.to_le_bytes());
    let mut toc = Vec::new();
    rmpv::encode::write_value(&mut toc, &Value::Map(top))
        .map_err(|e| crate::Error::at(toc_offset, ErrorKind::BadToc(e.to_string())))?;
    Ok(Encoded { head, frames, toc })
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
    fn parts_written_are_the_archive_and_frames_do_not_depend_on_earlier_ones() {
        let (meta, _) = sample();
        let bodies = [varied(70_000), varied(3000), vec![9u8; 100_000]];
        let ks: Vec<KernelIn<'_>> = bodies
            .iter()
            .enumerate()
            .map(|(n, b)| KernelIn {
                key: ["k#0", "k#1", "k#2"][n],
                arch: "gfx90a:xnack+",
                bytes: b,
            })
            .collect();
        for c in [Compression::default(), Compression::None] {
            let e = encode_archive(&meta, &ks, c).unwrap();
            let mut written = Vec::new();
            e.write_to(&mut written).unwrap();
            assert_eq!(written, e.to_vec());
            assert_eq!(written.len() as u64, e.len());
            assert_eq!(written, write_archive(&meta, &ks, c).unwrap());
        }
        // A frame is the one a fresh compressor makes, whatever this thread compressed
        // before it and at whatever level.
        let fresh = |b: &[u8], level| {
            let mut c = zstd::bulk::Compressor::new(level).unwrap();
            c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))
                .unwrap();
            c.compress(b).unwrap()
        };
        for level in [3, 1, 3, 9, 3] {
            for b in bodies.iter().rev() {
                assert_eq!(compress_frame(b, level).unwrap(), fresh(b, level));
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
