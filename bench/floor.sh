#!/usr/bin/env bash
# Benchmark: gfxkit's heavy operations against their floor (cp, zstd) and clang-offload-bundler
# 19, on real ROCm bundles, with peak anonymous memory. Not a test. Writes docs/performance.md
# (a Markdown table) and docs/performance.svg (a chart of the ratios).
#
#   bash bench/floor.sh                  # corpus in /work/corpus
#   bash bench/floor.sh /path/to/corpus  # uses <corpus>/debian/librocsparse.so (+ .hip_fatbin)
#   bash bench/floor.sh --runs 5 --big-runs 3 [corpus]   # or RUNS=5 BIG_RUNS=3 bash bench/floor.sh
#
# Repetitions: --runs N (or RUNS; default 7) for the rows of the 93 MB bundle, --big-runs N (or
# BIG_RUNS; default 7) for the 1.3 GB library. With the defaults one run takes about 8 minutes
# on an idle 2-core machine (plus the release build, when it is not up to date). The machine
# should be otherwise idle: the report says when it was not (the CPU other processes took
# during the run, from /proc/stat less the script's own, and the load average).
#
# After one warm-up round (not recorded), each row runs its commands alternately (gfxkit,
# floor, clang, gfxkit, ...) RUNS times (BIG_RUNS for the 1.3 GB library), so that load from
# other processes hits every side alike. A row's figure is the median of the ratios of
# its pairs (gfxkit's time over the floor's in the same round), with their range (min-max) as
# the spread. Memory is the peak RssAnon of the process and its children,
# sampled every millisecond (bench/peak.py): mapped input files and the page cache do not count.
# CPU time (user + system, least over the runs) is reported beside: on a loaded machine it is
# what a side costs, as wall time then mostly measures the wait for a core.
# The 93 MB bundle is the largest of librocsparse's 111 (8 entries: gfx803 ... gfx1030).
#
# Rows of the newer inputs, each run when its input is at hand (TREE_RUNS, default 5, rounds):
# - `extract` of every entry of cupy-rocm-7-0 14.2.0's `cub` bundle (142 MiB uncompressed, 10
#   entries), cut out of the wheel ($CUPY_WHEEL, default the one scripts/check-real-packages
#   downloads to /tmp/gfxkit-real-packages), against `cp` ($RUNS rounds);
# - a kernel-database tree: `prune --keep gfx90a` of Debian's librocblas0 5.5.1 unpacked
#   ($ROCBLAS_DEB, default target/real/librocblas0_5.5.1+dfsg-7_amd64.deb: the library and its
#   2.3 GB Tensile library) against `cp -r` of the files it keeps, and `size` and
#   `doctor --device gfx90a` of that tree against their goals (2 s, 512 MiB; no floor);
# - a container image: `list --summary` of an OCI image holding librocsparse and Debian's
#   librocrand (target/real/librocrand.so.1.1; bench/make-image.py) against `tar -x` of the
#   image and its layers;
# - a Windows DLL: `prune --keep gfx90a` of a DLL of 400 kernels for four processors, built by
#   clang-19 and lld-link-19 (bench/dll-source.py; kept in target/bench/), against `cp`;
# - a directory of compressed bundles: `size`, `size --check` and `list -r` of Debian sid's
#   hipblaslt/library (libhipblaslt1 7.1.1+dfsg-4: 1,467 files, 717 of them CCOB shards)
#   against `cat` of every file to /dev/null (cached). The directory is $HIPBLASLT_LIB, else
#   unpacked from $HIPBLASLT_DEB (default target/bench/libhipblaslt1_7.1.1+dfsg-4_amd64.deb;
#   get it with `apt-get download libhipblaslt1=7.1.1+dfsg-4` from sid, as
#   scripts/ensure-real-inputs does); the rows are skipped when neither is at hand.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-7}
BIG_RUNS=${BIG_RUNS:-7}
TREE_RUNS=${TREE_RUNS:-5}
CORPUS=/work/corpus
while [ $# -gt 0 ]; do
  case $1 in
  --runs) RUNS=$2; shift 2 ;;
  --big-runs) BIG_RUNS=$2; shift 2 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
  -*) echo "bench/floor.sh: unknown option $1" >&2; exit 2 ;;
  *) CORPUS=$1; shift ;;
  esac
