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
