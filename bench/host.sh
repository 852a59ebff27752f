#!/usr/bin/env bash
# Benchmark: `gfxkit list` and `gfxkit extract --target` on a real ROCm host library against the
# clang-19 route (llvm-objcopy --dump-section .hip_fatbin, then clang-offload-bundler -list /
# -unbundle on the dump), side by side. Not a test; prints timings, ratios and what each route
# saw. clang-offload-bundler reads only the first bundle of a dumped .hip_fatbin; gfxkit reads
# every bundle of the library, so the rows compare a partial answer with a complete one.
#
#   bash bench/host.sh                  # corpus in /work/corpus
#   bash bench/host.sh /path/to/corpus  # uses <corpus>/debian/librocsparse.so
#   RUNS=5 TARGET=gfx908:xnack- bash bench/host.sh
#
# TARGET is a device target ID (default gfx90a:xnack-; librocsparse has gfx90a only with xnack
# set, and a device that leaves xnack unspecified does not match those entries under the
# bundler's target-ID rule).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROOT=$PWD
CORPUS=${1:-/work/corpus}
LIB=${LIB:-$CORPUS/debian/librocsparse.so}
RUNS=${RUNS:-3}
TARGET=${TARGET:-gfx90a:xnack-}
L19=/usr/lib/llvm-19/bin
OBJCOPY=$L19/llvm-objcopy
CLANG_BUNDLER=$L19/clang-offload-bundler

[ -s "$LIB" ] || { echo "bench/host.sh: $LIB not found (corpus path as the first argument)" >&2; exit 2; }
for t in "$OBJCOPY" "$CLANG_BUNDLER"; do
  [ -x "$t" ] || { echo "bench/host.sh: $t missing: run bash scripts/ensure-llvm19" >&2; exit 2; }
done

echo "== building gfxkit (release)"
cargo build --release -q -p gfxkit
G=$ROOT/target/release/gfxkit

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"

SIZE=$(stat -c %s "$LIB")
ID=hipv4-amdgcn-amd-amdhsa--$TARGET
echo "== input: $LIB ($((SIZE / 1048576)) MiB)"

# What each route sees.
"$OBJCOPY" --dump-section=.hip_fatbin=fatbin.bin "$LIB" /dev/null 2>/dev/null ||
  "$OBJCOPY" --dump-section=.hip_fatbin=fatbin.bin "$LIB" scratch.so
FB=$(stat -c %s fatbin.bin)
rm -f scratch.so
CLANG_IDS=$("$CLANG_BUNDLER" -list -type=o -input=fatbin.bin | wc -l)
read -r G_BUNDLES G_ENTRIES < <("$G" list --json "$LIB" | python3 -c '
import json, sys
f = json.load(sys.stdin)["files"][0]["bundles"]
print(len(f), sum(len(b["entries"]) for b in f))')
echo "   .hip_fatbin: $((FB / 1048576)) MiB"
echo "   clang-offload-bundler -list on the dump: 1 bundle, $CLANG_IDS entries (the first bundle only)"
echo "   gfxkit list: $G_BUNDLES bundles, $G_ENTRIES entries"
"$CLANG_BUNDLER" -unbundle -type=o -targets="$ID" -input=fatbin.bin -output=clang.co
"$G" extract "$LIB" --target "$TARGET" -o x >/dev/null
echo "   extract $TARGET: clang 1 code object ($(stat -c %s clang.co) bytes), gfxkit $(ls x | wc -l) code objects ($(du -cb x/* | tail -1 | cut -f1) bytes)"
FIRST=$(ls x | grep "\.0\.hipv4" | head -1)
if cmp -s clang.co "x/$FIRST"; then
  echo "   bundle 0's $TARGET entry: byte-identical to clang's"
else
  echo "   bundle 0's $TARGET entry: DIFFERS from clang's" >&2
  exit 1
fi
rm -rf x clang.co

measure() { # best wall time of RUNS runs of a shell command, in seconds (fresh outputs each run)
  best_of "$1" "rm -rf x out.co fatbin.bin"
}
row() { # name, clang command, gfxkit command
  local c g
  c=$(measure "$2")
  g=$(measure "$3")
  ratio_line "$1" 34 "clang route" "$c" "$g"
}

DUMP="$OBJCOPY --dump-section=.hip_fatbin=fatbin.bin $LIB /dev/null"
echo "== timings (best of $RUNS; ratio = clang route / gfxkit, above 1 = gfxkit faster)"
row "list" \
  "$DUMP && $CLANG_BUNDLER -list -type=o -input=fatbin.bin" \
  "$G list $LIB"
row "list --json" \
  "$DUMP && $CLANG_BUNDLER -list -type=o -input=fatbin.bin" \
  "$G list --json $LIB"
row "extract --target $TARGET" \
  "$DUMP && $CLANG_BUNDLER -unbundle -type=o -targets=$ID -input=fatbin.bin -output=out.co" \
  "$G extract $LIB --target $TARGET -o x"
row "verify (gfxkit only; clang: list)" \
  "$DUMP && $CLANG_BUNDLER -list -type=o -input=fatbin.bin" \
  "$G verify $LIB"
