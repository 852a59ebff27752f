//! The error of a file operation: the path, what was being done, and the cause.

use std::fmt;
use std::path::{Path, PathBuf};

/// A file operation that failed. `Display` names the operation and the path
/// (`cannot open lib.so`); [`std::error::Error::source`] is the system's error (or the
/// package error) behind it, so a printed cause chain reads
/// `cannot open lib.so: No such file or directory (os error 2)`.
#[derive(Debug)]
pub struct Error {
    path: PathBuf,
    kind: Box<ErrorKind>,
}

/// What failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file cannot be opened.
    Open(std::io::Error),
    /// Its metadata cannot be read.
    Stat(std::io::Error),
    /// It cannot be memory-mapped.
    Map(std::io::Error),
    /// It cannot be read.
    Read(std::io::Error),
    /// An input path names a directory.
    IsDirectory,
    /// An input path names a device (what it is) that gives more than
    /// [`crate::input::READ_BELOW`] bytes: gfxkit reads files, pipes and FIFOs, and devices
    /// only as short as `/dev/null`.
    LongDevice(&'static str),
    /// The input file changed while it was read (another process rewrote it in place, as
    /// `cp` over it does): what was read of it is not used.
    Changed {
        /// Its size when it was opened.
        opened: u64,
        /// Its size when the reading was done.
        now: u64,
        /// Whether a read of its mapping faulted: it was cut short under the reading (what
        /// was gone read as zeros).
        faulted: bool,
    },
    /// An output path names a directory.
    WriteDirectory,
    /// Writing (or syncing) the output failed.
    Write(std::io::Error),
    /// No temporary file can be made in the output's directory (the path is the directory).
    CreateTemp(std::io::Error),
    /// The permissions of the new file cannot be set.
    SetPermissions(std::io::Error),
    /// The directory cannot be synced after the rename (the path is the directory).
    SyncDirectory(std::io::Error),
    /// A package (or a member of one) is damaged; the path is the package.
    Package(gfxkit_package::Error),
    /// A member of a package (the path, `pkg!member`) cannot be read.
    Member(gfxkit_package::Error),
    /// `pkg!member` names no member that may hold device code.
    NoSuchMember {
        /// The package file.
        package: String,
    },
    /// The KFD topology cannot be read (the path is its `nodes` directory).
    Topology(std::io::Error),
    /// The KFD topology lists no GPU.
    NoGpu,
    /// A GPU node's properties name no processor gfxkit knows (the path is the file).
    Device(gfxkit_host::kfd::VersionError),
    /// The device code of the file is damaged where it was looked for (reads as the path,
    /// caused by the error).
    Found(gfxkit_inventory::Error),
    /// The file's device code cannot be located (`cannot read PATH`).
    Locate(gfxkit_inventory::Error),
    /// A `.kpack` archive does not parse (`cannot read PATH`).
    Kpack(gfxkit_kpack::Error),
    /// An output names its input (inputs are never modified); the path is the output.
    SameFile,
    /// A kpack group name that is empty or holds `/`.
    BadGroup(String),
    /// Two binaries of one split would be stored under this TOC name.
    DuplicateKernelName(String),
    /// The binary cannot be split.
    Split(gfxkit_kpack::Error),
    /// The archive at the path cannot be merged with the split's kernels (the archive already
    /// there does not parse, one of its kernels does not decode, or the result cannot be
    /// encoded).
    MergeArchive(gfxkit_inventory::Error),
    /// A directory cannot be created.
    CreateDir(std::io::Error),
    /// The binary has no HIPK wrapper (it is not split by kpack).
    NotSplit,
    /// A package cannot be rewritten (the path is the package).
    Rewrite(gfxkit_package::Error),
    /// The prune of a package is refused as a whole (it would leave no device code), or a
    /// file cannot be rewritten.
    Prune(gfxkit_shrink::Error),
    /// The prune of a file would leave no device code (refused).
    Empty(gfxkit_shrink::Error),
    /// One file a prune keeps or drops whole, not rewrites (a raw code object, a `.kpack`
    /// archive, a kernel-database file), named alone: the text says what it holds and how the
    /// prune of its directory decides it.
    Whole(String),
    /// A signed Windows image's signature cannot be removed.
    Signature(gfxkit_shrink::Error),
    /// The rewrite of a dry run (nothing written) failed verification.
    DryRunVerify(gfxkit_shrink::Error),
    /// The digests of the entries cannot be computed for the report.
    Digests(gfxkit_shrink::Error),
    /// The written package does not read back.
    ReadBack(gfxkit_package::Error),
    /// A rewritten package member (the path, `package!member`) reads back with other bytes.
    ReadBackDiffers,
    /// The temporary file of the output does not read back as written.
    TempDiffers,
    /// The written file failed the verification of the rewrite; nothing was replaced.
    Verify(gfxkit_shrink::Error),
    /// The written wheel's `RECORD` does not match its members.
    Record(gfxkit_package::Error),
    /// A tree cannot be pruned as asked (`-o` inside the input tree or not empty, the input
    /// not a directory); the path is the one concerned, the text says why.
    Tree(String),
    /// A kernel database of a tree does not read or cannot be rewritten (the path is the
    /// file; the error names the place in it).
    Database(gfxkit_kernel_db::Error),
    /// A raw code object of a tree whose header does not read or that is cut short (its
    /// architecture cannot be told).
    CodeObject(String),
    /// A request whose parts do not fit together (several inputs with one kernel name, a
    /// recursive split of more than one directory); the text says which.
    Request(String),
    /// The split binary cannot be made fat again.
    Inline {
        /// Archive paths searched and not found.
        not_found: Vec<String>,
        /// Why.
        source: gfxkit_kpack::Error,
    },
}

