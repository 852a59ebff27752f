//! Reading input files: memory-mapped, read-only, in one place.

use anyhow::{Context, Result};
use std::fs::File;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The bytes of an input file, memory-mapped when possible.
pub struct Input {
    path: PathBuf,
    data: Data,
}

enum Data {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Input {
    /// Opens and maps `path`. Empty files and non-regular files (pipes, `/dev/stdin`) are read
    /// into memory instead, since they cannot be mapped.
    pub fn open(path: &Path) -> Result<Input> {
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
        }
    }
}
