//! Reading `.kpack` archives (format version 1).
//!
//! ```text
//! 0x00 "KPAK"  0x04 u32 version = 1  0x08 u64 toc_offset (absolute)  zero padding to 0x40
//! 0x40 blob    toc_offset..EOF: MessagePack table of contents
//! ```
//!
//! The TOC is a map: `format_version`, `group_name`, `gfx_arch_family`, `gfx_arches`,
//! `compression_scheme` and `toc` = `{"<kernel_name>#<N>": {"<arch>": {type, ordinal,
//! original_size, metadata?}}}`. With `zstd-per-kernel` the blob at `zstd_offset` (size
//! `zstd_size`) is `u32 count` then, per ordinal, `u32 frame_size` and one zstd frame; with
//! `none` the TOC has `blobs: [{offset, size}]` indexed by ordinal. Keys gfxkit does not know
//! are ignored, as the runtime does.
//!
//! [`Archive::parse`] reads the header and TOC and indexes the frames (no decompression);
//! [`Archive::payload`] decodes one kernel on demand into a buffer bounded by its
//! `original_size` and checks the length produced (and the frame's content checksum, when it
//! has one); [`Archive::code_object`] also checks that the result is a code object for the
//! kernel's architecture.

use crate::error::{fail, Error, ErrorKind, Result};
use crate::limits;
use gfxkit_bytes::{Cursor, OutOfBounds};
use rmpv::Value;
use serde::Serialize;
use std::borrow::Cow;
use std::io::Read;

/// Archive magic.
pub const MAGIC: &[u8; 4] = b"KPAK";
/// The one format version in use.
pub const VERSION: u32 = 1;
/// Size of the fixed header (the blob starts here).
pub const HEADER_SIZE: u64 = 64;

/// Whether `data` starts like a kpack archive.
pub fn is_kpack(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// How kernels are stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "scheme")]
pub enum Scheme {
    /// `zstd-per-kernel`: one zstd frame per kernel.
    ZstdPerKernel {
        /// `zstd_offset`: absolute offset of the frame blob.
        offset: u64,
        /// `zstd_size`: its size.
        size: u64,
    },
    /// `none`: kernels stored as they are.
    None,
}

impl Scheme {
    /// The name written in the TOC.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::ZstdPerKernel { .. } => "zstd-per-kernel",
            Scheme::None => "none",
        }
    }
}

/// One kernel (code object) listed in the TOC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kernel {
    /// TOC key: `<kernel_name>#<N>`.
    pub key: String,
    /// Architecture (a target ID such as `gfx90a:xnack+`).
    pub arch: String,
    /// `type` (`hsaco`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Index into the frames or blobs.
    pub ordinal: u64,
    /// `original_size`, when given.
    pub original_size: Option<u64>,
    /// Absolute offset of the stored bytes (frame or blob).
    pub stored_offset: u64,
    /// Stored bytes (compressed frame or raw blob).
    pub stored_size: u64,
}

impl Kernel {
    /// The part of the key before `#`.
    pub fn kernel_name(&self) -> &str {
        split_key(&self.key).0
    }

    /// The index after `#`, when it is a number.
    pub fn index(&self) -> Option<u32> {
        split_key(&self.key).1
    }
}

/// Splits `name#N` into the name and N.
pub fn split_key(key: &str) -> (&str, Option<u32>) {
    match key.rsplit_once('#') {
        Some((name, n)) => (name, n.parse().ok()),
        None => (key, None),
    }
}

