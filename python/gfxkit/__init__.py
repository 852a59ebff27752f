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
returns exactly the object ``gfxkit <command> --json`` prints for that file, ``str()`` the text
the command prints, ``exit_status`` its exit code (the results answering a question are true
exactly when it is 0), ``to_pandas()`` the table and ``_repr_html_()`` the view in a notebook.
Errors raise :class:`gfxkit.Error` subclasses carrying ``file``, ``entry`` and ``offset``
(:class:`UsageError`, a ``ValueError``, for a call the command would refuse as bad usage).

The ``gfxkit`` command the package installs (and ``python -m gfxkit``) is the Rust program itself.

>>> import gfxkit
>>> inv = gfxkit.list("libfoo.so")                      # doctest: +SKIP
>>> [e["target_id"] for b in inv.bundles for e in b["entries"]]   # doctest: +SKIP
>>> gfxkit.select("libfoo.so", "gfx90a:sramecc+:xnack-").bundles[0]["selected"]  # doctest: +SKIP
>>> str(gfxkit.TargetId("gfx90a:xnack+:sramecc-"))
'gfx90a:sramecc-:xnack+'
"""

from __future__ import annotations

import builtins as _builtins
import copy as _copy
import html as _html
import json as _json
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _gfxkit
from ._gfxkit import TargetId
from . import errors
from .errors import DeviceError, Error, FormatError, NoDeviceCodeError, TargetError, UsageError
from . import census  # noqa: E402 - callable: gfxkit.census(inputs, out, ...)

__version__: str = _gfxkit.__version__

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
"""What the functions read: a path (``pkg.whl!lib/x.so`` for a package member) or a file's
bytes. Bytes go by ``<bytes>`` in answers unless the function's ``name=`` gives the name of the
file they are (``TensileLibrary_gfx942.dat``, ``torch-2.7-cp312-linux_x86_64.whl``): a file
that is known by its name, such as a Tensile index, is then read as that file, and a package's
members are named ``name!member``. Bytes are read on their own: nothing beside them is."""


def _named(src: Any, name: Optional[str]) -> Any:
    """``src``, or bytes with the name they go by (``name=``)."""
    if name is None:
        return src
    if not isinstance(src, (bytes, bytearray, memoryview)):
        raise TypeError("name= names bytes; a path goes by itself")
    return (str(name), bytes(src))


def _cell(value: Any) -> str:
    """A table cell: scalars as they print, lists joined, objects as compact JSON."""
    if value is None:
        return ""
    seq = (_builtins.list, tuple)
    if isinstance(value, seq) and all(not isinstance(v, (dict, *seq)) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, (dict, *seq)):
        return _json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def _html_table(rows: List[Dict[str, Any]], columns: List[str]) -> str:
    head = "".join(f"<th>{_html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_html.escape(_cell(r.get(c)))}</td>" for c in columns) + "</tr>"
        for r in rows
    )
    return f'<table class="gfxkit"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


class _Report:
    """A result: the CLI's JSON object for it (``to_dict()``, and attributes for its keys), the
    command's text output for it (``str()``), the command's exit status (``exit_status``;
    the results that answer a question are true exactly when it is 0), an HTML view for
    notebooks and, where it is a table, ``to_pandas()``."""

    _keys: Sequence[str] = ()
    #: The key of the JSON object holding the table's rows (``to_pandas()``), if any.
    _rows_key: Optional[str] = None

    def __init__(self, made: Any) -> None:
        if isinstance(made, tuple):
            data, text, status, html = made
        else:
            data, text, status, html = made, None, None, None
        self._data = data
        self._text = text
        self._status = status
        self._html = html

    def to_dict(self) -> Dict[str, Any]:
        """The object ``gfxkit <command> --json`` prints (a deep copy)."""
        return _copy.deepcopy(self._data)

    @property
    def exit_status(self) -> Optional[int]:
        """The exit status the command has for this answer: 0 yes, 1 no, 2 an error."""
        return self._status

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("_data")
        if data is not None and name in data:
            return data[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._data == self._data  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        """The command's text output for this answer."""
        if self._text is None:
            return _json.dumps(self._data, indent=2)
        return self._text

    def _brief(self) -> str:
        return str(self._data.get("path", ""))

    def __repr__(self) -> str:
        brief = self._brief()
        return f"<gfxkit.{type(self).__name__}{' ' if brief else ''}{brief}>"

    def _rows(self) -> List[Dict[str, Any]]:
        if self._rows_key is None:
            raise TypeError(f"a {type(self).__name__} is not a table")
        return [r for r in self._data.get(self._rows_key) or [] if isinstance(r, dict)]

    def _columns(self) -> List[str]:
        columns: List[str] = []
        for r in self._rows():
            for k in r:
                if k not in columns:
                    columns.append(k)
        return columns

    def to_pandas(self) -> Any:
        """The table as a ``pandas.DataFrame``: one row per item, the columns the JSON keys of
        its rows (pandas is optional: installed separately)."""
        try:
            import pandas
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install pandas") from e
        return pandas.DataFrame(self._rows(), columns=self._columns())

    def _repr_html_(self) -> str:
        """The text output and, for a table, the table, as HTML (Jupyter and IPython)."""
        parts = [f"<pre>{_html.escape(str(self))}</pre>"]
        if self._rows_key is not None and self._rows():
            parts.append(_html_table(self._rows(), self._columns()))
        return f'<div class="gfxkit-{type(self).__name__}">' + "".join(parts) + "</div>"


