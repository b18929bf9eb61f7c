#!/usr/bin/env bash
# Compares builds of qtc-lzhuf's `timing` example side by side: runs each on the 3.1 MB text of
# row 6, in turn, ROUNDS times (so load and cache sharing hit all alike), and prints per build
# the median and fastest compress and decompress time (thread CPU time, fastest of 2 runs per
# process). Build each version with `cargo build --release -p qtc-lzhuf --example timing` and
# copy target/release/examples/timing aside first.
#
# usage: bench/lzhuf-ab.sh ROUNDS TIMING_BINARY...
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
rounds=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$1" --corpus english 3100000 11 "$dir/text"
for _ in $(seq 1 "$rounds"); do
  for b in "$@"; do
    echo "$b $("$b" "$dir/text" 2 "$dir/out")" >>"$dir/times"
  done
done
python3 - "$dir/times" "$@" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for b in sys.argv[2:]:
    enc = [int(r[1]) / 1e6 for r in rows if r[0] == b]
    dec = [int(r[2]) / 1e6 for r in rows if r[0] == b]
    print(f"{b}: compress median {statistics.median(enc):.1f} ms, fastest {min(enc):.1f}; "
          f"decompress median {statistics.median(dec):.1f} ms, fastest {min(dec):.1f}")
PY
