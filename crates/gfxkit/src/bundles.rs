//! Bundles as the bundle commands see them: finding every bundle in a file's bytes, reading
//! entries out of the containers `clang-offload-bundler -type` selects (binary, text, host
//! object), and the pieces `list`, `extract`, `bundle`, `unbundle`, `compress`, `verify` and
//! the drop-in `offload-bundler` share.
//!
//! [`locate`] is the one place that decides where device code is in a file for `list`,
//! `extract` and `verify`: standalone bundle files go through [`find_bundles`] (one bundle, or
//! several back to back like a dumped `.hip_fatbin`); everything else (ELF executables, shared
//! objects, relocatable objects, `ar` archives, OffloadBinaries, code objects) through host
//! discovery ([`gfxkit_host::discover`]), which also reports damage with its location.

use anyhow::{anyhow, Context, Result};

use gfxkit_bundle::compressed::{self as ccob, DecompressOptions, HashCheck};
use gfxkit_bundle::read::{Bundle, MAGIC};
use gfxkit_host::InputKind;
use std::borrow::Cow;

/// What a located unit of device code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// An offload bundle, uncompressed or CCOB (see [`Located::ccob`]).
    Bundle,
    /// `__CLANG_OFFLOAD_BUNDLE__<id>` sections of a host object; entries in [`Located::loose`].
    ObjectBundle,
    /// A standalone AMDGPU code object: one entry named from its `e_flags`.
    CodeObject,
    /// An OffloadBinary image (`.llvm.offloading`): one entry named from its triple and arch.
    OffloadImage,
}

/// An entry of a unit that is not a bundle, with its payload in place.
#[derive(Debug, Clone)]
pub struct LooseEntry<'a> {
    /// The entry ID (as stored for object bundles; made from the image or code object
    /// otherwise).
    pub id: String,
    /// Offset of the payload from the start of the unit.
    pub offset: u64,
    /// The payload.
    pub payload: &'a [u8],
    /// File-name extension when extracted (`co`, `bc` for bitcode images, `spv` for SPIR-V).
    pub ext: &'static str,
}

/// Where a bundle (or another unit of device code) was found in a file and what kind it is.
#[derive(Debug, Clone)]
pub struct Located<'a> {
    /// Index among the units of the file (bundles first, in file order).
    pub index: usize,
    /// Byte offset of the unit in the file.
    pub offset: u64,
    /// The unit's bytes (compressed ones included).
    pub bytes: &'a [u8],
    /// The CCOB header, for compressed bundles.
    pub ccob: Option<ccob::Header>,
    /// Archive member path (outermost first, joined with `/`), if inside an archive.
    pub member: Option<String>,
    /// ELF section holding it (`.hip_fatbin`, `.llvm.offloading`, ...), if any.
    pub section: Option<String>,
    /// What it is.
    pub form: Form,
    /// The entries of a unit that is not a bundle (empty for bundles: read their header).
    pub loose: Vec<LooseEntry<'a>>,
}

impl Located<'_> {
    /// `bundle 3 at offset 0x1000` with the member and section when known.
    pub fn describe(&self) -> String {
        let what = match self.form {
            Form::Bundle => "bundle",
            Form::ObjectBundle => "object bundle",
            Form::CodeObject => "code object",
            Form::OffloadImage => "offload image",
        };
        let mut s = format!("{what} {}", self.index);
        if let Some(m) = &self.member {
            s.push_str(&format!(" in member {m}"));
        }
        if let Some(sec) = &self.section {
            s.push_str(&format!(" in section {sec}"));
        }
        s.push_str(&format!(" at offset {:#x}", self.offset));
        s
    }
}

/// Finds every bundle in `data`: a bundle at offset 0 and any that follow it back to back
/// (zero padding between them is skipped). Returns an empty list when `data` does not start
/// with a bundle. Bytes after the last bundle that are neither padding nor a bundle are an
/// error naming their offset.
pub fn find_bundles(data: &[u8]) -> Result<Vec<Located<'_>>> {
    if gfxkit_bundle::detect(data).is_none() {
        return Ok(Vec::new());
    }
    let spans = gfxkit_bundle::scan_concatenated(data)?;
    spans
        .into_iter()
        .enumerate()
        .map(|(index, s)| {
            let start = usize::try_from(s.offset)?;
            let end = usize::try_from(s.offset.saturating_add(s.len))?;
            let bytes = data
                .get(start..end)
                .ok_or_else(|| anyhow!("bundle {index} at offset {start:#x} runs past the end"))?;
            Ok(Located {
                index,
                offset: s.offset,
                bytes,
                ccob: s.ccob,
                member: None,
                section: None,
                form: Form::Bundle,
                loose: Vec::new(),
            })
        })
        .collect()
}

