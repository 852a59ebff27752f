"""The census (``gfxkit census`` / ``gfxkit.census``): real inputs read three ways (no option,
a LocalCluster of two worker processes, serially), every code-object row checked against
``gfxkit list --check --json``; a worker killed in the middle of a shard; the census process
SIGKILLed at random points and restarted; a simple index served on loopback; the report in
headless Chromium."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# Installed by scripts/ensure-python (the census extra and duckdb): missing is a failure.
import distributed  # noqa: E402
import duckdb  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import gfxkit  # noqa: E402
from gfxkit.census import dataset  # noqa: E402
import slurm  # noqa: E402
from conftest import run, tool  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "target" / "real"
WHEEL = "torch_scatter_rocm-2.1.2.post7-cp311-cp311-manylinux_2_32_x86_64.whl"
DEB = "librocrand1_5.3.3-4_amd64.deb"
VOLATILE = {"seconds", "shard"}


def real(name: str) -> Path:
    p = REAL / name
    assert p.is_file(), f"{p} is missing: run `bash scripts/ensure-real-inputs`"
    return p


def bundle(entries) -> bytes:
    """An uncompressed offload bundle (clang's layout: magic, count, then per entry offset,
    size, ID length, ID; payloads 4096-aligned)."""
    head = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries))
    size = len(head) + sum(24 + len(i) for i, _ in entries)
    off = (size + 4095) // 4096 * 4096
    table, body, at = b"", b"", off
    for i, payload in entries:
        table += struct.pack("<QQQ", at, len(payload), len(i)) + i.encode()
        pad = (-len(payload)) % 4096 if payload else 0
        body += payload + b"\0" * pad
        at += len(payload) + pad
    out = head + table
    return out + b"\0" * (off - len(out)) + body


def small_tree(root: Path, n: int, payload: int = 2048) -> Path:
    """``n`` small bundles under ``root`` (sub directories, one damaged, one duplicate)."""
    rng = random.Random(n)
    targets = ["gfx90a:xnack-", "gfx90a:xnack+", "gfx942", "gfx1100", "gfx9-generic", "gfx1030"]
    for i in range(n):
        d = root / f"d{i % 4}"
        d.mkdir(parents=True, exist_ok=True)
        ts = rng.sample(targets, 2)
        ents = [("host-x86_64-unknown-linux--", b"")] + [
            (f"hipv4-amdgcn-amd-amdhsa--{t}", rng.randbytes(payload)) for t in ts
        ]
        (d / f"k{i:03d}.hipfb").write_bytes(bundle(ents))
    # A damaged bundle: its entry runs past the end.
    good = bundle([("hipv4-amdgcn-amd-amdhsa--gfx942", b"x" * 5000)])
    (root / "damaged.hipfb").write_bytes(good[:6000])
    # A file without device code is not an input of a directory walk.
    (root / "README").write_text("not device code")
    return root


def table(out: Path, name: str):
    t = dataset.read_table(out, name) if name in ("inputs", "code_objects") else pq.read_table(out / f"{name}.parquet")
    keep = [c for c in t.column_names if c not in VOLATILE]
    rows = t.select(keep).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def same_dataset(a: Path, b: Path) -> None:
    for name in ("inputs", "code_objects", "targets"):
        assert table(a, name) == table(b, name), name


def exactly_once(out: Path, names) -> None:
    got = [r["input"] for r in table(out, "inputs")]
    assert sorted(got) == sorted(names)
    assert len(set(got)) == len(got)


def cli_rows(gfxkit_bin: str, path: Path):
    """The code objects ``gfxkit list --check --json`` lists for ``path``, as census rows."""
    out = subprocess.run([gfxkit_bin, "list", "--check", "--json", str(path)], capture_output=True)
    listing = json.loads(out.stdout)
    rows = []
    for f in listing["files"]:
        for ui, b in enumerate(f["bundles"]):
            for ei, e in enumerate(b["entries"]):
                if e["size"] == 0 or e["kind"] == "host":
                    continue
                rows.append(
                    (f["path"], b["format"], ui, b["offset"], ei, e["id"], e["target_id"],
                     e["code_object_version"], e["size"])
                )
    return sorted(rows)


def census_rows(co, name: str):
    """The code-object rows of input ``name``, in the form :func:`cli_rows` gives."""
    return sorted(
        (r["path"], r["container"], r["unit"], r["unit_offset"], r["entry"], r["entry_id"],
         r["target_id"], r["code_object_version"], r["uncompressed_bytes"])
        for r in co if r["input"] == name
    )


@pytest.fixture(scope="module")
def real_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    tree = small_tree(d / "tree", 6)
    # A container image: an OCI layout archive whose second layer deletes a file of the first.
    from test_images import _image

    img = d / "image.tar"
    k = (tree / "d0" / "k000.hipfb").read_bytes()
    _image(img, [("linux/amd64", [
        [("opt/app/lib/k.hipfb", k), ("opt/app/lib/gone.hipfb", k)],
        [("opt/app/lib/.wh.gone.hipfb", b"")],
    ])])
    return [str(real(WHEEL)), str(real(DEB)), str(tree), str(img), str(d / "missing.so")]


@pytest.fixture(scope="module")
def serial_out(real_inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    r = gfxkit.census(real_inputs, out, require="gfx90a,gfx1200", serial=True, progress=False)
    # wheel, deb, 6 bundles, the damaged one, the image, the missing path
    assert r.inputs == 11, r
    return out


def test_rows_agree_with_list_json(serial_out, gfxkit_bin):
    ins = {r["input"]: r for r in table(serial_out, "inputs")}
    co = table(serial_out, "code_objects")
    checked = 0
    for name, row in ins.items():
        if row["status"] == "error":
            assert row["kind"] == "unreadable" and name in row["error"]
            continue
        mine = census_rows(co, name)
        assert mine == cli_rows(gfxkit_bin, Path(name)), name
        checked += len(mine)
        with open(name, "rb") as f:
            assert row["sha256"] == hashlib.sha256(f.read()).hexdigest()
        assert row["code_objects"] == len(mine)
        assert row["device_bytes"] == sum(r["stored_bytes"] for r in co if r["input"] == name)
    assert checked > 90
    wheel = ins[str(real(WHEEL))]
    assert wheel["kind"] == "wheel" and wheel["status"] == "ok"
    assert "gfx90a:xnack-" in wheel["targets"] or "gfx90a" in wheel["processors"]
    deb = [r for r in co if r["input"] == str(real(DEB))]
    assert all(r["path"].startswith(str(real(DEB)) + "!") and r["member"] for r in deb)
    assert all(r["sha256"] and r["kernels"] and r["code_object_version"] for r in deb)
    image = [r for n, r in ins.items() if n.endswith("image.tar")][0]
    assert image["kind"] == "image" and image["code_objects"] == 2
    assert {r["path"].split("!")[1] for r in co if r["input"].endswith("image.tar")} == {"/opt/app/lib/k.hipfb"}
    assert all(r["layer"].startswith("sha256:") for r in co if r["input"].endswith("image.tar"))
    damaged = [r for n, r in ins.items() if n.endswith("damaged.hipfb")][0]
    assert damaged["status"] in ("error", "damaged") and "damaged.hipfb" in damaged["error"]
    # Each code object's digest is that of the code object gfxkit extracts.
    first = [r for r in deb][0]
    ex = {hashlib.sha256(e.data).hexdigest() for e in gfxkit.extract(first["path"])}
    assert first["sha256"] in ex


def test_a_kernel_database_directory_reads_as_list_does(tmp_path, gfxkit_bin):
    """Debian sid's hipBLASLt 7.1 library (the part scripts/ensure-real-inputs unpacks: Tensile
    indexes beside their CCOB shards and code objects): the inputs of a shard share the
    directory listing their indexes are resolved against, and read so they give the dataset
    of one input a shard (each listing its directory itself), serially and on two threads;
    every file's code objects are those `gfxkit list --check --json` lists for it, and an index
    that loads files the directory lacks, or a mapping that maps them, is damaged, as `gfxkit
    verify` finds them."""
    lib = REAL / "sid" / "usr" / "lib" / "x86_64-linux-gnu" / "hipblaslt" / "library"
    assert lib.is_dir(), f"{lib}: run scripts/ensure-real-inputs"
    names = gfxkit._gfxkit.census_walk_each([str(lib)])[0]
    assert any(n.endswith(".dat") for n in names) and any(n.endswith(".co") for n in names)
    alone = tmp_path / "alone"
    gfxkit.census([str(lib)], alone, serial=True, shard_size=1, progress=False, report=False)
    exactly_once(alone, names)
    for out, how in [(tmp_path / "serial", dict(serial=True)), (tmp_path / "threads", dict(workers=2))]:
        gfxkit.census([str(lib)], out, shard_size=64, progress=False, report=False, **how)
        same_dataset(alone, out)
    # An index whose rows load files the directory lacks (this part of the library is not all
    # of it) is damaged, as `gfxkit verify` says, with the rows named; every other file is ok.
    ins = {r["input"]: r for r in table(alone, "inputs")}
    damaged = 0
    for name, row in ins.items():
        listed = json.loads(subprocess.run([gfxkit_bin, "list", "--json", name], capture_output=True).stdout)
        db = listed["files"][0].get("database") or {"kind": None, "rows": []}
        lacking = [(i, r) for i, r in enumerate(db["rows"]) if r["missing"]]
        if db["kind"] == "tensile-mapping":
            # A mapping is judged as verify judges it: what it maps is not all there.
            verified = json.loads(subprocess.run([gfxkit_bin, "verify", "--json", name], capture_output=True).stdout)
            problems = [p["message"] for p in verified["files"][0]["problems"]]
            assert problems, "this part of the library lacks most of what its mapping maps"
            damaged += 1
            assert row["status"] == "damaged", row
            assert f"{name}: {problems[0]}; {problems[1]}; and {len(problems) - 2} more" in row["error"], row
            continue
        if db["kind"] == "tensile":
            verified = subprocess.run([gfxkit_bin, "verify", name], capture_output=True)
            assert (verified.returncode != 0) == bool(lacking), name
        if not lacking:
            assert row["status"] == "ok", row
            continue
        damaged += 1
        assert row["status"] == "damaged", row
        for i, r in lacking:
            n = len(r["missing"])
            assert f"{name}: row {i} ({r['processor'] or 'any processor'}): {n} file" in row["error"], row
            assert r["missing"][0] in row["error"]
    assert damaged > 0
    co = table(alone, "code_objects")
    for name in names:
        mine = census_rows(co, name)
        assert mine == cli_rows(gfxkit_bin, Path(name)), name
    assert sum(1 for r in co) > 0


def test_kernel_databases_lack_what_check_says(tmp_path, gfxkit_bin):
    """A library's kernel database is judged with the library, a database no library loads as
    one directory, as `gfxkit check` judges them, in its words: Debian sid's hipBLASLt 7.1 (its
    library, which has no device code of its own and is judged by its database, and the part of
    its directory unpacked: gfx1151's shards of every processor's indexes) and rocBLAS 6.4's
    directory without its library (gfx803's and gfx1010's files). Each file of a database was
    an input lacking every other processor's code before; then the databases were judged by
    which processors their files held code for, and hipBLASLt's by its directory."""
    lib = REAL / "sid" / "usr" / "lib" / "x86_64-linux-gnu"
    inputs = [str(lib / "libhipblaslt.so.1.1"), str(lib / "hipblaslt"), str(lib / "rocblas")]
    req = "gfx1151,gfx90a,gfx1010"
    out = tmp_path / "census"
    gfxkit.census(inputs, out, require=req, serial=True, progress=False)
    got = sorted((x["path"], x["required"], x["why"]) for x in table(out, "lacks"))
    c = subprocess.run([gfxkit_bin, "check", "--json", "--require", req, *inputs], capture_output=True)
    want = sorted((f["path"], m, f["why"][m]) for f in json.loads(c.stdout)["files"] for m in f["missing"])
    assert got == want
    hipblaslt = str(lib / "libhipblaslt.so.1.1")
    rocblas = str(lib / "rocblas" / "4.4.1" / "library")
    assert [(p, r) for p, r, _ in got] == [
        (hipblaslt, "gfx1010"), (hipblaslt, "gfx90a"), (rocblas, "gfx1151"), (rocblas, "gfx90a")
    ]

    # hipBLASLt's library named alone is read with the database beside it, as check reads it:
    # the part unpacked passes gfx1151 and lacks gfx90a's shards; copied where no database
    # lies beside it, it lacks every target.
    def lacks_of(inputs, req, name):
        out = tmp_path / name
        gfxkit.census(inputs, out, require=req, serial=True, progress=False)
        return [(x["path"], x["required"], x["why"]) for x in table(out, "lacks")]

    def check_of(inputs, req):
        c = subprocess.run([gfxkit_bin, "check", "--json", "--require", req, *inputs], capture_output=True)
        files = json.loads(c.stdout)["files"]
        return [(f["path"], m, f["why"][m]) for f in files for m in f.get("missing", [])]

    got = lacks_of([hipblaslt], "gfx1151,gfx90a", "named")
    assert got == check_of([hipblaslt], "gfx1151,gfx90a"), got
    assert [(p, r) for p, r, _ in got] == [(hipblaslt, "gfx90a")], got
    moved = tmp_path / "elsewhere" / "libhipblaslt.so.1.1"
    moved.parent.mkdir()
    shutil.copy(hipblaslt, moved)
    got = lacks_of([str(moved)], "gfx1151", "moved")
    assert got == check_of([str(moved)], "gfx1151") and len(got) == 1, got
    assert "no kernel database" in got[0][2], got

    # A file a Tensile index loads, gone: check fails the library on that processor whatever
    # code the directory still holds for it, and so does the census, for the same reason.
    broken = tmp_path / "rocblas" / "library"
    shutil.copytree(lib / "rocblas" / "4.4.1" / "library", broken)
    gone = "TensileLibrary_Type_BB_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1010.hsaco"
    (broken / gone).unlink()
    out = tmp_path / "broken"
    gfxkit.census([str(broken)], out, require="gfx1010,gfx803", serial=True, progress=False)
    got = [(x["path"], x["required"], x["why"]) for x in table(out, "lacks")]
    c = subprocess.run(
        [gfxkit_bin, "check", "--json", "--require", "gfx1010,gfx803", str(broken)], capture_output=True
    )
    want = [(f["path"], m, f["why"][m]) for f in json.loads(c.stdout)["files"] for m in f["missing"]]
    assert got == want
    assert [(p, r) for p, r, _ in got] == [(str(broken), "gfx1010")]
    assert gone in got[0][2]


