"""What the inputs of a census are builds of: package files (wheels, sdists, ``.deb``,
``.rpm``, conda), each a build of the package its file name names, and the files of software
installed by EasyBuild (EESSI included) or Spack, each install a build of the software its
directory names. ``packages.parquet`` rolls the census up by them (:func:`packages`): per
package (or software) and processor, how many of its builds carry code for it, and which do
not. The report's support by package is that table."""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple


def file_name(name: str) -> str:
    """An input by its file name when it is a URL (a download), percent-decoded
    (``torch-2.5.1+rocm6.2-cp311-....whl``), which says what it is where the whole address is
    mostly a storage path; any other input as given."""
    from urllib.parse import unquote, urlsplit

    if not name.startswith(("http://", "https://")):
        return name
    return unquote(urlsplit(name).path.rstrip("/").rsplit("/", 1)[-1]) or name


def file_names(names: Any) -> Any:
    """:func:`file_name` of every name of a pyarrow array: in Python for the URLs only (each
    distinct one once), the rest as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    urls = pc.unique(names.filter(pc.match_substring_regex(names, "^https?://")))
    if len(urls) == 0:
        return names
    shown = pa.array([file_name(u) for u in urls.to_pylist()], pa.string())
    return pc.coalesce(pc.take(shown, pc.index_in(names, value_set=urls)), names)


#: The file names of packages, by kind: the package's name and version in each.
PACKAGE_NAMES = (
    # Wheels: {distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl (PEP 427).
    r"^(?P<name>[^-/]+)-(?P<version>[^-/]+)(-[^-/]+)?-[^-/]+-[^-/]+-[^-/]+\.whl$",
    # Debian packages: {name}_{version}_{architecture}.deb.
    r"^(?P<name>[^_/]+)_(?P<version>[^_/]+)_[^_/]+\.deb$",
    # RPMs: {name}-{version}-{release}.{architecture}.rpm.
    r"^(?P<name>[^/]+)-(?P<version>[^-/]+-[^-/]+)\.[^.-/]+\.rpm$",
    # Conda packages: {name}-{version}-{build}.conda (or .tar.bz2).
    r"^(?P<name>[^/]+)-(?P<version>[^-/]+)-[^-/]+\.(conda|tar\.bz2)$",
    # Source distributions and release tarballs: {name}-{version}.tar.gz (a version starts
    # with a digit).
    r"^(?P<name>[^/]+?)-(?P<version>\d[^-/]*)\.(tar\.gz|tgz|tar\.xz|tar\.zst|zip)$",
)

#: The endings of the file names :data:`PACKAGE_NAMES` reads.
PACKAGE_ENDINGS = r"\.(whl|deb|rpm|conda|tar\.bz2|tar\.gz|tgz|tar\.xz|tar\.zst|zip)$"

#: Software installed by a package manager of HPC centres, by the path of its files: the
#: install's directory (``root``), name and version. EasyBuild (and EESSI, built by it):
#: ``.../software/<name>/<version>/...``, the last such part of the path (a version starts
#: with a digit); Spack's default layout: ``.../<name>-<version>-<32-character hash>/...``.
#: Each with a pattern every path of the layout holds, cheap to search for: only the paths
#: holding it are matched against the whole pattern (a tenth of the time on paths of neither).
INSTALL_LAYOUTS = (
    ("EasyBuild", r"/software/", r"^(?P<root>.*/software/(?P<name>[^/]+)/(?P<version>[0-9][^/]*))/"),
    (
        "Spack",
        r"-[a-z0-9]{32}/",
        r"^(?P<root>.*/(?P<name>[a-z0-9][a-z0-9_-]*?)-(?P<version>[0-9][^/]*)-[a-z0-9]{32})/",
    ),
)


@functools.lru_cache(maxsize=None)
def _package_patterns() -> List[Any]:
    return [re.compile(p) for p in PACKAGE_NAMES]


def package_of(name: str) -> Optional[Tuple[str, str]]:
    """The package a file name says it is, ``(name, version)`` (the name normalized as PEP 503
    does: lower case, runs of ``-_.`` as one ``-``), or None for a file that is no package (a
    library, a bundle, a directory). A URL is read by its file name."""
    base = file_name(name).rsplit("/", 1)[-1]
    for pattern in _package_patterns():
        m = pattern.match(base)
        if m:
            return re.sub(r"[-_.]+", "-", m.group("name")).lower(), m.group("version")
    return None


def builds(names: Any) -> List[Tuple[str, str, str, str, str]]:
    """For each input of ``names`` (a pyarrow string array) that is a package file or lies in
    an install of an HPC package manager: ``(input, layout, name, version, build)``. A package
    file (layout ``package``) is a build of its own (the build is the input); the files of one
    install (layout ``EasyBuild`` or ``Spack``) are one build, the install's directory. Other
    inputs are left out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(names, pa.ChunkedArray):
        names = names.combine_chunks()
    out: List[Tuple[str, str, str, str, str]] = []
    taken = set()
    for n in names.filter(pc.match_substring_regex(file_names(names), PACKAGE_ENDINGS)).to_pylist():
        p = package_of(n)
        if p:
            out.append((n, "package", p[0], p[1], n))
            taken.add(n)
    for layout, held, pattern in INSTALL_LAYOUTS:
        maybe = names.filter(pc.match_substring_regex(names, held))
        if len(maybe) == 0:
            continue
        found = pc.extract_regex(maybe, pattern)
        hit = pc.is_valid(found)
        if not pc.any(hit).as_py():
            continue
        got = found.filter(hit)
        for n, root, name, version in zip(
            maybe.filter(hit).to_pylist(),
            got.field("root").to_pylist(),
            got.field("name").to_pylist(),
            got.field("version").to_pylist(),
        ):
            if n not in taken:
                out.append((n, layout, name, version, root))
                taken.add(n)
    return out


