//! The choice of [`crate::select`] as the runtime of one ROCm release makes it: what that
//! release cannot load ([`gfxkit_spec::rocm::Rules`]) is passed over, with the reason and what
//! would make it load.
//!
//! - A compressed bundle (CCOB) of a version its HIP runtime does not unpack: nothing in it
//!   loads ([`unit_refusal`]).
//! - A code object of a version above what its loader accepts, or of a generic target it does
//!   not know ([`entry_refusal`]): passed over, and the next candidate is tried in the
//!   runtime's order (a generic V6 entry skipped, the native V5 one chosen, if present).
//! - A kpack-split binary (`HIPK` wrapper) on a runtime without the kpack loader
//!   ([`kpack_refusal`]).
//!
//! Without a release nothing changes; the newest release refuses nothing the newest rules load.

use crate::entries::LoadView;
use crate::select::{select_unit, Selection};
use crate::unit::{Form, Unit};
use crate::BundleFormat;
use gfxkit_bundle::EntryId;
use gfxkit_spec::elf::ELFOSABI_AMDGPU_HSA;
use gfxkit_spec::rocm::{fact_for, first_text, Capability, Fact, Pin, RocmVersion, Rules};
use gfxkit_target_id::TargetId;
use serde::Serialize;

/// What a release cannot load, and what would make it load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// Why, naming the release: `code object V6: ROCm 6.2 loads up to V5`.
    pub reason: String,
    /// A rebuild that this release loads (`rebuild with -mcode-object-version=5`), when there
    /// is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<String>,
    /// The first release that loads it (`6.3`; `6.4, first tag not pinned`).
    pub upgrade: String,
    /// That release as an order: unreleased last, then by number (`None`: none known).
    #[serde(skip)]
    pub upgrade_order: Option<(bool, RocmVersion)>,
}

/// The order of the first release of `fact` among others: unreleased rows after every
/// release, then by number.
fn order(fact: Option<&Fact>) -> Option<(bool, RocmVersion)> {
    fact.map(|f| (f.pin == Pin::Unreleased, f.first))
}

/// The code-object version of the AMDGPU HSA code object `elf` starts with (from
/// `EI_OSABI`/`EI_ABIVERSION`: `ELFABIVERSION_AMDGPU_HSA_V5` is 3, so V5); `None` when it is
/// not one (too short, no ELF magic, another OS ABI).
pub fn code_object_version(elf: &[u8]) -> Option<u8> {
    match elf {
        [0x7f, b'E', b'L', b'F', _, _, _, osabi, abi, ..] if *osabi == ELFOSABI_AMDGPU_HSA => {
            abi.checked_add(2)
        }
        _ => None,
    }
}

