//! Reading an AMDGPU ELF code object: header, `e_flags`, metadata note.

use crate::descriptor::{self, KernelDescriptor};
use crate::eflags::{EFlags, EFlagsIssue, TargetIdFromFlagsError, TargetMismatch};
use crate::error::{Error, ErrorKind};
use crate::metadata::{Depth, Kernel, Metadata};
use crate::metadata_v2::{self, V2Kernel, NT_AMD_HSA_METADATA};
use gfxkit_spec::elf::{
    ELFOSABI_AMDGPU_HSA, EM_AMDGPU, NOTE_OWNER_AMD, NOTE_OWNER_AMDGPU, NT_AMDGPU_METADATA,
};
use gfxkit_spec::{Arch, CodeObjectVersion, EFlagsLayout, OsAbi, Processor};
use gfxkit_target_id::TargetId;
use object::elf::{FileHeader32, FileHeader64, ELFCLASS32, ELFCLASS64, ELFDATA2LSB};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::LittleEndian;
use std::collections::HashMap;
use std::fmt;

/// Size of the ELF header of a 32-bit (r600) object.
const EHDR32_SIZE: u64 = 52;
/// Size of the ELF header of a 64-bit (amdgcn) object.
const EHDR64_SIZE: u64 = 64;

/// The ELF header of an AMDGPU code object, read without its notes: cheap (the first 64 bytes),
/// enough to check that a bundle entry's `e_flags` agree with its ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    arch: Arch,
    os_abi: OsAbi,
    abi_version: u8,
    e_type: u16,
    flags: EFlags,
    version: Option<CodeObjectVersion>,
}

/// An AMDGPU code object: the ELF header decoded, and the `NT_AMDGPU_METADATA` note if present.
/// Borrows from the input bytes.
#[derive(Debug, Clone)]
pub struct CodeObject<'data> {
    data: &'data [u8],
    header: Header,
    metadata: Option<Metadata<'data>>,
    metadata_offset: Option<u64>,
    v2_kernels: Vec<V2Kernel>,
}

/// Something about a code object that does not fit the rules, found by [`CodeObject::issues`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Issue {
    /// From `e_flags`.
    EFlags(EFlagsIssue),
    /// `amdhsa.target` names another target ID than `e_flags`.
    TargetMismatch {
        /// From `e_flags`.
        e_flags: String,
        /// From the metadata.
        metadata: String,
    },
    /// An HSA code object of a version gfxkit does not know.
    UnknownVersion(CodeObjectVersion),
    /// The kernel descriptors cannot be read.
    Descriptors(String),
    /// A metadata kernel's `.symbol` names no kernel descriptor.
    MissingDescriptor {
        /// Kernel name.
        kernel: String,
        /// The symbol the metadata names.
        symbol: String,
    },
    /// The metadata and the kernel descriptor disagree.
    DescriptorMismatch {
        /// Kernel name.
        kernel: String,
        /// Metadata field name.
        field: &'static str,
        /// Value in the metadata.
        metadata: u64,
        /// Value in the descriptor.
        descriptor: u64,
    },
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Issue::EFlags(i) => i.fmt(f),
            Issue::TargetMismatch { e_flags, metadata } => {
                write!(f, "e_flags say {e_flags} but amdhsa.target says {metadata}")
            }
            Issue::UnknownVersion(v) => write!(f, "unknown code object version {v}"),
            Issue::Descriptors(e) => write!(f, "kernel descriptors: {e}"),
            Issue::MissingDescriptor { kernel, symbol } => {
                write!(f, "kernel {kernel}: no kernel descriptor {symbol}")
            }
            Issue::DescriptorMismatch {
                kernel,
                field,
                metadata,
                descriptor,
            } => write!(
                f,
                "kernel {kernel}: metadata {field} is {metadata}, the kernel descriptor says {descriptor}"
            ),
        }
    }
}

