#!/usr/bin/env bash
# Writes crates/qtc/link-order.txt: the functions of the qtc binary that a daemon runs when it
# starts, forwards (bench row 2, FBB, B1 and B2, both daemons) and stops, found by running
# every daemon of the row under valgrind's callgrind. crates/qtc/build.rs hands the list to
# the linker, which lays those functions side by side: the kernel maps a binary's code in
# 64 KB windows around each page a process touches, so scattered functions keep most of the
# binary resident (docs/performance.md, "The receiver's peak memory").
#
# Run it after a compiler or dependency update or a large change (the bench row's peak RSS
# rising says when): names the list has and a build lacks are skipped, never an error. It
# relinks target/release/qtc with the new list at the end.
#
#   scripts/link-order.sh [--fwd N] [--binary QTC]   # N messages per pass (default 1,000);
#                                                    # QTC: profile that build instead
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fwd=1000
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fwd) fwd=$2; shift 2;;
    --binary) bin=$2; shift 2;;
    *) echo "usage: $0 [--fwd N] [--binary QTC]" >&2; exit 2;;
  esac
done
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install valgrind" >&2; exit 2; }

cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc-bench
# Row 2 runs its C floor (2f) beside qtc: the driver needs it built.
"$root/bench/lzhuf-c.sh" >/dev/null
if [ -z "$bin" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc
  bin="$root/target/release/qtc"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$bin" "$work/qtc"
# Every `qtc run` of the row under callgrind, as a child of the wrapper: the driver stops its
# daemons with SIGKILL, which would lose the profile, so the daemon outlives the wrapper and
# is stopped below with SIGTERM (the profile is written as it exits, shutdown included). The
# other commands (user add, import, ctl) run as they are.
cat >"$work/wrap" <<EOF
#!/usr/bin/env bash
case "\$*" in
  *" run")
    valgrind --tool=callgrind --callgrind-out-file=$work/cg.%p --dump-instr=no \\
      --demangle=no --log-file=$work/vg.%p "$work/qtc" "\$@" &
    wait;;
  *) exec "$work/qtc" "\$@";;
esac
EOF
chmod +x "$work/wrap"
"$root/target/release/qtc-bench" --qtc "$work/wrap" --only forward --modes fbb,b1,b2 \
  --fwd "$fwd" --fwd-runs 1 --out "$work/bench.md" >"$work/bench.log" 2>&1 ||
  { cat "$work/bench.log" >&2; exit 1; }
daemons=$(pgrep -f "callgrind-out-file=$work/cg" || true)
if [ -n "$daemons" ]; then
  kill -TERM $daemons
  for p in $daemons; do
    while kill -0 "$p" 2>/dev/null; do sleep 0.5; done
  done
fi
python3 - "$work" "$root/crates/qtc/link-order.txt" <<'EOF'
import glob, re, sys
work, out = sys.argv[1], sys.argv[2]
names = set()
for f in glob.glob(f"{work}/cg.*"):
    objs, fns, obj = {}, {}, None
    for line in open(f, errors="replace"):
        m = re.match(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ident, name = m.groups()
        table = objs if kind.endswith("ob") else fns
        if name:
            table[ident] = name
        if kind == "ob":
            obj = objs.get(ident)
        elif kind == "fn" and obj == f"{work}/qtc" and ident in fns:
            # callgrind marks a recursion level with 'N.
            names.add(re.sub(r"'\d+$", "", fns[ident]))
if not names:
    sys.exit(f"no qtc functions in {work}/cg.*: did the daemons run under callgrind?")
with open(out, "w") as f:
    f.write("".join(n + "\n" for n in sorted(names)))
print(f"{len(names)} functions written to {out}")
EOF
# build.rs does not watch the list (that would recompile the crate): relink the binary alone.
touch "$root/crates/qtc/src/main.rs"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc
