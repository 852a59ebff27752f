#!/usr/bin/env python3
"""Writes the container image the benchmarks read (bench/images.sh, bench/floor.sh).

    make-image.py OUT ROCRAND [BIG_SO]

OUT is an OCI layout archive of two layers: a gzip layer with librocrand (twice: one copy the
next layer deletes) and, when BIG_SO exists, librocsparse; a zstd layer with the whiteout and
another copy of librocrand under /opt/rocm.
"""
import hashlib, io, json, os, subprocess, sys, tarfile
out, rocrand = sys.argv[1:3]
big = sys.argv[3] if len(sys.argv) > 3 else ''
def layer(entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode='w', format=tarfile.PAX_FORMAT) as t:
        for name, path in entries:
            if path is None:
                ti = tarfile.TarInfo(name); ti.size = 0; t.addfile(ti, io.BytesIO(b''))
            else:
                t.add(path, arcname=name)
    return b.getvalue()
l1 = [('usr/lib/x86_64-linux-gnu/librocrand.so.1.1', rocrand),
      ('usr/lib/x86_64-linux-gnu/librocrand-old.so', rocrand)]
if os.path.exists(big):
    l1.append(('usr/lib/x86_64-linux-gnu/librocsparse.so.0.1', big))
l2 = [('usr/lib/x86_64-linux-gnu/.wh.librocrand-old.so', None), ('opt/rocm/lib/librocrand.so.1.1', rocrand)]
files = {'oci-layout': b'{"imageLayoutVersion":"1.0.0"}'}
def blob(data, media):
    h = hashlib.sha256(data).hexdigest(); files['blobs/sha256/' + h] = data
    return {'mediaType': media, 'digest': 'sha256:' + h, 'size': len(data)}
descs = [blob(subprocess.run(['gzip', '-6', '-c'], input=layer(l1), capture_output=True, check=True).stdout,
              'application/vnd.oci.image.layer.v1.tar+gzip'),
         blob(subprocess.run(['zstd', '-3', '-q', '-c'], input=layer(l2), capture_output=True, check=True).stdout,
              'application/vnd.oci.image.layer.v1.tar+zstd')]
cfg = blob(json.dumps({'os': 'linux', 'architecture': 'amd64'}).encode(), 'application/vnd.oci.image.config.v1+json')
man = blob(json.dumps({'schemaVersion': 2, 'config': cfg, 'layers': descs}).encode(), 'application/vnd.oci.image.manifest.v1+json')
files['index.json'] = json.dumps({'schemaVersion': 2, 'manifests': [man]}).encode()
with tarfile.open(out, 'w') as t:
    for n, d in sorted(files.items()):
        ti = tarfile.TarInfo(n); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
