//! The one model of a unit of device code ([`Unit`]): an offload bundle, the
//! `__CLANG_OFFLOAD_BUNDLE__` sections of an object bundle, a standalone code object or an
//! OffloadBinary image, with where it is and its bytes. [`Discovery::units`] makes them from
//! what host discovery found; a standalone bundle file's bundles are made by the reader of
//! such files. What the HIP runtime reads of a unit to choose a code object is
//! [`Unit::load_view`] ([`crate::entries`]).

#[cfg(doc)]
use crate::discover::WrapperTarget;
use crate::discover::{Discovery, FoundBundle};
use crate::fatbin::BundleFormat;
use crate::problem::{Location, Problem, Severity};
use gfxkit_bundle::compressed as ccob;
use gfxkit_bundle::limits::Limits;
use gfxkit_bundle::{EntryId, EntryTarget, OffloadKind, Span};
use gfxkit_bytes::Cursor;
use gfxkit_target_id::triple::AmdArch;

/// What a unit of device code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// An offload bundle, uncompressed or CCOB (see [`Unit::ccob`]).
    Bundle,
    /// `__CLANG_OFFLOAD_BUNDLE__<id>` sections of a host object; entries in [`Unit::loose`].
    ObjectBundle,
    /// A standalone AMDGPU code object: one entry named from its `e_flags`.
    CodeObject,
    /// An OffloadBinary image (`.llvm.offloading`): one entry named from its triple and arch.
    OffloadImage,
}

/// An entry of a unit that is not a bundle, with its payload in place.
#[derive(Debug, Clone)]
pub struct LooseEntry<'a> {
    /// The entry ID (as stored for object bundles; made from the image or code object
    /// otherwise).
    pub id: String,
    /// Offset of the payload from the start of the unit.
    pub offset: u64,
    /// The payload.
    pub payload: &'a [u8],
    /// File-name extension when extracted (`co`, `bc` for bitcode images, `spv` for SPIR-V).
    pub ext: &'static str,
}

/// A unit of device code: where it is in its file, what it is, its bytes, and for a unit that
/// is not a bundle its entries. The one model of a unit every command reads: `list`, `verify`
/// and `extract` its bytes and entries; `select`, `doctor` and `--rocm` what the HIP runtime
/// reads of it ([`Unit::load_view`]).
#[derive(Debug, Clone)]
pub struct Unit<'a> {
    /// Index among the units of the file (bundles first, in file order).
    pub index: usize,
    /// Byte offset of the unit in the file.
    pub offset: u64,
    /// The unit's bytes (compressed ones included; empty for an object bundle, whose entries
    /// are in [`Unit::loose`]).
    pub bytes: &'a [u8],
    /// Its size in the file (for an object bundle, the size of the host object).
    pub size: u64,
    /// The CCOB header, for compressed bundles.
    pub ccob: Option<ccob::Header>,
    /// Archive member path (outermost first, joined with `/`), if inside an archive.
    pub member: Option<String>,
    /// ELF section holding it (`.hip_fatbin`, `.llvm.offloading`, ...), if any.
    pub section: Option<String>,
    /// What it is.
    pub form: Form,
    /// The entries of a unit that is not a bundle (empty for bundles: read their header).
    pub loose: Vec<LooseEntry<'a>>,
    /// The limits the unit was found under, and is read under (its header, its payloads).
    pub limits: Limits,
}

