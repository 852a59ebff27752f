//! Typed errors of the inventory: what went wrong, with the unit, entry and byte offset.

use std::fmt;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A bundle (or its CCOB header) cannot be read; the bundle crate says why and where.
    Bundle(gfxkit_bundle::Error),
    /// The entry list of a compressed bundle cannot be read from its first bytes.
    Header(gfxkit_host::entries::EntriesError),
    /// A bundle runs past the end of the bytes given.
    PastEnd {
        /// Index of the bundle in the file.
        index: usize,
        /// Its byte offset.
        offset: u64,
    },
    /// A compressed bundle decoded in part holds fewer bytes than its header needs.
    ShortPrefix {
        /// Index of the bundle in the file.
        index: usize,
        /// Its byte offset.
        offset: u64,
        /// Bytes the bundle decoded to.
        got: u64,
        /// Bytes its header needs.
        needed: u64,
    },
    /// The file holds no device code (a verification needs some).
    NoDeviceCode,
    /// The file's only device code is for other GPUs than AMD's: offload bundles of another
    /// toolchain (SYCL images for Intel GPUs, OpenMP offload to NVIDIA GPUs), with their entry
    /// IDs. Like [`ErrorKind::NoDeviceCode`] for a verification.
    OtherGpusOnly(Vec<String>),
    /// The file's only device code is NVIDIA's: CUDA fat binaries, the sections holding them
    /// as [`crate::inventory::nvidia_label`] says them (a CUDA build where a ROCm build was
    /// expected). Like [`ErrorKind::NoDeviceCode`] for a verification.
    NvidiaOnly(Vec<String>),
    /// A target or device ID that does not parse.
    BadTarget(String),
    /// What a user wrote as an entry ID does not parse as one (displayed as the parse error
    /// itself, so it is not also a source).
    BadEntryId(gfxkit_bundle::EntryIdError),
    /// What a user wrote for a target is neither an entry ID nor a target ID.
    NotATarget {
        /// What was written.
        given: String,
        /// Why it is not a target ID.
        error: gfxkit_target_id::TargetIdError,
    },
    /// A kpack archive, or a split binary's archives, cannot give what was asked.
    Kpack(String),
    /// A `.kpack` archive that does not parse: the kpack reader's error, with its offset.
    KpackArchive(gfxkit_kpack::Error),
    /// A kernel database (`.kdb`, `.aks2`, Tensile index) that cannot be read: the reader's
    /// message, with the place and byte offset.
    Database(String),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Bundle(e) => write!(f, "{e}"),
            ErrorKind::Header(e) => write!(f, "{e}"),
            ErrorKind::PastEnd { index, offset } => {
                write!(f, "bundle {index} at offset {offset:#x} runs past the end")
            }
            ErrorKind::ShortPrefix {
                index,
                offset,
                got,
                needed,
            } => write!(
                f,
                "bundle {index} at offset {offset:#x}: the compressed bundle holds {got} bytes, \
                 fewer than the {needed} its header needs"
            ),
            ErrorKind::NoDeviceCode => f.write_str("no offload bundle in this file"),
            ErrorKind::OtherGpusOnly(ids) => {
                let quoted: Vec<String> = ids.iter().map(|id| format!("'{id}'")).collect();
                write!(
                    f,
                    "no device code for an AMD GPU in this file (the entries of its offload \
                     bundles are for other targets: {})",
                    quoted.join(", ")
                )
            }
            ErrorKind::NvidiaOnly(sections) => write!(
                f,
                "no device code for an AMD GPU in this file: it holds NVIDIA device code (a CUDA \
                 build; CUDA fat binaries in {})",
                sections.join(", ")
            ),
            ErrorKind::BadTarget(m) => f.write_str(m),
            ErrorKind::BadEntryId(e) => write!(f, "{e}"),
            ErrorKind::NotATarget { given, .. } => {
                write!(f, "'{given}' is neither an entry ID nor a target ID")
            }
            ErrorKind::Kpack(m) => f.write_str(m),
            ErrorKind::KpackArchive(e) => write!(f, "{e}"),
            ErrorKind::Database(m) => f.write_str(m),
        }
    }
}

/// An error of the inventory: an [`ErrorKind`], and the context it was found in (such as
/// `inside the compressed bundle`). Printed `<context>: <kind>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong (boxed: results stay small).
    pub kind: Box<ErrorKind>,
    /// Where it was found, in words (`inside the compressed bundle`).
    pub context: Option<&'static str>,
}

impl Error {
    /// An error of `kind` without context.
    pub fn new(kind: ErrorKind) -> Error {
        Error {
            kind: Box::new(kind),
            context: None,
        }
    }

    /// The same error, found `context` (`inside the compressed bundle`).
    pub fn within(mut self, context: &'static str) -> Error {
        self.context = Some(context);
        self
    }

    /// The byte offset the error names, when it names one (from the start of the bundle or
    /// the file, as the message says).
    pub fn offset(&self) -> Option<u64> {
        match &*self.kind {
            ErrorKind::Bundle(e) => e.offset,
            ErrorKind::PastEnd { offset, .. } => Some(*offset),
            ErrorKind::KpackArchive(e) => Some(e.offset),
            _ => None,
        }
    }

    /// Whether the file holds no device code for an AMD GPU ([`ErrorKind::NoDeviceCode`],
    /// [`ErrorKind::OtherGpusOnly`] or [`ErrorKind::NvidiaOnly`]): a file a walk lists among
    /// those without device code.
    pub fn is_no_device_code(&self) -> bool {
        matches!(
            *self.kind,
            ErrorKind::NoDeviceCode | ErrorKind::OtherGpusOnly(_) | ErrorKind::NvidiaOnly(_)
        )
    }

    /// The entry index the error names, when it names one.
    pub fn entry(&self) -> Option<usize> {
        match &*self.kind {
            ErrorKind::Bundle(e) => e.entry,
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.context {
            write!(f, "{c}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.kind {
            ErrorKind::NotATarget { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<gfxkit_bundle::Error> for Error {
    fn from(e: gfxkit_bundle::Error) -> Error {
        Error::new(ErrorKind::Bundle(e))
    }
}

impl From<gfxkit_bundle::EntryIdError> for Error {
    fn from(e: gfxkit_bundle::EntryIdError) -> Error {
        Error::new(ErrorKind::BadEntryId(e))
    }
}

impl From<gfxkit_host::entries::EntriesError> for Error {
    fn from(e: gfxkit_host::entries::EntriesError) -> Error {
        Error::new(ErrorKind::Header(e))
    }
}

/// An error and its causes, joined with `: ` (as anyhow's `{:#}` prints a chain): the one
/// rendering of a cause chain for messages gfxkit's libraries and the Python module build.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}
