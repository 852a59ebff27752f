//! Splitting a fat binary into a host binary plus archive contents, and inlining them back.
//!
//! [`split_binary`] reads each wrapper's bundle (uncompressed or CCOB), moves every
//! `hip`/`hipv4` `amdgcn-amd-amdhsa` entry to a kernel keyed `<kernel_name>#<N>` (N = the
//! wrapper's index in `.hipFatBinSegment`) under its target ID, drops the host entries, and
//! has `gfxkit_shrink::kpack::split_elf` lay the host binary out; [`check_split`] reads it
//! back as the runtime will. [`group_by_arch`] and
//! [`crate::write::write_archive`] make one archive per architecture. [`inline_binary`] looks
//! each wrapper's key up in the archives given and plans one bundle per wrapper
//! (`host-x86_64-unknown-linux--` plus `hipv4-amdgcn-amd-amdhsa--<arch>` entries, sorted by
//! architecture, 4096-aligned like the HIP driver) from the code objects' sizes, then
//! `inline_elf` lays them out in a new `.hip_fatbin`: the result is a
//! [`gfxkit_shrink::Output`] whose bundles are made one at a time as it is written, never
//! all held; [`check_inline`] reads the written result back.

use crate::archive::{Archive, Kernel};
use crate::error::{fail, Error, ErrorKind, Result};
use crate::limits;
use crate::marker::{self, KpackRef};
use gfxkit_bundle::ccob::DecompressOptions;
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::{AnyBundle, Bundle, Format};
use gfxkit_bytes::Cursor;
use gfxkit_host::{WrapperMagic, WrapperTarget};
use gfxkit_shrink::output::Deferred;
use gfxkit_shrink::Output;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A code object of a bundle, its architecture, and whether it is held as its zstd frame.
type ArchPayload<'data> = (String, Cow<'data, [u8]>, Option<Compressed>);

/// A kernel moved out of a binary.
#[derive(Debug, Clone)]
pub struct KernelOut<'data> {
    /// `<kernel_name>#<N>`.
    pub key: String,
    /// Target ID.
    pub arch: String,
    /// The code object (borrowed from an uncompressed bundle, owned when decompressed), or
    /// with [`KernelOut::compressed`] its zstd frame.
    pub bytes: Cow<'data, [u8]>,
    /// Set when `bytes` is the code object's zstd frame ([`split_binary_framed`]).
    pub compressed: Option<Compressed>,
}

/// What a kernel held as its zstd frame was ([`KernelOut::compressed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressed {
    /// The code object's size in bytes.
    pub size: u64,
    /// The zstd level of the frame.
    pub level: i32,
}

impl KernelOut<'_> {
    /// The kernel as an archive takes it ([`crate::write::encode_stored`]).
    pub fn stored(&self) -> crate::write::Stored<'_> {
        match self.compressed {
            None => crate::write::Stored::Plain(&self.bytes),
            Some(c) => crate::write::Stored::Frame {
                frame: &self.bytes,
                size: c.size,
                level: c.level,
            },
        }
    }
}

/// The result of [`split_binary`].
#[derive(Debug, Clone)]
pub struct SplitBinary<'data> {
    /// The host-only binary.
    pub host: Vec<u8>,
    /// Every code object, in wrapper order then entry order.
    pub kernels: Vec<KernelOut<'data>>,
    /// Number of wrappers (N runs from 0 to this, exclusive).
    pub wrappers: usize,
    /// The marker written.
    pub marker: KpackRef,
    /// Bytes the file shrank by in the ELF layout (the output is this much shorter than the
    /// input, give or take the new headers).
    pub shift: u64,
}

fn shrink_err(e: gfxkit_shrink::Error) -> Error {
    Error::at(e.offset, ErrorKind::Rewrite(e.kind.to_string()))
}

