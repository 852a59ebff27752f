//! The AMDGPU memory model as data: for a target configuration and an LLVM memory
//! instruction, the ordered code sequence LLVM emits (the memory instruction with its
//! cache-policy bits, the waits, the cache invalidates and write-backs), each step with the
//! reason it is there, as LLVM 22 (the default) or LLVM 19 lowers it.
//!
//! Module map:
//! - [`case`]: the dimensions of a case (instruction, ordering, scope, address space, flags,
//!   fence restriction) and their text form `kind;as=..;ord=..;...`.
//! - [`ir`]: the instruction written as LLVM IR text, parsed into its case.
//! - [`config`]: target configurations (processor or family, `cumode`, `tgsplit`, OS,
//!   "skip cache invalidations", LLVM release).
//! - [`release`]: the LLVM releases and their release-wide facts.
//! - [`family`]: the per-family facts as a table, one row per family and range of releases
//!   (bits per scope, invalidates, write-backs, instruction names).
//! - [`model`]: applies the facts to a case: [`sequence`].
//! - [`table`]: every case of a configuration; Markdown rendering.
//! - [`reorder`]: the single-thread optimization constraints.
//! - [`conformance`]: LLVM IR generation and assembly normalization for the llc harness.
//!
//! Conformance: `scripts/memmodel-sweep` compiles every case of 29 configurations with
//! llc 19 and of 31 with ROCm 7.2.2's LLVM 22 (GFX12.5 with its `cluster` scope:
//! [`Config::cases`]) and records the outcomes in `expected/` and `expected/llvm22/`; the `llc_recorded` test compares the model with every recorded outcome
//! (disagreements must be listed in `disagreements.txt` with a reason), and the `llc_live`
//! test compiles a sample with each compiler again in every run.
//!
//! ```
//! use gfxkit_memory_model::{sequence, Case, Config};
//! use gfxkit_spec::MemoryModelFamily;
//! let cfg = Config::for_family(MemoryModelFamily::Gfx10).unwrap();
//! let case: Case = "load_atomic;as=global;ord=acquire;scope=agent".parse().unwrap();
//! let seq = sequence(&cfg, &case).unwrap();
//! assert_eq!(
//!     seq.asm(),
//!     ["global_load_dword glc dlc", "s_waitcnt vmcnt(0)", "buffer_gl1_inv", "buffer_gl0_inv"]
//! );
//! ```
#![forbid(unsafe_code)]

pub mod case;
pub mod config;
pub mod conformance;
pub mod family;
pub mod ir;
pub mod model;
pub mod release;
pub mod reorder;
pub mod table;

pub use case::{AddrSpace, Case, Flags, Kind, Mmra, Ordering, Scope, ScopeLevel};
pub use config::{Config, ConfigError, Os};
pub use ir::{parse_instruction, IrParseError};
pub use model::{sequence, Invalid, Sequence, Step, StepKind};
pub use release::Llvm;
pub use reorder::{may_move_before, Constraint};
