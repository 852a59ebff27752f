"""Fixtures for the gfxkit Python package tests: files clang-19 builds here, and the gfxkit
CLI to compare with (``GFXKIT_BIN``, else ``target/debug/gfxkit`` built by cargo)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LLVM = Path("/usr/lib/llvm-19/bin")

KERNELS = """#define __global__ __attribute__((global))
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm,
                               hipStream_t s);
extern "C" __global__ void PREFIX_scale(float *a, const float *b, int n) {
  int t = __builtin_amdgcn_workitem_id_x();
  if (t < n) a[t] = b[t] * 2.5f + (float)t;
}
extern "C" __global__ void PREFIX_add(float *a, const float *b, int n) {
  int t = __builtin_amdgcn_workitem_id_x();
  if (t < n) a[t] += b[t];
}
"""


def tool(name: str) -> str:
    path = LLVM / name
    assert path.is_file(), f"{path} is missing: run `bash scripts/ensure-llvm19`"
    return str(path)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, capture_output=True)


@pytest.fixture(scope="session")
def gfxkit_bin() -> str:
    path = os.environ.get("GFXKIT_BIN") or str(ROOT / "target" / "debug" / "gfxkit")
    if not Path(path).is_file():
        subprocess.run(["cargo", "build", "-q", "-p", "gfxkit"], cwd=ROOT, check=True)
    return path


@pytest.fixture(scope="session")
def cli(gfxkit_bin):
    """Runs the gfxkit CLI; returns (exit code, parsed JSON stdout)."""

    def call(*args: str):
        out = subprocess.run([gfxkit_bin, *args], capture_output=True)
        return out.returncode, json.loads(out.stdout)

    return call


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict:
    """A device-only bundle, a compressed one (CCOB), and a shared library whose .hip_fatbin
    holds one plain and one compressed bundle, all built by clang-19."""
    d = tmp_path_factory.mktemp("clang")
    def source(prefix: str) -> Path:
        path = d / f"{prefix}.hip"
        path.write_text(KERNELS.replace("PREFIX", prefix))
        return path

    src = source("k")
    common = ["-x", "hip", "-nogpulib", "-nogpuinc", "-O1"]
    bundle = d / "k.hipfb"
    run(tool("clang++"), *common, "--cuda-device-only", "-cuid=k",
        "--offload-arch=gfx906", "--offload-arch=gfx90a:xnack+", "--offload-arch=gfx90a:xnack-",
        "-c", str(src), "-o", str(bundle))
    ccob = d / "kz.hipfb"
    run(tool("clang++"), *common, "--cuda-device-only", "-cuid=kz", "--offload-compress",
        "--offload-arch=gfx1030", "--offload-arch=gfx90a",
        "-c", str(src), "-o", str(ccob))
    objs = []
    for name, archs, extra in (("a", ["gfx906", "gfx90a:xnack+"], []),
                               ("b", ["gfx1030", "gfx1100"], ["--offload-compress"])):
        obj = d / f"{name}.o"
        run(tool("clang++"), *common, "-fPIC", f"-cuid={name}",
            *[f"--offload-arch={a}" for a in archs], *extra, "-c", str(source(name)),
            "-o", str(obj))
        objs.append(str(obj))
    lib = d / "libk.so"
    run(tool("clang++"), "-fuse-ld=lld", "-shared", *objs, "-o", str(lib))
    code = d / "k-gfx90a.co"
    run(tool("clang-offload-bundler"), "-type=o", f"-input={bundle}", "-unbundle",
        "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", f"-output={code}")
    return {"dir": d, "bundle": bundle, "ccob": ccob, "lib": lib, "code_object": code}