/// The architecture of a device entry ID (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+` and
/// `hip-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+` give `gfx90a:xnack+`, the canonical target ID),
/// `Ok(None)` for host entries, an error for device code that has no place in a kpack archive:
/// an ID that does not parse ([`gfxkit_bundle::EntryId`]), a kind other than `hip`/`hipv4`, a
/// triple other than an AMDGPU (`amdgcn`, `amdgpu<subarch>`) `amdhsa` one, or no target.
pub fn entry_arch(id: &str) -> std::result::Result<Option<String>, String> {
    let parsed = gfxkit_bundle::EntryId::parse(id).map_err(|e| format!("entry {id}: {e}"))?;
    if parsed.is_host() {
        return Ok(None);
    }
    let hip = matches!(
        parsed.kind(),
        gfxkit_bundle::OffloadKind::Hip | gfxkit_bundle::OffloadKind::HipV4
    );
    let t = parsed.triple();
    if !hip || !t.is_amdgpu() || !t.is_amdhsa() || parsed.target().is_none() {
        return Err(format!(
            "entry {id} is not HIP AMDGPU code (kpack archives hold hip/hipv4 amdgcn-amd-amdhsa code objects)"
        ));
    }
    Ok(Some(parsed.target().to_string()))
}

/// The signed PE image `data` without its Authenticode signature (a split or inline
/// invalidates it; `--drop-signature`), `None` when it is no PE image or is not signed
/// (`gfxkit_shrink::pe::without_signature`).
pub fn without_signature(data: &[u8]) -> Result<Option<Vec<u8>>> {
    gfxkit_shrink::pe::without_signature(data).map_err(shrink_err)
}

/// How a binary is laid out for a split or an inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// An ELF shared object or executable (`gfxkit_shrink::kpack`).
    Elf,
    /// A PE32+ image, a DLL or EXE (`gfxkit_shrink::pe::kpack`).
    Pe,
}

/// The layout of `data`; COFF objects and `ar` archives (static libraries) are refused with
/// the reason (what is split is a linked binary).
fn layout_of(data: &[u8]) -> Result<Layout> {
    use gfxkit_host::InputKind;
    let why = match InputKind::sniff(data.get(..4096).unwrap_or(data)) {
        InputKind::PeImage => return Ok(Layout::Pe),
        InputKind::CoffObject => {
            "a COFF object (Windows): kpack split and inline rewrite linked binaries (a DLL or \
             EXE, a shared object or executable); link it first"
        }
        InputKind::PeOther => {
            "a PE/COFF file other than an x86-64 PE32+ image: kpack split and inline rewrite \
             x86-64 DLLs and EXEs"
        }
        InputKind::Archive => {
            "an ar archive (a static library, .a or .lib): kpack split and inline rewrite linked \
             binaries (a DLL or EXE, a shared object or executable); link its objects first"
        }
        _ => return Ok(Layout::Elf),
    };
    fail(0, ErrorKind::Unsupported(why.into()))
}

/// Splits `data` (a fat x86-64 shared object or executable, or a PE32+ DLL or EXE): the host
/// binary with a marker `{kernel_name, search_paths}` (`.rocm_kpack_ref`, `.kpackrf` in a PE
/// image), and every code object keyed for the archives. Bundles are read under the default
/// [`Limits`]; [`split_binary_with`] takes the caller's.
pub fn split_binary<'data>(
    data: &'data [u8],
    kernel_name: &str,
    search_paths: &[String],
) -> Result<SplitBinary<'data>> {
    split_binary_with(data, kernel_name, search_paths, &Limits::default())
}

/// [`split_binary`] with the bundles read under `limits`.
pub fn split_binary_with<'data>(
    data: &'data [u8],
    kernel_name: &str,
    search_paths: &[String],
    limits: &Limits,
) -> Result<SplitBinary<'data>> {
    split(data, kernel_name, search_paths, limits, None)
}

/// [`split_binary_with`] for archives written with zstd at `level`: the code objects of
/// compressed (CCOB) bundles come out as the zstd frames those archives store
/// ([`KernelOut::compressed`]), each made as soon as its bundle is decoded, so that a split
/// holds the frames, never every decoded code object at once (a binary's 28 MB of compressed
/// bundles can hold 2.3 GiB of code objects). The archives made of them are the same bytes.
/// Code objects of uncompressed bundles stay borrowed from `data`.
pub fn split_binary_framed<'data>(
    data: &'data [u8],
    kernel_name: &str,
    search_paths: &[String],
    limits: &Limits,
    level: i32,
) -> Result<SplitBinary<'data>> {
    split(data, kernel_name, search_paths, limits, Some(level))
}

