#!/usr/bin/env bash
# Benchmark: gfxkit's bundle commands against clang-offload-bundler 19, side by side, on a
# bundle of at least 50 MB. Not a test; prints the timings and the ratios clang/gfxkit.
#
#   bash bench/bundle.sh            # KERNELS=5000 synthetic kernels for 10 targets (~60 MB)
#   KERNELS=500 RUNS=3 bash bench/bundle.sh
#
# The bundle is compiled once by clang-19 (--cuda-device-only, 10 targets) and cached under
# target/bench/. Timings use hyperfine when it is installed (installed from apt when possible),
# else a loop with `date +%s%N` keeping the best of RUNS runs. The figures (bundle size, each
# row's times and ratio) are recorded in docs/measured/bundle.txt (scripts/record.sh;
# GFXKIT_RECORD=0 does not write it).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
. scripts/record.sh
ROOT=$PWD
KERNELS=${KERNELS:-5000}
RUNS=${RUNS:-5}
L19=/usr/lib/llvm-19/bin
CLANG_BUNDLER=$L19/clang-offload-bundler
ARCHS=(gfx906 gfx908 gfx90a:xnack+ gfx90a:xnack- gfx942 gfx1030 gfx1100 gfx1101 gfx1200 gfx1201)

bash scripts/ensure-llvm19 >/dev/null
if ! command -v hyperfine >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null 2>&1 || true
fi

# Link the zstd release clang links (Debian's libzstd) when it is installed, so that both tools
# run the same compressor.
if pkg-config --exists libzstd 2>/dev/null; then export ZSTD_SYS_USE_PKG_CONFIG=1; fi
echo "== building gfxkit (release)"
cargo build --release -q -p gfxkit
G=$ROOT/target/release/gfxkit

CACHE=$ROOT/target/bench
mkdir -p "$CACHE"
BUNDLE=$CACHE/k$KERNELS.hipfb
if [ ! -s "$BUNDLE" ]; then
  echo "== compiling $KERNELS kernels for ${#ARCHS[@]} targets with clang-19 (cached in $CACHE)"
  SRC=$CACHE/k$KERNELS.hip
  {
    echo '#define __global__ __attribute__((global))'
    for ((i = 0; i < KERNELS; i++)); do
      cat <<HIP
extern "C" __global__ void k$i(float *a, const float *b, int n) {
  int t = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  float acc = 0.0f;
  for (int j = 0; j < n; j += $((i % 7 + 1))) acc += b[(t + j) % n] * ${i}.25f;
  if (t < n) a[t] = acc + (float)t * $((i % 13)).5f;
}
HIP
    done
  } >"$SRC"
  args=()
  for a in "${ARCHS[@]}"; do args+=("--offload-arch=$a"); done
  $L19/clang++ -x hip -nogpulib -nogpuinc --cuda-device-only -O1 -cuid=bench "${args[@]}" \
    -c "$SRC" -o "$BUNDLE"
fi
SIZE=$(stat -c %s "$BUNDLE")
record_start bundle bench/bundle.sh
record "bundle: $KERNELS kernels, ${#ARCHS[@]} targets, $((SIZE / 1000000)) MB, $(($("$G" list --json "$BUNDLE" | grep -c '"id"'))) entries"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
cp "$BUNDLE" big.hipfb

# Every entry ID, the code objects (for bundling) and a compressed copy, made by clang.
# (clang 19 mangles the host ID as it is stored, so it is requested in its 4-part spelling.)
mapfile -t IDS < <($CLANG_BUNDLER -list -type=o -input=big.hipfb | sort |
  sed 's/^host-x86_64-unknown-linux--$/host-x86_64-unknown-linux/')
TARGETS=$(IFS=,; echo "${IDS[*]}")
OUTS=()
INS=()
for i in "${!IDS[@]}"; do OUTS+=("-output=e$i"); done
$CLANG_BUNDLER -type=o -targets="$TARGETS" -input=big.hipfb "${OUTS[@]}" -unbundle
for i in "${!IDS[@]}"; do INS+=("-input=e$i"); done
$CLANG_BUNDLER -type=o -targets="$TARGETS" "${INS[@]}" -output=big.z.hipfb -bundle-align=4096 -compress
ONE=hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+
echo "== compressed copy: $(($(stat -c %s big.z.hipfb) / 1024)) KB"

