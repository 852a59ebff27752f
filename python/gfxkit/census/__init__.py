"""``gfxkit.census``: which device code a whole fleet of files carries (a package index, an HPC
software stack, an organisation's images), scanned on Dask distributed and written as a Parquet
dataset with a report (``gfxkit census``; docs/census.md).

>>> import gfxkit
>>> result = gfxkit.census(["wheels/", "https://host/x.whl#sha256=..."], "out",
...                        require=["gfx90a", "gfx942"])          # doctest: +SKIP
>>> result.inputs, result.errors                                 # doctest: +SKIP

The module itself is callable: ``gfxkit.census(...)`` is :func:`census`. Importing it does not
import Dask or pyarrow; running a census needs them (``pip install 'gfxkit[census]'``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import dataset
from .inputs import expand, names

__all__ = ["census", "report", "Result", "CensusError"]

#: Inputs per shard on a Dask cluster unless told otherwise: up to CLUSTER_SHARD_SIZE, a
#: shard closed early at CLUSTER_SHARD_BYTES of input files, and fewer when the cluster's
#: threads would get fewer than four shards each. Each shard costs a task on the scheduler,
#: two Parquet files written by its worker and read back at the end: 30,000 small files on
#: two worker processes took 10.6 s in shards of 16 and 2.3 s in shards of 256, the derived
#: tables and report 2.6 s and 0.4 s after them. A worker that dies loses one shard's work.
CLUSTER_SHARD_SIZE = 256
CLUSTER_SHARD_BYTES = 256 << 20
#: Downloads per shard unless told otherwise (their sizes are not known before they are
#: read: a shard of downloads is closed at this many).
SHARD_URLS = 16
# A local run writes fewer, larger shards: no worker dies there, and each shard costs two
# Parquet files made (a writer and its compressors for every column) and synced (30,000
# small files on two threads: the shards written in 1.0 s in shards of 256, 0.85 s in
# shards of 1,024; 3,000 small files: 1.2 s in shards of 64, 0.8 s in shards of 256, when
# they were read back too). A shard is also closed at LOCAL_SHARD_BYTES of input, so that a
# local census stopped and started again reads little twice.
LOCAL_SHARD_SIZE = 1024
LOCAL_SHARD_BYTES = 1 << 30


class CensusError(RuntimeError):
    """A census that cannot run at all (no input, a dataset of another schema, no Dask)."""


class Result:
    """What a census did: ``out``, ``inputs`` (rows in the dataset), ``scanned`` (inputs read
    by this run), ``skipped`` (inputs of shards already done), ``errors`` (inputs whose status
    is not ``ok``), ``unreadable`` (those of them whose status is ``error``: what
    ``retry_errors`` reads again), ``code_objects``, ``device_bytes``, ``nvidia`` (inputs
    holding NVIDIA device code), ``seconds``."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def __repr__(self) -> str:
        return (
            f"<gfxkit.census.Result {self.out}: {self.inputs} inputs, "
            f"{self.code_objects} code objects, {self.errors} errors>"
        )


class _Progress:
    """Inputs done, bytes, rate and errors, on one line of a terminal."""

    def __init__(self, total: int, shown: bool) -> None:
        self.total, self.shown = total, shown
        self.inputs = self.bytes = self.errors = 0
        self.start = time.monotonic()
        self.last = 0.0

    def add(self, s: Dict[str, Any]) -> None:
        self.inputs += s["inputs"]
        self.bytes += s["bytes"]
        self.errors += s["errors"]
        now = time.monotonic()
        if self.shown and (now - self.last > 0.2 or self.inputs >= self.total):
            self.last = now
            rate = self.bytes / max(now - self.start, 1e-9)
            sys.stderr.write(
                f"\rcensus: {self.inputs}/{self.total} inputs, {_size(self.bytes)} read, "
                f"{_size(rate)}/s, {self.errors} errors   "
            )
            sys.stderr.flush()

    def close(self) -> None:
        if self.shown and self.total:
            sys.stderr.write("\n")


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _canonical_targets(required: Union[None, str, Sequence[str]]) -> List[str]:
    from .._gfxkit import TargetId

    if required is None:
        return []
    if isinstance(required, str):
        required = [required]
    out = []
    for r in required:
        for t in str(r).split(","):
            if t.strip():
                out.append(str(TargetId(t.strip())))
    return out


