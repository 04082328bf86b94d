"""The VMI clock reads are notrace (docs/GUEST.md, "The time device"): the function
tracer reads the clock itself, so a traced clock read would recurse into
it.  The guest's configuration has no function tracer today, so the
built kernel cannot show it; the test reads the patched tree the kernel
was built from (paths.GUEST_CONFIG's directory).

`guest-vmi-clock-notrace`: every function the VMI time device registers
as a clock (the clocksource's read, the scheduler clock, the steal
clock), and every function of the VMI sources that they call, directly
or not, is defined notrace (or inline, which the kernel makes notrace)."""

import os
import re

from vmitest import paths, test

SOURCES = ("arch/x86/kernel/vmiclock_32.c", "arch/x86/kernel/vmi_32.c")
# Where vmiclock_32.c hands a clock to the kernel.
REGISTERED = (r"\.read\s*=\s*(\w+)", r"paravirt_set_sched_clock\((\w+)\)",
              r"static_call_update\(pv_steal_clock,\s*(\w+)\)")
# A function definition at the start of a line: its qualifiers and type,
# its name, its body up to the closing brace in the first column.
DEFINITION = re.compile(r"^([A-Za-z_][^\n;{}()#]*?)\b(\w+)\([^;{}]*?\)\s*\n\{\n(.*?)\n\}", re.M | re.S)


@test("guest-vmi-clock-notrace")
def guest_vmi_clock_notrace(t):
    tree = os.path.dirname(paths.GUEST_CONFIG)
    t.require(*(os.path.join(tree, f) for f in SOURCES))
    defs, text = {}, ""
    for f in SOURCES:
        with open(os.path.join(tree, f)) as fh:
            src = fh.read()
        text += src
        for m in DEFINITION.finditer(src):
            defs[m.group(2)] = (m.group(1).split(), m.group(3), f)
    roots = {name for pat in REGISTERED for name in re.findall(pat, text)}
    t.check(len(roots) == 3, f"expected the clocksource read, sched_clock and steal clock, found {sorted(roots)}")
    seen, todo = set(), sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            t.check(name in seen or name not in roots, f"{name}: no definition found in {SOURCES}")
            continue
        seen.add(name)
        todo += [c for c in re.findall(r"\b(\w+)\s*\(", defs[name][1]) if c in defs and c not in seen]
    traced = [f"{n} ({defs[n][2]})" for n in sorted(seen) if not {"notrace", "inline"} & set(defs[n][0])]
    t.note(f"clock reads: {', '.join(sorted(seen))}")
    t.check(len(seen) >= len(roots), f"found only {sorted(seen)}")
    t.check(not traced, f"clock reads without notrace: {', '.join(traced)}")
