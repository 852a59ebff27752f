"""The work of one shard, run on a Dask worker (or in this process): every item read by the
native module with the GIL released (``gfxkit._gfxkit.census_rows_json``, a run of files in
one call, rows as JSON lines that pyarrow turns into the shard's tables: no Python object per
row), URLs downloaded to a scratch directory first and removed after, and the shard's rows
written atomically under its name. Nothing an input does makes the shard fail: an input that cannot be read or downloaded
is a row with its error."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from . import dataset
from .inputs import download, is_url, remove_download


def _scratch() -> str:
    """Where a worker downloads: its local directory when it runs under Dask, else the
    system's temporary directory."""
    try:
        from distributed import get_worker

        return os.path.join(get_worker().local_directory, "census-downloads")
    except (ImportError, ValueError):
        return os.path.join(tempfile.gettempdir(), "gfxkit-census-downloads")


def error_row(name: str, message: str, seconds: float = 0.0) -> Dict[str, Any]:
    """The input row of an input that could not be read."""
    return {
        "input": name,
        "size": 0,
        "sha256": None,
        "kind": "unreadable",
        "files": 0,
        "files_with_device_code": 0,
        "code_objects": 0,
        "device_bytes": 0,
        "uncompressed_bytes": 0,
        "nvidia_bytes": 0,
        "targets": [],
        "processors": [],
        "status": "error",
        "error": message,
        "seconds": seconds,
        "database_files": [],
        "database_libraries": [],
        "dead_units": [],
    }


def line(row: Dict[str, Any]) -> bytes:
    """A row as one JSON line (the form :func:`scan_item` returns rows in)."""
    return json.dumps(row).encode("ascii") + b"\n"


def worker_threads() -> Optional[int]:
    """The threads of the Dask worker this runs on (its tasks' share of the machine), None
    outside a worker."""
    try:
        from distributed import get_worker

        return int(get_worker().state.nthreads) or None
    except (ImportError, ValueError, AttributeError):
        return None


def scan_item(
    item: Dict[str, Any],
    scratch: Optional[str] = None,
    check: bool = False,
    scope: Any = None,
    threads: Optional[int] = None,
) -> Tuple[bytes, bytes]:
    """The rows of one item as JSON lines: ``(input rows, code-object rows)``, one input row per
    name (the item's and its aliases'). With ``check``, each compressed bundle's own hash is
    checked as it is decoded (a mismatch makes the input ``damaged``). ``scope`` (a
    ``_gfxkit.CensusScope``) is shared by the items read together: the kernel-database
    directories around them are listed once for all of them. Read on ``threads`` threads
    (default: a Dask worker's own, elsewhere one per core)."""
    from .. import _gfxkit

    if threads is None:
        threads = worker_threads()

    name, source = item["name"], item["source"]
    start = time.monotonic()
    if is_url(source):
        try:
            path, _ = download(source, scratch or _scratch(), item.get("sha256"))
        except RuntimeError as e:
            inputs, code_objects = line(error_row(name, str(e), time.monotonic() - start)), b""
        else:
            try:
                inputs, code_objects = _gfxkit.census_rows_json(
                    [(path, name, False)], check, scope, threads
                )
            finally:
                remove_download(path)
            inputs = line(dict(json.loads(inputs), seconds=time.monotonic() - start))
    else:
        inputs, code_objects = _gfxkit.census_rows_json(
            [(source, name, bool(item.get("beside")))], check, scope, threads
        )
    aliases = item.get("aliases") or ()
    if aliases:
        # The same content under other names: the rows of the one scanned, renamed; but a
        # file whose reading looked beside it (a split binary's archives, a library's kernel
        # databases) is read again where each copy lies: what lies there decides what it loads.
        row = json.loads(inputs)
        rows = [json.loads(r) for r in code_objects.splitlines()]
        beside = not is_url(source) and _read_beside(name, row, rows)
        for a in aliases:
            if beside and not is_url(a):
                i, c = _gfxkit.census_rows_json(
                    [(os.path.abspath(a), a, bool(item.get("beside")))], check, scope, threads
                )
                inputs += line(dict(json.loads(i), same_as=name))
                code_objects += c
            else:
                inputs += line(dict(_renamed(row, name, a), same_as=name))
                code_objects += b"".join(line(_renamed(r, name, a)) for r in rows)
    return inputs, code_objects


def _read_beside(name: str, row: Dict[str, Any], rows: Any) -> bool:
    """Whether the reading of the file ``name`` (its input row and code-object rows) looked at
    files beside it: it is a split binary (kpack wrappers, with or without code objects found)
    or a library that loads kernel databases from its directory."""
    return (
        any(r.get("container") == "kpack" and r.get("path") == name for r in rows)
        or any(d.get("container") == "kpack" and d.get("path") == name for d in row.get("dead_units") or ())
        or any(l.get("path") == name for l in row.get("database_libraries") or ())
    )


