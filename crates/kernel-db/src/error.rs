//! Typed errors with the place they concern: a byte offset where one is known, and the path in
//! the file's structure (`library.rows[3].library.map["Contraction_l_Alik_Bljk_Cijk_Dijk"]`,
//! `kern_db id 17`, `entry 4 (attn_fwd/FONLY__...hsaco)`).

use std::fmt;

/// What is wrong with a kernel database or a request about one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A value or field runs past the end of the input (or of its enclosing region).
    #[error("{what} runs past the end ({need} bytes needed, {have} present)")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed from the offset.
        need: u64,
        /// Bytes present from the offset.
        have: u64,
    },
    /// A MessagePack byte that is not a valid marker (0xc1), or text that is not UTF-8.
    #[error("MessagePack: {0}")]
    Msgpack(String),
    /// A value of another type than the layout requires.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the layout requires.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// A required field is absent.
    #[error("missing field {0:?}")]
    MissingField(&'static str),
    /// Bytes follow the top-level value.
    #[error("{0} bytes follow the index")]
    TrailingBytes(u64),
    /// A count, size or depth is above the limit gfxkit reads (see [`crate::limits`]).
    #[error("{what} above the limit of {limit}")]
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// The limit in force.
        limit: u64,
    },
    /// Two solutions carry the same index (Tensile keeps the last one silently).
    #[error("solution index {0} appears more than once")]
    DuplicateSolution(u64),
    /// A library node refers to a solution index the file does not list (Tensile fails the
    /// load with "Invalid solution index").
    #[error("solution index {0} is not in the solutions list")]
    UnknownSolution(u64),
    /// An index's `format_version` is one gfxkit does not read (it reads 1 and 2; the loader
    /// refuses the others too).
    #[error("format_version {0} is not a layout gfxkit reads (1 or 2)")]
    UnsupportedVersion(u64),
    /// A compressed stream does not decode.
    #[error("{codec} stream does not decode: {why}")]
    Decompress {
        /// `zlib`, `bzip2`, `xz`.
        codec: &'static str,
        /// The decoder's message.
        why: String,
    },
    /// A stream decodes to a size other than the one declared.
    #[error("decodes to {got} bytes, but {expected} are declared")]
    SizeMismatch {
        /// The declared size.
        expected: u64,
        /// Bytes produced (at most one past the declared size is decoded).
        got: u64,
    },
    /// The file does not start with the magic of its format.
    #[error("bad magic {found:02x?}, expected {expected:?}")]
    BadMagic {
        /// The first bytes found.
        found: Vec<u8>,
        /// The magic expected.
        expected: &'static str,
    },
    /// SQLite refused the file or a query (a damaged or foreign database).
    #[error("SQLite: {0}")]
    Sqlite(String),
    /// A `.kdb` record's code object does not hash to its `kernel_hash` (MIOpen's "Possible
    /// database corruption").
    #[error("MD5 of the code object is {got}, kernel_hash says {expected}")]
    HashMismatch {
        /// `kernel_hash` as stored.
        expected: String,
        /// MD5 of the decoded bytes, lower-case hex.
        got: String,
    },
    /// A database file name that does not follow the naming rule.
    #[error("{0}")]
    BadName(String),
    /// A directory entry or record that is inconsistent with its container.
    #[error("{0}")]
    Inconsistent(String),
}

/// An error, the byte offset it concerns (where known) and its place in the file's structure.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// What is wrong.
    pub kind: ErrorKind,
    /// Byte offset in the decoded input (for `.dat.zlib`, in the decompressed bytes).
    pub offset: Option<u64>,
    /// Where in the structure: a path such as `library.rows[3].library`, a record or an entry.
    pub at: Option<String>,
}

impl Error {
    /// An error at a byte offset.
    pub fn at(offset: u64, kind: ErrorKind) -> Error {
        Error {
            kind,
            offset: Some(offset),
            at: None,
        }
    }

    /// An error with no byte offset (SQLite errors, name errors).
    pub fn new(kind: ErrorKind) -> Error {
        Error {
            kind,
            offset: None,
            at: None,
        }
    }

    /// The same error, placed at `place` in the structure.
    pub fn place(mut self, place: impl Into<String>) -> Error {
        self.at = Some(place.into());
        self
    }
}

impl From<gfxkit_msgpack::Error> for Error {
    fn from(e: gfxkit_msgpack::Error) -> Error {
        use gfxkit_msgpack::ErrorKind as M;
        let kind = match e.kind {
            M::Truncated { what, need, have } => ErrorKind::Truncated { what, need, have },
            M::Unexpected { expected, found } => ErrorKind::Unexpected { expected, found },
            M::Msgpack(why) => ErrorKind::Msgpack(why),
            other => ErrorKind::Msgpack(other.to_string()),
        };
        Error::at(e.offset, kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = &self.at {
            write!(f, "{at}: ")?;
        }
        write!(f, "{}", self.kind)?;
        if let Some(offset) = self.offset {
            write!(f, " (at offset {offset:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
