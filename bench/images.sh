#!/usr/bin/env bash
# `gfxkit list --summary` of a container image against unpacking the same image with `tar -x`
# (the archive, then each layer in order into one root: what reading the image's files without
# gfxkit takes), side by side: wall time (best of $RUNS, runs alternating) and peak memory
# (/usr/bin/time -v's maximum resident set, and gfxkit's peak anonymous memory sampled every
# 5 ms, which leaves out the pages of mapped files). Not a test: numbers depend on the machine and its
# load. The figures are recorded in docs/measured/images.txt (scripts/record.sh;
# GFXKIT_RECORD=0 does not write it).
#
#   bench/images.sh     (the image is built in $IMG_DIR, default /tmp/gfxkit-images, from
#                        Debian's librocrand in target/real and, when present, the corpus's
#                        librocsparse, $BIG_SO, default /work/corpus/debian/librocsparse.so)
#
# The image is an OCI layout archive of two layers: a gzip layer with the libraries and a file
# the next layer deletes, and a zstd layer with the whiteout and another copy of librocrand.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/record.sh
G=$(realpath "${GFXKIT:-target/release/gfxkit}")
RUNS=${RUNS:-3}
D=${IMG_DIR:-/tmp/gfxkit-images}
ROCRAND=target/real/librocrand.so.1.1
BIG_SO=${BIG_SO:-${CORPUS:-/work/corpus}/debian/librocsparse.so}
mkdir -p "$D"
IMG=$D/rocm-image.tar
if [ ! -e "$IMG" ]; then
  python3 bench/make-image.py "$IMG" "$ROCRAND" "$BIG_SO"
fi
# The layers of the image in order (from its manifest), for the tar side.
layers=$(python3 - "$IMG" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
idx = json.load(t.extractfile('index.json'))
m = json.load(t.extractfile('blobs/sha256/' + idx['manifests'][0]['digest'].split(':')[1]))
print(' '.join('blobs/sha256/' + l['digest'].split(':')[1] for l in m['layers']))
PY
)
OUT=$D/unpacked
untar="rm -rf $OUT && mkdir -p $OUT/root && tar -xf $IMG -C $OUT"
for l in $layers; do untar="$untar && tar -xf $OUT/$l -C $OUT/root"; done
list="$G list --summary $IMG"

# best CMD: the best wall time of $RUNS runs, in seconds.
best() {
  local best="" s e d
  for ((r = 0; r < RUNS; r++)); do
    s=$(date +%s%N); bash -c "$1" >/dev/null 2>&1; e=$(date +%s%N)
    d=$(((e - s) / 1000))
    if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; fi
  done
  python3 -c "print($best/1e6)"
}
# maxrss CMD: /usr/bin/time -v's maximum resident set size, MiB.
maxrss() {
  /usr/bin/time -v bash -c "$1" 2>&1 >/dev/null | awk '/Maximum resident set size/ {printf "%.1f", $6/1024}'
}
# peak_anon CMD: the peak RssAnon of CMD's process (sampled every 5 ms), MiB.
peak_anon() {
  bash -c "exec $1" >/dev/null 2>&1 &
  local pid=$! peak=0 v
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
    sleep 0.005
  done
  wait "$pid" || true
  python3 -c "print(f'{$peak/1024:.1f}')"
}

record_start images bench/images.sh
size=$(stat -c %s "$IMG")
record "$(basename "$IMG"): $(python3 -c "print(f'{$size/1e6:.1f} MB')"), layers: $(python3 - "$IMG" $layers <<'PY'
import sys, tarfile
t = tarfile.open(sys.argv[1])
print(', '.join(f"{t.getmember(l).size/1e6:.1f} MB" for l in sys.argv[2:]))
PY
)"
$list | sed 's/^/  /' | head -3
best_g="" best_t=""
for ((i = 0; i < RUNS; i++)); do
  g=$(RUNS=1 best "$list")
  t=$(RUNS=1 best "$untar")
  best_g=$(python3 -c "print(min($g, ${best_g:-$g}))")
  best_t=$(python3 -c "print(min($t, ${best_t:-$t}))")
done
rg=$(maxrss "$list")
rt=$(maxrss "$untar")
unpacked=$(du -sb "$OUT" | cut -f1)
rm -rf "$OUT"
# gfxkit's own anonymous memory (the mapped image and spilled files are file pages).
ag=$(peak_anon "$list")
record "$(python3 -c "import sys; g,t=float(sys.argv[1]),float(sys.argv[2]); print(f'  gfxkit list --summary {g:.2f} s, tar -x of the archive and its layers {t:.2f} s: gfxkit/tar {g/t:.2f}x')" "$best_g" "$best_t")"
record "  maximum resident set (time -v; tar: its largest process): gfxkit $rg MiB, tar $rt MiB; gfxkit's peak anonymous memory $ag MiB"
record "  tar -x wrote $(python3 -c "print(f'{$unpacked/1e9:.2f} GB')") to disk; gfxkit wrote nothing but its spill of files above 16 MiB (an unnamed temporary file)"
record_end
