//! The one door: what a file is, and how each command reads a file of that kind.
//!
//! A file (or a package member, or bytes handed in from Python) goes through [`Formats::of`],
//! which asks each [`Format`] in turn whether the file is its own and returns the first that
//! claims it. The order, documented once here and used by every command, the Python module
//! and the census:
//!
//! 1. [`KpackArchive`]: a `.kpack` archive (by its magic), listed, sized and verified by
//!    kernel;
//! 2. [`KernelDatabase`]: a kernel database (a Tensile index or hipBLASLt mapping, a MIOpen
//!    `.kdb`, an `.aks2` file, an aiter kernel map: by name and bytes,
//!    [`gfxkit_inventory::database::kind`]), read against the files beside it;
//! 3. [`Binary`]: anything else, through [`Inventory`] (host binaries, bundles, code objects,
//!    archives; a binary split by kpack through the archives its markers name). It claims
//!    every file, so it comes last; a file without device code is its answer too.
//!
//! Containers (packages, images, directories) are opened before this door by
//! [`crate::input`] and [`crate::scan`]: each member they hold comes through it.
//!
//! A command is written once over [`Format`]: `list` calls [`Format::list`], `select`
//! [`Format::select`], `doctor` and `check` [`Format::examine`] (a file of a kernel database
//! set apart by [`Format::database_member`]), `extract` [`Format::extract`], `inspect`
//! [`Format::inspect`], `prune` of a tree [`Format::prune`], `kpack split` of a tree
//! [`Format::splittable`], whatever the file.
//! A new format is one type implementing [`Format`] (the compiler names every method it must
//! provide) and one line in [`Formats::standard`], or [`Formats::with`] for a caller's own.

use crate::database::DirNames;
use crate::extract::{ExtractError, Plan, Wanted};
use crate::input::Input;
use crate::prune_file::{self, Pruned};
use crate::Settings;
use crate::{Error, ErrorKind};
use gfxkit_bundle::limits::Limits;
use gfxkit_inventory::database::DbMember;
use gfxkit_inventory::digest::{Digest, Digesting};
use gfxkit_inventory::doctor::Examined;
use gfxkit_inventory::kernels::KernelListing;
use gfxkit_inventory::kpack as inv_kpack;
use gfxkit_inventory::list::FileListing;
use gfxkit_inventory::select::Selection;
use gfxkit_inventory::verify::Verification;
use gfxkit_inventory::Inventory;
use gfxkit_kpack::search::{Env, Loader};
use gfxkit_package::MemberChoice;
use gfxkit_shrink::Transform;
use gfxkit_spec::rocm::Rules;
use gfxkit_target_id::TargetId;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One file as the door sees it: its name, its bytes, and whether what lies beside it may be
/// read (the directory a Tensile index resolves its code objects in, the `.kpack` archives a
/// split binary's markers name).
#[derive(Clone, Copy)]
pub struct File<'a> {
    /// The file's path, or its name (`pkg.whl!lib/x.so` for a package member).
    pub path: &'a Path,
    /// Its bytes.
    pub data: &'a [u8],
    /// Whether files beside it are looked for through its path: true for the command line
    /// (a package member's path finds nothing there), false for bytes handed in from memory.
    pub surroundings: bool,
    /// The limits its bundles are read under ([`File::with_limits`]; the defaults otherwise).
    pub limits: Limits,
}

impl<'a> File<'a> {
    /// A file whose surroundings are looked for through `path`.
    pub fn at(path: &'a Path, data: &'a [u8]) -> File<'a> {
        File {
            path,
            data,
            surroundings: true,
            limits: Limits::default(),
        }
    }

    /// Bytes named `path` with nothing beside them.
    pub fn alone(path: &'a Path, data: &'a [u8]) -> File<'a> {
        File {
            path,
            data,
            surroundings: false,
            limits: Limits::default(),
        }
    }

    /// This file read under `limits`.
    pub fn with_limits(self, limits: Limits) -> File<'a> {
        File { limits, ..self }
    }

    /// The file's name as answers print it.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }
}

/// What one run reads around its files, once for all of them: the names of kernel-database
/// directories, and the kpack environment (`ROCM_KPACK_PATH`...) the archives are searched
/// with.
pub struct Around {
    /// Index directories read so far.
    pub dirs: DirNames,
    /// The kpack loader's environment.
    pub kpack: Env,
}

impl Around {
    /// Nothing read yet; the kpack environment of this process.
    pub fn new() -> Around {
        Around {
            dirs: DirNames::new(),
            kpack: crate::kpack::env(),
        }
    }
}

impl Default for Around {
    fn default() -> Around {
        Around::new()
    }
}

/// What `size` gets from one file.
pub struct Sized {
    /// The file's device code by region and bundle.
    pub survey: Result<gfxkit_shrink::Survey, gfxkit_shrink::Error>,
    /// The `.kpack` files (canonical paths) whose kernels the survey counts under this file:
    /// a caller sizing a tree leaves them out, their kernels being counted already.
    pub reached: Vec<PathBuf>,
    /// Whether the file is a `.kpack` archive (left out when a binary reached it).
    pub is_kpack_archive: bool,
}

/// The kinds of file whose device code gfxkit reads, each answering every per-file command.
pub trait Format: Send + Sync {
    /// What the kind is called in documentation (`kpack archive`).
    fn name(&self) -> &'static str;

