"""Queues of several vCPUs (docs/VROM.md, "Queues of several vCPUs"): a
page-table write one vCPU queued in its shared page reaches the shadows
before another vCPU loads the directory or flushes, whichever vCPU
queued it."""

import re

from vmitest import MTTCG, paths, test
from testguest import tguest_modules
from guest_end import ends_powered_off

MARK = 0x5a5a0000
PHASES = ("read after SetCR3 of D", "read after the ROM's FlushTLB", "read after the ROM's InvalPage")
LIFE = "read after D released here, announced and loaded there"


def queued_elsewhere(t, options):
    """tguest=smpq on -smp 2: vCPU 0 re-points an entry of directory D (not
    loaded on vCPU 0) at a new page through the ROM's SwapPxE and spins
    without an exit; vCPU 1 then loads D (SetCR3), flushes (the ROM's
    FlushTLB with its own queue empty) or invalidates (InvalPage), and
    must read the new page each time, never the old frame.  Then vCPU 0
    releases D through the ROM (queued) and vCPU 1 announces it again
    through the ROM and loads it: the release is applied first, the guest
    runs on (applied after, it would find D loaded and stop the guest)."""
    q = t.qemu("-smp", "2", "-m", "256", "-kernel", paths.HV_ELF, "-append",
               f"guest_mem=16M vcpus=2 locks=check {options}",
               "-initrd", tguest_modules(t, "tguest=smpq"), accel=MTTCG,
               fatal=[r"vmi-hv: guest stopped: [^\n]*"])
    q.expect(r"tguest: smpq: SetInitialAPState on D 00000000\n", timeout=60)
    q.expect(r"tguest: smpq: read on D before the phases %08x\n" % MARK, timeout=60)
    reads = [int(q.expect(r"tguest: smpq: %s ([0-9a-f]{8})\n" % what, timeout=60).group(1), 16)
             for what in PHASES]
    wrong = [f"{what}: {seen:08x}, not the new page's {MARK + k:08x}"
             for k, (what, seen) in enumerate(zip(PHASES, reads), 1) if seen != MARK + k]
    t.check(not wrong, "the old frame (the write queued on vCPU 0 had not reached the shadow): " + "; ".join(wrong))
    life = int(q.expect(r"tguest: smpq: %s ([0-9a-f]{8})\n" % LIFE, timeout=30).group(1), 16)
    t.check(life == MARK + len(PHASES), f"{LIFE}: {life:08x}, not {MARK + len(PHASES):08x}")
    held = [int(q.expect(r"tguest: smpq: still queued at the %s ([0-9a-f]{8})\n"
                         % what, timeout=30).group(1), 16) for what in PHASES + (LIFE,)]
    t.check(not any(held), f"vCPU 0's queue still held the write or release at vCPU 1's read: {held}")
    ends_powered_off(t, q, "a write queued on one vCPU, relied on by the other")
    return q


@test("hv-smp-queue-elsewhere", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_queue_elsewhere(t):
    """...with the vCPUs at once: each of vCPU 1's three calls drained vCPU
    0's queue, vCPU 0 made to leave guest mode first (it was spinning)."""
    q = queued_elsewhere(t, "vcpus_at_once=on")
    drains = re.findall(r"queues of other vCPUs drained at an exit that relies on them: (\d+) "
                        r"\((\d+) of those vCPUs made to leave guest mode first\)", q.output)
    t.check(drains and int(drains[-1][0]) >= 3 and int(drains[-1][1]) >= 3,
            f"vCPU 0's queue was not drained by vCPU 1's three calls after a kick: {drains}")


@test("hv-smp-queue-elsewhere-turns", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def smp_queue_elsewhere_turns(t):
    """The same with the vCPUs taking turns (vcpus_at_once=off): vCPU 0
    spins until its slice ends, an exit that drains its queue."""
    queued_elsewhere(t, "vcpus_at_once=off")
