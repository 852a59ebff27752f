//! `gfxkit target`: target IDs and the processor table.

use anyhow::{bail, Context, Result};
use gfxkit_code_object::{EFlags, TargetIdFromFlagsError};
use gfxkit_spec::{CodeObjectVersion, ProcessorRow};
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

fn list(json: bool) -> Result<ExitCode> {
    if json {
        crate::output::print_json(&ProcessorRow::all())?;
    } else {
        gfxkit_text::target::processors(&mut std::io::stdout().lock())?;
    }
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
    gfxkit_text::target::show(&id, &mut std::io::stdout().lock())?;
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
