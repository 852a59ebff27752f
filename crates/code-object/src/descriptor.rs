//! Kernel descriptors (code object V3 and later): the 64-byte records named `<kernel>.kd` that
//! the HSA runtime reads to launch a kernel. Source: AMDGPUUsage "Kernel Descriptor".
//!
//! | offset | size | field                            |
//! |--------|------|----------------------------------|
//! | 0      | 4    | `group_segment_fixed_size`       |
//! | 4      | 4    | `private_segment_fixed_size`     |
//! | 8      | 4    | `kernarg_size`                   |
//! | 16     | 8    | `kernel_code_entry_byte_offset`  |
//! | 44     | 4    | `compute_pgm_rsrc3`              |
//! | 48     | 4    | `compute_pgm_rsrc1`              |
//! | 52     | 4    | `compute_pgm_rsrc2`              |
//! | 56     | 2    | `kernel_code_properties`         |
//! | 58     | 2    | `kernarg_preload`                |

use crate::descriptor_table::{Field, Needs, Print, Value, Word, FIELDS};
use crate::error::{Error, ErrorKind};
use gfxkit_bytes::{u16_in, u32_in, u64_in, Cursor};
use gfxkit_spec::{CodeObjectVersion, Generation, HardwareLimits};
use object::elf::{
    FileHeader64, SHN_LORESERVE, SHN_UNDEF, SHT_DYNSYM, SHT_NOBITS, SHT_SYMTAB, STT_OBJECT,
};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;
use serde::Serialize;