impl<'a> Unit<'a> {
    /// The unit's bytes, located at its offset in the file: what its readers are handed, so
    /// that their errors name file offsets.
    pub fn cursor(&self) -> Cursor<'a> {
        Cursor::at(self.bytes, self.offset)
    }

    /// How the unit is stored, for a bundle: CCOB (with its header's version and method) or
    /// uncompressed. `None` for a unit that is not a bundle.
    pub fn format(&self) -> Option<BundleFormat> {
        (self.form == Form::Bundle).then(|| {
            self.ccob
                .as_ref()
                .map_or(BundleFormat::Uncompressed, BundleFormat::of_header)
        })
    }

    /// Where the unit is: its member, section, file offset and size (for an object bundle,
    /// the host object holding its sections).
    pub fn location(&self) -> Location {
        Location {
            member: self.member.clone(),
            section: self.section.clone(),
            offset: self.offset,
            size: self.size,
        }
    }

    /// Whether the HIP runtime would consider loading it: every unit but an OffloadImage
    /// (`.llvm.offloading`, device code not yet linked) and an object bundle holding no code
    /// for an AMD GPU ([`holds_amd_gpu_code`]).
    pub fn is_loadable(&self) -> bool {
        is_loadable(self.form, self.loose.iter().map(|e| e.id.as_str()))
    }

    /// Whether it holds code for an AMD GPU ([`holds_amd_gpu_code`] of its form and entries):
    /// every unit but an object bundle of another toolchain's GPUs.
    pub fn holds_amd_gpu_code(&self) -> bool {
        holds_amd_gpu_code(self.form, self.loose.iter().map(|e| e.id.as_str()))
    }

    /// `bundle 3 at offset 0x1000` with the member and section when known.
    pub fn describe(&self) -> String {
        let what = match self.form {
            Form::Bundle => "bundle",
            Form::ObjectBundle => "object bundle",
            Form::CodeObject => "code object",
            Form::OffloadImage => "offload image",
        };
        let mut s = format!("{what} {}", self.index);
        if let Some(m) = &self.member {
            s.push_str(&format!(" in member {m}"));
        }
        if let Some(sec) = &self.section {
            s.push_str(&format!(" in section {sec}"));
        }
        s.push_str(&format!(" at offset {:#x}", self.offset));
        s
    }
}

/// The units of device code of one file, and what was found wrong on the way.
#[derive(Debug, Clone)]
pub struct Units<'a> {
    /// Units of device code: bundles in file order, then object bundles, code objects and
    /// offload images.
    pub units: Vec<Unit<'a>>,
    /// Damage or oddities host discovery found (wrappers pointing nowhere, bundles running
    /// past their section, ...), with where.
    pub problems: Vec<Problem>,
}

impl Units<'_> {
    /// Whether some problem is an error (damaged data) rather than a warning.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }

    /// The errors among the problems, one line each, naming the file `name`.
    pub fn error_lines(&self, name: &str) -> Vec<String> {
        error_lines(&self.problems, name)
    }
}

/// The errors among `problems`, one line each, naming the file `name`.
pub fn error_lines(problems: &[Problem], name: &str) -> Vec<String> {
    problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| format!("{name}: {p}"))
        .collect()
}

impl<'a> Unit<'a> {
    /// The bundle `span` delimited in `region` (bytes located at their file offset, as the
    /// span's offset is), as unit `index` of its file, read under `limits`; `None` when the span
    /// does not lie inside the region.
    pub fn of_span(
        index: usize,
        region: Cursor<'a>,
        span: &Span,
        limits: &Limits,
    ) -> Option<Unit<'a>> {
        let start = usize::try_from(span.offset.checked_sub(region.base())?).ok()?;
        let end = start.checked_add(usize::try_from(span.len).ok()?)?;
        let bytes = region.bytes().get(start..end)?;
        Some(Unit {
            index,
            offset: span.offset,
            bytes,
            size: span.len,
            ccob: span.ccob,
            member: None,
            section: None,
            form: Form::Bundle,
            loose: Vec::new(),
            limits: *limits,
        })
    }
}

impl<'a> Discovery<'a> {
    /// How many offload bundles were found: the bundles a [`WrapperTarget::Bundle`] names by
    /// their index, in file order (`.hip_fatbin` sections, standalone bundles, archive
    /// members).
    pub fn bundle_count(&self) -> usize {
        self.bundles.len()
    }

    /// Where offload bundle `i` (of [`Discovery::bundle_count`]) lies; `None` past the last.
    pub fn bundle_location(&self, i: usize) -> Option<&Location> {
        self.bundles.get(i).map(|b| &b.location)
    }

