//! The `.hipFatBinSegment` wrapper record (`HIPF`/`HIPK`) and the kpack reference a `HIPK`
//! wrapper points to: what a host file stores, whatever its container format.

use serde::Serialize;

/// Size of a `.hipFatBinSegment` record, as a file offset or size.
pub(crate) const WRAPPER_SIZE: u64 = WrapperRecord::SIZE as u64;

/// The magic of a `.hipFatBinSegment` wrapper record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrapperMagic {
    /// `HIPF` (0x48495046): the pointer leads to an offload bundle.
    Hipf,
    /// `HIPK` (0x4B504948): device code moved to separate files; the pointer leads to
    /// MessagePack metadata.
    Hipk,
    /// Anything else.
    Other(u32),
}

impl WrapperMagic {
    /// `HIPF` magic value.
    pub const HIPF: u32 = 0x4849_5046;
    /// `HIPK` magic value.
    pub const HIPK: u32 = 0x4B50_4948;

    pub(crate) fn from_u32(v: u32) -> WrapperMagic {
        match v {
            Self::HIPF => WrapperMagic::Hipf,
            Self::HIPK => WrapperMagic::Hipk,
            n => WrapperMagic::Other(n),
        }
    }

    /// The magic as stored.
    pub fn value(self) -> u32 {
        match self {
            WrapperMagic::Hipf => Self::HIPF,
            WrapperMagic::Hipk => Self::HIPK,
            WrapperMagic::Other(n) => n,
        }
    }

    /// `HIPF`, `HIPK` or the hex value.
    pub fn name(self) -> String {
        match self {
            WrapperMagic::Hipf => "HIPF".into(),
            WrapperMagic::Hipk => "HIPK".into(),
            WrapperMagic::Other(n) => format!("{n:#010x}"),
        }
    }
}

impl Serialize for WrapperMagic {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// The four fields of a 24-byte `.hipFatBinSegment` record as stored, before relocation:
/// `{u32 magic, u32 version, u64 pointer, u64 reserved}`. The one decoder of the record, for
/// discovery and for every rewrite that patches one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrapperRecord {
    /// The magic (`HIPF`, `HIPK`).
    pub magic: u32,
    /// The version field (1).
    pub version: u32,
    /// The pointer as stored in the file (0 where a relocation supplies it).
    pub pointer: u64,
    /// The u64 at +16 (the code-object index of a `HIPK` wrapper).
    pub reserved: u64,
}

impl WrapperRecord {
    /// Size of a record.
    pub const SIZE: usize = 24;

    /// Decodes one record.
    pub fn decode(r: &[u8; Self::SIZE]) -> WrapperRecord {
        use gfxkit_bytes::{u32_in, u64_in};
        WrapperRecord {
            magic: u32_in::<0, 24>(r),
            version: u32_in::<4, 24>(r),
            pointer: u64_in::<8, 24>(r),
            reserved: u64_in::<16, 24>(r),
        }
    }

    /// The record at byte `at` of `data`.
    pub fn read(data: &[u8], at: u64) -> Result<WrapperRecord, gfxkit_bytes::OutOfBounds> {
        gfxkit_bytes::Cursor::new(data)
            .array(at)
            .map(|r| WrapperRecord::decode(&r))
    }

    /// The records of a `.hipFatBinSegment` section's bytes, each with its offset in them (a
    /// partial record at the end is not one).
    pub fn all(section: &[u8]) -> impl Iterator<Item = (u64, WrapperRecord)> + '_ {
        section
            .chunks_exact(Self::SIZE)
            .filter_map(<[u8]>::first_chunk::<{ Self::SIZE }>)
            .enumerate()
            .map(|(i, r)| ((i * Self::SIZE) as u64, WrapperRecord::decode(r)))
    }
}

/// The MessagePack metadata a `HIPK` wrapper points to (a `.rocm_kpack_ref` section): where
/// the device code moved to. Keys gfxkit does not know are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KpackRef {
    /// `kernel_name`: the key of this binary in the kpack archives' table of contents.
    pub kernel_name: Option<String>,
    /// `kpack_search_paths`: archives to search, relative to the binary's directory.
    pub search_paths: Vec<String>,
}

/// Most bytes read as kpack metadata.
const MAX_KPACK_METADATA: u64 = 64 * 1024;

/// Decodes the kpack reference at the start of `data` (MessagePack map).
pub fn decode_kpack_ref(data: &[u8]) -> Result<KpackRef, String> {
    let len = (data.len() as u64).min(MAX_KPACK_METADATA) as usize;
    let mut rd = &data[..len];
    let value = rmpv::decode::read_value_with_max_depth(&mut rd, 8)
        .map_err(|e| format!("MessagePack: {e}"))?;
    let rmpv::Value::Map(map) = value else {
        return Err(format!("expected a MessagePack map, found {value}"));
    };
    let mut out = KpackRef {
        kernel_name: None,
        search_paths: Vec::new(),
    };
    for (k, v) in map {
        match k.as_str() {
            Some("kernel_name") => out.kernel_name = v.as_str().map(str::to_owned),
            Some("kpack_search_paths") => {
                if let rmpv::Value::Array(a) = v {
                    out.search_paths = a
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect();
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{WrapperMagic, WrapperRecord};

    #[test]
    fn wrapper_records_decode_their_four_fields_and_stop_before_a_partial_one() {
        let mut section = Vec::new();
        for (magic, pointer, reserved) in [
            (WrapperMagic::HIPF, 0x1000u64, 0u64),
            (WrapperMagic::HIPK, 0, 7),
        ] {
            section.extend_from_slice(&magic.to_le_bytes());
            section.extend_from_slice(&1u32.to_le_bytes());
            section.extend_from_slice(&pointer.to_le_bytes());
            section.extend_from_slice(&reserved.to_le_bytes());
        }
        section.extend_from_slice(&[0xff; 23]);
        let all: Vec<_> = WrapperRecord::all(&section).collect();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[1],
            (
                24,
                WrapperRecord {
                    magic: WrapperMagic::HIPK,
                    version: 1,
                    pointer: 0,
                    reserved: 7
                }
            )
        );
        assert_eq!(WrapperRecord::read(&section, 0).unwrap().pointer, 0x1000);
        // A partial record is named where it starts; one past the end at the last byte.
        assert_eq!(WrapperRecord::read(&section, 48).unwrap_err().offset(), 48);
        let past = WrapperRecord::read(&section, 100).unwrap_err();
        assert_eq!(past.offset(), section.len() as u64 - 1);
        assert_eq!(
            WrapperMagic::from_u32(WrapperMagic::HIPK).value(),
            WrapperMagic::HIPK
        );
        assert_eq!(WrapperMagic::Other(5).value(), 5);
    }
}
