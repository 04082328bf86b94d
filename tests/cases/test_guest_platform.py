"""VMI is the platform's hypervisor (docs/GUEST.md, "Native fallbacks").

`guest-vmi-hypervisor-x86` boots the bzImage under vmi-hv: the kernel
registers VMI as a hypervisor_x86 ("Hypervisor detected: VMI"), shows
"hypervisor" in /proc/cpuinfo's flags, and its clocksource is VMI's
(`vmi-timer`), not KVM's although KVM guest support is built in (the VMI
CPUID hides the hypervisor leaves 0x40000000-0x4fffffff).  Natively the
same bzImage detects no VMI.
"""

import re

from vmitest import FATAL_PATTERNS, test
from hvguest import PROMPT, boot_hv, boot_native, quiet_console, run_in_shell


def platform(t, q):
    """At the shell: the detected hypervisor, the cpuinfo flag, the
    clocksource.  The output lines differ from the typed command's echo."""
    q.expect(PROMPT, timeout=120)
    text = run_in_shell(q, "dmesg | grep -o 'Hypervisor detected: [A-Za-z ]*' | sed 's/^/H=/'; "
                           "grep -q -w hypervisor /proc/cpuinfo && echo FLAG=hypervisor; "
                           "sed 's/^/CS=/' /sys/devices/system/clocksource/clocksource0/current_clocksource")
    return {k: v.strip() for k, v in re.findall(r"^(H|FLAG|CS)=([^\n]*)", text, re.M)}


@test("guest-vmi-hypervisor-x86")
def vmi_hypervisor_x86(t):
    native = boot_native(t, fatal=FATAL_PATTERNS)
    n = platform(t, native)
    native.kill()
    t.check(n.get("H") != "Hypervisor detected: VMI", "natively: VMI detected")

    q = boot_hv(t)
    quiet_console(q)
    v = platform(t, q)
    t.check(v.get("H") == "Hypervisor detected: VMI", f"under vmi-hv: {v.get('H', 'no hypervisor detected')}")
    t.check(v.get("FLAG") == "hypervisor", "under vmi-hv: no 'hypervisor' in /proc/cpuinfo's flags")
    t.check(v.get("CS") == "vmi-timer", f"under vmi-hv: clocksource {v.get('CS')}, not vmi-timer")
    t.note(f"natively: {n}; under vmi-hv: {v}")
