//! Discovery: every piece of device code in a file's bytes, with where it was found.

use crate::elf;
use crate::fatbin::{self, BundleFormat};
use crate::limits;
use crate::offloading::{self, ImageKind, OffloadKind, OFFLOAD_BINARY_MAGIC};
use crate::parts::{HostParts, Item, RawWrapper, Slot, WrapperSection};
use crate::pe;
use crate::problem::{Location, Problem, ProblemKind};
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::split::Stop;
use gfxkit_bytes::offset_within;
use serde::Serialize;
use std::collections::HashMap;

pub use crate::wrapper::{decode_kpack_ref, KpackRef, WrapperMagic, WrapperRecord};

/// What kind of file the input is, judged from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    /// ELF executable (`ET_EXEC`, non-PIE).
    ElfExecutable,
    /// ELF shared object or PIE executable (`ET_DYN`).
    ElfSharedObject,
    /// ELF relocatable object (`ET_REL`).
    ElfRelocatable,
    /// Another host ELF file (core file, 32-bit or big-endian ELF): not searched.
    ElfOther,
    /// A PE32+ image for x86-64 (a Windows DLL or EXE).
    PeImage,
    /// An x86-64 COFF object (regular or bigobj), as clang writes for Windows.
    CoffObject,
    /// Another PE or COFF file (32-bit, another machine): not searched.
    PeOther,
    /// An AMDGPU code object (`e_machine` = `EM_AMDGPU`).
    CodeObject,
    /// An `ar` archive.
    Archive,
    /// One or more offload bundles back to back (uncompressed or CCOB).
    Bundle,
    /// One or more OffloadBinary images back to back.
    OffloadBinary,
    /// Anything else.
    Other,
}

impl InputKind {
    /// Guesses the kind of a file from its first bytes (at least 20 are needed to tell ELF
    /// kinds apart; a PE image's NT headers are checked when the prefix reaches them, usually
    /// within 512 bytes). Fast enough to skip unrelated files in a directory walk.
    pub fn sniff(prefix: &[u8]) -> InputKind {
        if prefix.starts_with(b"\x7fELF") {
            let field = |at| gfxkit_bytes::Cursor::new(prefix).u16(at).ok();
            if field(18) == Some(object::elf::EM_AMDGPU) {
                return InputKind::CodeObject;
            }
            if prefix.get(4) != Some(&2) || prefix.get(5) != Some(&1) {
                return InputKind::ElfOther;
            }
            return match field(16) {
                Some(1) => InputKind::ElfRelocatable,
                Some(2) => InputKind::ElfExecutable,
                Some(3) => InputKind::ElfSharedObject,
                _ => InputKind::ElfOther,
            };
        }
        if prefix.starts_with(b"!<arch>\n") || prefix.starts_with(b"!<thin>\n") {
            return InputKind::Archive;
        }
        match pe::sniff(prefix) {
            Some(pe::Sniffed::Image) => return InputKind::PeImage,
            Some(pe::Sniffed::Object) => return InputKind::CoffObject,
            Some(pe::Sniffed::Other) => return InputKind::PeOther,
            None => {}
        }
        if fatbin::starts_with_bundle(prefix) {
            return InputKind::Bundle;
        }
        if prefix.starts_with(&OFFLOAD_BINARY_MAGIC) {
            return InputKind::OffloadBinary;
        }
        InputKind::Other
    }

    /// Whether a file of this kind can hold device code.
    pub fn may_hold_device_code(self) -> bool {
        !matches!(
            self,
            InputKind::Other | InputKind::ElfOther | InputKind::PeOther
        )
    }
}

/// A bundle found in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundBundle<'data> {
    /// Where: archive member, section, file offset and size.
    pub(crate) location: Location,
    /// Uncompressed or CCOB (version, method).
    pub(crate) format: BundleFormat,
    /// The bundle's bytes (exactly its extent), borrowed from the input.
    pub(crate) bytes: &'data [u8],
    /// Indexes into [`Discovery::wrappers`] of the wrappers that point to this bundle.
    pub(crate) wrappers: Vec<usize>,
}

