"""``gfxkit.check``, ``gfxkit.diff`` and doctor's remedies: the same objects the CLI prints,
on libraries clang-19 builds, with the expected answers derived from
``clang-offload-bundler-19 -list``."""

from __future__ import annotations

import shutil

import pytest
from pathlib import Path

import gfxkit
from conftest import KERNELS, run, tool


def bundler_targets(path: Path) -> set:
    out = run(tool("clang-offload-bundler"), "-list", "-type=o", f"-input={path}").stdout
    return {
        line.split("--", 1)[1]
        for line in out.decode().splitlines()
        if line.startswith("hipv4-amdgcn")
    }


def build(d: Path, name: str, archs, prefix: str = "k") -> Path:
    src = d / f"{name}.hip"
    src.write_text(KERNELS.replace("PREFIX", prefix))
    out = d / f"{name}.hipfb"
    run(tool("clang++"), "-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "--cuda-device-only",
        f"-cuid={name}", *[f"--offload-arch={a}" for a in archs], "-c", str(src), "-o", str(out))
    return out


def test_check_equals_the_cli_and_names_what_is_missing(built, cli):
    d = str(built["dir"])
    present = bundler_targets(built["bundle"])
    code, doc = cli("check", "--require", "gfx906,gfx1100", "--json", d)
    rep = gfxkit.check(d, ["gfx906", "gfx1100"])
    assert rep.to_dict() == doc
    assert code == 1 and not rep
    bundle = next(f for f in rep.files if f["path"] == str(built["bundle"]))
    # The bundle has gfx906 code (clang says so) and nothing of GFX11.
    assert "gfx906" in present and not any(t.startswith("gfx11") for t in present)
    assert bundle["missing"] == ["gfx1100"]
    # Exactly the targets clang lists: passes, and fails once one is left out.
    code, doc = cli("check", "--require", ",".join(sorted(present)), "--exactly", "--json",
                    str(built["bundle"]))
    assert code == 0 and doc["ok"]
    fewer = sorted(present)[1:]
    rep = gfxkit.check(built["bundle"], fewer, exactly=True)
    assert not rep
    assert rep.files[0]["extra"] == [sorted(present)[0]]
    # The kpack loader modelled is the CLI's option; an unknown one is refused.
    code, doc = cli("check", "--require", "gfx906", "--kpack-loader", "old", "--json", d)
    assert gfxkit.check(d, "gfx906", kpack_loader="old").to_dict() == doc
    with pytest.raises(ValueError):
        gfxkit.check(d, "gfx906", kpack_loader="newest")


def test_diff_equals_the_cli(tmp_path, cli):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    build(old, "a", ["gfx906", "gfx1030"])
    build(new, "a", ["gfx1030", "gfx1100"])
    build(old, "same", ["gfx90a"], prefix="s")
    shutil.copy(old / "same.hipfb", new / "same.hipfb")
    code, doc = cli("diff", "--json", str(old), str(new))
    rep = gfxkit.diff(old, new)
    assert rep.to_dict() == doc
    assert code == 1 and rep
    a = next(f for f in rep.files if f["path"] == "a.hipfb")
    before, after = bundler_targets(old / "a.hipfb"), bundler_targets(new / "a.hipfb")
    assert a["added"] == sorted(after - before)
    assert a["removed"] == sorted(before - after)
    assert [f["path"] for f in rep.changed] == ["a.hipfb"]
    assert not gfxkit.diff(old, old)


def test_doctor_remedies(tmp_path):
    lib = build(tmp_path, "lib", ["gfx1030"])
    assert bundler_targets(lib) == {"gfx1030"}
    rep = gfxkit.doctor([lib], ["gfx1031", "gfx1102"])
    on_1031 = rep.remedies(str(lib), "gfx1031")
    assert on_1031[0]["kind"] == "override"
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in on_1031[0]["text"]
    assert on_1031[0]["standing"] == "unsupported-by-amd"
    # gfx1102 is not of gfx1030's instruction set: no override, the generic target instead.
    on_1102 = rep.remedies(str(lib), "gfx1102")
    assert [r["kind"] for r in on_1102] == ["generic"]
    assert "--offload-arch=gfx11-generic" in on_1102[0]["text"]


