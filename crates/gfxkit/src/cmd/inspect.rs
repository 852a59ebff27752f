//! `gfxkit inspect`: one AMDGPU code object: version, e_flags, target ID, kernels.

use anyhow::{Context, Result};
use gfxkit_code_object::CodeObject;
use gfxkit_inventory::inspect::{self};
use gfxkit_io::format::{Formats, Inspection};
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
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    let input = crate::input::open(&args.file, settings)?;
    let formats = Formats::standard().with_settings(settings.clone());
    let file = formats.file(&args.file, &input);
    let hint = match formats.of(&file).inspect(&file) {
        // A .kpack archive: its header, TOC and every kernel (key, architecture, sizes).
        Inspection::KpackArchive => {
            return crate::cmd::kpack::inspect_archive(&args.file, &input, args.json)
        }
        Inspection::CodeObject { hint } => hint,
    };
    let co = CodeObject::parse(&input).with_context(|| {
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

    gfxkit_text::inspect::code_object(
        &args.file.display().to_string(),
        &co,
        args.demangle,
        &mut std::io::stdout().lock(),
    )?;
    let issues = co.issues();
    for issue in &issues {
        eprintln!("gfxkit: warning: {}: {issue}", args.file.display());
    }
    Ok(ExitCode::SUCCESS)
}
