"""Where the hypervisor's state lives: per guest, per vCPU, per physical
CPU.  hv-no-file-scope-state keeps mutable file-level variables from
coming back (tests/lint/no_global_state.py); hv-two-guests loads two guests
from one bzImage and enters each in turn (selftest=two-guests): each has
its own devices and shadow page tables."""

import importlib.util
import os
import re

from vmitest import paths, test
from hvguest import DONE, GUEST_FATAL, SERIAL_CMDLINE, hv_modules

LINT = os.path.join(paths.ROOT, "tests", "lint", "no_global_state.py")
LAYERS_LINT = os.path.join(paths.ROOT, "tests", "lint", "include_layers.py")
SIZES_LINT = os.path.join(paths.ROOT, "tests", "lint", "sizes.py")
CALLS_LINT = os.path.join(paths.ROOT, "tests", "lint", "call_layers.py")


def lint_module(path=LINT):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@test("hv-include-layers")
def hv_include_layers(t):
    """hv/include/ is vocabulary and no folder includes from one above it
    (tests/lint/include_layers.py, docs/ARCHITECTURE.md "Layers")."""
    lint = lint_module(LAYERS_LINT)
    # The check itself must be able to fail: a vocabulary header that
    # includes a subsystem's, one with a library header, and mm/ reaching
    # up into vcpu/; beside includes that are fine.
    files = {
        "include/words.h": b'#include <stdint.h>\n#include "guest.h"\n#include <string.h>\n#include "other.h"\n',
        "include/other.h": b"#include <stdbool.h>\n",
        "mm/shadow_notify.c": b'#include "words.h"\n#include "pte.h"\n#include "vcpu.h"\n',
        "mm/pte.h": b"",
        "loader/guest.h": b'#include "pte.h"\n',
        "vcpu/vcpu.h": b'#include "guest.h"\n',
    }
    for name, text in files.items():
        os.makedirs(os.path.join(t.tmpdir, "layerlint", os.path.dirname(name)), exist_ok=True)
        t.tmpfile(os.path.join("layerlint", name), text)
    found = lint.check(os.path.join(t.tmpdir, "layerlint"))
    want = ['include/words.h:2: hv/include/ is vocabulary, but includes "guest.h" (hv/loader/)',
            "include/words.h:3: hv/include/ includes <string.h>, not a compiler header",
            'mm/shadow_notify.c:3: hv/mm/ includes "vcpu.h" from hv/vcpu/, a layer above it']
    got = sorted(line.split("layerlint/", 1)[-1] for line in found)
    t.check(got == want, f"the lint on a sample with three breaks found {got}")
    found = lint.check(os.path.join(paths.ROOT, "hv"))
    t.check(not found, "includes that break the layers (tests/lint/include_layers.py):\n    "
            + "\n    ".join(found))
    vocab = sorted(f for f in os.listdir(os.path.join(paths.ROOT, "hv", "include")) if f.endswith(".h"))
    t.note(f"hv/include/: {len(vocab)} vocabulary headers; layers from the ground up: "
           + " < ".join(lint.LAYERS))


@test("hv-call-layers")
def hv_call_layers(t):
    """No call runs up the layers, no files call each other in a circle,
    and hv/include/ declares no folder's functions (tests/lint/call_layers.py,
    docs/ARCHITECTURE.md "Layers"); the allowed upward calls are counted
    (at most 3)."""
    lint = lint_module(CALLS_LINT)
    # The check itself must be able to fail: lib/ calling up into vcpu/,
    # two mm/ files calling each other, a vocabulary header declaring a
    # lib/ function; beside calls down and within a folder, which are fine.
    files = {
        "lib/log.c": "void log_line(void)\n{\n\tvcpu_kick();\n}\n",
        "vcpu/vcpu.c": "void vcpu_kick(void)\n{\n\tlog_line();\n\tshadow_a();\n}\n",
        "mm/shadow_a.c": "/* shadow_b() is named here only in a comment */\n"
                         "void shadow_a(void)\n{\n\tshadow_b();\n}\n",
        "mm/shadow_b.c": "static int calls;\nvoid shadow_b(void)\n{\n\tcalls++;\n\tshadow_a();\n}\n",
        "mm/frames.c": "int frames_free;\nvoid frames_take(void)\n{\n\tframes_free--;\n\tlog_line();\n}\n",
        "include/words.h": "#define WORDS 4\nvoid log_line(void);\n",
    }
    for name, text in files.items():
        os.makedirs(os.path.join(t.tmpdir, "calllint", os.path.dirname(name)), exist_ok=True)
        t.tmpfile(os.path.join("calllint", name), text.encode())
    found = sorted(lint.check(os.path.join(t.tmpdir, "calllint")))
    want = ["circle of 2 files: mm/shadow_a.c -> mm/shadow_b.c (shadow_b); mm/shadow_b.c -> mm/shadow_a.c (shadow_a)",
            "circle of 2 files: lib/log.c -> vcpu/vcpu.c (vcpu_kick); vcpu/vcpu.c -> lib/log.c (log_line)",
            "include/words.h: declares log_line, defined in hv/lib/: the header belongs beside them, "
            "not in the vocabulary",
            "lib/log.c -> vcpu/vcpu.c: hv/lib/ takes vcpu_kick from hv/vcpu/, a layer above it"]
    t.check(found == sorted(want), f"the lint on a sample with four breaks found {found}")
    found = lint.check(os.path.join(paths.ROOT, "hv"))
    t.check(not found, "calls or includes that break the layers (tests/lint/call_layers.py):\n    "
            + "\n    ".join(found))
    t.check(len(lint.UPWARD) <= 3, f"{len(lint.UPWARD)} upward calls allowed, at most 3: {sorted(lint.UPWARD)}")
    files, edges, _ = lint.graph(os.path.join(paths.ROOT, "hv"))
    t.note(f"hv/: {len(files)} files, {len(edges)} edges (includes and calls), "
           f"{len(lint.UPWARD)} allowed upward: " + "; ".join(f"{a}/ -> {b}/ {n}" for a, b, n in sorted(lint.UPWARD)))


