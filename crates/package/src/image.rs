//! Container images read as the file system they unpack to: `docker save` archives
//! (`manifest.json`, layers as `<id>/layer.tar` or `blobs/sha256/<digest>`) and OCI image
//! layouts (`oci-layout`, `index.json`, `blobs/<alg>/<digest>`), in a tar or, through a
//! caller's [`Layout`], a directory.
//!
//! The image's layers (tar, gzip or zstd, told apart by their magic bytes) are applied as a
//! container runtime applies them: a file of a lower layer is gone when a higher layer has
//! an entry at its path, a non-directory at one of its parent directories, a whiteout
//! `.wh.NAME` for it or a parent, or an opaque marker `.wh..wh..opq` in one of its parent
//! directories. Layers are read top-down, each decompressed once and streamed: when a
//! layer is read, every layer above it has been, so each of its files is known to survive
//! or not as it comes, and only survivors are read. What a layer hides is kept as the paths
//! of the layers above it (names only).
//!
//! Files are named by their path in the image, `IMAGE!/usr/lib/librocblas.so.4` (with
//! `IMAGE!REF!/...` when one archive holds several images), with the layer's digest in
//! [`crate::Member::layer`]. Symbolic links are not files: a library reached through one is
//! read once, under its real path; looking a path up ([`open_member`]) follows them as the
//! image's file system would. A hard link is the file it links to, read once under the path
//! of the entry that holds the data (under the link's own path when that entry is hidden).
//!
//! Every blob read is checked against its digest before it is used (the manifest's for
//! blobs, the configuration's `rootfs.diff_ids` for the uncompressed layers of old `docker
//! save` archives); layer entries that leave the image's root (`..`, absolute paths) are
//! errors naming the image, the layer and the offset of the entry's tar header.

use crate::detect::{is_tar, Compression, PREFIX_LEN};
use crate::digest::{blob_name_digest, Digest, Hasher};
use crate::error::{Error, ErrorKind, Result};
use crate::members::{member, Ctx, Walk};
use crate::tar::{clean_name, tar_header_error, Counting};
use rayon::prelude::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Cursor, Read};
use std::ops::Deref;

pub use crate::digest::looks_like_image_entry;
pub use crate::platform::Platform;

/// The largest JSON file of an image read (index, manifest, configuration).
const MAX_JSON: usize = 16 << 20;
/// How deep image indexes may nest.
const MAX_INDEX_DEPTH: u32 = 4;
/// Symbolic links followed in one path lookup (Linux's limit).
const MAX_LINKS: u32 = 40;
/// Entries of an image archive recorded when indexing a tar (a tarball with more is not
/// read as an image).
const MAX_INDEXED: usize = 1 << 20;

/// The bytes of one file of an image layout.
pub enum Blob<'a> {
    /// Bytes of the archive itself.
    Borrowed(&'a [u8]),
    /// Bytes the layout opened (a mapped file of a directory).
    Owned(Box<dyn Deref<Target = [u8]> + Send + Sync>),
}

impl Deref for Blob<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Blob::Borrowed(b) => b,
            Blob::Owned(b) => b,
        }
    }
}

/// Where the files of an image layout are: the entries of an archive ([`TarLayout`]) or a
/// directory (opened by the caller: this crate does no file I/O).
pub trait Layout: Sync {
    /// The file at `path` (relative, `/`-separated, without `.` or `..`), `None` when the
    /// layout has none.
    fn file(&self, path: &str) -> Result<Option<Blob<'_>>>;
    /// Where `path`'s bytes start in the archive, for messages.
    fn offset(&self, path: &str) -> Option<u64> {
        let _ = path;
        None
    }
    /// Damage that stopped the layout from being read in full (an archive cut short).
    fn damage(&self) -> Option<Error> {
        None
    }
}

/// A layout held in memory, file name to bytes (for tests and fuzzing).
#[derive(Debug, Default, Clone)]
pub struct MemoryLayout(pub HashMap<String, Vec<u8>>);

impl Layout for MemoryLayout {
    fn file(&self, path: &str) -> Result<Option<Blob<'_>>> {
        Ok(self.0.get(path).map(|b| Blob::Borrowed(b)))
    }
}

/// The regular files of an image archive (a tar), indexed by name without reading their data.
pub struct TarLayout<'d> {
    name: String,
    data: &'d [u8],
    /// Name -> (offset of the data, size).
    files: HashMap<String, (u64, u64)>,
    /// Why indexing stopped early (damage), when it did.
    stopped: Option<Error>,
}

