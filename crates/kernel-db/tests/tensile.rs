//! Tensile indexes built here with rmp, as Debian's rocBLAS 5.5.1 writes them, then damaged.

use gfxkit_kernel_db::tensile::{decompress_zlib, Index, Leaf, NodeKind};
use gfxkit_kernel_db::{ErrorKind, Limits};
use rmp::encode::{write_array_len, write_f64, write_map_len, write_str, write_uint};

type B = Vec<u8>;

fn s(b: &mut B, v: &str) {
    write_str(b, v).unwrap();
}

fn typed(b: &mut B, t: &str, fields: u32) {
    write_map_len(b, fields + 1).unwrap();
    s(b, "type");
    s(b, t);
}

fn processor(b: &mut B, name: &str) {
    typed(b, "Processor", 1);
    s(b, "value");
    s(b, name);
}

fn amdgpu(b: &mut B, inner: impl FnOnce(&mut B)) {
    typed(b, "AMDGPU", 1);
    s(b, "value");
    inner(b);
}

fn single(b: &mut B, i: u64) {
    typed(b, "Single", 1);
    s(b, "index");
    write_uint(b, i).unwrap();
}

fn matching(b: &mut B, entries: &[(u64, u64)]) {
    typed(b, "Matching", 2);
    s(b, "distance");
    s(b, "Euclidean");
    s(b, "table");
    write_array_len(b, entries.len() as u32).unwrap();
    for (size, index) in entries {
        write_map_len(b, 3).unwrap();
        s(b, "key");
        write_array_len(b, 3).unwrap();
        for _ in 0..3 {
            write_uint(b, *size).unwrap();
        }
        s(b, "index");
        write_uint(b, *index).unwrap();
        s(b, "speed");
        write_f64(b, 1.5).unwrap();
    }
}

fn problem(b: &mut B, leaves: &[&dyn Fn(&mut B)]) {
    typed(b, "Problem", 1);
    s(b, "rows");
    write_array_len(b, leaves.len() as u32).unwrap();
    for leaf in leaves {
        write_map_len(b, 2).unwrap();
        s(b, "predicate");
        typed(b, "EqualityMatching", 0);
        s(b, "library");
        leaf(b);
    }
}

fn problem_map(b: &mut B, key: &str, inner: impl FnOnce(&mut B)) {
    typed(b, "ProblemMap", 2);
    s(b, "property");
    typed(b, "OperationIdentifier", 0);
    s(b, "map");
    write_map_len(b, 1).unwrap();
    s(b, key);
    inner(b);
}

/// An index with 6 solutions and rows gfx90a/104 CUs (And), gfx1030, a lazy gfx942 row, an
/// unknown node type, and TruePred.
fn index_bytes() -> B {
    let mut b = B::new();
    // `library` first, `solutions` second: the reader must not depend on key order.
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "library");
    typed(&mut b, "Hardware", 1);
    s(&mut b, "rows");
    write_array_len(&mut b, 5).unwrap();
    // Row 0: And(Processor gfx90a, CUCount 104).
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "predicate");
    amdgpu(&mut b, |b| {
        typed(b, "And", 1);
        s(b, "value");
        write_array_len(b, 2).unwrap();
        processor(b, "gfx90a");
        typed(b, "CUCount", 1);
        s(b, "value");
        write_uint(b, 104).unwrap();
    });
    s(&mut b, "library");
    problem_map(&mut b, "Contraction_l_Alik_Bljk_Cijk_Dijk", |b| {
        problem(
            b,
            &[
                &|b: &mut B| matching(b, &[(1, 0), (256, 1), (1024, 1)]),
                &|b: &mut B| single(b, 2),
            ],
        )
    });
    // Row 1: gfx1030, a decision tree.
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "library");
    typed(&mut b, "DecisionTree", 3);
    s(&mut b, "features");
    write_array_len(&mut b, 0).unwrap();
    s(&mut b, "trees");
    write_array_len(&mut b, 1).unwrap();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "tree");
    write_array_len(&mut b, 1).unwrap();
    write_map_len(&mut b, 1).unwrap();
    s(&mut b, "featureIdx");
    write_uint(&mut b, 0).unwrap();
    s(&mut b, "value");
    single(&mut b, 3);
    s(&mut b, "nullValue");
    single(&mut b, 4);
    s(&mut b, "predicate");
    amdgpu(&mut b, |b| processor(b, "gfx1030"));
    // Row 2: gfx942, lazy placeholders.
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "predicate");
    amdgpu(&mut b, |b| processor(b, "gfx942"));
    s(&mut b, "library");
    problem_map(&mut b, "Contraction_l_Ailk_Bljk_Cijk_Dijk", |b| {
        typed(b, "Placeholder", 1);
        s(b, "value");
        s(
            b,
            "TensileLibrary_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942",
        );
    });
    // Row 3: gfx900, a node type from a later Tensile.
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "predicate");
    amdgpu(&mut b, |b| processor(b, "gfx900"));
    s(&mut b, "library");
    typed(&mut b, "GranularitySelection", 1);
    s(&mut b, "indices");
    write_array_len(&mut b, 1).unwrap();
    write_uint(&mut b, 5).unwrap();
    // Row 4: TruePred.
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "predicate");
    typed(&mut b, "TruePred", 0);
    s(&mut b, "library");
    single(&mut b, 5);
    s(&mut b, "solutions");
    write_array_len(&mut b, 6).unwrap();
    for i in 0..6u64 {
        write_map_len(&mut b, 3).unwrap();
        s(&mut b, "hardwarePredicate");
        typed(&mut b, "TruePred", 0);
        s(&mut b, "index");
        write_uint(&mut b, i).unwrap();
        s(&mut b, "name");
        s(&mut b, &format!("Cijk_Ailk_Bljk_HHS_BH_MT{i}"));
    }
    b
}

