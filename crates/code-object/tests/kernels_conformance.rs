//! Kernel descriptors, register counts and occupancy against llc-19 and llvm-objdump-19.
//!
//! A matrix of kernels (live values from 2 to 160, LDS from none to 90% of the processor's,
//! flat work-group sizes 1 to 1024, `amdgpu-waves-per-eu`) is compiled with llc-19 for
//! processors of every family, in wave32 and wave64, CU and WGP mode. For each kernel:
//! - every line llvm-objdump-19 prints for `<k>.kd` equals what gfxkit decodes (GFX8+; LLVM 19's
//!   disassembler has no GFX6/GFX7), and every raw field equals llc's `.amdhsa_*` directive;
//! - `; Occupancy:` equals [`gfxkit_code_object::occupancy`], `; NumVgprs:`, `; NumSgprs:`,
//!   `; NumAgprs:` and `; ScratchSize:` equal the metadata gfxkit reads;
//! - descriptors re-encoded with random field values (and with a reserved bit set) decode as
//!   llvm-objdump-19 decodes (or refuses) them.
//!
//! `scripts/kd-sweep` runs the larger sweep (ignored here): every LLVM 19 processor.

use gfxkit_code_object::descriptor::{applies, encode};
use gfxkit_code_object::descriptor_table::{Value, Word, FIELDS};
use gfxkit_code_object::{occupancy, summaries, CodeObject, OccupancyInput};
use gfxkit_spec::{Generation, HardwareLimits, Processor};
use gfxkit_testkit::{llvm_tool, run_ok};
use rayon::prelude::*;

mod common;
use common::{objdump_kds, objdump_lines};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One kernel of the matrix.
#[derive(Clone, Copy)]
struct Spec {
    /// Values live at once (VGPR pressure).
    live: usize,
    /// LDS as a fraction (per mille) of the processor's LDS per CU.
    lds_permille: u32,
    /// `amdgpu-flat-work-group-size` maximum (1024 is LLVM's default).
    fwg: u32,
    /// `amdgpu-waves-per-eu`.
    wpe: Option<(u32, u32)>,
}

const fn k(live: usize, lds_permille: u32, fwg: u32, wpe: Option<(u32, u32)>) -> Spec {
    Spec {
        live,
        lds_permille,
        fwg,
        wpe,
    }
}

const KERNELS: &[Spec] = &[
    k(2, 0, 1024, None),
    k(24, 15, 256, None),
    k(64, 300, 1024, None),
    k(120, 0, 1024, None),
    k(160, 0, 64, Some((1, 2))),
    k(8, 900, 64, None),
    k(30, 0, 128, Some((3, 3))),
    k(90, 120, 512, None),
    k(48, 60, 1, None),
    k(40, 500, 256, Some((2, 4))),
];

/// Processors and `-mattr`: every family, both wave sizes, CU and WGP mode.
const TARGETS: &[(&str, &str, u8)] = &[
    ("gfx600", "", 5),
    ("gfx700", "", 5),
    ("gfx803", "", 5),
    ("gfx900", "+xnack", 5),
    ("gfx906", "", 5),
    ("gfx908", "", 5),
    ("gfx90a", "", 5),
    ("gfx942", "", 5),
    ("gfx1010", "", 5),
    ("gfx1010", "+wavefrontsize64", 5),
    ("gfx1030", "", 5),
    ("gfx1030", "+cumode", 5),
    ("gfx1030", "+wavefrontsize64,+cumode", 5),
    ("gfx1100", "", 5),
    ("gfx1100", "+wavefrontsize64", 5),
    ("gfx1102", "+cumode", 5),
    ("gfx1151", "", 5),
    ("gfx1200", "", 5),
    ("gfx1201", "+wavefrontsize64,+cumode", 5),
    ("gfx10-3-generic", "", 6),
    ("gfx11-generic", "", 6),
];

