"""gfxkit: AMD GPU device code from Python.

Read what device code a file holds (offload bundles, CCOB, code objects in host executables,
shared libraries, archives), which code object the HIP runtime would load on a device,
whether a library runs on a GPU, where device bytes go; extract entries; prune or recompress
files; work with target IDs, the processor table and the AMDGPU memory model.

Every function takes a path (``str`` or ``os.PathLike``, memory-mapped) or ``bytes`` (so an
archive member can be read without writing it out). A path ``pkg.whl!lib/x.so`` names a member
of a package (wheel, conda, deb, rpm, tarball); a package itself gives one result per member
that may hold device code (a list), each named ``pkg!member`` as the CLI names it. ``.kpack``
archives are listed, verified and extracted by kernel, and binaries split by kpack are seen
through the archives their markers name. Results mirror the CLI: ``to_dict()``
returns exactly the object ``gfxkit <command> --json`` prints for that file. Errors raise
:class:`gfxkit.Error` subclasses carrying ``file``, ``entry`` and ``offset``.

>>> import gfxkit
>>> inv = gfxkit.list("libfoo.so")                      # doctest: +SKIP
>>> [e["target_id"] for b in inv.bundles for e in b["entries"]]   # doctest: +SKIP
>>> gfxkit.select("libfoo.so", "gfx90a:sramecc+:xnack-").bundles[0]["selected"]  # doctest: +SKIP
>>> str(gfxkit.TargetId("gfx90a:xnack+:sramecc-"))
'gfx90a:sramecc-:xnack+'
"""

from __future__ import annotations

import copy
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _gfxkit
from ._gfxkit import TargetId
from .errors import DeviceError, Error, FormatError, NoDeviceCodeError, TargetError
from . import census  # noqa: E402 - callable: gfxkit.census(inputs, out, ...)

__version__: str = _gfxkit.__version__

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


