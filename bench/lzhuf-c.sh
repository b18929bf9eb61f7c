#!/usr/bin/env bash
# Builds the C LZHUF core that bench/run.sh's LZHUF row compares qtc with (bench/c/lzhuf.c, a
# clean-room C version of the 1989 Yoshizaki/Okumura algorithm with FBB's parameters) into
# target/bench-c/lzhuf-c, and the C floor of a B1 receiver built on it (bench/c/floor.c, row 2f)
# into target/bench-c/floor-c, optimised as a distribution would build them (-O2). Prints the
# LZHUF binary's path.
#
# usage: bench/lzhuf-c.sh            then: target/bench-c/lzhuf-c INPUT REPS OUTPUT [PIECE]
#                                          target/bench-c/floor-c OUTPUT < capture
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "a C compiler is needed: apt-get install gcc" >&2; exit 2; }
out="$root/target/bench-c/lzhuf-c"
mkdir -p "$(dirname "$out")"
if [ ! -x "$out" ] || [ "$root/bench/c/lzhuf.c" -nt "$out" ]; then
  "$cc" -O2 -std=c99 -D_POSIX_C_SOURCE=199309L -Wall -Wextra -o "$out" "$root/bench/c/lzhuf.c"
fi
floor="$root/target/bench-c/floor-c"
if [ ! -x "$floor" ] || [ "$root/bench/c/floor.c" -nt "$floor" ] || [ "$root/bench/c/lzhuf.c" -nt "$floor" ]; then
  # The floor includes the LZHUF core without its timing driver; the core's encoder goes unused.
  "$cc" -O2 -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wno-unused-function -o "$floor" \
    "$root/bench/c/floor.c"
fi
echo "$out"