def _fresh(out: Path) -> None:
    for d in ("code_objects", "inputs", "_census"):
        shutil.rmtree(out / d, ignore_errors=True)
    for f in ("targets.parquet", "lacks.parquet", "report.html"):
        (out / f).unlink(missing_ok=True)


def _checked_rocm(rocm: Optional[str]) -> Optional[str]:
    """``rocm`` as given, once gfxkit has read it as a ROCm release (``6.2``, ``auto``)."""
    if rocm is None:
        return None
    from .. import _gfxkit

    try:
        _gfxkit.census_lacks([], [], [], [], [], [], rocm=str(rocm))
    except ValueError as e:
        raise CensusError(str(e)) from None
    return str(rocm)


@contextlib.contextmanager
def _no_gc_pauses() -> Iterator[None]:
    """No automatic garbage collection inside: the census's own steps (the plan, the derived
    tables, the report) build a few objects per input, tens of thousands that live until the
    step ends, which Python's collector would walk again and again (a tenth of a census of
    small files). Collection is restored after, as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def _arrow_threads(threads: Optional[int]) -> Iterator[None]:
    """pyarrow's own threads (its JSON reader, its compute) at ``threads`` inside, when given:
    a census told to use N workers uses N cores in every step. Restored after, as it was."""
    if not threads:
        yield
        return
    pa = dataset._pa()
    was = pa.cpu_count()
    pa.set_cpu_count(threads)
    try:
        yield
    finally:
        pa.set_cpu_count(was)


def _local_size(item: Dict[str, Any]) -> int:
    """Bytes of an item's local file (0 for a URL or a file that cannot be read now: its
    reading reports that), as :func:`expand` found it (its ``size``, taken out of the item:
    the plan does not keep it) or stated now."""
    if "size" in item:
        return item.pop("size") or 0
    source = item.get("source") or item["name"]
    if source.startswith(("http://", "https://")):
        return 0
    try:
        return os.stat(source).st_size
    except OSError:
        return 0


def _chunks(
    items: List[Dict[str, Any]], size: int, max_bytes: Optional[int], max_urls: Optional[int] = None
):
    """``items`` in order, in shards of ``size`` items, each closed earlier once its local
    files hold ``max_bytes`` or it holds ``max_urls`` downloads (when given)."""
    chunk: List[Dict[str, Any]] = []
    held = urls = 0
    for it in items:
        chunk.append(it)
        if max_bytes is not None:
            held += _local_size(it)
        else:
            it.pop("size", None)
        urls += (it.get("source") or it["name"]).startswith(("http://", "https://"))
        if (
            len(chunk) >= size
            or (max_bytes is not None and held >= max_bytes)
            or (max_urls is not None and urls >= max_urls)
        ):
            yield chunk
            chunk, held, urls = [], 0, 0
    if chunk:
        yield chunk


#: How a plan's new inputs are cut into shards: given how many there are, the inputs a shard
#: holds at most, and the bytes of local files and the downloads it is closed at (None: no
#: such limit).
Sizing = Callable[[int], Tuple[int, Optional[int], Optional[int]]]


def _plan(
    out: Path,
    items: List[Dict[str, Any]],
    required: List[str],
    sizing: Sizing,
    rocm: Optional[str] = None,
    check: bool = False,
) -> Dict[str, Any]:
    plan = dataset.load_plan(out) or {"version": dataset.SCHEMA_VERSION, "shards": [], "require": []}
    known = set(names(it for s in plan["shards"] for it in s["items"]))
    # A census started afresh: every item is new.
    new = [] if known else list(items)
    if known:
        for it in items:
            given = names([it])
            unknown = [n for n in given if n not in known]
            if len(unknown) == len(given):
                new.append(it)
            elif unknown:
                # Names of content already planned under another name (a census extended with
                # a copy): read again under the first of them.
                first = unknown[0]
                source = first if first.startswith(("http://", "https://")) else os.path.abspath(first)
                new.append({"name": first, "source": source, "sha256": it.get("sha256"),
                            "aliases": unknown[1:]})
    if new:
        size, max_bytes, max_urls = sizing(len(new))
        chunks = _chunks(new, max(1, int(size)), max_bytes, max_urls)
    else:
        chunks = iter(())
    for chunk in chunks:
        plan["shards"].append({"name": dataset.shard_name(names(chunk)), "items": chunk})
    if required:
        plan["require"] = required
    if rocm:
        plan["rocm"] = rocm
    if check:
        plan["check"] = True
    dataset.save_plan(out, plan)
    return plan


def _client(client: Any, scheduler: Optional[str], scheduler_file: Optional[str], workers: Optional[int]):
    """The Dask client to run on, and what to close after."""
    try:
        import distributed
    except ImportError as e:
        raise CensusError(
            "gfxkit census runs on Dask distributed: pip install 'gfxkit[census]' "
            "(dask, distributed, pyarrow)"
        ) from e
    if client is not None:
        return client, []
    if scheduler:
        c = distributed.Client(scheduler)
        return c, [c]
    if scheduler_file:
        c = distributed.Client(scheduler_file=scheduler_file)
        return c, [c]
    import logging

    cluster = distributed.LocalCluster(
        n_workers=workers or os.cpu_count() or 1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    c = distributed.Client(cluster)
    return c, [c, cluster]


def _threads(client: Any) -> int:
    """The threads of the cluster's workers now (0 when none has joined yet)."""
    try:
        return sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - a scheduler that cannot say: size shards as for none
        return 0