def counter_rows(text):
    """[(format, [fields])] of a VCPU_COUNTER_LINES table's rows."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S).replace("\\\n", " ")
    rows = []
    for m in re.finditer(r'\bL\(\s*(?:\w+\s*,\s*)?((?:"(?:\\.|[^"\\])*"\s*)+),([^()]*)\)', text):
        fmt = "".join(re.findall(r'"((?:\\.|[^"\\])*)"', m.group(1)))
        rows.append((fmt, [f.strip() for f in m.group(2).split(",")]))
    return rows


def counter_table_breaks(text):
    return [f"{fmt!r}: {fmt.count('%llu')} %llu for {len(fields)} fields ({', '.join(fields)})"
            for fmt, fields in counter_rows(text)
            if fmt.count("%llu") != len(fields) or fmt.count("%") != fmt.count("%llu")]


@test("hv-counter-table")
def hv_counter_table(t):
    """Each row of the plain counters' table (hv/vcpu/vcpu_counters.h)
    prints as many values (%llu) as it names fields, and no other
    conversion: the report reads each row's fields side by side."""
    # The check itself must be able to fail: a row with a field too many
    # and one with a %u, beside a good one.
    sample = ('#define VCPU_COUNTER_LINES(L) \\\n\tL(ONE, "a: %llu, b: %llu", a, b) \\\n'
              '\tL(ONE, "c: %llu", c, d) \\\n\tL(TWO, "e: %u %llu", e) \\\n')
    found = counter_table_breaks(sample)
    t.check(len(found) == 2 and "'c: %llu'" in found[0] and "'e: %u %llu'" in found[1],
            f"the check on a sample with two bad rows found {found}")
    with open(os.path.join(paths.ROOT, "hv", "vcpu", "vcpu_counters.h")) as f:
        text = f.read()
    rows = counter_rows(text)
    t.check(len(rows) >= 10, f"only {len(rows)} rows read from vcpu_counters.h")
    found = counter_table_breaks(text)
    t.check(not found, "rows whose format and fields disagree:\n    " + "\n    ".join(found))
    t.note(f"{len(rows)} report lines, {sum(len(f) for _, f in rows)} counters declared once")


@test("hv-sizes")
def hv_sizes(t):
    """No function of hv/ or vrom/ longer than 80 lines, no .c file longer
    than 600 (tests/lint/sizes.py; the exceptions are listed there)."""
    lint = lint_module(SIZES_LINT)
    # The check itself must be able to fail: an 81-line function and a
    # 601-line file, beside a file whose 80-line function is fine.
    def body(name, lines):
        return f"int {name}(int x)\n{{\n" + "\tx++;\n" * (lines - 3) + "}\n"
    files = {
        "hv/mm/long_function.c": body("too_long", 81),
        "hv/mm/fine.c": body("just_right", 80) + "\n" + body("short_one", 5),
        "vrom/big.c": "/* filler */\n" * 596 + body("small", 5),
    }
    for name, text in files.items():
        os.makedirs(os.path.join(t.tmpdir, "sizelint", os.path.dirname(name)), exist_ok=True)
        t.tmpfile(os.path.join("sizelint", name), text.encode())
    found = sorted(lint.check(os.path.join(t.tmpdir, "sizelint")))
    want = ["hv/mm/long_function.c:1: too_long is 81 lines, at most 80",
            "vrom/big.c: 601 lines, at most 600"]
    t.check(found == want, f"the lint on a sample with two breaks found {found}")
    found = lint.check(paths.ROOT)
    t.check(not found, "functions or files too long (tests/lint/sizes.py):\n    " + "\n    ".join(found))
    longest, largest = (0, ""), (0, "")
    for top in ("hv", "vrom"):
        for d, _, names in os.walk(os.path.join(paths.ROOT, top)):
            for n in names:
                if not n.endswith(".c"):
                    continue
                path = os.path.join(d, n)
                rel = os.path.relpath(path, paths.ROOT)
                with open(path) as f:
                    text = f.read()
                largest = max(largest, (text.count("\n"), rel))
                for name, _, length in lint.functions(text):
                    if (rel, name) not in lint.LONG_FUNCTIONS:
                        longest = max(longest, (length, f"{rel} {name}"))
    t.note(f"the longest function: {longest[1]}, {longest[0]} lines; "
           f"the largest file: {largest[1]}, {largest[0]} lines")


