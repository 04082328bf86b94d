"""Under VMI the guest's clocksource is the VMI cycle counter (vmi-timer),
and the TSC clocksource is never registered (docs/GUEST.md, "The time device"):
natively the kernel registers `tsc-early` at boot and `tsc` about a second
later from a delayed work item (the refined calibration), which under VMI
printed "clocksource: tsc: mask: ..." into the middle of whatever user work
ran then, and offered a second clocksource that reads the same counter.

`hv-linux-no-tsc-clocksource`: the guest under the hypervisor, at its
shell, after waiting out the refined calibration's delay: the current
clocksource is vmi-timer, neither `tsc` nor `tsc-early` is among the
available ones, and the serial log has no "clocksource: tsc" line."""

import re

from vmitest import test
from hvguest import GUEST_BROKEN as FATAL, PROMPT, boot_hv

SYSFS = "/sys/devices/system/clocksource/clocksource0"


@test("hv-linux-no-tsc-clocksource")
def linux_no_tsc_clocksource(t):
    q = boot_hv(t, fatal=FATAL)
    q.expect(PROMPT, timeout=60)
    # The refined calibration runs a second after device_initcall and
    # again each second until it has two reference readings: 5 s covers it.
    q.send(f"sleep 5; echo cs-current=$(cat {SYSFS}/current_clocksource) "
           f"cs-available=$(cat {SYSFS}/available_clocksource | tr ' ' ,) cs-done\n")
    m = q.expect(r"cs-current=([\w-]+) cs-available=([\w,-]*) cs-done", timeout=120)
    current, available = m.group(1), [c for c in m.group(2).split(",") if c]
    t.note(f"current clocksource {current}, available {', '.join(available)}")
    t.check(current == "vmi-timer", f"current clocksource {current!r}, expected vmi-timer")
    tsc = [c for c in available if c.startswith("tsc")]
    t.check(not tsc, f"the TSC clocksource is registered under VMI: available {', '.join(available)}")
    lines = re.findall(r"[^\n]*clocksource: (?:Switched to clocksource )?tsc[^\n]*", q.output)
    t.check(not lines, "TSC clocksource lines on the console: " + "; ".join(l.strip() for l in lines))
