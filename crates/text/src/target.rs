//! `gfxkit target`'s text: the processor table, and one processor (with what a target ID
//! encodes to) field by field.

use gfxkit_code_object::EFlags;
use gfxkit_spec::{CodeObjectVersion, Processor, PROCESSORS};
use gfxkit_target_id::TargetId;
use std::io::{Result, Write};

/// Every processor LLVM knows, one row each: name, aliases, arch, kind, mach, features
/// (`*` for those in target IDs), generic family, memory model, LLVM releases.
pub fn processors(out: &mut dyn Write) -> Result<()> {
    let header = [
        "NAME", "ALIASES", "ARCH", "KIND", "MACH", "FEATURES", "GENERIC", "MEMMODEL", "LLVM",
    ];
    let rows: Vec<[String; 9]> = PROCESSORS
        .iter()
        .map(|p| {
            [
                p.name.to_owned(),
                if p.aliases.is_empty() {
                    "-".to_owned()
                } else {
                    p.aliases.join(",")
                },
                p.arch.as_str().to_owned(),
                p.kind.as_str().to_owned(),
                format!("0x{:02x}", p.mach),
                features_text(p),
                match (p.generic_family, p.is_generic()) {
                    (Some(g), _) => g.to_owned(),
                    (None, true) => format!("v{}", p.generic_version),
                    (None, false) => "-".to_owned(),
                },
                p.memory_model.name().to_owned(),
                p.llvm.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let mut line = |cells: &[&str]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(&header)?;
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&cells)?;
    }
    writeln!(
        out,
        "\n{} processors; * = feature that takes part in target IDs",
        PROCESSORS.len()
    )?;
    Ok(())
}

/// The processor of `id` field by field, with the `e_flags` `id` encodes to per code-object
/// version and the hardware facts occupancy is computed from.
pub fn show(id: &TargetId, out: &mut dyn Write) -> Result<()> {
    let p = id.processor();
    let enc = |cov| EFlags::encode(id, cov).ok();
    let flags = [
        enc(CodeObjectVersion::V4),
        enc(CodeObjectVersion::V5),
        enc(CodeObjectVersion::V6),
    ];
    let none = || "-".to_owned();
    let hex = |v: Option<u32>| v.map_or_else(|| "- (needs V6)".to_owned(), |v| format!("0x{v:x}"));
    let members: Vec<&str> = p.generic_members().map(|m| m.name).collect();
    let mut rows: Vec<(&str, String)> = vec![
        ("name", p.name.to_owned()),
        (
            "aliases",
            if p.aliases.is_empty() {
                none()
            } else {
                p.aliases.join(", ")
            },
        ),
        ("target id", id.to_string()),
        ("arch", p.arch.as_str().to_owned()),
        ("kind", p.kind.as_str().to_owned()),
        ("mach", format!("0x{:02x}", p.mach)),
        (
            "features",
            if p.features.is_empty() {
                none()
            } else {
                p.features
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        (
            "target id features",
            if p.target_id_features.is_empty() {
                none()
            } else {
                p.target_id_features
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        ("memory model", p.memory_model.name().to_owned()),
        (
            "in llvm 19",
            if p.in_llvm19() { "yes" } else { "no" }.to_owned(),
        ),
        ("llvm releases", p.llvm.to_string()),
    ];
    if p.is_generic() {
        rows.push(("generic version", p.generic_version.to_string()));
        rows.push(("generic members", members.join(", ")));
    } else {
        rows.push((
            "generic family",
            p.generic_family.map_or_else(none, str::to_owned),
        ));
    }
    if p.arch == gfxkit_spec::Arch::Amdgcn {
        rows.push(("e_flags v4", hex(flags[0])));
        rows.push(("e_flags v5", hex(flags[1])));
        rows.push(("e_flags v6", hex(flags[2])));
        let hw = p.hw;
        rows.push(("waves per simd", hw.max_waves_per_eu.to_string()));
        let mut vgprs = format!(
            "{} wave64 (granule {})",
            hw.vgprs_wave64, hw.vgpr_granule_wave64
        );
        if hw.supports_wave32 {
            vgprs += &format!(
                ", {} wave32 (granule {})",
                hw.vgprs_wave32, hw.vgpr_granule_wave32
            );
        }
        if hw.unified_vgpr_file {
            vgprs += ", VGPRs and AGPRs unified";
        }
        rows.push(("vgpr file", vgprs));
        rows.push((
            "sgprs",
            if hw.sgpr_occupancy.is_empty() {
                format!("{} addressable, no occupancy limit", hw.addressable_sgprs)
            } else {
                let steps: Vec<String> = hw
                    .sgpr_occupancy
                    .iter()
                    .map(|(n, w)| format!("<={n}: {w}"))
                    .collect();
                format!(
                    "{} addressable; waves {}, more: {}",
                    hw.addressable_sgprs,
                    steps.join(", "),
                    hw.sgpr_waves_beyond
                )
            },
        ));
        rows.push((
            "lds",
            if hw.has_wgp_mode() {
                format!("{} per CU, {} per WGP", hw.lds_per_cu, hw.lds_per_wgp)
            } else {
                format!("{} per CU", hw.lds_per_cu)
            },
        ));
    } else {
        rows.push(("e_flags", format!("0x{:x}", p.mach)));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    for (k, v) in rows {
        writeln!(out, "{:<width$} {v}", format!("{k}:"))?;
    }
    Ok(())
}

fn features_text(p: &Processor) -> String {
    if p.features.is_empty() {
        return "-".to_owned();
    }
    // Target-ID features are marked with `*`; xnack that is always on with `(always)`.
    p.features
        .iter()
        .map(|f| {
            if p.has_target_id_feature(*f) {
                format!("{}*", f.name())
            } else if *f == gfxkit_spec::Feature::Xnack && p.xnack_always() {
                "xnack(always)".to_owned()
            } else {
                f.name().to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}
