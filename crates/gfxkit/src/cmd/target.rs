//! `gfxkit target`: target IDs and the processor table.

use anyhow::{bail, Context, Result};
use gfxkit_code_object::{EFlags, TargetIdFromFlagsError};
use gfxkit_spec::{CodeObjectVersion, Processor, ProcessorRow, PROCESSORS};
use gfxkit_target_id::TargetId;
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

/// Options of `gfxkit target`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
A target ID is <processor>(:<feature>(+|-))*, e.g. gfx90a:sramecc+:xnack-. The processor may be
a primary or alternative name (tonga = gfx802); features are those the processor takes in target
IDs (xnack, sramecc). A feature left out means any.

Examples:
  gfxkit target canon gfx90a:xnack-:sramecc+ tonga
  gfxkit target compat gfx906:xnack+ gfx906:sramecc+:xnack+
  gfxkit target list --json
  gfxkit target show gfx1030
  gfxkit target eflags gfx90a:sramecc+:xnack- --cov 5
  gfxkit target eflags --decode 0x52f --cov 5

Exit codes: 0 success (compatible); 1 incompatible, or e_flags naming no known processor;
2 an invalid target ID or bad usage.")]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Print the canonical form of each target ID, one per line.
    Canon {
        /// Target IDs.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Whether a code object built for one target ID may run on a device with another.
    ///
    /// Prints `compatible` (exit 0) or `incompatible: <reason>` (exit 1).
    Compat {
        /// Target ID the code object was built for.
        #[arg(value_name = "CODE_OBJECT_ID")]
        code_object: String,
        /// Target ID of the device (its processor and the settings it runs with).
        #[arg(value_name = "DEVICE_ID")]
        device: String,
    },
    /// List the processor table.
    List {
        /// Print JSON: an array of processor objects, each as `target show --json` prints it
        /// without "target_id" and "e_flags".
        #[arg(long)]
        json: bool,
    },
    /// Show everything about one processor (by name, alternative name or target ID).
    Show {
        /// Processor name or target ID.
        #[arg(value_name = "ID")]
        id: String,
        /// Print JSON: {"name", "aliases", "arch", "kind", "features", "target_id_features",
        /// "mach", "generic_family", "generic_version", "generic_members", "memory_model",
        /// "in_llvm19", "llvm" (releases defining it: "19+", "19-20", "main"),
        /// "xnack_always", "hardware" (register files, LDS, wave slots)} plus "target_id" and
        /// "e_flags" {"v4","v5","v6"} for the ID given.
        #[arg(long)]
        json: bool,
    },
    /// Print the e_flags a target ID has in a code object, or decode e_flags.
    Eflags {
        /// Target ID to encode (not with --decode).
        #[arg(
            value_name = "ID",
            required_unless_present = "decode",
            conflicts_with = "decode"
        )]
        id: Option<String>,
        /// Decode this e_flags value (hex, `0x` optional) into a target ID.
        #[arg(long, value_name = "HEX")]
        decode: Option<String>,
        /// Code-object version (2 to 6).
        #[arg(long, value_name = "N", required = true)]
        cov: u32,
    },
}

/// Runs `gfxkit target`.
pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Command::Canon { ids } => canon(&ids),
        Command::Compat {
            code_object,
            device,
        } => compat(&code_object, &device),
        Command::List { json } => list(json),
        Command::Show { id, json } => show(&id, json),
        Command::Eflags { id, decode, cov } => eflags(id.as_deref(), decode.as_deref(), cov),
    }
}

fn parse_id(s: &str) -> Result<TargetId> {
    // The parse error names the input and the position.
    Ok(TargetId::parse(s)?)
}

fn canon(ids: &[String]) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut failed = false;
    for s in ids {
        match TargetId::parse(s) {
            Ok(id) => writeln!(out, "{id}")?,
            Err(e) => {
                out.flush()?;
                eprintln!("gfxkit: error: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn compat(code_object: &str, device: &str) -> Result<ExitCode> {
    let co = parse_id(code_object)?;
    let dev = parse_id(device)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match co.check_compatible(&dev) {
        Ok(()) => {
            writeln!(out, "compatible")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => {
            writeln!(out, "incompatible: {why}")?;
            Ok(ExitCode::from(1))
        }
    }
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

fn list(json: bool) -> Result<ExitCode> {
    if json {
        let rows = ProcessorRow::all();
        crate::output::print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
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
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
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
    Ok(ExitCode::SUCCESS)
}

/// JSON of `target show`: the row plus what the given ID encodes to.
#[derive(Serialize)]
struct ShowJson {
    #[serde(flatten)]
    processor: ProcessorRow,
    target_id: String,
    e_flags: EFlagsByVersion,
}

#[derive(Serialize)]
struct EFlagsByVersion {
    v4: Option<u32>,
    v5: Option<u32>,
    v6: Option<u32>,
}

fn show(s: &str, json: bool) -> Result<ExitCode> {
    let id = parse_id(s)?;
    let p = id.processor();
    let enc = |cov| EFlags::encode(&id, cov).ok();
    let flags = EFlagsByVersion {
        v4: enc(CodeObjectVersion::V4),
        v5: enc(CodeObjectVersion::V5),
        v6: enc(CodeObjectVersion::V6),
    };
    if json {
        crate::output::print_json(&ShowJson {
            processor: ProcessorRow::of(p),
            target_id: id.to_string(),
            e_flags: flags,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
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
        rows.push(("e_flags v4", hex(flags.v4)));
        rows.push(("e_flags v5", hex(flags.v5)));
        rows.push(("e_flags v6", hex(flags.v6)));
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
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (k, v) in rows {
        writeln!(out, "{:<width$} {v}", format!("{k}:"))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn eflags(id: Option<&str>, decode: Option<&str>, cov: u32) -> Result<ExitCode> {
    let Some(version) = CodeObjectVersion::from_number(cov) else {
        bail!("--cov {cov}: code-object versions are 2 to 6");
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Some(text) = decode {
        let digits = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .unwrap_or(text);
        let raw = u32::from_str_radix(digits, 16)
            .with_context(|| format!("--decode {text:?}: not a 32-bit hexadecimal number"))?;
        let flags = EFlags::decode(raw, version);
        return match flags.target_id() {
            Ok(id) => {
                writeln!(out, "{id}")?;
                out.flush()?;
                for issue in flags.issues() {
                    eprintln!("gfxkit: warning: {issue}");
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(TargetIdFromFlagsError::UnknownProcessor { mach, .. }) => {
                writeln!(out, "unknown processor (EF_AMDGPU_MACH 0x{:02x})", mach.0)?;
                Ok(ExitCode::from(1))
            }
            Err(e) => {
                writeln!(out, "invalid: {e}")?;
                Ok(ExitCode::from(1))
            }
        };
    }
    let Some(s) = id else {
        bail!("give a target ID or --decode HEX");
    };
    let id = parse_id(s)?;
    if id.processor().arch == gfxkit_spec::Arch::R600 {
        // r600 objects are not HSA code objects; their flags are the processor alone.
        writeln!(out, "0x{:x}", id.processor().mach)?;
        return Ok(ExitCode::SUCCESS);
    }
    let raw = EFlags::encode(&id, version)?;
    writeln!(out, "0x{raw:x}")?;
    Ok(ExitCode::SUCCESS)
}
