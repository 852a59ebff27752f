"""The EasyBuild hooks (``python/gfxkit/easybuild_hooks.py``) in a real ``eb`` run: EasyBuild
5.4.1 from PyPI and Lmod from Debian (``scripts/ensure-easybuild``), a recipe installing a HIP
library clang-19 built for gfx90a and gfx1100, checked by the installed ``gfxkit`` command.
Naming both targets the installation passes; a third fails it (or warns with
``GFXKIT_EB_ERROR_ON_MISSING=0``) naming the file and the target in the log; targets beyond the
list warn (fail with ``GFXKIT_EB_STRICT=1``); the recipe's ``gfxkit_sanity_ignore_files`` is
honoured."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import KERNELS, ROOT, run, tool

EBENV = ROOT / "target" / "ebenv"
LMOD = Path("/usr/share/lmod/lmod/libexec/lmod")
HOOKS = ROOT / "python" / "gfxkit" / "easybuild_hooks.py"

RECIPE = """easyblock = 'Tarball'
name = 'gfxkitdemo'
version = '1.0'
homepage = 'https://example.invalid/gfxkitdemo'
description = "A HIP library built by clang-19 for gfx90a and gfx1100"
toolchain = SYSTEM
sources = [SOURCE_TAR_GZ]
sanity_check_paths = {'files': ['lib/libk.so', 'lib/libplugin.so'], 'dirs': ['include']}
moduleclass = 'lib'
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory, gfxkit_bin):
    """The recipe's source tarball (two HIP libraries), the recipe, and eb's environment."""
    assert (EBENV / "bin" / "eb").is_file() and LMOD.is_file(), \
        "EasyBuild or Lmod is missing: run `bash scripts/ensure-easybuild`"
    d = tmp_path_factory.mktemp("eb")
    src = d / "k.hip"
    src.write_text(KERNELS.replace("PREFIX", "k"))
    obj = d / "k.o"
    run(tool("clang++"), "-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-fPIC", "-cuid=k",
        "--offload-arch=gfx90a", "--offload-arch=gfx1100", "-c", str(src), "-o", str(obj))
    top = d / "pkg" / "gfxkitdemo-1.0"
    (top / "lib").mkdir(parents=True)
    (top / "include").mkdir()
    (top / "include" / "k.h").write_text("void k_scale(float *, const float *, int);\n")
    run(tool("clang++"), "-fuse-ld=lld", "-shared", str(obj), "-o", str(top / "lib" / "libk.so"))
    shutil.copyfile(top / "lib" / "libk.so", top / "lib" / "libplugin.so")
    sources = d / "sources" / "g" / "gfxkitdemo"
    sources.mkdir(parents=True)
    with tarfile.open(sources / "gfxkitdemo-1.0.tar.gz", "w:gz") as t:
        t.add(top, arcname="gfxkitdemo-1.0")
    # The installed gfxkit command: the cargo binary under the name the hooks look for.
    bindir = d / "bin"
    bindir.mkdir()
    (bindir / "gfxkit").symlink_to(Path(gfxkit_bin).resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EASYBUILD_", "GFXKIT_EB"))}
    env.update(
        PATH=f"{EBENV / 'bin'}:{bindir}:/usr/bin:/bin",
        LMOD_CMD=str(LMOD),
        EASYBUILD_PREFIX=str(d / "eb"),
        EASYBUILD_SOURCEPATH=str(d / "sources"),
        EASYBUILD_MODULES_TOOL="Lmod",
        EASYBUILD_HOOKS=str(HOOKS),
        EASYBUILD_ALLOW_USE_AS_ROOT_AND_ACCEPT_CONSEQUENCES="1",
        EASYBUILD_TMPDIR=str(d / "tmp"),
    )
    return {"dir": d, "env": env}


def eb(site, targets: str, recipe_extra: str = "", **env) -> tuple:
    """Runs ``eb`` on the recipe; returns (exit code, output, build log text)."""
    recipe = site["dir"] / "gfxkitdemo-1.0.eb"
    recipe.write_text(RECIPE + recipe_extra)
    logs = site["dir"] / "eb" / "logs"
    out = subprocess.run(["eb", str(recipe), f"--amdgcn-capabilities={targets}", "--rebuild",
                          "--disable-cleanup-tmpdir", f"--tmp-logdir={logs}"],
                         capture_output=True, text=True, env={**site["env"], **env},
                         cwd=site["dir"])
    # The run's log (kept where --tmp-logdir says): the newest.
    found = sorted(logs.glob("easybuild-*.log"), key=lambda p: p.stat().st_mtime)
    assert found, out.stdout + out.stderr
    log = found[-1].read_text()
    return out.returncode, out.stdout + out.stderr, log


def test_both_targets_pass(site, tmp_path):
    code, out, log = eb(site, "gfx90a,gfx1100")
    assert code == 0, out
    assert "gfxkit sanity check of" in log and "2 files with device code, 2 pass, 0 failures" in log
    assert "COMPLETED: Installation ended successfully" in out
    # A census of the software tree rolls the install up in its report: one EasyBuild build of
    # gfxkitdemo 1.0 carrying both targets.
    import gfxkit

    software = site["dir"] / "eb" / "software"
    assert (software / "gfxkitdemo" / "1.0" / "lib" / "libk.so").is_file()
    r = gfxkit.census([str(software)], tmp_path / "census", require="gfx90a,gfx942", serial=True,
                      progress=False)
    assert r.errors == 0 and r.code_objects >= 4, r
    page = (tmp_path / "census" / "report.html").read_text()
    table = page.split("id='package-table'", 1)[1].split("</table>", 1)[0]
    row = table.split("<tr><td>gfxkitdemo</td><td>EasyBuild</td>", 1)[1].split("</tr>", 1)[0]
    cells = [c.split(">", 1)[1].split("</td>", 1)[0] for c in row.split("<td")[1:]]
    # builds, versions, with device code, device bytes, then gfx90a, gfx942 (required), gfx1100
    assert cells[:3] == ["1", "1", "1"] and cells[4:7] == ["1/1", "0/1", "1/1"], cells


def test_a_third_target_fails_naming_file_and_target(site):
    code, out, log = eb(site, "gfx90a,gfx1100,gfx942")
    assert code != 0
    assert "gfxkit sanity check failed (2)" in out
    assert "lib/libk.so: missing device code for gfx942" in log
    assert "lib/libplugin.so: missing device code for gfx942" in log
    # As a warning when asked.
    code, out, log = eb(site, "gfx90a,gfx1100,gfx942", GFXKIT_EB_ERROR_ON_MISSING="0")
    assert code == 0, out
    assert "WARNING: gfxkit sanity check: lib/libk.so: missing device code for gfx942" in out


def test_extra_targets_warn_or_fail_when_strict(site):
    code, out, log = eb(site, "gfx90a")
    assert code == 0, out
    assert "lib/libk.so: device code for targets beyond gfx90a: gfx1100" in log
    code, out, log = eb(site, "gfx90a", GFXKIT_EB_STRICT="1")
    assert code != 0 and "device code for targets beyond gfx90a: gfx1100" in out


def test_recipe_ignore_list_is_honoured(site):
    code, out, log = eb(site, "gfx90a,gfx1100,gfx942",
                        "gfxkit_sanity_ignore_files = ['lib/libplugin.so']\n")
    assert code != 0
    assert "lib/libk.so: missing device code for gfx942" in log
    assert "lib/libplugin.so: missing" not in log
    assert "1 ignored (lib/libplugin.so)" in log