declare -a NAMES CLANG_T GFX_T
measure() { # prints seconds (best of RUNS, or hyperfine's mean) for a shell command
  local cmd=$1
  if command -v hyperfine >/dev/null 2>&1; then
    hyperfine -N --warmup 1 --runs "$RUNS" --export-json t.json "$cmd" >/dev/null 2>&1 ||
      hyperfine --warmup 1 --runs "$RUNS" --export-json t.json "$cmd" >/dev/null
    python3 -c 'import json;print(json.load(open("t.json"))["results"][0]["mean"])'
  else
    best_of "$cmd"
  fi
}
row() { # name, clang command, gfxkit command
  local c g
  c=$(measure "$2")
  g=$(measure "$3")
  NAMES+=("$1")
  CLANG_T+=("$c")
  GFX_T+=("$g")
  record "$(ratio_line "$1" 44 clang "$c" "$g")"
}

record "timings ($RUNS runs each; ratio = clang time / gfxkit time, above 1 = gfxkit faster)"
row "list (uncompressed)" \
  "$CLANG_BUNDLER -list -type=o -input=big.hipfb" \
  "$G offload-bundler -list -type=o -input=big.hipfb"
row "list (compressed)" \
  "$CLANG_BUNDLER -list -type=o -input=big.z.hipfb" \
  "$G list big.z.hipfb"
row "extract one target" \
  "$CLANG_BUNDLER -type=o -targets=$ONE -input=big.hipfb -output=one -unbundle" \
  "$G offload-bundler -type=o -targets=$ONE -input=big.hipfb -output=one -unbundle"
row "extract one target (compressed input)" \
  "$CLANG_BUNDLER -type=o -targets=$ONE -input=big.z.hipfb -output=one -unbundle" \
  "$G offload-bundler -type=o -targets=$ONE -input=big.z.hipfb -output=one -unbundle"
row "extract all" \
  "$CLANG_BUNDLER -type=o -targets=$TARGETS -input=big.hipfb ${OUTS[*]} -unbundle" \
  "$G offload-bundler -type=o -targets=$TARGETS -input=big.hipfb ${OUTS[*]} -unbundle"
row "extract all (gfxkit extract)" \
  "$CLANG_BUNDLER -type=o -targets=$TARGETS -input=big.hipfb ${OUTS[*]} -unbundle" \
  "$G extract big.hipfb -o x"
row "bundle (align 4096)" \
  "$CLANG_BUNDLER -type=o -targets=$TARGETS ${INS[*]} -output=b.hipfb -bundle-align=4096" \
  "$G offload-bundler -type=o -targets=$TARGETS ${INS[*]} -output=b.hipfb -bundle-align=4096"
row "bundle + compress (1 thread)" \
  "$CLANG_BUNDLER -type=o -targets=$TARGETS ${INS[*]} -output=c.hipfb -bundle-align=4096 -compress" \
  "$G offload-bundler -type=o -targets=$TARGETS ${INS[*]} -output=c.hipfb -bundle-align=4096 -compress"
row "compress (gfxkit compress, all cores)" \
  "$CLANG_BUNDLER -type=o -targets=$TARGETS ${INS[*]} -output=c.hipfb -bundle-align=4096 -compress" \
  "$G compress big.hipfb -o c2.hipfb"
row "decompress (clang: unbundle all from CCOB)" \
  "$CLANG_BUNDLER -type=o -targets=$TARGETS -input=big.z.hipfb ${OUTS[*]} -unbundle" \
  "$G decompress big.z.hipfb -o d.hipfb"

python3 - "${CLANG_T[@]}" -- "${GFX_T[@]}" <<'PY' | while read -r l; do record "$l"; done
import sys, math
a = sys.argv[1:]
i = a.index("--")
c, g = [float(x) for x in a[:i]], [float(x) for x in a[i + 1:]]
print(f"geometric mean ratio over {len(c)} rows: {math.exp(sum(math.log(x / y) for x, y in zip(c, g)) / len(c)):.2f}x")
PY
record_end