def test_bundles_that_load_nothing_lack_what_check_says(built, tmp_path, gfxkit_bin):
    """Two bundles made by clang-offload-bundler from which the HIP runtime loads nothing: one
    of 71 target IDs whose 4,553-byte header is longer than the runtime reads (the census
    passed gfx90a and gfx1100 there, whose code it holds, where check fails them), and one
    whose only device entry is empty (no code-object rows: the census did not judge it); and
    an object holding an offload image, which nothing loads as it is. The census lacks what
    check lacks, saying why."""
    ids = [*[f"gfx{p}" for p in (700, 701, 702, 703, 704, 705, 802, 803, 805)],
           *[f"gfx{p}" for p in range(1030, 1037)], *[f"gfx{p}" for p in (1100, 1101, 1102, 1103)],
           *[f"gfx{p}" for p in (1150, 1151, 1152, 1200, 1201)],
           *[f"gfx{p}:xnack{x}" for p in (801, 810, 900, 902, 904, 909, "90c", 1010, 1011, 1012, 1013)
             for x in "-+"],
           *[f"gfx{p}:sramecc{s}:xnack{x}" for p in (906, 908, "90a", 940, 941, 942) for s in "-+" for x in "-+"]]
    assert len(ids) == 71
    bundler = tool("clang-offload-bundler")
    many = tmp_path / "many.hipfb"
    run(bundler, "-type=o", "-targets=" + ",".join(
        ["host-x86_64-unknown-linux-gnu", *[f"hipv4-amdgcn-amd-amdhsa--{t}" for t in ids]]),
        "-input=/dev/null", *[f"-input={built['code_object']}"] * len(ids), f"-output={many}")
    empty = tmp_path / "empty.hipfb"
    run(bundler, "-type=o", "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a",
        "-input=/dev/null", "-input=/dev/null", f"-output={empty}")
    # An object whose device code is an offload image, linked into a bundle before anything
    # loads it: check judges nothing of it, nor does the census (it lacked gfx1100 there).
    packed = tmp_path / "k.offload"
    run(tool("clang-offload-packager"), "-o", str(packed),
        f"--image=file={built['code_object']},triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip")
    (tmp_path / "e.c").write_text("int x;\n")
    obj = tmp_path / "k.o"
    run(tool("clang"), "-c", str(tmp_path / "e.c"), "-Xclang", f"-fembed-offload-object={packed}",
        "-o", str(obj))
    req = "gfx90a,gfx1100"
    out = tmp_path / "census"
    gfxkit.census([str(many), str(empty), str(obj)], out, require=req, serial=True, progress=False)
    assert [r["container"] for r in table(out, "code_objects") if r["input"] == str(obj)] == ["offload-image"]
    lacks = table(out, "lacks")
    c = subprocess.run([gfxkit_bin, "check", "--json", "--require", req, str(many), str(empty), str(obj)],
                       capture_output=True)
    files = json.loads(c.stdout)["files"]
    want = sorted((f["path"], m) for f in files for m in f.get("missing", []))
    assert sorted((x["path"], x["required"]) for x in lacks) == want == [
        (str(empty), "gfx1100"), (str(empty), "gfx90a"), (str(many), "gfx1100"), (str(many), "gfx90a")]
    unread = "the bundle header is 4553 bytes; the HIP runtime reads only the first 4096 bytes"
    for x in lacks:
        said = next(f for f in files if f["path"] == x["path"])["why"][x["required"]]
        if x["path"] == str(many):
            assert unread in x["why"] and unread in said, (x["why"], said)
    # In check's words, each of them.
    want = sorted((f["path"], m, f["why"][m]) for f in files for m in f.get("missing", []))
    assert sorted((x["path"], x["required"], x["why"]) for x in lacks) == want
    dead = {r["input"]: r["dead_units"] for r in table(out, "inputs")}
    assert [(d["unit"], d["header_bytes"]) for d in dead[str(many)]] == [(0, 4553)], dead
    assert [(d["why"], d["header_bytes"]) for d in dead[str(empty)]] == [
        ("a bundle whose device entries are all empty", None)], dead


def test_a_kernel_database_in_a_package_is_judged_by_its_members(tmp_path):
    """A Tensile library in a package is judged against the members beside it, as on disk
    against its directory: hipBLASLt 7.1's lazy indexes of every processor with only gfx1151's
    shards beside them make the package damaged, naming an index and a shard it lacks;
    gfx1151's part alone (its index, shards and code) is sound."""
    lib = REAL / "sid" / "usr" / "lib" / "x86_64-linux-gnu" / "hipblaslt" / "library"
    import zipfile

    def wheel(name, keep):
        w = tmp_path / f"{name}-7.1.1-py3-none-any.whl"
        with zipfile.ZipFile(w, "w") as z:
            for f in sorted(lib.iterdir()):
                if keep(f.name):
                    z.write(f, f"hipblaslt/library/{f.name}")
        return w

    every = wheel("every", lambda n: True)
    own = wheel("own", lambda n: "gfx1151" in n)
    out = tmp_path / "census"
    gfxkit.census([str(every), str(own)], out, serial=True, progress=False)
    rows = {r["input"]: r for r in table(out, "inputs")}
    assert rows[str(own)]["status"] == "ok", rows[str(own)]["error"]
    bad = rows[str(every)]
    assert bad["status"] == "damaged", bad
    assert "TensileLibrary_lazy_gfx90a.dat: row 0 (gfx90a, 104 CUs): " in bad["error"], bad["error"]
    assert "TensileLiteLibrary_lazy_Mapping.dat: solution 0: library " in bad["error"], bad["error"]
    assert "_gfx90a.co is missing" in bad["error"], bad["error"]


def test_an_aiter_kernel_map_missing_its_kernels_is_damaged(tmp_path, gfxkit_bin):
    """An aiter kernel map (amd-aiter's wheel, one of its directories unpacked) is judged by
    the code objects beside it as `gfxkit verify` judges it: intact it is ok; with one code
    object gone and another replaced by a code object without the kernel its row names, it is
    damaged with verify's problems (the census used to call it ok)."""
    import zipfile

    wheel = next(REAL.glob("amd_aiter-*.whl"), None)
    assert wheel, f"amd_aiter-*.whl is missing from {REAL}: run scripts/ensure-real-inputs"
    part = "aiter_meta/hsa/gfx942/bf16gemm/"
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if m.startswith(part)]
        z.extractall(tmp_path / "t", members)
    d = tmp_path / "t" / part
    maps = sorted(d.glob("*.csv"))
    cos = sorted(d.glob("*.co"))
    assert len(maps) == 1 and len(cos) >= 3, members

    def judged(out):
        gfxkit.census([str(d)], out, serial=True, progress=False, report=False)
        return {r["input"]: r for r in table(out, "inputs")}

    intact = judged(tmp_path / "intact")
    assert all(r["status"] == "ok" for r in intact.values()), intact
    shutil.copyfile(cos[0], cos[1])
    cos[2].unlink()
    ins = judged(tmp_path / "damaged")
    name = str(maps[0])
    verified = json.loads(subprocess.run([gfxkit_bin, "verify", "--json", name], capture_output=True).stdout)
    problems = [p["message"] for p in verified["files"][0]["problems"]]
    assert len(problems) == 2 and "has no function symbol" in problems[0], problems
    assert "is not there" in problems[1], problems
    assert ins[name]["status"] == "damaged", ins[name]
    assert ins[name]["error"] == f"{name}: {problems[0]}; {problems[1]}", ins[name]
    assert all(r["status"] == "ok" for n, r in ins.items() if n != name), ins


def test_a_local_run_closes_a_shard_at_its_byte_limit(tmp_path, monkeypatch):
    """A local run plans shards of up to LOCAL_SHARD_SIZE inputs (and at least four a worker),
    each closed early once its files hold LOCAL_SHARD_BYTES: a census stopped and started
    again reads little twice. With the limit at three files' bytes, 40 equal files make
    shards of three (and one of one) where they made four of ten, and the same dataset."""
    import gfxkit.census as census_module

    tree = small_tree(tmp_path / "t", 40)
    files = sorted(str(p) for p in tree.rglob("k*.hipfb"))
    size = os.path.getsize(files[0])
    assert len(files) == 40 and all(os.path.getsize(f) == size for f in files)

    def shards(out):
        gfxkit.census(files, out, serial=True, progress=False, report=False)
        plan = json.loads((out / "_census" / "plan.json").read_text())
        # The sizes the plan closed shards by are not kept in it.
        assert all(set(it) == {"name", "source", "sha256", "aliases"} for s in plan["shards"] for it in s["items"])
        return [len(s["items"]) for s in plan["shards"]]

    assert shards(tmp_path / "whole") == [10, 10, 10, 10]
    monkeypatch.setattr(census_module, "LOCAL_SHARD_BYTES", 3 * size)
    assert shards(tmp_path / "out") == [3] * 13 + [1]
    same_dataset(tmp_path / "out", tmp_path / "whole")


def test_a_cluster_run_sizes_its_shards_by_the_clusters_threads(tmp_path, monkeypatch):
    """On a Dask cluster the census connects first and plans shards for its threads (at least
    four each: 40 inputs on two threads are eight shards of five), each closed early at
    CLUSTER_SHARD_BYTES of input files; the dataset is the one a serial run makes; a census
    with nothing new to plan or read does not connect. Downloads close a shard at SHARD_URLS
    of them."""
    import gfxkit.census as census_module

    tree = small_tree(tmp_path / "t", 40)
    files = sorted(str(p) for p in tree.rglob("k*.hipfb"))
    size = os.path.getsize(files[0])
    assert len(files) == 40 and all(os.path.getsize(f) == size for f in files)

    def shards(out, **how):
        gfxkit.census(files, out, progress=False, report=False, **how)
        return [len(s["items"]) for s in json.loads((out / "_census" / "plan.json").read_text())["shards"]]

    gfxkit.census(files, tmp_path / "serial", serial=True, progress=False, report=False)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        assert shards(tmp_path / "cluster", client=client) == [5] * 8
        monkeypatch.setattr(census_module, "CLUSTER_SHARD_BYTES", 3 * size)
        assert shards(tmp_path / "bytes", client=client) == [3] * 13 + [1]
    for out in ("cluster", "bytes"):
        same_dataset(tmp_path / out, tmp_path / "serial")
    # A finished census run again with the same inputs plans and reads nothing: it does not
    # connect (its scheduler is gone), it rebuilds the derived tables.
    r = gfxkit.census(files, tmp_path / "cluster", scheduler="tcp://127.0.0.1:9", progress=False)
    assert (r.inputs, r.scanned) == (40, 0)
    urls = [{"name": f"https://h.example/{i}.whl", "source": f"https://h.example/{i}.whl"} for i in range(40)]
    local = [{"name": f, "source": f} for f in files[:4]]
    cut = census_module._chunks(local[:2] + urls + local[2:], 1000, 1 << 40, census_module.SHARD_URLS)
    assert [len(c) for c in cut] == [18, 16, 10]


