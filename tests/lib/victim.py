"""A victim guest's throughput beside an attacker (docs/TIME.md, "Rates a
guest controls"), measured side by side in one run.

The victim (tguest=victim, guest 2, one vCPU) counts loops in windows of
100 ms of TSC time on a grid every guest sees alike (window k: TSC from
k * W to (k + 1) * W) and prints each count.  The attacker (guest 1)
follows the same grid in phases of three windows: idle (every vCPU
halts), busy (its vCPU 0 makes hypercalls without pause on a CPU of its
own, the others halt), attack; tests/guests/tguest_rates.c has the test guest's attackers
(tguest=rates:ipi, tguest=rates:lvtt) and rates_phase(), which a new
attacker in the test guest calls to follow the phases.

The phases alternate every 300 ms, so the host's load (two cores shared
with other QEMUs) is the same for the victim in each of them to within
its changes over a second: the ratio of the medians is robust where
absolute throughputs are not.  The busy phase loads the host as an attack
does (a QEMU thread busy for the attacker's CPU, exiting as often: under
MTTCG another CPU's exits slow the victim's thread by 15-20% whatever the
hypervisor does), so the victim's throughput beside the attack is compared
with that beside the busy neighbour (and the idle one is reported too): a
hypervisor that protects the victim perfectly gives a ratio of 1 whatever
the host's load.  The
first window of each phase is left out (the attacker changes phase in it).

API:
    m = beside(t, attacker, options="", smp=2, windows=54, victim_cpus=None)
        One boot: `attacker` the guest-1 command line (after the test
        guest's bzImage, e.g. "tguest=rates:ipi smp_vcpus=2"), `options`
        the hypervisor's (e.g. "guest1.vcpus=2"), on -smp smp; the victim
        counts `windows` windows, then the console stops the attacker.
        Returns a Measure.
    m.loops[phase]   the victim's loop counts in that phase's windows
                     (IDLE, BUSY, ATTACK), first windows left out
    m.median(phase), m.ratio(phase=ATTACK, baseline=BUSY)
    m.output         the run's console output (for more checks)
    keeps(t, what, m, least=0.8, baseline=BUSY)
        Notes the figures and checks m.ratio(ATTACK, baseline) >= least
        (IDLE when the attacker shares the victim's CPU: then its busy
        phase takes half the CPU, fairly, and the idle phase loads the
        host as the attack does, both halting), and m.ratio(ATTACK, IDLE)
        >= least as well.
"""

import re
import statistics

from vmitest import accel_for, paths, smp_args
from testguest import tguest_modules
from guest_end import HV_BROKEN, check_invariants
from hvguest import stop_console_guest_and_quit
from hvstats import hv_statistics

IDLE, BUSY, ATTACK = 0, 1, 2
PHASES = ("idle", "busy", "attack")
PHASE_WINDOWS = 3        # RATES_PHASE_WINDOWS in tests/guests/tguest.h
WINDOW = r"victim: window ([0-9a-f]{8}) loops ([0-9a-f]{8})"


class Measure:
    def __init__(self, loops, output):
        self.loops = loops
        self.output = output

    def median(self, phase):
        return statistics.median(self.loops[phase]) if self.loops[phase] else 0

    def ratio(self, phase=ATTACK, baseline=BUSY):
        return self.median(phase) / max(self.median(baseline), 1)

    def summary(self):
        return ", ".join(f"{PHASES[p]} {self.median(p):.0f} ({len(self.loops[p])} windows)"
                         for p in (IDLE, BUSY, ATTACK))


def windows_by_phase(output):
    """The victim's windows as {phase: [loops]}, each phase's first left out.
    Its lines may come in pieces between the attacker's (on -smp 2 both
    print at once): its pieces are joined first."""
    loops = {IDLE: [], BUSY: [], ATTACK: []}
    joined = "".join(re.findall(r"^\[guest2\] ([^\n]*)", output, re.M))
    for m in re.finditer(WINDOW, joined):
        k, n = int(m.group(1), 16), int(m.group(2), 16)
        if k % PHASE_WINDOWS:
            loops[k // PHASE_WINDOWS % 3].append(n)
    return loops


def beside(t, attacker, options="", smp=2, windows=54, victim_cpus=None):
    """One boot, the attacker as guest 1 and the victim as guest 2 (see the
    module's docstring); the victim's windows by phase."""
    opts = " ".join(o for o in (options, f"guest2.cpus={victim_cpus}" if victim_cpus else "") if o)
    append = ["-append", opts] if opts else []
    q = t.qemu(*smp_args(smp), "-m", "128", "-kernel", paths.HV_ELF, *append, "-initrd",
               tguest_modules(t, attacker, f"tguest=victim victim_windows={windows}"),
               fatal=HV_BROKEN, accel=accel_for(smp))
    q.expect(r"rates: attacking, phase windows", timeout=120)
    # The victim prints its windows once it has counted them all: the
    # statistics then (Ctrl-] s) show where its time went meanwhile.
    q.expect(r"\[guest2\] victim: window", timeout=60 + windows * 3)
    name = hv_statistics(q).vcpu(2, 0)["name"]
    t.check(name == "guest2", f"the statistics' guest 2 is {name}, not guest2")
    q.expect(r"\[guest2\] victim: done", timeout=60)
    # Guest 1 has the console: stop it; then the hypervisor, up after a
    # stop, exits on 'q'.
    stop_console_guest_and_quit(q)
    check_invariants(t, q.output, attacker)
    m = Measure(windows_by_phase(q.output), q.output)
    for line in re.findall(r"vmi-hv: (?:vcpu time|cpu \d+ \(APIC)[^\n]*", q.output):
        t.note(line)
    t.check(all(len(m.loops[p]) >= 4 for p in m.loops), f"{attacker}: too few windows counted: {m.summary()}")
    return m


def keeps(t, what, m, least=0.8, baseline=BUSY):
    """The victim keeps at least `least` of its throughput beside the quiet
    neighbour (busy or idle) while the attack runs, and at least `least` of
    its throughput beside the idle neighbour (the promise: a guest that
    attacks costs its neighbour no more than an idle one; on a host whose
    two cores are shared with other work the busy neighbour is the fairer
    judge, and both are asked)."""
    r = m.ratio(ATTACK, baseline)
    t.note(f"{what}: victim loops per 100 ms (median): {m.summary()}; "
           f"attack / busy = {m.ratio(ATTACK, BUSY):.3f}, attack / idle = {m.ratio(ATTACK, IDLE):.3f} "
           f"(required >= {least} against {PHASES[baseline]} and idle)")
    t.check(r >= least, f"{what}: the victim kept {r:.3f} of its throughput beside the attack, "
            f"required >= {least} of it beside the {PHASES[baseline]} neighbour (loops per window {m.summary()})")
    r = m.ratio(ATTACK, IDLE)
    t.check(r >= least, f"{what}: the victim kept {r:.3f} of its throughput beside the idle neighbour "
            f"while attacked, required >= {least} (loops per window {m.summary()})")
