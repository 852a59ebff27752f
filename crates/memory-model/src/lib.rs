//! The AMDGPU memory model as data.
#![forbid(unsafe_code)]
