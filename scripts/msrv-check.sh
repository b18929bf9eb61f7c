#!/usr/bin/env bash
# Checks the workspace's `rust-version` (Cargo.toml) against what building it needs, without a
# second toolchain: no crate in the locked dependency graph of the daemon may declare a newer
# `rust-version`. (Our own code is held to it by clippy, which reads `rust-version`: its
# `incompatible_msrv` lint rejects standard-library calls newer than that.)
# Prints the declared and the needed version; exits 1 when the declared one is too old.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what builds for this machine's platform: a dependency for Windows alone (the TUN crate's
# wintun bindings) is never compiled here.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo metadata --format-version 1 --locked --filter-platform "$host" | python3 -c '
import json, sys
m = json.load(sys.stdin)
pkgs = {p["id"]: p for p in m["packages"]}
nodes = {n["id"]: n for n in m["resolve"]["nodes"]}
ver = lambda s: tuple(int(x) for x in (s.split(".") + ["0", "0"])[:3])
members = [i for i in m["workspace_members"] if pkgs[i]["name"] != "qtc-bench"]
declared = {pkgs[i]["rust_version"] for i in members}
if None in declared or len(declared) != 1:
    sys.exit(f"every workspace crate must inherit one rust-version, found {declared}")
declared = declared.pop()
# What `cargo build` compiles: the members and their normal and build dependencies.
seen, todo = set(), list(members)
while todo:
    i = todo.pop()
    if i in seen:
        continue
    seen.add(i)
    for d in nodes[i]["deps"]:
        if any(k["kind"] in (None, "build") for k in d["dep_kinds"]):
            todo.append(d["pkg"])
need, who = max((ver(pkgs[i]["rust_version"]), pkgs[i]["name"] + " " + pkgs[i]["version"])
                for i in seen if pkgs[i].get("rust_version"))
need = ".".join(map(str, need))
print(f"rust-version {declared}; the locked build dependencies need {need} ({who})")
if ver(declared) < ver(need):
    sys.exit(f"rust-version {declared} is older than {need}: raise it in Cargo.toml")
'
