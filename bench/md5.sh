#!/usr/bin/env bash
# Benchmark: which MD5 gfxkit should hash CCOB bundles with. Not a test.
#
#   bash bench/md5.sh [BYTES] [ROUNDS]    # defaults: 93000000 bytes (rocSPARSE's largest
#                                         # decompressed bundle), 7 rounds
#
# Builds bench/md5 (outside the workspace, so that its candidates stay out of gfxkit's build)
# and times one MD5 stream over one buffer with each well-kept Rust implementation: md-5
# (RustCrypto, Rust), md5-asm (the assembly behind md-5's `asm` feature), md5, and OpenSSL 3
# through the openssl crate, beside gfxkit's own `gfxkit_bundle::hash::Md5`. The candidates run
# alternately, round after round, and each prints its median with the min-max spread; every
# digest is compared with md-5's. Run it on an otherwise idle machine: the load average is
# printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/md5-bench}
cargo build --release --quiet --manifest-path bench/md5/Cargo.toml
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
"$CARGO_TARGET_DIR/release/md5-candidates" "${1:-93000000}" "${2:-7}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
