"""One door for every kind of file: the Python module reads bytes in memory as it reads a path,
so a package given as bytes answers as the same package on disk, for every kind of member
(bundle, compressed bundle, host library, raw code object, kpack archive, Tensile index and
hipBLASLt mapping, `.aks2`-free kernel-database shards), and for `list`, `size`, `verify` and
`kernels` alike. Before the door, members of a package given as bytes were never read as
kernel databases, and `size` of bytes did not size raw code objects by architecture."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

import gfxkit

ROOT = Path(__file__).resolve().parents[2]
HIPBLASLT = ROOT / "target/real/sid/usr/lib/x86_64-linux-gnu/hipblaslt/library"


@pytest.fixture(scope="module")
def package(built, tmp_path_factory) -> Path:
    """A wheel-shaped zip holding one member of every kind."""
    d = tmp_path_factory.mktemp("door")
    split = d / "split" / "libk.so"
    split.parent.mkdir()
    gfxkit.kpack_split(built["lib"], split, "k")
    archives = sorted((d / ".kpack").glob("*.kpack"))
    assert archives, list(d.rglob("*"))
    index = HIPBLASLT / "TensileLibrary_lazy_gfx1151.dat"
    mapping = HIPBLASLT / "TensileLiteLibrary_lazy_Mapping.dat"
    assert index.is_file() and mapping.is_file(), "run `bash scripts/ensure-real-inputs`"
    shard = next(HIPBLASLT.glob("TensileLibrary_*_gfx1151.dat"))
    out = d / "every_kind-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(out, "w") as z:
        z.write(built["bundle"], "pkg/k.hipfb")
        z.write(built["ccob"], "pkg/kz.hipfb")
        z.write(built["lib"], "pkg/lib/libk.so")
        z.write(built["code_object"], "pkg/k-gfx90a.co")
        z.write(archives[0], f"pkg/.kpack/{archives[0].name}")
        for f in (index, mapping, shard):
            z.write(f, f"pkg/hipblaslt/library/{f.name}")
    return out


def _as_bytes(value, path: Path):
    """The answer for a path, named as the same answer for bytes names it."""
    if isinstance(value, dict):
        return {k: _as_bytes(v, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_bytes(v, path) for v in value]
    if isinstance(value, str):
        return value.replace(str(path), "<bytes>")
    return value


def _dicts(answer):
    return [a.to_dict() for a in answer] if isinstance(answer, list) else answer.to_dict()


@pytest.mark.parametrize("command", ["list", "size", "verify", "kernels"])
def test_bytes_answer_as_the_path(package, command):
    data = package.read_bytes()
    call = {
        "list": lambda src: gfxkit.list(src, strict=False),
        "size": gfxkit.size,
        "verify": gfxkit.verify,
        "kernels": gfxkit.kernels,
    }[command]
    by_path = _as_bytes(_dicts(call(package)), package)
    by_bytes = _dicts(call(data))
    assert by_bytes == by_path


def test_kernel_databases_in_bytes_are_read(package):
    listed = gfxkit.list(package.read_bytes(), strict=False)
    kinds = {
        i.path.rsplit("/", 1)[-1]: (i.to_dict().get("database") or {}).get("kind")
        for i in listed
    }
    assert kinds["TensileLibrary_lazy_gfx1151.dat"] == "tensile", kinds
    assert kinds["TensileLiteLibrary_lazy_Mapping.dat"] is not None, kinds
    # The raw code object is sized by architecture, as on disk.
    sized = gfxkit.size(package.read_bytes()).to_dict()
    assert any(f["path"].endswith("k-gfx90a.co") for f in sized["files"]), sized["files"]


@pytest.fixture(scope="module")
def kinds(built, package) -> dict:
    """One file of every kind, by the name it has on disk. Not a binary split by kpack: its
    answer is the archives beside it, and bytes are read without what lies beside them."""
    archive = sorted((package.parent / ".kpack").glob("*.kpack"))[0]
    shard = next(HIPBLASLT.glob("TensileLibrary_*_gfx1151.dat"))
    files = {
        "k.hipfb": built["bundle"],
        "kz.hipfb": built["ccob"],
        "libk.so": built["lib"],
        "k-gfx90a.co": built["code_object"],
        archive.name: archive,
        "TensileLibrary_lazy_gfx1151.dat": HIPBLASLT / "TensileLibrary_lazy_gfx1151.dat",
        "TensileLiteLibrary_lazy_Mapping.dat": HIPBLASLT / "TensileLiteLibrary_lazy_Mapping.dat",
        shard.name: shard,
        shard.with_suffix(".co").name: shard.with_suffix(".co"),
        "every_kind.whl": package,
    }
    return {name: Path(p) for name, p in files.items()}


#: What `verify` finds of a kernel database's files beside it: an index's rows' files, a
#: mapping's libraries and master indexes.
_BESIDE = re.compile(r" is missing$| is not there$| beside the mapping$")


def _unresolved(value):
    """The answer for a path as bytes get it: a kernel database's files beside it not looked
    for (``resolved`` false, nothing ``missing``; in the verification of a file, nothing found
    missing beside it: a package's members are judged by the members beside them either way)."""
    if isinstance(value, dict):
        value = {k: _unresolved(v) for k, v in value.items()}
        if value.get("resolved") is True and "rows" in value:
            value["resolved"] = False
            value["rows"] = [{**r, "missing": []} for r in value["rows"]]
        if "problems" in value and "ok" in value and "!" not in value["path"]:
            value["problems"] = [p for p in value["problems"] if not _BESIDE.search(p["message"])]
            value["ok"] = not value["problems"]
        return value
    if isinstance(value, list):
        return [_unresolved(v) for v in value]
    return value


def _answer(call, src, **kw):
    """The answer as plain data, or the error raised (its type and text)."""
    try:
        return _dicts(call(src, **kw))
    except gfxkit.Error as e:
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("command", ["list", "size", "verify", "kernels"])
def test_named_bytes_answer_as_the_file_alone(kinds, package, command, tmp_path):
    """Bytes given with the name of the file they are (``name=``) answer as that file alone
    in a directory: a Tensile index is read as one, a package's members named after it. What
    lies beside bytes is not read: the files an index names are not looked for. The same
    bytes without a name are ``<bytes>``, which no name-bound kind is."""
    call = {
        "list": lambda src, **kw: gfxkit.list(src, strict=False, **kw),
        "size": gfxkit.size,
        "verify": gfxkit.verify,
        "kernels": gfxkit.kernels,
    }[command]
    for name, path in kinds.items():
        alone = tmp_path / name.replace(".", "_") / name
        alone.parent.mkdir()
        alone.write_bytes(path.read_bytes())
        by_path = _unresolved(_answer(call, alone))
        by_bytes = _answer(call, alone.read_bytes(), name=str(alone))
        assert by_bytes == by_path, name
    index = kinds["TensileLibrary_lazy_gfx1151.dat"].read_bytes()
    named = gfxkit.list(index, name="TensileLibrary_lazy_gfx1151.dat").to_dict()
    assert named["database"]["kind"] == "tensile", named
    summary = gfxkit.list_summary(package.read_bytes(), name="every_kind.whl").to_dict()
    assert [p["name"] for p in summary["packages"]] == ["every_kind.whl"], summary
    unnamed = gfxkit.list(index).to_dict()
    assert "database" not in unnamed and unnamed["bundles"] == [], unnamed
    with pytest.raises(TypeError):
        gfxkit.list(kinds["libk.so"], name="libk.so")


@pytest.mark.parametrize("rocm", [None, "6.0"])
def test_select_of_bytes_is_the_select_of_the_file_alone(kinds, rocm, tmp_path):
    """``select`` of bytes asks the file's format, as ``select`` of a path does: a ``.kpack``
    archive is selected from as one, and a release's runtime refuses in bytes what it refuses
    on disk (ROCm 6.0 does not know gfx1151). Not the files a path judges with the kernel
    database their directory makes (a code object, a Tensile file), which bytes of one file
    cannot: a package's members are judged together (the next test)."""
    for name, path in kinds.items():
        if name.endswith((".co", ".dat", ".whl")):
            continue
        alone = tmp_path / str(rocm) / name.replace(".", "_") / name
        alone.parent.mkdir(parents=True)
        alone.write_bytes(path.read_bytes())
        for device in ("gfx90a", "gfx1151"):
            by_path = _answer(gfxkit.select, alone, device=device, rocm=rocm)
            by_bytes = _answer(
                gfxkit.select, alone.read_bytes(), device=device, rocm=rocm, name=str(alone)
            )
            assert by_bytes == by_path, (name, device)


@pytest.mark.parametrize("rocm", [None, "6.0"])
def test_select_of_package_bytes_is_the_select_of_the_package(package, rocm):
    """A package given as bytes is judged as the same package on disk: its members together,
    each kernel database made of the members that hold it (the hipBLASLt index, mapping and
    shard), not each member alone as before."""
    for device in ("gfx90a", "gfx1151"):
        by_path = _answer(gfxkit.select, package, device=device, rocm=rocm)
        by_bytes = _answer(
            gfxkit.select, package.read_bytes(), device=device, rocm=rocm, name=str(package)
        )
        assert by_bytes == by_path, device


def test_a_package_is_judged_as_the_command_line_judges_it(package, cli):
    """The Tensile index and the hipBLASLt mapping inside the package are judged by the
    members beside them, in Python (path and bytes) as by `gfxkit verify`: the index misses
    the shards the package leaves out, not the one it holds; the mapping misses the libraries
    of the processors the package leaves out."""
    code, answer = cli("verify", "--json", str(package))
    assert code == 1, answer
    by_cli = {f["path"]: f for f in answer["files"]}
    by_path = {f["path"]: f for f in _dicts(gfxkit.verify(package))}
    by_bytes = {f["path"]: f for f in _as_bytes(list(by_path.values()), package)}
    for name, f in by_path.items():
        assert {k: f[k] for k in ("ok", "entries", "problems")} == {
            k: by_cli[name][k] for k in ("ok", "entries", "problems")
        }, name
    index = next(f for n, f in by_path.items() if n.endswith("TensileLibrary_lazy_gfx1151.dat"))
    held = next(n for n in by_path if "_Contraction_" in n).rsplit("/", 1)[1]
    assert index["problems"] and all(p["message"].endswith(" is missing") for p in index["problems"])
    assert not any(held in p["message"] for p in index["problems"]), held
    mapping = next(f for n, f in by_path.items() if n.endswith("_Mapping.dat"))
    assert not mapping["ok"]
    assert all(
        "is not there" in p["message"] or "has no master index" in p["message"]
        for p in mapping["problems"]
    ), mapping
    assert {f["path"]: f for f in _dicts(gfxkit.verify(package.read_bytes()))} == by_bytes


def test_a_library_in_a_package_is_judged_by_its_database(tmp_path, cli):
    """hipBLASLt without its kernel database in a package: judged by the database it lacks
    (every GEMM call fails), in Python as by `gfxkit verify`, not set apart as a member
    without device code."""
    lib = HIPBLASLT.parents[1] / "libhipblaslt.so.1"
    out = tmp_path / "alone-7.1.1-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        z.write(lib, "usr/lib/x86_64-linux-gnu/libhipblaslt.so.1")
    code, answer = cli("verify", "--json", str(out))
    assert code == 1, answer
    by_python = _dicts(gfxkit.verify(out))
    assert by_python == answer["files"]
    assert "every GEMM call fails" in by_python[0]["problems"][0]["message"], by_python


@pytest.mark.parametrize("beside", [True, False])
def test_a_library_on_disk_is_judged_by_the_database_beside_it(tmp_path, cli, beside):
    """hipBLASLt named alone on disk holds no device code of its own: Python judges it by the
    kernel database beside it (or its absence) as `gfxkit verify` does, where it raised
    `NoDeviceCodeError` before."""
    lib = HIPBLASLT.parents[1] / "libhipblaslt.so.1"
    if not beside:
        alone = tmp_path / "lib" / "libhipblaslt.so.1"
        alone.parent.mkdir()
        alone.write_bytes(lib.read_bytes())
        lib = alone
    code, answer = cli("verify", "--json", str(lib))
    by_python = _dicts(gfxkit.verify(lib))
    assert [by_python] == answer["files"], (by_python, answer)
    assert by_python["ok"] is (code == 0)
    if not beside:
        assert code == 1 and "every GEMM call fails" in by_python["problems"][0]["message"]


def test_bytes_named_as_a_file_are_not_judged_by_the_working_directory(tmp_path, monkeypatch):
    """An index given as bytes and named without a directory is no file in the working
    directory: it is judged as an index without its directory (its rows kept, nothing
    missing), never against whatever the working directory holds."""
    index = HIPBLASLT / "TensileLibrary_lazy_gfx1151.dat"
    data = index.read_bytes()
    (tmp_path / "unrelated.txt").write_text("not a kernel database\n")
    monkeypatch.chdir(tmp_path)
    here = gfxkit.verify(data, name=index.name).to_dict()
    elsewhere = gfxkit.verify(data, name=f"nowhere/{index.name}").to_dict()
    assert here["ok"] and not here["problems"], here
    assert {**here, "path": None} == {**elsewhere, "path": None}
    # On disk the same index is judged by the files beside it.
    assert gfxkit.verify(index).to_dict()["ok"]


def test_a_lazy_library_in_a_package_lists_its_shards_solutions(tmp_path, gfxkit_bin):
    """hipBLASLt 7.1's solutions are all in shards: in a package (a path or bytes) each is
    listed for the processor whose lazy master is beside it and found in the member that is
    its code, as `gfxkit kernels -r` finds it in the same directory."""
    import json
    import subprocess

    wheel = tmp_path / "hipblaslt-7.1.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for f in sorted(HIPBLASLT.iterdir()):
            z.write(f, f"library/{f.name}")

    def rows(solutions, prefix):
        out = []
        for s in solutions:
            s = dict(s)
            assert s["index"].startswith(prefix), s["index"]
            s["index"] = s["index"][len(prefix):]
            out.append(json.dumps(s, sort_keys=True))
        return sorted(out)

    cli = subprocess.run([gfxkit_bin, "kernels", "--json", "-r", str(HIPBLASLT)],
                         capture_output=True, check=True)
    on_disk = rows(json.loads(cli.stdout)["solutions"], f"{HIPBLASLT}/")
    by_path = rows(gfxkit.kernels(wheel).to_dict()["solutions"], f"{wheel}!library/")
    by_bytes = rows(gfxkit.kernels(wheel.read_bytes()).to_dict()["solutions"], "<bytes>!library/")
    assert len(on_disk) > 1000 and all('"present": true' in r for r in on_disk)
    assert by_path == on_disk
    assert by_bytes == on_disk
