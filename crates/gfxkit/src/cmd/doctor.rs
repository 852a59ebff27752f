//! `gfxkit doctor`: which libraries can run on this machine's (or a named) GPU.

use crate::output;
use crate::scan;
use anyhow::{bail, Context, Result};
use gfxkit_host::entries::{units, Unit};
use gfxkit_host::kfd;
use gfxkit_host::select::{concrete_settings, nearest_targets, select_unit, settings_text};
use gfxkit_host::InputKind;
use gfxkit_spec::Feature;
use gfxkit_target_id::{FeatureSetting, TargetId};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// For every library under the paths, whether it carries code that can run on the GPUs.
///
/// With `--device auto` (the default) the GPUs are read from the KFD topology
/// (`/sys/class/kfd/kfd/topology/nodes/*/properties`: `gfx_target_version`, and the SRAM ECC
/// capability bit), honouring `HSA_OVERRIDE_GFX_VERSION` (every GPU reports that version) and
/// `HSA_XNACK` (1 = xnack on, 0 = off; unset = unknown). Where a device's xnack or sramecc
/// setting cannot be known, a library runs if every one of its bundles has code that fits
/// under some common setting, and the report names the setting it needs. Files without device
/// code are not listed, nor are relocatable objects and archives (build inputs, never loaded).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "With --device auto the GPUs come from the KFD topology (gfx_target_version, and the \
SRAM ECC capability bit), honouring HSA_OVERRIDE_GFX_VERSION and HSA_XNACK (1 on, 0 off, unset unknown). \
Where a device's xnack or sramecc setting is unknown, a library runs if all its bundles fit under one \
setting, and the report names that setting. Relocatable objects and archives are not checked; device \
code moved to kpack archives (HIPK) is named, not examined.\n\nExamples:\n  gfxkit doctor /opt/rocm/lib\n  \
gfxkit doctor --device gfx90a:sramecc+:xnack- --json ./build\n  \
HSA_OVERRIDE_GFX_VERSION=10.3.0 gfxkit doctor /usr/lib/x86_64-linux-gnu\n\n\
Exit codes: 0 every library can run on every device; 1 some library cannot run on some device; \
2 an error (no GPU found, unreadable input)."
)]
pub struct Args {
    /// Device target ID (`gfx90a:sramecc+:xnack-`), or `auto` to read the machine's GPUs.
    /// Repeat for several devices.
    #[arg(long, value_name = "TARGET_ID|auto", default_value = "auto")]
    pub device: Vec<String>,
    /// Read the KFD topology under `DIR/sys/class/kfd/...` instead of `/sys/...`.
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// Libraries or directories to check (default: `$ROCM_PATH/lib` or `/opt/rocm/lib`).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print JSON: `{"devices": [...], "files": [{"path", "runs_on": {"<device>": bool},
    /// "targets": [...], "needs", "missing", "spirv": [devices served only through SPIR-V]}]}`.
    #[arg(long)]
    pub json: bool,
}

/// Reads the GPUs from the KFD topology under `root` (`/` normally).
pub fn devices_from_sysfs(
    root: &Path,
    override_version: Option<&str>,
    hsa_xnack: Option<&str>,
) -> Result<Vec<TargetId>> {
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let rd = std::fs::read_dir(&nodes)
        .with_context(|| format!("cannot read the KFD topology at {}", nodes.display()))?;
    let mut dirs: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    // Numeric node order (0, 1, ..., 10), as the runtime enumerates them.
    dirs.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    });
    let mut out: Vec<TargetId> = Vec::new();
    for d in dirs {
        let props = d.join("properties");
        let Ok(text) = std::fs::read_to_string(&props) else {
            continue;
        };
        let node = kfd::parse_properties(&text);
        if !node.is_gpu() {
            continue;
        }
        let id = kfd::device_target_id(&node, override_version, hsa_xnack)
            .with_context(|| format!("{}", props.display()))?;
        if !out.contains(&id) {
            out.push(id);
        }
    }
    if out.is_empty() {
        bail!("no GPU in the KFD topology at {}", nodes.display());
    }
    Ok(out)
}