/// LLVM IR of one kernel: `live` volatile loads all live until a chain of adds that uses the
/// last one first, a store to LDS, and the attributes.
fn kernel_ir(name: &str, idx: usize, spec: &Spec, lds_bytes: u32) -> String {
    let mut b = String::new();
    if lds_bytes > 0 {
        b += &format!(
            "@lds_{name} = internal addrspace(3) global [{lds_bytes} x i8] undef, align 4\n"
        );
    }
    b += &format!("define amdgpu_kernel void @{name}(ptr addrspace(1) %p) #{idx} {{\n");
    b += "  %tid = call i32 @llvm.amdgcn.workitem.id.x()\n";
    b += "  %base = getelementptr float, ptr addrspace(1) %p, i32 %tid\n";
    for i in 0..spec.live {
        b += &format!(
            "  %g{i} = getelementptr float, ptr addrspace(1) %base, i32 {}\n  %v{i} = load volatile float, ptr addrspace(1) %g{i}\n",
            i * 64
        );
    }
    let mut acc = format!("%v{}", spec.live - 1);
    for i in (0..spec.live - 1).rev() {
        b += &format!("  %s{i} = fadd float {acc}, %v{i}\n");
        acc = format!("%s{i}");
    }
    b += &format!("  store float {acc}, ptr addrspace(1) %base\n");
    if lds_bytes > 0 {
        b += &format!(
            "  %q = getelementptr [{lds_bytes} x i8], ptr addrspace(3) @lds_{name}, i32 0, i32 {}\n  store volatile float {acc}, ptr addrspace(3) %q\n",
            lds_bytes - 4
        );
    }
    b += "  ret void\n}\n";
    let mut attrs = vec![format!(
        "\"amdgpu-flat-work-group-size\"=\"1,{}\"",
        spec.fwg
    )];
    if let Some((lo, hi)) = spec.wpe {
        attrs.push(format!("\"amdgpu-waves-per-eu\"=\"{lo},{hi}\""));
    }
    b += &format!("attributes #{idx} = {{ nounwind {} }}\n", attrs.join(" "));
    b
}

fn lds_of(spec: &Spec, hw: &HardwareLimits) -> u32 {
    (u64::from(hw.lds_per_cu) * u64::from(spec.lds_permille) / 1000) as u32 / 4 * 4
}

fn module(specs: &[Spec], hw: &HardwareLimits) -> String {
    let mut m = String::from("declare i32 @llvm.amdgcn.workitem.id.x()\n");
    for (i, s) in specs.iter().enumerate() {
        m += &kernel_ir(&format!("k{i}"), i, s, lds_of(s, hw));
    }
    m
}

/// llc's `; Kernel info:` comments of each kernel, and its `.amdhsa_*` directives.
#[derive(Default, Debug)]
struct AsmKernel {
    info: BTreeMap<String, u64>,
    directives: BTreeMap<String, u64>,
}

fn parse_asm(text: &str) -> BTreeMap<String, AsmKernel> {
    let mut out: BTreeMap<String, AsmKernel> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_kd: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        // A kernel's label: `k3:   ; @k3`.
        let label = t.split_whitespace().next().unwrap_or("");
        if let Some(name) = label.strip_suffix(':').filter(|n| {
            n.len() > 1 && n.starts_with('k') && n[1..].chars().all(|c| c.is_ascii_digit())
        }) {
            current = Some(name.to_owned());
        }
        if let Some(name) = t.strip_prefix(".amdhsa_kernel ") {
            in_kd = Some(name.to_owned());
            continue;
        }
        if t == ".end_amdhsa_kernel" {
            in_kd = None;
            continue;
        }
        if let Some(name) = &in_kd {
            if let Some(rest) = t.strip_prefix(".amdhsa_") {
                let mut it = rest.split_whitespace();
                if let (Some(k), Some(v)) = (it.next(), it.next()) {
                    if let Ok(v) = v.parse::<u64>() {
                        out.entry(name.clone())
                            .or_default()
                            .directives
                            .insert(k.to_owned(), v);
                    }
                }
            }
            continue;
        }
        if let (Some(name), Some(rest)) = (&current, t.strip_prefix("; ")) {
            if let Some((key, value)) = rest.split_once(": ") {
                if let Ok(v) = value.trim().parse::<u64>() {
                    out.entry(name.clone())
                        .or_default()
                        .info
                        .insert(key.to_owned(), v);
                }
            }
        }
    }
    out
}

#[derive(Default, Debug)]
struct Counts {
    kernels: usize,
    objdump_fields: usize,
    asm_fields: usize,
    occupancy: usize,
    registers: usize,
    random_descriptors: usize,
    random_fields: usize,
    reserved_refused: usize,
    sgpr_granules_refused: usize,
    mismatches: Vec<String>,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.kernels += o.kernels;
        self.objdump_fields += o.objdump_fields;
        self.asm_fields += o.asm_fields;
        self.occupancy += o.occupancy;
        self.registers += o.registers;
        self.random_descriptors += o.random_descriptors;
        self.random_fields += o.random_fields;
        self.reserved_refused += o.reserved_refused;
        self.sgpr_granules_refused += o.sgpr_granules_refused;
        self.mismatches.extend(o.mismatches);
    }
}

