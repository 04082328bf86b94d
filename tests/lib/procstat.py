"""The guest's own view of where its CPUs' time went: /proc/stat's cpu
lines beside its uptime (its REAL time), read by one shell command so that
the figures of a reading share one instant, and windows between two
readings (docs/GUEST.md, "Time accounting").

    reading_cmd(tag, lines, extra)  shell text for one reading
    window_cmd(work, lines, extra)  a reading, work, a reading (W0, W1),
                                    in one command: the window is the work's
    read_stat(q, lines, extra)      one reading at the shell, parsed
    parse_reading(text, tag), parse_window(text)
    Window(before, after)           .elapsed, .delta(line), .share(column)

Columns of a cpu line, in USER_HZ (100) ticks: USER, NICE, SYSTEM, IDLE,
IOWAIT, IRQ, SOFTIRQ, STEAL, GUEST, GUEST_NICE.
"""

import re

from vmitest import TestFailure
from hvguest import run_in_shell

USER, NICE, SYSTEM, IDLE, IOWAIT, IRQ, SOFTIRQ, STEAL = range(8)
USER_HZ = 100


def reading_cmd(tag, lines="cpu ", extra="", stat_first=True):
    """Shell text printing one reading: "TAG <uptime> <extra>" and then the
    /proc/stat lines that start with `lines` ("cpu " the sum of all CPUs,
    "cpu[0-9]" each CPU, "cpu1 " one), each as "TAG cpuN ...".  /proc/stat,
    the uptime and extra (shell words, e.g. "$(r)", split at white space
    into one line) are read in that order, next to one another (with
    stat_first False, /proc/stat last)."""
    head = f"echo {tag} $(cut -d' ' -f1 /proc/uptime) {extra}"
    if not stat_first:
        return f"{head}; grep '^{lines}' /proc/stat | sed 's/^/{tag} /'"
    return f"_ps=$(grep '^{lines}' /proc/stat); {head}; echo \"$_ps\" | sed 's/^/{tag} /'"


def window_cmd(work, lines="cpu ", extra="", stat_outside=False):
    """One command: reading W0, work, reading W1.  stat_outside: /proc/stat
    read first before the work and last after it."""
    return (f"{reading_cmd('W0', lines, extra)}; {work}; "
            f"{reading_cmd('W1', lines, extra, stat_first=not stat_outside)}")


class Reading:
    def __init__(self, uptime, extra, stat):
        self.uptime, self.extra, self.stat = uptime, extra, stat


def parse_reading(text, tag):
    """The reading tagged tag in text: .uptime (s), .extra (its words), .stat
    ({"cpu": [columns], "cpu0": [...], ...})."""
    head = re.search(r"^%s ([\d.]+) ?([^\n]*)$" % tag, text, re.M)
    if not head:
        raise TestFailure(f"no reading {tag} (uptime, /proc/stat) in {text!r}")
    stat = {name: [int(v) for v in vals.split()]
            for name, vals in re.findall(r"^%s (cpu\d*) +([\d ]+)$" % tag, text, re.M)}
    if not stat:
        raise TestFailure(f"reading {tag} has no /proc/stat line: {text!r}")
    return Reading(float(head.group(1)), head.group(2).split(), stat)


class Window:
    """Between two readings: the guest's elapsed seconds, and each cpu
    line's columns advanced."""

    def __init__(self, before, after):
        self.before, self.after = before, after
        self.elapsed = after.uptime - before.uptime

    def delta(self, line="cpu"):
        return [a - b for a, b in zip(self.after.stat.get(line, []), self.before.stat.get(line, []))]

    def share(self, column, line="cpu", cpus=1):
        """column's ticks in the window as a share of its time on cpus CPUs
        (0 for a window that did not advance)."""
        d = self.delta(line)
        if self.elapsed <= 0 or len(d) <= column:
            return 0
        return d[column] / (self.elapsed * USER_HZ * cpus)


def parse_window(text):
    return Window(parse_reading(text, "W0"), parse_reading(text, "W1"))


def read_stat(q, lines="cpu[0-9]", extra="", stat_first=True, timeout=60):
    """One reading at the guest's shell (run_in_shell)."""
    return parse_reading(run_in_shell(q, reading_cmd("R", lines, extra, stat_first), timeout), "R")
