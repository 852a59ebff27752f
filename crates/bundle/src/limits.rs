//! Bounds applied to every count and size read from a file.
//!
//! A bundle is untrusted input: a 40-byte file can claim a billion entries or a 4 GiB payload.
//! Every loop over a count read from a file, and every allocation sized from one, is bounded
//! by the constants here or by the length of the input itself.

/// Most entries one uncompressed bundle may declare. Real bundles hold tens; clang writes one
/// per `--offload-arch`. Each entry record needs at least 24 bytes, so the input length bounds
/// the count too.
pub const MAX_ENTRIES: u64 = 65_536;

/// Longest entry ID accepted, in bytes. Real IDs are under 100 bytes.
pub const MAX_ID_LEN: u64 = 4096;

/// Largest uncompressed size a CCOB header may declare before decompression is refused, by
/// default (64 GiB): the default of [`Limits::max_uncompressed`], which a caller lowers per
/// call (the command line's `--max-uncompressed`). Below it, memory follows the data actually
/// produced, never the declared size alone (see [`codec`](crate::codec)), so a header that
/// lies costs what its payload holds.
pub const MAX_UNCOMPRESSED_SIZE: u64 = 64 << 30;

/// The bounds of reading bundles that a caller may change, passed in to every reader that
/// applies them (the others are the constants of this module). `Default` holds the documented
/// defaults; the command line and the Python package build one from `--max-uncompressed` or
/// [`MAX_UNCOMPRESSED_ENV`] and hand it down.
///
/// ```
/// use gfxkit_bundle::limits::{Limits, MAX_UNCOMPRESSED_SIZE};
/// assert_eq!(Limits::default().max_uncompressed, MAX_UNCOMPRESSED_SIZE);
/// let small = Limits { max_uncompressed: 1 << 20 };
/// assert_eq!(small.decompress_options().max_uncompressed, 1 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest uncompressed size a CCOB header may declare ([`MAX_UNCOMPRESSED_SIZE`]); a
    /// bundle declaring more is refused before it is decoded, for a tool that runs where
    /// memory or disk is short.
    pub max_uncompressed: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_uncompressed: MAX_UNCOMPRESSED_SIZE,
        }
    }
}

impl Limits {
    /// Decompression options under these limits, the hash checked
    /// ([`HashCheck::Error`](crate::ccob::HashCheck::Error)).
    pub fn decompress_options(&self) -> crate::ccob::DecompressOptions {
        self.decompress_options_hash(crate::ccob::HashCheck::Error)
    }

    /// Decompression options under these limits, the hash checked as `hash` says.
    pub fn decompress_options_hash(
        &self,
        hash: crate::ccob::HashCheck,
    ) -> crate::ccob::DecompressOptions {
        crate::ccob::DecompressOptions {
            hash,
            max_uncompressed: self.max_uncompressed,
        }
    }

    /// The limits of the command line and the Python package where no option says otherwise:
    /// the defaults, with [`MAX_UNCOMPRESSED_ENV`] applied when it is set. A value that is not
    /// a size (or not Unicode) is an error naming the variable.
    pub fn from_env() -> Result<Limits, String> {
        let mut l = Limits::default();
        if let Some(n) = max_uncompressed_from_env()? {
            l.max_uncompressed = n;
        }
        Ok(l)
    }
}

/// The environment variable that sets [`Limits::max_uncompressed`] for the command line and the
/// Python package alike ([`Limits::from_env`]); its value is a size for [`parse_size`].
pub const MAX_UNCOMPRESSED_ENV: &str = "GFXKIT_MAX_UNCOMPRESSED";

/// A size as people write it: bytes, or a whole number with `K`, `M`, `G` or `T` (binary
/// units; `KB`, `KiB` and lower case alike), as `--max-uncompressed` and
/// [`MAX_UNCOMPRESSED_ENV`] take it. The error says what was expected.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (bytes, or a number with K, M, G or T)"))?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} does not fit 64 bits"))
}

/// The size [`MAX_UNCOMPRESSED_ENV`] gives, read from the environment: `None` when it is
/// unset, an error naming the variable when it is not a size (or not Unicode).
pub fn max_uncompressed_from_env() -> Result<Option<u64>, String> {
    match std::env::var(MAX_UNCOMPRESSED_ENV) {
        Ok(v) => parse_size(&v)
            .map(Some)
            .map_err(|e| format!("{MAX_UNCOMPRESSED_ENV}: {e}")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(format!("{MAX_UNCOMPRESSED_ENV}: {e}")),
    }
}

/// Size of the part of an uncompressed bundle that comgr reads when the HIP runtime looks a
/// code object up: a header (magic, count, entry records) longer than this cannot be loaded.
pub const HIP_HEADER_READ_LIMIT: u64 = 4096;

/// Most bundles [`iter_concatenated`](crate::iter_concatenated) yields from one input (a
/// ROCm library holds a few hundred).
pub const MAX_CONCATENATED: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64G"), Ok(64 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("3kb"), Ok(3 << 10));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size(" 7B "), Ok(7));
        for bad in ["", "G", "1.5G", "12X", "-1", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }
}
