//! Errors: what went wrong, in which package member, and where.

use std::fmt;

/// What is wrong with a package or one of its members.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not a package format this crate reads.
    NotAPackage,
    /// The data ends early (`what` says what was being read).
    Truncated(String),
    /// A stored checksum does not match the data (zip CRC-32, gzip CRC, RECORD hash).
    Checksum(String),
    /// A member decompresses to more bytes than its header declares.
    LargerThanDeclared {
        /// Size in the member's header.
        declared: u64,
    },
    /// A member decompresses to fewer bytes than its header declares.
    SmallerThanDeclared {
        /// Size in the member's header.
        declared: u64,
        /// Bytes produced.
        actual: u64,
    },
    /// A member, or all members together, would exceed a size limit (a zip bomb, say).
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// Archives nest deeper than the depth limit.
    TooDeep {
        /// The limit.
        limit: u32,
    },
    /// A format feature this crate does not read (encryption, an unknown payload format).
    Unsupported(String),
    /// Malformed container data, described.
    Corrupt(String),
    /// Reading or writing a temporary file failed.
    Io(String),
    /// Rewriting a member failed (the rewriter's reason).
    Rewrite(String),
    /// This package cannot be rewritten (the reason).
    CannotRewrite(String),
    /// A container image has no image for the platform asked for.
    Platform {
        /// The platform asked for (`linux/amd64` by default).
        wanted: String,
        /// The platforms the image has.
        present: Vec<String>,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::NotAPackage => write!(f, "not a package (zip, tar, conda, deb or rpm)"),
            ErrorKind::Truncated(what) => write!(f, "truncated: {what}"),
            ErrorKind::Checksum(what) => write!(f, "checksum mismatch: {what}"),
            ErrorKind::LargerThanDeclared { declared } => {
                write!(
                    f,
                    "member is larger than the {declared} bytes its header declares"
                )
            }
            ErrorKind::SmallerThanDeclared { declared, actual } => write!(
                f,
                "member has {actual} bytes, fewer than the {declared} its header declares"
            ),
            ErrorKind::TooLarge { limit } => write!(f, "exceeds the limit of {limit} bytes"),
            ErrorKind::TooDeep { limit } => {
                write!(f, "archives nested more than {limit} deep")
            }
            ErrorKind::Unsupported(what) => write!(f, "unsupported: {what}"),
            ErrorKind::Corrupt(what) => write!(f, "damaged: {what}"),
            ErrorKind::Io(what) => write!(f, "{what}"),
            ErrorKind::Rewrite(why) => write!(f, "{why}"),
            ErrorKind::CannotRewrite(why) => write!(f, "cannot rewrite: {why}"),
            ErrorKind::Platform { wanted, present } if present.is_empty() => {
                write!(f, "no image for platform {wanted} in this archive")
            }
            ErrorKind::Platform { wanted, present } => write!(
                f,
                "no image for platform {wanted} (the image has {}; choose one with --platform)",
                present.join(", ")
            ),
        }
    }
}

/// An error with where it happened: the member chain (`pkg.whl!lib/x.so`) and, when known,
/// the byte offset in the innermost container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The package, or `package!member` chain, the error is about.
    pub path: String,
    /// Byte offset in the innermost container (the member's header), when known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// An error about `path`.
    pub fn new(path: impl Into<String>, kind: ErrorKind) -> Error {
        Error {
            path: path.into(),
            offset: None,
            kind,
        }
    }

    /// The same error with a byte offset.
    pub fn at(mut self, offset: u64) -> Error {
        self.offset = Some(offset);
        self
    }

    /// An I/O error while reading `path`'s data, classified: an early end is
    /// [`ErrorKind::Truncated`], a checksum complaint [`ErrorKind::Checksum`], anything else
    /// [`ErrorKind::Corrupt`].
    pub fn from_read(path: impl Into<String>, err: &std::io::Error) -> Error {
        let msg = err.to_string();
        let lower = msg.to_ascii_lowercase();
        let kind = if err.kind() == std::io::ErrorKind::UnexpectedEof || lower.contains("eof") {
            ErrorKind::Truncated(msg)
        } else if lower.contains("checksum") || lower.contains("crc") {
            ErrorKind::Checksum(msg)
        } else {
            ErrorKind::Corrupt(msg)
        };
        Error::new(path, kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind)?;
        if let Some(o) = self.offset {
            write!(f, " (at offset {o:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
