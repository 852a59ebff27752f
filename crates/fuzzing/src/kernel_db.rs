//! Kernel databases (`gfxkit list`, `size`, `verify`, `kernels` of `TensileLibrary.dat`, `.kdb`
//! and `.aks2` files): each reader on arbitrary input under small limits, so that a header may
//! claim anything and the work stays in proportion to the input.

use gfxkit_kernel_db::aiter::KernelMap;
use gfxkit_kernel_db::aks2::Aks2;
use gfxkit_kernel_db::kdb::{decode_blob, Kdb};
use gfxkit_kernel_db::mapping::{problems, Mapping};
use gfxkit_kernel_db::tensile::{self, Index};
use gfxkit_kernel_db::Limits;
use gfxkit_kernel_db::{tensile_write, tensile_yaml};

/// Output a body lets one input decode to.
const MAX_OUT: u64 = 1 << 20;

fn limits() -> Limits {
    Limits {
        max_depth: 32,
        max_nodes: 1 << 16,
        max_solutions: 1 << 14,
        max_decompressed: MAX_OUT,
        max_kdb_size: 1 << 20,
        max_records: 1 << 10,
        max_aks2_entries: 1 << 12,
    }
}

/// A Tensile index as MessagePack (either layout), as a zlib stream of one (`.dat.zlib`) and
/// as YAML (`.yaml`, transcoded within the output limit): every row's solutions and
/// placeholders read, every solution a row reaches is one the index lists, and the index cut
/// to its first row reads back in its own layout. What transcodes is written back
/// as YAML and reads as the same tree. The same bytes as a hipBLASLt mapping (checked against a
/// directory listing) and as an aiter kernel map (CSV).
pub fn tensile(data: &[u8]) {
    msgpack_shortcuts(data);
    let limits = limits();
    index(data, &limits);
    mapping(data, &limits);
    if let Ok(d) = tensile::decompress_zlib(data, MAX_OUT) {
        assert!(d.len() as u64 <= MAX_OUT);
        index(&d, &limits);
        mapping(&d, &limits);
    }
    if let Ok(m) = tensile_yaml::to_msgpack(data, &limits) {
        // Checked before each event: one scalar (at most the input) past the limit.
        assert!(m.len() as u64 <= MAX_OUT + data.len() as u64);
        index(&m, &limits);
        yaml_round_trip(&m, &limits);
    }
    yaml_round_trip(data, &limits);
    if let Ok(m) = KernelMap::parse(data, &limits) {
        assert!(m.rows.len() as u64 <= limits.max_records);
        assert!(m
            .rows
            .iter()
            .all(|r| r.offset < data.len() as u64 && r.line >= 2));
    }
}

/// The shortcuts of the MessagePack reader that the Tensile reader takes, against its plain
/// walk: the input after its first byte cut in two there, a value read from the first part is
/// the value before, and the second part is stepped over as [`gfxkit_msgpack::Reader::skip`]
/// steps over it, by a walk that jumps over what it shares with that value (same end, same
/// error, same place), and by that value's shape, when it has one and the second part matches
/// it (exactly the shape's bytes).
fn msgpack_shortcuts(data: &[u8]) {
    use gfxkit_msgpack::{Reader, Shape, Trace};
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let (before, value) = rest.split_at(usize::from(cut).min(rest.len()));
    let Ok(like) = Reader::new(before).skip() else {
        return;
    };
    let mut walked = Reader::new(value);
    let plain = walked.skip().map(|r| r.bytes.len());
    if let Some(trace) = Trace::of(like.bytes) {
        let mut jumped = Reader::new(value);
        let got = jumped.skip_like(&trace).map(|(r, _)| r.bytes.len());
        assert_eq!(got, plain, "a walk like a value before ends elsewhere");
        assert_eq!(jumped.pos(), walked.pos());
    }
    if let Some(shape) = Shape::of(like.bytes) {
        if shape.matches(value, 0) {
            assert_eq!(
                plain,
                Ok(shape.len()),
                "a value of a shape has another length"
            );
        }
    }
}

