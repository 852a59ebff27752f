//! AMDGPU code objects.
#![forbid(unsafe_code)]