/// A parsed archive, borrowing its bytes.
#[derive(Debug, Clone)]
pub struct Archive<'data> {
    data: &'data [u8],
    /// Header version (1).
    pub version: u32,
    /// Absolute offset of the TOC.
    pub toc_offset: u64,
    /// TOC `format_version`.
    pub format_version: Option<u64>,
    /// `group_name`.
    pub group_name: Option<String>,
    /// `gfx_arch_family`.
    pub arch_family: Option<String>,
    /// `gfx_arches`.
    pub arches: Vec<String>,
    /// How kernels are stored.
    pub scheme: Scheme,
    /// Frames or blobs, by ordinal: (absolute offset, size).
    pub stored: Vec<(u64, u64)>,
    /// Every kernel of the TOC, sorted by key, then architecture.
    pub kernels: Vec<Kernel>,
}

/// A read of the archive's cursor that ran past the end, named `what`.
fn truncated(what: &'static str, e: OutOfBounds) -> Error {
    Error::at(
        e.offset(),
        ErrorKind::Truncated {
            what,
            need: e.len,
            have: e.end.saturating_sub(e.at),
        },
    )
}

fn bad_toc<T>(at: u64, msg: impl Into<String>) -> Result<T> {
    fail(at, ErrorKind::BadToc(msg.into()))
}

fn get<'v>(map: &'v [(Value, Value)], key: &str) -> Option<&'v Value> {
    map.iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn uint(map: &[(Value, Value)], key: &str, at: u64) -> Result<Option<u64>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) => Ok(Some(n)),
            None => bad_toc(at, format!("{key} is {v}, expected an unsigned integer")),
        },
    }
}

fn string(map: &[(Value, Value)], key: &str, at: u64) -> Result<Option<String>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => match v.as_str() {
            Some(s) => Ok(Some(s.to_owned())),
            None => bad_toc(at, format!("{key} is {v}, expected a string")),
        },
    }
}

/// The header of archive `data`: its version and the TOC's offset, checked to lie after the
/// header and inside the file.
fn read_header(data: &[u8]) -> Result<(u32, u64)> {
    if !is_kpack(data) {
        return fail(
            0,
            ErrorKind::BadMagic {
                found: data.iter().take(4).copied().collect(),
            },
        );
    }
    let c = Cursor::new(data);
    let version = c.u32(4).map_err(|e| truncated("header", e))?;
    if version != VERSION {
        return fail(4, ErrorKind::UnsupportedVersion(version.into()));
    }
    let toc_offset = c.u64(8).map_err(|e| truncated("header", e))?;
    let len = data.len() as u64;
    if let Err(e) = c.sub(0, HEADER_SIZE) {
        return Err(truncated("header", e));
    }
    if toc_offset < HEADER_SIZE || toc_offset >= len {
        return bad_toc(
            8,
            format!(
                "toc_offset {toc_offset:#x} is outside the file (header ends at {HEADER_SIZE:#x}, \
                 file is {len:#x} bytes)"
            ),
        );
    }
    Ok((version, toc_offset))
}

/// The TOC at `toc_offset`: a MessagePack map (its nesting bounded).
fn read_toc(data: &[u8], toc_offset: u64) -> Result<Vec<(Value, Value)>> {
    let mut rd = &data[toc_offset as usize..];
    let toc = rmpv::decode::read_value_with_max_depth(&mut rd, limits::MAX_TOC_DEPTH)
        .map_err(|e| Error::at(toc_offset, ErrorKind::BadToc(format!("MessagePack: {e}"))))?;
    let Value::Map(top) = toc else {
        return bad_toc(toc_offset, format!("expected a map, found {toc}"));
    };
    Ok(top)
}

/// The TOC's `gfx_arches` (none when absent): an array of strings.
fn gfx_arches(top: &[(Value, Value)], at: u64) -> Result<Vec<String>> {
    Ok(match get(top, "gfx_arches") {
        None => Vec::new(),
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for v in a {
                match v.as_str() {
                    Some(s) => out.push(s.to_owned()),
                    None => return bad_toc(at, format!("gfx_arches holds {v}, not a string")),
                }
            }
            out
        }
        Some(v) => return bad_toc(at, format!("gfx_arches is {v}, expected an array")),
    })
}

