#!/usr/bin/env python3
"""Boot one prefix of the guest patch series, natively and under vmi-hv
(make check-series: scripts/check-series.sh calls this after each build).

    tests/series_boot.py BZIMAGE LOGDIR active|dormant

Natively every prefix must reach its shell (the init marker, mode=native).
Under vmi-hv what a prefix must do depends on where it stands in the
series (docs/GUEST.md, "The patches"): the VMI ops are added dormant and
only the last patch activates them, so that no kernel ever calls Init
while a page-table write still bypasses the ROM.

- active (the whole series): paravirtual mode to the shell (mode=vmi), with
  the shadow audit on (a mismatch stops the guest, and the boot fails);
- dormant (every earlier prefix): the kernel never activates VMI.  It runs
  its native code at CPL 1, so the hypervisor stops it at its first
  privileged instruction that it cannot emulate; the stop must blame the
  guest, its dump must say "emulated mode" (Init was never called), and
  the hypervisor must stay up.

Prints one line saying what each boot did; exits 1 with the reason when a
boot does not do what it must.  Uses build/guest/initrd.img and
build/hv/vmi-hv.elf (make initrd hv).
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from vmitest import FATAL_PATTERNS, Qemu, TestFailure, paths  # noqa: E402
from compare_guest import qemu_args  # noqa: E402
from hvguest import GUEST_FATAL, GUEST_STOPPED_LINE, HV_FAULT_STOPS, MARKER, PROMPT, SERIAL_CMDLINE  # noqa: E402

BOOT_TIMEOUT = 300
# An audit of every shadow against its guest table at every 64th exit: a
# kernel that called Init with a page-table write still bypassing the ROM
# would show a mismatch early (audit_action=stop ends the guest).
ACTIVE_HV_ARGS = "audit=every=64"


def boot_native(bzimage, log):
    q = Qemu(qemu_args("native", bzimage, paths.INITRD, SERIAL_CMDLINE, paths.HV_ELF), log, fatal=GUEST_FATAL)
    try:
        m = q.expect(MARKER, timeout=BOOT_TIMEOUT)
        if m.group(3) != "native":
            raise TestFailure(f"natively the kernel reports mode={m.group(3)}")
        return f"natively: to its shell in {q.elapsed():.1f} s"
    finally:
        q.kill()


def boot_hv_active(bzimage, log):
    q = Qemu(qemu_args("hv", bzimage, paths.INITRD, SERIAL_CMDLINE, paths.HV_ELF) + ["-append", ACTIVE_HV_ARGS],
             log, fatal=GUEST_FATAL)
    try:
        m = q.expect(MARKER, timeout=BOOT_TIMEOUT)
        if m.group(3) != "vmi":
            raise TestFailure(f"under vmi-hv the whole series reports mode={m.group(3)}, not vmi")
        q.expect(PROMPT, timeout=60)
        q.send("echo series-$((6 * 7))\n")
        q.expect(r"series-42\n", timeout=60)
        return f"under vmi-hv ({ACTIVE_HV_ARGS}): paravirtual to its shell in {q.elapsed():.1f} s"
    finally:
        q.kill()


# A prefix before the last that activated VMI anyway: the guest's line at
# activation (patch 11), or its init marker in paravirtual mode.
ACTIVATED = [r"VMI: paravirtual mode[^\n]*", r"VMIHV-INIT-MARKER [^\n]*mode=vmi"]


def boot_hv_dormant(bzimage, log):
    q = Qemu(qemu_args("hv", bzimage, paths.INITRD, SERIAL_CMDLINE, paths.HV_ELF),
             log, fatal=FATAL_PATTERNS + ACTIVATED)
    try:
        reason = q.expect(GUEST_STOPPED_LINE + r"\n", timeout=BOOT_TIMEOUT).group(1)
        for hv_fault in HV_FAULT_STOPS:
            if re.search(hv_fault, reason):
                raise TestFailure(f"under vmi-hv the hypervisor blamed itself: {reason}")
        mode = q.expect(r"guest registers \(ring \d, (\w+) mode", timeout=30).group(1)
        if mode != "emulated":
            raise TestFailure(f"under vmi-hv a prefix before the last activated VMI ({mode} mode), "
                              f"then was stopped: {reason}")
        q.expect(r"the hypervisor is still running", timeout=30)
        return f"under vmi-hv: never activated; stopped, as a native kernel is: {reason}"
    finally:
        q.kill()


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("active", "dormant"):
        sys.exit(__doc__.split("\n\n")[1])
    bzimage, logdir, expect = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    for need in (bzimage, paths.INITRD, paths.HV_ELF):
        if not os.path.isfile(need):
            sys.exit(f"series-boot: error: no {need} (make initrd hv)")
    os.makedirs(logdir, exist_ok=True)
    said = []
    try:
        said.append(boot_native(bzimage, os.path.join(logdir, "native.log")))
        hv = boot_hv_active if expect == "active" else boot_hv_dormant
        said.append(hv(bzimage, os.path.join(logdir, "vmi-hv.log")))
    except TestFailure as e:
        print(f"series-boot: {'; '.join(said + [''])}FAILED: {e} (logs: {logdir})")
        sys.exit(1)
    print(f"series-boot: {'; '.join(said)}")


if __name__ == "__main__":
    main()