/// One entry of an object bundle: a `__CLANG_OFFLOAD_BUNDLE__<entry id>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectBundleEntry<'data> {
    /// The entry ID (the section name after the prefix), exactly as stored.
    pub(crate) id: &'data str,
    /// Where the section's contents are.
    pub(crate) location: Location,
    /// The section's contents (the entry payload).
    pub(crate) bytes: &'data [u8],
}

/// An object bundle (`clang-offload-bundler -type=o` output): a host ELF object whose
/// `__CLANG_OFFLOAD_BUNDLE__<entry id>` sections are the entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectBundle<'data> {
    /// Where the host object is (its offset and size; no section).
    pub(crate) location: Location,
    /// The entries in section order.
    pub(crate) entries: Vec<ObjectBundleEntry<'data>>,
}

/// A standalone AMDGPU code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundCodeObject<'data> {
    /// Where.
    pub(crate) location: Location,
    /// The ELF bytes.
    pub(crate) bytes: &'data [u8],
}

/// An image from an OffloadBinary (`.llvm.offloading` section or standalone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundImage<'data> {
    /// Where the image bytes are.
    pub(crate) location: Location,
    /// Image kind (object, bitcode, ...).
    pub(crate) image_kind: ImageKind,
    /// Offload kind (HIP is 3 or 4).
    pub(crate) offload_kind: OffloadKind,
    /// The `triple` string.
    pub(crate) triple: Option<&'data str>,
    /// The `arch` string (a target ID).
    pub(crate) arch: Option<&'data str>,
    /// The image bytes.
    pub(crate) bytes: &'data [u8],
}

/// Where a wrapper's pointer leads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum WrapperTarget {
    /// The start of a found bundle (its index among the bundles found, as
    /// [`Discovery::bundle_unit`] takes it).
    Bundle {
        /// Index among the bundles found ([`Discovery::bundle_count`]).
        index: usize,
    },
    /// An address in the file where no bundle starts (HIPK metadata, or a problem).
    Address {
        /// The pointer value (virtual address, or section offset in relocatable objects).
        address: u64,
        /// Its file offset, when it lands in the file.
        file_offset: Option<u64>,
    },
    /// A null pointer with no relocation.
    Nowhere,
    /// A relocation against an undefined symbol, resolved only when linking (a relocatable
    /// object built with `-fgpu-rdc`, whose device code is linked later) or loading.
    External {
        /// The symbol's name (`__hip_fatbin` for `-fgpu-rdc` objects).
        symbol: String,
    },
}

/// A `.hipFatBinSegment` record `{u32 magic, u32 version, u64 pointer, u64 unused}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// Where the 24-byte record is.
    pub location: Location,
    /// Its magic.
    pub magic: WrapperMagic,
    /// Its version field (1).
    pub version: u32,
    /// The pointer as stored in the file, before relocation (0 where a relocation supplies
    /// it; a virtual address in a PE image, which base relocations move).
    pub pointer: u64,
    /// Where its pointer leads, after relocation.
    pub target: WrapperTarget,
    /// The u64 at +16. Unused in `HIPF` wrappers; in `HIPK` wrappers its low 32 bits are the
    /// index N the runtime looks the code object up by (`<kernel_name>#<N>`), see
    /// [`Wrapper::kpack_index`].
    pub reserved: u64,
    /// For a `HIPK` wrapper, the kpack reference its pointer leads to (when it decodes).
    pub kpack: Option<KpackRef>,
}

impl Wrapper {
    /// For a `HIPK` wrapper, the index N of its code objects in the kpack archives: the u32
    /// at +16, which the runtime passes as `co_index` (not any count a splitter kept).
    pub fn kpack_index(&self) -> Option<u32> {
        (self.magic == WrapperMagic::Hipk).then_some(self.reserved as u32)
    }
}

