"""The floor a census is measured against: every input of a list read on W processes, what is
compressed decompressed (wheels and zips with `unzip -p`, .debs with `dpkg-deb --fsys-tarfile`,
compressed offload bundles (CCOB) with libzstd or zlib in this process), the output thrown
away. With --sha256, also what the census's dataset records a SHA-256 of: every input's bytes
and every decompressed bundle's (the census hashes each code object in it).

    python bench/census-floor.py LIST W [--sha256]

Used by bench/census.sh; needs the `zstandard` package.
"""

import hashlib
import multiprocessing
import subprocess
import sys
import zlib

import zstandard

# Header length by CCOB version, and where each header's sizes are.
HEADER = {1: 20, 2: 24, 3: 32}


def ccob(data: bytes):
    """(method, payload, uncompressed size) of a compressed offload bundle, else None."""
    if data[:4] != b"CCOB" or len(data) < 8:
        return None
    version = int.from_bytes(data[4:6], "little")
    method = int.from_bytes(data[6:8], "little")
    if version not in HEADER or len(data) < HEADER[version]:
        return None
    if version == 1:
        end, size = len(data), int.from_bytes(data[8:12], "little")
    elif version == 2:
        end, size = int.from_bytes(data[8:12], "little"), int.from_bytes(data[12:16], "little")
    else:
        end, size = int.from_bytes(data[8:16], "little"), int.from_bytes(data[16:24], "little")
    return method, data[HEADER[version]:end], size


def read_one(args) -> int:
    path, sha = args
    if path.endswith((".whl", ".zip")):
        out = subprocess.run(["unzip", "-p", path], stdout=subprocess.DEVNULL).returncode
        if sha:
            with open(path, "rb") as f:
                hashlib.file_digest(f, "sha256")
        return out
    if path.endswith(".deb"):
        out = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], stdout=subprocess.DEVNULL).returncode
        if sha:
            with open(path, "rb") as f:
                hashlib.file_digest(f, "sha256")
        return out
    with open(path, "rb") as f:
        data = f.read()
    if sha:
        hashlib.sha256(data).digest()
    bundle = ccob(data)
    if bundle is not None:
        method, payload, size = bundle
        if method == 1:
            decoded = zstandard.ZstdDecompressor().decompress(payload, max_output_size=size)
        else:
            decoded = zlib.decompress(payload)
        if sha:
            hashlib.sha256(decoded).digest()
    return 0


def main() -> None:
    paths = [p for p in open(sys.argv[1]).read().splitlines() if p]
    workers = int(sys.argv[2])
    sha = "--sha256" in sys.argv[3:]
    with multiprocessing.Pool(workers) as pool:
        failed = sum(1 for r in pool.imap_unordered(read_one, [(p, sha) for p in paths], chunksize=8) if r)
    if failed:
        sys.exit(f"{failed} inputs could not be read")


if __name__ == "__main__":
    main()