/// Everything [`locate`] found in one file.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// Units of device code: bundles in file order, then object bundles, code objects and
    /// offload images.
    pub units: Vec<Located<'a>>,
    /// Damage or oddities host discovery found (wrappers pointing nowhere, bundles running
    /// past their section, ...), with where.
    pub problems: Vec<gfxkit_host::Problem>,
}

impl Found<'_> {
    /// Whether some problem is an error (damaged data) rather than a warning.
    pub fn has_errors(&self) -> bool {
        self.problems
            .iter()
            .any(|p| p.severity == gfxkit_host::Severity::Error)
    }
}

/// Finds the device code in a file's bytes. A standalone bundle file is read exactly as
/// [`find_bundles`] reads it (its damage is an error); any other file goes through host
/// discovery, whose damage reports are returned as problems beside what could be read.
/// Nothing is decompressed or copied.
pub fn locate(data: &[u8]) -> Result<Found<'_>> {
    let kind = InputKind::sniff(data.get(..64).unwrap_or(data));
    if kind == InputKind::Bundle {
        return Ok(Found {
            units: find_bundles(data)?,
            problems: Vec::new(),
        });
    }
    let mut d = gfxkit_host::discover(data);
    let mut units = Vec::new();
    for b in &d.bundles {
        let header = match b.format {
            gfxkit_host::BundleFormat::Uncompressed => None,
            gfxkit_host::BundleFormat::Compressed { .. } => match ccob::Header::parse(b.bytes) {
                Ok(h) => Some(h),
                Err(e) => {
                    // Delimited by discovery but unreadable here (an unknown method, say):
                    // reported with where it is, the other bundles are still listed.
                    d.problems.push(gfxkit_host::Problem::error(
                        b.location.clone(),
                        gfxkit_host::ProblemKind::BadBundle(e.to_string()),
                    ));
                    continue;
                }
            },
        };
        units.push(Located {
            index: units.len(),
            offset: b.location.offset,
            bytes: b.bytes,
            ccob: header,
            member: b.location.member.clone(),
            section: b.location.section.clone(),
            form: Form::Bundle,
            loose: Vec::new(),
        });
    }
    for o in &d.object_bundles {
        let base = o.location.offset;
        units.push(Located {
            index: units.len(),
            offset: base,
            bytes: &[],
            ccob: None,
            member: o.location.member.clone(),
            section: None,
            form: Form::ObjectBundle,
            loose: o
                .entries
                .iter()
                .map(|e| LooseEntry {
                    id: e.id.to_owned(),
                    offset: e.location.offset.saturating_sub(base),
                    payload: e.bytes,
                    ext: entry_ext(e.id),
                })
                .collect(),
        });
    }
    for c in &d.code_objects {
        let id = gfxkit_code_object::Header::parse(c.bytes)
            .ok()
            .and_then(|h| h.target_id().ok())
            .map(|t| gfxkit_bundle::EntryId::hip(t).raw().to_owned())
            .unwrap_or_else(|| "hipv4-amdgcn-amd-amdhsa--unknown".to_owned());
        units.push(Located {
            index: units.len(),
            offset: c.location.offset,
            bytes: c.bytes,
            ccob: None,
            member: c.location.member.clone(),
            section: c.location.section.clone(),
            form: Form::CodeObject,
            loose: vec![LooseEntry {
                id,
                offset: 0,
                payload: c.bytes,
                ext: "co",
            }],
        });
    }
    for i in &d.offload_images {
        let kind = if i.offload_kind.is_hip() {
            "hipv4".to_owned()
        } else {
            i.offload_kind.name()
        };
        let id = format!(
            "{kind}-{}--{}",
            i.triple.unwrap_or("unknown"),
            i.arch.unwrap_or("unknown")
        );
        let ext = match i.image_kind {
            gfxkit_host::offloading::ImageKind::BITCODE => "bc",
            gfxkit_host::offloading::ImageKind::SPIRV => "spv",
            _ => "co",
        };
        units.push(Located {
            index: units.len(),
            offset: i.location.offset,
            bytes: i.bytes,
            ccob: None,
            member: i.location.member.clone(),
            section: i.location.section.clone(),
            form: Form::OffloadImage,
            loose: vec![LooseEntry {
                id,
                offset: 0,
                payload: i.bytes,
                ext,
            }],
        });
    }
    Ok(Found {
        units,
        problems: d.problems,
    })
}