impl<'d> TarLayout<'d> {
    /// Indexes the tar `data` (named `name`): the names of its regular files in the top three
    /// directory levels, where image layouts keep theirs.
    pub fn index(name: &str, data: &'d [u8]) -> TarLayout<'d> {
        let mut files = HashMap::new();
        let mut stopped = None;
        let mut end = 0u64;
        let mut last: Option<(String, u64, u64)> = None;
        let mut archive = tar::Archive::new(Cursor::new(data));
        match archive.entries_with_seek() {
            Err(e) => stopped = Some(tar_header_error(name, &e, 0)),
            Ok(entries) => {
                for entry in entries {
                    let entry = match entry {
                        Ok(e) => e,
                        Err(e) => {
                            stopped = Some(match &last {
                                // Cut inside the last entry's data.
                                Some((path, at, size)) if end > data.len() as u64 => Error::new(
                                    format!("{name}!{path}"),
                                    ErrorKind::Truncated(format!(
                                        "need {size} bytes at offset {at:#x}, the archive has {}",
                                        data.len()
                                    )),
                                )
                                .at(*at),
                                _ => tar_header_error(name, &e, end.min(data.len() as u64)),
                            });
                            break;
                        }
                    };
                    end = entry
                        .raw_file_position()
                        .saturating_add(entry.size().div_ceil(512) * 512);
                    last = Some((
                        String::from_utf8_lossy(&entry.path_bytes()).into_owned(),
                        entry.raw_file_position(),
                        entry.size(),
                    ));
                    let kind = entry.header().entry_type();
                    if !(kind.is_file() || kind == tar::EntryType::Continuous) {
                        continue;
                    }
                    let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                    let path = clean_name(&path).to_owned();
                    if path.split('/').count() > 3 {
                        continue;
                    }
                    if files.len() >= MAX_INDEXED {
                        break;
                    }
                    files.insert(path, (entry.raw_file_position(), entry.size()));
                }
            }
        }
        // The archive ends before the end-of-archive blocks (two zero blocks) after the last
        // entry: it was cut there.
        if stopped.is_none() && end.saturating_add(1024) > data.len() as u64 {
            stopped = Some(
                Error::new(
                    name,
                    ErrorKind::Truncated(format!(
                        "need 1024 bytes at offset {end:#x} for the end of the tar archive, the \
                         archive has {}",
                        data.len()
                    )),
                )
                .at(end),
            );
        }
        // The last entry's data runs past the end: the archive was cut there (the most
        // precise account of the cut).
        {
            if let Some((path, (at, size))) = files
                .iter()
                .find(|(_, (at, size))| at.saturating_add(*size) > data.len() as u64)
            {
                stopped = Some(
                    Error::new(
                        format!("{name}!{path}"),
                        ErrorKind::Truncated(format!(
                            "need {size} bytes at offset {at:#x}, the archive has {}",
                            data.len()
                        )),
                    )
                    .at(*at),
                );
            }
        }
        TarLayout {
            name: name.to_owned(),
            data,
            files,
            stopped,
        }
    }

    /// Whether the archive is a container image: an OCI layout (`oci-layout` and
    /// `index.json`) or a `docker save` archive (`manifest.json` listing layers); also an
    /// archive cut short whose names are those of an image's blobs (then reading it reports
    /// the damage).
    pub fn is_image(&self) -> bool {
        if self.files.contains_key("oci-layout") && self.files.contains_key("index.json") {
            return true;
        }
        if let Ok(Some(m)) = self.file("manifest.json") {
            return is_docker_manifest(&m);
        }
        let blob = |k: &str| k.starts_with("blobs/") || k.ends_with("/layer.tar");
        let other = |k: &str| {
            k.ends_with(".json")
                || k.ends_with("/VERSION")
                || k.ends_with("/json")
                || k == "oci-layout"
        };
        self.stopped.is_some()
            && self.files.keys().any(|k| blob(k))
            && self.files.keys().all(|k| blob(k) || other(k))
    }
}

impl Layout for TarLayout<'_> {
    fn file(&self, path: &str) -> Result<Option<Blob<'_>>> {
        let Some(&(at, size)) = self.files.get(path) else {
            return Ok(None);
        };
        let end = at.saturating_add(size);
        match self
            .data
            .get(at as usize..end.min(usize::MAX as u64) as usize)
        {
            Some(b) if end <= self.data.len() as u64 => Ok(Some(Blob::Borrowed(b))),
            _ => Err(Error::new(
                format!("{}!{path}", self.name),
                ErrorKind::Truncated(format!(
                    "need {size} bytes at offset {at:#x}, the archive has {}",
                    self.data.len()
                )),
            )
            .at(at)),
        }
    }

    fn offset(&self, path: &str) -> Option<u64> {
        self.files.get(path).map(|(at, _)| *at)
    }

    fn damage(&self) -> Option<Error> {
        self.stopped.clone()
    }
}

/// Whether `bytes` is the `manifest.json` of a `docker save` archive (a JSON array of
/// objects with `Config` and `Layers`).
pub fn is_docker_manifest(bytes: &[u8]) -> bool {
    bytes.len() <= MAX_JSON && serde_json::from_slice::<Vec<DockerEntry>>(bytes).is_ok()
}

/// Whether a directory holding these file names is an image layout (`oci-layout` with
/// `index.json`, or a `docker save` `manifest.json`, checked by the caller with
/// [`is_docker_manifest`]).
pub fn is_oci_layout(has: &dyn Fn(&str) -> bool) -> bool {
    has("oci-layout") && has("index.json")
}

#[derive(Deserialize)]
struct DockerEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

#[derive(Deserialize, Clone)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default)]
    platform: Option<PlatformJson>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Clone, Default)]
struct PlatformJson {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    variant: Option<String>,
}

impl PlatformJson {
    fn platform(&self) -> Platform {
        Platform {
            os: self.os.clone(),
            architecture: self.architecture.clone(),
            variant: self.variant.clone().filter(|v| !v.is_empty()),
        }
    }
}

#[derive(Deserialize)]
struct IndexJson {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct ManifestJson {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Deserialize, Default)]
struct ConfigJson {
    #[serde(flatten)]
    platform: PlatformJson,
    #[serde(default)]
    rootfs: Option<RootFs>,
}

#[derive(Deserialize, Default)]
struct RootFs {
    #[serde(default)]
    diff_ids: Vec<String>,
}

const INDEX_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
const MANIFEST_TYPES: [&str; 2] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];
/// Layer media types (OCI's six, Docker's four).
const LAYER_TYPES: [&str; 10] = [
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
    "application/vnd.docker.image.rootfs.diff.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.docker.image.rootfs.diff.tar.zstd",
    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
];

/// How a layer's bytes are checked.
#[derive(Debug, Clone)]
enum Check {
    /// The blob as stored has this digest (an OCI descriptor's, or a `blobs/` name's).
    Blob(Digest),
    /// The uncompressed tar has this digest (a configuration's `diff_ids`, for the
    /// `<id>/layer.tar` of old `docker save` archives).
    Diff(Digest),
}

/// One layer of an image.
#[derive(Debug, Clone)]
struct LayerRef {
    /// The blob's path in the layout.
    path: String,
    /// The digest it goes by (the blob's, or the uncompressed tar's).
    digest: String,
    /// The size its descriptor gives.
    size: Option<u64>,
    check: Check,
}

/// One image of a layout, its platform chosen.
#[derive(Debug, Clone)]
struct Image {
    /// The name members start with (`IMAGE`, or `IMAGE!REF` when there are several).
    prefix: String,
    layers: Vec<LayerRef>,
}

fn corrupt(path: impl Into<String>, m: String) -> Error {
    Error::new(path, ErrorKind::Corrupt(m))
}

/// Reads a JSON file of the layout, at most [`MAX_JSON`] bytes, checked against `digest`.
fn read_json<T: for<'de> Deserialize<'de>>(
    name: &str,
    layout: &dyn Layout,
    path: &str,
    digest: Option<(&Digest, u64)>,
    what: &str,
) -> Result<T> {
    let Some(bytes) = layout.file(path)? else {
        return Err(corrupt(name, format!("{what} {path} is not in the image")));
    };
    let at = layout.offset(path);
    let at_err = |e: Error| match at {
        Some(o) => e.at(o),
        None => e,
    };
    if bytes.len() > MAX_JSON {
        return Err(at_err(Error::new(
            format!("{name}!{path}"),
            ErrorKind::TooLarge {
                limit: MAX_JSON as u64,
            },
        )));
    }
    if let Some((d, size)) = digest {
        check_size(name, path, &bytes, size).map_err(at_err)?;
        check_digest(name, path, &bytes, d).map_err(at_err)?;
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        at_err(corrupt(
            format!("{name}!{path}"),
            format!("{what} is not valid JSON of its kind: {e}"),
        ))
    })
}

