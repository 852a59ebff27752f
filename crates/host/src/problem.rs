//! Where things are found and what is wrong with them.

use serde::Serialize;
use std::fmt;

/// Where an item was found in an input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// Archive member path, outermost first, joined with `/` (`libfoo.a` holding `bar.o` gives
    /// `bar.o`; an archive inside an archive gives `inner.a/bar.o`). `None` for the file itself.
    pub member: Option<String>,
    /// Section name (`.hip_fatbin`, `.hipFatBinSegment`, `.llvm.offloading`,
    /// `__CLANG_OFFLOAD_BUNDLE__<id>`; in PE images `.hip_fat` and `.hipFatB`), or `None` outside any section and in a file without a
    /// section table (read through its program headers: the offset is still the file offset).
    pub section: Option<String>,
    /// Byte offset in the input file.
    pub offset: u64,
    /// Size in bytes (0 when a problem concerns a single position).
    pub size: u64,
}

impl Location {
    /// A location at `offset` in the file itself, outside any section.
    pub fn at(offset: u64, size: u64) -> Location {
        Location {
            member: None,
            section: None,
            offset,
            size,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.member {
            write!(f, "member {m}, ")?;
        }
        if let Some(s) = &self.section {
            write!(f, "section {s}, ")?;
        }
        write!(f, "offset {:#x}", self.offset)
    }
}

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Said for the reader's information; nothing is wrong with the device code.
    Note,
    /// Worth knowing; the device code is still usable.
    Warning,
    /// Something is damaged or unreadable.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// What is wrong, found while looking for device code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The ELF headers or section table cannot be read.
    #[error("malformed ELF file: {0}")]
    MalformedElf(String),
    /// The ELF file is cut short: its header tables or a section run past the end of the
    /// data (the sizes say by how much). Nothing further of the file is read.
    #[error("{0}")]
    TruncatedElf(gfxkit_code_object::extent::Truncation),
    /// The PE image or COFF object headers, section table, symbol table or base relocation
    /// table cannot be read.
    #[error("malformed PE/COFF file: {0}")]
    MalformedPe(String),
    /// A `HIPF` wrapper of a PE image whose non-null pointer no `IMAGE_REL_BASED_DIR64` base
    /// relocation fixes: it is wrong wherever the loader maps the image at another address
    /// than its preferred base (ASLR). A warning.
    #[error("wrapper pointer {address:#x} has no IMAGE_REL_BASED_DIR64 base relocation: it is wrong wherever the image is loaded at another base")]
    WrapperWithoutBaseRelocation {
        /// The pointer as stored (an absolute virtual address).
        address: u64,
    },
    /// The `ar` archive cannot be read.
    #[error("malformed archive: {0}")]
    MalformedArchive(String),
    /// A thin archive: members live in other files, which are not read.
    #[error("thin archive: members are separate files and were not read")]
    ThinArchive,
    /// Archives nested deeper than the limit.
    #[error("archives nested more than {limit} deep")]
    NestingTooDeep {
        /// The nesting limit.
        limit: usize,
    },
    /// More items than gfxkit reads from one container.
    #[error("more than {limit} {what}; the rest were not read")]
    TooMany {
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// A device-code section (an object-bundle `__CLANG_OFFLOAD_BUNDLE__*` section, or one of
    /// type `SHT_LLVM_OFFLOADING`) whose name is not UTF-8; it is not read, so an object-bundle
    /// entry is never listed under a changed or empty ID. The location is the name's bytes in
    /// the section-name table.
    #[error("section {index} name \"{name}\" is not UTF-8 (invalid byte at offset {bad_byte_offset:#x}); the section was not read")]
    SectionNameNotUtf8 {
        /// The section's index.
        index: usize,
        /// The name with bytes that are not printable ASCII escaped (`\xff`).
        name: String,
        /// File offset of the first byte that is not valid UTF-8.
        bad_byte_offset: u64,
    },
    /// An archive member whose name is not UTF-8. The member is read and named by its escaped
    /// form; the location is the name's bytes.
    #[error("archive member {index} name \"{name}\" is not UTF-8 (invalid byte at offset {bad_byte_offset:#x}); shown escaped")]
    MemberNameNotUtf8 {
        /// The member's index.
        index: usize,
        /// The name with bytes that are not printable ASCII escaped (`\xff`).
        name: String,
        /// File offset of the first byte that is not valid UTF-8.
        bad_byte_offset: u64,
    },
    /// A section's contents run past the end of the file (the location is its section header).
    #[error("section data ({size} bytes at {offset:#x}) runs past the end of the file ({file_size} bytes)")]
    SectionOutsideFile {
        /// `sh_offset`, from the start of the ELF file.
        offset: u64,
        /// `sh_size`.
        size: u64,
        /// Size of the ELF file (the archive member, for one inside an archive).
        file_size: u64,
    },
    /// A bundle that cannot be read; the rest of its section was not read either.
    #[error("bundle cannot be read: {0}")]
    BadBundle(String),
    /// Bytes in a bundle section that are neither zero padding nor the start of a bundle.
    #[error("unrecognised bytes {found:02x?} where a bundle or zero padding was expected; the rest of the section was not read")]
    UnknownBytes {
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// A bundle ends past the end of its section.
    #[error("bundle of {size} bytes runs {excess} bytes past the end of the section")]
    BundlePastSection {
        /// The bundle's size.
        size: u64,
        /// How far it runs past.
        excess: u64,
    },
    /// The wrapper section's size is not a multiple of 24 bytes.
    #[error("section size {size} is not a multiple of the 24-byte wrapper record")]
    WrapperSectionSize {
        /// The section size.
        size: u64,
    },
    /// A wrapper record without the `HIPF` or `HIPK` magic.
    #[error("wrapper has magic {magic:#010x}, expected 0x48495046 (HIPF) or 0x4b504948 (HIPK)")]
    WrapperMagic {
        /// The magic found.
        magic: u32,
    },
    /// A wrapper whose pointer is null and not relocated.
    #[error("wrapper points nowhere (null pointer, no relocation)")]
    WrapperPointsNowhere,
    /// A wrapper whose pointer lands in no section of the file, or in a relocation against
    /// an undefined symbol.
    #[error("wrapper points outside the file's sections (address {address:#x})")]
    WrapperPointsOutside {
        /// The address the wrapper holds.
        address: u64,
    },
    /// A `HIPF` wrapper whose pointer lands in a section but not on the start of a bundle.
    #[error(
        "wrapper points to {address:#x} (file offset {file_offset:#x}), where no bundle starts"
    )]
    WrapperMissesBundle {
        /// The address the wrapper holds.
        address: u64,
        /// Its file offset.
        file_offset: u64,
    },
    /// In a file without a section table, a record with a wrapper's magic and version 1 whose
    /// pointer a relocation sets, leading neither to a bundle (`HIPF`) nor to a kpack marker
    /// that decodes (`HIPK`): without `.hipFatBinSegment` to say where wrappers are, it is not
    /// taken for one. A warning.
    #[error("record with the {} magic and version 1 points to {address:#x}{}, where no {}; with no section table it was not taken for a wrapper", crate::WrapperMagic::from_u32(*magic).name(), file_offset.map(|f| format!(" (file offset {f:#x})")).unwrap_or_else(|| " (outside the file's loaded bytes)".into()), if *magic == crate::WrapperMagic::HIPK { "kpack marker decodes" } else { "bundle starts" })]
    UnmatchedWrapperRecord {
        /// The record's magic (`HIPF` or `HIPK`).
        magic: u32,
        /// The pointer after relocation.
        address: u64,
        /// Its file offset, when it lands in a segment's file bytes.
        file_offset: Option<u64>,
    },
    /// A bundle in `.hip_fatbin` that no wrapper points to (the runtime never registers it).
    #[error("no wrapper points to this bundle")]
    BundleWithoutWrapper,
    /// Bytes left in the `.hip_fatbin` (`.hip_fat`) section of a binary whose wrappers are
    /// all `HIPK`: no wrapper leads to them, the runtime loads the code objects from the kpack
    /// archives instead. TheRock's Windows split keeps the part of `.hip_fat` outside whole
    /// pages, so a stale offload bundle (or a piece of one) stays there. A note.
    #[error("{size} bytes left in this section by the kpack split ({}): no wrapper leads to them, the runtime loads this file's code objects from its kpack archives", match bundles { 0 => "no whole offload bundle".to_owned(), 1 => "1 stale offload bundle".to_owned(), n => format!("{n} stale offload bundles") })]
    LeftAfterSplit {
        /// Bytes of the section's contents in the file.
        size: u64,
        /// Whole offload bundles among them (not read as device code).
        bundles: usize,
    },
    /// The metadata a `HIPK` wrapper points to cannot be decoded.
    #[error("HIPK wrapper metadata cannot be read: {0}")]
    BadKpackMetadata(String),
    /// An `.llvm.offloading` image that cannot be read.
    #[error("offload binary cannot be read: {0}")]
    BadOffloadBinary(String),
    /// An entry whose payload contradicts its ID: the payload is an AMDGPU code object built
    /// for another target than the ID names (or the ID names none), or it starts with the ELF
    /// magic but its ELF header cannot be read. One of the two is damaged, and an answer read
    /// from the ID (what is listed, what the runtime would load) cannot be trusted. The
    /// location is the payload.
    #[error("entry {index} ({id}): {reason}")]
    EntryContradiction {
        /// The entry's index in its unit (header order).
        index: usize,
        /// The entry ID as stored (escaped when not printable).
        id: String,
        /// How payload and ID disagree.
        reason: String,
    },
    /// A standalone code object that cannot be read as `inspect` reads it, or whose
    /// `e_flags` contradict the target its metadata names. The location is the code object.
    #[error("code object: {0}")]
    BadCodeObject(String),
    /// A compressed (version 3, LLVM main) OffloadBinary: well formed, its entries not listed
    /// (`gfxkit_host::offloading::inflate` restores it); the OffloadBinaries after it are read.
    #[error("{0}")]
    CompressedOffloadBinary(String),
}

/// A problem found while looking for device code, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where.
    pub location: Location,
    /// How serious.
    pub severity: Severity,
    /// What.
    pub kind: ProblemKind,
}

impl Problem {
    /// An error-level problem.
    pub fn error(location: Location, kind: ProblemKind) -> Problem {
        Problem {
            location,
            severity: Severity::Error,
            kind,
        }
    }

    /// A note: nothing wrong, said for the reader's information.
    pub fn note(location: Location, kind: ProblemKind) -> Problem {
        Problem {
            location,
            severity: Severity::Note,
            kind,
        }
    }

    /// A warning-level problem.
    pub fn warning(location: Location, kind: ProblemKind) -> Problem {
        Problem {
            location,
            severity: Severity::Warning,
            kind,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.kind)
    }
}

impl std::error::Error for Problem {}

impl Serialize for Problem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Problem", 3)?;
        st.serialize_field("location", &self.location)?;
        st.serialize_field("severity", &self.severity)?;
        st.serialize_field("message", &self.kind.to_string())?;
        st.end()
    }
}