/// [`split_binary_with`], compressed code objects held as zstd frames at `frame_level` when
/// it is given ([`split_binary_framed`]).
fn split<'data>(
    data: &'data [u8],
    kernel_name: &str,
    search_paths: &[String],
    limits: &Limits,
    frame_level: Option<i32>,
) -> Result<SplitBinary<'data>> {
    if kernel_name.is_empty() || kernel_name.contains('#') {
        return fail(
            0,
            ErrorKind::Unsupported(format!(
                "kernel name {kernel_name:?} must be non-empty and without '#'"
            )),
        );
    }
    let r = KpackRef {
        kernel_name: Some(kernel_name.to_owned()),
        search_paths: search_paths.to_vec(),
    };
    if let Some(why) = marker::runtime_problem(&r) {
        return fail(0, ErrorKind::BadMarker(why.into()));
    }
    let m = marker::encode(&r);
    let split = match layout_of(data)? {
        Layout::Elf => gfxkit_shrink::kpack::split_elf(data, &m),
        Layout::Pe => gfxkit_shrink::pe::kpack::split_image(data, &m, limits),
    }
    .map_err(shrink_err)?;
    let opts = limits.decompress_options();
    // Bundles read once each (two wrappers may share one): the first wrapper leading to each
    // names it in errors.
    let mut first: BTreeMap<u64, usize> = BTreeMap::new();
    let mut distinct = Vec::new();
    for (n, &off) in split.wrapper_bundles.iter().enumerate() {
        if let std::collections::btree_map::Entry::Vacant(v) = first.entry(off) {
            v.insert(distinct.len());
            distinct.push((n, off));
        }
    }
    // Read and checked in parallel; the error reported is the first in wrapper order, as if
    // they were read one after the other.
    let read: Vec<Result<Vec<ArchPayload<'data>>>> = distinct
        .par_iter()
        .map(|&(n, off)| bundle_payloads(data, kernel_name, n, off, &opts, frame_level))
        .collect();
    let mut seen: Vec<Option<Vec<ArchPayload<'data>>>> = read
        .into_iter()
        .map(|r| r.map(Some))
        .collect::<Result<_>>()?;
    // The code objects of a bundle go to the last wrapper that leads to it and are copied
    // only for the others (two wrappers sharing a bundle): a decompressed bundle's code
    // objects are held once, not twice.
    let mut uses = vec![0usize; seen.len()];
    for off in &split.wrapper_bundles {
        uses[first[off]] += 1;
    }
    let mut kernels = Vec::new();
    for (n, off) in split.wrapper_bundles.iter().enumerate() {
        let key = format!("{kernel_name}#{n}");
        let i = first[off];
        uses[i] -= 1;
        let payloads = if uses[i] == 0 {
            seen[i].take().unwrap_or_default()
        } else {
            seen[i].clone().unwrap_or_default()
        };
        for (arch, bytes, compressed) in payloads {
            kernels.push(KernelOut {
                key: key.clone(),
                arch,
                bytes,
                compressed,
            });
        }
    }
    Ok(SplitBinary {
        host: split.bytes,
        kernels,
        wrappers: split.wrapper_bundles.len(),
        marker: r,
        shift: split.shift,
    })
}