/// Size of a kernel descriptor.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// One kernel descriptor, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelDescriptor<'data> {
    /// The symbol naming it (`<kernel>.kd`).
    pub symbol: &'data str,
    /// Byte offset of the descriptor in the code object.
    pub offset: u64,
    /// LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernel argument bytes.
    pub kernarg_size: u32,
    /// Offset of the kernel's code from the descriptor (before relocation in `.o` files).
    pub kernel_code_entry_byte_offset: i64,
    /// `COMPUTE_PGM_RSRC3`.
    pub compute_pgm_rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1` (granulated VGPR and SGPR counts in bits 0..5 and 6..9).
    pub compute_pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: u32,
    /// `KERNEL_CODE_PROPERTIES` bits.
    pub kernel_code_properties: u16,
    /// `KERNARG_PRELOAD`.
    pub kernarg_preload: u16,
    /// The 64 bytes as found.
    #[serde(skip)]
    pub raw: [u8; KERNEL_DESCRIPTOR_SIZE],
    /// The code-object version of the object holding it (`None`: taken as V5 or later). Some
    /// fields exist from V5 on (`uses_dynamic_stack`).
    #[serde(skip)]
    pub code_object_version: Option<CodeObjectVersion>,
}

/// One decoded field: its table row and the value llvm-objdump prints for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldValue {
    /// The row of [`FIELDS`].
    pub field: &'static Field,
    /// The value as printed (granules already multiplied out).
    pub value: u64,
}

impl FieldValue {
    /// Whether llvm-objdump prints this field for this value.
    pub fn printed(&self) -> bool {
        match self.field.print {
            Print::Directive | Print::Comment(_) => true,
            Print::DirectiveIfNonzero => self.value != 0,
            Print::Hidden => false,
        }
    }

    /// The line llvm-objdump prints (`.amdhsa_next_free_vgpr 8`, `; SHARED_VGPR_COUNT 0`), or
    /// `None` when it prints none.
    pub fn objdump_line(&self) -> Option<String> {
        if !self.printed() {
            return None;
        }
        Some(match self.field.print {
            Print::Comment(name) => format!("; {name} {}", self.value),
            _ => format!(".amdhsa_{} {}", self.field.name, self.value),
        })
    }
}

/// A descriptor llvm-objdump (and gfxkit) refuses to decode: bits set that the processor's
/// layout reserves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservedBits {
    /// The word with the bits (`Word::None` for the reserved byte ranges).
    pub word: Word,
    /// Byte offset of the word (or of the first nonzero reserved byte) in the descriptor.
    pub offset: usize,
    /// The reserved bits that are set.
    pub bits: u64,
    /// The generation whose layout was applied.
    pub generation: Generation,
}

impl std::fmt::Display for ReservedBits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.word == Word::None {
            write!(
                f,
                "reserved byte {} of the kernel descriptor is 0x{:02x}, must be 0",
                self.offset, self.bits
            )
        } else {
            let low = self.bits.trailing_zeros();
            let high = 63 - self.bits.leading_zeros();
            let range = if low == high {
                format!("bit {low}")
            } else {
                format!("bits {low}..={high}")
            };
            write!(
                f,
                "{} (descriptor byte {}) has reserved {range} set (0x{:x}), which {} does not define",
                self.word.name(),
                self.offset,
                self.bits,
                self.generation.name()
            )
        }
    }
}

impl std::error::Error for ReservedBits {}

/// Why a set of field values cannot be encoded as a descriptor for a processor.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeDescriptorError {
    /// No field of that name exists for the processor.
    UnknownField(String),
    /// The value does not fit the field (too large, or not a multiple of its granule).
    BadValue {
        /// Field name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// What the field accepts.
        expected: String,
    },
}

impl std::fmt::Display for EncodeDescriptorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeDescriptorError::UnknownField(n) => {
                write!(f, "no kernel-descriptor field {n} for this processor")
            }
            EncodeDescriptorError::BadValue {
                field,
                value,
                expected,
            } => write!(f, "{field} = {value}: expected {expected}"),
        }
    }
}

impl std::error::Error for EncodeDescriptorError {}

/// Reserved byte ranges of the descriptor (offset, length).
const RESERVED_BYTES: [(usize, usize); 3] = [(12, 4), (24, 20), (60, 4)];

fn word_value(raw: &[u8; KERNEL_DESCRIPTOR_SIZE], word: Word) -> u64 {
    let (c, at) = (Cursor::new(raw), word.offset() as u64);
    // The table's words are constants inside the 64 bytes: the reads cannot fail.
    match word.size() {
        2 => c.u16(at).map(u64::from),
        4 => c.u32(at).map(u64::from),
        _ => Ok(0),
    }
    .unwrap_or(0)
}

fn set_word(raw: &mut [u8; KERNEL_DESCRIPTOR_SIZE], word: Word, value: u64) {
    let at = word.offset();
    match word.size() {
        2 => raw[at..at + 2].copy_from_slice(&(value as u16).to_le_bytes()),
        4 => raw[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes()),
        _ => {}
    }
}

/// Whether a code-object version has the V5 descriptor fields (`None`: the latest).
fn is_v5(cov: Option<CodeObjectVersion>) -> bool {
    cov.map_or(true, |v| v >= CodeObjectVersion::V5)
}

/// Whether `field` is part of the layout for `hw` in a code object of version `cov` (`None`:
/// the latest), with the descriptor in `wave32` mode.
pub fn applies(
    field: &Field,
    hw: &HardwareLimits,
    cov: Option<CodeObjectVersion>,
    wave32: bool,
) -> bool {
    hw.generation >= field.from
        && hw.generation <= field.to
        && match field.needs {
            Needs::Any => true,
            Needs::UnifiedVgprFile => hw.unified_vgpr_file,
            Needs::ArchitectedFlatScratch => hw.architected_flat_scratch,
            Needs::NoArchitectedFlatScratch => !hw.architected_flat_scratch,
            Needs::Wave32 => wave32,
            Needs::Wave64 => !wave32,
            Needs::CodeObjectV5 => is_v5(cov),
            Needs::BeforeCodeObjectV5 => !is_v5(cov),
        }
}

/// The generation whose layout applies: GFX6 and GFX7 share GFX8's.
fn layout_limits(hw: &HardwareLimits) -> HardwareLimits {
    let mut hw = *hw;
    if hw.generation < Generation::Gfx8 && hw.generation > Generation::R600 {
        hw.generation = Generation::Gfx8;
    }
    hw
}

fn granule(field: &Field, hw: &HardwareLimits, wave32: bool) -> Option<u64> {
    match field.value {
        Value::Granules(g) => Some(u64::from(g)),
        Value::VgprGranules => Some(u64::from(hw.vgpr_encoding_granule(wave32))),
        _ => None,
    }
}

/// Whether a descriptor's `KERNEL_CODE_PROPERTIES` select wave32 (GFX10+).
fn wave32_bit(raw: &[u8; KERNEL_DESCRIPTOR_SIZE], hw: &HardwareLimits) -> bool {
    hw.generation >= Generation::Gfx10
        && word_value(raw, Word::KernelCodeProperties) & (1 << 10) != 0
}

/// Every field of the layout for `hw` in a code object of version `cov`, in llvm-objdump's
/// print order, with the values it prints for the descriptor `raw`.
fn field_values<'a>(
    raw: &'a [u8; KERNEL_DESCRIPTOR_SIZE],
    hw: &HardwareLimits,
    cov: Option<CodeObjectVersion>,
) -> impl Iterator<Item = FieldValue> + 'a {
    let hw = layout_limits(hw);
    let wave32 = wave32_bit(raw, &hw);
    FIELDS.iter().filter_map(move |field| {
        if !applies(field, &hw, cov, wave32) {
            return None;
        }
        let bits = (word_value(raw, field.word) & field.mask()) >> field.shift;
        let value = match (field.value, granule(field, &hw, wave32)) {
            (Value::Constant(c), _) => c,
            (_, Some(g)) => (bits + 1) * g,
            _ => bits,
        };
        Some(FieldValue { field, value })
    })
}

/// A decoded descriptor ([`KernelDescriptor::decoded`]): its fields as `(name, value)` in
/// llvm-objdump's print order, serialized as a JSON object. Held as the descriptor's bytes
/// and the processor's limits, decoded when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorFields {
    raw: [u8; KERNEL_DESCRIPTOR_SIZE],
    hw: &'static HardwareLimits,
    cov: Option<CodeObjectVersion>,
}

impl DescriptorFields {
    /// Each field's name and value, in llvm-objdump's print order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        field_values(&self.raw, self.hw, self.cov).map(|f| (f.field.name, f.value))
    }

    /// The value of field `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