impl Header {
    /// Reads the ELF header: 64-bit little-endian for amdgcn, 32-bit for r600.
    pub fn parse(data: &[u8]) -> Result<Header, Error> {
        match elf_class(data)? {
            ELFCLASS64 => Header::from_elf(header64(data)?, Arch::Amdgcn),
            _ => Header::from_elf(header32(data)?, Arch::R600),
        }
    }

    fn from_elf<H: FileHeader<Endian = LittleEndian>>(
        header: &H,
        arch: Arch,
    ) -> Result<Header, Error> {
        let e = LittleEndian;
        let machine = header.e_machine(e);
        if machine != EM_AMDGPU {
            return Err(Error::new(ErrorKind::NotAmdgpu { machine }, 18));
        }
        // The HSA loader takes shared objects; the linker takes relocatable ones. No AMDGPU
        // code object has another type (a damaged `e_type` is not "another kind").
        let e_type = header.e_type(e);
        if !matches!(e_type, object::elf::ET_REL | object::elf::ET_DYN) {
            return Err(Error::new(
                ErrorKind::BadIdent {
                    detail: format!(
                        "e_type is {e_type:#x}; AMDGPU code objects are shared objects (3, \
                         ET_DYN) or relocatable ones (1, ET_REL)"
                    ),
                },
                16,
            ));
        }
        let ident = header.e_ident();
        let version = if ident.os_abi == ELFOSABI_AMDGPU_HSA && arch == Arch::Amdgcn {
            CodeObjectVersion::from_abi_version(ident.abi_version)
        } else {
            None
        };
        // HSA objects follow their version's layout; PAL, Mesa and others use the V3 bits.
        let layout = version.map_or(EFlagsLayout::V3, CodeObjectVersion::eflags_layout);
        Ok(Header {
            arch,
            os_abi: OsAbi(ident.os_abi),
            abi_version: ident.abi_version,
            e_type,
            flags: EFlags::decode_layout(header.e_flags(e), layout),
            version,
        })
    }

    /// `amdgcn` for 64-bit code objects, `r600` for 32-bit ones.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// `EI_OSABI`.
    pub fn os_abi(&self) -> OsAbi {
        self.os_abi
    }

    /// `EI_ABIVERSION` as found.
    pub fn abi_version(&self) -> u8 {
        self.abi_version
    }

    /// The HSA code-object version (from `EI_ABIVERSION`); `None` for non-HSA objects.
    pub fn code_object_version(&self) -> Option<CodeObjectVersion> {
        self.version
    }

    /// `e_type` (1 relocatable, 3 shared object: what the HSA loader takes).
    pub fn elf_type(&self) -> u16 {
        self.e_type
    }

    /// The raw `e_flags`.
    pub fn e_flags(&self) -> u32 {
        self.flags.raw()
    }

    /// `e_flags` decoded with the layout of this object's version.
    pub fn flags(&self) -> &EFlags {
        &self.flags
    }

    /// The processor `e_flags` names, if known.
    pub fn processor(&self) -> Option<&'static Processor> {
        self.flags.processor()
    }

    /// The target ID `e_flags` describe.
    pub fn target_id(&self) -> Result<TargetId, TargetIdFromFlagsError> {
        self.flags.target_id()
    }

    /// Whether the object's `e_flags` are those of a code object built for `id`
    /// (see [`EFlags::check_target`]).
    pub fn check_target(&self, id: &TargetId) -> Result<(), TargetMismatch> {
        self.flags.check_target(id)
    }
}

