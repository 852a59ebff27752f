//! Digests of an image layout's blobs (`sha256:<hex>`, `sha512:<hex>`) and the names made of
//! them (`blobs/<alg>/<hex>`, the layer directories and configuration of an old `docker save`
//! archive), by which a tar's first entry tells an image layout.

use sha2::Digest as _;
use std::fmt;

/// A digest `alg:hex` of a blob (sha256 or sha512).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digest {
    /// `sha256` or `sha512`.
    pub(crate) alg: &'static str,
    /// The digest in lowercase hex.
    pub(crate) hex: String,
}

impl Digest {
    /// Parses `alg:hex`, checking the algorithm and the length of the hex digits.
    pub(crate) fn parse(s: &str) -> std::result::Result<Digest, String> {
        let (alg, hex) = s
            .split_once(':')
            .ok_or_else(|| format!("digest {s:?} is not ALGORITHM:HEX"))?;
        let (alg, len) = match alg {
            "sha256" => ("sha256", 64),
            "sha512" => ("sha512", 128),
            other => {
                return Err(format!(
                    "digest algorithm {other:?} (sha256 and sha512 are read)"
                ))
            }
        };
        if hex.len() != len
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(format!("digest {s:?} is not {len} lowercase hex digits"));
        }
        Ok(Digest {
            alg,
            hex: hex.to_owned(),
        })
    }

    /// Where the layout keeps the blob: `blobs/<alg>/<hex>` (safe by construction).
    pub(crate) fn path(&self) -> String {
        format!("blobs/{}/{}", self.alg, self.hex)
    }

    /// A hasher of this digest's algorithm.
    pub(crate) fn hasher(&self) -> Hasher {
        match self.alg {
            "sha512" => Hasher::Sha512(sha2::Sha512::new()),
            _ => Hasher::Sha256(sha2::Sha256::new()),
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.alg, self.hex)
    }
}

pub(crate) enum Hasher {
    Sha256(sha2::Sha256),
    Sha512(sha2::Sha512),
}

impl Hasher {
    /// Hashes more bytes.
    pub(crate) fn update(&mut self, b: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(b),
            Hasher::Sha512(h) => h.update(b),
        }
    }
    /// The digest of what was hashed, in lowercase hex.
    pub(crate) fn hex(self) -> String {
        let bytes: Vec<u8> = match self {
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
        };
        hex::encode(bytes)
    }
}

/// The digest a `blobs/<alg>/<hex>` path names, or the image ID `<hex>.json` of an old
/// `docker save` configuration.
pub(crate) fn blob_name_digest(path: &str) -> Option<Digest> {
    if let Some(rest) = path.strip_prefix("blobs/") {
        let (alg, hex) = rest.split_once('/')?;
        return Digest::parse(&format!("{alg}:{hex}")).ok();
    }
    let hex = path.strip_suffix(".json")?;
    Digest::parse(&format!("sha256:{hex}")).ok()
}

/// Whether the first file of a tar named `name` makes it an image layout: a blob
/// (`blobs/sha256/<hex>`), a layer directory's file of an old `docker save` (`<hex>/VERSION`,
/// `<hex>/json`, `<hex>/layer.tar`) or `oci-layout`.
pub fn looks_like_image_entry(name: &str) -> bool {
    if name == "oci-layout" {
        return true;
    }
    if blob_name_digest(name).is_some() && name.starts_with("blobs/") {
        return true;
    }
    match name.split_once('/') {
        Some((dir, f)) => {
            ["VERSION", "json", "layer.tar"].contains(&f)
                && Digest::parse(&format!("sha256:{dir}")).is_ok()
        }
        None => false,
    }
}
