"""Python results read like the command: ``str()`` is the command's text output on the real
inputs, ``repr()`` says what the answer is, ``_repr_html_()`` is HTML (in headless Chromium the
size page's chart and tables render; a screenshot is kept in ``target/test-artifacts``),
``to_pandas()`` has the JSON keys as columns, results that answer a question are true exactly
when the command exits 0, every result has ``to_dict()``; one naming of parameters across
functions, as the command names its options; ``dir(gfxkit)`` is the API; usage errors raise
``UsageError``; and the README's Python examples run."""

from __future__ import annotations

import html.parser
import inspect
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import gfxkit
from conftest import ROOT

REAL = ROOT / "target" / "real"
LIB = "librocrand.so.1.1"
DEB = "librocrand1_5.3.3-4_amd64.deb"
WHEEL = "torch_scatter_rocm-2.1.2.post7-cp311-cp311-manylinux_2_32_x86_64.whl"
ARTIFACTS = ROOT / "target" / "test-artifacts"


def real(name: str) -> str:
    path = REAL / name
    assert path.is_file(), f"{path} is missing: run `bash scripts/ensure-real-inputs`"
    return str(path)


@pytest.fixture(scope="module")
def text(gfxkit_bin):
    """The command's stdout and exit status (text output)."""

    def call(*args: str):
        out = subprocess.run([gfxkit_bin, *args], capture_output=True, text=True)
        return out.stdout, out.returncode

    call.bin = gfxkit_bin
    return call


def member(package: str, name_part: str) -> str:
    """The first member of ``package`` with device code whose name contains ``name_part``."""
    for inv in gfxkit.list(real(package)):
        if name_part in inv.path and inv.entries:
            return inv.path
    raise AssertionError(f"no member {name_part} in {package}")


def test_str_is_the_commands_text_output(text, tmp_path):
    lib = real(LIB)
    deb_lib = member(DEB, "librocrand.so")
    whl_lib = member(WHEEL, "_scatter_rocm")
    cases = []
    for p in (lib, deb_lib, whl_lib):
        cases += [
            (gfxkit.list(p), ["list", p]),
            (gfxkit.select(p, "gfx1100"), ["select", "--device", "gfx1100", p]),
            (gfxkit.check(p, "gfx906,gfx1100"), ["check", "--require", "gfx906,gfx1100", p]),
        ]
    # Every command on the library itself (members are read as files are).
    cases += [
        (gfxkit.select(lib, "gfx90a:sramecc+:xnack-"),
         ["select", "--device", "gfx90a:sramecc+:xnack-", lib]),
        (gfxkit.verify(lib), ["verify", lib]),
        (gfxkit.verify(whl_lib), ["verify", whl_lib]),
        (gfxkit.doctor(lib, ["gfx90a", "gfx1100"]),
         ["doctor", "--device", "gfx90a", "--device", "gfx1100", lib]),
        (gfxkit.size(lib), ["size", lib]),
        (gfxkit.size(lib, keep=["gfx90a"]), ["size", "--keep", "gfx90a", lib]),
        (gfxkit.size(lib, check=True), ["size", "--check", lib]),
        (gfxkit.kernels(lib, "gfx906"), ["kernels", "--target", "gfx906", lib]),
        (gfxkit.list_summary(lib), ["list", "--summary", lib]),
    ]
    # Packages as a whole.
    cases += [
        (gfxkit.list_summary(real(WHEEL)), ["list", "--summary", real(WHEEL)]),
        (gfxkit.size(real(WHEEL)), ["size", real(WHEEL)]),
        (gfxkit.check(real(WHEEL), "gfx90a"), ["check", "--require", "gfx90a", real(WHEEL)]),
        (gfxkit.doctor(real(DEB), "gfx1030"), ["doctor", "--device", "gfx1030", real(DEB)]),
    ]
    other = tmp_path / LIB
    shutil.copyfile(lib, other)
    cases.append((gfxkit.diff(lib, str(other)), ["diff", lib, str(other)]))
    cases.append((gfxkit.diff(lib, deb_lib), ["diff", lib, deb_lib]))
    for result, args in cases:
        stdout, code = text(*args)
        assert str(result) == stdout, args
        assert result.exit_status == code, args
        assert isinstance(result.to_dict(), dict)