def test_local_copies_are_read_once(tmp_path):
    """Local files of the same bytes (a copy, a hard link) are read once: the others are
    rows of the same content (``same_as``); a census extended with one more copy reads it."""
    tree = small_tree(tmp_path / "t", 3)
    src = tree / "d0" / "k000.hipfb"
    copies = tmp_path / "copies"
    copies.mkdir()
    shutil.copyfile(src, copies / "k000.hipfb")
    os.link(src, copies / "hard.hipfb")
    out = tmp_path / "out"
    gfxkit.census([str(tree), str(copies)], out, serial=True, progress=False)
    ins = {x["input"]: x for x in table(out, "inputs")}
    same = sorted(str(p) for p in (src, copies / "k000.hipfb", copies / "hard.hipfb"))
    first = same[0]
    assert ins[first]["same_as"] is None and ins[first]["status"] == "ok"
    for n in same[1:]:
        assert ins[n]["same_as"] == first, ins[n]
    # Inputs of one size and other bytes are not copies.
    others = [n for n in ins if n not in same and ins[n]["status"] == "ok"]
    assert others and all(ins[n]["same_as"] is None for n in others)
    co = table(out, "code_objects")

    def rows_of(name):
        return sorted(
            (json.dumps(dict(x, input=None, path=x["path"].replace(name, "F")), sort_keys=True)
             for x in co if x["input"] == name))

    assert rows_of(first) and all(rows_of(n) == rows_of(first) for n in same[1:])
    # Extended with another copy: read under its own name.
    more = tmp_path / "more"
    more.mkdir()
    shutil.copyfile(src, more / "k.hipfb")
    gfxkit.census([str(tree), str(copies), str(more)], out, serial=True, progress=False)
    ins = {x["input"]: x for x in table(out, "inputs")}
    assert ins[str(more / "k.hipfb")]["status"] == "ok"
    co = table(out, "code_objects")
    assert rows_of(str(more / "k.hipfb")) == rows_of(first)


