"""The work of one shard, run on a Dask worker (or in this process): every item read by the
native module with the GIL released (``gfxkit._gfxkit.census_rows``), URLs downloaded to a
scratch directory first and removed after, and the shard's rows written atomically under its
name. Nothing an input does makes the shard fail: an input that cannot be read or downloaded
is a row with its error."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

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
        "targets": [],
        "processors": [],
        "status": "error",
        "error": message,
        "seconds": seconds,
    }


def scan_item(item: Dict[str, Any], scratch: Optional[str] = None):
    """The rows of one item: ``(input rows, code-object rows)``, one input row per name (the
    item's and its aliases')."""
    from .. import _gfxkit

    name, source = item["name"], item["source"]
    start = time.monotonic()
    if is_url(source):
        try:
            path, _ = download(source, scratch or _scratch(), item.get("sha256"))
        except RuntimeError as e:
            row = error_row(name, str(e), time.monotonic() - start)
            rows = {"input": row, "code_objects": []}
        else:
            try:
                rows = _gfxkit.census_rows(path, name)
            finally:
                remove_download(path)
            rows["input"]["seconds"] = time.monotonic() - start
    else:
        rows = _gfxkit.census_rows(source, name)
    inputs = [dict(rows["input"], same_as=None)]
    code_objects = list(rows["code_objects"])
    for alias in item.get("aliases", ()):
        # The same content under another name: the rows of the one scanned, renamed.
        inputs.append(dict(_renamed(rows["input"], name, alias), same_as=name))
        code_objects.extend(_renamed(r, name, alias) for r in rows["code_objects"])
    return inputs, code_objects


def _renamed(row: Dict[str, Any], old: str, new: str) -> Dict[str, Any]:
    out = dict(row)
    out["input"] = new
    p = out.get("path")
    if isinstance(p, str) and p.startswith(old):
        out["path"] = new + p[len(old):]
    e = out.get("error")
    if isinstance(e, str):
        out["error"] = e.replace(old, new)
    return out


def scan_shard(shard: Dict[str, Any], out: str) -> Dict[str, Any]:
    """Reads every item of ``shard`` (``{"name", "items"}``) and writes its rows to ``out``
    (``dataset.write_shard``). Returns a summary: inputs, bytes, errors, device bytes."""
    inputs: List[Dict[str, Any]] = []
    code_objects: List[Dict[str, Any]] = []
    for item in shard["items"]:
        i, c = scan_item(item)
        inputs.extend(i)
        code_objects.extend(c)
    dataset.write_shard(Path(out), shard["name"], inputs, code_objects)
    return summary(shard["name"], inputs)


def summary(name: str, inputs: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "shard": name,
        "inputs": len(inputs),
        "bytes": sum(r["size"] for r in inputs if r.get("same_as") is None),
        "device_bytes": sum(r["device_bytes"] for r in inputs),
        "errors": sum(1 for r in inputs if r["status"] != "ok"),
    }


def lost_item(shard: Dict[str, Any], item: Dict[str, Any], out: str, why: str) -> Dict[str, Any]:
    """Writes the shard of one item that kept killing the workers that read it: an error row
    for each of its names."""
    names = [item["name"], *item.get("aliases", ())]
    rows = [dict(error_row(n, f"{n}: {why}"), same_as=None if n == item["name"] else item["name"]) for n in names]
    dataset.write_shard(Path(out), shard["name"], rows, [])
    return summary(shard["name"], rows)
