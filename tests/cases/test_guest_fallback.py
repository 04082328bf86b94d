"""The guest's native fallbacks for calls a ROM answers "unsupported"
(docs/GUEST.md, "Native fallbacks").

vmi-hv implements every call the guest makes, so the fallbacks can only be
reached through its `vmi_refuse=` option, which rewrites the named slots
of the guest's ROM into the unsupported stub and answers their reports
instead of stopping the guest (docs/VROM.md).  The guest asks at
activation, where asking is harmless: GetWallclockTime (a read) and a
zero-length INSB/OUTSB.

  - guest-unsupported-fallback: refused, the guest says it reads the
    CMOS clock and moves strings by element, /proc/vmi/info says so, and
    its clock is the host's (within a few seconds) all the same; not
    refused, it uses the calls, with the same clock.
"""

import re
import time

from hvguest import GUEST_REBOOT, GUEST_SHUTDOWN, PROMPT, boot_hv, ends_cleanly, shell_search
from vmitest import test

WALLCLOCK_FALLBACK = "VMI: the ROM has no wallclock: reading the CMOS clock"
STRING_FALLBACK = "VMI: the ROM does not support INS/OUTS: string I/O by element"
# QEMU's RTC starts at the host's time (UTC); the guest reads it at boot
# and its clock runs on from there.  Boot and the shell take seconds.
CLOCK_SLACK_S = 5


def guest_state(t, q, label):
    """(the guest's `date +%s` minus the host's time, /proc/vmi/info's
    String I/O line)."""
    q.expect(PROMPT, timeout=120)
    m = shell_search(q, "date +%s; grep '^String I/O' /proc/vmi/info", r"^(\d{9,})\n(String I/O: [^\n]*)$")
    skew = int(m.group(1)) - time.time()
    t.note(f"{label}: guest clock {skew:+.1f} s from the host's; {m.group(2)}")
    return skew, m.group(2)


@test("guest-unsupported-fallback")
def unsupported_fallback(t):
    q = boot_hv(t, "vmi_refuse=GetWallclockTime,INSB")
    out = q.output
    for line in (WALLCLOCK_FALLBACK, STRING_FALLBACK):
        t.check(line in out, f"refused: the guest did not say '{line}'")
    for call in ("GetWallclockTime", "INSB"):
        t.check(re.search(rf"VMI call \d+ \({call}\) answered unsupported", out),
                f"refused: the hypervisor did not log answering {call} unsupported")
    skew, string_io = guest_state(t, q, "refused")
    t.check(abs(skew) < CLOCK_SLACK_S, f"refused: the CMOS clock gave the guest a time {skew:+.0f} s off")
    t.check(string_io == "String I/O: an IN/OUT call per element", f"refused: /proc/vmi/info says '{string_io}'")
    q.kill()

    q = boot_hv(t)
    out = q.output
    for line in (WALLCLOCK_FALLBACK, STRING_FALLBACK):
        t.check(line not in out, f"not refused: the guest said '{line}'")
    skew, string_io = guest_state(t, q, "not refused")
    t.check(abs(skew) < CLOCK_SLACK_S, f"not refused: GetWallclockTime gave the guest a time {skew:+.0f} s off")
    t.check(string_io == "String I/O: INS/OUTS calls", f"not refused: /proc/vmi/info says '{string_io}'")


@test("guest-power-calls-refused-fallback")
def power_calls_refused(t):
    for cmd, call, end, status in (
            ("poweroff", "Shutdown",
             r"vmi-hv: guest powered off: hlt with interrupts off at 0061:c[0-9a-f]{7} \(how Linux powers off or halts\)",
             GUEST_SHUTDOWN),
            ("reboot", "Reboot", r"vmi-hv: guest reboot: keyboard controller reset \(port 0x64, 0xfe\)",
             GUEST_REBOOT)):
        q = boot_hv(t, "vmi_refuse=Shutdown,Reboot")
        q.expect(PROMPT, timeout=120)
        q.send(cmd + "\n")
        q.expect(rf"VMI call \d+ \({call}\) answered unsupported", timeout=60)
        m = q.expect(end, timeout=60)
        t.note(f"{cmd}: {m.group(0)}")
        ends_cleanly(t, q, cmd, status, timeout=30)
