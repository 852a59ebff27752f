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
    /// A kernel decodes, but not to an AMDGPU code object (damage a frame without a checksum
    /// does not reveal otherwise).
    #[error("kernel {key} ({arch}): the decoded bytes are not an AMDGPU code object: {why}")]
    NotCodeObject {
        /// TOC key.
        key: String,
        /// Architecture.
        arch: String,
        /// The code-object reader's message.
        why: String,
    },
    /// A kernel decodes to a code object built for another architecture than the TOC's.
    #[error("kernel {key} ({arch}): the code object is built for {found}, not {arch} ({why})")]
    WrongTarget {
        /// TOC key.
        key: String,
        /// Architecture in the TOC.
        arch: String,
        /// The target ID the code object's `e_flags` name.
        found: String,
        /// Why they differ.
        why: String,
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

    /// How the runtime fails on this problem, for messages: `kpack error N` for the codes of
    /// [`Error::runtime_code`], else (a kernel that decodes but is not a code object for its
    /// architecture) what the HIP loader makes of it; `default` is the kpack code assumed
    /// for other kinds.
    pub fn runtime_note(&self, default: u32) -> String {
        match (&self.kind, self.runtime_code()) {
            (_, Some(c)) => format!("kpack error {c}"),
            (ErrorKind::NotCodeObject { .. } | ErrorKind::WrongTarget { .. }, None) => {
                "the HIP loader refuses it: \"device kernel image is invalid\"".into()
            }
            (_, None) => format!("kpack error {default}"),
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
