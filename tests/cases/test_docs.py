"""The documents against the code they describe, on the host, without
QEMU: a fact the code states (a panic it can reach) must be where the
design says it is written down."""

import glob
import os
import re

from vmitest import paths, test

HV = os.path.join(paths.ROOT, "hv")
HV_DOC = os.path.join(paths.ROOT, "docs", "HV.md")
PANIC_SECTION = "### Panics a guest cannot reach"
# A function's first line: at column 0, a name followed by its parameter
# list, not a declaration (no ';' at the end).
FUNCTION_LINE = re.compile(r"^(?!static inline)[A-Za-z_][\w \t\*()]*?\b(\w+)\([^;]*$")
PANIC_CALL = re.compile(r"\b(hv_panic|HV_ASSERT)\(")


def panic_sites():
    """{(path under hv/, function)} of every hv_panic() or HV_ASSERT() call."""
    sites = set()
    for path in glob.glob(os.path.join(HV, "**", "*.c"), recursive=True):
        rel, function = os.path.relpath(path, HV), None
        with open(path) as f:
            for line in f:
                m = FUNCTION_LINE.match(line)
                if m and not line.startswith("#"):
                    function = m.group(1)
                if PANIC_CALL.search(line) and function and function != "hv_panic":
                    sites.add((rel, function))
    return sites


def panic_rows():
    with open(HV_DOC) as f:
        doc = f.read()
    start = doc.index(PANIC_SECTION)
    end = doc.find("\n## ", start)
    return [line for line in doc[start:end].splitlines() if line.startswith("| ")]


@test("host-docs-panic-inventory")
def docs_panic_inventory(t):
    """Every function of hv/ that calls hv_panic() or HV_ASSERT() has its
    row in docs/HV.md's "Panics a guest cannot reach" (its file and its
    name in one row, with why no guest reaches it): a new panic path is
    written down with its reason, or the test fails."""
    sites, rows = panic_sites(), panic_rows()
    t.check(len(sites) >= 20, f"only {len(sites)} panic sites found in hv/: the scan is broken")
    missing = sorted(f"{path} {function}" for path, function in sites
                     if not any(path in row and f"`{function}`" in row for row in rows))
    t.check(not missing, f"panic sites without a row in docs/HV.md \"{PANIC_SECTION[4:]}\": {missing}")
    t.note(f"{len(sites)} functions that can panic, each with its row")


DOCS = os.path.join(paths.ROOT, "docs")
# `docs/MEMORY.md, "Frame budgets"`, `(docs/SMP.md "Concurrent vCPUs")`: a
# document's name, then (after at most a comma and spaces, or a line break
# and a comment leader) a quoted heading.
DOC_REFERENCE = re.compile(r'docs/([A-Z][A-Z_]*\.md)[,:]?(?:\s|\s*[#*/;]+\s*)*\\?"([^"\\]{1,100})\\?"')
# A quoted name broken over two lines (and a comment leader on the second).
LINE_BREAK = re.compile(r"\s*\n\s*(?:(?:#|\*|//)\s*)?")
HEADING = re.compile(r"^#+\s+(.*?)\s*#*\s*$")
REFERENCE_TREES = ("hv", "vrom", "tests", "guest", "scripts", "docs")
SOURCE_SUFFIXES = (".c", ".h", ".S", ".py", ".md", ".sh", ".ld", ".patch", ".txt", "Makefile")


def reference_files():
    """Every file of the source trees and README.md that may cite a
    document (build output and test logs are not looked at)."""
    yield os.path.join(paths.ROOT, "README.md")
    for tree in REFERENCE_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(paths.ROOT, tree)):
            dirnames[:] = [d for d in dirnames if d not in ("build", "__pycache__", ".git")]
            for name in filenames:
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(dirpath, name)


def doc_headings(name):
    path = os.path.join(DOCS, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return {m.group(1) for m in map(HEADING.match, f) if m}


@test("host-docs-references")
def docs_references(t):
    """Every citation of a document by section in the code, the tests, the
    scripts and the documents themselves (`docs/MEMORY.md, "Frame budgets"`)
    names a heading (of any level) that docs/NAME.md has, word for word:
    a reader following the reference finds the section, not a bold label
    inside another one, and renaming a heading fails here until its
    citations follow.  Citations inside guest/patches are checked too and
    also noted, since the patch series should not cite this repository's
    documents at all."""
    headings, found, missing, in_patches = {}, 0, [], []
    for path in reference_files():
        with open(path, errors="replace") as f:
            text = f.read()
        rel = os.path.relpath(path, paths.ROOT)
        for m in DOC_REFERENCE.finditer(text):
            name, section = m.group(1), LINE_BREAK.sub(" ", m.group(2))
            if "{" in section:
                continue  # an f-string's placeholder, not a name
            if name not in headings:
                headings[name] = doc_headings(name)
            found += 1
            line = text.count("\n", 0, m.start()) + 1
            if rel.startswith(os.path.join("guest", "patches")):
                in_patches.append(f"{rel}:{line}")
            if headings[name] is None or section not in headings[name]:
                missing.append(f'{rel}:{line}: docs/{name} "{section}"')
    t.check(found >= 50, f"only {found} citations found: the scan is broken")
    for miss in missing:
        t.note(f"no such heading: {miss}")
    t.check(not missing, f"{len(missing)} of {found} citations name no heading, first: "
            f"{missing[0] if missing else ''}")
    if in_patches:
        t.note(f"the guest patch series cites this repository's documents (it should not): {in_patches}")
    t.note(f"{found} citations, each naming a heading")


ISSUE_REFERENCE = re.compile(r"\b[Ii]ssues? [0-9]+")
DOC_LIMITS = {"HV.md": 1200, "ARCHITECTURE.md": 300}


@test("host-docs-sizes")
def docs_sizes(t):
    """docs/HV.md stays at most 1,200 lines and docs/ARCHITECTURE.md at most
    300 (a design, not a notebook of its history), and nothing in the
    sources, the tests or the documents says "issue N": a reference to a
    tracker the reader does not have explains nothing."""
    problems = []
    for name, limit in DOC_LIMITS.items():
        with open(os.path.join(DOCS, name)) as f:
            lines = sum(1 for _ in f)
        t.note(f"docs/{name}: {lines} lines (at most {limit})")
        if lines > limit:
            problems.append(f"docs/{name} has {lines} lines, at most {limit}")
    hits = []
    for path in reference_files():
        if os.path.relpath(path, paths.ROOT).startswith("scripts" + os.sep):
            continue
        with open(path, errors="replace") as f:
            for number, line in enumerate(f, 1):
                if ISSUE_REFERENCE.search(line):
                    hits.append(f"{os.path.relpath(path, paths.ROOT)}:{number}")
    if hits:
        problems.append(f"{len(hits)} lines say \"issue N\", first: {hits[:3]}")
    t.check(not problems, "; ".join(problems))
