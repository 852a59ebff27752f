# Shared by the bench scripts (sourced, not run): timing a shell command and printing a
# clang/gfxkit row.

# best_of CMD [PREP]: the best wall time of $RUNS runs of CMD, in seconds. PREP, when given, runs
# (untimed) before each run.
best_of() {
  local cmd=$1 prep=${2:-} best=""
  for ((r = 0; r < RUNS; r++)); do
    local s e d
    if [ -n "$prep" ]; then bash -c "$prep"; fi
    s=$(date +%s%N)
    bash -c "$cmd" >/dev/null 2>&1
    e=$(date +%s%N)
    d=$(((e - s) / 1000))
    if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; fi
  done
  python3 -c "print($best/1e6)"
}

# ratio_line NAME WIDTH CLANG_LABEL CLANG_SECONDS GFXKIT_SECONDS: one aligned row with both
# times in ms and their ratio (above 1 = gfxkit faster).
ratio_line() {
  python3 -c "import sys; n,w,l=sys.argv[1],int(sys.argv[2]),sys.argv[3]; c,g=float(sys.argv[4]),float(sys.argv[5]); print(f'{n:<{w}} {l} {c*1000:9.1f} ms   gfxkit {g*1000:9.1f} ms   ratio {c/g:7.2f}x')" "$@"
}