def test_retry_errors_reads_again_the_shards_of_inputs_that_could_not_be_read(tmp_path):
    """An input that could not be read (here: missing, then made) stays an error row when the
    census runs again; with ``retry_errors`` (``--retry-errors``) the shard holding it is read
    again whole and the others are left as they are, damaged inputs included: the dataset
    then equals a fresh census's."""
    tree = small_tree(tmp_path / "t", 6)
    late = tmp_path / "late.hipfb"
    inputs = [str(tree), str(late)]
    out = tmp_path / "out"
    r = gfxkit.census(inputs, out, shard_size=2, workers=2, progress=False)
    assert r.inputs == 8 and r.errors == 2 and r.unreadable == 1, r
    ins = {x["input"]: x for x in table(out, "inputs")}
    assert ins[str(late)]["status"] == "error"
    assert ins[str(tree / "damaged.hipfb")]["status"] == "damaged"
    shards = {p.name: p.stat().st_mtime_ns for p in (out / "inputs").glob("*.parquet")}
    assert len(shards) == 4
    with_late = [n for n in shards if any(
        x["input"] == str(late) for x in pq.read_table(out / "inputs" / n).to_pylist())]
    assert len(with_late) == 1
    assert [n for n in shards if dataset.shard_has_errors(out, n[: -len(".parquet")])] == with_late
    late.write_bytes(bundle([("hipv4-amdgcn-amd-amdhsa--gfx1100", random.Random(7).randbytes(2048))]))
    time.sleep(0.01)
    # Run again: a finished census reads nothing, errors included; it says how to retry them.
    cli = [sys.executable, "-m", "gfxkit", "census", *inputs, "-o", str(out), "--no-progress"]
    p = subprocess.run(cli, capture_output=True, text=True)
    assert p.stdout.startswith("8 inputs (0 read now)") and p.returncode == 1, p
    assert "1 of them could not be read (status error); run the census again with " \
        "--retry-errors" in p.stderr, p.stderr
    # Retried, through the command line: only the shard of the error is read again.
    p = subprocess.run(cli + ["--retry-errors"], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr  # the damaged input stays
    assert p.stdout.startswith("8 inputs (2 read now)"), p.stdout
    assert "retry" not in p.stderr, p.stderr
    after = {p.name: p.stat().st_mtime_ns for p in (out / "inputs").glob("*.parquet")}
    assert [n for n in shards if after[n] != shards[n]] == with_late
    ins = {x["input"]: x for x in table(out, "inputs")}
    assert ins[str(late)]["status"] == "ok" and ins[str(late)]["code_objects"] == 1
    assert ins[str(tree / "damaged.hipfb")]["status"] == "damaged"
    assert not any(dataset.shard_has_errors(out, n[: -len(".parquet")]) for n in after)
    fresh = tmp_path / "fresh"
    gfxkit.census(inputs, fresh, shard_size=2, serial=True, progress=False)
    same_dataset(out, fresh)
    # Nothing left to retry: nothing read.
    r = gfxkit.census(inputs, out, retry_errors=True, progress=False)
    assert r.scanned == 0 and r.errors == 1 and r.unreadable == 0, r


def test_nvidia_device_code_is_counted(built, tmp_path):
    """A CUDA build (a host library given CUDA fat binary sections) and a library holding both
    AMD code objects and a fat binary: each input row counts its NVIDIA bytes, the report names
    them, and the shards of an earlier gfxkit, written without the column, still read (null)."""
    d = tmp_path / "in"
    d.mkdir()
    fatbin = tmp_path / "fatbin.bin"
    # An NVIDIA fat binary's header (magic 0xba55ed50, version 1, header size 16, payload size).
    fatbin.write_bytes(struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 3000) + b"\xcc" * 3000)
    src = tmp_path / "plain.c"
    src.write_text("int plain(int x) { return x + 1; }\n")
    plain = tmp_path / "libplain.so"
    run(tool("clang"), "-shared", "-fPIC", "-nostdlib", str(src), "-o", str(plain))
    cuda, both, amd = d / "libcuda_build.so", d / "libboth.so", d / "libamd.so"
    run(tool("llvm-objcopy"), f"--add-section=.nv_fatbin={fatbin}",
        f"--add-section=__nv_relfatbin={fatbin}", str(plain), str(cuda))
    run(tool("llvm-objcopy"), f"--add-section=.nv_fatbin={fatbin}", str(built["lib"]), str(both))
    shutil.copyfile(built["lib"], amd)
    out = tmp_path / "out"
    result = gfxkit.census([str(d)], out, serial=True, progress=False)
    assert result.nvidia == 2, result.__dict__
    ins = {Path(r["input"]).name: r for r in table(out, "inputs")}
    assert ins["libcuda_build.so"]["nvidia_bytes"] == 2 * 3016, ins
    assert ins["libcuda_build.so"]["code_objects"] == 0 and ins["libcuda_build.so"]["status"] == "ok"
    assert ins["libboth.so"]["nvidia_bytes"] == 3016 and ins["libboth.so"]["code_objects"] == 4, ins
    assert ins["libamd.so"]["nvidia_bytes"] == 0, ins
    page = (out / "report.html").read_text()
    assert "<h2 id='nvidia'>NVIDIA device code</h2><p>Inputs holding NVIDIA device code" in page
    assert "runs): <b>2</b>; of those, holding no AMD code object" in page
    assert "one): <b>1</b>." in page and str(cuda) in page
    # A shard written before the column was: read back with the column null, left out of the page.
    for f in (out / "inputs").glob("*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.drop_columns(["nvidia_bytes"]).replace_schema_metadata(t.schema.metadata), f)
    assert gfxkit.census([str(d)], out, serial=True, progress=False).nvidia == 0
    assert {r["nvidia_bytes"] for r in table(out, "inputs")} == {None}
    assert "No input holds NVIDIA device code." in (out / "report.html").read_text()


def test_metadata_schema_and_duckdb(serial_out):
    for f in (serial_out / "code_objects").glob("*.parquet"):
        md = pq.read_metadata(f)
        assert md.metadata[b"gfxkit.census.schema"] == str(dataset.SCHEMA_VERSION).encode()
        assert md.row_group(0).column(0).compression == "ZSTD"
        assert md.row_group(0).column(0).statistics is not None
    n = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{serial_out}/code_objects/*.parquet')"
    ).fetchall()[0][0]
    assert n == len(table(serial_out, "code_objects"))
    lacks = table(serial_out, "lacks")
    assert {x["required"] for x in lacks} <= {"gfx90a", "gfx1200"}
    # librocrand 5.3 predates gfx1200.
    assert any(x["required"] == "gfx1200" and DEB in x["input"] for x in lacks)
    # The matrix: one row per (input, target).
    t = table(serial_out, "targets")
    assert len({(x["input"], x["target_id"]) for x in t}) == len(t)
    # By package: the wheel and the .deb, each one build, a row per processor it carries and
    # per required one; the .deb lacks gfx1200.
    pk = duckdb.sql(
        f"SELECT package, processor, builds, builds_with, without FROM '{serial_out}/packages.parquet'"
        " WHERE layout = 'package' ORDER BY ALL"
    ).fetchall()
    assert {p for p, *_ in pk} == {"librocrand1", "torch-scatter-rocm"}, pk
    deb = {proc: (b, w, wo) for p, proc, b, w, wo in pk if p == "librocrand1"}
    assert deb["gfx1200"] == (1, 0, [str(real(DEB))]), deb
    assert deb["gfx90a"] == (1, 1, []), deb
    carried = {x["processor"] for x in t if x["input"] == str(real(DEB))}
    assert set(deb) == carried | {"gfx90a", "gfx1200"}
    assert pq.read_metadata(serial_out / "packages.parquet").metadata[b"gfxkit.census.table"] == b"packages"


def test_the_docs_duckdb_queries_run_on_a_census(serial_out):
    """Every statement of docs/census.md's DuckDB block runs on a real census (its ``out/``
    replaced by the dataset's directory), and those that must find rows do."""
    text = (ROOT / "docs" / "census.md").read_text()
    block = text.split("## Five questions in DuckDB", 1)[1].split("```sql\n", 1)[1].split("```", 1)[0]
    code = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("--"))
    statements = [s.strip() for s in code.split(";") if s.strip()]
    assert len(statements) == 8, statements
    con = duckdb.connect()
    results = [con.execute(s.replace("'out/", f"'{serial_out}/")).fetchall() for s in statements]
    co, ins = table(serial_out, "code_objects"), table(serial_out, "inputs")
    # 1: the inputs with gfx1200 or gfx12-generic code (the wheel has), and per package how
    # many builds carry native gfx1200 code (required: a row for each package, the .deb's 0).
    assert [r[0] for r in results[0]] == sorted(
        {x["input"] for x in co if x["processor"] in ("gfx1200", "gfx12-generic")})
    wheel = [x["input"] for x in ins if WHEEL in x["input"]][0]
    assert wheel in [r[0] for r in results[0]]
    by_pkg = {r[0]: r for r in results[1]}
    assert sorted(by_pkg) == ["librocrand1", "torch-scatter-rocm"]
    assert by_pkg["librocrand1"][2:] == (0, 1, [str(real(DEB))])
    loads = any(x["input"] == wheel and x["processor"] in ("gfx1200", "gfx12-generic", "amdgcnspirv")
                for x in co)
    assert by_pkg["torch-scatter-rocm"][2] == int(loads)
    # 2: the bytes of gfx906; 3: the matrix, a row per input with code; 4: copies;
    # 5: the lacks, the inputs not read, the CUDA builds.
    assert results[2][0][0] == sum(x["stored_bytes"] for x in co if x["processor"] == "gfx906")
    assert len(results[3]) == len({x["input"] for x in co if x["target_id"]})
    assert results[5], "the lacks"
    assert {r[0] for r in results[6]} == {x["input"] for x in ins if x["status"] != "ok"}


def test_lacks_for_a_rocm_release_follow_check(serial_out, tmp_path, gfxkit_bin):
    """``--rocm`` makes the lacks those of ``gfxkit check --rocm`` on each file: the wheel's
    V6 code objects on ROCm 6.2 (its loader takes up to V5), librocrand's gfx90a on 4.2 (whose
    runtime does not know gfx90a); the newest listed release changes nothing."""
    out = tmp_path / "census"
    shutil.copytree(serial_out, out)
    req = "gfx90a,gfx1100"

    def lacks(rocm):
        gfxkit.census.report(out, require=req, rocm=rocm)
        return sorted((x["path"], x["required"], x["why"]) for x in table(out, "lacks"))

    newest = lacks(None)
    assert lacks("7.13") == newest
    on62 = lacks("6.2")
    assert on62 != newest
    assert "ROCm 6.2" in (out / "report.html").read_text()
    wheel = str(real(WHEEL))
    v6 = [x for x in on62 if x[0].startswith(wheel + "!")]
    assert v6 and all("code object V6: ROCm 6.2 loads up to V5" in why for _, _, why in v6)
    on42 = lacks("4.2")
    deb = str(real(DEB))
    gfx90a = [why for path, r, why in on42 if path.startswith(deb + "!") and r == "gfx90a"]
    assert gfx90a and all(
        w.startswith("gfx90a: ROCm 4.2's runtime does not know this processor (first in 4.3") for w in gfx90a
    )
    # The same answer as check --rocm, file by file, in the same words.
    for rocm, got in (("6.2", on62), ("4.2", on42)):
        for src in (wheel, deb):
            c = subprocess.run(
                [gfxkit_bin, "check", "--json", "--require", req, "--rocm", rocm, src], capture_output=True
            )
            report = json.loads(c.stdout)
            want = sorted((f["path"], m, f["why"][m]) for f in report["files"] for m in f.get("missing", []))
            assert sorted(x for x in got if x[0].startswith(src + "!")) == want, (rocm, src)
    # Without a release, in check's own words too.
    said = []
    for src in (wheel, deb):
        c = subprocess.run([gfxkit_bin, "check", "--json", "--require", req, src], capture_output=True)
        files = json.loads(c.stdout)["files"]
        want = sorted((f["path"], m, f["why"][m]) for f in files for m in f.get("missing", []))
        assert [x for x in newest if x[0].startswith(src + "!")] == want, src
        said += want
    assert said
    # A release gfxkit cannot read is refused before anything is scanned.
    with pytest.raises(gfxkit.census.CensusError, match="not a ROCm release number"):
        gfxkit.census.report(out, require=req, rocm="six")


def test_lacks_on_every_release_are_checks_word_for_word(tmp_path, gfxkit_bin):
    """Layouts made by clang's tools, judged by the census and by ``gfxkit check`` under the
    newest runtime and eight ROCm releases: a library of two bundles, one of V6 code objects
    (refused by releases that load up to V5), one of V5; a library whose two bundles each hold
    one xnack setting of gfx90a in V5 and the other in V6 (a release loading up to V5 leaves no
    single setting with code in both: check names both V6 entries it passed over); compressed
    bundles (refused whole by releases that unpack none); generic targets; a SPIR-V bundle and
    a SPIR-V and native one; and kpack-split binaries (refused whole by releases without the
    kpack loader; a wrapper whose archive is missing, a binary whose archives all are: the
    census passed both, having no code-object rows for them). The census lacks what check lacks,
    file by file and target by target, in the same words; under the newest runtime a split
    binary's reasons are the loader's (which archive is missing) where the census says which
    targets its archives hold, so there the verdicts alone are compared."""
    from conftest import KERNELS

    clang, bundler = tool("clang++"), tool("clang-offload-bundler")
    common = ["-x", "hip", "-nogpulib", "-nogpuinc", "-O1"]

    def source(prefix):
        path = tmp_path / f"{prefix}.hip"
        path.write_text(KERNELS.replace("PREFIX", prefix))
        return str(path)

    def obj(name, archs, *extra):
        out = tmp_path / f"{name}.o"
        run(clang, *common, "-fPIC", f"-cuid={name}", *[f"--offload-arch={a}" for a in archs], *extra,
            "-c", source(name), "-o", str(out))
        return str(out)

    def lib(name, *objs):
        out = tmp_path / "libs" / f"lib{name}.so"
        out.parent.mkdir(exist_ok=True)
        run(clang, "-fuse-ld=lld", "-shared", *objs, "-o", str(out))
        return out

    v6 = "-mcode-object-version=6"
    libs = [
        lib("versions", obj("a6", ["gfx1100", "gfx906"], v6), obj("b5", ["gfx906"])),
        lib("ccob", obj("z", ["gfx906", "gfx942", "gfx1151"], "--offload-compress")),
        lib("generic", obj("g", ["gfx9-generic", "gfx11-generic", "gfx90a"], v6)),
    ]
    # Two bundles of gfx90a code objects, each xnack setting in V5 in one and V6 in the other.
    co = {}
    for v in (5, 6):
        for x in "+-":
            fb = tmp_path / f"x{v}{x}.hipfb"
            run(clang, *common, "--cuda-device-only", f"-cuid=x{v}", f"--offload-arch=gfx90a:xnack{x}",
                f"-mcode-object-version={v}", "-c", source(f"x{v}"), "-o", str(fb))
            co[v, x] = tmp_path / f"x{v}{x}.co"
            run(bundler, "-type=o", f"-input={fb}", "-unbundle",
                f"-targets=hipv4-amdgcn-amd-amdhsa--gfx90a:xnack{x}", f"-output={co[v, x]}")
    host = "host-x86_64-unknown-linux-gnu"
    objs = []
    for name, first, second in (("m1", "+", "-"), ("m2", "-", "+")):
        fb = tmp_path / f"{name}.hipfb"
        run(bundler, "-type=o", f"-targets={host},hipv4-amdgcn-amd-amdhsa--gfx90a:xnack{first},"
            f"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack{second}",
            "-input=/dev/null", f"-input={co[5, first]}", f"-input={co[6, second]}", f"-output={fb}")
        o = obj(name, ["gfx906"])
        run(tool("llvm-objcopy"), f"--update-section=.hip_fatbin={fb}", o)
        objs.append(o)
    libs.append(lib("settings", *objs))
    # SPIR-V: a module header (what a loader checks first), alone and beside native code.
    spv = tmp_path / "k.spv"
    spv.write_bytes(struct.pack("<5I", 0x07230203, 0x00010600, 0, 1, 0))
    spirv = [tmp_path / "spirv.hipfb", tmp_path / "spirv-native.hipfb"]
    run(bundler, "-type=o", f"-targets={host},hip-spirv64-amd-amdhsa--amdgcnspirv",
        "-input=/dev/null", f"-input={spv}", f"-output={spirv[0]}")
    run(bundler, "-type=o", f"-targets={host},hip-spirv64-amd-amdhsa--amdgcnspirv,"
        "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", "-input=/dev/null", f"-input={spv}",
        f"-input={co[5, '+']}", f"-output={spirv[1]}")
    # Split binaries: every library into one group's archives, and one whose gfx906 archive
    # is gone.
    split = tmp_path / "split"
    run(gfxkit_bin, "kpack", "split", "-r", "--group", "k", "-o", str(split), str(tmp_path / "libs"))
    missing = tmp_path / "missing"
    run(gfxkit_bin, "kpack", "split", "--group", "m", "--kpack-dir", str(missing / "kp"),
        "-o", str(missing / "libversions.so"), str(libs[0]))
    (missing / "kp" / "m_gfx906.kpack").unlink()
    # And one whose archives are all gone: no code-object rows, and it runs nowhere.
    bare = tmp_path / "bare"
    run(gfxkit_bin, "kpack", "split", "--group", "n", "--kpack-dir", str(bare / "kp"),
        "-o", str(bare / "libccob.so"), str(libs[1]))
    for a in (bare / "kp").glob("*.kpack"):
        a.unlink()
    splits = sorted(split.glob("*.so")) + [missing / "libversions.so", bare / "libccob.so"]
    inputs = [str(p) for p in [*libs, *spirv, *splits]]
    req = "gfx906,gfx90a,gfx942,gfx1100,gfx1151,gfx1200"
    out = tmp_path / "census"
    gfxkit.census(inputs, out, require=req, serial=True, progress=False)
    split_paths = {str(p) for p in splits}
    compared = 0
    for rocm in (None, "4.2", "5.0", "6.0", "6.2", "6.3", "6.4", "7.0", "7.2"):
        gfxkit.census.report(out, require=req, rocm=rocm)
        got = sorted((x["path"], x["required"], x["why"]) for x in table(out, "lacks"))
        c = subprocess.run([gfxkit_bin, "check", "--json", "--require", req,
                            *(["--rocm", rocm] if rocm else []), *inputs], capture_output=True)
        files = json.loads(c.stdout)["files"]
        want = sorted((f["path"], m, f["why"][m]) for f in files for m in f.get("missing", []))
        assert [x[:2] for x in got] == [x[:2] for x in want], rocm
        words = [(g, w) for g, w in zip(got, want) if rocm or g[0] not in split_paths]
        assert [g for g, _ in words] == [w for _, w in words], rocm
        compared += len(words)
        if rocm is None:
            assert sorted(r for p, r, _ in got if p == str(bare / "libccob.so")) == sorted(req.split(","))
            # The wrapper whose archive is gone fails gfx1100, whose archive the other has.
            assert (str(missing / "libversions.so"), "gfx1100") in [x[:2] for x in got]
        if rocm == "6.2":
            why = {(p, r): w for p, r, w in got}
            settings = why[str(libs[3]), "gfx90a"]
            assert settings.startswith("no single xnack/sramecc setting of gfx90a has code in all 2 bundles"), settings
            assert ("gfx90a:xnack- passed over: code object V6: ROCm 6.2 loads up to V5; "
                    "gfx90a:xnack+ passed over: code object V6") in settings, settings
            assert why[str(libs[0]), "gfx906"].startswith("no code object ROCm 6.2 loads for gfx906 in 1 of 2 bundles")
        if rocm == "7.2":
            assert all(w.startswith("kpack-split binary (HIPK wrapper): ROCm 7.2's HIP runtime has no kpack loader")
                       for p, _, w in got if p in split_paths)
    assert compared > 400, compared


def test_copies_of_a_split_binary_are_judged_where_each_lies(tmp_path, gfxkit_bin):
    """One split library installed twice, with its archives beside one copy only (a device
    package installed in one prefix): the copies hold the same bytes, but what each loads is
    what lies beside it. The census read one and copied its rows to the other, so the copy
    without archives passed every target check fails (and, the other way round, a copy with
    them failed); each is read where it lies now."""
    from conftest import KERNELS

    src = tmp_path / "k.hip"
    src.write_text(KERNELS.replace("PREFIX", "k"))
    obj, lib = tmp_path / "k.o", tmp_path / "libk.so"
    run(tool("clang++"), "-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "-fPIC", "-cuid=k",
        "--offload-arch=gfx906", "--offload-arch=gfx1100", "-c", str(src), "-o", str(obj))
    run(tool("clang++"), "-fuse-ld=lld", "-shared", str(obj), "-o", str(lib))
    # The one with archives first by name: it is read, the other was its copy.
    full, bare = tmp_path / "a-with", tmp_path / "b-without"
    run(gfxkit_bin, "kpack", "split", "--group", "g", "--kpack-dir", str(full / ".kpack"),
        "-o", str(full / "libk.so"), str(lib))
    bare.mkdir()
    shutil.copy(full / "libk.so", bare / "libk.so")
    req = "gfx906,gfx1100"
    inputs = [str(full / "libk.so"), str(bare / "libk.so")]
    out = tmp_path / "census"
    gfxkit.census(inputs, out, require=req, serial=True, progress=False)
    rows = {r["input"]: r for r in table(out, "inputs")}
    # Found as copies, as before.
    assert rows[inputs[1]]["same_as"] == inputs[0] and rows[inputs[0]]["same_as"] is None
    lacks = sorted((x["path"], x["required"]) for x in table(out, "lacks"))
    c = subprocess.run([gfxkit_bin, "check", "--json", "--require", req, *inputs], capture_output=True)
    want = sorted((f["path"], m) for f in json.loads(c.stdout)["files"] for m in f.get("missing", []))
    assert lacks == want == [(inputs[1], "gfx1100"), (inputs[1], "gfx906")], (lacks, want)
    # The code objects of the one with archives, none of the other.
    assert {r["input"] for r in table(out, "code_objects")} == {inputs[0]}


def test_local_cluster_of_two_workers_gives_the_same_dataset(serial_out, real_inputs, tmp_path):
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        gfxkit.census(real_inputs, tmp_path, require="gfx90a,gfx1200", client=client, shard_size=3, progress=False)
        # Each task reads on its worker's threads: one core a worker here.
        from gfxkit.census.work import worker_threads

        threads = [client.submit(worker_threads, pure=False, workers=[w]).result() for w in client.nthreads()]
        assert threads == [1, 1]
    same_dataset(serial_out, tmp_path)
    assert table(serial_out, "lacks") == table(tmp_path, "lacks")


def test_one_worker_reads_on_one_thread_alike(serial_out, real_inputs, tmp_path):
    """``workers=1``: every step on one core (a package's members visited as they are read, its
    xz decoded on one thread): the dataset of a run on every core. The native reading on one
    thread gives the rows it gives on all."""
    from gfxkit import _gfxkit

    gfxkit.census(real_inputs, tmp_path, require="gfx90a,gfx1200", workers=1, progress=False)
    same_dataset(serial_out, tmp_path)
    assert table(serial_out, "lacks") == table(tmp_path, "lacks")
    items = [(p, p, False) for p in (str(real(DEB)), str(real(WHEEL)))]

    def rows(threads):
        ins, co = _gfxkit.census_rows_json(items, threads=threads)
        # The seconds each input took differ from run to run.
        return [dict(json.loads(r), seconds=0) for r in ins.splitlines()], co

    assert rows(1) == rows(None)
    with pytest.raises(ValueError, match="threads"):
        _gfxkit.census_rows_json(items, threads=0)


def test_local_processes_and_threads_give_the_same_dataset(serial_out, real_inputs, tmp_path):
    """On this machine: two threads of this process (no option), and `processes=True`, a Dask
    LocalCluster of two worker processes that the census starts and stops."""
    for mode in ({}, {"processes": True}):
        out = tmp_path / ("processes" if mode else "threads")
        gfxkit.census(real_inputs, out, require="gfx90a,gfx1200", workers=2, shard_size=2, progress=False, **mode)
        same_dataset(serial_out, out)
        assert table(serial_out, "lacks") == table(out, "lacks")


def test_command_line_with_no_option(serial_out, real_inputs, tmp_path, gfxkit_bin):
    out = tmp_path / "out"
    env = dict(os.environ, GFXKIT_PYTHON=sys.executable)
    r = subprocess.run(
        [gfxkit_bin, "census", *real_inputs, "-o", str(out), "--require", "gfx90a,gfx1200"],
        capture_output=True, text=True, env=env,
    )
    # Two inputs are bad (the damaged bundle, the missing path): exit 1, rows for both.
    assert r.returncode == 1, r.stderr
    same_dataset(serial_out, out)
    # Run again: every shard is done, nothing is read.
    r = subprocess.run(
        [sys.executable, "-m", "gfxkit", "census", *real_inputs, "-o", str(out), "--no-progress"],
        capture_output=True, text=True,
    )
    assert "(0 read now)" in r.stdout, r.stdout + r.stderr
    same_dataset(serial_out, out)
    # Extended with one more input: only that one is read.
    extra = tmp_path / "extra.hipfb"
    extra.write_bytes(bundle([("hipv4-amdgcn-amd-amdhsa--gfx1100", b"k" * 100)]))
    r = subprocess.run(
        [sys.executable, "-m", "gfxkit", "census", *real_inputs, str(extra), "-o", str(out), "--no-progress"],
        capture_output=True, text=True,
    )
    assert "12 inputs (1 read now)" in r.stdout, r.stdout + r.stderr
    assert [x["targets"] for x in table(out, "inputs") if x["input"] == str(extra)] == [["gfx1100"]]
    # The report is rebuilt from the dataset alone.
    (out / "report.html").unlink()
    r = subprocess.run([gfxkit_bin, "census", "--report", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "Support matrix" in (out / "report.html").read_text()


class _KillOnce(distributed.WorkerPlugin):
    """A worker plugin: the first shard task to start on a worker kills that worker's process
    (SIGKILL) a moment later, in the middle of the shard; a marker file says it happened."""

    name = "gfxkit-census-kill-once"

    def __init__(self, marker: str, delay: float) -> None:
        self.marker, self.delay = marker, delay

    def setup(self, worker) -> None:
        self.worker = worker

    def transition(self, key, start, finish, **kw) -> None:
        k = key if isinstance(key, str) else str(key)
        if finish != "executing" or not k.startswith("gfxkit-census-"):
            return
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, f"{os.getpid()} {k}".encode())
        os.close(fd)

        def die() -> None:
            time.sleep(self.delay)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=die, daemon=True).start()


def test_a_worker_killed_mid_shard(tmp_path):
    tree = small_tree(tmp_path / "tree", 40, payload=200_000)
    names = gfxkit._gfxkit.census_walk_each([str(tree)])[0]
    want = tmp_path / "want"
    gfxkit.census([str(tree)], want, serial=True, progress=False)
    marker = tmp_path / "killed"
    out = tmp_path / "out"
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        import cloudpickle

        # The plugin travels by value: the workers need not import this test module.
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        client.register_plugin(_KillOnce(str(marker), 0.3))
        gfxkit.census([str(tree)], out, client=client, shard_size=20, progress=False)
    assert marker.is_file(), "no worker was killed"
    pid = int(marker.read_text().split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    exactly_once(out, names)
    same_dataset(want, out)


def test_census_killed_at_random_points_ends_with_the_same_dataset(tmp_path):
    tree = small_tree(tmp_path / "tree", 24, payload=50_000)
    names = gfxkit._gfxkit.census_walk_each([str(tree)])[0]
    want = tmp_path / "want"
    gfxkit.census([str(tree)], want, serial=True, shard_size=3, progress=False)
    rng = random.Random(40)
    killed_with_shards = 0
    for trial in range(10):
        out = tmp_path / f"run{trial}"
        mode = [["--serial"], ["--workers", "2"], ["--processes", "--workers", "2"]][trial % 3]
        cmd = [sys.executable, "-m", "gfxkit", "census", str(tree), "-o", str(out),
               "--shard-size", "3", "--no-progress", *mode]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.5, 8.0 if "--processes" in mode else 4.0))
        # The census and its worker processes, as a Slurm allocation's end would.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        if (out / "inputs").is_dir() and any((out / "inputs").glob("*.parquet")):
            killed_with_shards += 1
        r = subprocess.run(cmd[:-len(mode)] + ["--serial"], capture_output=True, text=True)
        # The damaged bundle is an input with an error: exit code 1.
        assert r.returncode == 1, r.stderr
        exactly_once(out, names)
        same_dataset(want, out)
        # No temporary file of a killed write is left once the census is complete.
        assert not list(out.glob("**/.gfxkit-*"))
    assert killed_with_shards >= 2, "no run was killed after it had written shards"


class _Index(http.server.BaseHTTPRequestHandler):
    """A simple index on loopback: ``/simple/<project>/`` as PEP 503 HTML, or PEP 691 JSON when
    asked for; ``/files/<name>`` the files; anything else 404."""

    files: dict = {}
    pages: dict = {}
    # Per path, what the next requests meet before it is served: "503" (with Retry-After: 0),
    # "cut" (half the body, then the connection closed), "404".
    faults: dict = {}
    requests: dict = {}
    # The Range headers met per path, and the paths served whole whatever the Range.
    ranges: dict = {}
    no_ranges: set = set()

    def log_message(self, *a) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0]
        self.requests[path] = self.requests.get(path, 0) + 1
        fault = self.faults.get(path, [])
        if fault:
            kind = fault.pop(0)
            if kind == "503":
                self.send_response(503)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if kind == "404":
                self.send_error(404)
                return
            body = self.files[path].read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest()[:16] + '"')
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if path in self.files and self.headers.get("Range"):
            self.ranges.setdefault(path, []).append(self.headers["Range"])
        if path in self.files and self.headers.get("Range") and path not in self.no_ranges:
            body = self.files[path].read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            start = int(self.headers["Range"].split("=", 1)[1].split("-", 1)[0])
            if self.headers.get("If-Range") == etag and start < len(body):
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body[start:])
                return
        if path in self.files:
            body, ctype = self.files[path].read_bytes(), "application/octet-stream"
        elif path in self.pages:
            links = self.pages[path]
            if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
                body = json.dumps(
                    {"meta": {"api-version": "1.0"}, "name": path.split("/")[-2],
                     "files": [{"filename": u.rsplit("/", 1)[-1], "url": u, "hashes": {"sha256": h}} for u, h in links]}
                ).encode()
                ctype = "application/vnd.pypi.simple.v1+json"
            else:
                body = ("<!DOCTYPE html><html><body>" + "".join(
                    f'<a href="{u}#sha256={h}">{u.rsplit("/", 1)[-1]}</a><br/>' for u, h in links
                ) + "</body></html>").encode()
                ctype = "text/html"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if path in self.files:
            self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest()[:16] + '"')
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("form", ["html", "json"])
def test_index_on_loopback(form, tmp_path, serial_out):
    wheel, deb = real(WHEEL), real(DEB)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    deb_digest = hashlib.sha256(deb.read_bytes()).hexdigest()
    _Index.files = {
        f"/files/{WHEEL}": wheel,
        f"/mirror/{WHEEL}": wheel,
        f"/files/{DEB}": deb,
    }
    # The JSON form gives absolute URLs, the HTML form relative ones.
    pre = "../../" if form == "html" else ""
    _Index.pages = {
        "/simple/torch-scatter-rocm/": [(f"{pre}files/{WHEEL}", digest), (f"{pre}mirror/{WHEEL}", digest)],
        "/simple/librocrand1/": [
            (f"{pre}files/{DEB}", "0" * 64),  # a digest that does not match
            (f"{pre}files/gone-1.0.tar.gz", "1" * 64),  # a download that fails (404)
        ],
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    if form == "json":
        _Index.pages = {
            k: [(f"{base}/{u}", h) for u, h in v] for k, v in _Index.pages.items()
        }
    out = tmp_path / "out"
    try:
        r = gfxkit.census([], out, index=f"{base}/simple", projects=["torch_scatter.rocm", "librocrand1"],
                          serial=True, progress=False)
    finally:
        server.shutdown()
    ins = {x["input"]: x for x in table(out, "inputs")}
    assert r.inputs == 4 == len(ins), ins.keys()
    first, mirror = f"{base}/files/{WHEEL}", f"{base}/mirror/{WHEEL}"
    # One wheel reached through two URLs: read once, the second a copy of its rows.
    assert ins[first]["status"] == "ok" and ins[first]["sha256"] == digest
    assert ins[mirror]["same_as"] == first
    co = table(out, "code_objects")
    local = [dict(x, input=None, path=x["path"].replace(str(wheel), "W"))
             for x in table(serial_out, "code_objects") if x["input"] == str(wheel)]
    for url in (first, mirror):
        got = [dict(x, input=None, path=x["path"].replace(url, "W")) for x in co if x["input"] == url]
        assert sorted(got, key=json.dumps) == sorted(local, key=json.dumps)
    bad = ins[f"{base}/files/{DEB}"]
    assert bad["status"] == "error" and "SHA-256 mismatch" in bad["error"]
    assert f"{base}/files/{DEB}" in bad["error"] and deb_digest in bad["error"]
    gone = ins[f"{base}/files/gone-1.0.tar.gz"]
    assert gone["status"] == "error" and "download failed" in gone["error"]
    assert f"{base}/files/gone-1.0.tar.gz" in gone["error"]
    # Downloads are removed after the scan.
    import tempfile

    scratch = Path(tempfile.gettempdir()) / "gfxkit-census-downloads"
    assert not scratch.exists() or not any(scratch.iterdir())


def test_downloads_and_index_pages_that_fail_for_a_while_are_tried_again(tmp_path, monkeypatch):
    """A download or an index page that fails for a reason that may pass (HTTP 503, a
    connection cut in the middle of the body) is tried again; one that cannot pass (404) is
    not; one that keeps failing is an error row saying how many times it was tried."""
    from gfxkit.census import inputs as census_inputs

    monkeypatch.setattr(census_inputs, "BACKOFF", 0.0)
    wheel, deb = real(WHEEL), real(DEB)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    deb_digest = hashlib.sha256(deb.read_bytes()).hexdigest()
    tree = small_tree(tmp_path / "t", 1)
    plain = tree / "d0" / "k000.hipfb"
    plain_digest = hashlib.sha256(plain.read_bytes()).hexdigest()
    _Index.files = {"/files/flaky.whl": wheel, "/files/cut.deb": deb, "/files/down.whl": wheel,
                    "/files/gone.whl": wheel, "/files/whole.hipfb": plain}
    _Index.pages = {"/simple/p/": [("../../files/flaky.whl", digest), ("../../files/cut.deb", deb_digest),
                                   ("../../files/down.whl", "1" * 64), ("../../files/gone.whl", "2" * 64),
                                   ("../../files/whole.hipfb", plain_digest)]}
    _Index.faults = {
        "/simple/p/": ["503"],
        "/files/flaky.whl": ["503", "503"],
        "/files/cut.deb": ["cut"],
        "/files/down.whl": ["503"] * census_inputs.ATTEMPTS,
        "/files/gone.whl": ["404", "404"],
        "/files/whole.hipfb": ["cut"],
    }
    _Index.requests, _Index.ranges = {}, {}
    # A server that sends this one whole, whatever the range asked for.
    _Index.no_ranges = {"/files/whole.hipfb"}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    out = tmp_path / "out"
    try:
        r = gfxkit.census([], out, index=f"{base}/simple", projects=["p"], serial=True, progress=False)
    finally:
        server.shutdown()
    ins = {x["input"].rsplit("/", 1)[-1]: x for x in table(out, "inputs")}
    assert _Index.requests == {"/simple/p/": 2, "/files/flaky.whl": 3, "/files/cut.deb": 2,
                               "/files/down.whl": census_inputs.ATTEMPTS, "/files/gone.whl": 1,
                               "/files/whole.hipfb": 2}
    # The download cut in the middle went on from where it stopped; the one whose server sends
    # whole files started again; both hashed right.
    half = deb.stat().st_size // 2
    assert _Index.ranges == {"/files/cut.deb": [f"bytes={half}-"],
                             "/files/whole.hipfb": [f"bytes={plain.stat().st_size // 2}-"]}
    assert ins["whole.hipfb"]["status"] == "ok" and ins["whole.hipfb"]["sha256"] == plain_digest
    assert ins["flaky.whl"]["status"] == "ok" and ins["flaky.whl"]["sha256"] == digest
    assert ins["cut.deb"]["status"] == "ok" and ins["cut.deb"]["sha256"] == deb_digest
    down = ins["down.whl"]
    assert down["status"] == "error", down
    assert down["error"] == (f"{base}/files/down.whl: download failed: after "
                             f"{census_inputs.ATTEMPTS} attempts: HTTP Error 503: Service Unavailable")
    gone = ins["gone.whl"]
    assert gone["status"] == "error" and gone["error"] == (
        f"{base}/files/gone.whl: download failed: HTTP Error 404: Not Found"), gone
    assert r.unreadable == 2
    _Index.faults, _Index.no_ranges = {}, set()


def _chromium() -> str:
    p = os.environ.get("GFXKIT_CHROMIUM") or shutil.which("chromium")
    assert p, "chromium is missing: run `bash scripts/ensure-chromium` (apt-get install chromium)"
    return p


def _png_pixels(data: bytes):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG."""
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, w, h, bpp = 8, b"", 0, 0, 4
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        chunk = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        at += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa_, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa_ <= pb and pa_ <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def test_report_in_headless_chromium(serial_out, tmp_path):
    page = serial_out / "report.html"
    text = page.read_text()
    # Self-contained: nothing is fetched (the SVG namespace is a name, not a request).
    import re

    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "<link" not in text and "@import" not in text and "url(" not in text
    for part in ("Support matrix", "Device bytes per target", "Keeping only the required targets",
                 "Code objects stored more than once", "lack a required target", "Errors"):
        assert part in text
    shot = tmp_path / "shot.png"
    common = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--disable-background-networking", "--disable-component-update", "--no-first-run",
              f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run(common + [f"--screenshot={shot}", "--window-size=1400,1000", f"file://{page}"],
                       capture_output=True, timeout=120)
    assert shot.is_file(), r.stderr.decode(errors="replace")
    w, h, bpp, rows = _png_pixels(shot.read_bytes())
    assert (w, h) == (1400, 1000)
    # The matrix's cells: native code green (#4caf50), a missing required target red (#ef9a9a).
    def count(rgb):
        return sum(1 for row in rows for i in range(0, len(row), bpp * 3) if tuple(row[i:i + 3]) == rgb)

    assert count((0x4C, 0xAF, 0x50)) > 200, "no native cell drawn"
    assert count((0xEF, 0x9A, 0x9A)) > 20, "no missing-target cell drawn"
    # The DOM after the page's script: the matrix has a row per input.
    dom = subprocess.run(common + ["--dump-dom", f"file://{page}"], capture_output=True, timeout=120).stdout.decode()
    body = dom.split("id=\"matrix-table\"", 1)[1].split("</table>", 1)[0]
    assert body.count("<tr>") == 1 + 11


def test_tables_derived_as_written_equal_those_read_back(serial_out, tmp_path):
    """A run derives its tables and report from the shards' tables as it wrote them; rebuilt
    from the shards' files (``gfxkit census --report``), they are the same bytes."""
    import gfxkit.census as census_module

    copy = tmp_path / "copy"
    shutil.copytree(serial_out, copy)
    for f in ("report.html", "targets.parquet", "lacks.parquet"):
        (copy / f).unlink()
    census_module.report(copy)
    for f in ("report.html", "targets.parquet", "lacks.parquet"):
        assert (copy / f).read_bytes() == (serial_out / f).read_bytes(), f


def test_outputs_get_the_permissions_of_new_files(tmp_path):
    """Every file of the dataset gets the permissions a new file gets under the umask (a
    temporary file is its owner's alone until it is renamed into place); a file replaced
    keeps its own."""
    tree = small_tree(tmp_path / "t", 3)
    out = tmp_path / "out"
    old = os.umask(0o027)
    try:
        gfxkit.census([str(tree)], out, progress=False)
    finally:
        os.umask(old)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 6 and {p.name for p in files} >= {"report.html", "plan.json", "targets.parquet"}
    for p in files:
        assert p.stat().st_mode & 0o777 == 0o640, (p, oct(p.stat().st_mode))
    (out / "report.html").chmod(0o604)
    gfxkit.census.report(out)
    assert (out / "report.html").stat().st_mode & 0o777 == 0o604


def test_report_cells_copies_and_ties_from_tables(tmp_path):
    """The report from tables written here: a cell per (input, processor) naming the feature
    settings of its target IDs (sorted, whatever order the rows give them), generic and SPIR-V
    cells told apart, a required processor missing marked where an input has code objects and
    blank where it has none (SPIR-V, which loads on it, named instead); code objects stored more than once counted with their inputs;
    targets and copies of equal bytes in the order the rows first name them."""
    import pyarrow as pa

    from gfxkit.census import page

    def co(input_, target, stored, sha):
        proc = target.split(":")[0]
        return {"input": input_, "path": input_, "container": "uncompressed", "unit": 0,
                "entry": 1, "entry_id": f"hipv4-amdgcn-amd-amdhsa--{target}", "target_id": target,
                "processor": proc, "generic": "generic" in proc, "stored_bytes": stored,
                "uncompressed_bytes": stored, "sha256": sha}

    rows = [
        co("b.so", "gfx90a:xnack+", 100, "h2"),
        co("a.so", "gfx1100", 300, "h1"),
        co("b.so", "gfx90a:xnack-", 100, "h3"),
        co("b.so", "gfx9-generic", 50, "h4"),
        co("a.so", "gfx1100", 300, "h1"),
        co("c.so", "amdgcnspirv", 70, "h5"),
        co("c.so", "gfx90a:xnack+", 100, "h2"),
        co("a.so", "gfx90a:xnack-", 100, "h3"),
    ]
    ins = [
        {"input": n, "size": 1, "kind": "bundle", "device_bytes": d, "nvidia_bytes": 0,
         "code_objects": c, "status": "ok", "targets": [], "processors": []}
        for n, d, c in [("a.so", 700, 3), ("b.so", 250, 3), ("c.so", 170, 2), ("d.so", 0, 0),
                        ("e.so", 10, 1)]
    ]
    rows.append(dict(co("e.so", "gfx1100", 10, None), target_id=None, processor=None))
    tables = {
        "code_objects": pa.Table.from_pylist(rows, schema=dataset.code_object_schema()),
        "inputs": pa.Table.from_pylist(ins, schema=dataset.input_schema()),
        "lacks": None,
    }
    out = tmp_path / "out"
    out.mkdir()
    for name in ("code_objects", "inputs"):
        dataset.write_table(tables[name], out / name / "s.parquet")
    tables = dataset.derive(out, [], None)
    html = page.build(tables, ["gfx942"])
    matrix = html.split("id='matrix-table'", 1)[1].split("</table>", 1)[0]
    head = "<th>input</th><th>device bytes</th><th>gfx942</th><th>gfx90a</th><th>gfx1100</th>"
    assert head + "<th>gfx9-generic</th><th>amdgcnspirv</th>" in matrix
    row = {r.split("</td>", 1)[0]: r.split("</tr>", 1)[0] + "</tr>" for r in matrix.split("<tr><td>")[1:]}
    o, x = "<td class='o'></td>", "<td class='x'>-</td>"
    b = ("<td class='y' title='gfx90a:xnack+, gfx90a:xnack-'>xnack+ xnack-</td>" + o
         + "<td class='g' title='gfx9-generic'>any</td>" + o)
    assert row["b.so"].endswith(x + b + "</tr>"), row["b.so"]
    # SPIR-V loads on the required gfx942: not missing there.
    spirv = "<td class='g' title='no native code: loads through amdgcnspirv'>amdgcnspirv</td>"
    assert row["c.so"].endswith(spirv + "<td class='y' title='gfx90a:xnack+'>xnack+</td>" + o + o
                                + "<td class='s' title='amdgcnspirv'>any</td></tr>"), row["c.so"]
    assert row["a.so"].startswith("a.so</td><td class='n' data-v='700'>700 B</td>")
    # Code objects, none with a target: missing where required; no code object: blank.
    assert row["e.so"].endswith(x + o * 4 + "</tr>") and row["d.so"].endswith(o * 5 + "</tr>")
    # Bytes per target: gfx90a:xnack+ and gfx90a:xnack- tie at 200; xnack+ is named first.
    bars = html.split("id='bytes'", 1)[1]
    assert bars.index(">gfx90a:xnack+<") < bars.index(">gfx90a:xnack-<") < bars.index(">gfx9-generic<")
    # Copies: h1 (a.so twice) saves 300, h2 and h3 (two inputs each) 100 each, h2 named first.
    dups = html.split("id='duplicates'", 1)[1].split("</table>", 1)[0]
    assert "3 code objects are stored more than once" in dups and "<b>500 B</b>" in dups
    order = [dups.index(f"<code>{h}</code>") for h in ("h1", "h2", "h3")]
    assert order == sorted(order), order
    assert "title='b.so, c.so'>2</td>" in dups and "title='a.so'>1</td>" in dups


def _code_object_row(input_: str, target: str) -> dict:
    """A code-object row of ``input_`` for ``target``, 10 bytes, for tables made by hand."""
    proc = target.split(":")[0]
    return {"input": input_, "path": input_, "container": "uncompressed", "unit": 0,
            "entry": 1, "entry_id": f"hipv4-amdgcn-amd-amdhsa--{target}", "target_id": target,
            "processor": proc, "generic": "generic" in proc, "stored_bytes": 10,
            "uncompressed_bytes": 10, "sha256": None}


def _one_shard(out: Path, code_objects: list, inputs: list) -> None:
    """Writes rows made by hand as the one shard of a dataset under ``out``."""
    import pyarrow as pa

    dataset.write_table(pa.Table.from_pylist(code_objects, schema=dataset.code_object_schema()),
                        out / "code_objects" / "s.parquet")
    dataset.write_table(pa.Table.from_pylist(inputs, schema=dataset.input_schema()),
                        out / "inputs" / "s.parquet")


def test_report_names_downloads_by_file_and_orders_processors_by_the_table(tmp_path):
    """The matrix's processors in the order of gfxkit's processor table (gfx900 before gfx90a,
    gfx942 before gfx1030, generic targets after them, SPIR-V last), whatever order the rows
    name them in; an input downloaded from a URL shown by its file name, percent-decoded, with
    the URL as the cell's title (in the matrix and among the errors), the rows in the order of
    the names shown."""

    from gfxkit.census import page

    store = "https://files.example.org/packages/9f/01/"
    torch = store + "c0ffee/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl#sha256=00"
    aiter = store + "beef/amd_aiter-0.1.7-py3-none-any.whl"
    local = "/opt/lib/libk.so"

    co = _code_object_row
    rows = [co(torch, t) for t in ("amdgcnspirv", "gfx1030", "gfx90a:xnack-", "gfx11-generic")]
    rows += [co(aiter, "gfx942"), co(local, "gfx900"), co(local, "gfx1100")]
    ins = [
        {"input": n, "size": 1, "kind": "wheel", "device_bytes": 10 * c, "nvidia_bytes": 0,
         "code_objects": c, "status": "ok", "targets": [], "processors": []}
        for n, c in [(torch, 4), (aiter, 1), (local, 2)]
    ]
    broken = store + "dead/rocm_x-1.0%2Bgfx-py3-none-any.whl"
    ins.append(dict(ins[0], input=broken, device_bytes=0, code_objects=0, status="error",
                    error=f"{broken}: HTTP 404"))
    out = tmp_path / "out"
    out.mkdir()
    _one_shard(out, rows, ins)
    html = page.build(dataset.derive(out, [], None), [])
    matrix = html.split("id='matrix-table'", 1)[1].split("</table>", 1)[0]
    heads = [h.split("</th>", 1)[0] for h in matrix.split("<th>")[3:]]
    assert heads == ["gfx900", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx11-generic",
                     "amdgcnspirv"], heads
    cells = [r.split("</td>", 1)[0] for r in matrix.split("<tr><td")[1:]]
    assert cells == [
        ">/opt/lib/libk.so",
        f" title='{aiter}'>amd_aiter-0.1.7-py3-none-any.whl",
        f" title='{broken}'>rocm_x-1.0+gfx-py3-none-any.whl",
        f" title='{torch}'>torch-2.5.1+rocm6.2-cp311-cp311-linux_x86_64.whl",
    ], cells
    errors = html.split("id='errors'", 1)[1]
    assert f"<tr><td title='{broken}'>rocm_x-1.0+gfx-py3-none-any.whl</td><td>error</td>" in errors


def test_report_rolls_packages_and_installs_up_by_name_across_versions_and_platforms(tmp_path):
    """The report's support by package: package files (wheels, sdists, .deb, .rpm, conda;
    downloads by their file names), each a build, and installs of EasyBuild (EESSI) and Spack,
    each a build of the files in it; one row per name and layout across versions and
    platforms, per processor how many of its builds with device code carry it: all, some (the
    others named in the title), none where required (red); files in no build (a library in
    /opt) are not there; no section when no input is in one."""

    from gfxkit.census import page

    store = "https://files.example.org/packages/"

    co = _code_object_row
    t1 = store + "a/torch-2.5.1%2Brocm6.2-cp311-cp311-linux_x86_64.whl"
    t2 = store + "b/torch-2.6.0%2Brocm6.3-cp312-cp312-linux_x86_64.whl"
    t3 = store + "c/Torch-2.6.0-cp312-cp312-win_amd64.whl"  # no device code
    deb = "/pool/librocblas0_5.5.1+dfsg-7_amd64.deb"
    sdist = "/dl/flash_attn-2.7.4.tar.gz"
    lib = "/opt/lib/libk.so"
    eessi = "/cvmfs/software.eessi.io/versions/2023.06/software/linux/x86_64/amd/zen3/software/rocBLAS/"
    eb62 = eessi + "6.2.0-GCCcore-13.2.0"
    eb61 = eessi + "6.1.0-GCCcore-13.2.0"
    spack = "/opt/spack/linux-rhel8-zen3/gcc-12.2.0/rocblas-6.2.0-" + "a" * 32
    rows = [co(t1, "gfx90a:xnack-"), co(t1, "gfx942"), co(t2, "gfx942"), co(t2, "gfx1100")]
    rows += [co(deb, "gfx906"), co(sdist, "gfx942"), co(lib, "gfx90a")]
    # One install: its library and its per-processor kernel files together.
    rows += [co(eb62 + "/lib/librocblas.so", "gfx90a"), co(eb62 + "/lib/librocblas.so", "gfx942"),
             co(eb62 + "/lib/rocblas/library/TensileLibrary_gfx1100.co", "gfx1100")]
    rows += [co(eb61 + "/lib/librocblas.so", "gfx90a"), co(spack + "/lib/librocblas.so", "gfx1100")]
    # A wheel whose gfx1100 code is gfx11-generic's: it loads there, not natively.
    gen = "/dl/jaxgen-0.1-py3-none-any.whl"
    rows += [co(gen, "gfx90a"), co(gen, "gfx11-generic")]
    files = [(t1, 2), (t2, 2), (t3, 0), (deb, 1), (sdist, 1), (lib, 1),
             (eb62 + "/lib/librocblas.so", 2), (eb62 + "/lib/rocblas/library/TensileLibrary_gfx1100.co", 1),
             (eb62 + "/lib/rocblas/library/TensileLibrary.dat", 0), (eb61 + "/lib/librocblas.so", 1),
             (spack + "/lib/librocblas.so", 1), (gen, 2)]
    ins = [
        {"input": n, "size": 1, "kind": "wheel", "device_bytes": 10 * c, "nvidia_bytes": 0,
         "code_objects": c, "status": "ok", "targets": [], "processors": []}
        for n, c in files
    ]
    out = tmp_path / "out"
    out.mkdir()
    _one_shard(out, rows, ins)
    html = page.build(dataset.derive(out, ["gfx90a", "gfx1100"], None), ["gfx90a", "gfx1100"])
    table_ = html.split("id='package-table'", 1)[1].split("</table>", 1)[0]
    heads = [h.split("</th>", 1)[0] for h in table_.split("<th>")[1:]]
    assert heads == ["package", "layout", "builds", "versions", "with device code", "device bytes",
                     "gfx90a", "gfx1100", "gfx906", "gfx942", "gfx11-generic"], heads
    got = {}
    for r in table_.split("<tr>")[2:]:
        cells = [c.split("</td>", 1)[0] for c in r.split("<td")[1:]]
        got[(cells[0].lstrip(">"), cells[1].lstrip(">"))] = cells[2:]
    assert list(got) == [("flash-attn", "package"), ("jaxgen", "package"), ("librocblas0", "package"),
                         ("rocBLAS", "EasyBuild"), ("rocblas", "Spack"), ("torch", "package")], got
    # The matrix by input: the required gfx1100 is no miss where gfx11-generic code loads.
    matrix = html.split("id='matrix-table'", 1)[1].split("</table>", 1)[0]
    jrow = matrix.split(">/dl/jaxgen-0.1-py3-none-any.whl</td>", 1)[1].split("</tr>", 1)[0]
    assert "<td class='g' title='no native code: loads through gfx11-generic'>gfx11-generic</td>" in jrow
    assert "class='x'" not in jrow
    jaxgen = got[("jaxgen", "package")]
    assert jaxgen[5] == (" class='g' data-v='1' title='native code in 0: the others through generic "
                         "or SPIR-V code'>1/1"), jaxgen[5]
    assert jaxgen[8] == " class='y' data-v='1'>1/1"  # the gfx11-generic column itself
    n = lambda c: c.split(">", 1)[1]  # noqa: E731
    torch = got[("torch", "package")]
    assert [n(c) for c in torch[:4]] == ["3", "3", "2", "40 B"], torch  # 2.6.0 and 2.6.0+rocm6.3 differ
    # gfx90a in one of the two torch files with device code, named in the title; gfx1100 too.
    assert torch[4] == (" class='p' data-v='1' title='without: "
                        "torch-2.6.0+rocm6.3-cp312-cp312-linux_x86_64.whl'>1/2"), torch[4]
    assert torch[5].endswith("title='without: torch-2.5.1+rocm6.2-cp311-cp311-linux_x86_64.whl'>1/2")
    assert torch[6] == " class='o' data-v='0'>"  # gfx906: in none, not required
    assert torch[7] == " class='y' data-v='2'>2/2"  # gfx942: in both
    assert got[("librocblas0", "package")][4] == " class='x' data-v='0'>0/1"  # required gfx90a: in none
    assert got[("librocblas0", "package")][6] == " class='y' data-v='1'>1/1"
    # The EasyBuild installs: two builds (the 6.2.0 one's library and kernel files together).
    eb = got[("rocBLAS", "EasyBuild")]
    assert [n(c) for c in eb[:4]] == ["2", "2", "2", "40 B"], eb
    assert eb[4] == " class='y' data-v='2'>2/2"  # gfx90a
    assert eb[5] == f" class='p' data-v='1' title='without: {eb61}'>1/2"  # gfx1100: the 6.2.0 kernels
    assert got[("rocblas", "Spack")][4] == " class='x' data-v='0'>0/1"
    assert "libk.so" not in table_
    # No input in a build: no section.
    only_lib = tmp_path / "lib"
    only_lib.mkdir()
    _one_shard(only_lib, [rows[6]], [ins[5]])
    assert "id='packages'" not in page.build(dataset.derive(only_lib, [], None), [])


class _KillAlways(distributed.WorkerPlugin):
    """Kills (SIGKILL) every worker that starts a task whose key ends with one of ``suffixes``:
    a shard, then one input of it, that no worker survives."""

    name = "gfxkit-census-kill-always"

    def __init__(self, suffixes) -> None:
        self.suffixes = tuple(suffixes)

    def transition(self, key, start, finish, **kw) -> None:
        k = key if isinstance(key, str) else str(key)
        if finish == "executing" and k.endswith(self.suffixes):
            os.kill(os.getpid(), signal.SIGKILL)


def test_an_input_that_kills_every_worker_is_an_error_row(tmp_path, gfxkit_bin):
    """A shard no worker survives is read item by item, as the census was asked to read it
    (with ``check``: the compressed bundle whose stored hash is wrong is ``damaged`` there
    too); the one item that kills its workers again is an error row."""
    import cloudpickle
    import dask

    tree = small_tree(tmp_path / "tree", 3)
    raw = tmp_path / "raw.hipfb"
    raw.write_bytes(bundle([("host-x86_64-unknown-linux--", b""), ("hipv4-amdgcn-amd-amdhsa--gfx942", b"k" * 4096)]))
    wrong = tree / "zz" / "wrong-hash.hipfb"
    wrong.parent.mkdir()
    subprocess.run([gfxkit_bin, "compress", str(raw), "-o", str(wrong)], check=True)
    data = bytearray(wrong.read_bytes())
    data[{1: 12, 2: 16}.get(int.from_bytes(data[4:6], "little"), 24)] ^= 0xFF
    wrong.write_bytes(bytes(data))
    names = gfxkit._gfxkit.census_walk_each([str(tree)])[0]
    want = tmp_path / "want"
    gfxkit.census([str(tree)], want, serial=True, shard_size=16, progress=False, check=True)
    assert {r["input"]: r["status"] for r in table(want, "inputs")}[str(wrong)] == "damaged"
    plan = json.loads((want / dataset.PLAN).read_text())
    (shard,) = plan["shards"]
    victim = shard["items"][1]["name"]
    out = tmp_path / "out"
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        # The tasks of a census that checks hashes say so in their keys.
        key = f"gfxkit-census-{shard['name']}-checked"
        client.register_plugin(_KillAlways([key, f"{key}-1", f"{key}-1-solo"]))
        gfxkit.census([str(tree)], out, client=client, shard_size=16, progress=False, check=True)
    exactly_once(out, names)
    got = {r["input"]: r for r in table(out, "inputs")}
    assert got[victim]["status"] == "error" and "died" in got[victim]["error"], got[victim]
    # Every other input is read as an uninterrupted census reads it.
    wanted = {r["input"]: r for r in table(want, "inputs")}
    for n in names:
        if n != victim:
            assert got[n] == wanted[n]
    assert [r for r in table(out, "code_objects") if r["input"] != victim] == [
        r for r in table(want, "code_objects") if r["input"] != victim
    ]


def _docs_block(first: str) -> str:
    """The fenced block of docs/census.md that begins with the line ``first``, as a user copies it."""
    text = (ROOT / "docs" / "census.md").read_text()
    start = text.index(first)
    return text[start:text.index("```", start)]


def _edit(text: str, edits: list) -> str:
    """``text`` with each (old, new) replaced; every old must be there, so that a change of the
    docs that this test no longer matches fails it instead of testing something else."""
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def _here(real_inputs, out) -> list:
    """The docs' paths made this test's, and its required targets those of the serial run."""
    return [
        ('["/cvmfs/software.eessi.io/versions/2025.06/software"]', repr(real_inputs)),
        ('"/scratch/census"', repr(str(out))),
        ('require="gfx90a,gfx942"', 'require="gfx90a,gfx1200"'),
    ]


def test_slurm_runner_in_a_real_allocation(serial_out, real_inputs, tmp_path):
    """The documented batch job, submitted with `sbatch` to a one-node Slurm cluster started
    here: `srun` starts four tasks of the documented `census_job.py` (dask-jobqueue's
    SLURMRunner: rank 0 the scheduler, rank 1 the census, the rest workers, meeting through a
    scheduler file). The job ends with exit 0 and the dataset of a serial run."""
    out = tmp_path / "census"
    job = _edit(_docs_block("# census_job.py"), _here(real_inputs, out) + [
        ('"/scratch/$USER/census-scheduler-{job_id}.json"', repr(str(tmp_path / "scheduler-{job_id}.json"))),
        # Loopback only, no dashboards: the test's servers stay on this machine.
        ("SLURMRunner(scheduler_file=scheduler_file)",
         "SLURMRunner(scheduler_file=scheduler_file, scheduler_options={'host': '127.0.0.1', "
         "'dashboard': False}, worker_options={'host': '127.0.0.1', 'nthreads': 1})"),
    ])
    (tmp_path / "census_job.py").write_text(job)
    batch = _edit(_docs_block("#!/bin/bash\n#SBATCH --job-name=gfxkit-census"), [
        # One node of this machine, four tasks: the scheduler, the census and two workers.
        ("#SBATCH --nodes=4", "#SBATCH --nodes=1"),
        ("#SBATCH --ntasks-per-node=32", "#SBATCH --ntasks-per-node=4"),
        ("#SBATCH --time=02:00:00", "#SBATCH --time=00:10:00"),
        # This test's Python is the one with gfxkit; there are no modules here.
        ("module load python", "# module load python"),
        ("srun python census_job.py", f"srun {sys.executable} census_job.py"),
    ])
    (tmp_path / "census.sbatch").write_text(batch)
    with slurm.cluster():
        env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
        r = subprocess.run(["sbatch", "--wait", "--parsable", "--output", str(tmp_path / "job.log"),
                            str(tmp_path / "census.sbatch")], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600)
        log = (tmp_path / "job.log").read_text(errors="replace") if (tmp_path / "job.log").exists() else ""
        assert r.returncode == 0, (r.stdout, r.stderr, log[-3000:])
        (state,) = [j["state"] for j in slurm.jobs() if j["id"] == r.stdout.strip().split(";")[0]]
        assert state == "COMPLETED", (state, log[-3000:])
    same_dataset(serial_out, out)
    assert table(serial_out, "lacks") == table(out, "lacks")


class _Gate(http.server.BaseHTTPRequestHandler):
    """Serves ``payload`` at any path once ``is_open()`` holds (it is asked twice a second, for
    at most five minutes; then 503): an input that keeps a census running until the test has
    seen what it waits for."""

    payload = b""
    is_open = staticmethod(lambda: True)

    def do_GET(self):
        end = time.monotonic() + 300
        while not type(self).is_open() and time.monotonic() < end:
            time.sleep(0.5)
        if not type(self).is_open():
            self.send_error(503, "the gate never opened")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.payload)))
        self.end_headers()
        self.wfile.write(self.payload)

    def log_message(self, *args):
        pass


