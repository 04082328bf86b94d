"""Several Linux guests of one hypervisor at its console (docs/HV.md,
"Several guests"): each guest's output lines carry its name ("[one] ..."),
Ctrl-] N gives guest N the keyboard, Ctrl-] q ends the guest that has it."""

import re

from vmitest import MTTCG  # noqa: F401 (its importers take it from here)


def expect_all(q, patterns, timeout=300):
    """Each regex somewhere after the current point, in any order (two
    guests' output interleaves); returns the matches, the cursor after the
    last of them."""
    start, end, found = q.cursor, q.cursor, []
    for p in patterns:
        q.cursor = start
        m = q.expect(p, timeout=timeout)
        found.append(m)
        end = max(end, m.end())
    q.cursor = end
    return found


def prompt(name):
    return r"\[%s\] [^\n]*vmi-guest# " % re.escape(name)


def give_console(q, n, name):
    q.send("\x1d%d" % n)
    q.expect(r"vmi-hv: console input goes to guest %d \(%s\)" % (n, name), timeout=60)


def end_both(q):
    q.send("\x1dq")
    q.expect(r"has ended; 1 other goes on", timeout=60)
    q.send("\x1dq")
    q.expect(r"has ended; 0 others go on", timeout=60)