/// The device code objects of the bundle at `off` (led to by wrapper `n`, the first that
/// leads there) and their architectures, each checked as the archive's reader will check it;
/// those of a compressed bundle held as their zstd frames at `frame_level` when it is given
/// (compressed in parallel, while the decoded bundle is held), else copied out of it.
fn bundle_payloads<'data>(
    data: &'data [u8],
    kernel_name: &str,
    n: usize,
    off: u64,
    opts: &DecompressOptions,
    frame_level: Option<i32>,
) -> Result<Vec<ArchPayload<'data>>> {
    let key = format!("{kernel_name}#{n}");
    // Located at its file offset: the bundle reader's errors name file offsets.
    let located = Cursor::new(data).tail(off);
    let at = located.bytes();
    let bad = |e: gfxkit_bundle::Error| Error::at(off, ErrorKind::Bundle(e.to_string()));
    match gfxkit_bundle::detect(at) {
        Some(Format::Uncompressed) => {
            let b = Bundle::parse_at(located).map_err(bad)?;
            let entries = device_entries(&b, &key, n, off)?;
            Ok(entries
                .into_iter()
                .map(|(a, p)| (a, Cow::Borrowed(p), None))
                .collect())
        }
        Some(Format::Ccob) => {
            let any = AnyBundle::parse_at(located, opts).map_err(bad)?;
            let b = any.bundle().map_err(bad)?;
            let entries = device_entries(&b, &key, n, off)?;
            match frame_level {
                Some(level) => entries
                    .into_par_iter()
                    .map(|(a, p)| {
                        let frame = crate::write::zstd_frame(p, level).map_err(|e| {
                            Error::at(off, ErrorKind::Unsupported(format!("{key} ({a}): {e}")))
                        })?;
                        let size = p.len() as u64;
                        Ok((a, Cow::Owned(frame), Some(Compressed { size, level })))
                    })
                    .collect(),
                None => Ok(entries
                    .into_iter()
                    .map(|(a, p)| (a, Cow::Owned(p.to_vec()), None))
                    .collect()),
            }
        }
        None => fail(
            off,
            ErrorKind::Bundle(format!(
                "wrapper {n} points to {off:#x}, where no offload bundle starts"
            )),
        ),
    }
}

/// The device entries of bundle `b` (of wrapper `n`, key `key`, at `off`): their
/// architectures and code objects, in entry order, once each of them is known to be what a
/// kpack archive holds and its reader takes back.
fn device_entries<'b>(
    b: &Bundle<'b>,
    key: &str,
    n: usize,
    off: u64,
) -> Result<Vec<(String, &'b [u8])>> {
    let mut entries = Vec::new();
    for e in b.entries() {
        if let Some(a) = entry_arch(e.id).map_err(|m| Error::at(off, ErrorKind::Unsupported(m)))? {
            entries.push((a, e.payload));
        }
    }
    let mut archs: Vec<&str> = entries.iter().map(|(a, _)| a.as_str()).collect();
    archs.sort_unstable();
    if archs.windows(2).any(|w| w[0] == w[1]) {
        return fail(
            off,
            ErrorKind::Unsupported(format!(
                "the bundle of wrapper {n} holds two entries for one architecture"
            )),
        );
    }
    // Each code object must be one the archive's reader takes back: built for the
    // architecture its entry ID names (an entry that contradicts its ID is damage the split
    // would carry into the archive, where the loader hands it to that device).
    for (arch, bytes) in &entries {
        crate::archive::check_code_object(bytes, key, arch, off)?;
    }
    Ok(entries)
}

/// Checks that a split reads back as one, the way the runtime will read it: the host binary's
/// segments keep the rules of `gfxkit_shrink::check`, and its wrappers, found by
/// `gfxkit_host::discover`, are exactly the input's, each `HIPK`, numbered from 0 in order and
/// leading to the marker written. `gfxkit kpack split` runs this before it writes anything.
pub fn check_split(s: &SplitBinary<'_>) -> Result<()> {
    check_layout(&s.host)?;
    let found = gfxkit_host::discover(&s.host);
    if found.wrappers.len() != s.wrappers {
        return fail(
            0,
            ErrorKind::Rewrite(format!(
                "the split binary reads back with {} wrappers, the input had {}",
                found.wrappers.len(),
                s.wrappers
            )),
        );
    }
    for (n, w) in found.wrappers.iter().enumerate() {
        let wrong = if w.magic != WrapperMagic::Hipk {
            Some("is not HIPK")
        } else if w.kpack_index() != Some(n as u32) {
            Some("has another index")
        } else if w.kpack.as_ref() != Some(&s.marker) {
            Some("does not lead to the marker written")
        } else {
            None
        };
        if let Some(why) = wrong {
            return fail(
                w.location.offset,
                ErrorKind::Rewrite(format!("wrapper {n} of the split binary {why}")),
            );
        }
    }
    Ok(())
}

/// The layout rules of a written binary: `gfxkit_shrink::check::elf_segments` for ELF files,
/// `gfxkit_shrink::pe::kpack::check_image` for PE images.
fn check_layout(data: &[u8]) -> Result<()> {
    match layout_of(data)? {
        Layout::Elf => gfxkit_shrink::check::elf_segments(data),
        Layout::Pe => gfxkit_shrink::pe::kpack::check_image(data),
    }
    .map_err(shrink_err)
}

