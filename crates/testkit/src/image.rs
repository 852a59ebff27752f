//! Container images written from the OCI image-spec and the `docker save` layout, for tests
//! (no container engine needed): layer tars with files, directories, symbolic and hard links,
//! whiteouts and opaque markers; gzip or zstd; OCI layouts (one image, or an index of
//! platforms) and `docker save` archives (old `<id>/layer.tar` form), as file maps that
//! [`tar_of`] archives or [`write_dir`] writes out.

use sha2::Digest as _;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// One entry of a layer.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A regular file.
    File(String, Vec<u8>),
    /// A directory.
    Dir(String),
    /// A symbolic link and its target.
    Symlink(String, String),
    /// A hard link and the (earlier) entry it links to.
    Hardlink(String, String),
    /// A whiteout deleting this path of the layers below (`dir/.wh.name`).
    Whiteout(String),
    /// An opaque marker for this directory (`dir/.wh..wh..opq`).
    Opaque(String),
    /// An entry with this exact name, any bytes (for damaged layers).
    Raw(String, Vec<u8>),
}

/// How a layer is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compress {
    /// A plain tar.
    None,
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
}

/// A layer: its entries, in order, and its compression.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Entries in tar order.
    pub entries: Vec<Entry>,
    /// Compression of the blob.
    pub compress: Compress,
}

/// Lowercase hex SHA-256 of `b`.
pub fn sha256_hex(b: &[u8]) -> String {
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(if kind == tar::EntryType::Directory {
        0o755
    } else {
        0o644
    });
    h.set_mtime(1_700_000_000);
    h
}

fn split(p: &str) -> (&str, &str) {
    match p.rsplit_once('/') {
        Some((d, b)) => (d, b),
        None => ("", p),
    }
}

fn under(dir: &str, base: &str) -> String {
    if dir.is_empty() {
        base.to_owned()
    } else {
        format!("{dir}/{base}")
    }
}

/// The layer's uncompressed tar.
pub fn layer_tar(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        match e {
            Entry::File(p, data) => {
                let mut h = header(tar::EntryType::Regular, data.len() as u64);
                b.append_data(&mut h, p, &data[..]).unwrap();
            }
            Entry::Dir(p) => {
                let mut h = header(tar::EntryType::Directory, 0);
                b.append_data(&mut h, format!("{p}/"), &[][..]).unwrap();
            }
            Entry::Symlink(p, t) => {
                let mut h = header(tar::EntryType::Symlink, 0);
                b.append_link(&mut h, p, t).unwrap();
            }
            Entry::Hardlink(p, t) => {
                let mut h = header(tar::EntryType::Link, 0);
                b.append_link(&mut h, p, t).unwrap();
            }
            Entry::Whiteout(p) => {
                let (d, base) = split(p);
                let mut h = header(tar::EntryType::Regular, 0);
                b.append_data(&mut h, under(d, &format!(".wh.{base}")), &[][..])
                    .unwrap();
            }
            Entry::Opaque(d) => {
                let mut h = header(tar::EntryType::Regular, 0);
                b.append_data(&mut h, under(d, ".wh..wh..opq"), &[][..])
                    .unwrap();
            }
            Entry::Raw(name, data) => {
                // Written by hand: the tar crate refuses names with `..` or a leading `/`.
                let mut h = header(tar::EntryType::Regular, data.len() as u64);
                let bytes = name.as_bytes();
                h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
                h.set_cksum();
                b.append(&h, &data[..]).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

/// `tar` compressed as asked.
pub fn compress(tar: &[u8], c: Compress) -> Vec<u8> {
    match c {
        Compress::None => tar.to_vec(),
        Compress::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        Compress::Zstd => zstd::stream::encode_all(tar, 3).unwrap(),
    }
}

fn media_type(c: Compress) -> &'static str {
    match c {
        Compress::None => "application/vnd.oci.image.layer.v1.tar",
        Compress::Gzip => "application/vnd.oci.image.layer.v1.tar+gzip",
        Compress::Zstd => "application/vnd.oci.image.layer.v1.tar+zstd",
    }
}

/// Stores `bytes` as a blob; returns its descriptor.
fn blob(files: &mut BTreeMap<String, Vec<u8>>, media: &str, bytes: Vec<u8>) -> serde_json::Value {
    let hex = sha256_hex(&bytes);
    let d = serde_json::json!({
        "mediaType": media,
        "digest": format!("sha256:{hex}"),
        "size": bytes.len(),
    });
    files.insert(format!("blobs/sha256/{hex}"), bytes);
    d
}

fn platform_json(p: &str) -> serde_json::Value {
    let parts: Vec<&str> = p.split('/').collect();
    let mut v = serde_json::json!({"os": parts[0], "architecture": parts[1]});
    if let Some(var) = parts.get(2) {
        v["variant"] = serde_json::json!(var);
    }
    v
}

/// The blobs of one image manifest (config and layers) for `platform`; its descriptor.
fn manifest(
    files: &mut BTreeMap<String, Vec<u8>>,
    platform: &str,
    layers: &[Layer],
) -> serde_json::Value {
    let tars: Vec<Vec<u8>> = layers.iter().map(|l| layer_tar(&l.entries)).collect();
    let mut config = platform_json(platform);
    config["rootfs"] = serde_json::json!({
        "type": "layers",
        "diff_ids": tars.iter().map(|t| format!("sha256:{}", sha256_hex(t))).collect::<Vec<_>>(),
    });
    let config = blob(
        files,
        "application/vnd.oci.image.config.v1+json",
        serde_json::to_vec(&config).unwrap(),
    );
    let layer_descs: Vec<serde_json::Value> = layers
        .iter()
        .zip(&tars)
        .map(|(l, t)| blob(files, media_type(l.compress), compress(t, l.compress)))
        .collect();
    let m = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": layer_descs,
    });
    blob(
        files,
        "application/vnd.oci.image.manifest.v1+json",
        serde_json::to_vec(&m).unwrap(),
    )
}

