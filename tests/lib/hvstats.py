"""The hypervisor's statistics (Ctrl-] s while a guest runs), read once
and parsed here (the lines: hv/vcpu/guest_report.c and console_keys.c).

    hv_statistics(q)      sends Ctrl-] s, waits for the whole report (the
                          console guest's counters, every vCPU's time, every
                          CPU's line) and returns it as a Statistics
    read_statistics(q)    the same for a Ctrl-] s typed another way

A Statistics has the report's text (.text, for .search() of any line) and
its parsed lines:

    .up_ms, .timer_irqs   the header (hypervisor uptime, timer interrupts)
    .host_s               the host's time.monotonic() when the header came
    .counters             {exits, emulated, hidden_faults, reflected,
                           hypercalls, com1_bytes, denied_ports}
    .exits_by_vector      {vector: exits}
    .vmi_calls            {VMI call name: hypercalls}
    .hv_time              {cycles, ns, timed_exits, quiet}: the hypervisor's
                          time per exit
    .interrupts           {delivered, alarms, late_us, mean_late_us}
    .vcpus                {(guest number, vcpu): dict of its "vcpu time"
                           line: name, real, available, stolen, running,
                           halted (cycles), stolen_ms, real_ms, alarms,
                           late_us, mean_late_us, wakeups, at_once}
    .guests               {guest name: its vCPU 0's dict from .vcpus}
    .cpus                 {cpu: {apic, guest_pct, hv_pct, idle_pct, ms,
                           timer_irqs, ipis}}
"""

import re
import time

from vmitest import TestFailure

HEADER = r"vmi-hv: statistics \(guest running, hypervisor up (\d+) ms, (\d+) timer interrupts\):\n"
COUNTERS = (r"vmi-hv: counters: (\d+) exits, (\d+) emulated instructions, (\d+) hidden \(shadow\) page faults, "
            r"(\d+) exceptions reflected, (\d+) hypercalls, (\d+) COM1 bytes, (\d+) denied port accesses\n")
HV_TIME = (r"vmi-hv: hypervisor time per exit: (\d+) cycles \((\d+) ns\) on average over (\d+) exits, "
           r"run loop included; (\d+) exits quiet")
INTERRUPTS = (r"vmi-hv: virtual interrupts: (\d+) delivered, (\d+) alarms fired "
              r"\(at worst (\d+) us late, (\d+) us on average\)\n")
VCPU_TIME = (r"vmi-hv: vcpu time: guest (\d+) \((\S+)\) vcpu (\d+): real=(\d+) available=(\d+) stolen=(\d+) "
             r"cycles \(running=(\d+) halted=(\d+)\); (\d+) of (\d+) ms stolen; (\d+) alarms "
             r"\(at worst (\d+) us late, (\d+) us on average\), (\d+) wake-ups \((\d+) took the CPU at once\)\n")
CPU = (r"vmi-hv: cpu (\d+) \(APIC ID (\d+)\): busy in guests ([\d.]+)%, hypervisor ([\d.]+)%, idle ([\d.]+)% "
       r"of (\d+) ms; (\d+) timer interrupts, (\d+) IPIs\n")


def _named(pattern, names, text):
    m = re.search(pattern, text)
    if not m:
        raise TestFailure(f"no /{pattern}/ in the statistics:\n{text}")
    return dict(zip(names, (int(v) for v in m.groups())))


