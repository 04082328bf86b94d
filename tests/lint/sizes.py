#!/usr/bin/env python3
"""Fail if a function of hv/ or vrom/ is longer than MAX_FUNCTION_LINES
(its first line, the one naming it, to its closing brace) or a .c file
longer than MAX_FILE_LINES; the exceptions are listed with their reason.
The shape a reviewer would ask for, kept by the build (docs/ARCHITECTURE.md,
"Layers").

    tests/lint/sizes.py [ROOT]     prints one line per break, exit 1 if any
"""

import glob
import os
import re
import sys

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 600
# The run loop's file, which the structure keeps to the loop itself (the
# SMP plumbing is run_smp.c's, ending guests run_reap.c's).
MAX_LINES = {"hv/vcpu/run.c": 300}
# fmt_format: the printf engine, one switch over the conversions, read
# top to bottom; split, it would be harder to check against C's rules.
LONG_FUNCTIONS = {("hv/lib/format.c", "fmt_format")}
# A function definition in this code's style: the name's line at column
# 0, the opening brace alone on the next line (or after the parameters
# continued), the closing brace alone at column 0.
NAME_LINE = re.compile(r"^[A-Za-z_][^;]*?\b(\w+)\(")


def functions(text):
    """[(name, first line number, lines)] of a C file's function bodies."""
    lines = text.split("\n")
    found, name, start = [], None, 0
    for i, line in enumerate(lines):
        m = NAME_LINE.match(line)
        if m and not line.startswith("typedef"):
            name, start = m.group(1), i
        elif line == "{" and name:
            end = i
            while end < len(lines) and lines[end] != "}":
                end += 1
            found.append((name, start + 1, end - start + 1))
            name = None
        elif line.strip() and not line.startswith((" ", "\t", ")")) and not m:
            name = None
    return found


def check(root):
    breaks = []
    paths = glob.glob(os.path.join(root, "hv", "**", "*.c"), recursive=True) + \
        glob.glob(os.path.join(root, "vrom", "**", "*.c"), recursive=True)
    for path in sorted(paths):
        rel = os.path.relpath(path, root)
        with open(path) as f:
            text = f.read()
        n = text.count("\n")
        limit = MAX_LINES.get(rel, MAX_FILE_LINES)
        if n > limit:
            breaks.append(f"{rel}: {n} lines, at most {limit}")
        for name, line, length in functions(text):
            if length > MAX_FUNCTION_LINES and (rel, name) not in LONG_FUNCTIONS:
                breaks.append(f"{rel}:{line}: {name} is {length} lines, at most {MAX_FUNCTION_LINES}")
    return breaks


if __name__ == "__main__":
    found = check(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    print("\n".join(found))
    sys.exit(1 if found else 0)
