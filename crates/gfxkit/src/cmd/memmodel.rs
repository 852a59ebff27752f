//! `gfxkit memmodel`: the AMDGPU memory model's code sequences, as LLVM 22 (default) or
//! llc 19 emits them.

use anyhow::{bail, Context, Result};
use gfxkit_memory_model::config::{family_by_name, Os};
use gfxkit_memory_model::{sequence, table, Case, Config, Llvm};
use std::io::Write;
use std::process::ExitCode;

/// Print the code sequences of the AMDGPU memory model, as LLVM 22 (default) or LLVM 19
/// lowers them.
///
/// A case is an LLVM IR instruction (`load atomic i32, ptr addrspace(1) %p syncscope("agent")
/// acquire, align 4`; an atomicrmw or cmpxchg with a result, `%old = ...`, returns the old value)
/// or a case key written `kind;as=<as>;ord=<ord>;ford=<ord>;scope=<scope>;ret=<ret|noret>;op=add;
/// flags=<f>;mmra=<m>` with only the keys that apply, in that order. Kinds: load store
/// load_atomic store_atomic atomicrmw cmpxchg fence. Address spaces: global local generic
/// private constant region. Scopes: singlethread wavefront workgroup cluster agent system and
/// their `-one-as` forms (`one-as` is system's); `cluster` only on GFX12.5 (gfx1250, gfx1251).
/// Non-atomic load/store carry `flags=plain|volatile|nontemporal|volatile+nontemporal|lastuse`;
/// fences carry `mmra=none|global|local|global+local`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  gfxkit memmodel --cpu gfx90a 'load_atomic;as=global;ord=acquire;scope=agent'
  gfxkit memmodel --cpu gfx1200 'load atomic i32, ptr addrspace(1) %p syncscope(\"agent\") acquire, align 4'
  gfxkit memmodel --cpu gfx1200 --llvm 19 'fence syncscope(\"agent\") release'
  gfxkit memmodel --cpu gfx950 '%old = atomicrmw add ptr %p, i32 %v syncscope(\"workgroup\") acq_rel'
  gfxkit memmodel --cpu gfx1250 'fence syncscope(\"cluster\") acq_rel'
  gfxkit memmodel --cpu gfx1030 --cumode 'fence;ord=release;scope=workgroup;mmra=none'
  gfxkit memmodel --cpu gfx942 --tgsplit --all --json
  gfxkit memmodel --table gfx10 --format markdown
  gfxkit memmodel --may-move 'load_atomic;as=global;ord=acquire;scope=agent' 'load;as=global;flags=plain'

Exit codes: 0 the sequence was printed (or the move is allowed); 1 the case is not valid on the
target, or the move is not allowed (the reason is printed); 2 an error (unknown processor,
malformed case).")]
pub struct Args {
    /// Processor (gfx90a, gfx1100, ...).
    #[arg(long, required_unless_present_any = ["table", "may_move"])]
    cpu: Option<String>,
    /// CU mode instead of WGP mode (GFX10 and later).
    #[arg(long)]
    cumode: bool,
    /// Threadgroup split mode (GFX90A, GFX94x).
    #[arg(long)]
    tgsplit: bool,
    /// OS of the target triple: amdhsa, amdpal or mesa3d.
    #[arg(long, default_value = "amdhsa")]
    os: String,
    /// As llc's -amdgcn-skip-cache-invalidations: acquires do not invalidate caches.
    #[arg(long)]
    skip_cache_invalidations: bool,
    /// The LLVM release whose lowering is printed: 22 (ROCm 7.2.2's LLVM 22) or 19.
    #[arg(long, default_value = "22", value_parser = ["19", "22"])]
    llvm: String,
    /// Print every case.
    #[arg(long, conflicts_with = "case")]
    all: bool,
    /// JSON output (with --all or --table: every case of the table, {config, llvm, cases}; or
    /// for one case).
    #[arg(long)]
    json: bool,
    /// Render the whole table of a family (gfx6, gfx7, gfx90a, gfx940, gfx942, gfx10, gfx11,
    /// gfx12, gfx1250), in the mode given by --cumode/--tgsplit.
    #[arg(long, conflicts_with_all = ["cpu", "all", "case"])]
    table: Option<String>,
    /// Table format (markdown).
    #[arg(long, default_value = "markdown", requires = "table")]
    format: String,
    /// Whether LATER may be moved before EARLIER (two cases, in program order) under the
    /// single-thread optimization constraints. Exit code 1 when it may not.
    #[arg(long, num_args = 2, value_names = ["EARLIER", "LATER"], conflicts_with_all = ["all", "table", "case"])]
    may_move: Option<Vec<String>>,
    /// The case: an LLVM IR instruction, or
    /// `kind;as=<as>;ord=<ord>;ford=<ord>;scope=<scope>;ret=<ret|noret>;op=add;flags=<f>;mmra=<m>`
    /// with only the keys that apply, in that order.
    ///
    /// Kinds: load store load_atomic store_atomic atomicrmw cmpxchg fence. Address spaces:
    /// global local generic private constant region. Scopes: singlethread wavefront workgroup
    /// cluster (GFX12.5 only) agent system and their `-one-as` forms (`one-as` is system's).
    /// Non-atomic load/store carry
    /// `flags=plain|volatile|nontemporal|volatile+nontemporal|lastuse`; atomics carry
    /// `flags=volatile|nontemporal` only when set; fences carry
    /// `mmra=none|global|local|global+local`.
    #[arg(required_unless_present_any = ["all", "table", "may_move"])]
    case: Option<String>,
}

fn config(args: &Args) -> Result<Config> {
    let os = Os::by_name(&args.os).with_context(|| {
        format!(
            "unknown OS `{}` (expected amdhsa, amdpal or mesa3d)",
            args.os
        )
    })?;
    let base = match (&args.table, &args.cpu) {
        (Some(f), _) => Config::for_family(family_by_name(f)?)?,
        (None, Some(cpu)) => Config::for_processor(cpu)?,
        (None, None) => bail!("--cpu or --table is required"),
    };
    let llvm: Llvm = args.llvm.parse()?;
    Ok(base
        .for_llvm(llvm)?
        .with_cumode(args.cumode)?
        .with_tgsplit(args.tgsplit)?
        .with_os(os)
        .with_skip_cache_invalidations(args.skip_cache_invalidations))
}

/// Runs `gfxkit memmodel`.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(pair) = &args.may_move {
        let earlier = parse_case(&pair[0])?;
        let later = parse_case(&pair[1])?;
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        return Ok(
            match gfxkit_memory_model::may_move_before(&earlier, &later) {
                Ok(()) => {
                    writeln!(
                        out,
                        "yes: no memory-model constraint keeps {later} after {earlier}"
                    )?;
                    ExitCode::SUCCESS
                }
                Err(c) => {
                    writeln!(out, "no: {c}")?;
                    ExitCode::from(1)
                }
            },
        );
    }
    let cfg = config(&args)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.table.is_some() && args.format != "markdown" {
        bail!("unknown table format `{}` (expected markdown)", args.format);
    }
    if args.table.is_some() && !args.json {
        out.write_all(table::markdown(&cfg).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    // `--table --json` is the family's table as `--all --json` prints it.
    if args.all || args.table.is_some() {
        let mut cases = serde_json::Map::new();
        let mut text = String::new();
        for (case, res) in table::table(&cfg) {
            let v = match &res {
                Ok(seq) => serde_json::json!({ "asm": seq.asm() }),
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            };
            if !args.json {
                match &res {
                    Ok(seq) => {
                        text.push_str(&format!("{case}\n    {}\n", seq.asm().join("\n    ")))
                    }
                    Err(e) => text.push_str(&format!("{case}\n    invalid: {e}\n")),
                }
            }
            cases.insert(case.to_string(), v);
        }
        if args.json {
            let doc = serde_json::json!({
                "config": cfg.label(), "llvm": cfg.llvm.name(), "cases": cases
            });
            write_json(&mut out, &doc)?;
        } else {
            out.write_all(text.as_bytes())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let text = args.case.as_deref().unwrap_or_default();
    let case = parse_case(text)?;
    match sequence(&cfg, &case) {
        Ok(seq) => {
            if args.json {
                let doc = serde_json::json!({
                    "config": cfg.label(),
                    "llvm": cfg.llvm.name(),
                    "case": case.to_string(),
                    "asm": seq.asm(),
                    "reasons": seq.steps.iter().map(|s| s.reason.clone()).collect::<Vec<_>>(),
                });
                write_json(&mut out, &doc)?;
            } else {
                writeln!(out, "; {} on {} ({})", case, cfg.label(), cfg.llvm)?;
                if seq.steps.is_empty() {
                    writeln!(out, "; (no instructions)")?;
                }
                let width = seq.asm().iter().map(String::len).max().unwrap_or(0).max(24);
                for s in &seq.steps {
                    writeln!(out, "{:<width$}  ; {}", s.asm(seq.major), s.reason)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if args.json {
                let doc = serde_json::json!({
                    "config": cfg.label(), "llvm": cfg.llvm.name(),
                    "case": case.to_string(), "error": e.to_string()
                });
                write_json(&mut out, &doc)?;
            }
            drop(out);
            eprintln!(
                "gfxkit: {case} is not valid on {} ({}): {e}",
                cfg.label(),
                cfg.llvm
            );
            Ok(ExitCode::from(1))
        }
    }
}

/// A case from the command line: an LLVM IR instruction (it has spaces or a `%result =`), or a
/// case key.
fn parse_case(text: &str) -> Result<Case> {
    let t = text.trim();
    if t.contains(char::is_whitespace) || t.starts_with('%') {
        Ok(Case::from_llvm_ir(t).with_context(|| format!("in `{t}`"))?)
    } else {
        Ok(t.parse()?)
    }
}

/// Writes `doc` as pretty JSON and a newline. Serialized first, so that a closed pipe reaches
/// the error report as the plain I/O error it is (and ends the command quietly).
fn write_json(out: &mut impl Write, doc: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    out.write_all(text.as_bytes())?;
    Ok(())
}