def _pairs(pattern, text, key):
    m = re.search(pattern, text)
    if not m:
        raise TestFailure(f"no /{pattern}/ in the statistics:\n{text}")
    return {key(k): int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


class Statistics:
    def __init__(self, text, host_s):
        self.text, self.host_s = text, host_s
        m = re.match(HEADER, text)
        self.up_ms, self.timer_irqs = int(m.group(1)), int(m.group(2))
        self.counters = _named(COUNTERS, ("exits", "emulated", "hidden_faults", "reflected", "hypercalls",
                                          "com1_bytes", "denied_ports"), text)
        self.hv_time = _named(HV_TIME, ("cycles", "ns", "timed_exits", "quiet"), text)
        self.interrupts = _named(INTERRUPTS, ("delivered", "alarms", "late_us", "mean_late_us"), text)
        self.exits_by_vector = _pairs(r"vmi-hv: exits by vector:([^\n]*)\n", text, int)
        self.vmi_calls = _pairs(r"vmi-hv: VMI calls:([^\n]*)\n", text, str)
        self.emulated_by_kind = _pairs(r"vmi-hv: emulated by kind:([^\n]*)\n", text, str)
        self.vcpus, self.guests = {}, {}
        for m in re.finditer(VCPU_TIME, text):
            v = dict(zip(("real", "available", "stolen", "running", "halted", "stolen_ms", "real_ms", "alarms",
                          "late_us", "mean_late_us", "wakeups", "at_once"), (int(x) for x in m.groups()[3:])))
            v["name"] = m.group(2)
            self.vcpus[int(m.group(1)), int(m.group(3))] = v
            if m.group(3) == "0":
                self.guests[m.group(2)] = v
        self.cpus = {}
        for m in re.finditer(CPU, text):
            self.cpus[int(m.group(1))] = dict(
                apic=int(m.group(2)), guest_pct=float(m.group(3)), hv_pct=float(m.group(4)),
                idle_pct=float(m.group(5)), ms=int(m.group(6)), timer_irqs=int(m.group(7)), ipis=int(m.group(8)))

    def search(self, pattern):
        """The match of pattern in the report; fails when no line has it."""
        m = re.search(pattern, self.text)
        if not m:
            raise TestFailure(f"no /{pattern}/ in the statistics:\n{self.text}")
        return m

    def has(self, pattern):
        return re.search(pattern, self.text) is not None

    def vcpu(self, guest, k):
        """Guest number guest's vCPU k's "vcpu time" line (a dict)."""
        if (guest, k) not in self.vcpus:
            raise TestFailure(f"no vcpu time line for guest {guest}'s vCPU {k} in the statistics:\n{self.text}")
        return self.vcpus[guest, k]


def machine_cpus(q):
    """The CPUs the hypervisor runs on: QEMU's -smp, at most its cpus=."""
    cmd = getattr(q, "cmd", [])
    n = 1
    for a, b in zip(cmd, cmd[1:]):
        if a == "-smp":
            n = int(re.match(r"(?:cpus=)?(\d+)", b).group(1))
    for a, b in zip(cmd, cmd[1:]):
        m = re.search(r"(?:^| )cpus=(\d+)", b) if a == "-append" else None
        if m:
            n = min(n, int(m.group(1)))
    return n


def _arrived(q, pos):
    """The host's time.monotonic() when output position pos arrived."""
    for at, length in q.arrivals:
        if length >= pos:
            return q.started + at
    return time.monotonic()


def _resume_at(text, start):
    """Where expect() goes on after the report: its end, or the first line
    inside it that is not the hypervisor's (a guest printing meanwhile on
    another CPU), so that a later expect still finds that line."""
    pos = 0
    for line in text.splitlines(keepends=True):
        if not line.startswith("vmi-hv: "):
            return start + pos
        pos += len(line)
    return start + len(text)


def hv_statistics(q, timeout=60):
    """Ctrl-] s while the console guest runs: the whole report, parsed (a
    Statistics).  Types nothing else: at a shell prompt the caller sends
    the newline that shows the prompt again."""
    q.send("\x1ds")
    return read_statistics(q, timeout)


def read_statistics(q, timeout=60):
    """The report of a Ctrl-] s already typed (on the keyboard, say)."""
    head = q.expect(HEADER, timeout=timeout)
    start = head.start()
    last = q.expect(r"vmi-hv: cpu %d \(APIC ID[^\n]*\n" % (machine_cpus(q) - 1), timeout=timeout)
    lines = [line for line in q.output[start:last.end()].splitlines(keepends=True)
             if line.startswith("vmi-hv: ")]
    q.cursor = _resume_at(q.output[start:last.end()], start)
    return Statistics("".join(lines), _arrived(q, head.end()))
