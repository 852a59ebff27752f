//! The AMDGPU memory model as data.
#![forbid(unsafe_code)]

pub mod case;
pub mod config;
pub mod conformance;

pub use case::{AddrSpace, Case, Flags, Kind, Mmra, Ordering, Scope, ScopeLevel};
pub use config::{Config, ConfigError, Os};
pub mod family;
pub mod model;

pub use model::{sequence, Invalid, Sequence, Step, StepKind};
