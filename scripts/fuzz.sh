#!/usr/bin/env bash
# Builds qtc's libFuzzer targets (fuzz/) on the stable toolchain and runs them.
#
#   scripts/fuzz.sh --smoke                 build all, run each target SMOKE_SECONDS (default 8) s
#   scripts/fuzz.sh TARGET [SECONDS]        one target, default 60 s
#   scripts/fuzz.sh --all SECONDS           every target, SECONDS each
#   scripts/fuzz.sh --runs N TARGET|--all   a fixed number of executions (e.g. 10000000)
#   scripts/fuzz.sh --repro TARGET FILE...  run a target on saved inputs (a crash artifact)
#   scripts/fuzz.sh --build | --list
# Options: --asan (AddressSanitizer; needs RUSTC_BOOTSTRAP, set here), --jobs N (targets run at
# once; default: the number of cores), and after `--`, extra libFuzzer flags.
#
# Prints per target: executions, seconds, result; exits 1 if any target crashed, timed out or ran
# out of memory. Corpora grow in fuzz/corpus/TARGET (git-ignored), seeded read-only from
# fuzz/seeds/TARGET; crash inputs go to fuzz/artifacts/TARGET/. No cargo-fuzz needed: the build
# passes the same compiler flags as `cargo fuzz build -s none --codegen-units 16` (docs/fuzzing.md).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$root/fuzz"
smoke_seconds=${SMOKE_SECONDS:-8}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
timeout=${FUZZ_TIMEOUT:-10}

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