/// xorshift64*: deterministic test randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Random printed values for every field of the layout; `wave32` picks the wave size first.
fn random_fields(hw: &HardwareLimits, rng: &mut Rng) -> Vec<(&'static str, u64)> {
    let wave32 = hw.generation >= Generation::Gfx10 && rng.next() % 2 == 0;
    let mut out = Vec::new();
    for f in FIELDS {
        if !applies(f, hw, None, wave32) || f.word == Word::None {
            continue;
        }
        if f.name == "wavefront_size32" && hw.generation >= Generation::Gfx10 {
            out.push((f.name, u64::from(wave32)));
            continue;
        }
        if f.name == "granulated_wavefront_sgpr_count" {
            // llvm-objdump refuses it (see descriptor_table).
            continue;
        }
        let bits = rng.next() & ((1u64 << f.width) - 1);
        let value = match f.value {
            Value::Granules(g) => (bits + 1) * u64::from(g),
            Value::VgprGranules => (bits + 1) * u64::from(hw.vgpr_encoding_granule(wave32)),
            _ => bits,
        };
        out.push((f.name, value));
    }
    out
}

/// A reserved bit of the layout (word and bit), chosen at random.
fn random_reserved_bit(hw: &HardwareLimits, wave32: bool, rng: &mut Rng) -> (Word, u32) {
    let words = [
        Word::Rsrc1,
        Word::Rsrc2,
        Word::Rsrc3,
        Word::KernelCodeProperties,
    ];
    loop {
        let w = words[(rng.next() % words.len() as u64) as usize];
        let defined = FIELDS
            .iter()
            .filter(|f| f.word == w && applies(f, hw, None, wave32))
            .fold(0u64, |m, f| m | f.mask());
        let bit = (rng.next() % (w.size() as u64 * 8)) as u32;
        if defined & (1 << bit) == 0 {
            return (w, bit);
        }
    }
}