done
case "$RUNS$BIG_RUNS" in *[!0-9]*) echo "bench/floor.sh: repetitions must be numbers" >&2; exit 2 ;; esac
[ "$RUNS" -ge 1 ] && [ "$BIG_RUNS" -ge 1 ] || { echo "bench/floor.sh: repetitions must be at least 1" >&2; exit 2; }
LIB=$CORPUS/debian/librocsparse.so
FATBIN=$CORPUS/debian/librocsparse.so.hip_fatbin
STARTED=$(date +%s.%N)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# CPU time the whole machine has spent busy (user, nice, system, irq, softirq, steal) and
# this script's own with its children, in clock ticks: their difference over the run is the
# CPU other processes took while it ran, a measure of load that a load average (which also
# remembers the minute before the run) is not.
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
own_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$$/stat"; }
BUSY_START=$(busy_ticks)
OWN_START=$(own_ticks)
L19=/usr/lib/llvm-19/bin
CB=$L19/clang-offload-bundler
PEAK="python3 $ROOT/bench/peak.py"
for f in "$LIB" "$FATBIN"; do
  [ -s "$f" ] || { echo "bench/floor.sh: $f not found (corpus path as the first argument)" >&2; exit 2; }
done
command -v zstd >/dev/null || { echo "bench/floor.sh: zstd missing (apt-get install zstd)" >&2; exit 2; }
bash scripts/ensure-llvm19 >/dev/null

if pkg-config --exists libzstd 2>/dev/null; then export ZSTD_SYS_USE_PKG_CONFIG=1; fi
echo "== building gfxkit (release)"
cargo build --release -q -p gfxkit
G=$ROOT/target/release/gfxkit

W=$(mktemp -d "${TMPDIR:-/tmp}/gfxkit-bench.XXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"

echo "== inputs"
# The largest bundle of the library, cut out of it.
read -r OFF SIZE < <("$G" list --json "$LIB" | python3 -c '
import json, sys
b = max(json.load(sys.stdin)["files"][0]["bundles"], key=lambda b: b["size"])
print(b["offset"], b["size"])')
python3 - "$LIB" "$OFF" "$SIZE" <<'PY'
import sys
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2]))
    open("lib.hipfb", "wb").write(f.read(int(sys.argv[3])))
PY
# Its entries, and clang's own uncompressed and compressed bundles of them (the host entry is
# empty; clang 19 cannot unbundle it by its stored 3-part ID).
mapfile -t IDS < <($CB -list -type=o -input=lib.hipfb)
INS=()
for i in "${!IDS[@]}"; do
  INS+=("-input=e$i")
  case ${IDS[$i]} in
  host-*) : >"e$i" ;;
  *) $CB -type=o -targets="${IDS[$i]}" -input=lib.hipfb -output="e$i" -unbundle ;;
  esac
done
TARGETS=$(IFS=,; echo "${IDS[*]}")
DEVICE=$(printf '%s\n' "${IDS[@]}" | grep -v '^host-' | paste -sd,)
DOUTS=()
for i in "${!IDS[@]}"; do case ${IDS[$i]} in host-*) ;; *) DOUTS+=("-output=u$i") ;; esac; done
$CB -type=o -targets="$TARGETS" "${INS[@]}" -output=big.hipfb
$CB -type=o -targets="$TARGETS" "${INS[@]}" -output=clang.z.hipfb -compress
tail -c +25 clang.z.hipfb >frame.zst # the zstd frame of clang's CCOB v2 (24-byte header)
"$G" compress --threads 0 big.hipfb -o g0.z.hipfb
if cmp -s g0.z.hipfb clang.z.hipfb; then IDENT=yes; else IDENT=no; fi
BIG=$(stat -c %s big.hipfb)
echo "bundle: $BIG bytes, ${#IDS[@]} entries; compressed by clang: $(stat -c %s clang.z.hipfb) bytes; gfxkit --threads 0 identical: $IDENT"

