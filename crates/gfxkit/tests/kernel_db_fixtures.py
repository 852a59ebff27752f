"""Builds kernel-database test files from code objects, following the formats' own layouts.

  python3 kernel_db_fixtures.py kdb OUT.kdb 'NAME|ARGS|FILE[|raw][|badhash]' ...
  python3 kernel_db_fixtures.py aks2 OUT.aks2 'NAME|FILE' ...
  python3 kernel_db_fixtures.py mapping OUT_Mapping.dat 'INDEX|LIBRARY' ...

kdb: MIOpen's kern_db table (src/include/miopen/kern_db.hpp): kernel_blob bzip2-compressed
with uncompressed_size set, or stored as is with uncompressed_size 0 (`raw`); kernel_hash the
MD5 of the code object (`badhash` stores a wrong one).
aks2: AOTriton's kernel storage V2 (python/aks2.py): "AKS2", u32 total uncompressed size,
u32 kernel count, u32 directory size, then one xz stream of the directory and the images; a
directory entry is five u32 (shared memory, block threads, image offset, image size, name
length with its NUL) and the NUL-terminated name.
mapping: hipBLASLt's *_Mapping.dat, one MessagePack map of solution index (unsigned integer)
to kernel-library name (string), written with the MessagePack spec's map 32, uint 32 and str 32
forms.
"""
import bz2
import hashlib
import lzma
import sqlite3
import struct
import sys


def kdb(out, specs):
    db = sqlite3.connect(out)
    db.execute(
        "CREATE TABLE kern_db (id INTEGER PRIMARY KEY ASC, kernel_name TEXT NOT NULL, "
        "kernel_args TEXT NOT NULL, kernel_blob BLOB NOT NULL, kernel_hash TEXT NOT NULL, "
        "uncompressed_size INT NOT NULL)"
    )
    db.execute(
        "CREATE UNIQUE INDEX idx_kern_db ON kern_db (kernel_name, kernel_args, kernel_hash, "
        "uncompressed_size)"
    )
    for spec in specs:
        name, args, path, *mode = spec.split("|")
        data = open(path, "rb").read()
        digest = hashlib.md5(data).hexdigest()
        if "badhash" in mode:
            digest = hashlib.md5(data + b"x").hexdigest()
        if "raw" in mode:
            blob, size = data, 0
        else:
            blob, size = bz2.compress(data), len(data)
        db.execute(
            "INSERT INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, "
            "uncompressed_size) VALUES (?, ?, ?, ?, ?)",
            (name, args, blob, digest, size),
        )
    db.commit()
    db.close()


def aks2(out, specs):
    directory = b""
    images = b""
    for spec in specs:
        name, path = spec.split("|")
        data = open(path, "rb").read()
        encoded = name.encode() + b"\0"
        directory += struct.pack("<5I", 0, 256, len(images), len(data), len(encoded)) + encoded
        images += data
    payload = directory + images
    header = b"AKS2" + struct.pack("<3I", len(payload), len(specs), len(directory))
    with open(out, "wb") as f:
        f.write(header + lzma.compress(payload, format=lzma.FORMAT_XZ))


def mapping(out, specs):
    body = struct.pack(">BI", 0xDF, len(specs))
    for spec in specs:
        index, library = spec.split("|")
        name = library.encode()
        body += struct.pack(">BI", 0xCE, int(index)) + struct.pack(">BI", 0xDB, len(name)) + name
    with open(out, "wb") as f:
        f.write(body)


if __name__ == "__main__":
    {"kdb": kdb, "aks2": aks2, "mapping": mapping}[sys.argv[1]](sys.argv[2], sys.argv[3:])
