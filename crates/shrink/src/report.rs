//! What a rewrite produces: the output and its [`Report`] (kind of file, layout change, what
//! happened to each bundle). Shared by the file rewrite ([`rewrite`](mod@crate::rewrite)) and the archive
//! rewrite, which rewrites each member through it.

use crate::error::{Error, ErrorKind, Result};
use crate::filter::EntryFilter;
use crate::output::Output;
use crate::plan::{BundleOutcome, EntryRecord, Transform};
use gfxkit_bundle::EntryId;
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
    /// An AMDGPU code object on its own (`.co`, `.hsaco`).
    CodeObject,
    /// A kernel database (MIOpen `.kdb`, AOTriton `.aks2`): one bundle per code object.
    KernelDatabase,
    /// An ELF file without `.hip_fatbin`, or another file with no device code.
    NoDeviceCode,
}

impl FileKind {
    /// The kind in words, as reports print it (`shared object`, `no device code`).
    pub fn words(self) -> &'static str {
        match self {
            FileKind::Bundle => "bundle",
            FileKind::Object => "relocatable object",
            FileKind::SharedObject => "shared object",
            FileKind::Executable => "executable",
            FileKind::Archive => "archive",
            FileKind::CodeObject => "code object",
            FileKind::KernelDatabase => "kernel database",
            FileKind::NoDeviceCode => "no device code",
        }
    }
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
    /// A PE image's `.hip_fat`: its raw data shrank to the new bundles rounded up to
    /// `FileAlignment` (its address and virtual size kept, the loader zero-filling the rest),
    /// and what follows moved down by `shift` bytes.
    SectionShortened {
        /// Bytes everything after the section's raw data moved down in the file.
        shift: u64,
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
    /// The targets of the selection (`--keep` or `--drop`) that no entry of the file matches,
    /// as given: a typo, or a target the file never had.
    pub unmatched: Vec<String>,
}

impl Report {
    /// Every entry of every bundle before the rewrite, kept and dropped.
    fn entries(&self) -> impl Iterator<Item = &EntryRecord> {
        self.regions
            .iter()
            .flat_map(|r| r.bundles.iter())
            .flat_map(|b| b.kept.iter().chain(b.dropped.iter()))
    }

    /// Whether the file held device code (an entry other than the host's) before the rewrite.
    pub fn had_device_code(&self) -> bool {
        self.entries().any(|e| e.target != HOST)
    }

    /// Whether the file holds device code after the rewrite.
    pub fn keeps_device_code(&self) -> bool {
        self.regions
            .iter()
            .flat_map(|r| r.bundles.iter())
            .any(|b| b.kept.iter().any(|e| e.target != HOST))
    }

    /// The device targets the file held before the rewrite, sorted, each once.
    pub fn targets_before(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .entries()
            .map(|e| e.target.as_str())
            .filter(|t| *t != HOST)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Fills [`Report::unmatched`]: the patterns of `selection` no entry matches (for
    /// [`EntryFilter::Keep`], serves; for [`EntryFilter::Drop`], names). A file without device
    /// code matches nothing and is not worth a word: its list stays empty.
    pub(crate) fn find_unmatched(&mut self, selection: &EntryFilter) {
        if selection == &EntryFilter::All || !self.had_device_code() {
            return;
        }
        let ids: Vec<EntryId> = self
            .entries()
            .filter_map(|e| EntryId::parse(&e.id).ok())
            .collect();
        self.unmatched = selection
            .unmatched(&ids)
            .into_iter()
            .map(|p| p.to_string())
            .collect();
    }

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

/// The label of the host entry in [`EntryRecord::target`].
const HOST: &str = "host";

/// Refuses a prune whose result holds no device code where its input held some: every
/// device entry of every report (one file, or every member of a package) would be dropped,
/// which is almost always a mistyped or absent target. A caller that means it (`--allow-empty`)
/// skips this check. A conversion alone ([`EntryFilter::All`]) never empties a file.
pub fn refuse_empty<'r>(
    t: &Transform,
    reports: impl IntoIterator<Item = &'r Report>,
) -> Result<()> {
    if t.selection == EntryFilter::All {
        return Ok(());
    }
    let reports: Vec<&Report> = reports.into_iter().collect();
    if !reports.iter().any(|r| r.had_device_code()) || reports.iter().any(|r| r.keeps_device_code())
    {
        return Ok(());
    }
    match empty_error(
        &t.selection,
        reports.iter().flat_map(|r| r.targets_before()),
    ) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The error refusing a prune by `selection` that would leave no device code, naming the
/// targets `present` (sorted and without repeats here); `None` for [`EntryFilter::All`], which
/// never empties anything.
pub fn empty_error<'p>(
    selection: &EntryFilter,
    present: impl IntoIterator<Item = &'p str>,
) -> Option<Error> {
    let (flag, patterns) = match selection {
        EntryFilter::Keep(ps) => ("--keep", ps),
        EntryFilter::Drop(ps) => ("--drop", ps),
        EntryFilter::All => return None,
    };
    let mut present: Vec<&str> = present.into_iter().collect();
    present.sort_unstable();
    present.dedup();
    Some(Error::at(
        0,
        ErrorKind::WouldEmpty {
            selection: format!(
                "{flag} {}",
                patterns
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            present: present.join(", "),
        },
    ))
}
