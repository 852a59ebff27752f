//! Which files rocBLAS opens for a processor, as a pure function over a listing of its
//! `library/` directory (`ROCBLAS_TENSILE_LIBPATH`, or the `library/` beside
//! `librocblas.so`). The caller lists the directory; nothing here touches files.
//!
//! The rule (rocBLAS `library/src/tensile_host.cpp`, `TensileHost::initialize`; Tensile
//! `PlaceholderLibrary.hpp` and `HipSolutionAdapter.cpp`):
//! 1. If `library/<processor>` exists, files are looked up there instead (2026 layout).
//! 2. The index is the first present of `TensileLibrary_lazy_<processor>.dat` (lazy loading),
//!    `TensileLibrary_<processor>.dat`, `TensileLibrary.dat`; none present aborts rocBLAS
//!    ("Cannot read .../TensileLibrary.dat"). A rocBLAS built with `TENSILE_YAML` opens the
//!    same names ending in `.yaml` (taken for a directory holding YAML indexes only).
//! 3. Without lazy loading every file matching `*<processor>*co` (so `.co` and `.hsaco`) is
//!    loaded at start-up, except names containing `Experimental` and names carrying the
//!    opposite XNACK mode (`xnack-` on an `xnack+` device and the reverse); no match prints
//!    "No paths matched".
//! 4. With lazy loading a `Placeholder` with prefix `P` loads `P.dat` (the master's suffix)
//!    when first reached; its assembly kernels come from `P.co`, its source kernels from
//!    `P.hsaco`, or `P_<processor>.hsaco` when `P` contains `fallback`. Each code object is
//!    tried as named, then with `-xnack-`, then `-xnack+` inserted before the extension; the
//!    first that loads is used.

/// A listing of `library/`: relative paths with `/` separators. A directory is present when
/// it is listed itself (with or without a trailing `/`) or when any path lies below it.
/// Lookups are by hash (foldhash): a ROCm directory lists thousands of files. A listing owns
/// its names, so that one built for a directory serves every index in it.
#[derive(Debug, Clone)]
pub struct Listing {
    paths: Vec<String>,
    /// Every path listed and every directory above one, without `./` and trailing `/`.
    present: std::collections::HashSet<String, foldhash::fast::RandomState>,
}

impl Listing {
    /// A listing of the given paths.
    pub fn new<S: AsRef<str>>(paths: &[S]) -> Listing {
        Listing::of(paths.iter().map(|p| p.as_ref().to_string()).collect())
    }

    /// A listing of the given paths, taken.
    pub fn of(paths: Vec<String>) -> Listing {
        let mut present = std::collections::HashSet::with_capacity_and_hasher(
            paths.len() * 2,
            foldhash::fast::RandomState::default(),
        );
        for p in &paths {
            let p = p.strip_prefix("./").unwrap_or(p);
            let p = p.strip_suffix('/').unwrap_or(p);
            present.insert(p.to_string());
            let mut rest = p;
            while let Some(i) = rest.rfind('/') {
                rest = &rest[..i];
                if !present.insert(rest.to_string()) {
                    break;
                }
            }
        }
        Listing { paths, present }
    }

    /// Whether `path` (a file or a directory) exists.
    pub fn exists(&self, path: &str) -> bool {
        self.present.contains(path)
    }

    /// The paths listed (as given).
    pub fn paths(&self) -> impl Iterator<Item = &str> + '_ {
        self.paths.iter().map(String::as_str)
    }

    /// The file names directly inside `dir` (`""` for the top).
    pub fn files_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.paths.iter().filter_map(move |p| {
            let p = p.strip_prefix("./").unwrap_or(p);
            let rest = if dir.is_empty() {
                p
            } else {
                p.strip_prefix(dir)?.strip_prefix('/')?
            };
            (!rest.is_empty() && !rest.contains('/')).then_some(rest)
        })
    }
}

/// The device's XNACK mode as rocBLAS reads it from the target ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Xnack {
    /// `xnack+`: names containing `xnack-` are skipped.
    On,
    /// `xnack-`: names containing `xnack+` are skipped.
    Off,
    /// No mode in the target ID: nothing is skipped for XNACK.
    Unspecified,
}

/// A file looked for, in the order tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Every candidate tried before the one opened (absent), as paths relative to `library/`.
    pub missed: Vec<String>,
    /// The one opened, if any.
    pub opened: Option<String>,
}

/// The first of `candidates` present in `listing`, and those tried before it.
pub fn probe(listing: &Listing, candidates: impl IntoIterator<Item = String>) -> Probe {
    let mut missed = Vec::new();
    for c in candidates {
        if listing.exists(&c) {
            return Probe {
                missed,
                opened: Some(c),
            };
        }
        missed.push(c);
    }
    Probe {
        missed,
        opened: None,
    }
}