#[test]
fn rows_processors_cu_counts_and_reachable_solutions() {
    let bytes = index_bytes();
    let index = Index::parse(&bytes).unwrap();
    assert_eq!(index.solutions.len(), 6);
    assert_eq!(index.solution(3).unwrap().name, "Cijk_Ailk_Bljk_HHS_BH_MT3");
    let rows = index.rows();
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.processor,
                r.cu_count,
                r.solutions.iter().copied().collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("gfx90a"), Some(104), vec![0, 1, 2]),
            (Some("gfx1030"), None, vec![3, 4]),
            (Some("gfx942"), None, vec![]),
            (Some("gfx900"), None, vec![]),
            (None, None, vec![5]),
        ]
    );
    assert_eq!(
        rows[2].placeholders,
        ["TensileLibrary_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942"]
    );
    assert_eq!(rows[3].unknown, ["GranularitySelection"]);
    assert!(rows[4].predicate.unwrap().is_true());
    assert_eq!(
        rows[0].predicate.unwrap().to_string(),
        "AMDGPU(And(Processor=gfx90a, CUCount=104))"
    );
    assert_eq!(index.placeholders().len(), 1);
    // The matching table keeps its keys undecoded but decodable.
    let NodeKind::ProblemMap(map) = &match &index.library.kind {
        NodeKind::Hardware(rows) => &rows[0].library,
        _ => unreachable!(),
    }
    .kind
    else {
        panic!("row 0 is a ProblemMap");
    };
    assert_eq!(map[0].0.as_str(), Some("Contraction_l_Alik_Bljk_Cijk_Dijk"));
    let NodeKind::Problem(prows) = &map[0].1.kind else {
        panic!("a Problem node")
    };
    let NodeKind::Matching { table, distance } = &prows[0].library.kind else {
        panic!("a Matching node")
    };
    assert_eq!(*distance, Some("Euclidean"));
    assert_eq!(table[1].value, Leaf::Index(1));
    assert_eq!(table[1].speed, Some(1.5));
    let key = table[1]
        .key
        .to_value(gfxkit_kernel_db::limits::MAX_DEPTH)
        .unwrap();
    assert_eq!(key.as_array().unwrap().len(), 3);
    assert_eq!(prows[0].predicate.to_string(), "EqualityMatching");
}

/// A map's entries.
type Entries = [(rmpv::Value, rmpv::Value)];

