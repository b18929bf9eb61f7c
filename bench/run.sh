#!/usr/bin/env bash
# qtc's benchmark suite: builds the release qtc binary and the qtc-bench driver, runs every row
# (or those given with --only), prints a Markdown table and writes it to bench/results/latest.md
# (bench/results/partial.md with --only; or --out FILE). Exits non-zero only when a measurement broke, never because a figure is slow.
#
# usage: bench/run.sh [--quick] [--only idle,forward,telnet,faults,scale,lzhuf,radio,bigstore,news,stalled,netrom,air,disk]
#                     [--modes fbb,b1,b2] [--durability full|normal] [--log-level LEVEL] [--out FILE] ...
# Full run: about 30 minutes on 2 cores, 20 of them row 11 (air: real time, needs direwolf and
# python3); --quick: under 2 minutes, without row 11. Needs strace.
# BENCH_PROFILE=profiling bench/run.sh ...: measure target/profiling/qtc (symbols for perf).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v strace >/dev/null || { echo "strace is needed: apt-get install strace" >&2; exit 2; }

# A run of every row replaces latest.md; a run of some rows (--only) writes partial.md.
out="$root/bench/results/latest.md"
for a in "$@"; do
  [ "$a" = "--only" ] && out="$root/bench/results/partial.md"
done
for a in "$@"; do
  [ "$a" = "--out" ] && out=""
done

# The measured daemon: the shipped release build, or with BENCH_PROFILE=profiling the same code
# with line tables, for `perf record -p` on the daemons a row starts (docs/performance.md).
profile=${BENCH_PROFILE:-release}
cargo build --profile "$profile" --quiet --manifest-path "$root/Cargo.toml" -p qtc
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc-bench
driver="$root/target/release/qtc-bench"
# Row 6 times qtc's LZHUF (the qtc-lzhuf `timing` example) against the C LZHUF core
# (bench/c/lzhuf.c), and row 2f the B1 receiver against a C floor built on that core
# (bench/c/floor.c); bench/lzhuf-c.sh builds both C programs. Build what the rows need now so
# the measurement does not include compiling. Only this build decision reads the arguments; the
# driver parses them. (Plain string tests: `printf | grep -q` under pipefail fails at random
# when grep exits first.)
want_lzhuf=1 want_c=1
case " $* " in
  *" --only "*)
    case " $* " in *lzhuf*) ;; *) want_lzhuf=0 ;; esac
    case " $* " in *lzhuf* | *forward*) ;; *) want_c=0 ;; esac ;;
esac
if [ "$want_lzhuf" = 1 ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc-lzhuf --example timing
fi
if [ "$want_c" = 1 ]; then
  "$root/bench/lzhuf-c.sh" >/dev/null || echo "no C LZHUF core: rows 6 and 2f will say so" >&2
fi

args=(--qtc "$root/target/$profile/qtc")
[ -n "$out" ] && args+=(--out "$out")
exec "$driver" "${args[@]}" "$@"