    /// Offload bundle `i` (of [`Discovery::bundle_count`]) as unit `i` of its file, read under
    /// the discovery's limits; `None` past the last, the error of its CCOB header when that
    /// does not read (an unknown compression method: discovery delimits such a bundle by its
    /// header's sizes, which no method changes).
    pub fn bundle_unit(&self, i: usize) -> Option<gfxkit_bundle::Result<Unit<'a>>> {
        Some(self.unit_of(self.bundles.get(i)?, i))
    }

    /// The found bundle `b` as unit `index` of its file.
    fn unit_of(&self, b: &FoundBundle<'a>, index: usize) -> gfxkit_bundle::Result<Unit<'a>> {
        let ccob = match b.format {
            BundleFormat::Uncompressed => None,
            BundleFormat::Compressed { .. } => Some(ccob::Header::parse_at(Cursor::at(
                b.bytes,
                b.location.offset,
            ))?),
        };
        Ok(Unit {
            index,
            offset: b.location.offset,
            bytes: b.bytes,
            size: b.bytes.len() as u64,
            ccob,
            member: b.location.member.clone(),
            section: b.location.section.clone(),
            form: Form::Bundle,
            loose: Vec::new(),
            limits: self.limits,
        })
    }

    /// Whether a wrapper record ([`Discovery::wrappers`]) leads to offload bundle `i`.
    pub fn is_wrapped(&self, i: usize) -> bool {
        self.bundles.get(i).is_some_and(|b| !b.wrappers.is_empty())
    }

    /// The units of device code found, in [`Units`]'s order, and the problems (with one more
    /// for each compressed bundle whose CCOB header cannot be read).
    pub fn units(&self) -> Units<'a> {
        let d = self;
        let mut problems = d.problems.clone();
        let mut units = Vec::new();
        for b in &d.bundles {
            match d.unit_of(b, units.len()) {
                Ok(u) => units.push(u),
                // Delimited by discovery but unreadable here (an unknown method, say): reported
                // with where it is, the other bundles are still listed.
                Err(e) => problems.push(Problem::error(
                    b.location.clone(),
                    crate::ProblemKind::BadBundle(e.to_string()),
                )),
            }
        }
        // Object bundles of other GPUs come after the units the runtime may load (the
        // readers of load views index units by them), before the OffloadImages.
        let mut foreign = Vec::new();
        for o in &d.object_bundles {
            let base = o.location.offset;
            let unit = Unit {
                index: units.len(),
                offset: base,
                bytes: &[],
                size: o.location.size,
                ccob: None,
                member: o.location.member.clone(),
                section: None,
                form: Form::ObjectBundle,
                loose: o
                    .entries
                    .iter()
                    .map(|e| LooseEntry {
                        id: e.id.to_owned(),
                        offset: e.location.offset.saturating_sub(base),
                        payload: e.bytes,
                        ext: entry_ext(e.id),
                    })
                    .collect(),
                limits: d.limits,
            };
            if unit.is_loadable() {
                units.push(unit);
            } else {
                foreign.push(unit);
            }
        }
        for c in &d.code_objects {
            let id = gfxkit_code_object::Header::parse(c.bytes)
                .ok()
                .and_then(|h| h.target_id().ok())
                .map(|t| gfxkit_bundle::EntryId::hip(t).raw().to_owned())
                .unwrap_or_else(|| "hipv4-amdgcn-amd-amdhsa--unknown".to_owned());
            units.push(Unit {
                index: units.len(),
                offset: c.location.offset,
                bytes: c.bytes,
                size: c.bytes.len() as u64,
                ccob: None,
                member: c.location.member.clone(),
                section: c.location.section.clone(),
                form: Form::CodeObject,
                loose: vec![LooseEntry {
                    id,
                    offset: 0,
                    payload: c.bytes,
                    ext: "co",
                }],
                limits: d.limits,
            });
        }
        units.extend(foreign);
        for (i, u) in units.iter_mut().enumerate() {
            u.index = i;
        }
        for i in &d.offload_images {
            let kind = if i.offload_kind.is_hip() {
                "hipv4".to_owned()
            } else {
                i.offload_kind.name()
            };
            let id = format!(
                "{kind}-{}--{}",
                i.triple.unwrap_or("unknown"),
                i.arch.unwrap_or("unknown")
            );
            let ext = match i.image_kind {
                crate::offloading::ImageKind::BITCODE => "bc",
                crate::offloading::ImageKind::SPIRV => "spv",
                _ => "co",
            };
            units.push(Unit {
                index: units.len(),
                offset: i.location.offset,
                bytes: i.bytes,
                size: i.bytes.len() as u64,
                ccob: None,
                member: i.location.member.clone(),
                section: i.location.section.clone(),
                form: Form::OffloadImage,
                loose: vec![LooseEntry {
                    id,
                    offset: 0,
                    payload: i.bytes,
                    ext,
                }],
                limits: d.limits,
            });
        }
        Units { units, problems }
    }
}

/// Whether the HIP runtime loads a unit of form `form` whose entries have the IDs `ids`: one
/// that holds AMD GPU code ([`holds_amd_gpu_code`]) and is no offload image (an object's
/// `.llvm.offloading` section, linked into a bundle before anything loads it).
pub fn is_loadable<'s>(form: Form, ids: impl IntoIterator<Item = &'s str>) -> bool {
    form != Form::OffloadImage && holds_amd_gpu_code(form, ids)
}