def _replaced(workers) -> bool:
    """Whether Slurm has seen more worker jobs than the cluster may hold at once (two): a
    worker left and a new job took its place."""
    return len(workers) > 2


def test_slurm_cluster_submits_worker_jobs_that_retire(real_inputs, tmp_path):
    """The documented SLURMCluster script run on the "login node" (this process's machine) of a
    one-node Slurm cluster started here: dask-jobqueue submits worker jobs with `sbatch`, and
    their lifetimes (seconds here, minutes in the docs) end them while the census runs, so that
    adaptive scaling submits new ones. One input, a URL served by the test, is held back until
    Slurm has seen a third worker job, while the cluster holds at most two. The census ends with the dataset of
    a serial run of the same inputs."""
    served = tmp_path / "held.hipfb"
    served.write_bytes(bundle([("host-x86_64-unknown-linux--", b""),
                               ("hipv4-amdgcn-amd-amdhsa--gfx942", random.Random(7).randbytes(3000))]))
    _Gate.payload = served.read_bytes()
    _Gate.is_open = staticmethod(lambda: True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Gate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        inputs = real_inputs + [f"http://127.0.0.1:{server.server_port}/held.hipfb"]
        want = tmp_path / "serial"
        gfxkit.census(inputs, want, require="gfx90a,gfx1200", serial=True, progress=False)
        out = tmp_path / "census"
        script = _edit(_docs_block("from dask.distributed import Client\nfrom dask_jobqueue import SLURMCluster"),
                       _here(inputs, out) + [
            ('cores=32, processes=32, memory="64GB", walltime="01:00:00"',
             # Loopback only, no dashboard; the job logs kept for the assertion messages.
             'cores=1, processes=1, memory="1GB", walltime="00:10:00", interface="lo", '
             f'scheduler_options={{"dashboard_address": None}}, log_directory={str(tmp_path / "logs")!r}'),
            ('["--lifetime", "55m", "--lifetime-stagger", "4m"]', '["--lifetime", "15s", "--lifetime-stagger", "2s"]'),
            ("cluster.adapt(minimum_jobs=1, maximum_jobs=20)", "cluster.adapt(minimum_jobs=1, maximum_jobs=2)"),
            ("client=client)", "client=client, shard_size=1, progress=False)"),
        ])
        (tmp_path / "census_cluster.py").write_text(script)
        with slurm.cluster():
            _Gate.is_open = staticmethod(lambda: _replaced([j for j in slurm.jobs() if j["name"] == "dask-worker"]))
            env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
            r = subprocess.run([sys.executable, "census_cluster.py"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=600)
            logs = "\n".join(p.read_text(errors="replace")[-1500:] for p in sorted((tmp_path / "logs").glob("*")))
            assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:], logs[-3000:])
            workers = [j for j in slurm.jobs() if j["name"] == "dask-worker"]
    finally:
        server.shutdown()
        server.server_close()
    # Worker jobs ended while the census ran, and newer ones took their place.
    assert _replaced(workers), workers
    same_dataset(want, out)
    assert table(want, "lacks") == table(out, "lacks")
    held = [row for row in table(out, "inputs") if row["input"].endswith("/held.hipfb")]
    assert [row["status"] for row in held] == ["ok"], held