/// An entry as listed without decompressing payloads.
#[derive(Debug, Clone)]
pub struct ListedEntry {
    /// The ID exactly as stored.
    pub id: String,
    /// Payload offset within the (uncompressed) bundle.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
    /// What the payload's ELF header says, when the payload was at hand (uncompressed
    /// bundles, compressed ones read in full, units that are not bundles).
    pub check: Option<PayloadCheck>,
}

fn listed(bundle: &Bundle<'_>) -> Vec<ListedEntry> {
    bundle
        .entries()
        .iter()
        .map(|e| ListedEntry {
            id: e.id.to_owned(),
            offset: e.offset,
            size: e.size,
            check: Some(check_payload(e.id, e.payload)),
        })
        .collect()
}

/// The header of a located unit: entries and header length. Compressed bundles are
/// decompressed only as far as their header reaches, unless `full` is set, in which case the
/// whole bundle is decompressed and its hash checked (the result says whether it matched).
/// Entries carry the check of their payload's ELF header whenever the payload is at hand.
pub fn read_header(b: &Located<'_>, full: bool) -> Result<(Vec<ListedEntry>, u64, Option<bool>)> {
    if b.form != Form::Bundle {
        let entries = b
            .loose
            .iter()
            .map(|e| ListedEntry {
                id: e.id.clone(),
                offset: e.offset,
                size: e.payload.len() as u64,
                check: Some(check_loose(e)),
            })
            .collect();
        return Ok((entries, 0, None));
    }
    match &b.ccob {
        None => {
            let bundle = Bundle::parse(b.bytes)?;
            Ok((listed(&bundle), bundle.header_len(), None))
        }
        Some(_) if full => {
            let opts = DecompressOptions {
                hash: HashCheck::Warn,
                ..DecompressOptions::default()
            };
            let d = ccob::decompress_ccob(b.bytes, &opts)?;
            let bundle = Bundle::parse(&d.data).context("inside the compressed bundle")?;
            Ok((listed(&bundle), bundle.header_len(), Some(d.hash_ok())))
        }
        Some(h) => {
            // Only as much is decompressed as the header needs (host discovery's reader).
            let format = gfxkit_host::BundleFormat::Compressed {
                version: h.version,
                method: match h.method {
                    gfxkit_bundle::codec::Method::Zlib => gfxkit_host::CompressionMethod::ZLIB,
                    gfxkit_bundle::codec::Method::Zstd => gfxkit_host::CompressionMethod::ZSTD,
                },
            };
            let (items, header_len) = gfxkit_host::entries::read_header(format, b.bytes)
                .map_err(|e| anyhow!("inside the compressed bundle: {e}"))?;
            let entries = items
                .into_iter()
                .map(|e| ListedEntry {
                    id: e.header.id,
                    offset: e.header.offset,
                    size: e.header.size,
                    check: None,
                })
                .collect();
            Ok((entries, header_len, None))
        }
    }
}

/// The uncompressed bytes of a located bundle (borrowed when it is not compressed). The
/// CCOB hash is checked: a mismatch is an error unless `hash` is [`HashCheck::Warn`].
pub fn uncompressed<'a>(b: &Located<'a>, hash: HashCheck) -> Result<Cow<'a, [u8]>> {
    if b.ccob.is_some() {
        let opts = DecompressOptions {
            hash,
            ..DecompressOptions::default()
        };
        Ok(Cow::Owned(ccob::decompress_ccob(b.bytes, &opts)?.data))
    } else {
        Ok(Cow::Borrowed(b.bytes))
    }
}

/// An entry with its payload, as handed out by [`with_payloads`].
#[derive(Debug, Clone, Copy)]
pub struct PayloadEntry<'p> {
    /// The ID exactly as stored.
    pub id: &'p str,
    /// The payload.
    pub payload: &'p [u8],
    /// File-name extension when extracted.
    pub ext: &'static str,
}

