"""Power-off and reboot (docs/HV.md, "Power-off and reboot"; docs/GUEST.md,
"The guest's init contract"): the guest's /init handles busybox's
`poweroff`, `reboot` and `halt` as a real init does, natively and under
vmi-hv.  Two guests, one rebooting and powering off beside the other:
hv-multi-reboot-poweroff (test_hv_multi.py)."""

import re
import time

from vmitest import paths, test
from testguest import tguest_modules
from hvguest import MARKER, NATIVE_REBOOT, PROMPT, boot_native, native_poweroff, quiet_console


@test("native-init-reboot-poweroff")
def native_init_reboot_poweroff(t):
    """Natively on a plain QEMU, `reboot` (no -f: a signal to PID 1) makes
    init end the processes and reboot the kernel, which ends QEMU
    (-no-reboot) with 0; `poweroff` reaches the kernel's power-off, ACPI S5
    ("reboot: Power down"), and QEMU exits by itself with 0 within 15 s, as
    on any PC (on two CPUs: guest-smp-native-2)."""
    q = boot_native(t, debug_exit=False)
    q.expect(PROMPT, timeout=60)
    q.send("reboot\n")
    q.expect(r"init: reboot: ending all processes", timeout=30)
    q.expect(r"init: reboot: asking the kernel", timeout=30)
    status = q.wait_exit(timeout=30)
    t.check(status == NATIVE_REBOOT, f"reboot: exit status {status}, expected {NATIVE_REBOOT}")
    native_poweroff(t, boot_native(t, debug_exit=False), "native -smp 1")


POWERING_OFF = r"vmi-hv: powering the machine off \(ACPI S5: PM1a control port 0x([0-9a-f]+), SLP_TYPa (\d+)\)"


def tguest_no_debug_exit(t, *machine):
    """The test guest calling Shutdown (tguest=trapped) on a machine
    without isa-debug-exit, as a plain QEMU is."""
    return t.qemu(*machine, "-m", "128", "-kernel", paths.HV_ELF,
                  "-initrd", tguest_modules(t, "tguest=trapped"), debug_exit=False)


@test("hv-acpi-poweroff-last-guest")
def hv_acpi_poweroff_last_guest(t):
    """The last guest powered off on a machine without isa-debug-exit: the
    hypervisor powers the machine off through ACPI (the FADT's PM1a
    control block, \\_S5's sleep type, SLP_EN) and QEMU exits by itself,
    status 0.  QEMU's i440fx: PIIX4 PM at 0x600, \\_S5 = 0."""
    q = tguest_no_debug_exit(t)
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown", timeout=60)
    q.expect(r"vmi-hv: stopped \(exit code 8\): guest powered off", timeout=30)
    m = q.expect(POWERING_OFF, timeout=30)
    t.note(m.group(0))
    status = q.wait_exit(timeout=15)
    t.check(status == 0, f"QEMU exit status {status}, expected 0 (ACPI power-off)")


@test("hv-acpi-missing-halts")
def hv_acpi_missing_halts(t):
    """The same on a machine without ACPI (QEMU -machine acpi=off): the
    hypervisor says it cannot power off and why, and halts: QEMU is still
    running 3 s later."""
    q = tguest_no_debug_exit(t, "-machine", "pc,acpi=off")
    q.expect(r"vmi-hv: stopped \(exit code 8\): guest powered off", timeout=60)
    m = q.expect(r"vmi-hv: cannot power the machine off: the machine has no ACPI tables; halted", timeout=30)
    t.note(m.group(0))
    time.sleep(3)
    t.check(q.proc.poll() is None, "QEMU exited: the machine was not merely halted")
    t.check(not re.search(POWERING_OFF, q.output), "it tried an ACPI power-off without ACPI")


@test("hv-iso-plain-qemu-reboot-poweroff")
def hv_iso_plain_qemu_reboot_poweroff(t):
    """`qemu-system-i386 -cdrom vmi-hv.iso` (serial console, no
    isa-debug-exit), the default entry to the guest's shell: `reboot`
    (the kernel's VMI Reboot) starts the guest again from its modules (a
    plain QEMU has no test device to end the run with), back to its shell;
    `poweroff` (VMI Shutdown) then ends QEMU by itself within 15 s, status
    0, through ACPI; no guest stopped."""
    t.require(paths.ISO)
    q = t.qemu("-m", "256", "-cdrom", paths.ISO, debug_exit=False)
    q.expect(MARKER, timeout=300)
    q.expect(PROMPT, timeout=60)
    quiet_console(q)
    q.send("reboot\n")
    q.expect(r"vmi-hv: guest reboot: the guest called Reboot \(hard, how 1\)", timeout=60)
    q.expect(r"vmi-hv: guest guest1 starts again from its modules \(reboot 1\)", timeout=60)
    m = q.expect(MARKER, timeout=300)
    t.check(m.group(3) == "vmi", f"after the reboot the guest reports mode {m.group(3)}")
    q.expect(PROMPT, timeout=60)
    quiet_console(q)
    q.send("poweroff\n")
    start = time.monotonic()
    # init's kill, sleep 1 and sync, then the shutdown under TCG: a few
    # seconds alone, more beside another test; the time taken is noted.
    q.expect(r"vmi-hv: guest powered off: the guest called Shutdown\n", timeout=60)
    q.expect(POWERING_OFF, timeout=60)
    status = q.wait_exit(timeout=max(1, 60 - (time.monotonic() - start)))
    t.note(f"QEMU exited {time.monotonic() - start:.1f} s after 'poweroff', status {status}")
    t.check(status == 0, f"QEMU exit status {status}, expected 0 (ACPI power-off)")
    t.check("guest stopped" not in q.output, "a 'guest stopped' line")
