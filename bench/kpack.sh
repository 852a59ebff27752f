#!/usr/bin/env bash
# Benchmark (not a test): the kpack layout on a real ROCm library.
#   - `gfxkit list` of the split librocsparse (reads the wrappers, markers and each archive's
#     header and TOC only), in milliseconds;
#   - `gfxkit kpack split` of librocsparse (zstd level 3 per kernel, on every core) against
#     `zstd -3 -T0` of its dumped .hip_fatbin, side by side, runs alternated. Goal: split at
#     most 1.5x the zstd time.
# Timings on a shared machine are noisy: read the ratios.
#
#   bash bench/kpack.sh                 # corpus in /work/corpus
#   bash bench/kpack.sh /path/to/corpus
#   RUNS=5 bash bench/kpack.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROOT=$PWD
CORPUS=${1:-/work/corpus}
LIB=${LIB:-$CORPUS/debian/librocsparse.so}
RUNS=${RUNS:-3}
L19=/usr/lib/llvm-19/bin
[ -s "$LIB" ] || { echo "bench/kpack.sh: $LIB not found (corpus path as the first argument)" >&2; exit 2; }
command -v zstd >/dev/null || { echo "bench/kpack.sh: zstd missing (apt-get install zstd)" >&2; exit 2; }

echo "== building gfxkit (release)"
export ZSTD_SYS_USE_PKG_CONFIG=1
cargo build --release -q -p gfxkit
G=$ROOT/target/release/gfxkit

W=$(mktemp -d "${TMPDIR:-/tmp}/gfxkit-kpack-bench.XXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
mkdir -p lib
"$L19/llvm-objcopy" --dump-section=.hip_fatbin=fatbin.bin "$LIB" scratch.so
rm -f scratch.so
SIZE=$(stat -c %s "$LIB")
FB=$(stat -c %s fatbin.bin)
echo "== input: $LIB ($((SIZE / 1048576)) MiB, .hip_fatbin $((FB / 1048576)) MiB), $(nproc) cores"

split_cmd="$G kpack split $LIB --group rocsparse -o $W/lib/librocsparse.so"
zstd_cmd="zstd -3 -T0 -q -f fatbin.bin -o fatbin.bin.zst"
# Warm the page cache for both inputs.
cat "$LIB" fatbin.bin >/dev/null
best_split="" best_zstd=""
for ((r = 0; r < RUNS; r++)); do
  rm -rf .kpack lib/librocsparse.so
  s=$(date +%s%N); bash -c "$split_cmd" >/dev/null; e=$(date +%s%N)
  d=$(((e - s) / 1000)); if [ -z "$best_split" ] || [ "$d" -lt "$best_split" ]; then best_split=$d; fi
  rm -f fatbin.bin.zst
  s=$(date +%s%N); bash -c "$zstd_cmd"; e=$(date +%s%N)
  d=$(((e - s) / 1000)); if [ -z "$best_zstd" ] || [ "$d" -lt "$best_zstd" ]; then best_zstd=$d; fi
done
ARCH_BYTES=$(du -cb .kpack/*.kpack | tail -1 | cut -f1)
ZST_BYTES=$(stat -c %s fatbin.bin.zst)
HOST_BYTES=$(stat -c %s lib/librocsparse.so)
python3 - "$best_split" "$best_zstd" "$ARCH_BYTES" "$ZST_BYTES" "$HOST_BYTES" "$SIZE" <<'PY'
import sys
sp, zs, ab, zb, hb, size = (int(x) for x in sys.argv[1:])
print(f"kpack split        {sp/1e3:9.1f} ms   archives {ab:>12,} B   host binary {hb:>12,} B (from {size:,})")
print(f"zstd -3 -T0        {zs/1e3:9.1f} ms   .zst     {zb:>12,} B")
print(f"split / zstd time  {sp/zs:9.2f}x  (goal <= 1.5x)")
PY
list_ms=$(best_of "$G list $W/lib/librocsparse.so")
json_ms=$(best_of "$G list --json $W/lib/librocsparse.so")
read -r NB NE < <("$G" list --json lib/librocsparse.so | python3 -c '
import json, sys
f = json.load(sys.stdin)["files"][0]["bundles"]
print(len(f), sum(len(b["entries"]) for b in f))')
python3 -c "import sys; print(f'list (split)       {float(sys.argv[1])*1000:9.1f} ms   --json {float(sys.argv[2])*1000:.1f} ms   ({sys.argv[3]} wrappers, {sys.argv[4]} code objects in {sys.argv[5]} archives)')" "$list_ms" "$json_ms" "$NB" "$NE" "$(ls .kpack | wc -l)"