/// Calls `f` with the entries of a located unit and their payloads. A compressed bundle is
/// decompressed first (hash checked as `hash` says); nothing else is copied.
pub fn with_payloads<R>(
    b: &Located<'_>,
    hash: HashCheck,
    f: impl FnOnce(&[PayloadEntry<'_>]) -> R,
) -> Result<R> {
    if b.form != Form::Bundle {
        let list: Vec<PayloadEntry<'_>> = b
            .loose
            .iter()
            .map(|e| PayloadEntry {
                id: &e.id,
                payload: e.payload,
                ext: e.ext,
            })
            .collect();
        return Ok(f(&list));
    }
    let contents = uncompressed(b, hash)?;
    let bundle = Bundle::parse(&contents)?;
    let list: Vec<PayloadEntry<'_>> = bundle
        .entries()
        .iter()
        .map(|e| PayloadEntry {
            id: e.id,
            payload: e.payload,
            ext: entry_ext(e.id),
        })
        .collect();
    Ok(f(&list))
}

/// File-name extension of a bundle entry's payload: `spv` for SPIR-V entries
/// (`hip-spirv64-amd-amdhsa--amdgcnspirv`), `co` for everything else.
pub fn entry_ext(id: &str) -> &'static str {
    match gfxkit_bundle::EntryId::parse(id) {
        Ok(e) if gfxkit_host::select::is_spirv_entry(&e) => "spv",
        _ => "co",
    }
}

/// The text of an I/O error without Rust's ` (os error N)` suffix, as C's `strerror` says it.
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Whether `data` is read (and written) as an object bundle: any ELF file, as clang's bundler
/// treats every object file. Writing sections needs a relocatable host object; the library
/// says so clearly when given another kind of ELF file.
pub fn is_object(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// A container format of `clang-offload-bundler -type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Text with entries between comment markers (`//`, `#` or `;`).
    Text(&'static str),
    /// The binary bundle format (CCOB-compressed or not).
    Binary,
    /// Sections `__CLANG_OFFLOAD_BUNDLE__<id>` of a host object.
    Object,
}

/// An entry found by [`entries`], in file order.
#[derive(Debug, Clone)]
pub struct FoundEntry<'a> {
    /// The ID exactly as stored.
    pub id: String,
    /// The payload as stored.
    pub payload: &'a [u8],
    /// The host placeholder of an object bundle (one zero byte standing for the host
    /// object itself).
    pub host_placeholder: bool,
}

/// Decompresses `data` when it is a CCOB bundle (hash checked), as clang does with any input
/// before unbundling; otherwise returns it as is.
pub fn open_for_unbundling(data: &[u8], verbose: bool) -> Result<Cow<'_, [u8]>> {
    if !ccob::is_ccob(data) {
        return Ok(Cow::Borrowed(data));
    }
    let d = ccob::decompress_ccob(data, &DecompressOptions::default())
        .map_err(|e| anyhow!("Failed to decompress input: {e}"))?;
    if verbose {
        print_decompression_stats(&d);
    }
    Ok(Cow::Owned(d.data))
}

/// The entries of `data` read as `container`, in file order. A binary input that is not a
/// bundle has no entries (clang then treats it as the host file).
pub fn entries(data: &[u8], container: Container) -> Result<Vec<FoundEntry<'_>>> {
    match container {
        Container::Binary => {
            if !data.starts_with(MAGIC) {
                return Ok(Vec::new());
            }
            let b = Bundle::parse(data)?;
            Ok(b.entries()
                .iter()
                .map(|e| FoundEntry {
                    id: e.id.to_owned(),
                    payload: e.payload,
                    host_placeholder: false,
                })
                .collect())
        }
        Container::Text(comment) => Ok(gfxkit_bundle::text::read_text(data, comment)?
            .into_iter()
            .map(|e| FoundEntry {
                id: e.id.to_owned(),
                payload: e.payload,
                host_placeholder: false,
            })
            .collect()),
        Container::Object => Ok(gfxkit_bundle::object::read_object(data)?
            .into_iter()
            .map(|e| FoundEntry {
                id: e.id.to_owned(),
                payload: e.payload,
                host_placeholder: e.is_host_placeholder(),
            })
            .collect()),
    }
}

