"""The invariants every hostile or fuzzed guest run must leave behind, read
from the hypervisor's own lines after the guest ended (docs/HV.md, "Tests"):

- no hypervisor fault: none of vmitest.FATAL_PATTERNS, no stop reason of
  hvguest.HV_FAULT_STOPS;
- the shadow audit of the guest's end report: 0 mismatches (required
  when the shadows served, i.e. the guest activated VMI with paging on);
- the machine frames free after the guests' end equal the count before
  they ran (hv/vcpu/life/guest_frames.c gives the run's frames back);
- each guest's frame budget is back at its load charge after its end (a
  budget that gives back less than it took leaks, though no frame is lost);
- then, if the hypervisor stayed up, it answers 's' and 'q'.
"""

import re

from hvguest import HV_FAULT_STOPS, ends_cleanly
from vmitest import FATAL_PATTERNS

AUDIT = r"vmi-hv: shadow audit: (\d+) page directories, (\d+) page tables, (\d+) entries checked, (\d+) mismatches"
FRAMES = r"vmi-hv: machine frames free: (\d+) after guest (\S+)'s end \((\d+) before the guests ran\)"
BUDGET_END = r"vmi-hv: frame budget: (\d+) frames in use after guest (\S+)'s end \((\d+) charged at load\)"
BEFORE = r"vmi-hv: machine frames free before the guests run: (\d+)"
STOP = r"vmi-hv: guest stopped: ([^\n]*)"
# The hypervisor hurt: its own exception, double fault or panic, or a stop
# reason that blames the hypervisor.  (A reset ends QEMU: -no-reboot.)
HV_BROKEN = [*FATAL_PATTERNS, *(r"vmi-hv: guest stopped: " + r + r"[^\n]*" for r in HV_FAULT_STOPS)]


def audits(text):
    """Every audit line: (directories, tables, entries, mismatches)."""
    return [tuple(int(x) for x in m) for m in re.findall(AUDIT, text)]


def check_invariants(t, text, what, last=True):
    """Assert the invariants over one run's output; returns a dict of
    figures (audits checked, frames before/after) for the test to print.
    `last`: the run's last guest has ended, so the free count must be back
    at its value before the guests ran."""
    for bad in HV_BROKEN:
        m = re.search(bad, text)
        t.check(not m, f"{what}: the hypervisor failed: {m.group(0) if m else ''}")
    a = audits(text)
    # A guest that activated with paging off keeps the vTLB: no shadows,
    # no audit.  One that activated with paging on must show its audit.
    if "shadow paging: notification-driven from now on" in text:
        t.check(a, f"{what}: no shadow audit line")
    t.check(all(x[3] == 0 for x in a), f"{what}: shadow audit mismatches: {a}")
    f = re.findall(FRAMES, text)
    t.check(f, f"{what}: no machine-frames line after the guest's end")
    b = re.findall(BUDGET_END, text)
    t.check(len(b) >= len(f), f"{what}: {len(f)} machine-frames lines but {len(b)} budget lines after the end")
    for used, name, load in b:
        t.check(used == load, f"{what}: guest {name}'s frame budget holds {used} frames after its end, "
                              f"not its load charge {load}: a take never given back")
    if f and last:
        after, _, before = f[-1]
        t.check(after == before, f"{what}: machine frames free {after} after the end, {before} before the guests ran")
    return {"audits": len(a), "entries": sum(x[2] for x in a),
            "frames": (f[-1][2], f[-1][0]) if f else None}


def ends_powered_off(t, q, what, timeout=60):
    """The run ends with the guest's own power-off: QEMU's status says so,
    no guest was stopped, and the invariants hold (check_invariants)."""
    ends_cleanly(t, q, what, timeout=timeout)
    return check_invariants(t, q.output, what)