    /// Whether `file` is of this kind (from its name and bytes; cheap: called for every file
    /// of a tree until a format claims it).
    fn claims(&self, file: &File<'_>) -> bool;

    /// Whether a file met in a directory walk, named `path` and starting with `prefix` (the
    /// first [`PREFIX_LEN`] bytes, fewer for a shorter file), is worth opening for this
    /// format. Files named directly are always read.
    fn found_in_walk(&self, path: &Path, prefix: &[u8]) -> bool;

    /// `gfxkit list` of the file; with `check`, compressed bundles decoded and their hashes
    /// checked. Damage is kept in the listing, naming the file.
    fn list(&self, file: &File<'_>, check: bool, around: &Around) -> FileListing;

    /// `gfxkit size` of the file; with `check`, every compressed bundle decoded.
    fn size(&self, file: &File<'_>, check: bool, around: &Around) -> Sized;

    /// `gfxkit verify` of the file, with the processors its own device code is built for
    /// (which a tree checks against the kernel database its library loads).
    fn verify(
        &self,
        file: &File<'_>,
        around: &Around,
    ) -> (gfxkit_inventory::Result<Verification>, Vec<String>);

    /// `gfxkit kernels` of the file: the kernels of code objects whose target ID overlaps
    /// `wanted` (all without it), with the errors met.
    fn kernels(
        &self,
        file: &File<'_>,
        wanted: Option<&TargetId>,
        demangle: bool,
        around: &Around,
    ) -> Result<KernelListing, crate::Error>;

    /// The file's code objects with their SHA-256 (for `diff`, `size --duplicates` and the
    /// census), kernels counted and hashes checked as `how` says; with the errors met. Archives are named by
    /// their canonical path, so that a code object reached through a split binary and through
    /// its `.kpack` file is one place.
    fn digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        around: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), crate::Error>;

    /// [`list`](Self::list) (headers only) and [`digests`](Self::digests) of the file at once,
    /// for the census, which wants both of every file: a format whose two answers start from
    /// the same reading of the file reads it once.
    fn list_and_digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        around: &Around,
    ) -> ListedAndDigested {
        (
            self.list(file, false, around),
            self.digests(file, how, around),
        )
    }

    /// For `select`, `doctor`, `check` and a tree's `verify`: the file as a file of a kernel
    /// database, judged with the library that loads it rather than alone; `None` for a file
    /// judged on its own.
    fn database_member(&self, file: &File<'_>) -> Option<DbMember>;

    /// For `doctor` and `check`: the file's device code as the runtime loads it on `devices`
    /// (`loader` finding a split binary's archives), with what the runtime of `rules` refuses
    /// in it, when given.
    fn examine(
        &self,
        file: &File<'_>,
        devices: &[TargetId],
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Examined;

    /// For `select`: what the runtime (of `rules`, when given) loads from the file on `device`.
    fn select(
        &self,
        file: &File<'_>,
        device: &TargetId,
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Selection;

    /// `gfxkit extract` (and Python's `extract`) of the file: the code objects `wanted`
    /// selects, planned from headers alone and produced by [`Plan::produce`]. `None` for a
    /// file with nothing to extract that was not named `explicit`ly; one named explicitly
    /// without device code is an error.
    fn extract<'d>(
        &self,
        file: &File<'d>,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError>;

    /// For `gfxkit inspect`: what the file is read as.
    fn inspect(&self, file: &File<'_>) -> Inspection;

    /// The targets of a file that goes whole with them (a raw code object, a `.kpack` archive,
    /// a MIOpen `.kdb`, an AOTriton `.aks2` or zip pack, a Tensile index with its row
    /// processors), with its kind (`code-object`, `kpack`, `miopen-kdb`, ...), `rel` its path
    /// in a tree (whose name or directory may give the processor): a prune keeps or drops such
    /// a file whole ([`Pruned::whole`]), and `kpack split --overlays` puts it in the overlay of
    /// its one processor. `None` for a file that does not go whole: a host binary (rewritten or
    /// split) or a file without device code. A file that does not read is the error.
    fn whole_targets(&self, file: &File<'_>, rel: &str) -> Result<Option<Whole>, crate::Error>;

    /// `gfxkit kpack split` of a tree: whether the file is a fat binary whose device code the
    /// split moves out to archives (an ELF shared object or executable, or a PE image, with
    /// `HIPF` wrappers and their bundles). By default no file of a format is: the split
    /// copies it, or with overlays places it by [`Format::whole_targets`].
    fn splittable(&self, _file: &File<'_>) -> bool {
        false
    }

    /// `gfxkit prune` of a tree: what becomes of this file, found at `rel` in the tree (whose
    /// name or directory may give a per-architecture file's processor), under `t`: copied,
    /// kept or dropped whole by its targets ([`Pruned::whole`]), or rewritten. Nothing is
    /// written; an error stops the prune before anything is.
    fn prune(&self, file: &File<'_>, rel: &str, t: &Transform) -> Result<Pruned, crate::Error>;

    /// `gfxkit prune` or `gfxkit recompress` of this file, named on its own or found in a tree
    /// where [`Format::prune`] decided to rewrite it: its new bytes (borrowing from the file)
    /// with the report of what changed. Nothing is written here. By default (the rule of every
    /// standard format, [`prune_file::rewrite`]), a file this format's [`Format::prune`] keeps
    /// or drops whole is refused, saying what it holds, and any other file is rewritten as a
    /// host binary or bundle; a format whose device code is rewritten otherwise says how.
    fn rewrite<'d>(
        &self,
        file: &File<'d>,
        t: &Transform,
    ) -> Result<gfxkit_shrink::Rewritten<'d>, crate::Error> {
        prune_file::rewrite(file.path, file.data, t, || {
            self.prune(file, &file.name(), t)
        })
    }

    /// Checks `back`, the bytes [`Format::rewrite`] made (`done`) as read back from where
    /// they were written (or, for a dry run, as made), against the file: by default every
    /// kept entry and the layout (`gfxkit_shrink::verify_bytes`), which reads `back` as a
    /// host binary or bundle.
    fn verify_rewrite(
        &self,
        file: &File<'_>,
        back: &[u8],
        done: &gfxkit_shrink::Rewritten<'_>,
    ) -> Result<(), gfxkit_shrink::Error> {
        gfxkit_shrink::verify_bytes(file.data, back, &done.report, &file.limits)
    }

    /// What the census's input row calls the file (its `kind` column: `kpack`,
    /// `kernel-database`, a package's format such as `wheel` or `deb`, or what a binary's
    /// first bytes say, such as `elf-shared-object`).
    fn kind(&self, file: &File<'_>) -> String;
}

/// A file's kind (`code-object`, `kpack`, `miopen-kdb`, ...) and the targets it goes whole
/// with ([`Format::whole_targets`]).
pub type Whole = (&'static str, Vec<String>);

/// What [`Format::list_and_digests`] gives: the listing, and the digests with the errors met
/// or why there are none.
pub type ListedAndDigested = (
    FileListing,
    Result<(Vec<Digest>, Vec<String>), crate::Error>,
);

/// How `gfxkit inspect` reads a file ([`Format::inspect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inspection {
    /// A `.kpack` archive: its header, table of contents and every kernel.
    KpackArchive,
    /// One AMDGPU code object; when the bytes do not read as one, `hint` (empty, or starting
    /// with a space) says what they are and which command reads them.
    CodeObject {
        /// What the file is, when it is not a code object.
        hint: &'static str,
    },
}

/// What `inspect` says of bytes that do not read as a code object: an offload bundle, a host
/// file or a package, each with the command that reads it; empty for anything else.
pub fn not_a_code_object(data: &[u8]) -> &'static str {
    use gfxkit_host::InputKind;
    if data.starts_with(gfxkit_bundle::read::MAGIC) || data.starts_with(gfxkit_bundle::ccob::MAGIC)
    {
        " (it is an offload bundle: see `gfxkit list` and `gfxkit extract`)"
    } else if matches!(
        InputKind::sniff(data.get(..512).unwrap_or(data)),
        InputKind::ElfSharedObject
            | InputKind::ElfExecutable
            | InputKind::ElfRelocatable
            | InputKind::PeImage
            | InputKind::CoffObject
            | InputKind::Archive
    ) {
        " (it is a host file: `gfxkit extract` writes its code objects, `gfxkit kernels` \
         lists its kernels)"
    } else if crate::input::is_package(data) {
        " (it is a package: `gfxkit list` names its members, PACKAGE!MEMBER)"
    } else {
        ""
    }
}

/// The formats a run reads, in the order they are asked ([`Formats::of`]), and the
/// [`Settings`] the run reads its inputs under ([`Formats::with_settings`]), whose choice of
/// package members is always these formats' ([`Formats::member_choice`]).
pub struct Formats {
    formats: Vec<Arc<dyn Format>>,
    settings: Settings,
}

impl Formats {
    /// gfxkit's formats in the documented order (module documentation).
    pub fn standard() -> Formats {
        Formats::made(
            vec![
                Arc::new(KpackArchive),
                Arc::new(KernelDatabase),
                Arc::new(Binary),
            ],
            Settings::default(),
        )
    }

    /// [`Formats::standard`], made once for the whole process: what walks under settings
    /// that name no choice of members ask ([`member_worth_reading`]).
    pub(crate) fn shared_standard() -> &'static Formats {
        static STANDARD: std::sync::OnceLock<Formats> = std::sync::OnceLock::new();
        STANDARD.get_or_init(Formats::standard)
    }

    /// `formats` under `settings`, package members chosen by `formats`.
    fn made(formats: Vec<Arc<dyn Format>>, mut settings: Settings) -> Formats {
        let asked = formats.clone();
        settings.members = Some(MemberChoice::new(move |name: &str, prefix: &[u8]| {
            asked
                .iter()
                .any(|f| f.found_in_walk(Path::new(name), prefix))
        }));
        Formats { formats, settings }
    }

    /// These formats, reading every input under `settings` (the default settings otherwise);
    /// the members of packages are still chosen by these formats, whatever
    /// `settings.members` says.
    pub fn with_settings(self, settings: Settings) -> Formats {
        Formats::made(self.formats, settings)
    }

    /// The settings inputs are read under.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Which members of a package these formats read: those that some format finds worth
    /// reading as a file met in a directory walk ([`Formats::found_in_walk`], the member's
    /// path in the package as its path). [`Formats::settings`] carries it to every walk.
    pub fn member_choice(&self) -> MemberChoice {
        self.settings.member_choice()
    }

    /// `data`, the contents of `path`, as these formats read it: [`File::at`] under
    /// [`Formats::settings`].
    pub fn file<'a>(&self, path: &'a Path, data: &'a [u8]) -> File<'a> {
        File::at(path, data).with_limits(self.settings.limits)
    }

    /// These formats and `format`, which is asked before [`Binary`] (the last, which claims
    /// every file), in directories and inside packages alike.
    pub fn with(mut self, format: impl Format + 'static) -> Formats {
        let at = self.formats.len().saturating_sub(1);
        self.formats.insert(at, Arc::new(format));
        Formats::made(self.formats, self.settings)
    }

    /// The format of `file`: the first that claims it.
    pub fn of(&self, file: &File<'_>) -> &dyn Format {
        self.formats
            .iter()
            .find(|f| f.claims(file))
            .map(Arc::as_ref)
            .unwrap_or(&Binary)
    }

    /// Whether `file`, found at `rel`, is a package whose members are its device code (a
    /// wheel, a tarball): no format but the last ([`Binary`]) claims it, and it is no file
    /// kept or dropped whole by its targets (an AOTriton image is a zip of its own).
    pub fn is_plain_package(&self, file: &File<'_>, rel: &str) -> Result<bool, crate::Error> {
        if !crate::input::is_package(file.data) {
            return Ok(false);
        }
        let format = self.of(file);
        let by_last = self
            .formats
            .last()
            .is_some_and(|l| std::ptr::addr_eq(Arc::as_ref(l), format));
        Ok(by_last && format.whole_targets(file, rel)?.is_none())
    }

    /// The names of the formats, in the order they are asked.
    pub fn names(&self) -> Vec<&'static str> {
        self.formats.iter().map(|f| f.name()).collect()
    }

    /// Whether a file met in a directory walk is worth opening: a container image layout, a
    /// package, or a file some format finds worth it ([`Format::found_in_walk`], from the
    /// first [`PREFIX_LEN`] bytes). A file that cannot be read is worth reading: the real
    /// open reports its error.
    pub fn worth_reading(&self, path: &Path) -> bool {
        if crate::input::is_image_dir(path) {
            return true;
        }
        let Ok(f) = std::fs::File::open(path) else {
            return true;
        };
        self.prefix_worth_reading(path, &f).unwrap_or(true)
    }

    /// Whether the open file `file`, met in a walk at `path`, is worth reading by its first
    /// [`PREFIX_LEN`] bytes (fewer for a shorter file); the error of reading them.
    fn prefix_worth_reading(&self, path: &Path, file: &std::fs::File) -> std::io::Result<bool> {
        let mut prefix = [0u8; PREFIX_LEN];
        let n = read_at_most(file, &mut prefix)?;
        Ok(self.prefix_worth(path, &prefix[..n]))
    }

    /// Whether a regular file met in a walk at `path`, whose first bytes are `prefix` (up to
    /// [`PREFIX_LEN`], fewer for a shorter file), is worth reading: a package, or a file some
    /// format finds worth it ([`Formats::worth_reading`] once the prefix is read).
    pub fn prefix_worth(&self, path: &Path, prefix: &[u8]) -> bool {
        let prefix = &prefix[..prefix.len().min(PREFIX_LEN)];
        crate::input::is_package(prefix) || self.found_in_walk(path, prefix)
    }

    /// [`Formats::worth_reading`] of a regular file met in a directory walk, opened once: the
    /// input when it is worth reading, `None` when it is not, the error of opening it when it
    /// cannot be (as [`Input::open`] words it).
    pub fn open_if_worth_reading(&self, path: &Path) -> Result<Option<Input>, Error> {
        let file = std::fs::File::open(path).map_err(|e| Error::new(path, ErrorKind::Open(e)))?;
        // A prefix that cannot be read is worth reading: the real reading reports what is
        // wrong.
        if self.prefix_worth_reading(path, &file).unwrap_or(true) {
            Input::from_file(path, file).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Whether a file at `path` whose first bytes are `prefix` (up to [`PREFIX_LEN`]) is worth
    /// reading when met in a walk: some format finds it so ([`Format::found_in_walk`]).
    pub fn found_in_walk(&self, path: &Path, prefix: &[u8]) -> bool {
        self.formats.iter().any(|f| f.found_in_walk(path, prefix))
    }
}

/// Whether a member of a package, named `name` (its path in the package) and starting with
/// `prefix`, is read by a walk of the package: when the standard formats would read the same
/// file met in a directory ([`Formats::found_in_walk`]). The choice of walks under
/// [`Settings`] that name none ([`Settings::members`]); a run's [`Formats`] give their own
/// ([`Formats::member_choice`]), which for [`Formats::standard`] is this one.
pub fn member_worth_reading(name: &str, prefix: &[u8]) -> bool {
    Formats::shared_standard().found_in_walk(Path::new(name), prefix)
}

/// Reads `buf.len()` bytes of `f` from its start, fewer at its end: how many.
pub(crate) fn read_at_most(f: &std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], n as u64)? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// How many first bytes of a file [`Formats::worth_reading`] reads (enough for a package's
/// magic, a tar header's, and a PE image's NT headers).
pub const PREFIX_LEN: usize = gfxkit_package::detect::PREFIX_LEN;

/// The formats' names in order, and the settings.
impl std::fmt::Debug for Formats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Formats")
            .field("formats", &self.names())
            .field("settings", &self.settings)
            .finish()
    }
}

impl Default for Formats {
    fn default() -> Formats {
        Formats::standard()
    }
}

/// `file` (at `rel` in its tree) kept or dropped whole by `t` with its kind and targets
/// ([`Format::whole_targets`], [`Pruned::whole`]).
fn whole(file: &File<'_>, rel: &str, t: &Transform, (kind, targets): Whole) -> Pruned {
    Pruned::whole(rel, kind, targets, file.data.len() as u64, &t.selection)
}

/// A `.kpack` archive: code objects by kernel, compressed per architecture.
pub struct KpackArchive;

impl KpackArchive {
    /// The archive's code objects as `extract` and `kernels` pick them.
    fn picks(file: &File<'_>) -> Result<Vec<inv_kpack::Pick>, crate::Error> {
        inv_kpack::extract_archive(file.data, &mut |_| true)
            .map_err(|e| crate::Error::new(file.path, crate::ErrorKind::Found(e)))
    }

    fn parse<'d>(file: &File<'d>) -> Result<gfxkit_kpack::Archive<'d>, crate::Error> {
        gfxkit_kpack::Archive::parse(file.data)
            .map_err(|e| crate::Error::new(file.path, crate::ErrorKind::Kpack(e)))
    }
}

