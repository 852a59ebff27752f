"""Type stub of the native module ``gfxkit._gfxkit`` (Rust, PyO3). Use the ``gfxkit``
package, which wraps these functions in typed results."""

import os
from typing import Any, Dict, List, Optional, Tuple, Union

#: A path, bytes, or bytes with the name of the file they are (``name=`` of the ``gfxkit``
#: functions).
_Source = Union[str, os.PathLike[str], bytes, bytearray, memoryview, Tuple[str, bytes]]

__version__: str
__build__: str
"""``gfxkit --version``'s text after the name: the version and the commit built from."""

def main(argv: List[Union[str, bytes]]) -> int:
    """Runs the ``gfxkit`` command on ``argv`` (``argv[0]`` the name it was invoked under),
    writing to this process's stdout and stderr; returns its exit status."""

#: What the functions returning a result give the ``gfxkit`` classes: the ``--json`` object,
#: the command's text output, its exit status, and for ``size`` the ``--html`` page.
_Answer = Tuple[Dict[str, Any], str, int, Optional[str]]

class TargetId:
    """An AMDGPU target ID (``gfx90a:sramecc+:xnack-``). ``str()`` is the canonical form."""

    def __new__(cls, text: str) -> "TargetId": ...
    @property
    def processor(self) -> str:
        """The processor name (aliases resolved)."""
    @property
    def features(self) -> Dict[str, bool]:
        """The settings named, ``{"sramecc": True, "xnack": False}``."""
    def is_compatible_with(self, device: "TargetId") -> bool:
        """Whether code built for this target ID runs on ``device``."""
    def __str__(self) -> str: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

_OneOrMany = Union[_Answer, List[_Answer]]

def list(src: _Source, check: bool = False, strict: bool = True) -> _OneOrMany:
    """The file object of ``gfxkit list --json``; a list of them for a package."""
def list_summary(src: _Source) -> _Answer:
    """``gfxkit list --summary --json``'s document for one file, package or image."""
def select(
    src: _Source, device: str, kpack_loader: str = "current", rocm: Optional[str] = None
) -> _OneOrMany:
    """The file object of ``gfxkit select --json``; a list of them for a package.

    ``bundles`` holds every loadable unit, as ``list`` does; for a split binary, each
    ``HIPK`` wrapper is a unit of ``format`` ``"kpack"`` with the loader's look-up
    (``wrapper``, ``kpack_key``, ``archive``, ``arch``, ``error_code``, ``missing``,
    ``package``), ``damaged`` (the damage that decides the answer, or None) and, when an
    archive tried was present but damaged, ``skipped``. ``rocm`` (``"6.2"``, ``"auto"``):
    the runtime of that ROCm release (what it cannot load is passed over, with the reason).
    """
def verify(src: _Source) -> _OneOrMany:
    """The file object of ``gfxkit verify --json``; a list of them for a package."""
def doctor(
    paths: List[str],
    devices: List[str],
    sysfs_root: Optional[str] = None,
    kpack_loader: str = "current",
    rocm: Optional[str] = None,
) -> _Answer:
    """``gfxkit doctor --json``'s report; a device ``auto`` reads the KFD topology (and,
    without ``rocm``, the installed ROCm release under ``sysfs_root``)."""
def check(
    paths: List[str],
    require: List[str],
    exactly: bool = False,
    kpack_loader: str = "current",
    rocm: Optional[str] = None,
) -> _Answer:
    """``gfxkit check --json``'s report."""
def diff(old: str, new: str) -> _Answer:
    """``gfxkit diff --json OLD NEW``'s report."""
def size(
    src: Union[_Source, List[str]],
    keep: List[str] = ...,
    by_library: bool = False,
    duplicates: bool = False,
    html: Optional[str] = None,
    check: bool = False,
) -> _Answer: ...
def extract(
    src: _Source, targets: List[str] = ..., ignore_hash: bool = False
) -> List[Tuple[str, bytes, int, int, int, str, Optional[str], str]]:
    """(id, data, offset, unit, entry, ext, member, file) per extracted entry."""
def inspect(src: _Source, demangle: bool = False) -> _Answer: ...
def kernels(
    src: _Source, target: Optional[str] = None, demangle: bool = False
) -> _Answer:
    """``gfxkit kernels --json FILE``'s object: ``{"kernels": [...], "errors": [...]}``."""
def kpack_split(
    src: str,
    output: str,
    group: str,
    kpack_dir: Optional[str] = None,
    kernel_name: Optional[str] = None,
    compression: str = "zstd",
    level: int = 3,
    drop_signature: bool = False,
    recursive: bool = False,
    overlays: bool = False,
) -> Dict[str, Any]:
    """``gfxkit kpack split --json``'s report; archives and binary written atomically."""
def kpack_inline(src: str, output: str, archives: List[str] = ...) -> Dict[str, Any]:
    """``gfxkit kpack inline --json``'s report; the fat binary written atomically."""
def prune(
    src: _Source,
    keep: List[str] = ...,
    drop: List[str] = ...,
    output: Optional[str] = None,
    in_place: bool = False,
    uncompressed: bool = False,
    ccob_version: Optional[int] = None,
    method: Optional[str] = None,
    level: Optional[int] = None,
    allow_empty: bool = False,
    drop_signature: bool = False,
) -> Dict[str, Any]:
    """The object ``gfxkit prune --json`` prints (``seconds`` included); for a package,
    ``members`` holds each rewritten member's report."""