/// MessagePack that YAML can hold (no binary, no extension type) written as YAML reads back
/// as the same tree (a 32-bit float as the 64-bit float of its value).
fn yaml_round_trip(bytes: &[u8], limits: &Limits) {
    let Ok(yaml) = tensile_yaml::from_msgpack(bytes, limits) else {
        return;
    };
    let back = tensile_yaml::to_msgpack(&yaml, limits)
        .unwrap_or_else(|e| panic!("written YAML does not read: {e}"));
    let value = |b: &[u8]| rmpv::decode::read_value(&mut &b[..]).map(widen);
    match (value(bytes), value(&back)) {
        (Ok(a), Ok(b)) => assert!(
            same(&a, &b),
            "written YAML reads back as another tree: {a} / {b}"
        ),
        (a, b) => panic!("a tree that does not decode: {a:?} / {b:?}"),
    }
}

/// `v` with every 32-bit float as a 64-bit one.
fn widen(v: rmpv::Value) -> rmpv::Value {
    use rmpv::Value;
    match v {
        Value::F32(f) => Value::F64(f64::from(f)),
        Value::Array(a) => Value::Array(a.into_iter().map(widen).collect()),
        Value::Map(m) => Value::Map(m.into_iter().map(|(k, v)| (widen(k), widen(v))).collect()),
        v => v,
    }
}

/// Equal trees, NaN equal to NaN.
fn same(a: &rmpv::Value, b: &rmpv::Value) -> bool {
    use rmpv::Value;
    match (a, b) {
        (Value::F64(x), Value::F64(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, v), (l, w))| same(k, l) && same(v, w))
        }
        _ => a == b,
    }
}

fn mapping(bytes: &[u8], limits: &Limits) {
    let Ok(m) = Mapping::parse(bytes, limits) else {
        return;
    };
    assert!(m.libraries.len() as u64 <= limits.max_solutions);
    let names = ["TensileLibrary_lazy_gfx942.dat", "x_fallback_gfx942.dat"];
    let _ = problems("TensileLiteLibrary_lazy_gfx942_Mapping.dat", &m, &names);
}

fn index(bytes: &[u8], limits: &Limits) {
    let Ok(index) = Index::parse_with(bytes, limits) else {
        return;
    };
    assert!(index.solutions.len() as u64 <= limits.max_solutions);
    for r in index.rows() {
        let _ = (r.processor, r.cu_count, &r.placeholders, &r.unknown);
        for i in &r.solutions {
            if let Some(s) = index.solution(*i) {
                assert_eq!(s.index, *i);
                assert!(s.offset < bytes.len() as u64);
            }
        }
    }
    let _ = index.unreachable_solutions();
    let _ = index.placeholders();
    // Cut to the first row: the rewrite reads itself back, in the input's layout.
    if let Ok(p) = tensile_write::prune_parsed(bytes, &index, |r| r.position == 0, limits) {
        let back = Index::parse_with(&p.bytes, limits)
            .unwrap_or_else(|e| panic!("a pruned index that does not read: {e}"));
        assert_eq!(back.layout(), index.layout());
        assert_eq!(back.solutions.len(), p.solutions_after);
    }
}

/// A MIOpen `.kdb` file (SQLite, opened read-only from memory): its records, and each blob
/// decoded within its declared size.
pub fn kdb(data: &[u8]) {
    let limits = limits();
    let Ok(db) = Kdb::from_bytes(data, &limits) else {
        return;
    };
    let Ok(records) = db.records() else { return };
    assert!(records.len() as u64 <= limits.max_records);
    for r in records.iter().take(64) {
        if let Ok(blob) = db.blob(r.id) {
            if let Ok(co) = decode_blob(&blob, r, &limits) {
                assert!(co.len() as u64 <= MAX_OUT.max(blob.len() as u64));
                if r.uncompressed_size != 0 {
                    assert_eq!(co.len() as u64, r.uncompressed_size);
                }
            }
        }
    }
}

/// An AOTriton `.aks2` image: its directory, every kernel image within the decoded stream.
pub fn aks2(data: &[u8]) {
    let limits = limits();
    let Ok(a) = Aks2::parse(data, &limits) else {
        return;
    };
    assert!(a.entries.len() as u64 <= limits.max_aks2_entries);
    for e in &a.entries {
        assert_eq!(a.image(e).len() as u64, u64::from(e.image_size));
        assert!(a.entry(&e.name).is_some());
    }
}