mode="" seconds="" runs="" asan=0 targets=() files=() extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) mode=smoke ;;
    --all) mode=all; if [[ "${2:-}" =~ ^[0-9]+$ ]]; then seconds=$2; shift; fi ;;
    --runs) runs=${2:?--runs needs a count}; shift ;;
    --repro) mode=repro ;;
    --build) mode=build ;;
    --list) mode=list ;;
    --asan) asan=1 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    -h|--help) usage ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; usage ;;
    *)
      if [ "$mode" = repro ] && [ ${#targets[@]} -eq 1 ]; then files+=("$1")
      elif [ ${#targets[@]} -eq 1 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seconds=$1
      else targets+=("$1"); fi ;;
  esac
  shift
done

mapfile -t all_targets < <(sed -n '/^\[\[bin\]\]/{n;s/^name = "\(.*\)"/\1/p}' "$fuzz/Cargo.toml")
if [ "$mode" = list ]; then printf '%s\n' "${all_targets[@]}"; exit 0; fi
case "$mode" in
  smoke) targets=("${all_targets[@]}"); seconds=$smoke_seconds ;;
  all) targets=("${all_targets[@]}"); seconds=${seconds:-60} ;;
  build) [ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}") ;;
  repro) [ ${#targets[@]} -eq 1 ] && [ ${#files[@]} -gt 0 ] || usage ;;
  "") [ ${#targets[@]} -gt 0 ] || usage; seconds=${seconds:-60} ;;
esac
# A plain loop: `printf | grep -q` under pipefail fails at random when grep exits first (SIGPIPE).
for t in "${targets[@]}"; do
  known=0
  for a in "${all_targets[@]}"; do [ "$a" = "$t" ] && known=1; done
  [ $known = 1 ] || { echo "fuzz.sh: no target $t (have: ${all_targets[*]})" >&2; exit 2; }
done

command -v cargo >/dev/null || { echo "fuzz.sh: cargo is needed" >&2; exit 2; }
# libfuzzer-sys compiles libFuzzer (C++) with the system compiler.
command -v c++ >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null || {
  echo "fuzz.sh: a C++ compiler is needed for libFuzzer: apt-get install g++" >&2; exit 2; }

host=$(rustc -vV | sed -n 's/^host: //p')
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0"
target_dir="$fuzz/target"
if [ $asan = 1 ]; then
  # Stable rustc accepts -Z flags only with RUSTC_BOOTSTRAP; its rust-std ships the ASan runtime.
  export RUSTC_BOOTSTRAP=1
  flags+=" -Zsanitizer=address"
  target_dir="$fuzz/target/asan"
fi
flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth -Cdebug-assertions -Ccodegen-units=16"
bindir="$target_dir/$host/release"
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

t0=$EPOCHREALTIME
bins=()
for t in "${targets[@]}"; do bins+=(--bin "$t"); done
echo "fuzz: building ${#targets[@]} target(s)$([ $asan = 1 ] && echo ' with ASan')..." >&2
RUSTFLAGS="$flags" cargo build --release --quiet --manifest-path "$fuzz/Cargo.toml" \
  --target "$host" --target-dir "$target_dir" "${bins[@]}"
build_s=$(since "$t0")
printf 'fuzz: built in %.0f s\n' "$build_s"
[ "$mode" = build ] && exit 0

if [ "$mode" = repro ]; then
  t=${targets[0]} tmp=$(mktemp -d) rc=0
  TMPDIR="$tmp" RUST_BACKTRACE=1 "$bindir/$t" -runs=1 "${extra[@]}" "${files[@]}" || rc=$?
  rm -rf "$tmp"
  exit $rc
fi

logs="$fuzz/target/logs"
mkdir -p "$logs"
# Scratch space for targets that write files (bbs_session's SQLite store): tmpfs when there is
# one, since SQLite syncs on every close and that is most of such a target's time on a disk.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; else scratch="$fuzz/target/tmp"; fi
if [ -n "$runs" ]; then limit=(-runs="$runs"); else limit=(-max_total_time="$seconds"); fi

# Runs one target; prints its line and leaves "TARGET EXECS SECONDS RESULT" in $logs/TARGET.result.
run_one() {
  local t=$1 corpus="$fuzz/corpus/$1" art="$fuzz/artifacts/$1" tmp="$scratch/qtc-fuzz-$1.$$"
  local seeds=() log="$logs/$1.log" start rc=0 secs execs result
  mkdir -p "$corpus" "$art" "$tmp"
  [ -d "$fuzz/seeds/$t" ] && seeds=("$fuzz/seeds/$t")
  local before; before=$(ls "$art" | grep -v '^slow-unit-' | sort || true)
  start=$EPOCHREALTIME
  TMPDIR="$tmp" RUST_BACKTRACE=1 "$bindir/$t" -print_final_stats=1 -artifact_prefix="$art/" \
    -timeout="$timeout" -rss_limit_mb=2048 "${limit[@]}" "${extra[@]}" \
    "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  secs=$(since "$start")
  rm -rf "$tmp"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
  [ -n "$execs" ] || execs=0
  local new; new=$(comm -13 <(echo "$before") <(ls "$art" | grep -v '^slow-unit-' | sort || true) | sed -n 1p)
  if [ $rc = 0 ] && [ -z "$new" ]; then result=ok
  else result="CRASH(${new%%-*}) exit $rc: fuzz/artifacts/$t/$new, log fuzz/target/logs/$t.log"; fi
  printf '%-14s %12s execs %6.1f s  %s\n' "$t" "$execs" "$secs" "$result"
  if [ "$result" != ok ]; then
    grep -a -m1 -A3 -E "panicked at|ERROR: libFuzzer|SUMMARY:" "$log" | sed 's/^/    /' || true
  fi
  echo "$t $execs $secs ${result%% *}" >"$logs/$t.result"
}

printf '%-14s %12s %13s  %s\n' target executions seconds result
rm -f "$logs"/*.result
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$t" &
done
wait

crashed=0 total=0
for t in "${targets[@]}"; do
  read -r _ e _ r <"$logs/$t.result" || r=missing
  total=$((total + e))
  [ "$r" = ok ] || crashed=$((crashed + 1))
done
printf 'fuzz: %d target(s), %d executions, %d crashed; %.0f s in all (build %.0f s)\n' \
  "${#targets[@]}" "$total" "$crashed" "$(since "$t0")" "$build_s"
[ $crashed = 0 ]