def _fuzz_body():
    import importlib.util

    spec = importlib.util.spec_from_file_location("census_inputs_fuzz", ROOT / "fuzz" / "python" / "census_inputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_census_inputs_fuzz_body_on_seeds_and_random_bytes():
    """The fuzz target of the census's inputs (index pages, --from lists, URL fragments) on
    real-shaped seeds, on damaged copies of them and on random bytes: well-formed results or a
    RuntimeError naming the page or list, nothing else."""
    check = _fuzz_body().check
    seeds = [
        b"\x00" + json.dumps({"meta": {"api-version": "1.0"}, "name": "p", "files": [
            {"filename": "p-1.whl", "url": "../../files/p-1.whl", "hashes": {"sha256": "AB" * 32}},
            {"filename": "p-2.whl", "url": "https://x/p-2.whl#sha256=" + "cd" * 32, "hashes": {}},
        ]}).encode(),
        b"\x01<html><body><a href='../../files/p-1.whl#sha256=" + b"ef" * 32 + b"'>p-1</a><a href=x.whl>x</a>",
        b"\x02# inputs\n/a/b.whl\r\n\n  https://h/x.whl#sha256=00  \n\xff\xfe\n",
        b"\x03https://h/x.whl#md5=1&sha256=ABC",
        # Shapes a page could have that are not PEP 691's.
        b'\x00{"files": [{"url": "a.whl", "hashes": "x"}]}',
        b'\x00{"files": [{"url": 7}]}',
        b'\x00["files"]',
        b"\x01<a href='http://[::1'>bad</a>",
        # Found by fuzzing: Python's HTML parser raised AssertionError on a bad declaration.
        b"\x15&\x15\x0b\x00<![\x00\x00+\x00",
    ]
    rng = random.Random(44)
    for s in seeds:
        check(s)
        for _ in range(2000):
            b = bytearray(s)
            for _ in range(rng.randint(1, 8)):
                op = rng.randrange(3)
                at = rng.randrange(len(b) + 1)
                if op == 0 and at < len(b):
                    b[at] = rng.randrange(256)
                elif op == 1:
                    b[at:at] = bytes([rng.choice(b"{}[]\":,<>='#&\\ \x00")])
                elif at < len(b):
                    del b[at]
            check(bytes(b))
    for _ in range(5000):
        check(rng.randbytes(rng.randint(1, 64)))
    # Each reader's refusals name where.
    with pytest.raises(RuntimeError, match=r"list\.txt: line 5: not UTF-8"):
        from gfxkit.census.inputs import parse_list

        parse_list(seeds[2][1:], "list.txt")


def test_bundle_hashes_are_checked_when_asked(tmp_path, gfxkit_bin):
    """A compressed bundle whose stored MD5 does not match its contents: read as it decodes
    by default (the census does not verify integrity, as ``gfxkit list`` without ``--check``
    does not), ``damaged`` with ``check`` (``--check``), which a continued census keeps; a
    census continued with ``check`` reads again what it read unchecked."""

    def mismatched(name: str, payload: bytes) -> Path:
        raw = tmp_path / f"{name}.hipfb"
        raw.write_bytes(bundle([("host-x86_64-unknown-linux--", b""), ("hipv4-amdgcn-amd-amdhsa--gfx942", payload)]))
        z = tmp_path / name / "kz.hipfb"
        z.parent.mkdir()
        subprocess.run([gfxkit_bin, "compress", str(raw), "-o", str(z)], check=True)
        data = bytearray(z.read_bytes())
        version = int.from_bytes(data[4:6], "little")
        data[{1: 12, 2: 16}.get(version, 24)] ^= 0xFF
        z.write_bytes(bytes(data))
        return z

    payload = bytes(range(256)) * 64
    z = mismatched("one", payload)
    plain = gfxkit.census([str(z)], tmp_path / "plain", serial=True, report=False)
    assert plain.errors == 0
    [row] = table(tmp_path / "plain", "code_objects")
    assert row["sha256"] == hashlib.sha256(payload).hexdigest()
    checked = gfxkit.census([str(z)], tmp_path / "checked", serial=True, report=False, check=True)
    assert checked.errors == 1
    [row] = table(tmp_path / "checked", "inputs")
    assert row["status"] == "damaged" and "hash" in row["error"], row
    # Continued with another input and without check: still checked.
    other = mismatched("two", payload[::-1])
    again = gfxkit.census([str(other)], tmp_path / "checked", serial=True, report=False)
    assert (again.inputs, again.errors) == (2, 2)
    # Started without check and continued with it: what was read unchecked is read again.
    assert gfxkit.census([str(other)], tmp_path / "plain", serial=True, report=False).errors == 0
    late = gfxkit.census([str(z), str(other)], tmp_path / "plain", serial=True, report=False, check=True)
    assert (late.inputs, late.scanned, late.errors) == (2, 2, 2), late
    assert {r["status"] for r in table(tmp_path / "plain", "inputs")} == {"damaged"}
    # Continued once more with check, nothing is read again.
    assert gfxkit.census([str(z), str(other)], tmp_path / "plain", serial=True, report=False, check=True).scanned == 0