impl Serialize for DescriptorFields {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.iter().count()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, &v)?;
        }
        map.end()
    }
}

/// Encodes the field values `values` (names and values as llvm-objdump prints them, see
/// [`KernelDescriptor::fields`]) into a descriptor for a processor with limits `hw`, in a code
/// object of version `cov` (`None`: the latest). Fields not given are zero; constants, when
/// given, must have their value.
pub fn encode(
    hw: &HardwareLimits,
    cov: Option<CodeObjectVersion>,
    values: &[(&str, u64)],
    kernel_code_entry_byte_offset: i64,
) -> Result<[u8; KERNEL_DESCRIPTOR_SIZE], EncodeDescriptorError> {
    let hw = layout_limits(hw);
    let wave32 = hw.generation >= Generation::Gfx10
        && values
            .iter()
            .any(|(n, v)| *n == "wavefront_size32" && *v != 0);
    let mut raw = [0u8; KERNEL_DESCRIPTOR_SIZE];
    raw[16..24].copy_from_slice(&kernel_code_entry_byte_offset.to_le_bytes());
    for (name, value) in values {
        let field = FIELDS
            .iter()
            .find(|f| f.name == *name && applies(f, &hw, cov, wave32))
            .ok_or_else(|| EncodeDescriptorError::UnknownField((*name).to_owned()))?;
        let bad = |expected: String| EncodeDescriptorError::BadValue {
            field: field.name,
            value: *value,
            expected,
        };
        let bits = match (field.value, granule(field, &hw, wave32)) {
            (Value::Constant(c), _) => {
                if *value != c {
                    return Err(bad(format!("{c} (a constant)")));
                }
                continue;
            }
            (_, Some(g)) => {
                if *value < g || *value % g != 0 {
                    return Err(bad(format!("a positive multiple of {g}")));
                }
                *value / g - 1
            }
            _ => *value,
        };
        let max = (1u64 << field.width) - 1;
        if bits > max {
            return Err(bad(match granule(field, &hw, wave32) {
                Some(g) => format!("at most {}", (max + 1) * g),
                None => format!("at most {max}"),
            }));
        }
        let word = word_value(&raw, field.word) | (bits << field.shift);
        set_word(&mut raw, field.word, word);
    }
    Ok(raw)
}