# run NAME PREP CMD...: one alternation slot; appends "NAME wall peak cpu" to the results
# (nothing in the warm-up round, r = -1).
RES=$W/results.tsv
: >"$RES"
run() { # NAME PREP CMD: untimed PREP, then CMD timed
  local name=$1 prep=$2
  shift 2
  bash -c "$prep" || true
  read -r wall peak rc cpu < <($PEAK "$@")
  [ "$rc" = 0 ] || { echo "bench: $name failed (exit $rc): $*" >&2; exit 1; }
  [ "$r" -ge 0 ] || return 0
  printf '%s\t%s\t%s\t%s\n' "$name" "$wall" "$peak" "$cpu" >>"$RES"
}

echo "== small rows (a warm-up, then $RUNS runs each, alternating)"
for ((r = -1; r < RUNS; r++)); do
  run dec.gfxkit "rm -f d.hipfb" "$G" decompress clang.z.hipfb -o d.hipfb
  run dec.zstd "rm -f d.zst.out" zstd -q -d frame.zst -o d.zst.out
  # What gfxkit does, by the tools: decode and write, and the MD5 of the output beside it.
  run dec.md5 "rm -f d.md5.out" bash -c 'zstd -q -d -c frame.zst | tee d.md5.out | md5sum >/dev/null'
  run ext.gfxkit "rm -rf x" "$G" extract big.hipfb -o x
  run ext.cp "rm -f cp.out" cp big.hipfb cp.out
  run ext.clang "rm -f u[0-9]*" "$CB" -type=o -targets="$DEVICE" -input=big.hipfb "${DOUTS[@]}" -unbundle
  run cmp.gfxkit "rm -f g.z.hipfb" "$G" compress big.hipfb -o g.z.hipfb
  run cmpw.gfxkit "rm -f g2.z.hipfb" "$G" compress --threads 2 big.hipfb -o g2.z.hipfb
  run cmp.zstd "rm -f z.zst" zstd -q -3 --long=27 -T0 big.hipfb -o z.zst
  run cmp.clang "rm -f c.z.hipfb" "$CB" -type=o -targets="$TARGETS" "${INS[@]}" -output=c.z.hipfb -compress
  # The machine's parallel scaling: one zstd -d, then two at the same time.
  run par.one "" zstd -q -d frame.zst -o /dev/null
  run par.two "" bash -c 'zstd -q -d frame.zst -o /dev/null & zstd -q -d frame.zst -o /dev/null; wait'
done
cmp -s d.hipfb big.hipfb || { echo "bench: decompressed bundle differs" >&2; exit 1; }
GZ=$(stat -c %s g.z.hipfb)
WZ=$(stat -c %s g2.z.hipfb)
CZ=$(stat -c %s c.z.hipfb)
ZZ=$(stat -c %s z.zst)

echo "== librocsparse rows (a warm-up, then $BIG_RUNS runs each, alternating)"
for ((r = -1; r < BIG_RUNS; r++)); do
  run prune.gfxkit "rm -f p.so" "$G" prune --keep gfx90a "$LIB" -o p.so
  run prune.cp "rm -f cp.so" cp "$LIB" cp.so
  run rec.gfxkit "rm -f r.so" "$G" recompress "$LIB" -o r.so
  run rec.zstd "rm -f fb.zst" zstd -q -3 --long=27 -T0 "$FATBIN" -o fb.zst
  # A split into a fresh layout, as zstd writes a fresh file: the archives go beside `ks`, in
  # `.kpack`, and left there they would make the next round a re-split (merged into the
  # archives there, each replacing its old one).
  run split.gfxkit "rm -rf ks .kpack" "$G" kpack split "$LIB" --group rocsparse -o ks/librocsparse.so
  run split.zstd "rm -f fb3.zst" zstd -q -3 -T0 "$FATBIN" -o fb3.zst
done

EXTRA=()
CUPY_WHEEL=${CUPY_WHEEL:-$( (ls /tmp/gfxkit-real-packages/cupy_rocm_7_0-14.2.0-*.whl "$ROOT"/target/real/cupy_rocm_7_0-14.2.0-*.whl 2>/dev/null || true) | head -1)}
if [ -s "$CUPY_WHEEL" ]; then
  echo "== cupy's cub bundle: a warm-up, then $RUNS runs each"
  python3 - "$CUPY_WHEEL" <<'PY'