/// Kernels grouped by architecture, architectures sorted, kernels in the order given.
pub fn group_by_arch<'k, 'data>(
    kernels: impl IntoIterator<Item = &'k KernelOut<'data>>,
) -> BTreeMap<String, Vec<&'k KernelOut<'data>>>
where
    'data: 'k,
{
    let mut out: BTreeMap<String, Vec<&KernelOut>> = BTreeMap::new();
    for k in kernels {
        out.entry(k.arch.clone()).or_default().push(k);
    }
    out
}

/// The result of [`inline_binary`].
#[derive(Debug, Clone)]
pub struct Inlined<'a> {
    /// The fat binary, planned: the split binary's bytes borrowed, and each bundle made from
    /// the archives only when the output is written (one bundle at a time), so that neither
    /// the bundles nor the output are ever held whole.
    pub output: Output<'a>,
    /// Per wrapper: its key and the architectures put in its bundle.
    pub bundles: Vec<(String, Vec<String>)>,
    /// The limits the binary was read under, and [`check_inline`] reads the output under.
    pub limits: Limits,
}

/// The entry ID of a bundle's host entry.
const HOST_ENTRY: &str = "host-x86_64-unknown-linux--";

/// Payload alignment of the bundles made (the HIP driver's `-bundle-align`).
const BUNDLE_ALIGN: u64 = 4096;

/// One code object of a bundle being inlined: its entry ID, where it is stored and its
/// decoded size.
struct Entry<'a> {
    id: String,
    archive: &'a Archive<'a>,
    kernel: &'a Kernel,
    size: u64,
}

/// The bundle of one wrapper, made when written: the host entry, then one code object per
/// architecture (sorted), decoded from its archive then, in parallel, and dropped once
/// written. Its length is planned from the code objects' sizes; a code object that decodes
/// to another size stops the write.
struct ArchiveBundle<'a> {
    entries: Vec<Entry<'a>>,
    len: u64,
}

impl std::fmt::Debug for ArchiveBundle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveBundle")
            .field(
                "entries",
                &self
                    .entries
                    .iter()
                    .map(|e| (&e.id, e.size))
                    .collect::<Vec<_>>(),
            )
            .field("len", &self.len)
            .finish()
    }
}

impl ArchiveBundle<'_> {
    /// The code objects, decoded and checked as [`Archive::code_object`] checks them, each of
    /// its planned size; the first error in entry order.
    fn payloads(&self) -> Result<Vec<Cow<'_, [u8]>>> {
        let decoded: Vec<Result<Cow<'_, [u8]>>> = self
            .entries
            .par_iter()
            .map(|e| {
                let p = e.archive.code_object(e.kernel)?;
                if p.len() as u64 != e.size {
                    return fail(
                        e.kernel.stored_offset,
                        ErrorKind::SizeMismatch {
                            key: e.kernel.key.clone(),
                            arch: e.kernel.arch.clone(),
                            expected: e.size,
                            got: p.len() as u64,
                        },
                    );
                }
                Ok(p)
            })
            .collect();
        decoded.into_iter().collect()
    }
}

impl Deferred for ArchiveBundle<'_> {
    fn byte_len(&self) -> u64 {
        self.len
    }

    fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let payloads = self.payloads().map_err(std::io::Error::other)?;
        let mut entries: Vec<(&str, &[u8])> = vec![(HOST_ENTRY, &[])];
        entries.extend(
            self.entries
                .iter()
                .zip(&payloads)
                .map(|(e, p)| (e.id.as_str(), &**p)),
        );
        let mut w = w;
        gfxkit_bundle::write_bundle_to(&mut w, &entries, BUNDLE_ALIGN)?;
        Ok(())
    }
}

/// The kpack error a bundle made by [`inline_binary`] stopped the write of an [`Inlined`]
/// output with (a code object that does not decode, or not to its size), when `e` is one.
pub fn inline_error(e: &std::io::Error) -> Option<&Error> {
    e.get_ref().and_then(|x| x.downcast_ref::<Error>())
}