impl<'data> KernelDescriptor<'data> {
    /// Decodes the 64 bytes `raw` found at `offset` for `symbol`.
    pub fn decode(
        symbol: &'data str,
        offset: u64,
        raw: &[u8; KERNEL_DESCRIPTOR_SIZE],
    ) -> KernelDescriptor<'data> {
        const N: usize = KERNEL_DESCRIPTOR_SIZE;
        KernelDescriptor {
            symbol,
            offset,
            group_segment_fixed_size: u32_in::<0, N>(raw),
            private_segment_fixed_size: u32_in::<4, N>(raw),
            kernarg_size: u32_in::<8, N>(raw),
            kernel_code_entry_byte_offset: u64_in::<16, N>(raw) as i64,
            compute_pgm_rsrc3: u32_in::<44, N>(raw),
            compute_pgm_rsrc1: u32_in::<48, N>(raw),
            compute_pgm_rsrc2: u32_in::<52, N>(raw),
            kernel_code_properties: u16_in::<56, N>(raw),
            kernarg_preload: u16_in::<58, N>(raw),
            raw: *raw,
            code_object_version: None,
        }
    }

    /// The same descriptor, read as part of a code object of version `cov`.
    pub fn with_code_object_version(mut self, cov: Option<CodeObjectVersion>) -> Self {
        self.code_object_version = cov;
        self
    }

    /// Whether the descriptor selects wave32 (`wavefront_size32`, GFX10+ only).
    pub fn wave32(&self, hw: &HardwareLimits) -> bool {
        wave32_bit(&self.raw, hw)
    }

    /// Every field of the layout for a processor with limits `hw`, in llvm-objdump's print
    /// order, with the values it prints (see [`crate::descriptor_table`]). A descriptor with
    /// reserved bits set is refused, as llvm-objdump refuses it.
    pub fn fields(&self, hw: &HardwareLimits) -> Result<Vec<FieldValue>, ReservedBits> {
        self.check_reserved(hw)?;
        Ok(field_values(&self.raw, hw, self.code_object_version).collect())
    }

    /// [`KernelDescriptor::fields`] kept as the 64 bytes they are decoded from (a listing of
    /// a million kernels holds 90 bytes a descriptor, not 60 decoded fields).
    pub fn decoded(&self, hw: &'static HardwareLimits) -> Result<DescriptorFields, ReservedBits> {
        self.check_reserved(hw)?;
        Ok(DescriptorFields {
            raw: self.raw,
            hw,
            cov: self.code_object_version,
        })
    }

    /// Refuses a descriptor with reserved bits set for a processor with limits `hw`.
    fn check_reserved(&self, hw: &HardwareLimits) -> Result<(), ReservedBits> {
        let hw = layout_limits(hw);
        let cov = self.code_object_version;
        let wave32 = wave32_bit(&self.raw, &hw);
        for (at, len) in RESERVED_BYTES {
            if let Some(i) = (at..at + len).find(|&i| self.raw[i] != 0) {
                return Err(ReservedBits {
                    word: Word::None,
                    offset: i,
                    bits: u64::from(self.raw[i]),
                    generation: hw.generation,
                });
            }
        }
        for word in Word::ALL {
            let defined = FIELDS
                .iter()
                .filter(|f| f.word == word && applies(f, &hw, cov, wave32))
                .fold(0u64, |m, f| m | f.mask());
            let bits = word_value(&self.raw, word) & !defined;
            if bits != 0 {
                return Err(ReservedBits {
                    word,
                    offset: word.offset(),
                    bits,
                    generation: hw.generation,
                });
            }
        }
        Ok(())
    }

    /// The value of field `name` (as [`KernelDescriptor::fields`] gives it), if the layout
    /// for `hw` has it and the descriptor decodes.
    pub fn field(&self, hw: &HardwareLimits, name: &str) -> Option<u64> {
        self.fields(hw)
            .ok()?
            .into_iter()
            .find(|f| f.field.name == name)
            .map(|f| f.value)
    }

    /// The kernel's name: the symbol without `.kd`.
    pub fn kernel_name(&self) -> &'data str {
        self.symbol.strip_suffix(".kd").unwrap_or(self.symbol)
    }
}

