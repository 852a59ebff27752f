//! The GPUs of this machine, read from the KFD topology in sysfs (the parsing and the target-ID
//! rules are `gfxkit_host::kfd`'s; this module only reads the files).

use crate::{Error, ErrorKind};
use gfxkit_host::kfd;
use gfxkit_inventory::database::CuCounts;
use gfxkit_target_id::TargetId;
use std::path::{Path, PathBuf};

/// Reads the GPUs from the KFD topology under `root` (`/` normally):
/// `sys/class/kfd/kfd/topology/nodes/*/properties`, in numeric node order, each device once.
/// `override_version` is `HSA_OVERRIDE_GFX_VERSION` (every GPU reports that version) and
/// `hsa_xnack` is `HSA_XNACK` (1 on, 0 off, else unknown). A topology without a GPU is an
/// error ([`ErrorKind::NoGpu`]).
pub fn devices_from_sysfs(
    root: &Path,
    override_version: Option<&str>,
    hsa_xnack: Option<&str>,
) -> Result<Vec<TargetId>, Error> {
    let mut out: Vec<TargetId> = Vec::new();
    for (id, _) in gpus_from_sysfs(root, override_version, hsa_xnack)? {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Every GPU node of the KFD topology under `root` ([`devices_from_sysfs`]), one per node in
/// numeric node order, each with its number of compute units when the node says.
pub fn gpus_from_sysfs(
    root: &Path,
    override_version: Option<&str>,
    hsa_xnack: Option<&str>,
) -> Result<Vec<(TargetId, Option<u64>)>, Error> {
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let rd = std::fs::read_dir(&nodes).map_err(|e| Error::new(&nodes, ErrorKind::Topology(e)))?;
    let mut dirs: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    // Numeric node order (0, 1, ..., 10), as the runtime enumerates them.
    dirs.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    });
    let mut out: Vec<(TargetId, Option<u64>)> = Vec::new();
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
            .map_err(|e| Error::new(&props, ErrorKind::Device(e)))?;
        out.push((id, node.cu_count()));
    }
    if out.is_empty() {
        return Err(Error::new(&nodes, ErrorKind::NoGpu));
    }
    Ok(out)
}

/// The GPUs of this machine as the HIP runtime sees them: [`devices_from_sysfs`] under `root`
/// with `HSA_OVERRIDE_GFX_VERSION` and `HSA_XNACK` read from the environment.
pub fn devices_from_environment(root: &Path) -> Result<Vec<TargetId>, Error> {
    Ok(machine(root)?.0)
}

/// The GPUs of this machine as the HIP runtime sees them ([`devices_from_environment`]), each
/// once, with their numbers of compute units: a device's count is known when every node of
/// that target ID reports the same one (two GPUs of one processor with different counts are
/// judged for every count).
pub fn machine(root: &Path) -> Result<(Vec<TargetId>, CuCounts), Error> {
    let ov = std::env::var("HSA_OVERRIDE_GFX_VERSION").ok();
    let xn = std::env::var("HSA_XNACK").ok();
    let gpus = gpus_from_sysfs(root, ov.as_deref(), xn.as_deref())?;
    let mut devices: Vec<TargetId> = Vec::new();
    let mut counts = CuCounts::none();
    for (id, _) in &gpus {
        if devices.contains(id) {
            continue;
        }
        let mut of_id = gpus.iter().filter(|(d, _)| d == id).map(|(_, n)| *n);
        let first = of_id.next().flatten();
        if let Some(n) = first.filter(|&n| of_id.all(|m| m == Some(n))) {
            counts.set(id, n);
        }
        devices.push(*id);
    }
    Ok((devices, counts))
}