/// How the TOC (at `toc_offset`) says kernels are stored, and each stored kernel's offset
/// and size: the frames of the zstd blob, or the uncompressed blobs, each checked to lie
/// between the header and the TOC.
fn stored_kernels(
    data: &[u8],
    top: &[(Value, Value)],
    toc_offset: u64,
) -> Result<(Scheme, Vec<(u64, u64)>)> {
    let at = toc_offset;
    let scheme_name = string(top, "compression_scheme", at)?.unwrap_or_else(|| "none".into());
    let (scheme, stored) = match scheme_name.as_str() {
        "zstd-per-kernel" => {
            let offset = uint(top, "zstd_offset", at)?
                .ok_or_else(|| Error::at(at, ErrorKind::BadToc("zstd_offset missing".into())))?;
            let size = uint(top, "zstd_size", at)?
                .ok_or_else(|| Error::at(at, ErrorKind::BadToc("zstd_size missing".into())))?;
            let end = offset.checked_add(size).filter(|&e| e <= toc_offset);
            if offset < HEADER_SIZE || end.is_none() {
                return bad_toc(
                    at,
                    format!(
                        "zstd blob {offset:#x}+{size:#x} is outside {HEADER_SIZE:#x}..{toc_offset:#x} \
                         (between the header and the TOC)"
                    ),
                );
            }
            let frames = index_frames(data, offset, size)?;
            (Scheme::ZstdPerKernel { offset, size }, frames)
        }
        "none" => {
            let blobs = match get(top, "blobs") {
                None => &[][..],
                Some(Value::Array(a)) => a.as_slice(),
                Some(v) => return bad_toc(at, format!("blobs is {v}, expected an array")),
            };
            let mut out = Vec::new();
            for (i, b) in blobs.iter().enumerate() {
                let Value::Map(m) = b else {
                    return bad_toc(at, format!("blobs[{i}] is {b}, expected a map"));
                };
                let (Some(o), Some(s)) = (uint(m, "offset", at)?, uint(m, "size", at)?) else {
                    return bad_toc(at, format!("blobs[{i}] lacks offset or size"));
                };
                if o < HEADER_SIZE || !matches!(o.checked_add(s), Some(e) if e <= toc_offset) {
                    return fail(
                        o,
                        ErrorKind::Truncated {
                            what: "blob",
                            need: s,
                            have: toc_offset.saturating_sub(o),
                        },
                    );
                }
                out.push((o, s));
            }
            (Scheme::None, out)
        }
        other => return fail(at, ErrorKind::UnknownScheme(other.to_owned())),
    };
    Ok((scheme, stored))
}

/// The kernels the TOC's `toc` map names (key, then architecture), each with its stored
/// blob found by ordinal among `stored`; at most [`limits::MAX_KERNELS`].
fn toc_kernels(top: &[(Value, Value)], stored: &[(u64, u64)], at: u64) -> Result<Vec<Kernel>> {
    let mut kernels = Vec::new();
    match get(top, "toc") {
        None => {}
        Some(Value::Map(entries)) => {
            for (k, per_arch) in entries {
                let Some(key) = k.as_str() else {
                    return bad_toc(at, format!("toc key {k} is not a string"));
                };
                let Value::Map(per_arch) = per_arch else {
                    return bad_toc(at, format!("toc[{key:?}] is {per_arch}, expected a map"));
                };
                for (a, e) in per_arch {
                    let Some(arch) = a.as_str() else {
                        return bad_toc(at, format!("toc[{key:?}] has key {a}, not a string"));
                    };
                    let Value::Map(e) = e else {
                        return bad_toc(at, format!("toc[{key:?}][{arch:?}] is not a map"));
                    };
                    let Some(ordinal) = uint(e, "ordinal", at)? else {
                        return bad_toc(at, format!("toc[{key:?}][{arch:?}] has no ordinal"));
                    };
                    let Some(&(so, ss)) = usize::try_from(ordinal).ok().and_then(|o| stored.get(o))
                    else {
                        return fail(
                            at,
                            ErrorKind::OrdinalOutOfRange {
                                key: key.to_owned(),
                                arch: arch.to_owned(),
                                ordinal,
                                count: stored.len() as u64,
                            },
                        );
                    };
                    kernels.push(Kernel {
                        key: key.to_owned(),
                        arch: arch.to_owned(),
                        kind: string(e, "type", at)?.unwrap_or_default(),
                        ordinal,
                        original_size: uint(e, "original_size", at)?,
                        stored_offset: so,
                        stored_size: ss,
                    });
                    if kernels.len() > limits::MAX_KERNELS {
                        return bad_toc(at, format!("more than {} kernels", limits::MAX_KERNELS));
                    }
                }
            }
        }
        Some(v) => return bad_toc(at, format!("toc is {v}, expected a map")),
    }
    Ok(kernels)
}

