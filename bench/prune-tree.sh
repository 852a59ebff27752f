#!/usr/bin/env bash
# `gfxkit prune --keep ARCH TREE -o OUT` against `cp -r` of what the prune keeps (the same input
# files, copied unchanged): wall time and peak anonymous memory (bench/peak.py), the median of
# $RUNS alternating pairs, so both sides see the same load. Not a test: numbers depend on the
# machine and its load (the goal for a rocBLAS tree is at most 2x the copy's time).
#
#   bench/prune-tree.sh TREE ARCH [OUT_PARENT]
#
#   TREE        a directory, such as Debian trixie's librocblas0 5.5.1 unpacked
#               (dpkg-deb -x librocblas0_5.5.1+dfsg-7_amd64.deb /tmp/rocblas) and its
#               /tmp/rocblas/usr/lib/x86_64-linux-gnu, or an unzipped amd-aiter wheel
#   ARCH        the target kept (gfx90a)
#   OUT_PARENT  where outputs are written and deleted (default: beside TREE, same file system)
#
# GFXKIT=path/to/gfxkit (default target/release/gfxkit), RUNS (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
G=$(realpath "${GFXKIT:-target/release/gfxkit}")
RUNS=${RUNS:-5}
TREE=$(realpath "$1")
ARCH=$2
PARENT=${3:-$(dirname "$TREE")}
OUT=$PARENT/.bench-prune-out
CP=$PARENT/.bench-cp-out
LIST=$(mktemp)
trap 'rm -rf "$OUT" "$CP" "$LIST"' EXIT

# What the prune keeps: the input paths of every file it writes (kept, rewritten, copied).
rm -rf "$OUT"
"$G" prune --json --keep "$ARCH" "$TREE" -o "$OUT" >"$LIST.json"
python3 - "$LIST.json" >"$LIST" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["files"]:
    if f["action"] != "dropped" and f["kind"] != "directory":
        print(f["path"])
print(f"# {r['size_before']} -> {r['size_after']} bytes", file=sys.stderr)
PY
rm -f "$LIST.json"
echo "tree $TREE: $(wc -l <"$LIST") paths kept of $(find "$TREE" -mindepth 1 ! -type d | wc -l)"

prune_cmd="rm -rf '$OUT' && exec '$G' prune --keep '$ARCH' '$TREE' -o '$OUT'"
cp_cmd="rm -rf '$CP' && mkdir -p '$CP' && cd '$TREE' && exec xargs -d '\n' -a '$LIST' cp -P -r --parents -t '$CP'"
p_t=() p_m=() c_t=() c_m=() p_c=() c_c=()
for ((i = 0; i < RUNS; i++)); do
  read -r t m rc c < <(python3 bench/peak.py bash -c "$prune_cmd")
  [ "$rc" = 0 ] || { echo "prune failed (exit $rc)"; exit 1; }
  p_t+=("$t") p_m+=("$m") p_c+=("$c")
  read -r t m rc c < <(python3 bench/peak.py bash -c "$cp_cmd")
  [ "$rc" = 0 ] || { echo "cp failed (exit $rc)"; exit 1; }
  c_t+=("$t") c_m+=("$m") c_c+=("$c")
done
python3 - "${p_t[*]}" "${p_m[*]}" "${c_t[*]}" "${c_m[*]}" "${p_c[*]}" "${c_c[*]}" <<'PY'
import statistics, sys
pt, pm, ct, cm, pc, cc = ([float(x) for x in a.split()] for a in sys.argv[1:7])
m = statistics.median
print(f"prune    {m(pt):8.2f} s   CPU {m(pc):6.2f} s   peak anon {m(pm)/1024:8.1f} MiB   (runs: {', '.join(f'{x:.2f}' for x in pt)})")
print(f"cp -r    {m(ct):8.2f} s   CPU {m(cc):6.2f} s   peak anon {m(cm)/1024:8.1f} MiB   (runs: {', '.join(f'{x:.2f}' for x in ct)})")
print(f"ratio    {m(pt)/m(ct):8.2f}x wall, {m(pc)/max(m(cc), 1e-3):.2f}x CPU (prune / cp -r of what it keeps; goal at most 2x)")
print(f"load average {open('/proc/loadavg').read().split()[0]} on {__import__('os').cpu_count()} cores")
PY