/// The payload of an entry found by [`entries`]: for the host placeholder of an object
/// bundle, the host object without its bundle sections.
pub fn entry_payload<'a>(data: &'a [u8], e: &FoundEntry<'a>) -> Result<Cow<'a, [u8]>> {
    if e.host_placeholder {
        return Ok(Cow::Owned(gfxkit_bundle::object::strip_bundle_sections(
            data,
        )?));
    }
    Ok(Cow::Borrowed(e.payload))
}

/// The entry IDs `-list` prints, in file order: every bundle of a binary input (back to
/// back ones included), the markers of a text input, the sections of a host object.
pub fn list_ids(data: &[u8], container: Container, verbose: bool) -> Result<Vec<String>> {
    match container {
        Container::Binary => {
            let mut ids = Vec::new();
            for b in find_bundles(data)? {
                let contents = match &b.ccob {
                    Some(_) => {
                        let d = ccob::decompress_ccob(b.bytes, &DecompressOptions::default())
                            .map_err(|e| {
                                anyhow!(
                                    "Failed to decompress input: bundle {} at offset {:#x}: {e}",
                                    b.index,
                                    b.offset
                                )
                            })?;
                        if verbose {
                            print_decompression_stats(&d);
                        }
                        Cow::Owned(d.data)
                    }
                    None => Cow::Borrowed(b.bytes),
                };
                if !contents.starts_with(MAGIC) {
                    continue;
                }
                let bundle = Bundle::parse(&contents)
                    .map_err(|e| anyhow!("bundle {} at offset {:#x}: {e}", b.index, b.offset))?;
                ids.extend(bundle.entries().iter().map(|e| e.id.to_owned()));
            }
            Ok(ids)
        }
        other => Ok(entries(data, other)?.into_iter().map(|e| e.id).collect()),
    }
}

/// Settings for compressing a bundle.
#[derive(Debug, Clone, Copy)]
pub struct CompressSettings {
    /// CCOB version (default 2).
    pub version: Option<u16>,
    /// zlib instead of zstd.
    pub zlib: bool,
    /// Level (the method's default when absent).
    pub level: Option<i32>,
    /// zstd worker threads (0 = on the calling thread, clang's exact bytes).
    pub threads: u32,
}

/// Compresses an uncompressed bundle into CCOB.
pub fn compress(bytes: &[u8], s: &CompressSettings) -> Result<Vec<u8>> {
    let opts = ccob::CompressOptions {
        method: if s.zlib {
            gfxkit_bundle::codec::Method::Zlib
        } else {
            gfxkit_bundle::codec::Method::Zstd
        },
        level: s.level,
        version: s.version.unwrap_or(ccob::DEFAULT_VERSION),
        threads: s.threads,
    };
    Ok(ccob::compress(bytes, &opts)?)
}