/// Everything found in one input. What it holds reads as the one model of a unit of device
/// code: [`Discovery::units`] for every unit, [`Discovery::bundle_unit`] for the offload bundle
/// a wrapper record names; the records discovery keeps on the way are its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery<'data> {
    /// What the input is.
    pub kind: InputKind,
    /// Offload bundles (in `.hip_fatbin` sections, standalone, in archive members), in file order.
    pub(crate) bundles: Vec<FoundBundle<'data>>,
    /// Object bundles (`__CLANG_OFFLOAD_BUNDLE__*` sections).
    pub(crate) object_bundles: Vec<ObjectBundle<'data>>,
    /// Standalone AMDGPU code objects (the input itself or archive members).
    pub(crate) code_objects: Vec<FoundCodeObject<'data>>,
    /// OffloadBinary images.
    pub(crate) offload_images: Vec<FoundImage<'data>>,
    /// `.hipFatBinSegment` wrapper records.
    pub wrappers: Vec<Wrapper>,
    /// The `.hip_fatbin` sections read (archive member, file offset and size of their
    /// contents), in file order; their bundles are among [`Discovery::units`]. In a file
    /// without a section table, the spans read instead (section `None`): per `PT_LOAD`
    /// segment, from the first bundle a wrapper leads to to the end of the last one.
    pub fatbin_sections: Vec<Location>,
    /// Sections holding NVIDIA device code (CUDA fat binaries,
    /// [`crate::fatbin::NVIDIA_SECTIONS`]), in file order: not device code for an AMD GPU,
    /// never among the units; what a CUDA build holds instead of bundles.
    pub nvidia: Vec<Location>,
    /// Problems found on the way (damaged or suspicious data), in file order per container.
    pub problems: Vec<Problem>,
    /// The limits the input was read under ([`discover_with`]), for the readers of what was
    /// found.
    pub limits: Limits,
}

impl Discovery<'_> {
    /// Total bytes of device code found (bundles as stored, object-bundle entries, code objects,
    /// images).
    pub fn device_bytes(&self) -> u64 {
        let b: u64 = self.bundles.iter().map(|b| b.bytes.len() as u64).sum();
        let o: u64 = self
            .object_bundles
            .iter()
            .flat_map(|o| &o.entries)
            .map(|e| e.bytes.len() as u64)
            .sum();
        let c: u64 = self.code_objects.iter().map(|c| c.bytes.len() as u64).sum();
        let i: u64 = self
            .offload_images
            .iter()
            .map(|i| i.bytes.len() as u64)
            .sum();
        b + o + c + i
    }

    /// Whether some problem has error severity.
    pub fn has_errors(&self) -> bool {
        self.problems
            .iter()
            .any(|p| p.severity == crate::problem::Severity::Error)
    }
}

/// Finds every piece of device code in `data`: the bundles of `.hip_fatbin` sections (each one,
/// whatever the padding between them), `.hipFatBinSegment` wrappers and where they point,
/// `__CLANG_OFFLOAD_BUNDLE__*` object-bundle sections, `.llvm.offloading` images, the members
/// of `ar` archives (recursively), standalone bundles (several back to back are allowed),
/// standalone OffloadBinaries and standalone code objects.
///
/// Never fails: damage is reported in [`Discovery::problems`] with its location, and whatever
/// could be read is returned. Nothing is copied or decompressed (except that a CCOB v1 bundle,
/// which records no size, has its stream walked to find where it ends).
///
/// Bundles are read under the default [`Limits`]; [`discover_with`] takes the caller's.
pub fn discover(data: &[u8]) -> Discovery<'_> {
    discover_with(data, &Limits::default())
}

/// [`discover`] under `limits`, which [`Discovery::limits`] keeps for whoever reads the
/// bundles found (a CCOB v1 bundle declaring more than they allow cannot be delimited).
pub fn discover_with<'data>(data: &'data [u8], limits: &Limits) -> Discovery<'data> {
    let mut w = Walker {
        file: data,
        out: Discovery {
            kind: InputKind::sniff(data),
            bundles: Vec::new(),
            object_bundles: Vec::new(),
            code_objects: Vec::new(),
            offload_images: Vec::new(),
            wrappers: Vec::new(),
            fatbin_sections: Vec::new(),
            nvidia: Vec::new(),
            problems: Vec::new(),
            limits: *limits,
        },
    };
    w.walk(data, None, 0);
    w.out
}

