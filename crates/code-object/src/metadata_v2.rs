//! Code object V2 metadata: the YAML text of the `NT_AMD_HSA_METADATA` note (type 10, owner
//! `AMD`). Source: AMDGPUUsage "Code Object V2 Metadata" (`Version`, `Kernels` with `Name`,
//! `SymbolName`, `Args` and `CodeProps`).
//!
//! llc-19 cannot write V2 code objects any more; this reader exists so the kernels of old
//! code objects (ROCm 1.x/2.x) are still listed.

use crate::error::{Error, ErrorKind};
use yaml_rust2::{Yaml, YamlLoader};

/// Note type of the V2 YAML metadata note.
pub const NT_AMD_HSA_METADATA: u32 = 10;

/// Largest V2 metadata note decoded.
pub const MAX_V2_METADATA_SIZE: usize = 16 << 20;

/// One argument of a V2 kernel (`Args`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct V2Arg {
    /// `Name`.
    pub name: Option<String>,
    /// `TypeName`.
    pub type_name: Option<String>,
    /// `Size`.
    pub size: Option<u64>,
    /// `Align`.
    pub align: Option<u64>,
    /// `ValueKind` (`GlobalBuffer`, `ByValue`, `HiddenGlobalOffsetX`, ...).
    pub value_kind: Option<String>,
    /// `AddrSpaceQual`.
    pub address_space: Option<String>,
    /// `AccQual`.
    pub access: Option<String>,
}

/// One kernel of V2 metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct V2Kernel {
    /// `Name`.
    pub name: String,
    /// `SymbolName` (`<name>@kd`).
    pub symbol: Option<String>,
    /// `Args`.
    pub args: Vec<V2Arg>,
    /// `CodeProps.KernargSegmentSize`.
    pub kernarg_segment_size: Option<u64>,
    /// `CodeProps.GroupSegmentFixedSize`.
    pub group_segment_fixed_size: Option<u64>,
    /// `CodeProps.PrivateSegmentFixedSize`.
    pub private_segment_fixed_size: Option<u64>,
    /// `CodeProps.WavefrontSize`.
    pub wavefront_size: Option<u64>,
    /// `CodeProps.NumSGPRs`.
    pub sgpr_count: Option<u64>,
    /// `CodeProps.NumVGPRs`.
    pub vgpr_count: Option<u64>,
    /// `CodeProps.MaxFlatWorkGroupSize`.
    pub max_flat_workgroup_size: Option<u64>,
    /// `CodeProps.NumSpilledSGPRs`.
    pub sgpr_spill_count: Option<u64>,
    /// `CodeProps.NumSpilledVGPRs`.
    pub vgpr_spill_count: Option<u64>,
}

/// Decodes the V2 metadata note `desc` (at byte `offset` of the code object, for errors).
pub fn parse(desc: &[u8], offset: u64) -> Result<Vec<V2Kernel>, Error> {
    let bad = |detail: String| Error::new(ErrorKind::BadMetadata { detail }, offset);
    if desc.len() > MAX_V2_METADATA_SIZE {
        return Err(Error::new(
            ErrorKind::TooLarge {
                what: "V2 metadata note",
                value: desc.len() as u64,
                limit: MAX_V2_METADATA_SIZE as u64,
            },
            offset,
        ));
    }
    // The note text may end in NUL padding.
    let end = desc.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let text = std::str::from_utf8(&desc[..end])
        .map_err(|e| bad(format!("V2 metadata is not UTF-8: {e}")))?;
    let docs = YamlLoader::load_from_str(text)
        .map_err(|e| bad(format!("V2 metadata is not valid YAML: {e}")))?;
    let Some(root) = docs.first() else {
        return Ok(Vec::new());
    };
    if !matches!(root, Yaml::Hash(_)) {
        return Err(bad("V2 metadata is not a YAML mapping".into()));
    }
    let kernels = match &root["Kernels"] {
        Yaml::BadValue | Yaml::Null => return Ok(Vec::new()),
        Yaml::Array(a) => a,
        _ => return Err(bad("V2 metadata Kernels is not a list".into())),
    };
    kernels
        .iter()
        .enumerate()
        .map(|(i, k)| kernel(k).map_err(|d| bad(format!("V2 kernel {i}: {d}"))))
        .collect()
}

fn string(v: &Yaml, key: &str) -> Result<Option<String>, String> {
    match &v[key] {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::String(s) => Ok(Some(s.clone())),
        // Unquoted scalars that look like numbers or booleans are still names.
        Yaml::Integer(i) => Ok(Some(i.to_string())),
        Yaml::Real(r) => Ok(Some(r.clone())),
        Yaml::Boolean(b) => Ok(Some(b.to_string())),
        _ => Err(format!("{key} is not a string")),
    }
}