def _renamed(row: Dict[str, Any], old: str, new: str) -> Dict[str, Any]:
    out = dict(row)
    out["input"] = new
    p = out.get("path")
    if isinstance(p, str) and p.startswith(old):
        out["path"] = new + p[len(old):]
    e = out.get("error")
    if isinstance(e, str):
        out["error"] = e.replace(old, new)
    libraries = out.get("database_libraries")
    if libraries:
        out["database_libraries"] = [
            dict(l, path=new + l["path"][len(old):] if l["path"].startswith(old) else l["path"])
            for l in libraries
        ]
    dead = out.get("dead_units")
    if dead:
        out["dead_units"] = [
            dict(d, path=new + d["path"][len(old):] if d["path"].startswith(old) else d["path"])
            for d in dead
        ]
    files = out.get("database_files")
    if files:
        out["database_files"] = [json.dumps(_renamed_file(json.loads(f), old, new)) for f in files]
    return out


def _renamed_file(member: Dict[str, Any], old: str, new: str) -> Dict[str, Any]:
    """A kernel-database file of the input ``old`` (a document of the ``database_files``
    column), as the same file of ``new``: its path and the files it names."""
    def moved(p: str) -> str:
        return new + p[len(old):] if p.startswith(old) else p

    return dict(
        member,
        path=moved(member["path"]),
        map_files=[moved(f) for f in member.get("map_files") or []],
    )


def scan_shard(
    shard: Dict[str, Any], out: str, keep: bool = False, threads: Optional[int] = None
) -> Dict[str, Any]:
    """Reads every item of ``shard`` (``{"name", "items"}``, and ``"check"`` when compressed
    bundles' hashes are checked) on ``threads`` threads (default: a Dask worker's own, so
    that a worker of one thread uses one core; elsewhere one per core) and writes its rows to
    ``out`` (``dataset.write_shard``).
    Returns a summary: inputs, bytes, errors, device bytes; with ``keep``, also the tables
    written (``"tables"``), for a census run in this process to derive from without reading
    them back."""
    from .. import _gfxkit

    check = bool(shard.get("check"))
    if threads is None:
        threads = worker_threads()
    scope = _gfxkit.CensusScope()
    rows = []
    # Runs of files read in one native call each (the GIL released once for all of them);
    # downloads and inputs with other names one by one.
    run: list = []
    for item in shard["items"]:
        if is_url(item["source"]) or item.get("aliases"):
            if run:
                rows.append(_gfxkit.census_rows_json(run, check, scope, threads))
                run = []
            rows.append(scan_item(item, check=check, scope=scope, threads=threads))
        else:
            run.append((item["source"], item["name"], bool(item.get("beside"))))
    if run:
        rows.append(_gfxkit.census_rows_json(run, check, scope, threads))
    tables = dataset.write_shard(
        Path(out), shard["name"], b"".join(r[0] for r in rows), b"".join(r[1] for r in rows), check
    )
    return summary(shard["name"], tables, keep)


def summary(name: str, tables: Tuple[Any, Any], keep: bool = False) -> Dict[str, Any]:
    """What a shard's tables (``(code_objects, inputs)``, pyarrow) hold: inputs, bytes read
    (each content once), device bytes, errors; with ``keep``, the tables themselves and the
    shard's ``targets`` (:func:`dataset.targets_of`)."""
    co, inputs = tables
    cols = inputs.select(["same_as", "size", "device_bytes", "status"]).to_pydict()
    out = {
        "shard": name,
        "inputs": inputs.num_rows,
        "bytes": sum(s for a, s in zip(cols["same_as"], cols["size"]) if a is None),
        "device_bytes": sum(cols["device_bytes"]),
        "errors": sum(1 for s in cols["status"] if s != "ok"),
    }
    if keep:
        # The shard's own targets too, made here, where shards are read in parallel.
        out["tables"] = {"code_objects": co, "inputs": inputs, "targets": dataset.targets_of(co)}
    return out


def lost_item(shard: Dict[str, Any], item: Dict[str, Any], out: str, why: str) -> Dict[str, Any]:
    """Writes the shard of one item that kept killing the workers that read it: an error row
    for each of its names."""
    names = [item["name"], *item.get("aliases", ())]
    rows = b"".join(
        line(dict(error_row(n, f"{n}: {why}"), same_as=None if n == item["name"] else item["name"]))
        for n in names
    )
    # Read as the shard asked, so that a census continued with --check does not try it again.
    checked = bool(shard.get("check"))
    return summary(shard["name"], dataset.write_shard(Path(out), shard["name"], rows, b"", checked))