/// Inlines the split binary `data`: each `HIPK` wrapper's key is looked up in `archives`
/// (first archive holding a (key, architecture) pair wins) and becomes an uncompressed bundle.
/// A wrapper whose key no archive holds is an error naming it.
///
/// Only the sizes of the code objects are read here (from the TOC, or from the frame, or by
/// decoding the code object once when neither says): for an ELF binary the bundles are made,
/// one at a time, when [`Inlined::output`] is written, and a code object that does not decode
/// or check then stops the write with its error ([`inline_error`]). A PE image's `.hip_fat`
/// keeps its addresses, so its bundles are made first, to see whether they fit.
///
/// The binary is read under the default [`Limits`]; [`inline_binary_with`] takes the caller's.
pub fn inline_binary<'a>(data: &'a [u8], archives: &[&'a Archive<'a>]) -> Result<Inlined<'a>> {
    inline_binary_with(data, archives, &Limits::default())
}

/// [`inline_binary`] with the binary (and, in [`check_inline`], the output) read under `limits`.
pub fn inline_binary_with<'a>(
    data: &'a [u8],
    archives: &[&'a Archive<'a>],
    limits: &Limits,
) -> Result<Inlined<'a>> {
    let layout = layout_of(data)?;
    let found = gfxkit_host::discover_with(data, limits);
    let wrappers = match layout {
        Layout::Elf => gfxkit_shrink::kpack::hipk_wrappers(data),
        Layout::Pe => gfxkit_shrink::pe::kpack::hipk_image_wrappers(data),
    }
    .map_err(shrink_err)?;
    let mut bundles = Vec::with_capacity(wrappers.len());
    let mut report = Vec::with_capacity(wrappers.len());
    for (k, &(at, index, _)) in wrappers.iter().enumerate() {
        let r = found
            .wrappers
            .iter()
            .find(|w| w.location.offset == at)
            .and_then(|w| w.kpack.clone())
            .ok_or_else(|| {
                Error::at(
                    at,
                    ErrorKind::BadMarker(format!("wrapper {k}: its marker does not decode")),
                )
            })?;
        let Some(name) = r.kernel_name.as_deref() else {
            return fail(at, ErrorKind::BadMarker("no kernel_name".into()));
        };
        let key = format!("{name}#{index}");
        let mut by_arch: BTreeMap<&str, (&'a Archive<'a>, &'a Kernel)> = BTreeMap::new();
        for &a in archives {
            for kern in a.kernels.iter().filter(|x| x.key == key) {
                by_arch.entry(kern.arch.as_str()).or_insert((a, kern));
            }
        }
        if by_arch.is_empty() {
            return fail(
                at,
                ErrorKind::Unsupported(format!("wrapper {k}: no archive given holds kernel {key}")),
            );
        }
        let mut entries = Vec::with_capacity(by_arch.len());
        for (arch, (a, kern)) in &by_arch {
            let size = match a.size_of(kern) {
                Some(s) => s,
                // Neither the TOC nor the frame says: decoded once to measure.
                None => a.payload(kern)?.len() as u64,
            };
            if size > limits::MAX_KERNEL_SIZE {
                return fail(
                    kern.stored_offset,
                    ErrorKind::TooLarge {
                        key: kern.key.clone(),
                        arch: kern.arch.clone(),
                        size,
                        limit: limits::MAX_KERNEL_SIZE,
                    },
                );
            }
            entries.push(Entry {
                id: format!("hipv4-amdgcn-amd-amdhsa--{arch}"),
                archive: a,
                kernel: kern,
                size,
            });
        }
        let plan = gfxkit_bundle::layout(
            std::iter::once((HOST_ENTRY, 0)).chain(entries.iter().map(|e| (e.id.as_str(), e.size))),
            BUNDLE_ALIGN,
        )
        .map_err(|e| Error::at(at, ErrorKind::Bundle(e.to_string())))?;
        let mut b = Output::new();
        b.push_deferred(ArchiveBundle {
            entries,
            len: plan.total_len,
        });
        bundles.push(b);
        report.push((key, by_arch.keys().map(|a| a.to_string()).collect()));
    }
    let output = match layout {
        Layout::Elf => {
            gfxkit_shrink::kpack::inline_elf(data, bundles, BUNDLE_ALIGN).map_err(shrink_err)?
        }
        Layout::Pe => Output::of(inline_pe(data, bundles)?),
    };
    Ok(Inlined {
        output,
        bundles: report,
        limits: *limits,
    })
}

