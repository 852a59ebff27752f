//! One input of a census read from disk: its files (a package's or image's members, as
//! `gfxkit list` reads them) listed and digested, turned into the census's rows
//! ([`gfxkit_inventory::census`]); and the walk that turns the paths a census is given into
//! its inputs (the walk of `gfxkit list -r`).

use crate::format::{Around, File, Formats};
use crate::input::{for_each_of, for_each_with, is_image_dir, Failed, Input};
use crate::kpack::chain;
use gfxkit_inventory::census::{self, CodeObjectRow, InputRow};
use gfxkit_inventory::digest::{sha256_hex, Digesting};
use gfxkit_inventory::list::FileListing;
use serde::Serialize;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The rows of one input.
#[derive(Debug, Clone, Serialize)]
pub struct Rows {
    /// The input's row.
    pub input: InputRow,
    /// One row per code object, in file order (members in the package's order).
    pub code_objects: Vec<CodeObjectRow>,
}

/// The inputs of a census under `paths`, in path order: files and package members named
/// directly, and in directories every file that may hold device code (found by the walk of
/// `gfxkit list -r`: links followed without loops, each file once, gfxkit's temporary files
/// skipped), container image layouts as one input each. The error is a path that does not
/// exist.
pub fn walk(paths: &[PathBuf]) -> Result<Vec<PathBuf>, crate::Error> {
    use rayon::prelude::*;
    let found = crate::scan::collect(paths)?;
    Ok(found
        .into_par_iter()
        .filter(|c| c.explicit || crate::scan::worth_reading(&c.path))
        .map(|c| c.path)
        .collect())
}

/// [`walk`] of each of `paths` on its own, on every core: per path, its inputs or why it
/// cannot be walked (a path that does not exist). A census given thousands of files by name
/// asks once, not once a file.
pub fn walk_each(paths: &[PathBuf]) -> Vec<Result<Vec<PathBuf>, crate::Error>> {
    use rayon::prelude::*;
    paths
        .par_iter()
        .map(|p| walk(std::slice::from_ref(p)))
        .collect()
}

/// A census's local inputs, as [`local_inputs`] found them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LocalInputs {
    /// Every input once, by name (the path as walked: relative paths stay relative), in the
    /// order of the names' bytes; a path that cannot be walked (missing), or a directory in
    /// which the walk found nothing, is an input too, whose reading reports why.
    pub names: Vec<String>,
    /// The absolute path of each, made from the working directory as Python's
    /// `os.path.abspath` makes it (`.` and `..` resolved by name, links not followed): what
    /// a worker anywhere opens.
    pub sources: Vec<String>,
    /// The size of each that is a regular file (`None` for the others).
    pub sizes: Vec<Option<u64>>,
    /// The inputs holding the same bytes as an earlier one: its position and theirs
    /// (found by identity or digest).
    pub copies: Vec<(usize, Vec<usize>)>,
    /// Whether each is a library whose kernel databases lie beside it in a directory under none
    /// of the paths given ([`database_dir_beside`]): its reading also reads them
    /// ([`database_files_beside`]), as `check` reads a library named alone.
    pub beside: Vec<bool>,
}