fn int(v: &Yaml, key: &str) -> Result<Option<u64>, String> {
    match &v[key] {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::Integer(i) => u64::try_from(*i)
            .map(Some)
            .map_err(|_| format!("{key} is negative")),
        _ => Err(format!("{key} is not an unsigned integer")),
    }
}

fn kernel(k: &Yaml) -> Result<V2Kernel, String> {
    if !matches!(k, Yaml::Hash(_)) {
        return Err("is not a mapping".into());
    }
    let name = string(k, "Name")?.ok_or_else(|| "has no Name".to_owned())?;
    let args = match &k["Args"] {
        Yaml::BadValue | Yaml::Null => Vec::new(),
        Yaml::Array(list) => list
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let e = |d: String| format!("Args[{i}]: {d}");
                Ok(V2Arg {
                    name: string(a, "Name").map_err(e)?,
                    type_name: string(a, "TypeName").map_err(e)?,
                    size: int(a, "Size").map_err(e)?,
                    align: int(a, "Align").map_err(e)?,
                    value_kind: string(a, "ValueKind").map_err(e)?,
                    address_space: string(a, "AddrSpaceQual").map_err(e)?,
                    access: string(a, "AccQual").map_err(e)?,
                })
            })
            .collect::<Result<_, String>>()?,
        _ => return Err("Args is not a list".into()),
    };
    let props = &k["CodeProps"];
    Ok(V2Kernel {
        name,
        symbol: string(k, "SymbolName")?,
        args,
        kernarg_segment_size: int(props, "KernargSegmentSize")?,
        group_segment_fixed_size: int(props, "GroupSegmentFixedSize")?,
        private_segment_fixed_size: int(props, "PrivateSegmentFixedSize")?,
        wavefront_size: int(props, "WavefrontSize")?,
        sgpr_count: int(props, "NumSGPRs")?,
        vgpr_count: int(props, "NumVGPRs")?,
        max_flat_workgroup_size: int(props, "MaxFlatWorkGroupSize")?,
        sgpr_spill_count: int(props, "NumSpilledSGPRs")?,
        vgpr_spill_count: int(props, "NumSpilledVGPRs")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape AMDGPUUsage documents for V2 metadata (hand-written: llc-19 cannot emit V2).
    pub(crate) const SAMPLE: &str = "---
Version:         [ 1, 0 ]
Kernels:
  - Name:            test
    SymbolName:      'test@kd'
    Language:        OpenCL C
    LanguageVersion: [ 2, 0 ]
    Args:
      - Name:            out
        TypeName:        'float*'
        Size:            8
        Align:           8
        ValueKind:       GlobalBuffer
        ValueType:       F32
        AddrSpaceQual:   Global
        AccQual:         Default
      - Size:            8
        Align:           8
        ValueKind:       HiddenGlobalOffsetX
        ValueType:       I64
    CodeProps:
      KernargSegmentSize: 16
      GroupSegmentFixedSize: 256
      PrivateSegmentFixedSize: 0
      KernargSegmentAlign: 8
      WavefrontSize:   64
      NumSGPRs:        14
      NumVGPRs:        6
      MaxFlatWorkGroupSize: 256
...
";

    #[test]
    fn reads_the_documented_shape() {
        let mut note = SAMPLE.as_bytes().to_vec();
        note.extend([0, 0, 0]);
        let ks = parse(&note, 0x100).unwrap();
        assert_eq!(ks.len(), 1);
        let k = &ks[0];
        assert_eq!(k.name, "test");
        assert_eq!(k.symbol.as_deref(), Some("test@kd"));
        assert_eq!(k.group_segment_fixed_size, Some(256));
        assert_eq!(k.sgpr_count, Some(14));
        assert_eq!(k.vgpr_count, Some(6));
        assert_eq!(k.max_flat_workgroup_size, Some(256));
        assert_eq!(k.args.len(), 2);
        assert_eq!(k.args[0].type_name.as_deref(), Some("float*"));
        assert_eq!(k.args[0].address_space.as_deref(), Some("Global"));
        assert_eq!(k.args[1].value_kind.as_deref(), Some("HiddenGlobalOffsetX"));
    }

    #[test]
    fn damaged_notes_are_errors_with_offset() {
        for (text, want) in [
            (&b"Kernels: [ {"[..], "not valid YAML"),
            (b"\xff\xfe", "not UTF-8"),
            (b"- 1\n- 2\n", "not a YAML mapping"),
            (b"Kernels: 3\n", "Kernels is not a list"),
            (b"Kernels:\n  - SymbolName: x\n", "V2 kernel 0: has no Name"),
            (
                b"Kernels:\n  - Name: k\n    CodeProps:\n      NumSGPRs: -4\n",
                "NumSGPRs is negative",
            ),
        ] {
            let e = parse(text, 0x40).unwrap_err();
            assert_eq!(e.offset(), 0x40);
            assert!(e.to_string().contains(want), "{e} lacks {want}");
        }
        assert!(parse(b"", 0).unwrap().is_empty());
    }
}
