"""CPU work counted inside Linux guests, and the host's own capacity for
it, for the benchmarks that set one machine's work against another's
(docs/SMP.md, "More than one CPU" and "Concurrent vCPUs").

The work: rounds of 300 iterations of a shell loop, each round ending in
a read of /proc/uptime (the guest's REAL time, in centiseconds: a system
call per round).  The script counts the rounds in a window of WORK_CS
that starts LEAD_CS after it does and ends LEAD_CS before it stops: the
guests of a round are started one after the other (a console switch and
a short command each, well under LEAD_CS apart), so every counted window
lies where all of them run, and the rate (rounds per second, between
round ends) does not depend on who started first.  It reaches the
guests as /bw in a second archive after the initrd (as
build/guest/stress-initrd.img adds stress-ng): typing "/bw" takes 30 ms.

The host's capacity: on a 2-core host, what two QEMU threads at once get
against one alone is bounded by the host (hyperthreads, other work), so
a bench of a second CPU's gain measures that bound beside its own ratio,
the same work in two -smp 1 QEMUs at once against one alone.
"""

import os
import statistics
import subprocess

from vmitest import FATAL_PATTERNS, accel_for, paths, smp_args
from hvguest import SERIAL_CMDLINE, hv_modules
from multiguest import end_both, expect_all, give_console, prompt

WORK_CS = 200
LEAD_CS = 50
WORK_SCRIPT = """#!/bin/sh
now() { read u _ < /proc/uptime; c=$(( ${u%%.*} * 100 + 1${u#*.} - 100 )); }
now; a=$((c + %(lead)d)); b=$((a + %(work)d)); e=$((b + %(lead)d)); n=0; k=
while :; do
    i=0; while [ $i -lt 300 ]; do i=$((i + 1)); done
    n=$((n + 1)); now
    if [ $c -lt $a ]; then :
    elif [ -z "$k" ]; then k=$n; s=$c
    elif [ $c -lt $b ]; then m=$n; t=$c
    elif [ $c -ge $e ]; then break
    fi
done
echo "work-done: $((m - k)) rounds in $((t - s)) cs"
""" % {"lead": LEAD_CS, "work": WORK_CS}
WORK_DONE = r"\[%s\] work-done: (\d+) rounds in (\d+) cs\n"
# The host's capacity: two -smp 1 QEMUs at once against one alone, this
# many times alternately.
CAPACITY_ROUNDS = 3
# A host whose own speed moves more than this between a bench's windows
# (the same single-CPU work, max / min over its windows) is too noisy to
# judge a ratio against its capacity: other work on it comes and goes
# within seconds.
QUIET_SPREAD = 1.2


def work_initrd(t):
    """The guest's initrd followed by a newc archive holding /bw."""
    stage = os.path.join(t.tmpdir, "benchwork-root")
    os.makedirs(stage, exist_ok=True)
    script = os.path.join(stage, "bw")
    with open(script, "w") as f:
        f.write(WORK_SCRIPT)
    os.chmod(script, 0o755)
    archive = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=stage,
                             input=b"bw\n", capture_output=True, check=True).stdout
    with open(paths.INITRD, "rb") as f:
        base = f.read()
    # Each archive of an initramfs starts on a 4-byte boundary.
    return t.tmpfile("bench-initrd.img", base + b"\0" * (-len(base) % 4) + archive)


def work_machine(t, smp, initrd):
    """Two Linux guests (one, two) with the work script on an -smp machine;
    not yet waited for."""
    mods = ",".join(hv_modules(SERIAL_CMDLINE, initrd) for _ in range(2))
    return t.qemu(*smp_args(smp), "-m", "400", "-kernel", paths.HV_ELF,
                  "-initrd", mods, "-append", "guest_mem=64M guest1.name=one guest2.name=two",
                  fatal=FATAL_PATTERNS, accel=accel_for(smp))


def work(machines):
    """Both guests of every machine count at once; each machine's work,
    the sum of its guests' rounds per second."""
    for q in machines:
        for n, name in ((1, "one"), (2, "two")):
            give_console(q, n, name)
            q.send("/bw\n")
    rates = []
    for q in machines:
        found = expect_all(q, [WORK_DONE % "one", WORK_DONE % "two"], timeout=120)
        rates.append(sum(int(m.group(1)) * 100 / max(int(m.group(2)), 1) for m in found))
    return rates


def capacity_machines(t, initrd):
    """Two -smp 1 work machines, at their guests' shells."""
    one, other = work_machine(t, 1, initrd), work_machine(t, 1, initrd)
    for q in (one, other):
        expect_all(q, [prompt("one"), prompt("two")], timeout=400)
    return one, other


def host_capacity(one, other, rounds=CAPACITY_ROUNDS):
    """The host's capacity, rounds times: (the two machines' work at once,
    the first one's alone)."""
    pairs = []
    for _ in range(rounds):
        alone = work([one])[0]
        together = sum(work([one, other]))
        pairs.append((together, alone))
    return pairs


def measure_capacity(t, initrd):
    """host_capacity on two machines of its own, ended after."""
    one, other = capacity_machines(t, initrd)
    pairs = host_capacity(one, other)
    for q in (one, other):
        end_both(q)
        q.kill()
    return pairs


def capacity_note(pairs):
    return "host capacity, the same work in two -smp 1 QEMUs at once / in one alone: %s" % (
        "; ".join(f"{a:.1f} / {b:.1f} ({a / b:.2f}x)" for a, b in pairs))


def median_of(pairs):
    return statistics.median(x / y if y else 0 for x, y in pairs)


def spread(values):
    """How much the host's speed moved between windows of the same work:
    max / min."""
    return max(values) / min(values) if min(values) else float("inf")