fn check_size(name: &str, path: &str, bytes: &[u8], size: u64) -> Result<()> {
    if bytes.len() as u64 != size {
        return Err(corrupt(
            format!("{name}!{path}"),
            format!(
                "the blob has {} bytes, its descriptor says {size}",
                bytes.len()
            ),
        ));
    }
    Ok(())
}

fn check_digest(name: &str, path: &str, bytes: &[u8], d: &Digest) -> Result<()> {
    let mut h = d.hasher();
    for chunk in bytes.chunks(1 << 20) {
        h.update(chunk);
    }
    let got = h.hex();
    if got != d.hex {
        return Err(Error::new(
            format!("{name}!{path}"),
            ErrorKind::Checksum(format!(
                "the blob's {} is {got}, its descriptor says {}",
                d.alg, d.hex
            )),
        ));
    }
    Ok(())
}

/// A manifest found through the index, with what it was found as.
struct Candidate {
    /// The image it belongs to: the ref name of its entry of `index.json` (entries without
    /// one, and the platforms of one image index, are one image, maybe multi-platform).
    group: String,
    reference: Option<String>,
    platform: Option<Platform>,
    desc: Descriptor,
}

fn ref_name(d: &Descriptor) -> Option<String> {
    [
        "io.containerd.image.name",
        "org.opencontainers.image.ref.name",
    ]
    .iter()
    .find_map(|k| d.annotations.get(*k).cloned())
}

fn collect_manifests(
    name: &str,
    layout: &dyn Layout,
    descs: &[Descriptor],
    group: Option<&str>,
    reference: Option<String>,
    depth: u32,
    out: &mut Vec<Candidate>,
) -> Result<()> {
    if depth > MAX_INDEX_DEPTH {
        return Err(corrupt(
            name,
            format!("image indexes nest more than {MAX_INDEX_DEPTH} deep"),
        ));
    }
    for d in descs {
        let r = ref_name(d).or_else(|| reference.clone());
        let g = match group {
            Some(g) => g.to_owned(),
            None => r.clone().unwrap_or_default(),
        };
        if INDEX_TYPES.contains(&d.media_type.as_str()) {
            let digest = Digest::parse(&d.digest).map_err(|m| corrupt(name, m))?;
            let idx: IndexJson = read_json(
                name,
                layout,
                &digest.path(),
                Some((&digest, d.size)),
                "image index",
            )?;
            collect_manifests(name, layout, &idx.manifests, Some(&g), r, depth + 1, out)?;
        } else if MANIFEST_TYPES.contains(&d.media_type.as_str()) || d.media_type.is_empty() {
            let platform = d.platform.as_ref().map(PlatformJson::platform);
            // Attestations and other artifacts of buildx indexes.
            if platform.as_ref().is_some_and(|p| p.os == "unknown") {
                continue;
            }
            out.push(Candidate {
                group: g,
                reference: r,
                platform,
                desc: d.clone(),
            });
        }
    }
    Ok(())
}

/// Chooses among one image's platforms.
fn choose(name: &str, group: Vec<Candidate>, wanted: Option<&Platform>) -> Result<Candidate> {
    let listed = |g: &[Candidate]| {
        g.iter()
            .map(|c| {
                c.platform
                    .as_ref()
                    .map_or("unknown".to_owned(), |p| p.to_string())
            })
            .collect::<Vec<_>>()
    };
    let pick = match wanted {
        Some(w) => group
            .iter()
            .position(|c| c.platform.as_ref().is_some_and(|p| w.matches(p))),
        None if group.len() == 1 => Some(0),
        None => group.iter().position(|c| {
            c.platform
                .as_ref()
                .is_some_and(|p| Platform::linux_amd64().matches(p))
        }),
    };
    match pick {
        Some(i) => Ok(group.into_iter().nth(i).expect("index found above")),
        None => Err(Error::new(
            name,
            ErrorKind::Platform {
                wanted: wanted.map_or("linux/amd64".to_owned(), |w| w.to_string()),
                present: listed(&group),
            },
        )),
    }
}

/// The images of a layout, each with its platform chosen (`wanted`, else linux/amd64 when
/// there is a choice) and its layers bottom-up.
fn images(name: &str, layout: &dyn Layout, wanted: Option<&Platform>) -> Result<Vec<Image>> {
    let found = if layout.file("index.json")?.is_some() {
        oci_images(name, layout, wanted)?
    } else {
        docker_images(name, layout, wanted)?
    };
    let several = found.len() > 1;
    let mut used = HashSet::new();
    Ok(found
        .into_iter()
        .map(|(reference, id, layers)| {
            let prefix = if several {
                let mut r = reference.unwrap_or_else(|| id.clone()).replace('!', "_");
                if !used.insert(r.clone()) {
                    r = format!("{r}@{id}");
                }
                format!("{name}!{r}")
            } else {
                name.to_owned()
            };
            Image { prefix, layers }
        })
        .collect())
}

/// An image found in a layout, before it is named: its reference (a tag), its ID (the
/// manifest's digest, or the configuration's path) and its layers, bottom first.
type FoundImage = (Option<String>, String, Vec<LayerRef>);

