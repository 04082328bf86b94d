#!/usr/bin/env python3
"""Fail if a call or an #include between hv/'s files breaks the layering
(docs/ARCHITECTURE.md, "Layers"), or if files call each other in a circle.

The graph: hv/'s files are the nodes; a file has an edge to another when it
includes that file's header, or names a function or variable that only the
other file defines with external linkage (a call, a use of a global, a
function pointer taken).  A vocabulary header's macro or inline helper
that calls out counts as a call from hv/include/.  Three rules:

  1. No edge runs up the layers (include_layers.LAYERS): a folder calls
     and includes its own, hv/include/'s and the folders below it; the
     few allowed exceptions are in UPWARD, each with its reason.
  2. No circle of files (a strongly connected set of two or more files,
     inside a folder or across folders).
  3. A header's name says where its functions are: a header that declares
     a function another folder defines must sit with it (its folder's
     own headers), not in hv/include/.  (Vocabulary headers declare
     types, constants and inline helpers only.)

    tests/lint/call_layers.py [HV_DIR]     (default: hv/ of this checkout)

Prints one line per finding and exits 1 if any; with -v also the counts.
Pure text reading (no compiler, no ctags): a definition is a function at
column 0 (this code's style, as tests/lint/sizes.py reads it), a non-static
file-scope variable, or an assembler `.globl`; a use is the name as a
whole word outside comments and strings.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from include_layers import LAYERS, INCLUDE, layer_of  # noqa: E402

# (from folder, to folder, symbol): why this call may run up the layers.
UPWARD = {
    # The boot entry's one call: from the multiboot stub into the start-up
    # sequence, which is the top by definition (it calls everything).
    ("arch", ".", "hv_main"): "the boot stub starts the hypervisor",
}

WORD = re.compile(r"\b[A-Za-z_]\w*\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
FUNC_NAME = re.compile(r"^(?!static\b|typedef\b|extern\b|#)[A-Za-z_][^;=]*?\b(\w+)\(")
STATIC_FUNC = re.compile(r"^static\b[^;=]*?\b(\w+)\(")
VARIABLE = re.compile(r"^(?!static\b|typedef\b|extern\b|#|struct \w+ *\{|union|enum)"
                      r"[A-Za-z_][\w \*]*?\b(\w+)(?:\[[^\]]*\])*\s*(?:__attribute__\(\(.*\)\))?\s*(?:=|;)")
STATIC_VARIABLE = re.compile(r"^static\b[\w \*]*?\b(\w+)(?:\[[^\]]*\])*\s*(?:__attribute__\(\(.*\)\))?\s*(?:=|;)")
GLOBL = re.compile(r"^\s*\.globl\s+(\w+)", re.M)
DEFINE = re.compile(r"^\s*#\s*define\s+\w+(?:\([^)]*\))?((?:[^\n]*\\\n)*[^\n]*)", re.M)
PROTOTYPE = re.compile(r"^(?!static\b|#)[A-Za-z_][^;{}()]*?\b(\w+)\([^;{}]*\)\s*(?:__attribute__\(\(.*?\)\)\s*)*;", re.M)


def strip(text):
    """The text without comments and string literals (their names are not
    uses); line count kept."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return STRING.sub(blank, COMMENT.sub(blank, text))


def folder_of(rel):
    d = os.path.dirname(rel)
    return d if d else "."


def read_files(hv):
    """{path relative to hv: stripped text} of every .c, .S and .h."""
    files = {}
    for d, dirs, names in os.walk(hv):
        dirs.sort()
        for n in sorted(names):
            if n.endswith((".c", ".S", ".h")):
                path = os.path.join(d, n)
                with open(path, encoding="utf-8", errors="replace") as f:
                    files[os.path.relpath(path, hv)] = strip(f.read())
    return files


ATTRIBUTE = re.compile(r"__attribute__\(\((?:[^()]|\([^()]*\))*\)\)\s*")


def definitions(rel, text):
    """(external names, file-local names) that a .c or .S file defines."""
    if rel.endswith(".S"):
        return set(GLOBL.findall(text)), set()
    external, local = set(), set()
    for line in text.split("\n"):
        line = ATTRIBUTE.sub("", line)
        if line[:1] in ("", " ", "\t", "}", "{", ")"):
            continue
        for pattern, into in ((STATIC_FUNC, local), (STATIC_VARIABLE, local),
                              (FUNC_NAME, external), (VARIABLE, external)):
            m = pattern.match(line)
            if m:
                into.add(m.group(1))
                break
    return external, local