/// `v` re-encoded with each map's entries reordered by `order` (given the map's keys).
fn reordered(v: &rmpv::Value, order: &dyn Fn(&Entries) -> Vec<usize>) -> rmpv::Value {
    use rmpv::Value;
    match v {
        Value::Array(a) => Value::Array(a.iter().map(|x| reordered(x, order)).collect()),
        Value::Map(m) => Value::Map(
            order(m)
                .into_iter()
                .map(|i| (reordered(&m[i].0, order), reordered(&m[i].1, order)))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// A library node as text, without byte offsets (which move when keys are reordered).
fn shape(node: &gfxkit_kernel_db::tensile::Node<'_>) -> String {
    use gfxkit_kernel_db::tensile::Row;
    let rows = |rows: &[Row<'_>]| {
        rows.iter()
            .map(|r| format!("{} => {}", r.predicate, shape(&r.library)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match &node.kind {
        NodeKind::Hardware(r) => format!("Hardware[{}]", rows(r)),
        NodeKind::Problem(r) => format!("Problem[{}]", rows(r)),
        NodeKind::ProblemMap(m) => {
            let all: Vec<_> = m
                .iter()
                .map(|(k, n)| format!("{:?}: {}", k.bytes, shape(n)))
                .collect();
            format!("ProblemMap{{{}}}", all.join(", "))
        }
        NodeKind::Matching { distance, table } => {
            let all: Vec<_> = table
                .iter()
                .map(|e| {
                    let leaf = match &e.value {
                        Leaf::Index(i) => i.to_string(),
                        Leaf::Library(n) => shape(n),
                    };
                    format!("{:?} -> {leaf} @{:?}", e.key.bytes, e.speed)
                })
                .collect();
            format!("Matching({distance:?})[{}]", all.join(", "))
        }
        NodeKind::DecisionTree { trees, null_value } => format!(
            "DecisionTree[{}] else {:?}",
            trees.iter().map(shape).collect::<Vec<_>>().join(", "),
            null_value.as_ref().map(|n| shape(n))
        ),
        other => format!("{other:?}"),
    }
}

#[test]
fn the_index_reads_the_same_whatever_the_order_of_keys() {
    // Written by Tensile: `type` first in every node and predicate, `solutions` before
    // `library` (each read in one pass). Read here also with `library` first (stepped over,
    // read after the solutions) and with `type` last (every map's fields stepped over
    // before its type is known).
    let value = rmpv::decode::read_value(&mut &index_bytes()[..]).unwrap();
    let key_is = |k: &rmpv::Value, name: &str| k.as_str() == Some(name);
    let encode = |v: &rmpv::Value| {
        let mut b = B::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    };
    let by_rank = |m: &Entries, rank: &dyn Fn(&rmpv::Value) -> u8| {
        let mut order: Vec<usize> = (0..m.len()).collect();
        order.sort_by_key(|&i| rank(&m[i].0));
        order
    };
    let tensile = encode(&reordered(&value, &|m| {
        by_rank(m, &|k| {
            u8::from(!key_is(k, "type") && !key_is(k, "solutions"))
        })
    }));
    let library_first = encode(&reordered(&value, &|m| {
        by_rank(m, &|k| {
            u8::from(!key_is(k, "type") && !key_is(k, "library"))
        })
    }));
    let type_last = encode(&reordered(&value, &|m| {
        by_rank(m, &|k| u8::from(key_is(k, "type") || key_is(k, "library")))
    }));
    let read = |b: &B| {
        let index = Index::parse(b).unwrap();
        let rows: Vec<_> = index
            .rows()
            .iter()
            .map(|r| {
                (
                    r.predicate.map(|p| p.to_string()),
                    r.solutions.clone(),
                    r.placeholders
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>(),
                    r.unknown.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                )
            })
            .collect();
        let names: Vec<_> = index
            .solutions
            .iter()
            .map(|s| (s.index, s.name.to_string()))
            .collect();
        (shape(&index.library), rows, names)
    };
    let want = read(&tensile);
    assert!(
        want.0
            .starts_with("Hardware[AMDGPU(And(Processor=gfx90a, CUCount=104))"),
        "{}",
        want.0
    );
    assert_eq!(want.1.len(), 5);
    assert_ne!(tensile, library_first);
    assert_ne!(tensile, type_last);
    assert_eq!(read(&library_first), want);
    assert_eq!(read(&type_last), want);
    assert_eq!(read(&index_bytes()), want);
    // Damage reads as damage in every order: a dangling solution index is named with its
    // path.
    for b in [&tensile, &library_first, &type_last] {
        let mut v = rmpv::decode::read_value(&mut &b[..]).unwrap();
        let rmpv::Value::Map(top) = &mut v else {
            panic!("an index is a map");
        };
        for (k, solutions) in top.iter_mut() {
            if let (true, rmpv::Value::Array(all)) = (key_is(k, "solutions"), solutions) {
                all.truncate(5);
            }
        }
        let e = Index::parse(&encode(&v)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownSolution(5), "{e}");
        assert!(
            e.to_string().contains("library.rows[4].library.index"),
            "{e}"
        );
    }
}

#[test]
fn zlib_index_reads_the_same_and_is_bounded() {
    use std::io::Write;
    let bytes = index_bytes();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&bytes).unwrap();
    let packed = z.finish().unwrap();
    let unpacked = decompress_zlib(&packed, 1 << 20).unwrap();
    assert_eq!(unpacked, bytes);
    let e = decompress_zlib(&packed, 100).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::LimitExceeded { .. }), "{e}");
    let e = decompress_zlib(&packed[..packed.len() / 2], 1 << 20).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Decompress { .. }), "{e}");
}

#[test]
fn every_truncation_is_an_error_never_a_panic() {
    let bytes = index_bytes();
    for cut in 0..bytes.len() {
        let e = Index::parse(&bytes[..cut]).unwrap_err();
        assert!(e.offset.is_some(), "cut {cut}: {e}");
    }
}

#[test]
fn every_bit_flip_parses_or_errors_without_panic() {
    let bytes = index_bytes();
    let mut errors = 0;
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x10, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            if let Ok(index) = Index::parse(&b) {
                let _ = index.rows();
            } else {
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn dangling_and_duplicate_solution_indices_are_named_with_their_path() {
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "solutions");
    write_array_len(&mut b, 1).unwrap();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "index");
    write_uint(&mut b, 0).unwrap();
    s(&mut b, "name");
    s(&mut b, "k0");
    s(&mut b, "library");
    typed(&mut b, "Hardware", 1);
    s(&mut b, "rows");
    write_array_len(&mut b, 1).unwrap();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "predicate");
    typed(&mut b, "TruePred", 0);
    s(&mut b, "library");
    single(&mut b, 7);
    let e = Index::parse(&b).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownSolution(7));
    assert_eq!(e.at.as_deref(), Some("library.rows[0].library.index"));
    assert!(e.to_string().contains("at offset 0x"), "{e}");

    let mut d = B::new();
    write_map_len(&mut d, 2).unwrap();
    s(&mut d, "solutions");
    write_array_len(&mut d, 2).unwrap();
    for _ in 0..2 {
        write_map_len(&mut d, 2).unwrap();
        s(&mut d, "index");
        write_uint(&mut d, 0).unwrap();
        s(&mut d, "name");
        s(&mut d, "k0");
    }
    s(&mut d, "library");
    single(&mut d, 0);
    let e = Index::parse(&d).unwrap_err();
    assert_eq!(e.kind, ErrorKind::DuplicateSolution(0));
    assert_eq!(e.at.as_deref(), Some("solutions[1].index"));
}