impl<'data> CodeObject<'data> {
    /// Parses an AMDGPU code object: 64-bit little-endian ELF for amdgcn, 32-bit for r600.
    /// A code object whose header tables or sections run past the end of `data` is an error
    /// ([`ErrorKind::TruncatedElf`], at the header field that places the part cut short).
    pub fn parse(data: &'data [u8]) -> Result<CodeObject<'data>, Error> {
        Self::read(data, Depth::Full)
    }

    /// Whether `data` reads as a code object whose identity can be trusted, without decoding
    /// its kernels: the ELF header and tables within the data, the notes found, every metadata
    /// note well-formed MessagePack with a valid version and target, and the notes agreeing.
    /// `Ok(Some(_))` is [`CodeObject::target_mismatch`]: `e_flags` and the metadata name
    /// different targets. What writers of code objects (`extract`) check before they write
    /// one; `inspect` and `verify` parse the whole object.
    pub fn check_identity(data: &'data [u8]) -> Result<Option<Issue>, Error> {
        Ok(Self::read(data, Depth::Identity)?.target_mismatch())
    }

    /// [`CodeObject::parse`], decoding the metadata as far as `depth` asks (without the
    /// kernels, the object must not leave this crate: its kernel list would be empty).
    fn read(data: &'data [u8], depth: Depth) -> Result<CodeObject<'data>, Error> {
        let header = Header::parse(data)?;
        if let Some(t) = crate::extent::truncation_with_sections(data) {
            return Err(Error::new(ErrorKind::TruncatedElf(t), t.claim));
        }
        if elf_class(data)? == ELFCLASS64 {
            check_tables(data, header64(data)?)?;
        } else {
            check_tables(data, header32(data)?)?;
        }
        let find = |owner: &str, n_type: u32, all: bool| match elf_class(data)? {
            ELFCLASS64 => find_notes(data, header64(data)?, owner, n_type, all),
            _ => find_notes(data, header32(data)?, owner, n_type, all),
        };
        // Every metadata note: a code object linked from several objects (Tensile's
        // `TensileLibrary_<arch>.co`: one per kernel) carries one per object, each listing
        // its own kernels.
        let notes = find(NOTE_OWNER_AMDGPU, NT_AMDGPU_METADATA, true)?;
        let mut metadata: Option<Metadata<'data>> = None;
        for &(desc, offset) in &notes {
            let m = Metadata::read(desc, offset, depth)?;
            match &mut metadata {
                None => metadata = Some(m),
                Some(first) => first.absorb(m, offset)?,
            }
        }
        // Code object V2: YAML metadata in an "AMD" note.
        let v2_kernels = if notes.is_empty() && depth == Depth::Full {
            match find(NOTE_OWNER_AMD, NT_AMD_HSA_METADATA, false)?.first() {
                Some(&(desc, offset)) => metadata_v2::parse(desc, offset)?,
                None => Vec::new(),
            }
        } else {
            Vec::new()
        };
        Ok(CodeObject {
            data,
            header,
            metadata,
            metadata_offset: notes.first().map(|&(_, offset)| offset),
            v2_kernels,
        })
    }

    /// The ELF header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Whether the object's `e_flags` are those of a code object built for `id`
    /// (see [`EFlags::check_target`]).
    pub fn check_target(&self, id: &TargetId) -> Result<(), TargetMismatch> {
        self.header.check_target(id)
    }

    /// The bytes the code object was parsed from.
    pub fn data(&self) -> &'data [u8] {
        self.data
    }

    /// `amdgcn` for 64-bit code objects, `r600` for 32-bit ones.
    pub fn arch(&self) -> Arch {
        self.header.arch
    }

    /// `EI_OSABI`.
    pub fn os_abi(&self) -> OsAbi {
        self.header.os_abi
    }

    /// `EI_ABIVERSION` as found.
    pub fn abi_version(&self) -> u8 {
        self.header.abi_version
    }

    /// The HSA code-object version (from `EI_ABIVERSION`); `None` for non-HSA objects.
    pub fn code_object_version(&self) -> Option<CodeObjectVersion> {
        self.header.version
    }

    /// `e_type` (1 relocatable, 3 shared object: what the HSA loader takes).
    pub fn elf_type(&self) -> u16 {
        self.header.e_type
    }

    /// The raw `e_flags`.
    pub fn e_flags(&self) -> u32 {
        self.header.flags.raw()
    }

    /// `e_flags` decoded with the layout of this object's version.
    pub fn flags(&self) -> &EFlags {
        &self.header.flags
    }

    /// The processor `e_flags` names, if known.
    pub fn processor(&self) -> Option<&'static Processor> {
        self.header.flags.processor()
    }

