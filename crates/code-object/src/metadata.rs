//! The `NT_AMDGPU_METADATA` note (code object V3 and later): a MessagePack map with
//! `amdhsa.version`, `amdhsa.target` and `amdhsa.kernels`. Source: AMDGPUUsage "Code Object V3
//! Metadata" and later sections.
//!
//! The model borrows its strings from the code object; [`Metadata::to_json`] gives a
//! serializable view of the whole tree for `--json` output.

use crate::error::{Error, ErrorKind};
use gfxkit_msgpack::{Head, Raw, Reader};
use rmpv::ValueRef;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// Largest metadata note gfxkit decodes (the MessagePack of a code object with thousands of
/// kernels is a few MiB).
pub const MAX_METADATA_SIZE: usize = 64 << 20;
/// Deepest nesting of MessagePack arrays and maps accepted (the schema needs 4).
pub const MAX_METADATA_DEPTH: usize = 32;

/// One kernel of `amdhsa.kernels`. Fields other than `name` are `None` when the metadata does
/// not have them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kernel<'data> {
    /// `.name`: the source-level kernel name.
    pub name: &'data str,
    /// `.symbol`: the kernel-descriptor symbol (`<name>.kd`).
    pub symbol: Option<&'data str>,
    /// `.kernarg_segment_size` in bytes.
    pub kernarg_segment_size: Option<u64>,
    /// `.kernarg_segment_align` in bytes.
    pub kernarg_segment_align: Option<u64>,
    /// `.group_segment_fixed_size`: LDS bytes.
    pub group_segment_fixed_size: Option<u64>,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    pub private_segment_fixed_size: Option<u64>,
    /// `.sgpr_count`.
    pub sgpr_count: Option<u64>,
    /// `.vgpr_count`.
    pub vgpr_count: Option<u64>,
    /// `.agpr_count` (GFX90A and later).
    pub agpr_count: Option<u64>,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: Option<u64>,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: Option<u64>,
    /// `.wavefront_size`.
    pub wavefront_size: Option<u64>,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: Option<u64>,
    /// `.uses_dynamic_stack`.
    pub uses_dynamic_stack: Option<bool>,
    /// `.args`: the kernel arguments, in order.
    pub args: Vec<KernelArg<'data>>,
}

/// One entry of a kernel's `.args`. Fields are `None` when the metadata does not have them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelArg<'data> {
    /// `.name`: the source-level argument name.
    pub name: Option<&'data str>,
    /// `.type_name`: the source-level type.
    pub type_name: Option<&'data str>,
    /// `.offset`: byte offset in the kernarg segment.
    pub offset: Option<u64>,
    /// `.size` in bytes.
    pub size: Option<u64>,
    /// `.value_kind` (`by_value`, `global_buffer`, `hidden_block_count_x`, ...).
    pub value_kind: Option<&'data str>,
    /// `.address_space` of pointers (`global`, `constant`, `local`, ...).
    pub address_space: Option<&'data str>,
    /// `.access` qualifier (`read_only`, `write_only`, `read_write`).
    pub access: Option<&'data str>,
    /// `.actual_access` the compiler inferred.
    pub actual_access: Option<&'data str>,
}

/// The decoded metadata note.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata<'data> {
    /// The note's descriptor (of the first note, for a code object that has several).
    desc: &'data [u8],
    version: Option<[u64; 2]>,
    target: Option<&'data str>,
    kernels: Vec<Kernel<'data>>,
}

/// How much of a metadata note [`Metadata::read`] decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// Everything: version, target and every kernel with its arguments.
    Full,
    /// The version and the target; the kernels are stepped over, checked only as MessagePack.
    Identity,
}

