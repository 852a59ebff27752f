"""The gfxkit Python package on packages, kpack archives and split binaries, the processor
table and doctor with devices="auto", against the gfxkit CLI."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

import gfxkit


def cli_json(gfxkit_bin, *args):
    out = subprocess.run([gfxkit_bin, *args], capture_output=True)
    return out.returncode, json.loads(out.stdout)


@pytest.fixture(scope="module")
def wheel(built, tmp_path_factory) -> Path:
    """A wheel holding the clang-built library and bundle, and a file without device code."""
    d = tmp_path_factory.mktemp("wheel")
    whl = d / "k-1.0-py3-none-linux_x86_64.whl"
    members = {
        "k/lib/libk.so": Path(built["lib"]).read_bytes(),
        "k/kernels/k.hipfb": Path(built["bundle"]).read_bytes(),
        "k/__init__.py": b"",
    }
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for name, data in members.items()
    ) + "k-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(whl, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("k-1.0.dist-info/RECORD", record)
    return whl


@pytest.fixture(scope="module")
def split(built, gfxkit_bin, tmp_path_factory) -> dict:
    """The clang-built library split by `gfxkit kpack split`: a host-only binary and one
    .kpack archive per architecture."""
    d = tmp_path_factory.mktemp("split")
    out = d / "lib" / "libk.so"
    out.parent.mkdir()
    subprocess.run([gfxkit_bin, "kpack", "split", str(built["lib"]), "--group", "k", "-o", str(out)],
                   check=True, capture_output=True)
    archives = sorted((d / ".kpack").glob("*.kpack"))
    assert archives, "kpack split wrote no archive"
    return {"dir": d, "binary": out, "archives": archives}


def test_processor_rows_equal_the_cli(gfxkit_bin):
    code, rows = cli_json(gfxkit_bin, "target", "list", "--json")
    assert code == 0
    mine = [p.to_dict() for p in gfxkit.processors()]
    assert mine == rows
    by_name = {p.name: p for p in gfxkit.processors()}
    assert by_name["gfx90a"].hardware["vgprs_wave64"] > 0
    assert by_name["gfx906"].llvm == "19+"
    code, show = cli_json(gfxkit_bin, "target", "show", "--json", "gfx1100")
    assert {k: show[k] for k in by_name["gfx1100"].to_dict()} == by_name["gfx1100"].to_dict()


def test_package_members_equal_the_cli(wheel, gfxkit_bin):
    code, doc = cli_json(gfxkit_bin, "list", "--json", str(wheel))
    assert code == 0
    listed = gfxkit.list(wheel)
    assert isinstance(listed, list)
    assert [i.to_dict() for i in listed] == doc["files"]
    assert [i.path for i in listed] == [f"{wheel}!k/lib/libk.so", f"{wheel}!k/kernels/k.hipfb"]
    # The same from the wheel's bytes (only the name differs), and one member by name.
    from_bytes = gfxkit.list(wheel.read_bytes())
    assert [i.entries for i in from_bytes] == [i.entries for i in listed]
    member = f"{wheel}!k/lib/libk.so"
    assert gfxkit.list(member).to_dict() == cli_json(gfxkit_bin, "list", "--json", member)[1]["files"][0]
    code, doc = cli_json(gfxkit_bin, "select", "--device", "gfx1100", "--json", str(wheel))
    assert [s.to_dict() for s in gfxkit.select(wheel, "gfx1100")] == doc["files"]
    code, doc = cli_json(gfxkit_bin, "verify", "--json", str(wheel))
    assert code == 0
    assert [v.to_dict() for v in gfxkit.verify(wheel)] == doc["files"]


def test_member_paths_in_select_size_kernels_doctor_equal_the_cli(wheel, gfxkit_bin):
    # `PKG!MEMBER` names one member for every function, as for every CLI command.
    member = f"{wheel}!k/lib/libk.so"
    code, doc = cli_json(gfxkit_bin, "select", "--device", "gfx906", "--json", member)
    assert code in (0, 1)
    sel = gfxkit.select(member, "gfx906")
    assert [sel.to_dict()] == doc["files"]
    assert sel.path == member
    code, doc = cli_json(gfxkit_bin, "size", "--json", member)
    assert code == 0
    rep = gfxkit.size(member)
    assert rep.to_dict() == doc
    assert {f["path"] for f in rep.to_dict()["files"]} == {member}
    code, doc = cli_json(gfxkit_bin, "kernels", "--json", member)
    assert code == 0
    got = gfxkit.kernels(member)
    assert got.to_dict() == doc
    assert got.kernels and {k["file"] for k in got.kernels} == {member}
    code, doc = cli_json(gfxkit_bin, "doctor", "--device", "gfx906", "--json", member)
    assert code in (0, 1)
    report = gfxkit.doctor([member], ["gfx906"])
    assert report.to_dict() == doc
    assert [f["path"] for f in doc["files"]] == [member]


def test_verify_of_a_wheel_leaves_out_cpu_only_members_like_the_cli(built, gfxkit_bin, tmp_path):
    # A CPU-only library beside the HIP one: not a failure of the wheel.
    src = tmp_path / "cpu.c"
    src.write_text("int cpu_only(int x) { return x * 3; }\n")
    cpu = tmp_path / "cpu.so"
    subprocess.run(["/usr/lib/llvm-19/bin/clang", "-shared", "-fPIC", "-fuse-ld=lld", str(src),
                    "-o", str(cpu)], check=True, capture_output=True)
    whl = tmp_path / "mixed-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(whl, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.write(built["lib"], "m/libk.so")
        z.write(cpu, "m/cpu.so")
    code, doc = cli_json(gfxkit_bin, "verify", "--json", str(whl))
    assert code == 0
    assert doc["without_device_code"] == [f"{whl}!m/cpu.so"]
    got = gfxkit.verify(whl)
    assert [v.to_dict() for v in got] == doc["files"]
    assert [v.path for v in got] == [f"{whl}!m/libk.so"]
    # Named by itself, the CPU-only member has no device code.
    with pytest.raises(gfxkit.NoDeviceCodeError):
        gfxkit.verify(f"{whl}!m/cpu.so")


def test_package_entries_equal_the_cli(wheel, built, gfxkit_bin, tmp_path):
    out = tmp_path / "x"
    subprocess.run([gfxkit_bin, "extract", str(wheel), "-o", str(out), "--json"], check=True,
                   capture_output=True)
    written = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    entries = gfxkit.extract(wheel)
    assert len(entries) == len(written) > 0
    assert sorted(e.data for e in entries) == sorted(written.values())
    assert {e.file for e in entries} == {f"{wheel}!k/kernels/k.hipfb", f"{wheel}!k/lib/libk.so"}
    direct = gfxkit.extract(built["bundle"], target="gfx906")
    from_wheel = gfxkit.extract(f"{wheel}!k/kernels/k.hipfb", target="gfx906")
    assert [e.data for e in from_wheel] == [e.data for e in direct]


def test_prune_of_a_wheel_member_and_package_errors(wheel, tmp_path):
    out = tmp_path / "libk-gfx90a.so"
    rep = gfxkit.prune(f"{wheel}!k/lib/libk.so", keep=["gfx90a"], output=out)
    assert rep["output"] == str(out)
    assert gfxkit.list(out).architectures == ["gfx90a"]
    with pytest.raises(FileNotFoundError):
        gfxkit.list(f"{wheel}!k/lib/missing.so")
    damaged = bytearray(wheel.read_bytes())
    # Corrupt the deflated data of the first member: its CRC no longer matches.
    damaged[60:400] = bytes(340)
    with pytest.raises(gfxkit.FormatError) as e:
        gfxkit.list(bytes(damaged))
    assert e.value.file.startswith("<bytes>")
    assert isinstance(e.value.offset, (int, type(None)))
    listed = gfxkit.list(bytes(damaged), strict=False)
    assert any(i.error for i in listed)


def test_kpack_archives_equal_the_cli(split, gfxkit_bin, tmp_path):
    for a in split["archives"]:
        code, doc = cli_json(gfxkit_bin, "list", "--json", str(a))
        assert code == 0
        inv = gfxkit.list(a)
        assert inv.to_dict() == doc["files"][0]
        assert inv.entries, a
        code, doc = cli_json(gfxkit_bin, "verify", "--json", str(a))
        assert gfxkit.verify(a).to_dict() == doc["files"][0]
        out = tmp_path / a.stem
        subprocess.run([gfxkit_bin, "extract", str(a), "-o", str(out)], check=True, capture_output=True)
        written = sorted(p.read_bytes() for p in out.iterdir())
        entries = gfxkit.extract(a)
        assert sorted(e.data for e in entries) == written
        assert all(gfxkit.inspect(e.data)["target_id"] for e in entries)
        # The archive's bytes read the same.
        assert [e.data for e in gfxkit.extract(a.read_bytes())] == [e.data for e in entries]


def test_split_binary_through_its_archives_equals_the_cli(split, gfxkit_bin):
    b = str(split["binary"])
    code, doc = cli_json(gfxkit_bin, "list", "--json", b)
    assert gfxkit.list(b).to_dict() == doc["files"][0]
    for device in ("gfx1100", "gfx942"):
        code, doc = cli_json(gfxkit_bin, "select", "--device", device, "--json", b)
        assert gfxkit.select(b, device).to_dict() == doc["files"][0]
    code, doc = cli_json(gfxkit_bin, "verify", "--json", b)
    assert gfxkit.verify(b).to_dict() == doc["files"][0]
    code, doc = cli_json(gfxkit_bin, "doctor", "--device", "gfx1100", "--device", "gfx906",
                         "--json", str(split["dir"]))
    rep = gfxkit.doctor(split["dir"], ["gfx1100", "gfx906"])
    assert rep.to_dict() == doc
    # Each wrapper of the library needs its own architecture: no device has both.
    assert rep.runs(b, "gfx906") is False
    (f,) = rep.files
    assert "kpack error" in f["missing"]["gfx906"] and f["kpack"] == ["../.kpack/k_@GFXARCH@.kpack"]


def test_split_binary_extracts_what_the_cli_writes(split, gfxkit_bin, tmp_path):
    # The code objects of a split binary come from the archives beside it, as the CLI writes
    # them; the same for a target, and bytes alone cannot reach the archives.
    b = split["binary"]
    for target in (None, "gfx1100"):
        out = tmp_path / f"out-{target}"
        cmd = [gfxkit_bin, "extract", str(b), "-o", str(out)] + (["--target", target] if target else [])
        subprocess.run(cmd, check=True, capture_output=True)
        written = sorted(p.read_bytes() for p in out.iterdir())
        entries = gfxkit.extract(b, target=target)
        assert written and sorted(e.data for e in entries) == written
        assert all(e.member and e.id.endswith(gfxkit.inspect(e.data)["target_id"]) for e in entries)
    with pytest.raises(gfxkit.Error):
        gfxkit.extract(Path(b).read_bytes())


def fake_sysfs(root: Path, versions) -> Path:
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "0").mkdir(parents=True)
    (nodes / "0" / "properties").write_text("cpu_cores_count 8\nsimd_count 0\ngfx_target_version 0\n")
    for i, v in enumerate(versions, start=1):
        (nodes / str(i)).mkdir()
        (nodes / str(i) / "properties").write_text(
            f"simd_count 104\ngfx_target_version {v}\ncapability 671588992\nvendor_id 4098\n")
    return root


def test_doctor_auto_reads_the_kfd_topology_like_the_cli(built, gfxkit_bin, tmp_path, monkeypatch):
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    monkeypatch.delenv("HSA_XNACK", raising=False)
    root = fake_sysfs(tmp_path / "root", [90010, 110000])
    d = str(built["dir"])
    code, doc = cli_json(gfxkit_bin, "doctor", "--sysfs-root", str(root), "--json", d)
    rep = gfxkit.doctor(d, sysfs_root=root)
    assert rep.to_dict() == doc
    assert rep.devices == doc["devices"] and len(rep.devices) == 2
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    code, doc = cli_json(gfxkit_bin, "doctor", "--sysfs-root", str(root), "--json", d)
    assert gfxkit.doctor([d], "auto", sysfs_root=root).to_dict() == doc
    assert doc["devices"] == ["gfx1030"]
    empty = fake_sysfs(tmp_path / "cpu-only", [])
    with pytest.raises(gfxkit.DeviceError) as e:
        gfxkit.doctor(d, sysfs_root=empty)
    assert "no GPU" in str(e.value) and e.value.file.endswith("topology/nodes")


def test_kernels_equal_the_cli(built, wheel, split, gfxkit_bin):
    inputs = [built["lib"], built["bundle"], built["ccob"], built["code_object"], wheel,
              split["binary"], *split["archives"]]
    for p in inputs:
        code, doc = cli_json(gfxkit_bin, "kernels", "--json", str(p))
        assert code == 0, p
        got = gfxkit.kernels(p)
        assert got.to_dict() == doc, p
        assert got.kernels and not got.errors
    code, doc = cli_json(gfxkit_bin, "kernels", "--json", "--demangle", "--target", "gfx90a",
                         str(built["lib"]))
    got = gfxkit.kernels(built["lib"], target="gfx90a", demangle=True)
    assert got.to_dict() == doc
    assert {k["target_id"] for k in got.kernels} == {"gfx90a:xnack+"}
    # Bytes read as the file does (names differ).
    from_bytes = gfxkit.kernels(Path(built["bundle"]).read_bytes())
    assert [k["name"] for k in from_bytes.kernels] == [k["name"] for k in gfxkit.kernels(built["bundle"]).kernels]
    # A damaged code object is an error in the listing, naming the file.
    bad = gfxkit.kernels(b"\x7fELF" + bytes(60))
    assert not bad.kernels
    with pytest.raises(gfxkit.TargetError):
        gfxkit.kernels(built["lib"], target="gfx90a:xnack*")


def test_size_of_packages_archives_and_split_binaries_equals_the_cli(wheel, split, gfxkit_bin):
    for p in [wheel, split["binary"], *split["archives"]]:
        code, doc = cli_json(gfxkit_bin, "size", "--json", str(p))
        assert code == 0, p
        rep = gfxkit.size(p)
        assert rep.to_dict() == doc, p
        assert rep.stored > 0 and not rep.errors
    code, doc = cli_json(gfxkit_bin, "size", "--json", "--keep", "gfx906", str(wheel))
    assert gfxkit.size(wheel, keep=["gfx906"]).to_dict() == doc


def test_kpack_split_and_inline_write_what_the_cli_writes(built, gfxkit_bin, tmp_path):
    mine, theirs = tmp_path / "py", tmp_path / "cli"
    rep = gfxkit.kpack_split(built["lib"], mine / "lib" / "libk.so", "k")
    code, doc = cli_json(gfxkit_bin, "kpack", "split", str(built["lib"]), "--group", "k",
                         "-o", str(theirs / "lib" / "libk.so"), "--json")
    assert code == 0
    swap = lambda v: json.loads(json.dumps(v).replace(str(theirs), str(mine)))
    assert rep == swap(doc)
    assert (mine / "lib/libk.so").read_bytes() == (theirs / "lib/libk.so").read_bytes()
    names = sorted(p.name for p in (theirs / ".kpack").iterdir())
    assert names == sorted(p.name for p in (mine / ".kpack").iterdir()) and names
    for n in names:
        assert (mine / ".kpack" / n).read_bytes() == (theirs / ".kpack" / n).read_bytes(), n
    assert not [p for p in mine.rglob(".gfxkit-*")], "no temporary file left behind"
    fat = tmp_path / "fat-by-py.so"
    rep = gfxkit.kpack_inline(mine / "lib" / "libk.so", fat)
    code, doc = cli_json(gfxkit_bin, "kpack", "inline", str(theirs / "lib/libk.so"), "-o",
                         str(tmp_path / "fat-by-cli.so"), "--json")
    assert rep == swap(doc) | {"output": str(fat)}
    assert fat.read_bytes() == (tmp_path / "fat-by-cli.so").read_bytes()
    assert sorted(e.data for e in gfxkit.extract(fat)) == sorted(e.data for e in gfxkit.extract(built["lib"]))
    with pytest.raises(gfxkit.FormatError) as e:
        gfxkit.kpack_inline(built["lib"], tmp_path / "x.so")
    assert "no HIPK wrapper" in str(e.value) and e.value.file == str(built["lib"])
    with pytest.raises(ValueError):
        gfxkit.kpack_split(built["lib"], tmp_path / "y.so", "a/b")
    with pytest.raises(FileNotFoundError):
        gfxkit.kpack_split(tmp_path / "missing.so", tmp_path / "z.so", "k")


def test_damaged_kpack_archives_raise_with_file_and_offset(split, tmp_path):
    data = split["archives"][0].read_bytes()
    for cut in (40, len(data) // 2):
        damaged = tmp_path / f"cut{cut}.kpack"
        damaged.write_bytes(data[:cut])
        for src, name in ((damaged, str(damaged)), (data[:cut], "<bytes>")):
            for fn in (gfxkit.list, gfxkit.extract):
                with pytest.raises(gfxkit.FormatError) as e:
                    fn(src)
                assert e.value.file == name and e.value.offset is not None, (fn, cut)
                assert f"offset 0x{e.value.offset:x}" in str(e.value)
            listed = gfxkit.kernels(src)
            assert not listed.kernels and listed.errors[0].startswith(name)
            assert not gfxkit.verify(src).ok


def test_prune_of_a_wheel_writes_what_the_cli_writes(wheel, gfxkit_bin, tmp_path):
    mine, theirs = tmp_path / "py.whl", tmp_path / "cli.whl"
    rep = gfxkit.prune(wheel, keep=["gfx90a"], output=mine)
    code, doc = cli_json(gfxkit_bin, "prune", "--keep", "gfx90a", "--json", str(wheel), "-o", str(theirs))
    assert code == 0
    # One outcome type for both: the same fields, `seconds` included (its value differs).
    assert rep.keys() == doc.keys() and rep["seconds"] >= 0
    assert {**rep, "seconds": 0} == {**doc, "output": str(mine), "seconds": 0}
    assert mine.read_bytes() == theirs.read_bytes()
    assert {a for i in gfxkit.list(mine) for a in i.architectures} == {"gfx90a"}
    assert all(v.ok for v in gfxkit.verify(mine))
    with zipfile.ZipFile(mine) as z:
        assert z.testzip() is None
    dry = gfxkit.prune(wheel, drop=["gfx906"])
    assert dry["dry_run"] and dry["output"] is None and dry["members"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gfxkit-")]


def test_kpack_split_of_a_tree_into_overlays_writes_what_the_cli_writes(built, gfxkit_bin, tmp_path):
    # A tree: the fat library, a raw code object for gfx906 (a database file, by its e_flags),
    # a link to it, and a file without device code.
    tree = tmp_path / "tree"
    (tree / "lib" / "db").mkdir(parents=True)
    shutil.copy(built["lib"], tree / "lib" / "libk.so")
    obj = gfxkit.extract(built["lib"])
    co = next(e for e in obj if e.id.endswith("--gfx906"))
    (tree / "lib" / "db" / "k_gfx906.co").write_bytes(co.data)
    os.symlink("k_gfx906.co", tree / "lib" / "db" / "latest.co")
    (tree / "README").write_text("no device code")
    mine, theirs = tmp_path / "py", tmp_path / "cli"
    rep = gfxkit.kpack_split(tree, mine, "k", recursive=True, overlays=True)
    code, doc = cli_json(gfxkit_bin, "kpack", "split", "-r", str(tree), "--group", "k",
                         "--overlays", "-o", str(theirs), "--json")
    assert code == 0
    swap = lambda v: json.loads(json.dumps(v).replace(str(theirs), str(mine)))
    assert rep == swap(doc)
    files = lambda d: sorted(str(p.relative_to(d)) for p in d.rglob("*") if not p.is_dir())
    assert files(mine) == files(theirs)
    assert "generic/lib/libk.so" in files(mine) and "generic/README" in files(mine)
    assert "gfx906/lib/db/k_gfx906.co" in files(mine)
    assert os.readlink(mine / "gfx906/lib/db/latest.co") == "k_gfx906.co"
    assert [f["path"] for f in rep["overlay_files"]] == ["lib/db/k_gfx906.co"]
    assert rep["overlay_files"][0]["overlays"] == ["gfx906"]
    for arch_dir in (mine / p for p in os.listdir(mine) if p != "generic"):
        kpacks = list((arch_dir / ".kpack").iterdir())
        assert kpacks and all(k.name.startswith(f"k_{arch_dir.name}") for k in kpacks)
    with pytest.raises(ValueError):
        gfxkit.kpack_split(tree, tmp_path / "x", "k", overlays=True)
    # A second tree split into the same overlays: their archives gain its kernels and keep the
    # first one's.
    before = {p.name: gfxkit.list(p).to_dict() for p in mine.glob("gfx*/.kpack/*.kpack")}
    tree2 = tmp_path / "tree2"
    (tree2 / "lib").mkdir(parents=True)
    shutil.copy(built["lib"], tree2 / "lib" / "libk2.so")
    gfxkit.kpack_split(tree2, mine, "k", recursive=True, overlays=True)
    for p in mine.glob("gfx*/.kpack/*.kpack"):
        keys = {b["kpack_key"] for b in gfxkit.list(p).to_dict()["bundles"]}
        assert any(k.startswith("lib/libk.so#") for k in keys), (p, keys)
        assert any(k.startswith("lib/libk2.so#") for k in keys), (p, keys)
    assert set(before) == {p.name for p in mine.glob("gfx*/.kpack/*.kpack")}
    assert not list((mine / "generic").glob(".kpack/*")), "no archive left in generic/"


def test_list_summary_of_a_package_is_what_the_cli_prints(wheel, gfxkit_bin):
    code, doc = cli_json(gfxkit_bin, "list", "--summary", "--json", str(wheel))
    assert code == 0
    mine = gfxkit.list_summary(wheel)
    assert isinstance(mine, gfxkit.Summary) and mine.to_dict() == doc and not isinstance(mine, dict)
    [pkg] = mine["packages"]
    assert pkg["kind"] == "package" and pkg["files"] >= 1 and pkg["device_bytes"] > 0
    # One meaning each: code objects uncompressed (the targets' sum), device bytes as stored.
    assert pkg["code_object_bytes"] == sum(pkg["targets"].values())
    assert pkg["architectures"] == sorted({t.split(":")[0] for t in pkg["targets"]})
