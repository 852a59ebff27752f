//! Offload bundles.
#![forbid(unsafe_code)]
