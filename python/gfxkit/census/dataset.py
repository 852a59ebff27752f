"""The census dataset on disk: the Parquet schemas, shards written atomically, the plan that
names every shard, and the tables derived from the shards (``targets``, ``lacks``).

Layout of ``OUT/``::

    code_objects/<shard>.parquet   one row per code object
    inputs/<shard>.parquet         one row per input (written last: a shard is done when
                                   its inputs file exists)
    targets.parquet                input x target: code objects and bytes
    lacks.parquet                  with a required list: what each file lacks
    report.html                    the report
    _census/plan.json              the shards and their inputs, the required targets
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence

if TYPE_CHECKING:
    import threading

#: The version of the dataset's schema, in every file's metadata (``gfxkit.census.schema``).
SCHEMA_VERSION = 4

PLAN = "_census/plan.json"


def preload() -> "threading.Thread":
    """Imports the pyarrow modules a census writes and derives with (pyarrow, its JSON reader,
    Parquet, compute: about 0.07 s) on a thread of its own, so that they load while the inputs
    are walked and planned (native work that runs without the GIL) rather than after, in the
    first shards. Join it before reading: an import that failed is raised there by
    :func:`_pa`, with what to install."""
    import threading

    def load() -> None:
        try:
            import pyarrow.compute  # noqa: F401
            import pyarrow.json  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            pass

    t = threading.Thread(target=load, name="gfxkit-census-import", daemon=True)
    t.start()
    return t


def _pa():
    try:
        import pyarrow as pa  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "gfxkit census needs pyarrow: pip install 'gfxkit[census]'"
        ) from e
    return pa


def code_object_schema():
    """The schema of ``code_objects/*.parquet``."""
    pa = _pa()
    return _with_meta(
        pa.schema(
            [
                ("input", pa.string()),
                ("path", pa.string()),
                ("member", pa.string()),
                ("layer", pa.string()),
                ("container", pa.string()),
                ("ccob_version", pa.uint16()),
                ("unit", pa.uint32()),
                ("unit_offset", pa.uint64()),
                ("entry", pa.uint32()),
                ("name", pa.string()),
                ("archive", pa.string()),
                ("entry_id", pa.string()),
                ("target_id", pa.string()),
                ("processor", pa.string()),
                ("features", pa.string()),
                ("xnack", pa.string()),
                ("sramecc", pa.string()),
                ("generic", pa.bool_()),
                ("code_object_version", pa.uint8()),
                ("stored_bytes", pa.uint64()),
                ("uncompressed_bytes", pa.uint64()),
                ("sha256", pa.string()),
                ("kernels", pa.uint32()),
            ]
        ),
        "code_objects",
    )


def input_schema():
    """The schema of ``inputs/*.parquet``."""
    pa = _pa()
    return _with_meta(
        pa.schema(
            [
                ("input", pa.string()),
                ("same_as", pa.string()),
                ("size", pa.uint64()),
                ("sha256", pa.string()),
                ("kind", pa.string()),
                ("files", pa.uint32()),
                ("files_with_device_code", pa.uint32()),
                ("code_objects", pa.uint32()),
                ("device_bytes", pa.uint64()),
                ("uncompressed_bytes", pa.uint64()),
                ("nvidia_bytes", pa.uint64()),
                ("targets", pa.list_(pa.string())),
                ("processors", pa.list_(pa.string())),
                ("status", pa.string()),
                ("error", pa.string()),
                ("seconds", pa.float64()),
                ("database_files", pa.list_(pa.string())),
                (
                    "database_libraries",
                    pa.list_(pa.struct([("path", pa.string()), ("database_found", pa.bool_())])),
                ),
                (
                    "dead_units",
                    pa.list_(
                        pa.struct(
                            [
                                ("path", pa.string()),
                                ("unit", pa.uint32()),
                                ("container", pa.string()),
                                ("why", pa.string()),
                                ("entries", pa.list_(pa.string())),
                                ("header_bytes", pa.uint64()),
                            ]
                        )
                    ),
                ),
                ("shard", pa.string()),
            ]
        ),
        "inputs",
    )


def targets_schema():
    """The schema of ``targets.parquet`` (the input x target matrix, long form)."""
    pa = _pa()
    return _with_meta(
        pa.schema(
            [
                ("input", pa.string()),
                ("target_id", pa.string()),
                ("processor", pa.string()),
                ("code_objects", pa.uint64()),
                ("stored_bytes", pa.uint64()),
                ("uncompressed_bytes", pa.uint64()),
            ]
        ),
        "targets",
    )


def packages_schema():
    """The schema of ``packages.parquet`` (the census by package and installed software,
    :func:`builds.packages`)."""
    pa = _pa()
    return _with_meta(
        pa.schema(
            [
                ("layout", pa.string()),
                ("package", pa.string()),
                ("processor", pa.string()),
                ("builds", pa.uint64()),
                ("versions", pa.uint64()),
                ("builds_with_device_code", pa.uint64()),
                ("device_bytes", pa.uint64()),
                ("builds_with", pa.uint64()),
                ("builds_native", pa.uint64()),
                ("without", pa.list_(pa.string())),
            ]
        ),
        "packages",
    )


def lacks_schema():
    """The schema of ``lacks.parquet``."""
    pa = _pa()
    return _with_meta(
        pa.schema(
            [
                ("input", pa.string()),
                ("path", pa.string()),
                ("required", pa.string()),
                ("why", pa.string()),
            ]
        ),
        "lacks",
    )


def _with_meta(schema, table: str):
    from .. import __version__

    return schema.with_metadata(
        {
            "gfxkit.census.schema": str(SCHEMA_VERSION),
            "gfxkit.census.table": table,
            "gfxkit.version": __version__,
        }
    )


def shard_name(names: Iterable[str]) -> str:
    """A shard's name, derived from the names of its inputs (the same inputs, the same name)."""
    h = hashlib.sha256()
    for n in sorted(names):
        h.update(n.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def _atomic_path(final: Path) -> Path:
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".gfxkit-{os.getpid()}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    return Path(tmp)


def _publish(tmp: Path, final: Path) -> None:
    """Renames the written temporary file ``tmp`` over ``final`` with the permissions
    gfxkit's outputs get (0666 less the umask, or those of the file it replaces): the
    temporary file was made readable by its owner alone."""
    from .. import _gfxkit

    _gfxkit.census_publish(str(tmp), str(final))


def write_table(table, final: Path) -> None:
    """Writes ``table`` to ``final`` as Parquet (zstd, statistics) through a temporary file in
    the same directory, synced and renamed into place. zstd's level 3: on a census's rows
    (digests and paths, mostly dictionary-encoded) level 7 saved 1% of the bytes and cost a
    third more time to write."""
    import pyarrow.parquet as pq

    tmp = _atomic_path(final)
    try:
        pq.write_table(table, tmp, compression="zstd", compression_level=3, write_statistics=True)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        _publish(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(text: str, final: Path) -> None:
    """Writes ``text`` to ``final`` atomically (temporary file, fsync, rename)."""
    tmp = _atomic_path(final)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        _publish(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def rows_table(lines: bytes, schema):
    """The rows of JSON ``lines`` (an object a line, as :func:`gfxkit.census.work.scan_item`
    writes them) as a table of ``schema``: keys the schema lacks are ignored, columns a row
    lacks are its nulls. Parsed by pyarrow, without the GIL."""
    pa = _pa()
    if not lines:
        return schema.empty_table()
    import io

    import pyarrow.json as pj

    table = pj.read_json(
        io.BytesIO(lines),
        # One block (a block must hold whole lines; a shard's rows are small), on this
        # thread: the shards already run in parallel.
        read_options=pj.ReadOptions(block_size=max(1 << 20, len(lines)), use_threads=False),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    return pa.Table.from_arrays([table[n] for n in schema.names], schema=schema)


#: Key of the metadata of a shard's inputs file that says its compressed bundles' hashes were
#: checked as they were decoded (``--check``).
CHECKED = b"gfxkit.checked"


def write_shard(out: Path, shard: str, inputs: bytes, code_objects: bytes, checked: bool = False):
    """Writes one shard from its rows as JSON lines: its code objects, then its inputs (the
    mark that it is done; with ``checked``, marked as read with every compressed bundle's hash
    checked). Returns the tables written, ``(code_objects, inputs)``."""
    pa = _pa()
    co = rows_table(code_objects, code_object_schema())
    schema = input_schema()
    ins = rows_table(inputs, schema)
    at = schema.get_field_index("shard")
    ins = ins.set_column(at, schema.field(at), pa.array([shard] * ins.num_rows, pa.string()))
    if checked:
        ins = ins.replace_schema_metadata({**(ins.schema.metadata or {}), CHECKED: b"1"})
    write_table(co, out / "code_objects" / f"{shard}.parquet")
    write_table(ins, out / "inputs" / f"{shard}.parquet")
    return co, ins


def remove_stale_temporaries(out: Path) -> int:
    """Removes the temporary files of writes that were killed (``.gfxkit-<pid>.*.tmp`` in the
    dataset's directories); called once every shard is done. Returns how many."""
    n = 0
    for d in (out, out / "code_objects", out / "inputs", out / "_census"):
        if d.is_dir():
            for p in d.glob(".gfxkit-*.tmp"):
                try:
                    p.unlink()
                    n += 1
                except FileNotFoundError:
                    pass
    return n


def shard_done(out: Path, shard: str) -> bool:
    """Whether the shard's inputs file (written last) exists."""
    return (out / "inputs" / f"{shard}.parquet").is_file()


def shard_checked(out: Path, shard: str) -> bool:
    """Whether the shard was read with every compressed bundle's hash checked (``--check``):
    its inputs file says so. False for a shard not done and for a file that does not read."""
    pa = _pa()
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(out / "inputs" / f"{shard}.parquet").metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return meta.get(CHECKED) == b"1"


def shard_has_errors(out: Path, shard: str) -> bool:
    """Whether a finished shard holds an input row with status ``error`` (what
    ``retry_errors`` reads again). The column's statistics answer for most shards (all ``ok``)
    without reading it."""
    pa = _pa()
    import pyarrow.parquet as pq

    path = out / "inputs" / f"{shard}.parquet"
    try:
        f = pq.ParquetFile(path)
        col = f.schema_arrow.get_field_index("status")
        groups = range(f.metadata.num_row_groups)
        stats = [f.metadata.row_group(g).column(col).statistics for g in groups]
        if all(s is not None and s.has_min_max and not s.min <= "error" <= s.max for s in stats):
            return False
        return "error" in f.read(columns=["status"]).column("status").to_pylist()
    except (OSError, pa.ArrowException):
        # Not readable: not done either (read again as any shard not done).
        return False


def load_plan(out: Path) -> Optional[Dict[str, Any]]:
    p = out / PLAN
    if not p.is_file():
        return None
    with open(p, encoding="utf-8") as f:
        plan = json.load(f)
    if plan.get("version") != SCHEMA_VERSION:
        raise RuntimeError(
            f"{p}: a census of schema version {plan.get('version')} (this gfxkit writes "
            f"{SCHEMA_VERSION}); start over with --fresh"
        )
    return plan


def save_plan(out: Path, plan: Dict[str, Any]) -> None:
    # Compact: a census of a million inputs plans a million items. Keys in the order the
    # plan made them (the same inputs, the same plan): sorting each item's keys took a
    # third of the encoding.
    write_text(json.dumps(plan, separators=(",", ":")), out / PLAN)


def read_table(out: Path, table: str, held: Optional[Dict[str, Dict[str, Any]]] = None):
    """The rows of every finished shard's ``table`` (``code_objects`` or ``inputs``), as one
    pyarrow Table (shards whose inputs file is missing are left out), in the order of the
    shards' names. ``held`` maps shards to the tables this process wrote for them
    (``{shard: {"code_objects": ..., "inputs": ...}}``, as :func:`write_shard` returned them):
    those are taken as they are instead of being read back from their files."""
    pa = _pa()
    import pyarrow.parquet as pq

    schema = code_object_schema() if table == "code_objects" else input_schema()
    d = out / table
    done = [p for p in sorted(d.glob("*.parquet")) if shard_done(out, p.stem)] if d.is_dir() else []
    held = held or {}
    parts, files = [], []

    def read_files():
        if files:
            # Consecutive files read as one dataset: pyarrow reads them on its threads.
            parts.append(pq.read_table(files, schema=schema))
            files.clear()

    for p in done:
        t = held.get(p.stem, {}).get(table)
        if t is None:
            files.append(str(p))
        else:
            read_files()
            # The schema's own metadata, as a file read back with it has.
            parts.append(t.replace_schema_metadata(schema.metadata))
    read_files()
    if not parts:
        return schema.empty_table()
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def targets_of(co):
    """The ``targets`` rows (:func:`targets_schema`) of code-object rows ``co`` (pyarrow): per
    input and target ID, its processor, code objects and bytes; unsorted."""
    pa = _pa()
    import pyarrow.compute as pc

    grouped = (
        co.filter(pc.is_valid(co["target_id"]))
        .group_by(["input", "target_id", "processor"])
        .aggregate(
            [
                ("entry_id", "count"),
                ("stored_bytes", "sum"),
                ("uncompressed_bytes", "sum"),
            ]
        )
    )
    return pa.Table.from_arrays(
        [
            grouped["input"],
            grouped["target_id"],
            grouped["processor"],
            grouped["entry_id_count"].cast(pa.uint64()),
            grouped["stored_bytes_sum"].cast(pa.uint64()),
            grouped["uncompressed_bytes_sum"].cast(pa.uint64()),
        ],
        schema=targets_schema(),
    )


def _held_parts(out: Path, held: Optional[Dict[str, Dict[str, Any]]], table: str) -> Optional[List[Any]]:
    """The ``table`` this process made for every finished shard (from ``held``, in the order
    of the shards' names), or None when some finished shard's is not held (a shard written
    by an earlier run or another process)."""
    if not held:
        return None
    d = out / "inputs"
    done = [p.stem for p in sorted(d.glob("*.parquet")) if shard_done(out, p.stem)] if d.is_dir() else []
    parts = [held.get(name, {}).get(table) for name in done]
    return None if any(p is None for p in parts) else parts


def derive(
    out: Path,
    required: Sequence[str],
    rocm: Optional[str] = None,
    held: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """Writes the derived tables from the finished shards: ``targets.parquet``,
    ``packages.parquet`` (by package and installed software: :mod:`.builds`) and, with
    ``required``, ``lacks.parquet`` (with ``rocm``, what each file lacks on that ROCm
    release's runtime, by the rule of ``gfxkit check --rocm``). ``held``: the tables of the
    shards this process wrote, not read back (:func:`read_table`). Returns the tables
    (pyarrow) for the report."""
    pa = _pa()
    import pyarrow.compute as pc

    from .. import _gfxkit

    co = read_table(out, "code_objects", held)
    ins = read_table(out, "inputs", held)
    # An input's rows are all in one shard: the shards' own targets, where this process made
    # them as it wrote the shards, are the dataset's.
    parts = _held_parts(out, held, "targets")
    targets = (
        (pa.concat_tables(parts) if parts else targets_schema().empty_table())
        if parts is not None
        else targets_of(co)
    ).sort_by([("input", "ascending"), ("target_id", "ascending")])
    write_table(targets, out / "targets.parquet")
    from .builds import packages as by_package

    packages = by_package(targets, ins, required, packages_schema())
    write_table(packages, out / "packages.parquet")
    lacks = None
    lacks_file = out / "lacks.parquet"
    if required:
        # The kernel-database files, each with its input: databases are judged by them.
        db_files = ins["database_files"]
        db_libraries = ins["database_libraries"]
        # The bundles that load nothing: they lack every target.
        dead = ins["dead_units"]
        found = _gfxkit.census_lacks(
            co["input"].to_pylist(),
            co["path"].to_pylist(),
            co["unit"].to_pylist(),
            co["archive"].to_pylist(),
            co["entry_id"].to_pylist(),
            list(required),
            containers=co["container"].to_pylist(),
            ccob_versions=co["ccob_version"].to_pylist(),
            code_object_versions=co["code_object_version"].to_pylist(),
            rocm=rocm,
            database_inputs=pc.take(ins["input"], pc.list_parent_indices(db_files)).to_pylist(),
            database_files=pc.list_flatten(db_files).to_pylist(),
            library_inputs=pc.take(ins["input"], pc.list_parent_indices(db_libraries)).to_pylist(),
            library_paths=pc.struct_field(pc.list_flatten(db_libraries), "path").to_pylist(),
            library_found=pc.struct_field(pc.list_flatten(db_libraries), "database_found").to_pylist(),
            dead_inputs=pc.take(ins["input"], pc.list_parent_indices(dead)).to_pylist(),
            dead_paths=pc.struct_field(pc.list_flatten(dead), "path").to_pylist(),
            dead_units=pc.struct_field(pc.list_flatten(dead), "unit").to_pylist(),
            dead_whys=pc.struct_field(pc.list_flatten(dead), "why").to_pylist(),
            dead_entries=pc.struct_field(pc.list_flatten(dead), "entries").to_pylist(),
            dead_header_bytes=pc.struct_field(pc.list_flatten(dead), "header_bytes").to_pylist(),
            dead_containers=pc.struct_field(pc.list_flatten(dead), "container").to_pylist(),
        )
        ls = lacks_schema()
        lacks = pa.Table.from_pylist(found, schema=ls).sort_by(
            [("input", "ascending"), ("path", "ascending"), ("required", "ascending")]
        )
        write_table(lacks, lacks_file)
    elif lacks_file.exists():
        lacks_file.unlink()
    return {
        "code_objects": co,
        "inputs": ins,
        "targets": targets,
        "packages": packages,
        "lacks": lacks,
        "rocm": rocm,
    }
