//! Typed errors: what was wrong, in which entry, at which byte offset.

use std::fmt;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error reading or writing a bundle: a [`ErrorKind`] plus, where known, the entry index and
/// the byte offset where it was found: from the start of the bytes handed to the reader, or,
/// for the `_at` readers handed a located [`gfxkit_bytes::Cursor`], the file offset.
///
/// Printed like `entry 3: payload runs past the end of the data (at offset 0x1a8)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What was wrong.
    pub kind: ErrorKind,
    /// Index of the entry concerned, in header order.
    pub entry: Option<usize>,
    /// Byte offset where the problem was found.
    pub offset: Option<u64>,
}

impl Error {
    /// An error of `kind` with no position.
    pub fn new(kind: ErrorKind) -> Error {
        Error {
            kind,
            entry: None,
            offset: None,
        }
    }

    /// An error of `kind` found at byte `offset`.
    pub fn at(kind: ErrorKind, offset: u64) -> Error {
        Error {
            kind,
            entry: None,
            offset: Some(offset),
        }
    }

    /// `what` (a field starting at byte `offset`) needs `needed` bytes but only `available`
    /// remain.
    pub(crate) fn truncated(what: &'static str, needed: u64, available: u64, offset: u64) -> Error {
        Error::at(
            ErrorKind::Truncated {
                what,
                needed,
                available,
            },
            offset,
        )
    }

