//! What a rewrite produces: the output and its [`Report`] (kind of file, layout change, what
//! happened to each bundle). Shared by the file rewrite ([`crate::rewrite`]) and the archive
//! rewrite, which rewrites each member through it.

use crate::output::Output;
use crate::plan::BundleOutcome;
use serde::Serialize;

/// What kind of file was rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// One or more offload bundles back to back.
    Bundle,
    /// A relocatable object.
    Object,
    /// A shared object or position-independent executable (`ET_DYN`).
    SharedObject,
    /// A fixed-address executable (`ET_EXEC`).
    Executable,
    /// An `ar` archive.
    Archive,
    /// An ELF file without `.hip_fatbin`, or another file with no device code.
    NoDeviceCode,
}

/// How the file layout changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Layout {
    /// Nothing changed.
    Unchanged,
    /// The bundles were rewritten and the file length follows (standalone bundles, objects,
    /// archives).
    Rebuilt,
    /// `.hip_fatbin` was last in its segment: the segment was shortened and what follows moved
    /// down by `shift` bytes.
    SegmentShortened {
        /// Bytes everything after `.hip_fatbin` moved down in the file.
        shift: u64,
    },
    /// `.hip_fatbin` was inside its segment: the segment was split in two at the same
    /// addresses, and what follows moved down by `shift` bytes.
    SegmentSplit {
        /// Bytes everything after `.hip_fatbin` moved down in the file.
        shift: u64,
        /// Where the extra program header came from.
        phdr_slot: String,
    },
    /// `.hip_fatbin` grew: it moved to a new read-only segment at the end of the file and of
    /// the address space; its old bytes are zeroed.
    Relocated {
        /// File offset of the new section.
        offset: u64,
        /// Address of the new section.
        address: u64,
        /// Where the extra program header came from.
        phdr_slot: String,
    },
    /// The freed bytes were fewer than one alignment unit: the section was rewritten and
    /// zero-filled, the file length is unchanged.
    ZeroFilled {
        /// The alignment unit the shift would have needed.
        unit: u64,
    },
}

/// One region of bundles that was rewritten.
#[derive(Debug, Clone, Serialize)]
pub struct RegionReport {
    /// Archive member, when inside one.
    pub member: Option<String>,
    /// Section name, when inside an ELF file.
    pub section: Option<String>,
    /// Layout change of the file (or member) holding the region.
    pub layout: Layout,
    /// Wrappers whose pointer was fixed.
    pub wrappers: usize,
    /// Relocations whose addend was fixed.
    pub relocations: usize,
    /// Symbols whose value or size was fixed.
    pub symbols: usize,
    /// Bundles, in order.
    pub bundles: Vec<BundleOutcome>,
}

/// The result of a rewrite.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The kind of file.
    pub kind: FileKind,
    /// File size before.
    pub size_before: u64,
    /// File size after.
    pub size_after: u64,
    /// Regions rewritten.
    pub regions: Vec<RegionReport>,
}

impl Report {
    /// Whether any bundle changed.
    pub fn changed(&self) -> bool {
        self.regions
            .iter()
            .any(|r| r.bundles.iter().any(|b| b.changed))
    }
}

/// A rewritten file.
#[derive(Debug, Clone)]
pub struct Rewritten<'a> {
    /// The new file: pieces of the input, new bundles and patches, to be written out
    /// ([`Output::write_to`]); it borrows the input.
    pub output: Output<'a>,
    /// What was done.
    pub report: Report,
}

impl Rewritten<'_> {
    /// The new file in memory (for tests and small files; [`Output::write_to`] streams it).
    pub fn bytes(&self) -> Vec<u8> {
        self.output.to_vec()
    }
}