fn resolve_devices(args: &Args) -> Result<Vec<TargetId>> {
    let mut out: Vec<TargetId> = Vec::new();
    for d in &args.device {
        if d == "auto" {
            let root = args
                .sysfs_root
                .clone()
                .unwrap_or_else(|| PathBuf::from("/"));
            let ov = std::env::var("HSA_OVERRIDE_GFX_VERSION").ok();
            let xn = std::env::var("HSA_XNACK").ok();
            for id in devices_from_sysfs(&root, ov.as_deref(), xn.as_deref())? {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        } else {
            let id = gfxkit_target_id::triple::parse_device(d)
                .with_context(|| format!("--device {d}"))?;
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    Ok(out)
}

/// The verdict for one library on one device.
#[derive(Debug, Clone, Serialize)]
struct Verdict {
    runs: bool,
    /// Settings the device must have (when its own are unknown and only some work).
    #[serde(skip_serializing_if = "Option::is_none")]
    needs: Option<String>,
    /// Why not, naming what is missing and the nearest targets present.
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<String>,
    /// Some bundle has only SPIR-V for the device (compiled by the runtime when loaded).
    spirv: bool,
}

/// Whether a library whose bundles hold `bundles` entries can run on `device`. Every bundle
/// must have a selection under one common concrete setting of the device's unknown features.
fn verdict(device: &TargetId, bundles: &[Unit]) -> Verdict {
    let settings = concrete_settings(device);
    let working: Vec<&TargetId> = settings
        .iter()
        .filter(|d| bundles.iter().all(|e| select_unit(d, e).is_selected()))
        .collect();
    if working.is_empty() {
        // Report against the first concrete setting that leaves the fewest bundles without
        // code, naming the targets present in one that fails.
        let failing = bundles
            .iter()
            .find(|e| settings.iter().all(|d| !select_unit(d, e).is_selected()))
            .or_else(|| bundles.first());
        let nearest = failing
            .map(|e| nearest_targets(device, &e.ids()))
            .unwrap_or_default();
        let total = bundles.len();
        let without = bundles
            .iter()
            .filter(|e| settings.iter().all(|d| !select_unit(d, e).is_selected()))
            .count();
        let mut msg = if without > 0 {
            format!("no code object for {device} in {without} of {total} bundles")
        } else {
            format!("no single xnack/sramecc setting of {device} has code in all {total} bundles")
        };
        if !nearest.is_empty() {
            msg.push_str(&format!("; nearest present: {}", nearest.join(", ")));
        }
        return Verdict {
            runs: false,
            needs: None,
            missing: Some(msg),
            spirv: false,
        };
    }
    // Settings common to every working concrete device, among those the device left unknown.
    let mut needs: Vec<(Feature, FeatureSetting)> = Vec::new();
    if working.len() < settings.len() {
        for &f in device.processor().target_id_features {
            if device.setting(f) != FeatureSetting::Any {
                continue;
            }
            let first = working[0].setting(f);
            if working.iter().all(|w| w.setting(f) == first) {
                needs.push((f, first));
            }
        }
    }
    let needs = if needs.is_empty() && working.len() < settings.len() {
        Some(
            working
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
        )
    } else if needs.is_empty() {
        None
    } else {
        Some(settings_text(&needs))
    };
    let spirv = bundles
        .iter()
        .any(|e| select_unit(working[0], e).via == Some(gfxkit_host::select::Via::Spirv));
    Verdict {
        runs: true,
        needs,
        missing: None,
        spirv,
    }
}

#[derive(Serialize)]
struct FileReport {
    path: String,
    runs_on: BTreeMap<String, bool>,
    targets: Vec<String>,
    bundles: usize,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    needs: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    missing: BTreeMap<String, String>,
    /// Devices some bundle serves only through SPIR-V (amdgcnspirv, compiled when loaded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    spirv: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<String>,
    /// Kpack archives holding device code moved out of the file (`HIPK`): not examined.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    kpack: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    devices: Vec<String>,
    files: Vec<FileReport>,
}

/// Whether the runtime loads files of this kind: shared objects and executables (their
/// `.hip_fatbin`), and bundles or code objects given to `hipModuleLoad`. Relocatable objects
/// and archives are build inputs, not loaded.
fn loaded_at_run_time(kind: InputKind) -> bool {
    matches!(
        kind,
        InputKind::ElfSharedObject
            | InputKind::ElfExecutable
            | InputKind::Bundle
            | InputKind::CodeObject
    )
}

fn default_paths() -> Vec<PathBuf> {
    let rocm = std::env::var_os("ROCM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/rocm"));
    vec![rocm.join("lib")]
}

/// Runs `gfxkit doctor`.
pub fn run(args: Args) -> Result<ExitCode> {
    let devices = resolve_devices(&args)?;
    let paths = if args.paths.is_empty() {
        default_paths()
    } else {
        args.paths.clone()
    };
    let scanned = scan::scan(&paths, &scan::Options::default(), |_, bytes| {
        let found = gfxkit_host::discover(bytes);
        let mut bundles = Vec::new();
        if !loaded_at_run_time(found.kind) {
            return Ok((bundles, Vec::new(), Vec::new()));
        }
        let mut errors: Vec<String> = found
            .problems
            .iter()
            .filter(|p| p.severity == gfxkit_host::Severity::Error)
            .map(|p| p.to_string())
            .collect();
        for u in units(&found) {
            match &u.entries {
                Ok(_) => bundles.push(u),
                Err(e) => errors.push(format!("{}: {e}", u.location)),
            }
        }
        let kpack: Vec<String> = found
            .wrappers
            .iter()
            .filter_map(|w| w.kpack.as_ref())
            .flat_map(|k| k.search_paths.iter().cloned())
            .collect();
        Ok((bundles, errors, kpack))
    })?;
    let mut report = Report {
        devices: devices.iter().map(|d| d.to_string()).collect(),
        files: Vec::new(),
    };
    let mut code = 0u8;
    for s in scanned {
        let path = s.path.display().to_string();
        let (bundles, errors, kpack) = match s.result {
            Ok(r) => r,
            Err(e) => {
                code = 2;
                (Vec::new(), vec![format!("{e:#}")], Vec::new())
            }
        };
        if bundles.is_empty() && errors.is_empty() && kpack.is_empty() {
            continue; // No device code: not a GPU library.
        }
        if !errors.is_empty() {
            code = 2;
        }
        let mut targets: Vec<String> = bundles
            .iter()
            .flat_map(Unit::ids)
            .filter(|e| !e.is_host())
            .map(|e| e.target().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        targets.sort();
        targets.dedup();
        let mut f = FileReport {
            path,
            runs_on: BTreeMap::new(),
            targets,
            bundles: bundles.len(),
            needs: BTreeMap::new(),
            missing: BTreeMap::new(),
            spirv: Vec::new(),
            errors,
            kpack,
        };
        // Without readable bundles there is nothing to judge (errors or kpack only).
        let judged: &[TargetId] = if bundles.is_empty() { &[] } else { &devices };
        for d in judged {
            let v = verdict(d, &bundles);
            let key = d.to_string();
            if !v.runs {
                code = code.max(1);
            }
            f.runs_on.insert(key.clone(), v.runs);
            if let Some(n) = v.needs {
                f.needs.insert(key.clone(), n);
            }
            if v.spirv {
                f.spirv.push(key.clone());
            }
            if let Some(m) = v.missing {
                f.missing.insert(key, m);
            }
        }
        report.files.push(f);
    }
    if args.json {
        output::print_json(&report)?;
    } else {
        print_text(&report, &devices)?;
    }
    Ok(ExitCode::from(code))
}

fn print_text(r: &Report, devices: &[TargetId]) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for d in devices {
        let unknown: Vec<&str> = d
            .processor()
            .target_id_features
            .iter()
            .filter(|f| d.setting(**f) == FeatureSetting::Any)
            .map(|f| f.name())
            .collect();
        if unknown.is_empty() {
            writeln!(out, "device {d}")?;
        } else {
            writeln!(out, "device {d} ({} unknown)", unknown.join(", "))?;
        }
    }
    let mut bad = 0usize;
    for f in &r.files {
        for (dev, runs) in &f.runs_on {
            if *runs {
                let spirv = if f.spirv.contains(dev) {
                    " (through SPIR-V, compiled when loaded)"
                } else {
                    ""
                };
                match f.needs.get(dev) {
                    Some(n) => writeln!(out, "ok    {}  on {dev}, needs {n}{spirv}", f.path)?,
                    None => writeln!(out, "ok    {}  on {dev}{spirv}", f.path)?,
                }
            } else {
                let why = f.missing.get(dev).map(String::as_str).unwrap_or("");
                writeln!(out, "FAIL  {}  on {dev}: {why}", f.path)?;
            }
        }
        if f.runs_on.values().any(|r| !r) {
            bad += 1;
            writeln!(out, "      targets present: {}", f.targets.join(" "))?;
        }
        for e in &f.errors {
            writeln!(out, "ERROR {}: {e}", f.path)?;
        }
        if !f.kpack.is_empty() {
            writeln!(
                out,
                "NOTE  {}: device code moved to kpack archives, not examined: {}",
                f.path,
                f.kpack.join(" ")
            )?;
        }
    }
    let ok = r
        .files
        .iter()
        .filter(|f| !f.runs_on.is_empty() && f.runs_on.values().all(|v| *v))
        .count();
    let unjudged = r.files.iter().filter(|f| f.runs_on.is_empty()).count();
    write!(
        out,
        "{} libraries with device code: {ok} run on every device, {bad} do not",
        r.files.len()
    )?;
    if unjudged > 0 {
        write!(out, ", {unjudged} not examined")?;
    }
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use gfxkit_bundle::EntryId;
    use gfxkit_host::entries::{UnitEntry, UnitKind};

    fn ids(list: &[&str]) -> Unit {
        let entries = list
            .iter()
            .map(|s| UnitEntry {
                id: EntryId::parse(s).unwrap(),
                size: 1,
            })
            .collect();
        Unit {
            kind: UnitKind::Bundle,
            location: gfxkit_host::Location::at(0, 0),
            format: None,
            header_len: None,
            entries: Ok(entries),
        }
    }

    #[test]
    fn unknown_xnack_needs_the_setting_every_bundle_shares() {
        let d = TargetId::parse("gfx90a:sramecc+").unwrap();
        let b = vec![
            ids(&[
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
                "hipv4-amdgcn-amd-amdhsa--gfx906",
            ]),
            ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a"]),
        ];
        let v = verdict(&d, &b);
        assert!(v.runs);
        assert_eq!(v.needs.as_deref(), Some("xnack-"));
        // One bundle only xnack+, the other only xnack-: no common setting.
        let b2 = vec![
            ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"]),
            ids(&["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"]),
        ];
        let v = verdict(&d, &b2);
        assert!(!v.runs);
        assert!(v.missing.unwrap().contains("no single"));
        // Fully known device.
        let d = TargetId::parse("gfx1030").unwrap();
        let v = verdict(&d, &b);
        assert!(!v.runs);
        assert_eq!(
            v.missing.as_deref(),
            Some("no code object for gfx1030 in 2 of 2 bundles; nearest present: gfx90a:xnack-, gfx906")
        );
    }
}