/// What is wrong with the identification of a file starting with the ELF magic, when no ELF
/// file could have it: `EI_CLASS` or `EI_DATA` other than 1 and 2, `EI_VERSION` other than 1,
/// or an `e_type` outside the defined types (0-4) and the OS and processor ranges
/// (`0xfe00`-`0xffff`). `None` for a well-formed identification, or too short a file.
fn damaged_elf_ident(data: &[u8]) -> Option<String> {
    let (class, encoding, version) = (*data.get(4)?, *data.get(5)?, *data.get(6)?);
    if !matches!(class, 1 | 2) {
        return Some(format!(
            "EI_CLASS is {class} (at offset 0x4), expected 1 (32-bit) or 2 (64-bit)"
        ));
    }
    if !matches!(encoding, 1 | 2) {
        return Some(format!(
            "EI_DATA is {encoding} (at offset 0x5), expected 1 (little-endian) or 2 (big-endian)"
        ));
    }
    if version != 1 {
        return Some(format!(
            "EI_VERSION is {version} (at offset 0x6), expected 1"
        ));
    }
    let t = data.get(16..18)?;
    let e_type = if encoding == 1 {
        u16::from_le_bytes([t[0], t[1]])
    } else {
        u16::from_be_bytes([t[0], t[1]])
    };
    if e_type > 4 && e_type < 0xfe00 {
        return Some(format!(
            "e_type is {e_type:#x} (at offset 0x10), not an ELF file type"
        ));
    }
    None
}

/// Whether the wrapper records of a file say it is split by kpack: some `HIPK` record, no
/// `HIPF` one (records with another magic are damage, reported on their own), and none leading
/// into the `.hip_fatbin` contents at `spans` (file offset, size): a wrapper that does, whatever
/// its magic, makes what it leads to more than leftover bytes.
fn hipk_only(sections: &[WrapperSection], spans: &[(u64, u64)]) -> bool {
    let records = || sections.iter().flat_map(|s| &s.records);
    let into_fatbin = |r: &RawWrapper| match r.slot {
        Slot::At {
            file_offset: Some(f),
            ..
        } => spans.iter().any(|&(at, size)| f >= at && f - at < size),
        _ => false,
    };
    records().any(|r| r.record.magic == WrapperMagic::HIPK)
        && !records().any(|r| r.record.magic == WrapperMagic::HIPF || into_fatbin(r))
}

struct Walker<'data> {
    file: &'data [u8],
    out: Discovery<'data>,
}

impl<'data> Walker<'data> {
    /// File offset of a sub-slice of the input.
    fn base(&self, data: &[u8]) -> u64 {
        offset_within(self.file, data).unwrap_or(0)
    }

    fn problem(&mut self, p: Problem) {
        if self.out.problems.len() < limits::MAX_PROBLEMS {
            self.out.problems.push(p);
        }
    }

    fn walk(&mut self, data: &'data [u8], member: Option<String>, depth: usize) {
        match InputKind::sniff(data) {
            InputKind::CodeObject => {
                let location = Location {
                    member,
                    section: None,
                    offset: self.base(data),
                    size: data.len() as u64,
                };
                // A cut code object is damage, said with the sizes; it is not a unit.
                if let Some(t) = gfxkit_code_object::extent::truncation_with_sections(data) {
                    self.problem(Problem::error(location, ProblemKind::TruncatedElf(t)));
                    return;
                }
                self.out.code_objects.push(FoundCodeObject {
                    location,
                    bytes: data,
                });
            }
            InputKind::ElfExecutable | InputKind::ElfSharedObject | InputKind::ElfRelocatable => {
                let parts =
                    elf::read_elf(data, self.base(data), member.as_deref(), &self.out.limits);
                self.take_parts(data, member, parts);
            }
            InputKind::PeImage => {
                let parts = pe::read_image(data, self.base(data), member.as_deref());
                self.take_parts(data, member, parts);
            }
            InputKind::CoffObject => {
                let base = self.base(data);
                let parts = if data.starts_with(&[0, 0, 0xff, 0xff]) {
                    pe::read_object::<object::pe::AnonObjectHeaderBigobj>(
                        data,
                        base,
                        member.as_deref(),
                    )
                } else {
                    pe::read_object::<object::pe::ImageFileHeader>(data, base, member.as_deref())
                };
                self.take_parts(data, member, parts);
            }
            InputKind::Archive => self.walk_archive(data, member, depth),
            InputKind::Bundle => {
                self.split_section(data, member, None);
            }
            InputKind::OffloadBinary => self.read_offloading(data, member, None),
            InputKind::ElfOther => {
                // Another kind of ELF file (32-bit, big-endian, a core file) holds no device
                // code; an identification no ELF file has is damage, not another kind.
                if let Some(what) = damaged_elf_ident(data) {
                    let location = Location {
                        member,
                        section: None,
                        offset: self.base(data),
                        size: data.len() as u64,
                    };
                    self.problem(Problem::error(location, ProblemKind::MalformedElf(what)));
                }
            }
            InputKind::Other | InputKind::PeOther => {}
        }
    }

