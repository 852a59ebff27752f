//! AMDGPU code objects: the ELF header (`e_flags` per code-object version), the target ID they
//! were built for, and the kernels listed in their `NT_AMDGPU_METADATA` note.
//!
//! Module map:
//! - [`code_object`]: [`CodeObject::parse`] reads an AMDGPU ELF (64-bit amdgcn, 32-bit r600)
//!   and hands back a view borrowing from the input: OS ABI, code-object version, `e_flags`,
//!   processor, target ID, metadata, kernels, and [`CodeObject::issues`].
//! - [`eflags`]: [`EFlags`] decodes `e_flags` of every version (V2 to V6; never fails, unknown
//!   values are kept as [`ElfMach`] and reported) and encodes a [`TargetId`] for a version.
//! - [`metadata`]: the MessagePack metadata note: [`Metadata`], [`Kernel`], [`KernelArg`].
//! - [`metadata_v2`]: code object V2 YAML metadata ([`V2Kernel`]).
//! - [`descriptor`]: kernel descriptors (`<kernel>.kd`): [`KernelDescriptor`], read on demand by
//!   [`CodeObject::kernel_descriptors`] and compared with the metadata by [`CodeObject::issues`].
//! - [`descriptor_table`]: the descriptor's fields as data (word, bits, generations, how
//!   llvm-objdump prints them); [`KernelDescriptor::fields`] decodes by it and
//!   [`descriptor::encode`] is the inverse.
//! - [`kernels`]: one owned record per kernel ([`KernelSummary`]: descriptor, resources,
//!   occupancy, arguments) for listings; [`demangle`].
//! - [`resources`]: register, LDS and scratch use and the occupancy they allow
//!   ([`occupancy`]), from the processor's hardware limits.
//! - [`extent`]: [`extent::truncation`]: whether an ELF file's header, header tables or a
//!   section's bytes run past the end of the data (hosts and code objects alike).
//! - [`error`]: [`Error`]: a typed [`ErrorKind`] plus the byte offset where it was found.
//!
//! The constants come from [`gfxkit_spec::elf`]; processors from [`gfxkit_spec::PROCESSORS`].
//!
//! ```
//! use gfxkit_code_object::{CodeObject, EFlags};
//! use gfxkit_spec::CodeObjectVersion;
//! use gfxkit_target_id::TargetId;
//!
//! // e_flags of a code object V5 built for gfx90a:sramecc+:xnack-.
//! let id = TargetId::parse("gfx90a:xnack-:sramecc+").unwrap();
//! let raw = EFlags::encode(&id, CodeObjectVersion::V5).unwrap();
//! assert_eq!(raw, 0xe3f);
//! let flags = EFlags::decode(raw, CodeObjectVersion::V5);
//! assert_eq!(flags.target_id().unwrap().to_string(), "gfx90a:sramecc+:xnack-");
//!
//! // Unknown processors still decode.
//! let odd = EFlags::decode(0x1fe, CodeObjectVersion::V5);
//! assert_eq!(odd.mach().to_string(), "unknown (0xfe)");
//! assert!(odd.target_id().is_err());
//!
//! // Parsing checks the input and says where it is wrong.
//! let err = CodeObject::parse(b"\x7fELF\x02\x01").unwrap_err();
//! assert_eq!(err.offset(), 0);
//! assert!(err.to_string().contains("truncated"));
//! ```

#![forbid(unsafe_code)]

pub mod code_object;
pub mod descriptor;
pub mod descriptor_table;
pub mod eflags;
pub mod error;
pub mod extent;
pub mod kernels;
pub mod metadata;
pub mod metadata_v2;
pub mod resources;

pub use code_object::{CodeObject, Header, Issue};
pub use descriptor::{EncodeDescriptorError, FieldValue, KernelDescriptor, ReservedBits};
pub use eflags::{
    EFlags, EFlagsIssue, ElfMach, EncodeError, FeatureFlag, TargetIdFromFlagsError, TargetMismatch,
};
pub use error::{Error, ErrorKind};
pub use gfxkit_spec::{CodeObjectVersion, EFlagsLayout, OsAbi};
pub use gfxkit_target_id::TargetId;
pub use kernels::{demangle, summaries, ArgSummary, DescriptorFields, KernelSource, KernelSummary};
pub use metadata::{Kernel, KernelArg, Metadata, MetadataJson};
pub use metadata_v2::{V2Arg, V2Kernel};
pub use resources::{occupancy, Limiter, Occupancy, OccupancyInput};