/// The inputs of a census given `paths` (files, package members, directories, image layouts):
/// each walked on its own on every core (the walk of [`walk`]), every input named once, and the
/// inputs holding the same bytes found with the sizes and identities the walk stated: files of
/// one size by identity (a hard link is the same file), else, where their first and last
/// [`SAMPLE`] bytes tie too, by SHA-256, hashed on every core. Each file is stated once and
/// opened once before the hashing: its first bytes say whether the walk reads it and, with its
/// last, make its samples.
pub fn local_inputs(paths: &[PathBuf]) -> LocalInputs {
    use rayon::prelude::*;
    use std::collections::{BTreeMap, HashMap};
    let walked: Vec<Vec<crate::scan::Candidate>> = paths
        .par_iter()
        .map(|p| crate::scan::collect(std::slice::from_ref(p)).unwrap_or_default())
        .collect();
    // Only a file whose size another file has is sampled.
    let mut per_size: HashMap<u64, u32> = HashMap::new();
    for s in walked.iter().flatten().filter_map(|c| c.stated) {
        *per_size.entry(s.size).or_default() += 1;
    }
    let formats = crate::format::Formats::shared_standard();
    let looked: Vec<Vec<Looked>> = walked
        .par_iter()
        .map(|found| {
            found
                .par_iter()
                .map(|c| {
                    let shared = c
                        .stated
                        .is_some_and(|s| per_size.get(&s.size).is_some_and(|&n| n > 1));
                    look(c, shared, formats)
                })
                .collect()
        })
        .collect();
    let cwd = std::env::current_dir().unwrap_or_default();
    // The directories walked (a path whose files were found in a walk), as named and as
    // resolved: a library's database under one of them is read as inputs of its own.
    let searched: Vec<(PathBuf, PathBuf)> = paths
        .iter()
        .zip(&walked)
        .filter(|(_, found)| found.iter().any(|c| !c.explicit))
        .map(|(p, _)| {
            let named = PathBuf::from(absolute(&p.display().to_string(), &cwd));
            let resolved = std::fs::canonicalize(&named).unwrap_or_else(|_| named.clone());
            (named, resolved)
        })
        .collect();
    let mut found: BTreeMap<String, Option<crate::scan::Stated>> = BTreeMap::new();
    let mut samples: HashMap<(u64, u64), u64> = HashMap::new();
    for ((p, candidates), looks) in paths.iter().zip(walked).zip(looked) {
        let kept: Vec<_> = candidates
            .into_iter()
            .zip(looks)
            .filter(|(c, l)| c.explicit || l.worth_reading)
            .collect();
        if kept.is_empty() {
            // A path that cannot be walked, or a directory with nothing to read: an input as
            // named, whose reading reports why.
            found.entry(p.display().to_string()).or_insert(None);
        }
        for (c, l) in kept {
            if let (Some(s), Some(sample)) = (c.stated, l.sample) {
                samples.insert(s.id, sample);
            }
            found
                .entry(c.path.display().to_string())
                .or_insert(c.stated);
        }
    }
    let names: Vec<String> = found.keys().cloned().collect();
    // A package member was stated as nothing (its package is not the input's bytes).
    let stated: Vec<_> = found.into_values().collect();
    let paths: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
    let sources: Vec<String> = names.iter().map(|n| absolute(n, &cwd)).collect();
    LocalInputs {
        beside: sources
            .iter()
            .map(|s| database_dir_beside(Path::new(s), &searched).is_some())
            .collect(),
        sources,
        sizes: stated.iter().map(|s| s.map(|s| s.size)).collect(),
        copies: copies(&paths, &stated, &samples),
        names,
    }
}

/// The directory beside the library at `library` (`librocblas.so*`, `libhipblaslt.so*`:
/// [`gfxkit_inventory::database::databases_dir`]) that holds its kernel databases, when it is a
/// directory under none of `searched` (directories walked, as named and as resolved): what
/// `check` reads with a library named alone (the libraries' variables aside: a census judges
/// the layout).
pub fn database_dir_beside(library: &Path, searched: &[(PathBuf, PathBuf)]) -> Option<PathBuf> {
    let dir = PathBuf::from(gfxkit_inventory::database::databases_dir(
        &library.display().to_string(),
    )?);
    let real = std::fs::canonicalize(&dir).ok()?;
    let under = searched
        .iter()
        .any(|(named, resolved)| dir.starts_with(named) || real.starts_with(resolved));
    (real.is_dir() && !under).then_some(dir)
}

/// The kernel-database files in the directory beside the library at `path`
/// ([`database_dir_beside`]), each as `check` reads it, named from `name` (the library as the
/// census names it): what a library named alone loads. None when there is no such directory.
pub fn database_files_beside(
    path: &Path,
    name: &str,
    formats: &Formats,
) -> Vec<gfxkit_inventory::database::DbMember> {
    let (Some(dir), Some(named)) = (
        gfxkit_inventory::database::databases_dir(&path.display().to_string()),
        gfxkit_inventory::database::databases_dir(name),
    ) else {
        return Vec::new();
    };
    let Ok(members) = crate::whole::database_members_under(&[PathBuf::from(&dir)], formats, &())
    else {
        return Vec::new();
    };
    let moved = |p: &str| match p.strip_prefix(dir.as_str()) {
        Some(rest) => format!("{named}{rest}"),
        None => p.to_owned(),
    };
    members
        .into_iter()
        .map(|mut m| {
            m.path = moved(&m.path);
            for f in &mut m.map_files {
                *f = moved(f);
            }
            m
        })
        .collect()
}