/// Why a code object matching the start-up pattern is not loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skipped {
    /// The name contains `Experimental`.
    Experimental,
    /// The name carries the XNACK mode opposite to the device's.
    OppositeXnack,
}

/// What rocBLAS opens on start-up for one processor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The directory used, relative to `library/` (`""` or `<processor>`).
    pub dir: String,
    /// The index search.
    pub index: Probe,
    /// Whether the index found is a lazy master (`TensileLibrary_lazy_<processor>.dat`).
    pub lazy: bool,
    /// Without lazy loading: the code objects loaded at start-up, sorted.
    pub code_objects: Vec<String>,
    /// Without lazy loading: code objects matching the pattern but skipped, sorted.
    pub skipped: Vec<(String, Skipped)>,
}

impl Resolution {
    /// Whether rocBLAS aborts at start-up (no index found).
    pub fn aborts(&self) -> bool {
        self.index.opened.is_none()
    }

    /// Whether rocBLAS warns "No paths matched" (no code object matches the start-up
    /// pattern; skipped ones still match it).
    pub fn warns_no_paths(&self) -> bool {
        !self.aborts() && !self.lazy && self.code_objects.is_empty() && self.skipped.is_empty()
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// What rocBLAS opens at start-up for `processor` (a processor name without features,
/// `gfx90a`) in the listed `library/`.
pub fn rocblas(listing: &Listing, processor: &str, xnack: Xnack) -> Resolution {
    let dir = if listing.exists(processor) {
        processor.to_string()
    } else {
        String::new()
    };
    // A rocBLAS built with `TENSILE_YAML` opens the same names with `.yaml`: taken when the
    // directory holds YAML indexes and no MessagePack one.
    let names = || listing.files_in(&dir);
    let ext = if names().any(|n| n.starts_with("TensileLibrary") && n.ends_with(".yaml"))
        && !names().any(|n| n.starts_with("TensileLibrary") && n.ends_with(".dat"))
    {
        "yaml"
    } else {
        "dat"
    };
    let lazy_name = join(&dir, &format!("TensileLibrary_lazy_{processor}.{ext}"));
    let index = probe(
        listing,
        [
            lazy_name.clone(),
            join(&dir, &format!("TensileLibrary_{processor}.{ext}")),
            join(&dir, &format!("TensileLibrary.{ext}")),
        ],
    );
    let lazy = index.opened.as_deref() == Some(lazy_name.as_str());
    let mut code_objects = Vec::new();
    let mut skipped = Vec::new();
    if index.opened.is_some() && !lazy {
        let opposite = match xnack {
            Xnack::On => Some("xnack-"),
            Xnack::Off => Some("xnack+"),
            Xnack::Unspecified => None,
        };
        for name in listing.files_in(&dir) {
            // glob(3): `*` does not match a leading dot.
            if name.starts_with('.') || !name.ends_with("co") || !name.contains(processor) {
                continue;
            }
            let path = join(&dir, name);
            if opposite.is_some_and(|o| name.contains(o)) {
                skipped.push((path, Skipped::OppositeXnack));
            } else if name.contains("Experimental") {
                skipped.push((path, Skipped::Experimental));
            } else {
                code_objects.push(path);
            }
        }
        code_objects.sort();
        code_objects.dedup();
        skipped.sort();
        skipped.dedup();
    }
    Resolution {
        dir,
        index,
        lazy,
        code_objects,
        skipped,
    }
}

/// The XNACK spellings the loader tries for a code-object name: as named, then `-xnack-`,
/// then `-xnack+` inserted before the last `.`.
pub fn xnack_variants(name: &str) -> [String; 3] {
    let at = name.rfind('.').unwrap_or(name.len());
    let (stem, ext) = name.split_at(at);
    [
        name.to_string(),
        format!("{stem}-xnack-{ext}"),
        format!("{stem}-xnack+{ext}"),
    ]
}

/// The files one lazy `Placeholder` leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderFiles {
    /// The shard index, `<prefix><suffix>`.
    pub index: Probe,
    /// The assembly kernels' code object, `<prefix>.co` and its XNACK spellings.
    pub asm: Probe,
    /// The source kernels' code object, `<prefix>.hsaco` (`<prefix>_<processor>.hsaco` for a
    /// fallback prefix) and its XNACK spellings.
    pub source: Probe,
}

/// The files a `Placeholder` with file prefix `prefix` leads to, in `dir` (as
/// [`Resolution::dir`]); `suffix` is the master index's (`.dat`).
pub fn placeholder(
    listing: &Listing,
    dir: &str,
    prefix: &str,
    processor: &str,
    suffix: &str,
) -> PlaceholderFiles {
    let source_name = if prefix.contains("fallback") {
        format!("{prefix}_{processor}.hsaco")
    } else {
        format!("{prefix}.hsaco")
    };
    PlaceholderFiles {
        index: probe(listing, [join(dir, &format!("{prefix}{suffix}"))]),
        asm: probe(
            listing,
            xnack_variants(&format!("{prefix}.co")).map(|n| join(dir, &n)),
        ),
        source: probe(listing, xnack_variants(&source_name).map(|n| join(dir, &n))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN: &[&str] = &[
        "Kernels.so-000-gfx1030.hsaco",
        "Kernels.so-000-gfx90a-xnack+.hsaco",
        "Kernels.so-000-gfx90a-xnack-.hsaco",
        "TensileLibrary.dat",
        "TensileLibrary_gfx1030.co",
        "TensileLibrary_gfx90a.co",
        "TensileLibrary_gfx908.co",
    ];

    #[test]
    fn debian_layout_one_index_and_the_arch_code_objects() {
        let l = Listing::new(DEBIAN);
        let r = rocblas(&l, "gfx1030", Xnack::Unspecified);
        assert_eq!(r.dir, "");
        assert_eq!(r.index.opened.as_deref(), Some("TensileLibrary.dat"));
        assert_eq!(
            r.index.missed,
            [
                "TensileLibrary_lazy_gfx1030.dat",
                "TensileLibrary_gfx1030.dat"
            ]
        );
        assert!(!r.lazy);
        assert_eq!(
            r.code_objects,
            ["Kernels.so-000-gfx1030.hsaco", "TensileLibrary_gfx1030.co"]
        );
        assert!(r.skipped.is_empty());
    }

    #[test]
    fn xnack_mode_skips_the_opposite_spelling() {
        let l = Listing::new(DEBIAN);
        let r = rocblas(&l, "gfx90a", Xnack::On);
        assert_eq!(
            r.code_objects,
            [
                "Kernels.so-000-gfx90a-xnack+.hsaco",
                "TensileLibrary_gfx90a.co"
            ]
        );
        assert_eq!(
            r.skipped,
            [(
                "Kernels.so-000-gfx90a-xnack-.hsaco".to_string(),
                Skipped::OppositeXnack
            )]
        );
        let any = rocblas(&l, "gfx90a", Xnack::Unspecified);
        assert_eq!(any.code_objects.len(), 3);
    }

    #[test]
    fn missing_index_aborts_and_missing_code_objects_warn() {
        let l = Listing::new(&["TensileLibrary_gfx1030.co"]);
        let r = rocblas(&l, "gfx1030", Xnack::Unspecified);
        assert!(r.aborts());
        assert_eq!(r.index.missed.len(), 3);
        let l = Listing::new(&["TensileLibrary.dat", "TensileLibrary_gfx1030.co"]);
        let r = rocblas(&l, "gfx900", Xnack::Unspecified);
        assert!(!r.aborts());
        assert!(r.warns_no_paths());
    }

    #[test]
    fn per_arch_subdirectory_and_lazy_master() {
        let l = Listing::new(&[
            "TensileLibrary.dat",
            "gfx942/TensileLibrary_lazy_gfx942.dat",
            "gfx942/TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942.dat",
            "gfx942/TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942.co",
            "gfx942/TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback_gfx942-xnack-.hsaco",
        ]);
        let r = rocblas(&l, "gfx942", Xnack::Unspecified);
        assert_eq!(r.dir, "gfx942");
        assert!(r.lazy);
        assert_eq!(
            r.index.opened.as_deref(),
            Some("gfx942/TensileLibrary_lazy_gfx942.dat")
        );
        assert!(r.code_objects.is_empty() && !r.warns_no_paths());
        let p = placeholder(
            &l,
            &r.dir,
            "TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942",
            "gfx942",
            ".dat",
        );
        assert!(p.index.opened.is_some());
        assert_eq!(
            p.asm.opened.as_deref(),
            Some("gfx942/TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942.co")
        );
        assert_eq!(p.source.opened, None);
        assert_eq!(p.source.missed.len(), 3);
        let f = placeholder(
            &l,
            &r.dir,
            "TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback",
            "gfx942",
            ".dat",
        );
        assert_eq!(f.index.opened, None);
        assert_eq!(
            f.source.opened.as_deref(),
            Some("gfx942/TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback_gfx942-xnack-.hsaco")
        );
        assert_eq!(f.source.missed.len(), 1);
    }

    #[test]
    fn glob_needs_the_name_to_end_in_co_and_skips_hidden_and_experimental() {
        let l = Listing::new(&[
            "TensileLibrary.dat",
            "TensileLibrary_gfx1030.co.bak",
            ".TensileLibrary_gfx1030.co",
            "Experimental_gfx1030.co",
            "sub/TensileLibrary_gfx1030.co",
        ]);
        let r = rocblas(&l, "gfx1030", Xnack::Unspecified);
        assert!(r.code_objects.is_empty());
        assert_eq!(
            r.skipped,
            [("Experimental_gfx1030.co".to_string(), Skipped::Experimental)]
        );
    }
}
