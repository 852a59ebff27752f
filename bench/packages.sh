#!/usr/bin/env bash
# Listing a wheel in place against decompressing its shared objects with unzip: wall time
# (best of $RUNS, runs alternating) and peak anonymous memory (RssAnon sampled every 5 ms), side
# by side. Not a test: numbers depend on the machine and its load. The figures are recorded in
# docs/measured/packages.txt (scripts/record.sh; GFXKIT_RECORD=0 does not write it).
#
#   bench/packages.sh [WHEEL...]   (default: the wheels in $PKG_DIR from scripts/check-real-packages,
#                                   and one built around $BIG_SO, by default
#                                   corpus/debian/librocsparse.so, 1.3 GB deflated)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
. scripts/record.sh
G=$(realpath "${GFXKIT:-target/release/gfxkit}")
RUNS=${RUNS:-3}
D=${PKG_DIR:-/tmp/gfxkit-real-packages}
BIG_SO=${BIG_SO:-${CORPUS:-/work/corpus}/debian/librocsparse.so}
wheels=("$@")
if [ ${#wheels[@]} = 0 ]; then
  big=$D/rocsparse_synth-1.0-py3-none-linux_x86_64.whl
  if [ ! -e "$big" ] && [ -e "$BIG_SO" ]; then
    mkdir -p "$D"
    python3 - "$big" "$BIG_SO" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    z.write(sys.argv[2], 'rocsparse_synth/lib/librocsparse.so')
    z.writestr('rocsparse_synth/__init__.py', '')
PY
  fi
  mapfile -t wheels < <(ls -S "$D"/*.whl 2>/dev/null)
fi

# peak_anon CMD: runs CMD and prints the peak RssAnon of its process in MiB.
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

record_start packages bench/packages.sh
for w in "${wheels[@]}"; do
  size=$(stat -c %s "$w")
  sos=$(unzip -Z1 "$w" | grep -c '\.so' || true)
  list="$G list $w"
  unz="unzip -p $w '*.so*'"
  # Alternate the two sides so both see the same load.
  best_g="" best_u=""
  for ((i = 0; i < RUNS; i++)); do
    g=$(RUNS=1 best_of "$list")
    u=$(RUNS=1 best_of "$unz")
    best_g=$(python3 -c "print(min(x for x in [$g, ${best_g:-$g}]))")
    best_u=$(python3 -c "print(min(x for x in [$u, ${best_u:-$u}]))")
  done
  mg=$(peak_anon "$list")
  mu=$(peak_anon "$unz")
  usize=$(unzip -Zt "$w" | awk '{print $3}')
  record "$(basename "$w"): $(python3 -c "print(f'{$size/1e6:.1f} MB, {$usize/1e9:.2f} GB uncompressed')"), $sos .so members"
  record "$(python3 -c "import sys; g,u=float(sys.argv[1]),float(sys.argv[2]); print(f'  gfxkit list {g*1000:.1f} ms, unzip -p .so {u*1000:.1f} ms: gfxkit/unzip {g/u:.2f}x')" "$best_g" "$best_u")"
  record "  peak anonymous memory: gfxkit list $mg MiB, unzip -p $mu MiB"
done
record_end