/// The images an OCI layout's `index.json` names, one per group of platforms (the one
/// `wanted`, or the default), with the platforms the index does not give read from the
/// configurations.
fn oci_images(
    name: &str,
    layout: &dyn Layout,
    wanted: Option<&Platform>,
) -> Result<Vec<FoundImage>> {
    let mut found: Vec<FoundImage> = Vec::new();
    let index: IndexJson = read_json(name, layout, "index.json", None, "index.json")?;
    let mut candidates = Vec::new();
    collect_manifests(
        name,
        layout,
        &index.manifests,
        None,
        None,
        0,
        &mut candidates,
    )?;
    if candidates.is_empty() {
        return Err(corrupt(
            name,
            "index.json names no image manifest".to_owned(),
        ));
    }
    // Fill in platforms the index does not give, from the configurations.
    type Read = (Candidate, Option<ManifestJson>, Digest);
    let mut groups: BTreeMap<String, Vec<Read>> = BTreeMap::new();
    for mut c in candidates {
        let digest = Digest::parse(&c.desc.digest).map_err(|m| corrupt(name, m))?;
        if layout.file(&digest.path())?.is_none() {
            // A platform whose blobs were not exported (`docker save` of one platform of
            // a multi-platform image keeps the whole index): an error only if chosen.
            groups
                .entry(c.group.clone())
                .or_default()
                .push((c, None, digest));
            continue;
        }
        let m: ManifestJson = read_json(
            name,
            layout,
            &digest.path(),
            Some((&digest, c.desc.size)),
            "image manifest",
        )?;
        if c.platform.is_none() {
            let cd = Digest::parse(&m.config.digest).map_err(|m| corrupt(name, m))?;
            let cfg: ConfigJson = read_json(
                name,
                layout,
                &cd.path(),
                Some((&cd, m.config.size)),
                "image configuration",
            )?;
            if !cfg.platform.os.is_empty() {
                c.platform = Some(cfg.platform.platform());
            }
        }
        groups
            .entry(c.group.clone())
            .or_default()
            .push((c, Some(m), digest));
    }
    let mut seen = HashSet::new();
    for (_, g) in groups {
        let mut manifests: HashMap<String, (Option<ManifestJson>, Digest)> = HashMap::new();
        let mut cands = Vec::new();
        for (c, m, d) in g {
            manifests.insert(c.desc.digest.clone(), (m, d));
            cands.push(c);
        }
        let c = choose(name, cands, wanted)?;
        let Some((m, d)) = manifests.remove(&c.desc.digest) else {
            continue;
        };
        if !seen.insert(c.desc.digest.clone()) {
            continue;
        }
        let Some(m) = m else {
            return Err(corrupt(
                name,
                format!(
                    "the manifest {d} of platform {} is not in the image (no {})",
                    c.platform.map_or("?".into(), |p| p.to_string()),
                    d.path()
                ),
            ));
        };
        let mut layers = Vec::new();
        for l in &m.layers {
            if !LAYER_TYPES.contains(&l.media_type.as_str()) {
                return Err(Error::new(
                    name,
                    ErrorKind::Unsupported(format!(
                        "layer {} of manifest {d} has media type {:?}",
                        l.digest, l.media_type
                    )),
                ));
            }
            let ld = Digest::parse(&l.digest).map_err(|m| corrupt(name, m))?;
            layers.push(LayerRef {
                path: ld.path(),
                digest: ld.to_string(),
                size: Some(l.size),
                check: Check::Blob(ld),
            });
        }
        found.push((c.reference, d.to_string(), layers));
    }
    Ok(found)
}

/// The images a `docker save` archive's `manifest.json` lists (those for the platform
/// `wanted`, when its configuration names one).
fn docker_images(
    name: &str,
    layout: &dyn Layout,
    wanted: Option<&Platform>,
) -> Result<Vec<FoundImage>> {
    let mut found: Vec<FoundImage> = Vec::new();
    let entries: Vec<DockerEntry> =
        read_json(name, layout, "manifest.json", None, "manifest.json")?;
    for e in entries {
        let config_path = relative(&e.config).ok_or_else(|| {
            corrupt(
                name,
                format!("manifest.json: config path {:?} leaves the image", e.config),
            )
        })?;
        let config_digest = blob_name_digest(&config_path);
        let config_size = match layout.file(&config_path)? {
            Some(b) => b.len() as u64,
            None => 0,
        };
        let cfg: ConfigJson = read_json(
            name,
            layout,
            &config_path,
            config_digest.as_ref().map(|d| (d, config_size)),
            "image configuration",
        )?;
        let platform = (!cfg.platform.os.is_empty()).then(|| cfg.platform.platform());
        if let (Some(w), Some(p)) = (wanted, &platform) {
            if !w.matches(p) {
                continue;
            }
        }
        let diffs = cfg.rootfs.map(|r| r.diff_ids).unwrap_or_default();
        let mut layers = Vec::new();
        for (i, l) in e.layers.iter().enumerate() {
            let path = relative(l).ok_or_else(|| {
                corrupt(
                    name,
                    format!("manifest.json: layer path {l:?} leaves the image"),
                )
            })?;
            let check = match blob_name_digest(&path) {
                Some(d) => Check::Blob(d),
                None => match diffs.get(i).map(|d| Digest::parse(d)) {
                    Some(Ok(d)) if diffs.len() == e.layers.len() => Check::Diff(d),
                    Some(Err(m)) => return Err(corrupt(name, format!("{config_path}: {m}"))),
                    _ => {
                        return Err(corrupt(
                            name,
                            format!(
                                "{config_path} lists {} layer digests (rootfs.diff_ids) for \
                                 the {} layers of manifest.json",
                                diffs.len(),
                                e.layers.len()
                            ),
                        ))
                    }
                },
            };
            let digest = match &check {
                Check::Blob(d) | Check::Diff(d) => d.to_string(),
            };
            layers.push(LayerRef {
                path,
                digest,
                size: None,
                check,
            });
        }
        let reference = e.repo_tags.and_then(|t| t.into_iter().next());
        found.push((reference, config_path, layers));
    }
    if found.is_empty() {
        return Err(Error::new(
            name,
            ErrorKind::Platform {
                wanted: wanted.map_or("any".to_owned(), |w| w.to_string()),
                present: Vec::new(),
            },
        ));
    }
    Ok(found)
}