impl<'data> Archive<'data> {
    /// Reads the header and TOC of `data` and indexes the stored kernels (frames are walked,
    /// not decoded). Every offset and count is checked against the bytes present.
    pub fn parse(data: &'data [u8]) -> Result<Archive<'data>> {
        let (version, toc_offset) = read_header(data)?;
        let top = read_toc(data, toc_offset)?;
        let at = toc_offset;
        let format_version = uint(&top, "format_version", at)?;
        if let Some(v) = format_version {
            if v != u64::from(VERSION) {
                return fail(at, ErrorKind::UnsupportedVersion(v));
            }
        }
        let group_name = string(&top, "group_name", at)?;
        let arch_family = string(&top, "gfx_arch_family", at)?;
        let arches = gfx_arches(&top, at)?;
        let (scheme, stored) = stored_kernels(data, &top, toc_offset)?;
        let mut kernels = toc_kernels(&top, &stored, at)?;
        check_consistency(&kernels, &stored, &arches, &scheme, data, at)?;
        kernels.sort_by(|a, b| (&a.key, &a.arch).cmp(&(&b.key, &b.arch)));
        Ok(Archive {
            data,
            version,
            toc_offset,
            format_version,
            group_name,
            arch_family,
            arches,
            scheme,
            stored,
            kernels,
        })
    }

    /// The archive's bytes.
    pub fn bytes(&self) -> &'data [u8] {
        self.data
    }

    /// Whether `gfx_arches` lists `arch` (exact string, as the runtime compares).
    pub fn has_arch(&self, arch: &str) -> bool {
        self.arches.iter().any(|a| a == arch)
    }

    /// The kernel stored for `key` and `arch`.
    pub fn kernel(&self, key: &str, arch: &str) -> Option<&Kernel> {
        self.kernels
            .binary_search_by(|k| (k.key.as_str(), k.arch.as_str()).cmp(&(key, arch)))
            .ok()
            .map(|i| &self.kernels[i])
    }

    /// Whether the TOC has an entry for `key` (any architecture).
    pub fn has_key(&self, key: &str) -> bool {
        self.kernels.iter().any(|k| k.key == key)
    }