def recompress(
    src: _Source,
    output: Optional[str] = None,
    in_place: bool = False,
    uncompressed: bool = False,
    ccob_version: Optional[int] = None,
    method: Optional[str] = None,
    level: Optional[int] = None,
    drop_signature: bool = False,
) -> Dict[str, Any]:
    """The object ``gfxkit recompress --json`` prints."""
def compatible(code_object_id: str, device_id: str) -> bool: ...
def max_uncompressed(limit: Optional[int] = None) -> int: ...
def image_platform(platform: Optional[str] = None) -> Optional[str]: ...
def processors() -> List[Dict[str, Any]]:
    """The rows ``gfxkit target list --json`` prints (with ``hardware`` and ``llvm``)."""
def memmodel(
    cpu: str,
    case: str,
    cumode: bool = False,
    tgsplit: bool = False,
    os: str = "amdhsa",
    skip_cache_invalidations: bool = False,
) -> List[str]: ...
def census_walk_each(paths: List[str]) -> List[Optional[List[str]]]:
    """The inputs of a census under each path, each walked on its own: files named, and in
    directories every file that may hold device code (the walk of ``gfxkit list -r``), sorted;
    None for a path that cannot be walked."""
def census_local_inputs(
    paths: List[str], threads: Optional[int] = None
) -> Tuple[List[str], List[str], List[Optional[int]], List[Tuple[int, List[int]]], List[bool]]:
    """The local inputs of a census given ``paths``, each walked on its own on every core as
    :func:`census_walk_each` walks it (a path that cannot be walked is an input as named):
    their names, sorted, each once; the absolute path of each (as ``os.path.abspath``
    makes it); the size of each regular file (None for the others); and the inputs holding the
    same bytes as an earlier one, ``(position, [positions of its copies])``, compared by
    identity, else by SHA-256 on every core where their sizes and first and last KiB tie; and
    whether each is a library whose kernel databases lie beside it in a directory under none
    of ``paths``, to be read with it (as ``gfxkit check`` reads a library named alone).
    With ``threads``, on that many threads instead of one per core."""
def census_publish(tmp: str, path: str) -> None:
    """Renames ``tmp``, a temporary file written beside ``path``, over ``path`` with the
    permissions gfxkit's outputs get: those of the file it replaces, else 0666 less the umask."""
class CensusScope:
    """What the inputs of a census read together share: each kernel-database directory their
    indexes are resolved against is listed once for all of them."""
    def __init__(self) -> None: ...
def census_rows_json(
    items: List[Tuple[str, str, bool]],
    check: bool = False,
    scope: Optional[CensusScope] = None,
    threads: Optional[int] = None,
) -> Tuple[bytes, bytes]:
    """``(inputs, code_objects)``: the census rows of ``items`` (``(path, name, beside)``, each
    input named ``name`` in its rows; with ``beside``, a library whose ``database_files`` also
    hold the kernel-database files beside it) as JSON lines, a line per input and a line per code object in
    the items' order, read with the GIL released once for all of them (never raises for a bad
    input: its row has ``status`` and ``error``); directories around them listed through
    ``scope`` (default: their own). With ``threads``, read on that many threads (one: nothing
    runs beside the reading) instead of one per core."""
def census_lacks(
    inputs: List[str],
    paths: List[str],
    units: List[int],
    archives: List[Optional[str]],
    entry_ids: List[str],
    required: List[str],
    containers: Optional[List[str]] = None,
    ccob_versions: Optional[List[Optional[int]]] = None,
    code_object_versions: Optional[List[Optional[int]]] = None,
    rocm: Optional[str] = None,
    database_inputs: Optional[List[str]] = None,
    database_files: Optional[List[str]] = None,
    library_inputs: Optional[List[str]] = None,
    library_paths: Optional[List[str]] = None,
    library_found: Optional[List[bool]] = None,
    dead_inputs: Optional[List[str]] = None,
    dead_paths: Optional[List[str]] = None,
    dead_units: Optional[List[int]] = None,
    dead_whys: Optional[List[str]] = None,
    dead_entries: Optional[List[List[str]]] = None,
    dead_header_bytes: Optional[List[Optional[int]]] = None,
    dead_containers: Optional[List[str]] = None,
) -> List[Dict[str, Any]]:
    """``[{"input", "path", "required", "why"}]``: what each file lacks of ``required``
    (with ``rocm``, on that ROCm release's runtime, as ``gfxkit check --rocm``), from the
    census's code-object columns; the kernel databases (``database_files``: the JSON documents
    of the inputs' ``database_files`` column, each with its input in ``database_inputs``) and
    the libraries that load them (the ``database_libraries`` column's paths and
    ``database_found``, each with its input in ``library_inputs``) judged as ``gfxkit check``
    judges them: each library with the databases it loads, each database no library loads
    as its directory; the units that load nothing (the ``dead_units`` column's paths, units,
    reasons, entry IDs, header lengths and containers, each with its input in
    ``dead_inputs``) lacking every target."""