impl<'data> Metadata<'data> {
    /// Decodes the note descriptor `desc`, found at byte `offset` of the code object (used in
    /// errors).
    pub fn parse(desc: &'data [u8], offset: u64) -> Result<Metadata<'data>, Error> {
        Self::read(desc, offset, Depth::Full)
    }

    /// Decodes `desc` as far as `depth` asks. The whole note is checked as MessagePack, then its
    /// top-level map is walked key by key: only the values gfxkit models are decoded (each
    /// kernel on its own), every other value is stepped over by its MessagePack headers, so
    /// that nothing is held but the model. The first of repeated keys counts.
    pub(crate) fn read(desc: &'data [u8], offset: u64, depth: Depth) -> Result<Self, Error> {
        let bad = |detail: String| Error::new(ErrorKind::BadMetadata { detail }, offset);
        if desc.len() > MAX_METADATA_SIZE {
            return Err(Error::new(
                ErrorKind::TooLarge {
                    what: "metadata note",
                    value: desc.len() as u64,
                    limit: MAX_METADATA_SIZE as u64,
                },
                offset,
            ));
        }
        if desc.is_empty() {
            return Err(bad("the note is empty".into()));
        }
        let invalid = |e: gfxkit_msgpack::Error| bad(format!("invalid MessagePack: {e}"));
        // The whole note first: MessagePack within the depth bound (so that every value
        // decoded below decodes), then its top-level map key by key.
        Reader::new(desc)
            .skip_nested(MAX_METADATA_DEPTH)
            .map_err(invalid)?;
        let mut c = Reader::new(desc);
        let entries = match c.head().map_err(invalid)? {
            Head::Map(n) => n,
            other => {
                return Err(bad(format!(
                    "top level is {}, expected a map",
                    head_kind(other)
                )))
            }
        };
        let (mut version, mut target, mut kernels) = (None, None, None);
        for _ in 0..entries {
            let start = c.pos();
            let key = match c.head().map_err(invalid)? {
                Head::Str(n) => std::str::from_utf8(c.skip_bytes(n, start).map_err(invalid)?).ok(),
                _ => {
                    c = c.at(start);
                    c.skip().map_err(invalid)?;
                    None
                }
            };
            match key {
                Some("amdhsa.version") if version.is_none() => {
                    let v = decode(&mut c).map_err(invalid)?;
                    version = Some(match &v {
                        ValueRef::Array(a) if a.len() == 2 => {
                            match (a[0].as_u64(), a[1].as_u64()) {
                                (Some(major), Some(minor)) => [major, minor],
                                _ => return Err(bad("amdhsa.version is not two integers".into())),
                            }
                        }
                        _ => {
                            return Err(bad("amdhsa.version is not a [major, minor] array".into()))
                        }
                    });
                }
                Some("amdhsa.target") if target.is_none() => {
                    let v = decode(&mut c).map_err(invalid)?;
                    target = Some(
                        str_of(&v).ok_or_else(|| bad("amdhsa.target is not a string".into()))?,
                    );
                }
                Some("amdhsa.kernels") if kernels.is_none() && depth == Depth::Full => {
                    let Head::Array(n) = c.head().map_err(invalid)? else {
                        return Err(bad("amdhsa.kernels is not an array".into()));
                    };
                    let mut out = Vec::new();
                    for i in 0..n {
                        out.push(kernel(&mut c).map_err(|d| bad(format!("kernel {i}: {d}")))?);
                    }
                    kernels = Some(out);
                }
                _ => {
                    c.skip().map_err(invalid)?;
                }
            }
        }
        Ok(Metadata {
            desc,
            version,
            target,
            kernels: kernels.unwrap_or_default(),
        })
    }

    /// `amdhsa.version` (`[1, 2]` for code object V5 metadata).
    pub fn version(&self) -> Option<[u64; 2]> {
        self.version
    }

    /// `amdhsa.target`: `amdgcn-amd-amdhsa--<target ID>`.
    pub fn target(&self) -> Option<&'data str> {
        self.target
    }

