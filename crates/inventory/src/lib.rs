//! What device code a file holds and what it means: the one inventory that every gfxkit
//! command (`list`, `extract`, `verify`, `select`, `doctor`, `size`) and the Python package
//! read their answers from.
//!
//! The crates below this one know formats: [`gfxkit_bundle`] bundles and CCOB,
//! [`gfxkit_host`] where device code sits in host files and what the HIP runtime would load,
//! [`gfxkit_code_object`] code-object headers, [`gfxkit_shrink`] rewriting. This crate puts
//! them together into answers, with typed results that serialise (serde) to exactly the JSON
//! the CLI prints, so the CLI's `--json` and the Python `.to_dict()` are one serialisation.
//! It does no file I/O: callers hand it a file's bytes (memory-mapped by the CLI).
//!
//! Module map:
//! - [`mod@inventory`]: [`Inventory::of`] — the file's kind, units of device code with where
//!   they are, wrappers, kpack references, problems; found once, borrowed from the input.
//! - [`locate`]: where the units are ([`locate::locate`], [`locate::find_bundles`]), their
//!   entries from the header alone ([`locate::read_header`]), their payloads
//!   ([`locate::with_payloads`]), and the rule that a code object's `e_flags` must fit the
//!   target ID its entry names ([`locate::check_payload`]).
//! - [`kpack`]: binaries split by ROCm's kpack seen through their archives (opened by the
//!   caller), and `.kpack` files: listing, the loader's choice, verification, sizes, extraction.
//! - [`list`]: the listing `gfxkit list` prints ([`list::FileListing`]).
//! - [`extract`]: which entries a requested target selects ([`extract::pick`]) and their
//!   file names.
//! - [`verify`](mod@verify): the verification rules, as typed [`verify::Finding`]s.
//! - [`select`](mod@select): the code object the HIP runtime would load per unit.
//! - [`census`]: the rows of a census: one per code object and one per input, and what each
//!   file lacks of the required targets.
//! - [`check`]: the build gate: every required target runs, nothing beyond the list.
//! - [`doctor`](mod@doctor): whether a library runs on a device ([`doctor::verdict`]).
//! - [`remedy`]: what to do where it does not (an override, a generic target, a package).
//! - [`release`]: the answers for one ROCm release (`--rocm`): what it refuses in a file.
//! - [`inspect`](mod@inspect): one code object, as `gfxkit inspect --json` prints it.
//! - [`prune`](mod@prune): the outcome of `prune` and `recompress` ([`prune::PruneOutcome`]).
//! - [`diff`]: what changed in device code between two builds, file by file.
//! - [`digest`]: every code object of a file with its SHA-256, size and kernels.
//! - [`duplicates`]: identical code objects stored more than once (`size --duplicates`).
//! - [`size`]: device bytes per architecture, file and bundle ([`size::build_report`]).
//! - [`kernels`]: every kernel of a file, one row each ([`kernels::KernelRow`]), as
//!   `gfxkit kernels` lists them.
//! - [`error`]: [`Error`] = [`ErrorKind`] + context, with the entry and offset it names.
//!
//! ```
//! use gfxkit_inventory::{list, verify, Inventory};
//!
//! // A bundle as clang writes it: a host entry and one for gfx90a:xnack+ (the payload is
//! // not a real code object, which verification reports).
//! let bytes = gfxkit_bundle::write_bundle(
//!     &[("host-x86_64-unknown-linux--", b""), ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"code")],
//!     4096,
//! )
//! .unwrap();
//! let inv = Inventory::of(&bytes);
//! assert_eq!(inv.units.len(), 1);
//!
//! let listing = list::list("app.hipfb", &inv, false);
//! let e = &listing.bundles[0].entries[1];
//! assert_eq!(e.target_id.as_deref(), Some("gfx90a:xnack+"));
//! assert_eq!((e.offset, e.size), (4096, 4));
//!
//! let report = verify::verify("app.hipfb", &inv).unwrap();
//! assert!(!report.ok);
//! assert!(matches!(report.problems[0].kind, verify::FindingKind::NotCodeObject { .. }));
//!
//! // The JSON `gfxkit list --json` prints for this file.
//! let json = serde_json::to_value(&listing).unwrap();
//! assert_eq!(json["bundles"][0]["format"], "uncompressed");
//! ```
#![forbid(unsafe_code)]

pub mod census;
pub mod check;
pub mod database;
pub mod diff;
pub mod digest;
pub mod doctor;
pub mod duplicates;
pub mod error;
pub mod extract;
pub mod inspect;
pub mod inventory;
pub mod kernels;
pub mod kpack;
pub mod list;
pub mod locate;
pub mod prune;
pub mod release;
pub mod remedy;
pub mod select;
pub mod size;
pub mod units;
pub mod verify;

pub use error::{Error, ErrorKind, Result};
pub use inventory::Inventory;