fn with_commas(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `-verbose` statistics after compressing, in clang's words (without its timer report).
pub fn print_compression_stats(before: &[u8], after: &[u8], level: i32) {
    let Ok(h) = ccob::Header::parse(after) else {
        return;
    };
    let body = after.len() as u64 - h.header_len();
    let rate = before.len() as f64 / body.max(1) as f64;
    eprintln!(
        "Compressed bundle format version: {}\nTotal file size (including headers): {} bytes\n\
         Compression method used: {}\nCompression level: {level}\nBinary size before compression: {} bytes\n\
         Binary size after compression: {} bytes\nCompression rate: {:.2}\nCompression ratio: {:.2}%\n\
         Truncated MD5 hash: {:#018x}",
        h.version,
        with_commas(after.len() as u64),
        h.method.name(),
        with_commas(before.len() as u64),
        with_commas(body),
        rate,
        100.0 / rate,
        h.hash
    );
}

fn print_decompression_stats(d: &ccob::Decompressed) {
    let h = &d.header;
    let body = d.extent - h.header_len();
    let rate = h.uncompressed_size as f64 / body.max(1) as f64;
    let mut s = format!("Compressed bundle format version: {}\n", h.version);
    if let Some(t) = h.total_size {
        s.push_str(&format!(
            "Total file size (from header): {} bytes\n",
            with_commas(t)
        ));
    }
    s.push_str(&format!(
        "Decompression method: {}\nSize before decompression: {} bytes\nSize after decompression: {} bytes\n\
         Compression rate: {:.2}\nCompression ratio: {:.2}%\nStored hash: {:#018x}\nRecalculated hash: {:#018x}\nHashes match: {}",
        h.method.name(),
        with_commas(body),
        with_commas(h.uncompressed_size),
        rate,
        100.0 / rate,
        h.hash,
        d.computed_hash,
        if d.hash_ok() { "Yes" } else { "No" }
    ));
    eprintln!("{s}");
}

/// Writes a bundle of `entries` in `container` form; `host` is the index of the host entry
/// (whose input is the host object for [`Container::Object`]).
pub fn write(
    container: Container,
    entries: &[(&str, &[u8])],
    host: Option<usize>,
    align: u64,
) -> Result<Vec<u8>> {
    match container {
        Container::Binary => Ok(gfxkit_bundle::write_bundle(entries, align)?),
        Container::Text(c) => Ok(gfxkit_bundle::text::write_text(entries, c)),
        Container::Object => {
            let h = host.ok_or_else(|| anyhow!("an object bundle needs a host input"))?;
            Ok(gfxkit_bundle::object::write_object(
                entries[h].1,
                entries,
                h,
            )?)
        }
    }
}

/// Unbundles an archive (`-type=a`): one GNU archive per requested target.
pub fn unbundle_archive(
    data: &[u8],
    name: &str,
    requests: &[gfxkit_bundle::EntryId],
    hip_openmp: bool,
    allow_missing: bool,
    check: bool,
) -> Result<Vec<Vec<u8>>> {
    let opts = gfxkit_bundle::archive::ArchiveOptions {
        allow_missing,
        hip_openmp_compatible: hip_openmp,
        check_input: check,
        decompress: DecompressOptions::default(),
    };
    Ok(gfxkit_bundle::archive::unbundle_archive(
        data, requests, name, &opts,
    )?)
}

/// What an entry's payload says about itself, from its ELF header alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadCheck {
    /// The ID names no AMDGPU target ID (host entries, other triples, IDs that do not parse).
    NotApplicable,
    /// The payload is not an AMDGPU code object.
    NotCodeObject(String),
    /// The code object's header was read and its `e_flags` checked against the ID.
    Checked {
        /// The HSA code-object version (`EI_ABIVERSION`), when it is an HSA object.
        version: Option<gfxkit_spec::CodeObjectVersion>,
        /// Why the `e_flags` do not fit the ID's target ID (none when they do).
        mismatch: Option<String>,
    },
}

impl PayloadCheck {
    /// Whether the `e_flags` agree with the ID; `None` when unknown.
    pub fn agrees(&self) -> Option<bool> {
        match self {
            PayloadCheck::Checked { mismatch, .. } => Some(mismatch.is_none()),
            _ => None,
        }
    }

    /// The code-object version number, when known.
    pub fn version(&self) -> Option<u8> {
        match self {
            PayloadCheck::Checked { version, .. } => version.map(|v| v.number()),
            _ => None,
        }
    }
}

/// [`check_payload`] for an entry of a unit that is not a bundle: bitcode images are not
/// code objects and are not checked.
pub fn check_loose(e: &LooseEntry<'_>) -> PayloadCheck {
    if e.ext == "bc" {
        return PayloadCheck::NotApplicable;
    }
    check_payload(&e.id, e.payload)
}

/// Reads the ELF header of an entry's payload and checks its `e_flags` against the target ID
/// the entry ID names, with the rules of the object's own version (a V2/V3 object cannot say
/// "any", so `gfx90a` fits either setting there).
pub fn check_payload(id: &str, payload: &[u8]) -> PayloadCheck {
    let Ok(id) = gfxkit_bundle::EntryId::parse(id) else {
        return PayloadCheck::NotApplicable;
    };
    let Some(tid) = id.target_id() else {
        return PayloadCheck::NotApplicable;
    };
    if !id.triple().is_amdgpu() {
        return PayloadCheck::NotApplicable;
    }
    match gfxkit_code_object::Header::parse(payload) {
        Err(e) => PayloadCheck::NotCodeObject(e.to_string()),
        Ok(h) => PayloadCheck::Checked {
            version: h.code_object_version(),
            mismatch: h.check_target(tid).err().map(|e| match h.target_id() {
                Ok(actual) => {
                    format!("the ID says {tid} but the code object is built for {actual} ({e})")
                }
                Err(_) => format!("the ID says {tid} but {e}"),
            }),
        },
    }
}