import sys, zipfile
so = zipfile.ZipFile(sys.argv[1]).read("cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so")
open("cub.hipfb", "wb").write(so[1642496:1642496 + 148874152])
PY
  for ((r = -1; r < RUNS; r++)); do
    run cub.gfxkit "rm -rf cx" "$G" extract cub.hipfb -o cx
    run cub.cp "rm -f cub.out" cp cub.hipfb cub.out
  done
  EXTRA+=("cub=$(stat -c %s cub.hipfb)" "cub_entries=$("$G" list --json cub.hipfb | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["files"][0]["bundles"][0]["entries"]))')")
  rm -rf cx cub.out cub.hipfb
fi
ROCBLAS_DEB=${ROCBLAS_DEB:-$ROOT/target/real/librocblas0_5.5.1+dfsg-7_amd64.deb}
ROCRAND=$ROOT/target/real/librocrand.so.1.1
if [ -s "$ROCBLAS_DEB" ]; then
  echo "== kernel-database tree (Debian's librocblas0): a warm-up, then $TREE_RUNS runs each"
  dpkg-deb -x "$ROCBLAS_DEB" rocblas
  TREE=$W/rocblas/usr/lib/x86_64-linux-gnu
  "$G" prune --json --keep gfx90a "$TREE" -o tp >tree.json
  python3 - tree.json >kept.txt <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["files"]:
    if f["action"] != "dropped" and f["kind"] != "directory":
        print(f["path"])
PY
  read -r TB TA < <(python3 -c 'import json,sys; r=json.load(open("tree.json")); print(r["size_before"], r["size_after"])')
  EXTRA+=("tree_before=$TB" "tree_after=$TA")
  for ((r = -1; r < TREE_RUNS; r++)); do
    run tree.gfxkit "rm -rf tp" "$G" prune --keep gfx90a "$TREE" -o tp
    run tree.cp "rm -rf tc" bash -c "mkdir tc && cd '$TREE' && exec xargs -d '\n' -a '$W/kept.txt' cp -P -r --parents -t '$W/tc'"
    run tree.size "" "$G" size "$TREE"
    run tree.doctor "" "$G" doctor --device gfx90a "$TREE"
  done
  rm -rf rocblas tp tc
fi
if [ -s "$ROCRAND" ]; then
  echo "== container image: a warm-up, then $TREE_RUNS runs each"
  python3 "$ROOT/bench/make-image.py" img.tar "$ROCRAND" "$LIB"
  LAYERS=$(python3 - <<'PY'
import json, tarfile
t = tarfile.open("img.tar")
idx = json.load(t.extractfile("index.json"))
m = json.load(t.extractfile("blobs/sha256/" + idx["manifests"][0]["digest"].split(":")[1]))
print(" ".join("blobs/sha256/" + l["digest"].split(":")[1] for l in m["layers"]))
PY
)
  UNTAR="mkdir -p un/root && tar -xf img.tar -C un"
  for l in $LAYERS; do UNTAR="$UNTAR && tar -xf un/$l -C un/root"; done
  EXTRA+=("image=$(stat -c %s img.tar)")
  for ((r = -1; r < TREE_RUNS; r++)); do
    run img.gfxkit "" "$G" list --summary img.tar
    run img.tar "rm -rf un" bash -c "$UNTAR"
  done
  rm -rf un img.tar
fi
if [ -x "$L19/lld-link" ]; then
  DLL=$ROOT/target/bench/k400.dll
  if [ ! -s "$DLL" ]; then
    echo "== building the DLL (400 kernels, four processors)"
    mkdir -p "$ROOT/target/bench"
    python3 "$ROOT/bench/dll-source.py" 400 >k.hip
    "$L19/clang++" -x hip -nogpulib -nogpuinc -O2 --target=x86_64-pc-windows-msvc -cuid=k \
      --offload-arch=gfx90a --offload-arch=gfx942 --offload-arch=gfx1100 --offload-arch=gfx1151 \
      -c k.hip -o k.obj
    "$L19/lld-link" /dll /noentry /force:unresolved /nodefaultlib k.obj "/out:$DLL.tmp" >/dev/null 2>&1
    mv "$DLL.tmp" "$DLL"
    rm -f k.hip k.obj
  fi
  echo "== Windows DLL: a warm-up, then $RUNS runs each"
  for ((r = -1; r < RUNS; r++)); do
    run dll.gfxkit "rm -f p.dll" "$G" prune --keep gfx90a "$DLL" -o p.dll
    run dll.cp "rm -f c.dll" cp "$DLL" c.dll
  done
  EXTRA+=("dll=$(stat -c %s "$DLL")" "dll_pruned=$(stat -c %s p.dll)")
  rm -f p.dll c.dll
