# Shared by the scripts that produce the README's "Measured" figures (sourced, not run): each
# writes its figures, and only its figures, to docs/measured/<script name>.txt, which is
# committed; crates/gfxkit/tests/readme_measured.rs checks every number of the README's
# Measured table against those files.
#
#   . scripts/record.sh; record_start kd-sweep; record "3038 kernels ..."
#
# The first lines say when, on which commit and under what load the figures were made (the
# machine is shared: time figures are noisy). GFXKIT_RECORD=0 prints the figures without
# writing the file.

# record_start NAME: starts docs/measured/NAME.txt (relative to the repository root).
record_start() {
  local root
  root=$(git -C "$(dirname "${BASH_SOURCE[0]}")/.." rev-parse --show-toplevel)
  RECORD_FILE=$root/docs/measured/$1.txt
  [ "${GFXKIT_RECORD:-1}" = 0 ] && RECORD_FILE=/dev/null
  mkdir -p "$(dirname "$RECORD_FILE")"
  {
    echo "# written by $2 on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- crates || echo ' (crates/ modified)')"
    echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
  } >"$RECORD_FILE"
}

# record LINE...: prints LINE and appends it to the record.
record() {
  echo "$*"
  echo "$*" >>"$RECORD_FILE"
}

# record_end: notes the load average at the end.
record_end() {
  echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RECORD_FILE"
}
