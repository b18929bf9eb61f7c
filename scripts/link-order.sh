#!/usr/bin/env bash
# Writes crates/qtc/link-order.ld: the functions of the qtc binary that a daemon runs when it
# starts, forwards (bench row 2, FBB, B1 and B2, both daemons) and stops, found by running
# every daemon of the row under valgrind's callgrind. crates/qtc/build.rs hands the file to the
# linker as a script that lays those functions side by side: the kernel maps a binary's code in
# 64 KB windows around each page a process touches, so scattered functions keep most of the
# binary resident (docs/performance.md, "The receiver's peak memory").
#
# The names are written without what a build rather than the code puts in them (each crate's
# hash, which changes with its dependencies, its version and the compiler), so the list holds
# across dependency changes. Run it again after a compiler update or a large change: `--check`
# (CI) fails when fewer than 95 % of the listed functions are in a build made with the
# list's compiler. It relinks target/release/qtc with the new list at the end.
#
#   scripts/link-order.sh [--fwd N] [--binary QTC]   # N messages per pass (default 1,000);
#                                                    # QTC: profile that build instead
#   scripts/link-order.sh --check [QTC]              # QTC: default target/release/qtc
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
order=$root/crates/qtc/link-order.ld
export LC_ALL=C

# A function's name as link-order.ld lists it, with what changes with the build rather than the
# code replaced by lld's wildcard `*`: in a Rust (v0) name each crate's hash (`Cs<hash>_`) and
# the back-references that shift with those hashes' lengths (`B<offset>_`); the numbers LLVM
# and GCC give a function's copies (`.llvm.N`, `.constprop.N`, `.isra.N`, `.part.N`).
normalise() {
  sed -E -e '/^_R/{s/Cs[0-9A-Za-z]*_/Cs*_/g; s/B[0-9A-Za-z]*_/B*_/g;}' \
    -e 's/\.(llvm|constprop|isra|part|lto_priv)\.[0-9]+/.\1.*/g'
}

# The compiler a binary was built with, as rustc writes it into the binary's .comment.
compiler() {
  readelf -p .comment "$1" 2>/dev/null | grep -o 'rustc version [^)]*)' | head -1 |
    sed 's/^rustc version //' || true
}

# The listed names, one a line (each has a pattern for its cold section too).
listed() {
  sed -n -e '/^      \.text\.unlikely\./d' -e 's/^      \.text\.//p' "$order"
}

# CI: fails when the build has too few of the listed functions, unless it was made by another
# compiler than the list's (which renames the standard library's functions and changes what is
# inlined: a list made here cannot fit CI's compiler, so that only warns).
check() {
  local bin=$1 made now total found
  [ -f "$bin" ] || { echo "link-order: no $bin: build it first (cargo build --release -p qtc)" >&2; exit 1; }
  now=$(compiler "$bin")
  if [ "$(readelf -SW "$bin" | grep -c ' \.text\.ordered ')" -eq 0 ]; then
    if ! orders "$now"; then
      echo "link-order: warning: $bin is linked plainly, as crates/qtc/build.rs does with" \
        "QTC_PLAIN_LINK, off x86-64 or before rustc 1.90: nothing to check" >&2
      return 0
    fi
    echo "link-order: $bin was linked without crates/qtc/link-order.ld" \
      "(a configured linker or link flags: crates/qtc/build.rs)" >&2
    exit 1
  fi
  [ "$(nm --defined-only "$bin" | grep -c ' _RNv')" -gt 0 ] || {
    echo "link-order: $bin has no v0 symbol names: RUSTFLAGS replaced" \
      ".cargo/config.toml's -Csymbol-mangling-version=v0, which the list's names need" >&2
    exit 1
  }
  made=$(sed -n 's|^/\* rustc: \(.*\) \*/$|\1|p' "$order")
  total=$(listed | sort -u | wc -l)
  found=$(nm --defined-only "$bin" | awk '{print $3}' | normalise | sort -u |
    comm -12 - <(listed | sort -u) | wc -l)
  echo "link-order.ld: $found of $total functions in this build" \
    "(list: rustc $made; build: rustc $now)"
  [ "$found" -lt $((total * 95 / 100)) ] || return 0
  if [ "$made" != "$now" ]; then
    echo "link-order: warning: the list was made with another compiler;" \
      "scripts/link-order.sh run with rustc $now would make one that fits" >&2
    return 0
  fi
  echo "link-order: crates/qtc/link-order.ld is stale (fewer than 95 % of its functions are" \
    "in this build): run scripts/link-order.sh and commit the file" >&2
  exit 1
}

# Whether crates/qtc/build.rs links with the order where rustc `$1` ("1.95.0 (...)") built for
# this machine: x86-64 with rustc's own lld (1.90 and later), unless QTC_PLAIN_LINK is set.
orders() {
  local major minor
  IFS=. read -r major minor _ <<<"$1"
  [ -z "${QTC_PLAIN_LINK:-}" ] && [ "$(uname -m)" = x86_64 ] &&
    { [ "${major:-0}" -gt 1 ] || { [ "${major:-0}" -eq 1 ] && [ "${minor:-0}" -ge 90 ]; }; }
}

