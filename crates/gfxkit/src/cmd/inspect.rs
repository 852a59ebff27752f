//! `gfxkit inspect`: one AMDGPU code object: version, e_flags, target ID, kernels.

use anyhow::{Context, Result};
use gfxkit_code_object::descriptor_table::Word;
use gfxkit_code_object::{summaries, CodeObject, KernelDescriptor, KernelSummary};
use gfxkit_inventory::inspect::{self, elf_type_name};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit inspect`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Reads an AMDGPU ELF code object (a .co / .hsaco file, or an entry extracted from a bundle):
the OS ABI and code-object version (EI_OSABI, EI_ABIVERSION), e_flags decoded for that version,
the processor and target ID they name, and the kernels of the NT_AMDGPU_METADATA note.

JSON keys: file, elf_type, os_abi, abi_version, code_object_version (number, null when not
HSA), e_flags (number), e_flags_hex, mach, processor, target_id (null when e_flags name no
known processor), xnack, sramecc (unsupported/any/off/on), generic_version, metadata_version,
metadata_target, kernels [{name, symbol, kernarg_segment_size, kernarg_segment_align,
group_segment_fixed_size, private_segment_fixed_size, sgpr_count, vgpr_count, agpr_count,
sgpr_spill_count, vgpr_spill_count, wavefront_size, max_flat_workgroup_size,
uses_dynamic_stack, args [{name, type_name, offset, size, value_kind, address_space, access,
actual_access}], descriptor {<field>: value}, descriptor_error, occupancy, occupancy_limited_by
(waves/workgroup/lds/vgpr/sgpr), spills, demangled}], kernel_descriptors [{symbol, offset, group_segment_fixed_size,
private_segment_fixed_size, kernarg_size, kernel_code_entry_byte_offset, compute_pgm_rsrc1,
compute_pgm_rsrc2, compute_pgm_rsrc3, kernel_code_properties, kernarg_preload}], issues [string],
metadata (the whole note, or null).

`descriptor` is the kernel descriptor decoded for the object's processor, keyed by the
directive names llvm-objdump prints without `.amdhsa_` (next_free_vgpr, accum_offset,
float_denorm_mode_32, workgroup_processor_mode, wavefront_size32, ...; its `; NAME` comment
fields in lower case: shared_vgpr_count, inst_pref_size, ...) with the values it prints;
user_sgpr_count, enable_trap_handler and granulated_wavefront_sgpr_count are decoded though
llvm-objdump does not print them. `occupancy` is waves per SIMD as llc's `; Occupancy:`
computes it (without any `amdgpu-waves-per-eu` bound, which code objects do not record).
Code object V2 kernels (YAML metadata) are listed with V2's CodeProps and Args.

Examples:
  gfxkit inspect kernel-gfx90a.co
  gfxkit inspect --json kernel-gfx90a.co | jq '.kernels[].name'

Exit codes: 0 inspected; 2 not a readable AMDGPU code object.")]
pub struct Args {
    /// The code object.
    file: PathBuf,
    /// Print JSON (keys above).
    #[arg(long)]
    json: bool,
    /// Demangle C++ kernel names.
    #[arg(long)]
    demangle: bool,
}

/// Runs `gfxkit inspect`.
pub fn run(args: Args) -> Result<ExitCode> {
    let input = crate::input::open(&args.file)?;
    if gfxkit_kpack::archive::is_kpack(&input) {
        // A .kpack archive: its header, TOC and every kernel (key, architecture, sizes).
        return crate::cmd::kpack::inspect_archive(&args.file, &input, args.json);
    }
    let co = CodeObject::parse(&input).with_context(|| {
        let hint = if input.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") || input.starts_with(b"CCOB") {
            " (it is an offload bundle: see `gfxkit list` and `gfxkit extract`)"
        } else if matches!(
            gfxkit_host::InputKind::sniff(input.get(..512).unwrap_or(&input)),
            gfxkit_host::InputKind::ElfSharedObject
                | gfxkit_host::InputKind::ElfExecutable
                | gfxkit_host::InputKind::ElfRelocatable
                | gfxkit_host::InputKind::PeImage
                | gfxkit_host::InputKind::CoffObject
                | gfxkit_host::InputKind::Archive
        ) {
            " (it is a host file: `gfxkit extract` writes its code objects, `gfxkit kernels` \
             lists its kernels)"
        } else if crate::input::is_package(&input) {
            " (it is a package: `gfxkit list` names its members, PACKAGE!MEMBER)"
        } else {
            ""
        };
        format!(
            "{}: not a readable AMDGPU code object{hint}",
            args.file.display()
        )
    })?;
    if args.json {
        crate::output::print_json(&inspect::inspect(
            &args.file.display().to_string(),
            &co,
            args.demangle,
        ))?;
        return Ok(ExitCode::SUCCESS);
    }

    let target_id = co.target_id();
    let issues: Vec<String> = co.issues().iter().map(ToString::to_string).collect();
    let flags = co.flags();
    let sums = summaries(&co, args.demangle);
    let mut rows: Vec<(&str, String)> = vec![
        ("file", args.file.display().to_string()),
        (
            "elf type",
            format!(
                "{} ({}-bit)",
                elf_type_name(co.elf_type()),
                match co.arch() {
                    gfxkit_spec::Arch::Amdgcn => 64,
                    gfxkit_spec::Arch::R600 => 32,
                }
            ),
        ),
        (
            "os abi",
            format!("{} (abi version {})", co.os_abi(), co.abi_version()),
        ),
        (
            "code object",
            co.code_object_version()
                .map_or_else(|| "- (not HSA)".to_owned(), |v| v.to_string()),
        ),
        ("e_flags", flags.to_string()),
        ("processor", flags.mach().to_string()),
        (
            "target id",
            match &target_id {
                Ok(id) => id.to_string(),
                Err(e) => format!("- ({e})"),
            },
        ),
    ];
    if let Some(meta) = co.metadata() {
        if let Some([major, minor]) = meta.version() {
            rows.push(("amdhsa.version", format!("{major}.{minor}")));
        }
        if let Some(t) = meta.target() {
            rows.push(("amdhsa.target", t.to_owned()));
        }
    } else {
        rows.push(("metadata", "- (no NT_AMDGPU_METADATA note)".to_owned()));
    }
    rows.push(("kernels", sums.len().to_string()));
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (k, v) in &rows {
        writeln!(out, "{:<width$} {v}", format!("{k}:"))?;
    }
    if !sums.is_empty() {
        writeln!(out)?;
        write_kernel_table(&mut out, &sums)?;
        write_descriptors(&mut out, &co, &sums)?;
    }
    out.flush()?;
    for issue in &issues {
        eprintln!("gfxkit: warning: {}: {issue}", args.file.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn write_kernel_table(out: &mut impl Write, kernels: &[KernelSummary]) -> std::io::Result<()> {
    let header = [
        "NAME", "KERNARG", "SGPR", "VGPR", "AGPR", "LDS", "SCRATCH", "WAVE", "OCC",
    ];
    let num = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let rows: Vec<[String; 9]> = kernels
        .iter()
        .map(|k| {
            [
                k.demangled.clone().unwrap_or_else(|| k.name.clone()),
                num(k.kernarg_size),
                num(k.sgpr_count),
                num(k.vgpr_count),
                num(k.agpr_count),
                num(k.lds_bytes),
                num(k.scratch_bytes),
                num(k.wavefront_size),
                num(k.occupancy.map(u64::from)),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |out: &mut dyn Write, cells: [&str; 9]| -> std::io::Result<()> {
        // Name left-aligned, numbers right-aligned.
        let mut s = format!("{:<w$}", cells[0], w = widths[0]);
        for (c, w) in cells.iter().zip(widths).skip(1) {
            s.push_str(&format!("  {c:>w$}"));
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(out, header)?;
    for r in &rows {
        line(out, r.each_ref().map(String::as_str))?;
    }
    Ok(())
}

/// Each kernel's descriptor, one line per group (sizes, each register word), `name=value`.
fn write_descriptors(
    out: &mut impl Write,
    co: &CodeObject<'_>,
    sums: &[KernelSummary],
) -> std::io::Result<()> {
    let Some(hw) = co.processor().map(|p| p.hw) else {
        return Ok(());
    };
    let descriptors: Vec<KernelDescriptor<'_>> = co.kernel_descriptors().unwrap_or_default();
    for s in sums {
        let Some(d) = s
            .symbol
            .as_deref()
            .and_then(|sym| descriptors.iter().find(|d| d.symbol == sym))
        else {
            continue;
        };
        writeln!(out)?;
        writeln!(out, "{} (at offset 0x{:x}):", d.symbol, d.offset)?;
        let fields = match d.fields(hw) {
            Ok(f) => f,
            Err(e) => {
                writeln!(out, "  cannot decode: {e}")?;
                continue;
            }
        };
        let groups: [(&str, &[Word]); 5] = [
            (
                "sizes",
                &[
                    Word::GroupSegmentFixedSize,
                    Word::PrivateSegmentFixedSize,
                    Word::KernargSize,
                ],
            ),
            ("rsrc3", &[Word::Rsrc3]),
            ("rsrc1", &[Word::Rsrc1, Word::None]),
            ("rsrc2", &[Word::Rsrc2]),
            (
                "properties",
                &[Word::KernelCodeProperties, Word::KernargPreload],
            ),
        ];
        for (label, words) in groups {
            let items: Vec<String> = fields
                .iter()
                .filter(|f| words.contains(&f.field.word))
                .map(|f| format!("{}={}", f.field.name, f.value))
                .collect();
            if !items.is_empty() {
                writeln!(out, "  {label:<10} {}", items.join(" "))?;
            }
        }
    }
    Ok(())
}
