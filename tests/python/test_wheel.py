"""The wheel is the whole tool: installed into a fresh virtual environment with no Rust
toolchain on ``PATH``, its ``gfxkit`` command and ``python -m gfxkit`` are the program the cargo
build makes (the same output bytes, stderr and exit codes, on the real inputs of
``scripts/ensure-real-inputs``), it is the drop-in ``clang-offload-bundler`` under that name,
and ``auditwheel show`` accepts its manylinux tag.

The wheel is ``GFXKIT_WHEEL`` when set (``scripts/test`` builds one and installs it for every
Python test), else built here with ``maturin build``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

REAL = ROOT / "target" / "real"
# The small real inputs (the large rocBLAS .deb and aiter wheel are read by other tests).
INPUTS = [
    "librocrand.so.1.1",
    "librocrand1_5.3.3-4_amd64.deb",
    "torch_scatter_rocm-2.1.2.post7-cp311-cp311-manylinux_2_32_x86_64.whl",
]
# PATH inside the fresh environment: its own bin and the system's, no cargo or rustc.
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("GFXKIT_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    subprocess.run([sys.executable, "-m", "maturin", "build", "--locked", "--quiet", "-o",
                    str(out)], cwd=ROOT, env=env, check=True)
    (built,) = out.glob("gfxkit-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment (the system's python3) with only the wheel installed."""
    d = tmp_path_factory.mktemp("venv") / "env"
    python = shutil.which("python3", path=SYSTEM_PATH)
    assert python, "python3 is missing: run `bash scripts/ensure-python`"
    subprocess.run([python, "-m", "venv", str(d)], check=True)
    subprocess.run([str(d / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
                    "--no-deps", "--disable-pip-version-check", str(wheel)], check=True,
                   env=fresh_env(d))
    return d


def fresh_env(venv: Path) -> dict:
    path = f"{venv / 'bin'}:{SYSTEM_PATH}"
    assert shutil.which("cargo", path=path) is None and shutil.which("rustc", path=path) is None
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CARGO", "RUSTUP", "VIRTUAL_ENV", "PYTHON"))}
    env.update(PATH=path, VIRTUAL_ENV=str(venv))
    return env


def real(name: str) -> Path:
    path = REAL / name
    assert path.is_file(), f"{path} is missing: run `bash scripts/ensure-real-inputs`"
    return path


def same(venv: Path, gfxkit_bin: str, args, via=("gfxkit",)) -> subprocess.CompletedProcess:
    """Runs ``args`` with the installed command (``via``) and the cargo binary; asserts equal
    stdout, stderr and exit codes; returns the installed command's run."""
    # The same terminal width for help text (an inherited COLUMNS could differ).
    env = dict(fresh_env(venv), COLUMNS="100")
    mine = subprocess.run([*via, *args], capture_output=True, env=env, cwd=ROOT)
    theirs = subprocess.run([gfxkit_bin, *args], capture_output=True, cwd=ROOT,
                            env=dict(os.environ, COLUMNS="100"))
    assert mine.returncode == theirs.returncode, (args, mine.stderr, theirs.stderr)
    assert mine.stdout == theirs.stdout, args
    assert mine.stderr == theirs.stderr, args
    return mine


COMMANDS = [
    ["list", "--json"],
    ["size", "--json"],
    ["select", "--device", "gfx90a:sramecc+:xnack-", "--json"],
    ["doctor", "--device", "gfx90a", "--device", "gfx1100", "--json"],
    ["check", "--require", "gfx90a,gfx1100", "--json"],
]


@pytest.mark.parametrize("name", INPUTS)
def test_json_answers_equal_the_cargo_binary(venv, gfxkit_bin, name):
    path = str(real(name))
    codes = []
    for cmd in COMMANDS:
        run = same(venv, gfxkit_bin, [*cmd, path], via=(str(venv / "bin" / "gfxkit"),))
        assert run.stdout.startswith(b"{"), cmd
        codes.append(run.returncode)
    if name.startswith("librocrand"):
        # rocRAND 5.3 has no GFX11 code: check answers no.
        assert codes[4] == 1
    # Text output, through `python -m gfxkit`.
    same(venv, gfxkit_bin, ["list", path], via=(str(venv / "bin" / "python"), "-m", "gfxkit"))


def test_version_help_usage_errors_and_exit_codes(venv, gfxkit_bin):
    py = (str(venv / "bin" / "python"), "-m", "gfxkit")
    cmd = (str(venv / "bin" / "gfxkit"),)
    version = same(venv, gfxkit_bin, ["--version"], via=py).stdout.decode()
    assert version.startswith("gfxkit ") and ("commit " in version
                                              or "built outside a git checkout" in version)
    same(venv, gfxkit_bin, ["--version"], via=cmd)
    assert same(venv, gfxkit_bin, ["--help"], via=py).stdout.startswith(b"Inspect, bundle")
    assert same(venv, gfxkit_bin, ["select", "--help"], via=cmd).returncode == 0
    assert same(venv, gfxkit_bin, ["nosuch"], via=py).returncode == 2
    assert same(venv, gfxkit_bin, ["select", "--device", "gfx9999", "x"], via=cmd).returncode == 2
    missing = same(venv, gfxkit_bin, ["list", "/nonexistent/libx.so"], via=cmd)
    assert missing.returncode == 2 and b"/nonexistent/libx.so" in missing.stderr
    assert same(venv, gfxkit_bin, ["target", "compat", "gfx90a:xnack+", "gfx90a:xnack-"],
                via=cmd).returncode == 1
    assert same(venv, gfxkit_bin, ["completions", "bash"], via=cmd).stdout


def test_closed_pipe_ends_quietly(venv):
    env = fresh_env(venv)
    for via in ([str(venv / "bin" / "gfxkit")], [str(venv / "bin" / "python"), "-m", "gfxkit"]):
        p = subprocess.Popen([*via, "target", "list"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
        first = p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read()
        assert p.wait() == 0, err
        assert first.startswith(b"NAME") and err == b""


def test_drop_in_clang_offload_bundler_under_its_name(venv, gfxkit_bin, built, tmp_path):
    """A link named clang-offload-bundler to the installed command and one to the cargo
    binary, at the same path in turn (messages name the program as invoked): the same
    listing, errors and unbundled bytes."""
    link = tmp_path / "bin" / "clang-offload-bundler"
    link.parent.mkdir()
    lib = str(built["bundle"])
    env = dict(fresh_env(venv), COLUMNS="100")

    def runs(target: Path):
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        out = tmp_path / "gfx90a.co"
        got = [
            subprocess.run([str(link), *args], capture_output=True, env=env)
            for args in (["-list", "-type=o", f"-input={lib}"], ["-list", "-type=o"],
                         ["--version"], ["-type=o", f"-input={lib}", "-unbundle",
                                         "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
                                         f"-output={out}"])
        ]
        return [(r.returncode, r.stdout, r.stderr) for r in got], out.read_bytes()

    mine = runs(venv / "bin" / "gfxkit")
    theirs = runs(Path(gfxkit_bin).resolve())
    assert mine == theirs
    (listed, refused, _, unbundled), code_object = mine
    assert listed[0] == 0 and b"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+" in listed[1]
    assert refused[0] == 1 and refused[2].startswith(str(link).encode() + b": error:")
    assert unbundled[0] == 0 and code_object[:4] == b"\x7fELF"


def test_api_in_the_fresh_environment(venv, cli):
    path = str(real("librocrand.so.1.1"))
    code = ("import json, sys, gfxkit; "
            "print(json.dumps(gfxkit.list(sys.argv[1]).to_dict()))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code, path], check=True,
                         capture_output=True, env=fresh_env(venv))
    import json

    _, doc = cli("list", "--json", path)
    assert json.loads(out.stdout) == doc["files"][0]


def test_auditwheel_accepts_a_manylinux_tag(wheel):
    assert "-abi3-manylinux_" in wheel.name, wheel.name
    out = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel)], check=True,
                         capture_output=True, text=True)
    text = " ".join(out.stdout.split())
    assert "is consistent with the following platform tag: \"manylinux_" in text, out.stdout