def test_cu_count_is_the_commands(text):
    """``cu_count`` judges rocBLAS's per-CU-count rows as ``--cu-count`` does (gfx90a's
    shards are not unpacked: what is missing differs by the count)."""
    rocblas = REAL / "sid" / "usr" / "lib" / "x86_64-linux-gnu" / "rocblas"
    assert rocblas.is_dir(), f"{rocblas} is missing: run `bash scripts/ensure-real-inputs`"
    answers = {}
    for cu in (None, 110):
        flag = [] if cu is None else ["--cu-count", str(cu)]
        d = gfxkit.doctor(str(rocblas), "gfx90a", cu_count=cu)
        s = gfxkit.select(str(rocblas), "gfx90a", cu_count=cu)
        assert isinstance(s, list) and len(s) == 1, s
        s = s[0]
        for result, args in ((d, ["doctor", "--device", "gfx90a", *flag, str(rocblas)]),
                             (s, ["select", "--device", "gfx90a", *flag, str(rocblas)])):
            stdout, code = text(*args)
            assert str(result) == stdout, args
            assert result.exit_status == code == 1, args
        answers[cu] = d.to_dict()
    assert answers[110]["cu_counts"] == {"gfx90a": 110}
    assert "cu_counts" not in answers[None]
    assert answers[110]["files"][0]["missing"] != answers[None]["files"][0]["missing"]


def test_write_reports_print_as_the_command(text, tmp_path):
    """``str()`` of what ``prune``, ``recompress`` and ``kpack_split`` did is the command's text
    (its "took N s" line aside, a timing)."""
    lib = real(LIB)
    took = re.compile(r"^  took [0-9.]+ s$", re.M)

    def same(result, args, renamed=("", "")):
        stdout, code = text(*args)
        assert code == 0, (args, stdout)
        assert isinstance(result, dict) and result.exit_status == 0
        ours = took.sub("", str(result)).replace(*renamed)
        assert ours == took.sub("", stdout), args
        assert str(result) != repr(dict(result))

    py_out, cli_out = tmp_path / "py.so", tmp_path / "cli.so"
    same(gfxkit.prune(lib, ["gfx90a"], output=py_out),
         ["prune", "--keep", "gfx90a", lib, "-o", str(cli_out)], (str(py_out), str(cli_out)))
    same(gfxkit.prune(lib, ["gfx1030"]), ["prune", "--keep", "gfx1030", "--dry-run", lib])
    same(gfxkit.recompress(lib), ["recompress", "--dry-run", lib])
    same(gfxkit.prune(real(WHEEL), ["gfx90a"]), ["prune", "--keep", "gfx90a", "--dry-run", real(WHEEL)])
    # kpack split: the same binary split twice (paths differ only by the directory).
    for side in ("py", "cli"):
        (tmp_path / side / "lib").mkdir(parents=True)
    py_split = gfxkit.kpack_split(lib, tmp_path / "py" / "lib" / LIB, "rocrand")
    stdout, code = text("kpack", "split", lib, "-o", str(tmp_path / "cli" / "lib" / LIB),
                        "--group", "rocrand")
    assert code == 0
    assert str(py_split).replace("/py/", "/cli/") == stdout


def test_truth_is_the_commands_answer(text, tmp_path):
    lib = real(LIB)
    # rocRAND 5.3: code for gfx90a, none for gfx1100.
    assert gfxkit.doctor(lib, "gfx90a:sramecc+:xnack-") and not gfxkit.doctor(lib, "gfx1100")
    assert not gfxkit.doctor(lib, ["gfx90a", "gfx1100"])
    assert gfxkit.select(lib, "gfx90a") and not gfxkit.select(lib, "gfx1100")
    assert gfxkit.check(lib, "gfx90a") and not gfxkit.check(lib, "gfx1100")
    assert gfxkit.verify(lib)
    # A flipped byte inside a code object: verify finds it, and says no.
    data = bytearray(Path(lib).read_bytes())
    inv = gfxkit.list(lib)
    bundle = inv.bundles[0]
    entry = bundle["entries"][1]
    at = bundle["offset"] + entry["offset"] + 0x12  # e_machine of the code object
    data[at] ^= 0xFF
    damaged = tmp_path / "damaged.so"
    damaged.write_bytes(bytes(data))
    v = gfxkit.verify(str(damaged))
    _, code = text("verify", str(damaged))
    assert code == 1 and v.exit_status == 1 and not v and not v.ok
    # doctor: a damaged file runs nowhere, in the result as in the command (exit 2).
    d = gfxkit.doctor(str(damaged), "gfx90a")
    _, code = text("doctor", "--device", "gfx90a", str(damaged))
    assert code == 2 and d.exit_status == 2 and not d
    out = subprocess.run([text.bin, "doctor", "--json", "--device", "gfx90a", str(damaged)],
                         capture_output=True, text=True)
    assert d.to_dict() == json.loads(out.stdout)
    f = d.to_dict()["files"][0]
    assert f["runs_on"] == {"gfx90a": False} and f["errors"], f
    assert f["missing"]["gfx90a"].startswith("damaged: "), f
    # diff: false for the same build; a damaged side has no digests to compare: an error.
    assert not gfxkit.diff(lib, lib)
    with pytest.raises(gfxkit.FormatError):
        gfxkit.diff(lib, str(damaged))


class _Html(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list = []
        self.open: list = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in ("br", "meta", "input", "img", "hr", "link", "col", "wbr", "area", "base"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-3:])
        self.open.pop()


def parse(text: str) -> list:
    p = _Html()
    p.feed(text)
    p.close()
    assert not p.open, p.open
    return p.tags


def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "chromium is missing: run `bash scripts/ensure-chromium`"
    return found


def headless(*args: str) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="gfxkit-chromium-")
    try:
        return subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, check=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def test_html_for_notebooks_renders(tmp_path):
    lib = real(LIB)
    size = gfxkit.size(lib)
    tables = [gfxkit.list(lib), gfxkit.check(lib, "gfx90a,gfx1100"),
              gfxkit.doctor(lib, "gfx1100"), gfxkit.verify(lib), gfxkit.select(lib, "gfx90a"),
              gfxkit.kernels(lib, "gfx90a"), gfxkit.list_summary(lib)]
    for r in tables:
        tags = parse(r._repr_html_())
        assert "pre" in tags, type(r)
        # The table, where there are rows (a verification without problems has none).
        assert ("table" in tags and "td" in tags) == bool(r._rows()), type(r)
    frame = size._repr_html_()
    assert parse(frame) == ["iframe"]
    page = size.html()
    assert "<svg" in page and parse(page).count("table") >= 1
    # The page in Chromium: the chart's bars and the tables are in the rendered document.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "size.html").write_text(page)
    dom = headless("--dump-dom", f"file://{ARTIFACTS / 'size.html'}").stdout
    assert dom.count('<rect class="bar"') == len(size.archs)
    for arch in size.archs:
        assert arch["arch"] in dom
    # What a notebook shows: every result's HTML one after another; a screenshot is kept.
    notebook = ARTIFACTS / "notebook.html"
    notebook.write_text("<!DOCTYPE html><html><body>" + frame
                        + "".join(r._repr_html_() for r in tables) + "</body></html>")
    shot = ARTIFACTS / "notebook.png"
    if shot.exists():
        shot.unlink()
    headless("--screenshot=" + str(shot), "--window-size=1200,2400",
             "--virtual-time-budget=2000", f"file://{notebook}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_to_pandas_columns_are_the_json_keys():
    import pandas  # installed by scripts/ensure-python (optional for users)

    lib = real(LIB)
    size = gfxkit.size(lib)
    df = size.to_pandas()
    assert list(df.columns) == list(size.archs[0].keys()) and len(df) == len(size.archs)
    inv = gfxkit.list(lib)
    df = inv.to_pandas()
    assert list(df.columns) == list(inv.entries[0].keys()) and len(df) == len(inv.entries)
    for r, rows in ((gfxkit.check(lib, "gfx90a"), "files"), (gfxkit.doctor(lib, "gfx90a"), "files"),
                    (gfxkit.select(lib, "gfx90a"), "bundles"),
                    (gfxkit.kernels(lib, "gfx90a"), "kernels"),
                    (gfxkit.list_summary(lib), "packages")):
        df = r.to_pandas()
        assert isinstance(df, pandas.DataFrame)
        assert list(df.columns) == list(r.to_dict()[rows][0].keys()), type(r)
        assert len(df) == len(r.to_dict()[rows])


def test_repr_says_what_the_answer_is():
    lib = real(LIB)
    assert repr(gfxkit.size(lib)) == "<gfxkit.SizeReport 1 file, 8 targets, 12317224 bytes stored>"
    assert repr(gfxkit.doctor(lib, "gfx1100")) == "<gfxkit.DoctorReport 1 library on gfx1100: 1 cannot run>"
    assert repr(gfxkit.select(lib, "gfx1100")).endswith(": not loadable>")
    assert repr(gfxkit.verify(lib)) == f"<gfxkit.Verification {lib}: ok>"
    assert repr(gfxkit.list(lib)) == f"<gfxkit.Inventory {lib}: 1 unit, 8 entries>"


def test_dir_is_the_api():
    names = dir(gfxkit)
    assert sorted(names) == sorted([*gfxkit.__all__, "__version__"])
    for stray in ("Any", "Dict", "os", "copy", "annotations", "Union", "Optional"):
        assert stray not in names
    for name in gfxkit.__all__:
        assert getattr(gfxkit, name) is not None, name


# The parameter names of the API: each is the command's option of the same name (`--device`
# for `device`, `--kpack-loader` for `kpack_loader`), or one of these, named the same
# wherever they appear.
COMMON = {
    "src": "the input(s): a path, several paths, or bytes",
    "old": "diff's OLD", "new": "diff's NEW",
    "strict": "raise instead of carrying the error",
    "cpu": "memmodel --cpu", "case": "memmodel CASE",
    "code_object_id": "target compat's first ID", "device_id": "its second",
    "limit": "--max-uncompressed", "platform": "--platform",
    "archives": "kpack inline ARCHIVE...",
    "name": "the name of the file bytes are (a path names itself on the command line)",
}
COMMAND = {"list": "list", "list_summary": "list", "select": "select", "verify": "verify",
           "doctor": "doctor", "check": "check", "diff": "diff", "size": "size",
           "extract": "extract", "inspect": "inspect", "kernels": "kernels",
           "kpack_split": "kpack split", "kpack_inline": "kpack inline", "prune": "prune",
           "recompress": "recompress", "memmodel": "memmodel"}
# Options spelled otherwise on the command line (the Python name and the option).
SPELLED = {("size", "by_library"): "--by", ("kpack_split", "output"): "--output",
           ("kpack_inline", "output"): "--output"}


def test_one_naming_of_parameters(gfxkit_bin):
    functions = {n: getattr(gfxkit, n) for n in gfxkit.__all__
                 if inspect.isfunction(getattr(gfxkit, n))}
    helps = {}
    for name, fn in functions.items():
        params = list(inspect.signature(fn).parameters)
        # The input is `src` everywhere it is one argument (a path, several, or bytes).
        assert not {"path", "paths", "file", "files", "devices", "targets"} & set(params), name
        if name not in COMMAND:
            continue
        cmd = COMMAND[name]
        if cmd not in helps:
            helps[cmd] = subprocess.run([gfxkit_bin, *cmd.split(), "--help"],
                                        capture_output=True, text=True, check=True).stdout
        for p in params:
            if p in COMMON:
                continue
            option = SPELLED.get((name, p), "--" + p.replace("_", "-"))
            assert re.search(re.escape(option) + r"\b", helps[cmd]), (name, p, option)
    # The same concept has the same name and kind across functions.
    for a, b in (("select", "doctor"), ("doctor", "check"), ("size", "prune"),
                 ("prune", "recompress"), ("list", "verify"), ("kernels", "extract")):
        pa = inspect.signature(functions[a]).parameters
        pb = inspect.signature(functions[b]).parameters
        assert next(iter(pa)) == next(iter(pb)) == "src", (a, b)
    assert "device" in inspect.signature(gfxkit.select).parameters
    assert "device" in inspect.signature(gfxkit.doctor).parameters


def test_usage_errors_raise_usage_error():
    with pytest.raises(gfxkit.UsageError) as e:
        gfxkit.memmodel("gfx942", "fence;ord=acquire;scope=agent")
    assert isinstance(e.value, ValueError) and not isinstance(e.value, gfxkit.FormatError)
    assert "needs `mmra`" in str(e.value)
    with pytest.raises(gfxkit.UsageError):
        gfxkit.memmodel("gfx9999", "fence;ord=acquire;scope=agent;mmra=none")
    with pytest.raises(gfxkit.UsageError):
        gfxkit.memmodel("gfx942", "fence;ord=acquire;scope=agent;mmra=none", os="plan9")


def test_memmodel_equals_the_command(text):
    stdout, code = text("memmodel", "--cpu", "gfx942", "--json",
                        "fence;ord=acquire;scope=agent;mmra=none")
    import json

    assert code == 0
    assert gfxkit.memmodel("gfx942", "fence;ord=acquire;scope=agent;mmra=none") == \
        json.loads(stdout)["asm"]


def readme_python() -> str:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README has a Python example"
    return "\n".join(blocks)


def test_readme_python_examples_run(built, tmp_path, monkeypatch):
    """Every line of the README's Python examples, with its file names given real files: the
    library (a HIP shared library clang-19 built), a bundle, a member's bytes, the bytes of a
    Tensile index (Debian's hipBLASLt)."""
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(built["lib"], tmp_path / "librocsparse.so")
    shutil.copyfile(built["lib"], tmp_path / "libfoo.so")
    shutil.copyfile(built["bundle"], tmp_path / "app.hipfb")
    index = ROOT / "target/real/sid/usr/lib/x86_64-linux-gnu/hipblaslt/library"
    ns = {
        "member_bytes": Path(built["bundle"]).read_bytes(),
        "blob": (index / "TensileLibrary_lazy_gfx1151.dat").read_bytes(),
    }
    exec(compile(readme_python(), "README.md", "exec"), ns)
    assert (tmp_path / "libfoo-gfx90a.so").is_file()


def test_every_result_has_to_dict(built, tmp_path):
    lib = str(built["lib"])
    results = [gfxkit.list(lib), gfxkit.select(lib, "gfx90a"), gfxkit.verify(lib),
               gfxkit.doctor(lib, "gfx90a"), gfxkit.check(lib, "gfx90a"), gfxkit.diff(lib, lib),
               gfxkit.size(lib), gfxkit.kernels(lib), gfxkit.list_summary(lib),
               gfxkit.inspect(built["code_object"]),
               gfxkit.prune(lib, keep=["gfx90a"]), gfxkit.recompress(lib),
               gfxkit.kpack_split(lib, tmp_path / "lib" / "libk.so", "k"),
               gfxkit.processors()[0]]
    for r in results:
        d = r.to_dict()
        assert type(d) is dict and d, type(r)
    co = gfxkit.inspect(built["code_object"])
    assert co["target_id"] == "gfx90a:xnack+" and repr(co).startswith("<gfxkit.CodeObject gfx90a")