    /// A host file (ELF, PE image or COFF object): what [`elf::read_elf`] or [`pe`] read
    /// from it, its `.hip_fatbin` sections split, and its wrappers matched to the bundles they
    /// lead to.
    fn take_parts(&mut self, data: &'data [u8], member: Option<String>, parts: HostParts<'data>) {
        let base = self.base(data);
        self.out.nvidia.extend(parts.nvidia);
        for item in parts.items {
            match item {
                Item::Problem(p) => self.problem(p),
                Item::Offloading(name, contents) => {
                    self.read_offloading(contents, member.clone(), Some(name))
                }
            }
        }
        if !parts.object_entries.is_empty() {
            self.out.object_bundles.push(ObjectBundle {
                location: Location {
                    member: member.clone(),
                    section: None,
                    offset: base,
                    size: data.len() as u64,
                },
                entries: parts
                    .object_entries
                    .into_iter()
                    .map(|(id, location, bytes)| ObjectBundleEntry {
                        id,
                        location,
                        bytes,
                    })
                    .collect(),
            });
        }
        // Bundles in `.hip_fatbin` (without a section table: the spans wrappers lead to),
        // indexed by file offset for wrapper matching. In a file split by kpack (every
        // wrapper `HIPK`) the runtime reads no bundle: what the section still holds is a note.
        let spans: Vec<(u64, u64)> = parts
            .fatbins
            .iter()
            .map(|(_, c)| (self.base(c), c.len() as u64))
            .collect();
        let split = hipk_only(&parts.wrapper_sections, &spans);
        let first_bundle = self.out.bundles.len();
        for &(name, contents) in &parts.fatbins {
            let section = (!parts.sectionless).then_some(name);
            self.out.fatbin_sections.push(Location {
                member: member.clone(),
                section: section.map(str::to_owned),
                offset: self.base(contents),
                size: contents.len() as u64,
            });
            if split {
                self.left_after_split(contents, member.clone(), section);
            } else {
                self.split_section(contents, member.clone(), section);
            }
        }
        if parts.wrapper_sections.is_empty() {
            return;
        }
        let by_offset: HashMap<u64, usize> = (first_bundle..self.out.bundles.len())
            .map(|i| (self.out.bundles[i].location.offset, i))
            .collect();
        for section in parts.wrapper_sections {
            for p in section.problems {
                self.problem(p);
            }
            for w in section.records {
                self.wrapper(w, &by_offset);
            }
        }
        // Bundles of this file that no wrapper points to are never registered by the runtime.
        for i in first_bundle..self.out.bundles.len() {
            if self.out.bundles[i].wrappers.is_empty() {
                let mut l = self.out.bundles[i].location.clone();
                l.size = 0;
                self.problem(Problem::warning(l, ProblemKind::BundleWithoutWrapper));
            }
        }
    }