# Writes the linker script from two files of function names: one output section,
# .text.ordered, before the rest of the code, holding each listed function's section (rustc and
# the cc crate put every function in a section of its own: `.text.<name>`, or
# `.text.unlikely.<name>` for one marked cold, such as a OnceLock's first initialisation), the
# first file's before the second's, in the order the objects come within each. A pattern list
# per file, not one `*(...)` per function, which would make lld scan every section once per
# function (2,800 functions: a link of 0.3 s takes 3.5-4 s, against 4-9 s with half the patterns).
write_order() { # receiver's names, the rest, compiler
  {
    echo "/* The functions a qtc daemon runs, laid side by side before the rest of the code."
    echo "   Written by scripts/link-order.sh; read by crates/qtc/build.rs. */"
    echo "/* rustc: $3 */"
    echo "SECTIONS {"
    echo "  .text.ordered : {"
    # What every start runs outside the Rust and C crates' own sections: _start (crt1.o),
    # frame_dummy and its neighbours (crtbegin*.o), _init (.init, called by ld.so; its two
    # halves from crti.o and crtn.o stay together, in order) and the PLT, through which the C
    # code (SQLite, libdeflate) calls libc. lld puts them at the two ends of .text, where each
    # kept a 64-128 KB window of other code resident (page faults read from perf record -d).
    echo "    /* the C start-up code and the PLT, which every start runs */"
    echo "    *crt1.o(.text)"
    echo "    *crtbegin*.o(.text)"
    echo "    KEEP(*(.init))"
    echo "    *(.plt)"
    patterns "run by a daemon receiving (row 2's B)" "$1"
    patterns "run only by a daemon sending (row 2's A)" "$2"
    echo "  }"
    echo "}"
    echo "INSERT BEFORE .text;"
  } >"$order"
}

# One `*(...)` list under a comment.
patterns() { # comment, names
  echo "    /* $1 */"
  echo "    *("
  normalise <"$2" | sort -u | sed 's/.*/      .text.&\n      .text.unlikely.&/'
  echo "    )"
}

if [ "${1:-}" = --check ]; then
  check "${2:-${CARGO_TARGET_DIR:-$root/target}/release/qtc}"
  exit 0
fi
fwd=1000
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fwd) fwd=$2; shift 2;;
    --binary) bin=$2; shift 2;;
    *) echo "usage: $0 [--fwd N] [--binary QTC] | --check [QTC]" >&2; exit 2;;
  esac
done
for tool in valgrind python3; do
  command -v $tool >/dev/null || { echo "$tool is needed: apt-get install $tool" >&2; exit 2; }
done

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
# The binary's own functions: valgrind 3.19 names lld's binaries' object "???" ("ELF section
# outside all mapped regions": lld's .relro_padding), so its functions are told from the
# libraries' by the binary's symbol table. A function LLVM found identical to another is an
# alias of it (rustc merges functions) and has no section of its own, so every name of an
# address is listed with the one callgrind gives.
nm --defined-only "$work/qtc" | awk '$2 ~ /^[tTwW]$/ {print $1, $3}' >"$work/symbols"
# Two lists: what the receivers (B, the partner N0BBB, whose data directory's name ends in
# -n0bbb) run, first, then what only the senders run, so that a receiver maps the first part.
python3 - "$work" <<'EOF'
import glob, re, sys
work = sys.argv[1]
at, names_at = {}, {}
for line in open(f"{work}/symbols"):
    addr, name = line.split()
    at[name] = addr
    names_at.setdefault(addr, []).append(name)
receiver, sender = set(), set()
for f in glob.glob(f"{work}/cg.*"):
    objs, fns, obj = {}, {}, None
    names = sender
    for line in open(f, errors="replace"):
        if line.startswith("cmd:") and "-n0bbb/" in line:
            names = receiver
        m = re.match(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ident, name = m.groups()
        table = objs if kind.endswith("ob") else fns
        if name:
            table[ident] = name
        if kind == "ob":
            obj = objs.get(ident)
        elif kind == "fn" and obj in (f"{work}/qtc", "???") and ident in fns:
            # callgrind marks a recursion level with 'N.
            name = re.sub(r"'\d+$", "", fns[ident])
            if name in at:
                names.update(names_at[at[name]])
if not receiver or not sender:
    sys.exit(f"no qtc functions in {work}/cg.*: did the daemons run under callgrind?")
open(f"{work}/receiver", "w").write("".join(n + "\n" for n in receiver))
open(f"{work}/sender", "w").write("".join(n + "\n" for n in sender - receiver))
EOF
write_order "$work/receiver" "$work/sender" "$(compiler "$work/qtc")"
echo "$(listed | wc -l) functions written to $order"
# build.rs does not watch the list (that would recompile the crate): relink the binary alone.
touch "$root/crates/qtc/src/main.rs"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc
