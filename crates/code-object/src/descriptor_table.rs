//! The kernel-descriptor fields as data: one row per field, with the word it lives in, its bit
//! position and width, the generations that have it, and how llvm-objdump prints it.
//!
//! Sources: AMDGPUUsage "Kernel Descriptor" (the code object V3 tables: kernel descriptor,
//! `COMPUTE_PGM_RSRC1` GFX6-GFX12, `COMPUTE_PGM_RSRC2`, `COMPUTE_PGM_RSRC3` GFX90A/GFX942,
//! GFX10-GFX11, GFX12, `KERNEL_CODE_PROPERTIES`, `KERNARG_PRELOAD`) and what
//! `llvm-objdump-19 -d -j .rodata --disassemble-symbols=<k>.kd` prints for each family: the rows
//! are in its print order, with its directive names (without `.amdhsa_`) and its comments
//! (`; SHARED_VGPR_COUNT 0`, keyed in lower case). Bits no applicable row covers are reserved:
//! llvm-objdump refuses a descriptor with one set, and so does [`crate::descriptor`].
//!
//! One deliberate difference: from GFX10 on, `GRANULATED_WAVEFRONT_SGPR_COUNT` (RSRC1 bits 6..9)
//! is reserved and llvm-objdump-19 refuses a descriptor that sets it, yet llc-19 itself sets it
//! for kernels with more than 8 SGPRs. gfxkit decodes it as the hidden field
//! `granulated_wavefront_sgpr_count` instead of refusing the compiler's own output.
//!
//! LLVM 19's disassembler has no GFX6/GFX7 support; the GFX6-GFX8 layout is the same, so those
//! generations use the GFX8 rows.

use gfxkit_spec::Generation;

/// Where a field lives in the 64-byte descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Word {
    /// Bytes 0..4: `GROUP_SEGMENT_FIXED_SIZE`.
    GroupSegmentFixedSize,
    /// Bytes 4..8: `PRIVATE_SEGMENT_FIXED_SIZE`.
    PrivateSegmentFixedSize,
    /// Bytes 8..12: `KERNARG_SIZE`.
    KernargSize,
    /// Bytes 44..48: `COMPUTE_PGM_RSRC3`.
    Rsrc3,
    /// Bytes 48..52: `COMPUTE_PGM_RSRC1`.
    Rsrc1,
    /// Bytes 52..56: `COMPUTE_PGM_RSRC2`.
    Rsrc2,
    /// Bytes 56..58: `KERNEL_CODE_PROPERTIES`.
    KernelCodeProperties,
    /// Bytes 58..60: `KERNARG_PRELOAD`.
    KernargPreload,
    /// No bits: a value llvm-objdump prints that the descriptor cannot hold (such as
    /// `reserve_vcc`, printed as 0).
    None,
}

impl Word {
    /// Every word that holds bits, in descriptor order.
    pub const ALL: [Word; 8] = [
        Word::GroupSegmentFixedSize,
        Word::PrivateSegmentFixedSize,
        Word::KernargSize,
        Word::Rsrc3,
        Word::Rsrc1,
        Word::Rsrc2,
        Word::KernelCodeProperties,
        Word::KernargPreload,
    ];

    /// Byte offset in the descriptor.
    pub fn offset(self) -> usize {
        match self {
            Word::GroupSegmentFixedSize => 0,
            Word::PrivateSegmentFixedSize => 4,
            Word::KernargSize => 8,
            Word::Rsrc3 => 44,
            Word::Rsrc1 => 48,
            Word::Rsrc2 => 52,
            Word::KernelCodeProperties => 56,
            Word::KernargPreload => 58,
            Word::None => 0,
        }
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            Word::KernelCodeProperties | Word::KernargPreload => 2,
            Word::None => 0,
            _ => 4,
        }
    }

    /// The name AMDGPUUsage gives it.
    pub fn name(self) -> &'static str {
        match self {
            Word::GroupSegmentFixedSize => "GROUP_SEGMENT_FIXED_SIZE",
            Word::PrivateSegmentFixedSize => "PRIVATE_SEGMENT_FIXED_SIZE",
            Word::KernargSize => "KERNARG_SIZE",
            Word::Rsrc3 => "COMPUTE_PGM_RSRC3",
            Word::Rsrc1 => "COMPUTE_PGM_RSRC1",
            Word::Rsrc2 => "COMPUTE_PGM_RSRC2",
            Word::KernelCodeProperties => "KERNEL_CODE_PROPERTIES",
            Word::KernargPreload => "KERNARG_PRELOAD",
            Word::None => "-",
        }
    }
}