fi

HIPBLASLT_DEB=${HIPBLASLT_DEB:-$ROOT/target/bench/libhipblaslt1_7.1.1+dfsg-4_amd64.deb}
HBL=${HIPBLASLT_LIB:-}
if [ -z "$HBL" ] && [ -s "$HIPBLASLT_DEB" ]; then
  dpkg-deb -x "$HIPBLASLT_DEB" hipblaslt
  HBL=$W/hipblaslt/usr/lib/x86_64-linux-gnu/hipblaslt/library
fi
if [ -n "$HBL" ] && [ -d "$HBL" ]; then
  echo "== hipBLASLt's library directory: a warm-up, then $TREE_RUNS runs each"
  CATALL="cat '$HBL'/* >/dev/null"
  for ((r = -1; r < TREE_RUNS; r++)); do
    run hbl.size "" "$G" size "$HBL"
    run hbl.cat "" bash -c "$CATALL"
    run hbl.list "" "$G" list -r "$HBL"
    run hbl.cat2 "" bash -c "$CATALL"
    run hbl.check "" "$G" size --check "$HBL"
    run hbl.cat3 "" bash -c "$CATALL"
  done
  EXTRA+=("hbl_files=$(find "$HBL" -type f | wc -l)" "hbl_bytes=$(du -sb "$HBL" | cut -f1)"
    "hbl_ccob=$(for f in "$HBL"/*.co; do [ "$(head -c 4 "$f")" != CCOB ] || echo; done | wc -l)")
  rm -rf hipblaslt
else
  echo "== hipBLASLt's library directory skipped: set HIPBLASLT_LIB, or put Debian sid's" \
    "libhipblaslt1_7.1.1+dfsg-4_amd64.deb at $HIPBLASLT_DEB"
fi

PS=$(stat -c %s p.so)
RS=$(stat -c %s r.so)
FZ=$(stat -c %s fb.zst)
rm -rf cp.so p.so r.so fb.zst fb3.zst ks .kpack

mkdir -p "$ROOT/target/bench"
cp "$RES" "$ROOT/target/bench/floor-results.tsv" # every run, for the record
TICKS=$(getconf CLK_TCK)
OTHERS_CPU=$(awk -v b="$(( $(busy_ticks) - BUSY_START ))" -v o="$(( $(own_ticks) - OWN_START ))" \
  -v t="$TICKS" 'BEGIN { d = (b - o) / t; printf "%.1f", d < 0 ? 0 : d }')
ELAPSED=$(awk -v s="$STARTED" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
python3 "$ROOT/bench/report.py" "$RES" "$ROOT/docs" \
  "bundle=$BIG" "out=$BIG" "gz=$GZ" "wz=$WZ" "cz=$CZ" "zz=$ZZ" "lib=$(stat -c %s "$LIB")" \
  "fatbin=$(stat -c %s "$FATBIN")" "pruned=$PS" "recompressed=$RS" "fz=$FZ" "ident=$IDENT" \
  "runs=$RUNS" "big_runs=$BIG_RUNS" "load=$LOAD_START" "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" \
  "cores=$(nproc)" "minutes=$(awk -v e="$ELAPSED" 'BEGIN { printf "%d", (e + 30) / 60 }')" \
  "tree_runs=$TREE_RUNS" "others_cpu=$OTHERS_CPU" "elapsed=$ELAPSED" \
  ${EXTRA[@]+"${EXTRA[@]}"}
echo "== wrote docs/performance.md and docs/performance.svg"