fn check_target(
    cpu: &str,
    attrs: &str,
    cov: u8,
    specs: &[Spec],
    dir: &Path,
    random_rounds: usize,
) -> Counts {
    let mut c = Counts::default();
    let p = Processor::by_name(cpu).unwrap();
    let hw = p.hw;
    let tag = format!("{cpu}{}", attrs.replace([',', '+'], "_"));
    let ir = dir.join(format!("{tag}.ll"));
    std::fs::write(&ir, module(specs, hw)).unwrap();
    let llc = |filetype: &str, out: &Path| {
        let mut cmd = Command::new(llvm_tool("llc"));
        cmd.args([
            "-mtriple=amdgcn-amd-amdhsa",
            &format!("-filetype={filetype}"),
        ])
        .arg(format!("-mcpu={cpu}"))
        .arg(format!("--amdhsa-code-object-version={cov}"));
        if !attrs.is_empty() {
            cmd.arg(format!("-mattr={attrs}"));
        }
        run_ok(cmd.arg(&ir).arg("-o").arg(out));
    };
    let asm_path = dir.join(format!("{tag}.s"));
    let obj_path = dir.join(format!("{tag}.o"));
    llc("asm", &asm_path);
    llc("obj", &obj_path);
    let asm = parse_asm(&std::fs::read_to_string(&asm_path).unwrap());
    let data = std::fs::read(&obj_path).unwrap();
    let co = CodeObject::parse(&data).unwrap();
    let descriptors = co.kernel_descriptors().unwrap();
    let objdump_ok = hw.generation >= Generation::Gfx8;
    let dumped = if objdump_ok {
        objdump_kds(&obj_path)
    } else {
        BTreeMap::new()
    };
    let mut miss = |what: String| c.mismatches.push(format!("{tag}: {what}"));
    let sums = summaries(&co, false);
    let mut counted = Counts::default();
    for (i, spec) in specs.iter().enumerate() {
        let name = format!("k{i}");
        counted.kernels += 1;
        let Some(meta) = co.kernels().iter().find(|k| k.name == name) else {
            miss(format!("{name}: not in metadata"));
            continue;
        };
        let d = descriptors
            .iter()
            .find(|d| d.symbol == format!("{name}.kd"))
            .expect("descriptor");
        let fields = match d.fields(hw) {
            Ok(f) => f,
            Err(e) => {
                miss(format!("{name}: {e}"));
                continue;
            }
        };
        // llvm-objdump.
        if objdump_ok {
            let ours: Vec<String> = fields.iter().filter_map(|f| f.objdump_line()).collect();
            let mut theirs = dumped.get(&format!("{name}.kd")).cloned();
            if matches!(&theirs, Some(Err(e)) if e.contains("GRANULATED_WAVEFRONT_SGPR_COUNT"))
                && hw.generation >= Generation::Gfx10
            {
                // llc wrote SGPR granules llvm-objdump refuses: compare the rest with the bits
                // cleared.
                counted.sgpr_granules_refused += 1;
                let mut copy = data.clone();
                copy[d.offset as usize + 48] &= !0xc0;
                copy[d.offset as usize + 49] &= !0x03;
                let path = dir.join(format!("{tag}.{name}.nosgpr.o"));
                std::fs::write(&path, &copy).unwrap();
                theirs = objdump_kds(&path).remove(&format!("{name}.kd"));
            }
            match theirs.as_ref() {
                Some(Ok(theirs)) => {
                    counted.objdump_fields += theirs.len();
                    if &ours != theirs {
                        miss(format!(
                            "{name}: objdump\n  ours   {ours:?}\n  theirs {theirs:?}"
                        ));
                    }
                }
                other => miss(format!("{name}: objdump gave {other:?}")),
            }
        }
        // llc's directives, for fields stored as they are written.
        let Some(a) = asm.get(&name) else {
            miss(format!("{name}: not in llc's assembly"));
            continue;
        };
        for f in &fields {
            if f.field.value != Value::Raw {
                continue;
            }
            if let Some(&v) = a.directives.get(f.field.name) {
                counted.asm_fields += 1;
                if v != f.value {
                    miss(format!(
                        "{name}: .amdhsa_{} is {v} in llc's assembly, decoded {}",
                        f.field.name, f.value
                    ));
                }
            }
        }
        // Registers and scratch.
        // `.vgpr_count` is llc's TotalNumVgprs (arch VGPRs and AGPRs), printed as NumVgprs when
        // there are no AGPRs.
        let total_key = if a.info.contains_key("TotalNumVgprs") {
            "TotalNumVgprs"
        } else {
            "NumVgprs"
        };
        for (key, ours) in [
            (total_key, meta.vgpr_count),
            ("NumSgprs", meta.sgpr_count),
            ("NumAgprs", meta.agpr_count),
            ("ScratchSize", meta.private_segment_fixed_size),
        ] {
            if let Some(&theirs) = a.info.get(key) {
                counted.registers += 1;
                if ours != Some(theirs) {
                    miss(format!("{name}: {key} {theirs}, metadata {ours:?}"));
                }
            } else if key != "NumAgprs" {
                miss(format!("{name}: llc printed no {key}"));
            }
        }
        // Occupancy.
        // Occupancy from llc's own split of arch VGPRs and AGPRs, and (below, through the
        // summaries) from the metadata's total.
        let input = OccupancyInput {
            vgprs: a.info.get("NumVgprs").copied().unwrap_or(0) as u32,
            agprs: a.info.get("NumAgprs").copied().unwrap_or(0) as u32,
            sgprs: meta.sgpr_count.unwrap_or(0) as u32,
            lds_bytes: meta.group_segment_fixed_size.unwrap_or(0) as u32,
            wavefront_size: meta.wavefront_size.unwrap_or(0) as u32,
            max_flat_workgroup_size: meta.max_flat_workgroup_size.unwrap_or(0) as u32,
            wgp_mode: d.field(hw, "workgroup_processor_mode") == Some(1),
            waves_per_eu: spec.wpe,
        };
        let ours = occupancy(hw, &input).map(|o| o.waves_per_eu);
        let theirs = a.info.get("Occupancy").map(|&v| v as u32);
        counted.occupancy += 1;
        if ours != theirs {
            miss(format!(
                "{name}: occupancy llc {theirs:?}, gfxkit {ours:?} ({input:?})"
            ));
        }
        // Without the waves-per-eu bound (not in code objects), summaries (from the metadata)
        // agree too.
        if spec.wpe.is_none() {
            let s = sums.iter().find(|s| s.name == name).unwrap();
            if s.occupancy != theirs {
                miss(format!(
                    "{name}: summary occupancy {:?}, llc {theirs:?}",
                    s.occupancy
                ));
            }
        }
    }
    // Random descriptors through llvm-objdump.
    if objdump_ok && random_rounds > 0 {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15
            ^ tag
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
        for round in 0..random_rounds {
            let mut patched = data.clone();
            let mut expect_fail = BTreeMap::new();
            for (i, d) in descriptors.iter().enumerate() {
                let values = random_fields(hw, &mut rng);
                let mut raw = encode(
                    hw,
                    d.code_object_version,
                    &values,
                    d.kernel_code_entry_byte_offset,
                )
                .unwrap();
                let reserved = (i + round) % 4 == 3;
                if reserved {
                    let wave32 = values
                        .iter()
                        .any(|(n, v)| *n == "wavefront_size32" && *v == 1);
                    let (w, bit) = random_reserved_bit(hw, wave32, &mut rng);
                    raw[w.offset() + bit as usize / 8] |= 1 << (bit % 8);
                }
                expect_fail.insert(d.symbol.to_owned(), reserved);
                let at = d.offset as usize;
                patched[at..at + 64].copy_from_slice(&raw);
            }
            let path = dir.join(format!("{tag}.random{round}.o"));
            std::fs::write(&path, &patched).unwrap();
            let theirs = objdump_kds(&path);
            let pco = CodeObject::parse(&patched).unwrap();
            for d in pco.kernel_descriptors().unwrap() {
                let ours = objdump_lines(&d, hw);
                let t = theirs.get(d.symbol);
                match (&ours, t) {
                    (Ok(o), Some(Ok(t))) if o == t => {
                        counted.random_descriptors += 1;
                        counted.random_fields += t.len();
                    }
                    (Err(_), Some(Err(_))) => counted.reserved_refused += 1,
                    _ => miss(format!(
                        "random {round} {}: ours {ours:?}, objdump {t:?}",
                        d.symbol
                    )),
                }
                if expect_fail[d.symbol] != ours.is_err() {
                    miss(format!(
                        "random {round} {}: reserved bit not detected",
                        d.symbol
                    ));
                }
            }
        }
    }
    counted.mismatches = c.mismatches;
    counted
}

fn run_matrix(targets: &[(&str, &str, u8)], specs: &[Spec], random_rounds: usize) -> Counts {
    let dir = tempfile::tempdir().unwrap();
    let per: Vec<Counts> = targets
        .par_iter()
        .map(|(cpu, attrs, cov)| check_target(cpu, attrs, *cov, specs, dir.path(), random_rounds))
        .collect();
    let mut total = Counts::default();
    for c in per {
        total.add(c);
    }
    eprintln!(
        "kernels conformance: {} kernels on {} targets; {} llvm-objdump fields, {} llc directive fields, \
         {} register counts, {} occupancies compared; {} random descriptors ({} fields) equal, \
         {} with reserved bits refused by both; {} llc-19 GFX10+ descriptors with SGPR granules \
         llvm-objdump-19 refuses (compared with those bits cleared); {} mismatches",
        total.kernels,
        targets.len(),
        total.objdump_fields,
        total.asm_fields,
        total.registers,
        total.occupancy,
        total.random_descriptors,
        total.random_fields,
        total.reserved_refused,
        total.sgpr_granules_refused,
        total.mismatches.len()
    );
    total
}

#[test]
fn descriptors_registers_and_occupancy_match_llc19_and_objdump19() {
    let total = run_matrix(TARGETS, KERNELS, 2);
    assert!(
        total.mismatches.is_empty(),
        "{} mismatches:\n{}",
        total.mismatches.len(),
        total.mismatches.join("\n")
    );
    assert_eq!(total.kernels, TARGETS.len() * KERNELS.len());
    assert!(total.objdump_fields > 5000, "{total:?}");
    assert!(total.reserved_refused > 0 && total.random_descriptors > 0);
}

/// The larger sweep: every LLVM 19 amdgcn processor, more kernel shapes, more random rounds.
#[test]
#[ignore = "large sweep: scripts/kd-sweep"]
fn sweep_every_llvm19_processor() {
    let mut targets: Vec<(&str, &str, u8)> = Vec::new();
    for p in Processor::all() {
        if !p.in_llvm19() || p.hw.generation == Generation::R600 {
            continue;
        }
        let cov = if p.is_generic() { 6 } else { 5 };
        targets.push((p.name, "", cov));
        if p.hw.supports_wave32 {
            targets.push((p.name, "+wavefrontsize64", cov));
            targets.push((p.name, "+cumode", cov));
        }
    }
    // llc needs minutes for a kernel with 200+ values live at once: GFXKIT_KD_SWEEP_WIDE=1
    // adds those.
    let mut specs = KERNELS.to_vec();
    let mut lives = vec![1, 16, 72, 100, 140];
    if std::env::var_os("GFXKIT_KD_SWEEP_WIDE").is_some() {
        lives.extend([200, 256]);
        specs.push(k(200, 0, 64, Some((1, 1))));
    }
    for live in lives {
        for (lds, fwg) in [(0, 1024), (250, 256), (700, 128), (990, 64)] {
            specs.push(k(live, lds, fwg, None));
        }
    }
    specs.push(k(100, 0, 256, Some((4, 8))));
    let total = run_matrix(&targets, &specs, 4);
    assert!(
        total.mismatches.is_empty(),
        "{}",
        total.mismatches.join("\n")
    );
}