    /// The target ID part of `amdhsa.target` (after `--`), when present.
    pub fn target_id_str(&self) -> Option<&'data str> {
        self.target
            .and_then(|t| t.split_once("--").map(|(_, id)| id))
            .filter(|id| !id.is_empty())
    }

    /// Takes in the kernels of another metadata note of the same code object (`other`, found
    /// at byte `offset`): a code object linked from several objects has one note per object.
    /// Notes that name different targets or versions contradict each other.
    pub fn absorb(&mut self, other: Metadata<'data>, offset: u64) -> Result<(), Error> {
        let differ = |what: &str, a: String, b: String| {
            Error::new(
                ErrorKind::BadMetadata {
                    detail: format!(
                        "this metadata note's {what} is {b}, an earlier note's {a}: the notes \
                         of one code object contradict each other"
                    ),
                },
                offset,
            )
        };
        if other.target.is_some() && self.target.is_some() && other.target != self.target {
            return Err(differ(
                "amdhsa.target",
                format!("{:?}", self.target.unwrap_or_default()),
                format!("{:?}", other.target.unwrap_or_default()),
            ));
        }
        if other.version.is_some() && self.version.is_some() && other.version != self.version {
            return Err(differ(
                "amdhsa.version",
                format!("{:?}", self.version.unwrap_or_default()),
                format!("{:?}", other.version.unwrap_or_default()),
            ));
        }
        self.target = self.target.or(other.target);
        self.version = self.version.or(other.version);
        self.kernels.extend(other.kernels);
        Ok(())
    }

    /// `amdhsa.kernels`, in file order (of every metadata note, for a code object that has
    /// several: [`Metadata::absorb`]).
    pub fn kernels(&self) -> &[Kernel<'data>] {
        &self.kernels
    }

    /// A serializable view of the whole tree of the (first) note, decoded again on each call
    /// (maps become JSON objects with string keys, binary data becomes an array of bytes).
    pub fn to_json(&self) -> MetadataJson<'data> {
        // `read` checked the whole note within MAX_METADATA_DEPTH levels, which this bound
        // covers.
        let mut rd = self.desc;
        MetadataJson(
            rmpv::decode::read_value_ref_with_max_depth(&mut rd, DECODE_DEPTH)
                .unwrap_or(ValueRef::Nil),
        )
    }
}

/// The depth bound given to the MessagePack decoder for a value within a note checked to nest
/// at most [`MAX_METADATA_DEPTH`] levels deep (the decoder counts up to two steps a level and
/// two more for a string).
const DECODE_DEPTH: usize = 2 * MAX_METADATA_DEPTH + 4;

/// The metadata tree, serialized as JSON-like data (see [`Metadata::to_json`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataJson<'data>(pub ValueRef<'data>);

impl Serialize for MetadataJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Json(&self.0).serialize(s)
    }
}

/// One value of the tree, serialized.
struct Json<'a, 'data>(&'a ValueRef<'data>);

impl Serialize for Json<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ValueRef::Nil => s.serialize_unit(),
            ValueRef::Boolean(b) => s.serialize_bool(*b),
            ValueRef::Integer(i) => match (i.as_u64(), i.as_i64()) {
                (Some(u), _) => s.serialize_u64(u),
                (None, Some(v)) => s.serialize_i64(v),
                _ => s.serialize_unit(),
            },
            ValueRef::F32(f) => s.serialize_f32(*f),
            ValueRef::F64(f) => s.serialize_f64(*f),
            ValueRef::String(st) => match st.as_str() {
                Some(t) => s.serialize_str(t),
                None => s.serialize_str(&String::from_utf8_lossy(st.as_bytes())),
            },
            ValueRef::Binary(b) | ValueRef::Ext(_, b) => s.collect_seq(b.iter()),
            ValueRef::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(&Json(v))?;
                }
                seq.end()
            }
            ValueRef::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    match str_of(k) {
                        Some(key) => map.serialize_entry(key, &Json(v))?,
                        None => map.serialize_entry(&k.to_string(), &Json(v))?,
                    }
                }
                map.end()
            }
        }
    }
}

/// Decodes the value at the reader into a tree borrowing its strings, and steps over it.
fn decode<'data>(c: &mut Reader<'data>) -> gfxkit_msgpack::Result<ValueRef<'data>> {
    c.skip()?.to_value_ref(DECODE_DEPTH)
}

/// [`kind`] for a value known by its head.
fn head_kind(h: Head) -> &'static str {
    match h {
        Head::Nil => "nil",
        Head::Bool(_) => "a boolean",
        Head::Uint(_) | Head::Int(_) => "an integer",
        Head::Float(_) => "a float",
        Head::Str(_) => "a string",
        Head::Bin(_) => "binary data",
        Head::Array(_) => "an array",
        Head::Map(_) => "a map",
        Head::Ext(_) => "an extension value",
    }
}

