"""``gfxkit census`` (``python -m gfxkit census``): the command line of :func:`gfxkit.census`."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

USAGE_EPILOG = """\
Inputs: files, packages (wheels, conda, deb, rpm, tarballs), container images, package members
(PKG!MEMBER), directories (every file that may hold device code, as `gfxkit list -r` walks
them), globs, http(s) URLs (downloaded to a worker's scratch directory and removed after; a
#sha256= fragment is checked), --from LIST, and --index URL --project NAME... (every file of
those projects in a PEP 503/691 simple index).

Output (OUT/): code_objects/*.parquet (one row per code object), inputs/*.parquet (one row per
input, with its status and error), targets.parquet (input x target), packages.parquet (by
package file and EasyBuild/Spack install, across versions), lacks.parquet (with
--require), report.html. Stopped and run again with the same command, a census continues where
it stopped; with more inputs, it adds them; --retry-errors reads again the inputs that could not
be read; --fresh starts over. docs/census.md has the schema.

Examples:
  gfxkit census wheels/ -o out --require gfx90a,gfx942
  gfxkit census --index https://pypi.org/simple --project torch-rocm -o out
  gfxkit census --from images.txt --scheduler tcp://10.0.0.1:8786 -o out
  gfxkit census --report out

Exit codes: 0 done; 1 done, some inputs could not be read (rows with status error/damaged);
2 the census could not run."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gfxkit census",
        description="Scan device code across many files on Dask; write a Parquet dataset and a report.",
        epilog=USAGE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="files, directories, packages, images, globs, URLs")
    p.add_argument("-o", "--out", metavar="OUT", help="the dataset's directory")
    p.add_argument("--from", dest="from_lists", action="append", default=[], metavar="LIST",
                   help="a file naming inputs, one a line (repeatable)")
    p.add_argument("--index", metavar="URL", help="a PEP 503/691 simple index")
    p.add_argument("--project", dest="projects", action="append", default=[], metavar="NAME",
                   help="a project of --index (repeatable; NAME,NAME also works)")
    p.add_argument("--require", action="append", default=[], metavar="TARGETS",
                   help="targets every file should carry (gfx90a,gfx942,...)")
    p.add_argument("--rocm", metavar="VERSION",
                   help="the lacks for the runtime of this ROCm release (6.2, or auto), as check --rocm")
    p.add_argument("--check", action="store_true",
                   help="check each compressed bundle's MD5 hash as it is decoded (without, the census "
                        "does not verify integrity; every code object is still decoded and hashed); a "
                        "census continued with --check reads again what it read without")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (tcp://host:8786)")
    p.add_argument("--scheduler-file", metavar="FILE", help="a Dask scheduler file (dask-jobqueue, dask-mpi)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="on this machine: the cores the census uses, a thread reading shards on each "
                        "(default: one per core)")
    p.add_argument("--processes", action="store_true",
                   help="on this machine: a Dask LocalCluster of --workers processes instead of threads "
                        "(an input that takes its process down becomes an error row)")
    p.add_argument("--serial", action="store_true", help="read everything in this process, one input after another")
    p.add_argument("--shard-size", type=int, default=None, metavar="N", help="inputs per shard (default: on a Dask cluster up to 256 and 256 MiB of input, on this machine up to 1,024 and 1 GiB, at most 16 downloads, and fewer when that would leave a worker thread fewer than four shards)")
    p.add_argument("--fresh", action="store_true", help="start over: remove the dataset under OUT first")
    p.add_argument("--retry-errors", action="store_true",
                   help="read again the inputs whose row is an error (a failed download, a file missing "
                        "or changed while it was read, an input whose workers died): their shards are "
                        "read again whole and replace their rows (damaged inputs are not)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument("--report", metavar="OUT", dest="report_only",
                   help="rebuild OUT/report.html from an existing dataset and stop")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Runs ``gfxkit census`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    from . import CensusError, census, report

    try:
        if args.report_only:
            path = report(args.report_only, args.require or None, args.rocm)
            print(path)
            return 0
        if not args.out:
            parser().error("-o/--out OUT is required")
        projects = [x.strip() for p in args.projects for x in p.split(",") if x.strip()]
        if projects and not args.index:
            parser().error("--project needs --index URL")
        if args.index and not projects:
            parser().error("--index needs --project NAME")
        result = census(
            args.inputs,
            args.out,
            require=args.require or None,
            rocm=args.rocm,
            check=args.check,
            from_lists=args.from_lists,
            index=args.index,
            projects=projects,
            scheduler=args.scheduler,
            scheduler_file=args.scheduler_file,
            workers=args.workers,
            processes=args.processes,
            serial=args.serial,
            shard_size=args.shard_size,
            fresh=args.fresh,
            retry_errors=args.retry_errors,
            progress=False if args.no_progress else None,
        )
    except (CensusError, RuntimeError, OSError, ValueError) as e:
        print(f"gfxkit census: {e}", file=sys.stderr)
        return 2
    print(
        f"{result.inputs} inputs ({result.scanned} read now), {result.code_objects} code objects, "
        f"{result.device_bytes} device bytes, {result.errors} inputs with errors"
        + (f", {result.nvidia} with NVIDIA device code" if result.nvidia else "")
        + f": {result.out}"
    )
    if result.unreadable:
        print(
            f"gfxkit census: {result.unreadable} of them could not be read (status error); "
            "run the census again with --retry-errors to read them again",
            file=sys.stderr,
        )
    return 1 if result.errors else 0