    /// One wrapper record: where it leads (`by_offset`: the file's bundles by file offset), its
    /// problems, and for `HIPK` the kpack reference it leads to.
    fn wrapper(&mut self, w: RawWrapper, by_offset: &HashMap<u64, usize>) {
        let magic = WrapperMagic::from_u32(w.record.magic);
        let record_loc = w.location;
        if let WrapperMagic::Other(m) = magic {
            self.problem(Problem::error(
                record_loc.clone(),
                ProblemKind::WrapperMagic { magic: m },
            ));
        }
        let target = match w.slot {
            Slot::External(symbol) => WrapperTarget::External { symbol },
            Slot::Null => WrapperTarget::Nowhere,
            Slot::At {
                address,
                file_offset,
            } => match file_offset.as_ref().and_then(|f| by_offset.get(f)) {
                Some(&index) => WrapperTarget::Bundle { index },
                None => WrapperTarget::Address {
                    address,
                    file_offset,
                },
            },
        };
        // Problems only for HIPF: HIPK pointers lead to metadata, not bundles.
        if magic == WrapperMagic::Hipf {
            let kind = match target {
                WrapperTarget::Nowhere => Some(ProblemKind::WrapperPointsNowhere),
                WrapperTarget::Address {
                    address,
                    file_offset: None,
                } => Some(ProblemKind::WrapperPointsOutside { address }),
                WrapperTarget::Address {
                    address,
                    file_offset: Some(f),
                } => Some(ProblemKind::WrapperMissesBundle {
                    address,
                    file_offset: f,
                }),
                WrapperTarget::Bundle { .. } | WrapperTarget::External { .. } => None,
            };
            if let Some(kind) = kind {
                self.problem(Problem::error(record_loc.clone(), kind));
            }
        }
        let wi = self.out.wrappers.len();
        if let WrapperTarget::Bundle { index } = &target {
            self.out.bundles[*index].wrappers.push(wi);
        }
        let kpack = match (&magic, &target) {
            (
                WrapperMagic::Hipk,
                WrapperTarget::Address {
                    file_offset: Some(f),
                    ..
                },
            ) => {
                let at = usize::try_from(*f).ok();
                match at.and_then(|a| self.file.get(a..)).map(decode_kpack_ref) {
                    Some(Ok(k)) => Some(k),
                    Some(Err(e)) => {
                        self.problem(Problem::warning(
                            record_loc.clone(),
                            ProblemKind::BadKpackMetadata(e),
                        ));
                        None
                    }
                    None => None,
                }
            }
            _ => None,
        };
        self.out.wrappers.push(Wrapper {
            location: record_loc,
            magic,
            version: w.record.version,
            pointer: w.record.pointer,
            target,
            reserved: w.record.reserved,
            kpack,
        });
    }

