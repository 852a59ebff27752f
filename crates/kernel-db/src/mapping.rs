//! hipBLASLt's (TensileLite's) `TensileLiteLibrary_lazy_<arch>_Mapping.dat`: beside a lazy
//! master index `TensileLibrary_lazy_<arch>.dat`, a MessagePack map from a solution index to
//! the name of the kernel library holding it, a `<name>.dat` (or `.dat.zlib`) in the same
//! directory. [`problems`] applies the layout rules AMD's own build checks (rocm-libraries
//! `projects/hipblaslt/tools/scripts/check_dat_integrity.py`): every mapped library exists and
//! ends in `_<arch>` (else kpack overlays of several architectures collide), the master and the
//! mapping come together, and every `*_fallback_<arch>.dat` library is mapped ("NO solution
//! found!" at run time otherwise). From the master's side ([`master_problem`]): in a
//! directory of hipBLASLt's layout (one holding mappings), a lazy master without its own.
//!
//! ```
//! use gfxkit_kernel_db::mapping::{problems, Mapping};
//! let m = Mapping { libraries: vec![("0".into(), "Cijk_x_gfx942".into())] };
//! let names = ["TensileLibrary_lazy_gfx942.dat", "Cijk_x_gfx942.dat"];
//! assert!(problems("TensileLiteLibrary_lazy_gfx942_Mapping.dat", &m, &names).is_empty());
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use gfxkit_msgpack::Reader;

/// A parsed mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Each entry's key (a solution index, as text) and the kernel library it names, in file
    /// order.
    pub libraries: Vec<(String, String)>,
}

impl Mapping {
    /// Reads a mapping's MessagePack bytes (decompressed first for `.zlib`): one map whose keys
    /// are integers or strings and whose values are strings; at most `limits.max_solutions`
    /// entries, nothing after the map.
    pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Mapping> {
        let mut c = Reader::new(bytes);
        let n = c.map("the mapping (a map of solution index to library name)")?;
        if u64::from(n) > limits.max_solutions {
            return Err(Error::at(
                0,
                ErrorKind::LimitExceeded {
                    what: "mapping entries",
                    limit: limits.max_solutions,
                },
            ));
        }
        let mut libraries = Vec::with_capacity((n as usize).min(1 << 16));
        for _ in 0..n {
            let key = c.skip()?;
            let key = match (key.as_i64(), key.as_str()) {
                (Some(i), _) => i.to_string(),
                (None, Some(s)) => s.to_owned(),
                _ => {
                    return Err(Error::at(
                        key.offset,
                        ErrorKind::Unexpected {
                            expected: "a solution index (an integer or a string)",
                            found: "another value".into(),
                        },
                    ))
                }
            };
            let name = c.str()?.to_owned();
            libraries.push((key, name));
        }
        if c.remaining() > 0 {
            return Err(Error::at(
                c.offset(),
                ErrorKind::TrailingBytes(c.remaining() as u64),
            ));
        }
        Ok(Mapping { libraries })
    }
}

/// The architecture a mapping's file name is for: `TensileLiteLibrary_lazy_gfx942_Mapping.dat`
/// (or `.dat.zlib`, any directory) gives `gfx942`.
pub fn arch_of(name: &str) -> Option<&str> {
    let base = name.rsplit(['/', '\\', '!']).next().unwrap_or(name);
    let base = base.strip_suffix(".zlib").unwrap_or(base);
    base.strip_suffix("_Mapping.dat")?
        .strip_prefix("TensileLiteLibrary_lazy_")
        .filter(|a| !a.is_empty())
}

/// Whether `names` (the files of the mapping's directory) has `<stem>.dat` or `<stem>.dat.zlib`.
fn has_dat(names: &[&str], stem: &str) -> bool {
    let (plain, zlib) = (format!("{stem}.dat"), format!("{stem}.dat.zlib"));
    names.iter().any(|n| *n == plain || *n == zlib)
}

