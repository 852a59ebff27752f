//! Specification data for AMD GPU device code, as tables.
//!
//! This crate holds facts, not logic: the processor table (one row per processor, every lookup
//! derived from the rows), the target features, and the `EF_AMDGPU_*` ELF header constants per
//! code-object version. Sources: LLVM's `AMDGPUUsage.rst` ("Processors", "ELF Header"),
//! `llvm/include/llvm/BinaryFormat/ELF.h` and `AMDGPUTargetParser.def` of LLVM 19 to LLVM main (late 2026).
//!
//! Module map:
//! - [`processor`]: the [`Processor`] row type and its lookups.
//! - [`processors`]: the table itself ([`PROCESSORS`]).
//! - [`elf`]: `EF_AMDGPU_*` constants and code-object versions.
//! - [`isa`]: processors of one instruction set ([`isa::SAME_ISA`]: code for one runs on the
//!   others).
//! - [`hardware`]: per-processor hardware limits (register files, LDS, wave slots), the
//!   `hw` column of the table.
//! - [`rocm`]: what each ROCm release's runtime loads (code-object versions, generic targets,
//!   CCOB versions, kpack), one row per capability with its source.
//! - [`row`]: a row as gfxkit serialises it ([`ProcessorRow`], `gfxkit target list --json`).
//!
//! ```
//! use gfxkit_spec::{Processor, Feature};
//! let p = Processor::by_name("carrizo").unwrap();
//! assert_eq!(p.name, "gfx801");
//! assert!(p.supports(Feature::Xnack));
//! assert_eq!(Processor::by_mach(0x2f).unwrap().name, "gfx906");
//! let generic = Processor::by_name("gfx1030").unwrap().generic().unwrap();
//! assert_eq!(generic.name, "gfx10-3-generic");
//! ```

#![forbid(unsafe_code)]

pub mod elf;
pub mod hardware;
pub mod isa;
pub mod processor;
pub mod processors;
pub mod rocm;
pub mod row;

pub use elf::{CodeObjectVersion, EFlagsLayout, OsAbi};
pub use hardware::{Generation, HardwareLimits};
pub use processor::{Arch, DeviceKind, Feature, LlvmReleases, MemoryModelFamily, Processor};
pub use processors::PROCESSORS;
pub use row::ProcessorRow;
