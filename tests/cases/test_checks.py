"""Checks of the checks (issue 29, item 5): each feeds one of the suite's
own checks the input that an earlier, weaker form of it accepted, and
the input it must accept, on the host, without QEMU.  A check that can
let a fault through is a test that cannot fail."""

import subprocess
import time

from vmitest import Console, FATAL_PATTERNS, TestFailure, test
from hvguest import GUEST_STOPPED_LINE


def console_of(t, text, fatal=None):
    """A Console on a process that prints text and then lingers."""
    proc = subprocess.Popen(["sh", "-c", 'printf "%s" "$1"; sleep 5', "sh", text],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return Console(proc, open(t.log_path, "a"), fatal=fatal, name="sh")


def expect_outcome(t, text, pattern, fatal=None):
    """expect(pattern) on a console that printed text (ending in END), once
    all of it is in the buffer: ("match", its text) or ("failure", why)."""
    c = console_of(t, text, fatal)
    try:
        deadline = time.monotonic() + 10
        while "END\n" not in c.output and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            return "match", c.expect(pattern, timeout=10).group(0)
        except TestFailure as e:
            return "failure", str(e)
    finally:
        c.proc.kill()
        c.proc.wait()
        c.log.close()


@test("host-check-expect-fatal-before-match")
def host_check_expect_fatal_before_match(t):
    """Console.expect: a fatal line already in the buffer before the
    wanted pattern fails the wait, though both arrived at once; a fatal
    line after the match does not; a test that waits for a stop line
    (and declares it fatal otherwise) gets it."""
    how, what = expect_outcome(t, "vmi-hv: PANIC: shadow lost\nwanted-marker\nEND\n", r"wanted-marker")
    t.check(how == "failure" and "vmi-hv: PANIC: shadow lost" in what,
            f"a PANIC before the wanted line: {how} {what!r}")
    how, what = expect_outcome(t, "wanted-marker\nvmi-hv: PANIC: later\nEND\n", r"wanted-marker")
    t.check(how == "match", f"a PANIC after the wanted line: {how} {what!r}")
    fatal = [*FATAL_PATTERNS, GUEST_STOPPED_LINE]
    how, what = expect_outcome(t, "vmi-hv: guest stopped: triple fault: vector 6\nEND\n",
                               r"vmi-hv: guest stopped: triple fault", fatal)
    t.check(how == "match", f"the wanted stop line itself: {how} {what!r}")
    how, what = expect_outcome(t, "vmi-hv: guest stopped: triple fault: vector 6\nEND\n",
                               r"triple fault: vector \d+", fatal)
    t.check(how == "match", f"the wanted part of a stop line: {how} {what!r}")
    how, what = expect_outcome(t, "vmi-hv: guest stopped: triple fault\nvmi-hv: stopped (exit code 6)\nEND\n",
                               r"vmi-hv: stopped \(exit code 6\)", fatal)
    t.check(how == "failure" and "guest stopped: triple fault" in what,
            f"a stop line skipped over: {how} {what!r}")
