//! Typed errors with the byte offset they concern.

use std::fmt;

/// What is wrong with a `.kpack` archive, a marker or a split/inline request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file does not start with `KPAK`.
    #[error("not a kpack archive (magic {found:02x?}, expected \"KPAK\")")]
    BadMagic {
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// A format version gfxkit (and the runtime) does not read.
    #[error("unsupported kpack format version {0} (only 1 is known)")]
    UnsupportedVersion(u64),
    /// A field or blob runs past the end of the file (or of its enclosing region).
    #[error("{what} runs past the end ({need} bytes needed, {have} present)")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed from the offset.
        need: u64,
        /// Bytes present from the offset.
        have: u64,
    },
    /// The table of contents is not the MessagePack map expected.
    #[error("table of contents: {0}")]
    BadToc(String),
    /// A compression scheme gfxkit does not read.
    #[error("unknown compression scheme {0:?} (known: \"zstd-per-kernel\", \"none\")")]
    UnknownScheme(String),
    /// A TOC entry's ordinal has no blob or frame.
    #[error("kernel {key} ({arch}): ordinal {ordinal} out of range ({count} stored)")]
    OrdinalOutOfRange {
        /// TOC key.
        key: String,
        /// Architecture.
        arch: String,
        /// The ordinal.
        ordinal: u64,
        /// Number of blobs or frames.
        count: u64,
    },
    /// A zstd frame does not decode.
    #[error("kernel {key} ({arch}): zstd frame does not decode: {why}")]
    Decompress {
        /// TOC key.
        key: String,
        /// Architecture.
        arch: String,
        /// The decoder's message.
        why: String,
    },
    /// A kernel decodes to a size other than its `original_size`.
    #[error("kernel {key} ({arch}): {got} bytes, but original_size says {expected}")]
    SizeMismatch {
        /// TOC key.
        key: String,
        /// Architecture.
        arch: String,
        /// `original_size`.
        expected: u64,
        /// Bytes produced (at most `expected + 1` are decoded).
        got: u64,
    },
    /// A kernel's declared size is above the limit gfxkit decodes.
    #[error("kernel {key} ({arch}): original_size {size} is above the limit of {limit} bytes")]
    TooLarge {
        /// TOC key.
        key: String,
        /// Architecture.
        arch: String,
        /// Declared size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The HIPK marker does not parse or lacks a required field.
    #[error("marker: {0}")]
    BadMarker(String),
    /// The input cannot be split or inlined.
    #[error("{0}")]
    Unsupported(String),
    /// The ELF rewrite refused or failed.
    #[error("{0}")]
    Rewrite(String),
    /// An offload bundle inside the input does not read.
    #[error("bundle: {0}")]
    Bundle(String),
}

/// An error and the byte offset (in the file named by the caller) it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What is wrong.
    pub kind: ErrorKind,
    /// Byte offset.
    pub offset: u64,
}

impl Error {
    /// An error at `offset`.
    pub fn at(offset: u64, kind: ErrorKind) -> Error {
        Error { kind, offset }
    }

    /// The `kpack_error_t` the ROCm runtime returns for this problem (`kpack_types.h`): 3
    /// invalid format, 4 unsupported version, 5 kernel not found, 6 decompression failed.
    /// CLR reports all of them as `hipErrorInvalidImage`.
    pub fn runtime_code(&self) -> Option<u32> {
        match self.kind {
            ErrorKind::BadMagic { .. }
            | ErrorKind::Truncated { .. }
            | ErrorKind::BadToc(_)
            | ErrorKind::UnknownScheme(_)
            | ErrorKind::OrdinalOutOfRange { .. } => Some(3),
            ErrorKind::UnsupportedVersion(_) => Some(4),
            ErrorKind::Decompress { .. }
            | ErrorKind::SizeMismatch { .. }
            | ErrorKind::TooLarge { .. } => Some(6),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at offset {:#x})", self.kind, self.offset)
    }
}

impl std::error::Error for Error {}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn fail<T>(offset: u64, kind: ErrorKind) -> Result<T> {
    Err(Error::at(offset, kind))
}