def header_calls(text):
    """The names a header uses inside macro bodies and inline function
    bodies: what it calls on its includer's behalf."""
    used = set()
    for m in DEFINE.finditer(text):
        used.update(WORD.findall(m.group(1)))
    depth, inline, body = 0, False, []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            continue
        if depth == 0 and line.startswith("static inline"):
            inline = True
        if inline:
            body.append(line.split("(", 1)[1] if depth == 0 and "(" in line else line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and line.startswith("}"):
            inline = False
    used.update(WORD.findall("\n".join(body)))
    return used


def graph(hv):
    """(files, edges): edges[(a, b)] = the names (or headers) a takes from b."""
    files = read_files(hv)
    defined, local = {}, {}
    for rel, text in files.items():
        if rel.endswith((".c", ".S")):
            ext, loc = definitions(rel, text)
            local[rel] = loc
            for name in ext:
                defined.setdefault(name, set()).add(rel)
    owner = {name: next(iter(where)) for name, where in defined.items() if len(where) == 1}
    header_path = {}
    for rel in files:
        if rel.endswith(".h"):
            header_path.setdefault(os.path.basename(rel), rel)
    edges = {}
    for rel, text in files.items():
        if rel.endswith(".h"):
            names = header_calls(text)
        else:
            names = set(WORD.findall(text)) - local.get(rel, set())
        for name in names:
            to = owner.get(name)
            if to and to != rel:
                edges.setdefault((rel, to), set()).add(name)
        for m in INCLUDE.finditer(text):
            to = header_path.get(os.path.basename(m.group(2))) if m.group(1) == '"' else None
            if to and to != rel:
                edges.setdefault((rel, to), set()).add(f'#include "{m.group(2)}"')
    return files, edges, defined


def circles(nodes, edges):
    """The strongly connected sets of two or more files (Tarjan)."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        work = [(v, iter(succ[v]))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    scc.append(w)
                    if w == node:
                        break
                if len(scc) > 1:
                    found.append(sorted(scc))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return found


def layer(rel):
    folder = layer_of(folder_of(rel))
    return LAYERS.index(folder) if folder in LAYERS else None


def header_owner(rel, text, defined):
    """For a vocabulary header: the folders whose functions it declares."""
    out = set()
    for name in PROTOTYPE.findall(text):
        for where in defined.get(name, ()):
            if folder_of(where) != "include":
                out.add((name, folder_of(where)))
    return out


def check(hv, verbose=False):
    files, edges, defined = graph(hv)
    found, upward = [], 0
    # A header names the .c of its own name: "pte.h" goes with pte.c.  An
    # edge to a header is an edge to its folder.
    for (a, b), names in sorted(edges.items()):
        la, lb = layer(a), layer(b)
        if la is None or lb is None:
            found.append(f"{a} -> {b}: folder not in LAYERS")
            continue
        if lb <= la:
            continue
        allowed = [n for n in names if (folder_of(a), folder_of(b), n) in UPWARD]
        if allowed and len(allowed) == len(names):
            upward += 1
            continue
        found.append(f"{a} -> {b}: hv/{folder_of(a)}/ takes {', '.join(sorted(names))} "
                     f"from hv/{folder_of(b)}/, a layer above it")
    for scc in circles(files, edges):
        ties = [f"{a} -> {b} ({', '.join(sorted(n)[:4])})" for (a, b), n in sorted(edges.items())
                if a in scc and b in scc]
        found.append(f"circle of {len(scc)} files: " + "; ".join(ties))
    for rel, text in sorted(files.items()):
        if folder_of(rel) == "include":
            owned = header_owner(rel, text, defined)
            if owned:
                where = sorted({w for _, w in owned})
                found.append(f"{rel}: declares {', '.join(sorted(n for n, _ in owned))}, defined in "
                             f"{', '.join('hv/' + w + '/' for w in where)}: the header belongs beside "
                             f"them, not in the vocabulary")
    if verbose:
        print(f"{len(files)} files, {len(edges)} edges, {upward} allowed upward")
    return found


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    hv = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..", "hv")
    found = check(hv, verbose="-v" in sys.argv)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