/// Solutions are looked up through a table over their range when the indices are dense, and
/// by hash when they are not: both answer the same, a hole in the range and an index past
/// either end included.
#[test]
fn solutions_are_found_by_index_whether_the_indices_are_dense_or_sparse() {
    for indices in [
        vec![40, 41, 43, 44],
        vec![0, 1_000_000, u64::from(u32::MAX), i32::MAX as u64 - 1],
    ] {
        let index_of = |with: &[u64], leaf: u64| {
            let mut b = B::new();
            write_map_len(&mut b, 2).unwrap();
            s(&mut b, "solutions");
            write_array_len(&mut b, with.len() as u32).unwrap();
            for i in with {
                write_map_len(&mut b, 2).unwrap();
                s(&mut b, "index");
                write_uint(&mut b, *i).unwrap();
                s(&mut b, "name");
                s(&mut b, &format!("k{i}"));
            }
            s(&mut b, "library");
            matching(&mut b, &[(1, with[0]), (2, leaf)]);
            b
        };
        for &leaf in &indices {
            let b = index_of(&indices, leaf);
            let index = Index::parse(&b).unwrap();
            for &i in &indices {
                assert_eq!(index.solution(i).unwrap().name, format!("k{i}"));
            }
            assert_eq!(
                index.rows()[0].solutions.len(),
                1 + usize::from(leaf != indices[0])
            );
        }
        let missing = [indices[0] + 2, indices[0].wrapping_sub(1), indices[3] + 1];
        for m in missing {
            if indices.contains(&m) {
                continue;
            }
            let e = Index::parse(&index_of(&indices, m)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::UnknownSolution(m), "{indices:?} {m}");
            assert!(Index::parse(&index_of(&indices, indices[1]))
                .unwrap()
                .solution(m)
                .is_none());
        }
    }
}

#[test]
fn depth_nodes_and_solutions_are_bounded() {
    // 100 nested Hardware nodes.
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "solutions");
    write_array_len(&mut b, 0).unwrap();
    s(&mut b, "library");
    for _ in 0..100 {
        typed(&mut b, "Hardware", 1);
        s(&mut b, "rows");
        write_array_len(&mut b, 1).unwrap();
        write_map_len(&mut b, 2).unwrap();
        s(&mut b, "predicate");
        typed(&mut b, "TruePred", 0);
        s(&mut b, "library");
    }
    typed(&mut b, "Placeholder", 1);
    s(&mut b, "value");
    s(&mut b, "deep");
    let e = Index::parse(&b).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::LimitExceeded {
                what: "nesting depth",
                ..
            }
        ),
        "{e}"
    );
    let loose = Limits {
        max_depth: 1000,
        ..Limits::default()
    };
    assert_eq!(
        Index::parse_with(&b, &loose).unwrap().placeholders(),
        ["deep"]
    );

    let bytes = index_bytes();
    let tight = Limits {
        max_nodes: 5,
        ..Limits::default()
    };
    let e = Index::parse_with(&bytes, &tight).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::LimitExceeded { .. }), "{e}");
    let few = Limits {
        max_solutions: 5,
        ..Limits::default()
    };
    let e = Index::parse_with(&bytes, &few).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::LimitExceeded {
                what: "solutions",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn wrong_types_and_missing_fields_say_what_was_expected() {
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "solutions");
    write_uint(&mut b, 3).unwrap();
    s(&mut b, "library");
    single(&mut b, 0);
    let e = Index::parse(&b).unwrap_err();
    assert_eq!(
        e.to_string(),
        "solutions: expected an array of solutions, found integer 3 (at offset 0xb)"
    );
    let mut m = B::new();
    write_map_len(&mut m, 1).unwrap();
    s(&mut m, "solutions");
    write_array_len(&mut m, 0).unwrap();
    let e = Index::parse(&m).unwrap_err();
    assert_eq!(e.kind, ErrorKind::MissingField("library"));
    let mut t = m.clone();
    t.push(0xc0);
    let e = Index::parse(&t).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::TrailingBytes(1)), "{e}");
}