/// A path of `manifest.json` as a layout path: relative, without `.` or `..`.
fn relative(p: &str) -> Option<String> {
    if p.starts_with('/') || p.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => return None,
            c => parts.push(c),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Paths the layers above hide from the one being read.
#[derive(Default)]
struct Shadow {
    /// Paths with an entry above (anything at the same path replaces a lower file).
    exact: HashSet<Box<str>>,
    /// Paths whose descendants are hidden (whiteouts, non-directories, opaque directories).
    below: HashSet<Box<str>>,
}

impl Shadow {
    /// The directories above `p` are directories in the layer that has `p`: they replace
    /// what lower layers have at their paths that is not a directory. (Every path in `exact`
    /// has its parents there too, so the walk up stops at the first one present.)
    fn add_parents(&mut self, p: &str) {
        let mut end = p.len();
        while let Some(i) = p[..end].rfind('/') {
            if !self.exact.insert(p[..i].into()) {
                break;
            }
            end = i;
        }
    }

    fn hides(&self, p: &str) -> bool {
        if self.exact.contains(p) {
            return true;
        }
        let mut end = p.len();
        while let Some(i) = p[..end].rfind('/') {
            if self.below.contains(&p[..i]) {
                return true;
            }
            end = i;
        }
        !p.is_empty() && self.below.contains("")
    }
}

/// The visible tree of an image as far as a path lookup needs it: symbolic links and hard
/// links (files are found by the walk).
#[derive(Default, Debug)]
pub struct Links {
    symlinks: BTreeMap<String, String>,
    hard: BTreeMap<String, String>,
}

/// Whether an entry at `path` (a directory when `is_dir`) replaces a file an earlier entry of
/// the same layer put at `old`: the same path; one below it, unless the new entry is a
/// directory (which merges with the one there); or one above it (the file there gives way to
/// the directory the new entry needs).
fn replaced_by(path: &str, is_dir: bool, old: &str) -> bool {
    old == path || (!is_dir && is_below(old, path)) || is_below(path, old)
}

/// Whether path `a` lies below directory `b`.
fn is_below(a: &str, b: &str) -> bool {
    a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'/'
}

impl Links {
    /// Drops the links an entry at `path` (a directory when `is_dir`) replaces: those at the
    /// path, and below it for a non-directory; a hard link above it too ([`replaced_by`]; a
    /// symbolic link there is followed when the layer is unpacked).
    fn forget(&mut self, path: &str, is_dir: bool) {
        for (map, hard) in [(&mut self.symlinks, false), (&mut self.hard, true)] {
            if map.is_empty() {
                continue;
            }
            map.remove(path);
            if !is_dir {
                let below = format!("{path}/");
                let gone: Vec<String> = map
                    .range(below.clone()..)
                    .take_while(|(k, _)| k.starts_with(&below))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in gone {
                    map.remove(&k);
                }
            }
            if hard {
                let mut end = path.len();
                while let Some(i) = path[..end].rfind('/') {
                    map.remove(&path[..i]);
                    end = i;
                }
            }
        }
    }

    /// The path `p` (relative to the image's root) names after following symbolic links (in
    /// every component, `..` stopping at the root) and a final hard link; `None` for a loop.
    pub fn resolve(&self, p: &str) -> Option<String> {
        let mut queue: std::collections::VecDeque<String> =
            p.split('/').map(str::to_owned).collect();
        let mut done: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(c) = queue.pop_front() {
            match c.as_str() {
                "" | "." => {}
                ".." => {
                    done.pop();
                }
                _ => {
                    done.push(c);
                    let cur = done.join("/");
                    if let Some(t) = self.symlinks.get(&cur) {
                        hops += 1;
                        if hops > MAX_LINKS {
                            return None;
                        }
                        done.pop();
                        if t.starts_with('/') {
                            done.clear();
                        }
                        for (i, part) in t.split('/').enumerate() {
                            queue.insert(i, part.to_owned());
                        }
                    }
                }
            }
        }
        let path = done.join("/");
        Some(match self.hard.get(&path) {
            Some(t) => t.clone(),
            None => path,
        })
    }
}

/// Why a layer entry's name cannot be used.
pub(crate) fn entry_path(name: &str) -> std::result::Result<String, &'static str> {
    if name.starts_with('/') {
        return Err("is an absolute path");
    }
    let mut parts = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err("leaves the image's root with '..'"),
            c => parts.push(c),
        }
    }
    Ok(parts.join("/"))
}

fn wrap_err(mut e: Error, note: &str) -> Error {
    if let ErrorKind::Truncated(m) | ErrorKind::Corrupt(m) | ErrorKind::Checksum(m) = &mut e.kind {
        *m = format!("{m} ({note})");
    }
    e
}

/// Walks every image of `layout` (named `name`): each file of the file system the layers
/// unpack to that may hold device code, as [`walk`](fn@crate::walk) walks a package's members.
pub(crate) fn walk_images<T: Send>(
    ctx: &Ctx<'_, T>,
    name: &str,
    layout: &dyn Layout,
) -> Result<Walk<T>> {
    let mut out = Vec::new();
    let found = images(name, layout, ctx.opts.platform.as_ref())
        .map_err(|e| layout.damage().unwrap_or(e))?;
    for image in found {
        out.extend(walk_layers(ctx, name, layout, &image, None, None));
    }
    if let Some(e) = layout.damage() {
        if out.iter().all(|r| r.is_ok()) {
            out.push(Err(e));
        }
    }
    Ok(out)
}

/// Checks every layer's blob against its digest (in parallel): `Err` for the first that
/// does not match or is missing.
fn verify_layers(name: &str, layout: &dyn Layout, image: &Image) -> Result<()> {
    image
        .layers
        .par_iter()
        .map(|l| {
            let Some(blob) = layout.file(&l.path)? else {
                return Err(corrupt(
                    name,
                    format!("layer {} is not in the image (no {})", l.digest, l.path),
                ));
            };
            let at = |e: Error| match layout.offset(&l.path) {
                Some(o) => e.at(o),
                None => e,
            };
            if let Some(size) = l.size {
                check_size(name, &l.path, &blob, size).map_err(at)?;
            }
            match &l.check {
                Check::Blob(d) => check_digest(name, &l.path, &blob, d).map_err(at),
                // Checked as it is decompressed.
                Check::Diff(_) => Ok(()),
            }
        })
        .collect::<Result<Vec<()>>>()
        .map(|_| ())
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Option<Hasher>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// A layer's tar stream, decompressed.
fn open_layer<'b>(chain: &str, blob: &'b [u8]) -> Result<Box<dyn Read + 'b>> {
    let prefix = blob.get(..PREFIX_LEN).unwrap_or(blob);
    if let Some(c) = Compression::sniff(prefix) {
        return c
            .decoder(Cursor::new(blob))
            .map_err(|e| Error::from_read(chain, &e));
    }
    // An empty layer is a tar of zero blocks only.
    if is_tar(prefix) || (prefix.len() == PREFIX_LEN && prefix.iter().all(|b| *b == 0)) {
        return Ok(Box::new(Cursor::new(blob)));
    }
    Err(corrupt(
        chain,
        "the layer is neither a tar archive nor gzip or zstd".to_owned(),
    ))
}