/// A property of the processor (or of the descriptor itself) a row may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Needs {
    /// Nothing beyond the generation range.
    Any,
    /// The GFX90A unified VGPR/AGPR file (GFX90A, GFX94x).
    UnifiedVgprFile,
    /// Architected flat scratch (GFX940+, GFX11+).
    ArchitectedFlatScratch,
    /// No architected flat scratch.
    NoArchitectedFlatScratch,
    /// The descriptor selects wave32 (`wavefront_size32` = 1).
    Wave32,
    /// The descriptor selects wave64.
    Wave64,
    /// Code object V5 or later (llvm-objdump reads the version from `EI_ABIVERSION`).
    CodeObjectV5,
    /// Code object V4 or earlier.
    BeforeCodeObjectV5,
}

/// How llvm-objdump shows a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Print {
    /// `.amdhsa_<name> <value>`.
    Directive,
    /// `.amdhsa_<name> <value>`, only when the value is not zero.
    DirectiveIfNonzero,
    /// `; <NAME> <value>` (a field the assembler has no directive for).
    Comment(&'static str),
    /// Not printed: llvm-objdump accepts the bits and ignores them. gfxkit still decodes them
    /// (for example `user_sgpr_count`), so encoding round-trips.
    Hidden,
}

/// How the printed value follows from the field's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Value {
    /// The bits as an unsigned number.
    Raw,
    /// `(bits + 1) * granule`.
    Granules(u32),
    /// `(bits + 1) * ` the VGPR encoding granule: 8 with the unified register file or in
    /// wave32, else 4.
    VgprGranules,
    /// A constant: the field has no bits (`Word::None`).
    Constant(u64),
}

/// One field of the kernel descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Field {
    /// Directive name without `.amdhsa_` (or the lower-cased comment name).
    pub name: &'static str,
    /// The word holding it.
    pub word: Word,
    /// Lowest bit in the word.
    pub shift: u8,
    /// Width in bits (0 for constants).
    pub width: u8,
    /// First generation that has it.
    pub from: Generation,
    /// Last generation that has it.
    pub to: Generation,
    /// A further condition.
    pub needs: Needs,
    /// How llvm-objdump prints it.
    pub print: Print,
    /// How the printed value follows from the bits.
    pub value: Value,
}

impl Field {
    /// The mask of the field's bits within its word.
    pub fn mask(&self) -> u64 {
        if self.width == 0 {
            0
        } else {
            ((1u64 << self.width) - 1) << self.shift
        }
    }
}

use Generation::{Gfx10, Gfx11, Gfx12, Gfx6, Gfx9};
use Needs::{
    Any, ArchitectedFlatScratch as ArchFs, NoArchitectedFlatScratch as NoArchFs, UnifiedVgprFile,
};
use Print::{Comment, Directive, DirectiveIfNonzero, Hidden};
use Value::{Constant, Granules, Raw, VgprGranules};
use Word::{
    GroupSegmentFixedSize, KernargPreload, KernargSize, KernelCodeProperties as Kcp,
    PrivateSegmentFixedSize, Rsrc1, Rsrc2, Rsrc3,
};

/// A row: the columns of [`Field`] in order.
#[allow(clippy::too_many_arguments)]
const fn f(
    name: &'static str,
    word: Word,
    shift: u8,
    width: u8,
    from: Generation,
    to: Generation,
    needs: Needs,
    print: Print,
    value: Value,
) -> Field {
    Field {
        name,
        word,
        shift,
        width,
        from,
        to,
        needs,
        print,
        value,
    }
}

/// A one-bit (or `width`-bit) raw directive present on every generation.
const fn all(name: &'static str, word: Word, shift: u8, width: u8) -> Field {
    f(name, word, shift, width, Gfx6, Gfx12, Any, Directive, Raw)
}