#[test]
fn a_shard_without_hardware_rows_is_one_row_and_unreached_solutions_are_listed() {
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "solutions");
    write_array_len(&mut b, 3).unwrap();
    for i in [10u64, 11, 12] {
        write_map_len(&mut b, 2).unwrap();
        s(&mut b, "index");
        write_uint(&mut b, i).unwrap();
        s(&mut b, "name");
        s(&mut b, &format!("k{i}"));
    }
    s(&mut b, "library");
    problem(&mut b, &[&|b: &mut B| matching(b, &[(1, 12), (2, 10)])]);
    let index = Index::parse(&b).unwrap();
    let rows = index.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].predicate, None);
    assert_eq!(
        rows[0].solutions.iter().copied().collect::<Vec<_>>(),
        [10, 12]
    );
    assert_eq!(index.unreachable_solutions(), [11]);
    assert!(Index::parse(&index_bytes())
        .unwrap()
        .unreachable_solutions()
        .is_empty());
}

/// A shard of solutions 10, 11 and 12 whose library is one `Matching` table of `entries`
/// (each written by its closure: the entry map's fields).
fn shard_with_table(entries: &[&dyn Fn(&mut B)]) -> B {
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "solutions");
    write_array_len(&mut b, 3).unwrap();
    for i in [10u64, 11, 12] {
        write_map_len(&mut b, 2).unwrap();
        s(&mut b, "index");
        write_uint(&mut b, i).unwrap();
        s(&mut b, "name");
        s(&mut b, &format!("k{i}"));
    }
    s(&mut b, "library");
    typed(&mut b, "Matching", 1);
    s(&mut b, "table");
    write_array_len(&mut b, entries.len() as u32).unwrap();
    for entry in entries {
        entry(&mut b);
    }
    b
}

#[test]
fn a_table_entry_reads_its_first_fields_and_names_what_it_lacks() {
    // A repeated field counts once, the first; `value` is read when there is no `index`;
    // unknown fields are stepped over; `speed` is optional.
    let b = shard_with_table(&[
        &|b: &mut B| {
            write_map_len(b, 4).unwrap();
            s(b, "index");
            write_uint(b, 12).unwrap();
            s(b, "key");
            write_array_len(b, 2).unwrap();
            write_uint(b, 64).unwrap();
            write_uint(b, 300).unwrap();
            s(b, "index");
            write_uint(b, 10).unwrap();
            s(b, "speed");
            write_f64(b, 2.5).unwrap();
        },
        &|b: &mut B| {
            write_map_len(b, 4).unwrap();
            s(b, "extra");
            write_array_len(b, 1).unwrap();
            write_array_len(b, 0).unwrap();
            s(b, "key");
            write_array_len(b, 0).unwrap();
            s(b, "value");
            write_uint(b, 11).unwrap();
            s(b, "key");
            write_uint(b, 7).unwrap();
        },
    ]);
    let index = Index::parse(&b).unwrap();
    let NodeKind::Matching { distance, table } = &index.library.kind else {
        panic!("{:?}", index.library.kind);
    };
    assert_eq!(*distance, None);
    assert_eq!(table.len(), 2);
    assert_eq!(table[0].value, Leaf::Index(12));
    assert_eq!(table[0].speed, Some(2.5));
    assert_eq!(table[0].key.bytes, [0x92, 64, 0xcd, 0x01, 0x2c]);
    assert_eq!(table[1].value, Leaf::Index(11));
    assert_eq!(table[1].speed, None);
    assert_eq!(table[1].key.bytes, [0x90]);
    assert_eq!(
        index.rows()[0]
            .solutions
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [11, 12]
    );

    let no_key = shard_with_table(&[&|b: &mut B| {
        write_map_len(b, 1).unwrap();
        s(b, "index");
        write_uint(b, 10).unwrap();
    }]);
    let e = Index::parse(&no_key).unwrap_err();
    assert_eq!(e.kind, ErrorKind::MissingField("key"));
    assert!(e.to_string().starts_with("library.table[0]: "), "{e}");
    let bad_index = shard_with_table(&[&|b: &mut B| {
        write_map_len(b, 2).unwrap();
        s(b, "key");
        write_array_len(b, 0).unwrap();
        s(b, "index");
        s(b, "ten");
    }]);
    let e = Index::parse(&bad_index).unwrap_err();
    assert!(e.to_string().starts_with("library.table[0].index: "), "{e}");
}

// The indexed layout (`format_version: 2`): the same index, its solutions in a blob.

use gfxkit_kernel_db::tensile::Layout;
use gfxkit_kernel_db::tensile_write::prune_rows;
use gfxkit_testkit::tensile::to_indexed;