fn str_of<'data>(v: &ValueRef<'data>) -> Option<&'data str> {
    match v {
        ValueRef::String(s) => s.into_str(),
        _ => None,
    }
}

/// A value of a note checked whole ([`Metadata::read`]), kept undecoded, and what it is.
fn kind_of(v: &Raw<'_>) -> &'static str {
    Reader::new(v.bytes).head().map_or("nil", head_kind)
}

/// The first value of each field of the map at `c` that `slot` gives a place (keys that are
/// not strings, or that `slot` does not know, are passed over), each kept undecoded, the
/// cursor left after the map; what the value is when it is not a map. The note was read whole
/// before: every key and value steps.
fn fields<'data, const N: usize>(
    c: &mut Reader<'data>,
    slot: impl Fn(&[u8]) -> Option<usize>,
) -> Result<[Option<Raw<'data>>; N], &'static str> {
    let n = match c.head() {
        Ok(Head::Map(n)) => n,
        other => return Err(other.map_or("nil", head_kind)),
    };
    let mut out = [None; N];
    for _ in 0..n {
        let at = c.pos();
        let key = match c.key() {
            Ok(key) => Some(key),
            Err(_) => {
                *c = c.at(at);
                if c.skip().is_err() {
                    break;
                }
                None
            }
        };
        let Ok(value) = c.skip() else {
            break;
        };
        if let Some(place) = key.and_then(&slot).and_then(|i| out.get_mut(i)) {
            place.get_or_insert(value);
        }
    }
    Ok(out)
}

/// A field that must be a string, if present.
fn string<'data>(key: &str, v: Option<Raw<'data>>) -> Result<Option<&'data str>, String> {
    v.map(|v| {
        v.as_str()
            .ok_or_else(|| format!("{key} is {}, expected a string", kind_of(&v)))
    })
    .transpose()
}

/// A field that must be an unsigned integer, if present.
fn int(key: &str, v: Option<Raw<'_>>) -> Result<Option<u64>, String> {
    v.map(|v| match Reader::new(v.bytes).head() {
        Ok(Head::Uint(n)) => Ok(n),
        Ok(Head::Int(n)) if n >= 0 => Ok(n as u64),
        _ => Err(format!(
            "{key} is {}, expected an unsigned integer",
            kind_of(&v)
        )),
    })
    .transpose()
}

/// A field that must be a boolean, if present.
fn boolean(key: &str, v: Option<Raw<'_>>) -> Result<Option<bool>, String> {
    v.map(|v| match Reader::new(v.bytes).head() {
        Ok(Head::Bool(b)) => Ok(b),
        _ => Err(format!("{key} is {}, expected a boolean", kind_of(&v))),
    })
    .transpose()
}

/// The fields of a kernel argument gfxkit reads, in the order they are judged.
const ARG_FIELDS: [&str; 8] = [
    ".name",
    ".type_name",
    ".offset",
    ".size",
    ".value_kind",
    ".address_space",
    ".access",
    ".actual_access",
];

fn kernel_arg<'data>(c: &mut Reader<'data>) -> Result<KernelArg<'data>, String> {
    let f: [_; 8] = fields(c, |k| ARG_FIELDS.iter().position(|f| f.as_bytes() == k))
        .map_err(|kind| format!("is {kind}, expected a map"))?;
    Ok(KernelArg {
        name: string(ARG_FIELDS[0], f[0])?,
        type_name: string(ARG_FIELDS[1], f[1])?,
        offset: int(ARG_FIELDS[2], f[2])?,
        size: int(ARG_FIELDS[3], f[3])?,
        value_kind: string(ARG_FIELDS[4], f[4])?,
        address_space: string(ARG_FIELDS[5], f[5])?,
        access: string(ARG_FIELDS[6], f[6])?,
        actual_access: string(ARG_FIELDS[7], f[7])?,
    })
}