/// Inlines the split PE image `data` with `bundles` (each made here). `.hip_fat` keeps its
/// addresses, so the bundles must fit its `VirtualSize`; when the uncompressed bundles do not
/// (the original held compressed ones), bundles are compressed (CCOB, zstd, as
/// `clang --offload-compress` writes them), the last first, until they fit.
fn inline_pe(data: &[u8], planned: Vec<Output<'_>>) -> Result<Vec<u8>> {
    use gfxkit_shrink::pe::kpack;
    let mut bundles = Vec::with_capacity(planned.len());
    for b in &planned {
        bundles.push(b.try_to_vec().map_err(|e| match inline_error(&e) {
            Some(k) => k.clone(),
            None => Error::at(0, ErrorKind::Bundle(e.to_string())),
        })?);
    }
    let room = kpack::inline_room(data).map_err(shrink_err)?;
    let needed =
        |b: &[Vec<u8>]| kpack::bundle_offsets(b.iter().map(|b| b.len() as u64), BUNDLE_ALIGN).1;
    // The last bundles first, until the rest fit as they are.
    let opts = gfxkit_bundle::ccob::CompressOptions::default();
    for k in (0..bundles.len()).rev() {
        if needed(&bundles) <= room {
            break;
        }
        let c = gfxkit_bundle::ccob::compress(&bundles[k], &opts)
            .map_err(|e| Error::at(0, ErrorKind::Bundle(e.to_string())))?;
        if c.len() < bundles[k].len() {
            bundles[k] = c;
        }
    }
    kpack::inline_image(data, &bundles, BUNDLE_ALIGN).map_err(shrink_err)
}

/// Checks that an inlined binary reads back as fat: `written` (the bytes of `i.output` as
/// written, read back) keeps the layout rules (`gfxkit_shrink::check` for ELF, the PE image
/// checks for a DLL or EXE), and has one `HIPF` wrapper per bundle made, in order, each
/// leading to the start of an offload bundle whose device entries are the architectures put
/// in it. `gfxkit kpack inline` runs this on the file it wrote before that file replaces
/// anything.
pub fn check_inline(i: &Inlined<'_>, written: &[u8]) -> Result<()> {
    if written.len() as u64 != i.output.len() {
        return fail(
            0,
            ErrorKind::Rewrite(format!(
                "the inlined binary reads back with {} bytes, {} were planned",
                written.len(),
                i.output.len()
            )),
        );
    }
    check_layout(written)?;
    let found = gfxkit_host::discover_with(written, &i.limits);
    if found.wrappers.len() != i.bundles.len() {
        return fail(
            0,
            ErrorKind::Rewrite(format!(
                "the inlined binary reads back with {} wrappers, {} bundles were made",
                found.wrappers.len(),
                i.bundles.len()
            )),
        );
    }
    for (n, (w, (_, arches))) in found.wrappers.iter().zip(&i.bundles).enumerate() {
        let any = match w.target {
            WrapperTarget::Bundle { index } if w.magic == WrapperMagic::Hipf => found
                .bundle_unit(index)
                .and_then(|u| u.ok())
                .and_then(|u| AnyBundle::parse(u.bytes, &i.limits.decompress_options()).ok()),
            _ => None,
        };
        let holds = |b: &AnyBundle<'_>| {
            b.bundle().is_ok_and(|b| {
                b.entries()
                    .iter()
                    .filter_map(|e| entry_arch(e.id).ok().flatten())
                    .eq(arches.iter().cloned())
            })
        };
        if !any.as_ref().is_some_and(holds) {
            return fail(
                w.location.offset,
                ErrorKind::Rewrite(format!(
                    "wrapper {n} of the inlined binary does not lead to its bundle ({})",
                    arches.join(", ")
                )),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_arch_takes_the_target_id() {
        assert_eq!(
            entry_arch("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            Ok(Some("gfx90a:xnack+".to_owned()))
        );
        assert_eq!(entry_arch("host-x86_64-unknown-linux--"), Ok(None));
        assert!(entry_arch("openmp-amdgcn-amd-amdhsa--gfx90a").is_err());
    }
}