impl Format for KpackArchive {
    fn name(&self) -> &'static str {
        "kpack archive"
    }

    fn claims(&self, file: &File<'_>) -> bool {
        gfxkit_kpack::archive::is_kpack(file.data)
    }

    /// No: an archive is read through the binaries whose markers name it (one named
    /// directly is read).
    fn found_in_walk(&self, _: &Path, _: &[u8]) -> bool {
        false
    }

    fn list(&self, file: &File<'_>, check: bool, _: &Around) -> FileListing {
        inv_kpack::list_archive(&file.name(), file.data, check)
    }

    fn size(&self, file: &File<'_>, check: bool, _: &Around) -> Sized {
        Sized {
            survey: inv_kpack::size_archive(file.data).unwrap_or_else(|| {
                gfxkit_inventory::size::survey_with(file.data, check, &file.limits)
            }),
            reached: Vec::new(),
            is_kpack_archive: true,
        }
    }

    fn verify(
        &self,
        file: &File<'_>,
        _: &Around,
    ) -> (gfxkit_inventory::Result<Verification>, Vec<String>) {
        (
            Ok(inv_kpack::verify_archive(&file.name(), file.data)),
            Vec::new(),
        )
    }

    fn kernels(
        &self,
        file: &File<'_>,
        wanted: Option<&TargetId>,
        demangle: bool,
        _: &Around,
    ) -> Result<KernelListing, crate::Error> {
        let picks = KpackArchive::picks(file)?;
        let a = KpackArchive::parse(file)?;
        let name = file.name();
        let picks: Vec<_> = picks.iter().collect();
        let (kernels, errors) =
            gfxkit_inventory::kernels::archive_rows(&name, &name, &a, &picks, wanted, demangle);
        Ok(KernelListing {
            kernels,
            errors,
            ..Default::default()
        })
    }

    fn digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        _: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), crate::Error> {
        let picks = KpackArchive::picks(file)?;
        let a = KpackArchive::parse(file)?;
        let name = file.name();
        let archive_name = if file.surroundings && file.path.is_file() {
            canonical(file.path)
        } else {
            name.clone()
        };
        let picks: Vec<_> = picks.iter().collect();
        Ok(gfxkit_inventory::digest::archive_digests(
            &name,
            &archive_name,
            &a,
            &picks,
            how.kernels,
        ))
    }

    fn database_member(&self, _: &File<'_>) -> Option<DbMember> {
        None
    }

    fn examine(
        &self,
        file: &File<'_>,
        devices: &[TargetId],
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Examined {
        Binary.examine(file, devices, loader, rules)
    }

    /// Its units as `list` reads them, each as the kpack loader would find it for `device`
    /// (under the setting of the device's unknown features that finds them all).
    fn select(
        &self,
        file: &File<'_>,
        device: &TargetId,
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Selection {
        let inv = Inventory::of_with(file.data, &file.limits);
        let mut s = gfxkit_inventory::select::select_on(&file.name(), &inv, device, rules);
        s.error = inv_kpack::archive_damage(file.data);
        let env = crate::kpack::env();
        let (units, needs) = crate::kpack::by_setting(device, |d| {
            inv_kpack::select_archive(file.path, file.data, d, loader, &env)
        });
        s.add_kpack(units, needs);
        if let Some(r) = rules {
            s.refuse_kpack(r);
            s.refuse_device(r, device);
        }
        s
    }

    /// Its kernels `wanted` selects; an archive that does not parse is the error.
    fn extract<'d>(
        &self,
        file: &File<'d>,
        _: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        Plan::archive(file.path, file.data, wanted).map(Some)
    }

    fn inspect(&self, _: &File<'_>) -> Inspection {
        Inspection::KpackArchive
    }

    /// The architectures its table of contents names.
    fn whole_targets(&self, file: &File<'_>, _: &str) -> Result<Option<Whole>, crate::Error> {
        prune_file::archive_targets(file.path, file.data).map(|t| Some(("kpack", t)))
    }

    /// Kept or dropped whole by its architectures.
    fn prune(&self, file: &File<'_>, rel: &str, t: &Transform) -> Result<Pruned, crate::Error> {
        let found = self.whole_targets(file, rel)?;
        Ok(whole(file, rel, t, found.unwrap_or(("kpack", Vec::new()))))
    }

    fn kind(&self, _: &File<'_>) -> String {
        "kpack".to_owned()
    }
}