    fn walk_archive(&mut self, data: &'data [u8], member: Option<String>, depth: usize) {
        let here = Location {
            member: member.clone(),
            section: None,
            offset: self.base(data),
            size: data.len() as u64,
        };
        if depth >= limits::MAX_ARCHIVE_DEPTH {
            self.problem(Problem::warning(
                here,
                ProblemKind::NestingTooDeep {
                    limit: limits::MAX_ARCHIVE_DEPTH,
                },
            ));
            return;
        }
        let archive = match object::read::archive::ArchiveFile::parse(data) {
            Ok(a) => a,
            Err(e) => {
                self.problem(Problem::error(
                    here,
                    ProblemKind::MalformedArchive(e.to_string()),
                ));
                return;
            }
        };
        if archive.is_thin() {
            self.problem(Problem::warning(here, ProblemKind::ThinArchive));
            return;
        }
        for (i, m) in archive.members().enumerate() {
            if i >= limits::MAX_ARCHIVE_MEMBERS {
                self.problem(Problem::warning(
                    here.clone(),
                    ProblemKind::TooMany {
                        what: "archive members",
                        limit: limits::MAX_ARCHIVE_MEMBERS,
                    },
                ));
                break;
            }
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    self.problem(Problem::error(
                        here.clone(),
                        ProblemKind::MalformedArchive(format!("member {i}: {e}")),
                    ));
                    break;
                }
            };
            let name = match std::str::from_utf8(m.name()) {
                Ok(n) => n.to_owned(),
                Err(e) => {
                    // Read on under the escaped name (`k\xff.o`), with a problem saying so.
                    let escaped = m.name().escape_ascii().to_string();
                    let at = self.base(m.name());
                    self.problem(Problem::warning(
                        Location {
                            member: member.clone(),
                            section: None,
                            offset: at,
                            size: m.name().len() as u64,
                        },
                        ProblemKind::MemberNameNotUtf8 {
                            index: i,
                            name: escaped.clone(),
                            bad_byte_offset: at + e.valid_up_to() as u64,
                        },
                    ));
                    escaped
                }
            };
            let path = match &member {
                Some(outer) => format!("{outer}/{name}"),
                None => name,
            };
            match m.data(data) {
                Ok(bytes) => self.walk(bytes, Some(path), depth + 1),
                Err(e) => self.problem(Problem::error(
                    here.clone(),
                    ProblemKind::MalformedArchive(format!("member {i} ({path}): {e}")),
                )),
            }
        }
    }

    /// The `.hip_fatbin` contents of a file whose wrappers are all `HIPK`: the runtime loads
    /// its code objects from the kpack archives and never reads these bytes, so they are not
    /// units. Bytes other than zeros (TheRock's Windows split keeps the part of `.hip_fat`
    /// outside whole pages, often a stale bundle) are a note naming the bundles among them.
    fn left_after_split(
        &mut self,
        data: &'data [u8],
        member: Option<String>,
        section: Option<&str>,
    ) {
        if data.iter().all(|&b| b == 0) {
            return;
        }
        let (found, _) = gfxkit_bundle::split::split(data, &self.out.limits);
        let location = Location {
            member,
            section: section.map(str::to_owned),
            offset: self.base(data),
            size: data.len() as u64,
        };
        self.problem(Problem::note(
            location,
            ProblemKind::LeftAfterSplit {
                size: data.len() as u64,
                bundles: found.len(),
            },
        ));
    }

    /// Splits a section (or a standalone file) holding bundles back to back. Returns the
    /// indexes of the bundles found.
    fn split_section(
        &mut self,
        data: &'data [u8],
        member: Option<String>,
        section: Option<&str>,
    ) -> std::ops::Range<usize> {
        let base = self.base(data);
        let first = self.out.bundles.len();
        let (found, stop) = gfxkit_bundle::split::split(data, &self.out.limits);
        for b in found {
            let Ok(bytes) = gfxkit_bytes::Cursor::new(data).slice(b.offset, b.len) else {
                continue; // Not reached: split returns only bundles inside `data`.
            };
            self.out.bundles.push(FoundBundle {
                location: Location {
                    member: member.clone(),
                    section: section.map(str::to_owned),
                    offset: base.saturating_add(b.offset),
                    size: b.len,
                },
                format: b.stored,
                bytes,
                wrappers: Vec::new(),
            });
        }
        if let Some(stop) = stop {
            let at = |offset: u64| Location {
                member: member.clone(),
                section: section.map(str::to_owned),
                offset: base.saturating_add(offset),
                size: 0,
            };
            let p = match stop {
                Stop::Damaged { offset, error } => {
                    let what = match error.entry {
                        Some(i) => format!("entry {i}: {}", error.kind),
                        None => error.kind.to_string(),
                    };
                    Problem::error(
                        at(error.offset.unwrap_or(offset)),
                        ProblemKind::BadBundle(what),
                    )
                }
                Stop::PastEnd {
                    offset,
                    size,
                    available,
                } => Problem::error(
                    at(offset),
                    ProblemKind::BundlePastSection {
                        size,
                        excess: size - available,
                    },
                ),
                Stop::Garbage { offset, found } => {
                    Problem::error(at(offset), ProblemKind::UnknownBytes { found })
                }
                // `Stop` may gain reasons: each ends the split like too many bundles.
                _ => Problem::warning(
                    at(0),
                    ProblemKind::TooMany {
                        what: "bundles in one section",
                        limit: limits::MAX_BUNDLES_PER_SECTION,
                    },
                ),
            };
            self.problem(p);
        }
        first..self.out.bundles.len()
    }

    /// Reads OffloadBinaries back to back (an `.llvm.offloading` section or a standalone file).
    fn read_offloading(
        &mut self,
        data: &'data [u8],
        member: Option<String>,
        section: Option<&str>,
    ) {
        let base = self.base(data);
        let (entries, stop) = offloading::parse_offloading(data);
        // Metadata-only entries (version 2, `OIF_NoImage`, no image bytes) hold no device code;
        // one flagged so that still has bytes is listed, bytes being what matters.
        for e in entries
            .into_iter()
            .filter(|e| !(e.has_no_image() && e.image.is_empty()))
        {
            self.out.offload_images.push(FoundImage {
                location: Location {
                    member: member.clone(),
                    section: section.map(str::to_owned),
                    offset: base.saturating_add(e.image_offset),
                    size: e.image.len() as u64,
                },
                image_kind: e.image_kind,
                offload_kind: e.offload_kind,
                triple: e.triple(),
                arch: e.arch(),
                bytes: e.image,
            });
        }
        if let Some(e) = stop {
            let location = Location {
                member,
                section: section.map(str::to_owned),
                offset: base.saturating_add(e.offset),
                size: 0,
            };
            self.problem(match e.compressed {
                // Well formed, just not inflated: a warning, not damage.
                Some(_) => Problem::warning(location, ProblemKind::CompressedOffloadBinary(e.what)),
                None => Problem::error(location, ProblemKind::BadOffloadBinary(e.what)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    /// A shared library whose `EI_CLASS` or `e_type` a bit flip damaged was taken for "another
    /// kind of ELF file" and listed as holding no device code, without a word.
    #[test]
    fn damaged_elf_identification_is_a_problem_not_another_kind_of_file() {
        let mut lib = vec![0u8; 64];
        lib[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
        lib[16] = 3; // ET_DYN
        lib[18] = 62; // EM_X86_64
        let damaged = |at: usize, bit: u8| {
            let mut d = lib.clone();
            d[at] ^= 1 << bit;
            d
        };
        for (at, bit, says) in [
            (4, 0, "EI_CLASS is 3"),
            (5, 2, "EI_DATA is 5"),
            (6, 1, "Unsupported ELF header"),
            (16, 3, "e_type is 0xb"),
            (17, 0, "e_type is 0x103"),
        ] {
            let d = damaged(at, bit);
            let found = discover(&d);
            assert!(found.bundles.is_empty());
            assert_eq!(
                found.problems.len(),
                1,
                "flip at {at}: {:?}",
                found.problems
            );
            let p = &found.problems[0];
            assert_eq!(p.severity, crate::problem::Severity::Error);
            assert!(p.kind.to_string().contains(says), "{}", p.kind);
        }
        // Other kinds of ELF files are no damage: 32-bit, big-endian, a core file, OS types.
        for bytes in [
            &[(4, 1u8)][..],
            &[(5, 2), (16, 0), (17, 3)],
            &[(16, 4)],
            &[(17, 0xfe)],
        ] {
            let mut d = lib.clone();
            for (at, v) in bytes {
                d[*at] = *v;
            }
            assert!(discover(&d).problems.is_empty(), "{bytes:?}");
        }
    }

    use super::*;
    use crate::offloading::{write_v2, Image, OIF_NO_IMAGE};

    /// A standalone version-2 OffloadBinary: its images are found, a metadata-only entry
    /// (`OIF_NoImage`, no bytes) is not.
    #[test]
    fn offload_binary_v2_images_without_metadata_only_entries() {
        let hip = |arch: &'static str, image: &'static [u8], flags: u32| Image {
            image_kind: 1,
            offload_kind: 4,
            flags,
            strings: vec![("triple", b"amdgcn-amd-amdhsa"), ("arch", arch.as_bytes())],
            image,
        };
        let bin = write_v2(&[
            hip("gfx90a", b"\x7fELF-a", 0),
            hip("gfx942", b"", OIF_NO_IMAGE),
            hip("gfx1100", b"\x7fELF-c", 0),
        ]);
        let d = discover(&bin);
        let archs: Vec<_> = d.offload_images.iter().map(|i| i.arch).collect();
        assert_eq!(archs, [Some("gfx90a"), Some("gfx1100")]);
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert_eq!(d.offload_images[1].bytes, b"\x7fELF-c");
        assert!(d.offload_images.iter().all(|i| i.offload_kind.is_hip()));
    }

    /// A compressed version-3 OffloadBinary (LLVM main) is a warning naming it; the binaries
    /// around it are listed.
    #[test]
    fn compressed_offload_binary_is_a_warning_and_the_rest_is_read() {
        let img = |arch: &'static str| Image {
            image_kind: 1,
            offload_kind: 4,
            flags: 0,
            strings: vec![("triple", b"amdgcn-amd-amdhsa"), ("arch", arch.as_bytes())],
            image: b"\x7fELF-code",
        };
        let mut bin = crate::offloading::write_v3_compressed(
            &[img("gfx90a")],
            gfxkit_bundle::Method::Zstd,
            3,
        )
        .unwrap();
        bin.extend_from_slice(&crate::offloading::write_v3(&[img("gfx942")]));
        let d = discover(&bin);
        let archs: Vec<_> = d.offload_images.iter().map(|i| i.arch).collect();
        assert_eq!(archs, [Some("gfx942")]);
        assert_eq!(d.problems.len(), 1, "{:?}", d.problems);
        assert_eq!(d.problems[0].severity, crate::Severity::Warning);
        assert!(d.problems[0]
            .to_string()
            .contains("compressed OffloadBinary"));
    }
}
