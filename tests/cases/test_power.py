"""Power-off and reboot (docs/HV.md, "Power-off and reboot"; docs/ARCHITECTURE.md,
"The guest's init contract"): the guest's /init handles busybox's
`poweroff`, `reboot` and `halt` as a real init does, natively and under
vmi-hv.  Two guests, one rebooting and powering off beside the other:
hv-multi-reboot-poweroff (test_hv_multi.py)."""

import re

from vmitest import test
from hvguest import NATIVE_REBOOT, PROMPT, boot_native


@test("native-init-reboot-poweroff")
def native_init_reboot_poweroff(t):
    """Natively, `reboot` (no -f: a signal to PID 1) makes init end the
    processes and reboot the kernel, which ends QEMU (-no-reboot) with 0;
    `poweroff` reaches the kernel's power-off: with a power-off driver
    ("reboot: Power down") QEMU exits with 0, without one the kernel
    halts ("reboot: System halted"; the guest kernel has no ACPI today)."""
    q = boot_native(t)
    q.expect(PROMPT, timeout=60)
    q.send("reboot\n")
    q.expect(r"init: reboot: ending all processes", timeout=30)
    q.expect(r"init: reboot: asking the kernel", timeout=30)
    status = q.wait_exit(timeout=30)
    t.check(status == NATIVE_REBOOT, f"reboot: exit status {status}, expected {NATIVE_REBOOT}")
    q = boot_native(t)
    q.expect(PROMPT, timeout=60)
    q.send("poweroff\n")
    q.expect(r"init: poweroff: asking the kernel", timeout=30)
    m = q.expect(r"reboot: (Power down|System halted)", timeout=30)
    if m.group(1) == "Power down":
        status = q.wait_exit(timeout=30)
        t.check(status == 0, f"poweroff: exit status {status}, expected 0 (ACPI S5)")
    else:
        t.note("natively the kernel halts at poweroff: it has no power-off driver (CONFIG_ACPI is off)")
    t.check(not re.search(r"init: (poweroff|reboot) -f returned", q.output), "the kernel returned to init")