/// A kernel database: a Tensile index (resolved against the files beside it) or hipBLASLt
/// mapping, a MIOpen `.kdb`, an `.aks2` file, an aiter kernel map.
pub struct KernelDatabase;

impl Format for KernelDatabase {
    fn name(&self) -> &'static str {
        "kernel database"
    }

    fn claims(&self, file: &File<'_>) -> bool {
        crate::database::kind(file.path, file.data).is_some()
    }

    /// A database by name and first bytes (`.kdb`, `.aks2`, Tensile indexes), and the files a
    /// Tensile directory holds beside its indexes.
    fn found_in_walk(&self, path: &Path, prefix: &[u8]) -> bool {
        let name = path.to_string_lossy();
        gfxkit_kernel_db::sniff::sniff(&name, prefix).is_some()
            || gfxkit_kernel_db::sniff::tensile_companion(&name)
    }

    fn list(&self, file: &File<'_>, _: bool, around: &Around) -> FileListing {
        let none = DirNames::none();
        let dirs = if file.surroundings {
            &around.dirs
        } else {
            &none
        };
        crate::database::list_file_bytes(file.path, file.data, dirs)
            .unwrap_or_else(|| gfxkit_inventory::list::unreadable(&file.name(), String::new()))
    }

    fn size(&self, file: &File<'_>, check: bool, _: &Around) -> Sized {
        Sized {
            survey: crate::database::size_survey(file.path, file.data).unwrap_or_else(|| {
                gfxkit_inventory::size::survey_with(file.data, check, &file.limits)
            }),
            reached: Vec::new(),
            is_kpack_archive: false,
        }
    }

    fn verify(
        &self,
        file: &File<'_>,
        around: &Around,
    ) -> (gfxkit_inventory::Result<Verification>, Vec<String>) {
        // A database in a package, or in bytes, has no directory: `verify_file_bytes` looks
        // beside files on disk only; a Tensile index or mapping in a package is checked
        // against the package's members by `whole::verify`.
        match crate::database::verify_file_bytes(file.path, file.data, file.surroundings) {
            Some(v) => (v, Vec::new()),
            None => Binary.verify(file, around),
        }
    }

    fn kernels(
        &self,
        file: &File<'_>,
        wanted: Option<&TargetId>,
        demangle: bool,
        around: &Around,
    ) -> Result<KernelListing, crate::Error> {
        match crate::database::kernels(file.path, file.data, file.surroundings, wanted, demangle) {
            Some(l) => l,
            None => Binary.kernels(file, wanted, demangle, around),
        }
    }

    fn digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        around: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), crate::Error> {
        Binary.digests(file, how, around)
    }

    fn database_member(&self, file: &File<'_>) -> Option<DbMember> {
        gfxkit_inventory::database::member_of(&file.name(), file.data, &file.limits)
    }

    fn examine(
        &self,
        file: &File<'_>,
        devices: &[TargetId],
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Examined {
        Binary.examine(file, devices, loader, rules)
    }

    fn select(
        &self,
        file: &File<'_>,
        device: &TargetId,
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Selection {
        Binary.select(file, device, loader, rules)
    }

    /// Every `.kdb` record or `.aks2` kernel `wanted` selects; a Tensile index holds none.
    fn extract<'d>(
        &self,
        file: &File<'d>,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        match crate::database::kind(file.path, file.data) {
            Some(kind) => Plan::database(file.path, file.data, kind, explicit, wanted),
            None => Binary.extract(file, explicit, wanted),
        }
    }

    fn inspect(&self, file: &File<'_>) -> Inspection {
        Binary.inspect(file)
    }

    /// A file of a database that is a host binary (none of the standard ones is) is split as
    /// one.
    fn splittable(&self, file: &File<'_>) -> bool {
        Binary.splittable(file)
    }

    /// A `.kdb`'s records' targets, an `.aks2`'s kernels', a Tensile file's processors.
    fn whole_targets(&self, file: &File<'_>, rel: &str) -> Result<Option<Whole>, crate::Error> {
        prune_file::database_targets(file.path, rel, file.data)
    }

    /// A Tensile index cut to the kept rows or kept or dropped whole; any other database
    /// file kept or dropped by its targets.
    fn prune(&self, file: &File<'_>, rel: &str, t: &Transform) -> Result<Pruned, crate::Error> {
        if let Some(p) = prune_file::index(file.path, rel, file.data, t)? {
            return Ok(p);
        }
        match self.whole_targets(file, rel)? {
            Some(found) => Ok(whole(file, rel, t, found)),
            None => Binary.prune(file, rel, t),
        }
    }

    fn kind(&self, _: &File<'_>) -> String {
        "kernel-database".to_owned()
    }
}