/// Applies one image's layers top-down, visiting each surviving file that may hold device
/// code (or, with `only`, the file at that path alone, stopping there); collects the links a
/// lookup follows in `links` when given.
fn walk_layers<T: Send>(
    ctx: &Ctx<'_, T>,
    name: &str,
    layout: &dyn Layout,
    image: &Image,
    only: Option<&str>,
    mut links: Option<&mut Links>,
) -> Walk<T> {
    if let Err(e) = verify_layers(name, layout, image) {
        return vec![Err(e)];
    }
    let mut out: Walk<T> = Vec::new();
    let mut shadow = Shadow::default();
    for (li, layer) in image.layers.iter().enumerate().rev() {
        let chain = format!("{name}!{}", layer.path);
        (ctx.reading)(&chain);
        let blob = match layout.file(&layer.path) {
            Ok(Some(b)) => b,
            Ok(None) => {
                out.push(Err(corrupt(
                    name,
                    format!("layer {} is not in the image", layer.path),
                )));
                return out;
            }
            Err(e) => {
                out.push(Err(e));
                return out;
            }
        };
        let lctx = Ctx {
            layer: Some(&layer.digest),
            ..*ctx
        };
        let r = read_layer(
            &lctx,
            image,
            &chain,
            layer,
            &blob,
            &shadow,
            only,
            links.as_deref_mut(),
        );
        let (got, entries, found) = match r {
            Ok(v) => v,
            Err(e) => {
                out.push(Err(e));
                return out;
            }
        };
        out.extend(got);
        if found {
            return out;
        }
        if li > 0 {
            for (p, dir) in entries.added {
                shadow.add_parents(&p);
                if !dir {
                    shadow.below.insert(p.clone().into());
                }
                shadow.exact.insert(p.into());
            }
            for p in entries.whiteouts {
                shadow.add_parents(&p);
                shadow.below.insert(p.clone().into());
                shadow.exact.insert(p.into());
            }
            for p in entries.opaque {
                if !p.is_empty() {
                    shadow.add_parents(&p);
                    shadow.exact.insert(p.clone().into());
                }
                shadow.below.insert(p.into());
            }
        }
    }
    out
}

/// What a layer adds to the shadow of the layers under it.
#[derive(Default)]
struct LayerEntries {
    /// Every entry's path, and whether it is a directory.
    added: Vec<(String, bool)>,
    whiteouts: Vec<String>,
    opaque: Vec<String>,
}

type LayerRead<T> = (Walk<T>, LayerEntries, bool);

#[allow(clippy::too_many_arguments)]
fn read_layer<T: Send>(
    ctx: &Ctx<'_, T>,
    image: &Image,
    chain: &str,
    layer: &LayerRef,
    blob: &[u8],
    shadow: &Shadow,
    only: Option<&str>,
    mut links: Option<&mut Links>,
) -> Result<LayerRead<T>> {
    let stream = open_layer(chain, blob)?;
    let diff = match &layer.check {
        Check::Diff(d) => Some(d.clone()),
        Check::Blob(_) => None,
    };
    let mut hashing = Hashing {
        inner: stream,
        hasher: diff.as_ref().map(Digest::hasher),
    };
    let pos = std::cell::Cell::new(0u64);
    let mut st = LayerState::default();
    {
        let mut archive = tar::Archive::new(Counting {
            inner: &mut hashing,
            pos: &pos,
        });
        let iter = archive
            .entries()
            .map_err(|e| tar_header_error(chain, &e, pos.get()))?;
        for entry in iter {
            let mut entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    st.out.push(Err(wrap_err(
                        tar_header_error(chain, &e, pos.get()),
                        "in the layer's tar stream",
                    )));
                    return Ok((st.out, st.entries, false));
                }
            };
            let flow = layer_entry(
                ctx,
                image,
                chain,
                &mut entry,
                shadow,
                only,
                links.as_deref_mut(),
                &mut st,
            )?;
            if let Flow::Stop = flow {
                return Ok((st.out, st.entries, false));
            }
        }
        // To the end of the stream: the decompressor's checks run there.
        let mut rest = archive.into_inner();
        if let Err(e) = io::copy(&mut rest, &mut io::sink()) {
            st.out.push(Err(wrap_err(
                Error::from_read(chain, &e),
                "at the end of the layer",
            )
            .at(pos.get())));
            return Ok((st.out, st.entries, false));
        }
    }
    if let (Some(d), Some(h)) = (&diff, hashing.hasher.take()) {
        let got = h.hex();
        if got != d.hex {
            st.out.push(Err(Error::new(
                chain,
                ErrorKind::Checksum(format!(
                    "the layer's uncompressed tar has {} {got}, the image configuration says {} \
                     (what was read from it may be damaged)",
                    d.alg, d.hex
                )),
            )));
        }
    }
    let LayerState {
        mut out,
        entries,
        dropped,
        pending,
        ..
    } = st;
    if !dropped.is_empty() {
        let mut keep = vec![true; out.len()];
        for (a, b) in dropped {
            for k in keep.iter_mut().take(b).skip(a) {
                *k = false;
            }
        }
        let mut k = keep.into_iter();
        out.retain(|_| k.next().unwrap_or(true));
    }
    if !pending.is_empty() {
        let (got, _) = read_again(ctx, image, chain, blob, &pending, only)?;
        out.extend(got);
    }
    // A lookup ends with the layer that has the file (a later entry of that layer could
    // still replace it, so not before).
    let found = only.is_some() && out.iter().any(|r| r.is_ok());
    Ok((out, entries, found))
}

/// What reading a layer's entries has gathered so far.
struct LayerState<T> {
    /// The members visited and the errors met, in stream order.
    out: Walk<T>,
    /// What the layer adds to the shadow of the layers under it.
    entries: LayerEntries,
    /// Files read from this layer: their path -> range of `out`.
    read: BTreeMap<String, (usize, usize)>,
    /// Ranges of `out` replaced by a later entry of this layer.
    dropped: Vec<(usize, usize)>,
    /// Regular files of this layer that a higher layer hides.
    hidden_files: HashSet<String>,
    /// Hard links (path, target) whose target a higher layer hides: their data is read again.
    pending: Vec<(String, String)>,
}

impl<T> Default for LayerState<T> {
    fn default() -> Self {
        LayerState {
            out: Vec::new(),
            entries: LayerEntries::default(),
            read: BTreeMap::new(),
            dropped: Vec::new(),
            hidden_files: HashSet::new(),
            pending: Vec::new(),
        }
    }
}

impl<T> LayerState<T> {
    /// A later entry at a file's path, or below it (the path is a directory then), replaces a
    /// file read earlier from this layer (the layout forbids two entries for one path;
    /// unpacking, the later one wins).
    fn forget_replaced(&mut self, path: &str, is_dir: bool) {
        let (read, dropped) = (&mut self.read, &mut self.dropped);
        if !read.is_empty() {
            if let Some(prev) = read.remove(path) {
                dropped.push(prev);
            }
            if !is_dir {
                // A non-directory replaces a directory with everything in it.
                let below = format!("{path}/");
                let gone: Vec<String> = read
                    .range(below.clone()..)
                    .take_while(|(k, _)| k.starts_with(&below))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in gone {
                    if let Some(prev) = read.remove(&k) {
                        dropped.push(prev);
                    }
                }
            }
            let mut end = path.len();
            while let Some(i) = path[..end].rfind('/') {
                if let Some(prev) = read.remove(&path[..i]) {
                    dropped.push(prev);
                }
                end = i;
            }
        }
    }
}

