//! `kpack split -r TREE`: every fat binary of a tree split, the rest of the tree mirrored,
//! in one of two layouts.
//!
//! - [`TreeLayout::Single`]: one output tree, the binaries host-only, the archives in its
//!   kpack directory (`OUT/.kpack/<group>_<arch>.kpack` by default), every other file copied
//!   and every symbolic link kept.
//! - [`TreeLayout::Overlays`], the layout of TheRock's artifact splitter: `OUT/generic/` holds
//!   what every GPU needs (the host-only binaries, files without device code, indexes serving
//!   several processors), and `OUT/<processor>/` what one processor needs: its archives (in the
//!   kpack directory's place below it) and its kernel-database files at their paths in the
//!   tree. Copying `generic/` and the overlays of the GPUs at hand into one prefix gives a
//!   working install. A database file goes to the overlay of the processor its content names
//!   (ELF `e_flags` of a code object, a `.kdb`'s records, an `.aks2`'s kernels, a Tensile
//!   index's rows, or the architecture a per-architecture Tensile file or aiter map is named
//!   or filed for), never by a file-name pattern; one serving several processors (rocBLAS's
//!   multi-architecture `TensileLibrary.dat`, an AOTriton family image) stays in `generic/`.
//!   A symbolic link follows the file it leads to.
//!
//! Splitting is [`crate::split::split_with`]'s; every file is written atomically. The output
//! may already hold archives of the group, in either layout (they are merged), but may not lie
//! inside the tree.

use crate::input::Input;
use crate::settle::{follow_link, path_index, processor_dir, Item};
use crate::split::{relative, split_with, Job, SplitOptions, SplitReport};
pub use crate::split::{OverlayFile, TreeLayout};
use crate::tree::{set_mode, walk};
use crate::write::write_atomic_copy;
use crate::{Error, ErrorKind};
use gfxkit_kpack::write::Compression;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a tree split takes beside the tree and the output.
#[derive(Debug, Clone, Copy)]
pub struct TreeSplit<'a> {
    /// Archive group name (`<group>_<arch>.kpack`).
    pub group: &'a str,
    /// Where the archives go in the installed tree; by default `.kpack` at its root. With
    /// overlays it must lie inside `OUT/generic/` (it names the place below each overlay).
    pub kpack_dir: Option<&'a Path>,
    /// How kernels are stored.
    pub compression: Compression,
    /// Signed Windows images and the like.
    pub options: SplitOptions,
    /// The layout.
    pub layout: TreeLayout,
    /// How files other than fat binaries are read: with overlays, one that goes whole with
    /// one processor ([`crate::format::Format::whole_targets`]) goes to its overlay.
    pub formats: &'a crate::format::Formats,
}

/// The absolute form of `p` with `.` and `..` resolved by their text.
fn clean(p: &Path) -> Result<PathBuf, Error> {
    let abs = crate::split::absolute(p)?;
    Ok(gfxkit_kpack::search::resolve_path(
        Path::new("/"),
        &abs.to_string_lossy(),
    ))
}

/// The processor an architecture belongs to (`gfx90a:xnack+` -> `gfx90a`).
fn processor(arch: &str) -> String {
    arch.split(':').next().unwrap_or(arch).to_owned()
}

/// What becomes of one path of the tree.
enum Place {
    /// A fat binary, split.
    Binary,
    /// Copied into the generic tree (or the single one).
    Generic,
    /// A database file copied into the overlays of its processors.
    Overlays {
        /// What it is.
        kind: &'static str,
        /// The targets its content names.
        targets: Vec<String>,
        /// Their processors: the overlays.
        processors: Vec<String>,
    },
    /// Not written (a directory, a device, a FIFO, a socket).
    Nothing,
}