/// Anything else, read through [`Inventory`]: host binaries (ELF, PE/COFF), offload bundles,
/// code objects, `ar` archives; a binary split by kpack through the `.kpack` archives its
/// markers name.
pub struct Binary;

impl Binary {
    /// The archives a split binary's markers name, opened; `None` for a binary that is not
    /// split, or whose surroundings are not looked for.
    fn archives(
        file: &File<'_>,
        inv: &Inventory<'_>,
        around: &Around,
    ) -> Option<crate::kpack::Opened> {
        (file.surroundings && inv_kpack::is_split(inv))
            .then(|| crate::kpack::all_archives(file.path, &inv.discovery, &around.kpack))
    }

    /// [`Format::list`] of `file`, whose inventory is `inv`: a split binary's entries with
    /// their archives'.
    fn list_of(file: &File<'_>, inv: &Inventory<'_>, check: bool, around: &Around) -> FileListing {
        let mut l = gfxkit_inventory::list::list(&file.name(), inv, check);
        if let Some(o) = Binary::archives(file, inv, around) {
            inv_kpack::list_split(&mut l, inv, &o.archives(), check);
        }
        l
    }

    /// [`Format::digests`] of `file`, whose inventory is `inv`: a split binary's code objects
    /// from its archives, any other file's from its units.
    fn digests_of(
        file: &File<'_>,
        inv: &Inventory<'_>,
        how: Digesting,
        around: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), crate::Error> {
        use gfxkit_inventory::digest;
        let name = file.name();
        // A package member has no path of its own on disk.
        if inv_kpack::is_split(inv) && file.path.is_file() {
            if let Some(x) = split_picks_of(file, inv, around)? {
                let (mut out, mut errors) = (Vec::new(), Vec::new());
                for_each_archive(&x, |path, a, picks| {
                    let (d, e) =
                        digest::archive_digests(&name, &canonical(path), a, picks, how.kernels);
                    out.extend(d);
                    errors.extend(e);
                })?;
                return Ok((out, errors));
            }
        }
        digest::inventory_digests(&name, inv, how)
            .map_err(|e| crate::Error::new(file.path, crate::ErrorKind::Locate(e)))
    }
}