@test("hv-no-file-scope-state")
def hv_no_file_scope_state(t):
    lint = lint_module()
    # The check itself must be able to fail: a file with a mutable
    # file-scope variable and a static one in a function, next to const
    # data, a type and a function, which are fine.
    os.makedirs(os.path.join(t.tmpdir, "statelint", "dev"), exist_ok=True)
    sample = t.tmpfile(os.path.join("statelint", "dev", "sample.c"), (
        b"struct chip { int irr; };\n"
        b"static const char names[] = \"ab\";\n"
        b"static struct chip chips[2] __attribute__((aligned(16)));\n"
        b"int count = 0;\n"
        b"static int f(void) { static unsigned calls; return ++calls; }\n"
        b"extern int elsewhere;\n"))
    found = lint.check(os.path.dirname(os.path.dirname(sample)))
    names = sorted(line.split(": ")[1] for line in found)
    t.check(names == ["calls", "chips", "count"],
            f"the lint on a sample with three mutable variables found {found}")
    found = lint.check(os.path.join(paths.ROOT, "hv"))
    t.check(not found, "mutable file-scope state in hv/ outside the allow-list "
            "(tests/lint/no_global_state.py):\n    " + "\n    ".join(found))
    t.note(f"hv/: no mutable file-scope state outside the allow-list "
           f"({sum(len(v) for v in lint.ALLOWED.values())} allowed variables in {len(lint.ALLOWED)} files)")


SNAPSHOT = (r"vmi-hv: selftest two-guests: (after its first turn|while the other ran|after its second turn|"
            r"while the other ran again): (guest [AB]): (\d+) exits, (paravirtual|not yet paravirtual), "
            r"vpic bases (\w+)/(\w+) masks (\w+)/(\w+), (\d+) COM1 bytes, (\d+) shadow pages "
            r"\(shadow cr3 (\w+)\), memory at machine (\w+)\n")


@test("hv-two-guests")
def hv_two_guests(t):
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    module = hv_modules(SERIAL_CMDLINE)
    q = t.qemu("-m", "320", "-kernel", paths.HV_ELF, "-initrd", module,
               "-append", "guest_mem=64M selftest=two-guests", fatal=GUEST_FATAL)
    q.expect(r"vmi-hv: selftest two-guests: passed: two guests from one bzImage, each entered twice; "
             r"devices and shadows independent\n", timeout=300)
    status = q.wait_exit(timeout=30)
    t.check(status == DONE, f"exit status {status}, expected {DONE}")
    snaps = [m.groups() for m in re.finditer(SNAPSHOT, q.output)]
    t.check(len(snaps) == 8, f"{len(snaps)} per-guest snapshot lines, expected 8")
    if len(snaps) != 8:
        return
    first_a, b_untouched = snaps[0], snaps[1]
    t.check(first_a[1] == "guest A" and b_untouched[1] == "guest B", f"turn order: {snaps[:2]}")
    # B had not run: its devices are at reset, no shadows, while A's are in use.
    t.check(b_untouched[2] == "0" and b_untouched[4:8] == ("08", "70", "ff", "ff")
            and b_untouched[8] == "0" and b_untouched[9] == "0",
            f"guest B changed before it ran: {b_untouched}")
    t.check(first_a[3] == "paravirtual" and int(first_a[9]) > 0 and int(first_a[8]) > 0,
            f"guest A did not activate VMI, send bytes and build shadows in its turn: {first_a}")
    last = {s[1]: s for s in snaps[-2:]}
    a, b = last.get("guest A"), last.get("guest B")
    t.check(a and b and a[10] != b[10] and a[11] != b[11],
            f"the guests share a shadow directory or memory: {a} {b}")
    t.note(f"guest A: {a[2]} exits, {a[9]} shadow pages, memory at {a[11]}; "
           f"guest B: {b[2]} exits, {b[9]} shadow pages, memory at {b[11]}")