def test_rocm_release_equals_the_cli(tmp_path, cli):
    v6 = tmp_path / "v6.hipfb"
    src = tmp_path / "v6.hip"
    src.write_text(KERNELS.replace("PREFIX", "k"))
    run(tool("clang++"), "-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "--cuda-device-only",
        "-cuid=v6", "--offload-arch=gfx1100", "-mcode-object-version=6", "-c", str(src),
        "-o", str(v6))
    for release, runs in [("6.2", False), ("6.3", True)]:
        code, doc = cli("check", "--require", "gfx1100", "--rocm", release, "--json", str(v6))
        rep = gfxkit.check(v6, "gfx1100", rocm=release)
        assert rep.to_dict() == doc
        assert bool(rep) == runs and doc["rocm"] == {"version": release, "from": "--rocm"}
        code, doc = cli("doctor", "--device", "gfx1100", "--rocm", release, "--json", str(v6))
        assert gfxkit.doctor(v6, "gfx1100", rocm=release).to_dict() == doc
        sel = gfxkit.select(v6, "gfx1100", rocm=release)
        assert (sel.selected[0] is not None) == runs
    sel = gfxkit.select(v6.read_bytes(), "gfx1100", rocm="6.2")
    assert "code object V6: ROCm 6.2 loads up to V5" in sel.to_dict()["bundles"][0]["reason"]
    assert gfxkit.select(v6, "gfx1100").to_dict() == gfxkit.select(v6, "gfx1100", rocm="7.13").to_dict()
    with pytest.raises(ValueError):
        gfxkit.check(v6, "gfx1100", rocm="six")
    # A device the release's runtime does not know (gfx1100 is in ROCr's ISA registry from
    # 5.3): nothing loads, from a file or from bytes, as the CLI says.
    for src in (v6, v6.read_bytes()):
        sel = gfxkit.select(src, "gfx1100", rocm="5.2")
        assert sel.selected[0] is None
        assert sel.to_dict()["bundles"][0]["reason"].startswith(
            "gfx1100: ROCm 5.2's runtime does not know this processor (first in 5.3"
        )
    code, doc = cli("check", "--require", "gfx1100", "--rocm", "5.2", "--json", str(v6))
    rep = gfxkit.check(v6, "gfx1100", rocm="5.2")
    assert rep.to_dict() == doc and not rep and code == 1
    code, doc = cli("doctor", "--device", "gfx1100", "--rocm", "5.2", "--json", str(v6))
    rep = gfxkit.doctor(v6, "gfx1100", rocm="5.2")
    assert rep.to_dict() == doc
    # The device is known from 5.3, its V6 code object loads from 6.3.
    assert rep.remedies(str(v6), "gfx1100")[0]["text"] == "upgrade ROCm to at least 6.3"
    # Where the sources do not tell (gfx1250 on 7.13), the release says so and refuses nothing.
    code, doc = cli("doctor", "--device", "gfx1250", "--rocm", "7.13", "--json", str(v6))
    assert doc["rocm"]["notes"][0].startswith("gfx1250: whether ROCm 7.13's runtime knows this processor is not known")
    assert gfxkit.doctor(v6, "gfx1250", rocm="7.13").to_dict() == doc
    # A machine description: one gfx1100 and ROCm 6.2.1 under sysfs_root, read by default.
    node = tmp_path / "m/sys/class/kfd/kfd/topology/nodes/1"
    node.mkdir(parents=True)
    (node / "properties").write_text("simd_count 96\ngfx_target_version 110000\n")
    rep = gfxkit.doctor(v6, sysfs_root=tmp_path / "m")
    assert "rocm" not in rep.to_dict() and rep.to_dict()["files"][0]["runs_on"]["gfx1100"]
    (tmp_path / "m/opt/rocm/.info").mkdir(parents=True)
    (tmp_path / "m/opt/rocm/.info/version").write_text("6.2.1-1\n")
    rep = gfxkit.doctor(v6, sysfs_root=tmp_path / "m").to_dict()
    assert rep["rocm"] == {"version": "6.2.1", "from": "/opt/rocm/.info/version"}
    assert not rep["files"][0]["runs_on"]["gfx1100"]


def test_damaged_compressed_bundle_is_damage_for_check_and_an_error_for_diff(tmp_path):
    src = tmp_path / "k.hip"
    src.write_text(KERNELS.replace("PREFIX", "d"))
    good = tmp_path / "good.hipfb"
    run(tool("clang++"), "-x", "hip", "-nogpulib", "-nogpuinc", "-O1", "--cuda-device-only",
        "-cuid=d", "--offload-arch=gfx90a", "--offload-arch=gfx1030", "--offload-compress",
        "-c", str(src), "-o", str(good))
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad = tmp_path / "bad.hipfb"
    bad.write_bytes(bytes(data))
    rep = gfxkit.check(bad, "gfx90a")
    assert not rep
    assert rep.to_dict()["summary"]["errors"] == 1
    assert gfxkit.check(good, "gfx90a")
    # Code objects are compared by digest: a damaged side gives no diff, an error naming it.
    with pytest.raises(gfxkit.FormatError) as e:
        gfxkit.diff(good, bad)
    assert "bad.hipfb" in str(e.value)
    assert not gfxkit.diff(good, good)