#[test]
fn the_indexed_layout_reads_as_the_array_layout() {
    let array = index_bytes();
    let indexed = to_indexed(&array);
    let a = Index::parse(&array).unwrap();
    let b = Index::parse(&indexed).unwrap();
    assert_eq!((a.layout(), b.layout()), (Layout::Array, Layout::Indexed));
    let names = |i: &Index<'_>| {
        i.solutions
            .iter()
            .map(|s| (s.index, s.name.to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&a), names(&b));
    let rows = |i: &Index<'_>| {
        i.rows()
            .into_iter()
            .map(|r| {
                let p = r.predicate.map(|p| p.to_string());
                (p, r.solutions, r.placeholders.len(), r.unknown.len())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&a), rows(&b));
    for i in 0..a.solutions.len() {
        assert_eq!(
            a.solution_bytes(&array, i).unwrap(),
            b.solution_bytes(&indexed, i).unwrap()
        );
        // Offsets are absolute in the input: the solution's map starts there.
        let at = b.solutions[i].offset as usize;
        assert_eq!(
            &indexed[at..at + 1],
            &b.solution_bytes(&indexed, i).unwrap()[..1]
        );
    }
    // A `format_version: 1` and a `solutions_index` beside a `solutions` array: the array is
    // what the loader reads.
    let mut v1 = B::new();
    write_map_len(&mut v1, 3).unwrap();
    s(&mut v1, "format_version");
    write_uint(&mut v1, 1).unwrap();
    s(&mut v1, "solutions_index");
    write_uint(&mut v1, 7).unwrap();
    v1.extend_from_slice(&array[1..]);
    v1[0] = 0x80 | 4;
    assert_eq!(Index::parse(&v1).unwrap().layout(), Layout::Array);
}

#[test]
fn an_indexed_index_prunes_to_an_indexed_index() {
    let array = index_bytes();
    let indexed = to_indexed(&array);
    let keep = |r: &gfxkit_kernel_db::tensile::RowSummary<'_>| r.processor == Some("gfx1030");
    let from_array = prune_rows(&array, keep, &Limits::default()).unwrap();
    let from_indexed = prune_rows(&indexed, keep, &Limits::default()).unwrap();
    assert_eq!(
        (from_indexed.solutions_before, from_indexed.solutions_after),
        (6, 2)
    );
    let back = Index::parse(&from_indexed.bytes).unwrap();
    assert_eq!(back.layout(), Layout::Indexed);
    assert_eq!(back.rows().len(), 1);
    // The same kept solutions, packed the way the build packs them.
    assert_eq!(from_indexed.bytes, to_indexed(&from_array.bytes));
}

/// A solution map `{index, name}`.
fn solution(index: u64, name: &str) -> B {
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "index");
    write_uint(&mut b, index).unwrap();
    s(&mut b, "name");
    s(&mut b, name);
    b
}

/// An indexed file with this table and blob (no blob when `None`) and one `Single` leaf
/// naming `tree`, the shapes the loader's own tests refuse.
fn indexed_file(version: u64, table: &[i64], blob: Option<&[u8]>, tree: u64) -> B {
    let mut b = B::new();
    write_map_len(&mut b, if blob.is_some() { 4 } else { 3 }).unwrap();
    s(&mut b, "format_version");
    write_uint(&mut b, version).unwrap();
    s(&mut b, "solutions_index");
    write_array_len(&mut b, table.len() as u32).unwrap();
    for &v in table {
        rmp::encode::write_sint(&mut b, v).unwrap();
    }
    if let Some(blob) = blob {
        s(&mut b, "solutions_blob");
        rmp::encode::write_bin(&mut b, blob).unwrap();
    }
    s(&mut b, "library");
    single(&mut b, tree);
    b
}

