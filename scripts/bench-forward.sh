#!/usr/bin/env bash
# Forwarding only (row 2 of bench/run.sh): N bulletins of 2 KB from one qtc to another over
# loopback TCP, the receiver having a second partner to queue every bulletin for. Per mode:
# msg/s, receiver and sender CPU-ms per message (helper processes included), syscalls per
# message, peak RSS, each the median (min, max) of 3 passes; the machine's load at start and
# end. B1 and B2 unless --modes says otherwise; writes bench/results/forward.md.
#
# usage: scripts/bench-forward.sh [--quick] [--modes fbb,b1,b2] [--fwd N] [--fwd-runs N]
#                                 [--durability normal] [--baseline OTHER_QTC_BINARY]
# --baseline measures another qtc build too, its passes interleaved with this one's, so a
# before/after comparison sees the same machine load, e.g.:
#   git worktree add /tmp/qtc-old main && cargo build --release --manifest-path /tmp/qtc-old/Cargo.toml -p qtc
#   scripts/bench-forward.sh --modes b1 --baseline /tmp/qtc-old/target/release/qtc
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
modes=(--modes b1,b2)
for a in "$@"; do
  [ "$a" = "--modes" ] && modes=()
done
exec "$root/bench/run.sh" --only forward "${modes[@]}" --out "$root/bench/results/forward.md" "$@"
