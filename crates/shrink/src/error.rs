//! Typed errors: what went wrong and where (byte offset in the input file, plus the archive
//! member when there is one).

use std::fmt;

/// What went wrong while reading or rewriting a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is too short or a structure runs past its end.
    #[error("{what} runs past the end of the data")]
    Truncated {
        /// What was being read.
        what: &'static str,
    },
    /// Bytes that are neither zero padding nor the start of a bundle.
    #[error("unrecognised bytes {found:02x?} where a bundle or zero padding was expected")]
    UnknownBytes {
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// A bundle the bundle reader or codec refused (`gfxkit-bundle`'s reason).
    #[error("bad bundle: {}{kind}", entry.map(|i| format!("entry {i}: ")).unwrap_or_default())]
    Bundle {
        /// Index of the entry concerned, in header order.
        entry: Option<usize>,
        /// What was wrong.
        kind: Box<gfxkit_bundle::ErrorKind>,
    },
    /// Device code that discovery found damaged (a bundle that cannot be delimited, or runs
    /// past its section), with discovery's reason.
    #[error("{0}")]
    Damaged(String),
    /// A prune would leave no device code at all ([`crate::refuse_empty`]).
    #[error(
        "{selection} would leave no device code (the file has {present}); nothing written \
         (--allow-empty writes it anyway)"
    )]
    WouldEmpty {
        /// The selection as given (`--keep gfx1151`).
        selection: String,
        /// The device targets the input holds.
        present: String,
    },
    /// A malformed ELF file.
    #[error("malformed ELF file: {0}")]
    BadElf(String),
    /// A malformed `ar` archive.
    #[error("malformed archive: {0}")]
    BadArchive(String),
    /// A file gfxkit understands but will not rewrite, with the reason.
    #[error("cannot rewrite: {0}")]
    Unsupported(String),
    /// The binary is already split by kpack: its `.hipFatBinSegment` wrappers have magic
    /// `HIPK` and its device code lives in `.kpack` archives, so there is no `.hip_fatbin` to
    /// rewrite or split. (`gfxkit kpack inline` makes it fat again.)
    #[error(
        "already split by kpack (wrapper {wrapper} has magic HIPK: the device code lives in \
         .kpack archives, not in .hip_fatbin); use `gfxkit kpack inline` first"
    )]
    AlreadySplit {
        /// Index of the first `HIPK` wrapper in `.hipFatBinSegment`.
        wrapper: usize,
    },
    /// A value does not fit the field it must be written to.
    #[error("{0}")]
    TooLarge(String),
    /// Compression failed.
    #[error("compression failed: {0}")]
    Compress(String),
    /// A program header breaks a rule every rewritten file keeps (inside the file, congruent
    /// to its address); `index` counts from 0 in the program header table.
    #[error("segment {index}: {problem}")]
    Segment {
        /// Index of the program header.
        index: usize,
        /// What is wrong with it.
        problem: SegmentProblem,
    },
    /// A `HIPF` wrapper of `.hipFatBinSegment` that does not lead to a bundle.
    #[error("wrapper {index}: {problem}")]
    Wrapper {
        /// Index of the wrapper in `.hipFatBinSegment`.
        index: usize,
        /// What is wrong with it.
        problem: WrapperProblem,
    },
    /// A bundle of `.hip_fatbin` no wrapper of `.hipFatBinSegment` leads to.
    #[error("no wrapper points to bundle {bundle}")]
    UnreferencedBundle {
        /// Index of the bundle in `.hip_fatbin`.
        bundle: usize,
    },
    /// The rewritten file failed verification.
    #[error("verification of the rewritten file failed: {0}")]
    Verify(String),
}

/// An error with the place it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Byte offset in the file (or archive member) the error concerns.
    pub offset: u64,
    /// Archive member name, when the error is inside one.
    pub member: Option<String>,
}

impl Error {
    /// An error at `offset`.
    pub fn at(offset: u64, kind: ErrorKind) -> Error {
        Error {
            kind,
            offset,
            member: None,
        }
    }

    /// The same error, about the bundle at file offset `at`: for an error that arose while
    /// writing the bundle's replacement, whose own offset (if any) is in bytes not read from
    /// the input.
    pub(crate) fn placed_at(mut self, at: u64) -> Error {
        self.offset = at;
        self
    }

