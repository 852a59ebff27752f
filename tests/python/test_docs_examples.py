"""Every Python example of README.md and docs/*.md (a fenced ``python`` block) and the command
examples that need the Python package (``gfxkit census``) run here, on the real inputs
``scripts/ensure-real-inputs`` fetches and clang-19 builds; the other command examples run in
``crates/gfxkit/tests/docs_examples.rs``. Every block is either run or listed in ``NOT_RUN``
with the reason it cannot run here; a block in neither fails, and so does a listed one the docs
no longer hold."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gfxkit
from conftest import ROOT

REAL = ROOT / "target" / "real"
WHEEL = "torch_scatter_rocm-2.1.2.post7-cp311-cp311-manylinux_2_32_x86_64.whl"

# A block is named by its document and its first line.
README_BLOCK = ("README.md", "import gfxkit")
NOT_RUN = {
    ("docs/census.md", "# census_job.py"):
        "a Slurm job: test_census.py submits it to a Slurm cluster it starts "
        "(test_slurm_runner_in_a_real_allocation)",
    ("docs/census.md", "from dask.distributed import Client"):
        "submits Slurm jobs: test_census.py runs it against a Slurm cluster it starts "
        "(test_slurm_cluster_submits_worker_jobs_that_retire)",
    ("docs/integrations.md", "import importlib.util, os"):
        "an EasyBuild hooks file, run by `eb`: test_easybuild.py runs the hooks in EasyBuild",
}
# The command examples this file runs (the Rust test lists them as run here).
COMMANDS = {
    ("docs/census.md", "gfxkit census wheels/ /opt/rocm/lib -o out --require gfx90a,gfx942,gfx1100"),
}


def documents() -> list:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def python_blocks() -> dict:
    """(document, first line) -> the block's code, for every fenced python block."""
    out = {}
    for doc in documents():
        name = str(doc.relative_to(ROOT))
        for code in re.findall(r"^```python\n(.*?)^```", doc.read_text(), re.S | re.M):
            key = (name, code.strip().splitlines()[0].strip())
            assert key not in out, f"two Python blocks of {name} begin alike: {key[1]}"
            out[key] = code
    return out


def command_lines() -> set:
    """(document, line) for every fenced command example that runs `gfxkit census`."""
    out = set()
    for doc in documents():
        name = str(doc.relative_to(ROOT))
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", doc.read_text(), re.S | re.M):
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                if line.startswith("gfxkit census"):
                    out.add((name, line))
    return out


def test_every_python_block_is_run_or_excused():
    blocks = python_blocks()
    known = {README_BLOCK, ("docs/census.md", "import gfxkit")} | set(NOT_RUN)
    unknown = set(blocks) - known
    assert not unknown, f"Python examples neither run nor excused in this test: {unknown}"
    gone = known - set(blocks)
    assert not gone, f"listed here but no longer in the docs: {gone}"
    assert command_lines() == COMMANDS


@pytest.fixture()
def census_dir(tmp_path, monkeypatch):
    """The census examples' inputs: wheels/ (the torch-scatter-rocm wheel) and opt/rocm/lib
    (Debian's librocrand); the working directory."""
    wheel = REAL / WHEEL
    assert wheel.is_file(), f"{wheel} is missing: run `bash scripts/ensure-real-inputs`"
    (tmp_path / "wheels").mkdir()
    shutil.copyfile(wheel, tmp_path / "wheels" / WHEEL)
    lib = tmp_path / "opt" / "rocm" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(REAL / "librocrand.so.1.1", lib / "librocrand.so.1.1")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_census_python_example_runs(census_dir, capsys):
    code = python_blocks()[("docs/census.md", "import gfxkit")]
    exec(compile(code, "docs/census.md", "exec"), {})
    printed = capsys.readouterr().out.split()
    # r.inputs, r.code_objects, r.errors: the wheel read, its code objects, no errors.
    assert int(printed[0]) >= 1 and int(printed[1]) > 0 and printed[2] == "0", printed
    assert (census_dir / "out" / "report.html").is_file()


def test_census_command_example_runs(census_dir, gfxkit_bin):
    (_, line), = COMMANDS
    args = line.split()[1:]
    args[args.index("/opt/rocm/lib")] = "opt/rocm/lib"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    for cmd in ([gfxkit_bin, *args], [sys.executable, "-m", "gfxkit", *args]):
        shutil.rmtree(census_dir / "out", ignore_errors=True)
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        # librocrand 5.3 has no gfx942 or gfx1100 code: the census records what it lacks,
        # and exits 0 (a census is a report, not a gate).
        assert out.returncode == 0, (cmd, out.stdout, out.stderr)
        assert (census_dir / "out" / "report.html").is_file(), cmd
