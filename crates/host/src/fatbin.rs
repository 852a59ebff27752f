//! How a found bundle is stored ([`BundleFormat`]). Sections holding bundles back to back
//! (`.hip_fatbin`) are split by the bundle crate ([`gfxkit_bundle::split`]): each bundle
//! starts where the previous one ends, after zero padding to the section's input alignment
//! (4096 with the classic HIP driver, 16 with the new one; any alignment is accepted).

pub use gfxkit_bundle::{BundleFormat, CompressionMethod};

/// Magic of an uncompressed offload bundle (the bundle crate's).
pub const BUNDLE_MAGIC: &[u8; 24] = gfxkit_bundle::read::MAGIC;
/// Magic of a compressed offload bundle (the bundle crate's).
pub const CCOB_MAGIC: &[u8; 4] = gfxkit_bundle::compressed::MAGIC;

/// Whether `data` starts with a bundle magic (uncompressed or CCOB).
pub fn starts_with_bundle(data: &[u8]) -> bool {
    gfxkit_bundle::detect(data).is_some()
}

/// Names of the sections holding bundles back to back: `.hip_fatbin` (ELF files, COFF
/// objects) and `.hip_fat`, its spelling in PE images, whose section names hold 8 bytes.
pub const FATBIN_SECTIONS: [&str; 2] = [".hip_fatbin", ".hip_fat"];

/// Names of the sections holding the 24-byte wrapper records: `.hipFatBinSegment` (ELF files,
/// COFF objects) and `.hipFatB`, its 8-byte spelling in PE images.
pub const WRAPPER_SECTIONS: [&str; 2] = [".hipFatBinSegment", ".hipFatB"];

/// Names of the sections holding NVIDIA device code, CUDA fat binaries: `.nv_fatbin` (ELF
/// files linked by nvcc), `__nv_relfatbin` (ELF objects and archives built for relocatable
/// device code) and `.nv_fatb`, the 8-byte spelling in PE images. No AMD GPU runs what they
/// hold; gfxkit names them so that a CUDA build found where a ROCm build was expected is told
/// apart from a file without device code.
pub const NVIDIA_SECTIONS: [&str; 3] = [".nv_fatbin", "__nv_relfatbin", ".nv_fatb"];

/// Whether `name` is a section holding NVIDIA device code ([`NVIDIA_SECTIONS`]).
pub fn is_nvidia_section(name: &[u8]) -> bool {
    NVIDIA_SECTIONS.iter().any(|n| n.as_bytes() == name)
}

/// Whether `name` is a section holding bundles back to back, under either spelling
/// ([`FATBIN_SECTIONS`]).
pub fn is_fatbin_section(name: &str) -> bool {
    FATBIN_SECTIONS.contains(&name)
}

/// Whether `name` is a section holding wrapper records, under either spelling
/// ([`WRAPPER_SECTIONS`]).
pub fn is_wrapper_section(name: &str) -> bool {
    WRAPPER_SECTIONS.contains(&name)
}
