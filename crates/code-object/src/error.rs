//! Typed errors: what was wrong, and the byte offset in the input where it was found.

use std::fmt;

/// What was wrong with a code object.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input does not start with the ELF magic `\x7fELF`.
    NotElf,
    /// The input ends before a structure it declares.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed (from the offset of the error).
        needed: u64,
        /// Bytes available from that offset.
        available: u64,
    },
    /// An ELF file for another machine than `EM_AMDGPU` (224).
    NotAmdgpu {
        /// The `e_machine` found.
        machine: u16,
    },
    /// The ELF file is cut short: a header table or a section runs past the end of the data.
    TruncatedElf(crate::extent::Truncation),
    /// An `EI_CLASS` / `EI_DATA` combination AMDGPU code objects do not use.
    BadIdent {
        /// What was found.
        detail: String,
    },
    /// An ELF structure (section table, segment table, note) is malformed.
    BadElf {
        /// What was wrong.
        detail: String,
    },
    /// The `NT_AMDGPU_METADATA` note is not valid MessagePack or not the expected shape.
    BadMetadata {
        /// What was wrong.
        detail: String,
    },
    /// A count or size read from the file exceeds gfxkit's limits.
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The value found.
        value: u64,
        /// The limit.
        limit: u64,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::NotElf => f.write_str("not an ELF file (no \\x7fELF magic)"),
            ErrorKind::Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "truncated {what}: needs {needed} bytes, only {available} available"
            ),
            ErrorKind::NotAmdgpu { machine } => write!(
                f,
                "not an AMDGPU code object: e_machine is {machine}, expected 224 (EM_AMDGPU)"
            ),
            ErrorKind::TruncatedElf(t) => write!(f, "{t}"),
            ErrorKind::BadIdent { detail } => write!(f, "bad ELF identification: {detail}"),
            ErrorKind::BadElf { detail } => write!(f, "malformed ELF: {detail}"),
            ErrorKind::BadMetadata { detail } => {
                write!(f, "bad NT_AMDGPU_METADATA note: {detail}")
            }
            ErrorKind::TooLarge { what, value, limit } => {
                write!(f, "{what} too large: {value} (limit {limit})")
            }
        }
    }
}

/// An error reading a code object: a kind and the byte offset (in the code object) where it was
/// found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    offset: u64,
}

impl Error {
    /// A new error of `kind` at byte `offset`.
    pub fn new(kind: ErrorKind, offset: u64) -> Error {
        Error { kind, offset }
    }

    /// What was wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The byte offset in the code object where it was found.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at offset 0x{:x})", self.kind, self.offset)
    }
}

impl Error {
    /// The error as said of a code object inside something else (a bundle entry, an archive's
    /// kernel, a database record, a code object in a host file), whose offsets are not the
    /// file's: `<kind> (at offset 0x… of the code object)`.
    pub fn in_code_object(&self) -> String {
        format!(
            "{} (at offset {:#x} of the code object)",
            self.kind, self.offset
        )
    }
}

impl std::error::Error for Error {}