#[test]
fn a_damaged_indexed_table_is_refused_as_the_loader_refuses_it() {
    let k0 = solution(0, "k0");
    let len = k0.len() as i64;
    let ok = indexed_file(2, &[0, 0, len], Some(&k0), 0);
    let index = Index::parse(&ok).unwrap();
    assert_eq!(index.solution(0).unwrap().name, "k0");

    let refused = |b: B, want: &str| {
        let e = Index::parse(&b).unwrap_err();
        assert!(e.to_string().contains(want), "{e} (wanted {want:?})");
        assert!(e.offset.is_some_and(|o| o < b.len() as u64), "{e}");
    };
    refused(
        indexed_file(2, &[0, 0, len], Some(&k0), 7),
        "solution index 7 is not in the solutions list",
    );
    refused(
        indexed_file(2, &[0, 1 << 62, 1 << 62], Some(&k0), 0),
        "run past the",
    );
    refused(
        indexed_file(2, &[0, 0, len + 1], Some(&k0), 0),
        "run past the",
    );
    refused(
        indexed_file(99, &[0, 0, len], Some(&k0), 0),
        "format_version: format_version 99 is not a layout gfxkit reads",
    );
    refused(
        indexed_file(2, &[0, 0], Some(&k0), 0),
        "2 integers, not [index, offset, length] triples",
    );
    let wide = (1i64 << 32) + 5;
    refused(
        indexed_file(2, &[wide, 0, len], Some(&solution(wide as u64, "k")), 5),
        "wider than the loader's 32-bit int",
    );
    refused(
        indexed_file(2, &[0, -8, len], Some(&k0), 0),
        "expected a byte offset in solutions_blob, found integer -8",
    );
    let mut two = k0.clone();
    two.extend_from_slice(&k0);
    refused(
        indexed_file(2, &[0, 0, len, 0, len, len], Some(&two), 0),
        "solution index 0 appears more than once",
    );
    refused(
        indexed_file(2, &[0, 0, len], None, 0),
        "missing field \"solutions_blob\"",
    );
    refused(
        indexed_file(2, &[7, 0, len], Some(&k0), 7),
        "the solution in the slice has index 0, the table says 7",
    );
    // A slice cut short of its map, and one with bytes after it.
    refused(
        indexed_file(2, &[0, 0, len - 1], Some(&k0), 0),
        "runs past the end",
    );
    let mut padded = k0.clone();
    padded.push(0xc0);
    refused(
        indexed_file(2, &[0, 0, len + 1], Some(&padded), 0),
        "1 bytes follow the solution map in its slice",
    );
    // A blob that is not a binary.
    let mut b = indexed_file(2, &[0, 0, len], Some(&k0), 0);
    let at = b.windows(14).position(|w| w == b"solutions_blob").unwrap() + 14;
    b[at] = 0xc0;
    assert!(Index::parse(&b)
        .unwrap_err()
        .to_string()
        .contains("expected a binary of solutions"));
}

#[test]
fn every_truncation_of_an_indexed_index_is_an_error() {
    let bytes = to_indexed(&index_bytes());
    for cut in 0..bytes.len() {
        let e = Index::parse(&bytes[..cut]).unwrap_err();
        assert!(e.offset.is_some_and(|o| o <= cut as u64), "cut {cut}: {e}");
    }
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x41;
        if let Ok(index) = Index::parse(&b) {
            let _ = index.rows();
        }
    }
}

/// An index of 4 solutions whose root is a `Matching` node with the given table entries, each
/// written by `entry`.
fn table_index(entries: &[(u64, u64)], entry: &dyn Fn(&mut B, u64, u64)) -> B {
    let mut b = B::new();
    write_map_len(&mut b, 2).unwrap();
    s(&mut b, "solutions");
    write_array_len(&mut b, 4).unwrap();
    for i in 0..4u64 {
        write_map_len(&mut b, 2).unwrap();
        s(&mut b, "name");
        s(&mut b, &format!("S{i}"));
        s(&mut b, "index");
        write_uint(&mut b, 10 + i).unwrap();
    }
    s(&mut b, "library");
    typed(&mut b, "Matching", 2);
    s(&mut b, "distance");
    s(&mut b, "Euclidean");
    s(&mut b, "table");
    write_array_len(&mut b, entries.len() as u32).unwrap();
    for &(size, index) in entries {
        entry(&mut b, size, index);
    }
    b
}

/// What the table of a [`table_index`] reads as: each entry's key decoded, and its leaf.
fn table_of(bytes: &B) -> Result<Vec<(rmpv::Value, Leaf<'_>, Option<f64>)>, String> {
    let index = Index::parse(bytes).map_err(|e| e.to_string())?;
    let NodeKind::Matching { table, .. } = index.library.kind else {
        panic!("the root is a Matching node");
    };
    Ok(table
        .into_iter()
        .map(|e| {
            let key = rmpv::decode::read_value(&mut &e.key.bytes[..]).unwrap();
            (key, e.value, e.speed)
        })
        .collect())
}