/// The code-object version of each entry of each loadable unit of `units`, in the order of
/// [`crate::entries::load_views`] (bundles, object bundles, code objects) and of each unit's
/// entries (the IDs that parse, in header order); `None` where it cannot be read (a unit's
/// list may be shorter than its entries: the rest are unknown). A CCOB
/// bundle is decompressed as a stream up to its last entry's first bytes (memory stays
/// bounded; nothing is kept); its hash is not checked (`gfxkit verify` does that).
pub fn code_object_versions(units: &[Unit<'_>]) -> Vec<Vec<Option<u8>>> {
    versions_where(units, |_| true)
}

/// [`code_object_versions`] as far as the rules of a release need them: none for a release
/// that loads every version there is (V6, the newest), none for a compressed bundle it cannot
/// unpack anyway (whose versions would cost a decompression).
pub fn code_object_versions_for(units: &[Unit<'_>], rules: &Rules) -> Vec<Vec<Option<u8>>> {
    if rules.code_object_max >= NEWEST_CODE_OBJECT_VERSION {
        // Nothing to read: every unit's versions unknown (and none refused).
        return Vec::new();
    }
    versions_where(units, |format| match format {
        BundleFormat::Compressed { version, .. } => rules.unpacks_ccob(version),
        BundleFormat::Uncompressed => true,
    })
}

/// The newest code-object version there is (LLVM's `ELFABIVERSION_AMDGPU_HSA_V6`).
const NEWEST_CODE_OBJECT_VERSION: u8 = 6;

fn versions_where(units: &[Unit<'_>], read: impl Fn(BundleFormat) -> bool) -> Vec<Vec<Option<u8>>> {
    // Object bundles and code objects are read in place: their versions cost nothing.
    let all = read(BundleFormat::Uncompressed);
    units
        .iter()
        .filter(|u| u.is_loadable())
        .map(|u| match u.form {
            Form::Bundle => bundle_versions(u, &read),
            Form::ObjectBundle => u
                .loose
                .iter()
                .filter(|e| EntryId::parse(&e.id).is_ok())
                .map(|e| code_object_version(e.payload).filter(|_| all))
                .collect(),
            Form::CodeObject | Form::OffloadImage => {
                vec![code_object_version(u.bytes).filter(|_| all)]
            }
        })
        .collect()
}

/// The code-object versions of the entries of the bundle `b` whose IDs parse, when `read`
/// says its form is to be read (none otherwise, nor when its header cannot be read).
fn bundle_versions(b: &Unit<'_>, read: impl Fn(BundleFormat) -> bool) -> Vec<Option<u8>> {
    let format = b.format().unwrap_or(BundleFormat::Uncompressed);
    if !read(format) {
        return Vec::new();
    }
    let Ok((items, _)) = crate::entries::read_header(format, b.cursor(), &b.limits) else {
        return Vec::new();
    };
    // An entry's payload: offset, size, and whether its ID parses (units list those).
    let wanted: Vec<(u64, u64, bool)> = items
        .iter()
        .map(|h| (h.header.offset, h.header.size, h.id.is_ok()))
        .collect();
    let heads = match format {
        BundleFormat::Uncompressed => wanted
            .iter()
            .map(|&(off, size, _)| {
                let end = off.checked_add(size)?;
                let range = usize::try_from(off).ok()?..usize::try_from(end).ok()?;
                b.bytes.get(range).and_then(code_object_version)
            })
            .collect(),
        BundleFormat::Compressed { .. } => ccob_heads(b.bytes, &wanted),
    };
    wanted
        .iter()
        .zip(heads)
        .filter(|((_, _, parsed), _)| *parsed)
        .map(|(_, v)| v)
        .collect()
}

/// The code-object versions of the payloads `wanted` (offset, size) of the CCOB bundle
/// `bytes`, read while decompressing it as a stream, stopping after the last one.
fn ccob_heads(bytes: &[u8], wanted: &[(u64, u64, bool)]) -> Vec<Option<u8>> {
    const HEAD: u64 = 9;
    let Ok(header) = gfxkit_bundle::ccob::Header::parse(bytes) else {
        return vec![None; wanted.len()];
    };
    // Payloads shorter than an ELF identification hold no code object: not read.
    let head = |size: u64| size.min(HEAD) as usize;
    let end = wanted
        .iter()
        .filter(|&&(_, size, _)| size >= HEAD)
        .map(|&(o, _, _)| o.saturating_add(HEAD))
        .max()
        .unwrap_or(0)
        .min(header.uncompressed_size);
    let mut heads: Vec<Vec<u8>> = vec![Vec::new(); wanted.len()];
    let mut at = 0u64;
    let mut sink = |chunk: &[u8]| -> std::io::Result<()> {
        let start = at;
        at += chunk.len() as u64;
        for (h, &(off, size, _)) in heads.iter_mut().zip(wanted) {
            let mut pos = off.saturating_add(h.len() as u64);
            while h.len() < head(size) && pos >= start && pos < at {
                // In bounds: start <= pos < at = start + chunk.len().
                h.push(chunk[(pos - start) as usize]);
                pos += 1;
            }
        }
        if at >= end {
            // Everything wanted is read: stop the decoder here.
            return Err(std::io::Error::other("enough"));
        }
        Ok(())
    };
    // The decoder stops with our own error once the heads are read; another error leaves
    // the heads not reached as unknown.
    let _ = gfxkit_bundle::codec::decompress_to(
        header.method,
        header.payload(bytes),
        header.uncompressed_size,
        &mut sink,
    );
    heads.iter().map(|h| code_object_version(h)).collect()
}

/// "ROCm 6.2".
fn rocm(rules: &Rules) -> String {
    format!("ROCm {}", rules.version)
}

/// Why the runtime of `rules` cannot unpack `unit` at all (a CCOB version its HIP runtime
/// does not read), or `None`.
pub fn unit_refusal(rules: &Rules, unit: &LoadView) -> Option<Refusal> {
    let Some(BundleFormat::Compressed { version, .. }) = unit.format else {
        return None;
    };
    ccob_refusal(rules, version)
}

/// Why the HIP runtime of `rules` cannot unpack a compressed bundle of CCOB `version` (every
/// code object in it), or `None`.
pub fn ccob_refusal(rules: &Rules, version: u16) -> Option<Refusal> {
    if rules.unpacks_ccob(version) {
        return None;
    }
    let fact = fact_for(Capability::Ccob(version));
    let upgrade = fact.map_or_else(|| "none known".to_owned(), first_text);
    let reason = if rules.ccob.is_empty() {
        format!(
            "CCOB v{version}: {}'s HIP runtime unpacks no compressed bundles (v{version} from {upgrade})",
            rocm(rules)
        )
    } else {
        let known: Vec<String> = rules.ccob.iter().map(|v| format!("v{v}")).collect();
        format!(
            "CCOB v{version}: {}'s HIP runtime unpacks CCOB {} only (v{version} from {upgrade})",
            rocm(rules),
            known.join(", ")
        )
    };
    let rebuild = match rules.ccob.iter().max() {
        None => "rebuild without --offload-compress (an uncompressed bundle)".to_owned(),
        Some(v) => format!("rebuild with COMPRESSED_BUNDLE_FORMAT_VERSION={v} in clang's environment (or without --offload-compress)"),
    };
    Some(Refusal {
        reason,
        rebuild: Some(rebuild),
        upgrade,
        upgrade_order: order(fact),
    })
}

/// Why the runtime of `rules` cannot load the code object of entry `id`, whose code-object
/// version is `version` (when read), or `None`: a version above what its loader accepts, a
/// generic target it does not load. Both are said when both apply.
pub fn entry_refusal(rules: &Rules, id: &EntryId, version: Option<u8>) -> Option<Refusal> {
    let target = id.target_id()?;
    let processor = target.processor();
    let mut reasons = Vec::new();
    let mut rebuilds = Vec::new();
    let mut upgrades: Vec<&'static Fact> = Vec::new();
    if let Some(r) = version.and_then(|v| version_refusal(rules, v)) {
        reasons.push(r.reason);
        // A generic target needs V6: no lower version to rebuild with.
        if !processor.is_generic() {
            rebuilds.extend(r.rebuild);
        }
        upgrades.extend(version.and_then(|v| fact_for(Capability::CodeObjectVersion(v))));
    }
    if processor.is_generic() && !rules.loads_generic(processor.name) {
        let fact = fact_for(Capability::Generic(processor.name));
        let from = fact.map_or_else(|| "no release known".to_owned(), first_text);
        reasons.push(if rules.generics.is_empty() {
            format!(
                "{}: {} loads no generic code objects ({} from {from})",
                processor.name,
                rocm(rules),
                processor.name
            )
        } else {
            format!(
                "{}: {} does not load it (from {from})",
                processor.name,
                rocm(rules)
            )
        });
        rebuilds.push(format!(
            "build the native targets instead of {} (--offload-arch=<processor>)",
            processor.name
        ));
        upgrades.extend(fact);
    }
    if reasons.is_empty() {
        return None;
    }
    // The release that loads it is the latest of the rows it needs.
    let latest = upgrades.into_iter().max_by_key(|f| order(Some(f)));
    Some(Refusal {
        reason: reasons.join("; "),
        rebuild: (!rebuilds.is_empty()).then(|| rebuilds.join(", ")),
        upgrade: latest.map_or_else(|| "none known".to_owned(), first_text),
        upgrade_order: order(latest),
    })
}

/// Why the loader of `rules` cannot load a code object of version `version` (above the
/// highest it accepts), or `None`; the rebuild is to the highest it accepts.
pub fn version_refusal(rules: &Rules, version: u8) -> Option<Refusal> {
    if version <= rules.code_object_max {
        return None;
    }
    let fact = fact_for(Capability::CodeObjectVersion(version));
    Some(Refusal {
        reason: format!(
            "code object V{version}: {} loads up to V{}",
            rocm(rules),
            rules.code_object_max
        ),
        rebuild: Some(format!(
            "rebuild with -mcode-object-version={}",
            rules.code_object_max
        )),
        upgrade: fact.map_or_else(|| "none known".to_owned(), first_text),
        upgrade_order: order(fact),
    })
}

/// Why the runtime of `rules` cannot load a kpack-split binary, or `None`.
pub fn kpack_refusal(rules: &Rules) -> Option<Refusal> {
    if rules.kpack {
        return None;
    }
    let fact = fact_for(Capability::Kpack);
    let upgrade = fact.map_or_else(|| "none known".to_owned(), first_text);
    Some(Refusal {
        reason: format!(
            "kpack-split binary (HIPK wrapper): {}'s HIP runtime has no kpack loader (from {upgrade})",
            rocm(rules)
        ),
        rebuild: Some(
            "use the library with its device code inline (unsplit, or `gfxkit kpack inline`)"
                .to_owned(),
        ),
        upgrade,
        upgrade_order: order(fact),
    })
}

/// Why the runtime of `rules` cannot use a device whose processor is `processor` at all (its
/// ISA registry does not have it: [`Rules::knows`]), or `None`: nothing loads on such a
/// device, whatever the code objects hold. The upgrade is the first release known to have it
/// ("none known" for a processor the runtime no longer registers).
pub fn device_refusal(rules: &Rules, processor: &str) -> Option<Refusal> {
    let s = rules.knows(processor);
    if s.known != Some(false) {
        return None;
    }
    Some(Refusal {
        reason: s.reason,
        rebuild: None,
        upgrade: s.upgrade.unwrap_or_else(|| "none known".to_owned()),
        upgrade_order: s.upgrade_order.map(|v| (false, v)),
    })
}

/// What is said when the sources read do not tell whether the runtime of `rules` knows
/// `processor` (the release's ISA registry was not read and the lists around it disagree), or
/// `None` when they tell.
pub fn device_note(rules: &Rules, processor: &str) -> Option<String> {
    let s = rules.knows(processor);
    s.known.is_none().then_some(s.reason)
}

/// What a release refuses in one unit: the whole unit, or entries by index (into
/// [`LoadView::entries`]).
#[derive(Debug, Clone, Default)]
pub struct UnitRefusals {
    /// The unit cannot be unpacked at all.
    pub unit: Option<Refusal>,
    /// Entries whose code objects the release cannot load.
    pub entries: Vec<(usize, Refusal)>,
}

impl UnitRefusals {
    /// What `rules` refuses in `unit`, whose entries' code-object versions are `versions`
    /// ([`code_object_versions`]).
    pub fn of(rules: &Rules, unit: &LoadView, versions: &[Option<u8>]) -> UnitRefusals {
        let entries = match &unit.entries {
            Ok(e) => e
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    entry_refusal(rules, &e.id, versions.get(i).copied().flatten()).map(|r| (i, r))
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        UnitRefusals {
            unit: unit_refusal(rules, unit),
            entries,
        }
    }

    /// Whether nothing is refused.
    pub fn is_empty(&self) -> bool {
        self.unit.is_none() && self.entries.is_empty()
    }

    /// `unit` as the release sees it: the refused entries made empty (the runtime skips
    /// those), every entry when the unit itself is refused.
    pub fn view(&self, unit: &LoadView) -> LoadView {
        let mut u = unit.clone();
        if let Ok(entries) = &mut u.entries {
            for (i, e) in entries.iter_mut().enumerate() {
                if self.unit.is_some() || self.entries.iter().any(|(j, _)| *j == i) {
                    e.size = 0;
                }
            }
        }
        u
    }

    /// What the newest rules would pick for `device` that this release refuses, in the order
    /// tried, as `(entry ID, refusal)`; then the selection the release makes.
    pub fn select(
        &self,
        device: &TargetId,
        unit: &LoadView,
    ) -> (Selection, Vec<(String, Refusal)>) {
        if let Some(r) = &self.unit {
            let newest = select_unit(device, unit);
            let s = Selection {
                index: None,
                via: None,
                needs: Vec::new(),
                reason: r.reason.clone(),
                nearest: newest.nearest.clone(),
            };
            let what = match (&unit.entries, newest.index) {
                (Ok(e), Some(i)) => e.get(i).map(|e| e.id.raw().to_owned()),
                _ => None,
            };
            return (s, vec![(what.unwrap_or_default(), r.clone())]);
        }
        let mut u = unit.clone();
        let mut passed = Vec::new();
        loop {
            let s = select_unit(device, &u);
            let refused = s
                .index
                .and_then(|i| self.entries.iter().find(|(j, _)| *j == i));
            match (refused, &mut u.entries) {
                (Some((i, r)), Ok(entries)) => {
                    let Some(e) = entries.get_mut(*i) else {
                        return (s, passed);
                    };
                    passed.push((e.id.raw().to_owned(), r.clone()));
                    e.size = 0;
                }
                _ if s.index.is_none() && !passed.is_empty() => {
                    // Nothing this release loads: the nearest targets are those present,
                    // refused ones included (the reason names why they are passed over).
                    let nearest = crate::select::nearest_targets(device, &unit.ids());
                    let mut reason = format!("No compatible code objects found for: {device}");
                    if !nearest.is_empty() {
                        reason.push_str(&format!("; nearest present: {}", nearest.join(", ")));
                    }
                    return (
                        Selection {
                            reason,
                            nearest,
                            ..s
                        },
                        passed,
                    );
                }
                _ => return (s, passed),
            }
        }
    }
}

/// [`select_unit`] as the runtime of the release whose refusals in `unit` are `refusals`
/// makes it: the reason names each entry the newest rules would pick that this release
/// cannot load, and why. With nothing refused, exactly [`select_unit`].
pub fn select_unit_on(device: &TargetId, unit: &LoadView, refusals: &UnitRefusals) -> Selection {
    select_unit_passing(device, unit, refusals).0
}

/// [`select_unit_on`], with what was passed over: `(entry ID, refusal)` in the order tried
/// (for a unit the release cannot unpack, the entry the newest rules would pick, or an empty
/// ID).
pub fn select_unit_passing(
    device: &TargetId,
    unit: &LoadView,
    refusals: &UnitRefusals,
) -> (Selection, Vec<(String, Refusal)>) {
    if refusals.is_empty() {
        return (select_unit(device, unit), Vec::new());
    }
    let (mut s, passed) = refusals.select(device, unit);
    if refusals.unit.is_some() {
        return (s, passed);
    }
    if !passed.is_empty() {
        let said: Vec<String> = passed
            .iter()
            .map(|(id, r)| format!("{id} passed over: {}", r.reason))
            .collect();
        s.reason = format!("{} ({})", s.reason, said.join("; "));
    }
    (s, passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entries::UnitEntry;
    use gfxkit_spec::rocm::RocmVersion;

    fn rules(v: &str) -> Rules {
        Rules::of(RocmVersion::parse(v).unwrap())
    }

    fn unit(list: &[&str], format: Option<BundleFormat>) -> LoadView {
        LoadView {
            form: Form::Bundle,
            format,
            header_len: None,
            entries: Ok(list
                .iter()
                .map(|s| UnitEntry {
                    id: EntryId::parse(&format!("hipv4-amdgcn-amd-amdhsa--{s}")).unwrap(),
                    size: 1,
                })
                .collect()),
        }
    }

    fn dev(s: &str) -> TargetId {
        TargetId::parse(s).unwrap()
    }

    #[test]
    fn versions_read_from_the_elf_identification() {
        let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 64, 3];
        assert_eq!(code_object_version(&h), Some(5));
        h[8] = 4;
        assert_eq!(code_object_version(&h), Some(6));
        h[7] = 0;
        assert_eq!(code_object_version(&h), None);
        assert_eq!(code_object_version(&h[..5]), None);
    }

    /// The versions of a bundle's entries, uncompressed and in CCOB v2 and v3, with payloads
    /// far apart (the stream is read in chunks of 256 KiB; the last entry lies past several).
    #[test]
    fn versions_of_every_entry_of_plain_and_compressed_bundles() {
        let elf = |abi: u8, len: usize| {
            let mut v = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 64, abi];
            v.resize(len, 0x11);
            v
        };
        let (a, b, c) = (elf(3, 700_000), elf(4, 300_000), elf(2, 64));
        let bundle = gfxkit_bundle::write_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &a),
                ("not an entry id", b"x"),
                ("hipv4-amdgcn-amd-amdhsa--gfx1100", &b),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", &c),
            ],
            4096,
        )
        .unwrap();
        let want = vec![vec![None, Some(5), Some(6), Some(4)]];
        assert_eq!(
            code_object_versions(&crate::discover(&bundle).units().units),
            want
        );
        for version in [2, 3] {
            let opts = gfxkit_bundle::ccob::CompressOptions {
                version,
                ..Default::default()
            };
            let z = gfxkit_bundle::ccob::compress(&bundle, &opts).unwrap();
            let found = crate::discover(&z).units().units;
            assert_eq!(code_object_versions(&found), want, "v{version}");
            // A release that loads V6 reads nothing; one that cannot unpack the bundle neither.
            assert!(code_object_versions_for(&found, &rules("6.3")).is_empty());
            let none: Vec<Vec<Option<u8>>> = vec![Vec::new()];
            assert_eq!(code_object_versions_for(&found, &rules("6.1")), none);
            let expect = if version == 2 { &want } else { &none };
            assert_eq!(&code_object_versions_for(&found, &rules("6.2")), expect);
        }
    }

    #[test]
    fn a_generic_v6_entry_is_passed_over_for_the_next_candidate() {
        let u = unit(&["gfx11-generic", "gfx1030"], None);
        let versions = [Some(6), Some(5)];
        let r = UnitRefusals::of(&rules("6.2"), &u, &versions);
        let s = select_unit_on(&dev("gfx1100"), &u, &r);
        assert_eq!(s.index, None);
        assert!(
            s.reason.contains("hipv4-amdgcn-amd-amdhsa--gfx11-generic passed over: code object V6: ROCm 6.2 loads up to V5; gfx11-generic: ROCm 6.2 loads no generic code objects (gfx11-generic from 6.4, first tag not pinned)"),
            "{}",
            s.reason
        );
        // Native V5 present: chosen, nothing to say (the native entry comes first anyway).
        let u = unit(&["gfx11-generic", "gfx1100"], None);
        let r = UnitRefusals::of(&rules("6.2"), &u, &versions);
        let s = select_unit_on(&dev("gfx1100"), &u, &r);
        assert_eq!(s, select_unit(&dev("gfx1100"), &u));
        // 6.4 loads both.
        let r = UnitRefusals::of(&rules("6.4"), &u, &versions);
        assert!(r.is_empty());
        // A native V6 on 6.2: the rebuild and the upgrade.
        let u = unit(&["gfx1100"], None);
        let r = UnitRefusals::of(&rules("6.2"), &u, &[Some(6)]);
        let (_, ref_) = &r.entries[0];
        assert_eq!(ref_.reason, "code object V6: ROCm 6.2 loads up to V5");
        assert_eq!(
            ref_.rebuild.as_deref(),
            Some("rebuild with -mcode-object-version=5")
        );
        assert_eq!(ref_.upgrade, "6.3");
    }

    /// gfx12-5-generic is in the runtime's sources after the newest listed release: refused
    /// by it, loaded by a later one (no LLVM that gfxkit tests with writes it yet).
    #[test]
    fn an_unreleased_generic_target() {
        let u = unit(&["gfx12-5-generic"], None);
        let r = UnitRefusals::of(&rules("7.13"), &u, &[Some(6)]);
        let s = select_unit_on(&dev("gfx1250"), &u, &r);
        assert_eq!(s.index, None);
        assert!(
            s.reason.contains("gfx12-5-generic: ROCm 7.13 does not load it (from a release after 7.13, not pinned)"),
            "{}",
            s.reason
        );
        assert_eq!(r.entries[0].1.upgrade, "a release after 7.13, not pinned");
        let r = UnitRefusals::of(&rules("8.0"), &u, &[Some(6)]);
        assert_eq!(
            select_unit_on(&dev("gfx1250"), &u, &r),
            select_unit(&dev("gfx1250"), &u)
        );
    }

    #[test]
    fn ccob_versions_follow_the_hip_runtime() {
        let ccob = |version| {
            Some(BundleFormat::Compressed {
                version,
                method: crate::CompressionMethod::ZSTD,
            })
        };
        let u = unit(&["gfx1100"], ccob(3));
        let r = UnitRefusals::of(&rules("6.4"), &u, &[Some(5)]);
        let s = select_unit_on(&dev("gfx1100"), &u, &r);
        assert_eq!(s.index, None);
        assert_eq!(
            s.reason,
            "CCOB v3: ROCm 6.4's HIP runtime unpacks CCOB v1, v2 only (v3 from 7.0, first tag not pinned)"
        );
        assert!(r
            .unit
            .unwrap()
            .rebuild
            .unwrap()
            .contains("COMPRESSED_BUNDLE_FORMAT_VERSION=2"));
        let u = unit(&["gfx1100"], ccob(2));
        let r = UnitRefusals::of(&rules("6.1"), &u, &[Some(5)]);
        assert!(r
            .unit
            .as_ref()
            .unwrap()
            .reason
            .contains("unpacks no compressed bundles"));
        assert!(UnitRefusals::of(&rules("6.2"), &u, &[Some(5)]).is_empty());
    }
}