impl Format for Binary {
    fn name(&self) -> &'static str {
        "binary"
    }

    fn claims(&self, _: &File<'_>) -> bool {
        true
    }

    /// A kind of file [`gfxkit_host::InputKind::sniff`] says may hold device code.
    fn found_in_walk(&self, _: &Path, prefix: &[u8]) -> bool {
        gfxkit_host::InputKind::sniff(prefix).may_hold_device_code()
    }

    fn list(&self, file: &File<'_>, check: bool, around: &Around) -> FileListing {
        Binary::list_of(
            file,
            &Inventory::of_with(file.data, &file.limits),
            check,
            around,
        )
    }

    fn size(&self, file: &File<'_>, check: bool, around: &Around) -> Sized {
        // A raw code object is sized by architecture, as a kernel database's are.
        if let Some(survey) = gfxkit_inventory::database::code_object_survey(file.data) {
            return Sized {
                survey,
                reached: Vec::new(),
                is_kpack_archive: false,
            };
        }
        let inv = Inventory::of_with(file.data, &file.limits);
        match Binary::archives(file, &inv, around) {
            Some(o) => Sized {
                survey: inv_kpack::size_split(&inv, file.data.len() as u64, &o.archives()),
                reached: o
                    .files
                    .iter()
                    .map(|(p, _)| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
                    .collect(),
                is_kpack_archive: false,
            },
            None => Sized {
                survey: gfxkit_inventory::size::survey_with(file.data, check, &file.limits),
                reached: Vec::new(),
                is_kpack_archive: false,
            },
        }
    }

    fn verify(
        &self,
        file: &File<'_>,
        around: &Around,
    ) -> (gfxkit_inventory::Result<Verification>, Vec<String>) {
        let inv = Inventory::of_with(file.data, &file.limits);
        let processors = gfxkit_inventory::database::code_processors(&inv);
        if let Some(o) = Binary::archives(file, &inv, around) {
            let v = inv_kpack::verify_split(&file.name(), &inv, &o.archives());
            return (Ok(v), processors);
        }
        (
            gfxkit_inventory::verify::verify(&file.name(), &inv),
            processors,
        )
    }

    fn kernels(
        &self,
        file: &File<'_>,
        wanted: Option<&TargetId>,
        demangle: bool,
        around: &Around,
    ) -> Result<KernelListing, crate::Error> {
        use gfxkit_inventory::kernels;
        let name = file.name();
        if let Some(x) = split_picks(file, around)? {
            let mut out = KernelListing::default();
            for_each_archive(&x, |path, a, picks| {
                let (rows, errors) = kernels::archive_rows(
                    &name,
                    &path.display().to_string(),
                    a,
                    picks,
                    wanted,
                    demangle,
                );
                out.kernels.extend(rows);
                out.errors.extend(errors);
            })?;
            return Ok(out);
        }
        let (kernels, errors) =
            kernels::file_rows(&name, file.data, wanted, demangle, &file.limits)
                .map_err(|e| crate::Error::new(file.path, crate::ErrorKind::Locate(e)))?;
        Ok(KernelListing {
            kernels,
            errors,
            ..Default::default()
        })
    }

    fn digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        around: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), crate::Error> {
        let inv = Inventory::of_with(file.data, &file.limits);
        Binary::digests_of(file, &inv, how, around)
    }

    /// One inventory for both answers (the census asks both of every file).
    fn list_and_digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        around: &Around,
    ) -> ListedAndDigested {
        let inv = Inventory::of_with(file.data, &file.limits);
        (
            Binary::list_of(file, &inv, false, around),
            Binary::digests_of(file, &inv, how, around),
        )
    }

    /// A raw code object or a bundle that is a file of a Tensile directory (by its name).
    fn database_member(&self, file: &File<'_>) -> Option<DbMember> {
        gfxkit_inventory::database::member_of(&file.name(), file.data, &file.limits)
    }

    fn examine(
        &self,
        file: &File<'_>,
        devices: &[TargetId],
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Examined {
        let inv = Inventory::of_with(file.data, &file.limits);
        let mut e = gfxkit_inventory::doctor::examine(&inv);
        if file.surroundings {
            e.set_kpack(crate::kpack::doctor_verdicts(
                file.path, &inv, devices, loader,
            ));
        }
        e.release = rules.map(|r| gfxkit_inventory::release::Refused::of(r, &inv));
        e
    }

    /// Each loadable unit as the runtime chooses; a split binary's wrappers as the kpack
    /// loader finds their archives.
    fn select(
        &self,
        file: &File<'_>,
        device: &TargetId,
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Selection {
        let inv = Inventory::of_with(file.data, &file.limits);
        let mut s = gfxkit_inventory::select::select_on(&file.name(), &inv, device, rules);
        if file.surroundings {
            let (units, needs) = crate::kpack::select_units(file.path, &inv, device, loader);
            s.add_kpack(units, needs);
        }
        if let Some(r) = rules {
            s.refuse_kpack(r);
            s.refuse_device(r, device);
        }
        s
    }

    /// A split binary's code objects from the archives its markers name (when its
    /// surroundings are looked for), else the entries of its bundles.
    fn extract<'d>(
        &self,
        file: &File<'d>,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        if file.surroundings {
            if let Some(plan) = Plan::split(file.path, file.data, wanted, &file.limits)? {
                return Ok(Some(plan));
            }
        }
        Plan::bundles(
            file.path,
            Inventory::of_with(file.data, &file.limits),
            explicit,
            wanted,
        )
    }

    fn inspect(&self, file: &File<'_>) -> Inspection {
        Inspection::CodeObject {
            hint: not_a_code_object(file.data),
        }
    }

    /// An ELF shared object or executable, or a PE image, with `HIPF` wrappers and their
    /// bundles.
    fn splittable(&self, file: &File<'_>) -> bool {
        use gfxkit_host::InputKind as K;
        let data = file.data;
        if !matches!(
            K::sniff(data.get(..4096).unwrap_or(data)),
            K::ElfSharedObject | K::ElfExecutable | K::PeImage
        ) {
            return false;
        }
        let found = gfxkit_host::discover(data);
        found.bundle_count() > 0
            && found
                .wrappers
                .iter()
                .any(|w| w.magic == gfxkit_host::WrapperMagic::Hipf)
    }

    /// A raw code object's target; an AOTriton zip pack's images' targets.
    fn whole_targets(&self, file: &File<'_>, rel: &str) -> Result<Option<Whole>, crate::Error> {
        prune_file::database_targets(file.path, rel, file.data)
    }

    /// A raw code object kept or dropped by its target, a host binary or bundle rewritten.
    fn prune(&self, file: &File<'_>, rel: &str, t: &Transform) -> Result<Pruned, crate::Error> {
        match self.whole_targets(file, rel)? {
            Some(found) => Ok(whole(file, rel, t, found)),
            None => prune_file::binary(file.path, rel, file.data, t),
        }
    }

    fn kind(&self, file: &File<'_>) -> String {
        if crate::input::is_package(file.data) {
            return package_kind(file).to_owned();
        }
        // `ElfSharedObject` -> `elf-shared-object`.
        let sniffed = format!("{:?}", gfxkit_host::InputKind::sniff(file.data));
        let mut out = String::new();
        for (i, c) in sniffed.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    }
}