/// Whether the layer's stream goes on after an entry.
enum Flow {
    Next,
    Stop,
}

/// Reads one entry of a layer (its whiteouts and links are noted, a regular file that may hold
/// device code is read): whether the stream can go on.
#[allow(clippy::too_many_arguments)]
fn layer_entry<T: Send, R: Read>(
    ctx: &Ctx<'_, T>,
    image: &Image,
    chain: &str,
    entry: &mut tar::Entry<'_, R>,
    shadow: &Shadow,
    only: Option<&str>,
    mut links: Option<&mut Links>,
    st: &mut LayerState<T>,
) -> Result<Flow> {
    let header_at = entry.raw_header_position();
    let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
    let path = match entry_path(&raw) {
        Ok(p) => p,
        Err(why) => {
            st.out.push(Err(corrupt(
                chain,
                format!(
                    "layer entry {raw:?} {why} (the offset is its tar header's in the \
                     layer's tar stream)"
                ),
            )
            .at(header_at)));
            return Ok(Flow::Next);
        }
    };
    if path.is_empty() {
        return Ok(Flow::Next); // The root directory itself.
    }
    let (dir, base) = match path.rsplit_once('/') {
        Some((d, b)) => (d, b),
        None => ("", path.as_str()),
    };
    if base == ".wh..wh..opq" {
        st.entries.opaque.push(dir.to_owned());
        return Ok(Flow::Next);
    }
    if let Some(gone) = base.strip_prefix(".wh.") {
        if gone.is_empty() || gone == "." || gone == ".." {
            st.out.push(Err(corrupt(
                chain,
                format!(
                    "whiteout {raw:?} names no file (the offset is its tar header's in \
                     the layer's tar stream)"
                ),
            )
            .at(header_at)));
            return Ok(Flow::Next);
        }
        st.entries.whiteouts.push(if dir.is_empty() {
            gone.to_owned()
        } else {
            format!("{dir}/{gone}")
        });
        return Ok(Flow::Next);
    }
    let kind = entry.header().entry_type();
    let is_dir = kind == tar::EntryType::Directory;
    st.forget_replaced(&path, is_dir);
    st.entries.added.push((path.clone(), is_dir));
    let regular = kind.is_file() || kind == tar::EntryType::Continuous;
    if shadow.hides(&path) {
        if regular {
            st.hidden_files.insert(path);
        }
        return Ok(Flow::Next);
    }
    // Nor is a link made earlier in this layer at this path (or, for a
    // non-directory, below it; or at a directory above it) still there: a hard link
    // whose data is to be read again, or a link a lookup would follow. (A path no
    // higher layer hides has no link from a higher layer.)
    if !st.pending.is_empty() {
        st.pending.retain(|(l, _)| !replaced_by(&path, is_dir, l));
    }
    if let Some(l) = links.as_deref_mut() {
        l.forget(&path, is_dir);
    }
    if kind == tar::EntryType::Symlink {
        if let (Some(l), Some(t)) = (links.as_deref_mut(), entry.link_name_bytes()) {
            let t = String::from_utf8_lossy(&t).into_owned();
            l.symlinks.insert(path, t);
        }
        return Ok(Flow::Next);
    }
    if kind == tar::EntryType::Link {
        let Some(t) = entry.link_name_bytes() else {
            return Ok(Flow::Next);
        };
        let target = match entry_path(&String::from_utf8_lossy(&t)) {
            Ok(t) => t,
            Err(why) => {
                st.out.push(Err(corrupt(
                    chain,
                    format!(
                        "hard link {raw:?}: its target {why} (the offset is its tar \
                         header's in the layer's tar stream)"
                    ),
                )
                .at(header_at)));
                return Ok(Flow::Next);
            }
        };
        if st.hidden_files.contains(&target) {
            // The data is under a name a higher layer hides: read it again under
            // this one.
            st.pending.push((path, target));
        } else if let Some(l) = links {
            l.hard.insert(path, target);
        }
        return Ok(Flow::Next);
    }
    if !regular {
        return Ok(Flow::Next);
    }
    if only.is_some_and(|o| o != path) {
        return Ok(Flow::Next);
    }
    let size = entry.size();
    let data_at = entry.raw_file_position();
    let start = st.out.len();
    let mut got = member(
        ctx,
        &image.prefix,
        &format!("/{path}"),
        Some(size),
        entry,
        1,
    );
    let fatal = annotate(&mut got, &image.prefix, &path, size, data_at, header_at);
    st.out.extend(got);
    st.read.insert(path, (start, st.out.len()));
    Ok(if fatal { Flow::Stop } else { Flow::Next })
}

/// Notes where a member's data was in the layer on its errors; whether the layer's stream
/// cannot go on after it.
fn annotate<T>(
    got: &mut Walk<T>,
    prefix: &str,
    path: &str,
    size: u64,
    data_at: u64,
    header_at: u64,
) -> bool {
    let own = format!("{prefix}!/{path}");
    let mut fatal = false;
    for r in got.iter_mut() {
        if let Err(e) = r {
            if e.path == own {
                fatal |= matches!(
                    e.kind,
                    ErrorKind::Truncated(_)
                        | ErrorKind::Io(_)
                        | ErrorKind::SmallerThanDeclared { .. }
                );
                if let ErrorKind::Truncated(m) | ErrorKind::Corrupt(m) | ErrorKind::Checksum(m) =
                    &mut e.kind
                {
                    *m = format!(
                        "{m} (reading its {size} bytes from offset {data_at:#x} of the layer's \
                         tar stream)"
                    );
                }
                if e.offset.is_none() {
                    e.offset = Some(header_at);
                }
            }
        }
    }
    fatal
}

/// Reads a layer again for the data of hard links whose first name a higher layer hides.
fn read_again<T: Send>(
    ctx: &Ctx<'_, T>,
    image: &Image,
    chain: &str,
    blob: &[u8],
    pending: &[(String, String)],
    only: Option<&str>,
) -> Result<(Walk<T>, bool)> {
    let mut by_target: HashMap<&str, &str> = HashMap::new();
    for (link, target) in pending {
        if only.map_or(true, |o| o == link) {
            by_target.entry(target.as_str()).or_insert(link.as_str());
        }
    }
    let mut out = Vec::new();
    if by_target.is_empty() {
        return Ok((out, false));
    }
    let mut stream = open_layer(chain, blob)?;
    let mut archive = tar::Archive::new(&mut stream);
    let iter = archive
        .entries()
        .map_err(|e| tar_header_error(chain, &e, 0))?;
    for entry in iter {
        let Ok(mut entry) = entry else { break };
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            continue;
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Ok(path) = entry_path(&raw) else { continue };
        let Some(link) = by_target.remove(path.as_str()) else {
            continue;
        };
        let size = entry.size();
        let (data_at, header_at) = (entry.raw_file_position(), entry.raw_header_position());
        let start = out.len();
        let mut got = member(
            ctx,
            &image.prefix,
            &format!("/{link}"),
            Some(size),
            &mut entry,
            1,
        );
        annotate(&mut got, &image.prefix, link, size, data_at, header_at);
        out.extend(got);
        if only.is_some() && out[start..].iter().any(|r: &Result<_>| r.is_ok()) {
            return Ok((out, true));
        }
        if by_target.is_empty() {
            break;
        }
    }
    Ok((out, false))
}