/// The fields of a kernel gfxkit reads, in the order they are judged (`.args` first).
const KERNEL_FIELDS: [&str; 15] = [
    ".args",
    ".name",
    ".symbol",
    ".kernarg_segment_size",
    ".kernarg_segment_align",
    ".group_segment_fixed_size",
    ".private_segment_fixed_size",
    ".sgpr_count",
    ".vgpr_count",
    ".agpr_count",
    ".sgpr_spill_count",
    ".vgpr_spill_count",
    ".wavefront_size",
    ".max_flat_workgroup_size",
    ".uses_dynamic_stack",
];

/// One kernel of `amdhsa.kernels`, read from its map in one pass (each field the first of its
/// key); what is wrong, in the order the fields are judged.
fn kernel<'data>(c: &mut Reader<'data>) -> Result<Kernel<'data>, String> {
    let f: [_; 15] = fields(c, |k| KERNEL_FIELDS.iter().position(|f| f.as_bytes() == k))
        .map_err(|kind| format!("is {kind}, expected a map"))?;
    let args = match f[0] {
        None => Vec::new(),
        Some(list) => {
            let mut c = Reader::new(list.bytes);
            let Ok(Head::Array(n)) = c.head() else {
                return Err(format!(".args is {}, expected an array", kind_of(&list)));
            };
            let mut args = Vec::with_capacity(n.min(64) as usize);
            for i in 0..n {
                args.push(kernel_arg(&mut c).map_err(|d| format!(".args[{i}]: {d}"))?);
            }
            args
        }
    };
    let k = |i: usize| KERNEL_FIELDS[i];
    let name = string(k(1), f[1])?.ok_or_else(|| "has no .name".to_owned())?;
    Ok(Kernel {
        name,
        symbol: string(k(2), f[2])?,
        kernarg_segment_size: int(k(3), f[3])?,
        kernarg_segment_align: int(k(4), f[4])?,
        group_segment_fixed_size: int(k(5), f[5])?,
        private_segment_fixed_size: int(k(6), f[6])?,
        sgpr_count: int(k(7), f[7])?,
        vgpr_count: int(k(8), f[8])?,
        agpr_count: int(k(9), f[9])?,
        sgpr_spill_count: int(k(10), f[10])?,
        vgpr_spill_count: int(k(11), f[11])?,
        wavefront_size: int(k(12), f[12])?,
        max_flat_workgroup_size: int(k(13), f[13])?,
        uses_dynamic_stack: boolean(k(14), f[14])?,
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    fn encode(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).unwrap();
        out
    }

    fn s(x: &str) -> Value {
        Value::from(x)
    }

    fn sample() -> Value {
        Value::Map(vec![
            (
                s("amdhsa.version"),
                Value::Array(vec![Value::from(1u8), Value::from(2u8)]),
            ),
            (s("amdhsa.target"), s("amdgcn-amd-amdhsa--gfx90a:xnack-")),
            (
                s("amdhsa.kernels"),
                Value::Array(vec![Value::Map(vec![
                    (s(".name"), s("k")),
                    (s(".symbol"), s("k.kd")),
                    (s(".kernarg_segment_size"), Value::from(16u8)),
                    (s(".sgpr_count"), Value::from(10u8)),
                    (s(".vgpr_count"), Value::from(3u8)),
                    (s(".agpr_count"), Value::from(0u8)),
                    (s(".wavefront_size"), Value::from(64u8)),
                    (s(".uses_dynamic_stack"), Value::from(false)),
                    (
                        s(".args"),
                        Value::Array(vec![Value::Map(vec![
                            (s(".name"), s("out")),
                            (s(".type_name"), s("float*")),
                            (s(".offset"), Value::from(0u8)),
                            (s(".size"), Value::from(8u8)),
                            (s(".value_kind"), s("global_buffer")),
                            (s(".address_space"), s("global")),
                            (s(".access"), s("write_only")),
                        ])]),
                    ),
                ])]),
            ),
        ])
    }

    #[test]
    fn nesting_and_claimed_counts_are_bounded() {
        let mut v = Value::from(1u8);
        for _ in 0..MAX_METADATA_DEPTH {
            v = Value::Array(vec![v]);
        }
        let shallow = encode(&Value::Map(vec![(s("amdhsa.target"), v)]));
        let e = Metadata::parse(&shallow, 0).unwrap_err().to_string();
        assert!(e.contains("nested more"), "{e}");
        // A claimed count far beyond the note ends at the note's end.
        let e = Metadata::parse(&[0xdf, 0xff, 0xff, 0xff, 0xff], 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid MessagePack"), "{e}");
    }

    #[test]
    fn identity_depth_reads_the_target_without_kernels() {
        let bytes = encode(&sample());
        let m = Metadata::read(&bytes, 0, Depth::Identity).unwrap();
        assert_eq!(m.target_id_str(), Some("gfx90a:xnack-"));
        assert_eq!(m.version(), Some([1, 2]));
        assert!(m.kernels().is_empty());
        // Damage in the kernels is still seen as MessagePack damage.
        let cut = &bytes[..bytes.len() - 3];
        assert!(Metadata::read(cut, 0, Depth::Identity).is_err());
    }

    #[test]
    fn decodes_kernels_and_header() {
        let bytes = encode(&sample());
        let m = Metadata::parse(&bytes, 0x40).unwrap();
        assert_eq!(m.version(), Some([1, 2]));
        assert_eq!(m.target_id_str(), Some("gfx90a:xnack-"));
        let k = &m.kernels()[0];
        assert_eq!(k.name, "k");
        assert_eq!(k.symbol, Some("k.kd"));
        assert_eq!(k.kernarg_segment_size, Some(16));
        assert_eq!(k.vgpr_count, Some(3));
        assert_eq!(k.agpr_count, Some(0));
        assert_eq!(k.group_segment_fixed_size, None);
        assert_eq!(k.uses_dynamic_stack, Some(false));
        assert_eq!(k.args.len(), 1);
        assert_eq!(k.args[0].name, Some("out"));
        assert_eq!(k.args[0].type_name, Some("float*"));
        assert_eq!(k.args[0].size, Some(8));
        assert_eq!(k.args[0].value_kind, Some("global_buffer"));
        assert_eq!(k.args[0].address_space, Some("global"));
        assert_eq!(k.args[0].access, Some("write_only"));
        assert_eq!(k.args[0].actual_access, None);
        let json = serde_json::to_value(m.to_json()).unwrap();
        assert_eq!(json["amdhsa.kernels"][0][".name"], "k");
        assert_eq!(json["amdhsa.version"][1], 2);
    }

    #[test]
    fn bad_shapes_are_typed_errors_with_offset() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0xa5, b'a'], "invalid MessagePack"),
            (vec![], "the note is empty"),
            (encode(&Value::from(3u8)), "top level is an integer"),
            (
                encode(&Value::Map(vec![(s("amdhsa.kernels"), Value::from(1u8))])),
                "amdhsa.kernels is not an array",
            ),
            (
                encode(&Value::Map(vec![(
                    s("amdhsa.kernels"),
                    Value::Array(vec![Value::Map(vec![])]),
                )])),
                "kernel 0: has no .name",
            ),
            (
                encode(&Value::Map(vec![(
                    s("amdhsa.kernels"),
                    Value::Array(vec![Value::Map(vec![
                        (s(".name"), s("a")),
                        (s(".sgpr_count"), s("many")),
                    ])]),
                )])),
                "kernel 0: .sgpr_count is a string, expected an unsigned integer",
            ),
            (
                encode(&Value::Map(vec![(
                    s("amdhsa.kernels"),
                    Value::Array(vec![Value::Map(vec![
                        (s(".name"), s("a")),
                        (s(".args"), Value::Array(vec![Value::from(1u8)])),
                    ])]),
                )])),
                "kernel 0: .args[0]: is an integer, expected a map",
            ),
            // A declared array of 2^32-1 elements in 5 bytes: fails on the missing data.
            (vec![0xdd, 0xff, 0xff, 0xff, 0xff], "invalid MessagePack"),
        ];
        for (bytes, want) in cases {
            let e = Metadata::parse(&bytes, 0x1234).unwrap_err();
            assert_eq!(e.offset(), 0x1234);
            assert!(e.to_string().contains(want), "{e} does not contain {want}");
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut bytes = vec![0x91; 10_000]; // fixarray(1) nested 10000 deep
        bytes.push(0xc0);
        assert!(Metadata::parse(&bytes, 0).is_err());
    }
}