    /// The target ID `e_flags` describe.
    pub fn target_id(&self) -> Result<TargetId, TargetIdFromFlagsError> {
        self.header.flags.target_id()
    }

    /// The decoded `NT_AMDGPU_METADATA` note, if the object has one (V3 and later).
    pub fn metadata(&self) -> Option<&Metadata<'data>> {
        self.metadata.as_ref()
    }

    /// Byte offset of the metadata note's descriptor in the code object.
    pub fn metadata_offset(&self) -> Option<u64> {
        self.metadata_offset
    }

    /// The kernels of a code object V2 `NT_AMD_HSA_METADATA` YAML note (empty for V3+ objects,
    /// which list theirs in [`CodeObject::kernels`]).
    pub fn v2_kernels(&self) -> &[V2Kernel] {
        &self.v2_kernels
    }

    /// The kernels listed in the metadata (empty without metadata).
    pub fn kernels(&self) -> &[Kernel<'data>] {
        self.metadata.as_ref().map_or(&[], |m| m.kernels())
    }

    /// The kernel descriptors (`<kernel>.kd` symbols), read on demand. Empty for r600 objects
    /// and for objects without section headers.
    pub fn kernel_descriptors(&self) -> Result<Vec<KernelDescriptor<'data>>, Error> {
        if self.header.arch != Arch::Amdgcn {
            return Ok(Vec::new());
        }
        descriptor::find(self.data, header64(self.data)?, self.header.version)
    }

    /// Everything that does not fit the rules: `e_flags` issues, a metadata target that names
    /// another target ID, an unknown code-object version. Empty for objects LLVM writes.
    pub fn issues(&self) -> Vec<Issue> {
        let mut out: Vec<Issue> = self
            .header
            .flags
            .issues()
            .into_iter()
            .map(Issue::EFlags)
            .collect();
        if let Some(v) = self.header.version {
            if !v.is_known() {
                out.push(Issue::UnknownVersion(v));
            }
        }
        out.extend(self.target_mismatch());
        self.descriptor_issues(&mut out);
        out
    }

    /// [`Issue::TargetMismatch`] when the metadata's `amdhsa.target` (code object V4 and
    /// later) names another target ID than `e_flags`, or names one while `e_flags` name no
    /// processor gfxkit knows: the two say what the object was built for, and one of them is
    /// wrong (damaged). `None` when they agree or either is absent.
    pub fn target_mismatch(&self) -> Option<Issue> {
        // Code object V4+ metadata spells the target ID as e_flags do; V3 used another syntax.
        let v4_or_later = self
            .header
            .version
            .is_some_and(|v| v >= CodeObjectVersion::V4);
        let meta = self.metadata().and_then(|m| m.target_id_str())?;
        if !v4_or_later {
            return None;
        }
        let Ok(id) = self.target_id() else {
            // e_flags name no known processor while the metadata names a known target.
            return TargetId::parse(meta).ok().map(|_| Issue::TargetMismatch {
                e_flags: format!("{:#x}", self.e_flags()),
                metadata: meta.to_owned(),
            });
        };
        match TargetId::parse(meta) {
            Ok(m) if m == id => None,
            // LLVM 22's `gfx1250:xnack+`: e_flags "on" read as the bare processor (LLVM
            // main's default writes "on" too), and the flags fit the metadata's ID.
            Ok(m) if m.legacy_xnack().is_some() && self.header.check_target(&m).is_ok() => None,
            _ => Some(Issue::TargetMismatch {
                e_flags: id.to_string(),
                metadata: meta.to_owned(),
            }),
        }
    }

    /// Metadata kernels against their kernel descriptors.
    fn descriptor_issues(&self, out: &mut Vec<Issue>) {
        if self.kernels().is_empty() {
            return;
        }
        let descriptors = match self.kernel_descriptors() {
            Ok(d) => d,
            Err(e) => {
                out.push(Issue::Descriptors(e.to_string()));
                return;
            }
        };
        if descriptors.is_empty() {
            // No symbol table (a stripped object): nothing to compare.
            return;
        }
        let by_symbol: HashMap<&str, &KernelDescriptor<'_>> =
            descriptors.iter().map(|d| (d.symbol, d)).collect();
        for k in self.kernels() {
            let Some(symbol) = k.symbol else { continue };
            let Some(d) = by_symbol.get(symbol) else {
                out.push(Issue::MissingDescriptor {
                    kernel: k.name.to_owned(),
                    symbol: symbol.to_owned(),
                });
                continue;
            };
            for (field, meta, desc) in [
                (
                    "group_segment_fixed_size",
                    k.group_segment_fixed_size,
                    d.group_segment_fixed_size,
                ),
                (
                    "private_segment_fixed_size",
                    k.private_segment_fixed_size,
                    d.private_segment_fixed_size,
                ),
                (
                    "kernarg_segment_size",
                    k.kernarg_segment_size,
                    d.kernarg_size,
                ),
            ] {
                if let Some(meta) = meta {
                    if meta != u64::from(desc) {
                        out.push(Issue::DescriptorMismatch {
                            kernel: k.name.to_owned(),
                            field,
                            metadata: meta,
                            descriptor: desc.into(),
                        });
                    }
                }
            }
        }
    }
}

