"""The gfxkit Python package against the gfxkit CLI on files clang-19 builds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import gfxkit

from conftest import KERNELS, run, tool


def file_object(doc: dict) -> dict:
    (f,) = doc["files"]
    return f


@pytest.mark.parametrize("which", ["bundle", "ccob", "lib", "code_object"])
def test_list_equals_the_cli(built, cli, which):
    p = built[which]
    code, doc = cli("list", "--json", str(p))
    assert code == 0
    inv = gfxkit.list(p)
    assert inv.to_dict() == file_object(doc)
    assert gfxkit.list(str(p), check=True).to_dict() == file_object(cli("list", "--check", "--json", str(p))[1])
    # Bytes are read exactly as the file is (only the name differs).
    from_bytes = gfxkit.list(Path(p).read_bytes()).to_dict()
    assert from_bytes["path"] == "<bytes>"
    assert {**from_bytes, "path": str(p)} == file_object(doc)


def test_list_attributes(built):
    inv = gfxkit.list(built["lib"])
    assert len(inv.bundles) == 2
    assert inv.architectures == ["gfx1030", "gfx1100", "gfx906", "gfx90a"]
    assert inv.bundles[1]["format"] == "ccob"


@pytest.mark.parametrize("device", ["gfx90a:sramecc+:xnack+", "gfx1100", "gfx942"])
def test_select_equals_the_cli(built, cli, device):
    for which in ("bundle", "lib"):
        p = str(built[which])
        code, doc = cli("select", "--device", device, "--json", p)
        sel = gfxkit.select(p, device)
        assert sel.to_dict() == file_object(doc)
        assert (code == 0) == all(s is not None for s in sel.selected)


def test_verify_equals_the_cli(built, cli):
    for which in ("bundle", "ccob", "lib", "code_object"):
        p = str(built[which])
        code, doc = cli("verify", "--json", p)
        v = gfxkit.verify(p)
        assert v.to_dict() == file_object(doc)
        assert v.ok and code == 0


def test_size_equals_the_cli(built, cli):
    p = str(built["lib"])
    code, doc = cli("size", "--json", p)
    assert code == 0
    assert gfxkit.size(p).to_dict() == doc
    code, doc = cli("size", "--json", "--keep", "gfx90a", p)
    assert gfxkit.size(p, keep=["gfx90a"]).to_dict() == doc


def test_size_writes_the_html_page_the_cli_writes(built, cli, tmp_path):
    p = str(built["lib"])
    code, _ = cli("size", "--json", "--keep", "gfx90a", "--html", str(tmp_path / "cli.html"), p)
    assert code == 0
    gfxkit.size(p, keep=["gfx90a"], html=str(tmp_path / "py.html"))
    page = (tmp_path / "py.html").read_text()
    assert page == (tmp_path / "cli.html").read_text()
    assert "<svg" in page and "gfx90a" in page and "prune --keep gfx90a" in page
    with pytest.raises(ValueError):
        gfxkit.size(Path(p).read_bytes(), html=str(tmp_path / "bytes.html"))


def test_size_of_directories_by_library_with_duplicates_equals_the_cli(built, cli, tmp_path):
    # Two copies of one library and a bundle, in a directory and named beside it: the same
    # walk, grouping and duplicate search as the CLI's.
    import shutil

    shutil.copy(built["lib"], tmp_path / "liba.so")
    shutil.copy(built["lib"], tmp_path / "libb.so")
    shutil.copy(built["bundle"], tmp_path / "k.hipfb")
    paths = [str(tmp_path), str(built["code_object"])]
    code, doc = cli("size", "--json", "--by", "library", "--duplicates", "--keep", "gfx906", *paths)
    assert code == 0
    rep = gfxkit.size(paths, keep=["gfx906"], by_library=True, duplicates=True)
    assert rep.to_dict() == doc
    assert rep.libraries and rep.duplicates["bytes"] > 0
    with pytest.raises(ValueError):
        gfxkit.size(Path(built["lib"]).read_bytes(), duplicates=True)
    with pytest.raises(gfxkit.TargetError):
        gfxkit.size(paths, keep=["gfx9000x"])


def test_inspect_equals_the_cli(built, cli):
    p = str(built["code_object"])
    code, doc = cli("inspect", "--json", p)
    assert code == 0
    assert gfxkit.inspect(p).to_dict() == doc
    assert gfxkit.inspect(Path(p).read_bytes())["target_id"] == "gfx90a:xnack+"


def test_doctor_equals_the_cli(built, cli):
    d = str(built["dir"])
    code, doc = cli("doctor", "--device", "gfx1100", "--device", "gfx906", "--json", d)
    rep = gfxkit.doctor([d], ["gfx1100", "gfx906"])
    assert rep.to_dict() == doc
    assert rep.runs(str(built["lib"]), "gfx1100") is False


def test_extracted_bytes_equal_the_cli(built, gfxkit_bin, tmp_path):
    for which in ("bundle", "ccob", "lib"):
        p = built[which]
        out = tmp_path / which
        subprocess.run([gfxkit_bin, "extract", str(p), "-o", str(out)], check=True, capture_output=True)
        written = sorted(out.iterdir())
        entries = gfxkit.extract(p)
        assert len(entries) == len(written) > 0
        stem = Path(p).stem
        for e in entries:
            name = f"{stem}.{e.unit}.{''.join(c if c.isalnum() or c in '._+-' else '_' for c in e.id)}.{e.ext}"
            assert (out / name).read_bytes() == e.data, name


def test_extract_a_target_and_match_clang(built, tmp_path):
    entries = gfxkit.extract(built["bundle"], target="gfx90a")
    assert [e.id for e in entries] == [
        "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
    ]
    assert entries[0].offset % 4096 == 0
    assert str(entries[0].target_id) == "gfx90a:xnack+"
    ref = tmp_path / "ref.co"
    run(tool("clang-offload-bundler"), "-type=o", f"-input={built['bundle']}", "-unbundle",
        "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", f"-output={ref}")
    assert entries[0].data == ref.read_bytes()
    assert gfxkit.extract(built["bundle"], target="gfx1100") == []


def test_damaged_input_raises_typed_errors(built):
    data = Path(built["bundle"]).read_bytes()
    with pytest.raises(gfxkit.FormatError) as e:
        gfxkit.list(data[:100])
    assert e.value.file == "<bytes>"
    assert e.value.offset is not None
    # A flipped byte in the compressed payload: the hash no longer matches.
    z = bytearray(Path(built["ccob"]).read_bytes())
    z[-40] ^= 0xFF
    with pytest.raises(gfxkit.FormatError):
        gfxkit.extract(bytes(z))
    listed = gfxkit.list(data[:100], strict=False)
    assert listed.error
    with pytest.raises(gfxkit.NoDeviceCodeError):
        gfxkit.verify(b"just text")
    with pytest.raises(gfxkit.TargetError):
        gfxkit.select(built["bundle"], "gfx90a:xnack*")
    with pytest.raises(gfxkit.FormatError):
        gfxkit.inspect(built["bundle"])
    with pytest.raises(FileNotFoundError):
        gfxkit.list(built["dir"] / "missing.so")
    assert issubclass(gfxkit.TargetError, gfxkit.Error)


def test_prune_and_recompress_write_verified_files(built, cli, tmp_path):
    out = tmp_path / "libk-gfx90a.so"
    rep = gfxkit.prune(built["lib"], keep=["gfx90a"], output=out)
    assert rep["output"] == str(out)
    # The CLI's report, field for field (`seconds` included; its value differs).
    cli_out = tmp_path / "cli.so"
    code, doc = cli("prune", "--keep", "gfx90a", "--json", str(built["lib"]), "-o", str(cli_out))
    assert code == 0 and rep.keys() == doc.keys()
    assert {**rep, "seconds": 0} == {**doc, "output": str(out), "seconds": 0}
    assert gfxkit.list(out).architectures == ["gfx90a"]
    assert cli("verify", "--json", str(out))[0] == 0
    dry = gfxkit.prune(built["lib"], drop=["gfx906"])
    assert dry["dry_run"] and dry["size_after"] <= dry["size_before"]
    z = tmp_path / "k.z.hipfb"
    gfxkit.recompress(built["bundle"], z)
    assert gfxkit.list(z).bundles[0]["format"] == "ccob"
    plain_ids = [e["id"] for e in gfxkit.list(built["bundle"]).entries]
    assert [e["id"] for e in gfxkit.list(z).entries] == plain_ids


def test_prune_of_a_tree_equals_the_cli(built, cli, tmp_path):
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "libk.so").write_bytes(built["lib"].read_bytes())
    (tree / "README").write_text("a tree\n")
    (tree / "lib" / "libk.so.1").symlink_to("libk.so")
    out = tmp_path / "out"
    rep = gfxkit.prune(tree, keep=["gfx90a"], output=out)
    code, doc = cli("prune", "--keep", "gfx90a", "--json", str(tree), "-o", str(tmp_path / "cli"))
    assert code == 0
    assert {**rep, "seconds": 0, "output": None} == {**doc, "seconds": 0, "output": None}
    actions = {f["path"]: f["action"] for f in rep["files"]}
    assert actions == {"README": "copied", "lib/libk.so": "rewritten", "lib/libk.so.1": "copied"}
    assert gfxkit.list(out / "lib" / "libk.so").architectures == ["gfx90a"]
    assert (out / "lib" / "libk.so.1").is_symlink()
    with pytest.raises(gfxkit.FormatError):
        gfxkit.prune(tree, keep=["gfx1151"], output=tmp_path / "empty")
    assert not (tmp_path / "empty").exists()
    # In place: the tree itself becomes what -o wrote, and nothing is left beside it.
    with pytest.raises(ValueError):
        gfxkit.prune(tree, keep=["gfx90a"], output=out, in_place=True)
    rep = gfxkit.prune(tree, keep=["gfx90a"], in_place=True)
    assert rep["output"] == str(tree.resolve())
    assert (tree / "lib" / "libk.so").read_bytes() == (out / "lib" / "libk.so").read_bytes()
    assert (tree / "lib" / "libk.so.1").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".gfxkit-")) == []


def test_target_ids_processors_and_memory_model():
    t = gfxkit.TargetId("gfx90a:xnack+:sramecc-")
    assert str(t) == "gfx90a:sramecc-:xnack+"
    assert t.processor == "gfx90a"
    assert t.features == {"sramecc": False, "xnack": True}
    assert t == gfxkit.TargetId("gfx90a:sramecc-:xnack+") and len({t, gfxkit.TargetId(str(t))}) == 1
    assert gfxkit.compatible("gfx90a", "gfx90a:sramecc+:xnack-")
    assert not gfxkit.compatible("gfx90a:xnack+", "gfx90a:xnack-")
    rows = {p.name: p for p in gfxkit.processors()}
    assert rows["gfx90a"].target_id_features == ["sramecc", "xnack"]
    assert rows["gfx90a"].mach == 0x3F
    seq = gfxkit.memmodel("gfx90a", "load_atomic;as=global;ord=acquire;scope=agent")
    assert seq[-1] == "buffer_wbinvl1_vol"
    with pytest.raises(gfxkit.Error):
        gfxkit.memmodel("gfx90a", "load_atomic;as=global;ord=bogus")


def test_a_lowered_uncompressed_limit_refuses_bundles_declaring_more(built):
    default = gfxkit.max_uncompressed()
    assert default == 64 << 30
    try:
        assert gfxkit.max_uncompressed(1024) == 1024
        with pytest.raises(gfxkit.FormatError) as e:
            gfxkit.extract(built["ccob"])
        assert "exceeds the limit of 1024" in str(e.value)
    finally:
        gfxkit.max_uncompressed(default)
    assert gfxkit.extract(built["ccob"])
    with pytest.raises(ValueError):
        gfxkit.max_uncompressed(-1)


def test_the_environment_sets_the_uncompressed_limit_on_import_as_for_the_cli():
    import os
    import sys

    def imported(value):
        env = {**os.environ, "GFXKIT_MAX_UNCOMPRESSED": value}
        code = "import gfxkit; print(gfxkit.max_uncompressed())"
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)

    assert imported("2M").stdout.strip() == str(2 << 20)
    bad = imported("12X")
    assert bad.returncode != 0
    assert "GFXKIT_MAX_UNCOMPRESSED" in bad.stderr and "unknown unit" in bad.stderr


def test_windows_dll_reads_as_the_cli_and_prunes_without_its_signature(cli, tmp_path):
    """A DLL clang-19 and lld-link-19 build: listed as the CLI lists it; a signed copy (a
    certificate table) is refused, and pruned unsigned with ``drop_signature``."""
    src = tmp_path / "w.hip"
    src.write_text(KERNELS.replace("PREFIX", "w").replace(
        "typedef struct ihipStream_t *hipStream_t;",
        "typedef struct ihipStream_t *hipStream_t;\n"
        "extern \"C\" int __hipPushCallConfiguration(dim3, dim3, unsigned long long, void *);\n"
        "extern \"C\" int __hipPopCallConfiguration(dim3 *, dim3 *, unsigned long long *, void *);"))
    obj = tmp_path / "w.obj"
    run(tool("clang++"), "-x", "hip", "-nogpulib", "-nogpuinc", "-O2", "-cuid=w",
        "--target=x86_64-pc-windows-msvc", "--offload-arch=gfx90a", "--offload-arch=gfx1151",
        "-c", str(src), "-o", str(obj))
    dll = tmp_path / "w.dll"
    run(tool("lld-link"), "/dll", "/noentry", "/force:unresolved", "/nodefaultlib", str(obj),
        f"/out:{dll}")
    code, doc = cli("list", "--json", str(dll))
    assert code == 0
    assert gfxkit.list(dll).to_dict() == file_object(doc)
    assert gfxkit.list(dll).architectures == ["gfx1151", "gfx90a"]
    # A certificate table at the end of the file (data directory 4 of the PE32+ header).
    data = bytearray(dll.read_bytes())
    lfanew = int.from_bytes(data[0x3C:0x40], "little")
    entry = lfanew + 24 + 112 + 4 * 8
    data[entry:entry + 8] = len(data).to_bytes(4, "little") + (8).to_bytes(4, "little")
    data += bytes([8, 0, 0, 0, 0, 2, 2, 0])
    signed = tmp_path / "signed.dll"
    signed.write_bytes(bytes(data))
    out = tmp_path / "pruned.dll"
    with pytest.raises(gfxkit.FormatError, match="Authenticode"):
        gfxkit.prune(signed, keep=["gfx90a"], output=out)
    assert not out.exists()
    rep = gfxkit.prune(signed, keep=["gfx90a"], output=out, drop_signature=True)
    assert rep["regions"][0]["section"] == ".hip_fat"
    assert gfxkit.list(out).architectures == ["gfx90a"]
    assert out.read_bytes()[entry:entry + 8] == bytes(8)
    # kpack split refuses the signed image the same way, and splits it unsigned on request.
    split = tmp_path / "bin" / "split.dll"
    split.parent.mkdir()
    with pytest.raises(gfxkit.FormatError, match="Authenticode"):
        gfxkit.kpack_split(signed, split, "w")
    assert not split.exists()
    rep = gfxkit.kpack_split(signed, split, "w", drop_signature=True)
    assert rep["binaries"][0]["code_objects"] == 2
    assert split.read_bytes()[entry:entry + 8] == bytes(8)
    assert gfxkit.list(split).architectures == ["gfx1151", "gfx90a"]
