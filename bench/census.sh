#!/usr/bin/env bash
# Census throughput (gfxkit census) against the floor of reading its inputs and against a shell
# loop of `gfxkit list --json`, with one and two local workers. Not a test: the numbers depend
# on the machine and its load (the load average is printed at the start and the end).
#
#   bash bench/census.sh [INPUT...]
#
# Three sets of inputs (the third when its directory is at hand):
#   small  $SMALL (default 3000) small bundle files made here (2-3 code objects of 4 KiB each):
#          the per-file overhead (the scheduler, Parquet, Python), where the shell loop pays
#          one process per file;
#   real   the inputs given, or scripts/ensure-real-inputs' packages and libraries in
#          target/real (wheels, .debs: decompressed to be read);
#   tree   every file of a library's kernel-database directory, $CENSUS_TREE (default the part of
#          Debian sid's hipblaslt/library that scripts/ensure-real-inputs unpacks in
#          target/real/sid; the whole directory is 1,467 files, 661 MB): many inputs of every
#          size, none of them dominant.
# SETS (default "small real tree") picks the sets.
# Rows per set: the floor (bench/census-floor.py on $W processes: every file read, packages
# decompressed with unzip -p / dpkg-deb --fsys-tarfile, compressed offload bundles decoded with
# libzstd), the floor with the SHA-256 the dataset records (of every input and every decoded
# bundle: the census hashes each code object in it), the census with 1 and with 2
# local threads (--workers N, a new dataset each time), with a LocalCluster of 2 processes
# (--processes --workers 2), with 2 threads checking every compressed bundle's MD5 (--check),
# and the serial loop (one
# `gfxkit list --check --json` per input, run once). The sides run in turn, $RUNS rounds
# (default 3); each figure is the median with its range, each ratio the median of the
# rounds' ratios with their range.
# Figures: files/s, device GB/s (device bytes the census found / seconds), and the ratios
# the issue asks for (census/floor >= 0.8, two workers/one >= 1.7, census/loop >= 5 on small),
# and the census against the floor with hashing.
#
# Needs target/release/gfxkit (cargo build --release -p gfxkit) and a Python with the gfxkit
# wheel built in release and its census extra: $PY (default target/bench-venv/bin/python, made
# here from target/wheels-release/*.whl: maturin build --release -o target/wheels-release).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SMALL=${SMALL:-3000}
W=${W:-2}
G=$(realpath "${GFXKIT:-target/release/gfxkit}")
PY=${PY:-target/bench-venv/bin/python}
if [ ! -x "$PY" ]; then
  python3 -m venv target/bench-venv
  target/bench-venv/bin/pip install -q --disable-pip-version-check \
    "$(ls -t target/wheels-release/gfxkit-*.whl | head -1)[census]"
fi
WORK=$(mktemp -d /tmp/gfxkit-census-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"

# The small set.
"$PY" - "$WORK/small" "$SMALL" <<'PY'
import os, random, struct, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
targets = ["gfx90a:xnack-", "gfx942", "gfx1100", "gfx1030", "gfx9-generic"]
def bundle(entries):
    head = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries))
    size = len(head) + sum(24 + len(i) for i, _ in entries)
    off = (size + 4095) // 4096 * 4096
    table, body, at = b"", b"", off
    for i, p in entries:
        table += struct.pack("<QQQ", at, len(p), len(i)) + i.encode()
        body += p
        at += len(p)
    out = head + table
    return out + b"\0" * (off - len(out)) + body
for k in range(n):
    d = os.path.join(root, f"d{k % 50:02d}")
    os.makedirs(d, exist_ok=True)
    ents = [("host-x86_64-unknown-linux--", b"")] + [
        (f"hipv4-amdgcn-amd-amdhsa--{t}", rng.randbytes(4096)) for t in rng.sample(targets, rng.choice([2, 3]))]
    with open(os.path.join(d, f"k{k:05d}.hipfb"), "wb") as f:
        f.write(bundle(ents))
PY
find "$WORK/small" -type f | sort > "$WORK/small.list"

