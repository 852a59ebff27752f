//! Reading input files: memory-mapped, read-only, in one place.

use anyhow::{Context, Result};
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The bytes of an input file, memory-mapped when possible, or of one member of a package
/// (`pkg.whl!lib/x.so`: in memory when small, else in a mapped temporary file).
pub struct Input {
    path: PathBuf,
    data: Data,
}

enum Data {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
    Member(gfxkit_package::Bytes),
}

impl Input {
    /// Opens and maps `path`. Empty files and non-regular files (pipes, `/dev/stdin`) are read
    /// into memory instead, since they cannot be mapped.
    pub fn open(path: &Path) -> Result<Input> {
        if !path.exists() {
            if let Some(member) = open_member(path)? {
                return Ok(member);
            }
        }
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot stat {}", path.display()))?;
        let data = if meta.is_file() && meta.len() > 0 {
            // SAFETY: the map is read-only and private to this process. gfxkit never writes to
            // its inputs while they are mapped: in-place rewrites go to a new file that is then
            // renamed over the input, which leaves the mapped inode unchanged.
            #[allow(unsafe_code)]
            let map = unsafe { memmap2::Mmap::map(&file) }
                .with_context(|| format!("cannot map {}", path.display()))?;
            Data::Mapped(map)
        } else if meta.is_dir() {
            anyhow::bail!("{} is a directory", path.display());
        } else {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut &file, &mut buf)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Data::Owned(buf)
        };
        Ok(Input {
            path: path.to_owned(),
            data,
        })
    }

    /// The path the input was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
            Data::Member(b) => b,
        }
    }
}

/// Large package members go to unnamed temporary files (in `TMPDIR`), mapped once written.
pub struct TempSpill;

struct TempWriter(std::io::BufWriter<File>);

impl std::io::Write for TempWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl gfxkit_package::SpillWriter for TempWriter {
    fn finish(self: Box<Self>) -> std::io::Result<Box<dyn Deref<Target = [u8]> + Send + Sync>> {
        let file = self.0.into_inner().map_err(|e| e.into_error())?;
        if file.metadata()?.len() == 0 {
            return Ok(Box::new(Vec::new()));
        }
        // SAFETY: the file is unnamed (no other process can open it), written to completion
        // above and never written again; the map is read-only.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        Ok(Box::new(map))
    }
}

impl gfxkit_package::Spill for TempSpill {
    fn create(&self) -> std::io::Result<Box<dyn gfxkit_package::SpillWriter>> {
        let f = tempfile::tempfile()?;
        Ok(Box::new(TempWriter(std::io::BufWriter::with_capacity(
            1 << 20,
            f,
        ))))
    }
}

/// Whether `data` starts like a package (wheel/zip, conda, deb, rpm, tarball).
pub fn is_package(data: &[u8]) -> bool {
    let prefix = data
        .get(..gfxkit_package::detect::PREFIX_LEN)
        .unwrap_or(data);
    gfxkit_package::detect(prefix).is_some()
}

/// A package in which no member may hold device code: commands report it as such.
#[derive(Debug)]
pub struct NoDeviceCode;

impl std::fmt::Display for NoDeviceCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no device code in this package")
    }
}

impl std::error::Error for NoDeviceCode {}

/// Opens `pkg!member` (nested: `pkg!a.tar.zst!lib/x.so`) when `pkg` is a package file and the
/// member may hold device code. `None` when no prefix of `path` before a `!` is a file.
fn open_member(path: &Path) -> Result<Option<Input>> {
    let Some(s) = path.to_str() else {
        return Ok(None);
    };
    let Some(pkg) = s
        .match_indices('!')
        .map(|(i, _)| &s[..i])
        .find(|p| Path::new(p).is_file())
    else {
        return Ok(None);
    };
    let found = for_each(Path::new(pkg), |input| {
        Ok((input.path() == path).then_some(input))
    })?;
    for (p, r) in found {
        match r {
            Ok(Some(input)) => return Ok(Some(input)),
            Ok(None) => {}
            Err(e) if e.downcast_ref::<NoDeviceCode>().is_some() => {}
            Err(e) => return Err(e.context(format!("cannot read {}", p.display()))),
        }
    }
    anyhow::bail!(
        "{}: no such member with device code in {pkg} (list the package's members with `gfxkit list {pkg}`)",
        path.display()
    )
}

/// Runs `f` on an input: a file once, or for a package on every member that may hold device
/// code (named `package!member`, nested archives chained with `!`), one member in memory or
/// mapped at a time per thread. A package without such members gives one `Err` of
/// [`NoDeviceCode`] under the package's own path.
pub fn for_each<T, F>(path: &Path, f: F) -> Result<Vec<(PathBuf, Result<T>)>>
where
    T: Send,
    F: Fn(Input) -> Result<T> + Sync,
{
    let input = Input::open(path)?;
    if !is_package(&input) {
        let r = f(input);
        return Ok(vec![(path.to_owned(), r)]);
    }
    let name = path.display().to_string();
    let walked = gfxkit_package::walk(
        &name,
        &input,
        &gfxkit_package::Options::default(),
        &TempSpill,
        &|m| {
            f(Input {
                path: PathBuf::from(m.path),
                data: Data::Member(m.bytes),
            })
        },
    )?;
    let mut out = Vec::new();
    for r in walked {
        match r {
            Ok(v) => out.push((PathBuf::from(v.path), v.value)),
            Err(e) => out.push((PathBuf::from(&e.path), Err(anyhow::Error::new(e)))),
        }
    }
    if out.is_empty() {
        out.push((path.to_owned(), Err(anyhow::Error::new(NoDeviceCode))));
    }
    Ok(out)
}
