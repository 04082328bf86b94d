"""User programs fail alone, as natively (docs/HV.md, "What the guest can reach").

`hv-ring3-vs-native` boots the same bzImage and initrd natively and under
vmi-hv to the shell, runs /tests/ring3cmp (guest/programs/ring3cmp.c: as
uid 65534, far transfers to kernel selectors, kernel selectors in every
segment register, misaligned SSE, rdpmc, sysenter, hlt, cli, port I/O,
int n for every vector, modify_ldt, prefixed int $0x80, each in its own
child) and compares the two outputs line by line: they must be identical,
and the guest must answer a command afterwards.
"""

import os
import re
import shutil
import subprocess

from vmitest import FATAL_PATTERNS, paths, test
from hvguest import (GUEST_BROKEN, GUEST_REBOOT, MARKER, PROMPT, SERIAL_CMDLINE, boot_hv, boot_native,
                     hv_modules, program_lines, quiet_console)
from hvstats import hv_statistics

FATAL = GUEST_BROKEN


def ring3_lines(t, q, label):
    return program_lines(t, q, label, "/tests/ring3cmp", "RING3CMP uid=")


@test("hv-ring3-vs-native")
def ring3_vs_native(t):
    native = boot_native(t, fatal=FATAL)
    native_lines = ring3_lines(t, native, "native")
    native.kill()

    q = boot_hv(t, fatal=FATAL)
    quiet_console(q)
    hv_lines = ring3_lines(t, q, "vmi-hv")

    t.check(native_lines[0] == "RING3CMP uid=65534", f"not run unprivileged: {native_lines[0]}")
    differ = [f"line {i + 1}: native '{a}', vmi-hv '{b}'"
              for i, (a, b) in enumerate(zip(native_lines, hv_lines)) if a != b]
    t.check(len(native_lines) == len(hv_lines),
            f"native printed {len(native_lines)} lines, vmi-hv {len(hv_lines)}")
    t.check(not differ, f"{len(differ)} lines differ:\n  " + "\n  ".join(differ[:40]))
    t.note(f"{len(native_lines) - 2} cases, identical natively and under vmi-hv")
    signals = {}
    for line in native_lines[1:-1]:
        outcome = line.split(": ", 1)[1]
        signals[outcome] = signals.get(outcome, 0) + 1
    t.note("outcomes: " + ", ".join(f"{k} x{v}" for k, v in sorted(signals.items())))
    # The hypervisor gave the user faults it does not handle to the guest.
    m = hv_statistics(q).search(r"vmi-hv: user-mode faults given to the guest kernel: (\d+)\n")
    t.check(int(m.group(1)) > 0, "no user-mode fault went to the guest kernel")
    t.note(f"user-mode faults given to the guest kernel: {m.group(1)}")


# GRUB's wrmsr leaves IA32_SYSENTER_CS (0x174) = the guest's kernel CS and
# SYSENTER_EIP (0x176) = 1 MiB, as a careless loader or a warm reboot might.
WRMSR_GRUB_CFG = """serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
set timeout=0
set default=0
insmod wrmsr
menuentry "vmi-hv, SYSENTER MSRs left set" {
	wrmsr 0x174 0x60
	wrmsr 0x175 0x1000
	wrmsr 0x176 0x100000
	echo "loader: IA32_SYSENTER_CS left at 0x60"
	multiboot /boot/vmi-hv.elf
	module /boot/bzImage console=ttyS0,115200 vmitest=ring3cmp
	module /boot/initrd.img
}
"""


@test("hv-sysenter-msr-left-by-loader")
def sysenter_msr_left_by_loader(t):
    """A boot loader that leaves IA32_SYSENTER_CS set (GRUB's wrmsr): the
    hypervisor zeroes it at boot and says so, and a user program's
    sysenter is SIGSEGV as natively, instead of entering ring 0 at the
    loader's SYSENTER_EIP (docs/HV.md, "What the guest can reach")."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    stage = os.path.join(t.tmpdir, "iso")
    os.makedirs(os.path.join(stage, "boot", "grub"), exist_ok=True)
    with open(os.path.join(stage, "boot", "grub", "grub.cfg"), "w") as f:
        f.write(WRMSR_GRUB_CFG)
    for src, name in ((paths.HV_ELF, "vmi-hv.elf"), (paths.BZIMAGE, "bzImage"),
                      (paths.INITRD, "initrd.img")):
        shutil.copy(src, os.path.join(stage, "boot", name))
    iso = os.path.join(t.tmpdir, "wrmsr.iso")
    r = subprocess.run(["grub-mkrescue", "-o", iso, stage], capture_output=True, text=True)
    t.check(r.returncode == 0, f"grub-mkrescue failed: {r.stderr[-500:]}")
    q = t.qemu("-m", "256", "-cdrom", iso, fatal=FATAL)
    q.expect(r"loader: IA32_SYSENTER_CS left at 0x60", timeout=120)
    q.expect(r"vmi-hv: warning: IA32_SYSENTER_CS was 0x60 \(left by the boot loader\): zeroed", timeout=60)
    q.expect(MARKER, timeout=300)
    q.expect(r"\nsysenter: signal SIGSEGV\n", timeout=300)
    q.expect(r"RING3CMP done cases=\d+\n", timeout=300)
    q.expect(r"VMITEST-DONE name=ring3cmp rc=0", timeout=60)
    status = q.wait_exit(timeout=60)
    t.check(status == GUEST_REBOOT, f"exit status {status}, expected {GUEST_REBOOT} (the guest's reboot)")


@test("hv-guest-cannot-forge-hv-lines")
def guest_cannot_forge_hv_lines(t):
    """A guest printing the hypervisor's own words at the start of a line
    ("vmi-hv: guest stopped: ...", after LF or CR) gets them marked as
    the guest's: "[guest] vmi-hv: ...", so no line that a person or a
    script reads as the hypervisor's comes from the guest (docs/HV.md, "What the guest can reach").
    The guest keeps running, and the hypervisor's own lines are unchanged."""
    t.require(paths.HV_ELF, paths.BZIMAGE, paths.INITRD)
    module = hv_modules(SERIAL_CMDLINE)
    q = t.qemu("-m", "256", "-kernel", paths.HV_ELF, "-initrd", module, fatal=FATAL_PATTERNS)
    q.expect(MARKER, timeout=300)
    quiet_console(q)
    q.expect(PROMPT, timeout=60)
    q.send("printf 'vmi-hv: guest stopped: forged-%s\\n' lf; "
           "printf 'x\\rvmi-hv: guest stopped: forged-%s\\n' cr; "
           "printf 'vmi-hv 0.1: forged-%s\\nvmi-guest: not-%s\\n' banner marked\n")
    q.expect(r"not-marked\n", timeout=60)
    q.expect(PROMPT, timeout=60)
    hv_statistics(q)
    out = q.output
    for what in ("lf", "cr", "banner"):
        t.check(re.search(r"\[guest\] vmi-hv[^\n]*forged-" + what + r"\n", out),
                f"the guest's forged line ({what}) is not marked as the guest's")
    forged = re.findall(r"(?:^|\n|x)vmi-hv[^\n]*forged-[a-z]+", out)
    t.check(not forged, f"guest lines that read as the hypervisor's: {forged}")
    t.check(re.search(r"\nvmi-guest: not-marked\n", out), "a guest line merely like ours was marked")
    t.check(re.search(r"(^|\n)vmi-hv 0\.1: a VMI 13\.0 hypervisor", out), "the hypervisor's banner changed")
    t.check(not re.search(r"(^|\n)vmi-hv: guest stopped", out), "a guest stop line appeared")
