#!/usr/bin/env bash
# Census throughput (gfxkit census) against the floor of reading its inputs and against a shell
# loop of `gfxkit list --json`, with one and two local workers. Not a test: the numbers depend
# on the machine and its load (the load average is printed at the start and the end).
#
#   bash bench/census.sh [INPUT...]
#
# Two sets of inputs:
#   small  $SMALL (default 3000) small bundle files made here (2-3 code objects of 4 KiB each):
#          the per-file overhead (the scheduler, Parquet, Python), where the shell loop pays
#          one process per file;
#   real   the inputs given, or scripts/ensure-real-inputs' packages and libraries in
#          target/real (wheels, .debs: decompressed to be read).
# Rows per set: the floor (every file read with cat, packages decompressed with unzip -p /
# dpkg-deb --fsys-tarfile, 64 files a process, $W processes through xargs -P), the census with 1 and with 2
# local threads (--workers N, fresh dataset each time), with a LocalCluster of 2 processes
# (--processes --workers 2), and the serial loop (one
# `gfxkit list --check --json` per input). Each is the best of $RUNS (default 3).
# Figures: files/s, device GB/s (device bytes the census found / seconds), and the ratios
# the issue asks for (census/floor >= 0.8, two workers/one >= 1.7, census/loop >= 5 on small).
#
# Needs target/release/gfxkit (cargo build --release -p gfxkit) and a Python with the gfxkit
# wheel built in release and its census extra: $PY (default target/bench-venv/bin/python, made
# here from target/wheels-release/*.whl: maturin build --release -o target/wheels-release).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
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

# floor_cmd LIST: reads every input of LIST on $W processes, packages decompressed.
cat > "$WORK/read-one" <<'SH'
#!/usr/bin/env bash
for f in "$@"; do
  case "$f" in
    *.whl|*.zip) unzip -p "$f" > /dev/null ;;
    *.deb) dpkg-deb --fsys-tarfile "$f" > /dev/null ;;
    *) cat "$f" > /dev/null ;;
  esac
done
SH
chmod +x "$WORK/read-one"

row() { printf '%-6s %-28s %9.2f s %10.1f files/s %9.3f device GB/s\n' "$@"; }

for set in small real; do
  list="$WORK/$set.list"
  n=$(wc -l < "$list")
  # Warm the page cache: every side reads from memory.
  xargs -a "$list" cat > /dev/null
  floor=$(best_of "xargs -a $list -P $W -n 64 $WORK/read-one")
  one=$(best_of "$PY -m gfxkit census --fresh --no-progress --workers 1 --from $list -o $WORK/out1")
  two=$(best_of "$PY -m gfxkit census --fresh --no-progress --workers 2 --from $list -o $WORK/out2")
  procs=$(best_of "$PY -m gfxkit census --fresh --no-progress --processes --workers 2 --from $list -o $WORK/out3")
  dev=$("$PY" -c "import glob, sys, pyarrow.parquet as pq
print(sum(sum(pq.read_table(f, columns=['device_bytes'])['device_bytes'].to_pylist())
          for f in glob.glob(sys.argv[1] + '/inputs/*.parquet')))" "$WORK/out2")
  loop=$(RUNS=1 best_of "while read -r f; do $G list --check --json \"\$f\"; done < $list")
  echo "== $set: $n inputs, $(du -shL --files0-from=<(tr '\n' '\0' < "$list") -c | tail -1 | cut -f1) , device bytes $dev"
  row "$set" "floor (read/decompress, -P $W)" "$floor" "$(python3 -c "print($n/$floor)")" "$(python3 -c "print($dev/$floor/1e9)")"
  row "$set" "census --workers 1" "$one" "$(python3 -c "print($n/$one)")" "$(python3 -c "print($dev/$one/1e9)")"
  row "$set" "census --workers 2" "$two" "$(python3 -c "print($n/$two)")" "$(python3 -c "print($dev/$two/1e9)")"
  row "$set" "census --processes --workers 2" "$procs" "$(python3 -c "print($n/$procs)")" "$(python3 -c "print($dev/$procs/1e9)")"
  row "$set" "loop of gfxkit list --json" "$loop" "$(python3 -c "print($n/$loop)")" "$(python3 -c "print($dev/$loop/1e9)")"
  python3 -c "print(f'   census(2)/floor {$floor/$two:.2f}x   2 workers/1 {$one/$two:.2f}x   census(2)/loop {$loop/$two:.2f}x')"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