class _Report:
    """A result: the CLI's JSON object for it, with attributes for its keys."""

    _keys: Sequence[str] = ()

    def __init__(self, data: Dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> Dict[str, Any]:
        """The object ``gfxkit <command> --json`` prints (a deep copy)."""
        return copy.deepcopy(self._data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("_data")
        if data is not None and name in data:
            return data[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._data == self._data  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        head = self._data.get("path", "")
        return f"<gfxkit.{type(self).__name__} {head}>"


class Inventory(_Report):
    """The device code of one file: its units (bundles, object bundles, code objects, offload
    images) with their entries, and the problems found (``gfxkit list``).

    Keys: ``path``, ``bundles`` (each with ``member``, ``section``, ``offset``, ``size``,
    ``format``, ``ccob``, ``header_size``, ``entries``), ``problems``, ``error``.
    """

    @property
    def entries(self) -> List[Dict[str, Any]]:
        """Every entry of every unit, in file order."""
        return [e for b in self._data["bundles"] for e in b["entries"]]

    @property
    def architectures(self) -> List[str]:
        """The processors entries are built for, sorted."""
        out = set()
        for e in self.entries:
            t = e.get("target_id")
            if t:
                out.add(t.split(":")[0])
        return sorted(out)


class Selection(_Report):
    """Per unit, the entry the HIP runtime would load on a device (``gfxkit select``).

    Keys: ``path``, ``bundles`` (each with ``index``, ``kind``, ``section``, ``offset``,
    ``selected``, ``via``, ``reason``, ``needs``, ``nearest``), ``problems``, ``kpack``.
    """

    @property
    def selected(self) -> List[Optional[str]]:
        """The entry ID chosen per unit (``None`` where none fits)."""
        return [b["selected"] for b in self._data["bundles"]]


class Verification(_Report):
    """The verification of one file (``gfxkit verify``): ``ok``, ``bundles``, ``entries``
    and ``problems`` (each with ``bundle``, ``bundle_offset``, ``entry``, ``id``,
    ``message``)."""


class DoctorReport(_Report):
    """Whether each library runs on each device (``gfxkit doctor``): ``devices`` and
    ``files`` (each with ``path``, ``runs_on``, ``targets``, ``needs``, ``missing``,
    ``errors``, and ``remedies``: ``[{"device", "kind", "text", "standing"}]`` where it does
    not run)."""

    def remedies(self, path: str, device: Optional[str] = None) -> List[Dict[str, Any]]:
        """The remedies for the library at ``path`` (on ``device``, or on every device):
        each with ``kind`` (``override``, ``setting``, ``generic``, ``rebuild``,
        ``package``), ``text`` and ``standing`` (``supported`` or ``unsupported-by-amd``)."""
        want = None if device is None else str(TargetId(device))
        for f in self._data["files"]:
            if f["path"] == path:
                return [
                    r for r in f.get("remedies", []) if want is None or r["device"] == want
                ]
        return []

    def runs(self, path: str, device: str) -> Optional[bool]:
        """Whether the library at ``path`` runs on ``device`` (``None`` if not judged)."""
        for f in self._data["files"]:
            if f["path"] == path:
                return f["runs_on"].get(str(TargetId(device)))
        return None


class CheckReport(_Report):
    """Whether every file carries code for every required target (``gfxkit check``):
    ``required``, ``exactly``, ``ok``, ``files`` (each with ``path``, ``ok``, ``targets``,
    ``missing``, ``why``, ``needs``, ``spirv``, ``extra``, ``errors``) and ``summary``."""

    def __bool__(self) -> bool:
        return bool(self._data["ok"])

    @property
    def failed(self) -> List[Dict[str, Any]]:
        """The files that do not pass."""
        return [f for f in self._data["files"] if not f["ok"]]


class DiffReport(_Report):
    """What changed in device code between two builds (``gfxkit diff``): ``old``, ``new``,
    ``equal``, ``files`` (each with ``path``, ``status``, ``added``, ``removed``,
    ``changed``, ``device_bytes``, ``code_objects``, ``kernels``), ``old_totals``,
    ``new_totals``, ``targets_added``, ``targets_removed``, ``errors``."""

    def __bool__(self) -> bool:
        return not self._data["equal"]

    @property
    def changed(self) -> List[Dict[str, Any]]:
        """The files whose device code differs (modified, added or removed)."""
        return [f for f in self._data["files"] if f["status"] != "same"]


class SizeReport(_Report):
    """Device bytes per architecture, file and bundle (``gfxkit size``): ``archs``,
    ``files``, ``bundles``, ``stored``, ``uncompressed``, ``keep``, ``prune_saves``,
    ``errors``, and when asked ``libraries`` and ``duplicates``."""


class KernelListing(_Report):
    """Every kernel of every code object in a file (``gfxkit kernels``): ``kernels`` (each
    with ``file``, ``unit``, ``entry``, ``target_id``, ``name``, ``demangled``, ``symbol``,
    ``descriptor``, register counts, ``lds_bytes``, ``scratch_bytes``, spills,
    ``occupancy``, ``occupancy_limited_by``, ``args``, ...) and ``errors`` (code objects or
    units that could not be read, each naming the file). For a Tensile index
    (``TensileLibrary.dat``), ``solutions`` instead: per processor row and solution, ``name``,
    ``processor``, ``row``, ``cu_count``, ``code_object`` (the file beside the index holding
    its kernel), ``present`` and the kernel's fields."""

    @property
    def solutions(self) -> List[Dict[str, Any]]:
        """A Tensile index's solutions (empty for other files)."""
        return self._data.get("solutions", [])

    def __repr__(self) -> str:
        if self._data.get("solutions"):
            return f"<gfxkit.KernelListing {len(self._data['solutions'])} solutions>"
        return f"<gfxkit.KernelListing {len(self._data['kernels'])} kernels>"


class Entry:
    """One extracted entry: its ID, its bytes and where it was.

    Attributes:
        id: the entry ID exactly as stored (``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+``).
        data: the payload (a code object, or bitcode for ``.bc`` images).
        offset: the payload's offset in its (uncompressed) bundle.
        unit: the index of the bundle (or other unit) in the file.
        entry: the index of the entry in its unit (of the record, for a kernel database).
        ext: ``co`` or ``bc``, the extension ``gfxkit extract`` names it with.
        member: the archive member holding it, for archives; the TOC key for a kernel of a
            ``.kpack`` archive (or of a binary split by kpack, read through its archives).
        file: the file it came from: the path given, ``<bytes>``, or ``package!member`` for
            a package's member.
    """

    __slots__ = ("id", "data", "offset", "unit", "entry", "ext", "member", "file")

    def __init__(
        self,
        id: str,
        data: bytes,
        offset: int,
        unit: int,
        entry: int,
        ext: str,
        member: Optional[str],
        file: str,
    ) -> None:
        self.id = id
        self.data = data
        self.offset = offset
        self.unit = unit
        self.entry = entry
        self.ext = ext
        self.member = member
        self.file = file

    @property
    def target_id(self) -> Optional[TargetId]:
        """The target ID the entry ID names, when it names one gfxkit knows."""
        tail = self.id.rsplit("-", 1)[-1]
        try:
            return TargetId(tail)
        except TargetError:
            return None

    def __repr__(self) -> str:
        return f"<gfxkit.Entry {self.id} {len(self.data)} bytes>"


class Processor:
    """A row of the processor table (``gfxkit target list --json``).

    Attributes: ``name``, ``aliases``, ``arch``, ``kind``, ``features``,
    ``target_id_features``, ``mach``, ``generic_family``, ``generic_version``,
    ``generic_members``, ``memory_model``, ``in_llvm19``, ``llvm`` (the LLVM releases
    defining it: ``19+``, ``19-20``, ``main``), ``xnack_always``, ``hardware`` (register
    files, LDS, wave slots: the limits occupancy is computed from).
    """

    def __init__(self, row: Dict[str, Any]) -> None:
        self._row = row

    def __getattr__(self, name: str) -> Any:
        row = self.__dict__.get("_row")
        if row is not None and name in row:
            return row[name]
        raise AttributeError(f"Processor has no attribute {name!r}")

    def to_dict(self) -> Dict[str, Any]:
        """The row as ``gfxkit target list --json`` prints it."""
        return copy.deepcopy(self._row)

    def __repr__(self) -> str:
        return f"<gfxkit.Processor {self._row['name']}>"


def _each(made: Any, cls: Any) -> Any:
    """One result, or for a package a list of them (one per member)."""
    if isinstance(made, dict):
        return cls(made)
    return [cls(d) for d in made]


def list(  # noqa: A001
    src: Source, *, check: bool = False, strict: bool = True
) -> Union[Inventory, "List[Inventory]"]:
    """The device code in one file, as ``gfxkit list --json`` lists it; for a package, a list
    with one :class:`Inventory` per member that may hold device code (``path`` is
    ``package!member``). A ``.kpack`` archive is listed by kernel; a binary split by kpack
    through the archives its markers name.

    Args:
        src: a path (``pkg.whl!lib/x.so`` for a package member) or the file's bytes.
        check: decompress compressed bundles in full, verify their hash and read their code
            objects' headers (``gfxkit list --check``).
        strict: raise :class:`FormatError` when the device code cannot be read; with
            ``strict=False`` the result carries ``error`` instead.
    """
    return _each(_gfxkit.list(src, check, strict), Inventory)


def list_summary(src: Source) -> Dict[str, Any]:
    """Which GPU targets ``src`` (a file, a package, or a directory searched as the CLI
    searches it) ships and how many bytes of code objects each, per package,
    container image, site-packages distribution (found through the ``*.dist-info/RECORD``
    that lists a file) or file, as ``gfxkit list --summary --json`` prints it:
    ``{"packages": [{"name", "kind", "files", "targets", "architectures", "device_bytes"}],
    "without_device_code": [...]}``. Unreadable members are left out (``list`` names them)."""
    return _gfxkit.list_summary(src)


def select(
    src: Source, device: Union[str, TargetId], *, kpack_loader: str = "current"
) -> Union[Selection, "List[Selection]"]:
    """Which code object the HIP runtime would load on ``device`` from each unit of a file
    (``gfxkit select --device DEVICE --json``); for a package, one :class:`Selection` per
    member with device code. Binaries split by kpack are resolved as the kpack loader does
    (``kpack_loader="old"``: the first-match search of earlier ROCm 7 releases). A library on
    disk that loads a kernel database (``librocblas.so`` with ``rocblas/<version>/library``
    beside it) gets a unit of ``format`` ``"database"`` naming the ``files`` it opens on the
    device, or ``selected: None`` with the missing files in ``reason``."""
    return _each(_gfxkit.select(src, str(device), kpack_loader), Selection)


def verify(src: Source) -> Union[Verification, "List[Verification]"]:
    """Checks a file's device code for damage and for what keeps the HIP runtime from loading
    it (``gfxkit verify --json``); for a package, one :class:`Verification` per member with
    device code (members without any, such as CPU-only libraries, are left out; the CLI names
    them under ``without_device_code``). Raises :class:`NoDeviceCodeError` for a file, or a
    package, without device code."""
    return _each(_gfxkit.verify(src), Verification)


def doctor(
    paths: Union[None, str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]] = None,
    devices: Union[str, TargetId, Iterable[Union[str, TargetId]]] = "auto",
    *,
    sysfs_root: Union[None, str, "os.PathLike[str]"] = None,
    kpack_loader: str = "current",
) -> DoctorReport:
    """Whether the libraries under ``paths`` (files or directories; default
    ``$ROCM_PATH/lib``, else ``/opt/rocm/lib``) run on each of ``devices``
    (``gfxkit doctor --device ... --json``).

    ``devices="auto"`` (the default) reads this machine's GPUs from the KFD topology
    (``/sys/class/kfd/kfd/topology/nodes/*/properties``, or under ``sysfs_root``), honouring
    ``HSA_OVERRIDE_GFX_VERSION`` and ``HSA_XNACK`` as the CLI does; raises
    :class:`DeviceError` when it finds no GPU. Directories are searched as the CLI searches
    them (symbolic links followed, packages by member); binaries split by kpack are judged
    through their archives."""
    if paths is None:
        paths = []
    elif isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(devices, (str, TargetId)):
        devices = [devices]
    return DoctorReport(
        _gfxkit.doctor(
            [os.fspath(p) for p in paths],
            [str(d) for d in devices],
            None if sysfs_root is None else os.fspath(sysfs_root),
            kpack_loader,
        )
    )


def check(
    paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
    require: Union[str, TargetId, Iterable[Union[str, TargetId]]],
    *,
    exactly: bool = False,
    kpack_loader: str = "current",
) -> CheckReport:
    """Whether every file with device code under ``paths`` (files, packages, directories)
    carries code that runs on every target of ``require`` (``gfxkit check --require ...
    --json``): a bare processor (``gfx90a``) is met by code for one xnack/sramecc setting
    (``needs`` names it), a target ID with settings asks for that setting; generic code and
    SPIR-V count as the HIP runtime would load them. With ``exactly``, targets no required
    target would load fail too (``extra``). A library is judged together with the kernel
database it loads (rocBLAS's ``rocblas/<version>/library``; ``database`` names it), and a
database no library loads on its own. Split binaries are judged through their kpack archives
as ``kpack_loader`` (``"current"`` or ``"old"``) finds them. The report is true when every
file passes."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(require, (str, TargetId)):
        require = [require]
    wanted = [t.strip() for r in require for t in str(r).split(",") if t.strip()]
    return CheckReport(
        _gfxkit.check([os.fspath(p) for p in paths], wanted, exactly, kpack_loader)
    )


def diff(old: Union[str, "os.PathLike[str]"], new: Union[str, "os.PathLike[str]"]) -> DiffReport:
    """What changed in device code from ``old`` to ``new`` (files, directory trees or
    packages; files matched by their path below each side): ``gfxkit diff --json``. The
    report is true when the two differ."""
    return DiffReport(_gfxkit.diff(os.fspath(old), os.fspath(new)))


def size(
    src: Union[Source, Iterable[Union[str, "os.PathLike[str]"]]],
    keep: Sequence[str] = (),
    *,
    by_library: bool = False,
    duplicates: bool = False,
    html: Union[None, str, "os.PathLike[str]"] = None,
) -> SizeReport:
    """Device bytes per architecture, file and bundle, and what keeping only ``keep`` would
    save (``gfxkit size --json [--keep ...] PATH...``). ``src`` is a file's bytes, or a path
    or several (files, directories searched as the CLI searches them, packages by member,
    members ``pkg!member``). ``by_library`` adds ``libraries`` (each library with the kernel
    databases it loads, ``--by library``); ``duplicates`` adds ``duplicates`` (identical code
    objects stored more than once, ``--duplicates``); ``html`` also writes there the page
    ``--html`` writes (a chart per architecture, a sortable table per file)."""
    if not isinstance(src, (bytes, bytearray, memoryview, str, os.PathLike)):
        src = [os.fspath(p) for p in src]
    elif isinstance(src, (bytearray, memoryview)):
        src = bytes(src)
    return SizeReport(
        _gfxkit.size(
            src,
            [str(k) for k in keep],
            by_library=by_library,
            duplicates=duplicates,
            html=None if html is None else os.fspath(html),
        )
    )


def extract(
    src: Source,
    target: Union[None, str, TargetId, Sequence[Union[str, TargetId]]] = None,
    *,
    ignore_hash: bool = False,
) -> List[Entry]:
    """The entries of a file (every one but empty host entries), or those ``target`` selects
    (a target ID or entry ID, or several), with their bytes: what ``gfxkit extract`` writes.
    For a package, the entries of every member (``Entry.file`` is ``package!member``); for a
    ``.kpack`` archive, its kernels decoded (``Entry.member`` is the TOC key); for a binary
    split by kpack (a path), the code objects of the archives it names; for a kernel database
    (MIOpen ``.kdb``, AOTriton ``.aks2``), its records decoded and checked. A file without
    device code raises :class:`NoDeviceCodeError`.

    ``gfx90a`` selects ``gfx90a:xnack+`` and ``gfx90a:xnack-``; ``gfx90a:xnack+`` selects
    ``gfx90a:xnack+`` and a plain ``gfx90a``. Compressed bundles are decompressed, their hash
    checked unless ``ignore_hash``.
    """
    if target is None:
        targets: List[str] = []
    elif isinstance(target, (str, TargetId)):
        targets = [str(target)]
    else:
        targets = [str(t) for t in target]
    return [Entry(*t) for t in _gfxkit.extract(src, targets, ignore_hash)]


def inspect(src: Source, demangle: bool = False) -> Dict[str, Any]:
    """One AMDGPU code object, as ``gfxkit inspect --json`` prints it (header, ``e_flags``,
    target ID, kernels with their descriptor, occupancy and arguments, metadata);
    ``demangle=True`` as ``--demangle`` adds each kernel's demangled name."""
    return _gfxkit.inspect(src, demangle)


def kernels(
    src: Source, target: Union[None, str, TargetId] = None, *, demangle: bool = False
) -> KernelListing:
    """Every kernel of every code object in a file or directory (searched as ``gfxkit
    kernels`` searches it): bundles, host binaries, archives,
    packages (each member), binaries split by kpack (through their archives) and ``.kpack``
    files, with registers, LDS, scratch, spills and occupancy (``gfxkit kernels --json``).
    With ``target``, only code objects whose target ID overlaps it; ``demangle=True`` adds
    the demangled names. A Tensile index (``TensileLibrary.dat``) gives its solutions, each
    resolved to the code object beside it that holds its kernel (``solutions``; ``target``
    keeps one processor's rows). Unreadable code objects are listed in ``errors``, not
    raised."""
    return KernelListing(_gfxkit.kernels(src, None if target is None else str(target), demangle))


def kpack_split(
    src: Union[str, "os.PathLike[str]"],
    output: Union[str, "os.PathLike[str]"],
    group: str,
    *,
    kpack_dir: Union[None, str, "os.PathLike[str]"] = None,
    kernel_name: Optional[str] = None,
    compression: str = "zstd",
    level: int = 3,
    drop_signature: bool = False,
    recursive: bool = False,
    overlays: bool = False,
) -> Dict[str, Any]:
    """Splits a fat binary as ROCm's kpack does (``gfxkit kpack split``): every code object
    goes to ``<kpack_dir>/<group>_<arch>.kpack`` (default ``kpack_dir``: ``<dir of
    output>/../.kpack``; an archive already there keeps its other kernels) under the key
    ``<kernel_name>#<N>``, and the host-only binary (HIPK wrappers pointing to a marker) to
    ``output``. The split binary is read back (segments, wrappers) before anything is
    written; everything is written atomically, archives first; the input is never
    modified. ``compression`` is ``"zstd"`` (at ``level``) or ``"none"``. A signed Windows
    image (DLL or EXE) is refused unless ``drop_signature``, which writes it unsigned. With
    ``recursive``, ``src`` is a directory tree and ``output`` a directory mirroring it
    (``kpack split -r``: archives in ``output/.kpack``); with ``overlays`` too, ``output``
    gets ``generic/`` (what every GPU needs) and one ``<processor>/`` overlay per processor
    holding its archives and its kernel-database files, decided by their content
    (``kpack split -r --overlays``, listed in the report's ``overlay_files``). Returns the
    report ``gfxkit kpack split --json`` prints."""
    return _gfxkit.kpack_split(
        os.fspath(src),
        os.fspath(output),
        group,
        None if kpack_dir is None else os.fspath(kpack_dir),
        kernel_name,
        compression,
        level,
        drop_signature,
        recursive,
        overlays,
    )


def kpack_inline(
    src: Union[str, "os.PathLike[str]"],
    output: Union[str, "os.PathLike[str]"],
    archives: Sequence[Union[str, "os.PathLike[str]"]] = (),
) -> Dict[str, Any]:
    """Turns a binary split by kpack and its archives back into a fat binary at ``output``
    (``gfxkit kpack inline``): archives are found through the binary's markers as the loader
    finds them, after ``archives``. The result is read back before it is written,
    atomically (``output``'s directory made when missing); it can be split again. Returns
    the report ``gfxkit kpack inline --json`` prints."""
    return _gfxkit.kpack_inline(os.fspath(src), os.fspath(output), [os.fspath(a) for a in archives])


def prune(
    src: Source,
    keep: Sequence[str] = (),
    *,
    drop: Sequence[str] = (),
    output: Union[None, str, "os.PathLike[str]"] = None,
    in_place: bool = False,
    uncompressed: bool = False,
    ccob_version: Optional[int] = None,
    method: Optional[str] = None,
    level: Optional[int] = None,
    allow_empty: bool = False,
    drop_signature: bool = False,
) -> Dict[str, Any]:
    """Keeps (``keep``) or drops (``drop``) architectures in a host binary, archive or
    bundle (``gfxkit prune``). The result is written to ``output`` (or over the input with
    ``in_place``) through a temporary file that is read back and verified first; with
    neither, nothing is written. A prune that would leave no device code at all raises
    :class:`FormatError` unless ``allow_empty``; targets that match no entry are listed in
    the report's ``unmatched``. Returns the report ``prune --json`` prints (without
    ``seconds``). A package (wheel, conda, deb, rpm, tarball) has every member with device
    code rewritten and verified and is written again around them (a wheel's ``RECORD`` and
    a conda package's ``info/paths.json`` updated); the report then lists ``members``.
    Windows DLLs and EXEs are rewritten too; a signed one (Authenticode) is refused unless
    ``drop_signature``, which writes it unsigned."""
    return _gfxkit.prune(
        src,
        [str(k) for k in keep],
        [str(d) for d in drop],
        None if output is None else os.fspath(output),
        in_place,
        uncompressed,
        ccob_version,
        method,
        level,
        allow_empty,
        drop_signature,
    )


def recompress(
    src: Source,
    output: Union[None, str, "os.PathLike[str]"] = None,
    *,
    in_place: bool = False,
    uncompressed: bool = False,
    ccob_version: Optional[int] = None,
    method: Optional[str] = None,
    level: Optional[int] = None,
    drop_signature: bool = False,
) -> Dict[str, Any]:
    """Converts the compression of every bundle (``gfxkit recompress``; CCOB v2 zstd unless
    told otherwise), written as :func:`prune` writes."""
    return _gfxkit.recompress(
        src,
        None if output is None else os.fspath(output),
        in_place,
        uncompressed,
        ccob_version,
        method,
        level,
        drop_signature,
    )


def compatible(code_object_id: Union[str, TargetId], device_id: Union[str, TargetId]) -> bool:
    """Whether code built for ``code_object_id`` runs on a device ``device_id``
    (``gfxkit target compat``)."""
    return _gfxkit.compatible(str(code_object_id), str(device_id))


def max_uncompressed(limit: Optional[int] = None) -> int:
    """The largest uncompressed size, in bytes, a compressed bundle may declare before every
    reader of this process refuses it (64 GiB unless changed; ``gfxkit --max-uncompressed``;
    ``GFXKIT_MAX_UNCOMPRESSED`` in the environment when gfxkit is imported, as for the CLI).
    With ``limit``, sets it first. Returns the limit in force."""
    if limit is not None and limit < 0:
        raise ValueError("limit must not be negative")
    return _gfxkit.max_uncompressed(limit)


def image_platform(platform: Optional[str] = None) -> Optional[str]:
    """The platform multi-platform container images are read as (``gfxkit --platform``):
    ``"os/arch"`` or ``"os/arch/variant"``, or None for the default (linux/amd64 when the image
    has it, else its only one). With ``platform``, sets it first (``""`` restores the default).
    Returns the platform in force."""
    return _gfxkit.image_platform(platform)


def processors() -> List[Processor]:
    """The processor table, one :class:`Processor` per row."""
    return [Processor(r) for r in _gfxkit.processors()]


def memmodel(
    cpu: str,
    case: str,
    *,
    cumode: bool = False,
    tgsplit: bool = False,
    os: str = "amdhsa",  # noqa: A002
    skip_cache_invalidations: bool = False,
) -> List[str]:
    """The AMDGPU memory model's code sequence for ``case``
    (``load_atomic;as=global;ord=acquire;scope=agent``) on ``cpu``, one instruction per
    string (``gfxkit memmodel --cpu CPU CASE``)."""
    return _gfxkit.memmodel(cpu, case, cumode, tgsplit, os, skip_cache_invalidations)


__all__ = [
    "CheckReport",
    "DeviceError",
    "DiffReport",
    "DoctorReport",
    "Entry",
    "Error",
    "FormatError",
    "Inventory",
    "KernelListing",
    "NoDeviceCodeError",
    "Processor",
    "Selection",
    "SizeReport",
    "TargetError",
    "TargetId",
    "Verification",
    "census",
    "check",
    "compatible",
    "diff",
    "doctor",
    "extract",
    "inspect",
    "kernels",
    "kpack_inline",
    "kpack_split",
    "list",
    "list_summary",
    "max_uncompressed",
    "image_platform",
    "memmodel",
    "processors",
    "prune",
    "recompress",
    "select",
    "size",
    "verify",
]
