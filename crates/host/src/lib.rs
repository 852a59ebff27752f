//! Device code inside host binaries.
#![forbid(unsafe_code)]