#[test]
fn table_entries_read_the_same_in_the_short_form_and_every_other() {
    // Tensile writes nearly every entry as `{"key": [sizes], "index": N}`, which the reader
    // takes by its bytes; any other form goes through the general reader. Both must agree.
    let sizes = [
        (1, 10),
        (300, 11),
        (70_000, 12),
        (5_000_000_000, 13),
        (7, 11),
    ];
    let short = |b: &mut B, size: u64, index: u64| {
        write_map_len(b, 2).unwrap();
        s(b, "key");
        write_array_len(b, 4).unwrap();
        for _ in 0..4 {
            write_uint(b, size).unwrap();
        }
        s(b, "index");
        write_uint(b, index).unwrap();
    };
    let index_first = |b: &mut B, size: u64, index: u64| {
        write_map_len(b, 2).unwrap();
        s(b, "index");
        write_uint(b, index).unwrap();
        s(b, "key");
        write_array_len(b, 4).unwrap();
        for _ in 0..4 {
            write_uint(b, size).unwrap();
        }
    };
    // A map16 head and an array16 key: the same values, in wider encodings.
    let wide = |b: &mut B, size: u64, index: u64| {
        b.extend_from_slice(&[0xde, 0, 2]);
        s(b, "key");
        b.extend_from_slice(&[0xdc, 0, 4]);
        for _ in 0..4 {
            write_uint(b, size).unwrap();
        }
        s(b, "index");
        write_uint(b, index).unwrap();
    };
    let plain = table_index(&sizes, &short);
    let want = table_of(&plain).unwrap();
    assert_eq!(want.len(), 5);
    assert_eq!(want[2].1, Leaf::Index(12));
    assert_eq!(
        want[3].0,
        rmpv::Value::Array(vec![5_000_000_000u64.into(); 4])
    );
    assert_eq!(want[0].2, None);
    for other in [&index_first as &dyn Fn(&mut B, u64, u64), &wide] {
        let bytes = table_index(&sizes, other);
        assert_eq!(table_of(&bytes).unwrap(), want);
    }
    // A key that is not an array of scalars, a float or a string among the sizes: read by the
    // general reader, as written.
    let odd = |b: &mut B, size: u64, index: u64| {
        write_map_len(b, 2).unwrap();
        s(b, "key");
        write_array_len(b, 3).unwrap();
        write_uint(b, size).unwrap();
        write_f64(b, 0.5).unwrap();
        write_str(b, &"x".repeat(40)).unwrap();
        s(b, "index");
        write_uint(b, index).unwrap();
    };
    let odd = table_index(&sizes, &odd);
    let read = table_of(&odd).unwrap();
    assert_eq!(read.len(), 5);
    assert_eq!(
        read[1].0,
        rmpv::Value::Array(vec![300u64.into(), 0.5.into(), "x".repeat(40).into()])
    );
    // Damage is judged as before: an entry naming no solution, and one cut short.
    let unknown = table_index(&[(1, 10), (2, 14)], &short);
    let e = Index::parse(&unknown).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownSolution(14), "{e}");
    assert!(e.to_string().contains("library.table[1].index"), "{e}");
    for cut in [plain.len() - 1, plain.len() - 3, plain.len() - 12] {
        assert!(Index::parse(&plain[..cut]).is_err(), "cut at {cut}");
    }
}

/// Solutions whose fields repeat the bytes of the solution before (as Tensile writes the same
/// `problemType` into every solution) read as solutions whose fields all differ: the same
/// names, indices and offsets; cut anywhere, or with a repeated value damaged, the index is an
/// error at or before the cut, never misread.
#[test]
fn repeated_solution_fields_read_as_any_other() {
    let index_of = |repeat: bool| {
        let mut b = B::new();
        write_map_len(&mut b, 2).unwrap();
        s(&mut b, "solutions");
        write_array_len(&mut b, 5).unwrap();
        for i in 0..5u64 {
            write_map_len(&mut b, 4).unwrap();
            s(&mut b, "name");
            s(&mut b, &format!("Cijk_Ailk_Bljk_SB_MT{i}"));
            s(&mut b, "problemType");
            write_map_len(&mut b, 3).unwrap();
            s(&mut b, "operationIdentifier");
            s(&mut b, "Contraction_l_Ailk_Bljk_Cijk_Dijk");
            s(&mut b, "aType");
            write_uint(&mut b, if repeat { 0 } else { i }).unwrap();
            s(&mut b, "sizes");
            write_array_len(&mut b, 3).unwrap();
            for n in [64u64, 128, 256 + u64::from(!repeat) * i] {
                write_uint(&mut b, n).unwrap();
            }
            s(&mut b, "index");
            write_uint(&mut b, i).unwrap();
            // A value that repeats in every other solution only.
            s(&mut b, "sizeMapping");
            write_array_len(&mut b, 16).unwrap();
            for n in 0..16u64 {
                write_uint(&mut b, 1000 * n + if repeat { i % 2 } else { i }).unwrap();
            }
        }
        s(&mut b, "library");
        matching(&mut b, &[(1, 0), (2, 4)]);
        b
    };
    let (repeated, distinct) = (index_of(true), index_of(false));
    assert_eq!(repeated.len(), distinct.len());
    let read = |b: &[u8]| {
        let index = Index::parse(b).unwrap();
        (0..5u64)
            .map(|i| {
                let s = index.solution(i).unwrap();
                (s.index, s.name.to_owned(), s.offset)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(read(&repeated), read(&distinct));
    for cut in 0..repeated.len() {
        let e = Index::parse(&repeated[..cut]).unwrap_err();
        assert!(e.offset.is_some_and(|o| o <= cut as u64), "cut {cut}: {e}");
    }
    // The last solution's problemType made a map of 4 where 3 are stored: its bytes no longer
    // repeat the one before, and the damage is found where it lies.
    let at = repeated
        .windows(12)
        .rposition(|w| w == b"\xabproblemType")
        .unwrap()
        + 12;
    let mut damaged = repeated.clone();
    assert_eq!(damaged[at], 0x83);
    damaged[at] = 0x84;
    assert!(Index::parse(&damaged).is_err());
}
