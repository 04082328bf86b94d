"""What a guest kernel can read of the switcher (docs/HV.md, "What the
guest can reach"): ring 1 is supervisor for paging, so every page of
PDE 1023 its view maps it can read.  The view must map the code shared by
all (the trap stubs and the world switch), its own vCPU's stack and VMI
shared pages, and the tables of the CPU it runs on (GDT, IDT, TSSes and
the trap path's two words): nothing of another CPU, vCPU or guest.

The test guest's tguest=swscan (tests/guests/tguest_swscan.c) reads every
switcher page at ring 1, a #PF of its own for each page not mapped, and
reports each readable run and each page holding a CPU's GDT, whose TSS
(beside it) names the CPU.  Beside it runs tguest=exits, a second guest
making VMI calls, which on -smp 2 runs on the other CPU at the same time,
and a third, so that the scanning vCPU moves between the CPUs."""

import os
import re
import subprocess

from vmitest import accel_for, paths, test
from testguest import tguest_modules
from hvguest import ends_cleanly

PAGE = 0x1000
SWITCHER_BASE = 0xFFC00000


def _layout(name):
    with open(os.path.join(paths.ROOT, "hv", "include", "layout.h")) as f:
        return int(re.search(r"#define %s\s+(0x[0-9A-Fa-f]+)" % name, f.read()).group(1), 16)


def switcher_data_start():
    """The first data object (a C variable) of the hypervisor's switcher
    image: every page below it (the code all guests share) may be mapped
    in a guest's view."""
    out = subprocess.run(["readelf", "-sW", paths.HV_ELF], capture_output=True, text=True, check=True).stdout
    starts = [int(m.group(1), 16) for m in re.finditer(r"^\s*\d+: ([0-9a-f]{8})\s+\d+ OBJECT ", out, re.M)]
    starts = [a for a in starts if a >= SWITCHER_BASE]
    if not starts:
        raise AssertionError("no data object in the switcher")
    return min(starts)


def pages(first, last):
    return set(range(first, last + 1, PAGE))


def scan_rounds(output):
    """Each round of guest 1's scan: (round, gdt at its start, readable,
    tables, other-cpu, moves, {page: the GDT base of the CPU it was read
    on})."""
    rounds, seen = [], {}
    for line in re.findall(r"^\[guest1\] swscan: ([^\n]*)$", output, re.M):
        m = re.match(r"readable ([0-9a-f]{8})-([0-9a-f]{8}) on ([0-9a-f]{8})$", line)
        if m:
            seen.update({p: int(m.group(3), 16)
                         for p in pages(int(m.group(1), 16), int(m.group(2), 16) & ~(PAGE - 1))})
        m = re.match(r"round ([0-9a-f]{8}) gdt ([0-9a-f]{8}) readable ([0-9a-f]{8}) tables ([0-9a-f]{8}) "
                     r"other-cpu ([0-9a-f]{8}) moves ([0-9a-f]{8})$", line)
        # A line cut by another's output is shown again whole: count a
        # round once.
        if m and not (rounds and rounds[-1][0] == int(m.group(1), 16)):
            rounds.append(tuple(int(x, 16) for x in m.groups()) + (seen,))
            seen = {}
    return rounds


def check_rounds(t, output, smp):
    """Each round's readable pages are exactly the shared code, this vCPU's
    stack and shared pages (vcpu_layout.h: pages 0 and 2 at
    HV_SWITCHER_VCPU_BASE) and the tables page of the CPU it was on when
    it read them (each page is read on one CPU: its GDT base the same
    before and after).  Returns the GDT bases seen and the moves counted."""
    rounds = scan_rounds(output)
    t.check(len(rounds) >= 6, f"-smp {smp}: {len(rounds)} scan rounds reported, expected at least 6")
    data = switcher_data_start()
    vcpu = _layout("HV_SWITCHER_VCPU_BASE")
    shared = pages(SWITCHER_BASE, data - 1)
    gdts, moved = set(), 0
    for rnd, gdt, readable, tables, other, moves, seen in rounds:
        on = set(seen.values()) | {gdt}
        gdts |= on
        moved += moves
        extra = sorted(p for p, g in seen.items() if p not in shared | {g & ~(PAGE - 1), vcpu, vcpu + 2 * PAGE})
        # A round that moved between CPUs may have read each tables page
        # while on the other CPU (then none readable), and never more
        # than one per stay on a CPU.
        least = 1 if moves == 0 else 0
        t.check(not extra and other == 0 and least <= tables <= moves + 1,
                f"-smp {smp} round {rnd}: {readable} switcher pages readable, {len(shared) + 3} allowed; "
                f"{tables} pages with a CPU's GDT, {other} of another CPU; readable beyond the allowed: "
                f"{' '.join('%08x' % p for p in extra[:12])}{' ...' if len(extra) > 12 else ''}")
        missing = sorted((shared | {vcpu, vcpu + 2 * PAGE}) - set(seen))
        t.check(not missing, f"-smp {smp} round {rnd}: the guest cannot read "
                f"{' '.join('%08x' % p for p in missing)}, which its CPU needs")
        t.check(all(data <= g < vcpu for g in on), f"-smp {smp}: a GDT not in the switcher's data: {on}")
    return gdts, moved


def switcher_view(t, smp):
    # 1 ms slices: three guests on two CPUs then move between them often
    # (as in hv-smp-migration), so the scan sees its vCPU moved.
    append = "guest_mem=16M" + (" slice=1" if smp > 1 else "")
    q = t.qemu("-smp", str(smp), "-m", "256", "-kernel", paths.HV_ELF, "-append", append,
               "-initrd", tguest_modules(t, "tguest=swscan", "tguest=exits", "tguest=exits"),
               accel=accel_for(smp))
    q.expect(r"\[guest1\] swscan: done", timeout=300)
    ends_cleanly(t, q, "the guests' power-off", timeout=120)
    gdts, moved = check_rounds(t, q.output, smp)
    if smp > 1:
        t.check(len(gdts) == 2 or moved, f"-smp 2: the scanning guest never moved to the other CPU (GDTs "
                f"seen: {', '.join('%08x' % g for g in sorted(gdts))}): the remap at a move went untested")
    t.note(f"-smp {smp}: the scanning guest read pages on the CPUs whose GDTs are at "
           f"{', '.join('%08x' % g for g in sorted(gdts))}, and moved {moved} times during its scans")


@test("hv-switcher-view")
def switcher_view_one(t):
    """-smp 1: the scan sees the shared code, its own vCPU's pages and
    its CPU's tables, nothing else."""
    switcher_view(t, 1)


@test("hv-switcher-view-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def switcher_view_two(t):
    """-smp 2, the second guest running on the other CPU: nothing of that
    CPU's tables (its GDT with the other guest's descriptors, its TSS and
    IDT) nor of any other CPU is readable."""
    switcher_view(t, 2)