    /// Sets the entry index.
    pub fn in_entry(mut self, entry: usize) -> Error {
        self.entry = Some(entry);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = self.entry {
            write!(f, "entry {e}: ")?;
        }
        write!(f, "{}", self.kind)?;
        if let Some(o) = self.offset {
            write!(f, " (at offset {o:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::InvalidEntryId(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error::new(kind)
    }
}

/// What was wrong with a bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The data does not start with the expected magic.
    #[error("bad magic: expected {expected}")]
    BadMagic {
        /// The magic that was expected.
        expected: &'static str,
    },
    /// The data ends before a field or payload does.
    #[error("truncated {what}: needs {needed} bytes, {available} available")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes needed from the field's start.
        needed: u64,
        /// Bytes available from the field's start.
        available: u64,
    },
    /// The entry count exceeds what the data or [`MAX_ENTRIES`](crate::limits::MAX_ENTRIES) allows.
    #[error("entry count {count} exceeds the limit of {limit}")]
    TooManyEntries {
        /// Declared count.
        count: u64,
        /// The limit that applied.
        limit: u64,
    },
    /// An entry ID longer than [`MAX_ID_LEN`](crate::limits::MAX_ID_LEN).
    #[error("entry ID length {len} exceeds the limit of {limit}")]
    IdTooLong {
        /// Declared length.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// An entry ID that is not UTF-8 text.
    #[error("entry ID is not valid UTF-8")]
    IdNotUtf8,
    /// An entry ID holding a control character (a NUL, say): no ID has one, and an ID
    /// length that takes in the padding after it reads as one.
    #[error(
        "entry ID holds the control byte {byte:#04x} at position {position} (no entry ID has one)"
    )]
    IdControlByte {
        /// The byte.
        byte: u8,
        /// Its position in the ID.
        position: usize,
    },
    /// An entry ID that is empty.
    #[error("entry ID is empty")]
    EmptyId,
    /// A payload whose offset plus size runs past the end of the data.
    #[error(
        "payload (offset {offset:#x}, size {size}) runs past the end of the data ({len} bytes)"
    )]
    PayloadOutOfRange {
        /// Payload offset from the bundle start.
        offset: u64,
        /// Payload size.
        size: u64,
        /// Bytes available from the bundle start.
        len: u64,
    },
    /// A payload that starts inside the bundle header.
    #[error("payload offset {offset:#x} lies inside the header ({header_len} bytes)")]
    PayloadInHeader {
        /// Payload offset.
        offset: u64,
        /// Header length.
        header_len: u64,
    },
    /// Two payloads share bytes.
    #[error("payload overlaps the payload of entry {other}")]
    Overlap {
        /// The other entry.
        other: usize,
    },
    /// The same entry ID appears twice.
    #[error("duplicate entry ID '{id}' (first in entry {first})")]
    DuplicateId {
        /// The ID.
        id: String,
        /// Index of its first appearance.
        first: usize,
    },
    /// An entry ID that does not parse.
    #[error("{0}")]
    InvalidEntryId(#[from] crate::entry_id::EntryIdError),
    /// A CCOB version other than 1, 2, 3.
    #[error("unsupported compressed bundle version {0} (expected 1, 2 or 3)")]
    UnsupportedCcobVersion(u16),
    /// A CCOB compression method other than 0 (zlib) or 1 (zstd).
    #[error("unknown compression method {0} (expected 0 = zlib or 1 = zstd)")]
    UnknownMethod(u16),
    /// The CCOB total size is smaller than its header or larger than the data.
    #[error("compressed bundle total size {total} is invalid (header {header_len} bytes, {available} bytes available)")]
    BadTotalSize {
        /// Declared total size.
        total: u64,
        /// Header length of this version.
        header_len: u64,
        /// Bytes available.
        available: u64,
    },
    /// The declared uncompressed size exceeds the configured limit.
    #[error("declared uncompressed size {declared} exceeds the limit of {limit}")]
    TooLarge {
        /// Declared size.
        declared: u64,
        /// Limit.
        limit: u64,
    },
    /// The codec rejected the compressed payload.
    #[error("{method} decompression failed: {message}")]
    Decompress {
        /// `zlib` or `zstd`.
        method: &'static str,
        /// The codec's message.
        message: String,
    },
    /// Decompression produced a different length than the header declares.
    #[error("decompressed size mismatch: header declares {declared} bytes, payload holds {}{produced}", if *.more { "more than " } else { "" })]
    SizeMismatch {
        /// Declared size.
        declared: u64,
        /// Bytes produced.
        produced: u64,
        /// Whether the payload holds more than `produced` (decoding was stopped).
        more: bool,
    },
    /// The zstd frame's own header declares a different content size than the CCOB header:
    /// refused before decoding, so the answer never depends on how the frame is read.
    #[error(
        "frame size mismatch: header declares {declared} bytes, its zstd frame header {frame}"
    )]
    FrameSizeMismatch {
        /// Size the CCOB header declares.
        declared: u64,
        /// Content size the zstd frame header declares.
        frame: u64,
    },
    /// The MD5-based hash of the decompressed data differs from the stored one.
    #[error("hash mismatch: header stores {stored:#018x}, data hashes to {computed:#018x}")]
    HashMismatch {
        /// Hash in the header.
        stored: u64,
        /// Hash of the decompressed data.
        computed: u64,
    },
    /// The decompressed data could not be handed on (the writer it streams to failed).
    #[error("cannot write the decompressed data: {message}")]
    Output {
        /// The writer's message.
        message: String,
    },
    /// The codec failed to compress.
    #[error("{method} compression failed: {message}")]
    Compress {
        /// `zlib` or `zstd`.
        method: &'static str,
        /// The codec's message.
        message: String,
    },
    /// A size does not fit the 32-bit fields of the requested CCOB version.
    #[error("{what} {size} does not fit compressed bundle version {version}'s 32-bit field")]
    SizeExceedsVersion {
        /// Which size.
        what: &'static str,
        /// The size.
        size: u64,
        /// The version asked for.
        version: u16,
    },
    /// A CCOB version gfxkit does not write (1, 2 and 3 are written).
    #[error("cannot write compressed bundle version {0} (expected 1, 2 or 3)")]
    UnwritableVersion(u16),
    /// A compression level outside the codec's range.
    #[error("compression level {level} is out of range for {method} ({min}..={max})")]
    BadLevel {
        /// `zlib` or `zstd`.
        method: &'static str,
        /// Level asked for.
        level: i32,
        /// Smallest level.
        min: i32,
        /// Largest level.
        max: i32,
    },
    /// A bundle alignment of zero.
    #[error("bundle alignment must be at least 1")]
    ZeroAlignment,
    /// Output size overflows 64 bits.
    #[error("bundle size overflows 64 bits")]
    Overflow,
    /// Non-zero bytes between bundles laid back to back.
    #[error("expected zero padding or a bundle magic, found byte {byte:#04x}")]
    Garbage {
        /// The byte found.
        byte: u8,
    },
    /// No bundle at all in the data.
    #[error("no offload bundle found")]
    NoBundle,
    /// A text bundle whose start marker has no matching end marker.
    #[error("text bundle entry '{id}' has no end marker")]
    MissingEndMarker {
        /// The entry ID.
        id: String,
    },
    /// An object file (`-type=o`) that cannot be read or written.
    #[error("object file: {0}")]
    Object(String),
    /// An archive (`-type=a`) that cannot be read or written.
    #[error("archive: {0}")]
    Archive(String),
    /// A bundle or entry requested for unbundling that is not in the input.
    #[error("{0}")]
    Missing(String),
    /// The target IDs to bundle conflict with each other.
    #[error("{0}")]
    Conflict(String),
    /// An invalid request (options that do not fit together).
    #[error("{0}")]
    Invalid(String),
}
