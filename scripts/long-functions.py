#!/usr/bin/env python3
"""Lists production functions longer than a limit, counted from the source: every line from
the `fn` line to its closing brace, comments and blank lines included (a stricter count than
clippy's `too_many_lines`, which skips them). Test code is left out: `tests/` and `benches/`
folders, `tests.rs` and `tests_*.rs` files, and `#[cfg(test)]` modules.

usage: scripts/long-functions.py [--limit N] [PATH...]   (default: 100, crates/)
Exit status 1 when a function is over the limit.
"""
import re
import sys
from pathlib import Path

FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def strip(line, state):
    """The line's code without strings, chars and comments; state carries block comments."""
    out, i, n = [], 0, len(line)
    while i < n:
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"] = False
            i = j + 2
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        if c == '"' or (c == "r" and re.match(r'r#*"', line[i:])):
            m = re.match(r'r(#*)"', line[i:])
            if m:
                end = '"' + m.group(1)
                j = line.find(end, i + len(m.group(0)))
                i = n if j < 0 else j + len(end)
                continue
            i += 1
            while i < n and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def is_test_file(p):
    parts = p.parts
    return (
        "tests" in parts
        or "benches" in parts
        or p.name == "tests.rs"
        or p.name.startswith("tests_")
        or "fuzz" in parts
    )


def functions(path):
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    state = {"block": False}
    code = [strip(l, state) for l in lines]
    skip_until = -1
    i = 0
    while i < len(lines):
        if i <= skip_until:
            i += 1
            continue
        if re.match(r"\s*#\[cfg\(test\)\]", code[i]):
            # Skip the item that follows (a test module): to its matching brace.
            depth, j, opened = 0, i + 1, False
            while j < len(lines):
                depth += code[j].count("{") - code[j].count("}")
                opened |= "{" in code[j]
                if opened and depth <= 0:
                    break
                if not opened and code[j].rstrip().endswith(";"):
                    break
                j += 1
            skip_until = j
            i += 1
            continue
        m = FN.match(code[i])
        if m:
            depth, j, opened = 0, i, False
            while j < len(lines):
                if not opened and ";" in code[j] and "{" not in code[j]:
                    break  # a declaration without a body
                depth += code[j].count("{") - code[j].count("}")
                opened |= "{" in code[j]
                if opened and depth <= 0:
                    yield m.group(7), i + 1, j - i + 1
                    break
                j += 1
        i += 1


def main(argv):
    limit, roots = 100, []
    it = iter(argv)
    for a in it:
        if a == "--limit":
            limit = int(next(it))
        else:
            roots.append(Path(a))
    roots = roots or [Path("crates")]
    over = []
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*.rs"))
        for f in files:
            if is_test_file(f) or "target" in f.parts:
                continue
            for name, line, n in functions(f):
                if n > limit:
                    over.append((n, f"{f}:{line}", name))
    for n, where, name in sorted(over, reverse=True):
        print(f"{n:5} {where} {name}")
    print(f"{len(over)} production functions over {limit} lines", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
