//! Kernel descriptors of real code objects against llvm-objdump-19: every `.kd` of every code
//! object in a directory decodes to exactly the lines llvm-objdump-19 prints.
//!
//! The default test reads the corpus's small `synth/code-objects/*.co` when present and
//! otherwise builds code objects with clang-19. `scripts/kd-corpus-check` extracts every code
//! object of large libraries (librocsparse, librocrand) and runs the ignored test on them
//! (`GFXKIT_KD_DIR=<dir>`).

use gfxkit_code_object::CodeObject;
use gfxkit_spec::Generation;
use gfxkit_testkit::{bundler_list, bundler_unbundle, HipBuild};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

mod common;
use common::{objdump_lines, objdump_symbols};

const SYNTH: &str = "/work/corpus/synth/code-objects";

#[derive(Default, Debug)]
struct Counts {
    objects: usize,
    kernels: usize,
    fields: usize,
    sgpr_granules_refused: usize,
    skipped_pre_gfx8: usize,
    mismatches: Vec<String>,
}

fn check_object(path: &Path, scratch: &Path) -> Counts {
    let mut c = Counts {
        objects: 1,
        ..Counts::default()
    };
    let data = std::fs::read(path).unwrap();
    let co = match CodeObject::parse(&data) {
        Ok(co) => co,
        Err(e) => {
            c.mismatches.push(format!("{}: {e}", path.display()));
            return c;
        }
    };
    let Some(hw) = co.processor().map(|p| p.hw) else {
        c.mismatches
            .push(format!("{}: unknown processor", path.display()));
        return c;
    };
    if hw.generation < Generation::Gfx8 {
        // LLVM 19's disassembler has no GFX6/GFX7.
        c.skipped_pre_gfx8 += 1;
        return c;
    }
    let descriptors = co.kernel_descriptors().unwrap();
    let symbols: Vec<&str> = descriptors.iter().map(|d| d.symbol).collect();
    let mut theirs = objdump_symbols(path, &symbols);
    // llc-19 writes GFX10+ SGPR granules llvm-objdump-19 refuses: compare those with the bits
    // cleared.
    let refused: Vec<_> = descriptors
        .iter()
        .filter(|d| {
            hw.generation >= Generation::Gfx10
                && matches!(theirs.get(d.symbol), Some(Err(e)) if e.contains("GRANULATED_WAVEFRONT_SGPR_COUNT"))
        })
        .collect();
    if !refused.is_empty() {
        let mut copy = data.clone();
        for d in &refused {
            copy[d.offset as usize + 48] &= !0xc0;
            copy[d.offset as usize + 49] &= !0x03;
        }
        let p = scratch.join(format!(
            "{}.nosgpr",
            path.file_name().unwrap().to_string_lossy()
        ));
        std::fs::write(&p, &copy).unwrap();
        let names: Vec<&str> = refused.iter().map(|d| d.symbol).collect();
        let cleared = objdump_symbols(&p, &names);
        for d in &refused {
            c.sgpr_granules_refused += 1;
            theirs.insert(d.symbol.to_owned(), cleared[d.symbol].clone());
        }
    }
    for d in &descriptors {
        c.kernels += 1;
        let ours = objdump_lines(d, hw);
        match (ours, theirs.get(d.symbol)) {
            (Ok(o), Some(Ok(t))) if &o == t => c.fields += t.len(),
            (o, t) => c.mismatches.push(format!(
                "{} {}: gfxkit {o:?}, llvm-objdump {t:?}",
                path.display(),
                d.symbol
            )),
        }
    }
    if descriptors.len() != theirs.len() {
        c.mismatches.push(format!(
            "{}: {} descriptors, llvm-objdump shows {}",
            path.display(),
            descriptors.len(),
            theirs.len()
        ));
    }
    c
}

fn check_dir(dir: &Path) -> Counts {
    let scratch = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let per: Vec<Counts> = files
        .par_iter()
        .map(|p| check_object(p, scratch.path()))
        .collect();
    let mut t = Counts::default();
    for c in per {
        t.objects += c.objects;
        t.kernels += c.kernels;
        t.fields += c.fields;
        t.sgpr_granules_refused += c.sgpr_granules_refused;
        t.skipped_pre_gfx8 += c.skipped_pre_gfx8;
        t.mismatches.extend(c.mismatches);
    }
    eprintln!(
        "{}: {} code objects, {} kernel descriptors, {} fields equal to llvm-objdump-19 \
         ({} GFX10+ descriptors with SGPR granules it refuses compared with those bits cleared; \
         {} pre-GFX8 objects it cannot disassemble); {} mismatches",
        dir.display(),
        t.objects,
        t.kernels,
        t.fields,
        t.sgpr_granules_refused,
        t.skipped_pre_gfx8,
        t.mismatches.len()
    );
    t
}

#[test]
fn code_objects_match_objdump19() {
    let built;
    let dir = if Path::new(SYNTH).is_dir() {
        PathBuf::from(SYNTH)
    } else {
        built = tempfile::tempdir().unwrap();
        let src = gfxkit_testkit::hip_kernels(12);
        let archs = [
            "gfx906",
            "gfx90a:xnack+",
            "gfx942",
            "gfx1030",
            "gfx1100",
            "gfx1200",
        ];
        let bundle = HipBuild::new(&src, &archs).build(built.path(), "k");
        let out = built.path().join("co");
        std::fs::create_dir(&out).unwrap();
        for (i, id) in bundler_list(&bundle)
            .iter()
            .filter(|id| id.starts_with("hip"))
            .enumerate()
        {
            bundler_unbundle(&bundle, id, &out.join(format!("{i}.co")));
        }
        out
    };
    let t = check_dir(&dir);
    assert!(t.mismatches.is_empty(), "{}", t.mismatches.join("\n"));
    assert!(t.kernels > 0 && t.fields > 0);
}

/// Every code object in `GFXKIT_KD_DIR` (see `scripts/kd-corpus-check`).
#[test]
#[ignore = "needs GFXKIT_KD_DIR: scripts/kd-corpus-check"]
fn code_objects_in_kd_dir_match_objdump19() {
    let dir = std::env::var_os("GFXKIT_KD_DIR").expect("set GFXKIT_KD_DIR");
    let t = check_dir(Path::new(&dir));
    assert!(t.mismatches.is_empty(), "{}", t.mismatches.join("\n"));
}