if [ $# -gt 0 ]; then
  printf '%s\n' "$@" > "$WORK/real.list"
else
  ls -1 "$PWD"/target/real/*.whl "$PWD"/target/real/*.deb "$PWD"/target/real/*.so* > "$WORK/real.list"
fi

TREE=${CENSUS_TREE:-$PWD/target/real/sid/usr/lib/x86_64-linux-gnu/hipblaslt/library}
sets=${SETS:-small real tree}
if [ -d "$TREE" ]; then
  find "$TREE" -type f | sort > "$WORK/tree.list"
else
  sets=${sets/tree/}
fi

"$PY" -c 'import zstandard' 2>/dev/null || "$PY" -m pip install -q --disable-pip-version-check zstandard

# seconds CMD: the wall time of one run of CMD.
seconds() {
  local s e
  s=$(date +%s%N)
  bash -c "$1" >/dev/null 2>&1
  e=$(date +%s%N)
  python3 -c "print(($e - $s) / 1e9)"
}

for set in $sets; do
  list="$WORK/$set.list"
  n=$(wc -l < "$list")
  # Warm the page cache: every side reads from memory.
  xargs -a "$list" cat > /dev/null
  times="$WORK/$set.times"
  : > "$times"
  # Rounds of every side in turn, so that load from elsewhere hits each alike.
  for ((r = 0; r < RUNS; r++)); do
    echo "floor $(seconds "$PY bench/census-floor.py $list $W")" >> "$times"
    echo "floorsha $(seconds "$PY bench/census-floor.py $list $W --sha256")" >> "$times"
    # Each census starts from nothing; the last round's dataset is removed before the clock
    # starts (--fresh would time its removal too).
    rm -rf "$WORK"/out[1-4]
    echo "one $(seconds "$PY -m gfxkit census --no-progress --workers 1 --from $list -o $WORK/out1")" >> "$times"
    echo "two $(seconds "$PY -m gfxkit census --no-progress --workers 2 --from $list -o $WORK/out2")" >> "$times"
    echo "procs $(seconds "$PY -m gfxkit census --no-progress --processes --workers 2 --from $list -o $WORK/out3")" >> "$times"
    echo "check $(seconds "$PY -m gfxkit census --no-progress --check --workers 2 --from $list -o $WORK/out4")" >> "$times"
  done
  # The loop is slow: once.
  echo "loop $(seconds "while read -r f; do $G list --check --json \"\$f\"; done < $list")" >> "$times"
  dev=$("$PY" -c "import glob, sys, pyarrow.parquet as pq
print(sum(sum(pq.read_table(f, columns=['device_bytes'])['device_bytes'].to_pylist())
          for f in glob.glob(sys.argv[1] + '/inputs/*.parquet')))" "$WORK/out2")
  echo "== $set: $n inputs, $(du -shL --files0-from=<(tr '\n' '\0' < "$list") -c | tail -1 | cut -f1), device bytes $dev; $RUNS rounds"
  python3 - "$times" "$set" "$n" "$dev" "$W" <<'PY'
import statistics, sys
path, name, n, dev, w = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
t = {}
for line in open(path):
    k, v = line.split()
    t.setdefault(k, []).append(float(v))
labels = {"floor": f"floor (read/decompress, {w} procs)",
          "floorsha": f"floor + SHA-256 ({w} procs)", "one": "census --workers 1",
          "two": "census --workers 2", "procs": "census --processes --workers 2",
          "check": "census --check --workers 2",
          "loop": "loop of gfxkit list --json"}
for k, label in labels.items():
    v = t[k]
    m = statistics.median(v)
    print(f"{name:<6} {label:<32} {m:8.2f} s ({min(v):.2f}-{max(v):.2f}) {n / m:9.1f} files/s {dev / m / 1e9:7.3f} device GB/s")
def ratio(a, b):
    # Per round (the sides of one round ran back to back): median and range.
    r = [x / y for x, y in zip(t[a], t[b])]
    return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"
loop = t["loop"][0] / statistics.median(t["two"])
print(f"   census(2)/floor {ratio('floor', 'two')}   census(2)/(floor + SHA-256) {ratio('floorsha', 'two')}"
      f"   2 workers/1 {ratio('one', 'two')}   census(2)/loop {loop:.2f}x")
PY
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
