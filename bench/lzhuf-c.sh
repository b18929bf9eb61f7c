#!/usr/bin/env bash
# Builds the C LZHUF core that bench/run.sh's LZHUF row compares qtc with (bench/c/lzhuf.c, a
# clean-room C version of the 1989 Yoshizaki/Okumura algorithm with FBB's parameters) into
# target/bench-c/lzhuf-c, optimised as a distribution would build it (-O2). Prints the binary's path.
#
# usage: bench/lzhuf-c.sh            then: target/bench-c/lzhuf-c INPUT REPS OUTPUT [PIECE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "a C compiler is needed: apt-get install gcc" >&2; exit 2; }
out="$root/target/bench-c/lzhuf-c"
mkdir -p "$(dirname "$out")"
if [ ! -x "$out" ] || [ "$root/bench/c/lzhuf.c" -nt "$out" ]; then
  "$cc" -O2 -std=c99 -D_POSIX_C_SOURCE=199309L -Wall -Wextra -o "$out" "$root/bench/c/lzhuf.c"
fi
echo "$out"