/// Walks the images of a layout a caller opened (a directory: `oci-layout` and
/// `index.json`, or a `docker save` `manifest.json`), as [`walk`](fn@crate::walk) walks the images of
/// an archive.
pub fn walk_layout<T: Send>(
    name: &str,
    layout: &dyn Layout,
    opts: &crate::Options,
    spill: &dyn crate::Spill,
    visit: &(dyn Fn(crate::Member<'_>) -> T + Sync),
    reading: &(dyn Fn(&str) + Sync),
) -> Result<Walk<T>> {
    let total = std::sync::atomic::AtomicU64::new(0);
    let ctx = Ctx {
        opts,
        spill,
        visit,
        reading,
        total: &total,
        layer: None,
    };
    walk_images(&ctx, name, layout)
}

/// One file of an image found by [`open_member`].
pub struct Found {
    /// Its bytes.
    pub bytes: crate::Bytes,
    /// The digest of the layer that holds it.
    pub layer: Option<String>,
}

/// Opens the file `member` (`IMAGE!/usr/lib/x.so`, `IMAGE!REF!/...` when the layout holds
/// several images, or a member of an archive inside the image, `IMAGE!/opt/x.whl!lib/y.so`)
/// of the images in `layout` (named `name`), following symbolic links as the image's file
/// system does. `Ok(None)` when the path names no file that may hold device code.
pub fn open_member(
    name: &str,
    layout: &dyn Layout,
    opts: &crate::Options,
    spill: &dyn crate::Spill,
    member: &str,
    reading: &(dyn Fn(&str) + Sync),
) -> Result<Option<Found>> {
    let total = std::sync::atomic::AtomicU64::new(0);
    let found =
        images(name, layout, opts.platform.as_ref()).map_err(|e| layout.damage().unwrap_or(e))?;
    for image in found {
        let Some(rest) = member
            .strip_prefix(image.prefix.as_str())
            .and_then(|r| r.strip_prefix("!/"))
        else {
            continue;
        };
        // The file in the image, and what follows it when it is an archive.
        let (file, inner) = match rest.split_once('!') {
            Some((f, i)) => (f, Some(i)),
            None => (rest, None),
        };
        let mut links = Links::default();
        let mut tries = vec![file.to_owned()];
        let mut first = true;
        while let Some(path) = tries.pop() {
            let wanted = match inner {
                Some(i) => format!("{}!/{path}!{i}", image.prefix),
                None => format!("{}!/{path}", image.prefix),
            };
            let visit = |m: crate::Member<'_>| {
                (m.path == wanted).then(|| Found {
                    bytes: m.bytes,
                    layer: m.layer.map(str::to_owned),
                })
            };
            let ctx = Ctx {
                opts,
                spill,
                visit: &visit,
                reading,
                total: &total,
                layer: None,
            };
            let got = walk_layers(
                &ctx,
                name,
                layout,
                &image,
                Some(&path),
                first.then_some(&mut links),
            );
            for r in got {
                match r {
                    Ok(v) => {
                        if let Some(found) = v.value {
                            return Ok(Some(found));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            if std::mem::take(&mut first) {
                if let Some(real) = links.resolve(&path) {
                    if real != path {
                        tries.push(real);
                    }
                }
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_parse_and_match() {
        let p = Platform::parse("linux/arm64/v8").unwrap();
        assert_eq!(p.to_string(), "linux/arm64/v8");
        assert!(Platform::parse("linux/arm64").unwrap().matches(&p));
        assert!(!p.matches(&Platform::parse("linux/arm64").unwrap()));
        for bad in ["", "linux", "linux/", "a/b/c/d", "linux/am d64"] {
            assert!(Platform::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn shadows_hide_what_a_runtime_hides() {
        let mut s = Shadow::default();
        s.exact.insert("usr/lib/libfoo.so".into());
        s.below.insert("opt/rocm".into());
        assert!(s.hides("usr/lib/libfoo.so"));
        assert!(!s.hides("usr/lib/libfoo.so.1"));
        assert!(s.hides("opt/rocm/lib/x.so"));
        assert!(!s.hides("opt/rocm"));
        assert!(!s.hides("opt/rocm-6/lib"));
        s.below.insert("".into());
        assert!(s.hides("anything"));
    }

    #[test]
    fn links_resolve_like_a_path_lookup() {
        let mut l = Links::default();
        l.symlinks.insert("lib".into(), "usr/lib".into());
        l.symlinks
            .insert("usr/lib/libx.so".into(), "libx.so.1".into());
        l.symlinks
            .insert("usr/lib/libx.so.1".into(), "/opt/x/../x/libx.so.1.2".into());
        l.symlinks.insert("loop".into(), "loop".into());
        l.hard
            .insert("opt/x/libx.so.1.2".into(), "opt/x/real".into());
        assert_eq!(l.resolve("lib/libx.so").as_deref(), Some("opt/x/real"));
        assert_eq!(l.resolve("../../lib/y").as_deref(), Some("usr/lib/y"));
        assert_eq!(l.resolve("loop/a"), None);
    }

    #[test]
    fn entry_names_stay_inside() {
        assert_eq!(entry_path("./usr/lib/").unwrap(), "usr/lib");
        assert!(entry_path("/etc/passwd").is_err());
        assert!(entry_path("usr/../../etc").is_err());
        assert_eq!(relative("abc/layer.tar").as_deref(), Some("abc/layer.tar"));
        assert_eq!(relative("../x"), None);
        assert_eq!(relative("/x"), None);
        assert!(Digest::parse("sha256:../../etc").is_err());
        assert!(Digest::parse(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert_eq!(
            blob_name_digest(&format!("blobs/sha256/{}", "a".repeat(64))).map(|d| d.path()),
            Some(format!("blobs/sha256/{}", "a".repeat(64)))
        );
    }
}