impl Error {
    /// An error about `path`.
    pub fn new(path: impl Into<PathBuf>, kind: ErrorKind) -> Error {
        Error {
            path: path.into(),
            kind: Box::new(kind),
        }
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What failed.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The system's error behind this one, if any (to tell a missing file from a damaged one).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match &*self.kind {
            ErrorKind::Open(e)
            | ErrorKind::Stat(e)
            | ErrorKind::Map(e)
            | ErrorKind::Read(e)
            | ErrorKind::Write(e)
            | ErrorKind::CreateTemp(e)
            | ErrorKind::SetPermissions(e)
            | ErrorKind::SyncDirectory(e)
            | ErrorKind::Topology(e)
            | ErrorKind::CreateDir(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match &*self.kind {
            ErrorKind::Open(_) => write!(f, "cannot open {p}"),
            ErrorKind::Stat(_) => write!(f, "cannot stat {p}"),
            ErrorKind::Map(_) => write!(f, "cannot map {p}"),
            ErrorKind::Read(_) => write!(f, "cannot read {p}"),
            ErrorKind::IsDirectory => write!(f, "{p} is a directory"),
            ErrorKind::LongDevice(what) => write!(
                f,
                "{p} is {what} that gives more than {} KiB: gfxkit reads files, pipes and \
                 FIFOs, and devices only as short as /dev/null",
                crate::input::READ_BELOW / 1024
            ),
            ErrorKind::Changed {
                opened,
                now,
                faulted,
            } => {
                if *faulted {
                    write!(f, "{p} was cut short while it was read")?;
                } else {
                    write!(f, "{p} changed while it was read")?;
                }
                if opened == now {
                    write!(f, " (modified since it was opened)")?;
                } else {
                    write!(f, " ({opened} bytes when opened, {now} now)")?;
                }
                write!(f, ": another process wrote to it; read it again")
            }
            ErrorKind::WriteDirectory => write!(f, "cannot write {p}: it is a directory"),
            ErrorKind::Write(_) => write!(f, "cannot write {p}"),
            ErrorKind::CreateTemp(_) => write!(f, "cannot create a temporary file in {p}"),
            ErrorKind::SetPermissions(_) => write!(f, "cannot set the permissions of {p}"),
            ErrorKind::SyncDirectory(_) => write!(f, "cannot sync {p}"),
            // The package error names the package and the member itself.
            ErrorKind::Package(e) => write!(f, "{e}"),
            // The package error names the member (`pkg!member`) itself.
            ErrorKind::Member(e) => write!(f, "cannot read {e}"),
            ErrorKind::NoSuchMember { package } => write!(
                f,
                "{p}: no such member with device code in {package} (list the package's \
                 members with `gfxkit list {package}`)"
            ),
            ErrorKind::Topology(_) => write!(f, "cannot read the KFD topology at {p}"),
            ErrorKind::NoGpu => write!(f, "no GPU in the KFD topology at {p}"),
            ErrorKind::Device(_) | ErrorKind::Found(_) => write!(f, "{p}"),
            ErrorKind::Locate(_) | ErrorKind::Kpack(_) => write!(f, "cannot read {p}"),
            ErrorKind::SameFile => write!(
                f,
                "-o {p} names the input; write elsewhere (inputs are never modified)"
            ),
            ErrorKind::BadGroup(g) => {
                write!(f, "--group {g:?} must be a non-empty name without '/'")
            }
            ErrorKind::DuplicateKernelName(k) => {
                write!(f, "two inputs would both be stored as {k}")
            }
            ErrorKind::Split(_) => write!(f, "cannot split {p}"),
            ErrorKind::MergeArchive(_) => write!(f, "{p}"),
            ErrorKind::CreateDir(_) => write!(f, "cannot create {p}"),
            ErrorKind::Rewrite(_) | ErrorKind::Prune(_) => write!(f, "cannot rewrite {p}"),
            ErrorKind::Empty(_) => write!(f, "cannot prune {p}"),
            ErrorKind::Whole(why) => write!(f, "cannot prune {p} on its own: {why}"),
            ErrorKind::Signature(_) => write!(f, "cannot remove the signature of {p}"),
            ErrorKind::DryRunVerify(_) => write!(
                f,
                "{p}: the rewritten file failed verification; nothing written"
            ),
            ErrorKind::Digests(_) => write!(f, "{p}: cannot compute the entries' digests"),
            ErrorKind::ReadBack(_) => write!(f, "{p}: the written package does not read back"),
            ErrorKind::ReadBackDiffers => {
                write!(f, "{p}: reads back with other bytes than written")
            }
            ErrorKind::Record(_) => write!(f, "{p}: the written wheel's RECORD does not match"),
            ErrorKind::TempDiffers => {
                write!(f, "{p}: the temporary file does not read back as written")
            }
            ErrorKind::Verify(_) => write!(
                f,
                "{p}: the written file failed verification; nothing replaced"
            ),
            ErrorKind::NotSplit => write!(f, "{p}: no HIPK wrapper (not a kpack-split binary)"),
            ErrorKind::Tree(why) => write!(f, "cannot prune {p}: {why}"),
            ErrorKind::Database(_) => write!(f, "cannot read {p}"),
            ErrorKind::CodeObject(why) => write!(f, "cannot read {p}: {why}"),
            ErrorKind::Request(why) => write!(f, "{p}: {why}"),
            ErrorKind::Inline { not_found, .. } => {
                write!(f, "cannot inline {p}")?;
                if !not_found.is_empty() {
                    write!(f, " (not found: {})", not_found.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.kind {
            ErrorKind::Member(e) => e.source(),
            ErrorKind::Rewrite(e) | ErrorKind::ReadBack(e) | ErrorKind::Record(e) => Some(e),
            ErrorKind::Package(e) => e.source(),
            ErrorKind::Device(e) => Some(e),
            ErrorKind::Verify(e)
            | ErrorKind::Prune(e)
            | ErrorKind::Empty(e)
            | ErrorKind::Signature(e)
            | ErrorKind::DryRunVerify(e)
            | ErrorKind::Digests(e) => Some(e),
            ErrorKind::Database(e) => Some(e),
            ErrorKind::Found(e) | ErrorKind::Locate(e) | ErrorKind::MergeArchive(e) => Some(e),
            ErrorKind::Kpack(e) | ErrorKind::Split(e) | ErrorKind::Inline { source: e, .. } => {
                Some(e)
            }
            _ => self.io_error().map(|e| e as _),
        }
    }
}