/// What one open of a file found by the walk tells.
struct Looked {
    /// Whether the walk reads it ([`crate::format::Formats::worth_reading`]).
    worth_reading: bool,
    /// Its samples' hash, when asked for and read.
    sample: Option<u64>,
}

/// Whether the file `c` found by the walk is worth reading (a file named directly, an image
/// layout, a file that cannot be read now: yes, its reading reports what is wrong), and, when
/// `shared` (another file has its size), a hash of its first and last [`SAMPLE`] bytes as
/// stated (the whole file when it is smaller than two samples; none when it is shorter now):
/// the file opened once for both.
fn look(c: &crate::scan::Candidate, shared: bool, formats: &crate::format::Formats) -> Looked {
    use std::os::unix::fs::FileExt;
    let read = |worth_reading| Looked {
        worth_reading,
        sample: None,
    };
    let Some(stated) = c.stated else {
        return read(true); // An image layout, or a package member named directly.
    };
    if c.explicit && !shared {
        return read(true);
    }
    let Ok(f) = std::fs::File::open(&c.path) else {
        return read(true);
    };
    let size = stated.size;
    let whole = size <= 2 * SAMPLE as u64;
    let mut buf = [0u8; 2 * SAMPLE];
    let head = if whole { 2 * SAMPLE } else { SAMPLE };
    let Ok(n) = crate::format::read_at_most(&f, &mut buf[..head]) else {
        return read(true);
    };
    let worth_reading = c.explicit || formats.prefix_worth(&c.path, &buf[..n]);
    let sample = if !shared || !worth_reading {
        None
    } else if whole {
        (n as u64 >= size).then(|| hash_of(&buf[..size as usize]))
    } else {
        let (_, tail) = buf.split_at_mut(SAMPLE);
        (n == SAMPLE && f.read_exact_at(tail, size - SAMPLE as u64).is_ok()).then(|| hash_of(&buf))
    };
    Looked {
        worth_reading,
        sample,
    }
}

/// A fast hash of a file's samples: a tie only makes both files hashed whole.
fn hash_of(samples: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0).hash_one(samples)
}

/// `name` made absolute against `cwd` and normalised by name, as POSIX Python's
/// `os.path.abspath` does: `.` and empty components dropped, `..` taking back the component
/// before it (none above the root), two leading slashes kept (POSIX leaves their meaning to
/// the system), links not followed.
pub fn absolute(name: &str, cwd: &Path) -> String {
    let joined;
    let path = if name.starts_with('/') {
        name
    } else {
        joined = format!("{}/{name}", cwd.display());
        &joined
    };
    let lead = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else {
        "/"
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("{lead}{}", parts.join("/"))
}

/// The files among `paths` that hold the same bytes as an earlier one (its position and
/// theirs), with each one's size and identity as stated (`None`: not a regular file, left
/// alone) and the samples of those that share their size with another ([`look`]). Only files
/// that share their size are compared: by identity (device and inode: a hard link is the same
/// file, read once), else by SHA-256, the files hashed on every core; and of those, only files
/// that also share their samples with another are hashed whole (files of one size, such as a
/// tree of small kernel files, rarely share both). A file without samples (changed since it
/// was stated) is nobody's copy.
fn copies(
    paths: &[PathBuf],
    stated: &[Option<crate::scan::Stated>],
    samples: &std::collections::HashMap<(u64, u64), u64>,
) -> Vec<(usize, Vec<usize>)> {
    use rayon::prelude::*;
    use std::collections::HashMap;
    let mut by_size: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, s) in stated.iter().enumerate() {
        if let Some(s) = s {
            by_size.entry(s.size).or_default().push(i);
        }
    }
    let groups: Vec<Vec<usize>> = {
        let mut g: Vec<Vec<usize>> = by_size.into_values().filter(|g| g.len() > 1).collect();
        g.sort_unstable();
        g
    };
    // One file per (device, inode): the first path of each.
    let mut files: HashMap<(u64, u64), usize> = HashMap::new();
    for &i in groups.iter().flatten() {
        if let Some(s) = stated[i] {
            files.entry(s.id).or_insert(i);
        }
    }
    let files: Vec<((u64, u64), usize)> = files.into_iter().collect();
    let size_of = |i: usize| stated[i].map_or(0, |s| s.size);
    let mut by_sample: HashMap<(u64, u64), usize> = HashMap::new();
    for &(id, i) in &files {
        if let Some(s) = samples.get(&id) {
            *by_sample.entry((size_of(i), *s)).or_default() += 1;
        }
    }
    let digests: HashMap<(u64, u64), String> = files
        .into_par_iter()
        .filter(|&(id, i)| {
            samples
                .get(&id)
                .is_some_and(|s| by_sample.get(&(size_of(i), *s)).is_some_and(|&n| n > 1))
        })
        .filter_map(|(id, i)| {
            let data = Input::open(&paths[i]).ok()?;
            let digest = sha256_hex(&data);
            // A file that changed while it was hashed is nobody's copy.
            data.unchanged().ok()?;
            Some((id, digest))
        })
        .collect();
    let mut out: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for g in &groups {
        // Paths of one file are copies of it; files are copies when their digests agree.
        let mut first: HashMap<Same<'_>, usize> = HashMap::new();
        for &i in g {
            let Some(s) = stated[i] else {
                continue;
            };
            let key = match digests.get(&s.id) {
                Some(d) => Same::Digest(d),
                None if samples.contains_key(&s.id) => Same::File(s.id),
                None => continue,
            };
            match first.get(&key) {
                Some(&f) => out.entry(f).or_default().push(i),
                None => {
                    first.insert(key, i);
                }
            }
        }
    }
    out.into_iter().collect()
}