@functools.lru_cache(maxsize=None)
def _generic_family() -> Dict[str, str]:
    """Each processor's generic target (``gfx942``: ``gfx9-4-generic``), from gfxkit's
    processor table."""
    from .. import _gfxkit

    return {r["name"]: r["generic_family"] for r in _gfxkit.processors() if r["generic_family"]}


def generic_family_of(processor: str) -> Optional[str]:
    """The generic target whose code the runtime loads on ``processor`` (``gfx942``:
    ``gfx9-4-generic``), or None."""
    return _generic_family().get(processor)


def _loadable_on(processor: str, carried: set) -> bool:
    """Whether a build carrying code for ``carried`` (processors, generic targets,
    ``amdgcnspirv``) has code the HIP runtime can load on ``processor``: its own, its generic
    target's, or SPIR-V (feature settings aside: ``lacks.parquet`` follows the whole rule)."""
    return (
        processor in carried
        or _generic_family().get(processor) in carried
        or (processor != "amdgcnspirv" and "amdgcnspirv" in carried)
    )


def packages(targets: Any, inputs: Any, required: Sequence[str], schema: Any) -> Any:
    """The ``packages`` table (``schema``): per package or installed software (``layout``,
    ``package``) and processor, its builds, versions, builds with device code and their device
    bytes, how many of those builds carry code the runtime can load on the processor
    (``builds_with``: its own, its generic target's or SPIR-V; ``builds_native``: its own) and
    which do not (``without``); a row for each processor one of its builds carries and for
    each required processor, and one with no processor for a package none of whose builds
    holds device code. From the ``targets`` and ``inputs`` tables."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = builds(inputs["input"])
    if not found:
        return schema.empty_table()
    of = {n: (layout, name, version, build) for n, layout, name, version, build in found}
    in_builds = pa.array(list(of), pa.string())
    present = targets.filter(pc.is_in(targets["input"], value_set=in_builds))
    # Per package, each build's processors (a build's files together).
    carried: Dict[Tuple[str, str], Dict[str, set]] = {}
    for i, p in zip(present["input"].to_pylist(), present["processor"].to_pylist()):
        layout, name, _, build = of[i]
        carried.setdefault((layout, name), {}).setdefault(build, set()).add(p)
    attrs = inputs.filter(pc.is_in(inputs["input"], value_set=in_builds))
    groups: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for n, db, c in zip(
        attrs["input"].to_pylist(), attrs["device_bytes"].to_pylist(), attrs["code_objects"].to_pylist()
    ):
        layout, name, version, build = of[n]
        g = groups.setdefault((layout, name), {"builds": set(), "versions": set(), "with": set(), "bytes": 0})
        g["builds"].add(build)
        g["versions"].add(version)
        if c:
            g["with"].add(build)
            g["bytes"] += db or 0
    required_procs = sorted({r.split(":")[0] for r in required})
    rows = []
    for (layout, name), g in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        base = {
            "layout": layout,
            "package": name,
            "builds": len(g["builds"]),
            "versions": len(g["versions"]),
            "builds_with_device_code": len(g["with"]),
            "device_bytes": g["bytes"],
        }
        by_build = carried.get((layout, name), {})
        names_ = sorted(set().union(*by_build.values(), required_procs))
        if not names_:
            rows.append(dict(base, processor=None, builds_with=0, builds_native=0, without=[]))
        for p in names_:
            native = {b for b, ps in by_build.items() if p in ps}
            loads = {b for b, ps in by_build.items() if _loadable_on(p, ps)}
            rows.append(
                dict(
                    base,
                    processor=p,
                    builds_with=len(loads),
                    builds_native=len(native),
                    without=sorted(g["with"] - loads),
                )
            )
    return pa.Table.from_pylist(rows, schema=schema)