class _Answer(_Report):
    """A result that answers a question: true exactly when the command would exit 0."""

    def __bool__(self) -> bool:
        return self._status == 0


class Inventory(_Report):
    """The device code of one file: its units (bundles, object bundles, code objects, offload
    images) with their entries, and the problems found (``gfxkit list``). ``to_pandas()``: one
    row per entry.

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

    def _rows(self) -> List[Dict[str, Any]]:
        return self.entries

    _rows_key = "bundles"

    def _brief(self) -> str:
        units = len(self._data.get("bundles") or [])
        return (f"{self._data.get('path', '')}: {units} unit{'s' if units != 1 else ''}, "
                f"{len(self.entries)} entries" + (" (error)" if self._data.get("error") else ""))


class Summary(_Report):
    """Which GPU targets the inputs ship and how many bytes of code objects each, per package,
    container image, site-packages distribution or file (``gfxkit list --summary``):
    ``packages`` (each with ``name``, ``kind``, ``files``, ``targets``, ``architectures``,
    ``device_bytes``; the rows of ``to_pandas()``) and ``without_device_code``."""

    _rows_key = "packages"

    def _brief(self) -> str:
        n = len(self._data.get("packages") or [])
        return f"{n} with device code, {len(self._data.get('without_device_code') or [])} without"


class Selection(_Answer):
    """Per unit, the entry the HIP runtime would load on a device (``gfxkit select``); true
    when every unit has one (the command's exit 0). ``to_pandas()``: one row per unit.

    Keys: ``path``, ``bundles`` (each with ``index``, ``kind``, ``section``, ``offset``,
    ``selected``, ``via``, ``reason``, ``needs``, ``nearest``), ``problems``, ``kpack``.
    """

    _rows_key = "bundles"

    @property
    def selected(self) -> List[Optional[str]]:
        """The entry ID chosen per unit (``None`` where none fits)."""
        return [b["selected"] for b in self._data["bundles"]]

    def _brief(self) -> str:
        return f"{self._data.get('path', '')}: {'selected' if self else 'not loadable'}"


class Verification(_Answer):
    """The verification of one file (``gfxkit verify``): ``ok``, ``bundles``, ``entries``
    and ``problems`` (each with ``bundle``, ``bundle_offset``, ``entry``, ``id``,
    ``message``; the rows of ``to_pandas()``); true when no problem is found."""

    _rows_key = "problems"

    def _brief(self) -> str:
        n = len(self._data.get("problems") or [])
        return f"{self._data.get('path', '')}: {'ok' if self else f'{n} problems'}"


class DoctorReport(_Answer):
    """Whether each library runs on each device (``gfxkit doctor``): ``devices`` and
    ``files`` (each with ``path``, ``runs_on``, ``targets``, ``needs``, ``missing``,
    ``errors``, and ``remedies``: ``[{"device", "kind", "text", "standing"}]`` where it does
    not run; the rows of ``to_pandas()``). True when every library runs on every device."""

    _rows_key = "files"

    def _brief(self) -> str:
        files = self._data.get("files") or []
        bad = sum(1 for f in files if not all(f.get("runs_on", {}).values()) or f.get("errors"))
        noun = "library" if len(files) == 1 else "libraries"
        return (f"{len(files)} {noun} on {', '.join(self._data.get('devices') or [])}: "
                f"{bad} cannot run")

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


class CheckReport(_Answer):
    """Whether every file carries code for every required target (``gfxkit check``):
    ``required``, ``exactly``, ``ok``, ``files`` (each with ``path``, ``ok``, ``targets``,
    ``missing``, ``why``, ``needs``, ``spirv``, ``extra``, ``errors``; the rows of
    ``to_pandas()``) and ``summary``. True when every file passes."""

    _rows_key = "files"

    def __bool__(self) -> bool:
        if self._status is not None:
            return self._status == 0
        return bool(self._data["ok"])

    @property
    def failed(self) -> List[Dict[str, Any]]:
        """The files that do not pass."""
        return [f for f in self._data["files"] if not f["ok"]]

    def _brief(self) -> str:
        files = self._data.get("files") or []
        return (f"require {','.join(self._data.get('required') or [])}: "
                f"{len(files) - len(self.failed)} of {len(files)} "
                f"{'file passes' if len(files) == 1 else 'files pass'}")


class DiffReport(_Report):
    """What changed in device code between two builds (``gfxkit diff``): ``old``, ``new``,
    ``equal``, ``files`` (each with ``path``, ``status``, ``added``, ``removed``,
    ``changed``, ``device_bytes``, ``code_objects``, ``kernels``; the rows of
    ``to_pandas()``), ``old_totals``, ``new_totals``, ``targets_added``, ``targets_removed``,
    ``errors``. True when the builds differ (the command's exit 1)."""

    _rows_key = "files"

    def __bool__(self) -> bool:
        return not self._data["equal"]

    @property
    def changed(self) -> List[Dict[str, Any]]:
        """The files whose device code differs (modified, added or removed)."""
        return [f for f in self._data["files"] if f["status"] != "same"]

    def _brief(self) -> str:
        what = "equal" if self._data.get("equal") else (
            "1 file differs" if len(self.changed) == 1 else f"{len(self.changed)} files differ")
        return f"{self._data.get('old', '')} -> {self._data.get('new', '')}: {what}"


class SizeReport(_Report):
    """Device bytes per architecture, file and bundle (``gfxkit size``): ``archs`` (the rows
    of ``to_pandas()``), ``files``, ``bundles``, ``stored``, ``uncompressed``, ``keep``,
    ``prune_saves``, ``errors``, and when asked ``libraries`` and ``duplicates``. In a
    notebook, the page ``size --html`` writes (a bar chart per architecture, a sortable table
    per file)."""

    _rows_key = "archs"

    def _brief(self) -> str:
        files = len(self._data.get("files") or [])
        return (f"{files} file{'' if files == 1 else 's'}, "
                f"{len(self._data.get('archs') or [])} targets, "
                f"{self._data.get('stored', 0)} bytes stored")

    def html(self) -> str:
        """The page ``gfxkit size --html`` writes for this report."""
        if self._html is None:
            raise ValueError("this report has no page")
        return self._html

    def _repr_html_(self) -> str:
        # The page in its own frame: its style and sorting script stay out of the notebook's.
        page = _html.escape(self.html(), quote=True)
        rows = len(self._data.get("archs") or []) + len(self._data.get("files") or [])
        height = min(1200, 260 + 28 * rows)
        return (f'<iframe class="gfxkit-size" srcdoc="{page}" '
                f'style="width:100%;height:{height}px;border:0"></iframe>')


class KernelListing(_Report):
    """Every kernel of every code object in a file (``gfxkit kernels``): ``kernels`` (each
    with ``file``, ``unit``, ``entry``, ``target_id``, ``name``, ``demangled``, ``symbol``,
    ``descriptor``, register counts, ``lds_bytes``, ``scratch_bytes``, spills,
    ``occupancy``, ``occupancy_limited_by``, ``args``, ...) and ``errors`` (code objects or
    units that could not be read, each naming the file). For a Tensile index
    (``TensileLibrary.dat``, or a lazy library's shard), ``solutions`` instead: per processor
    row and solution, ``name``, ``kernel_name`` (the function symbol it runs), ``processor``,
    ``row``, ``cu_count``, ``code_object`` (the file beside the index holding its kernel),
    ``present`` and the kernel's fields."""

    @property
    def solutions(self) -> List[Dict[str, Any]]:
        """A Tensile index's solutions (empty for other files)."""
        return self._data.get("solutions", [])

    @property
    def _rows_key(self) -> str:  # type: ignore[override]
        return "solutions" if self._data.get("solutions") else "kernels"

    def _brief(self) -> str:
        if self._data.get("solutions"):
            return f"{len(self._data['solutions'])} solutions"
        return f"{len(self._data['kernels'])} kernels"


class WriteReport(dict):
    """What ``prune``, ``recompress``, ``kpack_split`` and ``kpack_inline`` did: the report
    their command prints with ``--json`` (a ``dict``, so its keys read as before), the text
    the command prints for it (``str()``), and ``to_dict()`` as every result has."""

    def __init__(self, made: Any) -> None:
        if isinstance(made, tuple):
            data, text, status, _html = made
        else:
            data, text, status = made, None, 0
        super().__init__(data)
        self._text = text
        self._status = status

    @property
    def exit_status(self) -> Optional[int]:
        """The exit status the command has for this report: 0 (a failure raises)."""
        return self._status

    def __str__(self) -> str:
        return self._text if self._text is not None else dict.__repr__(self)

    def to_dict(self) -> Dict[str, Any]:
        """The report as a plain ``dict`` (a deep copy)."""
        return _copy.deepcopy(dict(self))

    def __repr__(self) -> str:
        out = self.get("output")
        return f"<gfxkit.WriteReport {'dry run' if out is None else out}>"


class CodeObject(_Report):
    """One AMDGPU code object (``gfxkit inspect``): its header (``target_id``, ``e_flags``,
    code-object version, ...), ``kernels`` (the rows of ``to_pandas()``: descriptor,
    registers, occupancy, arguments) and metadata; ``result["key"]`` reads a key."""

    _rows_key = "kernels"

    def _brief(self) -> str:
        return (f"{self._data.get('target_id') or '?'}: "
                f"{len(self._data.get('kernels') or [])} kernels")


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
        return _copy.deepcopy(self._row)

    def __repr__(self) -> str:
        return f"<gfxkit.Processor {self._row['name']}>"


def _each(made: Any, cls: Any) -> Any:
    """One result, or for a package a list of them (one per member)."""
    if isinstance(made, (tuple, dict)):
        return cls(made)
    return [cls(d) for d in made]


def list(  # noqa: A001
    src: Source, *, check: bool = False, strict: bool = True, name: Optional[str] = None
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
        name: the name of the file ``src``'s bytes are (:data:`Source`).
    """
    return _each(_gfxkit.list(_named(src, name), check, strict), Inventory)


def list_summary(src: Source, *, name: Optional[str] = None) -> Summary:
    """Which GPU targets ``src`` (a file, a package, or a directory searched as the CLI
    searches it) ships and how many bytes of code objects each, per package,
    container image, site-packages distribution (found through the ``*.dist-info/RECORD``
    that lists a file) or file, as ``gfxkit list --summary --json`` prints it:
    ``{"packages": [{"name", "kind", "files", "targets", "architectures", "device_bytes",
    "code_object_bytes"}], "without_device_code": [...]}`` (``targets`` and
    ``code_object_bytes`` uncompressed, ``device_bytes`` as stored). Unreadable members are left out (``list`` names them).
    ``name``: the name of the file ``src``'s bytes are (:data:`Source`)."""
    return Summary(_gfxkit.list_summary(_named(src, name)))


def select(
    src: Source,
    device: Union[str, TargetId],
    *,
    kpack_loader: str = "current",
    rocm: Optional[str] = None,
    cu_count: Optional[int] = None,
    name: Optional[str] = None,
) -> Union[Selection, "List[Selection]"]:
    """Which code object the HIP runtime would load on ``device`` from each unit of a file
    (``gfxkit select --device DEVICE --json``); for a package, one :class:`Selection` per
    member with device code; for a directory (searched as the CLI searches it), one per file
    with device code and per kernel database no library there loads. Binaries split by kpack are resolved as the kpack loader does
    (``kpack_loader="old"``: the first-match search of earlier ROCm 7 releases). A library on
    disk that loads a kernel database (``librocblas.so`` with ``rocblas/<version>/library``
    beside it) gets a unit of ``format`` ``"database"`` naming the ``files`` it opens on the
    device, or ``selected: None`` with the missing files in ``reason``. ``rocm`` (``"6.2"``,
    ``"auto"``): as the runtime of that ROCm release (``--rocm``). ``cu_count``: the device's
    number of compute units (``--cu-count``), for kernel databases with rows per count.
    ``name``: the name of the file ``src``'s bytes are (:data:`Source`)."""
    return _each(
        _gfxkit.select(_named(src, name), str(device), kpack_loader, rocm, cu_count), Selection
    )


def verify(
    src: Source, *, name: Optional[str] = None
) -> Union[Verification, "List[Verification]"]:
    """Checks a file's device code for damage and for what keeps the HIP runtime from loading
    it (``gfxkit verify --json``); for a package, one :class:`Verification` per member with
    device code (members without any, such as CPU-only libraries, are left out; the CLI names
    them under ``without_device_code``). Raises :class:`NoDeviceCodeError` for a file, or a
    package, without device code. ``name``: the name of the file ``src``'s bytes are
    (:data:`Source`)."""
    return _each(_gfxkit.verify(_named(src, name)), Verification)


def doctor(
    src: Union[None, str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]] = None,
    device: Union[str, TargetId, Iterable[Union[str, TargetId]]] = "auto",
    *,
    sysfs_root: Union[None, str, "os.PathLike[str]"] = None,
    kpack_loader: str = "current",
    rocm: Optional[str] = None,
    cu_count: Optional[int] = None,
) -> DoctorReport:
    """Whether the libraries under ``src`` (a path or several: files or directories; default
    ``$ROCM_PATH/lib``, else ``/opt/rocm/lib``) run on each ``device`` (one or several;
    ``gfxkit doctor --device ... --json``). The report is true when every library runs on
    every device (the command's exit 0).

    ``device="auto"`` (the default) reads this machine's GPUs from the KFD topology
    (``/sys/class/kfd/kfd/topology/nodes/*/properties``, or under ``sysfs_root``), honouring
    ``HSA_OVERRIDE_GFX_VERSION`` and ``HSA_XNACK`` as the CLI does; raises
    :class:`DeviceError` when it finds no GPU. Directories are searched as the CLI searches
    them (symbolic links followed, packages by member); binaries split by kpack are judged
    through their archives. ``rocm`` (``"6.2"``, ``"auto"``): as the runtime of that ROCm
    release (``--rocm``); with ``device="auto"`` and no ``rocm``, the installed release
    (read under ``sysfs_root``). ``cu_count``: the devices' number of compute units
    (``--cu-count``; with ``device="auto"`` read from the topology), for kernel databases with
    rows per count."""
    if src is None:
        paths = []
    elif isinstance(src, (str, os.PathLike)):
        paths = [src]
    else:
        paths = src
    devices = [device] if isinstance(device, (str, TargetId)) else device
    return DoctorReport(
        _gfxkit.doctor(
            [os.fspath(p) for p in paths],
            [str(d) for d in devices],
            None if sysfs_root is None else os.fspath(sysfs_root),
            kpack_loader,
            rocm,
            cu_count,
        )
    )


def check(
    src: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
    require: Union[str, TargetId, Iterable[Union[str, TargetId]]],
    *,
    exactly: bool = False,
    kpack_loader: str = "current",
    rocm: Optional[str] = None,
) -> CheckReport:
    """Whether every file with device code under ``src`` (a path or several: files, packages,
    directories)
    carries code that runs on every target of ``require`` (``gfxkit check --require ...
    --json``): a bare processor (``gfx90a``) is met by code for one xnack/sramecc setting
    (``needs`` names it), a target ID with settings asks for that setting; generic code and
    SPIR-V count as the HIP runtime would load them. With ``exactly``, targets no required
    target would load fail too (``extra``). A library is judged together with the kernel
database it loads (rocBLAS's ``rocblas/<version>/library``; ``database`` names it), and a
database no library loads on its own. Split binaries are judged through their kpack archives
as ``kpack_loader`` (``"current"`` or ``"old"``) finds them. The report is true when every
file passes. ``rocm`` (``"6.2"``, ``"auto"``): as the runtime of that ROCm release."""
    paths = [src] if isinstance(src, (str, os.PathLike)) else src
    if isinstance(require, (str, TargetId)):
        require = [require]
    wanted = [t.strip() for r in require for t in str(r).split(",") if t.strip()]
    return CheckReport(
        _gfxkit.check([os.fspath(p) for p in paths], wanted, exactly, kpack_loader, rocm)
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
    check: bool = False,
    name: Optional[str] = None,
) -> SizeReport:
    """Device bytes per architecture, file and bundle, and what keeping only ``keep`` would
    save (``gfxkit size --json [--keep ...] PATH...``). ``src`` is a file's bytes, or a path
    or several (files, directories searched as the CLI searches them, packages by member,
    members ``pkg!member``). ``by_library`` adds ``libraries`` (each library with the kernel
    databases it loads, ``--by library``); ``duplicates`` adds ``duplicates`` (identical code
    objects stored more than once, ``--duplicates``); ``html`` also writes there the page
    ``--html`` writes (a chart per architecture, a sortable table per file). Compressed
    bundles are counted from their headers and not verified unless ``check`` (``--check``:
    each decompressed in full and its hash checked, damage an error). ``name``: the name of
    the file ``src``'s bytes are (:data:`Source`)."""
    if not isinstance(src, (bytes, bytearray, memoryview, str, os.PathLike)):
        src = [os.fspath(p) for p in src]
    elif isinstance(src, (bytearray, memoryview)):
        src = bytes(src)
    src = _named(src, name)
    return SizeReport(
        _gfxkit.size(
            src,
            [str(k) for k in keep],
            by_library=by_library,
            duplicates=duplicates,
            html=None if html is None else os.fspath(html),
            check=check,
        )
    )


def extract(
    src: Source,
    target: Union[None, str, TargetId, Sequence[Union[str, TargetId]]] = None,
    *,
    ignore_hash: bool = False,
    name: Optional[str] = None,
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
    checked unless ``ignore_hash``. ``name``: the name of the file ``src``'s bytes are
    (:data:`Source`).
    """
    if target is None:
        targets: List[str] = []
    elif isinstance(target, (str, TargetId)):
        targets = [str(target)]
    else:
        targets = [str(t) for t in target]
    return [Entry(*t) for t in _gfxkit.extract(_named(src, name), targets, ignore_hash)]


def inspect(src: Source, demangle: bool = False, *, name: Optional[str] = None) -> CodeObject:
    """One AMDGPU code object, as ``gfxkit inspect --json`` prints it (header, ``e_flags``,
    target ID, kernels with their descriptor, occupancy and arguments, metadata);
    ``demangle=True`` as ``--demangle`` adds each kernel's demangled name. ``name``: the name
    of the file ``src``'s bytes are (:data:`Source`)."""
    return CodeObject(_gfxkit.inspect(_named(src, name), demangle))


def kernels(
    src: Source,
    target: Union[None, str, TargetId] = None,
    *,
    demangle: bool = False,
    name: Optional[str] = None,
) -> KernelListing:
    """Every kernel of every code object in a file or directory (searched as ``gfxkit
    kernels`` searches it): bundles, host binaries, archives,
    packages (each member), binaries split by kpack (through their archives) and ``.kpack``
    files, with registers, LDS, scratch, spills and occupancy (``gfxkit kernels --json``).
    With ``target``, only code objects whose target ID overlaps it; ``demangle=True`` adds
    the demangled names. A Tensile index (``TensileLibrary.dat``) gives its solutions, each
    resolved to the code object beside it that holds its kernel (``solutions``; ``target``
    keeps one processor's rows). Unreadable code objects are listed in ``errors``, not
    raised. ``name``: the name of the file ``src``'s bytes are (:data:`Source`)."""
    return KernelListing(
        _gfxkit.kernels(_named(src, name), None if target is None else str(target), demangle)
    )


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
) -> WriteReport:
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
    return WriteReport(
        _gfxkit.kpack_split(
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
    )


def kpack_inline(
    src: Union[str, "os.PathLike[str]"],
    output: Union[str, "os.PathLike[str]"],
    archives: Sequence[Union[str, "os.PathLike[str]"]] = (),
) -> WriteReport:
    """Turns a binary split by kpack and its archives back into a fat binary at ``output``
    (``gfxkit kpack inline``): archives are found through the binary's markers as the loader
    finds them, after ``archives``. The result is read back before it is written,
    atomically (``output``'s directory made when missing); it can be split again. Returns
    the report ``gfxkit kpack inline --json`` prints."""
    return WriteReport(
        _gfxkit.kpack_inline(os.fspath(src), os.fspath(output), [os.fspath(a) for a in archives])
    )


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
    name: Optional[str] = None,
) -> WriteReport:
    """Keeps (``keep``) or drops (``drop``) architectures in a host binary, archive or
    bundle (``gfxkit prune``). The result is written to ``output`` (or over the input with
    ``in_place``) through a temporary file that is read back and verified first; with
    neither, nothing is written. A prune that would leave no device code at all raises
    :class:`FormatError` unless ``allow_empty``; targets that match no entry are listed in
    the report's ``unmatched``. Returns the report ``prune --json`` prints (without
    ``seconds``). A package (wheel, conda, tarball; deb and rpm are refused) is pruned as the
    directory tree of its members would be: host libraries rewritten and verified, code
    objects, ``.kpack`` archives and kernel-database files of dropped targets left out, a
    Tensile index of every processor cut to the kept rows; it is written again around them
    (a wheel's ``RECORD`` and a conda package's ``info/paths.json`` updated). The report then
    lists the rewritten ``members`` and, as for a tree, the ``files`` kept, dropped or cut
    whole.
    Windows DLLs and EXEs are rewritten too; a signed one (Authenticode) is refused unless
    ``drop_signature``, which writes it unsigned. ``name``: the name of the file ``src``'s
    bytes are (:data:`Source`)."""
    return WriteReport(
        _gfxkit.prune(
            _named(src, name),
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
    name: Optional[str] = None,
) -> WriteReport:
    """Converts the compression of every bundle (``gfxkit recompress``; CCOB v2 zstd unless
    told otherwise), written as :func:`prune` writes. ``name``: the name of the file
    ``src``'s bytes are (:data:`Source`)."""
    return WriteReport(
        _gfxkit.recompress(
            _named(src, name),
            None if output is None else os.fspath(output),
            in_place,
            uncompressed,
            ccob_version,
            method,
            level,
            drop_signature,
        )
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
    (``load_atomic;as=global;ord=acquire;scope=agent``, keys as ``gfxkit memmodel --help``
    lists them: a fence names its ``mmra``) on ``cpu``, one instruction per string
    (``gfxkit memmodel --cpu CPU CASE``). A case that does not parse or is not valid on the
    processor, or an unknown processor or OS, raises :class:`UsageError` (a ``ValueError``)."""
    return _gfxkit.memmodel(cpu, case, cumode, tgsplit, os, skip_cache_invalidations)


__all__ = [
    "CheckReport",
    "CodeObject",
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
    "Source",
    "Summary",
    "TargetError",
    "TargetId",
    "UsageError",
    "Verification",
    "WriteReport",
    "census",
    "check",
    "compatible",
    "diff",
    "doctor",
    "errors",
    "extract",
    "image_platform",
    "inspect",
    "kernels",
    "kpack_inline",
    "kpack_split",
    "list",
    "list_summary",
    "max_uncompressed",
    "memmodel",
    "processors",
    "prune",
    "recompress",
    "select",
    "size",
    "verify",
]


def __dir__() -> List[str]:
    """The API (``__all__``) and ``__version__``: not the modules and typing names the package
    uses itself."""
    return sorted([*__all__, "__version__"])