/// A package's format: by its name where the name tells more than the container (a wheel is
/// a zip, a conda package a zip or a tar), else by its first bytes.
fn package_kind(file: &File<'_>) -> &'static str {
    let name = file
        .path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let by_name = [
        (".whl", "wheel"),
        (".conda", "conda"),
        (".tar.bz2", "conda"),
        (".deb", "deb"),
        (".rpm", "rpm"),
    ];
    if let Some((_, kind)) = by_name.iter().find(|(ext, _)| name.ends_with(ext)) {
        return kind;
    }
    let prefix = &file.data[..file.data.len().min(gfxkit_package::detect::PREFIX_LEN)];
    use gfxkit_package::detect::Format as Package;
    match gfxkit_package::detect::detect(prefix) {
        Some(Package::Zip) => "zip",
        Some(Package::Tar) => "tar",
        Some(Package::Deb) => "deb",
        Some(Package::Rpm) => "rpm",
        _ => "compressed",
    }
}

/// Every code object of a split binary, through the archives its markers name; `None` for a
/// binary that is not split (or whose surroundings are not looked for).
fn split_picks(
    file: &File<'_>,
    around: &Around,
) -> Result<Option<crate::kpack::KpackExtract>, crate::Error> {
    split_picks_of(file, &Inventory::of_with(file.data, &file.limits), around)
}

/// [`split_picks`] of a file whose inventory is `inv`.
fn split_picks_of(
    file: &File<'_>,
    inv: &Inventory<'_>,
    around: &Around,
) -> Result<Option<crate::kpack::KpackExtract>, crate::Error> {
    let Some(o) = Binary::archives(file, inv, around) else {
        return Ok(None);
    };
    let picks = inv_kpack::extract_split(inv, &o.archives(), &mut |_| true)
        .map_err(|e| crate::Error::new(file.path, crate::ErrorKind::Found(e)))?;
    Ok(Some(crate::kpack::KpackExtract {
        picks,
        archives: o.files.iter().map(|(p, _)| p.clone()).collect(),
    }))
}

/// Calls `each` with every archive of a split binary's picks (its path, the archive parsed from
/// the mapped file) and the picks it holds, in the order of [`crate::kpack::KpackExtract`]'s
/// archives. The error is an archive that cannot be opened or parsed.
fn for_each_archive(
    x: &crate::kpack::KpackExtract,
    mut each: impl FnMut(&Path, &gfxkit_kpack::Archive<'_>, &[&inv_kpack::Pick]),
) -> Result<(), crate::Error> {
    for (ai, path) in x.archives.iter().enumerate() {
        let bytes = crate::Input::open(path)?;
        let a = gfxkit_kpack::Archive::parse(&bytes)
            .map_err(|e| crate::Error::new(path, crate::ErrorKind::Kpack(e)))?;
        let picks: Vec<_> = x.picks.iter().filter(|p| p.archive == ai).collect();
        each(path, &a, &picks);
    }
    Ok(())
}

fn canonical(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}
