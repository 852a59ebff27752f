//! `gfxkit kernels` over a clang-19 bundle: every kernel of every entry, with descriptors,
//! occupancy and arguments; `--target`, `--sort`, `--demangle`, and damaged input.

mod common;
use common::gfxkit;
use gfxkit_testkit::HipBuild;

const SRC: &str = r#"
__global__ void small(float *a) { a[__builtin_amdgcn_workitem_id_x()] = 1.0f; }
__attribute__((amdgpu_flat_work_group_size(1, 256)))
__global__ void shared(float *a, int n) {
  __attribute__((shared)) float tile[8192];
  int t = __builtin_amdgcn_workitem_id_x();
  tile[t] = a[t];
  __builtin_amdgcn_s_barrier();
  a[t] = tile[(t + n) & 8191];
}
"#;

fn listing(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = gfxkit(args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn kernels_of_every_entry_with_occupancy_descriptor_and_args() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = HipBuild::new(SRC, &["gfx90a", "gfx1100"]).build(dir.path(), "k");
    let b = bundle.to_str().unwrap();
    let all = listing(&["kernels", "--json", b]);
    let ks = all["kernels"].as_array().unwrap();
    assert_eq!(ks.len(), 4, "{all}");
    for k in ks {
        let target = k["target_id"].as_str().unwrap();
        assert!(k["occupancy"].as_u64().unwrap() >= 1, "{k}");
        let d = &k["descriptor"];
        assert_eq!(d["kernarg_size"], k["kernarg_size"]);
        assert_eq!(d["group_segment_fixed_size"], k["lds_bytes"]);
        if target.starts_with("gfx90a") {
            assert!(d["accum_offset"].as_u64().unwrap() >= 4);
            assert_eq!(k["wavefront_size"], 64);
        } else {
            assert_eq!(d["wavefront_size32"], 1);
            assert_eq!(k["wgp_mode"], true);
        }
        assert_eq!(k["args"][0]["value_kind"], "global_buffer");
        assert_eq!(k["args"][0]["address_space"], "global");
    }
    // The 32 KiB LDS kernel: at most 2 work-groups of 4 waves per CU on gfx90a -> 2 per SIMD.
    let shared = ks
        .iter()
        .find(|k| k["target_id"] == "gfx90a" && k["name"].as_str().unwrap().contains("shared"))
        .unwrap();
    assert_eq!(shared["lds_bytes"], 32768);
    assert_eq!(shared["occupancy"], 2);
    assert_eq!(shared["occupancy_limited_by"], "lds");

    // --target, --sort, --demangle.
    let one = listing(&[
        "kernels",
        "--json",
        "--target",
        "gfx1100",
        "--sort",
        "lds",
        "--demangle",
        b,
    ]);
    let ks = one["kernels"].as_array().unwrap();
    assert_eq!(ks.len(), 2);
    assert_eq!(ks[0]["demangled"], "shared(float*, int)");
    assert!(ks[0]["lds_bytes"].as_u64() > ks[1]["lds_bytes"].as_u64());
    let occ = listing(&["kernels", "--json", "--sort", "occupancy", b]);
    let o: Vec<u64> = occ["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["occupancy"].as_u64().unwrap())
        .collect();
    assert!(o.windows(2).all(|w| w[0] <= w[1]), "{o:?}");

    // Text: one row per kernel, demangled names.
    let (code, text, _) = gfxkit(&["kernels", "--demangle", "--target", "gfx90a", b]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("TARGET") && lines[0].ends_with("NAME"));
    assert_eq!(lines.len(), 3);
    assert!(text.contains("shared(float*, int)"));

    // Nothing selected: exit 1.
    let (code, _, err) = gfxkit(&["kernels", "--target", "gfx942", b]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn damaged_inputs_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = HipBuild::new(SRC, &["gfx90a"]).build(dir.path(), "k");
    let mut bytes = std::fs::read(&bundle).unwrap();
    // Cut the bundle inside its code object.
    bytes.truncate(bytes.len() - 100);
    let cut = dir.path().join("cut.hipfb");
    std::fs::write(&cut, &bytes).unwrap();
    let (code, _, err) = gfxkit(&["kernels", cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cut.hipfb"), "{err}");
}

#[test]
fn a_descriptor_with_reserved_bits_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let ir = dir.path().join("k.ll");
    std::fs::write(
        &ir,
        "define amdgpu_kernel void @k(ptr addrspace(1) %p) {\n  store i32 0, ptr addrspace(1) %p\n  ret void\n}\n",
    )
    .unwrap();
    let obj = dir.path().join("k.o");
    gfxkit_testkit::llc_object(&ir, &obj, "gfx90a", 5, "");
    let mut bytes = std::fs::read(&obj).unwrap();
    let co = gfxkit_code_object::CodeObject::parse(&bytes).unwrap();
    let at = co.kernel_descriptors().unwrap()[0].offset as usize;
    bytes[at + 48 + 1] |= 1 << 2; // COMPUTE_PGM_RSRC1 bit 10: reserved (PRIORITY)
    let bad = dir.path().join("bad.o");
    std::fs::write(&bad, &bytes).unwrap();
    let b = bad.to_str().unwrap();
    let (code, out, err) = gfxkit(&["inspect", "--json", b]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let k = &j["kernels"][0];
    assert!(k["descriptor"].is_null());
    let e = k["descriptor_error"].as_str().unwrap();
    assert!(
        e.contains("COMPUTE_PGM_RSRC1") && e.contains("bit 10"),
        "{e}"
    );
    // Occupancy still follows from the metadata.
    assert!(k["occupancy"].as_u64().unwrap() >= 1);
    let (code, text, _) = gfxkit(&["inspect", b]);
    assert_eq!(code, 0);
    assert!(text.contains("cannot decode: COMPUTE_PGM_RSRC1"), "{text}");
    let listing = listing(&["kernels", "--json", b]);
    assert_eq!(
        listing["kernels"][0]["descriptor_error"],
        k["descriptor_error"]
    );
}