/// The kernel descriptors of a 64-bit code object, in symbol-table order: `STT_OBJECT` symbols
/// named `*.kd` of `.symtab` (or `.dynsym` when there is no `.symtab`). Objects without section
/// headers have none.
pub(crate) fn find<'data>(
    data: &'data [u8],
    header: &'data FileHeader64<LittleEndian>,
    cov: Option<CodeObjectVersion>,
) -> Result<Vec<KernelDescriptor<'data>>, Error> {
    let e = LittleEndian;
    let shoff = header.e_shoff(e);
    let sections = header
        .sections(e, data)
        .map_err(|err| bad(format!("section table: {err}"), shoff))?;
    let mut symbols = sections
        .symbols(e, data, SHT_SYMTAB)
        .map_err(|err| bad(format!("symbol table: {err}"), shoff))?;
    if symbols.is_empty() {
        symbols = sections
            .symbols(e, data, SHT_DYNSYM)
            .map_err(|err| bad(format!("dynamic symbol table: {err}"), shoff))?;
    }
    let symtab_offset = sections
        .section(symbols.section())
        .map_or(shoff, |s| s.sh_offset(e));
    let relocatable = header.e_type(e) == object::elf::ET_REL;
    let mut out = Vec::new();
    for (index, sym) in symbols.enumerate() {
        let at = symtab_offset.saturating_add((index.0 as u64).saturating_mul(24));
        if sym.st_type() != STT_OBJECT {
            continue;
        }
        let Ok(name) = sym.name(e, symbols.strings()) else {
            continue;
        };
        let Some(name) = std::str::from_utf8(name)
            .ok()
            .filter(|n| n.ends_with(".kd"))
        else {
            continue;
        };
        let shndx = sym.st_shndx(e);
        if shndx == SHN_UNDEF || shndx >= SHN_LORESERVE {
            continue;
        }
        let size = sym.st_size(e);
        if size != KERNEL_DESCRIPTOR_SIZE as u64 {
            return Err(bad(
                format!("kernel descriptor {name} has size {size}, expected 64"),
                at,
            ));
        }
        let section = sections
            .section(object::SectionIndex(usize::from(shndx)))
            .map_err(|err| bad(format!("kernel descriptor {name}: {err}"), at))?;
        if section.sh_type(e) == SHT_NOBITS {
            return Err(bad(
                format!("kernel descriptor {name} is in a NOBITS section"),
                at,
            ));
        }
        let value = sym.st_value(e);
        let sh_offset = section.sh_offset(e);
        let sh_size = section.sh_size(e);
        // In relocatable files a symbol's value is an offset in its section; in linked files
        // it is an address.
        let in_section = if relocatable {
            Some(value)
        } else {
            value.checked_sub(section.sh_addr(e))
        };
        let offset = in_section
            .filter(|o| o.checked_add(64).is_some_and(|end| end <= sh_size))
            .and_then(|o| sh_offset.checked_add(o))
            .filter(|o| {
                o.checked_add(64)
                    .is_some_and(|end| end <= data.len() as u64)
            })
            .ok_or_else(|| {
                bad(
                    format!("kernel descriptor {name} lies outside its section or the file"),
                    at,
                )
            })?;
        let start = offset as usize;
        let mut raw = [0u8; KERNEL_DESCRIPTOR_SIZE];
        raw.copy_from_slice(&data[start..start + KERNEL_DESCRIPTOR_SIZE]);
        out.push(KernelDescriptor::decode(name, offset, &raw).with_code_object_version(cov));
    }
    Ok(out)
}

