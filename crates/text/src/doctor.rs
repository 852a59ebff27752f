//! `gfxkit doctor`'s text: per library and device, whether it runs, and the remedies.

use gfxkit_inventory::doctor::DoctorReport;
use gfxkit_target_id::{FeatureSetting, TargetId};
use std::io::{Result, Write};

/// Prints the report as text on `out`.
pub fn report(r: &DoctorReport, devices: &[TargetId], out: &mut dyn Write) -> Result<()> {
    for d in devices {
        let unknown: Vec<&str> = d
            .processor()
            .target_id_features
            .iter()
            .filter(|f| d.setting(**f) == FeatureSetting::Any)
            .map(|f| f.name())
            .collect();
        let cus = r
            .cu_counts
            .get(&d.to_string())
            .map(|n| format!(", {n} CUs"))
            .unwrap_or_default();
        if unknown.is_empty() {
            writeln!(out, "device {d}{cus}")?;
        } else {
            writeln!(out, "device {d}{cus} ({} unknown)", unknown.join(", "))?;
        }
    }
    if let Some(rocm) = &r.rocm {
        crate::rocm::runtime_line(rocm, out)?;
    }
    let mut bad = 0usize;
    for f in &r.files {
        // A damaged file is not called ok on any device: its damage is named below.
        let damaged = f.damaged();
        // A device the file fails on only because it is damaged: the damage is named below.
        let by_damage = |dev: &String| {
            damaged
                && f.missing
                    .get(dev)
                    .is_some_and(|m| m.starts_with(gfxkit_inventory::doctor::DAMAGED))
        };
        for (dev, runs) in &f.runs_on {
            if (*runs && damaged) || by_damage(dev) {
                continue;
            }
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
                for n in f.notes.get(dev).into_iter().flatten() {
                    writeln!(out, "      note: {n}")?;
                }
            } else {
                let why = f.missing.get(dev).map(String::as_str).unwrap_or("");
                writeln!(out, "FAIL  {}  on {dev}: {why}", f.path)?;
                for r in f.remedies.iter().filter(|r| r.device == *dev) {
                    writeln!(out, "      remedy ({}): {}", r.standing.text(), r.text)?;
                }
            }
        }
        if f.runs_on.iter().any(|(dev, r)| !r && !by_damage(dev)) {
            bad += usize::from(!damaged);
            writeln!(out, "      targets present: {}", f.targets.join(" "))?;
        }
        for e in &f.errors {
            writeln!(out, "ERROR {}", crate::group::naming(&f.path, e))?;
        }
        if !f.kpack.is_empty() && f.runs_on.keys().all(by_damage) {
            writeln!(
                out,
                "NOTE  {}: device code moved to kpack archives: {}",
                f.path,
                f.kpack.join(" ")
            )?;
        }
    }
    for o in &r.other_gpus_only {
        writeln!(out, "NOTE  {}: {}", o.path, o.reason)?;
    }
    // Damaged or unreadable inputs are counted apart, not as libraries that run or not.
    let sound: Vec<_> = r.files.iter().filter(|f| f.errors.is_empty()).collect();
    let damaged = r.files.len() - sound.len();
    let ok = sound
        .iter()
        .filter(|f| !f.runs_on.is_empty() && f.runs_on.values().all(|v| *v))
        .count();
    let unjudged = sound.iter().filter(|f| f.runs_on.is_empty()).count();
    write!(
        out,
        "{} with device code: {ok} {} on every device, {bad} {}",
        crate::plural(sound.len() as u64, "library", "libraries"),
        if ok == 1 { "runs" } else { "run" },
        if bad == 1 { "does not" } else { "do not" },
    )?;
    if unjudged > 0 {
        write!(out, ", {unjudged} not examined")?;
    }
    if damaged > 0 {
        write!(out, "; {damaged} damaged or unreadable")?;
    }
    writeln!(out)?;
    Ok(())
}