/// What breaks the layout rules for the mapping `name` (`mapping`, read) in a directory
/// holding `names`: a mapped library absent or not named for the mapping's architecture, no
/// master index beside it, a fallback library of the directory that the mapping leaves out.
/// One message per problem (a name repeated in the mapping is reported once).
pub fn problems(name: &str, mapping: &Mapping, names: &[&str]) -> Vec<String> {
    let Some(arch) = arch_of(name) else {
        return shared_problems(mapping, names);
    };
    let mut out = Vec::new();
    let master = format!("TensileLibrary_lazy_{arch}");
    if !has_dat(names, &master) {
        out.push(format!("its master index {master}.dat is not beside it"));
    }
    let suffix = format!("_{arch}");
    let mut seen = std::collections::BTreeSet::new();
    for (key, lib) in &mapping.libraries {
        if !seen.insert(lib.as_str()) {
            continue;
        }
        if !lib.ends_with(&suffix) {
            out.push(format!(
                "solution {key}: library {lib} does not end in {suffix} (kpack overlays of \
                 several architectures would collide)"
            ));
        }
        if !has_dat(names, lib) {
            out.push(format!("solution {key}: library {lib}.dat is not there"));
        }
    }
    let fallback = format!("_fallback_{arch}");
    for n in names {
        let stem = n
            .strip_suffix(".dat.zlib")
            .or_else(|| n.strip_suffix(".dat"));
        if let Some(stem) = stem.filter(|s| s.ends_with(&fallback) && !s.contains('/')) {
            if !seen.contains(stem) {
                out.push(format!(
                    "fallback library {n} is not in the mapping (\"NO solution found!\" at run \
                     time)"
                ));
            }
        }
    }
    out
}

/// Whether `name` is hipBLASLt 7.1's one mapping for every processor,
/// `TensileLiteLibrary_lazy_Mapping.dat` (any directory).
pub fn is_shared(name: &str) -> bool {
    let base = name.rsplit(['/', '\\', '!']).next().unwrap_or(name);
    let base = base.strip_suffix(".zlib").unwrap_or(base);
    base == "TensileLiteLibrary_lazy_Mapping.dat"
}

/// The rules for hipBLASLt 7.1's one mapping for every processor
/// (`TensileLiteLibrary_lazy_Mapping.dat`): every mapped library is there as `<name>.dat`, and
/// is named for a processor whose lazy master is beside it (a library of a processor the
/// directory has no index for is never reached).
fn shared_problems(mapping: &Mapping, names: &[&str]) -> Vec<String> {
    let masters: std::collections::BTreeSet<&str> =
        names.iter().filter_map(|n| master_arch(n)).collect();
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (key, lib) in &mapping.libraries {
        if !seen.insert(lib.as_str()) {
            continue;
        }
        if !has_dat(names, lib) {
            out.push(format!("solution {key}: library {lib}.dat is not there"));
        }
        let arch = lib.rsplit('_').next().unwrap_or("");
        if !masters.contains(arch) {
            out.push(format!(
                "solution {key}: library {lib} is for {arch}, which has no master index \
                 TensileLibrary_lazy_{arch}.dat beside the mapping"
            ));
        }
    }
    out
}

/// The architecture of a lazy master index's file name: `TensileLibrary_lazy_gfx942.dat`
/// (or `.dat.zlib`, any directory) gives `gfx942`.
pub fn master_arch(name: &str) -> Option<&str> {
    let base = name.rsplit(['/', '\\', '!']).next().unwrap_or(name);
    let base = base.strip_suffix(".zlib").unwrap_or(base);
    base.strip_suffix(".dat")?
        .strip_prefix("TensileLibrary_lazy_")
        .filter(|a| !a.is_empty())
}