    /// The code object of `k`, decoded: borrowed for `none`, decompressed into a buffer of at
    /// most `original_size` (+1 to detect excess) for `zstd-per-kernel`. The length produced
    /// must equal `original_size` when the TOC gives it.
    pub fn payload(&self, k: &Kernel) -> Result<Cow<'data, [u8]>> {
        let stored = self.stored_bytes(k)?;
        let out: Cow<'data, [u8]> = match self.scheme {
            Scheme::None => Cow::Borrowed(stored),
            Scheme::ZstdPerKernel { .. } => {
                let declared = k.original_size.unwrap_or(limits::MAX_KERNEL_SIZE);
                if declared > limits::MAX_KERNEL_SIZE {
                    return fail(
                        k.stored_offset,
                        ErrorKind::TooLarge {
                            key: k.key.clone(),
                            arch: k.arch.clone(),
                            size: declared,
                            limit: limits::MAX_KERNEL_SIZE,
                        },
                    );
                }
                Cow::Owned(decode_frame(stored, declared, k)?)
            }
        };
        if let Some(expected) = k.original_size {
            if out.len() as u64 != expected {
                return fail(
                    k.stored_offset,
                    ErrorKind::SizeMismatch {
                        key: k.key.clone(),
                        arch: k.arch.clone(),
                        expected,
                        got: out.len() as u64,
                    },
                );
            }
        }
        Ok(out)
    }

    /// The code object of `k`: [`Archive::payload`] (which checks a frame's content checksum
    /// when it has one, as gfxkit's frames do), then what holds for any frame, checksum or not
    /// (TheRock's frames have none): the bytes read as an AMDGPU code object whose identity
    /// can be trusted (the check of writers such as `extract`,
    /// [`gfxkit_code_object::CodeObject::check_identity`]) and whose `e_flags` are those of the
    /// kernel's architecture. Errors are at the kernel's stored offset.
    pub fn code_object(&self, k: &Kernel) -> Result<Cow<'data, [u8]>> {
        let p = self.payload(k)?;
        check_code_object(&p, &k.key, &k.arch, k.stored_offset)?;
        Ok(p)
    }

    /// Whether the stored frame of `k` carries zstd's content checksum (always `false` for
    /// `none`, and for bytes that are not a zstd frame).
    pub fn has_checksum(&self, k: &Kernel) -> bool {
        matches!(self.scheme, Scheme::ZstdPerKernel { .. })
            && self.stored_bytes(k).is_ok_and(frame_has_checksum)
    }

    /// The uncompressed size of `k`: `original_size`, else (for `none`) the blob size, else
    /// the frame's declared content size.
    pub fn size_of(&self, k: &Kernel) -> Option<u64> {
        if let Some(s) = k.original_size {
            return Some(s);
        }
        match self.scheme {
            Scheme::None => Some(k.stored_size),
            Scheme::ZstdPerKernel { .. } => {
                let s = self.stored_bytes(k).ok()?;
                zstd::zstd_safe::get_frame_content_size(s).ok().flatten()
            }
        }
    }

    /// The stored bytes of `k` (checked against the archive, since a [`Kernel`] may come from
    /// elsewhere).
    pub fn stored_bytes(&self, k: &Kernel) -> Result<&'data [u8]> {
        let range = usize::try_from(k.stored_offset).ok().and_then(|o| {
            let n = usize::try_from(k.stored_size).ok()?;
            self.data.get(o..o.checked_add(n)?)
        });
        range.ok_or_else(|| {
            Error::at(
                k.stored_offset,
                ErrorKind::Truncated {
                    what: "kernel",
                    need: k.stored_size,
                    have: (self.data.len() as u64).saturating_sub(k.stored_offset),
                },
            )
        })
    }
}

/// The zstd frame magic, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether a zstd frame's header sets `Content_Checksum_flag` (bit 2 of the frame header
/// descriptor, the byte after the magic).
pub fn frame_has_checksum(frame: &[u8]) -> bool {
    frame.starts_with(&ZSTD_MAGIC) && frame.get(4).is_some_and(|d| d & 0x04 != 0)
}