/// What makes two paths hold the same bytes: one file (device, inode), or one digest.
#[derive(PartialEq, Eq, Hash)]
enum Same<'a> {
    File((u64, u64)),
    Digest(&'a str),
}

/// Bytes read from each end of a file to tell files of one size apart before hashing them.
pub const SAMPLE: usize = 1024;

/// The census rows of the input at `path`, named `name` in the rows (a URL the file was
/// downloaded from, or the path itself): every file it holds listed as `gfxkit list` lists it
/// (a package by member, a container image as its file system), each code object
/// decompressed once, hashed with SHA-256 and its kernels counted; with `check`, each
/// compressed bundle's own hash is checked as it is decoded (without, it is not computed:
/// [`Digesting::check`]). What lies around the input (the kernel-database directories its
/// indexes are resolved against) is read through `around`: one [`Around`] shared by the inputs
/// of a shard reads a directory of 700 indexes once, not once for each of them. Never fails: an
/// input that cannot be read is a row with status `error`, a damaged file or unit one with
/// status `damaged`, both with what went wrong.
pub fn rows(path: &Path, name: &str, formats: &Formats, check: bool, around: &Around) -> Rows {
    let start = Instant::now();
    let local = path.display().to_string();
    // Paths in rows name the input as the census was given it.
    let rename = |p: &str| match p.strip_prefix(local.as_str()) {
        Some(rest) => format!("{name}{rest}"),
        None => p.to_owned(),
    };
    // Messages name the input as the census was given it too.
    let reword = |m: &str| {
        if local == name {
            m.to_owned()
        } else {
            m.replace(local.as_str(), name)
        }
    };
    // The input opened once: hashed, then listed. A directory (a container image's layout)
    // is known by the open, not by a look at the path before it.
    let (size, mut sha256, mut kind, opened) = match Input::open_with(path, &(), formats.settings())
    {
        Err(e) if matches!(e.kind(), crate::ErrorKind::IsDirectory) && is_image_dir(path) => {
            (dir_size(path), None, "image".to_owned(), None)
        }
        Ok(data) => {
            let file = File::alone(path, &data);
            let kind = formats.of(&file).kind(&file);
            (data.len() as u64, Some(sha256_hex(&data)), kind, Some(data))
        }
        Err(e) => {
            let msg = reword(&chain(&e));
            let row = census::input_row(
                name,
                0,
                None,
                "unreadable",
                0,
                &[],
                &[msg],
                true,
                start.elapsed().as_secs_f64(),
            );
            return Rows {
                input: row,
                code_objects: Vec::new(),
            };
        }
    };
    let visit = |input: Input| {
        // Headers only: the digests decompress each unit once (its hash checked with
        // `check`), and give what the listing leaves unread (the code-object version inside
        // compressed units).
        let file = formats.file(input.path(), &input);
        let format = formats.of(&file);
        let how = Digesting {
            kernels: true,
            check,
        };
        let (mut l, d) = format.list_and_digests(&file, how, around);
        l.layer = input.layer().map(str::to_owned);
        // A mapping's listing says only how many solutions it maps, an aiter map's how many
        // kernels: what they name that is not beside them is verify's finding.
        let beside = crate::database::beside_problems(input.path(), &input, &around.dirs);
        // A package member's database is judged by the members beside it once they are all
        // known: what it needs of them, kept.
        let unresolved = if crate::input::member_package(input.path()).is_some() {
            match crate::database::verify_file_bytes(input.path(), &input, false) {
                Some(Ok(v)) => v.unresolved,
                _ => Default::default(),
            }
        } else {
            Default::default()
        };
        // A file of a kernel database, as `check` reads it: what the lacks judge it by.
        let member = format.database_member(&file);
        Ok::<_, Infallible>((l, d, beside, unresolved, member))
    };
    let mut errors = Vec::new();
    let mut out = Vec::new();
    let mut files = 0u32;
    let mut nvidia_bytes = 0u64;
    let mut unreadable = false;
    let mut database_files = Vec::new();
    let mut database_libraries = Vec::new();
    let mut dead_units = Vec::new();
    let walked = match opened {
        Some(input) => for_each_of(path, input, &(), formats.settings(), visit),
        None => for_each_with(path, &(), formats.settings(), visit),
    };
    match walked {
        Ok(items) => {
            // The databases of a package, judged by the names of its members.
            let names: Vec<String> = items.iter().map(|(p, _)| p.display().to_string()).collect();
            let members: std::collections::HashSet<&str> =
                names.iter().map(String::as_str).collect();
            for ((p, r), member) in items.into_iter().zip(&names) {
                match r {
                    Ok((mut listing, digests, beside, unresolved, db_file)) => {
                        files += 1;
                        if let Some(mut m) = db_file {
                            m.path = rename(&m.path);
                            for f in &mut m.map_files {
                                *f = rename(f);
                            }
                            database_files.push(m);
                        }
                        if listing.path.contains("!/") {
                            kind = "image".to_owned();
                        }
                        let file = rename(&listing.path);
                        if let Some(dir) = gfxkit_inventory::database::databases_dir(&listing.path)
                        {
                            database_libraries.push(census::DatabaseLibrary {
                                path: file.clone(),
                                database_found: directory_there(&dir, &names),
                            });
                        }
                        if let Some(e) = &listing.error {
                            errors.push(reword(e));
                        }
                        for p in &listing.problems {
                            if p.severity == gfxkit_host::Severity::Error {
                                errors.push(format!("{file}: {p}"));
                            }
                        }
                        errors.extend(missing_beside(&file, &listing));
                        let mut beside = beside;
                        beside.extend(
                            crate::whole::findings_beside(
                                &names,
                                &members,
                                member,
                                member,
                                &unresolved,
                            )
                            .into_iter()
                            .map(|f| reword(&f.message)),
                        );
                        match &beside[..] {
                            [] => {}
                            [one] => errors.push(format!("{file}: {one}")),
                            [a, b] => errors.push(format!("{file}: {a}; {b}")),
                            [a, b, rest @ ..] => errors.push(format!(
                                "{file}: {a}; {b}; and {} more that gfxkit verify names",
                                rest.len()
                            )),
                        }
                        let digests = match digests {
                            Ok((d, e)) => {
                                // A listing's error already says what its digests would.
                                if listing.error.is_none() {
                                    errors.extend(e.iter().map(|m| reword(m)));
                                }
                                d
                            }
                            Err(e) => {
                                if listing.error.is_none() {
                                    errors.push(reword(&chain(&e)));
                                }
                                Vec::new()
                            }
                        };
                        nvidia_bytes += listing.nvidia.iter().map(|l| l.size).sum::<u64>();
                        listing.path = file;
                        let package = (p != path).then_some(name);
                        out.extend(census::code_object_rows(name, &listing, package, &digests));
                        dead_units.extend(census::dead_units(&listing));
                    }
                    Err(Failed::NoDeviceCode) => {}
                    Err(Failed::Package(e)) => {
                        files += 1;
                        errors.push(reword(&chain(&e)));
                    }
                    Err(Failed::Visit(never)) => match never {},
                }
            }
        }
        Err(e) => {
            unreadable = true;
            // The digest of a file that changed under it was taken of what the reading saw:
            // not the file's.
            if matches!(e.kind(), crate::ErrorKind::Changed { .. }) {
                sha256 = None;
            }
            errors.push(reword(&chain(&e)));
        }
    }
    let mut row = census::input_row(
        name,
        size,
        sha256,
        &kind,
        files,
        &out,
        &errors,
        unreadable,
        start.elapsed().as_secs_f64(),
    );
    row.nvidia_bytes = nvidia_bytes;
    row.database_files = database_files;
    row.database_libraries = database_libraries;
    row.dead_units = dead_units;
    Rows {
        input: row,
        code_objects: out,
    }
}