def _kept(summary: Dict[str, Any], held: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """``summary`` (of :func:`work.scan_shard` with ``keep``) without its tables, which go to
    ``held`` under the shard's name."""
    held[summary["shard"]] = summary.pop("tables")
    return summary


def _run_threads(
    pending: List[Dict[str, Any]],
    out: Path,
    progress: _Progress,
    workers: int,
    held: Dict[str, Dict[str, Any]],
) -> None:
    """Every pending shard on a pool of ``workers`` threads of this process: the readers run in
    Rust with the GIL released, so the threads read in parallel, with no scheduler or worker
    processes to start; their parallel steps (a package's members) share ``workers`` threads
    too, so that the census uses that many cores. The tables written are kept in ``held`` (by
    shard) for the derived tables. A shard that raises stops the census (as on Dask: an input
    never makes a shard fail, so this is the environment); the shards written stay written."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    from . import work

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="gfxkit-census")
    try:
        futures = {pool.submit(work.scan_shard, s, str(out), True, workers): s for s in pending}
        left = set(futures)
        while left:
            done, left = wait(left, return_when=FIRST_EXCEPTION)
            for f in done:
                try:
                    progress.add(_kept(f.result(), held))
                except Exception as e:
                    raise CensusError(f"shard {futures[f]['name']} failed: {e!r}") from e
    finally:
        # Stopped (an error, Ctrl-C): no new shard starts; those running finish their write.
        pool.shutdown(wait=True, cancel_futures=True)


def _task_key(shard: Dict[str, Any]) -> str:
    """The Dask key of a shard's task: its name, whether its bundles' hashes are checked and
    whether it is read again for its errors (the same shard read again with ``--check`` or
    ``--retry-errors`` is another task, never a result Dask still holds from the read
    before)."""
    return (
        f"gfxkit-census-{shard['name']}"
        + ("-checked" if shard.get("check") else "")
        + ("-retried" if shard.get("retry") else "")
    )


def _run_dask(client: Any, pending: List[Dict[str, Any]], out: Path, progress: _Progress) -> None:
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    from . import work

    futures = client.map(
        work.scan_shard,
        pending,
        out=str(out),
        key=[_task_key(s) for s in pending],
        retries=1,
    )
    by_key = {f.key: s for f, s in zip(futures, pending)}
    try:
        for f in as_completed(futures):
            try:
                progress.add(f.result())
            except KilledWorker:
                # Its workers kept dying (out of memory, killed): item by item.
                progress.add(_item_by_item(client, by_key[f.key], out))
            except Exception as e:
                # An input never makes a shard fail (it becomes a row): this is the
                # environment (gfxkit missing on a worker, OUT not writable there).
                raise CensusError(f"shard {by_key[f.key]['name']} failed on its worker: {e!r}") from e
            finally:
                f.release()
    finally:
        for f in futures:
            f.cancel()


def _item_by_item(client: Any, shard: Dict[str, Any], out: Path) -> Dict[str, Any]:
    """A shard whose task kept killing its workers: each item in a task of its own; an item
    whose task kills its workers too becomes error rows. The shard is written here, under its
    name."""
    from distributed.scheduler import KilledWorker

    from . import work

    check = bool(shard.get("check"))
    futures = client.map(
        work.scan_item,
        shard["items"],
        key=[f"{_task_key(shard)}-{i}" for i in range(len(shard["items"]))],
        retries=1,
        check=check,
    )
    results: Dict[int, Any] = {}
    suspects = []
    for i, f in enumerate(futures):
        try:
            results[i] = f.result()
        except KilledWorker:
            suspects.append(i)
        finally:
            f.release()
    # A worker's death counts against every task it held: each suspect alone, once more.
    for i in suspects:
        f = client.submit(
            work.scan_item, shard["items"][i], key=f"{_task_key(shard)}-{i}-solo", check=check
        )
        try:
            results[i] = f.result()
        except KilledWorker as e:
            item = shard["items"][i]
            rows = b""
            for n in [item["name"], *item.get("aliases", ())]:
                row = work.error_row(n, f"{n}: every worker that read it died ({e})")
                rows += work.line(dict(row, same_as=None if n == item["name"] else item["name"]))
            results[i] = (rows, b"")
        finally:
            f.release()
    inputs = b"".join(results[i][0] for i in range(len(shard["items"])))
    code_objects = b"".join(results[i][1] for i in range(len(shard["items"])))
    return work.summary(shard["name"], dataset.write_shard(out, shard["name"], inputs, code_objects, check))


def census(
    inputs: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]],
    out: Union[str, "os.PathLike[str]"],
    *,
    require: Union[None, str, Sequence[str]] = None,
    rocm: Optional[str] = None,
    check: bool = False,
    from_lists: Sequence[Union[str, "os.PathLike[str]"]] = (),
    index: Optional[str] = None,
    projects: Sequence[str] = (),
    client: Any = None,
    scheduler: Optional[str] = None,
    scheduler_file: Optional[str] = None,
    workers: Optional[int] = None,
    processes: bool = False,
    serial: bool = False,
    shard_size: Optional[int] = None,
    fresh: bool = False,
    retry_errors: bool = False,
    progress: Optional[bool] = None,
    report: bool = True,
) -> Result:
    """Scans every input and writes the census dataset under ``out`` (``gfxkit census``).

    Args:
        inputs: files, package members (``pkg.whl!lib/x.so``), packages, container images,
            directories (walked as ``gfxkit list -r`` walks them), globs, ``http(s)://`` URLs
            (a ``#sha256=`` fragment is checked).
        out: the dataset's directory (made when missing).
        require: targets every file should carry (``gfx90a,gfx942`` or a list): the
            ``lacks`` table and the report's savings.
        rocm: the ROCm release (``6.2``, or ``auto`` for the one installed here) whose
            runtime the ``lacks`` table answers for, by the rule of ``gfxkit check --rocm``:
            what that release cannot load does not count (a code-object version above its
            loader's, a generic target, CCOB version or kpack split it does not load), and a
            required processor its runtime does not know is lacking everywhere.
        check: check each compressed bundle's own hash (its MD5) as it is decoded: a mismatch
            makes the input ``damaged``. Without, the hash is not computed (every code object
            is still decoded and its SHA-256 taken): the census does not verify integrity,
            as ``gfxkit list`` without ``--check`` does not. A census started with ``check``
            keeps checking when continued; one continued with ``check`` reads again what it
            read without.
        from_lists: files naming more inputs, one a line.
        index, projects: every file of these projects in the simple index at ``index``
            (PEP 503 HTML or PEP 691 JSON, as PyPI serves them).
        client, scheduler, scheduler_file: run on an existing Dask cluster (a
            ``distributed.Client``, a scheduler's address, a scheduler file); with none, the
            census runs on this machine: ``workers`` threads of this process (default: one per
            core), the readers running in parallel with the GIL released. Given, ``workers`` is
            the cores the census uses in every step (the walk, a package's members, pyarrow's
            threads). On Dask, each task uses its worker's threads.
        processes: on this machine, a Dask ``LocalCluster`` of ``workers`` processes instead
            of threads: an input that takes down the process reading it (out of memory, say)
            becomes an error row instead of ending the census, at the cost of starting the
            cluster (seconds).
        serial: read every shard in this process, one after another, without threads or Dask.
        shard_size: inputs per shard (for inputs new to the dataset); by default up to 256 on
            a Dask cluster (a shard closed at 256 MiB of input files) and up to 1,024 on this
            machine (closed at 1 GiB), at most 16 downloads, and fewer when that would leave a
            worker thread fewer than four shards.
        fresh: start over: the dataset under ``out`` is removed first.
        retry_errors: read again the inputs whose row is an error (status ``error``: a
            download that failed, a file missing or changed while it was read, an input whose
            workers died); the shards that hold them are read again whole and replace their
            rows. ``damaged`` inputs (read, with errors in them) are not: reading them again
            finds the same.
        progress: a progress line on stderr (default: when stderr is a terminal).
        report: write ``out/report.html``.

    A census stopped at any point and run again with the same arguments continues where it
    stopped; run with more inputs, it adds them. Returns a :class:`Result`.
    """
    start = time.monotonic()
    loading = dataset.preload()
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out = Path(out)
    required = _canonical_targets(require)
    rocm = _checked_rocm(rocm)
    if fresh:
        _fresh(out)
    out.mkdir(parents=True, exist_ok=True)
    on_cluster = client is not None or bool(scheduler or scheduler_file)
    # The cores this machine's steps use when told (a worker a core); else one per core.
    cores = workers if workers and not on_cluster else None
    with _no_gc_pauses():
        items = expand(
            [os.fspath(i) for i in inputs],
            [os.fspath(f) for f in from_lists],
            index,
            list(projects),
            cores,
        )
    c, close = None, []
    # pyarrow's threads as told, from its import to the end (:func:`_arrow_threads`).
    arrow = contextlib.ExitStack()

    def sizing(n: int) -> Tuple[int, Optional[int], Optional[int]]:
        nonlocal c, close
        if shard_size is not None:
            return int(shard_size), None, None
        if on_cluster:
            # Connected to before the plan: its shards are sized by the cluster's threads.
            c, close = _client(client, scheduler, scheduler_file, workers)
            threads, cap, max_bytes = _threads(c), CLUSTER_SHARD_SIZE, CLUSTER_SHARD_BYTES
        else:
            threads = 1 if serial else (workers or os.cpu_count() or 1)
            cap, max_bytes = LOCAL_SHARD_SIZE, LOCAL_SHARD_BYTES
        # Enough shards for every thread to have some (a cluster with no worker yet, or one
        # that will grow: shards of the largest size).
        size = max(1, min(cap, -(-n // (4 * threads)))) if threads else cap
        return size, max_bytes, SHARD_URLS

    try:
        with _no_gc_pauses():
            plan = _plan(out, items, required, sizing, rocm, check)
        if not plan["shards"]:
            raise CensusError("no input: name files, directories, URLs, --from or --index")
        required = plan.get("require") or []
        rocm = plan.get("rocm")
        pending = [s for s in plan["shards"] if not dataset.shard_done(out, s["name"])]
        if plan.get("check"):
            # A census started without --check and continued with it: the shards read
            # unchecked are read again, checked, so that the whole dataset is.
            pending = [
                dict(s, check=True)
                for s in plan["shards"]
                if not dataset.shard_done(out, s["name"]) or not dataset.shard_checked(out, s["name"])
            ]
        if retry_errors:
            waiting = {s["name"] for s in pending}
            pending += [
                dict(s, retry=True, check=bool(plan.get("check")))
                for s in plan["shards"]
                if s["name"] not in waiting and dataset.shard_has_errors(out, s["name"])
            ]
        loading.join()
        dataset._pa()
        arrow.enter_context(_arrow_threads(cores))
        total = sum(len(names(s["items"])) for s in pending)
        bar = _Progress(total, sys.stderr.isatty() if progress is None else progress)
        # The tables of the shards written in this process, derived from as they are.
        held: Dict[str, Dict[str, Any]] = {}
        if pending:
            if serial:
                from . import work

                for s in pending:
                    bar.add(_kept(work.scan_shard(s, str(out), True), held))
            elif not on_cluster and not processes:
                _run_threads(pending, out, bar, workers or os.cpu_count() or 1, held)
            else:
                if c is None:
                    c, close = _client(client, scheduler, scheduler_file, workers)
                _run_dask(c, pending, out, bar)
    except BaseException:
        arrow.close()
        raise
    finally:
        for x in close:
            x.close()
    with arrow:
        bar.close()
        if all(dataset.shard_done(out, s["name"]) for s in plan["shards"]):
            dataset.remove_stale_temporaries(out)
        with _no_gc_pauses():
            tables = dataset.derive(out, required, rocm, held)
            if report:
                from .page import write_report

                write_report(out, tables, required)
        ins = tables["inputs"]
        import pyarrow.compute as pc

        return Result(
            out=out,
            inputs=ins.num_rows,
            scanned=total,
            skipped=ins.num_rows - total,
            errors=int(pc.sum(pc.not_equal(ins["status"], "ok")).as_py() or 0),
            unreadable=int(pc.sum(pc.equal(ins["status"], "error")).as_py() or 0),
            code_objects=tables["code_objects"].num_rows,
            device_bytes=int(pc.sum(ins["device_bytes"]).as_py() or 0),
            nvidia=int(pc.sum(pc.greater(ins["nvidia_bytes"], 0)).as_py() or 0),
            seconds=time.monotonic() - start,
        )


def report(
    out: Union[str, "os.PathLike[str]"],
    require: Union[None, str, Sequence[str]] = None,
    rocm: Optional[str] = None,
) -> Path:
    """Rebuilds ``out/report.html`` (and the derived tables) from the dataset under ``out``
    (``gfxkit census --report OUT``); ``require`` and ``rocm`` default to the census's own.
    Returns the report's path."""
    from .page import write_report

    out = Path(out)
    plan = dataset.load_plan(out)
    if plan is None and not (out / "inputs").is_dir():
        raise CensusError(f"{out}: no census dataset here (no inputs/ nor {dataset.PLAN})")
    required = _canonical_targets(require) or (plan or {}).get("require") or []
    rocm = _checked_rocm(rocm) or (plan or {}).get("rocm")
    tables = dataset.derive(out, required, rocm)
    return write_report(out, tables, required)


class _CallableModule(types.ModuleType):
    """``gfxkit.census(...)`` calls :func:`census`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Result:
        return census(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