/// That `code` (the kernel `key` for `arch`) is an AMDGPU code object built for `arch`, read
/// to the identity level ([`gfxkit_code_object::CodeObject::check_identity`]); an error names
/// `at`, the kernel's place in its file. The rule of reading an archive's kernel
/// and of moving a bundle entry into one ([`crate::split::split_binary`]).
pub(crate) fn check_code_object(code: &[u8], key: &str, arch: &str, at: u64) -> Result<()> {
    let err = |kind| Err(Error::at(at, kind));
    let not_code_object = |why: String| {
        err(ErrorKind::NotCodeObject {
            key: key.to_owned(),
            arch: arch.to_owned(),
            why,
        })
    };
    let header = match gfxkit_code_object::Header::parse(code) {
        Ok(h) => h,
        Err(e) => return not_code_object(e.in_code_object()),
    };
    // An architecture that is not a target ID names nothing to compare with.
    if let Ok(want) = gfxkit_target_id::TargetId::parse(arch) {
        if let Err(e) = header.check_target(&want) {
            let found = match header.target_id() {
                Ok(t) => t.to_string(),
                Err(_) => format!("e_flags {:#x}", header.e_flags()),
            };
            return err(ErrorKind::WrongTarget {
                key: key.to_owned(),
                arch: arch.to_owned(),
                found,
                why: e.to_string(),
            });
        }
    }
    // The rest of the identity, without decoding every kernel's metadata: the tables, the
    // notes, the metadata's target agreeing with `e_flags`.
    match gfxkit_code_object::CodeObject::check_identity(code) {
        Ok(None) => Ok(()),
        Ok(Some(issue)) => not_code_object(issue.to_string()),
        Err(e) => not_code_object(e.to_string()),
    }
}

/// Decodes one zstd frame, keeping at most `limit + 1` bytes of output.
fn decode_frame(frame: &[u8], limit: u64, k: &Kernel) -> Result<Vec<u8>> {
    let err = |why: String| {
        Error::at(
            k.stored_offset,
            ErrorKind::Decompress {
                key: k.key.clone(),
                arch: k.arch.clone(),
                why,
            },
        )
    };
    // The frame must fill its slot exactly: bytes after it (a cleared checksum flag leaves
    // four) or a frame running past it are damage the decoder alone would not see.
    match zstd::zstd_safe::find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => {}
        Ok(n) => {
            return Err(err(format!(
                "the frame is {n} bytes, but the frame index gives it {}",
                frame.len()
            )))
        }
        Err(code) => return Err(err(zstd::zstd_safe::get_error_name(code).to_owned())),
    }
    let dec = zstd::stream::read::Decoder::with_buffer(frame)
        .map_err(|e| err(e.to_string()))?
        .single_frame();
    // Preallocate what is declared, within what the frame could plausibly produce.
    let cap = limit.min((frame.len() as u64).saturating_mul(64).saturating_add(4096));
    let mut out = Vec::with_capacity(cap as usize);
    dec.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| err(e.to_string()))?;
    Ok(out)
}

