"""What the QEMU tests share about the guest and the hypervisor's exits.

One definition each: the init marker and the shell prompt (guest/initramfs/
init), and the hypervisor's exit codes, read from hv/include/exit_codes.h
(QEMU's isa-debug-exit makes code N exit status (N << 1) | 1).
"""

import os
import re

from vmitest import paths

# guest/initramfs/init
MARKER = r"VMIHV-INIT-MARKER uptime=([0-9.]+) kernel=(\S+) mode=(\w+)\n"
PROMPT = r"vmi-guest# "
SERIAL_CMDLINE = "console=ttyS0,115200"

# A register line of the hypervisor's guest dump.
REGS = r"eax=[0-9a-f]{8} ebx=[0-9a-f]{8} ecx=[0-9a-f]{8} edx=[0-9a-f]{8}"

# The guest dying (or being stopped) ends a test that expected it to run.
GUEST_FATAL = [r"Kernel panic - not syncing[^\n]*", r"vmi-hv: fatal[^\n]*",
               r"vmi-hv: guest stopped: [^\n]*"]


def _exit_codes():
    codes = {}
    with open(os.path.join(paths.ROOT, "hv", "include", "exit_codes.h")) as f:
        for name, value in re.findall(r"#define (HV_EXIT_\w+)\s+(0x[0-9a-fA-F]+|\d+)", f.read()):
            codes[name] = int(value, 0)
    return codes


EXIT_CODES = _exit_codes()


def qemu_status(name):
    """QEMU's exit status for the hypervisor's exit code HV_EXIT_<name>."""
    return (EXIT_CODES["HV_EXIT_" + name] << 1) | 1


DONE = qemu_status("DONE")
BAD_INPUT = qemu_status("BAD_INPUT")
EXCEPTION = qemu_status("CPU_EXCEPTION")
DOUBLE_FAULT = qemu_status("DOUBLE_FAULT")
GUEST_STOPPED = qemu_status("GUEST_STOPPED")
GUEST_REBOOT = qemu_status("GUEST_REBOOT")
GUEST_SHUTDOWN = qemu_status("GUEST_SHUTDOWN")


def stays_responsive(t, q):
    """After a guest stop: statistics on 's' (twice, the tick count moves),
    then 'q' exits with the guest-stopped status."""
    q.expect(r"the hypervisor is still running: on the console \(serial or keyboard\), 's' prints statistics, 'q' exits",
             timeout=30)
    ticks = []
    for _ in range(2):
        q.send("s")
        m = q.expect(r"statistics \(guest stopped, hypervisor tick (\d+)\):", timeout=20)
        ticks.append(int(m.group(1)))
        q.expect(r"vmi-hv: counters: \d+ exits, \d+ emulated instructions")
    t.check(ticks[1] > ticks[0], f"hypervisor ticks did not advance: {ticks}")
    q.send("q")
    q.expect(r"vmi-hv: stopped \(exit code %d\): guest stopped" % EXIT_CODES["HV_EXIT_GUEST_STOPPED"],
             timeout=20)
    status = q.wait_exit(timeout=30)
    t.check(status == GUEST_STOPPED, f"exit status {status}, expected {GUEST_STOPPED}")