/// Checks the identification bytes and returns `EI_CLASS` (32- or 64-bit).
fn elf_class(data: &[u8]) -> Result<u8, Error> {
    if data.len() < 4 || &data[..4] != b"\x7fELF" {
        if !data.is_empty() && b"\x7fELF".starts_with(data) {
            return Err(truncated("ELF identification", 0, 16, data.len()));
        }
        return Err(Error::new(ErrorKind::NotElf, 0));
    }
    if data.len() < 16 {
        return Err(truncated("ELF identification", 0, 16, data.len()));
    }
    let encoding = data[5];
    if encoding != ELFDATA2LSB {
        return Err(Error::new(
            ErrorKind::BadIdent {
                detail: format!("EI_DATA is {encoding}, AMDGPU code objects are little-endian (1)"),
            },
            5,
        ));
    }
    match data[4] {
        c @ (ELFCLASS32 | ELFCLASS64) => Ok(c),
        other => Err(Error::new(
            ErrorKind::BadIdent {
                detail: format!("EI_CLASS is {other}, expected 1 (32-bit) or 2 (64-bit)"),
            },
            4,
        )),
    }
}

/// The ELF header's own size, the entry sizes of both header tables, and each segment's
/// bytes, as a loader reads them: the ELF rules every object meets, so that a damaged
/// `e_ehsize`, `e_phentsize`, `e_shentsize` or `e_phnum` is an error rather than a code object
/// that reads alike.
fn check_tables<H: FileHeader<Endian = LittleEndian>>(data: &[u8], h: &H) -> Result<(), Error> {
    let e = LittleEndian;
    let ehsize = u64::from(h.e_ehsize(e));
    let own = std::mem::size_of::<H>() as u64;
    if ehsize != own {
        return Err(bad_elf(
            format!("e_ehsize is {ehsize}, the ELF header of this class is {own} bytes"),
            if own == EHDR64_SIZE { 0x34 } else { 0x28 },
        ));
    }
    let phentsize_at = if own == EHDR64_SIZE { 0x36 } else { 0x2a };
    let phdrs = h
        .program_headers(e, data)
        .map_err(|err| bad_elf(format!("program header table: {err}"), phentsize_at))?;
    for (i, ph) in phdrs.iter().enumerate() {
        let (offset, size) = (ph.p_offset(e).into(), ph.p_filesz(e).into());
        if offset
            .checked_add(size)
            .map_or(true, |end| end > data.len() as u64)
        {
            return Err(bad_elf(
                format!(
                    "segment {i} ({size} bytes at {offset:#x}) runs past the end of the \
                     {}-byte object",
                    data.len()
                ),
                h.e_phoff(e).into(),
            ));
        }
    }
    let sections = h
        .section_headers(e, data)
        .map_err(|err| bad_elf(format!("section header table: {err}"), phentsize_at + 4))?;
    // The program header table is its own bytes: no section's contents lie in it (a raised
    // `e_phnum` would otherwise read section bytes as segments).
    let phoff: u64 = h.e_phoff(e).into();
    let phend = phoff.saturating_add(std::mem::size_of_val(phdrs) as u64);
    for ph in phdrs {
        // PT_PHDR describes the program header table itself. It may also cover empty slots
        // after the table: entries of zeros (PT_NULL) that a linker sized the table for and
        // then left empty (AMD's LLD 23, for a code object without kernels, sizes the table
        // before it drops the empty executable segment). A slot that is not all zeros is a
        // segment that `e_phnum` no longer counts.
        let filesz: u64 = ph.p_filesz(e).into();
        let offset: u64 = ph.p_offset(e).into();
        let empty_slots = filesz
            .checked_sub(phend - phoff)
            .filter(|extra| extra % u64::from(h.e_phentsize(e)).max(1) == 0)
            .and_then(|extra| {
                data.get(usize::try_from(phend).ok()?..)?
                    .get(..usize::try_from(extra).ok()?)
            })
            .is_some_and(|slots| slots.iter().all(|&b| b == 0));
        if ph.p_type(e) == object::elf::PT_PHDR && (offset != phoff || !empty_slots) {
            return Err(bad_elf(
                format!(
                    "PT_PHDR says the program header table is {filesz} bytes at {offset:#x}, \
                     e_phoff and e_phnum say {} bytes at {phoff:#x}",
                    phend - phoff
                ),
                phentsize_at + 2,
            ));
        }
    }
    let loads: Vec<(u64, u64)> = phdrs
        .iter()
        .filter(|ph| ph.p_type(e) == object::elf::PT_LOAD)
        .map(|ph| {
            let o: u64 = ph.p_offset(e).into();
            (o, o.saturating_add(ph.p_filesz(e).into()))
        })
        .collect();
    let dynamic = h.e_type(e) == object::elf::ET_DYN;
    for (i, sh) in sections.iter().enumerate() {
        let (offset, size): (u64, u64) = (sh.sh_offset(e).into(), sh.sh_size(e).into());
        if sh.sh_type(e) == object::elf::SHT_NOBITS || size == 0 {
            continue;
        }
        // A loaded object's allocated sections are in its loaded segments.
        let flags: u64 = sh.sh_flags(e).into();
        let alloc = flags & u64::from(object::elf::SHF_ALLOC) != 0;
        let end = offset.saturating_add(size);
        if dynamic && alloc && !loads.iter().any(|&(a, b)| a <= offset && end <= b) {
            return Err(bad_elf(
                format!(
                    "section {i} ({size} bytes at {offset:#x}) is allocated but in no PT_LOAD \
                     segment of the {} program headers",
                    phdrs.len()
                ),
                phentsize_at + 2,
            ));
        }
        if offset < phend && phoff < offset.saturating_add(size) {
            return Err(bad_elf(
                format!(
                    "the program header table ({} entries at {phoff:#x}) overlaps section {i} \
                     ({size} bytes at {offset:#x}): e_phnum or e_phoff is damaged",
                    phdrs.len()
                ),
                phentsize_at + 2,
            ));
        }
    }
    Ok(())
}