    /// The same error, placed inside archive member `name` (its offset is the archive's).
    pub(crate) fn in_member(mut self, name: &str) -> Error {
        if self.member.is_none() {
            self.member = Some(name.to_owned());
        }
        self
    }

    /// The same error, found in archive member `name` rewritten as a file of its own (offsets
    /// from its first byte), whose bytes start at `base` of the archive: named, and placed in
    /// the archive. The one place a rewrite's offsets change frame: a member is a whole file.
    pub(crate) fn of_member(self, name: &str, base: u64) -> Error {
        Error {
            offset: self.offset.saturating_add(base),
            ..self
        }
        .in_member(name)
    }
}

impl From<gfxkit_bytes::OutOfBounds> for Error {
    /// A field read past the end of the bytes: named at an offset inside them.
    fn from(e: gfxkit_bytes::OutOfBounds) -> Error {
        Error::at(e.offset(), ErrorKind::Truncated { what: "a field" })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.member {
            write!(f, "member {m}: ")?;
        }
        // An answer about the whole file has no place in it.
        if matches!(self.kind, ErrorKind::WouldEmpty { .. }) {
            return write!(f, "{}", self.kind);
        }
        write!(f, "{} (at offset {:#x})", self.kind, self.offset)
    }
}

impl std::error::Error for Error {}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand for `Err(Error::at(offset, kind))`.
pub(crate) fn fail<T>(offset: u64, kind: ErrorKind) -> Result<T> {
    Err(Error::at(offset, kind))
}

/// How a program header breaks the rules of a file gfxkit rewrites.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SegmentProblem {
    /// `p_offset + p_filesz` lies past the end of the file.
    PastTheEnd {
        /// `p_offset`.
        offset: u64,
        /// `p_filesz`.
        filesz: u64,
        /// Size of the file.
        file_size: u64,
    },
    /// A loadable segment whose `p_filesz` exceeds its `p_memsz`.
    FileszOverMemsz {
        /// `p_filesz`.
        filesz: u64,
        /// `p_memsz`.
        memsz: u64,
    },
    /// A loadable segment whose addresses run past the top of the address space
    /// (`p_vaddr + p_memsz` does not fit 64 bits).
    PastTheTop {
        /// `p_vaddr`.
        vaddr: u64,
        /// `p_memsz`.
        memsz: u64,
    },
    /// A loadable segment whose `p_offset` and `p_vaddr` disagree modulo `p_align`.
    Incongruent {
        /// `p_offset`.
        offset: u64,
        /// `p_vaddr`.
        vaddr: u64,
        /// `p_align`.
        align: u64,
    },
}

impl fmt::Display for SegmentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentProblem::PastTheEnd {
                offset,
                filesz,
                file_size,
            } => write!(
                f,
                "{filesz:#x} bytes at {offset:#x} run past the end of the file ({file_size:#x} bytes)"
            ),
            SegmentProblem::FileszOverMemsz { filesz, memsz } => write!(
                f,
                "file size {filesz:#x} exceeds memory size {memsz:#x}"
            ),
            SegmentProblem::PastTheTop { vaddr, memsz } => write!(
                f,
                "{memsz:#x} bytes at address {vaddr:#x} run past the top of the address space"
            ),
            SegmentProblem::Incongruent {
                offset,
                vaddr,
                align,
            } => write!(
                f,
                "offset {offset:#x} and address {vaddr:#x} disagree modulo the alignment {align:#x}"
            ),
        }
    }
}

/// How a `.hipFatBinSegment` wrapper fails to lead to a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WrapperProblem {
    /// The wrapper's bundle pointer is null and no relocation sets it.
    Null,
    /// The wrapper points to an address (section-relative in relocatable objects) where no
    /// bundle starts.
    NoBundle {
        /// The address it points to.
        target: u64,
    },
}

impl fmt::Display for WrapperProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WrapperProblem::Null => {
                write!(f, "null bundle pointer, and no relocation sets it")
            }
            WrapperProblem::NoBundle { target } => {
                write!(f, "points to {target:#x}, where no bundle starts")
            }
        }
    }
}