/// Splits every fat binary under `root` into `out` as `s` says (see the module
/// documentation). Nothing is written when a binary cannot be split.
pub fn split_tree(root: &Path, out: &Path, s: &TreeSplit<'_>) -> Result<SplitReport, Error> {
    let t = TreePaths::of(root, out, s)?;
    let overlays = s.layout == TreeLayout::Overlays;
    let items = walk(&t.root)?;
    let mut places = place_items(s.formats, &t.root, &items, overlays)?;
    processor_dirs(&items, &mut places);
    // Links follow the file they lead to (through other links, inside the tree).
    let link_places = link_places(&items, &places);
    let jobs = binary_jobs(&t, &items, &places);
    // Archives a split into the same overlays wrote before are merged with, as the single
    // layout merges with those in its kpack directory: linked there for the split (the
    // originals stay until the merged ones replace them).
    let staged = if overlays {
        stage_overlay_archives(&t.out, &t.kpack_dir, t.kpack_rel.as_deref().ok(), s.group)?
    } else {
        Vec::new()
    };
    let split = split_with(&jobs, s.group, &t.kpack_dir, s.compression, s.options);
    let mut report = match split {
        Ok(r) => r,
        Err(e) => {
            for p in &staged {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    write_others(&t, &items, &places, &link_places)?;
    report.copied = items
        .iter()
        .zip(&places)
        .filter(|((_, item), place)| {
            matches!(item, Item::File { .. }) && matches!(place, Place::Generic)
        })
        .count();
    if overlays {
        archives_to_overlays(&t, &mut report)?;
    }
    report.overlay_files = overlay_files(&items, places);
    Ok(report)
}

/// Where a tree split reads and writes, checked: the input tree, the output, the tree the
/// binaries and copies go to, the kpack directory (and its place below that tree), the
/// directory TOC names are relative to.
struct TreePaths {
    root: PathBuf,
    out: PathBuf,
    base: PathBuf,
    kpack_dir: PathBuf,
    kpack_rel: Result<PathBuf, std::path::StripPrefixError>,
    name_root: PathBuf,
}

impl TreePaths {
    /// The paths of splitting `root` into `out` as `s` asks; an input that is not a
    /// directory, an output inside it, or (with overlays) a kpack directory outside
    /// `OUT/generic/` is the error.
    fn of(root: &Path, out: &Path, s: &TreeSplit<'_>) -> Result<TreePaths, Error> {
        let meta =
            std::fs::symlink_metadata(root).map_err(|e| Error::new(root, ErrorKind::Stat(e)))?;
        if !meta.is_dir() {
            return Err(Error::new(root, ErrorKind::Tree("not a directory".into())));
        }
        let root = std::fs::canonicalize(root).map_err(|e| Error::new(root, ErrorKind::Stat(e)))?;
        let out = clean(out)?;
        let out_real = std::fs::canonicalize(&out).unwrap_or_else(|_| out.clone());
        if out.starts_with(&root) || out_real.starts_with(&root) {
            return Err(Error::new(
                &out,
                ErrorKind::Tree(format!("lies inside the input tree {}", root.display())),
            ));
        }
        let overlays = s.layout == TreeLayout::Overlays;
        let base = if overlays {
            out.join("generic")
        } else {
            out.clone()
        };
        let kpack_dir = match s.kpack_dir {
            Some(d) => clean(d)?,
            None => base.join(".kpack"),
        };
        let kpack_rel = kpack_dir.strip_prefix(&base).map(Path::to_path_buf);
        if overlays && kpack_rel.is_err() {
            return Err(Error::new(
                &kpack_dir,
                ErrorKind::Tree(format!(
                    "with overlays the kpack directory must lie inside {} (it names its place in \
                     each overlay)",
                    base.display()
                )),
            ));
        }
        // TOC names are paths below the kpack directory's parent.
        let name_root = kpack_dir.parent().unwrap_or(&base).to_path_buf();
        Ok(TreePaths {
            root,
            out,
            base,
            kpack_dir,
            kpack_rel,
            name_root,
        })
    }
}

/// Where each item of the tree goes: fat binaries split, empty files and links to the
/// generic tree, and with `overlays` a database file naming one processor to its overlay.
fn place_items(
    formats: &crate::format::Formats,
    root: &Path,
    items: &[(String, Item)],
    overlays: bool,
) -> Result<Vec<Place>, Error> {
    use rayon::prelude::*;
    items
        .par_iter()
        .map(|(rel, item)| -> Result<Place, Error> {
            let Item::File { len, .. } = item else {
                return Ok(match item {
                    Item::Symlink { .. } => Place::Generic,
                    _ => Place::Nothing,
                });
            };
            if *len == 0 {
                return Ok(Place::Generic);
            }
            let path = root.join(rel);
            let data = Input::open(&path)?;
            let file = formats.file(&path, &data);
            let format = formats.of(&file);
            if format.splittable(&file) {
                return Ok(Place::Binary);
            }
            if !overlays {
                return Ok(Place::Generic);
            }
            Ok(match format.whole_targets(&file, rel)? {
                Some((kind, targets)) => {
                    let set: BTreeSet<String> = targets.iter().map(|t| processor(t)).collect();
                    if set.len() == 1 {
                        Place::Overlays {
                            kind,
                            targets,
                            processors: set.into_iter().collect(),
                        }
                    } else {
                        Place::Generic
                    }
                }
                None => Place::Generic,
            })
        })
        .collect()
}

/// For each item that is a link: the overlays of the file it leads to, if it leads to one
/// placed in overlays.
fn link_places(items: &[(String, Item)], places: &[Place]) -> Vec<Option<Vec<String>>> {
    let at = path_index(items);
    (0..items.len())
        .map(|i| {
            follow_link(items, &at, i, |path| {
                match at.get(path).map(|&j| &places[j]) {
                    Some(Place::Overlays { processors, .. }) => Some(processors.clone()),
                    _ => None,
                }
            })
        })
        .collect()
}

/// A split job for each fat binary of the tree, written at its path in the output tree.
fn binary_jobs(t: &TreePaths, items: &[(String, Item)], places: &[Place]) -> Vec<Job> {
    let mut jobs = Vec::new();
    for ((rel, _), place) in items.iter().zip(places) {
        if let Place::Binary = place {
            let output = t.base.join(rel);
            jobs.push(Job {
                input: t.root.join(rel),
                kernel_name: relative(&t.name_root, &output),
                output,
            });
        }
    }
    jobs
}

/// Writes every file and link that is not split where its place says: copied into the
/// generic tree or the overlays of its processors, a link made again.
fn write_others(
    t: &TreePaths,
    items: &[(String, Item)],
    places: &[Place],
    link_places: &[Option<Vec<String>>],
) -> Result<(), Error> {
    use rayon::prelude::*;
    let writes: Vec<(usize, Vec<PathBuf>)> = places
        .iter()
        .zip(link_places)
        .enumerate()
        .filter_map(|(i, (place, link))| {
            let rel = &items[i].0;
            let dsts: Vec<PathBuf> = match (place, link) {
                (_, Some(o)) | (Place::Overlays { processors: o, .. }, _) => {
                    o.iter().map(|p| t.out.join(p).join(rel)).collect()
                }
                (Place::Generic, None) => vec![t.base.join(rel)],
                _ => return None,
            };
            Some((i, dsts))
        })
        .collect();
    writes
        .par_iter()
        .try_for_each(|(i, dsts)| -> Result<(), Error> {
            let (rel, item) = &items[*i];
            for dst in dsts {
                if let Some(d) = dst.parent() {
                    std::fs::create_dir_all(d)
                        .map_err(|e| Error::new(d, ErrorKind::CreateDir(e)))?;
                }
                match item {
                    Item::Symlink { target } => {
                        let _ = std::fs::remove_file(dst);
                        std::os::unix::fs::symlink(target, dst)
                            .map_err(|e| Error::new(dst, ErrorKind::Write(e)))?;
                    }
                    Item::File { mode, .. } => {
                        let src = t.root.join(rel);
                        let data = Input::open(&src)?;
                        write_atomic_copy(dst, &data, data.file_range(&data))?;
                        set_mode(dst, *mode)?;
                    }
                    _ => {}
                }
            }
            Ok(())
        })
}

/// Moves each archive written to the overlay of its processor, at the kpack directory's
/// place below it (`report` then names it there); an emptied kpack directory is removed.
fn archives_to_overlays(t: &TreePaths, report: &mut SplitReport) -> Result<(), Error> {
    let Ok(kpack_rel) = &t.kpack_rel else {
        return Ok(());
    };
    for a in &mut report.archives {
        let from = PathBuf::from(&a.path);
        let to = t
            .out
            .join(processor(&a.arch))
            .join(kpack_rel)
            .join(from.file_name().unwrap_or_default());
        if let Some(d) = to.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::new(d, ErrorKind::CreateDir(e)))?;
        }
        std::fs::rename(&from, &to).map_err(|e| Error::new(&to, ErrorKind::Write(e)))?;
        a.path = to.display().to_string();
    }
    if std::fs::read_dir(&t.kpack_dir).is_ok_and(|mut d| d.next().is_none()) {
        let _ = std::fs::remove_dir(&t.kpack_dir);
    }
    Ok(())
}

/// The database files placed in overlays, for the report.
fn overlay_files(items: &[(String, Item)], places: Vec<Place>) -> Vec<OverlayFile> {
    items
        .iter()
        .zip(places)
        .filter_map(|((rel, item), place)| match (item, place) {
            (
                Item::File { len, .. },
                Place::Overlays {
                    kind,
                    targets,
                    processors,
                },
            ) => Some(OverlayFile {
                path: rel.clone(),
                kind,
                targets,
                overlays: processors,
                size: *len,
            }),
            _ => None,
        })
        .collect()
}

/// Moves the other files of a directory named for a processor (aiter's `hsa/gfx942/` with its
/// CSV maps and scripts) into that processor's overlay when the device code it holds is for
/// that processor only.
fn processor_dirs(items: &[(String, Item)], places: &mut [Place]) {
    for i in 0..items.len() {
        let Some((name, end)) = processor_dir(items, i) else {
            continue;
        };
        let under = &places[i + 1..end];
        let own =
            |p: &Place| matches!(p, Place::Overlays { processors, .. } if processors == &[name]);
        let foreign = under
            .iter()
            .any(|p| matches!(p, Place::Binary) || matches!(p, Place::Overlays { .. }) && !own(p));
        if foreign || !under.iter().any(own) {
            continue;
        }
        for (j, p) in places[i + 1..end].iter_mut().enumerate() {
            if matches!(p, Place::Generic) && matches!(items[i + 1 + j].1, Item::File { .. }) {
                *p = Place::Overlays {
                    kind: "file",
                    targets: Vec::new(),
                    processors: vec![name.to_owned()],
                };
            }
        }
    }
}

/// Links each archive of `group` already in an overlay of `out` (at `kpack_rel` below it, for
/// the overlay's processor) into `kpack_dir`, where the split merges with it; returns the links
/// made.
fn stage_overlay_archives(
    out: &Path,
    kpack_dir: &Path,
    kpack_rel: Option<&Path>,
    group: &str,
) -> Result<Vec<PathBuf>, Error> {
    let (Some(rel), Ok(dirs)) = (kpack_rel, std::fs::read_dir(out)) else {
        return Ok(Vec::new());
    };
    let mut staged = Vec::new();
    for d in dirs.flatten() {
        let overlay = d.file_name().to_string_lossy().into_owned();
        if overlay == "generic" {
            continue;
        }
        let Ok(files) = std::fs::read_dir(d.path().join(rel)) else {
            continue;
        };
        for f in files.flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let arch = name
                .strip_prefix(group)
                .and_then(|n| n.strip_prefix('_'))
                .and_then(|n| n.strip_suffix(".kpack"));
            let to = kpack_dir.join(&name);
            if !arch.is_some_and(|a| processor(a) == overlay) || to.exists() {
                continue;
            }
            std::fs::create_dir_all(kpack_dir)
                .map_err(|e| Error::new(kpack_dir, ErrorKind::CreateDir(e)))?;
            std::fs::hard_link(f.path(), &to)
                .or_else(|_| std::fs::copy(f.path(), &to).map(|_| ()))
                .map_err(|e| Error::new(&to, ErrorKind::Write(e)))?;
            staged.push(to);
        }
    }
    Ok(staged)
}