fn header64(data: &[u8]) -> Result<&FileHeader64<LittleEndian>, Error> {
    check_len(data, EHDR64_SIZE)?;
    FileHeader64::<LittleEndian>::parse(data).map_err(|e| bad_elf(format!("ELF header: {e}"), 0))
}

fn header32(data: &[u8]) -> Result<&FileHeader32<LittleEndian>, Error> {
    check_len(data, EHDR32_SIZE)?;
    FileHeader32::<LittleEndian>::parse(data).map_err(|e| bad_elf(format!("ELF header: {e}"), 0))
}

fn truncated(what: &'static str, offset: u64, needed: u64, available: usize) -> Error {
    Error::new(
        ErrorKind::Truncated {
            what,
            needed,
            available: available as u64,
        },
        offset,
    )
}

fn check_len(data: &[u8], needed: u64) -> Result<(), Error> {
    if (data.len() as u64) < needed {
        return Err(truncated("ELF header", 0, needed, data.len()));
    }
    Ok(())
}

fn bad_elf(detail: String, offset: u64) -> Error {
    Error::new(ErrorKind::BadElf { detail }, offset)
}

/// The descriptor of the first note of `owner` and `n_type` and its offset: from `SHT_NOTE`
/// sections, or from `PT_NOTE` segments when the object has no section headers.
fn find_notes<'data, H: FileHeader<Endian = LittleEndian>>(
    data: &'data [u8],
    header: &'data H,
    owner: &str,
    n_type: u32,
    all: bool,
) -> Result<Vec<(&'data [u8], u64)>, Error> {
    let e = LittleEndian;
    // Offsets of the `e_shoff` and `e_phoff` fields: where an error about a table that does not
    // fit in the file is reported (the table's own offset may lie past the end).
    let (shoff_field, phoff_field) = if header.is_type_64() {
        (0x28, 0x20)
    } else {
        (0x20, 0x1c)
    };
    let shoff: u64 = header.e_shoff(e).into();
    let sections = header.section_headers(e, data).map_err(|err| {
        bad_elf(
            format!("section header table at {shoff:#x}: {err}"),
            shoff_field,
        )
    })?;
    let shentsize = u64::from(header.e_shentsize(e));
    let mut found = Vec::new();
    for (i, sh) in sections.iter().enumerate() {
        // Inside the file: the table was read.
        let entry_at = shoff + i as u64 * shentsize;
        scan_notes(
            data,
            sh.sh_offset(e).into(),
            entry_at,
            sh.notes(e, data),
            owner,
            n_type,
            all,
            &mut found,
        )?;
        if !all && !found.is_empty() {
            return Ok(found);
        }
    }
    if sections.is_empty() {
        let phoff: u64 = header.e_phoff(e).into();
        let segments = header.program_headers(e, data).map_err(|err| {
            bad_elf(
                format!("program header table at {phoff:#x}: {err}"),
                phoff_field,
            )
        })?;
        let phentsize = u64::from(header.e_phentsize(e));
        for (i, ph) in segments.iter().enumerate() {
            let entry_at = phoff + i as u64 * phentsize;
            scan_notes(
                data,
                ph.p_offset(e).into(),
                entry_at,
                ph.notes(e, data),
                owner,
                n_type,
                all,
                &mut found,
            )?;
            if !all && !found.is_empty() {
                return Ok(found);
            }
        }
    }
    Ok(found)
}

