#!/usr/bin/env bash
# Forwarding throughput only (row 2 of bench/run.sh): N bulletins of 2 KB from one qtc to another
# over loopback TCP; wall time, msg/s, CPU per message of sender and receiver, receiver syscalls
# per message, peak RSS. B1 and B2 unless --modes says otherwise; writes
# bench/results/forward.md.
#
# usage: scripts/bench-forward.sh [--quick] [--modes fbb,b1,b2] [--fwd N] [--durability normal]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
modes=(--modes b1,b2)
for a in "$@"; do
  [ "$a" = "--modes" ] && modes=()
done
exec "$root/bench/run.sh" --only forward "${modes[@]}" --out "$root/bench/results/forward.md" "$@"
