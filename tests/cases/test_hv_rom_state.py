"""The 8259 and alarm state the ROM serves from the shared page (docs/TIME.md,
"Alarms set without an exit") costs the hypervisor's work only when it
changed: an exit whose page shows no mask or EOI the ROM made is not taken
back, and an entry whose 8259 state and alarm floors are those already
published writes nothing.  Checked by the hypervisor's own counters (the
report's "8259 and alarm state in the shared page" line), never by the
clock.

The test guest makes VMI calls in a loop (tguest=exits: CPUID, no device
touched, interrupts off), so nearly every exit is one where nothing of
the 8259s or the alarms changed; publishing and taking back at every
exit cost about 750 of the hypervisor's instructions each.
"""

import re

from vmitest import accel_for, paths, smp_args, test
from hvguest import GUEST_SHUTDOWN
from testguest import tguest_modules

STATE = re.compile(r"vmi-hv: 8259 and alarm state in the shared page: the 8259s' published at (\d+) entries, "
                   r"taken back at (\d+) exits; alarm floors published at (\d+) entries")
EXITS = re.compile(r"vmi-hv: counters: (\d+) exits, ")
# What changes in this guest is its first entry and the vUART's line
# (its output): a handful of publications over tens of thousands of exits.
SHARE_MAX = 0.01
EXITS_MIN = 2000


def quiet_exits(t, smp):
    q = t.qemu(*smp_args(smp), "-m", "128", "-kernel", paths.HV_ELF, "-append", "guest_mem=16M",
               "-initrd", tguest_modules(t, "tguest=exits"), accel=accel_for(smp))
    q.expect(r"vmi-hv: guest ran \d+ ms: \d+ exits", timeout=240)
    status = q.wait_exit(timeout=60)
    t.check(status == GUEST_SHUTDOWN, f"exit status {status}, not the guest's power-off ({GUEST_SHUTDOWN})")
    end = q.output.split("vmi-hv: guest powered off:")[-1]
    exits, state = EXITS.search(end), STATE.search(end)
    t.check(exits and state, "no counters (or no 8259 and alarm state line) in the end report")
    exits = int(exits.group(1))
    published, taken, floors = (int(n) for n in state.groups())
    t.note(f"-smp {smp}: {exits} exits; 8259 published {published}, taken back {taken}; alarm floors published {floors}")
    t.check(exits >= EXITS_MIN, f"only {exits} exits: too few to judge")
    for what, n in (("8259 state published", published), ("8259 state taken back", taken),
                    ("alarm floors published", floors)):
        t.check(n <= SHARE_MAX * exits, f"{what} at {n} of {exits} exits, expected at most {SHARE_MAX:.0%}")


@test("hv-rom-state-quiet-exits")
def rom_state_quiet_exits(t):
    """-smp 1: exits with no 8259 or alarm change cost no take-back and no
    publication."""
    quiet_exits(t, 1)


@test("hv-rom-state-quiet-exits-smp2", alone="QEMU on -smp 2 with MTTCG: both host CPUs")
def rom_state_quiet_exits_smp2(t):
    """The same on -smp 2 (the alarm's promise is kept per CPU)."""
    quiet_exits(t, 2)