/// An OCI image layout: `oci-layout`, `index.json` and `blobs/sha256/...`. One platform gives
/// an index naming its manifest directly; several give an index naming an image index that
/// lists one manifest per platform (as multi-platform images are stored).
pub fn oci_layout(platforms: &[(&str, Vec<Layer>)], reference: &str) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert(
        "oci-layout".to_owned(),
        br#"{"imageLayoutVersion": "1.0.0"}"#.to_vec(),
    );
    let mut top = if let [(p, layers)] = platforms {
        let mut d = manifest(&mut files, p, layers);
        d["platform"] = platform_json(p);
        d
    } else {
        let manifests: Vec<serde_json::Value> = platforms
            .iter()
            .map(|(p, layers)| {
                let mut d = manifest(&mut files, p, layers);
                d["platform"] = platform_json(p);
                d
            })
            .collect();
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": manifests,
        });
        blob(
            &mut files,
            "application/vnd.oci.image.index.v1+json",
            serde_json::to_vec(&index).unwrap(),
        )
    };
    top["annotations"] = serde_json::json!({"org.opencontainers.image.ref.name": reference});
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [top],
    });
    files.insert("index.json".to_owned(), serde_json::to_vec(&index).unwrap());
    files
}

/// A `docker save` archive's files in the old layout (Docker before 25): `<id>/layer.tar`
/// (uncompressed), the configuration `<image id>.json` with the layers' `diff_ids`, and
/// `manifest.json`.
pub fn docker_save(layers: &[Vec<Entry>], tag: &str) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let tars: Vec<Vec<u8>> = layers.iter().map(|l| layer_tar(l)).collect();
    let diff_ids: Vec<String> = tars
        .iter()
        .map(|t| format!("sha256:{}", sha256_hex(t)))
        .collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }))
    .unwrap();
    let id = sha256_hex(&config);
    files.insert(format!("{id}.json"), config);
    let mut paths = Vec::new();
    for (i, t) in tars.into_iter().enumerate() {
        // Layer directories are v1 IDs, not digests of the layer.
        let dir = sha256_hex(format!("layer {i} of {tag}").as_bytes());
        files.insert(format!("{dir}/VERSION"), b"1.0".to_vec());
        files.insert(format!("{dir}/layer.tar"), t);
        paths.push(format!("{dir}/layer.tar"));
    }
    let manifest = serde_json::json!([{
        "Config": format!("{id}.json"),
        "RepoTags": [tag],
        "Layers": paths,
    }]);
    files.insert(
        "manifest.json".to_owned(),
        serde_json::to_vec(&manifest).unwrap(),
    );
    files
}

/// The files as a tar archive (what `docker save` and `skopeo copy ... oci-archive:` write).
pub fn tar_of(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = header(tar::EntryType::Regular, data.len() as u64);
        b.append_data(&mut h, name, &data[..]).unwrap();
    }
    b.into_inner().unwrap()
}

/// Writes the files under `dir` (an image layout directory).
pub fn write_dir(files: &BTreeMap<String, Vec<u8>>, dir: &Path) {
    for (name, data) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
}
