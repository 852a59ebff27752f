"""The AMD device-code sanity check for EasyBuild: ``eb --hooks=<this file>``.

Before EasyBuild's sanity check of every installation, checks every binary and library of the
install (``site-packages`` extension modules, kernel databases and kpack archives included, as
``gfxkit check`` reads them: generic targets count as the HIP runtime loads them) against the
AMD GPU targets of the build: ``--amdgcn-capabilities`` (or the recipe's
``amdgcn_capabilities``). The way EasyBuild's CUDA sanity check works:

* a file without code for a requested target fails the installation (with
  ``GFXKIT_EB_ERROR_ON_MISSING=0`` in the environment it is a warning);
* code for targets beyond the requested ones is a warning (with ``GFXKIT_EB_STRICT=1`` a
  failure);
* files can be ignored per recipe: ``gfxkit_sanity_ignore_files = ['lib/libfoo.so', ...]``
  (paths relative to the installation directory; this hooks file declares the parameter);
* a summary goes to the build log (and the failures and warnings to the terminal).

A recipe without AMD targets is not checked. The check runs the ``gfxkit`` command (``$GFXKIT``
when set, else ``gfxkit`` on ``PATH``): the Python running EasyBuild need not have gfxkit
installed. This file is self-contained, so it can be copied next to a site's other hooks
(EasyBuild takes one hooks file: call :func:`gfxkit_sanity_check` from the site's
``pre_sanitycheck_hook``). Find it with ``python -c 'import gfxkit.easybuild_hooks as h;
print(h.__file__)'``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from easybuild.framework.easyconfig import default as _default
from easybuild.tools.build_log import EasyBuildError, print_msg, print_warning
from easybuild.tools.config import build_option

# The recipe parameter naming files to leave out of the check (known to EasyBuild once this
# hooks file is loaded, as its own parameters are).
IGNORE_PARAMETER = "gfxkit_sanity_ignore_files"
if IGNORE_PARAMETER not in _default.DEFAULT_CONFIG:
    _default.DEFAULT_CONFIG[IGNORE_PARAMETER] = [
        [],
        "Files (relative to the installation directory) left out of gfxkit's AMD device-code "
        "sanity check",
        _default.OTHER,
    ]


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def _gfxkit() -> str:
    found = os.environ.get("GFXKIT") or shutil.which("gfxkit")
    if not found:
        raise EasyBuildError(
            "gfxkit sanity check: the gfxkit command is not on PATH (pip install gfxkit, or set "
            "$GFXKIT to it)"
        )
    return found


def _targets(eb) -> list:
    wanted = build_option("amdgcn_capabilities") or eb.cfg["amdgcn_capabilities"] or []
    if isinstance(wanted, str):
        wanted = wanted.split(",")
    return [t.strip() for t in wanted if t and t.strip()]


def gfxkit_sanity_check(eb) -> None:
    """Checks the installation of ``eb`` (an EasyBlock) as described in this module; raises
    ``EasyBuildError`` naming each file and missing target when the check fails."""
    targets = _targets(eb)
    if not targets:
        eb.log.info("gfxkit sanity check: no AMDGCN capabilities requested, nothing checked")
        return
    strict = _flag("GFXKIT_EB_STRICT", False)
    error_on_missing = _flag("GFXKIT_EB_ERROR_ON_MISSING", True)
    installdir = os.path.realpath(eb.installdir)
    # Paths compared as the files they are: EasyBuild's lib64 is a link to lib.
    ignored = {
        os.path.realpath(os.path.join(installdir, p)) for p in (eb.cfg[IGNORE_PARAMETER] or [])
    }
    cmd = [_gfxkit(), "check", "--require", ",".join(targets), "--exactly", "--json", installdir]
    eb.log.info("gfxkit sanity check: %s", " ".join(cmd))
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode == 2 and not run.stdout.strip():
        raise EasyBuildError("gfxkit sanity check failed to run: %s", run.stderr.strip())
    try:
        report = json.loads(run.stdout)
    except ValueError as e:
        raise EasyBuildError("gfxkit sanity check: unreadable output of %s: %s", cmd[0], e)
    files = report.get("files") or []
    if not files:
        eb.log.info("gfxkit sanity check: no file with AMD device code in %s", installdir)
        print_msg("gfxkit sanity check: no AMD device code installed", log=eb.log)
        return

    failures, warnings, passed, skipped = [], [], 0, []
    for f in files:
        path = f["path"]
        outer, _, member = path.partition("!")
        on_disk = os.path.realpath(outer)
        shown = path
        if on_disk.startswith(installdir + os.sep):
            shown = os.path.relpath(on_disk, installdir) + (f"!{member}" if member else "")
        if on_disk in ignored:
            skipped.append(shown)
            continue
        for error in f.get("errors") or []:
            failures.append(f"{shown}: {error}")
        missing = f.get("missing") or []
        if missing:
            why = f.get("why") or {}
            detail = "; ".join(why.get(t, t) for t in missing)
            msg = f"{shown}: missing device code for {', '.join(missing)} ({detail})"
            (failures if error_on_missing else warnings).append(msg)
        extra = f.get("extra") or []
        if extra:
            msg = f"{shown}: device code for targets beyond {','.join(targets)}: {', '.join(extra)}"
            (failures if strict else warnings).append(msg)
        if not missing and not f.get("errors") and not (strict and extra):
            passed += 1

    def count(n: int, noun: str) -> str:
        return f"{n} {noun}" + ("" if n == 1 else "s")

    summary = (
        f"gfxkit sanity check of {installdir} for {','.join(targets)}: "
        f"{count(len(files), 'file')} with device code, {passed} "
        f"{'passes' if passed == 1 else 'pass'}, {count(len(failures), 'failure')}, "
        f"{count(len(warnings), 'warning')}"
        + (f", {len(skipped)} ignored ({', '.join(skipped)})" if skipped else "")
    )
    eb.log.info(summary)
    for w in warnings:
        eb.log.warning("gfxkit sanity check: %s", w)
        print_warning("gfxkit sanity check: %s" % w, log=eb.log)
    for e in failures:
        eb.log.error("gfxkit sanity check: %s", e)
    print_msg(summary, log=eb.log)
    if failures:
        raise EasyBuildError(
            "gfxkit sanity check failed (%d): %s", len(failures), "\n".join(failures)
        )


def pre_sanitycheck_hook(self, *args, **kwargs):
    """EasyBuild's hook before the sanity check: :func:`gfxkit_sanity_check`."""
    gfxkit_sanity_check(self)
