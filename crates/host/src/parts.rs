//! The parts of a host file that hold or lead to device code, whatever its format: what the
//! ELF reader ([`crate::elf`]) and the PE/COFF reader ([`crate::pe`]) both give discovery
//! ([`crate::discover`]), which matches wrappers to bundles and splits sections.

use crate::problem::{Location, Problem};
use crate::wrapper::WrapperRecord;

/// Prefix of object-bundle sections.
pub(crate) use gfxkit_bundle::object::SECTION_PREFIX as OBJECT_BUNDLE_PREFIX;

/// A `.hipFatBinSegment` record as the host file gives it: its fields and where its pointer
/// leads after relocation, before it is matched to a bundle.
#[derive(Debug, Clone)]
pub(crate) struct RawWrapper {
    /// Where the 24-byte record is (offsets in the file).
    pub location: Location,
    /// Its fields as stored.
    pub record: WrapperRecord,
    /// Where the pointer leads.
    pub slot: Slot,
}

/// Where a wrapper's pointer leads after relocation.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A null pointer with no relocation.
    Null,
    /// A relocation against an undefined symbol.
    External(String),
    /// An address (a section-relative offset in relocatable objects) and its file offset.
    At {
        address: u64,
        file_offset: Option<u64>,
    },
}

/// A `.hipFatBinSegment` section: the problems with the section itself, then its records.
#[derive(Debug, Clone, Default)]
pub(crate) struct WrapperSection {
    pub problems: Vec<Problem>,
    pub records: Vec<RawWrapper>,
}

/// A problem, or an `.llvm.offloading` section (name, contents), in section order.
#[derive(Debug)]
pub(crate) enum Item<'data> {
    Problem(Problem),
    Offloading(&'data str, &'data [u8]),
}

/// What a host file (ELF, read by [`crate::elf`]; PE image or COFF object, read by
/// [`crate::pe`]) holds for device-code discovery, read from its section table and
/// relocations; offsets are file offsets (`base` added). Matching wrappers to bundles and
/// splitting sections is discovery's ([`crate::discover`]).
#[derive(Debug, Default)]
pub(crate) struct HostParts<'data> {
    /// Problems with the file and its sections, and offloading sections, in section order.
    pub items: Vec<Item<'data>>,
    /// Each section holding bundles back to back: its name (`.hip_fatbin`; `.hip_fat` in a PE
    /// image) and contents.
    pub fatbins: Vec<(&'static str, &'data [u8])>,
    /// `__CLANG_OFFLOAD_BUNDLE__<id>` sections: (ID, where, contents).
    pub object_entries: Vec<(&'data str, Location, &'data [u8])>,
    /// `.hipFatBinSegment` sections.
    pub wrapper_sections: Vec<WrapperSection>,
    /// Sections holding NVIDIA device code ([`crate::fatbin::NVIDIA_SECTIONS`]).
    pub nvidia: Vec<Location>,
    /// Whether the file has no section table and was read through its program headers
    /// (an ELF file stripped of its sections): then `fatbins` are the spans wrappers lead to, not sections, and
    /// nothing found has a section name.
    pub sectionless: bool,
}

impl HostParts<'_> {
    /// Records a problem, in section order.
    pub(crate) fn problem(&mut self, p: Problem) {
        self.items.push(Item::Problem(p));
    }
}