fn bad(detail: String, offset: u64) -> Error {
    Error::new(ErrorKind::BadElf { detail }, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_fields_at_their_offsets() {
        let mut raw = [0u8; 64];
        raw[0..4].copy_from_slice(&256u32.to_le_bytes());
        raw[4..8].copy_from_slice(&16u32.to_le_bytes());
        raw[8..12].copy_from_slice(&272u32.to_le_bytes());
        raw[16..24].copy_from_slice(&(-64i64).to_le_bytes());
        raw[44..48].copy_from_slice(&3u32.to_le_bytes());
        raw[48..52].copy_from_slice(&0x00af_0041u32.to_le_bytes());
        raw[52..56].copy_from_slice(&0x92u32.to_le_bytes());
        raw[56..58].copy_from_slice(&0x0409u16.to_le_bytes());
        raw[58..60].copy_from_slice(&2u16.to_le_bytes());
        let d = KernelDescriptor::decode("k.kd", 0x1000, &raw);
        assert_eq!(d.kernel_name(), "k");
        assert_eq!(d.group_segment_fixed_size, 256);
        assert_eq!(d.private_segment_fixed_size, 16);
        assert_eq!(d.kernarg_size, 272);
        assert_eq!(d.kernel_code_entry_byte_offset, -64);
        assert_eq!(d.compute_pgm_rsrc3, 3);
        assert_eq!(d.compute_pgm_rsrc1, 0x00af_0041);
        assert_eq!(d.compute_pgm_rsrc2, 0x92);
        assert_eq!(d.kernel_code_properties, 0x0409);
        assert_eq!(d.kernarg_preload, 2);
    }

    use gfxkit_spec::hardware::*;

    const LAYOUTS: [HardwareLimits; 10] = [
        HW_GFX6, HW_GFX8, HW_GFX9, HW_GFX90A, HW_GFX940, HW_GFX10_1, HW_GFX10_3, HW_GFX11,
        HW_GFX12, HW_GFX1250,
    ];

    /// Random bits in exactly the fields of a layout.
    fn random_raw(hw: &HardwareLimits, cov: Option<CodeObjectVersion>, seed: &mut u64) -> [u8; 64] {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let lhw = layout_limits(hw);
        let wave32 = hw.generation >= Generation::Gfx10 && next() % 2 == 0;
        let mut raw = [0u8; 64];
        raw[16..24].copy_from_slice(&(next() as i64).to_le_bytes());
        for f in FIELDS.iter().filter(|f| applies(f, &lhw, cov, wave32)) {
            if f.word == Word::None {
                continue;
            }
            let bits = if f.name == "wavefront_size32" && hw.generation >= Generation::Gfx10 {
                u64::from(wave32)
            } else {
                next() & ((1u64 << f.width) - 1)
            };
            let w = word_value(&raw, f.word) | (bits << f.shift);
            set_word(&mut raw, f.word, w);
        }
        raw
    }

    #[test]
    fn encode_inverts_decode_for_every_layout() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        for hw in &LAYOUTS {
            for cov in [
                None,
                Some(CodeObjectVersion::V4),
                Some(CodeObjectVersion::V6),
            ] {
                for _ in 0..200 {
                    let raw = random_raw(hw, cov, &mut seed);
                    let d = KernelDescriptor::decode("k.kd", 0, &raw).with_code_object_version(cov);
                    let fields = d.fields(hw).unwrap();
                    let values: Vec<(&str, u64)> =
                        fields.iter().map(|f| (f.field.name, f.value)).collect();
                    // The fields kept as bytes read back as decoded.
                    let kept = d.decoded(hw).unwrap();
                    assert_eq!(kept.iter().collect::<Vec<_>>(), values);
                    assert_eq!(kept.get("kernarg_size"), Some(u64::from(d.kernarg_size)));
                    let again = encode(hw, cov, &values, d.kernel_code_entry_byte_offset).unwrap();
                    assert_eq!(again, raw, "{:?} {cov:?}", hw.generation);
                    let d2 =
                        KernelDescriptor::decode("k.kd", 0, &again).with_code_object_version(cov);
                    assert_eq!(d2.fields(hw).unwrap(), fields);
                }
            }
        }
    }

    #[test]
    fn reserved_bits_are_refused_naming_word_and_bits() {
        let mut raw = [0u8; 64];
        raw[48..52].copy_from_slice(&(1u32 << 10).to_le_bytes());
        let d = KernelDescriptor::decode("k.kd", 0, &raw);
        let e = d.fields(&HW_GFX9).unwrap_err();
        assert_eq!(e.word, Word::Rsrc1);
        assert_eq!(e.bits, 1 << 10);
        assert_eq!(
            e.to_string(),
            "COMPUTE_PGM_RSRC1 (descriptor byte 48) has reserved bit 10 set (0x400), which GFX9 does not define"
        );
        // RSRC3 must be zero before GFX90A.
        let mut raw = [0u8; 64];
        raw[44] = 1;
        let d = KernelDescriptor::decode("k.kd", 0, &raw);
        assert!(d.fields(&HW_GFX9).is_err());
        assert_eq!(d.decoded(&HW_GFX9), Err(d.fields(&HW_GFX9).unwrap_err()));
        assert_eq!(d.fields(&HW_GFX90A).unwrap()[3].field.name, "accum_offset");
        // Reserved bytes.
        let mut raw = [0u8; 64];
        raw[30] = 0x80;
        let e = KernelDescriptor::decode("k.kd", 0, &raw)
            .fields(&HW_GFX12)
            .unwrap_err();
        assert_eq!(e.offset, 30);
        assert!(e.to_string().contains("reserved byte 30"), "{e}");
        // wavefront_size32 is reserved on GFX9, ignored before.
        let mut raw = [0u8; 64];
        raw[57] = 1 << 2;
        let d = KernelDescriptor::decode("k.kd", 0, &raw);
        assert!(d.fields(&HW_GFX9).is_err());
        assert!(d.fields(&HW_GFX8).is_ok());
        assert!(d.wave32(&HW_GFX10_3) && !d.wave32(&HW_GFX8));
    }

    #[test]
    fn encode_refuses_values_that_do_not_fit() {
        let e = |values: &[(&str, u64)]| encode(&HW_GFX90A, None, values, 0).unwrap_err();
        assert!(matches!(
            e(&[("next_free_vgpr", 12)]),
            EncodeDescriptorError::BadValue { .. }
        ));
        assert!(e(&[("next_free_vgpr", 520)])
            .to_string()
            .contains("at most 512"));
        assert!(e(&[("accum_offset", 0)])
            .to_string()
            .contains("multiple of 4"));
        assert!(e(&[("float_denorm_mode_32", 4)])
            .to_string()
            .contains("at most 3"));
        assert!(e(&[("reserve_vcc", 1)]).to_string().contains("constant"));
        assert_eq!(
            e(&[("workgroup_processor_mode", 1)]),
            EncodeDescriptorError::UnknownField("workgroup_processor_mode".into())
        );
        // Granules follow the wave size on GFX10+.
        let w32 = encode(
            &HW_GFX10_3,
            None,
            &[("wavefront_size32", 1), ("next_free_vgpr", 16)],
            0,
        )
        .unwrap();
        let w64 = encode(&HW_GFX10_3, None, &[("next_free_vgpr", 16)], 0).unwrap();
        assert_eq!(w32[48] & 0x3f, 1);
        assert_eq!(w64[48] & 0x3f, 3);
    }
}