/// What the TOC and the stored blobs say of each other, checked before anything is decoded
/// (every one a rule of how archives are written, so a difference is damage): every stored
/// blob or frame is some kernel's (a writer stores nothing else), every kernel's
/// architecture is one `gfx_arches` lists (the runtime's first test), and a kernel's
/// `original_size` is its blob's size (`none`) or its frame's declared content size (a zstd
/// frame that declares one).
fn check_consistency(
    kernels: &[Kernel],
    stored: &[(u64, u64)],
    arches: &[String],
    scheme: &Scheme,
    data: &[u8],
    toc: u64,
) -> Result<()> {
    if kernels.is_empty() && toc > HEADER_SIZE {
        return bad_toc(
            toc,
            format!(
                "the TOC names no kernel, but the archive stores {} bytes between its header \
                 and the TOC (the TOC is damaged)",
                toc - HEADER_SIZE
            ),
        );
    }
    let mut used = vec![false; stored.len()];
    for k in kernels {
        if let Some(u) = usize::try_from(k.ordinal)
            .ok()
            .and_then(|o| used.get_mut(o))
        {
            *u = true;
        }
        if !arches.contains(&k.arch) {
            return bad_toc(
                toc,
                format!(
                    "toc[{:?}] names architecture {:?}, which gfx_arches ({}) does not list",
                    k.key,
                    k.arch,
                    arches.join(", ")
                ),
            );
        }
        let Some(expected) = k.original_size else {
            continue;
        };
        let got = match scheme {
            Scheme::None => Some(k.stored_size),
            Scheme::ZstdPerKernel { .. } => usize::try_from(k.stored_offset)
                .ok()
                .and_then(|o| data.get(o..o.checked_add(usize::try_from(k.stored_size).ok()?)?))
                .and_then(|f| zstd::zstd_safe::get_frame_content_size(f).ok().flatten()),
        };
        if let Some(got) = got.filter(|&g| g != expected) {
            return fail(
                k.stored_offset,
                ErrorKind::SizeMismatch {
                    key: k.key.clone(),
                    arch: k.arch.clone(),
                    expected,
                    got,
                },
            );
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        let what = match scheme {
            Scheme::None => "blob",
            Scheme::ZstdPerKernel { .. } => "zstd frame",
        };
        return fail(
            stored[i].0,
            ErrorKind::BadToc(format!(
                "{what} {i} ({} bytes at {:#x}) is no kernel's: no TOC entry has ordinal {i} \
                 (the TOC at {toc:#x} is damaged)",
                stored[i].1, stored[i].0
            )),
        );
    }
    Ok(())
}

/// Walks the `zstd-per-kernel` blob: `u32 count`, then `count` times `u32 size` + frame.
fn index_frames(data: &[u8], offset: u64, size: u64) -> Result<Vec<(u64, u64)>> {
    let blob = Cursor::new(data)
        .sub(offset, size)
        .map_err(|e| truncated("zstd blob", e))?;
    let count = blob.u32(0).map_err(|e| truncated("frame count", e))?;
    let mut at = 4u64;
    let mut out = Vec::new();
    for i in 0..count {
        let n = u64::from(blob.u32(at).map_err(|_| {
            Error::at(
                blob.inside(at),
                ErrorKind::BadToc(format!(
                    "zstd blob holds {i} frames, but its count says {count}"
                )),
            )
        })?);
        let start = at + 4;
        blob.slice(start, n).map_err(|_| {
            Error::at(
                blob.abs(at),
                ErrorKind::Truncated {
                    what: "zstd frame",
                    need: n,
                    have: size.saturating_sub(start),
                },
            )
        })?;
        if blob.slice(start, 4).ok() != Some(&[0x28, 0xb5, 0x2f, 0xfd][..]) {
            let at = blob.abs(start);
            return fail(
                at,
                ErrorKind::BadToc(format!(
                    "zstd frame {i} at {at:#x} does not start with the zstd magic \
                     (28 b5 2f fd): the frame, or a frame size before it, is damaged"
                )),
            );
        }
        out.push((blob.abs(start), n));
        at = start + n;
    }
    if at != blob.len() {
        let (at, end) = (blob.abs(at), blob.abs(blob.len()));
        return fail(
            at,
            ErrorKind::BadToc(format!(
                "the zstd blob's {count} frames end at {at:#x}, not at the blob's end {end:#x}"
            )),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_key_reads_the_index() {
        assert_eq!(split_key("lib/libfoo.so#12"), ("lib/libfoo.so", Some(12)));
        assert_eq!(split_key("a#b#3"), ("a#b", Some(3)));
        assert_eq!(split_key("plain"), ("plain", None));
    }

    #[test]
    fn short_and_foreign_inputs_are_refused() {
        assert!(matches!(
            Archive::parse(b"KPA").unwrap_err().kind,
            ErrorKind::BadMagic { .. }
        ));
        assert!(matches!(
            Archive::parse(b"KPAK\x01\0\0\0").unwrap_err().kind,
            ErrorKind::Truncated { .. }
        ));
        let mut h = b"KPAK\x02\0\0\0".to_vec();
        h.resize(80, 0);
        assert_eq!(
            Archive::parse(&h).unwrap_err().kind,
            ErrorKind::UnsupportedVersion(2)
        );
    }
}
