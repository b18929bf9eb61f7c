#!/usr/bin/env bash
# Compares builds of qtc-lzhuf's `timing` example side by side: runs each on the 3.1 MB text of
# row 6 (or, with --short, on row 6's 1,000 different 2 KB bulletins, each coded on its own), in
# turn, ROUNDS times (so load and cache sharing hit all alike), and prints per build the median
# and fastest compress and decompress time (thread CPU time, fastest of 2 runs per process, in
# ms; with --short of 3 runs, in µs per bulletin). Build each version with
# `cargo build --release -p qtc-lzhuf --example timing` and copy
# target/release/examples/timing aside first.
#
# usage: bench/lzhuf-ab.sh [--short] ROUNDS TIMING_BINARY...
set -euo pipefail
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
len=3100000 seed=11 reps=2 unit=ms scale=1e6 piece=()
if [ "${1:-}" = --short ]; then
  # A run codes all 1,000: its time in ms is the time per bulletin in µs.
  len=2000000 seed=3 reps=3 unit="µs per bulletin" scale=1e6 piece=(2000)
  shift
fi
[ $# -ge 2 ] || usage
rounds=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$1" --corpus english "$len" "$seed" "$dir/text"
for _ in $(seq 1 "$rounds"); do
  for b in "$@"; do
    echo "$b $("$b" "$dir/text" "$reps" "$dir/out" "${piece[@]}")" >>"$dir/times"
  done
done
python3 - "$dir/times" "$unit" "$scale" "$@" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
unit, scale = sys.argv[2], float(sys.argv[3])
for b in sys.argv[4:]:
    enc = [int(r[1]) / scale for r in rows if r[0] == b]
    dec = [int(r[2]) / scale for r in rows if r[0] == b]
    print(f"{b}: compress median {statistics.median(enc):.1f} {unit}, fastest {min(enc):.1f}; "
          f"decompress median {statistics.median(dec):.1f} {unit}, fastest {min(dec):.1f}")
PY