/// Whether the directory `dir` is there: on disk, or, named in a package or image
/// (`PKG!dir`), as the directory of some member of `members`.
fn directory_there(dir: &str, members: &[String]) -> bool {
    if dir.contains('!') {
        let under = format!("{dir}/");
        members.iter().any(|m| m.starts_with(&under))
    } else {
        Path::new(dir).is_dir()
    }
}

/// What a kernel database's rows load that is not beside it (`gfxkit verify` says the same,
/// file by file): one error per row, naming the first files. A library whose index names
/// files the install lacks fails to load those kernels.
fn missing_beside(file: &str, listing: &FileListing) -> Vec<String> {
    let Some(db) = &listing.database else {
        return Vec::new();
    };
    db.rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let n = r.missing.len();
            let named = match &r.missing[..] {
                [] => return None,
                [one] => one.clone(),
                [a, b] => format!("{a} and {b}"),
                [a, b, ..] => format!("{a}, {b} and {} more", n - 2),
            };
            let processor = r.processor.as_deref().unwrap_or("any processor");
            let files = if n == 1 {
                "file it loads is"
            } else {
                "files it loads are"
            };
            Some(format!(
                "{file}: row {i} ({processor}): {n} {files} missing: {named}"
            ))
        })
        .collect()
}

/// Bytes of the regular files under `dir` (links not followed).
fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies and hard links are found after their first; a file of the same size and other
    /// bytes, a directory, a package member's name and a missing file are not.
    /// Files of one size in `d`: `a`, `c` and `x!y` the same bytes, `b` other bytes and `h` a
    /// hard link to it; and a directory `sub`.
    fn copies_in(d: &Path) {
        std::fs::write(d.join("a"), b"same bytes").unwrap();
        std::fs::write(d.join("b"), b"othr bytes").unwrap();
        std::fs::write(d.join("c"), b"same bytes").unwrap();
        std::fs::hard_link(d.join("b"), d.join("h")).unwrap();
        std::fs::write(d.join("x!y"), b"same bytes").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
    }

    /// A census's local inputs found in one call: each name once and sorted, a missing path
    /// and a directory holding nothing to read as named, sizes as the walk stated them, and
    /// copies among them, by identity or digest (a file whose name holds `!` but names no
    /// package member included; a file of a size of its own never compared).
    #[test]
    fn local_inputs_are_named_once_with_their_sizes_and_copies() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        copies_in(d);
        std::fs::write(d.join("single"), b"only one of its size").unwrap();
        let given = ["x!y", "c", "gone", "h", "b", "a", "sub", "a", "single"];
        let paths: Vec<PathBuf> = given.iter().map(|n| d.join(n)).collect();
        let found = local_inputs(&paths);
        let names = ["a", "b", "c", "gone", "h", "single", "sub", "x!y"];
        let expected: Vec<String> = names
            .iter()
            .map(|n| d.join(n).display().to_string())
            .collect();
        assert_eq!(found.names, expected);
        assert_eq!(found.sources, expected);
        let s = Some(10);
        assert_eq!(found.sizes, vec![s, s, s, None, s, Some(20), None, s]);
        assert_eq!(found.copies, vec![(0, vec![2, 7]), (1, vec![4])]);
        assert_eq!(found.beside, vec![false; 8]);
        assert!(local_inputs(&paths[1..3]).copies.is_empty());
    }

    /// Absolute paths as Python's `os.path.abspath` makes them on POSIX.
    #[test]
    fn absolute_paths_are_made_by_name() {
        let cwd = Path::new("/w/d");
        for (name, want) in [
            ("a/./b/../c", "/w/d/a/c"),
            ("../../../x", "/x"),
            ("", "/w/d"),
            ("a/", "/w/d/a"),
            ("/p//q/./r/..", "/p/q"),
            ("//net/share", "//net/share"),
            ("///x", "/x"),
            ("/", "/"),
        ] {
            assert_eq!(absolute(name, cwd), want, "{name:?}");
        }
    }

    /// Files of one size larger than two samples: one differing only in the middle (its
    /// samples tie, so it is hashed whole and told apart), one differing only in its last
    /// byte, a copy of the first, and a hard link to a file whose samples tie with nothing.
    #[test]
    fn files_whose_samples_tie_are_hashed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let base = vec![7u8; 3 * SAMPLE];
        let mut middle = base.clone();
        middle[SAMPLE + SAMPLE / 2] = 8;
        let mut end = base.clone();
        *end.last_mut().unwrap() = 9;
        std::fs::write(d.join("base"), &base).unwrap();
        std::fs::write(d.join("middle"), &middle).unwrap();
        std::fs::write(d.join("end"), &end).unwrap();
        std::fs::write(d.join("copy"), &base).unwrap();
        std::fs::hard_link(d.join("end"), d.join("link")).unwrap();
        // Sorted: base, copy, end, link, middle.
        let names = ["base", "middle", "end", "copy", "link"];
        let paths: Vec<PathBuf> = names.iter().map(|n| d.join(n)).collect();
        assert_eq!(
            local_inputs(&paths).copies,
            vec![(0, vec![1]), (2, vec![3])],
            "{names:?}"
        );
        assert!(local_inputs(&paths[..3]).copies.is_empty());
    }

    #[test]
    fn a_missing_file_is_an_error_row() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gone.so");
        let r = rows(
            &p,
            "https://example.invalid/gone.so",
            &Formats::standard(),
            true,
            &Around::new(),
        );
        assert_eq!(r.input.status, "error");
        assert_eq!(r.input.kind, "unreadable");
        let e = r.input.error.unwrap();
        assert!(e.contains("https://example.invalid/gone.so"), "{e}");
        assert!(r.code_objects.is_empty());
    }

    #[test]
    fn a_bundle_gives_its_rows_under_the_name_given() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.hipfb");
        let bundle = gfxkit_bundle::write_bundle(
            &[
                ("host-x86_64-unknown-linux--", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"abc"),
            ],
            4096,
        )
        .unwrap();
        std::fs::write(&p, &bundle).unwrap();
        let r = rows(&p, "in/k.hipfb", &Formats::standard(), true, &Around::new());
        assert_eq!(r.input.status, "ok");
        assert_eq!(r.input.kind, "bundle");
        assert_eq!(
            r.input.sha256.as_deref(),
            Some(sha256_hex(&bundle).as_str())
        );
        assert_eq!(r.input.targets, ["gfx1030"]);
        assert_eq!(r.code_objects.len(), 1);
        assert_eq!(r.code_objects[0].path, "in/k.hipfb");
        assert_eq!(walk(&[dir.path().to_path_buf()]).unwrap(), [p]);
    }

    /// The census reads a file's listing and digests at once from one reading of its layout:
    /// the same answers, errors included, as the two read apart, for a bundle plain and
    /// compressed, with a compressed bundle whose stored hash is wrong (checked and not), with
    /// an entry whose payload carries the ELF magic but is no AMDGPU code object, cut short,
    /// a compressed bundle after a plain one, and a file that holds none.
    #[test]
    fn listing_and_digests_at_once_equal_each_alone() {
        use gfxkit_bundle::compressed::{compress, CompressOptions};
        let dir = tempfile::tempdir().unwrap();
        let bundle =
            |entries: &[(&str, &[u8])]| gfxkit_bundle::write_bundle(entries, 4096).unwrap();
        let host = ("host-x86_64-unknown-linux--", &b""[..]);
        let plain = bundle(&[
            host,
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", &[7u8; 5000]),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"k"),
        ]);
        let packed = compress(&plain, &CompressOptions::default()).unwrap();
        let mut wrong_hash = packed.clone();
        // The stored hash (after magic, version, method and two sizes, of 32 bits in
        // version 2 and 64 in 3) no longer fits the contents.
        let hash_at = if packed[4] == 2 { 16 } else { 24 };
        wrong_hash[hash_at] ^= 1;
        let elf_not_amd = bundle(&[
            host,
            ("hipv4-amdgcn-amd-amdhsa--gfx942", b"\x7fELF\x02\x01"),
        ]);
        let mut appended = plain.clone();
        appended.extend(&packed);
        let files: [(&str, &[u8]); 7] = [
            ("plain.hipfb", &plain),
            ("packed.hipfb", &packed),
            ("wrong-hash.hipfb", &wrong_hash),
            ("elf-not-amd.hipfb", &elf_not_amd),
            ("cut.hipfb", &plain[..100]),
            ("appended.bin", &appended),
            ("none.bin", b"nothing here"),
        ];
        let formats = Formats::standard();
        let around = Around::new();
        // Listings are compared as JSON (they are not `PartialEq`).
        fn json(v: &impl Serialize) -> String {
            serde_json::to_string(v).unwrap()
        }
        for (name, bytes) in files {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let data = Input::open(&path).unwrap();
            let file = formats.file(&path, &data);
            let format = formats.of(&file);
            for check in [false, true] {
                let how = Digesting {
                    kernels: true,
                    check,
                };
                let (listed, digested) = format.list_and_digests(&file, how, &around);
                let alone = format.digests(&file, how, &around);
                assert_eq!(
                    json(&listed),
                    json(&format.list(&file, false, &around)),
                    "{name}"
                );
                // The cases reach what they are here for.
                let errors = digested.as_ref().map(|(_, e)| e.len());
                match name {
                    "cut.hipfb" => assert!(digested.is_err() && listed.error.is_some()),
                    "wrong-hash.hipfb" => assert_eq!(errors.unwrap() > 0, check),
                    "elf-not-amd.hipfb" => assert!(errors.unwrap() > 0),
                    "appended.bin" => assert_eq!(digested.as_ref().unwrap().0.len(), 4),
                    "none.bin" => assert!(digested.as_ref().unwrap().0.is_empty()),
                    _ => assert_eq!(errors.ok(), Some(0), "{name}"),
                }
                // And as the file's own reading of its units gives them.
                let own =
                    gfxkit_inventory::digest::file_digests(&file.name(), bytes, how, &file.limits);
                match (&digested, &alone, &own) {
                    (Ok(a), Ok(b), Ok(c)) => {
                        assert_eq!(a, b, "{name}, check {check}");
                        assert_eq!(a, c, "{name}, check {check}");
                    }
                    (Err(a), Err(b), Err(c)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{name}");
                        let same = matches!(a.kind(), crate::ErrorKind::Locate(e) if e == c);
                        assert!(same, "{name}: {a:?} against {c:?}");
                    }
                    (a, b, c) => panic!("{name}, check {check}: {a:?}, {b:?}, {c:?}"),
                }
            }
        }
    }

    #[test]
    fn kernel_databases_are_of_their_kind() {
        // Tensile indexes were named by a lower-cased file name once, which no database's
        // name rule matched; an aiter map is one by its `hsa` directory.
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("TensileLibrary_lazy_gfx90a.dat");
        std::fs::write(&index, [0x80]).unwrap();
        let hsa = dir.path().join("hsa");
        std::fs::create_dir(&hsa).unwrap();
        let map = hsa.join("fmha_fwd.csv");
        std::fs::write(&map, "knl_name,co_name\n_Z1kv,fmha.co\n").unwrap();
        for p in [index, map] {
            let r = rows(&p, "db", &Formats::standard(), true, &Around::new());
            assert_eq!(r.input.kind, "kernel-database", "{p:?}: {:?}", r.input);
        }
    }
}