/// Every field, in llvm-objdump-19's print order.
#[rustfmt::skip]
pub static FIELDS: &[Field] = &[
    all("group_segment_fixed_size", GroupSegmentFixedSize, 0, 32),
    all("private_segment_fixed_size", PrivateSegmentFixedSize, 0, 32),
    all("kernarg_size", KernargSize, 0, 32),
    // COMPUTE_PGM_RSRC3 (all zero before GFX9, and on GFX9 without the unified register file).
    f("accum_offset", Rsrc3, 0, 6, Gfx9, Gfx9, UnifiedVgprFile, Directive, Granules(4)),
    f("tg_split", Rsrc3, 16, 1, Gfx9, Gfx9, UnifiedVgprFile, Directive, Raw),
    f("shared_vgpr_count", Rsrc3, 0, 4, Gfx10, Gfx11, Needs::Wave64, Directive, Raw),
    f("shared_vgpr_count", Rsrc3, 0, 4, Gfx10, Gfx11, Needs::Wave32, Comment("SHARED_VGPR_COUNT"), Raw),
    f("inst_pref_size", Rsrc3, 4, 6, Gfx11, Gfx11, Any, Comment("INST_PREF_SIZE"), Raw),
    f("trap_on_start", Rsrc3, 10, 1, Gfx11, Gfx11, Any, Comment("TRAP_ON_START"), Raw),
    f("trap_on_end", Rsrc3, 11, 1, Gfx11, Gfx11, Any, Comment("TRAP_ON_END"), Raw),
    f("inst_pref_size", Rsrc3, 4, 8, Gfx12, Gfx12, Any, Comment("INST_PREF_SIZE"), Raw),
    f("glg_en", Rsrc3, 13, 1, Gfx12, Gfx12, Any, Comment("GLG_EN"), Raw),
    f("image_op", Rsrc3, 31, 1, Gfx11, Gfx12, Any, Comment("IMAGE_OP"), Raw),
    // COMPUTE_PGM_RSRC1.
    f("next_free_vgpr", Rsrc1, 0, 6, Gfx6, Gfx12, Any, Directive, VgprGranules),
    f("reserve_vcc", Word::None, 0, 0, Gfx6, Gfx12, Any, Directive, Constant(0)),
    f("reserve_flat_scratch", Word::None, 0, 0, Gfx6, Gfx12, NoArchFs, Directive, Constant(0)),
    f("reserve_xnack_mask", Word::None, 0, 0, Gfx6, Gfx12, Any, Directive, Constant(0)),
    f("next_free_sgpr", Rsrc1, 6, 4, Gfx6, Gfx9, Any, Directive, Granules(8)),
    f("next_free_sgpr", Word::None, 0, 0, Gfx10, Gfx12, Any, Directive, Constant(8)),
    // Reserved from GFX10 on, but llc-19 writes it (and llvm-objdump-19 then refuses the
    // descriptor); decoded so such descriptors still read.
    f("granulated_wavefront_sgpr_count", Rsrc1, 6, 4, Gfx10, Gfx12, Any, Hidden, Raw),
    all("float_round_mode_32", Rsrc1, 12, 2),
    all("float_round_mode_16_64", Rsrc1, 14, 2),
    all("float_denorm_mode_32", Rsrc1, 16, 2),
    all("float_denorm_mode_16_64", Rsrc1, 18, 2),
    f("dx10_clamp", Rsrc1, 21, 1, Gfx6, Gfx11, Any, Directive, Raw),
    f("ieee_mode", Rsrc1, 23, 1, Gfx6, Gfx11, Any, Directive, Raw),
    f("rsrc1_bit23", Rsrc1, 23, 1, Gfx12, Gfx12, Any, Hidden, Raw),
    f("fp16_overflow", Rsrc1, 26, 1, Gfx9, Gfx12, Any, Directive, Raw),
    f("workgroup_processor_mode", Rsrc1, 29, 1, Gfx10, Gfx12, Any, Directive, Raw),
    f("memory_ordered", Rsrc1, 30, 1, Gfx10, Gfx12, Any, Directive, Raw),
    f("forward_progress", Rsrc1, 31, 1, Gfx10, Gfx12, Any, Directive, Raw),
    f("round_robin_scheduling", Rsrc1, 21, 1, Gfx12, Gfx12, Any, Directive, Raw),
    // COMPUTE_PGM_RSRC2.
    f("enable_private_segment", Rsrc2, 0, 1, Gfx6, Gfx12, ArchFs, Directive, Raw),
    f("system_sgpr_private_segment_wavefront_offset", Rsrc2, 0, 1, Gfx6, Gfx12, NoArchFs, Directive, Raw),
    f("user_sgpr_count", Rsrc2, 1, 5, Gfx6, Gfx12, Any, Hidden, Raw),
    f("enable_trap_handler", Rsrc2, 6, 1, Gfx6, Gfx12, Any, Hidden, Raw),
    all("system_sgpr_workgroup_id_x", Rsrc2, 7, 1),
    all("system_sgpr_workgroup_id_y", Rsrc2, 8, 1),
    all("system_sgpr_workgroup_id_z", Rsrc2, 9, 1),
    all("system_sgpr_workgroup_info", Rsrc2, 10, 1),
    all("system_vgpr_workitem_id", Rsrc2, 11, 2),
    all("exception_fp_ieee_invalid_op", Rsrc2, 24, 1),
    all("exception_fp_denorm_src", Rsrc2, 25, 1),
    all("exception_fp_ieee_div_zero", Rsrc2, 26, 1),
    all("exception_fp_ieee_overflow", Rsrc2, 27, 1),
    all("exception_fp_ieee_underflow", Rsrc2, 28, 1),
    all("exception_fp_ieee_inexact", Rsrc2, 29, 1),
    all("exception_int_div_zero", Rsrc2, 30, 1),
    // KERNEL_CODE_PROPERTIES.
    f("user_sgpr_private_segment_buffer", Kcp, 0, 1, Gfx6, Gfx12, NoArchFs, Directive, Raw),
    f("user_sgpr_private_segment_buffer", Kcp, 0, 1, Gfx6, Gfx12, ArchFs, Hidden, Raw),
    all("user_sgpr_dispatch_ptr", Kcp, 1, 1),
    all("user_sgpr_queue_ptr", Kcp, 2, 1),
    all("user_sgpr_kernarg_segment_ptr", Kcp, 3, 1),
    all("user_sgpr_dispatch_id", Kcp, 4, 1),
    f("user_sgpr_flat_scratch_init", Kcp, 5, 1, Gfx6, Gfx12, NoArchFs, Directive, Raw),
    f("user_sgpr_flat_scratch_init", Kcp, 5, 1, Gfx6, Gfx12, ArchFs, Hidden, Raw),
    all("user_sgpr_private_segment_size", Kcp, 6, 1),
    f("wavefront_size32", Kcp, 10, 1, Gfx6, Generation::Gfx8, Any, Hidden, Raw),
    f("wavefront_size32", Kcp, 10, 1, Gfx10, Gfx12, Any, Directive, Raw),
    f("uses_dynamic_stack", Kcp, 11, 1, Gfx6, Gfx12, Needs::CodeObjectV5, Directive, Raw),
    f("uses_dynamic_stack", Kcp, 11, 1, Gfx6, Gfx12, Needs::BeforeCodeObjectV5, Hidden, Raw),
    // KERNARG_PRELOAD.
    f("user_sgpr_kernarg_preload_length", KernargPreload, 0, 7, Gfx6, Gfx12, Any, DirectiveIfNonzero, Raw),
    f("user_sgpr_kernarg_preload_offset", KernargPreload, 7, 9, Gfx6, Gfx12, Any, DirectiveIfNonzero, Raw),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn fields_fit_their_words_and_constants_have_no_bits() {
        for fd in FIELDS {
            assert!(fd.from <= fd.to, "{}", fd.name);
            match fd.word {
                Word::None => {
                    assert_eq!(fd.width, 0, "{}", fd.name);
                    assert!(matches!(fd.value, Constant(_)), "{}", fd.name);
                }
                w => {
                    assert!(fd.width > 0, "{}", fd.name);
                    assert!(
                        usize::from(fd.shift) + usize::from(fd.width) <= w.size() * 8,
                        "{}",
                        fd.name
                    );
                    assert!(!matches!(fd.value, Constant(_)), "{}", fd.name);
                }
            }
        }
    }

    #[test]
    fn no_two_fields_of_one_processor_share_a_bit() {
        // For every combination of generation and condition a processor can have, the bits of
        // the rows that apply are disjoint.
        use Generation::*;
        for generation in [Gfx6, Gfx7, Gfx8, Gfx9, Gfx10, Gfx11, Gfx12] {
            for v5 in [false, true] {
                for unified in [false, true] {
                    for archfs in [false, true] {
                        for wave32 in [false, true] {
                            let mut seen: HashMap<(Word, u8), &str> = HashMap::new();
                            for fd in FIELDS {
                                let ok = fd.from <= generation
                                    && generation <= fd.to
                                    && match fd.needs {
                                        Any => true,
                                        UnifiedVgprFile => unified,
                                        ArchFs => archfs,
                                        NoArchFs => !archfs,
                                        Needs::Wave32 => wave32,
                                        Needs::Wave64 => !wave32,
                                        Needs::CodeObjectV5 => v5,
                                        Needs::BeforeCodeObjectV5 => !v5,
                                    };
                                if !ok {
                                    continue;
                                }
                                for bit in fd.shift..fd.shift + fd.width {
                                    if let Some(other) = seen.insert((fd.word, bit), fd.name) {
                                        panic!(
                                            "{generation:?}: bit {bit} of {:?} in {other} and {}",
                                            fd.word, fd.name
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