/// Adds to `found` the descriptors (and their offsets) of the notes of `owner` and `n_type`
/// in one note section or segment (`notes` is `None` for regions that hold no notes) starting
/// at `region_offset`, described by the header at `header_at`: every one with `all`, else the
/// first.
#[allow(clippy::too_many_arguments)]
fn scan_notes<'data, H: FileHeader<Endian = LittleEndian>>(
    data: &'data [u8],
    region_offset: u64,
    header_at: u64,
    notes: object::read::Result<Option<object::read::elf::NoteIterator<'data, H>>>,
    owner: &str,
    n_type: u32,
    all: bool,
    found: &mut Vec<(&'data [u8], u64)>,
) -> Result<(), Error> {
    let Some(mut notes) = notes.map_err(|err| {
        // A region that does not fit in the file is reported at the header that claims it.
        let at = if region_offset < data.len() as u64 {
            region_offset
        } else {
            header_at
        };
        bad_elf(format!("note region at {region_offset:#x}: {err}"), at)
    })?
    else {
        return Ok(());
    };
    while let Some(note) = notes
        .next()
        .map_err(|err| bad_elf(format!("note: {err}"), region_offset))?
    {
        if note.n_type(LittleEndian) == n_type && note.name() == owner.as_bytes() {
            let desc = note.desc();
            // The descriptor is a sub-slice of `data`: its offset is the pointer difference.
            let offset = (desc.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize) as u64;
            found.push((desc, offset));
            if !all {
                return Ok(());
            }
        }
    }
    Ok(())
}
