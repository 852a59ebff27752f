"""Container images (an OCI image layout in a tar, written here from the image-spec) read as the
file system their layers unpack to: the same file objects, ``layer`` included, as ``gfxkit list
--json``; the platform of a multi-platform image chosen with ``image_platform``."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

import gfxkit


def _tar(entries) -> bytes:
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()


def _image(path: Path, platforms) -> None:
    """An OCI layout archive: per platform, layers given as lists of (name, bytes)."""
    files = {"oci-layout": b'{"imageLayoutVersion": "1.0.0"}'}

    def blob(data: bytes, media: str) -> dict:
        h = hashlib.sha256(data).hexdigest()
        files[f"blobs/sha256/{h}"] = data
        return {"mediaType": media, "digest": f"sha256:{h}", "size": len(data)}

    manifests = []
    for plat, layers in platforms:
        os_, arch = plat.split("/")
        config = blob(json.dumps({"os": os_, "architecture": arch}).encode(),
                      "application/vnd.oci.image.config.v1+json")
        descs = [blob(gzip.compress(_tar(l)), "application/vnd.oci.image.layer.v1.tar+gzip")
                 for l in layers]
        m = blob(json.dumps({"schemaVersion": 2, "config": config, "layers": descs}).encode(),
                 "application/vnd.oci.image.manifest.v1+json")
        m["platform"] = {"os": os_, "architecture": arch}
        manifests.append(m)
    files["index.json"] = json.dumps({"schemaVersion": 2, "manifests": manifests}).encode()
    path.write_bytes(_tar(sorted(files.items())))


def test_image_files_are_listed_as_the_cli_lists_them(built, cli, tmp_path):
    lib = Path(built["lib"]).read_bytes()
    img = tmp_path / "img.tar"
    _image(img, [("linux/amd64", [
        [("usr/lib/libk.so", lib), ("usr/lib/libgone.so", lib)],
        [("usr/lib/.wh.libgone.so", b"")],
    ])])
    got = gfxkit.list(str(img))
    assert [f.path for f in got] == [f"{img}!/usr/lib/libk.so"]
    code, want = cli("list", "--json", str(img))
    assert code == 0
    assert [f.to_dict() for f in got] == want["files"]
    assert want["files"][0]["layer"].startswith("sha256:")


def test_image_platform_chooses_among_platforms(built, tmp_path):
    lib = Path(built["lib"]).read_bytes()
    img = tmp_path / "multi.tar"
    _image(img, [("linux/arm64", [[("arm/libk.so", lib)]]),
                 ("linux/amd64", [[("amd/libk.so", lib)]])])
    try:
        assert gfxkit.image_platform() is None
        assert [f.path for f in gfxkit.list(str(img))] == [f"{img}!/amd/libk.so"]
        assert gfxkit.image_platform("linux/arm64") == "linux/arm64"
        assert [f.path for f in gfxkit.list(str(img))] == [f"{img}!/arm/libk.so"]
    finally:
        gfxkit.image_platform("")
    assert gfxkit.image_platform() is None


def test_an_oci_layout_directory_reads_as_its_archive(built, cli, tmp_path):
    lib = Path(built["lib"]).read_bytes()
    img = tmp_path / "img.tar"
    _image(img, [("linux/amd64", [[("usr/lib/libk.so", lib)]])])
    layout = tmp_path / "layout"
    with tarfile.open(img) as t:
        t.extractall(layout, filter="data")
    got = gfxkit.list(layout)
    assert [f.path for f in got] == [f"{layout}!/usr/lib/libk.so"]
    code, want = cli("list", "--json", str(layout))
    assert code == 0
    assert [f.to_dict() for f in got] == want["files"]
    assert [v.ok for v in gfxkit.verify(layout)] == [True]
    # One file of it is named as IMAGE!/PATH; the directory itself is no code object.
    with pytest.raises(ValueError, match="container image directory"):
        gfxkit.inspect(layout)
