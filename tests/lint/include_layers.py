#!/usr/bin/env python3
"""Fail if an #include in hv/ breaks the layering (docs/ARCHITECTURE.md,
"Layers").

Two rules:
  1. hv/include/ is vocabulary: types, constants, layouts, inline helpers
     that every layer speaks.  Its headers include only other hv/include/
     headers and the compiler's own (<stdint.h>, <stddef.h>, <stdbool.h>,
     <stdarg.h>), never a subsystem's header.
  2. The folders stand in LAYERS, from the ground up; a file includes
     headers of its own folder, of hv/include/ and of folders below its
     own, never of a folder above.

    tests/lint/include_layers.py [HV_DIR]     (default: hv/ of this checkout)

Prints one line per finding, `path:line: what`, and exits 1 if any.
Generated headers (build/include, e.g. vmi_abi.h) are the ABI's one
definition and count as vocabulary for rule 2; rule 1 keeps them out of
hv/include/ all the same, so that the vocabulary builds without them.
"""

import os
import re
import sys

# From the ground floor up.  "." is hv/ itself (main.c), at the top.
LAYERS = ["include", "lib", "mm", "arch", "drivers", "timer", "emul", "sched", "dev",
          "loader", "vcpu", "."]
# A folder's subfolders are rooms of its layer (vcpu/exit, vcpu/mmu, ...):
# they share its place in LAYERS, and may use each other's files.
def layer_of(folder):
    """The layer a folder (relative to hv/) belongs to: its top component."""
    return folder.split(os.sep)[0] if folder != "." else "."


COMPILER_HEADERS = {"stdint.h", "stddef.h", "stdbool.h", "stdarg.h"}
SKIP_DIRS = set()
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def headers_by_folder(hv):
    where = {}
    for d, dirs, files in os.walk(hv):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            if f.endswith(".h"):
                where.setdefault(f, layer_of(os.path.relpath(d, hv)))
    return where


def check(hv):
    where = headers_by_folder(hv)
    found = []
    for d, dirs, files in os.walk(hv):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        folder = layer_of(os.path.relpath(d, hv))
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".S")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, os.path.dirname(os.path.abspath(hv)))
            text = open(path, encoding="utf-8", errors="replace").read()
            for m in INCLUDE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                kind, name = m.group(1), m.group(2)
                dest = where.get(os.path.basename(name)) if kind == '"' else None
                if folder == "include":
                    if kind == "<" and name not in COMPILER_HEADERS:
                        found.append(f"{rel}:{line}: hv/include/ includes <{name}>, not a compiler header")
                    elif kind == '"' and dest != "include":
                        what = f"hv/{dest}/" if dest else "no hv/include/ header (generated?)"
                        found.append(f"{rel}:{line}: hv/include/ is vocabulary, but includes \"{name}\" ({what})")
                    continue
                if dest is None or dest == folder or dest == "include":
                    continue
                if folder not in LAYERS or dest not in LAYERS:
                    found.append(f"{rel}:{line}: \"{name}\": folder {folder!r} or {dest!r} is not in LAYERS")
                elif LAYERS.index(dest) > LAYERS.index(folder):
                    found.append(f"{rel}:{line}: hv/{folder}/ includes \"{name}\" from hv/{dest}/, a layer above it")
    return found


def main():
    hv = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "hv")
    found = check(hv)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