/// What breaks the layout rules for the lazy master index `name` in a directory holding
/// `names`: in hipBLASLt's layout (the directory holds a mapping for some architecture), a
/// master without its own mapping, which hipBLASLt needs to find a solution's library by its
/// index ("Could not initialize Tensile library mapping"). rocBLAS's lazy masters come
/// without mappings: a directory with none is not judged.
pub fn master_problem(name: &str, names: &[&str]) -> Option<String> {
    let arch = master_arch(name)?;
    // hipBLASLt 7.1: one mapping for every processor.
    if names.iter().any(|n| is_shared(n)) {
        return None;
    }
    let mappings: Vec<&str> = names.iter().filter_map(|n| arch_of(n)).collect();
    if mappings.is_empty() || mappings.contains(&arch) {
        return None;
    }
    Some(format!(
        "its mapping TensileLiteLibrary_lazy_{arch}_Mapping.dat is not beside it (the directory \
         has the mappings of {}): hipBLASLt cannot find a solution's library by its index",
        mappings.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    fn bytes(v: &Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    }

    #[test]
    fn a_mapping_reads_with_integer_or_string_keys() {
        let v = Value::Map(vec![
            (Value::from(0), Value::from("Cijk_a_gfx942")),
            (Value::from("7"), Value::from("Cijk_b_fallback_gfx942")),
        ]);
        let m = Mapping::parse(&bytes(&v), &Limits::default()).unwrap();
        assert_eq!(m.libraries[0], ("0".into(), "Cijk_a_gfx942".into()));
        assert_eq!(m.libraries[1].0, "7");
        let mut b = bytes(&v);
        b.push(0xc0);
        assert!(Mapping::parse(&b, &Limits::default()).is_err());
        let bad = Value::Map(vec![(Value::from(0), Value::from(1))]);
        assert!(Mapping::parse(&bytes(&bad), &Limits::default()).is_err());
        assert!(Mapping::parse(&bytes(&v)[..5], &Limits::default()).is_err());
    }

    #[test]
    fn the_layout_rules_of_a_mapping() {
        let name = "library/gfx942/TensileLiteLibrary_lazy_gfx942_Mapping.dat";
        assert_eq!(arch_of(name), Some("gfx942"));
        let m = Mapping {
            libraries: vec![
                ("0".into(), "Cijk_a_gfx942".into()),
                ("1".into(), "Cijk_a_gfx942".into()),
                ("2".into(), "Cijk_b_gfx950".into()),
                ("3".into(), "Cijk_c_gfx942".into()),
            ],
        };
        let names = [
            "TensileLibrary_lazy_gfx942.dat.zlib",
            "Cijk_a_gfx942.dat",
            "Cijk_b_gfx950.dat",
            "Cijk_d_fallback_gfx942.dat",
        ];
        let p = problems(name, &m, &names);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("Cijk_b_gfx950 does not end in _gfx942"));
        assert!(p[1].contains("solution 3: library Cijk_c_gfx942.dat is not there"));
        assert!(p[2].contains("fallback library Cijk_d_fallback_gfx942.dat is not in the mapping"));
        let p = problems(name, &m, &["Cijk_a_gfx942.dat"]);
        assert!(p[0].contains("master index TensileLibrary_lazy_gfx942.dat is not beside it"));
    }

    #[test]
    fn hipblaslt_71_has_one_mapping_for_every_processor() {
        let name = "TensileLiteLibrary_lazy_Mapping.dat";
        assert!(is_shared(name) && arch_of(name).is_none());
        let m = Mapping {
            libraries: vec![
                ("0".into(), "Cijk_a_gfx1100".into()),
                ("51".into(), "Cijk_b_gfx90a".into()),
                ("99".into(), "Cijk_c_gfx942".into()),
            ],
        };
        let names = [
            name,
            "TensileLibrary_lazy_gfx1100.dat",
            "TensileLibrary_lazy_gfx90a.dat",
            "Cijk_a_gfx1100.dat",
            "Cijk_b_gfx90a.dat",
        ];
        let p = problems(name, &m, &names);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("Cijk_c_gfx942.dat is not there"), "{p:?}");
        assert!(
            p[1].contains("no master index TensileLibrary_lazy_gfx942.dat"),
            "{p:?}"
        );
        // Its masters need no mapping of their own.
        assert_eq!(
            master_problem("TensileLibrary_lazy_gfx90a.dat", &names),
            None
        );
    }

    #[test]
    fn a_lazy_master_needs_its_mapping_where_the_directory_has_mappings() {
        let master = "lib/TensileLibrary_lazy_gfx950.dat.zlib";
        assert_eq!(master_arch(master), Some("gfx950"));
        assert_eq!(master_arch("TensileLibrary_gfx950.dat"), None);
        let hipblaslt = [
            "TensileLibrary_lazy_gfx942.dat",
            "TensileLiteLibrary_lazy_gfx942_Mapping.dat",
            "TensileLibrary_lazy_gfx950.dat.zlib",
        ];
        let p = master_problem(master, &hipblaslt).unwrap();
        assert!(
            p.contains("TensileLiteLibrary_lazy_gfx950_Mapping.dat is not beside it"),
            "{p}"
        );
        assert!(p.contains("mappings of gfx942"), "{p}");
        let mut complete = hipblaslt.to_vec();
        complete.push("TensileLiteLibrary_lazy_gfx950_Mapping.dat.zlib");
        assert_eq!(master_problem(master, &complete), None);
        // rocBLAS's lazy layout has no mappings at all.
        let rocblas = [
            "TensileLibrary_lazy_gfx950.dat",
            "TensileLibrary_lazy_gfx942.dat",
        ];
        assert_eq!(master_problem(master, &rocblas), None);
    }
}