/// Whether a unit of form `form` whose entries have the IDs `ids` (for a bundle, none are
/// needed) holds code for AMD GPUs: every form but an object bundle does; an object bundle
/// when one of its entries is for an AMD GPU ([`is_amd_gpu_entry`]). The
/// `__CLANG_OFFLOAD_BUNDLE__` sections of other toolchains (SYCL images for Intel GPUs in a
/// multi-backend wheel, OpenMP offload to NVIDIA GPUs) are device code for other GPUs, which
/// no AMD GPU is asked to run.
pub fn holds_amd_gpu_code<'s>(form: Form, ids: impl IntoIterator<Item = &'s str>) -> bool {
    form != Form::ObjectBundle || ids.into_iter().any(is_amd_gpu_entry)
}

/// Whether the entry ID `id` names code for an AMD GPU: its triple's architecture is `amdgcn`
/// (or an `amdgpu` subarchitecture), or it is SPIR-V for AMD GPUs. An ID that does not parse
/// is judged by its text (`<kind>-<arch>-<vendor>...`), so that damaged AMD device code still
/// counts as AMD's.
pub fn is_amd_gpu_entry(id: &str) -> bool {
    match EntryId::parse(id) {
        Ok(e) => e.triple().is_amdgpu() || is_spirv_entry(&e),
        Err(_) => {
            let mut parts = id.split('-').skip(1);
            let (arch, vendor) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            AmdArch::parse(arch).is_some() || (arch == "spirv64" && vendor == "amd")
        }
    }
}

/// File-name extension of a bundle entry's payload: `spv` for SPIR-V entries
/// (`hip-spirv64-amd-amdhsa--amdgcnspirv`), `co` for everything else.
pub fn entry_ext(id: &str) -> &'static str {
    match EntryId::parse(id) {
        Ok(e) if is_spirv_entry(&e) => "spv",
        _ => "co",
    }
}

/// The entry ID kinds the runtime asks comgr for: `hip` and `hipv4` are interchangeable.
pub(crate) fn is_hip_kind(k: OffloadKind) -> bool {
    matches!(k, OffloadKind::Hip | OffloadKind::HipV4)
}

/// Whether an entry is SPIR-V for AMD GPUs (`spirv64-amd-amdhsa--amdgcnspirv`).
pub fn is_spirv_entry(e: &EntryId) -> bool {
    let t = e.triple();
    is_hip_kind(e.kind())
        && t.arch == "spirv64"
        && t.vendor == "amd"
        && t.is_amdhsa()
        && (t.env.is_empty() || t.env == "unknown")
        && matches!(e.target(), EntryTarget::Unknown(s) if s == "amdgcnspirv")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_gpu_entries_are_told_from_other_gpus_entries() {
        for id in [
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hip-amdgcn-amd-amdhsa-gfx906",
            "openmp-amdgcn-amd-amdhsa--gfx942",
            "hip-spirv64-amd-amdhsa--amdgcnspirv",
            // Damaged IDs of AMD code stay AMD's.
            "hipv4-amdgcn-amd-amdhsa--gfx9\u{fffd}",
            "hipv4-amdgcn",
        ] {
            assert!(is_amd_gpu_entry(id), "{id}");
        }
        for id in [
            "host-x86_64-unknown-linux-gnu",
            "openmp-nvptx64-nvidia-cuda",
            "openmp-x86_64-pc-linux-gnu",
            "sycl-spir64_gen",
            "sycl-spir64",
            "hip-spirv64-intel-unknown",
            "",
        ] {
            assert!(!is_amd_gpu_entry(id), "{id}");
        }
        let sycl = ["sycl-spir64_gen", "sycl-spir64"];
        assert!(!holds_amd_gpu_code(Form::ObjectBundle, sycl));
        assert!(!holds_amd_gpu_code(Form::ObjectBundle, []));
        let mixed = [
            "host-x86_64-unknown-linux-gnu",
            "hipv4-amdgcn-amd-amdhsa--gfx942",
        ];
        assert!(holds_amd_gpu_code(Form::ObjectBundle, mixed));
        // A bundle is read by the HIP runtime whatever its entries.
        assert!(holds_amd_gpu_code(Form::Bundle, sycl));
    }
}
